//! Java's `CooperativeStickyAssignor` (`cooperative-sticky`, KIP-429), computed as
//! `AbstractStickyAssignor` does: a constrained algorithm when every member subscribes to the
//! same topics, the general one otherwise, then the cooperative adjustment (a partition that
//! changes owner is left out of its new owner's assignment this round; the old owner revokes
//! it and the group rebalances again).
//!
//! Java's result depends on the iteration order of its `HashMap`s and `HashSet`s in a few
//! places (which member keeps its extra partitions first; which of several moved partitions
//! moves back). Those orders are emulated here: a Java `HashMap` iterates by bucket
//! (`hashCode` spread, modulo the table size) and, within a bucket, by insertion.
//!
//! Rack-aware as Java's (KIP-881, [`RackInfo`]): owned partitions without a replica in
//! their member's rack are given up, and partitions go to members of their replicas' racks
//! first where balance allows. The eager [`sticky_assign`](super::sticky_assign) runs the same
//! algorithm without the cooperative adjustment.
//!
//! Not emulated: Java's `maxGeneration` kept across calls by one assignor instance
//! (generations only grow, so the current maximum is the same).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use kwire::Bytes;

use super::racks::RackInfo;
use super::{java_cmp, Member, PartitionRacks};
use crate::error::{Error, GroupError, Result};
use crate::topic_partition::TopicPartition;

/// `AbstractStickyAssignor.DEFAULT_GENERATION`.
const DEFAULT_GENERATION: i32 = -1;

impl Member {
    /// `Subscription.generationId()`.
    fn field_generation(&self) -> Option<i32> {
        (self.generation_id >= 0).then_some(self.generation_id)
    }

    /// `CooperativeStickyAssignor.memberData(..).generation`: the field, else the user data
    /// (unreadable user data counts as the default generation, as in Java).
    fn generation(&self) -> Option<i32> {
        if let Some(g) = self.field_generation() {
            return Some(g);
        }
        let data = self.user_data.as_ref()?;
        Some(match data.get(..4) {
            Some(&[a, b, c, d]) => i32::from_be_bytes([a, b, c, d]),
            _ => DEFAULT_GENERATION,
        })
    }
}

/// The user data Java's `CooperativeStickyAssignor` puts in a subscription: its generation.
pub fn cooperative_sticky_user_data(generation: i32) -> Bytes {
    Bytes::copy_from_slice(&generation.to_be_bytes())
}

/// Java's `String.hashCode`.
fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// Java's `TopicPartition.hashCode`.
fn java_tp_hash(tp: &TopicPartition) -> i32 {
    31i32.wrapping_add(tp.partition).wrapping_mul(31).wrapping_add(java_string_hash(&tp.topic))
}

/// `HashMap.hash`: the high half folded into the low one.
fn spread(h: i32) -> u32 {
    let h = h as u32;
    h ^ (h >> 16)
}

/// A member id ordered as Java orders strings.
#[derive(Debug, Clone, PartialEq, Eq)]
struct JKey(String);

impl Ord for JKey {
    fn cmp(&self, other: &Self) -> Ordering {
        java_cmp(&self.0, &other.0)
    }
}

impl PartialOrd for JKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The table size of a default `HashMap` after `n` distinct puts (doubling past 3/4 full).
fn java_table_size(n: usize) -> usize {
    let mut cap = 16;
    while n > cap / 4 * 3 {
        cap *= 2;
    }
    cap
}

/// The order a default Java `HashMap` iterates keys of these hashes, put in this order.
fn java_hash_order(hashes: &[i32]) -> Vec<usize> {
    let mask = java_table_size(hashes.len()) as u32 - 1;
    let mut order: Vec<usize> = (0..hashes.len()).collect();
    // Stable: within a bucket, insertion order.
    order.sort_by_key(|&i| hashes.get(i).map_or(0, |h| spread(*h) & mask));
    order
}

/// A Java `HashSet<TopicPartition>` as far as its first element goes.
#[derive(Debug, Default)]
struct JavaSet {
    items: Vec<(TopicPartition, u64)>,
    next_seq: u64,
    max_len: usize,
}

impl JavaSet {
    fn add(&mut self, tp: TopicPartition) {
        if self.items.iter().any(|(t, _)| *t == tp) {
            return;
        }
        self.items.push((tp, self.next_seq));
        self.next_seq += 1;
        // The table grows with the most entries it held and never shrinks.
        self.max_len = self.max_len.max(self.items.len());
    }

    fn remove(&mut self, tp: &TopicPartition) {
        self.items.retain(|(t, _)| t != tp);
    }

    fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// `iterator().next()`.
    fn first(&self) -> Option<&TopicPartition> {
        let mask = java_table_size(self.max_len) as u32 - 1;
        self.items.iter().min_by_key(|(t, seq)| (spread(java_tp_hash(t)) & mask, *seq)).map(|(t, _)| t)
    }
}

/// `AbstractStickyAssignor.PartitionMovements`.
#[derive(Debug, Default)]
struct Movements {
    by_partition: HashMap<TopicPartition, (String, String)>,
    by_topic: HashMap<String, HashMap<(String, String), JavaSet>>,
}

impl Movements {
    fn remove_record(&mut self, tp: &TopicPartition) -> Option<(String, String)> {
        let pair = self.by_partition.remove(tp)?;
        if let Some(topic) = self.by_topic.get_mut(&tp.topic) {
            if let Some(set) = topic.get_mut(&pair) {
                set.remove(tp);
                if set.is_empty() {
                    topic.remove(&pair);
                }
            }
            if topic.is_empty() {
                self.by_topic.remove(&tp.topic);
            }
        }
        Some(pair)
    }

    fn add_record(&mut self, tp: &TopicPartition, pair: (String, String)) {
        self.by_partition.insert(tp.clone(), pair.clone());
        self.by_topic.entry(tp.topic.clone()).or_default().entry(pair).or_default().add(tp.clone());
    }

    fn move_partition(&mut self, tp: &TopicPartition, old: &str, new: &str) {
        match self.remove_record(tp) {
            // Moved before: one movement from the first owner (none if it came back).
            Some((src, _)) => {
                if src != new {
                    self.add_record(tp, (src, new.to_owned()));
                }
            }
            None => self.add_record(tp, (old.to_owned(), new.to_owned())),
        }
    }

    /// Rather than move a partition the opposite way of an earlier movement, move back one
    /// that made that movement (keeps assignments sticky).
    fn actual_partition_to_move(&self, tp: &TopicPartition, old: &str, new: &str) -> TopicPartition {
        let Some(topic) = self.by_topic.get(&tp.topic) else {
            return tp.clone();
        };
        let old = self.by_partition.get(tp).map_or(old, |(src, _)| src.as_str());
        topic.get(&(new.to_owned(), old.to_owned())).and_then(JavaSet::first).cloned().unwrap_or_else(|| tp.clone())
    }
}

/// A member as `AbstractStickyAssignor` reads it: its subscription and its `memberData` (the
/// partitions it had and since which generation: the subscription's fields for the
/// cooperative assignor, the user data for the eager one).
pub(super) struct View<'a> {
    pub(super) m: &'a Member,
    pub(super) owned: Vec<TopicPartition>,
    pub(super) generation: Option<i32>,
}

/// What `AbstractStickyAssignor.assignPartitions` computes: the assignment, the partitions the
/// constrained algorithm moved from one member to another (`None` after the general one),
/// and the members in Java's iteration order.
pub(super) type Computed<'a> = (Assignment, Option<HashMap<TopicPartition, String>>, Vec<View<'a>>);

/// `AbstractStickyAssignor.assignPartitions`: `members` in JoinGroup order, the partition
/// count of each topic (topics without partitions, or that no member subscribes to, are
/// skipped as Java skips them), each member's `memberData` from `data`.
pub(super) fn sticky_core<'a>(
    members: &'a [Member],
    partitions_per_topic: &BTreeMap<String, i32>,
    racks: &PartitionRacks,
    name: &str,
    data: impl Fn(&Member) -> (Vec<TopicPartition>, Option<i32>),
) -> Result<Computed<'a>> {
    let subscribed: HashSet<&str> = members.iter().flat_map(|m| m.topics.iter().map(String::as_str)).collect();
    let counts: BTreeMap<String, i32> =
        partitions_per_topic.iter().filter(|(t, n)| **n > 0 && subscribed.contains(t.as_str())).map(|(t, n)| (t.clone(), *n)).collect();
    let ids: HashSet<&str> = members.iter().map(|m| m.member_id.as_str()).collect();
    if ids.len() != members.len() {
        return Err(Error::Group(GroupError::Assignment(format!("{name}: two members with the same id"))));
    }
    // Java's `subscriptions` HashMap order.
    let hashes: Vec<i32> = members.iter().map(|m| java_string_hash(&m.member_id)).collect();
    let ordered: Vec<View> = java_hash_order(&hashes)
        .into_iter()
        .filter_map(|i| members.get(i))
        .map(|m| {
            let (owned, generation) = data(m);
            View { m, owned, generation }
        })
        .collect();
    let refs: Vec<&Member> = ordered.iter().map(|v| v.m).collect();
    let rack = RackInfo::new(&refs, &counts, racks);
    let claims = claims(&ordered, &counts);
    if claims.all_equal {
        let (a, t) = constrained(&ordered, &counts, &claims, &rack, name)?;
        Ok((a, Some(t), ordered))
    } else {
        let a = General::new(&ordered, &counts, claims.owned.clone(), &rack).build(&ordered, claims.max_generation);
        Ok((a, None, ordered))
    }
}

