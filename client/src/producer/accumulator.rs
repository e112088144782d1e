//! The record accumulator (Java's `RecordAccumulator`): per-partition queues of batches that
//! records join until a batch is full or its linger is up, and the drain that takes the ready
//! ones, by leader, for the senders.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use kwire::runtime::records::{Compression, Record, RecordBatchBuilder};
use kwire::runtime::varint::varint_len;
use kwire::Bytes;
use tokio::sync::OwnedSemaphorePermit;

use super::delivery::{Callback, Completer, Delivery, Fired, Outcome};
use super::idempotence::{Idempotence, ProducerIdAndEpoch, Sequenced, Sequences};
use super::transaction::Transactions;
use super::ProducerConfig;
use crate::cluster::{ClusterMetadata, TopicInfo};
use crate::error::{Error, ProducerError, Result};
use crate::partitioner::{next_partition, partition_for_key, LoadStats};
use crate::random::Random;

/// When a batch that failed may go again: by itself at `at` (its jittered backoff), or from
/// `earliest` (the jitter's floor) in a request its leader sends anyway. Java's drain draws the
/// jitter anew at every check, so retries that failed together go again together; drawn once
/// per batch here, they would otherwise leave in as many requests as partitions, and a faulty
/// network strikes per frame.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RetryAt {
    pub(crate) earliest: Instant,
    pub(crate) at: Instant,
}

/// Records of one partition sent (and resent) together.
pub(crate) struct Batch {
    /// The records, their offsets their indexes; encoded when the batch is sent.
    pub(crate) records: Vec<Record>,
    /// Its records' encoded size, uncompressed (Java's `uncompressedRecordsSizeInBytes`).
    uncompressed: usize,
    /// The topic's estimated compression ratio when the batch was opened (`None` without
    /// compression): Java's batch keeps the estimate it was created with.
    ratio: Option<f32>,
    /// The buffer memory of all its records (one permit, merged as records join).
    memory: OwnedSemaphorePermit,
    done: Completer,
    created: Instant,
    pub(crate) attempts: u32,
    /// The producer id, epoch and base sequence this batch was last given (kept for resends
    /// unless its partition's sequences are rewritten).
    pub(crate) sequence: Option<Sequenced>,
    /// When it may go again after a failed attempt.
    pub(crate) retry_at: Option<RetryAt>,
    pub(crate) last_error: Option<Error>,
    /// An attempt may have been written (or may yet be): the batch keeps its sequence for good
    /// (rule 1 of `idempotence`).
    pub(crate) uncertain: bool,
    /// Its place among its partition's batches (they are sent, and resent, in this order).
    ordinal: u64,
}

impl Batch {
    /// Its size as sent, estimated (Java's `MemoryRecordsBuilder.estimatedBytesWritten`): the
    /// header and the records, compressed by the ratio it was opened with plus 5 %, in Java's
    /// `float` arithmetic so that batches fill where Java's do.
    fn estimated_size(&self) -> usize {
        BATCH_OVERHEAD
            + match self.ratio {
                None => self.uncompressed,
                Some(ratio) => (self.uncompressed as f32 * ratio * 1.05) as usize,
            }
    }

    /// Whether a record of `size` encoded bytes may join it (Java's `hasRoomFor`): a batch
    /// never sent whose estimated size stays within `batch_size`.
    fn has_room(&self, cfg: &ProducerConfig, size: usize) -> bool {
        self.attempts == 0 && self.estimated_size().saturating_add(size) <= cfg.batch_size
    }

    /// Whether it is full (Java's `isFull`): ready to go without waiting out its linger.
    fn is_full(&self, cfg: &ProducerConfig) -> bool {
        self.estimated_size() >= cfg.batch_size
    }

    /// How long it has been since its first record came.
    pub(crate) fn age(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.created)
    }

    /// Whether the delivery timeout is up for it.
    pub(crate) fn expired(&self, cfg: &ProducerConfig, now: Instant) -> bool {
        now >= self.created + cfg.delivery_timeout
    }

    /// Its place among its partition's batches: its ordinal, then (for the parts of a split
    /// batch, which share it) its first record's index in the original batch.
    fn place(&self) -> (u64, u32) {
        (self.ordinal, self.done.first_index())
    }

    /// A batch the broker refused as too large (MESSAGE_TOO_LARGE) in two of about half its
    /// bytes each, as Java's `ProducerBatch.split` (which cuts at `batch.size`; halving also
    /// gets under a topic's `max.message.bytes` that is below the producer's `batch_size`, one
    /// halving per refusal). The halves keep the batch's place, attempts and creation time;
    /// with idempotence the second continues the first's sequences, so the partition's
    /// sequences are unchanged. `Err` gives back a batch of one record.
    pub(crate) fn split(mut self) -> std::result::Result<(Batch, Batch), Box<Batch>> {
        if self.records.len() < 2 {
            return Err(Box::new(self));
        }
        let sizes: Vec<usize> = self.records.iter().map(size_upper_bound).collect();
        let total: usize = sizes.iter().sum();
        // The first half by bytes: at least one record, and at least one left.
        let mut at = 0;
        let mut head = 0;
        for size in &sizes {
            if at > 0 && head + size > total / 2 {
                break;
            }
            head += size;
            at += 1;
        }
        if at == sizes.len() {
            at -= 1;
            head -= sizes.last().copied().unwrap_or(0);
        }
        let Some(memory) = self.memory.split(self.memory.num_permits().saturating_sub(head)) else {
            return Err(Box::new(self));
        };
        let mut records = self.records.split_off(at);
        for (i, r) in records.iter_mut().enumerate() {
            r.offset = i as i64;
        }
        let done = self.done.split_off(at as u32);
        let sequence = self.sequence.map(|s| s.skip(at));
        let tail = Batch {
            uncompressed: records_size(&records),
            ratio: self.ratio,
            records,
            memory,
            done,
            created: self.created,
            attempts: self.attempts.max(1),
            sequence,
            retry_at: None,
            last_error: self.last_error.clone(),
            uncertain: self.uncertain,
            ordinal: self.ordinal,
        };
        self.uncompressed = records_size(&self.records);
        self.retry_at = None;
        // Sent already: neither half takes new records, and each waits, as a resend does, until
        // nothing of its partition is in flight.
        self.attempts = self.attempts.max(1);
        Ok((self, tail))
    }
}

