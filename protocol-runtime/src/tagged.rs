//! Tagged-field sections of flexible versions: an unsigned varint count, then per field its tag,
//! its size and its bytes.
//!
//! Known tags are decoded by the generated code inside a sub-buffer of exactly the declared size;
//! unknown tags are kept raw, in wire order, and written back interleaved by tag with the known
//! ones, so a decode/encode round trip keeps them byte for byte.

use std::fmt;
use std::mem::ManuallyDrop;

use bytes::{Buf, BufMut, Bytes};

use crate::error::{DecodeError, DecodeErrorKind, EncodeError, EncodeErrorKind};
use crate::length::take;
use crate::varint::{read_unsigned_varint, unsigned_varint_len, write_unsigned_varint};

/// A tagged field this build does not know, kept as its raw bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RawTaggedField {
    /// The tag.
    pub tag: u32,
    /// The field's bytes (without tag and size).
    pub data: Bytes,
}

/// Unknown tagged fields of a struct, in the order they were read. Empty costs nothing: no
/// allocation, and dropping it is one inlined check.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct UnknownTaggedFields(ManuallyDrop<Vec<RawTaggedField>>);

impl Drop for UnknownTaggedFields {
    // Nearly every struct of every message has an empty section: a plain `Vec` field would
    // cost an out-of-line drop call each (a quarter of a Fetch partition's decode and drop).
    #[inline(always)]
    fn drop(&mut self) {
        if self.0.capacity() != 0 {
            drop_fields(&mut self.0);
        }
    }
}

/// Kept out of line so the drop of an empty section stays small enough to inline.
#[cold]
#[inline(never)]
fn drop_fields(fields: &mut Vec<RawTaggedField>) {
    drop(std::mem::take(fields));
}

impl fmt::Debug for UnknownTaggedFields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("UnknownTaggedFields").field(&*self.0).finish()
    }
}

impl From<Vec<RawTaggedField>> for UnknownTaggedFields {
    fn from(fields: Vec<RawTaggedField>) -> Self {
        UnknownTaggedFields(ManuallyDrop::new(fields))
    }
}

impl UnknownTaggedFields {
    /// The raw fields, in order.
    #[inline]
    pub fn as_slice(&self) -> &[RawTaggedField] {
        &self.0
    }

    /// True when there are none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many there are.
    #[inline]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Adds a raw field.
    pub fn push(&mut self, tag: u32, data: Bytes) {
        self.0.push(RawTaggedField { tag, data });
    }

    /// Iterates over the raw fields.
    pub fn iter(&self) -> std::slice::Iter<'_, RawTaggedField> {
        self.0.iter()
    }

    /// Fails when fields are set but the version being written is not flexible.
    #[inline]
    pub fn check_not_flexible(&self) -> Result<(), EncodeError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(not_flexible())
        }
    }

    /// Encoded size of these fields alone (without the count).
    #[inline]
    pub fn fields_len(&self) -> usize {
        self.0.iter().map(|f| field_len(f.tag, f.data.len())).sum()
    }

    /// A writer that emits these fields in tag order between the known ones.
    #[inline]
    pub fn writer(&self) -> RawTaggedWriter<'_> {
        RawTaggedWriter { rest: &self.0 }
    }
}

#[cold]
fn not_flexible() -> EncodeError {
    EncodeError::new(EncodeErrorKind::TaggedFieldsInNonFlexibleVersion)
}

#[doc(hidden)] // generated code calls it; not public API
/// Size of one tagged field with a value of `size` bytes: tag, size, value.
#[inline]
pub fn field_len(tag: u32, size: usize) -> usize {
    unsigned_varint_len(tag).saturating_add(unsigned_varint_len(size as u32)).saturating_add(size)
}

#[doc(hidden)] // generated code calls it; not public API
/// Size of a whole section holding `count` fields whose own sizes add up to `fields_len`.
#[inline]
pub fn section_len(count: usize, fields_len: usize) -> usize {
    unsigned_varint_len(count as u32).saturating_add(fields_len)
}

#[doc(hidden)] // generated code calls it; not public API
/// Reads a tagged-field section. `known(tag, sub)` decodes a known tag from `sub` (exactly the
/// declared bytes) and returns `Ok(true)`, or returns `Ok(false)` for a tag it does not know,
/// which is then kept in `unknown`.
#[inline]
pub fn read_tagged_fields(
    buf: &mut Bytes,
    unknown: &mut UnknownTaggedFields,
    mut known: impl FnMut(u32, &mut Bytes) -> Result<bool, DecodeError>,
) -> Result<(), DecodeError> {
    let count = read_unsigned_varint(buf)?;
    if count == 0 {
        return Ok(());
    }
    // Each field takes at least two bytes (tag and size).
    if u64::from(count) > buf.remaining() as u64 {
        let remaining = buf.remaining();
        return Err(DecodeError::new(DecodeErrorKind::LengthExceedsRemaining { length: u64::from(count), remaining }, remaining));
    }
    // Charged as if every field were unknown and kept: the most the section can allocate.
    crate::limits::charge_tagged(count as usize, std::mem::size_of::<RawTaggedField>(), buf.remaining())?;
    for _ in 0..count {
        let tag = read_unsigned_varint(buf)?;
        let size = read_unsigned_varint(buf)? as usize;
        let mut sub = take(buf, size)?;
        let after = buf.remaining();
        let is_known = match known(tag, &mut sub) {
            Err(e) if matches!(e.kind(), DecodeErrorKind::TagNotValidForVersion { .. }) => {
                let kind = crate::lenient::LeniencyKind::TagNotValidForVersion { tag };
                if !crate::lenient::tolerate(kind, sub.remaining().saturating_add(after)) {
                    return Err(e.shift(after));
                }
                false
            }
            r => r.map_err(|e| e.shift(after))?,
        };
        if is_known {
            if sub.has_remaining() {
                let left = sub.remaining();
                return Err(DecodeError::new(
                    DecodeErrorKind::TaggedFieldSizeMismatch { tag, declared: size, consumed: size.saturating_sub(left) },
                    left.saturating_add(after),
                ));
            }
        } else {
            unknown.push(tag, sub);
        }
    }
    Ok(())
}

