//! The magic 2 record batch, read lazily.
//!
//! ```text
//!  0 baseOffset: int64
//!  8 batchLength: int32          (bytes after this field)
//! 12 partitionLeaderEpoch: int32
//! 16 magic: int8                 (2)
//! 17 crc: uint32                 (CRC-32C of bytes 21..end)
//! 21 attributes: int16           (bits 0-2 codec, 3 timestamp type, 4 transactional,
//!                                 5 control, 6 delete horizon)
//! 23 lastOffsetDelta: int32
//! 27 baseTimestamp: int64
//! 35 maxTimestamp: int64
//! 43 producerId: int64
//! 51 producerEpoch: int16
//! 53 baseSequence: int32
//! 57 recordCount: int32
//! 61 records (compressed as a whole when the codec is not none)
//! ```

use bytes::{Buf, Bytes};

use crate::error::{DecodeError, RecordsError};

use super::compression::decompress_bytes;
use super::control::ControlRecord;
use super::record::{decode_record, Record, MIN_RECORD_SIZE};
use super::{invalid, Compression, DecodeOptions, TimestampType};

/// Size of the magic 2 batch header, up to the records.
pub const BATCH_HEADER_SIZE: usize = 61;
/// Offset of the first byte the CRC covers (the attributes).
pub(crate) const CRC_START: usize = 21;

pub(crate) const ATTR_COMPRESSION_MASK: i16 = 0x07;
pub(crate) const ATTR_TIMESTAMP_TYPE: i16 = 0x08;
pub(crate) const ATTR_TRANSACTIONAL: i16 = 0x10;
pub(crate) const ATTR_CONTROL: i16 = 0x20;
pub(crate) const ATTR_DELETE_HORIZON: i16 = 0x40;

/// A magic 2 record batch whose header has been read and whose CRC has been checked; its
/// records are decoded on demand by [`RecordBatch::records`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordBatch {
    raw: Bytes,
    base_offset: i64,
    partition_leader_epoch: i32,
    crc: u32,
    attributes: i16,
    compression: Compression,
    last_offset_delta: i32,
    base_timestamp: i64,
    max_timestamp: i64,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    record_count: i32,
}

impl RecordBatch {
    /// Reads the header of one complete batch (`raw` is exactly the batch, from its base offset
    /// to its last byte) and checks its CRC unless told not to.
    pub fn decode(raw: Bytes, options: &DecodeOptions) -> Result<RecordBatch, DecodeError> {
        let total = raw.len();
        if total < BATCH_HEADER_SIZE {
            return Err(invalid(RecordsError::BatchTooSmall { len: total, header: BATCH_HEADER_SIZE }, total));
        }
        let mut h = raw.clone();
        let base_offset = h.get_i64();
        let length = h.get_i32();
        if length < 0 || length as usize != total.saturating_sub(super::LOG_OVERHEAD) {
            return Err(invalid(RecordsError::BatchLengthMismatch { length, len: total }, total));
        }
        let partition_leader_epoch = h.get_i32();
        let magic = h.get_i8();
        if magic != 2 {
            return Err(invalid(RecordsError::BatchMagic(magic), total));
        }
        let crc = h.get_u32();
        let attributes = h.get_i16();
        let last_offset_delta = h.get_i32();
        let base_timestamp = h.get_i64();
        let max_timestamp = h.get_i64();
        let producer_id = h.get_i64();
        let producer_epoch = h.get_i16();
        let base_sequence = h.get_i32();
        let record_count = h.get_i32();
        if options.verify_crc {
            let computed = crc32c::crc32c(raw.get(CRC_START..).unwrap_or_default());
            if computed != crc {
                return Err(invalid(RecordsError::BatchCrc { base_offset, stored: crc, computed }, total.saturating_sub(CRC_START)));
            }
        }
        let codec = (attributes & ATTR_COMPRESSION_MASK) as u8;
        let Some(compression) = Compression::from_id(codec) else {
            return Err(invalid(RecordsError::UnknownCodec { codec, legacy: false }, total.saturating_sub(CRC_START)));
        };
        if record_count < 0 {
            return Err(invalid(RecordsError::NegativeCount { what: "record", count: i64::from(record_count) }, total.saturating_sub(57)));
        }
        Ok(RecordBatch {
            raw,
            base_offset,
            partition_leader_epoch,
            crc,
            attributes,
            compression,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            record_count,
        })
    }

    /// The whole batch as it was read, to forward verbatim.
    pub fn as_bytes(&self) -> &Bytes {
        &self.raw
    }

