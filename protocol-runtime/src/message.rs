//! The traits every generated type implements.

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::{DecodeError, DecodeErrorKind, EncodeError, EncodeErrorKind};
use crate::limits::DecodeLimits;
use crate::version::VersionRange;

// Here rather than in limits.rs, which must not depend on the message traits.
impl DecodeLimits {
    /// Decodes a `T` at `version` under these limits.
    pub fn decode<T: Decode>(&self, buf: &mut Bytes, version: i16) -> Result<T, DecodeError> {
        self.scope(|| T::decode(buf, version))
    }
}

/// Writes a value at a protocol version.
pub trait Encode {
    /// Writes `self` as `version` lays it out. Fails, naming the field, when the value cannot be
    /// expressed at that version (see [`EncodeErrorKind`]). Write into a
    /// growable buffer, or one with [`encoded_len`](Encode::encoded_len) bytes of room.
    fn encode<B: BufMut>(&self, buf: &mut B, version: i16) -> Result<(), EncodeError>;

    /// The exact number of bytes [`encode`](Encode::encode) writes at `version`, computed without
    /// encoding. Meaningless for values that `encode` rejects.
    fn encoded_len(&self, version: i16) -> usize;
}

/// Reads a value at a protocol version.
pub trait Decode: Sized {
    /// Reads a value as `version` lays it out, advancing `buf` past it. Strings, bytes and records
    /// are slices of `buf`'s storage, not copies.
    fn decode(buf: &mut Bytes, version: i16) -> Result<Self, DecodeError>;
}

/// A top-level message: a request, response, header or data spec.
pub trait Message: Encode + Decode + Default + Clone + std::fmt::Debug + PartialEq + crate::visit::Visit {
    /// The spec's name (`MetadataRequest`).
    const NAME: &'static str;
    /// Every version this build can encode and decode, unstable ones included.
    const VERSIONS: VersionRange;
    /// The flexible versions (compact encodings and tagged fields).
    const FLEXIBLE_VERSIONS: VersionRange;

    /// Encodes into a new buffer of exactly the right size.
    fn to_bytes(&self, version: i16) -> Result<Bytes, EncodeError> {
        let mut out = BytesMut::with_capacity(self.encoded_len(version));
        self.encode(&mut out, version)?;
        Ok(out.freeze())
    }

    /// Decodes from a byte slice (copied once into a `Bytes`). Prefer [`Decode::decode`] on
    /// `Bytes` for zero-copy decoding.
    fn from_slice(bytes: &[u8], version: i16) -> Result<Self, DecodeError> {
        Self::decode(&mut Bytes::copy_from_slice(bytes), version)
    }

    /// Encodes with the version in front as an int16, the way Kafka carries versioned data
    /// messages inside other fields: the consumer protocol's `ConsumerProtocolSubscription` and
    /// `ConsumerProtocolAssignment` in JoinGroup/SyncGroup metadata (Java's
    /// `MessageUtil.toVersionPrefixedBytes`, `ConsumerProtocol.serializeSubscription`).
    fn to_version_prefixed_bytes(&self, version: i16) -> Result<Bytes, EncodeError> {
        let mut out = BytesMut::with_capacity(self.encoded_len(version).saturating_add(2));
        out.put_i16(version);
        self.encode(&mut out, version)?;
        Ok(out.freeze())
    }

    /// Decodes a version-prefixed message that fills `buf` (a JoinGroup protocol's metadata, a
    /// SyncGroup assignment): the version on the wire and the message. As Java's
    /// `ConsumerProtocol` does, a version newer than this build's is read at the newest one it
    /// knows and what follows is skipped (newer versions only append fields), and a version
    /// below the lowest is an error. Any other bytes left over are an error.
    fn from_version_prefixed(buf: &mut Bytes) -> Result<(i16, Self), DecodeError> {
        let total = bytes::Buf::remaining(buf);
        let version = crate::primitive::read_i16(buf).map_err(|e| e.in_message(Self::NAME, -1, total))?;
        let known = if version > Self::VERSIONS.hi && !Self::VERSIONS.is_empty() { Self::VERSIONS.hi } else { version };
        let message = Self::decode(buf, known)?;
        let left = bytes::Buf::remaining(buf);
        if known != version {
            bytes::Buf::advance(buf, left);
        } else if left > 0 {
            return Err(DecodeError::new(DecodeErrorKind::TrailingBytes { left }, left).in_message(Self::NAME, version, total));
        }
        Ok((version, message))
    }
}

