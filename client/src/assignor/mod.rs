//! The classic protocol's partition assignors, which the group leader runs over the members'
//! subscriptions: [`Assignor::Range`] ([`range_assign`]) and [`Assignor::CooperativeSticky`]
//! ([`cooperative_sticky_assign`]), both reading one [`Member`] type.

mod cooperative_sticky;
mod range;

use std::collections::BTreeMap;

use kwire::Bytes;

use crate::error::Result;
use crate::topic_partition::TopicPartition;

pub use self::cooperative_sticky::{cooperative_sticky_assign, cooperative_sticky_user_data};
pub use self::range::range_assign;

/// A classic-protocol partition assignor (`partition.assignment.strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Assignor {
    /// Java's `RangeAssignor`: per topic, consecutive ranges of partitions to the members in
    /// order (group instance id, else member id), the first ones taking one more.
    Range,
    /// Java's `CooperativeStickyAssignor` (KIP-429): balanced, moving as few partitions as it
    /// can, each in two rounds (revoked by the old owner, then assigned to the new one).
    CooperativeSticky,
}

impl Assignor {
    /// The protocol name in JoinGroup.
    pub fn name(self) -> &'static str {
        match self {
            Assignor::Range => "range",
            Assignor::CooperativeSticky => "cooperative-sticky",
        }
    }

    /// The assignor with this protocol name.
    pub(crate) fn by_name(name: &str) -> Option<Assignor> {
        match name {
            "range" => Some(Assignor::Range),
            "cooperative-sticky" => Some(Assignor::CooperativeSticky),
            _ => None,
        }
    }

    /// Whether it follows the cooperative rebalance protocol (KIP-429).
    pub(crate) fn cooperative(self) -> bool {
        self == Assignor::CooperativeSticky
    }

    /// The assignment of `partitions_per_topic` to `members` (every member gets an entry).
    pub fn assign(self, members: &[Member], partitions_per_topic: &BTreeMap<String, i32>) -> Result<BTreeMap<String, Vec<TopicPartition>>> {
        match self {
            Assignor::Range => Ok(range_assign(members, partitions_per_topic)),
            Assignor::CooperativeSticky => cooperative_sticky_assign(members, partitions_per_topic),
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
    /// as 4 bytes.
    pub user_data: Option<Bytes>,
}
