//! Rust types, default values and default checks for spec fields.

use heck::ToSnakeCase;
use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{format_ident, quote};

use crate::model::{DefaultValue, Field, FieldType};
use crate::wire::DefaultKind;

/// The Rust identifier of a field (`r#type` for keywords).
pub fn field_ident(name: &str) -> Ident {
    let snake = name.to_snake_case();
    if syn::parse_str::<Ident>(&snake).is_ok() {
        Ident::new(&snake, Span::call_site())
    } else {
        Ident::new_raw(&snake, Span::call_site())
    }
}

/// The identifier of a struct.
pub fn struct_ident(name: &str) -> Ident {
    format_ident!("{}", name)
}

/// The Rust type of a value of `ty` (without the `Option` of nullable fields).
pub fn base_type(ty: &FieldType) -> TokenStream {
    match ty {
        FieldType::Fixed(t) => t.rust_type(),
        FieldType::String => quote!(rt::ByteString),
        FieldType::Bytes | FieldType::Records => quote!(rt::Bytes),
        FieldType::Struct(n) => {
            let n = struct_ident(n);
            quote!(#n)
        }
        // Fixed-width elements: 16 bytes of them inline (a replica list), no allocation each.
        FieldType::Array(inner) => match inner.fixed() {
            Some(t) => {
                let n = Literal::usize_unsuffixed(16 / t.size());
                let inner = t.rust_type();
                quote!(rt::SmallVec<[#inner; #n]>)
            }
            None => {
                let inner = base_type(inner);
                quote!(Vec<#inner>)
            }
        },
    }
}

/// The Rust type of a field.
pub fn field_type(f: &Field) -> TokenStream {
    let base = base_type(&f.ty);
    if f.is_option() {
        quote!(Option<#base>)
    } else {
        base
    }
}

fn natural(ty: &FieldType) -> TokenStream {
    match ty {
        FieldType::Fixed(t) => t.natural(),
        FieldType::String => quote!(rt::ByteString::new()),
        FieldType::Bytes | FieldType::Records => quote!(rt::Bytes::new()),
        FieldType::Struct(n) => {
            let n = struct_ident(n);
            quote!(#n::default())
        }
        FieldType::Array(inner) => match inner.fixed() {
            Some(_) => quote!(rt::SmallVec::new()),
            None => quote!(Vec::new()),
        },
    }
}

fn int_literal(v: i64) -> TokenStream {
    if v == i64::MIN {
        return quote!(i64::MIN);
    }
    let abs = Literal::i64_unsuffixed(v.abs());
    if v < 0 {
        quote!(-#abs)
    } else {
        quote!(#abs)
    }
}

/// The field's default value as an expression of its Rust type.
pub fn default_expr(f: &Field) -> TokenStream {
    let value = match &f.default {
        DefaultValue::Null => return quote!(None),
        DefaultValue::Natural => natural(&f.ty),
        DefaultValue::Bool(b) => quote!(#b),
        DefaultValue::Int(v) => int_literal(*v),
        DefaultValue::Float(v) => {
            let l = Literal::f64_unsuffixed(*v);
            quote!(#l)
        }
        DefaultValue::Str(s) => quote!(rt::ByteString::from_static(#s)),
    };
    if f.is_option() {
        quote!(Some(#value))
    } else {
        value
    }
}

/// A boolean expression: true when `value` (an expression of the field's type) differs from
/// the default. Common cases avoid building the default.
pub fn differs_from_default(f: &Field, value: &TokenStream) -> TokenStream {
    let compare = || {
        let d = default_expr(f);
        quote!(#value != #d)
    };
    match (&f.default, f.is_option()) {
        (DefaultValue::Null, _) => quote!(#value.is_some()),
        (DefaultValue::Natural, false) => match &f.ty {
            FieldType::String | FieldType::Bytes | FieldType::Records | FieldType::Array(_) => quote!(!#value.is_empty()),
            FieldType::Fixed(t) => match t.row().literal {
                DefaultKind::Bool => quote!(#value),
                DefaultKind::Int { .. } | DefaultKind::Float | DefaultKind::Uuid => compare(),
            },
            FieldType::Struct(_) => compare(),
        },
        (DefaultValue::Natural, true) | (DefaultValue::Bool(_) | DefaultValue::Int(_) | DefaultValue::Float(_) | DefaultValue::Str(_), _) => compare(),
    }
}

/// The field's default value as an expression of its view type (see [`super::view`]).
pub fn view_default_expr(f: &Field) -> TokenStream {
    let value = match &f.default {
        DefaultValue::Null => return quote!(None),
        DefaultValue::Natural => match &f.ty {
            FieldType::Fixed(t) => t.natural(),
            FieldType::String => quote!(""),
            FieldType::Bytes | FieldType::Records => quote!(&[]),
            FieldType::Struct(n) => {
                let n = super::view::view_ident(n);
                quote!(#n::default())
            }
            FieldType::Array(_) => quote!(rt::view::ArrayView::default()),
        },
        DefaultValue::Bool(b) => quote!(#b),
        DefaultValue::Int(v) => int_literal(*v),
        DefaultValue::Float(v) => {
            let l = Literal::f64_unsuffixed(*v);
            quote!(#l)
        }
        DefaultValue::Str(s) => quote!(#s),
    };
    if f.is_option() {
        quote!(Some(#value))
    } else {
        value
    }
}
