//! The body of a struct's `decode_fields`: each field read where its plan says it is regular,
//! then the tagged section, whose arms read the known tags. The same body, reading through
//! `rt::view` instead, decodes the struct's borrowed view ([`Target::View`]).

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use super::body::{flexible_decl, if_flexible, local_ident, paren, split, Form};
use super::cond::{compact, cond, Cond};
use super::types::{default_expr, field_ident, struct_ident, view_default_expr};
use crate::model::{Field, FieldType, Struct};
use crate::plan::{Compact, Tagged, Value};

/// What a decode body builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The owned struct, from `buf: &mut rt::Bytes`.
    Owned,
    /// Its borrowed view, from `buf: &mut &'a [u8]`.
    View,
}

impl Target {
    fn default(self, f: &Field) -> TokenStream {
        match self {
            Target::Owned => default_expr(f),
            Target::View => view_default_expr(f),
        }
    }
}

/// The statements of `decode_fields` (or of a view's `decode_view_fields`), ending in
/// `Ok(Self { .. })`.
pub fn body(s: &Struct, target: Target) -> TokenStream {
    let (body, value) = parts(s, target);
    quote! {
        #body
        Ok(#value)
    }
}

/// The statements of a view's `check_view_fields`: the view's decode body, checking the same
/// things in the same order, with the view built only to be dropped (which the optimizer
/// removes), ending in `Ok(())`. Arrays of structs check their elements this way, so checking
/// a frame builds no view for a nested element.
pub fn view_check_body(s: &Struct) -> TokenStream {
    let (body, value) = parts(s, Target::View);
    quote! {
        #body
        let _ = #value;
        Ok(())
    }
}

/// The statements of a decode body and the expression of the value it builds.
fn parts(s: &Struct, target: Target) -> (TokenStream, TokenStream) {
    let mut lets = Vec::new();
    for f in &s.fields {
        let id = local_ident(f);
        let name = &f.name;
        let default = target.default(f);
        let regular = match cond(f.plan.regular) {
            Cond::Always => {
                let read = paren(read_field(f, f.plan.regular_value, target));
                quote!(#read.field(#name)?)
            }
            Cond::Never => default.clone(),
            Cond::Expr(c) => {
                let read = paren(read_field(f, f.plan.regular_value, target));
                quote!(if #c { #read.field(#name)? } else { #default })
            }
        };
        if f.plan.tagged.is_some() {
            lets.push(quote!(let mut #id = #regular;));
        } else {
            lets.push(quote!(let #id = #regular;));
        }
    }
    let inits: Vec<_> = s
        .fields
        .iter()
        .map(|f| {
            let (id, local) = (field_ident(&f.name), local_ident(f));
            if id == local {
                quote!(#id)
            } else {
                quote!(#id: #local)
            }
        })
        .collect();
    // Arms in field order, as the fields are declared.
    let arms: Vec<_> = s.fields.iter().filter_map(|f| f.plan.tagged.map(|t| tagged_arm(f, t, target))).collect();
    let tagged = if s.has_tagged_section() && target == Target::View {
        let read = if arms.is_empty() {
            quote!(rt::view::read_tagged(buf, |_, _| Ok(false))?)
        } else {
            quote! {
                rt::view::read_tagged(buf, |tag, buf| match tag {
                    #(#arms)*
                    _ => Ok(false),
                })?
            }
        };
        match cond(s.plan.flexible) {
            Cond::Always => quote!(let tagged_fields = #read;),
            Cond::Expr(c) => quote!(let tagged_fields = if #c { #read } else { rt::view::TaggedView::default() };),
            Cond::Never => quote!(let tagged_fields = rt::view::TaggedView::default();),
        }
    } else if s.has_tagged_section() {
        let read = if arms.is_empty() {
            quote!(rt::tagged::read_tagged_fields(buf, &mut unknown_tagged_fields, |_, _| Ok(false))?;)
        } else {
            quote! {
                rt::tagged::read_tagged_fields(buf, &mut unknown_tagged_fields, |tag, buf| match tag {
                    #(#arms)*
                    _ => Ok(false),
                })?;
            }
        };
        let read = if_flexible(s, read);
        quote! {
            let mut unknown_tagged_fields = rt::UnknownTaggedFields::default();
            #read
        }
    } else {
        TokenStream::new()
    };
    let unknown = s.has_tagged_section().then(|| match target {
        Target::Owned => quote!(unknown_tagged_fields,),
        Target::View => quote!(tagged_fields,),
    });
    let body = quote!(#(#lets)* #tagged);
    let flex = flexible_decl(s, &body);
    (quote!(#flex #body), quote!(Self { #(#inits,)* #unknown }))
}

fn tagged_arm(f: &Field, t: Tagged, target: Target) -> TokenStream {
    let id = local_ident(f);
    let name = &f.name;
    let tag_lit = Literal::u32_unsuffixed(t.tag);
    let module = match target {
        Target::Owned => quote!(rt::tagged),
        Target::View => quote!(rt::view),
    };
    let check = match cond(t.check) {
        Cond::Always => TokenStream::new(),
        Cond::Never => quote!(return Err(#module::tag_not_valid(#tag_lit, version, buf));),
        Cond::Expr(c) => quote! {
            if !(#c) {
                return Err(#module::tag_not_valid(#tag_lit, version, buf));
            }
        },
    };
    let read = read_field(f, t.value, target);
    quote! {
        #tag_lit => {
            #check
            #id = #module::read_known(#tag_lit, buf, |buf| #read).field(#name)?;
            Ok(true)
        }
    }
}

/// An expression of type `Result<FieldType, DecodeError>` reading `f` as planned.
fn read_field(f: &Field, value: Value, target: Target) -> TokenStream {
    if target == Target::View {
        return split(value, |form, c| view_read(f, form, c));
    }
    split(value, |form, c| match form {
        Form::Plain => read_value(f, &f.ty, c),
        Form::Nullable => read_nullable(f, c),
        Form::NotNull => {
            let r = read_value(f, &f.ty, c);
            quote!(#r.map(Some))
        }
    })
}

/// A view's read: [`rt::view::Mode`] for every plain value, whose type the struct's field
/// decides, and the nullable readers by their prefix.
fn view_read(f: &Field, form: Form, c: Compact) -> TokenStream {
    // Fixed-width values have no length prefix.
    let ct = if matches!(f.ty, FieldType::Fixed(_)) { quote!(false) } else { compact(c) };
    // `M`, the body's `rt::view::Mode`, decides whether nested arrays are checked or skipped.
    let plain = quote!(<M as rt::view::Mode>::read(buf, version, #ct));
    match form {
        Form::Plain => plain,
        Form::NotNull => quote!(#plain.map(Some)),
        Form::Nullable => match &f.ty {
            FieldType::String => quote!(rt::view::nullable_str(buf, #ct)),
            FieldType::Bytes | FieldType::Records => quote!(rt::view::nullable_bytes(buf, #ct)),
            FieldType::Array(_) => quote!(<M as rt::view::Mode>::nullable_array(buf, version, #ct)),
            FieldType::Struct(_) => quote!(<M as rt::view::Mode>::nullable_struct(buf, version)),
            // Lowering only allows the types above to be nullable.
            FieldType::Fixed(_) => plain,
        },
    }
}

fn read_nullable(f: &Field, c: Compact) -> TokenStream {
    let ct = compact(c);
    match &f.ty {
        FieldType::String => quote!(rt::encoding::string::read_nullable(buf, #ct)),
        FieldType::Bytes | FieldType::Records => quote!(rt::encoding::bytes::read_nullable(buf, #ct)),
        FieldType::Array(inner) if inner.fixed().is_some() => quote!(rt::array::read_nullable_fixed_array(buf, #ct)),
        FieldType::Array(inner) => {
            let elem = read_elem(f, inner, c);
            quote!(rt::array::read_nullable_array(buf, #ct, #elem))
        }
        FieldType::Struct(n) => {
            let n = struct_ident(n);
            quote!(rt::message::read_nullable_struct(buf, |buf| <#n as rt::Decode>::decode(buf, version)))
        }
        // Lowering only allows the types above to be nullable.
        FieldType::Fixed(_) => read_value(f, &f.ty, c),
    }
}

fn read_value(f: &Field, ty: &FieldType, c: Compact) -> TokenStream {
    let ct = compact(c);
    match ty {
        FieldType::String => quote!(rt::encoding::string::read(buf, #ct)),
        FieldType::Bytes | FieldType::Records => quote!(rt::encoding::bytes::read(buf, #ct)),
        // Fixed-width elements are read in bulk, the element type inferred from the field's.
        FieldType::Array(inner) if inner.fixed().is_some() => quote!(rt::array::read_fixed_array(buf, #ct)),
        FieldType::Array(inner) => {
            let elem = read_elem(f, inner, c);
            quote!(rt::array::read_array(buf, #ct, #elem))
        }
        FieldType::Struct(n) => {
            let n = struct_ident(n);
            quote!(<#n as rt::Decode>::decode(buf, version))
        }
        FieldType::Fixed(t) => {
            let func = t.func("read");
            quote!(#func(buf))
        }
    }
}

/// A function or closure reading one array element.
fn read_elem(f: &Field, ty: &FieldType, c: Compact) -> TokenStream {
    match ty {
        FieldType::Fixed(t) => t.func("read"),
        FieldType::String | FieldType::Bytes | FieldType::Records | FieldType::Struct(_) | FieldType::Array(_) => {
            let r = read_value(f, ty, c);
            quote!(|buf| #r)
        }
    }
}
