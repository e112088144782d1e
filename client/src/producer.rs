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
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kafka_wire::messages::{
    produce_request::{PartitionProduceData, TopicProduceData},
    InitProducerIdRequest, ProduceRequest,
};
use kafka_wire::runtime::records::{Compression, Record, RecordBatchBuilder};
use kafka_wire::{ByteString, Bytes, ErrorCode, ResponseKind};
use tokio::sync::{oneshot, Notify, OwnedSemaphorePermit, Semaphore};
use tracing::{debug, warn, Instrument};

use crate::cluster::Client;
use crate::error::{Error, Result};
use crate::partitioner::{next_sticky, partition_for_key};

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

/// A record to send.
#[derive(Debug, Clone, Default)]
pub struct ProducerRecord {
    /// The topic.
    pub topic: String,
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
    pub fn new(topic: impl Into<String>, value: impl Into<Bytes>) -> ProducerRecord {
        ProducerRecord { topic: topic.into(), value: Some(value.into()), ..Default::default() }
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
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The offset (-1 with acks=0).
    pub offset: i64,
    /// The record's timestamp, or the broker's append time for LogAppendTime topics.
    pub timestamp: i64,
}

/// The outcome of one `send`: resolves when the record is written or has failed.
pub struct Delivery(oneshot::Receiver<Result<RecordMetadata>>);

impl Future for Delivery {
    type Output = Result<RecordMetadata>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx).map(|r| r.unwrap_or_else(|_| Err(Error::Producer("the producer was dropped".into()))))
    }
}

struct Pending {
    record: Record,
    reply: oneshot::Sender<Result<RecordMetadata>>,
    _memory: OwnedSemaphorePermit,
}

struct Batch {
    records: Vec<Pending>,
    bytes: usize,
    created: Instant,
    attempts: u32,
    /// The producer id, epoch and base sequence this batch was first sent with.
    sequence: Option<(i64, i16, i32)>,
    retry_at: Option<Instant>,
    last_error: Option<Error>,
    /// Its place among its partition's batches (they are sent, and resent, in this order).
    ordinal: u64,
    /// Whether it was sent while an earlier batch of its partition was in flight.
    sent_behind: bool,
}

#[derive(Default)]
struct Queue {
    batches: VecDeque<Batch>,
    in_flight: usize,
    /// The producer id the in-flight batches were sent with.
    flight_pid: Option<(i64, i16)>,
    /// The producer id under which the broker has acknowledged a batch of this partition.
    acked_pid: Option<(i64, i16)>,
    next_sequence: i32,
    next_ordinal: u64,
}

/// What the producer has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProducerStats {
    /// Produce requests sent.
    pub requests: u64,
    /// The most batches of one partition in flight at once.
    pub max_in_flight: usize,
}

#[derive(Default)]
struct State {
    queues: BTreeMap<(String, i32), Queue>,
    sticky: HashMap<String, i32>,
    pending: usize,
    flushing: usize,
    closed: bool,
    producer_id: Option<(i64, i16)>,
    stats: ProducerStats,
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

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, State>> {
        self.shared.state.lock().map_err(|_| Error::Producer("state poisoned".into()))
    }

    /// Counts of what the producer has done so far.
    pub fn stats(&self) -> ProducerStats {
        self.shared.lock().stats
    }

