//! Kafka records: the contents of a `records` field in Produce and Fetch.
//!
//! A records field is a sequence of entries that all start with the same 17 bytes: a base offset
//! (int64), a length (int32), four bytes that differ by format and a magic byte. Magic 2 is the
//! [`RecordBatch`] (Kafka 0.11+); magic 0 and 1 are legacy messages ([`LegacyMessage`]), one
//! entry per message, a compressed one wrapping a whole inner message set.
//!
//! [`Batches`] walks a records field lazily: each step reads one entry's header, checks its CRC and
//! slices its body without decoding records. A Fetch response may end with a batch the broker cut
//! short; that tail is reported as [`Batch::Partial`], not as an error. Records of an
//! uncompressed batch are decoded one at a time by [`RecordIter`] and their keys, values and
//! header values are slices of the input. Compressed batches are inflated once, up to
//! [`DecodeOptions::max_decompressed_size`].
//!
//! Producers build batches with [`RecordBatchBuilder`] (magic 2) or [`LegacyBuilder`] (magic 0
//! and 1). Compression codecs are behind the `gzip`, `snappy`, `lz4` and `zstd` features, all on
//! by default.
//!
//! ```
//! use kwire_runtime::records::{Batch, Batches, Compression, Record, RecordBatchBuilder};
//! use kwire_runtime::Bytes;
//!
//! let mut builder = RecordBatchBuilder::new().compression(Compression::None);
//! builder.append(Record::new(10, 1_700_000_000_000, Some(Bytes::from_static(b"k")), Some(Bytes::from_static(b"v"))))?;
//! let bytes = builder.build()?;
//! for batch in Batches::new(bytes) {
//!     let Batch::V2(batch) = batch? else { unreachable!() };
//!     assert_eq!(batch.base_offset(), 10);
//!     for record in batch.records()? {
//!         assert_eq!(record?.value.as_deref(), Some(&b"v"[..]));
//!     }
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod batch;
// Encode side: sums of in-memory sizes, not of input.
#[allow(clippy::arithmetic_side_effects)]
mod builder;
mod compression;
mod control;
mod header;
mod legacy;
mod pool;
mod record;

use std::fmt;

use bytes::{Buf, Bytes};

use crate::error::{DecodeError, DecodeErrorKind, EncodeError, EncodeErrorKind, RecordsEncodeError, RecordsError};

pub use batch::{RecordBatch, RecordIter};
pub use builder::{LegacyBuilder, RecordBatchBuilder};
pub use compression::{compress, decompress};
pub use control::{ControlRecord, ControlRecordKey, ControlRecordType, EndTxnMarker};
pub use header::{Header, HeaderIter, Headers};
pub use legacy::LegacyMessage;
pub use pool::{memory_policy, release_thread_memory, set_memory_policy, MemoryPolicy};
pub use record::Record;

/// Bytes before a batch's or message's length field ends: base offset (8) + length (4).
pub const LOG_OVERHEAD: usize = 12;

/// Offset of the magic byte from the start of any entry.
pub const MAGIC_OFFSET: usize = 16;

pub use crate::limits::DEFAULT_MAX_DECOMPRESSED_SIZE;

/// Value of producer id, epoch and sequence fields when the producer is not idempotent.
pub const NO_PRODUCER_ID: i64 = -1;
/// Producer epoch of a non-idempotent producer.
pub const NO_PRODUCER_EPOCH: i16 = -1;
/// Base sequence of a non-idempotent producer.
pub const NO_SEQUENCE: i32 = -1;
/// Partition leader epoch when unknown (as producers write it).
pub const NO_PARTITION_LEADER_EPOCH: i32 = -1;
/// Timestamp when there is none (magic 0 messages).
pub const NO_TIMESTAMP: i64 = -1;

/// A compression codec, as stored in the low three bits of the attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Compression {
    /// No compression.
    #[default]
    None,
    /// gzip (RFC 1952).
    Gzip,
    /// Snappy, xerial-framed (as the Java client writes it) or raw.
    Snappy,
    /// LZ4 frame format.
    Lz4,
    /// Zstandard (magic 2 only).
    Zstd,
}

impl Compression {
    /// Every codec, in attribute order.
    pub const ALL: [Compression; 5] = [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd];