/// Java's `CooperativeStickyAssignor.assign`: `members` in JoinGroup order, the partition
/// count of each topic (topics without partitions, or that no member subscribes to, are
/// skipped as Java skips them), the racks of the partitions' replicas (for rack-aware
/// assignment, with members' racks). Every member gets an entry.
pub fn cooperative_sticky_assign(
    members: &[Member],
    partitions_per_topic: &BTreeMap<String, i32>,
    racks: &PartitionRacks,
) -> Result<BTreeMap<String, Vec<TopicPartition>>> {
    let (mut assignment, transferring, ordered) =
        sticky_core(members, partitions_per_topic, racks, "cooperative-sticky", |m| (m.owned_partitions.clone(), m.generation()))?;
    let transferring = transferring.unwrap_or_else(|| transferring_ownership(&ordered, &assignment));
    // The cooperative adjustment: the new owner gets a moving partition in the next round,
    // once its old owner has revoked it.
    for (tp, member) in &transferring {
        if let Some(list) = assignment.get_mut(member) {
            if let Some(i) = list.iter().position(|p| p == tp) {
                list.remove(i);
            }
        }
    }
    Ok(assignment)
}

/// What `allSubscriptionsEqual` finds.
struct Claims {
    all_equal: bool,
    /// Each member's claimed partitions, conflicts resolved by generation.
    owned: BTreeMap<String, Vec<TopicPartition>>,
    /// Claimed by two members of the same generation: owned by neither.
    multiple_owners: HashSet<TopicPartition>,
    max_generation: i32,
}

fn claims(ordered: &[View], counts: &BTreeMap<String, i32>) -> Claims {
    let by_id: HashMap<&str, &Member> = ordered.iter().map(|v| (v.m.member_id.as_str(), v.m)).collect();
    let mut all_equal = true;
    let mut topics: HashSet<&str> = HashSet::new();
    let mut owned: BTreeMap<String, Vec<TopicPartition>> = BTreeMap::new();
    let mut multiple_owners = HashSet::new();
    let mut max_generation = DEFAULT_GENERATION;
    let mut owner_of: HashMap<TopicPartition, String> = HashMap::new();
    for v in ordered {
        let m = v.m;
        if topics.is_empty() {
            topics.extend(m.topics.iter().map(String::as_str));
        } else if all_equal && !(m.topics.len() == topics.len() && m.topics.iter().all(|t| topics.contains(t.as_str()))) {
            all_equal = false;
        }
        let generation = v.generation.unwrap_or(DEFAULT_GENERATION);
        max_generation = max_generation.max(generation);
        owned.insert(m.member_id.clone(), Vec::new());
        for tp in &v.owned {
            // A claim on a partition the topic does not have (Java would assign it) is dropped.
            if !counts.get(&tp.topic).is_some_and(|n| (0..*n).contains(&tp.partition)) {
                continue;
            }
            let Some(other) = owner_of.get(tp).cloned() else {
                owned.entry(m.member_id.clone()).or_default().push(tp.clone());
                owner_of.insert(tp.clone(), m.member_id.clone());
                continue;
            };
            let other_generation = by_id.get(other.as_str()).and_then(|o| o.field_generation()).unwrap_or(DEFAULT_GENERATION);
            let drop_from_other = |owned: &mut BTreeMap<String, Vec<TopicPartition>>| {
                if let Some(list) = owned.get_mut(&other) {
                    if let Some(i) = list.iter().position(|p| p == tp) {
                        list.remove(i);
                    }
                }
            };
            match generation.cmp(&other_generation) {
                Ordering::Equal => {
                    multiple_owners.insert(tp.clone());
                    drop_from_other(&mut owned);
                    owner_of.insert(tp.clone(), m.member_id.clone());
                }
                Ordering::Greater => {
                    owned.entry(m.member_id.clone()).or_default().push(tp.clone());
                    drop_from_other(&mut owned);
                    owner_of.insert(tp.clone(), m.member_id.clone());
                }
                Ordering::Less => {}
            }
        }
    }
    Claims { all_equal, owned, multiple_owners, max_generation }
}

