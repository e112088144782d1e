//! Record headers: an ordered list of (UTF-8 key, nullable value) pairs that keeps duplicate keys
//! and null values, decoded lazily from the record's bytes.

use std::fmt;

use bytes::{BufMut, Bytes};
use bytestring::ByteString;

use crate::error::{DecodeError, RecordsError};
use crate::length::take;
use crate::varint::{read_varint, varint_len, write_varint};

use super::invalid;
use super::record::{range_at, sized_len, varint_at, Cursor};

/// One record header.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Header {
    /// The key (UTF-8, may repeat within a record).
    pub key: ByteString,
    /// The value, or null.
    pub value: Option<Bytes>,
}

impl Header {
    /// A header with `key` and `value`.
    pub fn new(key: impl Into<ByteString>, value: Option<Bytes>) -> Self {
        Header { key: key.into(), value }
    }

    /// Encoded size: key and value with their lengths.
    #[inline(always)]
    fn size(&self) -> u64 {
        sized_len(self.key.len()).saturating_add(self.value.as_ref().map_or(1, |v| sized_len(v.len())))
    }

    fn encode<B: BufMut>(&self, buf: &mut B) {
        write_varint(buf, self.key.len() as i32);
        buf.put_slice(self.key.as_bytes());
        match &self.value {
            Some(v) => {
                write_varint(buf, v.len() as i32);
                buf.put_slice(v);
            }
            None => write_varint(buf, -1),
        }
    }
}

#[derive(Clone)]
enum Repr {
    /// `count` headers already validated, still in wire form.
    Raw {
        count: usize,
        bytes: Bytes,
    },
    Owned(Vec<Header>),
}

/// The headers of a record, in wire order.
///
/// Decoded headers stay in wire form (a slice of the record) until iterated, so decoding a record
/// allocates nothing; they were validated when the record was read, so iteration cannot fail.
/// Keys and values are slices of the input.
#[derive(Clone)]
pub struct Headers(Repr);

impl Default for Headers {
    fn default() -> Self {
        Headers(Repr::Owned(Vec::new()))
    }
}

impl Headers {
    /// No headers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of headers.
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Raw { count, .. } => *count,
            Repr::Owned(v) => v.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends a header (duplicates are kept).
    pub fn push(&mut self, header: Header) {
        if let Repr::Raw { .. } = self.0 {
            self.0 = Repr::Owned(self.iter().collect());
        }
        if let Repr::Owned(v) = &mut self.0 {
            v.push(header);
        }
    }

    /// The headers in wire order.
    pub fn iter(&self) -> HeaderIter<'_> {
        match &self.0 {
            Repr::Raw { count, bytes } => HeaderIter(IterRepr::Raw { left: *count, bytes: bytes.clone() }),
            Repr::Owned(v) => HeaderIter(IterRepr::Owned(v.iter())),
        }
    }

    /// The value of the first header named `key` (outer `None` when absent, inner when null).
    pub fn get(&self, key: &str) -> Option<Option<Bytes>> {
        self.iter().find(|h| &*h.key == key).map(|h| h.value)
    }

    /// The values of every header named `key`, in order.
    pub fn get_all<'a>(&'a self, key: &'a str) -> impl Iterator<Item = Option<Bytes>> + 'a {
        self.iter().filter(move |h| &*h.key == key).map(|h| h.value)
    }

    /// The headers as an owned list.
    pub fn to_vec(&self) -> Vec<Header> {
        self.iter().collect()
    }

    /// Headers already checked by [`validate_headers`], kept in wire form.
    pub(crate) fn from_raw(count: usize, bytes: Bytes) -> Headers {
        Headers(Repr::Raw { count, bytes })
    }

    /// Encoded size, with the header count.
    #[inline(always)]
    pub(crate) fn size(&self) -> u64 {
        match &self.0 {
            Repr::Raw { count, bytes } => (varint_len(*count as i32) as u64).saturating_add(bytes.len() as u64),
            Repr::Owned(v) => v.iter().fold(varint_len(v.len() as i32) as u64, |n, h| n.saturating_add(h.size())),
        }
    }

    /// Stages the header count and the headers; `None` when they do not fit.
    #[inline(always)]
    pub(crate) fn stage(&self, c: &mut Cursor<'_>) -> Option<()> {
        c.varint(i32::try_from(self.len()).ok()?)?;
        match &self.0 {
            Repr::Raw { bytes, .. } => c.bytes(bytes),
            Repr::Owned(v) => {
                for h in v {
                    c.varint(i32::try_from(h.key.len()).ok()?)?;
                    c.bytes(h.key.as_bytes())?;
                    c.nullable(h.value.as_deref())?;
                }
                Some(())
            }
        }
    }

    /// Writes the header count and the headers.
    pub(crate) fn encode<B: BufMut>(&self, buf: &mut B) {
        write_varint(buf, self.len() as i32);
        match &self.0 {
            Repr::Raw { bytes, .. } => buf.put_slice(bytes),
            Repr::Owned(v) => v.iter().for_each(|h| h.encode(buf)),
        }
    }
}