    /// Queues a record; the returned [`Delivery`] resolves to where it was written. Waits (at
    /// most `max_block`) for buffer memory and for the topic's metadata.
    pub async fn send(&self, record: ProducerRecord) -> Result<Delivery> {
        let cfg = &self.shared.config;
        if self.lock()?.closed {
            return Err(Error::Producer("the producer is closed".into()));
        }
        let size = record.size();
        if size > cfg.max_request_size || size > cfg.buffer_memory {
            return Err(Error::Producer(format!("record of about {size} bytes exceeds max_request_size or buffer_memory")));
        }
        let deadline = tokio::time::Instant::now() + cfg.max_block;
        let memory = tokio::time::timeout_at(deadline, self.shared.memory.clone().acquire_many_owned(size as u32))
            .await
            .map_err(|_| Error::Producer(format!("buffer memory full for {:?} (max_block)", cfg.max_block)))?
            .map_err(|_| Error::Producer("the producer is closed".into()))?;
        let topic = loop {
            match self.shared.client.topic(&record.topic).await {
                Ok(t) if !t.partitions.is_empty() => break t,
                Ok(_) | Err(Error::UnknownTopicOrPartition(_)) if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Ok(_) | Err(Error::UnknownTopicOrPartition(_)) => {
                    return Err(Error::UnknownTopicOrPartition(format!("{} not in metadata after {:?}", record.topic, cfg.max_block)))
                }
                Err(e) => return Err(e),
            }
        };
        let n = topic.partitions.len();
        let available: Vec<i32> = topic.partitions.iter().filter(|p| p.leader >= 0).map(|p| p.index).collect();
        let timestamp = record.timestamp.unwrap_or_else(now_ms);
        let mut r = Record::new(0, timestamp, record.key.clone(), record.value.clone());
        for (k, v) in &record.headers {
            r = r.with_header(ByteString::from(k.clone()), v.clone());
        }
        let (reply, rx) = oneshot::channel();
        let pending = Pending { record: r, reply, _memory: memory };
        let mut state = self.lock()?;
        if state.closed {
            return Err(Error::Producer("the producer is closed".into()));
        }
        let partition = match (record.partition, &record.key) {
            (Some(p), _) if p >= 0 && (p as usize) < n => p,
            (Some(p), _) => return Err(Error::UnknownTopicOrPartition(format!("{}-{p} (the topic has {n} partitions)", record.topic))),
            (None, Some(key)) => partition_for_key(key, n),
            (None, None) => {
                let current = *state.sticky.entry(record.topic.clone()).or_insert_with(|| next_sticky(None, &available, n));
                let current = if current as usize >= n { next_sticky(None, &available, n) } else { current };
                // KIP-480: a record that would open a new batch moves the topic to another partition.
                if needs_new_batch(&state, &record.topic, current, size, cfg.batch_size) {
                    let next = next_sticky(Some(current), &available, n);
                    state.sticky.insert(record.topic.clone(), next);
                    next
                } else {
                    current
                }
            }
        };
        let queue = state.queues.entry((record.topic.clone(), partition)).or_default();
        let full = match queue.batches.back_mut().filter(|b| b.attempts == 0 && b.bytes + size <= cfg.batch_size) {
            Some(b) => {
                b.records.push(pending);
                b.bytes += size;
                b.bytes >= cfg.batch_size
            }
            None => {
                let ordinal = queue.next_ordinal;
                queue.next_ordinal += 1;
                queue.batches.push_back(Batch {
                    records: vec![pending],
                    bytes: size,
                    created: Instant::now(),
                    attempts: 0,
                    sequence: None,
                    retry_at: None,
                    last_error: None,
                    ordinal,
                    sent_behind: false,
                });
                // A new batch: the sender may be asleep past its linger deadline, wake it to
                // schedule one (it sleeps up to 500 ms when nothing is queued).
                true
            }
        };
        state.pending += 1;
        drop(state);
        if full || cfg.linger.is_zero() {
            self.shared.wake.notify_one();
        }
        Ok(Delivery(rx))
    }

    /// Sends everything queued now and waits until every record sent before has succeeded or
    /// failed.
    pub async fn flush(&self) -> Result<()> {
        self.lock()?.flushing += 1;
        self.shared.wake.notify_one();
        loop {
            let notified = self.shared.done.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.lock()?.pending == 0 {
                break;
            }
            notified.await;
        }
        self.lock()?.flushing -= 1;
        Ok(())
    }

    /// Refuses new records, delivers (or fails) the queued ones and stops the sender.
    pub async fn close(&self) -> Result<()> {
        self.lock()?.closed = true;
        self.flush().await?;
        self.shared.wake.notify_one();
        let handle = self.sender.lock().map_err(|_| Error::Producer("poisoned".into()))?.take();
        if let Some(h) = handle {
            let _ = h.await;
        }
        Ok(())
    }
}

fn needs_new_batch(state: &State, topic: &str, partition: i32, size: usize, batch_size: usize) -> bool {
    match state.queues.get(&(topic.to_owned(), partition)).and_then(|q| q.batches.back()) {
        Some(b) => b.attempts > 0 || b.bytes + size > batch_size,
        None => true,
    }
}

fn backoff(config: &ProducerConfig, attempts: u32) -> Duration {
    let exp = config.retry_backoff.saturating_mul(1u32 << attempts.min(16).saturating_sub(1));
    exp.min(config.retry_backoff_max).mul_f64(0.8 + 0.4 * crate::conn::random_unit())
}

