//! The traits every generated type implements.

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::{DecodeError, EncodeError};
use crate::version::VersionRange;

/// Writes a value at a protocol version.
pub trait Encode {
    /// Writes `self` as `version` lays it out. Fails, naming the field, when the value cannot be
    /// expressed at that version (see [`EncodeErrorKind`](crate::EncodeErrorKind)). Write into a
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
pub trait Message: Encode + Decode + Default + Clone + std::fmt::Debug + PartialEq {
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
}

/// A request message, paired with its api key and response type.
pub trait Request: Message {
    /// The api key.
    const API_KEY: i16;
    /// The response type.
    type Response: Message;
}
