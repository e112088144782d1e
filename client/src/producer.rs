//! The producer: Java's partitioning, per-partition batching (batch size, linger),
//! compression, acks 0/1/all, idempotence (InitProducerId, per-partition sequences), retries of
//! retriable errors with backoff inside a delivery timeout, bounded buffer memory, `flush` and
//! `close`.
//!
//! With idempotence up to `max_in_flight` (5) batches of a partition are in flight at once,
//! as Java allows: the broker writes a partition's batches only in sequence order, so one
//! refused behind an earlier failure (OUT_OF_ORDER_SEQUENCE_NUMBER) is resent after it, in
//! order, and a resent one already written is a duplicate, not a second copy. Without
//! idempotence one batch per partition is in flight, so retries cannot reorder. Partitions
//! and brokers proceed in parallel (Produce requests to one broker are pipelined on its
//! connection).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kwire::messages::{
    produce_request::{PartitionProduceData, TopicProduceData},
    InitProducerIdRequest, ProduceRequest,
};
use kwire::runtime::records::{Compression, Record, RecordBatchBuilder};
use kwire::{ByteString, Bytes, ErrorCode, ResponseKind};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, TryAcquireError};
use tracing::{debug, warn, Instrument};

use crate::cluster::{Client, TopicInfo};
use crate::error::{Error, ProducerError, Resource, Result};
use crate::retry::Backoff;
use crate::partitioner::{partition_for_key, pick_among};

/// Which acknowledgement the producer waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acks {
    /// None: the broker does not answer; offsets are reported as -1.
    None,
    /// The leader's write.
    Leader,
    /// Every in-sync replica's.
    All,
}

impl Acks {
    fn wire(self) -> i16 {
        match self {
            Acks::None => 0,
            Acks::Leader => 1,
            Acks::All => -1,
        }
    }
}

/// Producer settings, with Java's defaults.
#[derive(Debug, Clone)]
pub struct ProducerConfig {
    /// `acks` (default all).
    pub acks: Acks,
    /// `enable.idempotence` (default true; needs acks=all).
    pub idempotence: bool,
    /// `batch.size` in bytes (16384).
    pub batch_size: usize,
    /// `linger.ms` (5 ms).
    pub linger: Duration,
    /// `compression.type` (none).
    pub compression: Compression,
    /// `retries` (unbounded: the delivery timeout bounds them).
    pub retries: u32,
    /// `retry.backoff.ms` (100 ms), doubling per attempt up to `retry_backoff_max` (1 s).
    pub retry_backoff: Duration,
    /// `retry.backoff.max.ms`.
    pub retry_backoff_max: Duration,
    /// `delivery.timeout.ms` (120 s): from `send` to success or failure.
    pub delivery_timeout: Duration,
    /// `buffer.memory` in bytes (32 MiB): records waiting or in flight.
    pub buffer_memory: usize,
    /// `max.block.ms` (60 s): how long `send` waits for buffer memory and metadata.
    pub max_block: Duration,
    /// `max.request.size` (1 MiB): the largest record accepted.
    pub max_request_size: usize,
    /// The broker's `timeout_ms` for acks (30 s).
    pub ack_timeout: Duration,
    /// `max.in.flight.requests.per.connection` (5, at most 5 as the broker keeps the last 5
    /// batches' sequences): batches of one partition in flight at once, with idempotence;
    /// without it always 1.
    pub max_in_flight: usize,
}

impl Default for ProducerConfig {
    fn default() -> Self {
        ProducerConfig {
            acks: Acks::All,
            idempotence: true,
            batch_size: 16384,
            linger: Duration::from_millis(5),
            compression: Compression::None,
            retries: u32::MAX,
            retry_backoff: Duration::from_millis(100),
            retry_backoff_max: Duration::from_secs(1),
            delivery_timeout: Duration::from_secs(120),
            buffer_memory: 32 << 20,
            max_block: Duration::from_secs(60),
            max_request_size: 1 << 20,
            ack_timeout: Duration::from_secs(30),
            max_in_flight: 5,
        }
    }
}

/// What [`ProducerRecord::new`] takes as a topic: a `&str`, `String` or `&String` (copied into
/// a new `Arc<str>`), or an `Arc<str>` (shared as it is: the way to send many records to a
/// topic without an allocation per record for its name).
pub trait IntoTopic {
    /// The topic name as the record holds it.
    fn into_topic(self) -> Arc<str>;
}

impl IntoTopic for Arc<str> {
    fn into_topic(self) -> Arc<str> {
        self
    }
}

impl IntoTopic for &Arc<str> {
    fn into_topic(self) -> Arc<str> {
        self.clone()
    }
}

impl IntoTopic for &str {
    fn into_topic(self) -> Arc<str> {
        Arc::from(self)
    }
}

impl IntoTopic for String {
    fn into_topic(self) -> Arc<str> {
        Arc::from(self)
    }
}

impl IntoTopic for &String {
    fn into_topic(self) -> Arc<str> {
        Arc::from(self.as_str())
    }
}

