//! JSON conversion in the shape of Kafka's generated `XxxJsonConverter` classes: one
//! `rt::json::VersionedJson` impl per struct, and JSON helpers on the dispatch enums. Everything
//! emitted here is behind the generated crate's `serde` feature.
//!
//! Per field, as Kafka's `JsonConverterGenerator` does it: written only in the versions it
//! exists in (a non-default value in a version lacking a non-ignorable field is an error);
//! tagged versions write it only when it differs from its default; reading a missing field is
//! an error where it is mandatory (present and not tagged), else the default.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::body::version_param;
use super::cond::{bool_expr, cond, Cond};
use super::types::{default_expr, differs_from_default, field_ident, field_type, struct_ident};
use crate::config::Options;
use crate::model::{Model, Struct};

/// The JSON key of a field: its spec name with the first letter lower-cased, as Kafka's
/// `FieldSpec.camelCaseName()`.
pub fn json_name(spec_name: &str) -> String {
    let mut chars = spec_name.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The `VersionedJson` impl of a struct. `top` is true for the message body itself.
pub(crate) fn emit_struct_json(s: &Struct, top: bool, options: &Options) -> TokenStream {
    let Some(cfg) = Options::cfg(&[&options.json]) else { return TokenStream::new() };
    let name = struct_ident(&s.name);
    let to = to_json_body(s);
    let from = from_json_body(s);
    let (to, from) = if top {
        (quote!(rt::json::message_to_json::<Self>(version, || { #to })), quote!(rt::json::message_from_json::<Self>(version, || { #from })))
    } else {
        (to, from)
    };
    let tv = version_param(&to);
    let fv = version_param(&from);
    quote! {
        #cfg
        impl rt::json::VersionedJson for #name {
            fn to_json(&self, #tv: i16) -> Result<rt::json::Value, rt::json::JsonError> {
                #to
            }

            fn from_json(value: &rt::json::Value, #fv: i16) -> Result<Self, rt::json::JsonError> {
                #from
            }
        }
    }
}

fn to_json_body(s: &Struct) -> TokenStream {
    let mut stmts = Vec::new();
    for f in &s.fields {
        let key = json_name(&f.name);
        let id = field_ident(&f.name);
        let value = if f.is_option() {
            let nullable = bool_expr(f.plan.present_nullable);
            quote!(rt::json::option_to_json(self.#id.as_ref(), #nullable, #key, version)?)
        } else {
            quote!(rt::json::field_to_json(&self.#id, #key, version)?)
        };
        let differs = differs_from_default(f, &quote!(self.#id));
        // Within the present versions, tagged versions write only a non-default value.
        let write = match cond(f.plan.present_tagged) {
            Cond::Never => quote!(obj.insert(#key.into(), #value);),
            Cond::Always => quote!(if #differs { obj.insert(#key.into(), #value); }),
            Cond::Expr(c) => quote!(if !(#c) || #differs { obj.insert(#key.into(), #value); }),
        };
        let absent = (!f.ignorable).then(|| quote!(if #differs { return Err(rt::json::not_in_version(#key)); }));
        stmts.push(match (cond(f.plan.present), absent) {
            (Cond::Always, _) => write,
            (Cond::Never, absent) => absent.unwrap_or_default(),
            (Cond::Expr(c), None) => quote!(if #c { #write }),
            (Cond::Expr(c), Some(a)) => quote!(if #c { #write } else { #a }),
        });
    }
    if s.has_tagged_section() {
        stmts.push(quote!(rt::json::write_unknown_tagged(&mut obj, &self.unknown_tagged_fields);));
    }
    let mutable = if stmts.is_empty() { quote!() } else { quote!(mut) };
    quote! {
        let #mutable obj = rt::json::Map::new();
        #(#stmts)*
        Ok(rt::json::Value::Object(obj))
    }
}

fn from_json_body(s: &Struct) -> TokenStream {
    let mut keys: Vec<String> = s.fields.iter().map(|f| json_name(&f.name)).collect();
    let mut inits = Vec::new();
    for f in &s.fields {
        let key = json_name(&f.name);
        let id = field_ident(&f.name);
        let ty = field_type(f);
        let default = default_expr(f);
        let read = if f.is_option() {
            let nullable = bool_expr(f.plan.present_nullable);
            quote!(rt::json::option_from_json(v, #nullable, #key, version)?)
        } else {
            quote!(rt::json::field_from_json::<#ty>(v, #key, version)?)
        };
        // A field no reachable version has binds nothing (an unused `v` would warn).
        let (bind, some) = match cond(f.plan.present) {
            Cond::Always => (quote!(v), read),
            Cond::Never => (quote!(_), quote!(return Err(rt::json::not_in_version(#key)))),
            Cond::Expr(c) => (quote!(v), quote!(if #c { #read } else { return Err(rt::json::not_in_version(#key)) })),
        };
        // Mandatory: present and not tagged.
        let none = match cond(f.plan.regular) {
            Cond::Always => quote!(return Err(rt::json::missing(#key))),
            Cond::Never => default,
            Cond::Expr(c) => quote!(if #c { return Err(rt::json::missing(#key)) } else { #default }),
        };
        inits.push(quote! {
            #id: match obj.get(#key) {
                Some(#bind) => #some,
                None => #none,
            },
        });
    }
    let unknown = s.has_tagged_section().then(|| {
        keys.push("_unknownTaggedFields".to_string());
        let flexible = bool_expr(s.plan.flexible);
        quote!(unknown_tagged_fields: rt::json::read_unknown_tagged(obj, #flexible)?,)
    });
    quote! {
        let obj = rt::json::object(value)?;
        rt::json::check_keys(obj, &[#(#keys),*])?;
        Ok(Self {
            #(#inits)*
            #unknown
        })
    }
}

/// JSON helpers on the `RequestKind` / `ResponseKind` dispatch enums.
pub(crate) fn emit_dispatch_json(model: &Model, options: &Options) -> TokenStream {
    let Some(cfg) = Options::cfg(&[&options.json]) else { return TokenStream::new() };
    let one = |request: bool| {
        let (enum_name, word) = if request { ("RequestKind", "request") } else { ("ResponseKind", "response") };
        let enum_ident = format_ident!("{}", enum_name);
        let pairs = super::index::dispatch_pairs(model, request);
        let from = pairs.iter().map(|(v, t)| quote!(Some(ApiKey::#v) => <#t as rt::json::VersionedJson>::from_json(value, version).map(Self::#v),));
        let to = pairs.iter().map(|(v, _)| quote!(Self::#v(m) => rt::json::VersionedJson::to_json(m, version),));
        let removed = (pairs.len() < model.apis.len()).then(|| quote!(Some(k) => Err(rt::json::unsupported_version(k.name(), version)),));
        let from_doc = format!("Reads the {word} body of `api_key` at `version` from Kafka's JSON form.");
        let to_doc = format!("The {word} body in Kafka's JSON form at `version`.");
        quote! {
            #cfg
            impl #enum_ident {
                #[doc = #from_doc]
                pub fn from_json(api_key: i16, version: i16, value: &rt::json::Value) -> Result<Self, rt::json::JsonError> {
                    match ApiKey::from_i16(api_key) {
                        #(#from)*
                        #removed
                        None => Err(rt::json::unknown_api_key(api_key)),
                    }
                }

                #[doc = #to_doc]
                pub fn to_json(&self, version: i16) -> Result<rt::json::Value, rt::json::JsonError> {
                    match self {
                        #(#to)*
                    }
                }
            }
        }
    };
    let (req, resp) = (one(true), one(false));
    quote!(#req #resp)
}

#[cfg(test)]
mod tests {
    use super::json_name;

    #[test]
    fn names_lower_the_first_letter_only() {
        assert_eq!(json_name("PartitionIndex"), "partitionIndex");
        assert_eq!(json_name("ThrottleTimeMs"), "throttleTimeMs");
        assert_eq!(json_name("Name"), "name");
    }
}
