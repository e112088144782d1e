//! One struct: its declaration, `Default`, docs and the trait impls around the bodies that
//! [`decode`](super::decode), [`encode`](super::encode), [`size`](super::size) and
//! [`sample`](super::sample) emit from the field plans (see [`crate::internal::plan`]).
//!
//! Every body is one function for all versions. Each field is guarded by the version
//! conditionals of its plan, computed against the versions still possible at that point, so
//! checks the version already decided are not emitted.

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use super::body::version_param;
use super::types::{default_expr, field_ident, field_type, struct_ident};
use crate::config::Options;
use crate::model::{DefaultValue, Field, Message, Struct};
use crate::version::VersionRange;

/// Emits a struct and its trait impls. `top` is true for the message body itself.
pub(crate) fn emit_struct(msg: &Message, s: &Struct, top: bool, options: &Options) -> TokenStream {
    let name = struct_ident(&s.name);
    let doc = struct_doc(msg, s, top);
    let fields = s.fields.iter().map(|f| {
        let id = field_ident(&f.name);
        let ty = field_type(f);
        let doc = doc_attrs(&field_doc(f));
        quote! {
            #doc
            pub #id: #ty,
        }
    });
    let unknown_decl = s.has_tagged_section().then(|| {
        quote! {
            /// Tagged fields this build does not know, kept so they are written back unchanged.
            pub unknown_tagged_fields: rt::UnknownTaggedFields,
        }
    });
    let defaults = s.fields.iter().map(|f| {
        let id = field_ident(&f.name);
        let d = default_expr(f);
        quote!(#id: #d,)
    });
    let unknown_default = s.has_tagged_section().then(|| quote!(unknown_tagged_fields: rt::UnknownTaggedFields::default(),));

    let decode = super::decode::body(s, super::decode::Target::Owned);
    let encode = super::encode::body(s);
    let len = super::size::body(s);
    let (dv, ev, lv) = (version_param(&decode), version_param(&encode), version_param(&len));

    let sample = super::sample::body(s);
    let access = super::access::emit_access(s, &msg.structs_reaching_endpoints());
    // The decode and size bodies are generic over a unit type parameter (`Lazy`, always `()`)
    // so they are compiled only in a crate that calls them, once, like the generic `encode`:
    // not all of them in this crate, and not copied into every codegen unit as `#[inline]`
    // bodies would be. Not inlined into each other either: one function per struct keeps
    // LLVM's work linear (a whole message inlined into its caller optimises slowly). The
    // trait methods are thin `#[inline]` wrappers.
    let bodies = quote! {
        impl #name {
            #[inline(never)]
            fn decode_fields<Lazy>(buf: &mut rt::Bytes, #dv: i16) -> Result<Self, rt::DecodeError> {
                #decode
            }

            fn encoded_len_fields<Lazy>(&self, #lv: i16) -> usize {
                #len
            }
        }
    };
    let impls = if top {
        let fq = Literal::string(&msg.name);
        let valid = range_tokens(msg.valid);
        let flexible = range_tokens(msg.flexible);
        quote! {
            #bodies

            impl #name {
                fn encode_fields<B: rt::BufMut>(&self, buf: &mut B, #ev: i16) -> Result<(), rt::EncodeError> {
                    #encode
                }
            }

            impl rt::Decode for #name {
                #[inline]
                fn decode(buf: &mut rt::Bytes, version: i16) -> Result<Self, rt::DecodeError> {
                    rt::message::decode_message(buf, version, Self::decode_fields::<()>)
                }
            }

            impl rt::Encode for #name {
                fn encode<B: rt::BufMut>(&self, buf: &mut B, version: i16) -> Result<(), rt::EncodeError> {
                    rt::message::encode_message::<Self, B>(buf, version, |buf, version| self.encode_fields(buf, version))
                }

                #[inline]
                fn encoded_len(&self, version: i16) -> usize {
                    self.encoded_len_fields::<()>(version)
                }
            }

            impl rt::Message for #name {
                const NAME: &'static str = #fq;
                const VERSIONS: rt::VersionRange = #valid;
                const FLEXIBLE_VERSIONS: rt::VersionRange = #flexible;
            }
        }
    } else {
        quote! {
            #bodies

            impl rt::Decode for #name {
                #[inline]
                fn decode(buf: &mut rt::Bytes, version: i16) -> Result<Self, rt::DecodeError> {
                    Self::decode_fields::<()>(buf, version)
                }
            }

            impl rt::Encode for #name {
                fn encode<B: rt::BufMut>(&self, buf: &mut B, #ev: i16) -> Result<(), rt::EncodeError> {
                    #encode
                }

                #[inline]
                fn encoded_len(&self, version: i16) -> usize {
                    self.encoded_len_fields::<()>(version)
                }
            }
        }
    };

    let doc = doc_attrs(&doc);
    let json = super::json::emit_struct_json(s, top, options);
    let derives = options.derives();
    let sample_version = version_param(&sample);
    let sample_impl = Options::cfg(&[&options.sample]).map(|cfg| {
        quote! {
            #cfg
            impl rt::sample::Sample for #name {
                fn sample(#sample_version: i16, rng: &mut rt::sample::SampleRng) -> Self {
                    #sample
                }
            }
        }
    });
    quote! {
        #doc
        #[derive(Debug, Clone, PartialEq #(, #derives)*)]
        pub struct #name {
            #(#fields)*
            #unknown_decl
        }

        impl Default for #name {
            #[inline]
            fn default() -> Self {
                Self {
                    #(#defaults)*
                    #unknown_default
                }
            }
        }

        #impls

        #access

        #sample_impl

        #json
    }
}