/// The encoded size of a batch's records, uncompressed (as the sender will encode them).
fn records_size(records: &[Record]) -> usize {
    RecordBatchBuilder::new().uncompressed_size(records).unwrap_or(usize::MAX)
}

/// The most a record takes in a batch, whatever its offset and timestamp deltas (Java's
/// `DefaultRecord.recordSizeUpperBound`): its key, value and headers with their lengths, and 21
/// bytes for its own length, attributes and deltas. It is what the record takes of
/// `buffer_memory` until its batch completes; with a batch's header, what `max_request_size`
/// limits (Java's `estimateSizeInBytesUpperBound`).
pub(crate) fn size_upper_bound(r: &Record) -> usize {
    /// A length and the bytes after it (-1 for null: one byte).
    fn sized(len: Option<usize>) -> usize {
        len.map_or(1, |n| i32::try_from(n).map_or(5, varint_len).saturating_add(n))
    }
    const MAX_RECORD_OVERHEAD: usize = 21;
    let count = varint_len(i32::try_from(r.headers.len()).unwrap_or(i32::MAX));
    let headers = r.headers.iter().fold(count, |sum, h| sum.saturating_add(sized(Some(h.key.len()))).saturating_add(sized(h.value.as_ref().map(Bytes::len))));
    MAX_RECORD_OVERHEAD.saturating_add(sized(r.key.as_ref().map(Bytes::len))).saturating_add(sized(r.value.as_ref().map(Bytes::len))).saturating_add(headers)
}

/// One partition's batches, in order, and its sequences.
#[derive(Default)]
pub(crate) struct Queue {
    batches: VecDeque<Batch>,
    in_flight: usize,
    pub(crate) sequences: Sequences,
    next_ordinal: u64,
    /// A record was ever appended here (Java creates a partition's queue then).
    used: bool,
}

impl Queue {
    /// Takes the first batch to send (the caller has checked that it may go), with its
    /// sequence if the producer is idempotent. `next` is set to now if another batch of the
    /// partition is ready and may go in the next request.
    fn take(
        &mut self,
        cfg: &ProducerConfig,
        producer_id: Option<ProducerIdAndEpoch>,
        limit: usize,
        urgent: bool,
        now: Instant,
        next: &mut Option<Instant>,
    ) -> Option<Batch> {
        let mut batch = self.batches.pop_front()?;
        if let Some(current) = producer_id.filter(|_| cfg.idempotence) {
            batch.sequence = Some(self.sequences.for_batch(batch.sequence, batch.records.len(), current));
        }
        self.in_flight += 1;
        self.sequences.flight_pid = if cfg.idempotence { batch.sequence.map(|s| s.producer) } else { producer_id };
        // One batch per partition per request; another ready one goes in the next request, at
        // once.
        let more =
            self.batches.front().is_some_and(|b| b.attempts == 0 && (urgent || self.batches.len() > 1 || b.is_full(cfg) || now >= b.created + cfg.linger));
        if more && self.in_flight < limit {
            *next = Some(now);
        }
        Some(batch)
    }
}

/// One topic's partitions (indexed by partition), its sticky partition and load statistics.
#[derive(Default)]
struct TopicQueues {
    sticky: Option<Sticky>,
    /// Adaptive partitioning's statistics, as the last drain found the queues.
    load: Option<LoadStats>,
    partitions: Vec<Queue>,
    ratio: CompressionRatio,
}

/// Java's `CompressionRatioEstimator` for one topic: a built batch's size over its records'
/// uncompressed size, as new batches are to expect it. It starts at 1 and follows what the
/// batches show, at once when they compress worse (up by at least 0.05), slowly when better
/// (down by at most 0.005 a batch). Java keeps one per topic and codec for the whole JVM; here
/// each producer keeps its own (a producer has one codec).
#[derive(Clone, Copy, Debug, PartialEq)]
struct CompressionRatio(f32);

impl Default for CompressionRatio {
    fn default() -> Self {
        CompressionRatio(1.0)
    }
}

impl CompressionRatio {
    /// Java's `updateEstimation`, in `float`.
    fn observe(&mut self, observed: f32) {
        let current = self.0;
        if observed > current {
            self.0 = (current + 0.05).max(observed);
        } else if observed < current {
            self.0 = (current - 0.005).max(observed);
        }
    }
}

/// A built batch's compression ratio as Java's `MemoryRecordsBuilder` computes it: the whole
/// batch, header included, over its records uncompressed.
pub(crate) fn observed_ratio(built: usize, uncompressed: usize) -> f32 {
    built as f32 / uncompressed as f32
}

/// The partition a topic's unkeyed records go to, and the bytes that went there (Java's
/// `StickyPartitionInfo`).
#[derive(Clone, Copy)]
struct Sticky {
    partition: i32,
    produced: usize,
}

/// A magic-2 batch's header: part of a batch's estimated size, so also of the bytes a new batch
/// gives its partition (the sticky partitioner's count).
pub(crate) const BATCH_OVERHEAD: usize = 61;

/// A batch drained for a broker.
pub(crate) struct ReadyBatch {
    pub(crate) topic: Arc<str>,
    pub(crate) partition: i32,
    pub(crate) batch: Batch,
}

