//! Groups as their coordinator keeps them (Kafka's `GroupMetadataManager`): a group id names
//! one group of one kind, classic (JoinGroup/SyncGroup, the leader client assigns), consumer
//! (KIP-848, the coordinator assigns and members reconcile) or share (KIP-932), and its
//! committed offsets. The share groups' records (which member holds which record, delivery
//! counts) are kept by the partitions' leaders in `share_partition`.
//!
//! - `classic`: the classic protocol's state machine (rebalances, static members, sessions).
//! - `consumer`: KIP-848's member epochs, target assignment and reconciliation.
//! - `assignor`: the coordinator's assignors (`uniform`, `range`; the share groups' `simple`).
//! - `share`: share group membership (ShareGroupHeartbeat).
//! - `share_partition`: share-partition state and share sessions (ShareFetch, ShareAcknowledge).
//! - `offsets`: committed offsets, and those transactions hold.

pub(crate) mod assignor;
pub(crate) mod classic;
pub(crate) mod consumer;
pub(crate) mod offsets;
pub(crate) mod share;
pub(crate) mod share_partition;
pub(crate) mod streams;

use std::collections::BTreeMap;
use std::time::Duration;

use kwire::Uuid;
use tokio::time::Instant;

use self::classic::ClassicGroup;
use self::consumer::ConsumerGroup;
use self::offsets::Offsets;
use self::share::ShareGroup;
use self::share_partition::{SharePartitions, ShareSessions};

/// A group of one kind.
pub(crate) enum Group {
    Classic(ClassicGroup),
    Consumer(ConsumerGroup),
    Share(ShareGroup),
}

impl Group {
    /// ListGroups' type name (`Group.GroupType`).
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Group::Classic(_) => "classic",
            Group::Consumer(_) => "consumer",
            Group::Share(_) => "share",
        }
    }

    pub(crate) fn state_name(&self) -> &'static str {
        match self {
            Group::Classic(g) => g.state_name(),
            Group::Consumer(g) => g.state_name(),
            Group::Share(g) => g.state_name(),
        }
    }

    pub(crate) fn protocol_type(&self) -> String {
        match self {
            Group::Classic(g) => g.protocol_type.clone().unwrap_or_default(),
            Group::Consumer(_) => "consumer".into(),
            Group::Share(_) => "share".into(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        match self {
            Group::Classic(g) => g.is_empty(),
            Group::Consumer(g) => g.members.is_empty(),
            Group::Share(g) => g.members.is_empty(),
        }
    }
}

/// The topics as the assignors see them: name -> (id, partitions).
pub(crate) type TopicsView = BTreeMap<String, (Uuid, i32)>;

/// Builds the assignors' view of the cluster's topics.
pub(crate) fn topics_view(topics: &BTreeMap<String, crate::topics::Topic>) -> TopicsView {
    topics.iter().map(|(name, t)| (name.clone(), (t.id, t.partitions.len() as i32))).collect()
}

/// Every group, committed offsets, share-partition state and share sessions, and the groups'
/// dynamic configs (`share.record.lock.duration.ms`, ...).
#[derive(Default)]
pub(crate) struct Groups {
    pub(crate) groups: BTreeMap<String, Group>,
    pub(crate) offsets: Offsets,
    pub(crate) share_partitions: SharePartitions,
    pub(crate) sessions: ShareSessions,
    pub(crate) configs: BTreeMap<String, BTreeMap<String, String>>,
    /// Streams groups (KIP-1071), apart from the other kinds.
    pub(crate) streams: BTreeMap<String, streams::StreamsGroup>,
}

impl std::fmt::Debug for Groups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Groups({})", self.groups.len())
    }
}

/// Kafka's defaults of the group settings the fake obeys (broker configs, which a group's own
/// dynamic config overrides where Kafka lets it).
pub(crate) mod defaults {
    use std::time::Duration;

    /// `group.initial.rebalance.delay.ms`.
    pub(crate) const INITIAL_REBALANCE_DELAY: Duration = Duration::from_millis(3000);
    /// `group.min.session.timeout.ms`, `group.max.session.timeout.ms`.
    pub(crate) const CLASSIC_MIN_SESSION_MS: i32 = 6000;
    pub(crate) const CLASSIC_MAX_SESSION_MS: i32 = 1_800_000;
    /// `group.consumer.session.timeout.ms`, `group.consumer.heartbeat.interval.ms`.
    pub(crate) const CONSUMER_SESSION_MS: i64 = 45_000;
    pub(crate) const CONSUMER_HEARTBEAT_MS: i64 = 5000;
    /// `group.share.session.timeout.ms`, `group.share.heartbeat.interval.ms`.
    pub(crate) const SHARE_SESSION_MS: i64 = 45_000;
    pub(crate) const SHARE_HEARTBEAT_MS: i64 = 5000;
    /// `group.share.record.lock.duration.ms`.
    pub(crate) const SHARE_LOCK_MS: i64 = 30_000;
    /// `group.share.delivery.count.limit`.
    pub(crate) const SHARE_DELIVERY_LIMIT: i64 = 5;
    /// `group.share.partition.max.record.locks`.
    pub(crate) const SHARE_MAX_RECORD_LOCKS: i64 = 2000;
    /// `offset.metadata.max.bytes`.
    pub(crate) const OFFSET_METADATA_MAX: usize = 4096;
    /// The longest any request waits in a group (a JoinGroup, a SyncGroup).
    pub(crate) const MAX_WAIT: Duration = Duration::from_secs(300);
}