    /// The offset of the first record.
    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }

    /// The batch length field: bytes after it.
    pub fn batch_length(&self) -> i32 {
        self.raw.len().saturating_sub(super::LOG_OVERHEAD) as i32
    }

    /// The partition leader epoch the broker stamped.
    pub fn partition_leader_epoch(&self) -> i32 {
        self.partition_leader_epoch
    }

    /// Always 2.
    pub fn magic(&self) -> i8 {
        2
    }

    /// The stored CRC-32C.
    pub fn crc(&self) -> u32 {
        self.crc
    }

    /// The raw attributes.
    pub fn attributes(&self) -> i16 {
        self.attributes
    }

    /// The compression codec of the records.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// What the timestamps mean.
    pub fn timestamp_type(&self) -> TimestampType {
        if self.attributes & ATTR_TIMESTAMP_TYPE != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    /// Whether the batch belongs to a transaction.
    pub fn is_transactional(&self) -> bool {
        self.attributes & ATTR_TRANSACTIONAL != 0
    }

    /// Whether the batch holds control records (transaction markers and the like).
    pub fn is_control(&self) -> bool {
        self.attributes & ATTR_CONTROL != 0
    }

    /// Whether the base timestamp is a delete horizon set by log compaction.
    pub fn has_delete_horizon(&self) -> bool {
        self.attributes & ATTR_DELETE_HORIZON != 0
    }

    /// The delete horizon, when set.
    pub fn delete_horizon(&self) -> Option<i64> {
        self.has_delete_horizon().then_some(self.base_timestamp)
    }

    /// The offset of the last record relative to the base offset.
    pub fn last_offset_delta(&self) -> i32 {
        self.last_offset_delta
    }

    /// The offset of the last record (kept even when compaction removed it).
    pub fn last_offset(&self) -> i64 {
        self.base_offset.wrapping_add(i64::from(self.last_offset_delta))
    }

    /// The offset after the batch.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().wrapping_add(1)
    }

    /// The base timestamp (first record's, or the delete horizon).
    pub fn base_timestamp(&self) -> i64 {
        self.base_timestamp
    }

    /// The largest timestamp in the batch (the log-append time for such batches).
    pub fn max_timestamp(&self) -> i64 {
        self.max_timestamp
    }

    /// The producer id, or [`super::NO_PRODUCER_ID`].
    pub fn producer_id(&self) -> i64 {
        self.producer_id
    }

    /// The producer epoch, or [`super::NO_PRODUCER_EPOCH`].
    pub fn producer_epoch(&self) -> i16 {
        self.producer_epoch
    }

    /// The sequence number of the first record, or [`super::NO_SEQUENCE`].
    pub fn base_sequence(&self) -> i32 {
        self.base_sequence
    }

    /// The number of records.
    pub fn record_count(&self) -> i32 {
        self.record_count
    }

    /// The records section as stored (compressed when the codec is not none).
    pub fn raw_records(&self) -> Bytes {
        self.raw.slice(BATCH_HEADER_SIZE.min(self.raw.len())..)
    }

    /// Iterates the records with default options. Compressed records are inflated first.
    pub fn records(&self) -> Result<RecordIter, DecodeError> {
        self.records_with(&DecodeOptions::default())
    }

    /// Iterates the records, inflating compressed ones up to the options' limit.
    pub fn records_with(&self, options: &DecodeOptions) -> Result<RecordIter, DecodeError> {
        let raw = self.raw_records();
        let data = match self.compression {
            Compression::None => raw,
            c => decompress_bytes(c, &raw, options.max_decompressed_size)?,
        };
        let count = self.record_count as usize;
        if count > data.len() / MIN_RECORD_SIZE {
            return Err(invalid(RecordsError::RecordCountExceeds { count, len: data.len() }, data.len()));
        }
        let log_append_time = (self.timestamp_type() == TimestampType::LogAppendTime).then_some(self.max_timestamp);
        Ok(RecordIter { data, pos: 0, left: count, base_offset: self.base_offset, base_timestamp: self.base_timestamp, log_append_time, failed: false })
    }

    /// The control records of a control batch, typed. Fails when the batch is not a control
    /// batch.
    pub fn control_records(&self) -> Result<Vec<ControlRecord>, DecodeError> {
        if !self.is_control() {
            return Err(invalid(RecordsError::NotControlBatch, 0));
        }
        self.records()?.map(|r| r.and_then(|r| ControlRecord::parse(&r))).collect()
    }
}

/// A lazy iterator over the records of a magic 2 batch, yielding them with absolute offsets and
/// timestamps. Keys, values and headers are slices of the batch (or of the inflated records).
///
/// After the declared count it checks that no bytes are left; any framing error is yielded once
/// and ends the iteration.
#[derive(Debug, Clone)]
pub struct RecordIter {
    data: Bytes,
    pos: usize,
    left: usize,
    base_offset: i64,
    base_timestamp: i64,
    log_append_time: Option<i64>,
    failed: bool,
}

impl RecordIter {
    /// Records not yet yielded.
    pub fn len(&self) -> usize {
        self.left
    }

    /// Whether every record was yielded.
    pub fn is_empty(&self) -> bool {
        self.left == 0
    }
}

impl Iterator for RecordIter {
    type Item = Result<Record, DecodeError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            let extra = self.data.len().saturating_sub(self.pos);
            if self.failed || extra == 0 {
                return None;
            }
            self.failed = true;
            return Some(Err(invalid(RecordsError::TrailingAfterRecords(extra), extra)));
        }
        self.left = self.left.saturating_sub(1);
        match decode_record(&self.data, &mut self.pos, self.base_offset, self.base_timestamp, self.log_append_time) {
            Ok(r) => Some(Ok(r)),
            Err(e) => {
                self.left = 0;
                self.failed = true;
                Some(Err(e))
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left.saturating_add(1)))
    }
}
