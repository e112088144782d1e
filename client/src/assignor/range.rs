//! Java's `RangeAssignor` (`range`): per topic, consecutive ranges of partitions to the
//! members in order (static members by group instance id first, then by member id), the first
//! ones taking one more.
//!
//! Rack-aware as Java's (KIP-881): when members have racks and some topic's partitions are not
//! all on the same racks, partitions go first to members in a rack of one of their replicas
//! (for topics of the same members and partition count, the same partition of each together),
//! within each member's range quota; the rest are then handed out as ranges.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::racks::{racks_of, use_rack_aware};
use super::{member_info_cmp, Member, PartitionRacks};
use crate::topic_partition::TopicPartition;

/// A topic's subscribed members in order, with their racks.
type Members<'a> = Vec<(&'a str, Option<&'a str>)>;

/// One topic's assignment in progress (`RangeAssignor.TopicAssignmentState`).
struct TopicState<'a> {
    topic: &'a str,
    /// The subscribed members in order, with their racks.
    consumers: Members<'a>,
    needs_rack_aware: bool,
    /// Each partition's racks (empty when no member of the topic has a rack).
    partition_racks: Vec<&'a BTreeSet<String>>,
    unassigned: Vec<i32>,
    assigned: HashMap<&'a str, usize>,
    per_consumer: usize,
    with_extra: usize,
}

impl<'a> TopicState<'a> {
    fn new(topic: &'a str, count: i32, members: &[&'a Member], racks: &'a PartitionRacks) -> TopicState<'a> {
        let mut subscribed: Vec<&Member> = members.iter().copied().filter(|m| m.topics.iter().any(|t| t == topic)).collect();
        subscribed.sort_by(|a, b| member_info_cmp(a, b));
        let consumers: Vec<(&str, Option<&str>)> = subscribed.iter().map(|m| (m.member_id.as_str(), m.rack())).collect();
        let n = count.max(0) as usize;
        let consumer_racks: BTreeSet<&str> = consumers.iter().filter_map(|(_, r)| *r).collect();
        let partition_racks: Vec<&BTreeSet<String>> =
            if consumer_racks.is_empty() { Vec::new() } else { (0..count).map(|p| racks_of(racks, &TopicPartition::new(topic, p))).collect() };
        let all: BTreeSet<&str> = partition_racks.iter().flat_map(|r| r.iter().map(String::as_str)).collect();
        TopicState {
            topic,
            needs_rack_aware: use_rack_aware(&consumer_racks, &all, partition_racks.iter().copied()),
            partition_racks,
            unassigned: (0..count).collect(),
            assigned: consumers.iter().map(|(c, _)| (*c, 0)).collect(),
            per_consumer: if consumers.is_empty() { 0 } else { n / consumers.len() },
            with_extra: if consumers.is_empty() { 0 } else { n % consumers.len() },
            consumers,
        }
    }

    fn rack_of(&self, consumer: &str) -> Option<&'a str> {
        self.consumers.iter().find(|(c, _)| *c == consumer).and_then(|(_, r)| *r)
    }

    /// `racksMatch`: a member without a rack matches any partition.
    fn racks_match(&self, consumer: &str, partition: i32) -> bool {
        match self.rack_of(consumer) {
            None => true,
            Some(r) => usize::try_from(partition).ok().and_then(|p| self.partition_racks.get(p)).is_some_and(|rs| rs.contains(r)),
        }
    }

    fn max_assignable(&self, consumer: &str) -> usize {
        let assigned = self.assigned.get(consumer).copied().unwrap_or(0);
        (self.per_consumer + usize::from(self.with_extra > 0)).saturating_sub(assigned)
    }

    fn assign(&mut self, consumer: &'a str, partitions: &[i32], out: &mut BTreeMap<String, Vec<TopicPartition>>) {
        if let Some(list) = out.get_mut(consumer) {
            list.extend(partitions.iter().map(|p| TopicPartition::new(self.topic, *p)));
        }
        let n = self.assigned.entry(consumer).or_insert(0);
        *n += partitions.len();
        if *n > self.per_consumer {
            self.with_extra = self.with_extra.saturating_sub(1);
        }
        self.unassigned.retain(|p| !partitions.contains(p));
    }

    /// `assignRanges`: each member in order takes the first unassigned partitions it may, up
    /// to its quota.
    fn assign_ranges(&mut self, rack_matching: bool, out: &mut BTreeMap<String, Vec<TopicPartition>>) {
        let consumers: Vec<&'a str> = self.consumers.iter().map(|(c, _)| *c).collect();
        for c in consumers {
            if self.unassigned.is_empty() {
                break;
            }
            let max = self.max_assignable(c);
            let take: Vec<i32> = self.unassigned.iter().copied().filter(|p| !rack_matching || self.racks_match(c, *p)).take(max).collect();
            if !take.is_empty() {
                self.assign(c, &take, out);
            }
        }
    }
}

