//! The body of a struct's `encoded_len_fields`: the same plan as encoding, summing sizes.

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use super::body::{flexible_decl, split, tagged_fields, Form};
use super::cond::{compact, cond, guarded, Cond};
use super::encode::tagged_is_written;
use super::types::field_ident;
use crate::model::{Field, FieldType, Struct};
use crate::plan::{Compact, Value};

/// The statements of `encoded_len_fields`, ending in `len`.
pub fn body(s: &Struct) -> TokenStream {
    let mut terms = Vec::new();
    for f in &s.fields {
        let l = len_field(f, f.plan.regular_value);
        terms.push(guarded(f.plan.regular, quote!(len += #l;)));
    }
    let tagged = if s.has_tagged_section() {
        let mut known = Vec::new();
        for f in tagged_fields(s) {
            let Some(t) = f.plan.tagged else { continue };
            let tag = Literal::u32_unsuffixed(t.tag);
            let present = tagged_is_written(f);
            let l = len_field(f, t.value);
            known.push(quote! {
                if #present {
                    count += 1;
                    fields += rt::tagged::field_len(#tag, #l);
                }
            });
        }
        let body = if known.is_empty() {
            quote!(len += rt::tagged::section_len(self.unknown_tagged_fields.len(), self.unknown_tagged_fields.fields_len());)
        } else {
            quote! {
                let mut count = self.unknown_tagged_fields.len();
                let mut fields = self.unknown_tagged_fields.fields_len();
                #(#known)*
                len += rt::tagged::section_len(count, fields);
            }
        };
        match cond(s.plan.flexible) {
            Cond::Always => body,
            Cond::Expr(_) | Cond::Never => quote!(if flexible { #body }),
        }
    } else {
        TokenStream::new()
    };
    let body = quote!(#(#terms)* #tagged);
    let flex = flexible_decl(s, &body);
    quote! {
        #flex
        let mut len = 0usize;
        #body
        len
    }
}

/// A `usize` expression: the size of `f` as planned.
pub fn len_field(f: &Field, value: Value) -> TokenStream {
    let id = field_ident(&f.name);
    split(value, |form, c| match form {
        Form::Plain => len_value(&f.ty, c, &quote!(&self.#id)),
        Form::Nullable => len_nullable(f, c),
        Form::NotNull => {
            let l = len_value(&f.ty, c, &quote!(v));
            quote!(self.#id.as_ref().map_or(0, |v| #l))
        }
    })
}

fn len_nullable(f: &Field, c: Compact) -> TokenStream {
    let id = field_ident(&f.name);
    let ct = compact(c);
    match &f.ty {
        FieldType::String => quote!(rt::encoding::string::len_nullable(self.#id.as_deref(), #ct)),
        FieldType::Bytes | FieldType::Records => quote!(rt::encoding::bytes::len_nullable(self.#id.as_deref(), #ct)),
        FieldType::Array(inner) => match inner.fixed_size() {
            Some(size) => quote!(rt::array::nullable_fixed_array_len(self.#id.as_deref(), #ct, #size)),
            None => {
                let l = len_value(inner, c, &quote!(v));
                quote!(rt::array::nullable_array_len(self.#id.as_deref(), #ct, |v| #l))
            }
        },
        FieldType::Struct(_) => quote!(rt::message::nullable_struct_len(self.#id.as_ref(), version)),
        // Lowering only allows the types above to be nullable.
        FieldType::Fixed(_) => len_value(&f.ty, c, &quote!(&self.#id)),
    }
}

/// Size of `v` (an expression of type `&T`).
fn len_value(ty: &FieldType, c: Compact, v: &TokenStream) -> TokenStream {
    let ct = compact(c);
    match ty {
        FieldType::String => quote!(rt::encoding::string::len(#v, #ct)),
        FieldType::Bytes | FieldType::Records => quote!(rt::encoding::bytes::len(#v, #ct)),
        FieldType::Array(inner) => match inner.fixed_size() {
            Some(size) => quote!(rt::array::fixed_array_len(#v, #ct, #size)),
            None => {
                let l = len_value(inner, c, &quote!(v));
                quote!(rt::array::array_len(#v, #ct, |v| #l))
            }
        },
        FieldType::Struct(_) => quote!(rt::Encode::encoded_len(#v, version)),
        FieldType::Fixed(t) => {
            let size = t.size();
            quote!(#size)
        }
    }
}