    /// The codec id of the attributes' low three bits.
    pub const fn id(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 1,
            Compression::Snappy => 2,
            Compression::Lz4 => 3,
            Compression::Zstd => 4,
        }
    }

    /// The codec with this id, if Kafka defines one.
    pub const fn from_id(id: u8) -> Option<Compression> {
        match id {
            0 => Some(Compression::None),
            1 => Some(Compression::Gzip),
            2 => Some(Compression::Snappy),
            3 => Some(Compression::Lz4),
            4 => Some(Compression::Zstd),
            _ => None,
        }
    }

    /// Kafka's name for the codec (`none`, `gzip`, `snappy`, `lz4`, `zstd`).
    pub const fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }

    /// Whether this build can compress and decompress the codec (its cargo feature is on).
    pub const fn is_enabled(self) -> bool {
        match self {
            Compression::None => true,
            Compression::Gzip => cfg!(feature = "gzip"),
            Compression::Snappy => cfg!(feature = "snappy"),
            Compression::Lz4 => cfg!(feature = "lz4"),
            Compression::Zstd => cfg!(feature = "zstd"),
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a record's timestamp means (attribute bit 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TimestampType {
    /// Set by the producer when the record was created.
    #[default]
    CreateTime,
    /// Set by the broker when the batch was appended to the log.
    LogAppendTime,
}

/// Options for decoding records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeOptions {
    /// Largest number of bytes one compressed batch (or legacy wrapper) may inflate to; more is
    /// an error (a zip bomb defence). Defaults to [`DEFAULT_MAX_DECOMPRESSED_SIZE`].
    pub max_decompressed_size: usize,
    /// Whether to check each batch's CRC (CRC-32C for magic 2, CRC-32 for magic 0 and 1) when
    /// its header is read. On by default.
    pub verify_crc: bool,
}

impl Default for DecodeOptions {
    /// CRC checks on, and the decompression bound of the [`DecodeLimits`](crate::limits::DecodeLimits)
    /// in force on this thread ([`DEFAULT_MAX_DECOMPRESSED_SIZE`] outside any
    /// [`decode_with_limits`](crate::limits::decode_with_limits) scope), so records decoded
    /// inside a scope obey the same limits as the message that carried them.
    fn default() -> Self {
        crate::limits::current().record_options()
    }
}

// Here rather than in limits.rs, which must not depend on the records module.
impl crate::limits::DecodeLimits {
    /// Options for the records module carrying [`max_decompressed_size`](Self::max_decompressed_size).
    pub fn record_options(&self) -> DecodeOptions {
        DecodeOptions { max_decompressed_size: self.max_decompressed_size, verify_crc: true }
    }
}

/// A batch cut short at the end of a records field, as a Fetch response may end: the broker
/// fills the response up to its size limit and the last batch may not fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartialBatch {
    /// The base offset of the cut batch, if its first eight bytes arrived.
    pub base_offset: Option<i64>,
    /// The size the batch declared (counting from after the length field), if it arrived.
    pub declared_size: Option<usize>,
    /// The bytes that did arrive, from the start of the batch.
    pub bytes: Bytes,
}

/// One entry of a records field.
#[derive(Debug, Clone, PartialEq)]
pub enum Batch {
    /// A magic 2 record batch.
    V2(RecordBatch),
    /// A magic 0 or 1 message: one record, or a compressed wrapper holding several.
    Legacy(LegacyMessage),
    /// The truncated tail of a Fetch response. Always the last item.
    Partial(PartialBatch),
}

impl Batch {
    /// The magic byte, if the entry is complete.
    pub fn magic(&self) -> Option<i8> {
        match self {
            Batch::V2(_) => Some(2),
            Batch::Legacy(m) => Some(m.magic()),
            Batch::Partial(_) => None,
        }
    }

    /// Whether this is the truncated tail of the input.
    pub fn is_partial(&self) -> bool {
        matches!(self, Batch::Partial(_))
    }

    /// The compression codec, for complete entries.
    pub fn compression(&self) -> Option<Compression> {
        match self {
            Batch::V2(b) => Some(b.compression()),
            Batch::Legacy(m) => Some(m.compression()),
            Batch::Partial(_) => None,
        }
    }

    /// The records of a complete entry with absolute offsets and timestamps, decoded eagerly.
    /// A partial tail yields none. Uses [`DecodeOptions::default`].
    pub fn records(&self) -> Result<Vec<Record>, DecodeError> {
        self.records_with(&DecodeOptions::default())
    }