/// What one drain found.
#[derive(Default)]
pub(crate) struct Drained {
    /// The batches to send, by leader (in node order: a seeded run replays).
    pub(crate) by_node: BTreeMap<i32, Vec<ReadyBatch>>,
    /// When to look again (a linger or retry backoff ending).
    pub(crate) next: Option<Instant>,
    /// Some ready batch's partition has no known leader.
    pub(crate) missing_leader: bool,
    /// Batches wait for an idempotent producer's id.
    pub(crate) needs_producer_id: bool,
    /// The error of a batch that failed here (past the delivery timeout), if any.
    pub(crate) failed: Option<Error>,
}

/// The partitions' queues and the records in them.
#[derive(Default)]
pub(crate) struct Accumulator {
    topics: BTreeMap<Arc<str>, TopicQueues>,
    /// Records queued or in flight.
    pub(crate) pending: usize,
    /// `flush` calls waiting: everything goes now.
    pub(crate) flushing: usize,
    pub(crate) closed: bool,
    /// The most batches of one partition in flight at once.
    pub(crate) max_in_flight: usize,
    /// Produce requests drained for each broker and not yet answered: at most `max_in_flight`
    /// (Java's `max.in.flight.requests.per.connection`), so that batches ready meanwhile wait
    /// and go together in the next request instead of one small request each.
    requests: HashMap<i32, usize>,
    /// Counts the records failed (`record-error-total`): every failure comes through `fail`.
    pub(crate) record_errors: Option<crate::metrics::Count>,
    /// Completed batches' callbacks, called when the producer's lock is released.
    pub(crate) fired: Vec<Fired>,
    /// The sticky partitions' choices (seeded with the client).
    pub(crate) random: Random,
}

/// The next sticky partition for a topic: by its load statistics, else among the partitions
/// with a leader, else among all (collecting nothing when every partition has a leader).
fn pick_sticky(load: Option<&LoadStats>, topic: &TopicInfo, random: &Random) -> i32 {
    let random = random.positive();
    if load.is_none() && topic.partitions.iter().any(|p| p.leader < 0) {
        let led: Vec<i32> = topic.partitions.iter().filter(|p| p.leader >= 0).map(|p| p.index).collect();
        return next_partition(random, None, &led, topic.partitions.len());
    }
    next_partition(random, load, &[], topic.partitions.len())
}

impl Accumulator {
    pub(crate) fn queue(&mut self, topic: &str, partition: i32) -> Option<&mut Queue> {
        self.topics.get_mut(topic)?.partitions.get_mut(usize::try_from(partition).ok()?)
    }

    /// Adds a record to its partition's open batch (or a new one), to `partition` or where the
    /// partitioner puts it; `memory` is its [`size_upper_bound`]. Returns its delivery (none
    /// with a callback), its partition and whether the sender should look now (a batch filled
    /// or opened).
    #[allow(clippy::too_many_arguments)] // what one record brings: its topic, place, memory, callback
    pub(crate) fn append(
        &mut self,
        cfg: &ProducerConfig,
        name: &Arc<str>,
        topic: &TopicInfo,
        partition: Option<i32>,
        mut r: Record,
        memory: OwnedSemaphorePermit,
        callback: Option<Callback>,
    ) -> Result<(Option<Delivery>, i32, bool)> {
        let n = topic.partitions.len();
        let timestamp = r.timestamp;
        let queues = self.topics.entry(name.clone()).or_default();
        let (partition, sticky) = match (partition, &r.key) {
            (Some(p), _) if p >= 0 && (p as usize) < n => (p, false),
            (Some(p), _) => return Err(Error::unknown(name, Some(p), format!("the topic has {n} partitions"))),
            (None, Some(key)) if !cfg.partitioner_ignore_keys => (partition_for_key(key, n), false),
            (None, _) => match queues.sticky {
                Some(s) if (s.partition as usize) < n => (s.partition, true),
                _ => {
                    let partition = pick_sticky(queues.load.as_ref(), topic, &self.random);
                    queues.sticky = Some(Sticky { partition, produced: 0 });
                    (partition, true)
                }
            },
        };
        if queues.partitions.len() < n {
            let from = queues.partitions.len();
            queues.partitions.resize_with(n, Queue::default);
            for (i, q) in queues.partitions.iter_mut().enumerate().skip(from) {
                q.sequences.label(name, i as i32);
            }
        }
        let Some(queue) = queues.partitions.get_mut(partition as usize) else {
            return Err(Error::unknown(name, Some(partition), format!("the topic has {n} partitions")));
        };
        queue.used = true;
        // The record's encoded size where it would go in the open batch (Java's `hasRoomFor`).
        let joins = queue.batches.back().and_then(|b| {
            let base = b.records.first().map_or(timestamp, |f| f.timestamp);
            let encoded = r.size_in_batch(b.records.len() as i32, timestamp.wrapping_sub(base));
            b.has_room(cfg, encoded).then_some(encoded)
        });
        let (delivery, wake, appended) = match queue.batches.back_mut().zip(joins) {
            Some((b, encoded)) => {
                let before = b.estimated_size();
                let index = b.records.len();
                r.offset = index as i64;
                b.records.push(r);
                b.uncompressed += encoded;
                b.memory.merge(memory);
                let appended = b.estimated_size().saturating_sub(before);
                (b.done.report(index as u32, timestamp, callback), b.is_full(cfg), appended)
            }
            None => {
                let ordinal = queue.next_ordinal;
                queue.next_ordinal += 1;
                // Room for a few records of this size, growing by doubling: a handful of
                // allocations per full batch, and little memory for partitions (many, keyed)
                // whose batches stay small; buffer_memory does not count this.
                let size = memory.num_permits().max(1);
                let mut records = Vec::with_capacity((cfg.batch_size / size).clamp(1, 64));
                let uncompressed = r.size_in_batch(0, 0);
                records.push(r);
                let mut done = Completer::new(name.clone(), partition);
                let delivery = done.report(0, timestamp, callback);
                let batch = Batch {
                    records,
                    uncompressed,
                    ratio: (cfg.compression != Compression::None).then_some(queues.ratio.0),
                    memory,
                    done,
                    created: Instant::now(),
                    attempts: 0,
                    sequence: None,
                    retry_at: None,
                    last_error: None,
                    uncertain: false,
                    ordinal,
                };
                let appended = batch.estimated_size();
                queue.batches.push_back(batch);
                // A new batch: the sender may be asleep past its linger deadline, wake it to
                // schedule one (it sleeps up to 500 ms when nothing is queued).
                (delivery, true, appended)
            }
        };
        if sticky {
            // Java's `updatePartitionInfo`: switch once `batch.size` bytes went to the partition
            // and its last batch is full (so that no short batch is left behind to linger), or
            // at twice that whatever the batch. What went there is what the batch's estimated
            // size grew by (all of it, header included, for a new batch).
            let last_full = queue.batches.back().is_some_and(|b| b.is_full(cfg));
            if let Some(s) = queues.sticky.as_mut() {
                s.produced += appended;
                if (s.produced >= cfg.batch_size && last_full) || s.produced >= 2 * cfg.batch_size {
                    let partition = pick_sticky(queues.load.as_ref(), topic, &self.random);
                    queues.sticky = Some(Sticky { partition, produced: 0 });
                }
            }
        }
        self.pending += 1;
        Ok((delivery, partition, wake))
    }

