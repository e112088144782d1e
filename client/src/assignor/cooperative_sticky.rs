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
//! Not emulated: rack-aware assignment (members' `rack_id`s are ignored), and Java's
//! `maxGeneration` kept across calls by one assignor instance (generations only grow, so the
//! current maximum is the same).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

use kwire::Bytes;

use super::Member;
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

/// Java's `String.compareTo`: by UTF-16 code units.
fn java_cmp(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
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

/// Java's `CooperativeStickyAssignor.assign`: `members` in JoinGroup order, the partition
/// count of each topic (topics without partitions, or that no member subscribes to, are
/// skipped as Java skips them). Every member gets an entry.
pub fn cooperative_sticky_assign(members: &[Member], partitions_per_topic: &BTreeMap<String, i32>) -> Result<BTreeMap<String, Vec<TopicPartition>>> {
    let subscribed: HashSet<&str> = members.iter().flat_map(|m| m.topics.iter().map(String::as_str)).collect();
    let counts: BTreeMap<String, i32> =
        partitions_per_topic.iter().filter(|(t, n)| **n > 0 && subscribed.contains(t.as_str())).map(|(t, n)| (t.clone(), *n)).collect();
    let ids: HashSet<&str> = members.iter().map(|m| m.member_id.as_str()).collect();
    if ids.len() != members.len() {
        return Err(Error::Group(GroupError::Assignment("cooperative-sticky: two members with the same id".into())));
    }
    // Java's `subscriptions` HashMap order.
    let hashes: Vec<i32> = members.iter().map(|m| java_string_hash(&m.member_id)).collect();
    let ordered: Vec<&Member> = java_hash_order(&hashes).into_iter().filter_map(|i| members.get(i)).collect();
    let claims = claims(&ordered, &counts);
    let (mut assignment, transferring) = if claims.all_equal {
        let (a, t) = constrained(&ordered, &counts, &claims)?;
        (a, t)
    } else {
        let a = General::new(&ordered, &counts, claims.owned.clone()).build(&ordered, claims.max_generation);
        let t = transferring_ownership(&ordered, &a);
        (a, t)
    };
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

fn claims(ordered: &[&Member], counts: &BTreeMap<String, i32>) -> Claims {
    let by_id: HashMap<&str, &Member> = ordered.iter().map(|m| (m.member_id.as_str(), *m)).collect();
    let mut all_equal = true;
    let mut topics: HashSet<&str> = HashSet::new();
    let mut owned: BTreeMap<String, Vec<TopicPartition>> = BTreeMap::new();
    let mut multiple_owners = HashSet::new();
    let mut max_generation = DEFAULT_GENERATION;
    let mut owner_of: HashMap<TopicPartition, String> = HashMap::new();
    for m in ordered {
        if topics.is_empty() {
            topics.extend(m.topics.iter().map(String::as_str));
        } else if all_equal && !(m.topics.len() == topics.len() && m.topics.iter().all(|t| topics.contains(t.as_str()))) {
            all_equal = false;
        }
        let generation = m.generation().unwrap_or(DEFAULT_GENERATION);
        max_generation = max_generation.max(generation);
        owned.insert(m.member_id.clone(), Vec::new());
        for tp in &m.owned_partitions {
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
fn constrained(ordered: &[&Member], counts: &BTreeMap<String, i32>, claims: &Claims) -> Result<(Assignment, HashMap<TopicPartition, String>)> {
    let members = ordered.len();
    let total: usize = counts.values().map(|n| *n as usize).sum();
    let mut assignment: Assignment = ordered.iter().map(|m| (m.member_id.clone(), Vec::new())).collect();
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
    let mut exactly_min: VecDeque<String> = VecDeque::new();
    for m in ordered {
        let id = &m.member_id;
        let mut owned = claims.owned.get(id).cloned().unwrap_or_default();
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
                exactly_min.push_back(id.clone());
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
    let unassigned: Vec<TopicPartition> = all_partitions(counts).into_iter().filter(|tp| !assigned.contains(tp)).collect();
    under_min.sort_by(|a, b| java_cmp(a, b));
    exactly_min.make_contiguous().sort_by(|a, b| java_cmp(a, b));
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
    // `assignRoundRobin`, with its LinkedList iterator as a cursor into `under_min`.
    let mut cursor = 0;
    for tp in &unassigned {
        let (member, from_under) = if let Some(m) = under_min.get(cursor) {
            cursor += 1;
            (m.clone(), true)
        } else if under_min.is_empty() {
            match exactly_min.pop_front() {
                Some(m) => (m, false),
                None => return Err(Error::Group(GroupError::Assignment("cooperative-sticky: no more unfilled members to assign to".into()))),
            }
        } else {
            cursor = 1;
            (under_min.first().cloned().unwrap_or_default(), true)
        };
        let count = assign_new(&mut assignment, tp, &member);
        if count == min_quota {
            // Java's iterator.remove(): the member just taken from `under_min` (one taken from
            // `exactly_min` already had the minimum, so cannot be at it now).
            if !from_under {
                return Err(Error::Group(GroupError::Assignment("cooperative-sticky: a filled member is below the minimum quota".into())));
            }
            if let Some(i) = cursor.checked_sub(1).filter(|i| *i < under_min.len()) {
                under_min.remove(i);
                cursor = i;
            }
            exactly_min.push_back(member);
        } else if count == max_quota {
            over_min += 1;
        }
    }
    if !under_min.is_empty() {
        if over_min != expected_over_min {
            return Err(Error::Group(GroupError::Assignment("cooperative-sticky: fewer members above the minimum quota than expected".into())));
        }
        if let Some(m) = under_min.iter().find(|m| assignment.get(*m).map_or(0, Vec::len) != min_quota) {
            return Err(Error::Group(GroupError::Assignment(format!("cooperative-sticky: member {m} below the minimum quota"))));
        }
    }
    Ok((assignment, transferring))
}

/// `CooperativeStickyAssignor.computePartitionsTransferringOwnership`: partitions assigned to
/// a member that did not own them while another member owned them.
fn transferring_ownership(ordered: &[&Member], assignment: &Assignment) -> HashMap<TopicPartition, String> {
    let mut added = HashMap::new();
    let mut revoked = HashSet::new();
    for m in ordered {
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
}

impl<'a> General<'a> {
    fn new(ordered: &[&Member], counts: &'a BTreeMap<String, i32>, mut current: Assignment) -> General<'a> {
        let mut topic_members: BTreeMap<String, Vec<String>> = counts.keys().map(|t| (t.clone(), Vec::new())).collect();
        let mut member_topics = BTreeMap::new();
        for m in ordered {
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

    fn build(mut self, ordered: &[&Member], max_generation: i32) -> Assignment {
        // Where each partition was in an older generation than the newest, to move it back.
        let mut previous: HashMap<TopicPartition, (String, i32)> = HashMap::new();
        for m in ordered {
            let generation = match m.generation() {
                Some(g) if g < max_generation => g,
                None if max_generation > DEFAULT_GENERATION => DEFAULT_GENERATION,
                _ => continue,
            };
            for tp in &m.owned_partitions {
                if previous.get(tp).map_or(true, |(_, g)| generation > *g) {
                    previous.insert(tp.clone(), (m.member_id.clone(), generation));
                }
            }
        }
        // Owned partitions stay, but for those of topics the member no longer subscribes to.
        let mut revocation_required = false;
        let mut assigned = HashSet::new();
        for (member, tps) in self.current.iter_mut() {
            let subscribed = ordered.iter().find(|m| m.member_id == *member).map(|m| &m.topics);
            tps.retain(|tp| {
                if !self.topic_members.contains_key(&tp.topic) {
                    self.owner.remove(tp);
                    false
                } else if !subscribed.is_some_and(|ts| ts.contains(&tp.topic)) {
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
        let initializing = self.sorted.last().map_or(true, |(n, _)| *n == 0);
        for tp in unassigned.iter() {
            if self.topic_members.get(&tp.topic).map_or(true, Vec::is_empty) {
                continue;
            }
            let Some(member) = self.sorted.iter().map(|(_, m)| m.0.clone()).find(|m| self.subscribes(m, &tp.topic)) else {
                continue;
            };
            self.sorted_remove(&member);
            if let Some(list) = self.current.get_mut(&member) {
                list.push(tp.clone());
            }
            self.owner.insert(tp.clone(), member.clone());
            self.sorted_add(&member);
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
        let first = cooperative_sticky_assign(&[old.clone(), new.clone()], &counts).unwrap();
        // a keeps two, gives up two; b gets nothing this round.
        assert_eq!(first.get("a").map(Vec::len), Some(2));
        assert_eq!(show(&first, "b"), "");
        // The next round, a owns only its two: b gets the other two.
        let a2 = Member { owned_partitions: first["a"].clone(), generation_id: 4, ..old };
        let second = cooperative_sticky_assign(&[a2, Member { generation_id: 4, ..new }], &counts).unwrap();
        assert_eq!(second["a"].len(), 2);
        assert_eq!(second["b"].len(), 2);
        let all: BTreeSet<_> = second.values().flatten().collect();
        assert_eq!(all.len(), 4);
        assert_eq!(show(&second, "a"), show(&first, "a"));
    }

    #[test]
    fn unequal_subscriptions_use_the_general_algorithm() {
        let counts: BTreeMap<String, i32> = [("x".to_string(), 2), ("y".to_string(), 3)].into();
        let out = cooperative_sticky_assign(&[member("m1", &["x"], &[], -1), member("m2", &["x", "y"], &[], -1)], &counts).unwrap();
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
        let out = cooperative_sticky_assign(&[stale, fresh], &counts).unwrap();
        assert_eq!(show(&out, "a"), "t-0");
        assert_eq!(show(&out, "b"), "t-1");
    }
}
