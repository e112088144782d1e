//! One partition's log: its batches as appended, its offsets (log start, high watermark, last
//! stable offset), the producers' state that decides idempotent and transactional appends
//! (Kafka's `ProducerStateManager` and `ProducerAppendInfo`), the aborted transactions a
//! read-committed Fetch lists, and the leader epochs a follower or consumer checks.

use std::collections::{BTreeMap, VecDeque};

use kwire::runtime::records::{Batch, Batches, Compression, RecordBatch, MAGIC_OFFSET};
use kwire::{Bytes, BytesMut, ErrorCode};

/// Why an append was refused: the code a Produce response carries, and a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AppendError {
    pub(crate) code: ErrorCode,
    pub(crate) message: String,
}

fn refuse<T>(code: ErrorCode, message: impl Into<String>) -> Result<T, AppendError> {
    Err(AppendError { code, message: message.into() })
}

/// What an append wrote (or found already written: a retried batch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Appended {
    pub(crate) base_offset: i64,
    /// The append time (LogAppendTime topics), else -1.
    pub(crate) log_append_time: i64,
    /// The batch was written before (the same producer epoch and sequences): nothing new.
    pub(crate) duplicate: bool,
}

/// A batch in the log.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    pub(crate) base_offset: i64,
    pub(crate) last_offset: i64,
    pub(crate) max_timestamp: i64,
    pub(crate) bytes: Bytes,
}

/// The last batches of one producer, as the broker keeps them to recognise a retry (Kafka keeps
/// five: `ProducerStateEntry.NUM_BATCHES_TO_RETAIN`).
const BATCHES_RETAINED: usize = 5;

/// A producer's sequence range in one batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BatchMeta {
    first_seq: i32,
    last_seq: i32,
    base_offset: i64,
    timestamp: i64,
}

/// One producer's state in a partition (Kafka's `ProducerStateEntry`).
#[derive(Debug, Clone)]
pub(crate) struct ProducerEntry {
    /// -1 before its first batch.
    epoch: i16,
    batches: VecDeque<BatchMeta>,
    /// The first offset of its open transaction here.
    txn_first_offset: Option<i64>,
    /// The offset of its last batch (for removal when the log start passes it).
    last_offset: i64,
    coordinator_epoch: i32,
}

impl Default for ProducerEntry {
    fn default() -> ProducerEntry {
        ProducerEntry { epoch: -1, batches: VecDeque::new(), txn_first_offset: None, last_offset: -1, coordinator_epoch: -1 }
    }
}

impl ProducerEntry {
    fn last_seq(&self) -> Option<i32> {
        self.batches.back().map(|b| b.last_seq)
    }

    /// Kafka's `findDuplicateBatch`: a retained batch with the same epoch and sequences.
    fn duplicate(&self, epoch: i16, first_seq: i32, last_seq: i32) -> Option<BatchMeta> {
        if epoch != self.epoch {
            return None;
        }
        self.batches.iter().find(|b| b.first_seq == first_seq && b.last_seq == last_seq).copied()
    }

    fn add(&mut self, epoch: i16, meta: BatchMeta, last_offset: i64) {
        if epoch != self.epoch {
            self.batches.clear();
            self.epoch = epoch;
        }
        self.batches.push_back(meta);
        if self.batches.len() > BATCHES_RETAINED {
            self.batches.pop_front();
        }
        self.last_offset = last_offset;
    }
}

/// An aborted transaction, as a read-committed Fetch lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Aborted {
    pub(crate) producer_id: i64,
    pub(crate) first_offset: i64,
    pub(crate) last_offset: i64,
}

/// Settings of the partition's topic that appends obey.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AppendRules {
    /// `max.message.bytes`.
    pub(crate) max_batch_bytes: usize,
    /// `message.timestamp.type=LogAppendTime`.
    pub(crate) log_append_time: bool,
    /// The produce request's version (legacy formats, error codes).
    pub(crate) produce_version: i16,
}

