//! The producer: Java's partitioning, per-partition batching (batch size, linger),
//! compression, acks 0/1/all, idempotence (InitProducerId, per-partition sequences), retries of
//! retriable errors with backoff inside a delivery timeout, bounded buffer memory, `flush` and
//! `close`.
//!
//! Laid out as Java's producer is: [`Producer`] (this module) puts records into the
//! accumulator (`accumulator`: per-partition batches); the sender (`sender`) drains ready
//! batches to one sender task per broker, which owns that broker's in-flight requests and
//! keeps them in order; `idempotence` holds the producer id, epoch and sequences;
//! `transaction` the transaction state machine and the transaction coordinator's requests
//! (with a `transactional_id`); `delivery` the futures `send` returns.
//!
//! With idempotence up to `max_in_flight` (5) batches of a partition are in flight at once,
//! as Java allows: the broker writes a partition's batches only in sequence order, so one
//! refused behind an earlier failure (OUT_OF_ORDER_SEQUENCE_NUMBER) is resent after it, in
//! order, and a resent one already written is a duplicate, not a second copy. Without
//! idempotence one batch per partition is in flight, so retries cannot reorder. Partitions
//! and brokers proceed in parallel: Produce requests to one broker are pipelined on its
//! connection, up to `max_in_flight` of them as Java's `max.in.flight.requests.per.connection`
//! (batches that become ready meanwhile go together in the next request).

mod accumulator;
mod delivery;
mod idempotence;
mod sender;
mod transaction;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kwire::runtime::records::{Compression, Record};
use kwire::Bytes;
use tokio::sync::{Notify, Semaphore, TryAcquireError};
use tracing::Instrument;

use self::accumulator::{size_upper_bound, Accumulator, BATCH_OVERHEAD};
use self::delivery::Callback;
use self::idempotence::{Idempotence, ProducerIdAndEpoch};
use self::transaction::{Transactions, TxnCoordinator};
use crate::cluster::Client;
use crate::error::{Error, ProducerError, Result};
use crate::future::ClientFuture;
use crate::metrics::ProducerMetrics;
use crate::random::Random;
use crate::retry::Backoff;
#[cfg(feature = "telemetry")]
use crate::telemetry::Telemetry;

pub use self::delivery::{Delivery, RecordMetadata};

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
    /// `batch.size` in bytes (16384). As in Java, a batch is full when its header and its
    /// records (each at its encoded size) reach it, the records counted compressed by the
    /// topic's estimated compression ratio (plus 5 %) when `compression` is set: the estimate
    /// starts at 1 and follows the ratio of the batches built.
    pub batch_size: usize,
    /// `linger.ms` (5 ms).
    pub linger: Duration,
    /// `compression.type` (none).
    pub compression: Compression,
    /// Send a batch uncompressed when `compression` does not make it smaller (false). Data
    /// that does not compress (encrypted, already compressed, random) then costs the broker
    /// no inflating to validate it and consumers none to read it. librdkafka and franz-go
    /// always do this; Java's producer has no such setting and compresses every batch, hence
    /// the default.
    pub compress_only_if_smaller: bool,
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
    /// batches' sequences): Produce requests in flight to one broker at once, as Java's; and
    /// batches of one partition in flight at once with idempotence (without it 1, so that a
    /// retry cannot reorder a partition).
    pub max_in_flight: usize,
    /// `transactional.id` (none): makes the producer transactional (KIP-98; needs
    /// idempotence): `init_transactions` once, then records only inside transactions.
    pub transactional_id: Option<String>,
    /// `transaction.timeout.ms` (60 s): how long the coordinator lets a transaction stay open
    /// before it aborts it (and bumps the epoch, so the producer's next call fails).
    pub transaction_timeout: Duration,
    /// `partitioner.adaptive.partitioning.enable` (true): unkeyed records go more often to the
    /// partitions whose brokers keep up (shorter queues), as Java's built-in partitioner does.
    pub partitioner_adaptive: bool,
    /// `partitioner.ignore.keys` (false): keyed records are spread as unkeyed ones are, not by
    /// the hash of their key.
    pub partitioner_ignore_keys: bool,
    /// `enable.metrics.push` (true): push the producer's metrics to the brokers when a
    /// client-metrics subscription asks for them (KIP-714; feature `telemetry`, without which
    /// nothing is pushed).
    pub enable_metrics_push: bool,
}