    /// Resolves a batch's records and releases them; their callbacks are called once the
    /// producer's lock is released (`fired`).
    pub(crate) fn complete(&mut self, batch: Batch, outcome: Outcome) {
        self.pending -= batch.records.len();
        if let Some(fired) = batch.done.complete(outcome) {
            self.fired.push(fired);
        }
    }

    /// Fails a batch's records and releases them.
    pub(crate) fn fail(&mut self, batch: Batch, error: Error) {
        if let Some(c) = &self.record_errors {
            c.increment(batch.records.len() as u64);
        }
        self.complete(batch, Err(error));
    }

    /// Fails every queued batch (nothing can be sent idempotently, or the transaction is
    /// aborted); returns whether one of them had been sent (its sequence is used).
    pub(crate) fn fail_all(&mut self, error: &Error) -> bool {
        let batches: Vec<Batch> = self.topics.values_mut().flat_map(|t| t.partitions.iter_mut()).flat_map(|q| q.batches.drain(..)).collect();
        let sent = batches.iter().any(|b| b.sequence.is_some());
        for b in batches {
            self.fail(b, error.clone());
        }
        sent
    }

    /// Whether batches are queued (not in flight).
    pub(crate) fn has_queued(&self) -> bool {
        self.topics.values().flat_map(|t| &t.partitions).any(|q| !q.batches.is_empty())
    }

    /// Every partition's sequences start over (a new producer id or epoch from the
    /// transaction coordinator, with nothing queued or in flight).
    pub(crate) fn reset_sequences(&mut self) {
        for (topic, t) in self.topics.iter_mut() {
            for (i, q) in t.partitions.iter_mut().enumerate() {
                q.sequences = Sequences::default();
                q.sequences.label(topic, i as i32);
            }
        }
    }

    /// A batch of `topic` was built with this compression ratio (`observed_ratio`): later
    /// batches of the topic expect it (Java updates its estimate as each batch is closed).
    pub(crate) fn observe_compression(&mut self, topic: &str, observed: f32) {
        if let Some(t) = self.topics.get_mut(topic) {
            t.ratio.observe(observed);
        }
    }

    /// A response came for a batch of `topic`'s `partition`.
    pub(crate) fn answered(&mut self, topic: &str, partition: i32) {
        if let Some(q) = self.queue(topic, partition) {
            q.in_flight = q.in_flight.saturating_sub(1);
        }
    }

    /// A Produce request drained for `node` was answered (or failed).
    pub(crate) fn request_answered(&mut self, node: i32) {
        if let Some(n) = self.requests.get_mut(&node) {
            *n = n.saturating_sub(1);
        }
    }

    /// Puts a batch to be retried (or a half of one split) back in its place, before the
    /// partition's later batches.
    pub(crate) fn requeue(&mut self, topic: &str, partition: i32, batch: Batch) {
        match self.queue(topic, partition) {
            Some(q) => {
                let at = q.batches.iter().position(|b| b.place() > batch.place()).unwrap_or(q.batches.len());
                q.batches.insert(at, batch);
            }
            None => self.fail(batch, Error::Producer(ProducerError::Closed)),
        }
    }

