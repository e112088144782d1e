//! The record accumulator (Java's `RecordAccumulator`): per-partition queues of batches that
//! records join until a batch is full or its linger is up, and the drain that takes the ready
//! ones, by leader, for the senders.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kwire::runtime::records::Record;
use kwire::{ByteString, Bytes};
use tokio::sync::OwnedSemaphorePermit;

use super::delivery::{Completer, Delivery, Outcome};
use super::idempotence::{Idempotence, Sequenced, Sequences};
use super::transaction::Transactions;
use super::ProducerConfig;
use crate::cluster::{ClusterMetadata, TopicInfo};
use crate::error::{Error, ProducerError, Result};
use crate::partitioner::{next_partition, partition_for_key, random_positive, LoadStats};

/// Records of one partition sent (and resent) together.
pub(crate) struct Batch {
    /// The records, their offsets their indexes; encoded when the batch is sent.
    pub(crate) records: Vec<Record>,
    bytes: usize,
    /// The buffer memory of all its records (one permit, merged as records join).
    memory: OwnedSemaphorePermit,
    done: Completer,
    created: Instant,
    pub(crate) attempts: u32,
    /// The producer id, epoch and base sequence this batch was last given (kept for resends
    /// unless its partition's sequences are rewritten).
    pub(crate) sequence: Option<Sequenced>,
    pub(crate) retry_at: Option<Instant>,
    pub(crate) last_error: Option<Error>,
    /// Its place among its partition's batches (they are sent, and resent, in this order).
    ordinal: u64,
}

impl Batch {
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
    pub(crate) fn split(mut self) -> std::result::Result<(Batch, Batch), Batch> {
        if self.records.len() < 2 {
            return Err(self);
        }
        let sizes: Vec<usize> = self.records.iter().map(record_size).collect();
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
            return Err(self);
        };
        let mut records = self.records.split_off(at);
        for (i, r) in records.iter_mut().enumerate() {
            r.offset = i as i64;
        }
        let done = self.done.split_off(at as u32);
        let sequence = self.sequence.map(|(pid, epoch, base)| (pid, epoch, base.wrapping_add(at as i32) & i32::MAX));
        let tail = Batch {
            records,
            bytes: total - head,
            memory,
            done,
            created: self.created,
            attempts: self.attempts.max(1),
            sequence,
            retry_at: None,
            last_error: self.last_error.clone(),
            ordinal: self.ordinal,
        };
        self.bytes = head;
        self.retry_at = None;
        // Sent already: neither half takes new records, and each waits, as a resend does, until
        // nothing of its partition is in flight.
        self.attempts = self.attempts.max(1);
        Ok((self, tail))
    }
}

