//! Builders for producers: a magic 2 [`RecordBatchBuilder`] and a magic 0/1 [`LegacyBuilder`].

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::{EncodeError, RecordsEncodeError};

use super::batch::{ATTR_COMPRESSION_MASK, ATTR_CONTROL, ATTR_DELETE_HORIZON, ATTR_TIMESTAMP_TYPE, ATTR_TRANSACTIONAL, BATCH_HEADER_SIZE, CRC_START};
use super::compression::{compress_bound, compress_to};
#[cfg(feature = "lz4")]
use super::compression::{lz4_begin_in_place, lz4_frame_in_place, lz4_unframe_stored};
use super::control::{ControlRecord, EndTxnMarker};
use super::legacy::{encode_message, ATTR_TIMESTAMP_TYPE as LEGACY_ATTR_TIMESTAMP_TYPE};
use super::record::{body_len, write_record, Record, Stage};
use super::{compress, encode_invalid, Compression, TimestampType, NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, NO_TIMESTAMP};

/// A buffer a batch is written into: a caller's `Vec`, or a chunk of the pool.
trait BatchBuf: BufMut + AsMut<[u8]> {
    fn reserve_more(&mut self, additional: usize);
    fn cut(&mut self, len: usize);
}

impl BatchBuf for Vec<u8> {
    fn reserve_more(&mut self, additional: usize) {
        self.reserve(additional);
    }
    fn cut(&mut self, len: usize) {
        self.truncate(len);
    }
}

impl BatchBuf for BytesMut {
    fn reserve_more(&mut self, additional: usize) {
        self.reserve(additional);
    }
    fn cut(&mut self, len: usize) {
        self.truncate(len);
    }
}

fn check_record(r: &Record, prev: Option<i64>) -> Result<(), EncodeError> {
    if let Some(prev) = prev {
        if r.offset <= prev {
            return Err(encode_invalid(RecordsEncodeError::OffsetNotIncreasing { offset: r.offset, previous: prev }));
        }
    }
    let too_big = |n: usize| n > i32::MAX as usize;
    if r.key.as_ref().is_some_and(|k| too_big(k.len())) || r.value.as_ref().is_some_and(|v| too_big(v.len())) {
        return Err(encode_invalid(RecordsEncodeError::KeyOrValueTooLong));
    }
    Ok(())
}

/// A record's body size, its deltas taken from the batch's bases (wrapping: checked on append).
#[inline(always)]
fn record_body_len(r: &Record, base_offset: i64, base_timestamp: i64) -> u64 {
    body_len(r, r.offset.wrapping_sub(base_offset) as i32, r.timestamp.wrapping_sub(base_timestamp))
}

