//! The consumer: partitions assigned by hand or by a consumer group, Fetch with incremental
//! fetch sessions (KIP-227), read_committed, leader epochs and truncation detection, offset
//! reset, ListOffsets, OffsetCommit / OffsetFetch.
//!
//! Laid out as Java's consumer is: [`Consumer`] (this module) is the facade that one task
//! polls; `subscription` holds the assigned partitions and their positions
//! (`SubscriptionState`); `fetcher` owns the fetch sessions and fetched records (`Fetcher`);
//! `positions` resolves and validates positions; `offsets` lists, fetches and commits
//! offsets; `rebalance` drives the group membership ([`group`](crate::group)) from `poll`
//! and tells the [`RebalanceListener`] what changed.
//!
//! Fetching is pull-based: a Fetch is sent only from [`Consumer::poll`] (or the streams built
//! on it) when no fetched data is waiting, so a caller that stops polling stops fetching and
//! memory stays bounded by one round of responses (`fetch_max_bytes` per broker). Records are
//! slices of the fetch response's buffer (uncompressed batches) or of the batch's inflated
//! buffer, never copied one by one.

mod fetcher;
mod listener;
mod offsets;
mod positions;
mod rebalance;
mod subscription;

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use futures_util::Stream;
use kwire::records::{Headers, Record, RecordBatch, TimestampType};
use kwire::Bytes;
use tracing::warn;

use self::fetcher::Fetcher;
use self::subscription::Subscription;
use crate::assignor::Assignor;
use crate::cluster::Client;
use crate::coordinator::Coordinator;
use crate::error::{ConsumerError, Error, Result};
use crate::future::ClientFuture;
use crate::group::{Group, GroupProtocol};
#[cfg(feature = "telemetry")]
use crate::telemetry::Telemetry;
use crate::topic_partition::TopicPartition;

pub use self::listener::{ListenerFuture, RebalanceListener};
pub use crate::offsets::{OffsetAndMetadata, OffsetSpec};

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

/// A group member's identity as a transactional producer commits offsets for it (Java's
/// `ConsumerGroupMetadata`, KIP-447): the group coordinator refuses offsets from a member that
/// left the generation, so a zombie's transaction cannot commit them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupMetadata {
    /// The group.
    pub group_id: String,
    /// The generation (classic) or member epoch (KIP-848); -1 when not a member.
    pub generation_id: i32,
    /// The member id; empty when not a member.
    pub member_id: String,
    /// The group instance id (static membership).
    pub group_instance_id: Option<String>,
}