/// Every partition, by topic name then partition.
fn all_partitions(counts: &BTreeMap<String, i32>) -> Vec<TopicPartition> {
    counts.iter().flat_map(|(t, n)| (0..*n).map(move |p| TopicPartition::new(t.clone(), p))).collect()
}

type Assignment = BTreeMap<String, Vec<TopicPartition>>;

/// `ConstrainedAssignmentBuilder`: every member subscribes to the same topics.
fn constrained(
    ordered: &[View],
    counts: &BTreeMap<String, i32>,
    claims: &Claims,
    rack: &RackInfo,
    name: &str,
) -> Result<(Assignment, HashMap<TopicPartition, String>)> {
    let members = ordered.len();
    let total: usize = counts.values().map(|n| *n as usize).sum();
    let mut assignment: Assignment = ordered.iter().map(|v| (v.m.member_id.clone(), Vec::new())).collect();
    let mut transferring = HashMap::new();
    if members == 0 {
        return Ok((assignment, transferring));
    }
    let (min_quota, max_quota) = (total / members, total.div_ceil(members));
    let expected_over_min = total % members;
    let mut over_min = 0;
    let mut assigned: HashSet<TopicPartition> = HashSet::new();
    let mut maybe_revoked: HashMap<TopicPartition, String> = HashMap::new();
    let mut under_min: Vec<String> = Vec::new();
    let mut exactly_min: Vec<String> = Vec::new();
    for v in ordered {
        let id = &v.m.member_id;
        let mut owned = claims.owned.get(id).cloned().unwrap_or_default();
        // Rack-aware: an owned partition without a replica in the member's rack is given up.
        owned.retain(|tp| {
            let mismatch = rack.mismatch(id, tp);
            if mismatch {
                maybe_revoked.insert(tp.clone(), id.clone());
            }
            !mismatch
        });
        owned.sort_by(|a, b| a.partition.cmp(&b.partition).then_with(|| a.topic.cmp(&b.topic)));
        owned.retain(|tp| !claims.multiple_owners.contains(tp));
        let keep = if owned.len() < min_quota {
            under_min.push(id.clone());
            owned.len()
        } else if owned.len() >= max_quota && over_min < expected_over_min {
            over_min += 1;
            if over_min == expected_over_min {
                exactly_min.clear();
            }
            max_quota
        } else {
            if over_min < expected_over_min {
                exactly_min.push(id.clone());
            }
            min_quota
        };
        for tp in owned.get(keep..).unwrap_or_default() {
            maybe_revoked.insert(tp.clone(), id.clone());
        }
        owned.truncate(keep);
        assigned.extend(owned.iter().cloned());
        if let Some(a) = assignment.get_mut(id) {
            a.extend(owned);
        }
    }
    let mut unassigned: Vec<TopicPartition> = all_partitions(counts).into_iter().filter(|tp| !assigned.contains(tp)).collect();
    under_min.sort_by(|a, b| java_cmp(a, b));
    exactly_min.sort_by(|a, b| java_cmp(a, b));
    rack.sort_partitions(&mut unassigned);
    let mut assign_new = |assignment: &mut Assignment, tp: &TopicPartition, member: &str| -> usize {
        let Some(list) = assignment.get_mut(member) else {
            return 0;
        };
        list.push(tp.clone());
        if maybe_revoked.get(tp).is_some_and(|m| m != member) || claims.multiple_owners.contains(tp) {
            transferring.insert(tp.clone(), member.to_owned());
        }
        list.len()
    };
    // `assignRackAwareRoundRobin`: members in a rack of the partition's replicas first, round
    // robin up to the minimum quota, then those at the minimum up to the maximum.
    if !rack.consumer_racks.is_empty() {
        let mut next = 0;
        let mut left = Vec::with_capacity(unassigned.len());
        for tp in unassigned {
            let mut member = None;
            if let Some(mut i) = rack.next_rack_consumer(&tp, &under_min, next) {
                let m = under_min.get(i).cloned().unwrap_or_default();
                let count = assignment.get(&m).map_or(0, Vec::len) + 1;
                if count >= min_quota {
                    if let Some(pos) = under_min.iter().position(|x| *x == m) {
                        under_min.remove(pos);
                    }
                    if count < max_quota && over_min < expected_over_min {
                        exactly_min.push(m.clone());
                    }
                } else {
                    i += 1;
                }
                next = if under_min.is_empty() { 0 } else { i % under_min.len() };
                member = Some(m);
            } else if !exactly_min.is_empty() {
                if let Some(i) = rack.next_rack_consumer(&tp, &exactly_min, 0) {
                    let m = exactly_min.get(i).cloned().unwrap_or_default();
                    if assignment.get(&m).map_or(0, Vec::len) + 1 == max_quota {
                        exactly_min.remove(i);
                        over_min += 1;
                        if over_min == expected_over_min {
                            exactly_min.clear();
                        }
                    }
                    member = Some(m);
                }
            }
            match member {
                Some(m) => {
                    assign_new(&mut assignment, &tp, &m);
                }
                None => left.push(tp),
            }
        }
        unassigned = left;
    }
    // `assignRoundRobin`, with its LinkedList iterator as a cursor into `under_min`.
    let mut cursor = 0;
    for tp in &unassigned {
        let (member, from_under) = if let Some(m) = under_min.get(cursor) {
            cursor += 1;
            (m.clone(), true)
        } else if under_min.is_empty() {
            if exactly_min.is_empty() {
                return Err(Error::Group(GroupError::Assignment(format!("{name}: no more unfilled members to assign to"))));
            }
            (exactly_min.remove(0), false)
        } else {
            cursor = 1;
            (under_min.first().cloned().unwrap_or_default(), true)
        };
        let count = assign_new(&mut assignment, tp, &member);
        if count == min_quota {
            // Java's iterator.remove(): the member just taken from `under_min` (one taken from
            // `exactly_min` already had the minimum, so cannot be at it now).
            if !from_under {
                return Err(Error::Group(GroupError::Assignment(format!("{name}: a filled member is below the minimum quota"))));
            }
            if let Some(i) = cursor.checked_sub(1).filter(|i| *i < under_min.len()) {
                under_min.remove(i);
                cursor = i;
            }
            exactly_min.push(member);
        } else if count == max_quota {
            over_min += 1;
        }
    }
    if !under_min.is_empty() {
        if over_min != expected_over_min {
            return Err(Error::Group(GroupError::Assignment(format!("{name}: fewer members above the minimum quota than expected"))));
        }
        if let Some(m) = under_min.iter().find(|m| assignment.get(*m).map_or(0, Vec::len) != min_quota) {
            return Err(Error::Group(GroupError::Assignment(format!("{name}: member {m} below the minimum quota"))));
        }
    }
    Ok((assignment, transferring))
}

