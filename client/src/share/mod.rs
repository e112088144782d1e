//! The share consumer (KIP-932, Kafka 4.1+): members of a share group read the same
//! partitions together, each record delivered to one member at a time and acknowledged one
//! by one, as Java's `KafkaShareConsumer` does.
//!
//! Laid out as Java's is: [`ShareConsumer`] (this module) is the facade one task polls;
//! `membership` keeps the member in its group with ShareGroupHeartbeat (a task of its own:
//! the member id it makes, its epoch, the assignment the broker hands out, the heartbeat
//! interval the broker sets, leaving at epoch -1); `fetch` holds a share session per leader
//! (ShareFetch, with acknowledgements piggy-backed; ShareAcknowledge for the rest), the
//! records fetched and the acknowledgement state; `acks` encodes acknowledgements as the
//! protocol batches them.
//!
//! Acknowledgement: in [`AcknowledgementMode::Implicit`] (Java's default) the records a poll
//! returned are accepted by the next poll, commit or close. In
//! [`AcknowledgementMode::Explicit`] every record is acknowledged with
//! [`acknowledge`](ShareConsumer::acknowledge) (accept, release, reject, or renew its lock),
//! before the next poll; acknowledgements go with the next ShareFetch, or at once with
//! [`commit_sync`](ShareConsumer::commit_sync) / [`commit_async`](ShareConsumer::commit_async).
//! A record not acknowledged within the acquisition lock (the group's
//! `share.record.lock.duration.ms`) goes to another member, its delivery count one higher.
//!
//! A broker without share groups (Kafka 3.x; 4.0 without the early access) makes `poll` fail
//! with [`Error::UnsupportedVersion`].

mod acks;
mod fetch;
mod membership;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use tracing::{warn, Instrument};

use self::fetch::{Fetcher, Tip};
use self::membership::{HeartbeatConfig, Membership};
use crate::cluster::Client;
use crate::consumer::ConsumerRecord;
use crate::coordinator::Coordinator;
use crate::error::{Error, Result, ShareError};
use crate::future::ClientFuture;
use crate::group::new_member_id;
use crate::topic_partition::TopicPartition;

pub use self::acks::AcknowledgeType;

/// `share.acknowledgement.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AcknowledgementMode {
    /// The records a poll returned are accepted by the next poll, commit or close.
    #[default]
    Implicit,
    /// Every record is acknowledged with [`ShareConsumer::acknowledge`] before the next poll.
    Explicit,
}

/// Share consumer settings, with Java's defaults.
#[derive(Debug, Clone)]
pub struct ShareConsumerConfig {
    /// `group.id`: the share group.
    pub group_id: String,
    /// `share.acknowledgement.mode` (implicit).
    pub acknowledgement_mode: AcknowledgementMode,
    /// `max.poll.records` (500): also what a ShareFetch asks for.
    pub max_poll_records: usize,
    /// `fetch.min.bytes` (1).
    pub fetch_min_bytes: i32,
    /// `fetch.max.bytes` (50 MiB) per ShareFetch.
    pub fetch_max_bytes: i32,
    /// `fetch.max.wait.ms` (500 ms).
    pub fetch_max_wait: Duration,
    /// `check.crcs` (true).
    pub check_crcs: bool,
    /// `client.rack`: sent when joining.
    pub client_rack: Option<String>,
    /// The heartbeat interval until the broker sets one (its first answer does).
    pub heartbeat_interval: Duration,
    /// `retry.backoff.ms` (100 ms).
    pub retry_backoff: Duration,
    /// How long leaving the group may take on close (30 s).
    pub request_timeout: Duration,
}

impl ShareConsumerConfig {
    /// Settings for a member of the share group `group_id`.
    pub fn new(group_id: impl Into<String>) -> ShareConsumerConfig {
        ShareConsumerConfig {
            group_id: group_id.into(),
            acknowledgement_mode: AcknowledgementMode::Implicit,
            max_poll_records: 500,
            fetch_min_bytes: 1,
            fetch_max_bytes: 50 << 20,
            fetch_max_wait: Duration::from_millis(500),
            check_crcs: true,
            client_rack: None,
            heartbeat_interval: Duration::from_secs(5),
            retry_backoff: Duration::from_millis(100),
            request_timeout: Duration::from_secs(30),
        }
    }