/// A record's size as the producer counts it (`ProducerRecord`'s, for buffer memory).
fn record_size(r: &Record) -> usize {
    let headers: usize = r.headers.iter().map(|h| h.key.len() + h.value.as_ref().map_or(0, Bytes::len) + 10).sum();
    r.key.as_ref().map_or(0, Bytes::len) + r.value.as_ref().map_or(0, Bytes::len) + headers + 24
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

/// One topic's partitions (indexed by partition), its sticky partition and load statistics.
#[derive(Default)]
struct TopicQueues {
    sticky: Option<Sticky>,
    /// Adaptive partitioning's statistics, as the last drain found the queues.
    load: Option<LoadStats>,
    partitions: Vec<Queue>,
}

/// The partition a topic's unkeyed records go to, and the bytes that went there (Java's
/// `StickyPartitionInfo`).
#[derive(Clone, Copy)]
struct Sticky {
    partition: i32,
    produced: usize,
}

/// What a record adds to a new batch besides itself: the batch header (Java counts it in the
/// bytes a partition was given).
const BATCH_OVERHEAD: usize = 61;

/// A batch drained for a broker.
pub(crate) struct ReadyBatch {
    pub(crate) topic: Arc<str>,
    pub(crate) partition: i32,
    pub(crate) batch: Batch,
}

/// What one drain found.
#[derive(Default)]
pub(crate) struct Drained {
    /// The batches to send, by leader.
    pub(crate) by_node: HashMap<i32, Vec<ReadyBatch>>,
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
}

/// The next sticky partition for a topic: by its load statistics, else among the partitions
/// with a leader, else among all (collecting nothing when every partition has a leader).
fn pick_sticky(load: Option<&LoadStats>, topic: &TopicInfo) -> i32 {
    let random = random_positive();
    if load.is_none() && topic.partitions.iter().any(|p| p.leader < 0) {
        let led: Vec<i32> = topic.partitions.iter().filter(|p| p.leader >= 0).map(|p| p.index).collect();
        return next_partition(random, None, &led, topic.partitions.len());
    }
    next_partition(random, load, &[], topic.partitions.len())
}

/// A record as `send` hands it to the accumulator.
pub(crate) struct NewRecord {
    pub(crate) partition: Option<i32>,
    pub(crate) key: Option<Bytes>,
    pub(crate) value: Option<Bytes>,
    pub(crate) headers: Vec<(String, Option<Bytes>)>,
    pub(crate) timestamp: i64,
    /// Its approximate size, as buffer memory counts it.
    pub(crate) size: usize,
}

impl Accumulator {
    pub(crate) fn queue(&mut self, topic: &str, partition: i32) -> Option<&mut Queue> {
        self.topics.get_mut(topic)?.partitions.get_mut(usize::try_from(partition).ok()?)
    }

    /// Adds a record to its partition's open batch (or a new one); returns its delivery and
    /// whether the sender should look now (a batch filled or opened).
    pub(crate) fn append(
        &mut self,
        cfg: &ProducerConfig,
        name: &Arc<str>,
        topic: &TopicInfo,
        record: NewRecord,
        memory: OwnedSemaphorePermit,
    ) -> Result<(Delivery, bool)> {
        let n = topic.partitions.len();
        let NewRecord { partition, key, value, headers, timestamp, size } = record;
        let queues = self.topics.entry(name.clone()).or_default();
        let (partition, sticky) = match (partition, &key) {
            (Some(p), _) if p >= 0 && (p as usize) < n => (p, false),
            (Some(p), _) => return Err(Error::UnknownTopicOrPartition(format!("{name}-{p} (the topic has {n} partitions)"))),
            (None, Some(key)) if !cfg.partitioner_ignore_keys => (partition_for_key(key, n), false),
            (None, _) => match queues.sticky {
                Some(s) if (s.partition as usize) < n => (s.partition, true),
                _ => {
                    let partition = pick_sticky(queues.load.as_ref(), topic);
                    queues.sticky = Some(Sticky { partition, produced: 0 });
                    (partition, true)
                }
            },
        };
        if queues.partitions.len() < n {
            queues.partitions.resize_with(n, Queue::default);
        }
        let Some(queue) = queues.partitions.get_mut(partition as usize) else {
            return Err(Error::UnknownTopicOrPartition(format!("{name}-{partition} (the topic has {n} partitions)")));
        };
        let mut r = Record::new(0, timestamp, key, value);
        for (k, v) in headers {
            r = r.with_header(ByteString::from(k), v);
        }
        queue.used = true;
        let appended_to = queue.batches.back().filter(|b| b.attempts == 0 && b.bytes + size <= cfg.batch_size).is_some();
        let (delivery, wake) = match queue.batches.back_mut().filter(|b| b.attempts == 0 && b.bytes + size <= cfg.batch_size) {
            Some(b) => {
                let index = b.records.len();
                r.offset = index as i64;
                b.records.push(r);
                b.bytes += size;
                b.memory.merge(memory);
                (b.done.delivery(index as u32, timestamp), b.bytes >= cfg.batch_size)
            }
            None => {
                let ordinal = queue.next_ordinal;
                queue.next_ordinal += 1;
                // Room for a few records of this size, growing by doubling: a handful of
                // allocations per full batch, and little memory for partitions (many, keyed)
                // whose batches stay small; buffer_memory does not count this.
                let mut records = Vec::with_capacity((cfg.batch_size / size.max(1)).clamp(1, 64));
                records.push(r);
                let done = Completer::new(name.clone(), partition);
                let delivery = done.delivery(0, timestamp);
                queue.batches.push_back(Batch {
                    records,
                    bytes: size,
                    memory,
                    done,
                    created: Instant::now(),
                    attempts: 0,
                    sequence: None,
                    retry_at: None,
                    last_error: None,
                    ordinal,
                });
                // A new batch: the sender may be asleep past its linger deadline, wake it to
                // schedule one (it sleeps up to 500 ms when nothing is queued).
                (delivery, true)
            }
        };
        if sticky {
            // Java's `updatePartitionInfo`: switch once `batch.size` bytes went to the partition
            // and its last batch is full (so that no short batch is left behind to linger), or
            // at twice that whatever the batch.
            let last_full = queue.batches.back().is_some_and(|b| b.bytes >= cfg.batch_size);
            let appended = size + if appended_to { 0 } else { BATCH_OVERHEAD };
            if let Some(s) = queues.sticky.as_mut() {
                s.produced += appended;
                if (s.produced >= cfg.batch_size && last_full) || s.produced >= 2 * cfg.batch_size {
                    let partition = pick_sticky(queues.load.as_ref(), topic);
                    queues.sticky = Some(Sticky { partition, produced: 0 });
                }
            }
        }
        self.pending += 1;
        Ok((delivery, wake))
    }

    /// Resolves a batch's records and releases them.
    pub(crate) fn complete(&mut self, batch: Batch, outcome: Outcome) {
        self.pending -= batch.records.len();
        batch.done.complete(outcome);
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
        for q in self.topics.values_mut().flat_map(|t| t.partitions.iter_mut()) {
            q.sequences = Sequences::default();
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
                let ready = urgent || queue.batches.len() > 1 || front.bytes >= cfg.batch_size || now >= due || front.attempts > 0;
                let retry_ok = front.retry_at.map_or(true, |t| now >= t);
                let wake_at = if !retry_ok { front.retry_at } else if !ready { Some(due) } else { None };
                if let Some(t) = wake_at {
                    out.next = Some(out.next.map_or(t, |n: Instant| n.min(t)));
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
                let Some(mut batch) = queue.batches.pop_front() else {
                    continue;
                };
                if let Some(current) = producer_id.filter(|_| cfg.idempotence) {
                    batch.sequence = Some(queue.sequences.for_batch(batch.sequence, batch.records.len(), current));
                }
                queue.in_flight += 1;
                queue.sequences.flight_pid = if cfg.idempotence { batch.sequence.map(|(p, e, _)| (p, e)) } else { producer_id };
                self.max_in_flight = self.max_in_flight.max(queue.in_flight);
                // One batch per partition per request; another ready one goes in the next
                // request, at once.
                let more = queue.batches.front().is_some_and(|b| {
                    b.attempts == 0 && (urgent || queue.batches.len() > 1 || b.bytes >= cfg.batch_size || now >= b.created + cfg.linger)
                });
                if more && queue.in_flight < limit {
                    out.next = Some(now);
                }
                out.by_node.entry(leader).or_default().push(ReadyBatch { topic: topic.clone(), partition, batch });
            }
        }
        for node in out.by_node.keys() {
            *self.requests.entry(*node).or_default() += 1;
        }
        out.needs_producer_id =
            cfg.idempotence && producer_id.is_none() && self.topics.values().flat_map(|t| &t.partitions).any(|q| !q.batches.is_empty());
        for (topic, partition, mut b) in expired {
            let e = delivery_timeout(cfg, &topic, partition, b.records.len(), b.last_error.take());
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
    let sizes: Vec<(i32, usize)> = info
        .partitions
        .iter()
        .filter(|p| p.leader >= 0)
        .map(|p| (p.index, queues.partitions.get(p.index as usize).map_or(0, |q| q.batches.len())))
        .collect();
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