thread_local! {
    /// The records of a gzip, snappy or zstd batch before compression (lz4 frames them where
    /// they are written): a producer builds batch after batch, and a fresh buffer per batch
    /// was fresh pages to fault in each time.
    static PLAIN: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` on the thread's scratch buffer for a batch's records before compression, emptied.
fn with_plain<T>(f: impl FnOnce(&mut Vec<u8>) -> Result<T, EncodeError>) -> Result<T, EncodeError> {
    PLAIN.with(|cell| {
        let Ok(mut plain) = cell.try_borrow_mut() else {
            return f(&mut Vec::new());
        };
        plain.clear();
        let result = f(&mut plain);
        // A buffer grown for a huge batch is not kept.
        if plain.capacity() > super::pool::keep_scratch() {
            *plain = Vec::new();
        }
        result
    })
}

/// Frees this thread's buffer for records before compression (see `pool::release_thread_memory`).
pub(super) fn release_thread_memory() {
    let _ = PLAIN.try_with(|p| p.try_borrow_mut().map(|mut p| *p = Vec::new()));
}

/// The exact size of the encoded records: plain arithmetic over each record's fields, nothing
/// kept per record.
fn records_size(records: &[Record], base_offset: i64, base_timestamp: i64) -> Result<usize, EncodeError> {
    let mut len = 0usize;
    for r in records {
        let body = record_body_len(r, base_offset, base_timestamp);
        if body > i32::MAX as u64 {
            return Err(encode_invalid(RecordsEncodeError::RecordTooLarge));
        }
        // body <= i32::MAX: the cast is exact and the sum cannot overflow.
        len = len.checked_add(crate::varint::varint_len(body as i32) + body as usize).ok_or_else(|| encode_invalid(RecordsEncodeError::BatchTooLarge(None)))?;
    }
    Ok(len)
}

/// Appends the records and returns the largest timestamp.
fn write_records<B: BufMut>(records: &[Record], base_offset: i64, base_timestamp: i64, out: &mut B) -> Result<Option<i64>, EncodeError> {
    let mut stage = Stage::new();
    let mut max_timestamp = None::<i64>;
    for r in records {
        max_timestamp = Some(max_timestamp.map_or(r.timestamp, |m| m.max(r.timestamp)));
        let od = r.offset.wrapping_sub(base_offset) as i32;
        write_record(out, &mut stage, r, od, r.timestamp.wrapping_sub(base_timestamp))?;
    }
    Ok(max_timestamp)
}

/// Builds one magic 2 record batch: records appended in offset order, then [`build`] computes
/// the offset and timestamp deltas, the counts, the base and max timestamps and the CRC-32C, and
/// compresses the records with the chosen codec.
///
/// The base offset defaults to the first record's offset and the base timestamp to the first
/// record's timestamp (or the delete horizon when one is set), as the Java producer does.
///
/// [`build`]: RecordBatchBuilder::build
#[derive(Debug, Clone)]
pub struct RecordBatchBuilder {
    base_offset: Option<i64>,
    partition_leader_epoch: i32,
    compression: Compression,
    timestamp_type: TimestampType,
    transactional: bool,
    control: bool,
    delete_horizon: Option<i64>,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    compress_only_if_smaller: bool,
    records: Vec<Record>,
}

impl Default for RecordBatchBuilder {
    fn default() -> Self {
        RecordBatchBuilder {
            base_offset: None,
            partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
            compression: Compression::None,
            timestamp_type: TimestampType::CreateTime,
            transactional: false,
            control: false,
            delete_horizon: None,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            base_sequence: NO_SEQUENCE,
            compress_only_if_smaller: false,
            records: Vec::new(),
        }
    }
}

impl RecordBatchBuilder {
    /// An empty, uncompressed, non-transactional batch from a non-idempotent producer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the base offset (records' offsets must not be below it).
    pub fn base_offset(mut self, base_offset: i64) -> Self {
        self.base_offset = Some(base_offset);
        self
    }

    /// Sets the compression codec.
    pub fn compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// With `true`, a batch whose records do not compress to fewer bytes than they take is
    /// written uncompressed (its codec none), as librdkafka and franz-go write such batches:
    /// the broker then stores it without inflating it to validate it, and consumers read it
    /// without inflating it. Off by default, as Java's producer compresses every batch.
    ///
    /// ```
    /// use kwire_runtime::records::{Compression, Record, RecordBatchBuilder};
    ///
    /// // Eight bytes lz4 cannot shrink: the frame would add its header and block sizes.
    /// let records = [Record::new(0, 1_700_000_000_000, None, Some("qZ3x9Lk2".into()))];
    /// let lz4 = RecordBatchBuilder::new().compression(Compression::Lz4);
    /// let mut batch = Vec::new();
    /// lz4.clone().compress_only_if_smaller(true).build_from(&records, &mut batch)?;
    /// let mut plain = Vec::new();
    /// RecordBatchBuilder::new().build_from(&records, &mut plain)?;
    /// assert_eq!(batch, plain);
    /// # Ok::<(), kwire_runtime::EncodeError>(())
    /// ```
    pub fn compress_only_if_smaller(mut self, yes: bool) -> Self {
        self.compress_only_if_smaller = yes;
        self
    }

    /// Sets the timestamp type.
    pub fn timestamp_type(mut self, timestamp_type: TimestampType) -> Self {
        self.timestamp_type = timestamp_type;
        self
    }

    /// Sets the partition leader epoch (brokers stamp it; producers leave -1).
    pub fn partition_leader_epoch(mut self, epoch: i32) -> Self {
        self.partition_leader_epoch = epoch;
        self
    }

    /// Sets the idempotent producer's id, epoch and the first record's sequence number.
    pub fn producer(mut self, producer_id: i64, producer_epoch: i16, base_sequence: i32) -> Self {
        self.producer_id = producer_id;
        self.producer_epoch = producer_epoch;
        self.base_sequence = base_sequence;
        self
    }

    /// Marks the batch as part of a transaction.
    pub fn transactional(mut self, transactional: bool) -> Self {
        self.transactional = transactional;
        self
    }

    /// Marks the batch as a control batch.
    pub fn control(mut self, control: bool) -> Self {
        self.control = control;
        self
    }

    /// Sets a delete horizon (stored as the base timestamp, attribute bit 6).
    pub fn delete_horizon(mut self, delete_horizon: i64) -> Self {
        self.delete_horizon = Some(delete_horizon);
        self
    }

    /// Appends a record. Offsets must increase, stay at or above the base offset and within an
    /// int32 delta of it.
    pub fn append(&mut self, record: Record) -> Result<(), EncodeError> {
        check_record(&record, self.records.last().map(|r| r.offset))?;
        let base = self.base_offset.or(self.records.first().map(|r| r.offset)).unwrap_or(record.offset);
        let delta = record.offset.checked_sub(base);
        if !delta.is_some_and(|d| (0..=i64::from(i32::MAX)).contains(&d)) {
            return Err(encode_invalid(RecordsEncodeError::OffsetDeltaOverflow { offset: record.offset, base }));
        }
        self.records.push(record);
        Ok(())
    }

    /// Appends a typed control record (the batch must be a control batch).
    pub fn append_control(&mut self, offset: i64, timestamp: i64, control: &ControlRecord) -> Result<(), EncodeError> {
        if !self.control {
            return Err(encode_invalid(RecordsEncodeError::ControlRecordInDataBatch));
        }
        let (key, value) = control.to_key_value();
        self.append(Record::new(offset, timestamp, Some(key), value))
    }

    /// Number of records appended.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether no record was appended.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The records appended so far.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    fn attributes(&self) -> i16 {
        let mut a = i16::from(self.compression.id());
        if self.timestamp_type == TimestampType::LogAppendTime {
            a |= ATTR_TIMESTAMP_TYPE;
        }
        if self.transactional {
            a |= ATTR_TRANSACTIONAL;
        }
        if self.control {
            a |= ATTR_CONTROL;
        }
        if self.delete_horizon.is_some() {
            a |= ATTR_DELETE_HORIZON;
        }
        a
    }

    /// Encodes the batch.
    pub fn build(&self) -> Result<Bytes, EncodeError> {
        let mut out = Vec::new();
        // The exact size first: one exact allocation.
        let len = self.uncompressed_size(&self.records)?;
        self.write(&self.records, &mut out, Some(len))?;
        Ok(Bytes::from(out))
    }

    /// Encodes the batch, appending it to `out`.
    pub fn build_into(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        self.write(&self.records, out, None)
    }

    /// Encodes `records` (instead of the appended ones) as one batch with this builder's
    /// settings, appending it to `out`; for callers that keep their records and only borrow
    /// them. The records are checked as [`RecordBatchBuilder::append`] checks them.
    pub fn build_from(&self, records: &[Record], out: &mut Vec<u8>) -> Result<(), EncodeError> {
        self.check_borrowed(records)?;
        self.write(records, out, None)
    }

    /// Encodes `records` as [`build_from`](Self::build_from) does, into memory kept per thread
    /// and used again once the returned bytes (and every slice of them) are dropped: for a
    /// producer, which builds batch after batch and lets each go once it is acknowledged. In a
    /// fresh buffer each, every batch's pages were faulted in anew.
    ///
    /// ```
    /// use kwire_runtime::records::{Compression, Record, RecordBatchBuilder};
    ///
    /// let records = [Record::new(0, 1_700_000_000_000, None, Some("v".into()))];
    /// let builder = RecordBatchBuilder::new().compression(Compression::None);
    /// let mut fresh = Vec::new();
    /// builder.build_from(&records, &mut fresh)?;
    /// assert_eq!(builder.build_from_pooled(&records)?, fresh);
    /// # Ok::<(), kwire_runtime::EncodeError>(())
    /// ```
    pub fn build_from_pooled(&self, records: &[Record]) -> Result<Bytes, EncodeError> {
        self.check_borrowed(records)?;
        let records_len = self.uncompressed_size(records)?;
        let bound = BATCH_HEADER_SIZE.saturating_add(compress_bound(self.compression, records_len));
        // Written straight into the pool's memory, compressed or not.
        super::pool::write_into(bound, |out| self.write(records, out, Some(records_len)))
    }

    /// The checks [`RecordBatchBuilder::append`] makes, for records the builder did not take.
    fn check_borrowed(&self, records: &[Record]) -> Result<(), EncodeError> {
        let base = self.base_offset.or(records.first().map(|r| r.offset)).unwrap_or(0);
        let mut prev = None;
        for r in records {
            check_record(r, prev)?;
            if !r.offset.checked_sub(base).is_some_and(|d| (0..=i64::from(i32::MAX)).contains(&d)) {
                return Err(encode_invalid(RecordsEncodeError::OffsetDeltaOverflow { offset: r.offset, base }));
            }
            prev = Some(r.offset);
        }
        Ok(())
    }

    /// The bytes `records` take in a batch before compression, the batch header not counted:
    /// what a producer measures compression against (Java's `compression-rate`).
    pub fn uncompressed_size(&self, records: &[Record]) -> Result<usize, EncodeError> {
        let (base_offset, base_timestamp) = self.bases(records);
        records_size(records, base_offset, base_timestamp)
    }

    /// The batch's base offset and base timestamp for `records`: the builder's when set, the
    /// first record's otherwise.
    fn bases(&self, records: &[Record]) -> (i64, i64) {
        let base_offset = self.base_offset.or(records.first().map(|r| r.offset)).unwrap_or(0);
        let base_timestamp = self.delete_horizon.or(records.first().map(|r| r.timestamp)).unwrap_or(NO_TIMESTAMP);
        (base_offset, base_timestamp)
    }

    /// `records_len`: the records' encoded size ([`Self::uncompressed_size`]) when the caller
    /// has it: reserved before writing (one exact allocation for a new buffer); otherwise
    /// computed only to compress, and the buffer grows as needed (reused buffers rarely do).
    fn write(&self, records: &[Record], out: &mut impl BatchBuf, records_len: Option<usize>) -> Result<(), EncodeError> {
        let (base_offset, base_timestamp) = self.bases(records);
        let last_offset_delta = records.last().map_or(0, |r| r.offset.wrapping_sub(base_offset) as i32);
        let count = i32::try_from(records.len()).map_err(|_| encode_invalid(RecordsEncodeError::TooManyRecords))?;

        let compressed = self.compression != Compression::None;
        let records_len = match records_len {
            Some(n) => n,
            None if compressed => records_size(records, base_offset, base_timestamp)?,
            None => 0,
        };
        let start = out.as_mut().len();
        // In place (none, lz4): the batch's whole size; otherwise the records go into the
        // plain buffer first.
        let in_place = matches!(self.compression, Compression::None | Compression::Lz4);
        out.reserve_more(BATCH_HEADER_SIZE.saturating_add(if in_place { compress_bound(self.compression, records_len) } else { 0 }));
        out.put_i64(base_offset);
        out.put_i32(0); // length, patched below
        out.put_i32(self.partition_leader_epoch);
        out.put_i8(2);
        out.put_u32(0); // crc, patched below
        out.put_i16(self.attributes());
        out.put_i32(last_offset_delta);
        out.put_i64(base_timestamp);
        out.put_i64(0); // max timestamp, patched below
        out.put_i64(self.producer_id);
        out.put_i16(self.producer_epoch);
        out.put_i32(self.base_sequence);
        out.put_i32(count);
        // Set when `compress_only_if_smaller` left the records uncompressed.
        let mut uncompressed_after_all = false;
        let max_timestamp = match self.compression {
            Compression::None => write_records(records, base_offset, base_timestamp, out)?,
            // The records written once, into the frame's own room: no copy of them into the
            // plain buffer, and a block that does not shrink stays where it was written.
            #[cfg(feature = "lz4")]
            Compression::Lz4 => {
                let frame = out.as_mut().len();
                lz4_begin_in_place(out, records_len);
                let data = out.as_mut().len();
                let max = write_records(records, base_offset, base_timestamp, out)?;
                let end = lz4_frame_in_place(out.as_mut(), frame, data)?;
                // The frame with its end mark, against the records it holds.
                if self.compress_only_if_smaller && end + 4 - frame >= records_len {
                    match lz4_unframe_stored(out.as_mut(), frame, data, end) {
                        Some(plain_end) => out.cut(plain_end),
                        // Blocks moved, or compressed over the records: written again.
                        None => {
                            out.cut(frame);
                            write_records(records, base_offset, base_timestamp, out)?;
                        }
                    }
                    uncompressed_after_all = true;
                } else {
                    out.cut(end);
                    out.put_u32_le(0);
                }
                max
            }
            _ => with_plain(|plain| {
                plain.reserve(records_len);
                let max = write_records(records, base_offset, base_timestamp, plain)?;
                let at = out.as_mut().len();
                compress_to(self.compression, plain, out, 2)?;
                if self.compress_only_if_smaller && out.as_mut().len() - at >= plain.len() {
                    out.cut(at);
                    out.put_slice(plain);
                    uncompressed_after_all = true;
                }
                Ok(max)
            })?,
        };
        if uncompressed_after_all {
            let attributes = self.attributes() & !ATTR_COMPRESSION_MASK;
            if let Some(slot) = out.as_mut().get_mut(start + 21..start + 23) {
                slot.copy_from_slice(&attributes.to_be_bytes());
            }
        }
        let batch_len = out.as_mut().len() - start - super::LOG_OVERHEAD;
        let batch_len = i32::try_from(batch_len).map_err(|_| encode_invalid(RecordsEncodeError::BatchTooLarge(Some(batch_len))))?;
        if let Some(slot) = out.as_mut().get_mut(start + 8..start + 12) {
            slot.copy_from_slice(&batch_len.to_be_bytes());
        }
        if let Some(slot) = out.as_mut().get_mut(start + 35..start + 43) {
            slot.copy_from_slice(&max_timestamp.unwrap_or(NO_TIMESTAMP).to_be_bytes());
        }
        // One CRC-32C over the attributes to the end (hardware-accelerated by the crate).
        let crc = crc32c::crc32c(out.as_mut().get(start + CRC_START..).unwrap_or_default());
        if let Some(slot) = out.as_mut().get_mut(start + 17..start + 21) {
            slot.copy_from_slice(&crc.to_be_bytes());
        }
        Ok(())
    }

    /// A complete transaction marker batch: one commit or abort control record at `offset`.
    pub fn end_txn_marker(
        offset: i64,
        timestamp: i64,
        producer_id: i64,
        producer_epoch: i16,
        commit: bool,
        coordinator_epoch: i32,
    ) -> Result<Bytes, EncodeError> {
        let marker = EndTxnMarker { version: 0, coordinator_epoch };
        let record = if commit { ControlRecord::Commit(marker) } else { ControlRecord::Abort(marker) };
        let mut b = RecordBatchBuilder::new().base_offset(offset).producer(producer_id, producer_epoch, NO_SEQUENCE).transactional(true).control(true);
        b.append_control(offset, timestamp, &record)?;
        b.build()
    }
}