/// Who may append transactional batches: the transaction coordinator's verdict for a producer
/// (Kafka's verification guard).
pub(crate) trait TxnCheck {
    /// `Ok` if the producer's ongoing transaction includes this partition (adding it when the
    /// Produce version lets the leader add it); else the code to refuse with.
    fn verify(&mut self, producer_id: i64, epoch: i16) -> Result<(), ErrorCode>;
}

/// One partition's log and its producers.
#[derive(Debug, Default)]
pub(crate) struct PartitionLog {
    batches: Vec<Stored>,
    log_start: i64,
    /// The log end offset (the next offset to assign).
    end: i64,
    producers: BTreeMap<i64, ProducerEntry>,
    /// Open transactions: producer id -> first offset.
    ongoing: BTreeMap<i64, i64>,
    aborted: Vec<Aborted>,
    /// Leader epochs and the offset each began at, oldest first.
    epochs: Vec<(i32, i64)>,
}

/// A batch about to be appended, parsed and checked.
struct Incoming {
    raw: Bytes,
    v2: Option<RecordBatch>,
    /// The offset of its last record relative to its first.
    last_delta: i64,
    max_timestamp: i64,
}

impl PartitionLog {
    pub(crate) fn log_start(&self) -> i64 {
        self.log_start
    }

    pub(crate) fn end(&self) -> i64 {
        self.end
    }

    /// Replication is instant: every replica has the whole log, so the high watermark is its end.
    pub(crate) fn high_watermark(&self) -> i64 {
        self.end
    }

    /// The last stable offset: before the first open transaction, else the high watermark.
    pub(crate) fn last_stable(&self) -> i64 {
        self.ongoing.values().copied().min().unwrap_or(self.end).min(self.end)
    }

    /// A new leader epoch starts at the log end.
    pub(crate) fn begin_epoch(&mut self, epoch: i32) {
        if self.epochs.last().is_some_and(|(e, _)| *e >= epoch) {
            return;
        }
        self.epochs.push((epoch, self.end));
    }

    /// Kafka's `OffsetsForLeaderEpoch`: the largest epoch at most `epoch` and the offset its
    /// successor began at (the log end for the current one); `None` for an epoch older than
    /// every one known.
    pub(crate) fn epoch_end(&self, epoch: i32) -> Option<(i32, i64)> {
        let at = self.epochs.iter().rposition(|(e, _)| *e <= epoch)?;
        let end = self.epochs.get(at + 1).map_or(self.end, |(_, start)| *start);
        Some((self.epochs[at].0, end))
    }