    /// Takes the batches ready to go, by leader. With idempotence, resolves expired
    /// partitions' sequences and bumps the epoch first when due, and gives each batch its
    /// sequence as it leaves. Batches past the delivery timeout fail here.
    /// A transaction's batches go only once their partition is in it (`txn`).
    pub(crate) fn drain(
        &mut self,
        cfg: &ProducerConfig,
        metadata: &ClusterMetadata,
        idem: &mut Idempotence,
        txn: Option<&Transactions>,
        now: Instant,
    ) -> Drained {
        let urgent = self.flushing > 0 || self.closed;
        let mut out = Drained::default();
        let mut expired = Vec::new();
        let mut unknown = Vec::new();
        let mut lingering = Vec::new();
        let limit = if cfg.idempotence { cfg.max_in_flight } else { 1 };
        if cfg.idempotence {
            idem.resolve(self.topics.values_mut().flat_map(|t| t.partitions.iter_mut()).map(|q| {
                let idle = q.in_flight == 0 && !q.batches.iter().any(|b| q.sequences.owns(b.sequence));
                (&mut q.sequences, idle)
            }));
        }
        let producer_id = idem.producer_id;
        for (topic, queues) in self.topics.iter_mut() {
            queues.load = if cfg.partitioner_adaptive { load_stats(topic, queues, metadata) } else { None };
            for (partition, queue) in queues.partitions.iter_mut().enumerate() {
                let partition = partition as i32;
                // Batches past the delivery timeout fail, in flight or not (the in-flight one
                // fails when its response comes). One that was sent may have been written: its
                // partition's sequences are unresolved until the later ones are answered.
                while queue.batches.front().is_some_and(|b| b.expired(cfg, now)) {
                    if let Some(b) = queue.batches.pop_front() {
                        queue.sequences.expired(b.sequence, b.records.len());
                        expired.push((topic.clone(), partition, b));
                    }
                }
                // A batch that may have been written keeps its sequence for good: once its
                // partition's sequences start over it fails with its outcome unknown, never
                // to go again under new ones (rule 2 of `idempotence`).
                while queue
                    .batches
                    .front()
                    .is_some_and(|b| b.uncertain && b.sequence.is_some() && !queue.sequences.owns(b.sequence) && !crate::mutation::resend_uncertain())
                {
                    if let Some(b) = queue.batches.pop_front() {
                        tracing::trace!(%topic, partition, sequence = ?b.sequence, records = b.records.len(), "sequences started over: its outcome is unknown");
                        unknown.push((topic.clone(), partition, b));
                    }
                }
                if queue.in_flight >= limit {
                    continue;
                }
                let Some(front) = queue.batches.front() else {
                    continue;
                };
                if txn.is_some_and(|t| !t.can_send(topic, partition)) {
                    // Waits for AddPartitionsToTxn (the sender is woken when it is answered).
                    continue;
                }
                // A resent batch, or one sent under a new producer id or epoch, waits until
                // nothing of its partition is in flight: the broker must get the partition's
                // sequences in order. So does any batch until one is acknowledged under this
                // producer id: a broker without state for the producer takes any first
                // sequence (KIP-360), so if the first request were lost with its connection
                // and the second went on a new one, the second would be written and the first
                // refused.
                let seq = &queue.sequences;
                if queue.in_flight > 0 && (front.attempts > 0 || seq.flight_pid != producer_id || seq.acked_pid != producer_id) {
                    continue;
                }
                // A new batch waits while the partition's sequences are unresolved.
                if seq.unresolved.is_some() && !seq.owns(front.sequence) {
                    continue;
                }
                let due = front.created + cfg.linger;
                let ready = urgent || queue.batches.len() > 1 || front.is_full(cfg) || now >= due || front.attempts > 0;
                if let Some(RetryAt { earliest, at }) = front.retry_at.filter(|r| now < r.at) {
                    out.next = Some(out.next.map_or(at, |n: Instant| n.min(at)));
                    if now >= earliest {
                        if let Some(leader) = metadata.leader(topic, partition) {
                            lingering.push((topic.clone(), partition as usize, leader));
                        }
                    }
                    continue;
                }
                if !ready {
                    // Lingering: it goes now if its leader has a request to send anyway (below).
                    out.next = Some(out.next.map_or(due, |n: Instant| n.min(due)));
                    if let Some(leader) = metadata.leader(topic, partition) {
                        lingering.push((topic.clone(), partition as usize, leader));
                    }
                    continue;
                }
                let Some(leader) = metadata.leader(topic, partition) else {
                    out.missing_leader = true;
                    continue;
                };
                // The broker has as many requests in flight as it may: the batch goes in a later
                // request (the sender is woken when one is answered).
                if !out.by_node.contains_key(&leader) && self.requests.get(&leader).is_some_and(|n| *n >= cfg.max_in_flight) {
                    continue;
                }
                if cfg.idempotence && producer_id.is_none() {
                    continue;
                }
                if let Some(batch) = queue.take(cfg, producer_id, limit, urgent, now, &mut out.next) {
                    self.max_in_flight = self.max_in_flight.max(queue.in_flight);
                    out.by_node.entry(leader).or_default().push(ReadyBatch { topic: topic.clone(), partition, batch });
                }
            }
        }
        // As Java's `drainBatchesForOneNode`: a broker with a request to send gets the first
        // batch of each of its partitions, lingering (or a retry past its backoff's floor) or
        // not, so that a request carries what there is rather than leaving the rest for requests
        // of their own (fewer, fuller requests).
        for (topic, partition, leader) in lingering {
            let Some(batches) = out.by_node.get_mut(&leader) else {
                continue;
            };
            let Some(queue) = self.topics.get_mut(&topic).and_then(|t| t.partitions.get_mut(partition)) else {
                continue;
            };
            if let Some(batch) = queue.take(cfg, producer_id, limit, urgent, now, &mut out.next) {
                self.max_in_flight = self.max_in_flight.max(queue.in_flight);
                batches.push(ReadyBatch { topic, partition: partition as i32, batch });
            }
        }
        for node in out.by_node.keys() {
            *self.requests.entry(*node).or_default() += 1;
        }
        out.needs_producer_id = cfg.idempotence && producer_id.is_none() && self.topics.values().flat_map(|t| &t.partitions).any(|q| !q.batches.is_empty());
        for (topic, partition, mut b) in expired {
            let e = delivery_timeout(cfg, &topic, partition, b.records.len(), b.last_error.take());
            out.failed.get_or_insert_with(|| e.clone());
            self.fail(b, e);
        }
        for (topic, partition, mut b) in unknown {
            let e = Error::Producer(ProducerError::OutcomeUnknown {
                topic: topic.to_string(),
                partition,
                records: b.records.len(),
                last_error: b.last_error.take().map(Box::new),
            });
            out.failed.get_or_insert_with(|| e.clone());
            self.fail(b, e);
        }
        out
    }
}

/// Adaptive partitioning's statistics for a topic (Java's `RecordAccumulator.ready` feeding
/// `updatePartitionLoadStats`): the queued batches of each partition with a leader, once every
/// partition has had records (Java has no queue for the others yet, and no statistics).
fn load_stats(topic: &str, queues: &TopicQueues, metadata: &ClusterMetadata) -> Option<LoadStats> {
    let info = metadata.topics.get(topic)?;
    let all = info.partitions.len();
    if queues.partitions.len() < all || !queues.partitions.iter().all(|q| q.used) {
        return None;
    }
    let sizes: Vec<(i32, usize)> =
        info.partitions.iter().filter(|p| p.leader >= 0).map(|p| (p.index, queues.partitions.get(p.index as usize).map_or(0, |q| q.batches.len()))).collect();
    LoadStats::new(&sizes, all)
}

