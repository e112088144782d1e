//! Java's `RangeAssignor` (`range`): per topic, consecutive ranges of partitions to the
//! members in order (static members by group instance id first, then by member id), the first
//! ones taking one more.

use std::collections::BTreeMap;

use super::Member;
use crate::topic_partition::TopicPartition;

/// Java's `RangeAssignor`.
pub fn range_assign(members: &[Member], partitions_per_topic: &BTreeMap<String, i32>) -> BTreeMap<String, Vec<TopicPartition>> {
    let mut out: BTreeMap<String, Vec<TopicPartition>> = members.iter().map(|m| (m.member_id.clone(), Vec::new())).collect();
    for (topic, &count) in partitions_per_topic {
        // Java's MemberInfo order: static members by instance id first, then by member id.
        let mut subscribed: Vec<&Member> = members.iter().filter(|m| m.topics.iter().any(|t| t == topic)).collect();
        subscribed.sort_by(|a, b| match (&a.group_instance_id, &b.group_instance_id) {
            (Some(x), Some(y)) => x.cmp(y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => a.member_id.cmp(&b.member_id),
        });
        let n = subscribed.len() as i32;
        if n == 0 || count <= 0 {
            continue;
        }
        let (per, extra) = (count / n, count % n);
        for (i, m) in subscribed.iter().enumerate() {
            let i = i as i32;
            let start = per * i + i.min(extra);
            let len = per + i32::from(i < extra);
            if let Some(list) = out.get_mut(&m.member_id) {
                list.extend((start..start + len).map(|p| TopicPartition::new(topic.clone(), p)));
            }
        }
    }
    out
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
        let out = range_assign(&members, &counts);
        let show = |m: &str| out[m].iter().map(ToString::to_string).collect::<Vec<_>>().join(",");
        assert_eq!(show("m1"), "a-0,a-1,a-2,b-0");
        assert_eq!(show("m2"), "a-3,a-4,b-1");
        assert_eq!(show("m3"), "a-5,a-6");
    }

    #[test]
    fn range_orders_static_members_first_by_instance_id() {
        let counts: BTreeMap<String, i32> = [("t".to_string(), 3)].into();
        let members = [member("a", None, &["t"]), member("z", Some("i2"), &["t"]), member("y", Some("i1"), &["t"])];
        let out = range_assign(&members, &counts);
        assert_eq!(out["y"], vec![TopicPartition::new("t", 0)]);
        assert_eq!(out["z"], vec![TopicPartition::new("t", 1)]);
        assert_eq!(out["a"], vec![TopicPartition::new("t", 2)]);
    }
}