    /// Parses and checks a Produce request's records for one partition, then appends them with
    /// offsets from the log end, as Kafka's `UnifiedLog.appendAsLeader` does: every batch is
    /// checked (CRC, counts, size, producer state) before any is written.
    pub(crate) fn append(
        &mut self,
        records: Bytes,
        now_ms: i64,
        leader_epoch: i32,
        rules: AppendRules,
        txn: &mut dyn TxnCheck,
    ) -> Result<Appended, AppendError> {
        let invalid = if rules.produce_version >= 8 { ErrorCode::INVALID_RECORD } else { ErrorCode::CORRUPT_MESSAGE };
        let mut incoming = Vec::new();
        for batch in Batches::new(records) {
            let batch = match batch {
                Ok(b) => b,
                Err(e) => return refuse(ErrorCode::CORRUPT_MESSAGE, format!("unreadable batch: {e}")),
            };
            match batch {
                Batch::V2(b) => {
                    let count = i64::from(b.record_count());
                    if b.last_offset_delta() < 0 || i64::from(b.last_offset_delta()) + 1 != count || count <= 0 {
                        return refuse(invalid, "Inconsistent batch offset range and record count");
                    }
                    if b.is_control() {
                        return refuse(invalid, "Clients are not allowed to write control records");
                    }
                    // KIP-110: zstd needs Produce v7+ (v0-2 carry no record batches to check).
                    if b.compression() == Compression::Zstd && (3..7).contains(&rules.produce_version) {
                        return refuse(ErrorCode::UNSUPPORTED_COMPRESSION_TYPE, "Produce requests with ZStandard compression need version 7 or later");
                    }
                    if b.producer_id() >= 0 && b.base_sequence() < 0 {
                        return refuse(invalid, format!("Invalid sequence number {} in record batch with producerId {}", b.base_sequence(), b.producer_id()));
                    }
                    if b.as_bytes().len() > rules.max_batch_bytes {
                        return refuse(
                            ErrorCode::MESSAGE_TOO_LARGE,
                            format!("The batch is {} bytes, larger than max.message.bytes {}", b.as_bytes().len(), rules.max_batch_bytes),
                        );
                    }
                    // The records must decode (and decompress), and be as many as the header says.
                    match b.records() {
                        Ok(records) => {
                            let mut n = 0i64;
                            for r in records {
                                if r.is_err() {
                                    return refuse(ErrorCode::CORRUPT_MESSAGE, "a record does not decode");
                                }
                                n += 1;
                            }
                            if n != count {
                                return refuse(invalid, format!("the batch holds {n} records, its header says {count}"));
                            }
                        }
                        Err(e) => return refuse(ErrorCode::CORRUPT_MESSAGE, format!("the records do not decode: {e}")),
                    }
                    incoming.push(Incoming {
                        raw: b.as_bytes().clone(),
                        last_delta: i64::from(b.last_offset_delta()),
                        max_timestamp: b.max_timestamp(),
                        v2: Some(b),
                    });
                }
                Batch::Legacy(m) => {
                    if rules.produce_version >= 3 {
                        return refuse(ErrorCode::UNSUPPORTED_FOR_MESSAGE_FORMAT, "Produce v3+ carries record batches (magic 2) only");
                    }
                    let count = if m.compression() == Compression::None {
                        1
                    } else {
                        m.records().map_err(|_| AppendError { code: ErrorCode::CORRUPT_MESSAGE, message: "bad legacy wrapper".into() })?.len() as i64
                    };
                    if count == 0 {
                        return refuse(ErrorCode::CORRUPT_MESSAGE, "an empty legacy wrapper");
                    }
                    incoming.push(Incoming { raw: m.as_bytes().clone(), v2: None, last_delta: count - 1, max_timestamp: m.timestamp().unwrap_or(-1) });
                }
                Batch::Partial(_) => return refuse(ErrorCode::CORRUPT_MESSAGE, "a batch is cut short"),
            }
        }
        if incoming.is_empty() {
            return refuse(ErrorCode::CORRUPT_MESSAGE, "no records");
        }
        // The producers' state after these batches, decided before anything is written.
        let mut updated: BTreeMap<i64, ProducerEntry> = BTreeMap::new();
        let mut next = self.end;
        for b in &incoming {
            let Some(v2) = &b.v2 else {
                next += b.last_delta + 1;
                continue;
            };
            let pid = v2.producer_id();
            if pid < 0 {
                next += b.last_delta + 1;
                continue;
            }
            let epoch = v2.producer_epoch();
            let first_seq = v2.base_sequence();
            let last_seq = ((i64::from(first_seq) + b.last_delta) % (i64::from(i32::MAX) + 1)) as i32;
            let current = self.producers.get(&pid);
            // Kafka's duplicate check: a retry of one of the producer's last five batches is
            // answered with where it was written, and nothing is appended.
            if let Some(dup) = current.and_then(|e| e.duplicate(epoch, first_seq, last_seq)) {
                return Ok(Appended { base_offset: dup.base_offset, log_append_time: if rules.log_append_time { dup.timestamp } else { -1 }, duplicate: true });
            }
            let entry = updated.entry(pid).or_insert_with(|| current.cloned().unwrap_or_default());
            // checkProducerEpoch
            if epoch < entry.epoch {
                return refuse(
                    ErrorCode::INVALID_PRODUCER_EPOCH,
                    format!("Epoch of producer {pid} is {epoch}, which is smaller than the last seen epoch {}", entry.epoch),
                );
            }
            // checkSequence
            if epoch != entry.epoch {
                if first_seq != 0 && entry.epoch != -1 {
                    return refuse(
                        ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER,
                        format!("Invalid sequence number for new epoch of producer {pid}: {epoch} (request epoch), {first_seq} (seq. number), {} (current producer epoch)", entry.epoch),
                    );
                }
            } else {
                // After no batch of this epoch the next sequence is 0 (Kafka's NO_SEQUENCE, -1,
                // plus one). A producer without state here (new, or its batches all gone to
                // retention or DeleteRecords) may start anywhere.
                let last = entry.last_seq().unwrap_or(-1);
                let in_sequence = i64::from(first_seq) == i64::from(last) + 1 || (first_seq == 0 && last == i32::MAX);
                if entry.epoch != -1 && !in_sequence {
                    return refuse(
                        ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER,
                        format!("Out of order sequence number for producer {pid}: {first_seq} (incoming seq. number), {last} (current end sequence number)"),
                    );
                }
            }
            // Transactions: a transactional batch opens (or continues) the producer's
            // transaction here; a plain one may not come in the middle of one.
            if v2.is_transactional() {
                if entry.txn_first_offset.is_none() {
                    if let Err(code) = txn.verify(pid, epoch) {
                        return refuse(code, format!("producer {pid} epoch {epoch} has no ongoing transaction with this partition"));
                    }
                    entry.txn_first_offset = Some(next);
                }
            } else if entry.txn_first_offset.is_some() {
                return refuse(ErrorCode::INVALID_TXN_STATE, format!("Expected transactional write from producer {pid}"));
            }
            entry.add(
                epoch,
                BatchMeta { first_seq, last_seq, base_offset: next, timestamp: if rules.log_append_time { now_ms } else { b.max_timestamp } },
                next + b.last_delta,
            );
            next += b.last_delta + 1;
        }
        // Write: each batch's offset (and epoch, append time) set in its header.
        let base = self.end;
        for b in incoming {
            let base_offset = self.end;
            let last_offset = base_offset + b.last_delta;
            let mut bytes = BytesMut::from(&b.raw[..]);
            let mut max_timestamp = b.max_timestamp;
            let is_v2 = bytes.get(MAGIC_OFFSET) == Some(&2);
            if is_v2 {
                bytes[..8].copy_from_slice(&base_offset.to_be_bytes());
                bytes[12..16].copy_from_slice(&leader_epoch.to_be_bytes());
                if rules.log_append_time {
                    set_log_append_time(&mut bytes, now_ms);
                    max_timestamp = now_ms;
                }
            } else {
                // A legacy entry's offset field is its last record's.
                bytes[..8].copy_from_slice(&last_offset.to_be_bytes());
            }
            if let Some(v2) = &b.v2 {
                if v2.producer_id() >= 0 && v2.is_transactional() {
                    self.ongoing.entry(v2.producer_id()).or_insert(base_offset);
                }
            }
            self.batches.push(Stored { base_offset, last_offset, max_timestamp, bytes: bytes.freeze() });
            self.end = last_offset + 1;
        }
        self.producers.append(&mut updated);
        Ok(Appended { base_offset: base, log_append_time: if rules.log_append_time { now_ms } else { -1 }, duplicate: false })
    }

