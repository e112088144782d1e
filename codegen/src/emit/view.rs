//! Borrowed views (`XxxView<'a>`, see the runtime's `view` module): one per struct, with the
//! struct's fields in their borrowed types, decoded by the struct's own decode body read through
//! `rt::view` ([`Target::View`]), and turned back into the owned struct by `into_owned`.

use std::collections::BTreeSet;

use proc_macro2::{Ident, Literal, TokenStream};
use quote::{format_ident, quote};

use super::body::{flexible_decl, if_flexible, split, version_param, Form};
use super::cond::{compact, cond, Cond};
use super::decode::Target;
use super::structs::{doc_attrs, field_doc, range_tokens};
use super::types::{field_ident, struct_ident, view_default_expr};
use crate::model::{FieldType, Message, Struct};

/// The view type of struct `name`.
pub fn view_ident(name: &str) -> Ident {
    format_ident!("{}View", name)
}

/// The structs of `msg` whose views borrow from the frame (and so take a lifetime): all but
/// those of fixed-width fields only, with no tagged section.
fn borrowing(msg: &Message) -> BTreeSet<&str> {
    let mut out = BTreeSet::new();
    // Nested structs come after the struct that holds them; walk until nothing changes.
    loop {
        let before = out.len();
        for s in &msg.structs {
            let borrows = s.has_tagged_section()
                || s.fields.iter().any(|f| match &f.ty {
                    FieldType::Fixed(_) => false,
                    FieldType::Struct(n) => out.contains(n.as_str()),
                    FieldType::String | FieldType::Bytes | FieldType::Records | FieldType::Array(_) => true,
                });
            if borrows {
                out.insert(s.name.as_str());
            }
        }
        if out.len() == before {
            return out;
        }
    }
}

