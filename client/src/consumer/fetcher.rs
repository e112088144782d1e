//! The fetcher (Java's `Fetcher`): Fetch requests to the leaders of the fetchable partitions
//! with incremental fetch sessions (KIP-227), the records they return (read_committed skips
//! aborted transactions), buffered until `poll` hands them out; and what a log truncated under
//! a position (a diverging epoch, OffsetForLeaderEpoch) does to it and to the buffered records.
//!
//! Per broker, as franz-go's sources: at most one Fetch in flight, in a task of its own whose
//! answer is taken in by the next `poll` that finds it (`send`, `complete`); the next Fetch to
//! a broker goes out once its last answer is handed out in full. The task also reads the
//! answer's batches (headers, CRCs, compressed records inflated: [`read_batches`]), so answers
//! from several brokers are read in parallel, and while the caller works, not in `poll`.
//!
//! Fetching from the closest replica (KIP-392): Fetch requests carry the consumer's rack; when
//! a leader names a preferred read replica for a partition, the partition is fetched from that
//! replica until the metadata max age passes, the replica answers with a partition error, or
//! it cannot be reached (then from the leader again), as Java's `Fetcher` does.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use kwire::messages::{
    fetch_request::{FetchPartition, FetchTopic, ForgottenTopic},
    FetchRequest, FetchResponse,
};
use kwire::records::{Batch, ControlRecord, DecodeOptions, RecordIter, RecordsField};
use kwire::{ByteString, Bytes, DecodeError, ErrorCode, Uuid};
use tokio::sync::mpsc;
use tracing::{debug, info, warn};

use super::subscription::Subscription;
use super::{ConsumerConfig, ConsumerRecord, FetchStats, IsolationLevel, OffsetReset};
use crate::cluster::{BrokerInfo, Client, ClusterMetadata};
use crate::error::{ConsumerError, Error, Resource, Result};
use crate::metrics::{millis, ConsumerMetrics};
use crate::route::{Limits, Route};
use crate::topic_partition::TopicPartition;

/// The fetch sessions and what they fetched.
pub(super) struct Fetcher {
    /// Fetched records waiting for `poll`, by partition, in fetch order.
    pub(super) buffer: VecDeque<Fetched>,
    /// Emptied record queues, kept with their capacity for the next fetched partitions: a
    /// fetch round's records are megabytes of `ConsumerRecord`s, and new queues grown for
    /// each round (freed after) made glibc fault the pages in again every round.
    pub(super) spare_queues: Vec<VecDeque<ConsumerRecord>>,
    /// The fetch session with each broker.
    pub(super) sessions: HashMap<i32, Session>,
    pub(super) stats: FetchStats,
    /// KIP-392: the replica to fetch each partition from instead of its leader, until when.
    pub(super) preferred: HashMap<TopicPartition, (i32, Instant)>,
    pub(super) metrics: ConsumerMetrics,
    /// The Fetch in flight to each broker (at most one: the session's epochs are sequential).
    pub(super) in_flight: HashMap<i32, InFlight>,
    /// A fetch found stale metadata: refreshed once the retry backoff from then has passed.
    refresh_at: Option<Instant>,
    /// Where the fetches' tasks put their answers.
    answers: (mpsc::UnboundedSender<Answer>, mpsc::UnboundedReceiver<Answer>),
}

/// A Fetch sent and not yet taken in: its own task, so it goes on while the caller works.
pub(super) struct InFlight {
    wanted: Vec<(TopicPartition, SentPartition)>,
    incremental: bool,
    /// Stops the task when the consumer is dropped.
    _task: AbortOnDrop,
}

/// What a fetch's task answers: the broker, the response, how long it took, and the response's
/// batches as the task read them.
type Answer = (i32, Result<FetchResponse>, Duration, ReadResponse);

/// One batch of a fetched partition as the fetch's task read it: its header (CRC checked), and
/// for a data batch its records, inflated when compressed.
pub(super) struct ReadBatch {
    batch: std::result::Result<Batch, DecodeError>,
    records: Option<std::result::Result<RecordIter, DecodeError>>,
}

/// A Fetch response's batches, by topic and partition in the response's order.
type ReadResponse = Vec<Vec<Vec<ReadBatch>>>;

struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Records of one partition from one fetch, handed out in order.
pub(super) struct Fetched {
    pub(super) tp: TopicPartition,
    pub(super) records: VecDeque<ConsumerRecord>,
    /// Where the partition goes after the last of them (past control and aborted batches).
    next_offset: i64,
    next_epoch: Option<i32>,
    pub(super) bytes: usize,
}

