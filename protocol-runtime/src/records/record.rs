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

use crate::error::DecodeError;
use crate::length::take;
use crate::primitive::read_i8;
use crate::varint::{read_varint, read_varlong, varint_len, varlong_len, write_varint, write_varlong};

use super::header::{Header, Headers};
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

#[inline]
fn read_nullable(buf: &mut Bytes) -> Result<Option<Bytes>, DecodeError> {
    let n = read_varint(buf)?;
    if n < 0 {
        // Kafka treats any negative length as null.
        return Ok(None);
    }
    take(buf, n as usize).map(Some)
}

/// Reads one length-prefixed record from `buf`.
#[inline]
pub(crate) fn decode_record(
    buf: &mut Bytes,
    base_offset: i64,
    base_timestamp: i64,
    log_append_time: Option<i64>,
) -> Result<Record, DecodeError> {
    let len = read_varint(buf)?;
    if len < 0 {
        return Err(invalid(format!("invalid negative record length {len}"), buf.len()));
    }
    let trailing = buf.len().saturating_sub(len as usize);
    let mut body = take(buf, len as usize)?;
    decode_body(&mut body, base_offset, base_timestamp, log_append_time).map_err(|e| e.shift(trailing))
}

#[inline]
fn decode_body(
    body: &mut Bytes,
    base_offset: i64,
    base_timestamp: i64,
    log_append_time: Option<i64>,
) -> Result<Record, DecodeError> {
    let _attributes = read_i8(body)?;
    let ts_delta = read_varlong(body)?;
    let offset_delta = read_varint(body)?;
    let key = read_nullable(body)?;
    let value = read_nullable(body)?;
    let count = read_varint(body)?;
    let headers = Headers::decode(body, count)?;
    if !body.is_empty() {
        return Err(invalid(
            format!("record has {} bytes beyond its headers", body.len()),
            body.len(),
        ));
    }
    Ok(Record {
        offset: base_offset.wrapping_add(i64::from(offset_delta)),
        timestamp: log_append_time.unwrap_or_else(|| base_timestamp.wrapping_add(ts_delta)),
        key,
        value,
        headers,
    })
}

fn nullable_len(b: Option<&Bytes>) -> usize {
    match b {
        Some(b) => varint_len(b.len() as i32) + b.len(),
        None => 1,
    }
}

/// Size of the record's body (after its length varint).
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