#[doc(hidden)] // generated code calls it; not public API
/// Fails a known tag seen in a version where its field does not exist, as Java does (a lenient
/// decode keeps it as an unknown tagged field instead: see [`read_tagged_fields`]).
#[cold]
pub fn tag_not_valid(tag: u32, version: i16, sub: &Bytes) -> DecodeError {
    DecodeError::new(DecodeErrorKind::TagNotValidForVersion { tag, version }, sub.remaining())
}

#[doc(hidden)] // generated code calls it; not public API
/// Decodes a known tagged value and reports a short value as a size mismatch rather than as the
/// end of the message.
#[inline]
pub fn read_known<T>(tag: u32, sub: &mut Bytes, read: impl FnOnce(&mut Bytes) -> Result<T, DecodeError>) -> Result<T, DecodeError> {
    let declared = sub.remaining();
    read(sub).map_err(|e| match e.kind() {
        DecodeErrorKind::UnexpectedEnd { .. } => {
            DecodeError::new(DecodeErrorKind::TaggedFieldSizeMismatch { tag, declared, consumed: declared.saturating_add(1) }, 0)
        }
        _ => e,
    })
}

/// Writes the raw (unknown) tagged fields of a struct in tag order around the known ones.
#[derive(Debug)]
pub struct RawTaggedWriter<'a> {
    rest: &'a [RawTaggedField],
}

impl RawTaggedWriter<'_> {
    /// Writes the raw fields whose tags come before `next_known`.
    #[inline]
    pub fn write_before<B: BufMut>(&mut self, buf: &mut B, next_known: u32) {
        while let Some((f, rest)) = self.rest.split_first() {
            if f.tag >= next_known {
                break;
            }
            write_raw(buf, f);
            self.rest = rest;
        }
    }

    /// Writes the raw fields that are left.
    #[inline]
    pub fn finish<B: BufMut>(self, buf: &mut B) {
        for f in self.rest {
            write_raw(buf, f);
        }
    }
}

#[inline]
fn write_raw<B: BufMut>(buf: &mut B, f: &RawTaggedField) {
    write_unsigned_varint(buf, f.tag);
    write_unsigned_varint(buf, f.data.len() as u32);
    buf.put_slice(&f.data);
}

#[doc(hidden)] // generated code calls it; not public API
/// Writes the header of a known tagged field: its tag and the size of its value.
#[inline]
pub fn write_field_header<B: BufMut>(buf: &mut B, tag: u32, size: usize) {
    write_unsigned_varint(buf, tag);
    write_unsigned_varint(buf, size as u32);
}

#[doc(hidden)] // generated code calls it; not public API
/// Writes a section with no known fields: just the unknown ones.
#[inline]
pub fn write_unknown_only<B: BufMut>(buf: &mut B, unknown: &UnknownTaggedFields) {
    write_unsigned_varint(buf, unknown.len() as u32);
    unknown.writer().finish(buf);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::primitive::read_i32;

    #[test]
    fn unknown_fields_kept_in_order_and_written_back() {
        let wire = Bytes::from_static(&[0x02, 0x05, 0x01, 0xaa, 0x09, 0x02, 0xbb, 0xcc]);
        let mut unknown = UnknownTaggedFields::default();
        read_tagged_fields(&mut wire.clone(), &mut unknown, |_, _| Ok(false)).unwrap();
        assert_eq!(unknown.len(), 2);
        let mut out = Vec::new();
        write_unknown_only(&mut out, &unknown);
        assert_eq!(out, wire);
        assert_eq!(section_len(unknown.len(), unknown.fields_len()), wire.len());
    }

    #[test]
    fn known_field_must_use_its_declared_size() {
        // Tag 0 declares 5 bytes, but an int32 uses 4.
        let mut wire = Bytes::from_static(&[0x01, 0x00, 0x05, 0, 0, 0, 1, 0xff]);
        let mut unknown = UnknownTaggedFields::default();
        let err = read_tagged_fields(&mut wire, &mut unknown, |_, sub| read_i32(sub).map(|_| true)).unwrap_err();
        assert_eq!(err.kind(), &DecodeErrorKind::TaggedFieldSizeMismatch { tag: 0, declared: 5, consumed: 4 });
    }

    #[test]
    fn raw_fields_interleave_by_tag() {
        let unknown = UnknownTaggedFields::from(vec![
            RawTaggedField { tag: 1, data: Bytes::from_static(&[1]) },
            RawTaggedField { tag: 5, data: Bytes::from_static(&[5]) },
        ]);
        let mut out = Vec::new();
        let mut w = unknown.writer();
        w.write_before(&mut out, 3);
        write_field_header(&mut out, 3, 1);
        out.push(3);
        w.finish(&mut out);
        assert_eq!(out, [1, 1, 1, 3, 1, 3, 5, 1, 5]);
    }
}
