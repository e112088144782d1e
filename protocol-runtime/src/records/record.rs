//! One record, and its magic 2 wire form.
//!
//! ```text
//! length: varint            (bytes that follow)
//! attributes: int8          (unused, 0)
//! timestampDelta: varlong   (from the batch's base timestamp)
//! offsetDelta: varint       (from the batch's base offset)
//! keyLength: varint, key    (-1 = null)
//! valueLength: varint, value
//! headerCount: varint, then per header: keyLength varint, key (UTF-8), valueLength varint, value
//! ```

use bytes::{BufMut, Bytes};
use bytestring::ByteString;

use std::ops::Range;

use crate::error::{DecodeError, DecodeErrorKind};
use crate::varint::{varint_len, varlong_len, write_varint, write_varlong};

use super::header::{validate_headers, Header, Headers};
use super::invalid;

/// A record with absolute offset and timestamp, whatever the format it came from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Record {
    /// The offset in the partition (absolute for every magic once decoded).
    pub offset: i64,
    /// The timestamp in milliseconds since the epoch; [`super::NO_TIMESTAMP`] for magic 0. For a
    /// batch with log-append time, the batch's timestamp.
    pub timestamp: i64,
    /// The key, or null.
    pub key: Option<Bytes>,
    /// The value, or null (a tombstone).
    pub value: Option<Bytes>,
    /// Headers in wire order (magic 2 only).
    pub headers: Headers,
}

impl Record {
    /// A record without headers.
    pub fn new(offset: i64, timestamp: i64, key: Option<Bytes>, value: Option<Bytes>) -> Self {
        Record { offset, timestamp, key, value, headers: Headers::new() }
    }

    /// Adds a header and returns the record (duplicate keys are kept).
    pub fn with_header(mut self, key: impl Into<ByteString>, value: Option<Bytes>) -> Self {
        self.headers.push(Header::new(key, value));
        self
    }
}

/// Smallest encoded magic 2 record: length, attributes, timestamp delta, offset delta, key
/// length, value length and header count, one byte each.
pub(crate) const MIN_RECORD_SIZE: usize = 7;

#[cold]
fn short(needed: usize, b: &[u8], pos: usize) -> DecodeError {
    let available = b.len().saturating_sub(pos);
    DecodeError::new(DecodeErrorKind::UnexpectedEnd { needed, available }, available)
}

/// Reads an unsigned LEB128 value of at most `bits` bits from `b` at `pos`, with the same
/// rules as [`crate::varint`] (non-minimal accepted, bits past the type rejected).
#[inline(always)]
pub(crate) fn uleb(b: &[u8], pos: &mut usize, bits: u32) -> Result<u64, DecodeError> {
    if let Some(&byte) = b.get(*pos) {
        if byte & 0x80 == 0 {
            *pos = pos.saturating_add(1);
            return Ok(u64::from(byte));
        }
    }
    let mut value = 0u64;
    let mut shift = 0u32;
    loop {
        let Some(&byte) = b.get(*pos) else {
            return Err(short(1, b, *pos));
        };
        let payload = u64::from(byte & 0x7f);
        // shift < bits here, so bits - shift cannot wrap.
        if shift >= bits || (shift > 0 && bits.wrapping_sub(shift) < 7 && payload >> bits.wrapping_sub(shift) != 0) {
            return Err(DecodeError::new(DecodeErrorKind::VarintTooLong, b.len().saturating_sub(*pos)));
        }
        *pos = pos.saturating_add(1);
        value |= payload << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
        shift = shift.wrapping_add(7);
    }
}

/// Reads a zigzag varint from a slice.
#[inline(always)]
pub(crate) fn varint_at(b: &[u8], pos: &mut usize) -> Result<i32, DecodeError> {
    let v = uleb(b, pos, 32)? as u32;
    Ok(((v >> 1) as i32) ^ ((v & 1) as i32).wrapping_neg())
}

#[inline(always)]
fn varlong_at(b: &[u8], pos: &mut usize) -> Result<i64, DecodeError> {
    let v = uleb(b, pos, 64)?;
    Ok(((v >> 1) as i64) ^ ((v & 1) as i64).wrapping_neg())
}

