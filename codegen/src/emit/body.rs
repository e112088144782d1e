//! What the decode, encode, size and sample emitters share: names of locals, the `flexible`
//! local, the nullable split of a planned value, and token helpers.

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::cond::{cond, Cond};
use super::types::field_ident;
use crate::model::{Field, Struct};
use crate::plan::{Compact, Value};

/// Which form of a value a branch codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// A field whose Rust type is not an `Option`.
    Plain,
    /// An `Option` in versions where null is allowed.
    Nullable,
    /// An `Option` in versions where it is not.
    NotNull,
}

/// The code of a planned value: `code(form, compact)` per branch, with the nullable version
/// check between them when the value has both.
pub fn split(value: Value, mut code: impl FnMut(Form, Compact) -> TokenStream) -> TokenStream {
    match value {
        Value::Plain(c) => code(Form::Plain, c),
        Value::Nullable(c) => code(Form::Nullable, c),
        Value::NotNull(c) => code(Form::NotNull, c),
        Value::Split { check, nullable, not_null } => match cond(check) {
            Cond::Always => code(Form::Nullable, nullable),
            Cond::Never => code(Form::NotNull, not_null),
            Cond::Expr(c) => {
                let yes = code(Form::Nullable, nullable);
                let no = code(Form::NotNull, not_null);
                quote!(if #c { #yes } else { #no })
            }
        },
    }
}

/// `let flexible = ...;` when `body` uses it.
pub fn flexible_decl(s: &Struct, body: &TokenStream) -> TokenStream {
    match cond(s.plan.flexible) {
        Cond::Expr(t) if uses_ident(body, "flexible") => quote!(let flexible = #t;),
        _ => TokenStream::new(),
    }
}

/// Wraps `body` (the tagged section's code) in `if flexible` where not every version is.
pub fn if_flexible(s: &Struct, body: TokenStream) -> TokenStream {
    match cond(s.plan.flexible) {
        Cond::Expr(c) => quote!(if #c { #body }),
        Cond::Always | Cond::Never => body,
    }
}

/// The fields with a reachable tagged side, by tag.
pub fn tagged_fields(s: &Struct) -> impl Iterator<Item = &Field> {
    s.plan.tagged.iter().filter_map(|&i| s.fields.get(i))
}

/// The local a field is decoded into: its own name, unless that would shadow a name the
/// decode body uses itself (Kafka has fields called `Version`).
pub fn local_ident(f: &Field) -> Ident {
    let id = field_ident(&f.name);
    if ["buf", "version", "flexible", "tag", "unknown_tagged_fields"].iter().any(|n| id == n) {
        quote::format_ident!("{}_field", id)
    } else {
        id
    }
}

/// Wraps an `if`/`match` expression in parentheses so a method call applies to all of it.
pub fn paren(e: TokenStream) -> TokenStream {
    match e.clone().into_iter().next() {
        Some(proc_macro2::TokenTree::Ident(i)) if i == "if" || i == "match" => quote!((#e)),
        _ => e,
    }
}

/// True when `tokens` use the variable `name`. A field access (`self.name`) or a field
/// initialiser (`name: value`) does not count.
pub fn uses_ident(tokens: &TokenStream, name: &str) -> bool {
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

/// The `version` parameter of a function with this body: `_version` when the body does not
/// use it.
pub fn version_param(body: &TokenStream) -> TokenStream {
    if uses_ident(body, "version") {
        quote!(version)
    } else {
        quote!(_version)
    }
}