/// A record to send.
#[derive(Debug, Clone, Default)]
pub struct ProducerRecord {
    /// The topic.
    pub topic: Arc<str>,
    /// A partition, or `None` to let the partitioner choose.
    pub partition: Option<i32>,
    /// The key.
    pub key: Option<Bytes>,
    /// The value.
    pub value: Option<Bytes>,
    /// Headers.
    pub headers: Vec<(String, Option<Bytes>)>,
    /// The timestamp in ms, or `None` for now.
    pub timestamp: Option<i64>,
}

impl ProducerRecord {
    /// A record with a value.
    pub fn new(topic: impl IntoTopic, value: impl Into<Bytes>) -> ProducerRecord {
        ProducerRecord { topic: topic.into_topic(), value: Some(value.into()), ..Default::default() }
    }

    /// Sets the key.
    pub fn key(mut self, key: impl Into<Bytes>) -> ProducerRecord {
        self.key = Some(key.into());
        self
    }

    /// Sets the partition.
    pub fn partition(mut self, partition: i32) -> ProducerRecord {
        self.partition = Some(partition);
        self
    }

    /// Adds a header.
    pub fn header(mut self, key: impl Into<String>, value: Option<Bytes>) -> ProducerRecord {
        self.headers.push((key.into(), value));
        self
    }

    /// Sets the timestamp.
    pub fn timestamp(mut self, ms: i64) -> ProducerRecord {
        self.timestamp = Some(ms);
        self
    }

    fn size(&self) -> usize {
        let h: usize = self.headers.iter().map(|(k, v)| k.len() + v.as_ref().map_or(0, Bytes::len) + 10).sum();
        self.key.as_ref().map_or(0, Bytes::len) + self.value.as_ref().map_or(0, Bytes::len) + h + 24
    }
}

/// Where a record was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordMetadata {
    /// The topic (the record's own name, shared).
    pub topic: Arc<str>,
    /// The partition.
    pub partition: i32,
    /// The offset (-1 with acks=0).
    pub offset: i64,
    /// The record's timestamp, or the broker's append time for LogAppendTime topics.
    pub timestamp: i64,
}

/// A batch's outcome: the base offset and log append time (-1 unless LogAppendTime) from the
/// broker, `None` with acks=0.
type Outcome = Result<Option<(i64, i64)>>;

/// One completion per batch, shared by its records' [`Delivery`]s (each knows its index), so
/// `send` allocates no channel per record.
struct Completion {
    topic: Arc<str>,
    partition: i32,
    state: Mutex<CompletionState>,
}

#[derive(Default)]
struct CompletionState {
    outcome: Option<Outcome>,
    wakers: Vec<Waker>,
}

impl Completion {
    fn lock(&self) -> std::sync::MutexGuard<'_, CompletionState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The batch's handle on its completion: completes it once; dropped without that (the sender
/// task gone), it fails the records, as a dropped channel would.
struct Completer(Arc<Completion>);

impl Completer {
    fn complete(&self, outcome: Outcome) {
        let wakers = {
            let mut state = self.0.lock();
            if state.outcome.is_some() {
                return;
            }
            state.outcome = Some(outcome);
            std::mem::take(&mut state.wakers)
        };
        for w in wakers {
            w.wake();
        }
    }
}

impl Drop for Completer {
    fn drop(&mut self) {
        self.complete(Err(Error::Producer(ProducerError::Dropped)));
    }
}

/// The outcome of one `send`: resolves when the record is written or has failed.
pub struct Delivery {
    done: Arc<Completion>,
    /// The record's place in its batch (its offset delta).
    index: u32,
    timestamp: i64,
    /// Where this delivery's waker is in the completion's list, once registered.
    slot: Option<usize>,
}

impl Future for Delivery {
    type Output = Result<RecordMetadata>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let mut state = this.done.lock();
        let (base, append) = match &state.outcome {
            Some(Ok(Some(offsets))) => *offsets,
            Some(Ok(None)) => (-1, -1),
            Some(Err(e)) => return Poll::Ready(Err(e.clone())),
            None => {
                match this.slot.and_then(|i| state.wakers.get_mut(i)) {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    Some(w) => w.clone_from(cx.waker()),
                    None => {
                        this.slot = Some(state.wakers.len());
                        state.wakers.push(cx.waker().clone());
                    }
                }
                return Poll::Pending;
            }
        };
        drop(state);
        let offset = if base >= 0 { base.saturating_add(i64::from(this.index)) } else { -1 };
        let timestamp = if append >= 0 { append } else { this.timestamp };
        Poll::Ready(Ok(RecordMetadata { topic: this.done.topic.clone(), partition: this.done.partition, offset, timestamp }))
    }
}

struct Batch {
    /// The records, their offsets their indexes; encoded when the batch is sent.
    records: Vec<Record>,
    bytes: usize,
    /// The buffer memory of all its records (one permit, merged as records join).
    memory: OwnedSemaphorePermit,
    done: Completer,
    created: Instant,
    attempts: u32,
    /// The producer id, epoch and base sequence this batch was last given (kept for resends
    /// unless its partition's sequences are rewritten).
    sequence: Option<(i64, i16, i32)>,
    retry_at: Option<Instant>,
    last_error: Option<Error>,
    /// Its place among its partition's batches (they are sent, and resent, in this order).
    ordinal: u64,
}

impl Batch {
    fn producer_of(&self) -> Option<(i64, i16)> {
        self.sequence.map(|(p, e, _)| (p, e))
    }
}

#[derive(Default)]
struct Queue {
    batches: VecDeque<Batch>,
    in_flight: usize,
    /// The producer id the in-flight batches were sent with.
    flight_pid: Option<(i64, i16)>,
    /// The producer id under which the broker has acknowledged a batch of this partition.
    acked_pid: Option<(i64, i16)>,
    /// The producer id and epoch this partition's sequences count under (Java's
    /// `TxnPartitionEntry.producerIdAndEpoch`): a batch whose sequence is under another one is
    /// given a new sequence when it is next sent.
    pid: Option<(i64, i16)>,
    next_sequence: i32,
    /// The last sequence the broker acknowledged under `pid`.
    last_acked: Option<i32>,
    /// Batches sent at least once expired here: the sequence that should follow them. No new
    /// batch goes until the partition's outcome is known (Java's unresolved sequences).
    unresolved: Option<i32>,
    /// Its sequences restart from 0 at the next epoch bump (Java's
    /// `partitionsToRewriteSequences`).
    rewrite: bool,
    next_ordinal: u64,
}

impl Queue {
    /// Whether `sequence` follows the last acknowledged one (Java's `isNextSequence`).
    fn is_next(&self, sequence: i32) -> bool {
        sequence == self.last_acked.map_or(0, |s| s.wrapping_add(1) & i32::MAX)
    }

