//! Consumer group membership, both protocols, as Java's `AbstractCoordinator` and
//! `ConsumerCoordinator` (classic) and its `ConsumerMembershipManager` (KIP-848) keep it.
//!
//! - `classic`: JoinGroup + SyncGroup (the leader runs the [`Assignor`]), LeaveGroup.
//! - `kip848`: ConsumerGroupHeartbeat: the broker assigns; the member reconciles and reports
//!   what it owns in its next heartbeat.
//! - `heartbeat`: the background task that keeps the member in its group, so a consumer busy
//!   between polls stays in it; what it learns (a rebalance, a new assignment, fencing) is
//!   acted on in the next `poll`.
//!
//! [`Group`] is this member's state; the consumer drives it from `poll` and tells its
//! rebalance listener what changed.

mod classic;
mod heartbeat;
mod kip848;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

use kwire::{ByteString, ErrorCode, Uuid};
use tokio::sync::Notify;
use tracing::{info, warn, Instrument};

use crate::assignor::Assignor;
use crate::cluster::ClusterMetadata;
use crate::coordinator::Coordinator;
use crate::error::{Error, GroupError, Result};

/// Which group protocol a subscribing consumer uses (`group.protocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupProtocol {
    /// JoinGroup / SyncGroup / Heartbeat with a client-side assignor.
    Classic,
    /// KIP-848's ConsumerGroupHeartbeat: the broker assigns (Kafka 4.0+).
    Consumer,
}

/// What the group needs of the consumer's settings.
#[derive(Debug, Clone)]
pub(crate) struct GroupConfig {
    pub(crate) group_id: String,
    pub(crate) instance_id: Option<String>,
    pub(crate) protocol: GroupProtocol,
    pub(crate) assignors: Vec<Assignor>,
    pub(crate) session_timeout: Duration,
    pub(crate) heartbeat_interval: Duration,
    pub(crate) max_poll_interval: Duration,
    pub(crate) retry_backoff: Duration,
    pub(crate) request_timeout: Duration,
    /// `client.rack`: sent in the subscription (classic) or heartbeat (KIP-848).
    pub(crate) rack: Option<String>,
}

/// What the consumer and its heartbeat task share.
#[derive(Debug, Default)]
struct Membership {
    member_id: String,
    /// Classic: the generation; KIP-848: the member epoch.
    generation: i32,
    /// Classic: a generation is in place (JoinGroup + SyncGroup done).
    joined: bool,
    /// Classic: a heartbeat or commit said to join again.
    rejoin: Option<ErrorCode>,
    /// KIP-848: a new assignment from the broker, not yet reconciled.
    target: Option<Vec<(Uuid, Vec<i32>)>>,
    /// KIP-848: the partitions this member owns, reported in each heartbeat.
    owned: Vec<(Uuid, Vec<i32>)>,
    /// KIP-848: the broker fenced this member; its partitions are lost (not committed).
    fenced: bool,
    heartbeat_interval: Option<Duration>,
    fatal: Option<Error>,
    stopped: bool,
    /// When the consumer last polled (`None`: not yet).
    last_poll: Option<Instant>,
    /// Left the group because the consumer did not poll within `max_poll_interval`: no
    /// heartbeats until it polls again (and joins again).
    left_idle: bool,
}

impl Membership {
    /// Whether the consumer has gone longer than `max_poll_interval` without polling, as
    /// Java's heartbeat thread checks (then the member leaves its group proactively).
    fn poll_timed_out(&self, max_poll_interval: Duration) -> bool {
        !self.left_idle && self.last_poll.is_some_and(|at| at.elapsed() > max_poll_interval)
    }
}

/// Whether `code` says this member's generation is gone, so its partitions are lost (not
/// revoked): ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, STALE_MEMBER_EPOCH.
fn lost_membership(code: ErrorCode) -> bool {
    matches!(code, ErrorCode::ILLEGAL_GENERATION | ErrorCode::UNKNOWN_MEMBER_ID | ErrorCode::FENCED_MEMBER_EPOCH | ErrorCode::STALE_MEMBER_EPOCH)
}

fn millis(d: Duration) -> i32 {
    d.as_millis().min(i32::MAX as u128) as i32
}

