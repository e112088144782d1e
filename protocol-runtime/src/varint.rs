//! Variable-length integers: unsigned LEB128 varints (as used for compact lengths and tags) and
//! zigzag-encoded signed varints/varlongs (as used inside record batches).
//!
//! Like Kafka, non-minimal encodings are accepted; encodings longer than the type's maximum
//! width (5 bytes for 32 bits, 10 for 64), or whose last byte carries bits beyond the type, are
//! rejected as [`DecodeErrorKind::VarintTooLong`].

use bytes::{Buf, BufMut, Bytes};

use crate::error::{DecodeError, DecodeErrorKind};

#[cold]
fn too_long(buf: &[u8]) -> DecodeError {
    DecodeError::new(DecodeErrorKind::VarintTooLong, buf.len())
}

/// The input ended `needed` bytes short of a value (also the views' end-of-input error).
#[cold]
pub(crate) fn truncated(buf: &[u8], needed: usize) -> DecodeError {
    let available = buf.len();
    DecodeError::new(DecodeErrorKind::UnexpectedEnd { needed, available }, available)
}

#[inline(always)]
fn read_uleb(buf: &mut Bytes, bits: u32) -> Result<u64, DecodeError> {
    // Fast path, inlined at every call: one byte, the common case for lengths and tag counts.
    if let Some(&b) = buf.chunk().first() {
        if b & 0x80 == 0 {
            buf.advance(1);
            return Ok(u64::from(b));
        }
    }
    // `Bytes` is contiguous: its chunk is all that remains.
    let mut rest = buf.chunk();
    let before = rest.len();
    let v = read_uleb_slow(&mut rest, bits);
    buf.advance(before.saturating_sub(rest.len()));
    v
}

/// Reads an unsigned varint of at most `bits` bits from the front of a slice: the one
/// implementation, shared by the `Bytes` readers above and the borrowed views.
#[inline(always)]
pub(crate) fn read_uleb_slice(buf: &mut &[u8], bits: u32) -> Result<u64, DecodeError> {
    if let Some((&b, rest)) = buf.split_first() {
        if b & 0x80 == 0 {
            *buf = rest;
            return Ok(u64::from(b));
        }
    }
    read_uleb_slow(buf, bits)
}

/// Two or more bytes, or the end of input: kept out of line so the fast path stays small.
#[inline(never)]
fn read_uleb_slow(buf: &mut &[u8], bits: u32) -> Result<u64, DecodeError> {
    // Two and three bytes (lengths up to 2 MiB: record sets, most blobs) without the loop:
    // 21 bits fit every width callers read (32 and 64), so no byte can overflow.
    if bits >= 21 {
        match **buf {
            [b0, b1, ref rest @ ..] if b1 & 0x80 == 0 => {
                *buf = rest;
                return Ok(u64::from(b0 & 0x7f) | u64::from(b1) << 7);
            }
            [b0, b1, b2, ref rest @ ..] if b2 & 0x80 == 0 => {
                *buf = rest;
                return Ok(u64::from(b0 & 0x7f) | u64::from(b1 & 0x7f) << 7 | u64::from(b2) << 14);
            }
            _ => {}
        }
    }
    let mut value = 0u64;
    let mut shift = 0u32;
    loop {
        let Some((&b, rest)) = buf.split_first() else {
            return Err(truncated(buf, 1));
        };
        let payload = u64::from(b & 0x7f);
        // Bits of this byte that would land beyond the type's width make it too long.
        // shift < bits here, so bits - shift cannot wrap.
        if shift >= bits || (shift > 0 && bits.wrapping_sub(shift) < 7 && payload >> bits.wrapping_sub(shift) != 0) {
            return Err(too_long(buf));
        }
        *buf = rest;
        value |= payload << shift;
        if b & 0x80 == 0 {
            return Ok(value);
        }
        shift = shift.wrapping_add(7);
    }
}

/// Reads an unsigned 32-bit varint.
#[inline]
pub fn read_unsigned_varint(buf: &mut Bytes) -> Result<u32, DecodeError> {
    // read_uleb never returns more than 32 bits here.
    read_uleb(buf, 32).map(|v| v as u32)
}