/// The fetch session with one broker (KIP-227).
#[derive(Default)]
pub(super) struct Session {
    pub(super) id: i32,
    pub(super) epoch: i32,
    /// What the broker's session holds for each partition.
    sent: HashMap<TopicPartition, SentPartition>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SentPartition {
    offset: i64,
    leader_epoch: i32,
    last_fetched_epoch: i32,
    max_bytes: i32,
}

impl Fetcher {
    pub(super) fn new(metrics: ConsumerMetrics) -> Self {
        Self {
            buffer: VecDeque::new(),
            spare_queues: Vec::new(),
            sessions: HashMap::new(),
            stats: FetchStats::default(),
            preferred: HashMap::new(),
            metrics,
            in_flight: HashMap::new(),
            refresh_at: None,
            answers: mpsc::unbounded_channel(),
        }
    }

    /// Hands out up to `max` buffered records, advancing positions as they go.
    pub(super) fn drain(&mut self, subscription: &mut Subscription, max: usize) -> Vec<ConsumerRecord> {
        let buffered: usize = self.buffer.iter().map(|f| f.records.len()).sum();
        // Sized once: records are moved once, into the caller's vector.
        let mut out = Vec::with_capacity(buffered.min(max));
        let mut bytes = 0;
        while out.len() < max {
            let Some(front) = self.buffer.front_mut() else { break };
            let take = front.records.len().min(max - out.len());
            let taken_bytes: usize = front.records.range(..take).map(record_bytes).sum();
            let start = out.len();
            match subscription.partitions.get_mut(&front.tp) {
                Some(st) => {
                    out.extend(front.records.drain(..take));
                    if let Some(last) = out.get(start..).and_then(<[ConsumerRecord]>::last) {
                        st.position = Some(last.offset + 1);
                        st.epoch = last.leader_epoch.or(st.epoch);
                    }
                    if front.records.is_empty() {
                        st.position = Some(st.position.map_or(front.next_offset, |p| p.max(front.next_offset)));
                        st.epoch = front.next_epoch.or(st.epoch);
                    }
                }
                None => {
                    front.records.drain(..take); // no longer assigned
                }
            }
            front.bytes = front.bytes.saturating_sub(taken_bytes);
            bytes += taken_bytes;
            if front.records.is_empty() {
                if let Some(f) = self.buffer.pop_front() {
                    self.recycle(f.records, subscription.partitions.len());
                }
            }
        }
        if !out.is_empty() {
            self.metrics.records_consumed.increment(out.len() as u64);
            self.metrics.bytes_consumed.increment(bytes as u64);
            self.record_lag(subscription);
        }
        out
    }

    /// `records-lag-max`: the largest distance from a position to its partition's end, after
    /// each answer and (as Java, where the records are handed out) after each `poll`.
    fn record_lag(&self, subscription: &Subscription) {
        if let Some(lag) = subscription.partitions.values().filter_map(Subscription::lag).max() {
            self.metrics.records_lag_max.set(lag as f64);
        }
    }

    /// Keeps an emptied record queue for the next fetch (as many as a fetch round fills).
    fn recycle(&mut self, mut queue: VecDeque<ConsumerRecord>, assigned: usize) {
        queue.clear();
        if queue.capacity() > 0 && self.spare_queues.len() < assigned.clamp(1, 64) {
            self.spare_queues.push(queue);
        }
    }