fn view_type(ty: &FieldType, borrowing: &BTreeSet<&str>) -> TokenStream {
    match ty {
        FieldType::Fixed(t) => t.rust_type(),
        FieldType::String => quote!(&'a str),
        FieldType::Bytes | FieldType::Records => quote!(&'a [u8]),
        FieldType::Struct(n) => {
            let id = view_ident(n);
            if borrowing.contains(n.as_str()) {
                quote!(#id<'a>)
            } else {
                quote!(#id)
            }
        }
        FieldType::Array(inner) => {
            let inner = view_type(inner, borrowing);
            quote!(rt::view::ArrayView<'a, #inner>)
        }
    }
}

/// The body of a view's `skip_view_fields`: past each field of a checked struct, reading only
/// lengths, counts and null markers, then past its tagged section, ending in `Ok(())`.
fn skip_body(s: &Struct, borrowing: &BTreeSet<&str>) -> TokenStream {
    let mut stmts = Vec::new();
    // Consecutive fixed-width fields present in every version are skipped in one step.
    let mut run = 0usize;
    let flush = |run: &mut usize, stmts: &mut Vec<TokenStream>| {
        if *run > 0 {
            let n = Literal::usize_unsuffixed(*run);
            stmts.push(quote!(rt::view::skip_bytes(buf, #n)?;));
            *run = 0;
        }
    };
    for f in &s.fields {
        if let (FieldType::Fixed(t), Cond::Always) = (&f.ty, cond(f.plan.regular)) {
            run = run.saturating_add(t.size());
            continue;
        }
        flush(&mut run, &mut stmts);
        let skip = split(f.plan.regular_value, |form, c| {
            let ct = compact(c);
            let nullable = form == Form::Nullable;
            match &f.ty {
                FieldType::String if nullable => quote!(rt::view::skip_nullable_str(buf, #ct)?;),
                FieldType::Bytes | FieldType::Records => quote!(rt::view::skip_nullable_bytes(buf, #ct)?;),
                FieldType::Struct(_) if nullable => {
                    let ty = view_type(&f.ty, borrowing);
                    quote!(rt::view::skip_nullable_struct::<#ty>(buf, version)?;)
                }
                FieldType::Array(inner) => {
                    let ty = view_type(inner, borrowing);
                    quote!(rt::view::skip_nullable_array::<#ty>(buf, version, #ct)?;)
                }
                _ => {
                    let ty = view_type(&f.ty, borrowing);
                    let ct = if matches!(f.ty, FieldType::Fixed(_)) { quote!(false) } else { ct };
                    quote!(<#ty as rt::view::View<'a>>::skip_view(buf, version, #ct)?;)
                }
            }
        });
        match cond(f.plan.regular) {
            Cond::Always => stmts.push(skip),
            Cond::Never => {}
            Cond::Expr(c) => stmts.push(quote!(if #c { #skip })),
        }
    }
    flush(&mut run, &mut stmts);
    if s.has_tagged_section() {
        stmts.push(if_flexible(s, quote!(rt::view::skip_tagged(buf)?;)));
    }
    let body = quote!(#(#stmts)*);
    let flex = flexible_decl(s, &body);
    quote! {
        #flex
        #body
        Ok(())
    }
}

/// The view of every struct of `msg`, and for the message itself its `MessageView` and `Viewed`
/// impls.
/// `cfg` goes before each item (the views' gate).
pub fn emit_views(msg: &Message, cfg: &TokenStream) -> TokenStream {
    let borrowing = borrowing(msg);
    msg.structs.iter().enumerate().map(|(i, s)| emit_view(msg, s, i == 0, &borrowing, cfg)).collect()
}

fn emit_view(msg: &Message, s: &Struct, top: bool, borrowing: &BTreeSet<&str>, cfg: &TokenStream) -> TokenStream {
    let owned = struct_ident(&s.name);
    let name = view_ident(&s.name);
    let borrows = borrowing.contains(s.name.as_str());
    let (ty, lt) = if borrows { (quote!(#name<'a>), quote!(<'a>)) } else { (quote!(#name), TokenStream::new()) };
    // A view without borrowed fields has no lifetime of its own; its decode body takes one.
    let lt_param = if borrows { TokenStream::new() } else { quote!('a,) };
    let anon = if borrows { quote!(#name<'_>) } else { quote!(#name) };

    let doc = doc_attrs(&format!(
        "[`{}`] read in place from a frame, without allocating: decoding it checks all of it, \
         then its fields are plain values, `&str`s, byte slices and array views (see \
         `kwire::runtime::view`).",
        s.name
    ));
    let fields = s.fields.iter().map(|f| {
        let id = field_ident(&f.name);
        let base = view_type(&f.ty, borrowing);
        let ty = if f.is_option() { quote!(Option<#base>) } else { base };
        let doc = doc_attrs(&field_doc(f));
        quote! {
            #doc
            pub #id: #ty,
        }
    });
    let tagged_decl = s.has_tagged_section().then(|| {
        quote! {
            /// The tagged fields as they are on the wire, known and unknown.
            pub tagged_fields: rt::view::TaggedView<'a>,
        }
    });
    let defaults = s.fields.iter().map(|f| {
        let id = field_ident(&f.name);
        let d = view_default_expr(f);
        quote!(#id: #d,)
    });
    let tagged_default = s.has_tagged_section().then(|| quote!(tagged_fields: rt::view::TaggedView::default(),));

    let owned_fields = s.fields.iter().map(|f| {
        let id = field_ident(&f.name);
        let value = match (&f.ty, f.is_option()) {
            (FieldType::Fixed(_), _) => quote!(self.#id),
            (FieldType::Array(_), false) => quote!(self.#id.to_owned_collection()),
            (FieldType::Array(_), true) => quote!(self.#id.map(|a| a.to_owned_collection())),
            _ => quote!(rt::view::IntoOwned::into_owned(self.#id)),
        };
        quote!(#id: #value,)
    });
    let unknown = s.has_tagged_section().then(|| {
        let known = s.fields.iter().filter_map(|f| f.tag).map(Literal::u32_unsuffixed);
        quote!(unknown_tagged_fields: self.tagged_fields.unknown(&[#(#known),*]),)
    });

    let body = super::decode::body(s, Target::View);
    let check = super::decode::view_check_body(s);
    let skip = skip_body(s, borrowing);
    let skip_version = version_param(&skip);
    let version = version_param(&body);
    let buf = if super::body::uses_ident(&body, "buf") { quote!(buf) } else { quote!(_buf) };
    let method_lt = if borrows { TokenStream::new() } else { quote!(<'a>) };
    let top_impls = top.then(|| {
        let fq = Literal::string(&msg.name);
        let valid = range_tokens(msg.valid);
        quote! {
            #cfg
            impl<'a> rt::view::MessageView<'a> for #ty {
                const NAME: &'static str = #fq;
                const VERSIONS: rt::VersionRange = #valid;
            }

            #cfg
            impl #lt #ty {
                /// Reads the message, version `version`, from the front of `buf` (advanced past
                /// it), checking all of it; errors name the message, version, field path and
                /// offset, as the owned decode's do.
                #[inline]
                pub fn decode #method_lt (buf: &mut &'a [u8], version: i16) -> Result<Self, rt::DecodeError> {
                    <Self as rt::view::MessageView<'a>>::decode(buf, version)
                }
            }

            #cfg
            impl rt::view::Viewed for #owned {
                type View<'a> = #ty;
            }
        }
    });
    quote! {
        #doc
        #cfg
        #[derive(Debug, Clone, Copy)]
        pub struct #ty {
            #(#fields)*
            #tagged_decl
        }

        #cfg
        impl Default for #anon {
            #[inline]
            fn default() -> Self {
                Self {
                    #(#defaults)*
                    #tagged_default
                }
            }
        }

        #cfg
        impl #lt #ty {
            // Generic, like the owned decode body, so compiled only where called; `M` says
            // whether nested arrays are checked (a frame) or skipped (an iterated element).
            #[inline(never)]
            fn decode_view_fields<#lt_param M: rt::view::Mode>(#buf: &mut &'a [u8], #version: i16) -> Result<Self, rt::DecodeError> {
                #body
            }

            #[inline(never)]
            fn check_view_fields<#lt_param M: rt::view::Mode>(#buf: &mut &'a [u8], #version: i16) -> Result<(), rt::DecodeError> {
                #check
            }

            #[inline(never)]
            fn skip_view_fields<#lt_param Lazy>(buf: &mut &'a [u8], #skip_version: i16) -> Result<(), rt::DecodeError> {
                #skip
            }
        }

        #cfg
        impl<'a> rt::view::View<'a> for #ty {
            #[inline]
            fn decode_view(buf: &mut &'a [u8], version: i16, _compact: bool) -> Result<Self, rt::DecodeError> {
                Self::decode_view_fields::<rt::view::Checked>(buf, version)
            }

            #[inline]
            fn check_view(buf: &mut &'a [u8], version: i16, _compact: bool) -> Result<(), rt::DecodeError> {
                Self::check_view_fields::<rt::view::Checked>(buf, version)
            }

            #[inline]
            fn decode_trusted(buf: &mut &'a [u8], version: i16, _compact: bool) -> Result<Self, rt::DecodeError> {
                Self::decode_view_fields::<rt::view::Trusted>(buf, version)
            }

            #[inline]
            fn skip_view(buf: &mut &'a [u8], version: i16, _compact: bool) -> Result<(), rt::DecodeError> {
                Self::skip_view_fields::<()>(buf, version)
            }
        }

        #cfg
        impl rt::view::IntoOwned for #anon {
            type Owned = #owned;

            // Compiled only where called, like the decode bodies.
            #[inline]
            fn into_owned(self) -> #owned {
                #owned {
                    #(#owned_fields)*
                    #unknown
                }
            }
        }

        #top_impls
    }
}