    /// Whether a batch's sequence still counts (it was given under this partition's `pid`).
    fn owns(&self, batch: &Batch) -> bool {
        batch.sequence.is_some() && batch.producer_of() == self.pid
    }
}

/// One topic's partitions (indexed by partition) and its sticky partition.
#[derive(Default)]
struct TopicQueues {
    sticky: Option<i32>,
    partitions: Vec<Queue>,
}

/// What the producer has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProducerStats {
    /// Produce requests sent.
    pub requests: u64,
    /// The most batches of one partition in flight at once.
    pub max_in_flight: usize,
    /// Producer epoch bumps (KIP-360) after a sequence error or a failed batch.
    pub epoch_bumps: u64,
}

#[derive(Default)]
struct State {
    topics: BTreeMap<Arc<str>, TopicQueues>,
    pending: usize,
    flushing: usize,
    closed: bool,
    producer_id: Option<(i64, i16)>,
    /// An epoch bump is due (Java's `epochBumpRequired`), done before the next drain.
    bump: bool,
    stats: ProducerStats,
}

impl State {
    fn queue(&mut self, topic: &str, partition: i32) -> Option<&mut Queue> {
        self.topics.get_mut(topic)?.partitions.get_mut(usize::try_from(partition).ok()?)
    }

    /// Java's `requestEpochBumpForPartition`.
    fn request_bump(&mut self, topic: &str, partition: i32) {
        self.bump = true;
        if let Some(q) = self.queue(topic, partition) {
            q.rewrite = true;
        }
    }

    /// Java's `bumpIdempotentProducerEpoch`: the same producer id with the next epoch (a new
    /// id once the epoch is exhausted), and sequences from 0 for the partitions that asked.
    /// The broker takes a higher epoch with sequence 0 as a new start for the producer.
    fn bump_epoch(&mut self) {
        self.bump = false;
        let before = self.producer_id;
        self.producer_id = match before {
            Some((pid, epoch)) if epoch < i16::MAX => Some((pid, epoch + 1)),
            _ => None,
        };
        self.stats.epoch_bumps += 1;
        debug!(?before, after = ?self.producer_id, "producer epoch bumped");
        let producer_id = self.producer_id;
        for q in self.topics.values_mut().flat_map(|t| t.partitions.iter_mut()).filter(|q| q.rewrite) {
            q.rewrite = false;
            q.pid = producer_id;
            q.next_sequence = 0;
            q.last_acked = None;
            q.unresolved = None;
        }
    }
}

struct Shared {
    client: Client,
    config: ProducerConfig,
    state: Mutex<State>,
    wake: Notify,
    done: Notify,
    memory: Arc<Semaphore>,
}

/// A producer on a [`Client`]. Cheap to clone; [`close`](Producer::close) to finish. When
/// the last clone is dropped without `close`, queued records are still sent, then the
/// sender stops.
#[derive(Clone)]
pub struct Producer {
    shared: Arc<Shared>,
    sender: Arc<Mutex<Option<tokio::task::JoinHandle<()>>>>,
    _last: Arc<LastHandle>,
}

struct LastHandle(Arc<Shared>);

