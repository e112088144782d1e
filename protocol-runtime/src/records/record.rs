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

use crate::error::{DecodeError, DecodeErrorKind, EncodeError, RecordsEncodeError, RecordsError};
use crate::varint::{unsigned_varlong_len, varint_len, varlong_len, write_varint, write_varlong};

use super::header::{validate_headers, Header, Headers};
use super::{encode_invalid, invalid};

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

    /// The bytes this record takes in a magic-2 batch, its length prefix included, at
    /// `offset_delta` and `timestamp_delta` from the batch's first record (Java's
    /// `DefaultRecord.sizeInBytes`): what a producer counts against its batch size.
    /// Saturates at `usize::MAX`.
    ///
    /// ```
    /// use kwire_runtime::records::Record;
    /// let r = Record::new(0, 0, None, Some("value".into()));
    /// // length, attributes, timestamp and offset deltas, key (null), value length, value, headers
    /// assert_eq!(r.size_in_batch(0, 0), 1 + 1 + 1 + 1 + 1 + 1 + 5 + 1);
    /// ```
    pub fn size_in_batch(&self, offset_delta: i32, timestamp_delta: i64) -> usize {
        let body = body_len(self, offset_delta, timestamp_delta);
        let prefix = i32::try_from(body).map_or(5, varint_len) as u64;
        usize::try_from(body.saturating_add(prefix)).unwrap_or(usize::MAX)
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
        return Err(DecodeError::new(DecodeErrorKind::LengthExceedsRemaining { length: len as u64, remaining }, remaining));
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
pub(crate) fn decode_record(data: &Bytes, pos: &mut usize, base_offset: i64, base_timestamp: i64, log_append_time: Option<i64>) -> Result<Record, DecodeError> {
    let all: &[u8] = data;
    let len = varint_at(all, pos)?;
    if len < 0 {
        return Err(invalid(RecordsError::NegativeRecordLength(len), all.len().saturating_sub(*pos)));
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
            return Err(invalid(RecordsError::TrailingInRecord(b.len().saturating_sub(p)), b.len().saturating_sub(p)));
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

/// Size of a field of `len` bytes with its varint length (zigzag of a length is `2 * len`).
/// In `u64` and without truncating `len`, so an oversized field makes an oversized record,
/// which the builder rejects, rather than a wrong length.
#[inline(always)]
pub(crate) fn sized_len(len: usize) -> u64 {
    let len = len as u64;
    // Slice lengths are at most isize::MAX, so the shift keeps every bit.
    (unsigned_varlong_len(len << 1) as u64).wrapping_add(len)
}

/// Size of a nullable key or value with its length (null is the one byte of -1).
#[inline(always)]
fn nullable_len(b: Option<&Bytes>) -> u64 {
    b.map_or(1, |b| sized_len(b.len()))
}

/// Size of the record's body (after its length varint). Saturates rather than wraps: key, value
/// and headers may share one buffer many times over.
#[inline(always)]
pub(crate) fn body_len(r: &Record, offset_delta: i32, ts_delta: i64) -> u64 {
    // attributes, timestamp delta, offset delta: at most 16 bytes.
    let fixed = (varlong_len(ts_delta) as u64).wrapping_add(varint_len(offset_delta) as u64).wrapping_add(1);
    fixed.saturating_add(nullable_len(r.key.as_ref())).saturating_add(nullable_len(r.value.as_ref())).saturating_add(r.headers.size())
}

/// Unsigned LEB128 of `v < 2^56` in the low bytes of a `u64` (little-endian), and its length:
/// built in a register, so writing it is one store.
#[inline(always)]
fn uleb_u64(mut v: u64) -> (u64, usize) {
    let mut enc = 0u64;
    let mut shift = 0u32;
    // At most 7 rounds for v < 2^56, so shift stays below 64.
    while v >= 0x80 {
        enc |= ((v & 0x7f) | 0x80) << shift;
        v >>= 7;
        shift = shift.wrapping_add(8);
    }
    (enc | v << shift, (shift / 8).wrapping_add(1) as usize)
}

/// Room left before a staged record's body for its length varint (at most 5 bytes).
const LENGTH_ROOM: usize = 5;

/// A stack buffer a record is assembled in before one copy into the output: a local array and
/// cursor instead of a `Vec` length and capacity check per field, small fields stored as whole
/// 8- or 16-byte words, and the length varint put in front once the body's size is known, so
/// the size needs no computing first. Records too large for it are written directly (see
/// [`write_record`]); every write returns `None` when it does not fit.
pub(crate) struct Stage {
    buf: [u8; 512],
}

impl Stage {
    pub(crate) fn new() -> Self {
        Stage { buf: [0; 512] }
    }

    /// Assembles the record and returns its bytes, length prefix included; `None` when it does
    /// not fit.
    #[inline(always)]
    fn record(&mut self, r: &Record, offset_delta: i32, ts_delta: i64) -> Option<&[u8]> {
        // A local cursor, so the position lives in a register.
        let mut c = Cursor { buf: &mut self.buf, pos: LENGTH_ROOM };
        c.word(0, 1)?; // attributes
        c.uleb(((ts_delta << 1) ^ (ts_delta >> 63)) as u64)?;
        c.varint(offset_delta)?;
        c.nullable(r.key.as_deref())?;
        c.nullable(r.value.as_deref())?;
        r.headers.stage(&mut c)?;
        let end = c.pos;
        // The body is under 512 bytes: its varint is one or two bytes, put right before it.
        let body = end.wrapping_sub(LENGTH_ROOM) as u64;
        let (enc, n) = uleb_u64(body << 1);
        let at = LENGTH_ROOM.checked_sub(n)?;
        let head = self.buf.get_mut(at..)?.first_chunk_mut::<8>()?;
        let keep = u64::MAX.checked_shl((n as u32).wrapping_mul(8)).unwrap_or(0);
        *head = (u64::from_le_bytes(*head) & keep | enc).to_le_bytes();
        self.buf.get(at..end)
    }
}

/// Writes into the stage; every write returns `None` when it does not fit.
pub(crate) struct Cursor<'a> {
    buf: &'a mut [u8; 512],
    pos: usize,
}

impl Cursor<'_> {
    /// Stores the `n` low bytes of `word` (`n <= 8`). Writes all eight: the bytes past `n` are
    /// overwritten by what comes next or not copied out.
    #[inline(always)]
    fn word(&mut self, word: u64, n: usize) -> Option<()> {
        let dst = self.buf.get_mut(self.pos..)?.first_chunk_mut::<8>()?;
        *dst = word.to_le_bytes();
        self.pos = self.pos.wrapping_add(n);
        Some(())
    }

    #[inline(always)]
    fn uleb(&mut self, v: u64) -> Option<()> {
        if v >= 1 << 56 {
            return None; // a timestamp delta over 2^55: written directly
        }
        let (enc, n) = uleb_u64(v);
        self.word(enc, n)
    }

    #[inline(always)]
    pub(crate) fn varint(&mut self, v: i32) -> Option<()> {
        self.uleb(u64::from(((v << 1) ^ (v >> 31)) as u32))
    }

    #[inline(always)]
    pub(crate) fn bytes(&mut self, src: &[u8]) -> Option<()> {
        let n = src.len();
        let rest = self.buf.get_mut(self.pos..)?;
        match (rest.first_chunk_mut::<16>(), src.first_chunk::<8>(), src.last_chunk::<8>()) {
            // 8 to 16 bytes (keys, header fields): two overlapping 8-byte moves instead of a
            // call to `memcpy`.
            (Some(dst), Some(head), Some(tail)) if n <= 16 => {
                *dst.get_mut(n.wrapping_sub(8)..)?.first_chunk_mut::<8>()? = *tail;
                *dst.first_chunk_mut::<8>()? = *head;
            }
            _ => rest.get_mut(..n)?.copy_from_slice(src),
        }
        self.pos = self.pos.wrapping_add(n);
        Some(())
    }

    /// A varint length and the bytes, or -1 for null.
    #[inline(always)]
    pub(crate) fn nullable(&mut self, b: Option<&[u8]>) -> Option<()> {
        match b {
            Some(b) => {
                self.varint(i32::try_from(b.len()).ok()?)?;
                self.bytes(b)
            }
            None => self.word(1, 1), // zigzag(-1)
        }
    }
}

/// Appends the record with its length prefix, through `stage` unless it is too large for it.
#[inline(always)]
pub(crate) fn write_record<B: BufMut>(out: &mut B, stage: &mut Stage, r: &Record, offset_delta: i32, ts_delta: i64) -> Result<(), EncodeError> {
    match stage.record(r, offset_delta, ts_delta) {
        Some(bytes) => out.put_slice(bytes),
        None => write_large(out, r, offset_delta, ts_delta)?,
    }
    Ok(())
}

/// A record that does not fit the stage: sized first, then written field by field.
#[cold]
fn write_large<B: BufMut>(out: &mut B, r: &Record, offset_delta: i32, ts_delta: i64) -> Result<(), EncodeError> {
    let body = body_len(r, offset_delta, ts_delta);
    let body = i32::try_from(body).map_err(|_| encode_invalid(RecordsEncodeError::RecordTooLarge))?;
    write_varint(out, body);
    out.put_i8(0);
    write_varlong(out, ts_delta);
    write_varint(out, offset_delta);
    for b in [&r.key, &r.value] {
        match b {
            Some(b) => {
                write_varint(out, b.len() as i32);
                out.put_slice(b);
            }
            None => write_varint(out, -1),
        }
    }
    r.headers.encode(out);
    Ok(())
}
