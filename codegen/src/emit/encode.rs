//! The body of a struct's `encode`: each field written where its plan says it is regular (a
//! non-default value where the field is absent is an error unless it is ignorable), then the
//! tagged section, known tags merged in order with the unknown ones.

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use super::body::{flexible_decl, paren, split, tagged_fields, Form};
use super::cond::{compact, cond, Cond};
use super::size;
use super::types::{differs_from_default, field_ident};
use crate::model::{Field, FieldType, Struct};
use crate::plan::{Compact, Value};

/// The statements of `encode`, ending in `Ok(())`.
pub fn body(s: &Struct) -> TokenStream {
    let mut stmts = Vec::new();
    for f in &s.fields {
        let write = || write_field(f, f.plan.regular_value).stmt(&f.name);
        let absent = absent_check(f);
        let stmt = match cond(f.plan.regular) {
            Cond::Always => write(),
            Cond::Never => absent.unwrap_or_default(),
            Cond::Expr(c) => {
                let w = write();
                match absent {
                    Some(a) => quote!(if #c { #w } else { #a }),
                    None => quote!(if #c { #w }),
                }
            }
        };
        stmts.push(stmt);
    }
    let tagged = encode_tagged(s);
    let body = quote!(#(#stmts)* #tagged);
    let flex = flexible_decl(s, &body);
    quote! {
        #flex
        #body
        Ok(())
    }
}

/// The check for a field at a version where it is not written in place: there it exists only
/// as a tagged field, so a non-default value outside the tagged versions is an error unless the
/// field is ignorable.
fn absent_check(f: &Field) -> Option<TokenStream> {
    if f.ignorable {
        return None;
    }
    let id = field_ident(&f.name);
    let name = &f.name;
    let differs = differs_from_default(f, &quote!(self.#id));
    let err = quote!(return Err(rt::message::non_default().field(#name)););
    match cond(f.plan.tagged_in_reach) {
        Cond::Always => None,
        Cond::Never => Some(quote!(if #differs { #err })),
        Cond::Expr(c) => Some(quote!(if !(#c) && #differs { #err })),
    }
}

/// True (as an expression) when tagged field `f` is written: the version has it as a tagged
/// field and its value is not the default. Only evaluated in flexible versions.
pub fn tagged_is_written(f: &Field) -> TokenStream {
    let id = field_ident(&f.name);
    let differs = differs_from_default(f, &quote!(self.#id));
    match f.plan.tagged.map_or(Cond::Never, |t| cond(t.check)) {
        Cond::Always => differs,
        Cond::Never => quote!(false),
        Cond::Expr(c) => quote!(#c && #differs),
    }
}

fn encode_tagged(s: &Struct) -> TokenStream {
    if !s.has_tagged_section() {
        return TokenStream::new();
    }
    let mut flags = Vec::new();
    let mut writes = Vec::new();
    for f in tagged_fields(s) {
        let Some(t) = f.plan.tagged else { continue };
        let id = field_ident(&f.name);
        let flag = quote::format_ident!("write_{}", id.to_string().trim_start_matches("r#"));
        let tag = Literal::u32_unsuffixed(t.tag);
        let present = tagged_is_written(f);
        flags.push(quote! {
            let #flag = #present;
            count += usize::from(#flag);
        });
        let len = size::len_field(f, t.value);
        let w = write_field(f, t.value).stmt(&f.name);
        writes.push(quote! {
            raw.write_before(buf, #tag);
            if #flag {
                rt::tagged::write_field_header(buf, #tag, #len);
                #w
            }
        });
    }
    let write = if writes.is_empty() {
        quote!(rt::tagged::write_unknown_only(buf, &self.unknown_tagged_fields);)
    } else {
        quote! {
            let mut count = self.unknown_tagged_fields.len();
            #(#flags)*
            rt::varint::write_unsigned_varint(buf, count as u32);
            let mut raw = self.unknown_tagged_fields.writer();
            #(#writes)*
            raw.finish(buf);
        }
    };
    match cond(s.plan.flexible) {
        Cond::Always => write,
        Cond::Expr(_) | Cond::Never => quote! {
            if flexible {
                #write
            } else {
                self.unknown_tagged_fields.check_not_flexible()?;
            }
        },
    }
}

/// Writes `f` as planned.
fn write_field(f: &Field, value: Value) -> Write {
    let id = field_ident(&f.name);
    if let Value::Plain(c) = value {
        return write_value(f, &f.ty, c, &Val::Place(quote!(self.#id)));
    }
    Write::Fallible(split(value, |form, c| match form {
        Form::Nullable => write_nullable(f, c),
        Form::Plain | Form::NotNull => {
            let w = write_value(f, &f.ty, c, &Val::Ref(quote!(v))).expr();
            quote! {
                match &self.#id {
                    Some(v) => #w,
                    None => Err(rt::message::null_in_non_nullable()),
                }
            }
        }
    }))
}

/// A `Result<(), EncodeError>` expression writing a nullable field in nullable versions.
fn write_nullable(f: &Field, c: Compact) -> TokenStream {
    let id = field_ident(&f.name);
    let ct = compact(c);
    match &f.ty {
        FieldType::String => quote!(rt::encoding::string::write_nullable(buf, self.#id.as_deref(), #ct)),
        FieldType::Bytes | FieldType::Records => quote!(rt::encoding::bytes::write_nullable(buf, self.#id.as_deref(), #ct)),
        FieldType::Array(inner) => {
            let elem = write_elem(f, inner, c);
            quote!(rt::array::write_nullable_array(buf, self.#id.as_deref(), #ct, #elem))
        }
        FieldType::Struct(_) => quote!(rt::message::write_nullable_struct(buf, self.#id.as_ref(), version)),
        // Lowering only allows the types above to be nullable.
        FieldType::Fixed(_) => write_value(f, &f.ty, c, &Val::Place(quote!(self.#id))).expr(),
    }
}

/// Writes the value `v`.
fn write_value(f: &Field, ty: &FieldType, c: Compact, v: &Val) -> Write {
    let ct = compact(c);
    let r = v.by_ref();
    match ty {
        FieldType::String => Write::Fallible(quote!(rt::encoding::string::write(buf, #r, #ct))),
        FieldType::Bytes | FieldType::Records => Write::Fallible(quote!(rt::encoding::bytes::write(buf, #r, #ct))),
        FieldType::Array(inner) => {
            let elem = write_elem(f, inner, c);
            Write::Fallible(quote!(rt::array::write_array(buf, #r, #ct, #elem)))
        }
        FieldType::Struct(_) => Write::Fallible(quote!(rt::Encode::encode(#r, buf, version))),
        FieldType::Fixed(t) => {
            let func = t.func("write");
            let val = v.by_value();
            Write::Stmt(quote!(#func(buf, #val);))
        }
    }
}

fn write_elem(f: &Field, ty: &FieldType, c: Compact) -> TokenStream {
    match write_value(f, ty, c, &Val::Ref(quote!(v))) {
        Write::Stmt(s) => quote!(|buf, v| {
            #s
            Ok(())
        }),
        Write::Fallible(e) => quote!(|buf, v| #e),
    }
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