impl Drop for LastHandle {
    fn drop(&mut self) {
        self.0.lock().closed = true;
        self.0.wake.notify_one();
    }
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// A sticky partition for a topic, as [`next_sticky`](crate::partitioner::next_sticky) picks it among the partitions with a
/// leader (all when none has one), without collecting them.
fn pick_sticky(previous: Option<i32>, topic: &TopicInfo) -> i32 {
    let led = || topic.partitions.iter().filter(|p| p.leader >= 0).map(|p| p.index);
    match led().count() {
        0 => pick_among(previous, topic.partitions.len(), |i| i as i32),
        n => pick_among(previous, n, |i| led().nth(i).unwrap_or(0)),
    }
}

impl Producer {
    /// A producer with these settings.
    pub fn new(client: Client, config: ProducerConfig) -> Result<Producer> {
        if config.idempotence && config.acks != Acks::All {
            return Err(Error::Config("idempotence needs acks=all".into()));
        }
        if config.batch_size == 0 || config.buffer_memory == 0 {
            return Err(Error::Config("batch_size and buffer_memory must be positive".into()));
        }
        if !(1..=5).contains(&config.max_in_flight) {
            return Err(Error::Config("max_in_flight must be 1 to 5".into()));
        }
        let permits = config.buffer_memory.min(Semaphore::MAX_PERMITS);
        let shared = Arc::new(Shared {
            client,
            config,
            state: Mutex::new(State::default()),
            wake: Notify::new(),
            done: Notify::new(),
            memory: Arc::new(Semaphore::new(permits)),
        });
        let sender = tokio::spawn(sender_loop(shared.clone()).instrument(tracing::debug_span!("kafka.producer")));
        Ok(Producer { shared: shared.clone(), sender: Arc::new(Mutex::new(Some(sender))), _last: Arc::new(LastHandle(shared)) })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.shared.lock()
    }

    /// Counts of what the producer has done so far.
    pub fn stats(&self) -> ProducerStats {
        self.shared.lock().stats
    }

    /// Queues a record; the returned [`Delivery`] resolves to where it was written. Waits (at
    /// most `max_block`) for buffer memory and for the topic's metadata.
    ///
    /// Allocates nothing per record in the common case (memory free, the topic's metadata
    /// cached): the record joins its partition's open batch, which holds one completion for
    /// all its records.
    pub async fn send(&self, record: ProducerRecord) -> Result<Delivery> {
        let cfg = &self.shared.config;
        if self.lock().closed {
            return Err(Error::Producer(ProducerError::Closed));
        }
        let size = record.size();
        if size > cfg.max_request_size || size > cfg.buffer_memory {
            return Err(Error::Producer(ProducerError::RecordTooLarge {
                size,
                max_request_size: cfg.max_request_size,
                buffer_memory: cfg.buffer_memory,
            }));
        }
        // The clock is read only if something has to wait.
        let mut deadline = None;
        let mut deadline = || *deadline.get_or_insert_with(|| tokio::time::Instant::now() + cfg.max_block);
        let memory = match self.shared.memory.clone().try_acquire_many_owned(size as u32) {
            Ok(permit) => permit,
            Err(TryAcquireError::Closed) => return Err(Error::Producer(ProducerError::Closed)),
            Err(TryAcquireError::NoPermits) => tokio::time::timeout_at(deadline(), self.shared.memory.clone().acquire_many_owned(size as u32))
                .await
                .map_err(|_| Error::Producer(ProducerError::BufferFull { max_block: cfg.max_block }))?
                .map_err(|_| Error::Producer(ProducerError::Closed))?,
        };
        let topic = loop {
            match self.shared.client.topic(&record.topic).await {
                Ok(t) if !t.partitions.is_empty() => break t,
                Ok(_) | Err(Error::UnknownTopicOrPartition(_)) if tokio::time::Instant::now() < deadline() => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Ok(_) | Err(Error::UnknownTopicOrPartition(_)) => {
                    return Err(Error::UnknownTopicOrPartition(format!("{} not in metadata after {:?}", record.topic, cfg.max_block)))
                }
                Err(e) => return Err(e),
            }
        };
        let n = topic.partitions.len();
        let ProducerRecord { topic: name, partition, key, value, headers, timestamp } = record;
        let timestamp = timestamp.unwrap_or_else(now_ms);
        let mut guard = self.lock();
        let state = &mut *guard;
        if state.closed {
            return Err(Error::Producer(ProducerError::Closed));
        }
        if !state.topics.contains_key(&*name) {
            state.topics.insert(name.clone(), TopicQueues::default());
        }
        let queues = state.topics.entry(name.clone()).or_default();
        let partition = match (partition, &key) {
            (Some(p), _) if p >= 0 && (p as usize) < n => p,
            (Some(p), _) => return Err(Error::UnknownTopicOrPartition(format!("{name}-{p} (the topic has {n} partitions)"))),
            (None, Some(key)) => partition_for_key(key, n),
            (None, None) => {
                let current = match queues.sticky {
                    Some(p) if (p as usize) < n => p,
                    _ => *queues.sticky.insert(pick_sticky(None, &topic)),
                };
                // KIP-480: a record that would open a new batch moves the topic to another partition.
                if needs_new_batch(queues, current, size, cfg.batch_size) {
                    *queues.sticky.insert(pick_sticky(Some(current), &topic))
                } else {
                    current
                }
            }
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
        let (done, index, full) = match queue.batches.back_mut().filter(|b| b.attempts == 0 && b.bytes + size <= cfg.batch_size) {
            Some(b) => {
                let index = b.records.len();
                r.offset = index as i64;
                b.records.push(r);
                b.bytes += size;
                b.memory.merge(memory);
                (b.done.0.clone(), index, b.bytes >= cfg.batch_size)
            }
            None => {
                let ordinal = queue.next_ordinal;
                queue.next_ordinal += 1;
                // Room for a few records of this size, growing by doubling: a handful of
                // allocations per full batch, and little memory for partitions (many, keyed)
                // whose batches stay small; buffer_memory does not count this.
                let mut records = Vec::with_capacity((cfg.batch_size / size.max(1)).clamp(1, 64));
                records.push(r);
                let done = Arc::new(Completion { topic: name.clone(), partition, state: Mutex::new(CompletionState::default()) });
                queue.batches.push_back(Batch {
                    records,
                    bytes: size,
                    memory,
                    done: Completer(done.clone()),
                    created: Instant::now(),
                    attempts: 0,
                    sequence: None,
                    retry_at: None,
                    last_error: None,
                    ordinal,
                });
                // A new batch: the sender may be asleep past its linger deadline, wake it to
                // schedule one (it sleeps up to 500 ms when nothing is queued).
                (done, 0, true)
            }
        };
        state.pending += 1;
        drop(guard);
        if full || cfg.linger.is_zero() {
            self.shared.wake.notify_one();
        }
        Ok(Delivery { done, index: index as u32, timestamp, slot: None })
    }

    /// Sends everything queued now and waits until every record sent before has succeeded or
    /// failed.
    pub async fn flush(&self) -> Result<()> {
        self.lock().flushing += 1;
        self.shared.wake.notify_one();
        loop {
            let notified = self.shared.done.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.lock().pending == 0 {
                break;
            }
            notified.await;
        }
        self.lock().flushing -= 1;
        Ok(())
    }

    /// Refuses new records, delivers (or fails) the queued ones and stops the sender.
    pub async fn close(&self) -> Result<()> {
        self.lock().closed = true;
        self.flush().await?;
        self.shared.wake.notify_one();
        let handle = self.sender.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(h) = handle {
            let _ = h.await;
        }
        Ok(())
    }
}

fn needs_new_batch(queues: &TopicQueues, partition: i32, size: usize, batch_size: usize) -> bool {
    match queues.partitions.get(partition as usize).and_then(|q| q.batches.back()) {
        Some(b) => b.attempts > 0 || b.bytes + size > batch_size,
        None => true,
    }
}

fn backoff(config: &ProducerConfig, attempts: u32) -> Duration {
    Backoff::exponential(config.retry_backoff, config.retry_backoff_max).delay(attempts)
}

type Drained = HashMap<i32, Vec<(Arc<str>, i32, Batch)>>;

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock is a bug here; keep going with the data as it is.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Fails a batch's records and releases them.
    fn fail(&self, state: &mut State, batch: Batch, error: Error) {
        state.pending -= batch.records.len();
        batch.done.complete(Err(error));
    }

