//! Strings (UTF-8, at most 32767 bytes) and byte blobs, classic or compact, nullable or not.
//!
//! Decoding never copies: a string is a UTF-8-checked [`ByteString`] over the input's `Bytes`, and
//! a blob is a `Bytes` slice of the input.

use bytes::{BufMut, Bytes};
use bytestring::ByteString;

use crate::error::{DecodeError, DecodeErrorKind, EncodeError, EncodeErrorKind};
use crate::length::{len16_size, len32_size, read_len16, read_len32, take, write_len16, write_len32};

pub use crate::limits::MAX_STRING_LEN;

#[cold]
fn null_error(buf: &Bytes) -> DecodeError {
    DecodeError::new(DecodeErrorKind::UnexpectedNull, bytes::Buf::remaining(buf))
}

/// Reads a string that may be null.
#[inline]
pub fn read_nullable_string(buf: &mut Bytes, compact: bool) -> Result<Option<ByteString>, DecodeError> {
    let Some(n) = read_len16(buf, compact)? else {
        return Ok(None);
    };
    let remaining = bytes::Buf::remaining(buf);
    crate::limits::check_string_len(n, remaining)?;
    let raw = take(buf, n)?;
    // Report a bad string at its start.
    ByteString::try_from(raw).map(Some).map_err(|_| DecodeError::new(DecodeErrorKind::InvalidUtf8, remaining))
}

/// Reads a string that must not be null (a lenient decode reads null as `""`).
#[inline]
pub fn read_string(buf: &mut Bytes, compact: bool) -> Result<ByteString, DecodeError> {
    match read_nullable_string(buf, compact)? {
        Some(s) => Ok(s),
        None if crate::lenient::tolerate(crate::lenient::LeniencyKind::NullString, bytes::Buf::remaining(buf)) => Ok(ByteString::new()),
        None => Err(null_error(buf)),
    }
}

/// Writes a string (or null).
#[inline]
pub fn write_nullable_string<B: BufMut>(buf: &mut B, s: Option<&str>, compact: bool) -> Result<(), EncodeError> {
    match s {
        Some(s) => write_string(buf, s, compact),
        None => write_len16(buf, None, compact),
    }
}

/// Writes a string.
#[inline]
pub fn write_string<B: BufMut>(buf: &mut B, s: &str, compact: bool) -> Result<(), EncodeError> {
    if s.len() > MAX_STRING_LEN {
        return Err(EncodeError::new(EncodeErrorKind::TooLong(s.len())));
    }
    write_len16(buf, Some(s.len()), compact)?;
    buf.put_slice(s.as_bytes());
    Ok(())
}

/// Encoded size of a string.
#[inline]
pub fn string_len(s: &str, compact: bool) -> usize {
    len16_size(Some(s.len()), compact).saturating_add(s.len())
}

/// Encoded size of a string or null.
#[inline]
pub fn nullable_string_len(s: Option<&str>, compact: bool) -> usize {
    let n = s.map(str::len);
    len16_size(n, compact).saturating_add(n.unwrap_or(0))
}

/// Reads a byte blob that may be null.
#[inline]
pub fn read_nullable_bytes(buf: &mut Bytes, compact: bool) -> Result<Option<Bytes>, DecodeError> {
    match read_len32(buf, compact)? {
        Some(n) => {
            crate::limits::check_bytes_len(n, bytes::Buf::remaining(buf))?;
            take(buf, n).map(Some)
        }
        None => Ok(None),
    }
}

/// Reads a byte blob that must not be null.
#[inline]
pub fn read_bytes(buf: &mut Bytes, compact: bool) -> Result<Bytes, DecodeError> {
    match read_nullable_bytes(buf, compact)? {
        Some(b) => Ok(b),
        None => Err(null_error(buf)),
    }
}

/// Writes a byte blob (or null).
#[inline]
pub fn write_nullable_bytes<B: BufMut>(buf: &mut B, b: Option<&[u8]>, compact: bool) -> Result<(), EncodeError> {
    write_len32(buf, b.map(<[u8]>::len), compact)?;
    if let Some(b) = b {
        buf.put_slice(b);
    }
    Ok(())
}

/// Writes a byte blob.
#[inline]
pub fn write_bytes<B: BufMut>(buf: &mut B, b: &[u8], compact: bool) -> Result<(), EncodeError> {
    write_nullable_bytes(buf, Some(b), compact)
}

/// Encoded size of a byte blob.
#[inline]
pub fn bytes_len(b: &[u8], compact: bool) -> usize {
    len32_size(Some(b.len()), compact).saturating_add(b.len())
}

/// Encoded size of a byte blob or null.
#[inline]
pub fn nullable_bytes_len(b: Option<&[u8]>, compact: bool) -> usize {
    let n = b.map(<[u8]>::len);
    len32_size(n, compact).saturating_add(n.unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_zero_copy_slices() {
        let input = Bytes::from_static(b"\x00\x03abc\x04xyz");
        let mut b = input.clone();
        let s = read_string(&mut b, false).unwrap();
        assert_eq!(&*s, "abc");
        assert_eq!(s.as_bytes().as_ptr(), input[2..].as_ptr());
        assert_eq!(&*read_string(&mut b, true).unwrap(), "xyz");
    }

    #[test]
    fn rejects_null_where_not_nullable_and_bad_utf8() {
        let mut b = Bytes::from_static(b"\xff\xff");
        assert_eq!(read_string(&mut b, false).unwrap_err().kind(), &DecodeErrorKind::UnexpectedNull);
        let mut b = Bytes::from_static(b"\x00\x02\xc3\x28");
        assert_eq!(read_string(&mut b, false).unwrap_err().kind(), &DecodeErrorKind::InvalidUtf8);
        let mut b = Bytes::from_static(b"\x00");
        assert_eq!(read_nullable_bytes(&mut b, true).unwrap(), None);
    }

    #[test]
    fn rejects_overlong_string_on_both_sides() {
        let long = "x".repeat(MAX_STRING_LEN + 1);
        let mut out = Vec::new();
        assert!(write_string(&mut out, &long, true).is_err());
        let mut enc = Vec::new();
        crate::varint::write_unsigned_varint(&mut enc, (MAX_STRING_LEN + 2) as u32);
        enc.extend_from_slice(long.as_bytes());
        let err = read_string(&mut Bytes::from(enc), true).unwrap_err();
        assert_eq!(err.kind(), &DecodeErrorKind::StringTooLong(MAX_STRING_LEN + 1));
    }
}