/// A request message, paired with its api key and response type.
pub trait Request: Message {
    /// The api key.
    const API_KEY: i16;
    /// The response type.
    type Response: Message;
}

#[doc(hidden)] // generated code calls it; not public API
/// Decodes a top-level message: checks the version, then names the message, version and offset
/// in any error. Used by generated code.
#[inline]
pub fn decode_message<T: Message>(buf: &mut Bytes, version: i16, fields: impl FnOnce(&mut Bytes, i16) -> Result<T, DecodeError>) -> Result<T, DecodeError> {
    let total = bytes::Buf::remaining(buf);
    if !T::VERSIONS.contains(version) {
        return Err(DecodeError::new(DecodeErrorKind::UnsupportedVersion { version }, total).in_message(T::NAME, version, total));
    }
    crate::limits::with_message_budget(|| fields(buf, version)).map_err(|e| e.in_message(T::NAME, version, total))
}

#[doc(hidden)] // generated code calls it; not public API
/// Encodes a top-level message: checks the version, then names the message and version in any
/// error. Used by generated code.
#[inline]
pub fn encode_message<T: Message, B: BufMut>(
    buf: &mut B,
    version: i16,
    fields: impl FnOnce(&mut B, i16) -> Result<(), EncodeError>,
) -> Result<(), EncodeError> {
    if !T::VERSIONS.contains(version) {
        return Err(EncodeError::new(EncodeErrorKind::UnsupportedVersion).in_message(T::NAME, version));
    }
    fields(buf, version).map_err(|e| e.in_message(T::NAME, version))
}

#[doc(hidden)] // generated code calls it; not public API
/// Reads a nullable struct: an int8 marker (negative for null), then the struct.
#[inline]
pub fn read_nullable_struct<T>(buf: &mut Bytes, read: impl FnOnce(&mut Bytes) -> Result<T, DecodeError>) -> Result<Option<T>, DecodeError> {
    if crate::primitive::read_i8(buf)? < 0 {
        Ok(None)
    } else {
        read(buf).map(Some)
    }
}

#[doc(hidden)] // generated code calls it; not public API
/// Writes a nullable struct: -1 for null, else 1 and the struct.
#[inline]
pub fn write_nullable_struct<T: Encode, B: BufMut>(buf: &mut B, value: Option<&T>, version: i16) -> Result<(), EncodeError> {
    match value {
        None => {
            buf.put_i8(-1);
            Ok(())
        }
        Some(v) => {
            buf.put_i8(1);
            v.encode(buf, version)
        }
    }
}

#[doc(hidden)] // generated code calls it; not public API
/// Encoded size of a nullable struct.
#[inline]
pub fn nullable_struct_len<T: Encode>(value: Option<&T>, version: i16) -> usize {
    value.map_or(0, |v| v.encoded_len(version)).saturating_add(1)
}

#[doc(hidden)] // generated code calls it; not public API
/// The error for a non-default value in a version that lacks its (non-ignorable) field.
#[cold]
pub fn non_default() -> EncodeError {
    EncodeError::new(EncodeErrorKind::NonDefaultInVersion)
}

#[doc(hidden)] // generated code calls it; not public API
/// The error for null in a version in which the field is not nullable.
#[cold]
pub fn null_in_non_nullable() -> EncodeError {
    EncodeError::new(EncodeErrorKind::NullInNonNullableVersion)
}