/// Checks that `len` bytes remain at `pos` and returns their range, moving past them.
#[inline(always)]
pub(crate) fn range_at(b: &[u8], pos: &mut usize, len: usize) -> Result<Range<usize>, DecodeError> {
    let start = *pos;
    let remaining = b.len().saturating_sub(start);
    if len > remaining {
        return Err(DecodeError::new(
            DecodeErrorKind::LengthExceedsRemaining { length: len as u64, remaining },
            remaining,
        ));
    }
    // len <= b.len() - start was checked above.
    let end = start.saturating_add(len);
    *pos = end;
    Ok(start..end)
}

#[inline(always)]
fn nullable_at(b: &[u8], pos: &mut usize) -> Result<Option<Range<usize>>, DecodeError> {
    let n = varint_at(b, pos)?;
    if n < 0 {
        // Kafka treats any negative length as null.
        return Ok(None);
    }
    range_at(b, pos, n as usize).map(Some)
}

/// Reads one length-prefixed record from `data` at `pos`. Keys, values and headers are slices of
/// `data`; nothing else is allocated.
#[inline]
pub(crate) fn decode_record(
    data: &Bytes,
    pos: &mut usize,
    base_offset: i64,
    base_timestamp: i64,
    log_append_time: Option<i64>,
) -> Result<Record, DecodeError> {
    let all: &[u8] = data;
    let len = varint_at(all, pos)?;
    if len < 0 {
        return Err(invalid(format!("invalid negative record length {len}"), all.len().saturating_sub(*pos)));
    }
    let body = range_at(all, pos, len as usize)?;
    let trailing = all.len().saturating_sub(body.end);
    // Parse within the record's own bytes, so no field can run into the next record.
    let b = all.get(..body.end).unwrap_or_default();
    let mut p = body.start;
    let parsed = (|| {
        let _attributes = b.get(p).ok_or_else(|| short(1, b, p))?;
        p = p.saturating_add(1);
        let ts_delta = varlong_at(b, &mut p)?;
        let offset_delta = varint_at(b, &mut p)?;
        let key = nullable_at(b, &mut p)?;
        let value = nullable_at(b, &mut p)?;
        let count = varint_at(b, &mut p)?;
        let headers_start = p;
        let count = validate_headers(b, &mut p, count)?;
        if p != b.len() {
            return Err(invalid(format!("record has {} bytes beyond its headers", b.len().saturating_sub(p)), b.len().saturating_sub(p)));
        }
        Ok((ts_delta, offset_delta, key, value, count, headers_start..p))
    })();
    let (ts_delta, offset_delta, key, value, count, headers) = parsed.map_err(|e| e.shift(trailing))?;
    Ok(Record {
        offset: base_offset.wrapping_add(i64::from(offset_delta)),
        timestamp: log_append_time.unwrap_or_else(|| base_timestamp.wrapping_add(ts_delta)),
        key: key.map(|r| data.slice(r)),
        value: value.map(|r| data.slice(r)),
        headers: if count == 0 { Headers::new() } else { Headers::from_raw(count, data.slice(headers)) },
    })
}

fn nullable_len(b: Option<&Bytes>) -> usize {
    match b {
        Some(b) => varint_len(b.len() as i32).saturating_add(b.len()),
        None => 1,
    }
}

/// Size of the record's body (after its length varint).
#[allow(clippy::arithmetic_side_effects)] // encode side: sizes of in-memory records
pub(crate) fn body_len(r: &Record, offset_delta: i32, ts_delta: i64) -> usize {
    1 + varlong_len(ts_delta)
        + varint_len(offset_delta)
        + nullable_len(r.key.as_ref())
        + nullable_len(r.value.as_ref())
        + varint_len(r.headers.len() as i32)
        + r.headers.encoded_len()
}

/// Writes the record with its length prefix; `body` is [`body_len`].
pub(crate) fn encode_record<B: BufMut>(buf: &mut B, r: &Record, offset_delta: i32, ts_delta: i64, body: usize) {
    write_varint(buf, body as i32);
    buf.put_i8(0);
    write_varlong(buf, ts_delta);
    write_varint(buf, offset_delta);
    for b in [&r.key, &r.value] {
        match b {
            Some(b) => {
                write_varint(buf, b.len() as i32);
                buf.put_slice(b);
            }
            None => write_varint(buf, -1),
        }
    }
    write_varint(buf, r.headers.len() as i32);
    r.headers.encode(buf);
}