    /// Writes a transaction marker for `producer_id` (the coordinator ending its transaction):
    /// its transaction here closes, and an abort is listed for read-committed fetches.
    pub(crate) fn append_marker(&mut self, producer_id: i64, epoch: i16, commit: bool, coordinator_epoch: i32, now_ms: i64, leader_epoch: i32) {
        let offset = self.end;
        let Ok(raw) = kwire::runtime::records::RecordBatchBuilder::end_txn_marker(offset, now_ms, producer_id, epoch, commit, coordinator_epoch) else {
            return;
        };
        let mut bytes = BytesMut::from(&raw[..]);
        bytes[12..16].copy_from_slice(&leader_epoch.to_be_bytes());
        self.batches.push(Stored { base_offset: offset, last_offset: offset, max_timestamp: now_ms, bytes: bytes.freeze() });
        self.end = offset + 1;
        let entry = self.producers.entry(producer_id).or_default();
        if epoch > entry.epoch {
            entry.epoch = epoch;
            entry.batches.clear();
        }
        entry.coordinator_epoch = coordinator_epoch;
        entry.last_offset = offset;
        if let Some(first) = entry.txn_first_offset.take() {
            if !commit {
                self.aborted.push(Aborted { producer_id, first_offset: first, last_offset: offset });
            }
        }
        self.ongoing.remove(&producer_id);
    }

