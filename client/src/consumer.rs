//! The consumer: partitions assigned by hand or by a consumer group ([`group`](crate::group)),
//! Fetch with incremental fetch sessions (KIP-227), read_committed, leader epochs and
//! truncation detection, offset reset, ListOffsets, OffsetCommit / OffsetFetch.
//!
//! Fetching is pull-based: a Fetch is sent only from [`Consumer::poll`] (or the streams built
//! on it) when no fetched data is waiting, so a caller that stops polling stops fetching and
//! memory stays bounded by one round of responses (`fetch_max_bytes` per broker). Records are
//! slices of the fetch response's buffer (uncompressed batches) or of the batch's inflated
//! buffer, never copied one by one.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::Stream;
use kwire::messages::{
    fetch_request::{FetchPartition, FetchTopic, ForgottenTopic},
    list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic},
    offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic},
    offset_fetch_request::{OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics},
    offset_for_leader_epoch_request::{OffsetForLeaderPartition, OffsetForLeaderTopic},
    FetchRequest, FetchResponse, ListOffsetsRequest, OffsetCommitRequest, OffsetFetchRequest,
    OffsetForLeaderEpochRequest,
};
use kwire::records::{Batch, ControlRecord, DecodeOptions, Headers, RecordsField, TimestampType};
use kwire::{ApiKey, ByteString, Bytes, ErrorCode, ResponseKind, Uuid};
use tracing::{debug, info, warn};

use crate::cluster::{ClusterMetadata, Client};
use crate::error::{ConsumerError, Error, GroupError, Resource, Result};
use crate::retry::{Backoff, Retry};
use crate::group::{Assignor, GroupState, RebalanceListener};

pub use crate::topic_partition::TopicPartition;

/// Where to start when a partition has no valid position (`auto.offset.reset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetReset {
    /// The log start.
    Earliest,
    /// The log end.
    Latest,
    /// None: fail with [`Error::NoOffset`] / [`Error::OffsetOutOfRange`] / [`Error::LogTruncation`].
    None,
}

/// `isolation.level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IsolationLevel {
    /// Every record, transactional or not, up to the high watermark.
    ReadUncommitted,
    /// Up to the last stable offset; records of aborted transactions and control records are
    /// skipped.
    ReadCommitted,
}

impl IsolationLevel {
    fn wire(self) -> i8 {
        match self {
            IsolationLevel::ReadUncommitted => 0,
            IsolationLevel::ReadCommitted => 1,
        }
    }
}

/// Which group protocol a subscribing consumer uses (`group.protocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupProtocol {
    /// JoinGroup / SyncGroup / Heartbeat with a client-side assignor.
    Classic,
    /// KIP-848's ConsumerGroupHeartbeat: the broker assigns (Kafka 4.0+).
    Consumer,
}

/// What to look up with [`Consumer::list_offsets`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetSpec {
    /// The log start offset.
    Earliest,
    /// The log end offset (the last stable offset under read_committed).
    Latest,
    /// The first offset whose timestamp is at least this (ms).
    Timestamp(i64),
}

impl OffsetSpec {
    fn wire(self) -> i64 {
        match self {
            OffsetSpec::Earliest => -2,
            OffsetSpec::Latest => -1,
            OffsetSpec::Timestamp(t) => t,
        }
    }
}

/// A committed offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetAndMetadata {
    /// The next offset to read.
    pub offset: i64,
    /// The leader epoch of the last record read, if known.
    pub leader_epoch: Option<i32>,
    /// Free-form metadata.
    pub metadata: Option<String>,
}

impl OffsetAndMetadata {
    /// An offset without epoch or metadata.
    pub fn new(offset: i64) -> OffsetAndMetadata {
        OffsetAndMetadata { offset, leader_epoch: None, metadata: None }
    }
}

/// Consumer settings, with Java's defaults.
#[derive(Debug, Clone)]
pub struct ConsumerConfig {
    /// `group.id`: needed to subscribe and to commit.
    pub group_id: Option<String>,
    /// `group.instance.id`: static membership.
    pub group_instance_id: Option<String>,
    /// `group.protocol` (classic).
    pub group_protocol: GroupProtocol,
    /// `partition.assignment.strategy` for the classic protocol, by preference (Java's default:
    /// range, then cooperative-sticky; the rebalances are cooperative when every one listed is).
    pub assignors: Vec<Assignor>,
    /// `session.timeout.ms` (45 s), classic protocol (the broker sets it for KIP-848 groups).
    pub session_timeout: Duration,
    /// `heartbeat.interval.ms` (3 s), classic protocol.
    pub heartbeat_interval: Duration,
    /// `max.poll.interval.ms` (5 min): the rebalance timeout.
    pub max_poll_interval: Duration,
    /// `auto.offset.reset` (latest).
    pub auto_offset_reset: OffsetReset,
    /// `enable.auto.commit` (true, when there is a group id).
    pub enable_auto_commit: bool,
    /// `auto.commit.interval.ms` (5 s).
    pub auto_commit_interval: Duration,
    /// `isolation.level` (read_uncommitted).
    pub isolation_level: IsolationLevel,
    /// `fetch.min.bytes` (1).
    pub fetch_min_bytes: i32,
    /// `fetch.max.bytes` (50 MiB) per Fetch.
    pub fetch_max_bytes: i32,
    /// `max.partition.fetch.bytes` (1 MiB).
    pub max_partition_fetch_bytes: i32,
    /// `fetch.max.wait.ms` (500 ms).
    pub fetch_max_wait: Duration,
    /// `max.poll.records` (500).
    pub max_poll_records: usize,
    /// `check.crcs` (true).
    pub check_crcs: bool,
    /// `retry.backoff.ms` (100 ms): between attempts of coordinator and offset requests.
    pub retry_backoff: Duration,
}

impl Default for ConsumerConfig {
    fn default() -> Self {
        ConsumerConfig {
            group_id: None,
            group_instance_id: None,
            group_protocol: GroupProtocol::Classic,
            assignors: vec![Assignor::Range, Assignor::CooperativeSticky],
            session_timeout: Duration::from_secs(45),
            heartbeat_interval: Duration::from_secs(3),
            max_poll_interval: Duration::from_secs(300),
            auto_offset_reset: OffsetReset::Latest,
            enable_auto_commit: true,
            auto_commit_interval: Duration::from_secs(5),
            isolation_level: IsolationLevel::ReadUncommitted,
            fetch_min_bytes: 1,
            fetch_max_bytes: 50 << 20,
            max_partition_fetch_bytes: 1 << 20,
            fetch_max_wait: Duration::from_millis(500),
            max_poll_records: 500,
            check_crcs: true,
            retry_backoff: Duration::from_millis(100),
        }
    }
}

