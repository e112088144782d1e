//! The wire-type table: what the generator knows of each fixed-width Kafka type, in one place.
//!
//! [`Fixed::row`] is the only match over the fixed-width types, and it is exhaustive: a new
//! variant does not compile until its row says how it is spelled in a spec, its Rust type, its
//! runtime module (`rt::encoding::<module>`, with `read` / `write` / `SIZE`), its size, how its
//! default is written and how samples pick a non-default value. Everything else (types, defaults,
//! decode, encode, size, sample) reads the row. Adding a fixed-width primitive is one variant
//! and row here and one `fixed!` line in the runtime's `encoding` module.

use proc_macro2::{Ident, Span, TokenStream};

/// A fixed-width wire type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fixed {
    /// `bool`
    Bool,
    /// `int8`
    Int8,
    /// `int16`
    Int16,
    /// `uint16`
    Uint16,
    /// `int32`
    Int32,
    /// `int64`
    Int64,
    /// `float64`
    Float64,
    /// `uuid`
    Uuid,
}

/// How a spec writes a default of the type, and how samples avoid it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultKind {
    /// `true` / `false` (any case); a sample takes the other value.
    Bool,
    /// A decimal or `0x` hex integer in `lo..=hi`; a sample draws anything else.
    Int {
        /// Smallest value.
        lo: i64,
        /// Largest value.
        hi: i64,
    },
    /// A decimal float.
    Float,
    /// Only the empty string (the zero UUID); a sample draws any UUID.
    Uuid,
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    /// The type's name in a spec (`int32`).
    pub spec: &'static str,
    /// The Rust type of a value (`i32`), `rt::` standing for the runtime crate.
    pub rust: &'static str,
    /// The runtime module under `rt::encoding` that reads and writes it.
    pub module: &'static str,
    /// Bytes on the wire.
    pub size: usize,
    /// The natural default as a Rust expression.
    pub natural: &'static str,
    /// How defaults are written.
    pub literal: DefaultKind,
    /// The `rt::sample::SampleRng` method that draws a value (given the default to avoid, for
    /// ints and floats); none for bool, whose sample is the value that is not the default.
    pub sample: Option<&'static str>,
}

const fn int(lo: i64, hi: i64) -> DefaultKind {
    DefaultKind::Int { lo, hi }
}

impl Fixed {
    /// Every fixed-width type, in table order.
    pub const ALL: [Fixed; 8] = [Fixed::Bool, Fixed::Int8, Fixed::Int16, Fixed::Uint16, Fixed::Int32, Fixed::Int64, Fixed::Float64, Fixed::Uuid];

    /// The type's row.
    pub const fn row(self) -> Row {
        macro_rules! row {
            ($spec:literal, $rust:literal, $module:literal, $size:literal, $natural:literal, $literal:expr, $sample:expr) => {
                Row { spec: $spec, rust: $rust, module: $module, size: $size, natural: $natural, literal: $literal, sample: $sample }
            };
        }
        match self {
            Fixed::Bool => row!("bool", "bool", "bool", 1, "false", DefaultKind::Bool, None),
            Fixed::Int8 => row!("int8", "i8", "int8", 1, "0", int(i8::MIN as i64, i8::MAX as i64), Some("i8_except")),
            Fixed::Int16 => row!("int16", "i16", "int16", 2, "0", int(i16::MIN as i64, i16::MAX as i64), Some("i16_except")),
            Fixed::Uint16 => row!("uint16", "u16", "uint16", 2, "0", int(0, u16::MAX as i64), Some("u16_except")),
            Fixed::Int32 => row!("int32", "i32", "int32", 4, "0", int(i32::MIN as i64, i32::MAX as i64), Some("i32_except")),
            Fixed::Int64 => row!("int64", "i64", "int64", 8, "0", int(i64::MIN, i64::MAX), Some("i64_except")),
            Fixed::Float64 => row!("float64", "f64", "float64", 8, "0.0", DefaultKind::Float, Some("f64_except")),
            Fixed::Uuid => row!("uuid", "rt::Uuid", "uuid", 16, "rt::Uuid::ZERO", DefaultKind::Uuid, Some("uuid")),
        }
    }

    /// The type a spec names `text`, if it is fixed-width.
    pub fn parse(text: &str) -> Option<Fixed> {
        Fixed::ALL.into_iter().find(|t| t.row().spec == text)
    }

    /// Bytes on the wire.
    pub const fn size(self) -> usize {
        self.row().size
    }

    /// The Rust type.
    pub fn rust_type(self) -> TokenStream {
        tokens(self.row().rust)
    }

    /// The natural default (0, false, the zero UUID).
    pub fn natural(self) -> TokenStream {
        tokens(self.row().natural)
    }

    /// `rt::encoding::<module>::<func>`.
    pub fn func(self, func: &str) -> TokenStream {
        let module = Ident::new(self.row().module, Span::call_site());
        let func = Ident::new(func, Span::call_site());
        quote::quote!(rt::encoding::#module::#func)
    }
}

/// The table's Rust snippets are fixed strings, checked by the tests below to parse.
fn tokens(text: &str) -> TokenStream {
    text.parse().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_consistent() {
        for t in Fixed::ALL {
            let row = t.row();
            assert_eq!(Fixed::parse(row.spec), Some(t));
            for snippet in [row.rust, row.natural] {
                assert!(snippet.parse::<TokenStream>().is_ok_and(|s| !s.is_empty()), "{snippet}");
            }
            assert!(syn::parse_str::<Ident>(row.module).is_ok());
            assert_eq!(row.sample.is_none(), row.literal == DefaultKind::Bool);
            assert!(row.sample.is_none_or(|m| syn::parse_str::<Ident>(m).is_ok()));
            assert!(matches!(row.size, 1 | 2 | 4 | 8 | 16), "{}: arrays inline 16 / size elements", row.spec);
        }
        assert_eq!(Fixed::parse("string"), None);
    }
}