/// Builds a magic 0 or 1 message set: one message per record, or with a codec one compressed
/// wrapper message around them (inner offsets relative for magic 1, absolute for magic 0; the
/// wrapper's offset is the last record's, its timestamp the largest).
#[derive(Debug, Clone)]
pub struct LegacyBuilder {
    magic: i8,
    compression: Compression,
    timestamp_type: TimestampType,
    records: Vec<Record>,
}

impl LegacyBuilder {
    /// A builder for `magic` 0 or 1.
    pub fn new(magic: i8) -> Self {
        LegacyBuilder { magic, compression: Compression::None, timestamp_type: TimestampType::CreateTime, records: Vec::new() }
    }

    /// Sets the codec (zstd is not allowed before magic 2).
    pub fn compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// Sets the timestamp type (magic 1 only).
    pub fn timestamp_type(mut self, timestamp_type: TimestampType) -> Self {
        self.timestamp_type = timestamp_type;
        self
    }

    /// Appends a record; offsets must increase, and headers are not allowed before magic 2.
    pub fn append(&mut self, record: Record) -> Result<(), EncodeError> {
        if !record.headers.is_empty() {
            return Err(encode_invalid(RecordsEncodeError::HeadersInLegacy(self.magic)));
        }
        check_record(&record, self.records.last().map(|r| r.offset))?;
        self.records.push(record);
        Ok(())
    }