/// `CooperativeStickyAssignor.computePartitionsTransferringOwnership`: partitions assigned to
/// a member that did not own them while another member owned them.
fn transferring_ownership(ordered: &[View], assignment: &Assignment) -> HashMap<TopicPartition, String> {
    let mut added = HashMap::new();
    let mut revoked = HashSet::new();
    for m in ordered.iter().map(|v| v.m) {
        let assigned: HashSet<&TopicPartition> = assignment.get(&m.member_id).map(|a| a.iter().collect()).unwrap_or_default();
        let owned: HashSet<&TopicPartition> = m.owned_partitions.iter().collect();
        added.extend(assigned.iter().filter(|tp| !owned.contains(*tp)).map(|tp| ((*tp).clone(), m.member_id.clone())));
        revoked.extend(owned.iter().filter(|tp| !assigned.contains(*tp)).map(|tp| (*tp).clone()));
    }
    added.retain(|tp, _| revoked.contains(tp));
    added
}

/// `GeneralAssignmentBuilder`: members subscribe to different topics.
struct General<'a> {
    counts: &'a BTreeMap<String, i32>,
    total: usize,
    topic_members: BTreeMap<String, Vec<String>>,
    member_topics: BTreeMap<String, Vec<String>>,
    current: Assignment,
    owner: HashMap<TopicPartition, String>,
    /// Java's `sortedCurrentSubscriptions`: by assignment size, then member id.
    sorted: BTreeSet<(usize, JKey)>,
    movements: Movements,
    rack: &'a RackInfo,
}