impl ConsumerConfig {
    /// Settings for a member of `group`.
    pub fn group(group: impl Into<String>) -> ConsumerConfig {
        ConsumerConfig { group_id: Some(group.into()), ..Default::default() }
    }
}

/// A record, with its key, value and headers as slices of the fetched buffer.
#[derive(Debug, Clone, PartialEq)]
pub struct ConsumerRecord {
    /// The topic.
    pub topic: Arc<str>,
    /// The partition.
    pub partition: i32,
    /// The offset.
    pub offset: i64,
    /// The timestamp (ms): the producer's, or the broker's append time for LogAppendTime topics.
    pub timestamp: i64,
    /// Which timestamp it is.
    pub timestamp_type: TimestampType,
    /// The key.
    pub key: Option<Bytes>,
    /// The value.
    pub value: Option<Bytes>,
    /// The headers.
    pub headers: Headers,
    /// The leader epoch of the batch, if the broker set one.
    pub leader_epoch: Option<i32>,
}

/// Counters of the fetcher, for monitoring and tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FetchStats {
    /// Fetch requests sent.
    pub fetches: u64,
    /// Of which incremental (KIP-227).
    pub incremental_fetches: u64,
    /// Fetch sessions the brokers created.
    pub sessions_created: u64,
    /// Records waiting in the consumer, fetched and not yet returned.
    pub buffered_records: usize,
    /// Their bytes (keys and values).
    pub buffered_bytes: usize,
    /// Positions validated with OffsetForLeaderEpoch after a leader change.
    pub validations: u64,
    /// Truncations detected after leader changes.
    pub truncations: u64,
}

#[derive(Debug, Clone)]
pub(crate) struct PartState {
    /// The next offset to return; `None` until it is known (committed or reset).
    pub(crate) position: Option<i64>,
    /// The leader epoch of the last record returned (or of the committed offset).
    pub(crate) epoch: Option<i32>,
    /// The leader epoch the position was last validated under.
    validated_epoch: i32,
    needs_validation: bool,
    /// A reset asked for (seek to beginning / end, out of range), instead of the committed offset.
    reset: Option<OffsetReset>,
}

impl PartState {
    fn new() -> PartState {
        PartState { position: None, epoch: None, validated_epoch: -1, needs_validation: false, reset: None }
    }
}

/// Records of one partition from one fetch, handed out in order.
struct Fetched {
    tp: TopicPartition,
    records: VecDeque<ConsumerRecord>,
    /// Where the partition goes after the last of them (past control and aborted batches).
    next_offset: i64,
    next_epoch: Option<i32>,
    bytes: usize,
}

/// The fetch session with one broker (KIP-227).
#[derive(Default)]
struct Session {
    id: i32,
    epoch: i32,
    /// What the broker's session holds for each partition.
    sent: HashMap<TopicPartition, SentPartition>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SentPartition {
    offset: i64,
    leader_epoch: i32,
    last_fetched_epoch: i32,
    max_bytes: i32,
}

/// A Kafka consumer. Not shared: one task polls it (as Java's `KafkaConsumer`).
pub struct Consumer {
    pub(crate) client: Client,
    pub(crate) config: ConsumerConfig,
    pub(crate) assignment: BTreeMap<TopicPartition, PartState>,
    pub(crate) group: Option<GroupState>,
    /// In a mutex only so that the consumer stays `Sync` (it is used by one task).
    pub(crate) listener: Option<std::sync::Mutex<Box<dyn RebalanceListener>>>,
    buffer: VecDeque<Fetched>,
    /// Emptied record queues, kept with their capacity for the next fetched partitions: a
    /// fetch round's records are megabytes of `ConsumerRecord`s, and new queues grown for
    /// each round (freed after) made glibc fault the pages in again every round.
    spare_queues: Vec<VecDeque<ConsumerRecord>>,
    sessions: HashMap<i32, Session>,
    coordinator: Option<String>,
    stats: FetchStats,
    last_auto_commit: Instant,
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer").field("group", &self.config.group_id).field("assignment", &self.assignment.len()).finish()
    }
}

fn topic_ids(m: &ClusterMetadata) -> HashMap<Uuid, String> {
    m.topics.values().map(|t| (t.id, t.name.clone())).collect()
}

impl Consumer {
    /// A consumer on `client`. It assigns nothing yet: [`assign`](Consumer::assign) partitions
    /// or [`subscribe`](Consumer::subscribe) to topics.
    pub fn new(client: Client, config: ConsumerConfig) -> Result<Consumer> {
        if config.max_poll_records == 0 || config.fetch_max_bytes <= 0 || config.max_partition_fetch_bytes <= 0 {
            return Err(Error::Config("max_poll_records, fetch_max_bytes and max_partition_fetch_bytes must be positive".into()));
        }
        if config.group_instance_id.is_some() && config.group_id.is_none() {
            return Err(Error::Config("group_instance_id needs a group_id".into()));
        }
        Ok(Consumer {
            client: client.with_own_connections(),
            config,
            assignment: BTreeMap::new(),
            group: None,
            listener: None,
            buffer: VecDeque::new(),
            spare_queues: Vec::new(),
            sessions: HashMap::new(),
            coordinator: None,
            stats: FetchStats::default(),
            last_auto_commit: Instant::now(),
        })
    }

    /// The client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The settings.
    pub fn config(&self) -> &ConsumerConfig {
        &self.config
    }

    /// Assigns these partitions by hand (replacing any earlier manual assignment). Positions
    /// start at the committed offset (with a group id) or by the reset policy.
    pub fn assign(&mut self, partitions: impl IntoIterator<Item = TopicPartition>) -> Result<()> {
        if self.group.is_some() {
            return Err(Error::Consumer(ConsumerError::SubscribedToGroup));
        }
        let wanted: BTreeSet<TopicPartition> = partitions.into_iter().collect();
        self.set_assignment(&wanted);
        Ok(())
    }

    /// Changes the assignment to `wanted`: kept partitions keep their positions, removed ones
    /// lose their buffered records.
    pub(crate) fn set_assignment(&mut self, wanted: &BTreeSet<TopicPartition>) {
        self.assignment.retain(|tp, _| wanted.contains(tp));
        for tp in wanted {
            self.assignment.entry(tp.clone()).or_insert_with(PartState::new);
        }
        self.buffer.retain(|f| wanted.contains(&f.tp));
    }