    /// Sends a Fetch for its fetchable partitions to each broker (leader or preferred read
    /// replica) with no Fetch in flight and none of its partitions' records still buffered:
    /// one Fetch per broker at a time (its fetch session allows no more), each answered on its
    /// own, so a slow broker never holds back the others, and the next one is on its way while
    /// the caller handles the records just handed out (as franz-go's per-broker source). A
    /// broker is not asked again while part of its last answer waits: a Fetch for only the
    /// partitions already drained would be a small one, and would make the session forget
    /// the others (Java's `Fetcher` does that; measured, it halved the records/s of a
    /// consumer taking 10,000 records a poll).
    pub(super) async fn send(&mut self, client: &Client, config: &ConsumerConfig, subscription: &mut Subscription, max_wait: Duration) -> Result<()> {
        if self.refresh_at.is_some_and(|at| at <= Instant::now()) {
            self.refresh_metadata(client).await;
        }
        let metadata = client.metadata();
        let buffered: HashSet<&TopicPartition> = self.buffer.iter().map(|f| &f.tp).collect();
        let in_flight: HashSet<&TopicPartition> = self.in_flight.values().flat_map(|f| f.wanted.iter().map(|(tp, _)| tp)).collect();
        let mut by_leader: BTreeMap<i32, Vec<(TopicPartition, SentPartition)>> = BTreeMap::new();
        // Brokers with a Fetch in flight, or records of theirs still buffered.
        let mut waiting: HashSet<i32> = self.in_flight.keys().copied().collect();
        let mut refresh = false;
        let now = Instant::now();
        self.preferred.retain(|tp, _| subscription.partitions.contains_key(tp));
        for (tp, st) in subscription.partitions.iter_mut() {
            let Some(position) = st.position else { continue };
            if !Subscription::fetchable(st) || in_flight.contains(tp) {
                continue;
            }
            let Some(p) = metadata.topics.get(&tp.topic).and_then(|t| t.partitions.iter().find(|p| p.index == tp.partition)) else {
                refresh = true;
                continue;
            };
            if p.leader < 0 {
                refresh = true;
                continue;
            }
            // KIP-392: the preferred read replica while it is fresh and still a known replica.
            let node = match self.preferred.get(tp) {
                Some(&(id, until)) if now < until && p.replicas.contains(&id) && metadata.brokers.contains_key(&id) => id,
                Some(_) => {
                    self.preferred.remove(tp);
                    p.leader
                }
                None => p.leader,
            };
            if buffered.contains(tp) {
                waiting.insert(node);
                continue;
            }
            // A newer leader epoch than the position was read under: validate it first.
            if st.validated_epoch < 0 || st.epoch.is_none() {
                st.validated_epoch = p.leader_epoch;
            } else if p.leader_epoch > st.validated_epoch {
                st.needs_validation = true;
                continue;
            }
            let sent = SentPartition {
                offset: position,
                leader_epoch: p.leader_epoch,
                last_fetched_epoch: st.epoch.unwrap_or(-1),
                max_bytes: config.max_partition_fetch_bytes,
            };
            by_leader.entry(node).or_default().push((tp.clone(), sent));
        }
        drop((buffered, in_flight));
        by_leader.retain(|node, _| !waiting.contains(node));
        if refresh {
            self.want_refresh(config);
        }
        for (node, wanted) in by_leader {
            let version = match client.version_at::<FetchRequest>(Route::Node(node)).await {
                Ok(v) => v,
                Err(e) if e.is_retriable() => {
                    warn!(node, error = %e, "no connection to the broker");
                    // Partitions fetched from a replica go back to their leaders.
                    self.forget_preferred(node, &wanted);
                    self.want_refresh(config);
                    continue;
                }
                Err(e) => return Err(e),
            };
            let session = self.sessions.entry(node).or_default();
            let (request, incremental) = build_fetch(config, &metadata, session, version, &wanted, max_wait);
            self.stats.fetches += 1;
            *self.stats.fetches_by_node.entry(node).or_default() += 1;
            self.metrics.fetches.increment(1);
            if incremental {
                self.stats.incremental_fetches += 1;
            }
            let client = client.clone();
            let answers = self.answers.0.clone();
            let options = decode_options(config);
            let task = tokio::spawn(async move {
                let sent = Instant::now();
                // At the version the request was built for (the connection's, unless it was
                // replaced by one to a broker that negotiated lower).
                let r = client.send_limited(Route::Node(node), Limits::at_most(version), |_| request.clone()).await;
                let took = sent.elapsed();
                let read = match &r {
                    Ok(response) => read_batches(response, &options),
                    Err(_) => Vec::new(),
                };
                let _ = answers.send((node, r, took, read));
            });
            self.in_flight.insert(node, InFlight { wanted, incremental, _task: AbortOnDrop(task.abort_handle()) });
        }
        Ok(())
    }

    /// Takes in the answered fetches; with `until`, first waits (to then at the latest) for one
    /// when none is answered yet, and refreshes metadata when a fetch asked for it.
    pub(super) async fn complete(&mut self, client: &Client, config: &ConsumerConfig, subscription: &mut Subscription, until: Option<Instant>) -> Result<()> {
        let mut answered = Vec::new();
        let rx = &mut self.answers.1;
        while let Ok(a) = rx.try_recv() {
            answered.push(a);
        }
        if let Some(until) = until.filter(|_| answered.is_empty() && !self.in_flight.is_empty()) {
            if let Ok(Some(a)) = tokio::time::timeout_at(until, rx.recv()).await {
                answered.push(a);
            }
        }
        if !answered.is_empty() {
            let metadata = client.metadata();
            let ids = crate::offsets::topic_ids(&metadata);
            let mut failed = None;
            for (node, result, took, read) in answered {
                let Some(InFlight { wanted, incremental, .. }) = self.in_flight.remove(&node) else { continue };
                if failed.is_some() {
                    // Dropped after an error: a full fetch (a new session) fetches it again.
                    self.sessions.remove(&node);
                    continue;
                }
                let response = match result {
                    Ok(r) => {
                        self.metrics.fetch_latency.record(millis(took));
                        self.metrics.throttle_time.record(f64::from(r.throttle_time_ms.max(0)));
                        r
                    }
                    Err(e) if e.is_retriable() => {
                        warn!(node, error = %e, "fetch failed");
                        self.sessions.remove(&node);
                        self.forget_preferred(node, &wanted);
                        self.want_refresh(config);
                        continue;
                    }
                    Err(e) => {
                        self.sessions.remove(&node);
                        failed = Some(e);
                        continue;
                    }
                };
                match self.handle_fetch(client, config, subscription, node, response, read, &wanted, incremental, &ids) {
                    Ok(true) => self.want_refresh(config),
                    Ok(false) => {}
                    Err(e) => failed = Some(e),
                }
            }
            if let Some(e) = failed {
                return Err(e);
            }
            self.record_lag(subscription);
        }
        if let (Some(_), Some(at)) = (until, self.refresh_at) {
            tokio::time::sleep_until(at).await;
            self.refresh_metadata(client).await;
        }
        Ok(())
    }

