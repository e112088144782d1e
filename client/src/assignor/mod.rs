//! The classic protocol's partition assignors, which the group leader runs over the members'
//! subscriptions: [`Assignor::Range`] ([`range_assign`]), [`Assignor::RoundRobin`]
//! ([`round_robin_assign`]), [`Assignor::Sticky`] ([`sticky_assign`]) and
//! [`Assignor::CooperativeSticky`] ([`cooperative_sticky_assign`]), all reading one [`Member`]
//! type. Range and the two sticky assignors are rack-aware as Java's are (KIP-881): given
//! members' racks ([`Member::rack_id`]) and the racks of each partition's replicas
//! ([`PartitionRacks`]), they prefer to give a member partitions with a replica in its rack.

mod cooperative_sticky;
mod racks;
mod range;
mod round_robin;
mod sticky;

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use kwire::Bytes;

use crate::error::Result;
use crate::topic_partition::TopicPartition;

pub use self::cooperative_sticky::{cooperative_sticky_assign, cooperative_sticky_user_data};
pub use self::range::range_assign;
pub use self::round_robin::round_robin_assign;
pub use self::sticky::{sticky_assign, sticky_user_data};

/// The racks of each partition's replicas (Metadata's replica node ids, mapped through the
/// brokers' racks), for rack-aware assignment. A partition missing here has no known rack.
pub type PartitionRacks = BTreeMap<TopicPartition, BTreeSet<String>>;

/// A classic-protocol partition assignor (`partition.assignment.strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Assignor {
    /// Java's `RangeAssignor`: per topic, consecutive ranges of partitions to the members in
    /// order (group instance id, else member id), the first ones taking one more.
    Range,
    /// Java's `RoundRobinAssignor`: every subscribed partition, by topic then partition, dealt
    /// to the members in order (skipping those not subscribed to its topic).
    RoundRobin,
    /// Java's `StickyAssignor` (eager): balanced, moving as few partitions as it can; each
    /// member's previous assignment and generation travel in its subscription's user data.
    Sticky,
    /// Java's `CooperativeStickyAssignor` (KIP-429): balanced, moving as few partitions as it
    /// can, each in two rounds (revoked by the old owner, then assigned to the new one).
    CooperativeSticky,
}

impl Assignor {
    /// The protocol name in JoinGroup.
    pub fn name(self) -> &'static str {
        match self {
            Assignor::Range => "range",
            Assignor::RoundRobin => "roundrobin",
            Assignor::Sticky => "sticky",
            Assignor::CooperativeSticky => "cooperative-sticky",
        }
    }

    /// The assignor with this protocol name.
    pub(crate) fn by_name(name: &str) -> Option<Assignor> {
        match name {
            "range" => Some(Assignor::Range),
            "roundrobin" => Some(Assignor::RoundRobin),
            "sticky" => Some(Assignor::Sticky),
            "cooperative-sticky" => Some(Assignor::CooperativeSticky),
            _ => None,
        }
    }

    /// Whether it follows the cooperative rebalance protocol (KIP-429).
    pub(crate) fn cooperative(self) -> bool {
        self == Assignor::CooperativeSticky
    }

    /// The assignment of `partitions_per_topic` to `members` (every member gets an entry),
    /// without rack information.
    pub fn assign(self, members: &[Member], partitions_per_topic: &BTreeMap<String, i32>) -> Result<BTreeMap<String, Vec<TopicPartition>>> {
        self.assign_with_racks(members, partitions_per_topic, &PartitionRacks::new())
    }

    /// The assignment of `partitions_per_topic` to `members`, rack-aware (range and the sticky
    /// assignors) where members have racks and `racks` knows the partitions' replicas' racks.
    pub fn assign_with_racks(
        self,
        members: &[Member],
        partitions_per_topic: &BTreeMap<String, i32>,
        racks: &PartitionRacks,
    ) -> Result<BTreeMap<String, Vec<TopicPartition>>> {
        match self {
            Assignor::Range => Ok(range_assign(members, partitions_per_topic, racks)),
            Assignor::RoundRobin => Ok(round_robin_assign(members, partitions_per_topic)),
            Assignor::Sticky => sticky_assign(members, partitions_per_topic, racks),
            Assignor::CooperativeSticky => cooperative_sticky_assign(members, partitions_per_topic, racks),
        }
    }
}

/// A member as the leader sees it in JoinGroup: its id and its `ConsumerProtocolSubscription`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Member {
    /// The member id.
    pub member_id: String,
    /// The static member's group instance id.
    pub group_instance_id: Option<String>,
    /// The subscribed topics.
    pub topics: Vec<String>,
    /// The partitions the member owns (owned_partitions, v1+).
    pub owned_partitions: Vec<TopicPartition>,
    /// generation_id (v2+); negative when absent.
    pub generation_id: i32,
    /// user_data: for members of protocol v0/v1, the cooperative-sticky assignor's generation
    /// as 4 bytes; the sticky assignor's previous assignment and generation
    /// ([`sticky_user_data`]).
    pub user_data: Option<Bytes>,
    /// rack_id (v3+): the member's `client.rack` (empty counts as none).
    pub rack_id: Option<String>,
}

impl Member {
    /// The rack, if any (Java ignores an empty one).
    pub(crate) fn rack(&self) -> Option<&str> {
        self.rack_id.as_deref().filter(|r| !r.is_empty())
    }
}

/// Java's `String.compareTo`: by UTF-16 code units.
pub(crate) fn java_cmp(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// Java's `AbstractPartitionAssignor.MemberInfo` order: static members first by group
/// instance id, then the others by member id.
pub(crate) fn member_info_cmp(a: &Member, b: &Member) -> Ordering {
    match (&a.group_instance_id, &b.group_instance_id) {
        (Some(x), Some(y)) => java_cmp(x, y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => java_cmp(&a.member_id, &b.member_id),
    }
}