/// Reads an unsigned 64-bit varlong.
#[inline]
pub fn read_unsigned_varlong(buf: &mut Bytes) -> Result<u64, DecodeError> {
    read_uleb(buf, 64)
}

/// Reads a zigzag-encoded signed 32-bit varint.
#[inline]
pub fn read_varint(buf: &mut Bytes) -> Result<i32, DecodeError> {
    let v = read_unsigned_varint(buf)?;
    Ok(((v >> 1) as i32) ^ ((v & 1) as i32).wrapping_neg())
}

/// Reads a zigzag-encoded signed 64-bit varlong.
#[inline]
pub fn read_varlong(buf: &mut Bytes) -> Result<i64, DecodeError> {
    let v = read_unsigned_varlong(buf)?;
    Ok(((v >> 1) as i64) ^ ((v & 1) as i64).wrapping_neg())
}

/// Writes an unsigned 32-bit varint.
#[inline]
pub fn write_unsigned_varint<B: BufMut>(buf: &mut B, v: u32) {
    write_unsigned_varlong(buf, u64::from(v))
}

/// Writes an unsigned 64-bit varlong.
#[inline]
pub fn write_unsigned_varlong<B: BufMut>(buf: &mut B, mut v: u64) {
    if v < 0x80 {
        buf.put_u8(v as u8);
        return;
    }
    while v >= 0x80 {
        buf.put_u8((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    buf.put_u8(v as u8);
}

/// Writes a zigzag-encoded signed 32-bit varint.
#[inline]
pub fn write_varint<B: BufMut>(buf: &mut B, v: i32) {
    write_unsigned_varint(buf, ((v << 1) ^ (v >> 31)) as u32)
}

/// Writes a zigzag-encoded signed 64-bit varlong.
#[inline]
pub fn write_varlong<B: BufMut>(buf: &mut B, v: i64) {
    write_unsigned_varlong(buf, ((v << 1) ^ (v >> 63)) as u64)
}

/// Bytes an unsigned varint takes.
#[inline]
pub const fn unsigned_varint_len(v: u32) -> usize {
    unsigned_varlong_len(v as u64)
}

/// Bytes an unsigned varlong takes.
#[inline]
pub const fn unsigned_varlong_len(v: u64) -> usize {
    // One byte per started group of 7 bits, at least one: (floor(log2) * 9 + 73) / 64 is that
    // for every u64 (protobuf's formula), without a division.
    let log2 = 63 ^ (v | 1).leading_zeros() as usize;
    log2.wrapping_mul(9).wrapping_add(73) >> 6
}

/// Bytes a zigzag varint takes.
#[inline]
pub const fn varint_len(v: i32) -> usize {
    unsigned_varint_len(((v << 1) ^ (v >> 31)) as u32)
}

/// Bytes a zigzag varlong takes.
#[inline]
pub const fn varlong_len(v: i64) -> usize {
    unsigned_varlong_len(((v << 1) ^ (v >> 63)) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc_u(v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        write_unsigned_varlong(&mut out, v);
        out
    }

    #[test]
    fn unsigned_known_encodings() {
        // From the protobuf/Kafka varint definition: 300 = 0xac 0x02.
        assert_eq!(enc_u(0), [0x00]);
        assert_eq!(enc_u(127), [0x7f]);
        assert_eq!(enc_u(128), [0x80, 0x01]);
        assert_eq!(enc_u(300), [0xac, 0x02]);
        assert_eq!(enc_u(u32::MAX as u64), [0xff, 0xff, 0xff, 0xff, 0x0f]);
        for v in [0u64, 1, 127, 128, 16383, 16384, u32::MAX as u64, u64::MAX] {
            assert_eq!(enc_u(v).len(), unsigned_varlong_len(v), "{v}");
        }
    }

    #[test]
    fn lengths_match_encodings_at_every_width_boundary() {
        for shift in 0..64 {
            for v in [1u64 << shift, (1u64 << shift) - 1, (1u64 << shift) + 1] {
                assert_eq!(enc_u(v).len(), unsigned_varlong_len(v), "{v}");
            }
        }
    }

    /// Every width, read back with the cursor just past the value (a sentinel follows).
    #[test]
    fn reads_every_width_and_stops_after_it() {
        for shift in 0..64 {
            for v in [1u64 << shift, (1u64 << shift) - 1, (1u64 << shift) + 1] {
                let mut e = enc_u(v);
                e.push(0x55);
                let mut b = Bytes::from(e.clone());
                assert_eq!(read_unsigned_varlong(&mut b).unwrap(), v, "{v}");
                assert_eq!(&b[..], [0x55], "{v}");
                let mut s = &e[..];
                assert_eq!(read_uleb_slice(&mut s, 64).unwrap(), v, "{v}");
                assert_eq!(s, [0x55], "{v}");
                if let Ok(v32) = u32::try_from(v) {
                    let mut b = Bytes::from(e);
                    assert_eq!(read_unsigned_varint(&mut b).unwrap(), v32, "{v}");
                    assert_eq!(&b[..], [0x55], "{v}");
                }
            }
        }
    }

    /// Non-minimal encodings (Kafka accepts them) and cut-short ones, at the widths the loop-free
    /// path reads.
    #[test]
    fn two_and_three_byte_reads_accept_padding_and_refuse_truncation() {
        for (bytes, v) in [(&[0x80, 0x00][..], 0), (&[0x81, 0x00], 1), (&[0x80, 0x80, 0x00], 0), (&[0xff, 0xff, 0x7f], 0x1f_ffff_u64)] {
            let mut s = bytes;
            assert_eq!(read_uleb_slice(&mut s, 32).unwrap(), v, "{bytes:?}");
            assert!(s.is_empty());
            assert_eq!(read_unsigned_varint(&mut Bytes::copy_from_slice(bytes)).unwrap() as u64, v);
        }
        for bytes in [&[0x80][..], &[0x80, 0x80], &[0xff, 0xff, 0xff]] {
            let mut s = bytes;
            assert!(read_uleb_slice(&mut s, 32).is_err(), "{bytes:?}");
            assert!(read_unsigned_varint(&mut Bytes::copy_from_slice(bytes)).is_err(), "{bytes:?}");
        }
    }

    #[test]
    fn zigzag_known_encodings() {
        let mut out = Vec::new();
        for v in [0, -1, 1, -2, 2147483647, -2147483648] {
            write_varint(&mut out, v);
        }
        assert_eq!(out, [0x00, 0x01, 0x02, 0x03, 0xfe, 0xff, 0xff, 0xff, 0x0f, 0xff, 0xff, 0xff, 0xff, 0x0f]);
        let mut b = Bytes::from(out);
        for v in [0, -1, 1, -2, 2147483647, -2147483648] {
            assert_eq!(read_varint(&mut b).unwrap(), v);
        }
        assert_eq!(varlong_len(i64::MIN), 10);
        let mut out = Vec::new();
        write_varlong(&mut out, i64::MIN);
        assert_eq!(read_varlong(&mut Bytes::from(out)).unwrap(), i64::MIN);
    }

    #[test]
    fn rejects_overlong_and_truncated() {
        let mut six = Bytes::from_static(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x00]);
        let e = read_unsigned_varint(&mut six).unwrap_err();
        assert_eq!(e.kind(), &DecodeErrorKind::VarintTooLong);
        assert_eq!(e.in_message("M", 0, 6).offset(), Some(5), "found at the sixth byte");
        // Fifth byte with bits beyond 32.
        let mut over = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0x1f]);
        assert_eq!(read_unsigned_varint(&mut over).unwrap_err().kind(), &DecodeErrorKind::VarintTooLong);
        let mut eleven = Bytes::from_static(&[0xff; 11]);
        assert_eq!(read_unsigned_varlong(&mut eleven).unwrap_err().kind(), &DecodeErrorKind::VarintTooLong);
        let mut cut = Bytes::from_static(&[0x80, 0x80]);
        assert!(matches!(read_unsigned_varint(&mut cut).unwrap_err().kind(), DecodeErrorKind::UnexpectedEnd { .. }));
        // Non-minimal but within width is accepted, as Kafka does.
        let mut padded = Bytes::from_static(&[0x81, 0x00]);
        assert_eq!(read_unsigned_varint(&mut padded).unwrap(), 1);
    }
}