    /// With this acknowledgement mode.
    pub fn acknowledgement_mode(mut self, mode: AcknowledgementMode) -> Self {
        self.acknowledgement_mode = mode;
        self
    }
}

/// A record from a share group, with how many times it has been delivered (1 the first time;
/// more after a release, a lock timeout or a member that went away). Derefs to its
/// [`ConsumerRecord`].
#[derive(Debug, Clone, PartialEq)]
pub struct ShareRecord {
    /// The record.
    pub record: ConsumerRecord,
    /// The delivery count.
    pub delivery_count: i16,
}

impl std::ops::Deref for ShareRecord {
    type Target = ConsumerRecord;

    fn deref(&self) -> &ConsumerRecord {
        &self.record
    }
}

/// What became of acknowledgements of one partition (Java's `AcknowledgementCommitCallback`
/// arguments, and `commit_sync`'s answer).
#[derive(Debug, Clone)]
pub struct AcknowledgementCommit {
    /// The partition.
    pub partition: TopicPartition,
    /// The offsets acknowledged, and how.
    pub acknowledgements: Vec<(i64, AcknowledgeType)>,
    /// Why the broker did not take them (INVALID_RECORD_STATE: the lock had timed out, the
    /// record went to another member), `None` when it did.
    pub error: Option<Error>,
}

impl AcknowledgementCommit {
    /// The offsets acknowledged.
    pub fn offsets(&self) -> Vec<i64> {
        self.acknowledgements.iter().map(|(o, _)| *o).collect()
    }

    /// The offsets acknowledged as `ty`.
    pub fn offsets_of(&self, ty: AcknowledgeType) -> Vec<i64> {
        self.acknowledgements.iter().filter(|(_, t)| *t == ty).map(|(o, _)| *o).collect()
    }
}

type Callback = Box<dyn FnMut(&AcknowledgementCommit) + Send>;

/// A member of a share group (Java's `KafkaShareConsumer`): `subscribe`, then `poll`.
pub struct ShareConsumer {
    client: Client,
    config: ShareConsumerConfig,
    coordinator: Coordinator,
    membership: Arc<Membership>,
    topics: Vec<String>,
    task: Option<tokio::task::JoinHandle<()>>,
    fetcher: Fetcher,
    /// The partitions assigned, with their topic names.
    assigned: BTreeMap<Tip, Arc<str>>,
    callback: Option<Callback>,
}

impl std::fmt::Debug for ShareConsumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShareConsumer").field("group", &self.config.group_id).field("assigned", &self.assigned.len()).finish()
    }
}