    /// Takes the batches ready to go, by leader; returns when to look again and whether
    /// metadata is missing for some.
    fn drain(&self, now: Instant) -> (Drained, Option<Instant>, bool, bool) {
        let cfg = &self.config;
        let metadata = self.client.metadata();
        let mut guard = self.lock();
        let state = &mut *guard;
        let urgent = state.flushing > 0 || state.closed;
        let mut out: Drained = HashMap::new();
        let mut next: Option<Instant> = None;
        let mut missing_leader = false;
        let mut expired = Vec::new();
        let limit = if cfg.idempotence { cfg.max_in_flight } else { 1 };
        if cfg.idempotence {
            // Java's maybeResolveSequences: a partition whose sent batches expired is resolved
            // once none of its sequenced batches is left: if the broker has everything up to
            // the next sequence, go on; otherwise there is a gap, bump the epoch.
            for (topic, queues) in state.topics.iter_mut() {
                for (partition, q) in queues.partitions.iter_mut().enumerate() {
                    if q.unresolved.is_none() || q.in_flight > 0 || q.batches.iter().any(|b| q.owns(b)) {
                        continue;
                    }
                    q.unresolved = None;
                    if !q.is_next(q.next_sequence) {
                        debug!(%topic, partition, next = q.next_sequence, last_acked = ?q.last_acked, "unresolved sequences: bumping the epoch");
                        q.rewrite = true;
                        state.bump = true;
                    }
                }
            }
            if state.bump {
                state.bump_epoch();
            }
        }
        let State { topics, producer_id, stats, .. } = state;
        let producer_id = *producer_id;
        for (topic, queues) in topics.iter_mut() {
            for (partition, queue) in queues.partitions.iter_mut().enumerate() {
                let partition = partition as i32;
                // Batches past the delivery timeout fail, in flight or not (the in-flight one fails
                // when its response comes). One that was sent may have been written: its
                // partition's sequences are unresolved until the later ones are answered.
                while queue.batches.front().is_some_and(|b| now >= b.created + cfg.delivery_timeout) {
                    if let Some(b) = queue.batches.pop_front() {
                        if let (true, Some((_, _, seq))) = (queue.owns(&b), b.sequence) {
                            let after = seq.wrapping_add(b.records.len() as i32) & i32::MAX;
                            queue.unresolved = Some(queue.unresolved.map_or(after, |u| u.max(after)));
                        }
                        expired.push((topic.clone(), partition, b));
                    }
                }
                if queue.in_flight >= limit {
                    continue;
                }
                let Some(front) = queue.batches.front() else {
                    continue;
                };
                // A resent batch, or one sent under a new producer id or epoch, waits until nothing
                // of its partition is in flight: the broker must get the partition's sequences in
                // order. So does any batch until one is acknowledged under this producer id: a
                // broker without state for the producer takes any first sequence (KIP-360), so a
                // second batch overtaking the first (spawned requests may reach the connection in
                // either order) would be written, and the first refused.
                if queue.in_flight > 0 && (front.attempts > 0 || queue.flight_pid != producer_id || queue.acked_pid != producer_id) {
                    continue;
                }
                // A new batch waits while the partition's sequences are unresolved.
                if queue.unresolved.is_some() && !queue.owns(front) {
                    continue;
                }
                let due = front.created + cfg.linger;
                let ready = urgent || queue.batches.len() > 1 || front.bytes >= cfg.batch_size || now >= due || front.attempts > 0;
                let retry_ok = front.retry_at.map_or(true, |t| now >= t);
                let wake_at = if !retry_ok { front.retry_at } else if !ready { Some(due) } else { None };
                if let Some(t) = wake_at {
                    next = Some(next.map_or(t, |n: Instant| n.min(t)));
                    continue;
                }
                let Some(leader) = metadata.leader(topic, partition) else {
                    missing_leader = true;
                    continue;
                };
                if cfg.idempotence && producer_id.is_none() {
                    continue;
                }
                let Some(mut batch) = queue.batches.pop_front() else {
                    continue;
                };
                if let Some(current) = producer_id.filter(|_| cfg.idempotence) {
                    // A batch keeps the sequence it was sent with (a resend must be recognised
                    // as one) unless its partition's sequences were rewritten by an epoch bump.
                    if !queue.owns(&batch) {
                        if queue.pid != Some(current) {
                            // Java's maybeUpdateProducerIdAndEpoch: nothing of the partition is in
                            // flight under the old id or epoch; start over under the current one.
                            queue.pid = Some(current);
                            queue.next_sequence = 0;
                            queue.last_acked = None;
                        }
                        batch.sequence = Some((current.0, current.1, queue.next_sequence));
                        queue.next_sequence = queue.next_sequence.wrapping_add(batch.records.len() as i32) & i32::MAX;
                    }
                }
                queue.in_flight += 1;
                queue.flight_pid = if cfg.idempotence { batch.producer_of() } else { producer_id };
                stats.max_in_flight = stats.max_in_flight.max(queue.in_flight);
                // One batch per partition per request; another ready one goes in the next request,
                // at once.
                let more = queue.batches.front().is_some_and(|b| {
                    b.attempts == 0 && (urgent || queue.batches.len() > 1 || b.bytes >= cfg.batch_size || now >= b.created + cfg.linger)
                });
                if more && queue.in_flight < limit {
                    next = Some(now);
                }
                out.entry(leader).or_default().push((topic.clone(), partition, batch));
            }
        }
        let needs_pid = cfg.idempotence && producer_id.is_none() && topics.values().flat_map(|t| &t.partitions).any(|q| !q.batches.is_empty());
        for (topic, partition, mut b) in expired {
            let e = delivery_timeout(cfg, &topic, partition, b.records.len(), b.last_error.take());
            self.fail(state, b, e);
        }
        if state.pending == 0 {
            self.done.notify_waiters();
        }
        (out, next, missing_leader, needs_pid)
    }
}

async fn init_producer_id(shared: &Shared) -> Result<(i64, i16)> {
    let request = InitProducerIdRequest { transactional_id: None, transaction_timeout_ms: 60_000, producer_id: -1, producer_epoch: -1, ..Default::default() };
    let response = shared.client.call_any(request).await?;
    let ResponseKind::InitProducerId(r) = response else {
        return Err(Error::UnexpectedResponse(format!("{:?} to InitProducerId", response.api_key())));
    };
    Error::check(r.error_code, None, || "InitProducerId".into())?;
    debug!(producer_id = r.producer_id, epoch = r.producer_epoch, "producer id");
    Ok((r.producer_id, r.producer_epoch))
}

async fn sender_loop(shared: Arc<Shared>) {
    let mut pid_attempts = 0u32;
    loop {
        let (drained, next, missing_leader, needs_pid) = shared.drain(Instant::now());
        for (node, batches) in drained {
            let shared = shared.clone();
            tokio::spawn(async move { send_batches(&shared, node, batches).await });
        }
        if needs_pid {
            match init_producer_id(&shared).await {
                Ok(id) => {
                    shared.lock().producer_id = Some(id);
                    pid_attempts = 0;
                    continue;
                }
                Err(e) => {
                    pid_attempts += 1;
                    warn!(error = %e, "InitProducerId failed");
                    if !e.is_retriable() {
                        // Nothing can be sent idempotently: fail what waits.
                        let mut state = shared.lock();
                        let batches: Vec<Batch> =
                            state.topics.values_mut().flat_map(|t| t.partitions.iter_mut()).flat_map(|q| q.batches.drain(..)).collect();
                        for b in batches {
                            shared.fail(&mut state, b, e.clone());
                        }
                        drop(state);
                        shared.done.notify_waiters();
                    }
                    tokio::time::sleep(backoff(&shared.config, pid_attempts)).await;
                    continue;
                }
            }
        }
        if missing_leader {
            let client = shared.client.clone();
            tokio::spawn(async move {
                let _ = client.refresh_metadata().await;
            });
        }
        {
            let state = shared.lock();
            if state.closed && state.pending == 0 {
                return;
            }
        }
        // Bounded sleep: linger and retry deadlines, a short poll while leaders are unknown.
        let mut wait = next.map_or(Duration::from_millis(500), |t| t.saturating_duration_since(Instant::now()));
        if missing_leader {
            wait = wait.min(shared.config.retry_backoff);
        }
        tokio::select! {
            _ = shared.wake.notified() => {}
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

/// One Produce request to `node` with these batches, and what follows from its response.
async fn send_batches(shared: &Shared, node: i32, batches: Vec<(Arc<str>, i32, Batch)>) {
    let cfg = &shared.config;
    let mut by_topic: BTreeMap<&str, Vec<PartitionProduceData>> = BTreeMap::new();
    let mut built = Vec::with_capacity(batches.len());
    for (topic, partition, batch) in &batches {
        let mut builder = RecordBatchBuilder::new().compression(cfg.compression);
        if let Some((pid, epoch, seq)) = batch.sequence {
            builder = builder.producer(pid, epoch, seq);
        }
        // The records are encoded where they are (their offsets are their indexes).
        let mut bytes = Vec::new();
        let result = builder.build_from(&batch.records, &mut bytes);
        built.push(result.as_ref().map(|_| ()).map_err(|e| e.to_string()));
        if result.is_ok() {
            // `records` is nullable in the 3.9 specs, not in later ones: `From` covers both.
            #[allow(clippy::useless_conversion)]
            by_topic.entry(&**topic).or_default().push(PartitionProduceData {
                index: *partition,
                records: Some(Bytes::from(bytes)).into(),
                ..Default::default()
            });
        }
    }
    let request = ProduceRequest {
        transactional_id: None,
        acks: cfg.acks.wire(),
        timeout_ms: cfg.ack_timeout.as_millis().min(i32::MAX as u128) as i32,
        topic_data: by_topic
            .into_iter()
            .map(|(t, partition_data)| TopicProduceData { name: ByteString::from(t.to_owned()), partition_data, ..Default::default() })
            .collect(),
        ..Default::default()
    };
    let span = tracing::debug_span!("kafka.produce", node, batches = batches.len());
    let result = if request.topic_data.is_empty() {
        Ok(None)
    } else {
        shared.lock().stats.requests += 1;
        shared.client.call_node(node, request).instrument(span).await
    };
    let mut refresh = false;
    {
        let mut guard = shared.lock();
        let state = &mut *guard;
        for ((topic, partition, mut batch), built) in batches.into_iter().zip(built) {
            if let Some(q) = state.queue(&topic, partition) {
                q.in_flight = q.in_flight.saturating_sub(1);
            }
            if let Err(e) = built {
                let e = ProducerError::Encoding { topic: topic.to_string(), partition, reason: e };
                shared.fail(state, batch, Error::Producer(e));
                continue;
            }
            // The error, with the partition's log start offset when the broker sent one.
            let outcome: Result<Option<(i64, i64)>, (Error, i64)> = match &result {
                Ok(None) => Ok(None),
                Ok(Some(ResponseKind::Produce(r))) => {
                    let p = r.responses.iter().filter(|t| *t.name == *topic).flat_map(|t| &t.partition_responses).find(|p| p.index == partition);
                    match p {
                        None => Err((Error::UnexpectedResponse(format!("Produce response has no {topic}-{partition}")), -1)),
                        // DUPLICATE_SEQUENCE_NUMBER: an earlier attempt was written.
                        Some(p) if matches!(ErrorCode(p.error_code), ErrorCode::NONE | ErrorCode::DUPLICATE_SEQUENCE_NUMBER) => {
                            Ok(Some((p.base_offset, p.log_append_time_ms)))
                        }
                        Some(p) => Err((produce_error(&topic, partition, ErrorCode(p.error_code), p.error_message.as_deref()), p.log_start_offset)),
                    }
                }
                Ok(Some(other)) => Err((Error::UnexpectedResponse(format!("{:?} to Produce", other.api_key())), -1)),
                Err(e) => Err((e.clone(), -1)),
            };
            match outcome {
                Ok(offsets) => {
                    if let (Some((pid, epoch, seq)), Some(q)) = (batch.sequence, state.queue(&topic, partition)) {
                        q.acked_pid = Some((pid, epoch));
                        if q.pid == Some((pid, epoch)) {
                            let last = seq.wrapping_add(batch.records.len() as i32 - 1) & i32::MAX;
                            q.last_acked = Some(q.last_acked.map_or(last, |l| l.max(last)));
                        }
                    }
                    state.pending -= batch.records.len();
                    batch.done.complete(Ok(offsets));
                }
                Err((e, log_start_offset)) => {
                    refresh |= e.code().is_some_and(Client::needs_metadata_refresh) || matches!(e, Error::Io { .. } | Error::Disconnected(_) | Error::Timeout { .. });
                    batch.attempts += 1;
                    let expired = Instant::now() >= batch.created + cfg.delivery_timeout;
                    let may_retry = batch.attempts <= cfg.retries && !expired;
                    let retry = may_retry && retry_decision(state, &topic, partition, &batch, &e, log_start_offset);
                    if retry {
                        debug!(%topic, partition, attempts = batch.attempts, error = %e, "retrying");
                        batch.retry_at = Some(Instant::now() + backoff(cfg, batch.attempts));
                        batch.last_error = Some(e);
                        // Back in its place: before the partition's later batches.
                        if let Some(q) = state.queue(&topic, partition) {
                            let at = q.batches.iter().position(|b| b.ordinal > batch.ordinal).unwrap_or(q.batches.len());
                            q.batches.insert(at, batch);
                        } else {
                            shared.fail(state, batch, e_gone(&topic, partition));
                        }
                    } else {
                        warn!(%topic, partition, error = %e, "batch failed");
                        if batch.sequence.is_some() {
                            after_failed_batch(state, &topic, partition, &e, batch.attempts <= cfg.retries);
                        }
                        // Past the delivery timeout, say so (with the last error), as the queue
                        // scan does for batches that expire between attempts.
                        let e = if expired && e.is_retriable() && batch.attempts <= cfg.retries {
                            delivery_timeout(cfg, &topic, partition, batch.records.len(), Some(e))
                        } else {
                            e
                        };
                        shared.fail(state, batch, e);
                    }
                }
            }
        }
    }
    if refresh {
        let _ = shared.client.refresh_metadata().await;
    }
    shared.done.notify_waiters();
    shared.wake.notify_one();
}

fn e_gone(_topic: &str, _partition: i32) -> Error {
    Error::Producer(ProducerError::Closed)
}

/// The error for records that outlived the delivery timeout, with the last attempt's error.
fn delivery_timeout(cfg: &ProducerConfig, topic: &str, partition: i32, records: usize, last_error: Option<Error>) -> Error {
    Error::Producer(ProducerError::DeliveryTimeout {
        topic: topic.to_owned(),
        partition,
        records,
        timeout: cfg.delivery_timeout,
        last_error: last_error.map(Box::new),
    })
}

/// A Produce response's error for one partition: fencing as [`ProducerError::Fenced`],
/// authorization on the topic, others as the broker's.
fn produce_error(topic: &str, partition: i32, code: ErrorCode, message: Option<&str>) -> Error {
    let message = message.map(str::to_owned);
    match code {
        ErrorCode::PRODUCER_FENCED | ErrorCode::INVALID_PRODUCER_EPOCH => {
            Error::Producer(ProducerError::Fenced { topic: topic.to_owned(), partition, code, message })
        }
        _ => Error::broker(code, message, format!("produce to {topic}-{partition}")).about(Resource::Topic(topic.to_owned())),
    }
}

/// Whether a failed batch is sent again (its attempts and delivery timeout allowing), by
/// Java's `TransactionManager.canRetry` for an idempotent producer: UNKNOWN_PRODUCER_ID and
/// OUT_OF_ORDER_SEQUENCE_NUMBER are retried, with an epoch bump when they show the broker
/// lost the producer's state or a gap opened before this batch; other errors when retriable.
fn retry_decision(state: &mut State, topic: &str, partition: i32, batch: &Batch, e: &Error, log_start_offset: i64) -> bool {
    let Some((_, _, sequence)) = batch.sequence else {
        return e.is_retriable();
    };
    let Some(q) = state.queue(topic, partition) else {
        return e.is_retriable();
    };
    // Its partition's sequences were rewritten (an epoch bump) since it was sent: the error
    // is about the old ones; it goes again with a new sequence.
    let reset = !q.owns(batch);
    match e.code() {
        Some(ErrorCode::UNKNOWN_PRODUCER_ID) => {
            // Without the log start offset the broker may be mid-move: just retry. Otherwise
            // the broker has no state for the producer here (retention removed it, or data
            // was lost): start the partition over under a bumped epoch.
            if log_start_offset != -1 && !reset {
                state.request_bump(topic, partition);
            }
            true
        }
        Some(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER) => {
            if q.unresolved.is_none() && (reset || !q.is_next(sequence)) {
                // Not the batch that follows the acknowledged ones: one before it failed or
                // is late; it is resent after that one.
                return true;
            }
            // The next batch refused (or the one after unresolved ones): a gap the broker will
            // not fill. Bump the epoch; the batch goes again from sequence 0.
            if q.unresolved.is_none() || q.unresolved == Some(sequence) {
                state.request_bump(topic, partition);
            }
            true
        }
        _ => e.is_retriable(),
    }
}

/// Java's `TransactionManager.handleFailedBatch` for an idempotent producer: a failed batch
/// leaves a hole in its partition's sequences, so the epoch is bumped and the partition starts
/// again from 0, unless the broker lost the producer (UNKNOWN_PRODUCER_ID: sequence 0 under the
/// same epoch) or the batch used up its retries (it may have been written: its sequence must
/// not be given to another batch, and the later ones show what happened).
fn after_failed_batch(state: &mut State, topic: &str, partition: i32, e: &Error, retries_left: bool) {
    match e.code() {
        Some(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER) => state.request_bump(topic, partition),
        Some(ErrorCode::UNKNOWN_PRODUCER_ID) => {
            if let Some(q) = state.queue(topic, partition) {
                q.pid = None;
                q.next_sequence = 0;
                q.last_acked = None;
                q.unresolved = None;
            }
        }
        _ if retries_left => state.request_bump(topic, partition),
        _ => {}
    }
}