impl ConsumerGroupMetadata {
    /// The metadata of `group` without membership (offsets committed as a non-member, as
    /// Java's `new ConsumerGroupMetadata(groupId)`).
    pub fn new(group_id: impl Into<String>) -> ConsumerGroupMetadata {
        ConsumerGroupMetadata { group_id: group_id.into(), generation_id: -1, member_id: String::new(), group_instance_id: None }
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
    /// `client.rack` (none): the consumer's rack, for rack-aware assignment (sent in the group
    /// subscription or heartbeat) and fetching from the closest replica (KIP-392: sent in
    /// Fetch requests; brokers with a `replica.selector.class` may point to a follower).
    pub client_rack: Option<String>,
    /// `enable.metrics.push` (true): push the consumer's metrics to the brokers when a
    /// client-metrics subscription asks for them (KIP-714; feature `telemetry`, without which
    /// nothing is pushed).
    pub enable_metrics_push: bool,
    /// `allow.auto.create.topics` (true): subscribing to topics by name asks the brokers for
    /// them with `allow_auto_topic_creation`, so a broker with `auto.create.topics.enable`
    /// creates those that do not exist (never for a pattern, as Java's consumer).
    pub allow_auto_create_topics: bool,
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
            client_rack: None,
            enable_metrics_push: true,
            allow_auto_create_topics: true,
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

impl ConsumerRecord {
    /// Record `r` of batch `b`, fetched from `topic`'s `partition` (by the consumer or a share
    /// consumer): in a LogAppendTime batch every record has the broker's time, the batch's
    /// largest timestamp.
    pub(crate) fn from_batch(topic: &Arc<str>, partition: i32, b: &RecordBatch, r: Record) -> ConsumerRecord {
        let log_append = b.timestamp_type() == TimestampType::LogAppendTime;
        ConsumerRecord {
            topic: topic.clone(),
            partition,
            offset: r.offset,
            timestamp: if log_append { b.max_timestamp() } else { r.timestamp },
            timestamp_type: b.timestamp_type(),
            key: r.key,
            value: r.value,
            headers: r.headers,
            leader_epoch: (b.partition_leader_epoch() >= 0).then_some(b.partition_leader_epoch()),
        }
    }
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
    /// Fetch requests sent, by broker (a leader, or a preferred read replica, KIP-392).
    pub fetches_by_node: std::collections::BTreeMap<i32, u64>,
}

/// A Kafka consumer. Not shared: one task polls it (as Java's `KafkaConsumer`).
pub struct Consumer {
    client: Client,
    config: ConsumerConfig,
    subscription: Subscription,
    group: Option<Group>,
    /// The group's coordinator (with a group id), shared with the group's heartbeats.
    coordinator: Option<Coordinator>,
    /// In a mutex only so that the consumer stays `Sync` (it is used by one task).
    listener: Option<std::sync::Mutex<Box<dyn RebalanceListener>>>,
    /// The first error a rebalance listener returned, for `poll` to return.
    listener_error: Option<Error>,
    fetcher: Fetcher,
    last_auto_commit: Instant,
    #[cfg(feature = "telemetry")]
    telemetry: Option<Telemetry>,
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer").field("group", &self.config.group_id).field("assignment", &self.subscription.partitions.len()).finish()
    }
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
        let client = client.with_own_connections();
        let client_id = client.config().connection.client_id.clone();
        let coordinator = config.group_id.as_deref().map(|g| Coordinator::new(client.clone(), g, config.retry_backoff));
        let metrics = crate::metrics::ConsumerMetrics::new(&client_id);
        #[cfg(feature = "telemetry")]
        let telemetry = config.enable_metrics_push.then(|| Telemetry::start(client.clone(), metrics.telemetry(), "consumer"));
        Ok(Consumer {
            #[cfg(feature = "telemetry")]
            telemetry,
            client,
            config,
            subscription: Subscription::default(),
            group: None,
            coordinator,
            listener: None,
            listener_error: None,
            fetcher: Fetcher::new(metrics),
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
    fn set_assignment(&mut self, wanted: &BTreeSet<TopicPartition>) {
        self.subscription.set(wanted);
        self.fetcher.buffer.retain(|f| wanted.contains(&f.tp));
        self.fetcher.metrics.assigned_partitions.set(wanted.len() as f64);
    }

    /// The partitions assigned now (by hand or by the group).
    pub fn assignment(&self) -> BTreeSet<TopicPartition> {
        self.subscription.assigned()
    }

    /// Counters of the fetcher.
    pub fn stats(&self) -> FetchStats {
        let mut s = self.fetcher.stats.clone();
        s.buffered_records = self.fetcher.buffer.iter().map(|f| f.records.len()).sum();
        s.buffered_bytes = self.fetcher.buffer.iter().map(|f| f.bytes).sum();
        s
    }

    /// The fetch session with broker `node`: its id and next epoch (`None` without one).
    pub fn fetch_session(&self, node: i32) -> Option<(i32, i32)> {
        self.fetcher.sessions.get(&node).filter(|s| s.id != 0).map(|s| (s.id, s.epoch))
    }

    /// Stops fetching these assigned partitions and returning their records (Java's
    /// `pause`), until [`resume`](Consumer::resume); positions stay where they are (records
    /// already fetched for them are dropped and fetched again after the resume). Group
    /// membership goes on: `poll` must still be called. A partition not assigned is
    /// `ConsumerError::NotAssigned` (and nothing is paused).
    pub fn pause(&mut self, tps: &[TopicPartition]) -> Result<()> {
        self.subscription.set_paused(tps, true)?;
        self.fetcher.buffer.retain(|f| !tps.contains(&f.tp));
        Ok(())
    }

    /// Fetches and returns records of these paused partitions again (Java's `resume`).
    pub fn resume(&mut self, tps: &[TopicPartition]) -> Result<()> {
        self.subscription.set_paused(tps, false)
    }

    /// The partitions paused now. A partition that leaves the assignment is no longer paused.
    pub fn paused(&self) -> BTreeSet<TopicPartition> {
        self.subscription.partitions.iter().filter(|(_, st)| st.paused).map(|(tp, _)| tp.clone()).collect()
    }

    /// Sets the position of an assigned partition; its buffered records are dropped.
    pub fn seek(&mut self, tp: &TopicPartition, offset: i64) -> Result<()> {
        self.subscription.seek(tp, offset)?;
        self.fetcher.buffer.retain(|f| &f.tp != tp);
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
        for tp in self.subscription.reset(tps, reset) {
            self.fetcher.buffer.retain(|f| f.tp != tp);
        }
    }

    /// The next offset `poll` returns for `tp`, resolving it (committed offset or reset) if
    /// it is not known yet.
    pub fn position<'a>(&'a mut self, tp: &'a TopicPartition) -> ClientFuture<'a, Result<i64>> {
        ClientFuture::boxed(self.position_boxed(tp))
    }

    async fn position_boxed(&mut self, tp: &TopicPartition) -> Result<i64> {
        if !self.subscription.partitions.contains_key(tp) {
            return Err(Error::Consumer(ConsumerError::NotAssigned(tp.clone())));
        }
        self.resolve_positions().await?;
        self.subscription.partitions.get(tp).and_then(|s| s.position).ok_or_else(|| Error::NoOffset(tp.clone()))
    }

    /// The next batch of records (at most `max_poll_records`), waiting at most `timeout` for
    /// some. Group membership (joining, rebalancing, heartbeats' findings) and automatic
    /// commits happen here; a classic rebalance can hold it past `timeout` (JoinGroup waits for
    /// the whole group, up to `max_poll_interval`).
    pub fn poll(&mut self, timeout: Duration) -> ClientFuture<'_, Result<Vec<ConsumerRecord>>> {
        let max = self.config.max_poll_records;
        ClientFuture::boxed(self.poll_up_to(timeout, max))
    }

    async fn poll_up_to(&mut self, timeout: Duration, max: usize) -> Result<Vec<ConsumerRecord>> {
        let deadline = Instant::now() + timeout;
        loop {
            if self.group.is_some() {
                self.maintain_group().await?;
            }
            self.maybe_auto_commit().await;
            if !self.fetcher.in_flight.is_empty() {
                // On a current-thread runtime the connections' io tasks and the fetches run
                // only while this task waits: once per poll, not only when the buffer is dry.
                tokio::task::yield_now().await;
            }
            self.fetcher.complete(&self.client, &self.config, &mut self.subscription, None).await?;
            if !self.fetcher.buffer.is_empty() {
                return self.hand_out(max).await;
            }
            self.resolve_positions().await?;
            self.validate_positions().await?;
            let remaining = deadline.saturating_duration_since(Instant::now());
            if self.subscription.partitions.values().any(Subscription::fetchable) || !self.fetcher.in_flight.is_empty() {
                self.fetcher.send(&self.client, &self.config, &mut self.subscription, remaining.min(self.config.fetch_max_wait)).await?;
                self.fetcher.complete(&self.client, &self.config, &mut self.subscription, Some(deadline)).await?;
            } else {
                // Nothing to fetch yet (joining a group, no assignment): wait a little.
                tokio::time::sleep(remaining.min(Duration::from_millis(100))).await;
            }
            if !self.fetcher.buffer.is_empty() {
                return self.hand_out(max).await;
            }
            if Instant::now() >= deadline {
                return Ok(Vec::new());
            }
        }
    }

    /// Up to `max` buffered records; then the fetches for what they emptied go out, so the
    /// brokers work while the caller handles these.
    async fn hand_out(&mut self, max: usize) -> Result<Vec<ConsumerRecord>> {
        let records = self.fetcher.drain(&mut self.subscription, max);
        self.fetcher.send(&self.client, &self.config, &mut self.subscription, self.config.fetch_max_wait).await?;
        Ok(records)
    }

    /// A stream of records, one at a time; fetching happens only as the stream is polled, so
    /// a slow reader stops fetching (at most one fetch's records per partition wait, and one
    /// Fetch per broker is in flight). Ends only on drop; errors are items (a retriable one may
    /// be followed by more records).
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

    /// Commits (with auto-commit) what was returned and leaves the group (unless a static
    /// member, which keeps its partitions until its session times out, as Java's).
    pub fn close(self) -> ClientFuture<'static, Result<()>> {
        ClientFuture::boxed(self.close_boxed())
    }

    async fn close_boxed(mut self) -> Result<()> {
        if self.config.enable_auto_commit && self.config.group_id.is_some() {
            if let Err(e) = self.commit().await {
                warn!(error = %e, "commit on close failed");
            }
        }
        if self.group.is_some() {
            self.leave_group().await?;
        }
        #[cfg(feature = "telemetry")]
        if let Some(t) = self.telemetry.as_mut() {
            t.close(self.client.config().connection.request_timeout).await;
        }
        Ok(())
    }

    /// The id the brokers know this consumer's telemetry by (Java's `clientInstanceId`), waiting
    /// at most `timeout` for the first GetTelemetrySubscriptions answer. `None` with
    /// `enable_metrics_push` off, on brokers without KIP-714, when it did not come in time, or
    /// without the `telemetry` feature.
    pub fn client_instance_id(&self, timeout: Duration) -> ClientFuture<'_, Option<kwire::Uuid>> {
        ClientFuture::boxed(self.client_instance_id_boxed(timeout))
    }

    async fn client_instance_id_boxed(&self, timeout: Duration) -> Option<kwire::Uuid> {
        #[cfg(feature = "telemetry")]
        return crate::telemetry::wait_instance_id(self.telemetry.as_ref()?, timeout).await;
        #[cfg(not(feature = "telemetry"))]
        {
            let _ = timeout;
            None
        }
    }
}