/// Java's `RangeAssignor`, rack-aware where `racks` and the members' racks allow.
pub fn range_assign(members: &[Member], partitions_per_topic: &BTreeMap<String, i32>, racks: &PartitionRacks) -> BTreeMap<String, Vec<TopicPartition>> {
    let mut out: BTreeMap<String, Vec<TopicPartition>> = members.iter().map(|m| (m.member_id.clone(), Vec::new())).collect();
    let refs: Vec<&Member> = members.iter().collect();
    let subscribed: BTreeSet<&str> = members.iter().flat_map(|m| m.topics.iter().map(String::as_str)).collect();
    let mut states: Vec<TopicState> =
        partitions_per_topic.iter().filter(|(t, n)| **n > 0 && subscribed.contains(t.as_str())).map(|(t, n)| TopicState::new(t, *n, &refs, racks)).collect();
    let rack_aware = states.iter().any(|s| s.needs_rack_aware);
    if rack_aware {
        // Topics of the same members and partition count are co-partitioned: the same
        // partition of each goes to one member.
        let mut groups: BTreeMap<(Members, usize), Vec<usize>> = BTreeMap::new();
        for (i, s) in states.iter().enumerate() {
            groups.entry((s.consumers.clone(), s.partition_racks.len())).or_default().push(i);
        }
        for ((_, partitions), group) in groups {
            if group.len() > 1 {
                assign_co_partitioned(&mut states, &group, partitions, &mut out);
            } else if let Some(s) = group.first().and_then(|i| states.get_mut(*i)) {
                if s.needs_rack_aware {
                    s.assign_ranges(true, &mut out);
                }
            }
        }
    }
    for s in &mut states {
        s.assign_ranges(false, &mut out);
    }
    if rack_aware {
        for list in out.values_mut() {
            list.sort_by(|a, b| super::java_cmp(&a.topic, &b.topic).then(a.partition.cmp(&b.partition)));
        }
    }
    out
}

/// `assignCoPartitionedWithRackMatching`: partition by partition, the first member matching
/// the racks of that partition of every topic, with room in each, takes all of them.
fn assign_co_partitioned(states: &mut [TopicState], group: &[usize], partitions: usize, out: &mut BTreeMap<String, Vec<TopicPartition>>) {
    let Some(first) = group.first().and_then(|i| states.get(*i)) else { return };
    let mut remaining: Vec<&str> = first.consumers.iter().map(|(c, _)| *c).collect();
    for p in 0..partitions as i32 {
        let fits = |c: &str, states: &[TopicState]| group.iter().filter_map(|i| states.get(*i)).all(|s| s.racks_match(c, p) && s.max_assignable(c) > 0);
        let Some(pos) = remaining.iter().position(|c| fits(c, states)) else { continue };
        let c = remaining.remove(pos);
        for i in group {
            if let Some(s) = states.get_mut(*i) {
                s.assign(c, &[p], out);
            }
        }
        if group.iter().filter_map(|i| states.get(*i)).any(|s| s.max_assignable(c) > 0) {
            remaining.insert(pos, c);
        } else if remaining.is_empty() {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: &str, instance: Option<&str>, topics: &[&str]) -> Member {
        Member {
            member_id: id.into(),
            group_instance_id: instance.map(str::to_owned),
            topics: topics.iter().map(|t| t.to_string()).collect(),
            ..Default::default()
        }
    }
    #[test]
    fn range_gives_consecutive_ranges_the_first_members_one_more() {
        let counts: BTreeMap<String, i32> = [("a".to_string(), 7), ("b".to_string(), 2)].into();
        let members = [member("m2", None, &["a", "b"]), member("m1", None, &["a", "b"]), member("m3", None, &["a"])];
        let out = range_assign(&members, &counts, &PartitionRacks::new());
        let show = |m: &str| out[m].iter().map(ToString::to_string).collect::<Vec<_>>().join(",");
        assert_eq!(show("m1"), "a-0,a-1,a-2,b-0");
        assert_eq!(show("m2"), "a-3,a-4,b-1");
        assert_eq!(show("m3"), "a-5,a-6");
    }

    #[test]
    fn range_orders_static_members_first_by_instance_id() {
        let counts: BTreeMap<String, i32> = [("t".to_string(), 3)].into();
        let members = [member("a", None, &["t"]), member("z", Some("i2"), &["t"]), member("y", Some("i1"), &["t"])];
        let out = range_assign(&members, &counts, &PartitionRacks::new());
        assert_eq!(out["y"], vec![TopicPartition::new("t", 0)]);
        assert_eq!(out["z"], vec![TopicPartition::new("t", 1)]);
        assert_eq!(out["a"], vec![TopicPartition::new("t", 2)]);
    }

    #[test]
    fn range_prefers_partitions_with_a_replica_in_the_members_rack() {
        // t-0 and t-1 only on rack x, t-2 and t-3 only on rack y: the member in rack y gets
        // t-2 and t-3 although the plain ranges would give it t-0 and t-1.
        let counts: BTreeMap<String, i32> = [("t".to_string(), 4)].into();
        let mut racks = PartitionRacks::new();
        for (p, r) in [(0, "x"), (1, "x"), (2, "y"), (3, "y")] {
            racks.insert(TopicPartition::new("t", p), [r.to_string()].into());
        }
        let mut a = member("a", None, &["t"]);
        a.rack_id = Some("y".into());
        let mut b = member("b", None, &["t"]);
        b.rack_id = Some("x".into());
        let out = range_assign(&[a, b], &counts, &racks);
        assert_eq!(out["a"], vec![TopicPartition::new("t", 2), TopicPartition::new("t", 3)]);
        assert_eq!(out["b"], vec![TopicPartition::new("t", 0), TopicPartition::new("t", 1)]);
    }
}
