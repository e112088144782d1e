//! Streams groups (KIP-1071): members of one Kafka Streams application that send their
//! topology; the coordinator assigns each subtopology's tasks (one per partition of its source
//! topics) to the members, round robin, as active tasks. No standby or warm-up tasks, no
//! internal topics made: a subtopology whose source topics are missing is left unassigned.

use std::collections::BTreeMap;

use tokio::time::Instant;

/// One member.
#[derive(Debug, Clone)]
pub(crate) struct Member {
    pub(crate) epoch: i32,
    pub(crate) process_id: String,
    pub(crate) client_id: String,
    pub(crate) instance_id: Option<String>,
    pub(crate) rack_id: Option<String>,
    pub(crate) topology_epoch: i32,
    /// Active tasks: subtopology id -> partitions.
    pub(crate) active: BTreeMap<String, Vec<i32>>,
    pub(crate) last_seen: Instant,
}

/// A subtopology as the group keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Subtopology {
    pub(crate) id: String,
    pub(crate) source_topics: Vec<String>,
}

#[derive(Debug, Default)]
pub(crate) struct StreamsGroup {
    pub(crate) group_epoch: i32,
    pub(crate) topology_epoch: i32,
    pub(crate) topology: Vec<Subtopology>,
    pub(crate) members: BTreeMap<String, Member>,
}

impl StreamsGroup {
    pub(crate) fn state_name(&self) -> &'static str {
        if self.members.is_empty() {
            "Empty"
        } else {
            "Stable"
        }
    }

    /// Assigns every task again, round robin over the members in id order; bumps the group
    /// epoch, which every member takes at its next heartbeat.
    pub(crate) fn reassign(&mut self, partitions: &dyn Fn(&str) -> Option<i32>) {
        self.group_epoch += 1;
        let ids: Vec<String> = self.members.keys().cloned().collect();
        for m in self.members.values_mut() {
            m.active.clear();
        }
        if ids.is_empty() {
            return;
        }
        let mut next = 0;
        for sub in &self.topology {
            let counts: Option<Vec<i32>> = sub.source_topics.iter().map(|t| partitions(t)).collect();
            let Some(n) = counts.and_then(|c| c.into_iter().max()) else { continue };
            for p in 0..n {
                if let Some(m) = self.members.get_mut(&ids[next % ids.len()]) {
                    m.active.entry(sub.id.clone()).or_default().push(p);
                }
                next += 1;
            }
        }
        let epoch = self.group_epoch;
        for m in self.members.values_mut() {
            m.epoch = epoch;
        }
    }
}
