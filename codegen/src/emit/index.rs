//! The index file: one module per spec, the `ApiKey` table, header version rules and the
//! request/response dispatch enums.

use heck::ToSnakeCase;
use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};

use super::structs::range_tokens;
use crate::config::{Include, Options};
use crate::model::{Api, HeaderVersion, Model};

/// The module name of a message.
pub fn module_name(message: &str) -> String {
    message.to_snake_case()
}

/// Emits the index. `file_of(name)` gives the file a module's code is in.
pub(crate) fn emit_index(model: &Model, options: &Options) -> TokenStream {
    let modules = model.messages.iter().map(|m| {
        let module = format_ident!("{}", module_name(&m.name));
        let ty = format_ident!("{}", m.name);
        let file = format!("{}.rs", module_name(&m.name));
        let include = match options.include {
            Include::OutDir => {
                let file = format!("/{file}");
                quote!(include!(concat!(env!("OUT_DIR"), #file));)
            }
            Include::Relative => quote!(include!(#file);),
        };
        let doc = format!("`{}`, generated from `{}`.", m.name, m.file);
        quote! {
            #[doc = #doc]
            pub mod #module {
                #include
            }
            pub use #module::#ty;
        }
    });
    let api_key = emit_api_key(model);
    let all: Vec<_> = model.messages.iter().map(|m| format_ident!("{}", m.name)).collect();
    let dispatch_req = emit_dispatch(model, true, options);
    let dispatch_resp = emit_dispatch(model, false, options);
    let visit = Options::cfg(&[&options.sample]).map(|cfg| {
        quote! {
            /// Calls `visitor` once per message type (requests, responses, headers, data).
            #cfg
            pub fn visit_messages<V: rt::sample::MessageVisitor>(visitor: &mut V) {
                #(visitor.visit::<#all>();)*
            }
        }
    });
    let visit_json = Options::cfg(&[&options.sample, &options.json]).map(|cfg| {
        quote! {
            /// Like `visit_messages`, with each type's JSON form too (features `sample` and `serde`).
            #cfg
            pub fn visit_json_messages<V: rt::sample::JsonMessageVisitor>(visitor: &mut V) {
                #(visitor.visit::<#all>();)*
            }
        }
    });
    let visit_views = Options::cfg(&[&options.sample, &options.views]).map(|cfg| {
        quote! {
            /// Like `visit_messages`, with each type's borrowed view too (feature `sample`).
            #cfg
            pub fn visit_view_messages<V: rt::sample::ViewMessageVisitor>(visitor: &mut V) {
                #(visitor.visit::<#all>();)*
            }
        }
    });
    quote! {
        #(#modules)*

        #visit

        #visit_views

        #visit_json

        #api_key
        #dispatch_req
        #dispatch_resp
    }
}

fn variant(api: &Api) -> proc_macro2::Ident {
    format_ident!("{}", api.name)
}

fn emit_api_key(model: &Model) -> TokenStream {
    let variants = model.apis.iter().map(|a| {
        let v = variant(a);
        let key = Literal::i16_unsuffixed(a.key);
        let doc = format!("{} (key {}), versions {}.", a.name, a.key, a.valid);
        quote! {
            #[doc = #doc]
            #v = #key,
        }
    });
    let all = model.apis.iter().map(variant);
    let from = model.apis.iter().map(|a| {
        let v = variant(a);
        let key = Literal::i16_unsuffixed(a.key);
        quote!(#key => Some(ApiKey::#v),)
    });
    let infos = model.apis.iter().map(|a| {
        let v = variant(a);
        let key = Literal::i16_unsuffixed(a.key);
        let name = &a.name;
        let valid = range_tokens(a.valid);
        let flexible = range_tokens(a.flexible);
        let deprecated = range_tokens(a.deprecated);
        let unstable = a.latest_unstable;
        let listeners = &a.listeners;
        let releases = a.releases.iter().map(|r| {
            let (release, valid, unstable) = (&r.release, range_tokens(r.valid), r.latest_unstable);
            quote!(rt::ReleaseVersions { release: #release, valid: #valid, latest_version_unstable: #unstable })
        });
        quote! {
            ApiKey::#v => &rt::ApiInfo {
                key: #key,
                name: #name,
                valid: #valid,
                flexible: #flexible,
                deprecated: #deprecated,
                latest_version_unstable: #unstable,
                listeners: &[#(#listeners),*],
                releases: &[#(#releases),*],
            },
        }
    });
    // Kafka's ApiMessageType hard-codes these two exceptions to the header version rules.
    let has = |n: &str| model.apis.iter().any(|a| a.name == n && a.request_header.is_empty());
    let controlled_shutdown = has("ControlledShutdown").then(|| quote!(ApiKey::ControlledShutdown if version == 0 => 0,));
    let has = |n: &str| model.apis.iter().any(|a| a.name == n && a.response_header.is_empty());
    let api_versions = has("ApiVersions").then(|| quote!(ApiKey::ApiVersions => 0,));
    // A spec's `headerVersions` decide instead of the rules, for every version they cover.
    let declared = |pick: fn(&Api) -> &[HeaderVersion]| {
        model
            .apis
            .iter()
            .flat_map(move |a| {
                let v = variant(a);
                pick(a).iter().map(move |h| {
                    let lo = Literal::i16_unsuffixed(h.versions.lo);
                    let header = Literal::i16_unsuffixed(h.header);
                    if h.versions.is_open_ended() {
                        quote!(ApiKey::#v if version >= #lo => #header,)
                    } else {
                        let hi = Literal::i16_unsuffixed(h.versions.hi);
                        quote!(ApiKey::#v if version >= #lo && version <= #hi => #header,)
                    }
                })
            })
            .collect::<Vec<_>>()
    };
    let request_declared = declared(|a| &a.request_header);
    let response_declared = declared(|a| &a.response_header);
    let count = model.apis.len();
    let endpoint_arms = |pick: fn(&Api) -> Option<usize>| {
        model
            .apis
            .iter()
            .filter_map(|a| {
                let r = model.messages.get(pick(a)?)?.endpoint_versions();
                if r.is_empty() {
                    return None;
                }
                let (v, r) = (variant(a), super::structs::range_tokens(r));
                Some(quote!(ApiKey::#v => #r,))
            })
            .collect::<Vec<_>>()
    };
    let (request_endpoints, response_endpoints) = (endpoint_arms(|a| a.request), endpoint_arms(|a| a.response));
    quote! {
        /// Every api key of the spec set, with what its spec says about it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(i16)]
        pub enum ApiKey {
            #(#variants)*
        }

        impl ApiKey {
            /// Every api key, in key order.
            pub const ALL: [ApiKey; #count] = [#(ApiKey::#all),*];

            /// The api key with this number, if this build knows it.
            pub const fn from_i16(key: i16) -> Option<ApiKey> {
                match key {
                    #(#from)*
                    _ => None,
                }
            }

            /// The numeric key.
            pub const fn key(self) -> i16 {
                self as i16
            }

            /// What the spec says about this api: versions, flexibility, deprecation, listeners.
            pub const fn info(self) -> &'static rt::ApiInfo {
                match self {
                    #(#infos)*
                }
            }

            /// The api name (`Produce`).
            pub const fn name(self) -> &'static str {
                self.info().name
            }

            /// The versions to use and advertise by default: the valid versions without an
            /// unstable newest one. See [`rt::ApiInfo::versions`] to opt in to unstable ones.
            pub const fn stable_versions(self) -> rt::VersionRange {
                self.info().stable_versions()
            }

            /// The request header version Kafka uses for this api at `version`.
            pub const fn request_header_version(self, version: i16) -> i16 {
                match self {
                    #(#request_declared)*
                    #controlled_shutdown
                    _ if self.info().flexible.contains(version) => 2,
                    _ => 1,
                }
            }

            /// The request versions that can carry a broker endpoint (a struct with `Host` and
            /// `Port`, see `Visit::visit_endpoints`); empty when none can. A proxy that decodes
            /// these and passes the rest through unparsed still sees every endpoint.
            #[allow(clippy::match_same_arms)]
            pub const fn request_endpoint_versions(self) -> rt::VersionRange {
                match self {
                    #(#request_endpoints)*
                    #[allow(unreachable_patterns)]
                    _ => rt::VersionRange::NONE,
                }
            }

            /// The response versions that can carry a broker endpoint, as
            /// [`request_endpoint_versions`](Self::request_endpoint_versions) for responses.
            #[allow(clippy::match_same_arms)]
            pub const fn response_endpoint_versions(self) -> rt::VersionRange {
                match self {
                    #(#response_endpoints)*
                    #[allow(unreachable_patterns)]
                    _ => rt::VersionRange::NONE,
                }
            }

            /// The response header version Kafka uses for this api at `version`.
            pub const fn response_header_version(self, version: i16) -> i16 {
                match self {
                    #(#response_declared)*
                    #api_versions
                    _ if self.info().flexible.contains(version) => 1,
                    _ => 0,
                }
            }
        }

        impl TryFrom<i16> for ApiKey {
            type Error = i16;

            fn try_from(key: i16) -> Result<Self, i16> {
                ApiKey::from_i16(key).ok_or(key)
            }
        }

        impl From<ApiKey> for i16 {
            fn from(key: ApiKey) -> i16 {
                key as i16
            }
        }
    }
}

/// (variant, message type) of every api with a request (or response) type, by api key: the
/// arms of the dispatch enums and of their JSON helpers.
pub fn dispatch_pairs(model: &Model, request: bool) -> Vec<(proc_macro2::Ident, proc_macro2::Ident)> {
    model
        .apis
        .iter()
        .filter_map(|a| {
            let idx = if request { a.request } else { a.response }?;
            let m = model.messages.get(idx)?;
            Some((variant(a), format_ident!("{}", m.name)))
        })
        .collect()
}

fn emit_dispatch(model: &Model, request: bool, options: &Options) -> TokenStream {
    let inline = options.inline_unless_precompiled();
    let (enum_name, kind_word) = if request { ("RequestKind", "request") } else { ("ResponseKind", "response") };
    let enum_ident = format_ident!("{}", enum_name);
    let pairs = dispatch_pairs(model, request);
    let variants = pairs.iter().map(|(v, t)| {
        let doc = format!("A `{t}`.");
        quote! {
            #[doc = #doc]
            #v(#t),
        }
    });
    let decode = pairs.iter().map(|(v, t)| quote!(Some(ApiKey::#v) => <#t as rt::Decode>::decode(buf, version).map(Self::#v),));
    let encode = pairs.iter().map(|(v, _)| quote!(Self::#v(m) => rt::Encode::encode(m, buf, version),));
    let len = pairs.iter().map(|(v, _)| quote!(Self::#v(m) => rt::Encode::encoded_len(m, version),));
    let key = pairs.iter().map(|(v, _)| quote!(Self::#v(_) => ApiKey::#v,));
    let variant_names: Vec<_> = pairs.iter().map(|(v, _)| v.clone()).collect();
    let froms = pairs.iter().map(|(v, t)| {
        quote! {
            impl From<#t> for #enum_ident {
                fn from(m: #t) -> Self {
                    Self::#v(m)
                }
            }
            /// The body when it is this api's; else the body back, unchanged.
            impl TryFrom<#enum_ident> for #t {
                type Error = #enum_ident;
                fn try_from(kind: #enum_ident) -> Result<Self, #enum_ident> {
                    match kind {
                        #enum_ident::#v(m) => Ok(m),
                        #[allow(unreachable_patterns)]
                        other => Err(other),
                    }
                }
            }
        }
    });
    // Each request body names its api and its response body, so that a caller can send one
    // and get the response back typed, with no match on `ResponseKind`.
    let api_requests = request.then(|| {
        let impls = pairs.iter().map(|(v, t)| {
            quote! {
                impl ApiRequest for #t {
                    const API: ApiKey = ApiKey::#v;
                    type Response = <#t as rt::Request>::Response;
                }
            }
        });
        quote! {
            /// A request body of one api, tied to that api's response body: what a typed request
            /// layer sends (`kwire-client`'s `Client::send`) and how it reads the answer.
            ///
            /// ```
            /// use kwire::{ApiKey, ApiRequest, ResponseKind};
            /// use kwire::messages::{MetadataRequest, MetadataResponse};
            ///
            /// assert_eq!(<MetadataRequest as ApiRequest>::API, ApiKey::Metadata);
            /// let answer = ResponseKind::from(MetadataResponse::default());
            /// let typed: MetadataResponse = <MetadataRequest as ApiRequest>::Response::try_from(answer).unwrap();
            /// assert_eq!(typed, MetadataResponse::default());
            /// ```
            pub trait ApiRequest: Into<RequestKind> {
                /// The api.
                const API: ApiKey;
                /// The response body of this api.
                type Response: TryFrom<ResponseKind, Error = ResponseKind> + Into<ResponseKind>;
            }
            #(#impls)*
        }
    });
    // Api keys whose versions were all removed have no body type.
    let removed = (pairs.len() < model.apis.len()).then(|| {
        quote! {
            Some(_) => {
                let left = rt::Buf::remaining(buf);
                Err(rt::DecodeError::new(rt::DecodeErrorKind::UnsupportedVersion { version }, left))
            }
        }
    });
    let doc = format!("Any {kind_word} body, for decoding by api key and version.");
    let decode_doc = format!("Decodes the {kind_word} body of `api_key` at `version`.");
    quote! {
        #[doc = #doc]
        #[derive(Debug, Clone, PartialEq)]
        pub enum #enum_ident {
            #(#variants)*
        }

        impl #enum_ident {
            #[doc = #decode_doc]
            // Inline: compiled (with every body it reaches) in the crate that calls it, unless
            // the `precompiled` feature compiles it here once.
            #inline
            pub fn decode(buf: &mut rt::Bytes, api_key: i16, version: i16) -> Result<Self, rt::DecodeError> {
                match ApiKey::from_i16(api_key) {
                    #(#decode)*
                    #removed
                    None => {
                        let left = rt::Buf::remaining(buf);
                        Err(rt::DecodeError::new(rt::DecodeErrorKind::UnknownApiKey(api_key), left))
                    }
                }
            }

            /// Encodes the body at `version`.
            pub fn encode<B: rt::BufMut>(&self, buf: &mut B, version: i16) -> Result<(), rt::EncodeError> {
                match self {
                    #(#encode)*
                }
            }

            /// The exact encoded size at `version`.
            #inline
            pub fn encoded_len(&self, version: i16) -> usize {
                match self {
                    #(#len)*
                }
            }

            /// The api key.
            pub fn api_key(&self) -> ApiKey {
                match self {
                    #(#key)*
                }
            }
        }

        #(#froms)*

        #api_requests

        impl rt::visit::Visit for #enum_ident {
            #[inline]
            fn visit_entities(&self, f: &mut dyn FnMut(rt::visit::EntityField, rt::visit::EntityValue<'_>)) {
                match self {
                    #(Self::#variant_names(m) => rt::visit::Visit::visit_entities(m, f),)*
                }
            }

            #[inline]
            fn visit_entities_mut(&mut self, f: &mut dyn FnMut(rt::visit::EntityField, rt::visit::EntityMut<'_>)) {
                match self {
                    #(Self::#variant_names(m) => rt::visit::Visit::visit_entities_mut(m, f),)*
                }
            }

            #[inline]
            fn visit_endpoints(&self, f: &mut dyn FnMut(rt::visit::Endpoint<'_>)) {
                match self {
                    #(Self::#variant_names(m) => rt::visit::Visit::visit_endpoints(m, f),)*
                }
            }

            #[inline]
            fn visit_endpoints_mut(&mut self, f: &mut dyn FnMut(rt::visit::EndpointMut<'_>)) {
                match self {
                    #(Self::#variant_names(m) => rt::visit::Visit::visit_endpoints_mut(m, f),)*
                }
            }

            #[inline]
            fn visit_error_codes(&self, f: &mut dyn FnMut(&'static str, rt::ErrorCode)) {
                match self {
                    #(Self::#variant_names(m) => rt::visit::Visit::visit_error_codes(m, f),)*
                }
            }
        }
    }
}
