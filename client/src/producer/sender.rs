//! The sender (Java's `Sender`): one loop drains the accumulator and gets the producer id;
//! one [`BrokerSender`] task per broker owns that broker's in-flight Produce requests.
//!
//! A broker's requests are written to its connection in the order the loop drained them, by
//! construction: its sender puts each one on the connection before it takes the next, and
//! only waits for their responses concurrently. With idempotence the drain lets up to
//! `max_in_flight` batches of a partition go at once, resent ones alone and in sequence
//! order, so the broker sees each partition's sequences in order.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use futures_util::stream::{FuturesUnordered, StreamExt};
use kwire::messages::{
    produce_request::{PartitionProduceData, TopicProduceData},
    produce_response::TopicProduceResponse,
    ProduceRequest, ProduceResponse,
};
use kwire::runtime::records::{Compression, RecordBatchBuilder};
use kwire::{ApiKey, ByteString, ErrorCode, Uuid};
use tokio::sync::mpsc;
use tracing::{debug, trace, warn, Instrument};

use super::accumulator::{delivery_timeout, observed_ratio, ReadyBatch, RetryAt};
use super::idempotence::{init_producer_id, is_fatal, may_be_written};
use super::transaction::{batch_severity, severity, Severity, LAST_BEFORE_V2};
use super::Shared;
use crate::cluster::{BrokerInfo, Client};
use crate::conn::InFlight;
use crate::error::{Error, ProducerError, Resource, Result};