/// One `#[doc]` attribute per line, so the formatter writes `///` comments.
pub fn doc_attrs(text: &str) -> TokenStream {
    text.lines()
        .map(|line| {
            let line = if line.is_empty() { String::new() } else { format!(" {line}") };
            quote!(#[doc = #line])
        })
        .collect()
}

/// A `rt::VersionRange` literal.
pub fn range_tokens(r: VersionRange) -> TokenStream {
    if r.is_empty() {
        return quote!(rt::VersionRange::NONE);
    }
    let (lo, hi) = (Literal::i16_unsuffixed(r.lo), Literal::i16_unsuffixed(r.hi));
    // A struct literal, not a `const fn` call, so that `&ApiInfo { .. }` is promoted to 'static.
    quote!(rt::VersionRange { lo: #lo, hi: #hi })
}

/// A spec's `about` text as rustdoc shows it literally: its brackets and angle brackets
/// (`Array[0]`, `<topic>`) are prose, not links or HTML.
fn spec_text(about: &str) -> String {
    let mut out = String::with_capacity(about.len());
    for c in about.chars() {
        if matches!(c, '[' | ']' | '<' | '>') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn struct_doc(msg: &Message, s: &Struct, top: bool) -> String {
    let mut doc = String::new();
    if top {
        doc.push_str(&msg.name);
        if let Some(k) = msg.api_key {
            doc.push_str(&format!(" (api key {k})"));
        }
        doc.push_str(&format!(", versions {}", msg.valid));
        if msg.latest_unstable {
            doc.push_str(&format!(" (v{} unstable)", msg.valid.hi));
        }
        doc.push_str(&format!(", flexible {}", msg.flexible));
        if !msg.deprecated.is_empty() {
            doc.push_str(&format!(", deprecated {}", msg.deprecated));
        }
        doc.push('.');
        if !msg.listeners.is_empty() {
            doc.push_str(&format!("\n\nListeners: {}.", msg.listeners.join(", ")));
        }
    } else {
        doc.push_str(&if s.about.is_empty() { s.name.clone() } else { spec_text(&s.about) });
        doc.push_str(&format!("\n\nUsed in versions {}.", s.reach));
    }
    doc
}

pub(super) fn field_doc(f: &Field) -> String {
    let mut doc = if f.about.is_empty() { f.name.clone() } else { spec_text(&f.about) };
    let mut facts = vec![format!("versions {}", f.versions)];
    if !f.nullable.is_empty() {
        facts.push(format!("nullable {}", f.nullable));
    }
    if let Some(tag) = f.tag {
        facts.push(format!("tagged (tag {tag}) {}", f.tagged));
    }
    match &f.default {
        DefaultValue::Natural => {}
        DefaultValue::Null => facts.push("default null".into()),
        DefaultValue::Bool(b) => facts.push(format!("default {b}")),
        DefaultValue::Int(v) => facts.push(format!("default {v}")),
        DefaultValue::Float(v) => facts.push(format!("default {v}")),
        DefaultValue::Str(s) => facts.push(format!("default \"{s}\"")),
    }
    if f.ignorable {
        facts.push("ignorable".into());
    }
    if let Some(e) = &f.entity_type {
        facts.push(format!("entity {e}"));
    }
    if f.map_key {
        facts.push("map key".into());
    }
    doc.push_str(&format!("\n\nSpec: `{}`: {}.", f.name, facts.join("; ")));
    doc
}