    /// The partitions assigned now (by hand or by the group).
    pub fn assignment(&self) -> BTreeSet<TopicPartition> {
        self.assignment.keys().cloned().collect()
    }

    /// Counters of the fetcher.
    pub fn stats(&self) -> FetchStats {
        let mut s = self.stats.clone();
        s.buffered_records = self.buffer.iter().map(|f| f.records.len()).sum();
        s.buffered_bytes = self.buffer.iter().map(|f| f.bytes).sum();
        s
    }

    /// The fetch session with broker `node`: its id and next epoch (`None` without one).
    pub fn fetch_session(&self, node: i32) -> Option<(i32, i32)> {
        self.sessions.get(&node).filter(|s| s.id != 0).map(|s| (s.id, s.epoch))
    }

    /// Sets the position of an assigned partition; its buffered records are dropped.
    pub fn seek(&mut self, tp: &TopicPartition, offset: i64) -> Result<()> {
        let st = self.assignment.get_mut(tp).ok_or_else(|| Error::Consumer(ConsumerError::NotAssigned(tp.clone())))?;
        st.position = Some(offset);
        st.epoch = None;
        st.reset = None;
        st.needs_validation = false;
        self.buffer.retain(|f| &f.tp != tp);
        Ok(())
    }

    /// Moves these partitions (all assigned ones when empty) to the log start, at the next poll.
    pub fn seek_to_beginning(&mut self, tps: &[TopicPartition]) {
        self.seek_reset(tps, OffsetReset::Earliest);
    }

    /// Moves these partitions (all assigned ones when empty) to the log end, at the next poll.
    pub fn seek_to_end(&mut self, tps: &[TopicPartition]) {
        self.seek_reset(tps, OffsetReset::Latest);
    }

    fn seek_reset(&mut self, tps: &[TopicPartition], reset: OffsetReset) {
        for (tp, st) in self.assignment.iter_mut().filter(|(tp, _)| tps.is_empty() || tps.contains(tp)) {
            st.position = None;
            st.epoch = None;
            st.reset = Some(reset);
            self.buffer.retain(|f| &f.tp != tp);
        }
    }

    /// The next offset `poll` returns for `tp`, resolving it (committed offset or reset) if
    /// it is not known yet.
    pub async fn position(&mut self, tp: &TopicPartition) -> Result<i64> {
        if !self.assignment.contains_key(tp) {
            return Err(Error::Consumer(ConsumerError::NotAssigned(tp.clone())));
        }
        self.resolve_positions().await?;
        self.assignment.get(tp).and_then(|s| s.position).ok_or_else(|| Error::NoOffset(tp.to_string()))
    }

    /// The next batch of records (at most `max_poll_records`), waiting at most `timeout` for
    /// some. Group membership (joining, rebalancing, heartbeats' findings) and automatic
    /// commits happen here; a classic rebalance can hold it past `timeout` (JoinGroup waits for
    /// the whole group, up to `max_poll_interval`).
    pub async fn poll(&mut self, timeout: Duration) -> Result<Vec<ConsumerRecord>> {
        self.poll_up_to(timeout, self.config.max_poll_records).await
    }

    async fn poll_up_to(&mut self, timeout: Duration, max: usize) -> Result<Vec<ConsumerRecord>> {
        let deadline = Instant::now() + timeout;
        loop {
            if self.group.is_some() {
                self.maintain_group().await?;
            }
            self.maybe_auto_commit().await;
            if !self.buffer.is_empty() {
                return Ok(self.drain(max));
            }
            self.resolve_positions().await?;
            self.validate_positions().await?;
            let remaining = deadline.saturating_duration_since(Instant::now());
            if self.assignment.values().any(|s| s.position.is_some() && !s.needs_validation) {
                self.fetch(remaining.min(self.config.fetch_max_wait)).await?;
            } else {
                // Nothing to fetch yet (joining a group, no assignment): wait a little.
                tokio::time::sleep(remaining.min(Duration::from_millis(100))).await;
            }
            if !self.buffer.is_empty() {
                return Ok(self.drain(max));
            }
            if Instant::now() >= deadline {
                return Ok(Vec::new());
            }
        }
    }

    /// Hands out up to `max` buffered records, advancing positions as they go.
    fn drain(&mut self, max: usize) -> Vec<ConsumerRecord> {
        let buffered: usize = self.buffer.iter().map(|f| f.records.len()).sum();
        // Sized once: records are moved once, into the caller's vector.
        let mut out = Vec::with_capacity(buffered.min(max));
        while out.len() < max {
            let Some(front) = self.buffer.front_mut() else { break };
            let take = front.records.len().min(max - out.len());
            let taken_bytes: usize = front.records.range(..take).map(record_bytes).sum();
            let start = out.len();
            match self.assignment.get_mut(&front.tp) {
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
            if front.records.is_empty() {
                if let Some(f) = self.buffer.pop_front() {
                    self.recycle(f.records);
                }
            }
        }
        out
    }

    /// Keeps an emptied record queue for the next fetch (as many as a fetch round fills).
    fn recycle(&mut self, mut queue: VecDeque<ConsumerRecord>) {
        queue.clear();
        if queue.capacity() > 0 && self.spare_queues.len() < self.assignment.len().clamp(1, 64) {
            self.spare_queues.push(queue);
        }
    }

    /// A stream of records, one at a time; fetching happens only as the stream is polled, so
    /// a slow reader stops fetching (at most one round of fetched data waits). Ends only on
    /// drop; errors are items (a retriable one may be followed by more records).
    pub fn stream(&mut self) -> impl Stream<Item = Result<ConsumerRecord>> + '_ {
        futures_util::stream::unfold((self, VecDeque::new()), |(c, mut pending): (&mut Consumer, VecDeque<ConsumerRecord>)| async move {
            loop {
                if let Some(r) = pending.pop_front() {
                    return Some((Ok(r), (c, pending)));
                }
                // One record per poll, so positions (and commits) follow what was handed out.
                match c.poll_up_to(Duration::from_secs(1), 1).await {
                    Ok(v) => pending.extend(v),
                    Err(e) => return Some((Err(e), (c, pending))),
                }
            }
        })
    }