    fn want_refresh(&mut self, config: &ConsumerConfig) {
        self.refresh_at.get_or_insert_with(|| Instant::now() + config.retry_backoff);
    }

    async fn refresh_metadata(&mut self, client: &Client) {
        self.refresh_at = None;
        if let Err(e) = client.refresh_metadata().await {
            warn!(error = %e, "metadata refresh failed");
        }
    }

    /// After `node` failed: the partitions fetched from it as their preferred read replica are
    /// fetched from their leaders again (Java clears the session's preferred replicas).
    fn forget_preferred(&mut self, node: i32, wanted: &[(TopicPartition, SentPartition)]) {
        for (tp, _) in wanted {
            if self.preferred.get(tp).is_some_and(|(id, _)| *id == node) {
                info!(partition = %tp, replica = node, "preferred read replica unreachable: fetching from the leader");
                self.preferred.remove(tp);
            }
        }
    }

    /// Takes one Fetch response in: session bookkeeping, partition errors, records. Returns
    /// whether metadata needs a refresh.
    #[allow(clippy::too_many_arguments)]
    fn handle_fetch(
        &mut self,
        client: &Client,
        config: &ConsumerConfig,
        subscription: &mut Subscription,
        node: i32,
        response: FetchResponse,
        read: ReadResponse,
        wanted: &[(TopicPartition, SentPartition)],
        incremental: bool,
        ids: &HashMap<Uuid, String>,
    ) -> Result<bool> {
        let mut refresh = false;
        match ErrorCode(response.error_code) {
            ErrorCode::NONE => {
                let session = self.sessions.entry(node).or_default();
                if incremental {
                    session.epoch = next_epoch(session.epoch);
                    let keep: HashSet<&TopicPartition> = wanted.iter().map(|(tp, _)| tp).collect();
                    session.sent.retain(|tp, _| keep.contains(tp));
                    session.sent.extend(wanted.iter().cloned());
                } else if response.session_id != 0 {
                    debug!(node, session_id = response.session_id, "fetch session created");
                    self.stats.sessions_created += 1;
                    *session = Session { id: response.session_id, epoch: 1, sent: wanted.iter().cloned().collect() };
                }
            }
            // The broker lost the session or its epoch: start a new one.
            ErrorCode::FETCH_SESSION_ID_NOT_FOUND | ErrorCode::INVALID_FETCH_SESSION_EPOCH => {
                debug!(node, code = response.error_code, "fetch session lost: a full fetch next");
                self.sessions.remove(&node);
                return Ok(false);
            }
            // As Java's `FetchSessionHandler`: a fetch the broker could not process as a whole
            // (3.9 answers UNKNOWN_SERVER_ERROR when a topic of the session was deleted) ends
            // the session; the next fetch is a full one, after fresh metadata.
            code => {
                warn!(node, code = ?code.name(), "fetch refused: a new fetch session next");
                self.sessions.remove(&node);
                return Ok(true);
            }
        }
        let options = decode_options(config);
        let (mut fetched_bytes, mut fetched_records) = (0usize, 0usize);
        let mut read = read.into_iter();
        // KIP-951 (v12+ CurrentLeader, v16+ NodeEndpoints): where refused partitions lead now.
        let mut hints: Vec<(String, i32, i32, i32)> = Vec::new();
        for t in response.responses {
            let mut read_topic = read.next().unwrap_or_default().into_iter();
            let name: String = if t.topic_id != Uuid::ZERO {
                match ids.get(&t.topic_id) {
                    Some(n) => n.clone(),
                    None => {
                        refresh = true;
                        continue;
                    }
                }
            } else {
                t.topic.to_string()
            };
            let topic: Arc<str> = Arc::from(name.as_str());
            for p in t.partitions {
                let read_partition = read_topic.next().unwrap_or_default();
                let tp = TopicPartition::new(name.clone(), p.partition_index);
                let Some(sent) = wanted.iter().find(|(x, _)| *x == tp).map(|(_, s)| *s).or_else(|| {
                    // Incremental responses also carry partitions the session holds unchanged.
                    self.sessions.get(&node).and_then(|s| s.sent.get(&tp).copied())
                }) else {
                    continue;
                };
                let Some(st) = subscription.partitions.get(&tp) else { continue };
                // A seek, reset, pause or leader change while this was in flight: the data is
                // stale or not wanted now (fetched again when the partition is fetchable).
                if st.position != Some(sent.offset) || !Subscription::fetchable(st) {
                    continue;
                }
                // A partition error from the preferred read replica: back to the leader, as
                // Java clears it for every error it handles (out of range included: the leader
                // then says whether the position really is; the others with fresh metadata).
                let code = ErrorCode(p.error_code);
                let from_replica = self.preferred.get(&tp).is_some_and(|(id, _)| *id == node);
                if from_replica && code != ErrorCode::NONE {
                    let out_of_range = code == ErrorCode::OFFSET_OUT_OF_RANGE;
                    if out_of_range || code.is_retriable() || Client::needs_metadata_refresh(code) {
                        info!(partition = %tp, replica = node, code = ?code.name(), "preferred read replica refused: fetching from the leader");
                        self.preferred.remove(&tp);
                        refresh |= !out_of_range;
                        continue;
                    }
                }
                match ErrorCode(p.error_code) {
                    ErrorCode::NONE => {}
                    ErrorCode::OFFSET_OUT_OF_RANGE => {
                        let reset = config.auto_offset_reset;
                        if reset == OffsetReset::None {
                            return Err(Error::OffsetOutOfRange { partition: tp.to_string(), offset: sent.offset });
                        }
                        info!(partition = %tp, offset = sent.offset, ?reset, "offset out of range: resetting");
                        if let Some(st) = subscription.partitions.get_mut(&tp) {
                            st.position = None;
                            st.reset = Some(reset);
                        }
                        continue;
                    }
                    code => {
                        if Client::needs_metadata_refresh(code) || code.is_retriable() {
                            let leader_change = matches!(code, ErrorCode::NOT_LEADER_OR_FOLLOWER | ErrorCode::FENCED_LEADER_EPOCH);
                            if leader_change && p.current_leader.leader_id >= 0 {
                                hints.push((name.clone(), p.partition_index, p.current_leader.leader_id, p.current_leader.leader_epoch));
                            } else {
                                debug!(partition = %tp, code = ?code.name(), "fetch: partition error, refreshing metadata");
                                refresh = true;
                            }
                            // A leader change: validate the position under the new epoch.
                            if leader_change {
                                if let Some(st) = subscription.partitions.get_mut(&tp) {
                                    if st.epoch.is_some() {
                                        st.needs_validation = true;
                                    }
                                }
                            }
                            continue;
                        }
                        return Err(Error::broker(code, None, format!("fetch {tp}")).about(Resource::Topic(tp.topic.clone())));
                    }
                }
                // KIP-392: the leader names a replica to fetch from (and returns no records).
                if p.preferred_read_replica >= 0 && p.preferred_read_replica != node {
                    debug!(partition = %tp, replica = p.preferred_read_replica, "fetching from the preferred read replica");
                    self.preferred.insert(tp.clone(), (p.preferred_read_replica, Instant::now() + client.config().metadata_max_age));
                }
                if let Some(st) = subscription.partitions.get_mut(&tp) {
                    let end = if config.isolation_level == IsolationLevel::ReadCommitted { p.last_stable_offset } else { p.high_watermark };
                    st.end = (end >= 0).then_some(end);
                }
                if p.diverging_epoch.epoch >= 0 && p.diverging_epoch.end_offset >= 0 {
                    self.truncated(config.auto_offset_reset, subscription, &tp, Some((p.diverging_epoch.epoch, p.diverging_epoch.end_offset)))?;
                    continue;
                }
                let aborted = match (config.isolation_level, p.aborted_transactions) {
                    (IsolationLevel::ReadCommitted, Some(a)) => {
                        let mut a: Vec<(i64, i64)> = a.iter().map(|t| (t.first_offset, t.producer_id)).collect();
                        a.sort_unstable();
                        a
                    }
                    _ => Vec::new(),
                };
                fetched_bytes += p.records.as_ref().map_or(0, Bytes::len);
                let queue = self.spare_queues.pop().unwrap_or_default();
                match parse_partition(&topic, tp, sent.offset, read_partition, aborted, config.isolation_level, &options, queue)? {
                    (Some(f), _) => {
                        fetched_records += f.records.len();
                        self.buffer.push_back(f)
                    }
                    (None, queue) => self.recycle(queue, subscription.partitions.len()),
                }
            }
        }
        self.metrics.fetch_size.record(fetched_bytes as f64);
        self.metrics.records_per_request.record(fetched_records as f64);
        if !hints.is_empty() {
            let endpoints = response.node_endpoints.iter().map(|n| BrokerInfo::endpoint(n.node_id, &n.host, n.port, n.rack.as_deref()));
            let taken = client.update_leaders(hints.iter().map(|(t, p, leader, epoch)| (t.as_str(), *p, *leader, *epoch)), endpoints);
            refresh |= taken < hints.len();
        }
        Ok(refresh)
    }

