//! Generic access impls for each struct: entity, endpoint and error-code visitors
//! (`rt::visit::Visit`) and `mapKey` lookups (`rt::visit::Keyed`).

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use super::types::{field_ident, struct_ident};
use crate::model::{EndpointFields, Entity, Field, FieldType, Struct};
use crate::wire::Fixed;

/// `impl Visit` (and `impl Keyed` when the struct has `mapKey` fields). The endpoint walker
/// descends only into the struct fields named in `reaching_endpoints`.
pub fn emit_access(s: &Struct, reaching_endpoints: &std::collections::BTreeSet<&str>) -> TokenStream {
    let name = struct_ident(&s.name);
    let mut read = Vec::new();
    let mut write = Vec::new();
    let mut errors = Vec::new();
    let (mut endpoints, mut endpoints_mut) = match s.endpoint() {
        Some(e) => {
            let (r, w) = endpoint_visits(s, &e);
            (vec![r], vec![w])
        }
        None => (Vec::new(), Vec::new()),
    };
    for f in &s.fields {
        let id = field_ident(&f.name);
        let fname = Literal::string(&f.name);
        if let Some(entity) = f.entity {
            let kind = entity_variant(entity);
            let field = quote!(rt::visit::EntityField { kind: rt::visit::EntityType::#kind, field: #fname });
            let (r, w) = entity_visits(f, entity, &field);
            read.push(r);
            write.push(w);
        }
        if is_error_code(f) {
            errors.push(quote!(f(#fname, rt::ErrorCode(self.#id));));
        }
        if f.ty.struct_name().is_some() {
            read.push(each(f, false, quote!(rt::visit::Visit::visit_entities(v, f);)));
            write.push(each(f, true, quote!(rt::visit::Visit::visit_entities_mut(v, f);)));
            errors.push(each(f, false, quote!(rt::visit::Visit::visit_error_codes(v, f);)));
        }
        if f.ty.struct_name().is_some_and(|n| reaching_endpoints.contains(n)) {
            endpoints.push(each(f, false, quote!(rt::visit::Visit::visit_endpoints(v, f);)));
            endpoints_mut.push(each(f, true, quote!(rt::visit::Visit::visit_endpoints_mut(v, f);)));
        }
    }
    let param = |body: &Vec<TokenStream>| if body.is_empty() { quote!(_f) } else { quote!(f) };
    let (pr, pw, pe) = (param(&read), param(&write), param(&errors));
    let (pn, pnw) = (param(&endpoints), param(&endpoints_mut));
    let keyed = emit_keyed(s);
    quote! {
        impl rt::visit::Visit for #name {
            #[inline]
            fn visit_entities(&self, #pr: &mut dyn FnMut(rt::visit::EntityField, rt::visit::EntityValue<'_>)) {
                #(#read)*
            }

            #[inline]
            fn visit_entities_mut(&mut self, #pw: &mut dyn FnMut(rt::visit::EntityField, rt::visit::EntityMut<'_>)) {
                #(#write)*
            }

            #[inline]
            fn visit_endpoints(&self, #pn: &mut dyn FnMut(rt::visit::Endpoint<'_>)) {
                #(#endpoints)*
            }

            #[inline]
            fn visit_endpoints_mut(&mut self, #pnw: &mut dyn FnMut(rt::visit::EndpointMut<'_>)) {
                #(#endpoints_mut)*
            }

            #[inline]
            fn visit_error_codes(&self, #pe: &mut dyn FnMut(&'static str, rt::ErrorCode)) {
                #(#errors)*
            }
        }

        #keyed
    }
}

fn entity_variant(entity: Entity) -> proc_macro2::Ident {
    let v = match entity {
        Entity::TopicName => "TopicName",
        Entity::GroupId => "GroupId",
        Entity::TransactionalId => "TransactionalId",
        Entity::ProducerId => "ProducerId",
        Entity::BrokerId => "BrokerId",
        Entity::TopicId => "TopicId",
    };
    quote::format_ident!("{}", v)
}

/// Kafka names its error-code fields `ErrorCode` or `...ErrorCode`, always int16.
fn is_error_code(f: &Field) -> bool {
    f.ty == FieldType::Fixed(Fixed::Int16) && f.name.ends_with("ErrorCode")
}

/// Runs `body` with `v` bound to each struct value of field `f` (a struct, an optional struct,
/// an array or an optional array of structs).
fn each(f: &Field, mutable: bool, body: TokenStream) -> TokenStream {
    let id = field_ident(&f.name);
    let (r, iter) = if mutable { (quote!(&mut), quote!(iter_mut)) } else { (quote!(&), quote!(iter)) };
    match (&f.ty, f.is_option()) {
        (FieldType::Array(_), false) => quote!(for v in self.#id.#iter() { #body }),
        (FieldType::Array(_), true) => quote!(for v in self.#id.#iter().flatten() { #body }),
        (_, false) => quote!({ let v = #r self.#id; #body }),
        (_, true) => quote!(if let Some(v) = #r self.#id { #body }),
    }
}

fn entity_visits(f: &Field, entity: Entity, field: &TokenStream) -> (TokenStream, TokenStream) {
    let id = field_ident(&f.name);
    // Lowering checked that the field (or its elements) has the entity's type.
    let (value, value_mut) = match entity {
        Entity::TopicName | Entity::GroupId | Entity::TransactionalId => (quote!(rt::visit::EntityValue::Str(v)), quote!(rt::visit::EntityMut::Str(v))),
        Entity::BrokerId => (quote!(rt::visit::EntityValue::Int32(*v)), quote!(rt::visit::EntityMut::Int32(v))),
        Entity::ProducerId => (quote!(rt::visit::EntityValue::Int64(*v)), quote!(rt::visit::EntityMut::Int64(v))),
        Entity::TopicId => (quote!(rt::visit::EntityValue::Uuid(*v)), quote!(rt::visit::EntityMut::Uuid(v))),
    };
    match (&f.ty, f.is_option()) {
        (FieldType::Array(_), false) => (quote!(for v in &self.#id { f(#field, #value); }), quote!(for v in &mut self.#id { f(#field, #value_mut); })),
        (FieldType::Array(_), true) => {
            (quote!(for v in self.#id.iter().flatten() { f(#field, #value); }), quote!(for v in self.#id.iter_mut().flatten() { f(#field, #value_mut); }))
        }
        // A nullable string: read-only visits skip null; rewriting sees the Option.
        (_, true) => (quote!(if let Some(v) = &self.#id { f(#field, #value); }), quote!(f(#field, rt::visit::EntityMut::NullableStr(&mut self.#id));)),
        (_, false) => (quote!({ let v = &self.#id; f(#field, #value); }), quote!({ let v = &mut self.#id; f(#field, #value_mut); })),
    }
}

/// The `f(Endpoint { .. })` and `f(EndpointMut { .. })` calls for a struct holding an endpoint.
fn endpoint_visits(s: &Struct, e: &EndpointFields<'_>) -> (TokenStream, TokenStream) {
    let name = Literal::string(&s.name);
    let host = field_ident(&e.host.name);
    let port = field_ident(&e.port.name);
    let (port_read, port_mut) = match e.port.ty {
        FieldType::Fixed(crate::wire::Fixed::Uint16) => (quote!(i32::from(self.#port)), quote!(rt::visit::PortMut::Uint16(&mut self.#port))),
        _ => (quote!(self.#port), quote!(rt::visit::PortMut::Int32(&mut self.#port))),
    };
    let opt = |f: Option<&Field>, read: &dyn Fn(proc_macro2::Ident) -> TokenStream| match f {
        Some(f) => read(field_ident(&f.name)),
        None => quote!(None),
    };
    let node = opt(e.node_id, &|id| quote!(Some(self.#id)));
    let node_mut = opt(e.node_id, &|id| quote!(Some(&mut self.#id)));
    let rack = opt(e.rack, &|id| quote!(self.#id.as_deref()));
    let rack_mut = opt(e.rack, &|id| quote!(Some(&mut self.#id)));
    let listener = opt(e.listener, &|id| quote!(Some(&*self.#id)));
    (
        quote!(f(rt::visit::Endpoint {
            struct_name: #name,
            node_id: #node,
            host: &self.#host,
            port: #port_read,
            rack: #rack,
            listener: #listener,
        });),
        quote!(f(rt::visit::EndpointMut {
            struct_name: #name,
            node_id: #node_mut,
            host: &mut self.#host,
            port: #port_mut,
            rack: #rack_mut,
            listener: #listener,
        });),
    )
}

fn emit_keyed(s: &Struct) -> Option<TokenStream> {
    let keys: Vec<&Field> = s.fields.iter().filter(|f| f.map_key).collect();
    if keys.is_empty() {
        return None;
    }
    let name = struct_ident(&s.name);
    let parts: Vec<(TokenStream, TokenStream)> = keys
        .iter()
        .map(|f| {
            let id = field_ident(&f.name);
            match (&f.ty, f.is_option()) {
                (FieldType::String, false) => (quote!(&'a str), quote!(&*self.#id)),
                (FieldType::String, true) => (quote!(Option<&'a str>), quote!(self.#id.as_deref())),
                (FieldType::Bytes | FieldType::Records, false) => (quote!(&'a [u8]), quote!(&*self.#id)),
                (FieldType::Bytes | FieldType::Records, true) => (quote!(Option<&'a [u8]>), quote!(self.#id.as_deref())),
                (FieldType::Fixed(t), _) => (t.rust_type(), quote!(self.#id)),
                // Lowering refuses these as map keys.
                (ty @ (FieldType::Struct(_) | FieldType::Array(_)), _) => (super::types::base_type(ty), quote!(self.#id)),
            }
        })
        .collect();
    let (types, exprs): (Vec<_>, Vec<_>) = parts.into_iter().unzip();
    let (ty, expr) = match (types.as_slice(), exprs.as_slice()) {
        ([ty], [expr]) => (ty.clone(), expr.clone()),
        _ => (quote!((#(#types),*)), quote!((#(#exprs),*))),
    };
    let doc = format!("Keyed by {} (the spec's `mapKey` fields).", keys.iter().map(|f| format!("`{}`", f.name)).collect::<Vec<_>>().join(", "));
    Some(quote! {
        #[doc = #doc]
        impl rt::visit::Keyed for #name {
            type Key<'a> = #ty;

            #[inline]
            fn key(&self) -> Self::Key<'_> {
                #expr
            }
        }
    })
}
