//! One struct: its declaration, `Default`, and the encode / decode / `encoded_len` bodies.
//!
//! Every body is one function for all versions. Each field is guarded by the version
//! conditional of the versions it exists in, computed against the versions still possible at
//! that point, so checks the version already decided are not emitted (see [`cond`]).

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use super::cond::{cond, Cond};
use super::types::{default_expr, differs_from_default, field_ident, field_type, struct_ident};
use crate::model::{DefaultValue, Field, FieldType, Message, Struct};
use crate::version::VersionRange;
use crate::wire::DefaultKind;

/// Emits a struct and its trait impls. `top` is true for the message body itself.
pub fn emit_struct(msg: &Message, s: &Struct, top: bool) -> TokenStream {
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

    let g = Gen { s };
    let decode = g.decode_body();
    let encode = g.encode_body();
    let len = g.len_body();
    let version_param = |body: &TokenStream| {
        if uses_ident(body, "version") {
            quote!(version)
        } else {
            quote!(_version)
        }
    };
    let (dv, ev, lv) = (version_param(&decode), version_param(&encode), version_param(&len));

    let sample = g.sample_body();
    let access = super::access::emit_access(s);
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
    let json = super::json::emit_struct_json(s, top);
    let sample_version = if uses_ident(&sample, "version") { quote!(version) } else { quote!(_version) };
    quote! {
        #doc
        #[derive(Debug, Clone, PartialEq)]
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

        #[cfg(feature = "sample")]
        impl rt::sample::Sample for #name {
            fn sample(#sample_version: i16, rng: &mut rt::sample::SampleRng) -> Self {
                #sample
            }
        }

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
        doc.push_str(if s.about.is_empty() { &s.name } else { &s.about });
        doc.push_str(&format!("\n\nUsed in versions {}.", s.reach));
    }
    doc
}

fn field_doc(f: &Field) -> String {
    let mut doc = if f.about.is_empty() { f.name.clone() } else { f.about.clone() };
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

struct Gen<'a> {
    s: &'a Struct,
}