impl<'a> General<'a> {
    fn new(ordered: &[View], counts: &'a BTreeMap<String, i32>, mut current: Assignment, rack: &'a RackInfo) -> General<'a> {
        let mut topic_members: BTreeMap<String, Vec<String>> = counts.keys().map(|t| (t.clone(), Vec::new())).collect();
        let mut member_topics = BTreeMap::new();
        for m in ordered.iter().map(|v| v.m) {
            let mut topics = Vec::new();
            for t in &m.topics {
                if let Some(list) = topic_members.get_mut(t) {
                    topics.push(t.clone());
                    list.push(m.member_id.clone());
                }
            }
            member_topics.insert(m.member_id.clone(), topics);
            current.entry(m.member_id.clone()).or_default();
        }
        let owner = current.iter().flat_map(|(m, tps)| tps.iter().map(move |tp| (tp.clone(), m.clone()))).collect();
        General {
            counts,
            total: counts.values().map(|n| *n as usize).sum(),
            topic_members,
            member_topics,
            current,
            owner,
            sorted: BTreeSet::new(),
            movements: Movements::default(),
            rack,
        }
    }

    fn size(&self, member: &str) -> Option<usize> {
        self.current.get(member).map(Vec::len)
    }

    fn subscribes(&self, member: &str, topic: &str) -> bool {
        self.member_topics.get(member).is_some_and(|ts| ts.iter().any(|t| t == topic))
    }

    fn sorted_remove(&mut self, member: &str) {
        if let Some(n) = self.size(member) {
            self.sorted.remove(&(n, JKey(member.to_owned())));
        }
    }

    fn sorted_add(&mut self, member: &str) {
        if let Some(n) = self.size(member) {
            self.sorted.insert((n, JKey(member.to_owned())));
        }
    }

    fn build(mut self, ordered: &[View], max_generation: i32) -> Assignment {
        // Where each partition was in an older generation than the newest, to move it back.
        let mut previous: HashMap<TopicPartition, (String, i32)> = HashMap::new();
        for v in ordered {
            let generation = match v.generation {
                Some(g) if g < max_generation => g,
                None if max_generation > DEFAULT_GENERATION => DEFAULT_GENERATION,
                _ => continue,
            };
            for tp in &v.owned {
                if previous.get(tp).is_none_or(|(_, g)| generation > *g) {
                    previous.insert(tp.clone(), (v.m.member_id.clone(), generation));
                }
            }
        }
        // Owned partitions stay, but for those of topics the member no longer subscribes to.
        let mut revocation_required = false;
        let mut assigned = HashSet::new();
        for (member, tps) in self.current.iter_mut() {
            let subscribed = ordered.iter().find(|v| v.m.member_id == *member).map(|v| &v.m.topics);
            let rack = self.rack;
            tps.retain(|tp| {
                if !self.topic_members.contains_key(&tp.topic) {
                    self.owner.remove(tp);
                    false
                } else if !subscribed.is_some_and(|ts| ts.contains(&tp.topic)) || rack.mismatch(member, tp) {
                    revocation_required = true;
                    false
                } else {
                    assigned.insert(tp.clone());
                    true
                }
            });
        }
        let mut sorted_topics: Vec<&String> = self.topic_members.keys().collect();
        sorted_topics.sort_by(|a, b| {
            let (na, nb) = (self.topic_members.get(*a).map_or(0, Vec::len), self.topic_members.get(*b).map_or(0, Vec::len));
            na.cmp(&nb).then_with(|| a.cmp(b))
        });
        let mut sorted_all: Vec<TopicPartition> =
            sorted_topics.iter().flat_map(|t| (0..self.counts.get(*t).copied().unwrap_or(0)).map(|p| TopicPartition::new((*t).clone(), p))).collect();
        let mut unassigned: Vec<TopicPartition> = sorted_all.iter().filter(|tp| !assigned.contains(*tp)).cloned().collect();
        let members: Vec<String> = self.current.keys().cloned().collect();
        for m in &members {
            self.sorted_add(m);
        }
        self.balance(&previous, &mut sorted_all, &mut unassigned, revocation_required);
        self.current
    }

    fn balance(
        &mut self,
        previous: &HashMap<TopicPartition, (String, i32)>,
        sorted_all: &mut Vec<TopicPartition>,
        unassigned: &mut Vec<TopicPartition>,
        revocation_required: bool,
    ) {
        let initializing = self.sorted.last().is_none_or(|(n, _)| *n == 0);
        // Rack-aware: first to members in a rack of the partition's replicas, then the rest.
        let mut to_assign: Vec<TopicPartition> = unassigned.clone();
        if !self.rack.consumer_racks.is_empty() {
            to_assign.retain(|tp| !self.maybe_assign(tp, true));
        }
        for tp in &to_assign {
            self.maybe_assign(tp, false);
        }
        // Partitions of a topic only one member wants cannot move; nor can a member that has
        // all it can have, of such topics only.
        let fixed_topics: HashSet<String> = self.topic_members.iter().filter(|(_, ms)| ms.len() < 2).map(|(t, _)| t.clone()).collect();
        sorted_all.retain(|tp| !fixed_topics.contains(&tp.topic));
        unassigned.retain(|tp| !fixed_topics.contains(&tp.topic));
        let mut fixed = Assignment::new();
        let members: Vec<String> = self.member_topics.keys().cloned().collect();
        for m in members {
            if !self.can_member_move(&m) {
                self.sorted_remove(&m);
                if let Some(a) = self.current.remove(&m) {
                    fixed.insert(m, a);
                }
            }
        }
        let before = self.current.clone();
        let owner_before = self.owner.clone();
        if !revocation_required {
            self.reassign_all(unassigned, previous);
        }
        let performed = self.reassign_all(sorted_all, previous);
        // A rebalance that did not improve the balance is undone (stickiness first).
        if !initializing && performed && balance_score(&self.current) >= balance_score(&before) {
            self.current = before;
            self.owner = owner_before;
        }
        for (m, a) in fixed {
            self.current.insert(m.clone(), a);
            self.sorted_add(&m);
        }
    }

    /// `maybeAssignPartition`: to the member with the fewest partitions that subscribes to
    /// its topic (and, `rack_matching`, is in a rack of its replicas); whether one took it.
    fn maybe_assign(&mut self, tp: &TopicPartition, rack_matching: bool) -> bool {
        if self.topic_members.get(&tp.topic).is_none_or(Vec::is_empty) {
            return false;
        }
        let rack = self.rack;
        let Some(member) = self.sorted.iter().map(|(_, m)| m.0.clone()).find(|m| self.subscribes(m, &tp.topic) && !(rack_matching && rack.mismatch(m, tp)))
        else {
            return false;
        };
        self.sorted_remove(&member);
        if let Some(list) = self.current.get_mut(&member) {
            list.push(tp.clone());
        }
        self.owner.insert(tp.clone(), member.clone());
        self.sorted_add(&member);
        true
    }

    fn max_size(&self, topics: &[String]) -> usize {
        if topics.len() == self.counts.len() {
            self.total
        } else {
            topics.iter().map(|t| self.counts.get(t).map_or(0, |n| *n as usize)).sum()
        }
    }

    fn can_member_move(&self, member: &str) -> bool {
        let (Some(tps), Some(topics)) = (self.current.get(member), self.member_topics.get(member)) else {
            return false;
        };
        tps.len() < self.max_size(topics) || tps.iter().any(|tp| self.topic_members.get(&tp.topic).is_some_and(|ms| ms.len() >= 2))
    }

    fn is_balanced(&self) -> bool {
        let (Some((min, _)), Some((max, _))) = (self.sorted.first(), self.sorted.last()) else {
            return true;
        };
        if min + 1 >= *max {
            return true;
        }
        let owners: HashMap<&TopicPartition, &String> = self.current.iter().flat_map(|(m, tps)| tps.iter().map(move |tp| (tp, m))).collect();
        for (_, JKey(member)) in &self.sorted {
            let (Some(tps), Some(topics)) = (self.current.get(member), self.member_topics.get(member)) else {
                continue;
            };
            let count = tps.len();
            if count == self.max_size(topics) {
                continue;
            }
            for t in topics {
                for p in 0..self.counts.get(t).copied().unwrap_or(0) {
                    let tp = TopicPartition::new(t.clone(), p);
                    if tps.contains(&tp) {
                        continue;
                    }
                    if let Some(n) = owners.get(&tp).and_then(|o| self.size(o)) {
                        if count + 1 < n {
                            return false;
                        }
                    }
                }
            }
        }
        true
    }

    /// `performReassignments`: true when a partition moved.
    fn reassign_all(&mut self, partitions: &[TopicPartition], previous: &HashMap<TopicPartition, (String, i32)>) -> bool {
        let mut performed = false;
        loop {
            let mut modified = false;
            for tp in partitions {
                if self.is_balanced() {
                    break;
                }
                let Some(member) = self.owner.get(tp).cloned() else {
                    continue;
                };
                let Some(size) = self.size(&member) else {
                    continue;
                };
                if let Some((prev, _)) = previous.get(tp) {
                    if self.size(prev).is_some_and(|n| size > n + 1) {
                        self.reassign_to(tp, &prev.clone());
                        performed = true;
                        modified = true;
                        continue;
                    }
                }
                let smaller = self.topic_members.get(&tp.topic).is_some_and(|ms| ms.iter().any(|o| self.size(o).is_some_and(|n| size > n + 1)));
                if smaller {
                    if let Some(to) = self.sorted.iter().map(|(_, m)| m.0.clone()).find(|m| self.subscribes(m, &tp.topic)) {
                        self.reassign_to(tp, &to);
                    }
                    performed = true;
                    modified = true;
                }
            }
            if !modified {
                return performed;
            }
        }
    }

    fn reassign_to(&mut self, tp: &TopicPartition, to: &str) {
        let Some(from) = self.owner.get(tp).cloned() else {
            return;
        };
        let tp = self.movements.actual_partition_to_move(tp, &from, to);
        let Some(old) = self.owner.get(&tp).cloned() else {
            return;
        };
        self.sorted_remove(&old);
        self.sorted_remove(to);
        self.movements.move_partition(&tp, &old, to);
        if let Some(list) = self.current.get_mut(&old) {
            if let Some(i) = list.iter().position(|p| *p == tp) {
                list.remove(i);
            }
        }
        if let Some(list) = self.current.get_mut(to) {
            list.push(tp.clone());
        }
        self.owner.insert(tp, to.to_owned());
        self.sorted_add(to);
        self.sorted_add(&old);
    }
}