impl Drop for ShareConsumer {
    fn drop(&mut self) {
        // Dropped without `close`: no more heartbeats, nothing acknowledged. The broker
        // delivers the acquired records again when their locks time out, and drops the member
        // when its session does, as it does a crashed one.
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

impl ShareConsumer {
    /// A member of `config.group_id` on `client` (with connections of its own, so its
    /// long-polling ShareFetches hold up no one else's requests). It joins on `subscribe`.
    pub fn new(client: Client, config: ShareConsumerConfig) -> Result<ShareConsumer> {
        if config.group_id.is_empty() {
            return Err(Error::Config("a share consumer needs a group_id".into()));
        }
        if config.max_poll_records == 0 || config.fetch_max_bytes <= 0 {
            return Err(Error::Config("max_poll_records and fetch_max_bytes must be positive".into()));
        }
        let client = client.with_own_connections();
        let coordinator = Coordinator::new(client.clone(), &config.group_id, config.retry_backoff);
        // KIP-932: the member makes its own id, kept for its lifetime.
        let membership = Membership::new(new_member_id(client.member_ids())?);
        Ok(ShareConsumer {
            client,
            config,
            coordinator,
            membership,
            topics: Vec::new(),
            task: None,
            fetcher: Fetcher::default(),
            assigned: BTreeMap::new(),
            callback: None,
        })
    }

    /// The settings.
    pub fn config(&self) -> &ShareConsumerConfig {
        &self.config
    }

    /// The member id (made by this consumer, as KIP-932 has it).
    pub fn member_id(&self) -> String {
        self.membership.lock().member_id.clone()
    }

    /// The member epoch (0 until joined).
    pub fn member_epoch(&self) -> i32 {
        self.membership.lock().epoch
    }

    /// The partitions assigned (shared with other members of the group).
    pub fn assignment(&self) -> BTreeSet<TopicPartition> {
        self.assigned.iter().map(|((_, p), name)| TopicPartition::new(name.to_string(), *p)).collect()
    }

    /// The topics subscribed to.
    pub fn subscription(&self) -> &[String] {
        &self.topics
    }

    /// The acquisition lock duration the broker last reported (records not acknowledged
    /// within it go back to the group).
    pub fn acquisition_lock_timeout(&self) -> Option<Duration> {
        self.fetcher.lock_timeout
    }

    /// Called with the outcome of every acknowledgement sent (Java's
    /// `setAcknowledgementCommitCallback`), from `poll`, the commits and `close`.
    pub fn set_acknowledgement_commit_callback(&mut self, callback: impl FnMut(&AcknowledgementCommit) + Send + 'static) {
        self.callback = Some(Box::new(callback));
    }

    /// Joins the share group for `topics` (the heartbeat starts; `poll` returns records once
    /// the broker assigns partitions). Subscribing again replaces the topics.
    pub fn subscribe(&mut self, topics: &[&str]) -> Result<()> {
        if topics.is_empty() {
            return Err(Error::Config("subscribe to at least one topic".into()));
        }
        let topics: Vec<String> = topics.iter().map(|t| t.to_string()).collect();
        if self.task.is_some() && topics == self.topics {
            return Ok(());
        }
        if let Some(t) = self.task.take() {
            t.abort();
        }
        self.topics = topics;
        let config = self.heartbeat_config();
        let span = tracing::info_span!("kafka.share_group.heartbeat", group = self.config.group_id.as_str());
        let task = tokio::spawn(membership::heartbeat(self.coordinator.clone(), config, self.membership.clone()).instrument(span));
        self.task = Some(task);
        Ok(())
    }

    fn heartbeat_config(&self) -> HeartbeatConfig {
        HeartbeatConfig {
            group_id: self.config.group_id.clone(),
            topics: self.topics.clone(),
            rack_id: self.config.client_rack.clone(),
            heartbeat_interval: self.config.heartbeat_interval,
            retry_backoff: self.config.retry_backoff,
            request_timeout: self.config.request_timeout,
        }
    }

    /// Records, waiting up to `timeout` for some. First the records the last poll returned
    /// are settled: accepted (implicit mode), or, in explicit mode, refused with
    /// [`ShareError::Unacknowledged`] until each is acknowledged. An empty vector when none
    /// came in time.
    pub fn poll(&mut self, timeout: Duration) -> ClientFuture<'_, Result<Vec<ShareRecord>>> {
        ClientFuture::boxed(self.poll_boxed(timeout))
    }

    async fn poll_boxed(&mut self, timeout: Duration) -> Result<Vec<ShareRecord>> {
        if self.task.is_none() {
            return Err(Error::Share(ShareError::NotSubscribed));
        }
        match self.config.acknowledgement_mode {
            AcknowledgementMode::Implicit => self.fetcher.acknowledge_all(AcknowledgeType::Accept.wire()),
            AcknowledgementMode::Explicit => {
                let records = self.fetcher.unacknowledged();
                if records > 0 {
                    return Err(Error::Share(ShareError::Unacknowledged { records }));
                }
            }
        }
        self.fetcher.collect().await;
        self.deliver();
        self.apply_assignment().await;
        if self.fetcher.buffered() > 0 {
            // Records fetched earlier, so no ShareFetch this time: the acknowledgements go in
            // a ShareAcknowledge, not waited for.
            if self.fetcher.has_pending() {
                let member_id = self.member_id();
                self.fetcher.commit(&self.client, &self.config.group_id, &member_id, false).await;
                self.deliver();
            }
            return Ok(self.fetcher.drain(self.config.max_poll_records));
        }
        let deadline = Instant::now() + timeout;
        loop {
            // Made before the state is read: it gets every notification from then on.
            let membership = self.membership.clone();
            let news = membership.news.notified();
            if let Some(e) = self.membership.lock().fatal.clone() {
                return Err(e);
            }
            self.apply_assignment().await;
            if self.fetcher.buffered() > 0 {
                return Ok(self.fetcher.drain(self.config.max_poll_records));
            }
            let remaining = deadline.saturating_duration_since(Instant::now());
            if self.assigned.is_empty() {
                if self.fetcher.has_pending() {
                    let member_id = self.member_id();
                    self.fetcher.commit(&self.client, &self.config.group_id, &member_id, true).await;
                    self.deliver();
                }
                if remaining.is_zero() {
                    return Ok(Vec::new());
                }
                // Until the broker assigns something (or the time is up).
                let _ = tokio::time::timeout(remaining, news).await;
                continue;
            }
            let member_id = self.member_id();
            let max_wait = remaining.min(self.config.fetch_max_wait);
            let refresh = self.fetcher.fetch(&self.client, &self.config, &self.config.group_id, &member_id, &self.assigned, max_wait).await?;
            self.deliver();
            if refresh {
                tokio::time::sleep(self.config.retry_backoff.min(deadline.saturating_duration_since(Instant::now()))).await;
                if let Err(e) = self.client.refresh_metadata().await {
                    warn!(error = %e, "metadata refresh failed");
                }
            }
            if self.fetcher.buffered() == 0 && Instant::now() >= deadline {
                return Ok(Vec::new());
            }
        }
    }

    /// Takes the assignment the heartbeat task received, if new: names its topics
    /// (refreshing metadata for ids not known yet) and releases the buffered records of the
    /// partitions no longer assigned.
    async fn apply_assignment(&mut self) {
        let assignment = {
            let mut m = self.membership.lock();
            if !std::mem::take(&mut m.changed) {
                return;
            }
            m.assignment.clone()
        };
        let known = |client: &Client| {
            let metadata = client.metadata();
            let names: BTreeMap<kwire::Uuid, Arc<str>> = metadata.topics.values().map(|t| (t.id, Arc::from(t.name.as_str()))).collect();
            names
        };
        let mut names = known(&self.client);
        if assignment.iter().any(|(id, _)| !names.contains_key(id)) {
            if let Err(e) = self.client.refresh_metadata().await {
                warn!(error = %e, "metadata refresh for the assignment failed");
            }
            names = known(&self.client);
        }
        let mut assigned = BTreeMap::new();
        let mut unnamed = false;
        for (id, partitions) in &assignment {
            let Some(name) = names.get(id) else {
                unnamed = true;
                continue;
            };
            for p in partitions {
                assigned.insert((*id, *p), name.clone());
            }
        }
        if unnamed {
            // Named at a later poll (the metadata refresh backoff applies).
            self.membership.lock().changed = true;
        }
        let gone: BTreeSet<Tip> = self.assigned.keys().filter(|t| !assigned.contains_key(t)).copied().collect();
        if !gone.is_empty() {
            self.fetcher.release_buffered(|t| gone.contains(t));
        }
        self.assigned = assigned;
    }

    /// Acknowledges a record the last poll returned (explicit mode): sent with the next poll's
    /// ShareFetch, or by [`commit_sync`](ShareConsumer::commit_sync) /
    /// [`commit_async`](ShareConsumer::commit_async). [`AcknowledgeType::Renew`] extends its
    /// acquisition lock (KIP-1222, Kafka 4.2+); it still needs a final acknowledgement.
    pub fn acknowledge(&mut self, record: &ShareRecord, ty: AcknowledgeType) -> Result<()> {
        if self.config.acknowledgement_mode == AcknowledgementMode::Implicit {
            return Err(Error::Share(ShareError::ImplicitMode));
        }
        let not_delivered =
            || Error::Share(ShareError::NotDelivered { partition: TopicPartition::new(record.topic.to_string(), record.partition), offset: record.offset });
        let tip = self.assigned_tip(record).ok_or_else(not_delivered)?;
        self.fetcher.acknowledge(tip, record.offset, ty.wire()).ok_or_else(not_delivered)
    }

    /// The topic id of a record's partition (from the assignment, or metadata once the
    /// partition is no longer assigned).
    fn assigned_tip(&self, record: &ShareRecord) -> Option<Tip> {
        if let Some((tip, _)) = self.assigned.iter().find(|((_, p), name)| *p == record.partition && name.as_ref() == record.topic.as_ref()) {
            return Some(*tip);
        }
        self.client.metadata().topics.get(&*record.topic).map(|t| (t.id, record.partition))
    }

    /// Sends the acknowledgements made so far (implicit mode: of every record the last poll
    /// returned) and waits for the brokers' answers, one per partition.
    pub fn commit_sync(&mut self) -> ClientFuture<'_, Result<Vec<AcknowledgementCommit>>> {
        ClientFuture::boxed(self.commit_sync_boxed())
    }