/// Checks `count` headers in `b` at `pos` (lengths within the record, keys UTF-8) without
/// allocating, moving past them; returns the count.
#[inline]
pub(crate) fn validate_headers(b: &[u8], pos: &mut usize, count: i32) -> Result<usize, DecodeError> {
    let remaining = b.len().saturating_sub(*pos);
    if count < 0 {
        return Err(invalid(RecordsError::NegativeCount { what: "header", count: i64::from(count) }, remaining));
    }
    let count = count as usize;
    // Each header takes at least two bytes (two varint lengths).
    if count > remaining / 2 {
        return Err(invalid(RecordsError::HeaderCountExceeds { count, remaining }, remaining));
    }
    for _ in 0..count {
        let k = varint_at(b, pos)?;
        if k < 0 {
            return Err(invalid(RecordsError::NegativeHeaderKeyLength(k), b.len().saturating_sub(*pos)));
        }
        let at = b.len().saturating_sub(*pos);
        let key = range_at(b, pos, k as usize)?;
        if b.get(key).map(std::str::from_utf8).and_then(Result::ok).is_none() {
            return Err(invalid(RecordsError::HeaderKeyUtf8, at));
        }
        let v = varint_at(b, pos)?;
        if v >= 0 {
            range_at(b, pos, v as usize)?;
        }
    }
    Ok(count)
}

impl fmt::Debug for Headers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for Headers {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Headers {}

impl From<Vec<Header>> for Headers {
    fn from(v: Vec<Header>) -> Self {
        Headers(Repr::Owned(v))
    }
}

impl FromIterator<Header> for Headers {
    fn from_iter<I: IntoIterator<Item = Header>>(iter: I) -> Self {
        Headers(Repr::Owned(iter.into_iter().collect()))
    }
}

impl<'a> IntoIterator for &'a Headers {
    type Item = Header;
    type IntoIter = HeaderIter<'a>;

    fn into_iter(self) -> HeaderIter<'a> {
        self.iter()
    }
}

enum IterRepr<'a> {
    Raw { left: usize, bytes: Bytes },
    Owned(std::slice::Iter<'a, Header>),
}

/// Iterator over [`Headers`], yielding each header (keys and values share the input's memory).
pub struct HeaderIter<'a>(IterRepr<'a>);

impl Iterator for HeaderIter<'_> {
    type Item = Header;

    fn next(&mut self) -> Option<Header> {
        match &mut self.0 {
            IterRepr::Owned(it) => it.next().cloned(),
            IterRepr::Raw { left, bytes } => {
                if *left == 0 {
                    return None;
                }
                *left = left.saturating_sub(1);
                // The framing and the key's UTF-8 were checked by `Headers::decode`; a failure
                // here cannot happen, and ends the iteration rather than panicking.
                let k = read_varint(bytes).ok()?;
                let key = take(bytes, usize::try_from(k).ok()?).ok()?;
                let key = ByteString::try_from(key).ok()?;
                let v = read_varint(bytes).ok()?;
                let value = if v < 0 { None } else { Some(take(bytes, v as usize).ok()?) };
                Some(Header { key, value })
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            IterRepr::Owned(it) => it.size_hint(),
            IterRepr::Raw { left, .. } => (*left, Some(*left)),
        }
    }
}