    /// A stream of record batches (what one `poll` returns), with the same backpressure.
    pub fn batches(&mut self) -> impl Stream<Item = Result<Vec<ConsumerRecord>>> + '_ {
        futures_util::stream::unfold(self, |c: &mut Consumer| async move {
            loop {
                match c.poll(Duration::from_secs(1)).await {
                    Ok(v) if v.is_empty() => continue,
                    r => return Some((r, c)),
                }
            }
        })
    }

    // ---- positions -------------------------------------------------------------------

    /// Positions for partitions that have none: the committed offset (with a group id and no
    /// explicit reset), else the reset policy.
    pub(crate) async fn resolve_positions(&mut self) -> Result<()> {
        let missing: Vec<TopicPartition> =
            self.assignment.iter().filter(|(_, s)| s.position.is_none()).map(|(tp, _)| tp.clone()).collect();
        if missing.is_empty() {
            return Ok(());
        }
        let mut need_reset: Vec<(TopicPartition, OffsetReset)> = Vec::new();
        let from_committed: Vec<TopicPartition> =
            missing.iter().filter(|tp| self.assignment.get(*tp).is_some_and(|s| s.reset.is_none())).cloned().collect();
        let committed = if self.config.group_id.is_some() && !from_committed.is_empty() {
            self.committed(&from_committed).await?
        } else {
            BTreeMap::new()
        };
        for tp in &missing {
            let Some(st) = self.assignment.get_mut(tp) else { continue };
            match (st.reset, committed.get(tp)) {
                (None, Some(c)) => {
                    debug!(partition = %tp, offset = c.offset, "position from the committed offset");
                    st.position = Some(c.offset);
                    st.epoch = c.leader_epoch;
                }
                (Some(r), _) => need_reset.push((tp.clone(), r)),
                (None, None) => need_reset.push((tp.clone(), self.config.auto_offset_reset)),
            }
        }
        if let Some((tp, _)) = need_reset.iter().find(|(_, r)| *r == OffsetReset::None) {
            return Err(Error::NoOffset(tp.to_string()));
        }
        if need_reset.is_empty() {
            return Ok(());
        }
        let specs: Vec<(TopicPartition, OffsetSpec)> = need_reset
            .into_iter()
            .map(|(tp, r)| (tp, if r == OffsetReset::Earliest { OffsetSpec::Earliest } else { OffsetSpec::Latest }))
            .collect();
        let found = self.list_offsets(&specs).await?;
        for (tp, spec) in specs {
            if let (Some(st), Some(o)) = (self.assignment.get_mut(&tp), found.get(&tp)) {
                info!(partition = %tp, offset = o.0, ?spec, "position reset");
                st.position = Some(o.0);
                st.epoch = None;
                st.reset = None;
            }
        }
        Ok(())
    }

    /// After a leader change: asks the new leader where the epoch of the last record read
    /// ends (OffsetForLeaderEpoch); a log truncated below the position moves the position
    /// back to the end of that epoch (or fails, with reset policy none).
    async fn validate_positions(&mut self) -> Result<()> {
        let metadata = self.client.metadata();
        let mut by_leader: BTreeMap<i32, Vec<(TopicPartition, i32, i32)>> = BTreeMap::new();
        let mut refresh = false;
        for (tp, st) in self.assignment.iter_mut() {
            if !st.needs_validation {
                continue;
            }
            let Some(epoch) = st.epoch else {
                st.needs_validation = false; // nothing read yet: nothing to validate
                continue;
            };
            match metadata.topics.get(&tp.topic).and_then(|t| t.partitions.iter().find(|p| p.index == tp.partition)) {
                Some(p) if p.leader >= 0 => by_leader.entry(p.leader).or_default().push((tp.clone(), p.leader_epoch, epoch)),
                _ => refresh = true,
            }
        }
        for (leader, parts) in by_leader {
            let mut topics: BTreeMap<&str, Vec<OffsetForLeaderPartition>> = BTreeMap::new();
            for (tp, current, epoch) in &parts {
                topics.entry(tp.topic.as_str()).or_default().push(OffsetForLeaderPartition {
                    partition: tp.partition,
                    current_leader_epoch: *current,
                    leader_epoch: *epoch,
                    ..Default::default()
                });
            }
            let request = OffsetForLeaderEpochRequest {
                replica_id: -1,
                topics: topics
                    .into_iter()
                    .map(|(t, partitions)| OffsetForLeaderTopic { topic: ByteString::from(t.to_owned()), partitions, ..Default::default() })
                    .collect(),
                ..Default::default()
            };
            let response = match self.client.call_node(leader, request).await {
                Ok(Some(ResponseKind::OffsetForLeaderEpoch(r))) => r,
                Ok(other) => return Err(Error::UnexpectedResponse(format!("{:?} to OffsetForLeaderEpoch", other.map(|o| o.api_key())))),
                Err(e) if e.is_retriable() => {
                    warn!(leader, error = %e, "OffsetForLeaderEpoch failed");
                    refresh = true;
                    continue;
                }
                Err(e) => return Err(e),
            };
            for t in &response.topics {
                for p in &t.partitions {
                    let tp = TopicPartition::new(t.topic.to_string(), p.partition);
                    let Some((_, current, _)) = parts.iter().find(|(x, _, _)| *x == tp) else { continue };
                    if !ErrorCode(p.error_code).is_ok() {
                        debug!(partition = %tp, code = ?ErrorCode(p.error_code).name(), "OffsetForLeaderEpoch: retrying after a metadata refresh");
                        refresh = true;
                        continue;
                    }
                    let current = *current;
                    if p.end_offset < 0 {
                        // The leader knows nothing of that epoch: start over by the reset policy.
                        self.on_truncation(&tp, None)?;
                    } else {
                        self.on_truncation(&tp, Some((p.leader_epoch, p.end_offset)))?;
                    }
                    self.stats.validations += 1;
                    if let Some(st) = self.assignment.get_mut(&tp) {
                        st.needs_validation = false;
                        st.validated_epoch = current;
                    }
                }
            }
        }
        if refresh {
            tokio::time::sleep(self.config.retry_backoff).await;
            self.client.refresh_metadata().await?;
        }
        Ok(())
    }

    /// The new leader's log ends at `end` for the consumer's epoch: below the position means
    /// the records past it were truncated away.
    fn on_truncation(&mut self, tp: &TopicPartition, end: Option<(i32, i64)>) -> Result<()> {
        let reset = self.config.auto_offset_reset;
        let Some(st) = self.assignment.get_mut(tp) else { return Ok(()) };
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

    // ---- fetching ----------------------------------------------------------------------

    /// One round of Fetch requests, one per leader of the fetchable partitions, in parallel.
    async fn fetch(&mut self, max_wait: Duration) -> Result<()> {
        let metadata = self.client.metadata();
        let buffered: HashSet<TopicPartition> = self.buffer.iter().map(|f| f.tp.clone()).collect();
        let mut by_leader: BTreeMap<i32, Vec<(TopicPartition, SentPartition)>> = BTreeMap::new();
        let mut refresh = false;
        for (tp, st) in self.assignment.iter_mut() {
            let Some(position) = st.position else { continue };
            if st.needs_validation || buffered.contains(tp) {
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
                max_bytes: self.config.max_partition_fetch_bytes,
            };
            by_leader.entry(p.leader).or_default().push((tp.clone(), sent));
        }
        let ids = topic_ids(&metadata);
        let mut calls = Vec::new();
        for (node, wanted) in by_leader {
            let version = match self.client.node_version(node, ApiKey::Fetch).await {
                Ok(v) => v,
                Err(e) if e.is_retriable() => {
                    warn!(node, error = %e, "no connection to the leader");
                    refresh = true;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let session = self.sessions.entry(node).or_default();
            let (request, incremental) = build_fetch(&self.config, &metadata, session, version, &wanted, max_wait);
            self.stats.fetches += 1;
            if incremental {
                self.stats.incremental_fetches += 1;
            }
            let client = self.client.clone();
            calls.push(async move {
                let r = client.call_node(node, request).await;
                (node, wanted, incremental, r)
            });
        }
        let results = futures_util::future::join_all(calls).await;
        for (node, wanted, incremental, result) in results {
            let response = match result {
                Ok(Some(ResponseKind::Fetch(r))) => r,
                Ok(other) => {
                    self.sessions.remove(&node);
                    return Err(Error::UnexpectedResponse(format!("{:?} to Fetch", other.map(|o| o.api_key()))));
                }
                Err(e) if e.is_retriable() => {
                    warn!(node, error = %e, "fetch failed");
                    self.sessions.remove(&node);
                    refresh = true;
                    continue;
                }
                Err(e) => {
                    self.sessions.remove(&node);
                    return Err(e);
                }
            };
            refresh |= self.handle_fetch(node, response, &wanted, incremental, &ids)?;
        }
        if refresh {
            tokio::time::sleep(self.config.retry_backoff).await;
            if let Err(e) = self.client.refresh_metadata().await {
                warn!(error = %e, "metadata refresh failed");
            }
        }
        Ok(())
    }

    /// Takes one Fetch response in: session bookkeeping, partition errors, records. Returns
    /// whether metadata needs a refresh.
    fn handle_fetch(
        &mut self,
        node: i32,
        response: FetchResponse,
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
            code => {
                warn!(node, code = ?code.name(), "fetch refused");
                self.sessions.remove(&node);
                let e = Error::broker(code, None, format!("Fetch from broker {node}"));
                if e.is_retriable() || Client::needs_metadata_refresh(code) || code == ErrorCode::FETCH_SESSION_TOPIC_ID_ERROR {
                    return Ok(true);
                }
                return Err(e);
            }
        }
        let options = DecodeOptions { verify_crc: self.config.check_crcs, ..Default::default() };
        for t in response.responses {
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
                let tp = TopicPartition::new(name.clone(), p.partition_index);
                let Some(sent) = wanted.iter().find(|(x, _)| *x == tp).map(|(_, s)| *s).or_else(|| {
                    // Incremental responses also carry partitions the session holds unchanged.
                    self.sessions.get(&node).and_then(|s| s.sent.get(&tp).copied())
                }) else {
                    continue;
                };
                let Some(st) = self.assignment.get(&tp) else { continue };
                // A seek or reset while this was in flight: the data is stale.
                if st.position != Some(sent.offset) {
                    continue;
                }
                match ErrorCode(p.error_code) {
                    ErrorCode::NONE => {}
                    ErrorCode::OFFSET_OUT_OF_RANGE => {
                        let reset = self.config.auto_offset_reset;
                        if reset == OffsetReset::None {
                            return Err(Error::OffsetOutOfRange { partition: tp.to_string(), offset: sent.offset });
                        }
                        info!(partition = %tp, offset = sent.offset, ?reset, "offset out of range: resetting");
                        if let Some(st) = self.assignment.get_mut(&tp) {
                            st.position = None;
                            st.reset = Some(reset);
                        }
                        continue;
                    }
                    code => {
                        if Client::needs_metadata_refresh(code) || code.is_retriable() {
                            debug!(partition = %tp, code = ?code.name(), "fetch: partition error, refreshing metadata");
                            refresh = true;
                            // A leader change: validate the position under the new epoch.
                            if matches!(code, ErrorCode::NOT_LEADER_OR_FOLLOWER | ErrorCode::FENCED_LEADER_EPOCH) {
                                if let Some(st) = self.assignment.get_mut(&tp) {
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
                if p.diverging_epoch.epoch >= 0 && p.diverging_epoch.end_offset >= 0 {
                    self.on_truncation(&tp, Some((p.diverging_epoch.epoch, p.diverging_epoch.end_offset)))?;
                    continue;
                }
                let aborted = match (self.config.isolation_level, p.aborted_transactions) {
                    (IsolationLevel::ReadCommitted, Some(a)) => {
                        let mut a: Vec<(i64, i64)> = a.iter().map(|t| (t.first_offset, t.producer_id)).collect();
                        a.sort_unstable();
                        a
                    }
                    _ => Vec::new(),
                };
                let records = p.records.unwrap_or_default();
                let queue = self.spare_queues.pop().unwrap_or_default();
                match parse_partition(&topic, tp, sent.offset, &records, aborted, self.config.isolation_level, &options, queue)? {
                    (Some(f), _) => self.buffer.push_back(f),
                    (None, queue) => self.recycle(queue),
                }
            }
        }
        Ok(refresh)
    }

    // ---- offsets -----------------------------------------------------------------------

    /// Offsets by [`OffsetSpec`] (ListOffsets at each leader): `(offset, leader epoch)`;
    /// partitions with no such offset (a timestamp past the last record) are left out.
    pub async fn list_offsets(&self, specs: &[(TopicPartition, OffsetSpec)]) -> Result<BTreeMap<TopicPartition, (i64, Option<i32>)>> {
        let mut out = BTreeMap::new();
        let mut todo: Vec<(TopicPartition, OffsetSpec)> = specs.to_vec();
        let mut retry = Retry::new(Backoff::constant(self.config.retry_backoff), 10);
        while !todo.is_empty() && retry.next().await {
            if retry.attempts() > 1 {
                self.client.refresh_metadata().await?;
            }
            let metadata = self.client.metadata();
            let mut by_leader: BTreeMap<i32, Vec<(TopicPartition, OffsetSpec, i32)>> = BTreeMap::new();
            let mut again = Vec::new();
            for (tp, spec) in todo.drain(..) {
                match metadata.topics.get(&tp.topic).and_then(|t| t.partitions.iter().find(|p| p.index == tp.partition)) {
                    Some(p) if p.leader >= 0 => by_leader.entry(p.leader).or_default().push((tp, spec, p.leader_epoch)),
                    _ => again.push((tp, spec)),
                }
            }
            for (leader, parts) in by_leader {
                let mut topics: BTreeMap<&str, Vec<ListOffsetsPartition>> = BTreeMap::new();
                for (tp, spec, epoch) in &parts {
                    topics.entry(tp.topic.as_str()).or_default().push(ListOffsetsPartition {
                        partition_index: tp.partition,
                        current_leader_epoch: *epoch,
                        timestamp: spec.wire(),
                        max_num_offsets: 1,
                        ..Default::default()
                    });
                }
                let request = ListOffsetsRequest {
                    replica_id: -1,
                    isolation_level: self.config.isolation_level.wire(),
                    topics: topics
                        .into_iter()
                        .map(|(t, partitions)| ListOffsetsTopic { name: ByteString::from(t.to_owned()), partitions, ..Default::default() })
                        .collect(),
                    timeout_ms: self.client.config().connection.request_timeout.as_millis().min(i32::MAX as u128) as i32,
                    ..Default::default()
                };
                let response = match self.client.call_node(leader, request).await {
                    Ok(Some(ResponseKind::ListOffsets(r))) => r,
                    Ok(other) => return Err(Error::UnexpectedResponse(format!("{:?} to ListOffsets", other.map(|o| o.api_key())))),
                    Err(e) if e.is_retriable() => {
                        warn!(leader, error = %e, "ListOffsets failed");
                        again.extend(parts.into_iter().map(|(tp, s, _)| (tp, s)));
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                for (tp, spec, _) in parts {
                    let p = response
                        .topics
                        .iter()
                        .filter(|t| t.name == tp.topic[..])
                        .flat_map(|t| &t.partitions)
                        .find(|p| p.partition_index == tp.partition);
                    match p {
                        None => return Err(Error::UnexpectedResponse(format!("ListOffsets response has no {tp}"))),
                        Some(p) if ErrorCode(p.error_code).is_ok() => {
                            if p.offset >= 0 {
                                out.insert(tp, (p.offset, (p.leader_epoch >= 0).then_some(p.leader_epoch)));
                            }
                        }
                        Some(p) => {
                            let code = ErrorCode(p.error_code);
                            if code.is_retriable() || Client::needs_metadata_refresh(code) {
                                again.push((tp, spec));
                            } else {
                                return Err(Error::broker(code, None, format!("ListOffsets {tp}")).about(Resource::Topic(tp.topic.clone())));
                            }
                        }
                    }
                }
            }
            todo = again;
        }
        if let Some((tp, _)) = todo.first() {
            return Err(Error::UnknownTopicOrPartition(format!("ListOffsets for {tp}: no leader answered")));
        }
        Ok(out)
    }

    /// The log start offsets.
    pub async fn beginning_offsets(&self, tps: &[TopicPartition]) -> Result<BTreeMap<TopicPartition, i64>> {
        self.offsets_of(tps, OffsetSpec::Earliest).await
    }

    /// The log end offsets (last stable offsets under read_committed).
    pub async fn end_offsets(&self, tps: &[TopicPartition]) -> Result<BTreeMap<TopicPartition, i64>> {
        self.offsets_of(tps, OffsetSpec::Latest).await
    }

    async fn offsets_of(&self, tps: &[TopicPartition], spec: OffsetSpec) -> Result<BTreeMap<TopicPartition, i64>> {
        let specs: Vec<_> = tps.iter().map(|tp| (tp.clone(), spec)).collect();
        Ok(self.list_offsets(&specs).await?.into_iter().map(|(tp, (o, _))| (tp, o)).collect())
    }

    fn group_id(&self) -> Result<&str> {
        self.config.group_id.as_deref().ok_or_else(|| Error::Config("committing offsets needs a group_id".into()))
    }

    /// The group coordinator's address (FindCoordinator), cached until it moves.
    pub(crate) async fn coordinator(&mut self) -> Result<String> {
        if let Some(c) = &self.coordinator {
            return Ok(c.clone());
        }
        let group = self.group_id()?.to_owned();
        let addr = crate::group::find_coordinator(&self.client, &group, self.config.retry_backoff).await?;
        self.coordinator = Some(addr.clone());
        Ok(addr)
    }

    /// Forgets the coordinator after NOT_COORDINATOR and the like.
    pub(crate) fn coordinator_lost(&mut self) {
        self.coordinator = None;
    }

    /// Sends `build(version)` to the group coordinator, finding it again (with backoff) while
    /// it moves or loads. `code_of` reads the response's coordinator error, if any.
    pub(crate) async fn call_coordinator(
        &mut self,
        api: ApiKey,
        build: impl Fn(i16) -> kwire::RequestKind,
        code_of: impl Fn(&ResponseKind) -> i16,
        timeout: Option<Duration>,
    ) -> Result<ResponseKind> {
        let mut last = None;
        let mut retry = Retry::new(Backoff::constant(self.config.retry_backoff), 30);
        while retry.next().await {
            let addr = self.coordinator().await?;
            match self.client.call_keyed_versioned(&crate::group::coordinator_key(&addr), &addr, api, &build, timeout).await {
                Ok(r) => match ErrorCode(code_of(&r)) {
                    // Same coordinator, later.
                    code @ ErrorCode::COORDINATOR_LOAD_IN_PROGRESS => last = Some(Error::broker(code, None, api.name().into())),
                    // Find it again.
                    code @ (ErrorCode::COORDINATOR_NOT_AVAILABLE | ErrorCode::NOT_COORDINATOR) => {
                        self.coordinator_lost();
                        last = Some(Error::broker(code, None, api.name().into()));
                    }
                    _ => return Ok(r),
                },
                Err(e) if e.is_retriable() => {
                    self.coordinator_lost();
                    last = Some(e);
                }
                Err(e) => return Err(e),
            }
        }
        let group = self.group_id()?.to_owned();
        Err(last.unwrap_or(Error::Group(GroupError::CoordinatorNotAvailable { group })))
    }

    /// The group's committed offsets for these partitions (OffsetFetch; unknown ones left out).
    pub async fn committed(&mut self, tps: &[TopicPartition]) -> Result<BTreeMap<TopicPartition, OffsetAndMetadata>> {
        let group = self.group_id()?.to_owned();
        // OffsetFetch v10 names topics by id: a topic just subscribed to may not be in the
        // metadata yet (its id would go out as zero and come back UNKNOWN_TOPIC_ID).
        for tp in tps {
            if self.client.metadata().topics.get(tp.topic.as_str()).map_or(true, |i| i.id == Uuid::ZERO) {
                let _ = self.client.topic(&tp.topic).await;
            }
        }
        let metadata = self.client.metadata();
        let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        for tp in tps {
            by_topic.entry(tp.topic.as_str()).or_default().push(tp.partition);
        }
        // Up to v7 one group at the top level; from v8 a list of groups.
        let build = |v: i16| {
            let mut r = OffsetFetchRequest { require_stable: v >= 7, ..Default::default() };
            if v < 8 {
                r.group_id = ByteString::from(group.clone());
                r.topics = Some(
                    by_topic
                        .iter()
                        .map(|(t, ps)| OffsetFetchRequestTopic { name: ByteString::from(t.to_string()), partition_indexes: ps.iter().copied().collect(), ..Default::default() })
                        .collect(),
                );
            } else {
                r.groups = vec![OffsetFetchRequestGroup {
                    group_id: ByteString::from(group.clone()),
                    topics: Some(
                        by_topic
                            .iter()
                            .map(|(t, ps)| OffsetFetchRequestTopics {
                                name: ByteString::from(t.to_string()),
                                topic_id: metadata.topics.get(*t).map_or(Uuid::ZERO, |i| i.id),
                                partition_indexes: ps.iter().copied().collect(),
                                ..Default::default()
                            })
                            .collect(),
                    ),
                    member_id: None,
                    member_epoch: -1,
                    ..Default::default()
                }];
            }
            kwire::RequestKind::from(r)
        };
        let code_of = |r: &ResponseKind| match r {
            ResponseKind::OffsetFetch(r) => r.groups.first().map_or(r.error_code, |g| g.error_code),
            _ => 0,
        };
        let ids = topic_ids(&metadata);
        let mut retry = Retry::new(Backoff::constant(self.config.retry_backoff), 30);
        while retry.next().await {
            let response = match self.call_coordinator(ApiKey::OffsetFetch, build, code_of, None).await? {
                ResponseKind::OffsetFetch(r) => r,
                other => return Err(Error::UnexpectedResponse(format!("{:?} to OffsetFetch", other.api_key()))),
            };
            let code = code_of(&ResponseKind::OffsetFetch(response.clone()));
            // A transaction is committing offsets: ask again.
            if ErrorCode(code) == ErrorCode::UNSTABLE_OFFSET_COMMIT {
                continue;
            }
            Error::check(code, None, || format!("OffsetFetch for group {group}"))?;
            let mut out = BTreeMap::new();
            let mut unstable = false;
            // (topic, partition, offset, epoch, metadata, error) from either layout (v8+ groups, or earlier).
            let mut rows: Vec<(String, i32, i64, i32, Option<String>, i16)> = Vec::new();
            for g in &response.groups {
                for t in &g.topics {
                    let name = if t.topic_id != Uuid::ZERO { ids.get(&t.topic_id).cloned().unwrap_or_default() } else { t.name.to_string() };
                    for p in &t.partitions {
                        rows.push((name.clone(), p.partition_index, p.committed_offset, p.committed_leader_epoch, p.metadata.as_deref().map(str::to_owned), p.error_code));
                    }
                }
            }
            for t in &response.topics {
                for p in &t.partitions {
                    rows.push((t.name.to_string(), p.partition_index, p.committed_offset, p.committed_leader_epoch, p.metadata.as_deref().map(str::to_owned), p.error_code));
                }
            }
            for (topic, partition, offset, epoch, meta, code) in rows {
                // Unstable, or an unknown topic id (v10 asks by topic id, and the metadata had
                // no id for a topic just created): ask again.
                if matches!(ErrorCode(code), ErrorCode::UNSTABLE_OFFSET_COMMIT | ErrorCode::UNKNOWN_TOPIC_ID) {
                    unstable = true;
                    continue;
                }
                Error::check(code, None, || format!("OffsetFetch {topic}-{partition} for group {group}"))?;
                if offset >= 0 {
                    out.insert(
                        TopicPartition::new(topic, partition),
                        OffsetAndMetadata { offset, leader_epoch: (epoch >= 0).then_some(epoch), metadata: meta },
                    );
                }
            }
            if !unstable {
                return Ok(out);
            }
        }
        Err(Error::Group(GroupError::UnstableOffsets { group }))
    }

    /// Commits the positions of every assigned partition (what `poll` has returned).
    pub async fn commit(&mut self) -> Result<()> {
        let offsets: BTreeMap<TopicPartition, OffsetAndMetadata> = self
            .assignment
            .iter()
            .filter_map(|(tp, s)| s.position.map(|o| (tp.clone(), OffsetAndMetadata { offset: o, leader_epoch: s.epoch, metadata: None })))
            .collect();
        self.commit_offsets(&offsets).await
    }

    /// Commits these offsets for the group (OffsetCommit), as a member of the current
    /// generation when subscribed.
    pub async fn commit_offsets(&mut self, offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>) -> Result<()> {
        if offsets.is_empty() {
            return Ok(());
        }
        let group = self.group_id()?.to_owned();
        let metadata = self.client.metadata();
        let (generation, member_id) = self.group.as_ref().map_or((-1, String::new()), |g| g.commit_identity());
        let mut topics: BTreeMap<&str, Vec<OffsetCommitRequestPartition>> = BTreeMap::new();
        for (tp, o) in offsets {
            topics.entry(tp.topic.as_str()).or_default().push(OffsetCommitRequestPartition {
                partition_index: tp.partition,
                committed_offset: o.offset,
                committed_leader_epoch: o.leader_epoch.unwrap_or(-1),
                commit_timestamp: -1,
                committed_metadata: Some(ByteString::from(o.metadata.clone().unwrap_or_default())),
                ..Default::default()
            });
        }
        let instance = self.config.group_instance_id.clone().map(ByteString::from);
        let build = |v: i16| {
            kwire::RequestKind::from(OffsetCommitRequest {
            group_id: ByteString::from(group.clone()),
            generation_id_or_member_epoch: generation,
            member_id: ByteString::from(member_id.clone()),
            group_instance_id: if v >= 7 { instance.clone() } else { None },
            retention_time_ms: -1,
            topics: topics
                .iter()
                .map(|(t, partitions)| OffsetCommitRequestTopic {
                    name: ByteString::from(t.to_string()),
                    topic_id: metadata.topics.get(*t).map_or(Uuid::ZERO, |i| i.id),
                    partitions: partitions.clone(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
        };
        let code_of = |r: &ResponseKind| match r {
            ResponseKind::OffsetCommit(r) => {
                r.topics.iter().flat_map(|t| &t.partitions).map(|p| p.error_code)
                    .find(|c| matches!(ErrorCode(*c), ErrorCode::COORDINATOR_LOAD_IN_PROGRESS | ErrorCode::COORDINATOR_NOT_AVAILABLE | ErrorCode::NOT_COORDINATOR))
                    .unwrap_or(0)
            }
            _ => 0,
        };
        let response = match self.call_coordinator(ApiKey::OffsetCommit, build, code_of, None).await? {
            ResponseKind::OffsetCommit(r) => r,
            other => return Err(Error::UnexpectedResponse(format!("{:?} to OffsetCommit", other.api_key()))),
        };
        for t in &response.topics {
            for p in &t.partitions {
                let code = ErrorCode(p.error_code);
                if !code.is_ok() {
                    let e = Error::group(code, None, &group, self.config.group_instance_id.as_deref(), format!("OffsetCommit for group {group}, topic {}", t.name));
                    // The generation moved on: rejoin before the next poll returns records.
                    if matches!(e, Error::Group(GroupError::RebalanceInProgress { .. } | GroupError::UnknownMember { .. } | GroupError::StaleGeneration { .. })) {
                        if let Some(g) = &self.group {
                            g.request_rejoin(code);
                        }
                    }
                    return Err(e.about(Resource::Topic(t.name.to_string())));
                }
            }
        }
        debug!(group, partitions = offsets.len(), "committed");
        Ok(())
    }

    /// With `enable_auto_commit`, commits positions every `auto_commit_interval`. A failure
    /// is logged, not returned (as Java's auto-commit).
    async fn maybe_auto_commit(&mut self) {
        if !self.config.enable_auto_commit || self.config.group_id.is_none() || self.last_auto_commit.elapsed() < self.config.auto_commit_interval {
            return;
        }
        self.last_auto_commit = Instant::now();
        if let Err(e) = self.commit().await {
            warn!(error = %e, "automatic commit failed");
        }
    }

    /// Commits (with auto-commit) what was returned and leaves the group (unless a static
    /// member, which keeps its partitions until its session times out, as Java's).
    pub async fn close(mut self) -> Result<()> {
        if self.config.enable_auto_commit && self.config.group_id.is_some() {
            if let Err(e) = self.commit().await {
                warn!(error = %e, "commit on close failed");
            }
        }
        if self.group.is_some() {
            self.leave_group().await?;
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
        forgotten_topics_data: forgotten
            .into_iter()
            .map(|(t, ps)| ForgottenTopic { topic: ByteString::from(t.to_owned()), topic_id: id_of(t), partitions: ps.into_iter().collect(), ..Default::default() })
            .collect(),
        ..Default::default()
    };
    (request, incremental)
}

/// The records of one partition's fetched data from `position` on. Under read_committed,
/// batches of aborted transactions are skipped as Java does: an aborted transaction's
/// producer id is "aborted" from its first offset (the response's list) until its ABORT
/// marker; control batches are never returned. The records go into `out` (a recycled queue),
/// handed back when there are none.
#[allow(clippy::too_many_arguments)]
fn parse_partition(
    topic: &Arc<str>,
    tp: TopicPartition,
    position: i64,
    records: &Bytes,
    mut aborted: Vec<(i64, i64)>,
    isolation: IsolationLevel,
    options: &DecodeOptions,
    mut out: VecDeque<ConsumerRecord>,
) -> Result<(Option<Fetched>, VecDeque<ConsumerRecord>)> {
    let bad = |e: kwire::DecodeError| Error::Protocol { addr: tp.to_string(), message: format!("records of {tp}: {e}") };
    aborted.reverse(); // pop the lowest first offset first
    let mut aborted_pids: HashSet<i64> = HashSet::new();
    out.clear();
    let mut next_offset = position;
    let mut next_epoch = None;
    let mut bytes = 0;
    for batch in records.batches_with(*options) {
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
        let log_append = b.timestamp_type() == TimestampType::LogAppendTime;
        for r in b.records_with(options).map_err(bad)? {
            let r = r.map_err(bad)?;
            if r.offset < position {
                continue;
            }
            let record = ConsumerRecord {
                topic: topic.clone(),
                partition: tp.partition,
                offset: r.offset,
                timestamp: if log_append { b.max_timestamp() } else { r.timestamp },
                timestamp_type: b.timestamp_type(),
                key: r.key,
                value: r.value,
                headers: r.headers,
                leader_epoch: epoch,
            };
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
        let f = parse_partition(&topic, TopicPartition::new("t", 0), 0, &raw, vec![(0, 7)], IsolationLevel::ReadCommitted, &opts, VecDeque::new())
            .unwrap()
            .0
            .unwrap();
        let offsets: Vec<i64> = f.records.iter().map(|r| r.offset).collect();
        assert_eq!(offsets, vec![4, 5, 7, 8]);
        assert_eq!(f.next_offset, 9);
        let f = parse_partition(&topic, TopicPartition::new("t", 0), 0, &raw, vec![], IsolationLevel::ReadUncommitted, &opts, VecDeque::new()).unwrap().0.unwrap();
        let offsets: Vec<i64> = f.records.iter().map(|r| r.offset).collect();
        assert_eq!(offsets, vec![0, 1, 2, 4, 5, 7, 8], "control records are never returned");
        // From the middle of a batch, and past the markers only.
        let f = parse_partition(&topic, TopicPartition::new("t", 0), 5, &raw, vec![], IsolationLevel::ReadUncommitted, &opts, VecDeque::new()).unwrap().0.unwrap();
        assert_eq!(f.records.front().map(|r| r.offset), Some(5));
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
