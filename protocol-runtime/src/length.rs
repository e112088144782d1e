//! Length and count prefixes, classic (fixed-width, negative for null) and compact (unsigned
//! varint of length + 1, zero for null).
//!
//! Every decoded length is checked against the bytes that remain before the caller allocates.

use bytes::{Buf, BufMut, Bytes};

use crate::error::{DecodeError, DecodeErrorKind, EncodeError, EncodeErrorKind};
use crate::primitive::{read_i16, read_i32};
use crate::varint::{read_unsigned_varint, unsigned_varint_len, write_unsigned_varint};

#[cold]
fn exceeds(buf: &Bytes, length: u64) -> DecodeError {
    let remaining = buf.remaining();
    DecodeError::new(DecodeErrorKind::LengthExceedsRemaining { length, remaining }, remaining)
}

#[inline]
fn checked(buf: &Bytes, n: u64) -> Result<Option<usize>, DecodeError> {
    if n > buf.remaining() as u64 {
        return Err(exceeds(buf, n));
    }
    Ok(Some(n as usize))
}

/// Reads a string-style prefix: classic int16, or compact. `None` is null. Any negative classic
/// length reads as null, as in Kafka.
#[inline]
pub fn read_len16(buf: &mut Bytes, compact: bool) -> Result<Option<usize>, DecodeError> {
    if compact {
        return read_compact_len(buf);
    }
    let n = read_i16(buf)?;
    if n < 0 {
        return Ok(None);
    }
    checked(buf, n as u64)
}

/// Reads a bytes/array-style prefix: classic int32, or compact. `None` is null. Any negative
/// classic length reads as null, as in Kafka.
///
/// For arrays the count is checked against the bytes remaining, as Kafka does: every element
/// takes at least one byte.
#[inline]
pub fn read_len32(buf: &mut Bytes, compact: bool) -> Result<Option<usize>, DecodeError> {
    if compact {
        return read_compact_len(buf);
    }
    let n = read_i32(buf)?;
    if n < 0 {
        return Ok(None);
    }
    checked(buf, n as u64)
}

#[inline]
fn read_compact_len(buf: &mut Bytes) -> Result<Option<usize>, DecodeError> {
    match read_unsigned_varint(buf)? {
        0 => Ok(None),
        n => checked(buf, u64::from(n).saturating_sub(1)),
    }
}

/// Takes `n` bytes that [`read_len16`]/[`read_len32`] already checked.
#[inline]
pub fn take(buf: &mut Bytes, n: usize) -> Result<Bytes, DecodeError> {
    if n > buf.remaining() {
        return Err(exceeds(buf, n as u64));
    }
    Ok(buf.split_to(n))
}

/// Writes a string-style prefix (`None` for null).
#[inline]
pub fn write_len16<B: BufMut>(buf: &mut B, len: Option<usize>, compact: bool) -> Result<(), EncodeError> {
    match len {
        Some(n) if n > i16::MAX as usize => Err(EncodeError::new(EncodeErrorKind::TooLong(n))),
        Some(n) if compact => {
            write_unsigned_varint(buf, (n as u32).saturating_add(1));
            Ok(())
        }
        Some(n) => {
            buf.put_i16(n as i16);
            Ok(())
        }
        None if compact => {
            buf.put_u8(0);
            Ok(())
        }
        None => {
            buf.put_i16(-1);
            Ok(())
        }
    }
}

/// Writes a bytes/array-style prefix (`None` for null).
#[inline]
pub fn write_len32<B: BufMut>(buf: &mut B, len: Option<usize>, compact: bool) -> Result<(), EncodeError> {
    match len {
        // Compact lengths are stored +1 in an unsigned 32-bit varint.
        Some(n) if n >= i32::MAX as usize => Err(EncodeError::new(EncodeErrorKind::TooLong(n))),
        Some(n) if compact => {
            write_unsigned_varint(buf, (n as u32).saturating_add(1));
            Ok(())
        }
        Some(n) => {
            buf.put_i32(n as i32);
            Ok(())
        }
        None if compact => {
            buf.put_u8(0);
            Ok(())
        }
        None => {
            buf.put_i32(-1);
            Ok(())
        }
    }
}

/// Size of a string-style prefix.
#[inline]
pub fn len16_size(len: Option<usize>, compact: bool) -> usize {
    match (compact, len) {
        (true, Some(n)) => unsigned_varint_len((n as u32).saturating_add(1)),
        (true, None) => 1,
        (false, _) => 2,
    }
}

/// Size of a bytes/array-style prefix.
#[inline]
pub fn len32_size(len: Option<usize>, compact: bool) -> usize {
    match (compact, len) {
        (true, Some(n)) => unsigned_varint_len((n as u32).saturating_add(1)),
        (true, None) => 1,
        (false, _) => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classic_and_compact_nulls() {
        let mut b = Bytes::from_static(&[0xff, 0xff, 0x00, 0xff, 0xfe]);
        assert_eq!(read_len16(&mut b, false).unwrap(), None);
        assert_eq!(read_len16(&mut b, true).unwrap(), None);
        // -2 is null too, as Kafka reads any negative length.
        assert_eq!(read_len16(&mut b, false).unwrap(), None);
    }

    #[test]
    fn length_checked_against_remaining_before_use() {
        let mut b = Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff, 0x00]);
        let err = read_len32(&mut b, false).unwrap_err();
        assert_eq!(err.kind(), &DecodeErrorKind::LengthExceedsRemaining { length: i32::MAX as u64, remaining: 1 });
        let mut c = Bytes::from_static(&[0x04, b'a', b'b']);
        assert!(read_len32(&mut c, true).is_err());
    }

    #[test]
    fn prefixes_round_trip() {
        let mut out = Vec::new();
        write_len16(&mut out, Some(3), true).unwrap();
        write_len16(&mut out, None, false).unwrap();
        write_len32(&mut out, Some(200), true).unwrap();
        assert_eq!(out, [0x04, 0xff, 0xff, 0xc9, 0x01]);
        assert_eq!(len32_size(Some(200), true), 2);
        assert!(write_len16(&mut out, Some(40_000), false).is_err());
    }
}
