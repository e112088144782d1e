//! The coordinator's assignors: KIP-848's `uniform` (sticky and balanced, Kafka's
//! `UniformAssignor`) and `range` (contiguous ranges per topic, Kafka's `RangeAssignor`), and
//! the share groups' `simple` (Kafka's `SimpleAssignor`: partitions spread over the members,
//! shared by several when there are more members than partitions).

use std::collections::{BTreeMap, BTreeSet};

use kwire::Uuid;

/// Partitions by topic id.
pub(crate) type Assignment = BTreeMap<Uuid, BTreeSet<i32>>;

/// A member as an assignor sees it.
#[derive(Debug, Clone)]
pub(crate) struct MemberSpec {
    pub(crate) id: String,
    pub(crate) instance_id: Option<String>,
    pub(crate) subscribed: BTreeSet<Uuid>,
    /// Its current target assignment (stickiness).
    pub(crate) current: Assignment,
}

/// The assignment of every member; `partitions` gives each existing topic's partition count.
pub(crate) fn assign(name: &str, members: &[MemberSpec], partitions: &BTreeMap<Uuid, i32>) -> BTreeMap<String, Assignment> {
    match name {
        "range" => range(members, partitions),
        "simple" => simple(members, partitions),
        _ => uniform(members, partitions),
    }
}

fn count(a: &Assignment) -> usize {
    a.values().map(BTreeSet::len).sum()
}

/// Kafka's uniform assignor. Every member subscribed to the same topics (homogeneous): each
/// keeps its partitions up to its quota (`partitions / members`, one more for the first
/// `partitions % members` that need it), the rest go to the members below quota. Otherwise
/// (heterogeneous): each keeps the partitions of topics it still subscribes to, the unassigned
/// ones go to the least loaded subscriber, then partitions move from a member to a less loaded
/// subscriber until no subscriber of a topic has two fewer than its owner.
pub(crate) fn uniform(members: &[MemberSpec], partitions: &BTreeMap<Uuid, i32>) -> BTreeMap<String, Assignment> {
    let mut out: BTreeMap<String, Assignment> = members.iter().map(|m| (m.id.clone(), Assignment::new())).collect();
    let Some(first) = members.first() else { return out };
    let homogeneous = members.iter().all(|m| m.subscribed == first.subscribed);
    // Keep only partitions that exist, of subscribed topics, owned once.
    let mut taken: BTreeSet<(Uuid, i32)> = BTreeSet::new();
    let mut kept: BTreeMap<String, Vec<(Uuid, i32)>> = BTreeMap::new();
    for m in members {
        let list = kept.entry(m.id.clone()).or_default();
        for (topic, ps) in &m.current {
            let n = partitions.get(topic).copied().unwrap_or(0);
            if !m.subscribed.contains(topic) {
                continue;
            }
            for p in ps {
                if *p < n && taken.insert((*topic, *p)) {
                    list.push((*topic, *p));
                }
            }
        }
    }
    let all: Vec<(Uuid, i32)> =
        partitions.iter().filter(|(t, _)| members.iter().any(|m| m.subscribed.contains(t))).flat_map(|(t, n)| (0..*n).map(move |p| (*t, p))).collect();
    if homogeneous {
        let total = all.len();
        let n = members.len();
        let (min_quota, mut extra) = (total / n, total % n);
        let mut unassigned: Vec<(Uuid, i32)> = all.iter().filter(|tp| !taken.contains(tp)).copied().collect();
        let mut unfilled: Vec<(String, usize)> = Vec::new();
        for (index, m) in members.iter().enumerate() {
            let mut quota = min_quota;
            let mut has_extra = false;
            if extra > 0 {
                quota += 1;
                has_extra = true;
            }
            let list = kept.remove(&m.id).unwrap_or_default();
            let assigned = out.entry(m.id.clone()).or_default();
            for (topic, p) in list {
                if quota > 0 {
                    quota -= 1;
                    assigned.entry(topic).or_default().insert(p);
                } else {
                    unassigned.push((topic, p));
                }
            }
            // Give up the extra partition for a later member, unless this one must take it.
            if quota > 0 && has_extra && n - index > extra {
                quota -= 1;
                has_extra = false;
            }
            if quota > 0 {
                unfilled.push((m.id.clone(), quota));
            }
            if has_extra {
                extra -= 1;
            }
        }
        let mut next = unassigned.into_iter();
        for (id, quota) in unfilled {
            let assigned = out.entry(id).or_default();
            for (topic, p) in next.by_ref().take(quota) {
                assigned.entry(topic).or_default().insert(p);
            }
        }
        return out;
    }
    for (id, list) in kept {
        let assigned = out.entry(id).or_default();
        for (topic, p) in list {
            assigned.entry(topic).or_default().insert(p);
        }
    }
    let subscribers = |topic: &Uuid| -> Vec<&str> { members.iter().filter(|m| m.subscribed.contains(topic)).map(|m| m.id.as_str()).collect() };
    // Topics with the fewest subscribers first: they have the fewest choices.
    let mut unassigned: Vec<(Uuid, i32)> = all.iter().filter(|tp| !taken.contains(tp)).copied().collect();
    unassigned.sort_by_key(|(t, p)| (subscribers(t).len(), *t, *p));
    for (topic, p) in unassigned {
        let least = subscribers(&topic).into_iter().min_by_key(|id| (out.get(*id).map_or(0, count), id.to_string()));
        if let Some(id) = least {
            out.entry(id.to_owned()).or_default().entry(topic).or_default().insert(p);
        }
    }
    // Balance: move a partition from an owner to a subscriber with at least two fewer.
    loop {
        let mut moved = false;
        for (topic, n) in partitions {
            for p in 0..*n {
                let Some(owner) = out.iter().find(|(_, a)| a.get(topic).is_some_and(|s| s.contains(&p))).map(|(id, _)| id.clone()) else { continue };
                let owner_count = out.get(&owner).map_or(0, count);
                let target = subscribers(topic)
                    .into_iter()
                    .filter(|id| out.get(*id).map_or(0, count) + 1 < owner_count)
                    .min_by_key(|id| (out.get(*id).map_or(0, count), id.to_string()));
                if let Some(target) = target {
                    if let Some(set) = out.get_mut(&owner).and_then(|a| a.get_mut(topic)) {
                        set.remove(&p);
                    }
                    out.entry(target.to_owned()).or_default().entry(*topic).or_default().insert(p);
                    moved = true;
                }
            }
        }
        if !moved {
            break;
        }
    }
    for a in out.values_mut() {
        a.retain(|_, s| !s.is_empty());
    }
    out
}