/// The group configs the fake knows (Kafka's `GroupConfig`), with their defaults.
pub(crate) const GROUP_CONFIGS: &[(&str, &str)] = &[
    ("consumer.session.timeout.ms", "45000"),
    ("consumer.heartbeat.interval.ms", "5000"),
    ("share.session.timeout.ms", "45000"),
    ("share.heartbeat.interval.ms", "5000"),
    ("share.record.lock.duration.ms", "30000"),
    ("share.delivery.count.limit", "5"),
    ("share.auto.offset.reset", "latest"),
    ("share.isolation.level", "read_uncommitted"),
];

/// Whether `value` is valid for group config `name` (Kafka's `GroupConfig` checks), or why not.
pub(crate) fn check_group_config(name: &str, value: &str) -> Result<(), String> {
    let known = GROUP_CONFIGS.iter().any(|(n, _)| *n == name);
    let valid = match name {
        "share.auto.offset.reset" => matches!(value, "latest" | "earliest"),
        "share.isolation.level" => matches!(value, "read_uncommitted" | "read_committed"),
        _ => value.parse::<i64>().is_ok_and(|v| v > 0),
    };
    if !known {
        return Err(format!("Unknown group config name: {name}"));
    }
    if !valid {
        return Err(format!("Invalid value {value} for group config {name}"));
    }
    Ok(())
}

impl Groups {
    /// A group config, or its default.
    pub(crate) fn config(&self, group: &str, name: &str) -> String {
        self.configs
            .get(group)
            .and_then(|c| c.get(name))
            .cloned()
            .or_else(|| GROUP_CONFIGS.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned()))
            .unwrap_or_default()
    }

    /// A numeric group config.
    pub(crate) fn config_i64(&self, group: &str, name: &str, default: i64) -> i64 {
        self.config(group, name).parse().unwrap_or(default)
    }

    /// The offset `group` committed for a partition, if any.
    pub(crate) fn committed(&self, group: &str, topic: &str, partition: i32) -> Option<i64> {
        self.offsets.get(group, topic, partition).map(|c| c.offset)
    }

    /// TxnOffsetCommit: offsets held for `producer_id`'s transaction.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn stage(
        &mut self,
        producer_id: i64,
        group: &str,
        topic: &str,
        partition: i32,
        offset: i64,
        leader_epoch: i32,
        metadata: Option<kwire::ByteString>,
    ) {
        self.offsets.stage(producer_id, group, topic, partition, offsets::Committed { offset, leader_epoch, metadata });
    }

    /// The transaction of `producer_id` ended: its offsets for `group` are committed, or dropped.
    pub(crate) fn complete(&mut self, producer_id: i64, group: &str, commit: bool) {
        self.offsets.complete(producer_id, group, commit);
    }

    /// Whether the group exists (as a group, or as offsets committed outside any generation).
    pub(crate) fn exists(&self, group: &str) -> bool {
        self.groups.contains_key(group) || self.offsets.has_group(group)
    }
}

/// A member id as Kafka makes them: a random UUID in Java's text form.
pub(crate) fn uuid_string(rng: &mut fastrand::Rng) -> String {
    let (a, b) = (rng.u64(..), rng.u64(..));
    // Version 4, variant 2, as `UUID.randomUUID`.
    let a = (a & !0xf000) | 0x4000;
    let b = (b & !(0b11 << 62)) | (0b10 << 62);
    format!("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xffff, a & 0xffff, b >> 48, b & 0xffff_ffff_ffff)
}

/// Milliseconds from a request, capped at the longest wait.
pub(crate) fn millis(ms: i32) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0)).min(defaults::MAX_WAIT)
}

/// Session and rebalance deadlines, on tokio's clock: expires members, completes rebalances,
/// fences members that did not revoke in time, and times out share acquisition locks.
/// Returns whether anything changed (waiting requests look again).
pub(crate) fn tick(groups: &mut Groups, topics: &TopicsView) -> bool {
    let now = Instant::now();
    let mut changed = false;
    let mut left_share: Vec<(String, String)> = Vec::new();
    for (id, group) in groups.groups.iter_mut() {
        match group {
            Group::Classic(g) => changed |= g.tick(now),
            Group::Consumer(g) => changed |= g.tick(now, topics),
            Group::Share(g) => {
                for member in g.tick(now) {
                    left_share.push((id.clone(), member));
                }
            }
        }
    }
    for (group, member) in left_share {
        groups.member_left_share_group(&group, &member);
        changed = true;
    }
    changed |= groups.share_partitions.expire_locks(now);
    changed
}

impl Groups {
    /// A share group's member is gone (left, fenced, expired): its share sessions close and the
    /// records it holds go back, as Kafka's share group listener does on every broker.
    pub(crate) fn member_left_share_group(&mut self, group: &str, member: &str) {
        self.sessions.remove_member(group, member);
        self.share_partitions.release_member(group, member);
    }
}
