//! The body of a struct's `Sample::sample` (behind the generated crate's `sample` feature): a
//! value that differs from the default in every field the version has, for round-trip tests.

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use super::body::tagged_fields;
use super::cond::{cond, Cond};
use super::types::{field_ident, struct_ident};
use crate::model::{DefaultValue, Field, FieldType, Struct};
use crate::plan::Check;
use crate::wire::DefaultKind;

/// The statements of `sample`, ending in the value.
pub fn body(s: &Struct) -> TokenStream {
    let mut sets = Vec::new();
    for f in &s.fields {
        let id = field_ident(&f.name);
        let value = sample_field(f);
        match cond(f.plan.present) {
            Cond::Always => sets.push(quote!(value.#id = #value;)),
            Cond::Never => {}
            Cond::Expr(c) => sets.push(quote!(if #c { value.#id = #value; })),
        }
    }
    if s.has_tagged_section() {
        let first_free = Literal::u32_unsuffixed(tagged_fields(s).count() as u32);
        let set = quote!(value.unknown_tagged_fields = rng.unknown_tagged_fields(#first_free););
        sets.push(super::body::if_flexible(s, set));
    }
    let mutable = if sets.is_empty() { quote!() } else { quote!(mut) };
    quote! {
        let #mutable value = Self::default();
        #(#sets)*
        value
    }
}

fn sample_field(f: &Field) -> TokenStream {
    let inner = sample_value(f, &f.ty);
    if !f.is_option() {
        return inner;
    }
    // Null is a non-default value too, where the version allows it and the default is not null.
    match (f.plan.present_nullable, &f.default) {
        (Check::Always, DefaultValue::Natural | DefaultValue::Str(_)) => {
            quote!(if rng.one_in(4) { None } else { Some(#inner) })
        }
        _ => quote!(Some(#inner)),
    }
}

fn sample_value(f: &Field, ty: &FieldType) -> TokenStream {
    match ty {
        FieldType::Fixed(t) => {
            // The field's own default is avoided; array elements avoid the natural one.
            let own = *ty == f.ty;
            let row = t.row();
            let method = row.sample.map(|m| proc_macro2::Ident::new(m, proc_macro2::Span::call_site()));
            match (row.literal, method) {
                (DefaultKind::Bool, _) | (_, None) => match (&f.default, own) {
                    (DefaultValue::Bool(true), true) => quote!(false),
                    _ => quote!(true),
                },
                (DefaultKind::Int { .. }, Some(m)) => {
                    let d = match &f.default {
                        DefaultValue::Int(v) if own => {
                            let abs = Literal::i64_unsuffixed(v.unsigned_abs() as i64);
                            if *v < 0 {
                                quote!(-#abs)
                            } else {
                                quote!(#abs)
                            }
                        }
                        _ => quote!(0),
                    };
                    quote!(rng.#m(#d))
                }
                (DefaultKind::Float, Some(m)) => match &f.default {
                    DefaultValue::Float(v) => {
                        let l = Literal::f64_unsuffixed(*v);
                        quote!(rng.#m(#l))
                    }
                    _ => quote!(rng.#m(0.0)),
                },
                (DefaultKind::Uuid, Some(m)) => quote!(rng.#m()),
            }
        }
        FieldType::String => match (&f.default, *ty == f.ty) {
            (DefaultValue::Str(d), true) => quote!(rng.string_except(#d)),
            _ => quote!(rng.string_except("")),
        },
        FieldType::Bytes | FieldType::Records => quote!(rng.bytes()),
        FieldType::Struct(n) => {
            let n = struct_ident(n);
            quote!(<#n as rt::sample::Sample>::sample(version, rng))
        }
        FieldType::Array(inner) => {
            let e = sample_value(f, inner);
            quote!(rng.vec(|rng| #e))
        }
    }
}