    /// [`Batch::records`] with explicit options (decompression limit).
    pub fn records_with(&self, options: &DecodeOptions) -> Result<Vec<Record>, DecodeError> {
        match self {
            Batch::V2(b) => b.records_with(options)?.collect(),
            Batch::Legacy(m) => m.records_with(options),
            Batch::Partial(_) => Ok(Vec::new()),
        }
    }
}

/// A lazy iterator over the entries of a records field.
///
/// Yields each complete batch (its CRC checked, its records not decoded), then at most one
/// [`Batch::Partial`] for a truncated tail, then stops. A malformed entry yields one error and
/// ends the iteration.
#[derive(Debug, Clone)]
pub struct Batches {
    buf: Bytes,
    options: DecodeOptions,
    done: bool,
    total: usize,
}

impl Batches {
    /// Iterates the entries of `records` with default options.
    pub fn new(records: Bytes) -> Self {
        Self::with_options(records, DecodeOptions::default())
    }

    /// Iterates the entries of `records` with explicit options.
    pub fn with_options(records: Bytes, options: DecodeOptions) -> Self {
        let total = records.len();
        Batches { buf: records, options, done: false, total }
    }

    /// The bytes not yet iterated.
    pub fn remaining(&self) -> &Bytes {
        &self.buf
    }

    fn next_entry(&mut self) -> Result<Option<Batch>, DecodeError> {
        let available = self.buf.remaining();
        if available == 0 {
            return Ok(None);
        }
        if available < LOG_OVERHEAD {
            let base_offset = (available >= 8).then(|| self.buf.clone().get_i64());
            let bytes = self.buf.split_off(0);
            return Ok(Some(Batch::Partial(PartialBatch { base_offset, declared_size: None, bytes })));
        }
        let mut head = self.buf.clone();
        let base_offset = head.get_i64();
        let size = head.get_i32();
        if size < 0 {
            return Err(invalid(RecordsError::NegativeEntrySize { base_offset, size }, available));
        }
        let size = size as usize;
        if size > head.remaining() {
            let bytes = self.buf.split_off(0);
            return Ok(Some(Batch::Partial(PartialBatch { base_offset: Some(base_offset), declared_size: Some(size), bytes })));
        }
        let Some(&magic) = head.chunk().get(MAGIC_OFFSET - LOG_OVERHEAD) else {
            return Err(invalid(RecordsError::EntryTooSmallForMagic(size), available));
        };
        let entry = self.buf.split_to(LOG_OVERHEAD.saturating_add(size));
        match magic {
            2 => RecordBatch::decode(entry, &self.options).map(|b| Some(Batch::V2(b))),
            0 | 1 => LegacyMessage::decode(entry, &self.options).map(|m| Some(Batch::Legacy(m))),
            m => Err(invalid(RecordsError::UnknownMagic(m as i8), available)),
        }
        .map_err(|e| e.shift(self.buf.remaining()))
    }
}

impl Iterator for Batches {
    type Item = Result<Batch, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.next_entry() {
            Ok(Some(b)) => Some(Ok(b)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl std::iter::FusedIterator for Batches {}

/// Decodes every record of a records field eagerly, with absolute offsets, and reports whether
/// the input ended with a truncated batch. A convenience over [`Batches`].
pub fn decode_all(records: Bytes, options: &DecodeOptions) -> Result<(Vec<Record>, Option<PartialBatch>), DecodeError> {
    let mut out = Vec::new();
    let mut partial = None;
    for batch in Batches::with_options(records, *options) {
        match batch? {
            Batch::V2(b) => {
                for r in b.records_with(options)? {
                    out.push(r?);
                }
            }
            Batch::Legacy(m) => out.extend(m.records_with(options)?),
            Batch::Partial(p) => partial = Some(p),
        }
    }
    Ok((out, partial))
}

impl Batches {
    /// Bytes of the original input consumed so far.
    pub fn position(&self) -> usize {
        self.total.saturating_sub(self.buf.len())
    }
}

#[cold]
pub(crate) fn invalid(e: RecordsError, remaining: usize) -> DecodeError {
    DecodeError::new(DecodeErrorKind::Records(e), remaining)
}

#[cold]
pub(crate) fn encode_invalid(e: RecordsEncodeError) -> EncodeError {
    EncodeError::new(EncodeErrorKind::Records(e))
}