fn to_bytestrings(v: &[String]) -> Vec<ByteString> {
    v.iter().map(|s| ByteString::from(s.clone())).collect()
}

/// A new member id, as Java's consumers make them (KIP-848, KIP-1082) and its share consumer
/// (KIP-932): `Uuid.randomUuid()`, a version 4 UUID in Kafka's base64url form, never starting
/// with '-' (which command lines would take for an option). From the OS, or from `seeded`
/// (a seeded client's draws, so that a simulated run replays).
pub(crate) fn new_member_id(seeded: Option<&crate::random::Random>) -> Result<String> {
    use base64::Engine;
    loop {
        let mut bytes = [0u8; 16];
        match seeded {
            Some(random) => random.fill(&mut bytes),
            None => bytes.copy_from_slice(&crate::sasl::random_bytes(16).map_err(|e| Error::Group(GroupError::NoRandomness(e)))?),
        }
        bytes[6] = (bytes[6] & 0x0f) | 0x40;
        bytes[8] = (bytes[8] & 0x3f) | 0x80;
        let id = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        if !id.starts_with('-') {
            return Ok(id);
        }
    }
}

/// A subscription by pattern (Java's `subscribe(Pattern)`, KIP-848's `SubscriptionPattern`).
#[derive(Debug, Clone)]
pub(crate) struct TopicPattern {
    /// As the caller wrote it: KIP-848 groups send it to the coordinator, which matches it
    /// (RE2/J syntax).
    pub(crate) source: String,
    /// Anchored at both ends: a classic member matches whole topic names (as Java's
    /// `Pattern.matcher(topic).matches()`).
    whole: regex::Regex,
}

impl TopicPattern {
    pub(crate) fn new(source: &str) -> Result<TopicPattern> {
        let whole = regex::Regex::new(&format!("^(?:{source})$")).map_err(|e| Error::Config(format!("topic pattern {source:?}: {e}")))?;
        Ok(TopicPattern { source: source.to_owned(), whole })
    }

    /// The topics of `metadata` it matches, internal ones left out (Java's
    /// `exclude.internal.topics`).
    pub(crate) fn matching(&self, metadata: &ClusterMetadata) -> Vec<String> {
        metadata.topics.values().filter(|t| !t.internal && self.whole.is_match(&t.name)).map(|t| t.name.clone()).collect()
    }
}

/// A subscribed consumer's membership of its group.
pub(crate) struct Group {
    config: Arc<GroupConfig>,
    coordinator: Coordinator,
    /// The topics subscribed: as given, or (a classic member's pattern) those matched so far.
    topics: Vec<String>,
    pattern: Option<TopicPattern>,
    /// A classic member's pattern: when metadata was last refreshed for it, and which
    /// metadata (its `fetched_at`) it was last matched against.
    pattern_checked: Option<(Instant, Option<Instant>)>,
    shared: Arc<Mutex<Membership>>,
    wake: Arc<Notify>,
    task: Option<tokio::task::JoinHandle<()>>,
    /// Classic leader: the partition counts the assignment was computed with (0: a topic
    /// metadata did not know yet), to rebalance when they change, as Java's leader does.
    snapshot: Option<BTreeMap<String, i32>>,
    snapshot_checked: Instant,
    /// Classic: the last assignment and its generation, for the sticky assignor's user data.
    sticky_previous: Option<(Vec<crate::topic_partition::TopicPartition>, i32)>,
}