    /// The batches from the one holding `offset` up to `upper` (exclusive), about `max_bytes`
    /// of them but at least the first (KIP-74: a consumer always makes progress), with the
    /// aborted transactions that overlap what was read.
    pub(crate) fn read(&self, offset: i64, upper: i64, max_bytes: usize) -> (Vec<Bytes>, Vec<Aborted>) {
        let start = self.batches.partition_point(|b| b.last_offset < offset);
        let mut out = Vec::new();
        let mut size = 0;
        let mut last = offset;
        for b in self.batches.get(start..).unwrap_or_default() {
            if b.base_offset >= upper || (!out.is_empty() && size + b.bytes.len() > max_bytes) {
                break;
            }
            size += b.bytes.len();
            last = b.last_offset;
            out.push(b.bytes.clone());
        }
        let aborted =
            if out.is_empty() { Vec::new() } else { self.aborted.iter().filter(|a| a.last_offset >= offset && a.first_offset <= last).copied().collect() };
        (out, aborted)
    }

    /// Compacts the log as Kafka's cleaner compacts a `cleanup.policy=compact` log, every batch
    /// below the last stable offset being cleanable (there is no active segment here): of each
    /// key the latest record is kept, tombstones are removed (as once `delete.retention.ms` has
    /// passed), so are records without a key and records of aborted transactions; offsets do not
    /// change. A batch keeps its base offset, last offset, producer fields and codec, as
    /// `MemoryRecords.filterTo` writes it; an emptied batch goes; transaction markers stay.
    /// Returns how many records went.
    pub(crate) fn compact(&mut self) -> usize {
        let upper = self.last_stable();
        let aborted = |pid: i64, offset: i64| self.aborted.iter().any(|a| a.producer_id == pid && (a.first_offset..=a.last_offset).contains(&offset));
        let cleanable = |s: &Stored| s.last_offset < upper;
        // Kafka's offset map: each key's latest offset in the cleanable part.
        let mut latest: BTreeMap<Bytes, i64> = BTreeMap::new();
        let data = |s: &Stored| -> Option<RecordBatch> {
            match Batches::new(s.bytes.clone()).next() {
                Some(Ok(Batch::V2(b))) if !b.is_control() => Some(b),
                _ => None,
            }
        };
        for stored in self.batches.iter().filter(|s| cleanable(s)) {
            let Some(b) = data(stored) else { continue };
            for r in b.records().into_iter().flatten().flatten() {
                if !(b.is_transactional() && aborted(b.producer_id(), r.offset)) {
                    if let Some(key) = r.key {
                        latest.insert(key, r.offset);
                    }
                }
            }
        }
        let mut removed = 0;
        let mut kept = Vec::with_capacity(self.batches.len());
        for stored in std::mem::take(&mut self.batches) {
            let Some(b) = data(&stored).filter(|_| cleanable(&stored)) else {
                kept.push(stored);
                continue;
            };
            let all: Vec<_> = b.records().into_iter().flatten().flatten().collect();
            let total = all.len();
            let retained: Vec<_> = all
                .into_iter()
                .filter(|r| {
                    let dropped = b.is_transactional() && aborted(b.producer_id(), r.offset);
                    !dropped && r.value.is_some() && r.key.as_ref().is_some_and(|k| latest.get(k) == Some(&r.offset))
                })
                .collect();
            removed += total - retained.len();
            if retained.len() == total {
                kept.push(stored);
            } else if !retained.is_empty() {
                match rebuild(&b, &retained) {
                    Some(bytes) => kept.push(Stored { bytes, ..stored }),
                    // Cannot happen with records read from a valid batch; keep it as it was.
                    None => {
                        removed -= total - retained.len();
                        kept.push(stored);
                    }
                }
            }
        }
        self.batches = kept;
        removed
    }

    /// The aborted transactions, oldest first.
    pub(crate) fn aborted(&self) -> &[Aborted] {
        &self.aborted
    }

