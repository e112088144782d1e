//! Legacy messages, magic 0 and 1 (Kafka before 0.11).
//!
//! ```text
//!  0 offset: int64
//!  8 messageSize: int32       (bytes after this field)
//! 12 crc: uint32              (CRC-32 of bytes 16..end)
//! 16 magic: int8              (0 or 1)
//! 17 attributes: int8         (bits 0-2 codec, bit 3 timestamp type for magic 1)
//! 18 timestamp: int64         (magic 1 only)
//!    key: int32 length (-1 = null), bytes
//!    value: int32 length (-1 = null), bytes
//! ```
//!
//! A compressed message (a wrapper) holds in its value a whole compressed message set of inner
//! messages. Inner offsets are absolute for magic 0; for magic 1 they are relative, and the
//! wrapper's offset is the last inner message's absolute offset, so an inner message's absolute
//! offset is `wrapper offset - last inner offset + inner offset`. A wrapper fresh from a producer
//! (offset below its last inner offset, e.g. 0) keeps the inner offsets as they are, as Kafka's
//! clients read it.

use bytes::{Buf, BufMut, Bytes};

use crate::error::{DecodeError, RecordsError};
use crate::string::read_nullable_bytes;

use super::record::Record;
use super::{decompress, invalid, Compression, DecodeOptions, TimestampType, LOG_OVERHEAD, NO_TIMESTAMP};

/// Bytes of a magic 0 message besides its key and value, from the offset on.
pub const MESSAGE_OVERHEAD_V0: usize = LOG_OVERHEAD + 4 + 1 + 1 + 4 + 4;
/// Bytes of a magic 1 message besides its key and value, from the offset on.
pub const MESSAGE_OVERHEAD_V1: usize = MESSAGE_OVERHEAD_V0 + 8;

pub(crate) const ATTR_TIMESTAMP_TYPE: i8 = 0x08;

/// One magic 0 or 1 message: a record, or a compressed wrapper around inner messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyMessage {
    raw: Bytes,
    offset: i64,
    crc: u32,
    magic: i8,
    attributes: i8,
    compression: Compression,
    timestamp: Option<i64>,
    key: Option<Bytes>,
    value: Option<Bytes>,
}

impl LegacyMessage {
    /// Reads one complete message (`raw` is exactly the message, offset to last byte), checking
    /// its CRC unless told not to.
    pub fn decode(raw: Bytes, options: &DecodeOptions) -> Result<LegacyMessage, DecodeError> {
        let total = raw.len();
        if total < MESSAGE_OVERHEAD_V0 {
            return Err(invalid(RecordsError::MessageTooSmall { len: total, magic: None }, total));
        }
        let mut b = raw.clone();
        let offset = b.get_i64();
        let size = b.get_i32();
        if size < 0 || size as usize != total.saturating_sub(LOG_OVERHEAD) {
            return Err(invalid(RecordsError::MessageSizeMismatch { size, len: total }, total));
        }
        let crc = b.get_u32();
        let magic = b.get_i8();
        if !(0..=1).contains(&magic) {
            return Err(invalid(RecordsError::MessageMagic(magic), b.len()));
        }
        if magic == 1 && total < MESSAGE_OVERHEAD_V1 {
            return Err(invalid(RecordsError::MessageTooSmall { len: total, magic: Some(1) }, total));
        }
        if options.verify_crc {
            let computed = crc32fast::hash(raw.get(16..).unwrap_or_default());
            if computed != crc {
                return Err(invalid(RecordsError::MessageCrc { offset, stored: crc, computed }, total.saturating_sub(16)));
            }
        }
        let attributes = b.get_i8();
        let codec = (attributes & 0x07) as u8;
        let Some(compression) = Compression::from_id(codec) else {
            return Err(invalid(RecordsError::UnknownCodec { codec, legacy: true }, b.len()));
        };
        if compression == Compression::Zstd {
            return Err(invalid(RecordsError::ZstdInLegacy, b.len()));
        }
        let timestamp = if magic == 1 { Some(b.get_i64()) } else { None };
        let key = read_nullable_bytes(&mut b, false)?;
        let value = read_nullable_bytes(&mut b, false)?;
        if !b.is_empty() {
            return Err(invalid(RecordsError::TrailingInMessage(b.len()), b.len()));
        }
        Ok(LegacyMessage { raw, offset, crc, magic, attributes, compression, timestamp, key, value })
    }

    /// The whole message as it was read.
    pub fn as_bytes(&self) -> &Bytes {
        &self.raw
    }

    /// The offset (for a wrapper, the last inner message's absolute offset).
    pub fn offset(&self) -> i64 {
        self.offset
    }

    /// The stored CRC-32.
    pub fn crc(&self) -> u32 {
        self.crc
    }

    /// 0 or 1.
    pub fn magic(&self) -> i8 {
        self.magic
    }