/// Kafka's range assignor: members ordered by instance id (static members first), then member
/// id; per topic, its subscribers in that order each get a contiguous range, the first
/// `partitions % subscribers` one partition more.
pub(crate) fn range(members: &[MemberSpec], partitions: &BTreeMap<Uuid, i32>) -> BTreeMap<String, Assignment> {
    let mut sorted: Vec<&MemberSpec> = members.iter().collect();
    sorted.sort_by(|a, b| match (&a.instance_id, &b.instance_id) {
        (Some(x), Some(y)) => x.cmp(y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.id.cmp(&b.id),
    });
    let mut out: BTreeMap<String, Assignment> = members.iter().map(|m| (m.id.clone(), Assignment::new())).collect();
    for (topic, n) in partitions {
        let subs: Vec<&&MemberSpec> = sorted.iter().filter(|m| m.subscribed.contains(topic)).collect();
        if subs.is_empty() {
            continue;
        }
        let (quota, mut extra) = (*n as usize / subs.len(), *n as usize % subs.len());
        let mut start = 0usize;
        for m in subs {
            let mut q = quota;
            if extra > 0 {
                q += 1;
                extra -= 1;
            }
            let end = (start + q).min(*n as usize);
            if start < end {
                out.entry(m.id.clone()).or_default().insert(*topic, (start as i32..end as i32).collect());
            }
            start = end;
        }
    }
    out
}

/// The share groups' assignor: with at least as many partitions as members, the uniform
/// assignment; with more members, each partition shared by `ceil(members / partitions)` of
/// them, round robin.
pub(crate) fn simple(members: &[MemberSpec], partitions: &BTreeMap<Uuid, i32>) -> BTreeMap<String, Assignment> {
    let mut out: BTreeMap<String, Assignment> = members.iter().map(|m| (m.id.clone(), Assignment::new())).collect();
    let Some(first) = members.first() else { return out };
    let all: Vec<(Uuid, i32)> = partitions.iter().filter(|(t, _)| first.subscribed.contains(t)).flat_map(|(t, n)| (0..*n).map(move |p| (*t, p))).collect();
    if all.is_empty() {
        return out;
    }
    if members.len() <= all.len() || members.iter().any(|m| m.subscribed != first.subscribed) {
        return uniform(members, partitions);
    }
    for (i, m) in members.iter().enumerate() {
        let (topic, p) = all[i % all.len()];
        out.entry(m.id.clone()).or_default().entry(topic).or_default().insert(p);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(n: u8) -> Uuid {
        Uuid([n; 16])
    }

    fn member(id: &str, topics: &[Uuid], current: &Assignment) -> MemberSpec {
        MemberSpec { id: id.into(), instance_id: None, subscribed: topics.iter().copied().collect(), current: current.clone() }
    }

    fn counts(a: &BTreeMap<String, Assignment>) -> Vec<usize> {
        a.values().map(count).collect()
    }

    /// Every partition of `partitions` exactly once.
    fn complete(a: &BTreeMap<String, Assignment>, partitions: &BTreeMap<Uuid, i32>) {
        let mut seen = BTreeSet::new();
        for assignment in a.values() {
            for (topic, ps) in assignment {
                for p in ps {
                    assert!(seen.insert((*topic, *p)), "{topic:?}-{p} twice");
                }
            }
        }
        let all: BTreeSet<(Uuid, i32)> = partitions.iter().flat_map(|(t, n)| (0..*n).map(move |p| (*t, p))).collect();
        assert_eq!(seen, all);
    }

    #[test]
    fn uniform_is_balanced_and_sticky_across_reassignments() {
        let parts: BTreeMap<Uuid, i32> = [(t(1), 6), (t(2), 1)].into_iter().collect();
        let none = Assignment::new();
        let three = vec![member("a", &[t(1), t(2)], &none), member("b", &[t(1), t(2)], &none), member("c", &[t(1), t(2)], &none)];
        let first = uniform(&three, &parts);
        complete(&first, &parts);
        let mut c = counts(&first);
        c.sort();
        assert_eq!(c, vec![2, 2, 3]);
        // c leaves: a and b keep everything they had and share c's partitions.
        let two = vec![member("a", &[t(1), t(2)], &first["a"]), member("b", &[t(1), t(2)], &first["b"])];
        let second = uniform(&two, &parts);
        complete(&second, &parts);
        for id in ["a", "b"] {
            for (topic, ps) in &first[id] {
                assert!(ps.is_subset(&second[id][topic]), "{id} lost a partition it had");
            }
        }
        let mut c = counts(&second);
        c.sort();
        assert_eq!(c, vec![3, 4]);
        // d joins: it takes partitions from the others, who lose only what they must.
        let three = vec![member("a", &[t(1), t(2)], &second["a"]), member("b", &[t(1), t(2)], &second["b"]), member("d", &[t(1), t(2)], &none)];
        let third = uniform(&three, &parts);
        complete(&third, &parts);
        let moved: usize = ["a", "b"].iter().map(|id| count(&second[*id]) - count(&third[*id])).sum();
        assert_eq!((count(&third["d"]), moved), (2, 2));
    }

    #[test]
    fn uniform_balances_heterogeneous_subscriptions_within_each_topic() {
        let parts: BTreeMap<Uuid, i32> = [(t(1), 4), (t(2), 4)].into_iter().collect();
        let none = Assignment::new();
        let members = vec![member("a", &[t(1)], &none), member("b", &[t(1), t(2)], &none), member("c", &[t(2)], &none)];
        let out = uniform(&members, &parts);
        complete(&out, &parts);
        assert!(out["a"].keys().all(|k| *k == t(1)) && out["c"].keys().all(|k| *k == t(2)));
        assert_eq!(counts(&out), vec![2, 3, 3]);
    }

    #[test]
    fn range_gives_contiguous_ranges_per_topic() {
        let parts: BTreeMap<Uuid, i32> = [(t(1), 5), (t(2), 2)].into_iter().collect();
        let none = Assignment::new();
        let mut members = vec![member("m2", &[t(1), t(2)], &none), member("m1", &[t(1), t(2)], &none), member("m3", &[t(1)], &none)];
        members[0].instance_id = Some("z".into());
        let out = range(&members, &parts);
        complete(&out, &parts);
        // The static member first, then m1, m3 by member id.
        assert_eq!(out["m2"][&t(1)], [0, 1].into_iter().collect());
        assert_eq!(out["m1"][&t(1)], [2, 3].into_iter().collect());
        assert_eq!(out["m3"][&t(1)], [4].into_iter().collect());
        assert_eq!(out["m2"][&t(2)], [0].into_iter().collect());
        assert_eq!(out["m1"][&t(2)], [1].into_iter().collect());
        assert!(!out["m3"].contains_key(&t(2)));
    }

    #[test]
    fn simple_shares_partitions_when_members_outnumber_them() {
        let parts: BTreeMap<Uuid, i32> = [(t(1), 2)].into_iter().collect();
        let none = Assignment::new();
        let members: Vec<MemberSpec> = ["a", "b", "c", "d"].iter().map(|id| member(id, &[t(1)], &none)).collect();
        let out = simple(&members, &parts);
        assert!(counts(&out).iter().all(|c| *c == 1));
        let sharing: Vec<usize> = (0..2).map(|p| out.values().filter(|a| a[&t(1)].contains(&p)).count()).collect();
        assert_eq!(sharing, vec![2, 2]);
    }
}