    /// Every batch, for a test to read the log as written.
    pub(crate) fn batches(&self) -> &[Stored] {
        &self.batches
    }

    /// The offset and timestamp of the first record at or after `timestamp`, or (`None`) of
    /// the record with the largest timestamp.
    pub(crate) fn offset_for_timestamp(&self, timestamp: Option<i64>) -> Option<(i64, i64)> {
        let mut best: Option<(i64, i64)> = None;
        for stored in &self.batches {
            if stored.last_offset < self.log_start || matches!(timestamp, Some(t) if stored.max_timestamp < t) {
                continue;
            }
            let Some(Ok(batch)) = Batches::new(stored.bytes.clone()).next() else { continue };
            if let Batch::V2(b) = &batch {
                if b.is_control() {
                    continue;
                }
            }
            let Ok(records) = batch.records() else { continue };
            for record in records.into_iter().filter(|r| r.offset >= self.log_start) {
                match timestamp {
                    Some(t) if record.timestamp >= t => return Some((record.offset, record.timestamp)),
                    Some(_) => {}
                    None if best.is_none_or(|(_, ts)| record.timestamp > ts) => best = Some((record.offset, record.timestamp)),
                    None => {}
                }
            }
        }
        best
    }

    /// DeleteRecords: the log starts at `offset` (at most the high watermark); batches wholly
    /// before it go, and so does the state of producers with nothing left.
    pub(crate) fn delete_before(&mut self, offset: i64) -> Result<i64, ErrorCode> {
        if offset > self.high_watermark() || offset < -1 {
            return Err(ErrorCode::OFFSET_OUT_OF_RANGE);
        }
        let offset = if offset == -1 { self.high_watermark() } else { offset };
        if offset > self.log_start {
            self.log_start = offset;
            self.batches.retain(|b| b.last_offset >= offset);
            self.producers.retain(|pid, e| e.last_offset >= offset || self.ongoing.contains_key(pid));
            self.aborted.retain(|a| a.last_offset >= offset);
        }
        Ok(self.log_start)
    }

    /// The producers with state here (DescribeProducers): id, epoch, last sequence, last
    /// timestamp, coordinator epoch, open transaction's first offset.
    pub(crate) fn producers(&self) -> Vec<(i64, i16, i32, i64, i32, i64)> {
        self.producers
            .iter()
            .map(|(pid, e)| {
                let last = e.batches.back();
                (*pid, e.epoch, last.map_or(-1, |b| b.last_seq), last.map_or(-1, |b| b.timestamp), e.coordinator_epoch, e.txn_first_offset.unwrap_or(-1))
            })
            .collect()
    }
}

/// Sets a v2 batch's timestamp type to LogAppendTime and its max timestamp to `now`, and its
/// CRC again (both are covered by it).
/// A batch with only `records` of `original`: its base offset, producer fields, leader epoch,
/// timestamp type and codec, and its last offset delta (so a consumer's next offset after it is
/// the same), the CRC computed again.
fn rebuild(original: &RecordBatch, records: &[kwire::runtime::records::Record]) -> Option<Bytes> {
    let mut builder = kwire::runtime::records::RecordBatchBuilder::new()
        .base_offset(original.base_offset())
        .partition_leader_epoch(original.partition_leader_epoch())
        .compression(original.compression())
        .timestamp_type(original.timestamp_type())
        .producer(original.producer_id(), original.producer_epoch(), original.base_sequence())
        .transactional(original.is_transactional());
    for r in records {
        builder.append(r.clone()).ok()?;
    }
    let mut bytes = BytesMut::from(&builder.build().ok()?[..]);
    // lastOffsetDelta at 23..27; the CRC-32C at 17..21 covers attributes onward (from 21).
    if bytes.len() < 61 {
        return None;
    }
    bytes[23..27].copy_from_slice(&original.last_offset_delta().to_be_bytes());
    let crc = crc32c::crc32c(&bytes[21..]);
    bytes[17..21].copy_from_slice(&crc.to_be_bytes());
    Some(bytes.freeze())
}

