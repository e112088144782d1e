//! Rack-aware assignment's shared parts (Java's `AbstractPartitionAssignor.useRackAwareAssignment`
//! and `AbstractStickyAssignor.RackInfo`, KIP-881).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::{Member, PartitionRacks};
use crate::topic_partition::TopicPartition;

/// No racks known for a partition.
static NO_RACKS: BTreeSet<String> = BTreeSet::new();

/// The racks of `tp`'s replicas (none when unknown).
pub(super) fn racks_of<'a>(racks: &'a PartitionRacks, tp: &TopicPartition) -> &'a BTreeSet<String> {
    racks.get(tp).unwrap_or(&NO_RACKS)
}

/// `useRackAwareAssignment`: some member's rack holds replicas, and not every partition has
/// replicas on the same racks (then racks could not make a difference).
pub(super) fn use_rack_aware<'a>(
    consumer_racks: &BTreeSet<&str>,
    all_partition_racks: &BTreeSet<&str>,
    mut per_partition: impl Iterator<Item = &'a BTreeSet<String>>,
) -> bool {
    if consumer_racks.is_empty() || consumer_racks.is_disjoint(all_partition_racks) {
        return false;
    }
    !per_partition.all(|r| r.len() == all_partition_racks.len() && r.iter().all(|x| all_partition_racks.contains(x.as_str())))
}

/// `AbstractStickyAssignor.RackInfo`: members' racks and partitions' racks when rack-aware
/// assignment applies (both empty otherwise), and how many members each partition's racks
/// hold (to hand out the hardest to match first).
#[derive(Debug, Default)]
pub(super) struct RackInfo {
    pub(super) consumer_racks: HashMap<String, String>,
    partition_racks: HashMap<TopicPartition, BTreeSet<String>>,
    consumers_by_partition: HashMap<TopicPartition, usize>,
}

impl RackInfo {
    /// Over every partition of `counts`.
    pub(super) fn new(members: &[&Member], counts: &BTreeMap<String, i32>, racks: &PartitionRacks) -> RackInfo {
        let mut consumers_by_rack: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for m in members {
            if let Some(r) = m.rack() {
                consumers_by_rack.entry(r).or_default().push(m.member_id.as_str());
            }
        }
        if consumers_by_rack.is_empty() {
            return RackInfo::default();
        }
        let mut partition_racks: HashMap<TopicPartition, BTreeSet<String>> = HashMap::new();
        let mut all: BTreeSet<&str> = BTreeSet::new();
        for (t, n) in counts {
            for p in 0..*n {
                let tp = TopicPartition::new(t.clone(), p);
                let r = racks_of(racks, &tp);
                all.extend(r.iter().map(String::as_str));
                partition_racks.insert(tp, r.clone());
            }
        }
        let consumers_by_partition =
            partition_racks.iter().map(|(tp, rs)| (tp.clone(), rs.iter().map(|r| consumers_by_rack.get(r.as_str()).map_or(0, Vec::len)).sum())).collect();
        let consumer_set: BTreeSet<&str> = consumers_by_rack.keys().copied().collect();
        if !use_rack_aware(&consumer_set, &all, partition_racks.values()) {
            return RackInfo { consumers_by_partition, ..Default::default() };
        }
        let consumer_racks = consumers_by_rack.iter().flat_map(|(r, cs)| cs.iter().map(move |c| (c.to_string(), r.to_string()))).collect();
        RackInfo { consumer_racks, partition_racks, consumers_by_partition }
    }

    /// `racksMismatch`: the member has a rack and the partition no replica there.
    pub(super) fn mismatch(&self, member: &str, tp: &TopicPartition) -> bool {
        self.consumer_racks.get(member).is_some_and(|r| !self.partition_racks.get(tp).is_some_and(|rs| rs.contains(r)))
    }

    /// `sortPartitionsByRackConsumers`: a stable sort by how many members the partition's racks
    /// hold.
    pub(super) fn sort_partitions(&self, partitions: &mut [TopicPartition]) {
        if !self.consumers_by_partition.is_empty() {
            partitions.sort_by_key(|tp| self.consumers_by_partition.get(tp).copied().unwrap_or(0));
        }
    }

    /// `nextRackConsumer`: from `first` on (wrapping), the index of the first member in a rack
    /// of the partition's replicas.
    pub(super) fn next_rack_consumer(&self, tp: &TopicPartition, members: &[String], first: usize) -> Option<usize> {
        let racks = self.partition_racks.get(tp).filter(|r| !r.is_empty())?;
        (0..members.len())
            .map(|i| (first + i) % members.len())
            .find(|i| members.get(*i).and_then(|m| self.consumer_racks.get(m)).is_some_and(|r| racks.contains(r)))
    }
}