impl Default for ProducerConfig {
    fn default() -> Self {
        ProducerConfig {
            acks: Acks::All,
            idempotence: true,
            batch_size: 16384,
            linger: Duration::from_millis(5),
            compression: Compression::None,
            compress_only_if_smaller: false,
            retries: u32::MAX,
            retry_backoff: Duration::from_millis(100),
            retry_backoff_max: Duration::from_secs(1),
            delivery_timeout: Duration::from_secs(120),
            buffer_memory: 32 << 20,
            max_block: Duration::from_secs(60),
            max_request_size: 1 << 20,
            ack_timeout: Duration::from_secs(30),
            max_in_flight: 5,
            transactional_id: None,
            enable_metrics_push: true,
            transaction_timeout: Duration::from_secs(60),
            partitioner_adaptive: true,
            partitioner_ignore_keys: false,
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
    /// Batches split in two and resent after the broker refused them as too large
    /// (MESSAGE_TOO_LARGE; Java's `batch-split-rate`).
    pub batch_splits: u64,
    /// AddPartitionsToTxn requests (transactions V1).
    pub add_partitions_to_txn: u64,
    /// AddOffsetsToTxn requests (transactions V1).
    pub add_offsets_to_txn: u64,
    /// EndTxn requests.
    pub end_txn: u64,
    /// The current transaction runs Transactions V2 (KIP-890: partitions added by their
    /// leaders, the epoch bumped by every EndTxn).
    pub transactions_v2: bool,
}

/// The producer's state, under one lock: the accumulator and the idempotence state change
/// together (a batch's sequence is given as it leaves its queue).
#[derive(Default)]
struct State {
    accumulator: Accumulator,
    idempotence: Idempotence,
    /// The transaction state, with a `transactional_id`.
    txn: Option<Transactions>,
    /// Produce requests sent.
    requests: u64,
    /// Batches split after MESSAGE_TOO_LARGE.
    splits: u64,
}

/// What the producer's handles, its sender loop and its broker senders share.
struct Shared {
    client: Client,
    config: ProducerConfig,
    /// Between attempts of a batch or of InitProducerId.
    backoff: Backoff,
    state: Mutex<State>,
    /// Wakes the sender loop (a batch is ready, a response came, a flush).
    wake: Notify,
    /// Wakes `flush` (records were completed, or their callbacks called).
    done: Notify,
    /// Callbacks being called now, taken from the state (`flush` waits for them).
    firing: AtomicUsize,
    /// Held while callbacks are called: one sender task at a time calls them, so that they
    /// run in the order their batches completed.
    fire_order: Mutex<()>,
    memory: Arc<Semaphore>,
    /// The transaction coordinator, with a `transactional_id`.
    txn: Option<TxnCoordinator>,
    metrics: ProducerMetrics,
    /// Pushes the metrics (KIP-714), unless `enable_metrics_push` is off.
    #[cfg(feature = "telemetry")]
    telemetry: tokio::sync::Mutex<Option<Telemetry>>,
}

impl State {
    /// The fatal error the producer is in, if any.
    fn fatal(&self) -> Result<()> {
        self.idempotence.fatal.clone().map_or(Ok(()), Err)
    }

    /// Whether records may be sent: not after a fatal error, not once closed, only inside a
    /// transaction when transactional.
    fn usable(&self) -> Result<()> {
        self.fatal()?;
        if self.accumulator.closed {
            return Err(Error::Producer(ProducerError::Closed));
        }
        if let Some(t) = &self.txn {
            t.check_send()?;
        }
        Ok(())
    }

    /// Enters the fatal state with `e` (the first error stays): every later call fails with
    /// the returned error (for a transactional producer, [`TransactionError::Fatal`]).
    ///
    /// [`TransactionError::Fatal`]: crate::TransactionError::Fatal
    fn enter_fatal(&mut self, e: &Error) -> Error {
        match &mut self.txn {
            Some(t) => {
                let e = t.fatal(e);
                self.idempotence.fatal(&e);
                e
            }
            None => {
                self.idempotence.fatal(e);
                self.idempotence.fatal.clone().unwrap_or_else(|| e.clone())
            }
        }
    }

    /// The transaction state (created on first use: only transactional producers use it).
    fn txn_mut(&mut self) -> &mut Transactions {
        self.txn.get_or_insert_with(Transactions::new)
    }

    /// A new producer id or epoch: every partition's sequences start from 0 under it (the
    /// transactional producer changes it only with nothing queued or in flight).
    fn set_producer_id(&mut self, id: ProducerIdAndEpoch) {
        if self.idempotence.producer_id.is_some_and(|p| p.id == id.id) {
            self.idempotence.epoch_bumps += 1;
        }
        self.idempotence.producer_id = Some(id);
        self.accumulator.reset_sequences();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }

    /// The sender's completion step: calls the callbacks of the records completed since the
    /// last one, with the producer's lock released (a callback may call into the producer).
    /// Only the sender's tasks complete batches (a response, an expiry, a failed transaction,
    /// a fatal error), and each calls this after it has, as Java's sender thread calls them
    /// after each response.
    fn fire(&self) {
        let _order = crate::sync::lock(&self.fire_order);
        let fired = {
            let mut state = self.lock();
            if state.accumulator.fired.is_empty() {
                return;
            }
            // Counted under the lock that held them, so that `flush` never sees neither.
            self.firing.fetch_add(1, Ordering::AcqRel);
            std::mem::take(&mut state.accumulator.fired)
        };
        for f in fired {
            f.call();
        }
        self.firing.fetch_sub(1, Ordering::AcqRel);
        self.done.notify_waiters();
    }

    /// The accumulator's ready batches, by leader.
    fn drain(&self, now: tokio::time::Instant) -> accumulator::Drained {
        let metadata = self.client.metadata();
        let mut guard = self.lock();
        let state = &mut *guard;
        let mut drained = state.accumulator.drain(&self.config, &metadata, &mut state.idempotence, state.txn.as_ref(), now);
        if let (Some(t), Some(e)) = (state.txn.as_mut(), drained.failed.take()) {
            // A record of the transaction failed: it cannot commit.
            t.abortable(e);
        }
        if state.accumulator.pending == 0 {
            self.done.notify_waiters();
        }
        drained
    }
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
        self.0.lock().accumulator.closed = true;
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
        if config.transactional_id.is_some() && !config.idempotence {
            return Err(Error::Config("a transactional_id needs idempotence".into()));
        }
        if config.transactional_id.as_deref() == Some("") {
            return Err(Error::Config("transactional_id must not be empty".into()));
        }
        let permits = config.buffer_memory.min(Semaphore::MAX_PERMITS);
        let random = Random::new(client.config().connection.seed, "producer");
        let txn = config
            .transactional_id
            .as_deref()
            .map(|id| TxnCoordinator::new(client.clone(), id, config.transaction_timeout, config.retry_backoff, config.retry_backoff_max));
        let mut state = State::default();
        let metrics = ProducerMetrics::new(&client.config().connection.client_id, permits);
        state.accumulator.record_errors = Some(metrics.record_error.clone());
        state.accumulator.random = random.clone();
        if txn.is_some() {
            state.txn = Some(Transactions::new());
            state.idempotence.transactional = true;
        }
        #[cfg(feature = "telemetry")]
        let telemetry = config.enable_metrics_push.then(|| Telemetry::start(client.clone(), metrics.telemetry(), "producer"));
        let shared = Arc::new(Shared {
            metrics,
            #[cfg(feature = "telemetry")]
            telemetry: tokio::sync::Mutex::new(telemetry),
            client,
            backoff: Backoff::exponential(config.retry_backoff, config.retry_backoff_max, random),
            config,
            txn,
            state: Mutex::new(state),
            wake: Notify::new(),
            done: Notify::new(),
            firing: AtomicUsize::new(0),
            fire_order: Mutex::new(()),
            memory: Arc::new(Semaphore::new(permits)),
        });
        let sender = tokio::spawn(sender::run(shared.clone()).instrument(tracing::debug_span!("kafka.producer")));
        Ok(Producer { shared: shared.clone(), sender: Arc::new(Mutex::new(Some(sender))), _last: Arc::new(LastHandle(shared)) })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.shared.lock()
    }

    /// Counts of what the producer has done so far.
    pub fn stats(&self) -> ProducerStats {
        let state = self.shared.lock();
        let txn = state.txn.as_ref();
        let counts = txn.map(|t| t.counts).unwrap_or_default();
        ProducerStats {
            requests: state.requests,
            max_in_flight: state.accumulator.max_in_flight,
            epoch_bumps: state.idempotence.epoch_bumps,
            batch_splits: state.splits,
            add_partitions_to_txn: counts.add_partitions,
            add_offsets_to_txn: counts.add_offsets,
            end_txn: counts.end_txn,
            transactions_v2: txn.is_some_and(Transactions::v2),
        }
    }

    /// Queues a record; the returned [`Delivery`] resolves to where it was written. Waits (at
    /// most `max_block`) for buffer memory and for the topic's metadata.
    ///
    /// Allocates nothing per record in the common case (memory free, the topic's metadata
    /// cached): the record joins its partition's open batch, which holds one completion for
    /// all its records.
    ///
    /// After a fatal error, as Java's producer has them (fenced by a newer producer with the
    /// same id: PRODUCER_FENCED; CLUSTER_AUTHORIZATION_FAILED or
    /// TRANSACTIONAL_ID_AUTHORIZATION_FAILED; InitProducerId failing non-retriably), every
    /// `send` and `flush` fails at once with that same error, and what was queued fails with it.
    ///
    /// With a `transactional_id`, records are sent only inside a transaction
    /// ([`begin_transaction`](Producer::begin_transaction)); otherwise this fails with a
    /// [`TransactionError`](crate::TransactionError).
    pub async fn send(&self, record: ProducerRecord) -> Result<Delivery> {
        let delivery = self.enqueue(record, None).await?;
        // Without a callback the record always has a delivery.
        delivery.ok_or(Error::Producer(ProducerError::Dropped))
    }

    /// Queues a record, as [`send`](Producer::send), and calls `callback` with where it was
    /// written or why it failed (Java's `send(record, callback)`): no future per record to
    /// poll, which costs less where many records are in flight and each outcome is wanted.
    ///
    /// The callback runs on the producer's sender task, after the producer's lock is
    /// released, in record order within a partition; it should be quick (hand slow work to
    /// another task). It is called exactly once for each record queued; if this returns an
    /// error, the record was not queued and the callback is not called. `flush` returns after
    /// the callbacks of the records it waited for have been called.
    ///
    /// ```no_run
    /// # async fn example(producer: kwire_client::Producer) -> kwire_client::Result<()> {
    /// use kwire_client::ProducerRecord;
    /// producer
    ///     .send_with(ProducerRecord::new("events", "hello"), |result| match result {
    ///         Ok(m) => println!("written at {}-{}@{}", m.topic, m.partition, m.offset),
    ///         Err(e) => eprintln!("not written: {e}"),
    ///     })
    ///     .await?;
    /// producer.flush().await
    /// # }
    /// ```
    pub async fn send_with<F>(&self, record: ProducerRecord, callback: F) -> Result<()>
    where
        F: FnOnce(Result<RecordMetadata>) + Send + 'static,
    {
        self.enqueue(record, Some(Box::new(callback))).await.map(drop)
    }

    /// `send` and `send_with`: the record's delivery, none with a callback.
    async fn enqueue(&self, record: ProducerRecord, callback: Option<Callback>) -> Result<Option<Delivery>> {
        let cfg = &self.shared.config;
        self.lock().usable()?;
        // The record as its batch will hold it, from here on.
        let ProducerRecord { topic: name, partition, key, value, headers, timestamp } = record;
        let mut record = Record::new(0, 0, key, value);
        for (k, v) in headers {
            record = record.with_header(k, v);
        }
        let size = size_upper_bound(&record);
        // Java's ensureValidRecordSize: the record in a batch of its own.
        let alone = size.saturating_add(BATCH_OVERHEAD);
        if alone > cfg.max_request_size || alone > cfg.buffer_memory {
            return Err(Error::Producer(ProducerError::RecordTooLarge {
                size: alone,
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
            // As Java's producer: a topic that does not exist is created where the broker allows.
            match self.shared.client.topic_with(&name, true).await {
                Ok(t) if !t.partitions.is_empty() => break t,
                Ok(_) | Err(Error::UnknownTopicOrPartition { .. }) if tokio::time::Instant::now() < deadline() => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Ok(_) | Err(Error::UnknownTopicOrPartition { .. }) => {
                    return Err(Error::unknown(&name, None, format!("not present in metadata after {:?} (max_block)", cfg.max_block)))
                }
                Err(e) => return Err(e),
            }
        };
        // As Java's, a record without a timestamp is stamped once its topic is known.
        record.timestamp = timestamp.unwrap_or_else(now_ms);
        let mut state = self.lock();
        state.usable()?;
        let (delivery, partition, mut opened_or_filled) = state.accumulator.append(cfg, &name, &topic, partition, record, memory, callback)?;
        if let Some(t) = state.txn.as_mut() {
            // A partition new to the transaction: the sender adds it (V1) before its batch.
            opened_or_filled |= t.record_for(&name, partition);
        }
        drop(state);
        if opened_or_filled || cfg.linger.is_zero() {
            self.shared.wake.notify_one();
        }
        Ok(delivery)
    }

    /// Sends everything queued now and waits until every record sent before has succeeded or
    /// failed.
    ///
    /// After a fatal error (see [`send`](Producer::send)) it fails at once with that error.
    pub fn flush(&self) -> ClientFuture<'_, Result<()>> {
        ClientFuture::boxed(self.flush_boxed())
    }

    async fn flush_boxed(&self) -> Result<()> {
        self.lock().fatal()?;
        self.wait_sent().await;
        self.lock().fatal()
    }

    /// Waits until every record sent before has succeeded or failed.
    async fn wait_sent(&self) {
        self.lock().accumulator.flushing += 1;
        self.shared.wake.notify_one();
        loop {
            let notified = self.shared.done.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let completed = {
                let state = self.lock();
                state.accumulator.pending == 0 && state.accumulator.fired.is_empty()
            };
            if completed && self.shared.firing.load(Ordering::Acquire) == 0 {
                break;
            }
            notified.await;
        }
        self.lock().accumulator.flushing -= 1;
    }

    /// Refuses new records, delivers (or fails) the queued ones and stops the sender.
    pub fn close(&self) -> ClientFuture<'_, Result<()>> {
        ClientFuture::boxed(self.close_boxed())
    }

    async fn close_boxed(&self) -> Result<()> {
        self.lock().accumulator.closed = true;
        self.wait_sent().await;
        self.shared.wake.notify_one();
        let handle = crate::sync::lock(&self.sender).take();
        if let Some(h) = handle {
            let _ = h.await;
        }
        #[cfg(feature = "telemetry")]
        if let Some(mut t) = self.shared.telemetry.lock().await.take() {
            t.close(self.shared.client.config().connection.request_timeout).await;
        }
        Ok(())
    }

    /// The id the brokers know this producer's telemetry by (Java's `clientInstanceId`), waiting
    /// at most `timeout` for the first GetTelemetrySubscriptions answer. `None` with
    /// `enable_metrics_push` off, on brokers without KIP-714, when it did not come in time, or
    /// without the `telemetry` feature.
    pub fn client_instance_id(&self, timeout: Duration) -> ClientFuture<'_, Option<kwire::Uuid>> {
        ClientFuture::boxed(self.client_instance_id_boxed(timeout))
    }

    async fn client_instance_id_boxed(&self, timeout: Duration) -> Option<kwire::Uuid> {
        #[cfg(feature = "telemetry")]
        {
            let telemetry = self.shared.telemetry.lock().await;
            crate::telemetry::wait_instance_id(telemetry.as_ref()?, timeout).await
        }
        #[cfg(not(feature = "telemetry"))]
        {
            let _ = timeout;
            None
        }
    }
}