fn set_log_append_time(bytes: &mut BytesMut, now_ms: i64) {
    if bytes.len() < 61 {
        return;
    }
    let attributes = i16::from_be_bytes([bytes[21], bytes[22]]) | 0x08;
    bytes[21..23].copy_from_slice(&attributes.to_be_bytes());
    bytes[35..43].copy_from_slice(&now_ms.to_be_bytes());
    let crc = crc32c::crc32c(&bytes[21..]);
    bytes[17..21].copy_from_slice(&crc.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use kwire::runtime::records::{Record, RecordBatchBuilder};

    struct NoTxn;
    impl TxnCheck for NoTxn {
        fn verify(&mut self, _: i64, _: i16) -> Result<(), ErrorCode> {
            Ok(())
        }
    }

    const RULES: AppendRules = AppendRules { max_batch_bytes: 1 << 20, log_append_time: false, produce_version: 11 };

    fn batch(pid: i64, epoch: i16, seq: i32, n: usize) -> Bytes {
        let mut b = RecordBatchBuilder::new().producer(pid, epoch, seq);
        for i in 0..n {
            b.append(Record::new(i as i64, 1000, None, Some(Bytes::from(format!("v{i}"))))).unwrap();
        }
        b.build().unwrap()
    }

    fn append(log: &mut PartitionLog, records: Bytes) -> Result<Appended, ErrorCode> {
        log.append(records, 0, 0, RULES, &mut NoTxn).map_err(|e| e.code)
    }

    /// Kafka's rules, case by case (`ProducerAppendInfo.checkProducerEpoch`/`checkSequence`,
    /// `findDuplicateBatch`).
    #[test]
    fn sequences_and_epochs_are_decided_as_kafka_decides_them() {
        let mut log = PartitionLog::default();
        // A new producer may start at any sequence (KIP-360).
        assert_eq!(append(&mut log, batch(7, 0, 5, 2)).map(|a| a.base_offset), Ok(0));
        assert_eq!(append(&mut log, batch(7, 0, 7, 3)).map(|a| a.base_offset), Ok(2));
        // A retry of a retained batch: where it was written, nothing appended.
        assert_eq!(append(&mut log, batch(7, 0, 5, 2)), Ok(Appended { base_offset: 0, log_append_time: -1, duplicate: true }));
        assert_eq!(log.end(), 5);
        // A gap, and a sequence already passed that is no longer retained.
        assert_eq!(append(&mut log, batch(7, 0, 11, 1)), Err(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER));
        for seq in 10..15 {
            append(&mut log, batch(7, 0, seq, 1)).unwrap();
        }
        assert_eq!(append(&mut log, batch(7, 0, 5, 2)), Err(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER), "older than the last five");
        // A new epoch starts at 0; an older one is fenced.
        assert_eq!(append(&mut log, batch(7, 1, 3, 1)), Err(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER));
        assert!(append(&mut log, batch(7, 1, 0, 1)).is_ok());
        assert_eq!(append(&mut log, batch(7, 0, 15, 1)), Err(ErrorCode::INVALID_PRODUCER_EPOCH));
        // Sequences wrap after i32::MAX.
        let mut log = PartitionLog::default();
        append(&mut log, batch(8, 0, i32::MAX - 1, 2)).unwrap();
        assert!(append(&mut log, batch(8, 0, 0, 1)).is_ok());
    }

    #[test]
    fn markers_close_transactions_and_aborts_are_listed() {
        let mut log = PartitionLog::default();
        let mut txn = RecordBatchBuilder::new().producer(3, 0, 0).transactional(true);
        txn.append(Record::new(0, 1, None, Some(Bytes::from_static(b"x")))).unwrap();
        append(&mut log, txn.build().unwrap()).unwrap();
        append(&mut log, batch(4, 0, 0, 2)).unwrap();
        assert_eq!((log.last_stable(), log.high_watermark()), (0, 3));
        log.append_marker(3, 0, false, 0, 5, 0);
        assert_eq!(log.last_stable(), 4);
        let (read, aborted) = log.read(0, log.last_stable(), 1 << 20);
        assert_eq!(read.len(), 3);
        assert_eq!(aborted, vec![Aborted { producer_id: 3, first_offset: 0, last_offset: 3 }]);
    }
}