    /// The raw attributes.
    pub fn attributes(&self) -> i8 {
        self.attributes
    }

    /// The codec of the value (not none for a wrapper).
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// What the timestamp means (always create time for magic 0).
    pub fn timestamp_type(&self) -> TimestampType {
        if self.magic > 0 && self.attributes & ATTR_TIMESTAMP_TYPE != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    /// The timestamp (magic 1 only).
    pub fn timestamp(&self) -> Option<i64> {
        self.timestamp
    }

    /// The key.
    pub fn key(&self) -> Option<&Bytes> {
        self.key.as_ref()
    }

    /// The value (for a wrapper, the compressed inner message set).
    pub fn value(&self) -> Option<&Bytes> {
        self.value.as_ref()
    }

    /// The records: this message itself, or a wrapper's inner messages, with absolute offsets.
    pub fn records(&self) -> Result<Vec<Record>, DecodeError> {
        self.records_with(&DecodeOptions::default())
    }

    /// [`LegacyMessage::records`] with explicit options (decompression limit).
    pub fn records_with(&self, options: &DecodeOptions) -> Result<Vec<Record>, DecodeError> {
        if self.compression == Compression::None {
            return Ok(vec![Record::new(self.offset, self.timestamp.unwrap_or(NO_TIMESTAMP), self.key.clone(), self.value.clone())]);
        }
        let Some(value) = &self.value else {
            return Err(invalid(RecordsError::CompressedNullValue, 0));
        };
        let inner = decompress(self.compression, value, options.max_decompressed_size, self.magic)?;
        let inner = self.inner_messages(inner, options)?;
        let last_inner = inner.last().map_or(0, LegacyMessage::offset);
        // As in Kafka's Java and Python clients: a wrapper whose offset is below its last inner
        // offset has not been assigned offsets by a broker (a producer wrote it), and its inner
        // offsets are taken as they are.
        let absolute_base = self.offset.wrapping_sub(last_inner);
        let log_append = (self.timestamp_type() == TimestampType::LogAppendTime).then_some(self.timestamp).flatten();
        let mut out = Vec::with_capacity(inner.len());
        for m in inner {
            let offset = if self.magic == 0 || absolute_base < 0 { m.offset } else { absolute_base.wrapping_add(m.offset) };
            let timestamp = log_append.or(m.timestamp).unwrap_or(NO_TIMESTAMP);
            out.push(Record::new(offset, timestamp, m.key, m.value));
        }
        Ok(out)
    }

    fn inner_messages(&self, mut set: Bytes, options: &DecodeOptions) -> Result<Vec<LegacyMessage>, DecodeError> {
        let mut out = Vec::with_capacity((set.len() / MESSAGE_OVERHEAD_V0).min(1024));
        while !set.is_empty() {
            if set.len() < LOG_OVERHEAD {
                return Err(invalid(RecordsError::TruncatedInnerMessage, set.len()));
            }
            let mut head = set.clone();
            head.advance(8);
            let size = head.get_i32();
            if size < 0 || size as usize > set.len().saturating_sub(LOG_OVERHEAD) {
                return Err(invalid(RecordsError::InnerMessageSizeExceeds { size, remaining: set.len().saturating_sub(LOG_OVERHEAD) }, set.len()));
            }
            // size <= set.len() - LOG_OVERHEAD was checked above.
            let trailing = set.len().saturating_sub(LOG_OVERHEAD).saturating_sub(size as usize);
            let raw = set.split_to(LOG_OVERHEAD.saturating_add(size as usize));
            let m = LegacyMessage::decode(raw, options).map_err(|e| e.shift(trailing))?;
            if m.compression != Compression::None {
                return Err(invalid(RecordsError::NestedCompression, set.len()));
            }
            out.push(m);
        }
        Ok(out)
    }
}

/// Writes one message: `offset`, size, CRC-32, magic, attributes, timestamp (magic 1), key, value.
pub(crate) fn encode_message<B: BufMut>(buf: &mut B, offset: i64, magic: i8, attributes: i8, timestamp: i64, key: Option<&[u8]>, value: Option<&[u8]>) {
    let mut body = Vec::with_capacity(18usize.saturating_add(key.map_or(0, <[u8]>::len)).saturating_add(value.map_or(0, <[u8]>::len)));
    body.put_i8(magic);
    body.put_i8(attributes);
    if magic > 0 {
        body.put_i64(timestamp);
    }
    for b in [key, value] {
        match b {
            Some(b) => {
                body.put_i32(b.len() as i32);
                body.put_slice(b);
            }
            None => body.put_i32(-1),
        }
    }
    buf.put_i64(offset);
    buf.put_i32((body.len() as i32).wrapping_add(4));
    buf.put_u32(crc32fast::hash(&body));
    buf.put_slice(&body);
}