/// The error for records that outlived the delivery timeout, with the last attempt's error.
pub(crate) fn delivery_timeout(cfg: &ProducerConfig, topic: &str, partition: i32, records: usize, last_error: Option<Error>) -> Error {
    Error::Producer(ProducerError::DeliveryTimeout {
        topic: topic.to_owned(),
        partition,
        records,
        timeout: cfg.delivery_timeout,
        last_error: last_error.map(Box::new),
    })
}

#[cfg(test)]
#[path = "../../tests/common/java.rs"]
mod java;

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::process::{Command, Stdio};

    use kwire::ErrorCode;
    use tokio::sync::Semaphore;

    use super::*;
    use crate::cluster::PartitionInfo;

    /// Java's own `ProducerBatch` filled with the records on stdin; each batch is closed (its
    /// compression ratio observed) just after the next one is opened, as the test drives the
    /// accumulator. Prints, per batch: its records, the ratio it was built with and the
    /// topic's estimate after it (float bits).
    const JAVA: &str = r#"
import org.apache.kafka.clients.producer.internals.ProducerBatch;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.*;
import java.io.*;
import java.nio.ByteBuffer;
import java.util.HexFormat;
public class BatchFill {
    static String topic;
    static Compression compression;
    static ProducerBatch open;
    static MemoryRecordsBuilder builder;
    static int count;
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        int batchSize = 0;
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.split(" ");
            if (f[0].equals("case")) {
                close();
                open = null;
                topic = f[1];
                batchSize = Integer.parseInt(f[2]);
                compression = Compression.of(f[3]).build();
                System.out.println("case " + topic);
                continue;
            }
            byte[] key = f[0].equals("-") ? null : HexFormat.of().parseHex(f[0]);
            byte[] value = HexFormat.of().parseHex(f[1]);
            long ts = Long.parseLong(f[2]);
            if (open != null && open.tryAppend(ts, key, value, new Header[0], null, 0) != null) {
                count++;
                continue;
            }
            MemoryRecordsBuilder nextBuilder = MemoryRecords.builder(ByteBuffer.allocate(batchSize), compression, TimestampType.CREATE_TIME, 0L);
            ProducerBatch next = new ProducerBatch(new TopicPartition(topic, 0), nextBuilder, 0);
            next.tryAppend(ts, key, value, new Header[0], null, 0);
            close();
            open = next;
            builder = nextBuilder;
            count = 1;
        }
        close();
    }
    static void close() {
        if (open == null) return;
        open.close();
        float estimate = CompressionRatioEstimator.estimation(topic, compression.type());
        System.out.println(count + " " + Float.floatToIntBits((float) builder.compressionRatio()) + " " + Float.floatToIntBits(estimate));
    }
}
"#;

    /// A record's key, value and timestamp.
    type Input = (Option<Vec<u8>>, Vec<u8>, i64);

    /// Records of every size class and compressibility, so that batches fill at different
    /// counts and the estimated ratio moves both ways.
    fn records() -> Vec<Input> {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let mut out = Vec::new();
        let mut ts = 1_700_000_000_000i64;
        for i in 0..1500 {
            // Phases of repetitive and of random values: the ratio falls, then rises.
            let random = (i / 250) % 2 == 1;
            let len = [3, 40, 300, 2000][next(4) as usize] + next(50) as usize;
            let value: Vec<u8> = (0..len).map(|j| if random { next(256) as u8 } else { b"abcd"[j % 4] }).collect();
            let key = (next(3) != 0).then(|| (0..next(20)).map(|_| next(256) as u8).collect());
            ts += next(3) as i64 * [1, 300, 100_000][next(3) as usize];
            out.push((key, value, ts));
        }
        out
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Fills batches of one partition as the producer does and returns, per batch, its records
    /// and the topic's estimated ratio after it; each batch's ratio as built is Java's
    /// (`observed`: the codecs' outputs differ byte for byte, the estimate is what is checked).
    fn fill(topic: &str, batch_size: usize, compression: Compression, records: &[Input], observed: &[f32]) -> Vec<(usize, u32)> {
        let cfg = ProducerConfig { batch_size, compression, ..Default::default() };
        let name: Arc<str> = topic.into();
        let partition = PartitionInfo { index: 0, leader: 1, leader_epoch: 0, replicas: vec![1], isr: vec![1], error: ErrorCode::NONE };
        let info = TopicInfo { name: topic.into(), id: kwire::Uuid::ZERO, internal: false, partitions: vec![partition] };
        let memory = Arc::new(Semaphore::new(Semaphore::MAX_PERMITS));
        let mut acc = Accumulator::default();
        let mut out = Vec::new();
        let close = |acc: &mut Accumulator, out: &mut Vec<(usize, u32)>| {
            let q = acc.queue(topic, 0).expect("the partition's queue");
            let b = q.batches.pop_front().expect("a batch to close");
            if let Some(&ratio) = observed.get(out.len()) {
                acc.observe_compression(topic, ratio);
            }
            let estimate = acc.topics.get(topic).map_or(0, |t| t.ratio.0.to_bits());
            out.push((b.records.len(), estimate));
        };
        for (key, value, ts) in records {
            let size = value.len() + key.as_ref().map_or(0, Vec::len) + 24;
            let permit = memory.clone().try_acquire_many_owned(size as u32).expect("memory");
            let record = Record::new(0, *ts, key.clone().map(Bytes::from), Some(Bytes::from(value.clone())));
            acc.append(&cfg, &name, &info, Some(0), record, permit, None).expect("appended");
            if acc.queue(topic, 0).is_some_and(|q| q.batches.len() > 1) {
                close(&mut acc, &mut out);
            }
        }
        close(&mut acc, &mut out);
        out
    }

    /// Retries that failed together go again together, as Java's drain (which draws the
    /// backoff's jitter at every check) sends them: once one partition's retry is due, the
    /// others past their backoff's floor join its request; one whose floor is still ahead waits.
    #[test]
    fn retries_past_their_backoffs_floor_join_a_request_their_broker_sends() {
        let cfg = ProducerConfig { linger: Duration::ZERO, idempotence: false, ..Default::default() };
        let name: Arc<str> = "t".into();
        let partitions =
            (0..3).map(|index| PartitionInfo { index, leader: 1, leader_epoch: 0, replicas: vec![1], isr: vec![1], error: ErrorCode::NONE }).collect();
        let info = Arc::new(TopicInfo { name: "t".into(), id: kwire::Uuid::ZERO, internal: false, partitions });
        let mut metadata = ClusterMetadata::default();
        metadata.topics.insert("t".into(), info.clone());
        let memory = Arc::new(Semaphore::new(Semaphore::MAX_PERMITS));
        let mut acc = Accumulator::default();
        for p in 0..3 {
            let permit = memory.clone().try_acquire_many_owned(40).expect("memory");
            let record = Record::new(0, 0, None, Some(Bytes::from_static(b"v")));
            acc.append(&cfg, &name, &info, Some(p), record, permit, None).expect("appended");
        }
        let mut idem = Idempotence::default();
        let start = Instant::now();
        let sent = acc.drain(&cfg, &metadata, &mut idem, None, start);
        let batches = sent.by_node.into_values().flatten().collect::<Vec<_>>();
        assert_eq!(batches.len(), 3, "one request, every partition");
        // The request fails; each partition's retry gets its own jittered backoff.
        acc.request_answered(1);
        let ms = |n: u64| start + Duration::from_millis(n);
        for (ReadyBatch { topic, partition, mut batch }, (earliest, at)) in batches.into_iter().zip([(40, 45), (40, 55), (52, 60)]) {
            acc.answered(&topic, partition);
            batch.attempts = 1;
            batch.retry_at = Some(RetryAt { earliest: ms(earliest), at: ms(at) });
            acc.requeue(&topic, partition, batch);
        }
        let partitions = |d: Drained| d.by_node.into_values().flatten().map(|b| b.partition).collect::<Vec<_>>();
        assert!(partitions(acc.drain(&cfg, &metadata, &mut idem, None, ms(44))).is_empty(), "none is due yet");
        assert_eq!(partitions(acc.drain(&cfg, &metadata, &mut idem, None, ms(45))), [0, 1], "the second joins the first's request");
        assert_eq!(partitions(acc.drain(&cfg, &metadata, &mut idem, None, ms(60))), [2], "the third, whose floor was ahead, goes at its own time");
    }

    /// Runs Java's single-file program `class` (its `source`) on kafka-clients' class path with
    /// `input` on its stdin; its stdout, or `None` (the test skipped) without Java or the jars.
    fn run_java(test: &str, class: &str, source: &str, input: &str) -> Option<String> {
        let Some(cp) = java::classpath() else {
            java::skip(test, "no kafka-clients 4.4.0 / slf4j-api jar in ~/.m2");
            return None;
        };
        let dir = std::env::temp_dir().join(format!("kw-{class}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let src = dir.join(format!("{class}.java"));
        std::fs::write(&src, source).expect("java source");
        let child = Command::new("java").arg("-cp").arg(&cp).arg(&src).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn();
        let Ok(mut child) = child else {
            java::skip(test, "no java on PATH");
            return None;
        };
        child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("write");
        let out = child.wait_with_output().expect("java ran");
        let _ = std::fs::remove_dir_all(&dir);
        assert!(out.status.success(), "java failed: {}", String::from_utf8_lossy(&out.stderr));
        Some(String::from_utf8(out.stdout).expect("utf-8"))
    }

    /// Java's `AbstractRecords.estimateSizeInBytesUpperBound` of each record on stdin: key,
    /// value, then header keys and values, in hex (`-` for null).
    const JAVA_SIZE: &str = r#"
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.internal.*;
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
public class SizeBound {
    static byte[] bytes(String s) { return s.equals("-") ? null : HexFormat.of().parseHex(s); }
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.split(",", -1);
            Header[] headers = new Header[(f.length - 2) / 2];
            for (int i = 0; i < headers.length; i++)
                headers[i] = new RecordHeader(new String(bytes(f[2 + 2 * i]), StandardCharsets.UTF_8), bytes(f[3 + 2 * i]));
            System.out.println(AbstractRecords.estimateSizeInBytesUpperBound((byte) 2, CompressionType.NONE, bytes(f[0]), bytes(f[1]), headers));
        }
    }
}
"#;

    /// The size a record is refused by and counted in buffer memory with is Java's, at the
    /// varint lengths' boundaries, with null and empty keys, values and header values, and
    /// header keys of several UTF-8 bytes a character.
    #[test]
    fn a_records_size_upper_bound_is_javas() {
        let lens = [None, Some(0), Some(1), Some(63), Some(64), Some(8191), Some(8192), Some(100_000)];
        let bytes = |n: Option<usize>| n.map(|n| Bytes::from(vec![b'k'; n]));
        let long = "h".repeat(70);
        let names = ["", "trace", "ключ", long.as_str()];
        let mut records = Vec::new();
        for (i, &key) in lens.iter().enumerate() {
            for &value in &lens {
                let mut r = Record::new(0, 0, bytes(key), bytes(value));
                for h in 0..i % 4 {
                    r = r.with_header(names[h], bytes(lens[(i + h) % lens.len()]));
                }
                records.push(r);
            }
        }
        let hex_or_null = |b: Option<&[u8]>| b.map_or("-".to_string(), hex);
        let mut input = String::new();
        for r in &records {
            let mut fields = vec![hex_or_null(r.key.as_deref()), hex_or_null(r.value.as_deref())];
            for h in r.headers.iter() {
                fields.push(hex(h.key.as_bytes()));
                fields.push(hex_or_null(h.value.as_deref()));
            }
            input += &fields.join(",");
            input.push('\n');
        }
        let Some(stdout) = run_java("a_records_size_upper_bound_is_javas", "SizeBound", JAVA_SIZE, &input) else { return };
        let java: Vec<usize> = stdout.lines().map(|l| l.parse().expect("a size")).collect();
        let ours: Vec<usize> = records.iter().map(|r| size_upper_bound(r) + BATCH_OVERHEAD).collect();
        assert_eq!(ours, java, "each record's size upper bound, in a batch of its own");
    }

    /// Batches fill where Java's `ProducerBatch` fills them (its `MemoryRecordsBuilder`'s
    /// record sizes, header and compressed-size estimate), and the topic's compression ratio
    /// estimate follows Java's `CompressionRatioEstimator` to the bit.
    #[test]
    fn batches_fill_and_estimate_compression_as_javas_producer_batch() {
        let records = records();
        // gzip is in the JDK: no codec jar needed, and the codec only sets the ratios observed.
        let cases = [("plain", 16384, "none"), ("small", 5000, "gzip"), ("large", 65536, "gzip")];
        let mut input = String::new();
        for (topic, batch_size, codec) in cases {
            input += &format!("case {topic} {batch_size} {codec}\n");
            for (key, value, ts) in &records {
                input += &format!("{} {} {ts}\n", key.as_deref().map_or("-".into(), hex), hex(value));
            }
        }
        let test = "batches_fill_and_estimate_compression_as_javas_producer_batch";
        let Some(stdout) = run_java(test, "BatchFill", JAVA, &input) else { return };
        let mut java: Vec<Vec<(usize, u32, u32)>> = Vec::new();
        for line in stdout.lines() {
            if line.starts_with("case ") {
                java.push(Vec::new());
                continue;
            }
            let f: Vec<u64> = line.split(' ').map(|x| x.parse().expect("a number")).collect();
            java.last_mut().expect("a case first").push((f[0] as usize, f[1] as u32, f[2] as u32));
        }
        assert_eq!(java.len(), cases.len());
        for ((topic, batch_size, codec), java) in cases.iter().zip(&java) {
            let compression = if *codec == "none" { Compression::None } else { Compression::Gzip };
            let observed: Vec<f32> = java.iter().map(|(_, ratio, _)| f32::from_bits(*ratio)).collect();
            let ours = fill(topic, *batch_size, compression, &records, &observed);
            let theirs: Vec<(usize, u32)> = java.iter().map(|(n, _, estimate)| (*n, *estimate)).collect();
            assert_eq!(ours, theirs, "{topic}: batch_size {batch_size}, {codec}: (records, estimate bits) per batch");
            let counts: std::collections::BTreeSet<usize> = ours.iter().map(|(n, _)| *n).collect();
            assert!(ours.len() > 10 && counts.len() > 5, "{topic}: batches of many sizes: {ours:?}");
            if compression != Compression::None {
                // Both rules: down by 0.005 a batch, up by at least 0.05 at once.
                let estimates: Vec<f32> = ours.iter().map(|(_, e)| f32::from_bits(*e)).collect();
                let falls = estimates.windows(2).filter(|w| w[1] < w[0]).count();
                let jumps = estimates.windows(2).filter(|w| w[1] >= w[0] + 0.05).count();
                assert!(falls >= 10 && jumps >= 2, "{topic}: the estimate falls and rises: {estimates:?}");
            }
        }
    }

    /// Topic `t`: partitions 0 and 1 led by broker 1, partition 2 by broker 2.
    fn two_brokers() -> (ClusterMetadata, Arc<TopicInfo>) {
        let p = |index, leader| crate::cluster::PartitionInfo {
            index,
            leader,
            leader_epoch: 0,
            replicas: vec![leader],
            isr: vec![leader],
            error: kwire::ErrorCode::NONE,
        };
        let topic = Arc::new(TopicInfo { name: "t".into(), id: Default::default(), internal: false, partitions: vec![p(0, 1), p(1, 1), p(2, 2)] });
        let mut metadata = ClusterMetadata::default();
        metadata.topics.insert("t".into(), topic.clone());
        (metadata, topic)
    }

    #[tokio::test]
    async fn a_broker_with_a_ready_batch_also_takes_its_lingering_ones() {
        let cfg = ProducerConfig { idempotence: false, linger: Duration::from_secs(60), batch_size: 200, ..Default::default() };
        let (metadata, topic) = two_brokers();
        let memory = Arc::new(tokio::sync::Semaphore::new(1 << 20));
        let mut acc = Accumulator::default();
        let name: Arc<str> = "t".into();
        let add = |acc: &mut Accumulator, partition: i32, size: usize| {
            let record = Record::new(0, 0, None, Some(Bytes::from(vec![b'x'; size])));
            acc.append(&cfg, &name, &topic, Some(partition), record, memory.clone().try_acquire_many_owned(size as u32).unwrap(), None).unwrap();
        };
        // Partitions 1 and 2 linger; nothing is ready, nothing goes.
        add(&mut acc, 1, 10);
        add(&mut acc, 2, 10);
        let mut idem = Idempotence::default();
        let now = Instant::now();
        assert!(acc.drain(&cfg, &metadata, &mut idem, None, now).by_node.is_empty());
        // Partition 0 fills a batch: broker 1's request takes partition 1's lingering batch too,
        // broker 2 (only lingering) sends nothing.
        add(&mut acc, 0, 150);
        add(&mut acc, 0, 150);
        let drained = acc.drain(&cfg, &metadata, &mut idem, None, now);
        let sent: Vec<(i32, Vec<i32>)> = drained.by_node.iter().map(|(node, b)| (*node, b.iter().map(|b| b.partition).collect())).collect();
        assert_eq!(sent, vec![(1, vec![0, 1])]);
    }
}