impl Drop for Group {
    fn drop(&mut self) {
        // A consumer dropped without `close` stops heartbeating: the broker drops it after the
        // session timeout, as a crashed member.
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

impl Group {
    /// Membership of `topics` in the group `coordinator` serves (joining at the next poll).
    pub(crate) fn new(config: GroupConfig, coordinator: Coordinator, topics: &[&str], pattern: Option<TopicPattern>) -> Result<Group> {
        let member_id = match config.protocol {
            // KIP-1082: the member makes its own id.
            GroupProtocol::Consumer => new_member_id(coordinator.client().member_ids())?,
            GroupProtocol::Classic => String::new(),
        };
        Ok(Group {
            config: Arc::new(config),
            coordinator,
            topics: topics.iter().map(|t| t.to_string()).collect(),
            pattern,
            pattern_checked: None,
            shared: Arc::new(Mutex::new(Membership { member_id, ..Default::default() })),
            wake: Arc::new(Notify::new()),
            task: None,
            snapshot: None,
            snapshot_checked: Instant::now(),
            sticky_previous: None,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Membership> {
        crate::sync::lock(&self.shared)
    }

    /// The protocol.
    pub(crate) fn protocol(&self) -> GroupProtocol {
        self.config.protocol
    }

    /// The classic protocol is cooperative when every configured assignor supports it (as
    /// Java picks the rebalance protocol all its assignors share).
    pub(crate) fn cooperative(&self) -> bool {
        !self.config.assignors.is_empty() && self.config.assignors.iter().all(|a| a.cooperative())
    }

    /// The generation (or member epoch) and member id to commit with.
    pub(crate) fn commit_identity(&self) -> (i32, String) {
        let m = self.lock();
        match self.config.protocol {
            GroupProtocol::Classic if !m.joined => (-1, String::new()),
            _ => (m.generation, m.member_id.clone()),
        }
    }

    /// A commit found the generation gone (or a cooperative revocation finished): join again
    /// (classic) before more records.
    pub(crate) fn request_rejoin(&self, code: ErrorCode) {
        let mut m = self.lock();
        if self.config.protocol == GroupProtocol::Classic {
            m.rejoin.get_or_insert(code);
        }
    }

    /// The member id (empty before the first join).
    pub(crate) fn member_id(&self) -> String {
        self.lock().member_id.clone()
    }

    /// The generation (classic) or member epoch (KIP-848), once joined.
    pub(crate) fn generation(&self) -> Option<i32> {
        let m = self.lock();
        (m.generation > 0 && (m.joined || self.config.protocol == GroupProtocol::Consumer)).then_some(m.generation)
    }

    /// The error that ended membership (fencing, an unsupported protocol), if any.
    pub(crate) fn fatal(&self) -> Option<Error> {
        self.lock().fatal.clone()
    }

    /// Classic: whether this member must (re)join before more records.
    pub(crate) fn needs_join(&self) -> bool {
        let m = self.lock();
        !m.joined || m.rejoin.is_some()
    }

    /// Whether the group already took this member's partitions away (fenced, or its
    /// generation gone): they are lost, not revoked.
    pub(crate) fn lost(&self) -> bool {
        let m = self.lock();
        m.fenced || m.rejoin.is_some_and(lost_membership)
    }

    /// The consumer polled: membership goes on (or, after leaving for a poll timeout, the
    /// member joins again: its partitions were lost).
    pub(crate) fn polled(&self) {
        let mut m = self.lock();
        m.last_poll = Some(Instant::now());
        if m.left_idle {
            m.left_idle = false;
            drop(m);
            self.wake.notify_one();
        }
    }

    /// Starts the heartbeat task, once.
    fn start_heartbeat(&mut self) {
        if self.task.is_some() {
            return;
        }
        let span = tracing::info_span!("kafka.group.heartbeat", group = self.config.group_id.as_str());
        let (coordinator, config, shared, wake) = (self.coordinator.clone(), self.config.clone(), self.shared.clone(), self.wake.clone());
        let task = match self.config.protocol {
            GroupProtocol::Classic => tokio::spawn(heartbeat::classic(coordinator, config, shared, wake).instrument(span)),
            GroupProtocol::Consumer => {
                let regex = self.pattern.as_ref().map(|p| p.source.clone());
                tokio::spawn(heartbeat::consumer(coordinator, config, self.topics.clone(), regex, shared, wake).instrument(span))
            }
        };
        self.task = Some(task);
    }

    /// Classic leader: rejoins when a subscribed topic's partition count differs from the one
    /// the assignment used (a topic created or grown since). Metadata is refreshed for it at
    /// most every second while a topic is unknown.
    pub(crate) async fn check_snapshot(&mut self) {
        let Some(snapshot) = self.snapshot.clone() else { return };
        let client = self.coordinator.client().clone();
        let unknown = snapshot.values().any(|n| *n == 0);
        if unknown && self.snapshot_checked.elapsed() >= Duration::from_secs(1) {
            self.snapshot_checked = Instant::now();
            if let Err(e) = client.refresh_metadata().await {
                warn!(error = %e, "metadata refresh for the subscribed topics failed");
            }
        }
        let metadata = client.metadata();
        let now: BTreeMap<String, i32> = snapshot.keys().map(|t| (t.clone(), metadata.topics.get(t).map_or(0, |i| i.partitions.len() as i32))).collect();
        if now != snapshot {
            info!(before = ?snapshot, now = ?now, "subscribed topics changed: rebalancing");
            self.lock().rejoin.get_or_insert(ErrorCode::NONE);
        }
    }

    /// Classic member with a pattern: matches it against the metadata (a full refresh at most
    /// every `refresh` otherwise, at first without waiting) and, when the matched topics
    /// changed, takes them as the subscription and rejoins, as Java's
    /// `updatePatternSubscription`. New matching topics join; deleted ones leave.
    pub(crate) async fn match_pattern(&mut self, refresh: Duration) {
        let Some(pattern) = &self.pattern else { return };
        if self.config.protocol != GroupProtocol::Classic {
            return;
        }
        let client = self.coordinator.client().clone();
        let due = self.pattern_checked.is_none_or(|(at, _)| at.elapsed() >= refresh);
        if due {
            if let Err(e) = client.refresh_metadata().await {
                warn!(error = %e, "metadata refresh for the topic pattern failed");
            }
        }
        let metadata = client.metadata();
        let (refreshed, seen) = match self.pattern_checked {
            Some((at, seen)) if !due => (at, Some(seen)),
            _ => (Instant::now(), None),
        };
        self.pattern_checked = Some((refreshed, metadata.fetched_at));
        if seen == Some(metadata.fetched_at) {
            return; // matched against this metadata already
        }
        let mut matched = pattern.matching(&metadata);
        matched.sort();
        if matched != self.topics {
            info!(pattern = pattern.source.as_str(), before = ?self.topics, now = ?matched, "the topics matching the pattern changed");
            self.topics = matched;
            let mut m = self.lock();
            if m.joined {
                m.rejoin.get_or_insert(ErrorCode::NONE);
            }
        }
    }

    /// Stops heartbeating and leaves: LeaveGroup (classic, dynamic members) or a leaving
    /// heartbeat (KIP-848). A failure to leave is logged: the session times out instead.
    pub(crate) async fn leave(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
        let (member_id, generation, joined) = {
            let mut m = self.lock();
            m.stopped = true;
            (m.member_id.clone(), m.generation, m.joined)
        };
        if member_id.is_empty() {
            return;
        }
        match self.config.protocol {
            GroupProtocol::Classic => {
                // A static member keeps its place until its session times out (Java does not
                // send LeaveGroup for one either).
                if self.config.instance_id.is_none() && joined {
                    classic::leave(&self.coordinator, &self.config, &member_id, generation).await;
                }
            }
            GroupProtocol::Consumer => kip848::leave(&self.coordinator, &self.config, &self.topics, &member_id).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::new_member_id;
    use crate::random::Random;

    #[test]
    fn member_ids_are_kafka_uuids_and_a_seed_replays_them() {
        use base64::Engine;
        let seeded = Random::new(Some(7), "member");
        let again = Random::new(Some(7), "member");
        for random in [None, Some(&seeded)] {
            for _ in 0..200 {
                let id = new_member_id(random).unwrap();
                assert_eq!(id.len(), 22);
                assert!(!id.starts_with('-'));
                let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(&id).unwrap();
                assert_eq!((bytes[6] >> 4, bytes[8] >> 6), (4, 2), "{id}");
            }
        }
        let seeded = Random::new(Some(7), "member");
        let ids: Vec<String> = (0..5).map(|_| new_member_id(Some(&seeded)).unwrap()).collect();
        let replayed: Vec<String> = (0..5).map(|_| new_member_id(Some(&again)).unwrap()).collect();
        assert_eq!(ids, replayed);
        assert_eq!(ids.iter().collect::<std::collections::BTreeSet<_>>().len(), 5, "{ids:?}");
    }
}