/// The producer's background loop: drains ready batches to the brokers' senders, gets the
/// producer id, asks for metadata a ready batch lacks; ends once closed and empty.
pub(crate) async fn run(shared: Arc<Shared>) {
    let mut brokers: BTreeMap<i32, mpsc::UnboundedSender<Vec<ReadyBatch>>> = BTreeMap::new();
    let mut pid_attempts = 0u32;
    let mut add_failures = 0u32;
    loop {
        // The callbacks of what the last round completed (failed transactions, fatal errors,
        // expired batches).
        shared.fire();
        if shared.txn.is_some() {
            match add_partitions(&shared).await {
                Some(true) => add_failures = 0,
                Some(false) => {
                    add_failures += 1;
                    tokio::select! {
                        biased;
                        _ = shared.wake.notified() => {}
                        _ = tokio::time::sleep(shared.backoff.delay(add_failures)) => {}
                    }
                    continue;
                }
                None => {}
            }
        }
        let fatal = shared.lock().idempotence.fatal.clone();
        if let Some(e) = fatal {
            // Nothing more is sent: what was queued fails with the fatal error.
            let closed = {
                let mut state = shared.lock();
                state.accumulator.fail_all(&e);
                state.accumulator.closed
            };
            shared.done.notify_waiters();
            if closed {
                shared.fire();
                return;
            }
            shared.wake.notified().await;
            continue;
        }
        let drained = shared.drain(Instant::now());
        shared.metrics.buffer_available.set(shared.memory.available_permits() as f64);
        for (node, batches) in drained.by_node {
            let to = brokers.entry(node).or_insert_with(|| BrokerSender::start(shared.clone(), node));
            if let Err(mpsc::error::SendError(batches)) = to.send(batches) {
                // Its task is gone (it only ends when this loop drops it): start another.
                let to = BrokerSender::start(shared.clone(), node);
                let _ = to.send(batches);
                brokers.insert(node, to);
            }
        }
        // A transactional producer's id comes from init_transactions.
        if drained.needs_producer_id && shared.txn.is_none() {
            match init_producer_id(&shared.client).await {
                Ok(id) => {
                    shared.lock().idempotence.producer_id = Some(id);
                    pid_attempts = 0;
                    continue;
                }
                Err(e) => {
                    pid_attempts += 1;
                    warn!(error = %e, "InitProducerId failed");
                    if !e.is_retriable() {
                        // Nothing can be sent idempotently, now or later (Java's fatal
                        // error): fail what waits, and every later send.
                        {
                            let mut state = shared.lock();
                            let e = state.enter_fatal(&e);
                            state.accumulator.fail_all(&e);
                        }
                        shared.done.notify_waiters();
                        continue;
                    }
                    tokio::time::sleep(shared.backoff.delay(pid_attempts)).await;
                    continue;
                }
            }
        }
        if drained.missing_leader {
            // One background request for the topics in use, however often this comes round.
            shared.client.request_update();
        }
        {
            let state = shared.lock();
            if state.accumulator.closed && state.accumulator.pending == 0 {
                drop(state);
                shared.fire();
                return;
            }
        }
        shared.fire();
        // Bounded sleep: linger and retry deadlines, a short poll while leaders are unknown.
        let mut wait = drained.next.map_or(Duration::from_millis(500), |t| t.saturating_duration_since(Instant::now()));
        if drained.missing_leader {
            wait = wait.min(shared.config.retry_backoff);
        }
        tokio::select! {
            biased;
            _ = shared.wake.notified() => {}
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

/// A transactional producer's work before a drain (Java's `maybeSendAndPollTransactionalRequest`):
/// fails the queued batches of a failed or aborted transaction, and adds the partitions that
/// got their first records to the transaction (V1), so their batches may go. `None` when there
/// was nothing to add, else whether the partitions were added (or the transaction failed);
/// `false`: try again after a backoff.
async fn add_partitions(shared: &Arc<Shared>) -> Option<bool> {
    let txn = shared.txn.as_ref()?;
    let (pid, partitions) = {
        let mut guard = shared.lock();
        let state = &mut *guard;
        let t = state.txn_mut();
        if let Some(e) = t.failing() {
            if state.accumulator.has_queued() {
                if state.accumulator.fail_all(&e) {
                    state.txn_mut().need_bump();
                }
                shared.done.notify_waiters();
            }
            return None;
        }
        let partitions = state.txn_mut().take_new();
        if partitions.is_empty() {
            return None;
        }
        (state.idempotence.producer_id?, partitions)
    };
    let deadline = tokio::time::Instant::now() + shared.config.ack_timeout;
    let result = txn.add_partitions(pid, &partitions, deadline).await;
    let mut state = shared.lock();
    state.txn_mut().counts.add_partitions += 1;
    let added = match result {
        Ok(()) => {
            debug!(partitions = partitions.len(), "partitions added to the transaction");
            state.txn_mut().added(partitions);
            true
        }
        Err(e) => match severity(&e) {
            Severity::Retriable => {
                warn!(error = %e, "AddPartitionsToTxn failed: retrying");
                state.txn_mut().add_again(partitions);
                false
            }
            Severity::Abortable => {
                state.txn_mut().abortable(e);
                true
            }
            Severity::Fatal => {
                state.enter_fatal(&e);
                true
            }
        },
    };
    drop(state);
    shared.done.notify_waiters();
    Some(added)
}

/// A request put on its connection (`None`: nothing to send), or why it could not be.
type Dispatched = (Request, Option<Result<InFlight<ProduceRequest>>>);

/// The output of the future in `slot`, or never when there is none.
async fn until<F: Future + Unpin>(slot: &mut Option<F>) -> F::Output {
    match slot {
        Some(f) => f.await,
        None => std::future::pending().await,
    }
}

/// The batches of one Produce request and whether each could be encoded.
struct Request {
    batches: Vec<ReadyBatch>,
    built: Vec<Result<(), String>>,
    /// The topics' ids as sent (Produce v13+ names topics by id, and so does its response).
    ids: BTreeMap<String, Uuid>,
    /// When it was built, for the request latency.
    built_at: Instant,
}

/// The compression ratio of each batch built for the first time, with its topic.
type Ratios = Vec<(Arc<str>, f32)>;

/// A magic v2 record batch's header, in bytes.
const BATCH_HEADER: usize = 61;

/// The last Produce version that names topics (v13 names them by id).
const LAST_PRODUCE_BY_NAME: i16 = 12;

/// The sender of one broker: a task that takes the drained requests for it in order, puts
/// each on the broker's connection before the next, and completes them as responses come.
struct BrokerSender {
    shared: Arc<Shared>,
    node: i32,
}

impl BrokerSender {
    /// Starts the task; it ends when the returned channel is dropped and its requests are
    /// answered.
    fn start(shared: Arc<Shared>, node: i32) -> mpsc::UnboundedSender<Vec<ReadyBatch>> {
        let (tx, rx) = mpsc::unbounded_channel();
        let span = tracing::debug_span!("kafka.producer.broker", node);
        tokio::spawn(BrokerSender { shared, node }.run(rx).instrument(span));
        tx
    }

    async fn run(self, mut rx: mpsc::UnboundedReceiver<Vec<ReadyBatch>>) {
        let mut in_flight = FuturesUnordered::new();
        // The request being put on the connection: the next one waits for it (that is the
        // order), the responses do not. They must not: a re-authentication waits for every
        // response before it lets another request on the connection.
        let mut dispatching: Option<Pin<Box<dyn Future<Output = Dispatched> + Send + '_>>> = None;
        let mut open = true;
        loop {
            if !open && dispatching.is_none() {
                break;
            }
            // Answers first (they free room for more), then the request being written, then
            // the next one: a fixed order, so that a seeded run replays.
            tokio::select! {
                biased;
                Some((request, result)) = in_flight.next(), if !in_flight.is_empty() => self.answered(request, result),
                (request, sent) = until(&mut dispatching) => {
                    dispatching = None;
                    in_flight.push(async move {
                        let result = match sent {
                            None => Ok(None),
                            Some(Ok(pending)) => pending.response_if_any().await,
                            Some(Err(e)) => Err(e),
                        };
                        (request, result)
                    });
                }
                next = rx.recv(), if open && dispatching.is_none() => match next {
                    Some(batches) => dispatching = Some(Box::pin(self.dispatch(batches))),
                    None => open = false,
                },
            }
        }
        while let Some((request, result)) = in_flight.next().await {
            self.answered(request, result);
        }
    }

    /// Encodes the batches and puts the request on the broker's connection (nothing is sent
    /// when none could be encoded).
    async fn dispatch(&self, batches: Vec<ReadyBatch>) -> Dispatched {
        let (request, body, ratios) = self.build(batches);
        let sent = match body {
            None => None,
            Some(body) => {
                let v1 = {
                    let mut state = self.shared.lock();
                    state.requests += 1;
                    for (topic, ratio) in ratios {
                        state.accumulator.observe_compression(&topic, ratio);
                    }
                    state.txn.as_ref().is_some_and(|t| !t.v2())
                };
                self.shared.metrics.requests.increment(1);
                // Java's rule: v13+ only when every topic of the request has an id.
                let mut max = if request.ids.values().all(|id| *id != Uuid::ZERO) { i16::MAX } else { LAST_PRODUCE_BY_NAME };
                if v1 {
                    // Transactions V1: v12+ would tell the broker to add the partitions itself.
                    max = max.min(LAST_BEFORE_V2.produce);
                }
                Some(self.shared.client.dispatch(self.node, body, max).await)
            }
        };
        (request, sent)
    }

    /// Encodes the batches into one Produce request (`None` when none could be encoded), with
    /// the compression ratio of each batch sent for the first time, by topic.
    fn build(&self, batches: Vec<ReadyBatch>) -> (Request, Option<ProduceRequest>, Ratios) {
        let cfg = &self.shared.config;
        let mut by_topic: BTreeMap<&str, Vec<PartitionProduceData>> = BTreeMap::new();
        let mut built = Vec::with_capacity(batches.len());
        let metrics = &self.shared.metrics;
        let now = Instant::now();
        let mut records = 0;
        let mut ratios = Vec::new();
        for ReadyBatch { topic, partition, batch } in &batches {
            let mut builder = RecordBatchBuilder::new()
                .compression(cfg.compression)
                .compress_only_if_smaller(cfg.compress_only_if_smaller)
                .transactional(self.shared.txn.is_some());
            if let Some(s) = batch.sequence {
                builder = builder.producer(s.producer.id, s.producer.epoch, s.base);
                trace!(node = self.node, %topic, partition, sequence = ?s, records = batch.records.len(), attempts = batch.attempts, "batch sent");
            }
            // The records are encoded where they are (their offsets are their indexes), into
            // memory the thread reuses once the batch is acknowledged and dropped.
            let result = builder.build_from_pooled(&batch.records);
            built.push(result.as_ref().map(|_| ()).map_err(|e| e.to_string()));
            if let Ok(bytes) = result {
                records += batch.records.len();
                metrics.batch_size.record(bytes.len() as f64);
                // As Java's: the batch as sent over its records uncompressed (uncompressed,
                // the batch less its header: no second pass over the records).
                let uncompressed = match cfg.compression {
                    Compression::None => Ok(bytes.len().saturating_sub(BATCH_HEADER)),
                    _ => builder.uncompressed_size(&batch.records),
                };
                if let Ok(n @ 1..) = uncompressed {
                    metrics.compression_rate.record(bytes.len() as f64 / n as f64);
                    // Java updates its estimate as a batch is first closed, not on resends.
                    if cfg.compression != Compression::None && batch.attempts == 0 {
                        ratios.push((topic.clone(), observed_ratio(bytes.len(), n)));
                    }
                }
                if batch.attempts == 0 {
                    metrics.record_queue_time.record(crate::metrics::millis(batch.age(now)));
                }
                // `records` is nullable in the 3.9 specs, not in later ones: `From` covers both.
                #[allow(clippy::useless_conversion)]
                by_topic.entry(&**topic).or_default().push(PartitionProduceData { index: *partition, records: Some(bytes).into(), ..Default::default() });
            }
        }
        let metadata = self.shared.client.metadata();
        let ids: BTreeMap<String, Uuid> = by_topic.keys().map(|t| (t.to_string(), metadata.topics.get(*t).map_or(Uuid::ZERO, |i| i.id))).collect();
        if records > 0 {
            metrics.record_send.increment(records as u64);
            metrics.records_per_request.record(records as f64);
        }
        let body = (!by_topic.is_empty()).then(|| ProduceRequest {
            transactional_id: self.shared.txn.as_ref().map(|t| ByteString::from(t.id.to_string())),
            acks: cfg.acks.wire(),
            timeout_ms: cfg.ack_timeout.as_millis().min(i32::MAX as u128) as i32,
            topic_data: by_topic
                .into_iter()
                .map(|(t, partition_data)| TopicProduceData {
                    name: ByteString::from(t.to_owned()),
                    topic_id: ids.get(t).copied().unwrap_or(Uuid::ZERO),
                    partition_data,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        });
        (Request { batches, built, ids, built_at: now }, body, ratios)
    }

    /// Takes a Produce response (or the request's failure) in: each batch is completed,
    /// requeued for a retry, or failed.
    fn answered(&self, request: Request, result: Result<Option<ProduceResponse>>) {
        let shared = &self.shared;
        let cfg = &shared.config;
        let metrics = &shared.metrics;
        if let Ok(Some(r)) = &result {
            metrics.request_latency.record(crate::metrics::millis(request.built_at.elapsed()));
            metrics.throttle_time.record(f64::from(r.throttle_time_ms.max(0)));
        }
        let mut refresh = false;
        let hinted = take_leader_hints(&shared.client, &result, &request.ids);
        {
            let mut guard = shared.lock();
            let state = &mut *guard;
            state.accumulator.request_answered(self.node);
            for (ReadyBatch { topic, partition, mut batch }, built) in request.batches.into_iter().zip(request.built) {
                state.accumulator.answered(&topic, partition);
                if let Err(reason) = built {
                    let e = ProducerError::Encoding { topic: topic.to_string(), partition, reason };
                    state.accumulator.fail(batch, Error::Producer(e));
                    continue;
                }
                let id = request.ids.get(&*topic).copied().unwrap_or(Uuid::ZERO);
                let outcome = outcome(&result, &topic, id, partition);
                if batch.sequence.is_some() {
                    match &outcome {
                        Ok(at) => trace!(node = self.node, %topic, partition, sequence = ?batch.sequence, offset = ?at.map(|a| a.0), "batch answered"),
                        Err((e, log_start)) => trace!(node = self.node, %topic, partition, sequence = ?batch.sequence, error = %e, log_start, "batch answered"),
                    }
                }
                match outcome {
                    Ok(offsets) => {
                        if let (Some(sent), Some(q)) = (batch.sequence, state.accumulator.queue(&topic, partition)) {
                            q.sequences.acked(sent, batch.records.len());
                        }
                        state.accumulator.complete(batch, Ok(offsets));
                    }
                    Err((e, _)) if e.code() == Some(ErrorCode::MESSAGE_TOO_LARGE) && batch.records.len() > 1 && !batch.expired(cfg, Instant::now()) => {
                        // Java's splitAndReenqueue: too large for the broker, not for each of its
                        // records; the halves go again in its place (not counted as an attempt).
                        let records = batch.records.len();
                        match batch.split() {
                            Ok((head, tail)) => {
                                debug!(%topic, partition, records, halves = ?(head.records.len(), tail.records.len()), "MESSAGE_TOO_LARGE: batch split");
                                state.splits += 1;
                                metrics.batch_split.increment(1);
                                state.accumulator.requeue(&topic, partition, head);
                                state.accumulator.requeue(&topic, partition, tail);
                            }
                            Err(batch) => state.accumulator.fail(*batch, e),
                        }
                    }
                    Err((e, log_start_offset)) => {
                        let hint = hinted.iter().any(|&(t, p)| t == &*topic && p == partition);
                        refresh |= !hint
                            && (e.code().is_some_and(Client::needs_metadata_refresh)
                                || matches!(e, Error::Io { .. } | Error::Disconnected(_) | Error::Timeout { .. }));
                        batch.attempts += 1;
                        batch.uncertain |= may_be_written(&e);
                        let expired = batch.expired(cfg, Instant::now());
                        let may_retry = batch.attempts <= cfg.retries && !expired;
                        let sequences = state.accumulator.queue(&topic, partition).map(|q| &mut q.sequences);
                        let retry = may_retry && state.idempotence.can_retry(sequences, batch.sequence, batch.records.len(), &e, log_start_offset);
                        if retry {
                            debug!(%topic, partition, attempts = batch.attempts, sequence = ?batch.sequence, error = %e, "retrying");
                            let now = Instant::now();
                            batch.retry_at =
                                Some(RetryAt { earliest: now + shared.backoff.floor(batch.attempts), at: now + shared.backoff.delay(batch.attempts) });
                            batch.last_error = Some(e);
                            metrics.record_retry.increment(batch.records.len() as u64);
                            state.accumulator.requeue(&topic, partition, batch);
                        } else {
                            warn!(%topic, partition, sequence = ?batch.sequence, expired, error = %e, "batch failed");
                            if state.txn.is_some() {
                                // Java's maybeTransitionToErrorState: a failed batch of a
                                // transaction ends the producer or the transaction.
                                match batch_severity(&e) {
                                    Severity::Fatal => {
                                        state.enter_fatal(&e);
                                    }
                                    _ => state.txn_mut().abortable(e.clone()),
                                }
                            } else if is_fatal(&e) {
                                state.idempotence.fatal(&e);
                            }
                            if batch.sequence.is_some() {
                                let sequences = state.accumulator.queue(&topic, partition).map(|q| &mut q.sequences);
                                if expired {
                                    // Java's in-flight expiry, failBatch without adjusting
                                    // sequences (rule 3): whatever the answer, an earlier attempt
                                    // may have been written, so what follows it is unresolved
                                    // until the later batches answer; no epoch bump for it.
                                    if let Some(q) = sequences {
                                        q.expired(batch.sequence, batch.records.len());
                                    }
                                } else {
                                    state.idempotence.failed(sequences, batch.sequence, batch.records.len(), &e, batch.attempts <= cfg.retries);
                                }
                            }
                            // Past the delivery timeout, say so (with the last error), as the
                            // drain does for batches that expire between attempts.
                            let e = if expired && e.is_retriable() && batch.attempts <= cfg.retries {
                                delivery_timeout(cfg, &topic, partition, batch.records.len(), Some(e))
                            } else {
                                e
                            };
                            state.accumulator.fail(batch, e);
                        }
                    }
                }
            }
        }
        shared.fire();
        shared.done.notify_waiters();
        if refresh {
            // The retries wait for the new metadata: the loop is woken after it.
            let shared = shared.clone();
            tokio::spawn(async move {
                let _ = shared.client.refresh_in_use().await;
                shared.wake.notify_one();
            });
        } else {
            shared.wake.notify_one();
        }
    }
}

/// The leader hints of a Produce response (KIP-951, v10+: a refused partition's
/// `CurrentLeader`, the leaders' `NodeEndpoints`) taken into the metadata cache; the
/// partitions whose leader they gave, to be retried there with no Metadata request.
fn take_leader_hints<'a>(client: &Client, result: &Result<Option<ProduceResponse>>, ids: &'a BTreeMap<String, Uuid>) -> Vec<(&'a str, i32)> {
    let Ok(Some(r)) = result else { return Vec::new() };
    let hints: Vec<(&str, i32, i32, i32)> = r
        .responses
        .iter()
        .filter_map(|t| ids.iter().find(|(name, id)| names(t, name, **id)).map(|(name, _)| (name.as_str(), t)))
        .flat_map(|(name, t)| t.partition_responses.iter().map(move |p| (name, p)))
        .filter(|(_, p)| p.error_code != ErrorCode::NONE.0 && p.current_leader.leader_id >= 0)
        .map(|(t, p)| (t, p.index, p.current_leader.leader_id, p.current_leader.leader_epoch))
        .collect();
    if hints.is_empty() {
        return Vec::new();
    }
    let endpoints = r.node_endpoints.iter().map(|n| BrokerInfo::endpoint(n.node_id, &n.host, n.port, n.rack.as_deref()));
    if client.update_leaders(hints.iter().copied(), endpoints) == 0 {
        return Vec::new();
    }
    // Those taken now point at their hinted leader.
    let m = client.metadata();
    hints.into_iter().filter(|&(t, p, leader, _)| m.leader(t, p) == Some(leader)).map(|(t, p, _, _)| (t, p)).collect()
}

/// One partition's outcome in a Produce response: the base offset and append time, or the
/// error with the partition's log start offset when the broker sent one.
fn outcome(result: &Result<Option<ProduceResponse>>, topic: &str, id: Uuid, partition: i32) -> Result<Option<(i64, i64)>, (Error, i64)> {
    match result {
        Ok(None) => Ok(None),
        Ok(Some(r)) => {
            let p = r.responses.iter().filter(|t| names(t, topic, id)).flat_map(|t| &t.partition_responses).find(|p| p.index == partition);
            match p {
                None => Err((Error::missing(ApiKey::Produce, format_args!("{topic}-{partition}")), -1)),
                // DUPLICATE_SEQUENCE_NUMBER: an earlier attempt was written.
                Some(p) if matches!(ErrorCode(p.error_code), ErrorCode::NONE | ErrorCode::DUPLICATE_SEQUENCE_NUMBER) => {
                    Ok(Some((p.base_offset, p.log_append_time_ms)))
                }
                Some(p) => Err((produce_error(topic, partition, ErrorCode(p.error_code), p.error_message.as_deref()), p.log_start_offset)),
            }
        }
        Err(e) => Err((e.clone(), -1)),
    }
}

/// Whether a topic of a Produce response is `topic` (by name up to v12, by id from v13).
fn names(t: &TopicProduceResponse, topic: &str, id: Uuid) -> bool {
    if t.topic_id != Uuid::ZERO {
        t.topic_id == id
    } else {
        *t.name == *topic
    }
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