    /// The new leader's log ends at `end` for the consumer's epoch: below the position means
    /// the records past it were truncated away.
    pub(super) fn truncated(&mut self, reset: OffsetReset, subscription: &mut Subscription, tp: &TopicPartition, end: Option<(i32, i64)>) -> Result<()> {
        let Some(st) = subscription.partitions.get_mut(tp) else { return Ok(()) };
        let Some(position) = st.position else { return Ok(()) };
        match end {
            Some((epoch, end_offset)) if end_offset < position => {
                self.stats.truncations += 1;
                if reset == OffsetReset::None {
                    return Err(Error::LogTruncation { partition: tp.to_string(), position, end_offset });
                }
                warn!(partition = %tp, position, end_offset, epoch, "log truncated after a leader change: moving back");
                st.position = Some(end_offset);
                st.epoch = (epoch >= 0).then_some(epoch);
                self.buffer.retain(|f| &f.tp != tp);
            }
            Some(_) => debug!(partition = %tp, position, "position validated"),
            None => {
                if reset == OffsetReset::None {
                    return Err(Error::LogTruncation { partition: tp.to_string(), position, end_offset: -1 });
                }
                self.stats.truncations += 1;
                warn!(partition = %tp, position, "the new leader has no record of the last epoch read: resetting");
                st.position = None;
                st.reset = Some(reset);
                self.buffer.retain(|f| &f.tp != tp);
            }
        }
        Ok(())
    }
}

fn next_epoch(epoch: i32) -> i32 {
    if epoch == i32::MAX {
        1
    } else {
        epoch + 1
    }
}

fn record_bytes(r: &ConsumerRecord) -> usize {
    r.key.as_ref().map_or(0, Bytes::len) + r.value.as_ref().map_or(0, Bytes::len)
}

/// A Fetch for `wanted` on `session`: full (creating a session) or incremental (only what
/// changed, plus the partitions to forget). Topic names to v12, ids from v13.
fn build_fetch(
    config: &ConsumerConfig,
    metadata: &ClusterMetadata,
    session: &Session,
    version: i16,
    wanted: &[(TopicPartition, SentPartition)],
    max_wait: Duration,
) -> (FetchRequest, bool) {
    let incremental = session.id != 0 && version >= 7;
    let id_of = |t: &str| metadata.topics.get(t).map_or(Uuid::ZERO, |i| i.id);
    let mut topics: BTreeMap<&str, Vec<FetchPartition>> = BTreeMap::new();
    for (tp, s) in wanted {
        if incremental && session.sent.get(tp) == Some(s) {
            continue;
        }
        topics.entry(tp.topic.as_str()).or_default().push(FetchPartition {
            partition: tp.partition,
            current_leader_epoch: s.leader_epoch,
            fetch_offset: s.offset,
            last_fetched_epoch: s.last_fetched_epoch,
            log_start_offset: -1,
            partition_max_bytes: s.max_bytes,
            ..Default::default()
        });
    }
    let mut forgotten: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    if incremental {
        let keep: HashSet<&TopicPartition> = wanted.iter().map(|(tp, _)| tp).collect();
        for tp in session.sent.keys().filter(|tp| !keep.contains(tp)) {
            forgotten.entry(tp.topic.as_str()).or_default().push(tp.partition);
        }
    }
    let request = FetchRequest {
        replica_id: -1,
        max_wait_ms: max_wait.as_millis().min(i32::MAX as u128) as i32,
        min_bytes: config.fetch_min_bytes,
        max_bytes: config.fetch_max_bytes,
        isolation_level: config.isolation_level.wire(),
        session_id: if incremental { session.id } else { 0 },
        session_epoch: if incremental { session.epoch } else { 0 },
        topics: topics
            .into_iter()
            .map(|(t, partitions)| FetchTopic { topic: ByteString::from(t.to_owned()), topic_id: id_of(t), partitions, ..Default::default() })
            .collect(),
        rack_id: ByteString::from(config.client_rack.clone().unwrap_or_default()),
        forgotten_topics_data: forgotten
            .into_iter()
            .map(|(t, ps)| ForgottenTopic {
                topic: ByteString::from(t.to_owned()),
                topic_id: id_of(t),
                partitions: ps.into_iter().collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    (request, incremental)
}

fn decode_options(config: &ConsumerConfig) -> DecodeOptions {
    DecodeOptions { verify_crc: config.check_crcs, ..Default::default() }
}

/// Reads the batches of every partition of `response` that has records and no error: what a
/// fetch's task does before handing the response over, the costly part of taking records in
/// (CRC checks, inflating). Reading stops at a partition's first batch that is not a complete
/// magic 2 one (an error, a truncated last batch, legacy records), which `parse_partition`
/// reports or stops at.
fn read_batches(response: &FetchResponse, options: &DecodeOptions) -> ReadResponse {
    let partition = |records: &Bytes| {
        let mut out = Vec::new();
        for batch in records.batches_with(*options) {
            let records = match &batch {
                Ok(Batch::V2(b)) if !b.is_control() => Some(b.records_with(options)),
                _ => None,
            };
            let last = !matches!(batch, Ok(Batch::V2(_)));
            out.push(ReadBatch { batch, records });
            if last {
                break;
            }
        }
        out
    };
    response
        .responses
        .iter()
        .map(|t| {
            t.partitions
                .iter()
                .map(|p| match &p.records {
                    Some(records) if p.error_code == ErrorCode::NONE.0 => partition(records),
                    _ => Vec::new(),
                })
                .collect()
        })
        .collect()
}

/// The records of one partition from `position` on, from its batches as [`read_batches`] read
/// them. Under read_committed, batches of aborted transactions are skipped as Java does: an
/// aborted transaction's producer id is "aborted" from its first offset (the response's list)
/// until its ABORT marker; control batches are never returned. The records go into `out` (a recycled queue),
/// handed back when there are none.
#[allow(clippy::too_many_arguments)]
fn parse_partition(
    topic: &Arc<str>,
    tp: TopicPartition,
    position: i64,
    batches: Vec<ReadBatch>,
    mut aborted: Vec<(i64, i64)>,
    isolation: IsolationLevel,
    options: &DecodeOptions,
    mut out: VecDeque<ConsumerRecord>,
) -> Result<(Option<Fetched>, VecDeque<ConsumerRecord>)> {
    let bad = |e: kwire::DecodeError| Error::protocol(&tp.to_string(), format!("records of {tp}: {e}"), e);
    aborted.reverse(); // pop the lowest first offset first
    let mut aborted_pids: HashSet<i64> = HashSet::new();
    out.clear();
    let mut next_offset = position;
    let mut next_epoch = None;
    let mut bytes = 0;
    for ReadBatch { batch, records } in batches {
        let b = match batch.map_err(bad)? {
            Batch::V2(b) => b,
            // A truncated last batch: fetched again next time.
            Batch::Partial(_) => break,
            Batch::Legacy(_) => {
                return Err(Error::Consumer(ConsumerError::LegacyRecords(tp.clone())));
            }
        };
        if b.next_offset() <= position {
            continue;
        }
        let epoch = (b.partition_leader_epoch() >= 0).then_some(b.partition_leader_epoch());
        if isolation == IsolationLevel::ReadCommitted && b.is_transactional() {
            while aborted.last().is_some_and(|(first, _)| *first <= b.last_offset()) {
                if let Some((_, pid)) = aborted.pop() {
                    aborted_pids.insert(pid);
                }
            }
        }
        if b.is_control() {
            if isolation == IsolationLevel::ReadCommitted {
                for r in b.records().map_err(bad)? {
                    if let Ok(ControlRecord::Abort(_)) = ControlRecord::parse(&r.map_err(bad)?) {
                        aborted_pids.remove(&b.producer_id());
                    }
                }
            }
            next_offset = b.next_offset();
            next_epoch = epoch.or(next_epoch);
            continue;
        }
        if isolation == IsolationLevel::ReadCommitted && b.is_transactional() && aborted_pids.contains(&b.producer_id()) {
            debug!(partition = %tp, base_offset = b.base_offset(), "skipping a batch of an aborted transaction");
            next_offset = b.next_offset();
            continue;
        }
        let records = match records {
            Some(read) => read,
            None => b.records_with(options),
        };
        for r in records.map_err(bad)? {
            let r = r.map_err(bad)?;
            if r.offset < position {
                continue;
            }
            let record = ConsumerRecord::from_batch(topic, tp.partition, &b, r);
            bytes += record_bytes(&record);
            out.push_back(record);
        }
        next_offset = b.next_offset();
        next_epoch = epoch.or(next_epoch);
    }
    if next_offset == position {
        return Ok((None, out));
    }
    Ok((Some(Fetched { tp, records: out, next_offset, next_epoch, bytes }), VecDeque::new()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kwire::records::{Record, RecordBatchBuilder};

    fn batch(base: i64, n: usize, pid: i64, transactional: bool) -> Vec<u8> {
        let mut b = RecordBatchBuilder::new().base_offset(base).producer(pid, 0, 0).transactional(transactional);
        for i in 0..n {
            b.append(Record::new(base + i as i64, 0, None, Some(Bytes::from(format!("v{}", base + i as i64))))).unwrap();
        }
        b.build().unwrap().to_vec()
    }

    fn marker(offset: i64, pid: i64, commit: bool) -> Vec<u8> {
        let b = RecordBatchBuilder::end_txn_marker(offset, 0, pid, 0, commit, 0).unwrap();
        b.to_vec()
    }

    #[test]
    fn read_committed_skips_aborted_transactions_and_markers() {
        // pid 7 aborts offsets 0-2 (marker 3); pid 8 commits 4-5 (marker 6); plain 7-8.
        let mut raw = Vec::new();
        raw.extend(batch(0, 3, 7, true));
        raw.extend(marker(3, 7, false));
        raw.extend(batch(4, 2, 8, true));
        raw.extend(marker(6, 8, true));
        raw.extend(batch(7, 2, -1, false));
        let raw = Bytes::from(raw);
        let topic: Arc<str> = Arc::from("t");
        let opts = DecodeOptions::default();
        let read = || read_batches(&response(&raw), &opts).remove(0).remove(0);
        let f = parse_partition(&topic, TopicPartition::new("t", 0), 0, read(), vec![(0, 7)], IsolationLevel::ReadCommitted, &opts, VecDeque::new())
            .unwrap()
            .0
            .unwrap();
        let offsets: Vec<i64> = f.records.iter().map(|r| r.offset).collect();
        assert_eq!(offsets, vec![4, 5, 7, 8]);
        assert_eq!(f.next_offset, 9);
        let f = parse_partition(&topic, TopicPartition::new("t", 0), 0, read(), vec![], IsolationLevel::ReadUncommitted, &opts, VecDeque::new())
            .unwrap()
            .0
            .unwrap();
        let offsets: Vec<i64> = f.records.iter().map(|r| r.offset).collect();
        assert_eq!(offsets, vec![0, 1, 2, 4, 5, 7, 8], "control records are never returned");
        // From the middle of a batch, and past the markers only.
        let f = parse_partition(&topic, TopicPartition::new("t", 0), 5, read(), vec![], IsolationLevel::ReadUncommitted, &opts, VecDeque::new())
            .unwrap()
            .0
            .unwrap();
        assert_eq!(f.records.front().map(|r| r.offset), Some(5));
    }

    fn response(records: &Bytes) -> FetchResponse {
        use kwire::messages::fetch_response::{FetchableTopicResponse, PartitionData};
        let partition = PartitionData { records: Some(records.clone()), ..Default::default() };
        FetchResponse { responses: vec![FetchableTopicResponse { partitions: vec![partition], ..Default::default() }], ..Default::default() }
    }

    /// What the fetch's task read is what `poll` would have read: a corrupt batch fails the
    /// partition there, and a batch cut short at the end of the response ends it quietly.
    #[test]
    fn batches_read_in_the_task_fail_and_stop_where_reading_them_in_poll_did() {
        let topic: Arc<str> = Arc::from("t");
        let opts = DecodeOptions::default();
        let mut raw = batch(0, 3, -1, false);
        raw.extend(batch(3, 2, -1, false));
        let whole = raw.clone();
        // The second batch cut short: the first one's records, then the end.
        raw.truncate(raw.len() - 5);
        let read = read_batches(&response(&Bytes::from(raw)), &opts).remove(0).remove(0);
        assert_eq!(read.len(), 2, "the complete batch, then the partial one");
        let f =
            parse_partition(&topic, TopicPartition::new("t", 0), 0, read, vec![], IsolationLevel::ReadUncommitted, &opts, VecDeque::new()).unwrap().0.unwrap();
        assert_eq!((f.records.len(), f.next_offset), (3, 3));
        // A flipped bit in the first batch's records: its CRC fails the partition.
        let mut bad = whole.clone();
        let last = bad.len() / 2 - 3;
        bad[last] ^= 1;
        let read = read_batches(&response(&Bytes::from(bad)), &opts).remove(0).remove(0);
        assert_eq!(read.len(), 1, "reading stops at the corrupt batch");
        let Err(e) = parse_partition(&topic, TopicPartition::new("t", 0), 0, read, vec![], IsolationLevel::ReadUncommitted, &opts, VecDeque::new()) else {
            panic!("a corrupt batch was read");
        };
        assert!(e.to_string().contains("records of t-0"), "{e}");
        // A partition with an error code is not read.
        let mut r = response(&Bytes::from(whole));
        r.responses[0].partitions[0].error_code = ErrorCode::NOT_LEADER_OR_FOLLOWER.0;
        assert!(read_batches(&r, &opts)[0][0].is_empty());
    }

    #[test]
    fn incremental_fetch_sends_only_changes_and_forgets_the_rest() {
        let config = ConsumerConfig::default();
        let metadata = ClusterMetadata::default();
        let s = |offset| SentPartition { offset, leader_epoch: 0, last_fetched_epoch: -1, max_bytes: 100 };
        let mut session = Session::default();
        let wanted = vec![(TopicPartition::new("a", 0), s(5)), (TopicPartition::new("a", 1), s(9))];
        let (full, inc) = build_fetch(&config, &metadata, &session, 12, &wanted, Duration::from_millis(10));
        assert!(!inc);
        assert_eq!((full.session_id, full.session_epoch, full.topics[0].partitions.len()), (0, 0, 2));
        session = Session { id: 42, epoch: 1, sent: wanted.iter().cloned().collect() };
        let wanted = vec![(TopicPartition::new("a", 0), s(7))];
        let (req, inc) = build_fetch(&config, &metadata, &session, 12, &wanted, Duration::from_millis(10));
        assert!(inc);
        assert_eq!((req.session_id, req.session_epoch), (42, 1));
        assert_eq!(req.topics[0].partitions.len(), 1);
        assert_eq!(req.topics[0].partitions[0].fetch_offset, 7);
        assert_eq!(&req.forgotten_topics_data[0].partitions[..], &[1]);
    }
}