    /// Number of records appended.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether no record was appended.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    fn ts_attr(&self) -> i8 {
        if self.magic > 0 && self.timestamp_type == TimestampType::LogAppendTime {
            LEGACY_ATTR_TIMESTAMP_TYPE
        } else {
            0
        }
    }

    /// Encodes the message set.
    pub fn build(&self) -> Result<Bytes, EncodeError> {
        let mut out = Vec::new();
        self.build_into(&mut out)?;
        Ok(Bytes::from(out))
    }

    /// Encodes the message set, appending it to `out`.
    pub fn build_into(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        if !(0..=1).contains(&self.magic) {
            return Err(encode_invalid(RecordsEncodeError::LegacyMagic(self.magic)));
        }
        if self.compression == Compression::Zstd {
            return Err(encode_invalid(RecordsEncodeError::ZstdNeedsMagic2));
        }
        let attrs = self.ts_attr();
        if self.compression == Compression::None {
            for r in &self.records {
                encode_message(out, r.offset, self.magic, attrs, r.timestamp, r.key.as_deref(), r.value.as_deref());
            }
            return Ok(());
        }
        let (Some(first), Some(last)) = (self.records.first(), self.records.last()) else {
            return Ok(());
        };
        let mut inner = Vec::new();
        for r in &self.records {
            let offset = if self.magic == 0 { r.offset } else { r.offset.wrapping_sub(first.offset) };
            encode_message(&mut inner, offset, self.magic, 0, r.timestamp, r.key.as_deref(), r.value.as_deref());
        }
        let mut compressed = Vec::new();
        compress(self.compression, &inner, &mut compressed, self.magic)?;
        if compressed.len() > i32::MAX as usize - 64 {
            return Err(encode_invalid(RecordsEncodeError::CompressedSetTooLarge));
        }
        let max_ts = self.records.iter().map(|r| r.timestamp).max().unwrap_or(NO_TIMESTAMP);
        let wrapper_attrs = attrs | self.compression.id() as i8;
        encode_message(out, last.offset, self.magic, wrapper_attrs, max_ts, None, Some(&compressed));
        Ok(())
    }
}
