//! Java's `RoundRobinAssignor` (`roundrobin`): every subscribed partition, by topic then
//! partition, dealt to the members in order (static members by group instance id first, then
//! by member id), skipping members not subscribed to the partition's topic.

use std::collections::{BTreeMap, BTreeSet};

use super::{java_cmp, member_info_cmp, Member};
use crate::topic_partition::TopicPartition;

/// Java's `RoundRobinAssignor`. Every member gets an entry.
pub fn round_robin_assign(members: &[Member], partitions_per_topic: &BTreeMap<String, i32>) -> BTreeMap<String, Vec<TopicPartition>> {
    let mut out: BTreeMap<String, Vec<TopicPartition>> = members.iter().map(|m| (m.member_id.clone(), Vec::new())).collect();
    let mut sorted: Vec<&Member> = members.iter().collect();
    sorted.sort_by(|a, b| member_info_cmp(a, b));
    let mut topics: Vec<&str> = members.iter().flat_map(|m| m.topics.iter().map(String::as_str)).collect::<BTreeSet<_>>().into_iter().collect();
    topics.sort_by(|a, b| java_cmp(a, b));
    // Java's CircularIterator: the member to take the next partition.
    let mut next = 0usize;
    for topic in topics {
        let Some(&count) = partitions_per_topic.get(topic) else { continue };
        for p in 0..count {
            // Someone subscribes to every listed topic, so this finds a member.
            let Some(i) = (0..sorted.len()).map(|k| (next + k) % sorted.len()).find(|i| sorted.get(*i).is_some_and(|m| m.topics.iter().any(|t| t == topic)))
            else {
                break;
            };
            if let Some(list) = sorted.get(i).and_then(|m| out.get_mut(&m.member_id)) {
                list.push(TopicPartition::new(topic, p));
            }
            next = (i + 1) % sorted.len();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_deals_partitions_in_member_order_skipping_the_unsubscribed() {
        let m = |id: &str, topics: &[&str]| Member { member_id: id.into(), topics: topics.iter().map(|t| t.to_string()).collect(), ..Default::default() };
        let counts: BTreeMap<String, i32> = [("a".to_string(), 3), ("b".to_string(), 3)].into();
        let out = round_robin_assign(&[m("c2", &["a", "b"]), m("c1", &["a"]), m("c3", &["b"])], &counts);
        let show = |id: &str| out[id].iter().map(ToString::to_string).collect::<Vec<_>>().join(",");
        // a-0 c1, a-1 c2, a-2 c1 (c3 skipped), then b-0 c2, b-1 c3, b-2 c2 (c1 skipped).
        assert_eq!(show("c1"), "a-0,a-2");
        assert_eq!(show("c2"), "a-1,b-0,b-2");
        assert_eq!(show("c3"), "b-1");
    }
}