    async fn commit_sync_boxed(&mut self) -> Result<Vec<AcknowledgementCommit>> {
        if let Some(e) = self.membership.lock().fatal.clone() {
            return Err(e);
        }
        if self.config.acknowledgement_mode == AcknowledgementMode::Implicit {
            self.fetcher.acknowledge_all(AcknowledgeType::Accept.wire());
        }
        self.fetcher.collect().await;
        self.deliver();
        let member_id = self.member_id();
        let start = self.fetcher.outcomes.len();
        self.fetcher.commit(&self.client, &self.config.group_id, &member_id, true).await;
        let outcomes = self.fetcher.outcomes.get(start..).map(<[AcknowledgementCommit]>::to_vec).unwrap_or_default();
        self.deliver();
        Ok(outcomes)
    }

    /// Sends the acknowledgements made so far without waiting: their outcomes go to the
    /// callback from a later poll, commit or close.
    pub fn commit_async(&mut self) -> ClientFuture<'_, Result<()>> {
        ClientFuture::boxed(self.commit_async_boxed())
    }

    async fn commit_async_boxed(&mut self) -> Result<()> {
        if let Some(e) = self.membership.lock().fatal.clone() {
            return Err(e);
        }
        if self.config.acknowledgement_mode == AcknowledgementMode::Implicit {
            self.fetcher.acknowledge_all(AcknowledgeType::Accept.wire());
        }
        let member_id = self.member_id();
        self.fetcher.commit(&self.client, &self.config.group_id, &member_id, false).await;
        self.deliver();
        Ok(())
    }

    /// Gives the outcomes gathered so far to the callback.
    fn deliver(&mut self) {
        let outcomes = std::mem::take(&mut self.fetcher.outcomes);
        if let Some(cb) = self.callback.as_mut() {
            for o in &outcomes {
                cb(o);
            }
        }
    }

    /// Settles what is open and leaves the group (Java's `unsubscribe`): as
    /// [`close`](ShareConsumer::close), after which `subscribe` joins again.
    pub fn unsubscribe(&mut self) -> ClientFuture<'_, Result<()>> {
        ClientFuture::boxed(self.unsubscribe_boxed())
    }

    async fn unsubscribe_boxed(&mut self) -> Result<()> {
        if self.task.is_none() {
            return Ok(());
        }
        self.leave().await;
        self.membership.reset();
        self.assigned.clear();
        self.topics.clear();
        Ok(())
    }

    /// Settles what is open and leaves: the records the last poll returned are accepted
    /// (implicit mode) or, not acknowledged, released (explicit mode); records fetched and
    /// not returned are released; every share session is closed with what is pending; then
    /// the member leaves the group (epoch -1).
    pub fn close(self) -> ClientFuture<'static, Result<()>> {
        ClientFuture::boxed(self.close_boxed())
    }

    async fn close_boxed(mut self) -> Result<()> {
        self.leave().await;
        Ok(())
    }

    async fn leave(&mut self) {
        let settle = match self.config.acknowledgement_mode {
            AcknowledgementMode::Implicit => AcknowledgeType::Accept,
            AcknowledgementMode::Explicit => AcknowledgeType::Release,
        };
        self.fetcher.acknowledge_all(settle.wire());
        self.fetcher.release_buffered(|_| true);
        let member_id = self.member_id();
        self.fetcher.close(&self.client, &self.config.group_id, &member_id).await;
        self.deliver();
        self.membership.stop();
        if let Some(t) = self.task.take() {
            t.abort();
        }
        let joined = self.membership.lock().epoch > 0;
        if joined {
            membership::leave(&self.coordinator, &self.heartbeat_config(), &member_id).await;
        }
    }
}