type Drained = HashMap<i32, Vec<(String, i32, Batch)>>;

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock is a bug here; keep going with the data as it is.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Fails a batch's records and releases them.
    fn fail(&self, state: &mut State, batch: Batch, error: Error) {
        state.pending -= batch.records.len();
        for p in batch.records {
            let _ = p.reply.send(Err(error.clone()));
        }
    }

    /// Takes the batches ready to go, by leader; returns when to look again and whether
    /// metadata is missing for some.
    fn drain(&self, now: Instant) -> (Drained, Option<Instant>, bool, bool) {
        let cfg = &self.config;
        let metadata = self.client.metadata();
        let mut state = self.lock();
        let state = &mut *state;
        let urgent = state.flushing > 0 || state.closed;
        let mut out: Drained = HashMap::new();
        let mut next: Option<Instant> = None;
        let mut missing_leader = false;
        let mut expired = Vec::new();
        let producer_id = state.producer_id;
        let limit = if cfg.idempotence { cfg.max_in_flight } else { 1 };
        for ((topic, partition), queue) in state.queues.iter_mut() {
            // Batches past the delivery timeout fail, in flight or not (the in-flight one fails
            // when its response comes).
            while queue.batches.front().is_some_and(|b| now >= b.created + cfg.delivery_timeout) {
                if let Some(b) = queue.batches.pop_front() {
                    expired.push((topic.clone(), *partition, b));
                }
            }
            if queue.in_flight >= limit {
                continue;
            }
            let Some(front) = queue.batches.front() else { continue };
            // A resent batch, or one sent under a new producer id, waits until nothing of its
            // partition is in flight: the broker must get the partition's sequences in order.
            // So does any batch until one is acknowledged under this producer id: a broker
            // without state for the producer takes any first sequence (KIP-360), so a second
            // batch overtaking the first (spawned requests may reach the connection in either
            // order) would be written, and the first refused.
            if queue.in_flight > 0 && (front.attempts > 0 || queue.flight_pid != producer_id || queue.acked_pid != producer_id) {
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
            let Some(leader) = metadata.leader(topic, *partition) else {
                missing_leader = true;
                continue;
            };
            if cfg.idempotence && producer_id.is_none() {
                continue;
            }
            let Some(mut batch) = queue.batches.pop_front() else { continue };
            if let Some((pid, epoch)) = producer_id.filter(|_| cfg.idempotence) {
                if batch.sequence.map_or(true, |(p, e, _)| (p, e) != (pid, epoch)) {
                    batch.sequence = Some((pid, epoch, queue.next_sequence));
                    queue.next_sequence = queue.next_sequence.wrapping_add(batch.records.len() as i32) & i32::MAX;
                }
            }
            batch.sent_behind = queue.in_flight > 0;
            queue.in_flight += 1;
            queue.flight_pid = producer_id;
            state.stats.max_in_flight = state.stats.max_in_flight.max(queue.in_flight);
            // One batch per partition per request; another ready one goes in the next request,
            // at once.
            let more = queue.batches.front().is_some_and(|b| {
                b.attempts == 0 && (urgent || queue.batches.len() > 1 || b.bytes >= cfg.batch_size || now >= b.created + cfg.linger)
            });
            if more && queue.in_flight < limit {
                next = Some(now);
            }
            out.entry(leader).or_default().push((topic.clone(), *partition, batch));
        }
        let needs_pid = cfg.idempotence && producer_id.is_none() && state.queues.values().any(|q| !q.batches.is_empty());
        for (topic, partition, b) in expired {
            let n = b.records.len();
            let why = b.last_error.as_ref().map(|e| format!(": last error {e}")).unwrap_or_default();
            self.fail(state, b, Error::Producer(format!("{n} record(s) for {topic}-{partition} expired after the delivery timeout of {:?}{why}", cfg.delivery_timeout)));
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
                        let batches: Vec<Batch> = state.queues.values_mut().flat_map(|q| q.batches.drain(..)).collect();
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
async fn send_batches(shared: &Shared, node: i32, batches: Vec<(String, i32, Batch)>) {
    let cfg = &shared.config;
    let mut by_topic: BTreeMap<&str, Vec<PartitionProduceData>> = BTreeMap::new();
    let mut built = Vec::with_capacity(batches.len());
    for (topic, partition, batch) in &batches {
        let mut builder = RecordBatchBuilder::new().compression(cfg.compression);
        if let Some((pid, epoch, seq)) = batch.sequence {
            builder = builder.producer(pid, epoch, seq);
        }
        let mut result = Ok(());
        for (i, p) in batch.records.iter().enumerate() {
            let mut r = p.record.clone();
            r.offset = i as i64;
            if let Err(e) = builder.append(r) {
                result = Err(e);
                break;
            }
        }
        let bytes = result.and_then(|()| builder.build());
        built.push(bytes.as_ref().map(|_| ()).map_err(|e| e.to_string()));
        if let Ok(bytes) = bytes {
            // `records` is nullable in the 3.9 specs, not in later ones: `From` covers both.
            #[allow(clippy::useless_conversion)]
            by_topic.entry(topic.as_str()).or_default().push(PartitionProduceData { index: *partition, records: Some(bytes).into(), ..Default::default() });
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
        let mut state = shared.lock();
        for ((topic, partition, mut batch), built) in batches.into_iter().zip(built) {
            if let Some(q) = state.queues.get_mut(&(topic.clone(), partition)) {
                q.in_flight = q.in_flight.saturating_sub(1);
            }
            if let Err(e) = built {
                shared.fail(&mut state, batch, Error::Producer(format!("could not build a batch for {topic}-{partition}: {e}")));
                continue;
            }
            let outcome: Result<Option<(i64, i64)>> = match &result {
                Ok(None) => Ok(None),
                Ok(Some(ResponseKind::Produce(r))) => {
                    let p = r.responses.iter().filter(|t| t.name == topic[..]).flat_map(|t| &t.partition_responses).find(|p| p.index == partition);
                    match p {
                        None => Err(Error::UnexpectedResponse(format!("Produce response has no {topic}-{partition}"))),
                        // DUPLICATE_SEQUENCE_NUMBER: an earlier attempt was written.
                        Some(p) if p.error_code == 0 || p.error_code == 46 => Ok(Some((p.base_offset, p.log_append_time_ms))),
                        Some(p) => Err(Error::Broker {
                            code: ErrorCode(p.error_code),
                            message: p.error_message.as_ref().map(|m| m.to_string()),
                            context: format!("produce to {topic}-{partition}"),
                        }),
                    }
                }
                Ok(Some(other)) => Err(Error::UnexpectedResponse(format!("{:?} to Produce", other.api_key()))),
                Err(e) => Err(e.clone()),
            };
            match outcome {
                Ok(offsets) => {
                    if let (Some((pid, epoch, _)), Some(q)) = (batch.sequence, state.queues.get_mut(&(topic.clone(), partition))) {
                        q.acked_pid = Some((pid, epoch));
                    }
                    state.pending -= batch.records.len();
                    for (i, p) in batch.records.into_iter().enumerate() {
                        let (offset, timestamp) = match offsets {
                            Some((base, append)) => (base.saturating_add(i as i64), if append >= 0 { append } else { p.record.timestamp }),
                            None => (-1, p.record.timestamp),
                        };
                        let _ = p.reply.send(Ok(RecordMetadata { topic: topic.clone(), partition, offset, timestamp }));
                    }
                }
                Err(e) => {
                    refresh |= e.code().is_some_and(Client::needs_metadata_refresh) || matches!(e, Error::Io { .. } | Error::Disconnected(_) | Error::Timeout { .. });
                    batch.attempts += 1;
                    let expired = Instant::now() >= batch.created + cfg.delivery_timeout;
                    // Sent behind an earlier batch of its partition, a refusal for its sequence
                    // means that one was not written first (it failed, or came later): resend.
                    let behind = batch.sent_behind && e.code() == Some(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER);
                    if (e.is_retriable() || behind) && batch.attempts <= cfg.retries && !expired {
                        debug!(topic, partition, attempts = batch.attempts, error = %e, "retrying");
                        batch.retry_at = Some(Instant::now() + backoff(cfg, batch.attempts));
                        batch.last_error = Some(e);
                        // Back in its place: before the partition's later batches.
                        let q = state.queues.entry((topic, partition)).or_default();
                        let at = q.batches.iter().position(|b| b.ordinal > batch.ordinal).unwrap_or(q.batches.len());
                        q.batches.insert(at, batch);
                    } else {
                        warn!(topic, partition, error = %e, "batch failed");
                        if batch.sequence.is_some() {
                            // The broker's sequence for this partition no longer matches ours:
                            // start over with a new producer id (sequences from 0).
                            state.producer_id = None;
                            for q in state.queues.values_mut() {
                                q.next_sequence = 0;
                            }
                        }
                        // Past the delivery timeout, say so (with the last error), as the queue
                        // scan does for batches that expire between attempts.
                        let e = if expired && e.is_retriable() && batch.attempts <= cfg.retries {
                            Error::Producer(format!(
                                "{} record(s) for {topic}-{partition} expired after the delivery timeout of {:?}: last error {e}",
                                batch.records.len(),
                                cfg.delivery_timeout
                            ))
                        } else {
                            e
                        };
                        shared.fail(&mut state, batch, e);
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
