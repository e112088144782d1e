//! One module per wire type, each with the same functions, for generated code: `read`, `write`
//! and `len`, plus `read_nullable`, `write_nullable` and `len_nullable` where the type can be
//! null, with a `compact` argument where the type has a length prefix. The codegen's wire-type
//! table (`kwire_build::wire`) names these modules; each module has a property round-trip
//! test.
//!
//! Not public API: generated code calls it; use the message types' `Encode` / `Decode` instead.
//! The modules delegate to the implementations in [`primitive`](crate::primitive),
//! [`uuid`](crate::uuid) and [`string`](crate::string), inlined away.
//!
//! Adding a fixed-width wire type: one line in `fixed!` below (and the row in the codegen's table).
//!
//! The other helpers only generated code calls are hidden from the docs in the same way: the
//! modules `array` and `length`, and the `#[doc(hidden)]` functions of `tagged`, `message`,
//! `json` and `limits` (`read_known`, `non_default`, `missing`, `charge_array`, ...).

/// Modules of fixed-width types: `read(buf)`, `write(buf, value)`, `SIZE`, `len(&value)`.
macro_rules! fixed {
    ($($(#[$doc:meta])* $module:ident: $ty:ty, $read:path, $write:path, $strategy:expr;)*) => {$(
        $(#[$doc])*
        pub mod $module {
            use ::bytes::{BufMut, Bytes};

            use crate::error::DecodeError;

            /// Bytes one value takes on the wire.
            pub const SIZE: usize = <$ty as crate::primitive::FixedWidth>::SIZE;

            /// Reads one value.
            #[inline(always)]
            pub fn read(buf: &mut Bytes) -> Result<$ty, DecodeError> {
                $read(buf)
            }

            /// Writes one value.
            #[inline(always)]
            pub fn write<B: BufMut>(buf: &mut B, v: $ty) {
                $write(buf, v)
            }

            /// The encoded size of a value: always [`SIZE`].
            #[inline(always)]
            pub fn len(_: &$ty) -> usize {
                SIZE
            }

            #[cfg(test)]
            mod tests {
                use proptest::prelude::*;

                proptest! {
                    #[test]
                    fn round_trip(v in $strategy) {
                        let mut out = ::bytes::BytesMut::new();
                        super::write(&mut out, v);
                        prop_assert_eq!(out.len(), super::len(&v));
                        let mut input = out.freeze();
                        let back = super::read(&mut input).unwrap();
                        prop_assert!(input.is_empty());
                        // Bitwise, so NaN and -0.0 count too.
                        prop_assert_eq!(format!("{back:?}"), format!("{v:?}"));
                        let mut short = ::bytes::Bytes::copy_from_slice(&[0u8; super::SIZE][..super::SIZE - 1]);
                        prop_assert!(super::read(&mut short).is_err());
                    }
                }
            }
        }
    )*};
}

/// A `Uuid` written by value, like the other fixed-width types.
#[inline(always)]
fn write_uuid<B: ::bytes::BufMut>(buf: &mut B, v: crate::Uuid) {
    crate::uuid::write_uuid(buf, &v)
}

#[cfg(test)]
fn any_f64() -> impl proptest::strategy::Strategy<Value = f64> {
    use proptest::prelude::*;
    prop_oneof![any::<f64>(), any::<u64>().prop_map(f64::from_bits)]
}

fixed! {
    /// `bool`: one byte, 0 or 1 written, any non-zero read as true.
    bool: bool, crate::primitive::read_bool, crate::primitive::write_bool, proptest::bool::ANY;
    /// `int8`.
    int8: i8, crate::primitive::read_i8, crate::primitive::write_i8, proptest::num::i8::ANY;
    /// `int16`, big-endian.
    int16: i16, crate::primitive::read_i16, crate::primitive::write_i16, proptest::num::i16::ANY;
    /// `uint16`, big-endian.
    uint16: u16, crate::primitive::read_u16, crate::primitive::write_u16, proptest::num::u16::ANY;
    /// `int32`, big-endian.
    int32: i32, crate::primitive::read_i32, crate::primitive::write_i32, proptest::num::i32::ANY;
    /// `int64`, big-endian.
    int64: i64, crate::primitive::read_i64, crate::primitive::write_i64, proptest::num::i64::ANY;
    /// `float64`, big-endian IEEE 754.
    float64: f64, crate::primitive::read_f64, crate::primitive::write_f64, super::super::any_f64();
    /// `uuid`: 16 bytes, most significant first.
    uuid: crate::Uuid, crate::uuid::read_uuid, super::write_uuid, proptest::array::uniform16(proptest::num::u8::ANY).prop_map(crate::Uuid);
}

/// Modules of length-prefixed types (`string`, `bytes`), each with plain and nullable forms
/// taking a `compact` flag (unsigned varint length + 1 in flexible versions).
macro_rules! prefixed {
    ($($(#[$doc:meta])* $module:ident: $owned:ty, $borrowed:ty,
        $read:path, $read_nullable:path, $write:path, $write_nullable:path, $len:path, $len_nullable:path, $strategy:expr;)*) => {$(
        $(#[$doc])*
        pub mod $module {
            use ::bytes::{BufMut, Bytes};

            use crate::error::{DecodeError, EncodeError};

            /// Reads a non-null value.
            #[inline(always)]
            pub fn read(buf: &mut Bytes, compact: bool) -> Result<$owned, DecodeError> {
                $read(buf, compact)
            }

            /// Reads a value that may be null.
            #[inline(always)]
            pub fn read_nullable(buf: &mut Bytes, compact: bool) -> Result<Option<$owned>, DecodeError> {
                $read_nullable(buf, compact)
            }

            /// Writes a non-null value.
            #[inline(always)]
            pub fn write<B: BufMut>(buf: &mut B, v: &$borrowed, compact: bool) -> Result<(), EncodeError> {
                $write(buf, v, compact)
            }

            /// Writes a value that may be null.
            #[inline(always)]
            pub fn write_nullable<B: BufMut>(buf: &mut B, v: Option<&$borrowed>, compact: bool) -> Result<(), EncodeError> {
                $write_nullable(buf, v, compact)
            }

            /// The encoded size of a non-null value.
            #[inline(always)]
            pub fn len(v: &$borrowed, compact: bool) -> usize {
                $len(v, compact)
            }

            /// The encoded size of a value that may be null.
            #[inline(always)]
            pub fn len_nullable(v: Option<&$borrowed>, compact: bool) -> usize {
                $len_nullable(v, compact)
            }

            #[cfg(test)]
            mod tests {
                use proptest::prelude::*;

                proptest! {
                    #[test]
                    fn round_trip(v in proptest::option::of($strategy), compact in proptest::bool::ANY) {
                        let v: Option<$owned> = v.map(Into::into);
                        let mut out = ::bytes::BytesMut::new();
                        match &v {
                            Some(v) => {
                                super::write(&mut out, v, compact).unwrap();
                                prop_assert_eq!(out.len(), super::len(v, compact));
                                let mut input = out.clone().freeze();
                                prop_assert_eq!(&super::read(&mut input, compact).unwrap(), v);
                                prop_assert!(input.is_empty());
                                out.clear();
                            }
                            None => {}
                        }
                        super::write_nullable(&mut out, v.as_deref(), compact).unwrap();
                        prop_assert_eq!(out.len(), super::len_nullable(v.as_deref(), compact));
                        let mut input = out.freeze();
                        prop_assert_eq!(super::read_nullable(&mut input, compact).unwrap(), v);
                        prop_assert!(input.is_empty());
                    }
                }
            }
        }
    )*};
}

prefixed! {
    /// `string`: UTF-8 with an int16 length (-1 for null), or a compact length.
    string: crate::ByteString, str,
        crate::string::read_string, crate::string::read_nullable_string,
        crate::string::write_string, crate::string::write_nullable_string,
        crate::string::string_len, crate::string::nullable_string_len,
        "\\PC{0,40}";
    /// `bytes` and `records`: an int32 length (-1 for null), or a compact length.
    bytes: ::bytes::Bytes, [u8],
        crate::string::read_bytes, crate::string::read_nullable_bytes,
        crate::string::write_bytes, crate::string::write_nullable_bytes,
        crate::string::bytes_len, crate::string::nullable_bytes_len,
        proptest::collection::vec(proptest::num::u8::ANY, 0..300).prop_map(::bytes::Bytes::from);
}