impl Gen<'_> {
    fn reach(&self) -> VersionRange {
        self.s.reach
    }

    /// `let flexible = ...;` when `body` uses it.
    fn flexible_decl(&self, body: &TokenStream) -> TokenStream {
        match cond(self.s.flexible, self.reach()) {
            Cond::Expr(t) if uses_ident(body, "flexible") => quote!(let flexible = #t;),
            _ => TokenStream::new(),
        }
    }

    /// The compact argument for a field within `p`.
    fn compact(&self, f: &Field, p: VersionRange) -> TokenStream {
        match cond(f.compact, p) {
            Cond::Always => quote!(true),
            Cond::Never => quote!(false),
            // Within `p`, compact versions equal the struct's flexible versions unless the field
            // overrides them (RequestHeader.ClientId).
            Cond::Expr(t) => {
                if f.compact.intersect(&self.reach()) == self.s.flexible {
                    quote!(flexible)
                } else {
                    t
                }
            }
        }
    }

    fn flexible_cond(&self) -> Cond {
        cond(self.s.flexible, self.reach())
    }

    // ---- decode ----

    fn decode_body(&self) -> TokenStream {
        let mut lets = Vec::new();
        let mut arms = Vec::new();
        for f in &self.s.fields {
            let id = local_ident(f);
            let name = &f.name;
            let default = default_expr(f);
            let regular = match cond(f.regular, self.reach()) {
                Cond::Always => {
                    let read = paren(self.read_field(f, f.regular.intersect(&self.reach())));
                    quote!(#read.field(#name)?)
                }
                Cond::Never => default.clone(),
                Cond::Expr(c) => {
                    let read = paren(self.read_field(f, f.regular.intersect(&self.reach())));
                    quote!(if #c { #read.field(#name)? } else { #default })
                }
            };
            let tagged_here = f.tag.is_some() && !f.tagged.intersect(&self.reach()).is_empty();
            if tagged_here {
                lets.push(quote!(let mut #id = #regular;));
                arms.push(self.tagged_arm(f));
            } else {
                lets.push(quote!(let #id = #regular;));
            }
        }
        let inits: Vec<_> = self
            .s
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
        let tagged = if self.s.has_tagged_section() {
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
            let read = match self.flexible_cond() {
                Cond::Expr(c) => quote!(if #c { #read }),
                _ => read,
            };
            quote! {
                let mut unknown_tagged_fields = rt::UnknownTaggedFields::default();
                #read
            }
        } else {
            TokenStream::new()
        };
        let unknown = self.s.has_tagged_section().then(|| quote!(unknown_tagged_fields,));
        let body = quote!(#(#lets)* #tagged);
        let flex = self.flexible_decl(&body);
        quote! {
            #flex
            #body
            Ok(Self { #(#inits,)* #unknown })
        }
    }

    fn tagged_arm(&self, f: &Field) -> TokenStream {
        let id = local_ident(f);
        let name = &f.name;
        let tag = f.tag.unwrap_or_default();
        let tag_lit = Literal::u32_unsuffixed(tag);
        let possible = self.s.flexible;
        let t = f.tagged.intersect(&possible);
        let check = match cond(f.tagged, possible) {
            Cond::Always => TokenStream::new(),
            Cond::Never => quote!(return Err(rt::tagged::tag_not_valid(#tag_lit, version, buf));),
            Cond::Expr(c) => quote! {
                if !(#c) {
                    return Err(rt::tagged::tag_not_valid(#tag_lit, version, buf));
                }
            },
        };
        let read = self.read_field(f, t);
        quote! {
            #tag_lit => {
                #check
                #id = rt::tagged::read_known(#tag_lit, buf, |buf| #read).field(#name)?;
                Ok(true)
            }
        }
    }

    /// An expression of type `Result<FieldType, DecodeError>` reading `f` at versions `p`.
    fn read_field(&self, f: &Field, p: VersionRange) -> TokenStream {
        if !f.is_option() {
            return self.read_value(f, &f.ty, p);
        }
        split_nullable(f, p, |p| self.read_nullable(f, p), |p| {
            let r = self.read_value(f, &f.ty, p);
            quote!(#r.map(Some))
        })
    }

    fn read_nullable(&self, f: &Field, p: VersionRange) -> TokenStream {
        let c = self.compact(f, p);
        match &f.ty {
            FieldType::String => quote!(rt::encoding::string::read_nullable(buf, #c)),
            FieldType::Bytes | FieldType::Records => quote!(rt::encoding::bytes::read_nullable(buf, #c)),
            FieldType::Array(inner) if inner.fixed().is_some() => quote!(rt::array::read_nullable_fixed_array(buf, #c)),
            FieldType::Array(inner) => {
                let elem = self.read_elem(f, inner, p);
                quote!(rt::array::read_nullable_array(buf, #c, #elem))
            }
            FieldType::Struct(n) => {
                let n = struct_ident(n);
                quote!(rt::message::read_nullable_struct(buf, |buf| <#n as rt::Decode>::decode(buf, version)))
            }
            // Lowering only allows the types above to be nullable.
            FieldType::Fixed(_) => self.read_value(f, &f.ty, p),
        }
    }

    fn read_value(&self, f: &Field, ty: &FieldType, p: VersionRange) -> TokenStream {
        let c = self.compact(f, p);
        match ty {
            FieldType::String => quote!(rt::encoding::string::read(buf, #c)),
            FieldType::Bytes | FieldType::Records => quote!(rt::encoding::bytes::read(buf, #c)),
            // Fixed-width elements are read in bulk, the element type inferred from the field's.
            FieldType::Array(inner) if inner.fixed().is_some() => quote!(rt::array::read_fixed_array(buf, #c)),
            FieldType::Array(inner) => {
                let elem = self.read_elem(f, inner, p);
                quote!(rt::array::read_array(buf, #c, #elem))
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
    fn read_elem(&self, f: &Field, ty: &FieldType, p: VersionRange) -> TokenStream {
        match ty {
            FieldType::Fixed(t) => t.func("read"),
            FieldType::String | FieldType::Bytes | FieldType::Records | FieldType::Struct(_) | FieldType::Array(_) => {
                let r = self.read_value(f, ty, p);
                quote!(|buf| #r)
            }
        }
    }

    // ---- encode ----

    fn encode_body(&self) -> TokenStream {
        let mut stmts = Vec::new();
        for f in &self.s.fields {
            let write = |p: VersionRange| self.write_field(f, p).stmt(&f.name);
            let absent = self.absent_check(f);
            let stmt = match cond(f.regular, self.reach()) {
                Cond::Always => write(f.regular.intersect(&self.reach())),
                Cond::Never => absent.unwrap_or_default(),
                Cond::Expr(c) => {
                    let w = write(f.regular.intersect(&self.reach()));
                    match absent {
                        Some(a) => quote!(if #c { #w } else { #a }),
                        None => quote!(if #c { #w }),
                    }
                }
            };
            stmts.push(stmt);
        }
        let tagged = self.encode_tagged();
        let body = quote!(#(#stmts)* #tagged);
        let flex = self.flexible_decl(&body);
        quote! {
            #flex
            #body
            Ok(())
        }
    }

    /// The check for a field absent at this version: a non-default value is an error unless the
    /// field is ignorable.
    fn absent_check(&self, f: &Field) -> Option<TokenStream> {
        if f.ignorable {
            return None;
        }
        let id = field_ident(&f.name);
        let name = &f.name;
        let differs = differs_from_default(f, &quote!(self.#id));
        let err = quote!(return Err(rt::message::non_default().field(#name)););
        match cond(f.versions, self.reach()) {
            Cond::Always => None,
            Cond::Never => Some(quote!(if #differs { #err })),
            Cond::Expr(c) => Some(quote!(if !(#c) && #differs { #err })),
        }
    }

    fn tagged_fields(&self) -> Vec<&Field> {
        let mut v: Vec<_> = self
            .s
            .fields
            .iter()
            .filter(|f| f.tag.is_some() && !f.tagged.intersect(&self.reach()).is_empty())
            .collect();
        v.sort_by_key(|f| f.tag);
        v
    }

    /// True (as an expression) when tagged field `f` is written: the version has it as a tagged
    /// field and its value is not the default. Only evaluated in flexible versions.
    fn tagged_is_written(&self, f: &Field) -> TokenStream {
        let id = field_ident(&f.name);
        let differs = differs_from_default(f, &quote!(self.#id));
        match cond(f.tagged, self.s.flexible) {
            Cond::Always => differs,
            Cond::Never => quote!(false),
            Cond::Expr(c) => quote!(#c && #differs),
        }
    }

    fn encode_tagged(&self) -> TokenStream {
        if !self.s.has_tagged_section() {
            return TokenStream::new();
        }
        let known = self.tagged_fields();
        let write = if known.is_empty() {
            quote!(rt::tagged::write_unknown_only(buf, &self.unknown_tagged_fields);)
        } else {
            let mut flags = Vec::new();
            let mut writes = Vec::new();
            for f in &known {
                let id = field_ident(&f.name);
                let flag = quote::format_ident!("write_{}", id.to_string().trim_start_matches("r#"));
                let name = &f.name;
                let tag = Literal::u32_unsuffixed(f.tag.unwrap_or_default());
                let t = f.tagged.intersect(&self.s.flexible);
                let present = self.tagged_is_written(f);
                flags.push(quote! {
                    let #flag = #present;
                    count += usize::from(#flag);
                });
                let len = self.len_field(f, t);
                let w = self.write_field(f, t).stmt(name);
                writes.push(quote! {
                    raw.write_before(buf, #tag);
                    if #flag {
                        rt::tagged::write_field_header(buf, #tag, #len);
                        #w
                    }
                });
            }
            quote! {
                let mut count = self.unknown_tagged_fields.len();
                #(#flags)*
                rt::varint::write_unsigned_varint(buf, count as u32);
                let mut raw = self.unknown_tagged_fields.writer();
                #(#writes)*
                raw.finish(buf);
            }
        };
        match self.flexible_cond() {
            Cond::Always => write,
            _ => quote! {
                if flexible {
                    #write
                } else {
                    self.unknown_tagged_fields.check_not_flexible()?;
                }
            },
        }
    }

    /// Writes `f` at versions `p`.
    fn write_field(&self, f: &Field, p: VersionRange) -> Write {
        let id = field_ident(&f.name);
        if !f.is_option() {
            return self.write_value(f, &f.ty, p, &Val::Place(quote!(self.#id)));
        }
        let some = |p: VersionRange| {
            let w = self.write_value(f, &f.ty, p, &Val::Ref(quote!(v))).expr();
            quote! {
                match &self.#id {
                    Some(v) => #w,
                    None => Err(rt::message::null_in_non_nullable()),
                }
            }
        };
        Write::Fallible(split_nullable(f, p, |p| self.write_nullable(f, p), some))
    }

    /// A `Result<(), EncodeError>` expression writing a nullable field in nullable versions.
    fn write_nullable(&self, f: &Field, p: VersionRange) -> TokenStream {
        let id = field_ident(&f.name);
        let c = self.compact(f, p);
        match &f.ty {
            FieldType::String => quote!(rt::encoding::string::write_nullable(buf, self.#id.as_deref(), #c)),
            FieldType::Bytes | FieldType::Records => quote!(rt::encoding::bytes::write_nullable(buf, self.#id.as_deref(), #c)),
            FieldType::Array(inner) => {
                let elem = self.write_elem(f, inner, p);
                quote!(rt::array::write_nullable_array(buf, self.#id.as_deref(), #c, #elem))
            }
            FieldType::Struct(_) => quote!(rt::message::write_nullable_struct(buf, self.#id.as_ref(), version)),
            // Lowering only allows the types above to be nullable.
            FieldType::Fixed(_) => self.write_value(f, &f.ty, p, &Val::Place(quote!(self.#id))).expr(),
        }
    }

    /// Writes the value `v`.
    fn write_value(&self, f: &Field, ty: &FieldType, p: VersionRange, v: &Val) -> Write {
        let c = self.compact(f, p);
        let r = v.by_ref();
        match ty {
            FieldType::String => Write::Fallible(quote!(rt::encoding::string::write(buf, #r, #c))),
            FieldType::Bytes | FieldType::Records => Write::Fallible(quote!(rt::encoding::bytes::write(buf, #r, #c))),
            FieldType::Array(inner) => {
                let elem = self.write_elem(f, inner, p);
                Write::Fallible(quote!(rt::array::write_array(buf, #r, #c, #elem)))
            }
            FieldType::Struct(_) => Write::Fallible(quote!(rt::Encode::encode(#r, buf, version))),
            FieldType::Fixed(t) => {
                let func = t.func("write");
                let val = v.by_value();
                Write::Stmt(quote!(#func(buf, #val);))
            }
        }
    }

    fn write_elem(&self, f: &Field, ty: &FieldType, p: VersionRange) -> TokenStream {
        match self.write_value(f, ty, p, &Val::Ref(quote!(v))) {
            Write::Stmt(s) => quote!(|buf, v| {
                #s
                Ok(())
            }),
            Write::Fallible(e) => quote!(|buf, v| #e),
        }
    }

    // ---- sample values (tests) ----

    fn sample_body(&self) -> TokenStream {
        let mut sets = Vec::new();
        for f in &self.s.fields {
            let id = field_ident(&f.name);
            let p = f.versions.intersect(&self.reach());
            let value = self.sample_field(f, p);
            match cond(f.versions, self.reach()) {
                Cond::Always => sets.push(quote!(value.#id = #value;)),
                Cond::Never => {}
                Cond::Expr(c) => sets.push(quote!(if #c { value.#id = #value; })),
            }
        }
        if self.s.has_tagged_section() {
            let first_free = Literal::u32_unsuffixed(self.tagged_fields().len() as u32);
            let set = quote!(value.unknown_tagged_fields = rng.unknown_tagged_fields(#first_free););
            sets.push(match self.flexible_cond() {
                Cond::Expr(c) => quote!(if #c { #set }),
                _ => set,
            });
        }
        let mutable = if sets.is_empty() { quote!() } else { quote!(mut) };
        quote! {
            let #mutable value = Self::default();
            #(#sets)*
            value
        }
    }

    fn sample_field(&self, f: &Field, p: VersionRange) -> TokenStream {
        let inner = self.sample_value(f, &f.ty);
        if !f.is_option() {
            return inner;
        }
        // Null is a non-default value too, where the version allows it and the default is not null.
        match (cond(f.nullable, p), &f.default) {
            (Cond::Always, DefaultValue::Natural | DefaultValue::Str(_)) => {
                quote!(if rng.one_in(4) { None } else { Some(#inner) })
            }
            _ => quote!(Some(#inner)),
        }
    }

    fn sample_value(&self, f: &Field, ty: &FieldType) -> TokenStream {
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
                                if *v < 0 { quote!(-#abs) } else { quote!(#abs) }
                            }
                            _ => quote!(0),
                        };
                        quote!(rng.#m(#d))
                    }
                    (DefaultKind::Float, Some(m)) => match &f.default {
                        DefaultValue::Float(v) => { let l = Literal::f64_unsuffixed(*v); quote!(rng.#m(#l)) }
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
                let e = self.sample_value(f, inner);
                quote!(rng.vec(|rng| #e))
            }
        }
    }

    // ---- encoded_len ----

    fn len_body(&self) -> TokenStream {
        let mut terms = Vec::new();
        for f in &self.s.fields {
            match cond(f.regular, self.reach()) {
                Cond::Always => {
                    let l = self.len_field(f, f.regular.intersect(&self.reach()));
                    terms.push(quote!(len += #l;));
                }
                Cond::Never => {}
                Cond::Expr(c) => {
                    let l = self.len_field(f, f.regular.intersect(&self.reach()));
                    terms.push(quote!(if #c { len += #l; }));
                }
            }
        }
        let tagged = if self.s.has_tagged_section() {
            let mut known = Vec::new();
            for f in self.tagged_fields() {
                let tag = Literal::u32_unsuffixed(f.tag.unwrap_or_default());
                let t = f.tagged.intersect(&self.s.flexible);
                let present = self.tagged_is_written(f);
                let l = self.len_field(f, t);
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
            match self.flexible_cond() {
                Cond::Always => body,
                _ => quote!(if flexible { #body }),
            }
        } else {
            TokenStream::new()
        };
        let body = quote!(#(#terms)* #tagged);
        let flex = self.flexible_decl(&body);
        quote! {
            #flex
            let mut len = 0usize;
            #body
            len
        }
    }

    /// A `usize` expression: the size of `f` at versions `p`.
    fn len_field(&self, f: &Field, p: VersionRange) -> TokenStream {
        let id = field_ident(&f.name);
        if !f.is_option() {
            return self.len_value(f, &f.ty, p, &quote!(&self.#id));
        }
        let some = |p: VersionRange| {
            let l = self.len_value(f, &f.ty, p, &quote!(v));
            quote!(self.#id.as_ref().map_or(0, |v| #l))
        };
        split_nullable(f, p, |p| self.len_nullable(f, p), some)
    }

    fn len_nullable(&self, f: &Field, p: VersionRange) -> TokenStream {
        let id = field_ident(&f.name);
        let c = self.compact(f, p);
        match &f.ty {
            FieldType::String => quote!(rt::encoding::string::len_nullable(self.#id.as_deref(), #c)),
            FieldType::Bytes | FieldType::Records => quote!(rt::encoding::bytes::len_nullable(self.#id.as_deref(), #c)),
            FieldType::Array(inner) => match inner.fixed_size() {
                Some(size) => quote!(rt::array::nullable_fixed_array_len(self.#id.as_deref(), #c, #size)),
                None => {
                    let l = self.len_value(f, inner, p, &quote!(v));
                    quote!(rt::array::nullable_array_len(self.#id.as_deref(), #c, |v| #l))
                }
            },
            FieldType::Struct(_) => quote!(rt::message::nullable_struct_len(self.#id.as_ref(), version)),
            // Lowering only allows the types above to be nullable.
            FieldType::Fixed(_) => self.len_value(f, &f.ty, p, &quote!(&self.#id)),
        }
    }

    /// Size of `v` (an expression of type `&T`).
    fn len_value(&self, f: &Field, ty: &FieldType, p: VersionRange, v: &TokenStream) -> TokenStream {
        let c = self.compact(f, p);
        match ty {
            FieldType::String => quote!(rt::encoding::string::len(#v, #c)),
            FieldType::Bytes | FieldType::Records => quote!(rt::encoding::bytes::len(#v, #c)),
            FieldType::Array(inner) => match inner.fixed_size() {
                Some(size) => quote!(rt::array::fixed_array_len(#v, #c, #size)),
                None => {
                    let l = self.len_value(f, inner, p, &quote!(v));
                    quote!(rt::array::array_len(#v, #c, |v| #l))
                }
            },
            FieldType::Struct(_) => quote!(rt::Encode::encoded_len(#v, version)),
            FieldType::Fixed(t) => {
                let size = t.size();
                quote!(#size)
            }
        }
    }
}

/// Code for an `Option` field at versions `p`: `nullable` where the version allows null,
/// `non_null` where it does not, with a version check between them when `p` holds both.
fn split_nullable(
    f: &Field,
    p: VersionRange,
    nullable: impl Fn(VersionRange) -> TokenStream,
    non_null: impl Fn(VersionRange) -> TokenStream,
) -> TokenStream {
    match cond(f.nullable, p) {
        Cond::Always => nullable(p),
        Cond::Never => non_null(p),
        Cond::Expr(c) => {
            let yes = nullable(p.intersect(&f.nullable));
            let no = non_null(p.subtract(&f.nullable));
            quote!(if #c { #yes } else { #no })
        }
    }
}

/// The local a field is decoded into: its own name, unless that would shadow a name the
/// decode body uses itself (Kafka has fields called `Version`).
fn local_ident(f: &Field) -> proc_macro2::Ident {
    let id = field_ident(&f.name);
    if ["buf", "version", "flexible", "tag", "unknown_tagged_fields"].iter().any(|n| id == n) {
        quote::format_ident!("{}_field", id)
    } else {
        id
    }
}

/// Wraps an `if`/`match` expression in parentheses so a method call applies to all of it.
fn paren(e: TokenStream) -> TokenStream {
    match e.clone().into_iter().next() {
        Some(proc_macro2::TokenTree::Ident(i)) if i == "if" || i == "match" => quote!((#e)),
        _ => e,
    }
}

/// True when `tokens` use the variable `name`. A field access (`self.name`) or a field
/// initialiser (`name: value`) does not count.
fn uses_ident(tokens: &TokenStream, name: &str) -> bool {
    use proc_macro2::{Spacing, TokenTree};
    let tokens: Vec<TokenTree> = tokens.clone().into_iter().collect();
    tokens.iter().enumerate().any(|(i, t)| match t {
        TokenTree::Ident(id) if id == name => {
            let prev = i.checked_sub(1).and_then(|j| tokens.get(j));
            let after_dot = matches!(prev, Some(TokenTree::Punct(p)) if p.as_char() == '.');
            let before_colon = matches!(tokens.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == ':' && p.spacing() == Spacing::Alone);
            !after_dot && !before_colon
        }
        TokenTree::Group(g) => uses_ident(&g.stream(), name),
        _ => false,
    })
}

/// A value to write: a place (`self.x`) or a reference (`v`).
enum Val {
    Place(TokenStream),
    Ref(TokenStream),
}

impl Val {
    fn by_ref(&self) -> TokenStream {
        match self {
            Val::Place(p) => quote!(&#p),
            Val::Ref(r) => r.clone(),
        }
    }

    fn by_value(&self) -> TokenStream {
        match self {
            Val::Place(p) => p.clone(),
            Val::Ref(r) => quote!(*#r),
        }
    }
}

/// Code that writes a value: a plain statement (fixed-size values cannot fail) or an
/// expression of type `Result<(), EncodeError>`.
enum Write {
    Stmt(TokenStream),
    Fallible(TokenStream),
}

impl Write {
    /// As a statement inside a body, naming the field in errors.
    fn stmt(self, name: &str) -> TokenStream {
        match self {
            Write::Stmt(s) => s,
            Write::Fallible(e) => {
                let e = paren(e);
                quote!(#e.field(#name)?;)
            }
        }
    }

    /// As a `Result<(), EncodeError>` expression.
    fn expr(self) -> TokenStream {
        match self {
            Write::Stmt(s) => quote!({
                #s
                Ok(())
            }),
            Write::Fallible(e) => e,
        }
    }
}