/// `getBalanceScore`: the sum of the size differences over every pair of members.
fn balance_score(a: &Assignment) -> usize {
    let sizes: Vec<usize> = a.values().map(Vec::len).collect();
    let mut score = 0;
    for (i, x) in sizes.iter().enumerate() {
        for y in sizes.get(i + 1..).unwrap_or_default() {
            score += x.abs_diff(*y);
        }
    }
    score
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: &str, topics: &[&str], owned: &[(&str, i32)], generation: i32) -> Member {
        Member {
            member_id: id.into(),
            topics: topics.iter().map(|t| t.to_string()).collect(),
            owned_partitions: owned.iter().map(|(t, p)| TopicPartition::new(*t, *p)).collect(),
            generation_id: generation,
            ..Default::default()
        }
    }

    fn show(a: &Assignment, m: &str) -> String {
        let mut v: Vec<String> = a.get(m).map(|l| l.iter().map(ToString::to_string).collect()).unwrap_or_default();
        v.sort();
        v.join(",")
    }

    #[test]
    fn java_hashes_and_orders() {
        // String.hashCode is s[0]*31^(n-1) + ... + s[n-1]; TopicPartition's is
        // 31 * (31 + partition) + topic.hashCode().
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("ab"), 97 * 31 + 98);
        assert_eq!(java_tp_hash(&TopicPartition::new("t", 0)), 31 * 31 + 116);
        assert_eq!(java_table_size(12), 16);
        assert_eq!(java_table_size(13), 32);
        // "b" hashes to bucket 2 of 16, "q" (113) to bucket 1: "q" iterates first.
        assert_eq!(java_hash_order(&[java_string_hash("b"), java_string_hash("q")]), vec![1, 0]);
    }

    #[test]
    fn a_new_member_gets_partitions_only_after_their_owner_revoked_them() {
        let counts: BTreeMap<String, i32> = [("t".to_string(), 4)].into();
        let old = member("a", &["t"], &[("t", 0), ("t", 1), ("t", 2), ("t", 3)], 3);
        let new = member("b", &["t"], &[], -1);
        let first = cooperative_sticky_assign(&[old.clone(), new.clone()], &counts, &PartitionRacks::new()).unwrap();
        // a keeps two, gives up two; b gets nothing this round.
        assert_eq!(first.get("a").map(Vec::len), Some(2));
        assert_eq!(show(&first, "b"), "");
        // The next round, a owns only its two: b gets the other two.
        let a2 = Member { owned_partitions: first["a"].clone(), generation_id: 4, ..old };
        let second = cooperative_sticky_assign(&[a2, Member { generation_id: 4, ..new }], &counts, &PartitionRacks::new()).unwrap();
        assert_eq!(second["a"].len(), 2);
        assert_eq!(second["b"].len(), 2);
        let all: BTreeSet<_> = second.values().flatten().collect();
        assert_eq!(all.len(), 4);
        assert_eq!(show(&second, "a"), show(&first, "a"));
    }

    #[test]
    fn unequal_subscriptions_use_the_general_algorithm() {
        let counts: BTreeMap<String, i32> = [("x".to_string(), 2), ("y".to_string(), 3)].into();
        let out = cooperative_sticky_assign(&[member("m1", &["x"], &[], -1), member("m2", &["x", "y"], &[], -1)], &counts, &PartitionRacks::new()).unwrap();
        // y only goes to m2; x is shared out to balance.
        assert!(out["m1"].iter().all(|tp| tp.topic == "x"));
        assert_eq!(out["m1"].len() + out["m2"].len(), 5);
        assert!(out["m2"].iter().filter(|tp| tp.topic == "y").count() == 3);
    }

    #[test]
    fn claims_of_the_same_partition_go_to_the_newer_generation() {
        let counts: BTreeMap<String, i32> = [("t".to_string(), 2)].into();
        let stale = member("a", &["t"], &[("t", 0), ("t", 1)], 2);
        let fresh = member("b", &["t"], &[("t", 1)], 3);
        let out = cooperative_sticky_assign(&[stale, fresh], &counts, &PartitionRacks::new()).unwrap();
        assert_eq!(show(&out, "a"), "t-0");
        assert_eq!(show(&out, "b"), "t-1");
    }
}
