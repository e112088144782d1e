//! Java's `StickyAssignor` (`sticky`, eager): `AbstractStickyAssignor`'s algorithm (shared with
//! [`cooperative_sticky_assign`](super::cooperative_sticky_assign), without its cooperative
//! adjustment), each member's previous assignment and generation read from its
//! subscription's user data (Java's eager members revoke everything before joining, so their
//! owned_partitions are empty).
//!
//! The user data is Java's `StickyAssignor` schema: an array of (topic: int16-length string,
//! partitions: array of int32), then (v1) the generation as int32; arrays are int32-counted.

use std::collections::BTreeMap;

use kwire::Bytes;

use super::cooperative_sticky::sticky_core;
use super::{Member, PartitionRacks};
use crate::error::Result;
use crate::topic_partition::TopicPartition;

/// `AbstractStickyAssignor.DEFAULT_GENERATION`.
const DEFAULT_GENERATION: i32 = -1;

/// The user data Java's `StickyAssignor` puts in a subscription once it has had an
/// assignment: that assignment, grouped by topic, and its generation (`None`: the v0 schema,
/// without one).
pub fn sticky_user_data(partitions: &[TopicPartition], generation: Option<i32>) -> Bytes {
    let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for tp in partitions {
        by_topic.entry(tp.topic.as_str()).or_default().push(tp.partition);
    }
    let mut out = Vec::new();
    out.extend_from_slice(&(by_topic.len() as i32).to_be_bytes());
    for (topic, ps) in by_topic {
        let name = topic.as_bytes();
        out.extend_from_slice(&(name.len().min(i16::MAX as usize) as i16).to_be_bytes());
        out.extend_from_slice(name.get(..name.len().min(i16::MAX as usize)).unwrap_or_default());
        out.extend_from_slice(&(ps.len() as i32).to_be_bytes());
        for p in ps {
            out.extend_from_slice(&p.to_be_bytes());
        }
    }
    if let Some(g) = generation {
        out.extend_from_slice(&g.to_be_bytes());
    }
    Bytes::from(out)
}

/// A reader of Java's `Schema` types that fails as Java's does (short input, negative sizes).
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let (head, rest) = (self.0.get(..n)?, self.0.get(n..)?);
        self.0 = rest;
        Some(head)
    }

    fn int32(&mut self) -> Option<i32> {
        let b = self.take(4)?;
        Some(i32::from_be_bytes([*b.first()?, *b.get(1)?, *b.get(2)?, *b.get(3)?]))
    }

    fn int16(&mut self) -> Option<i16> {
        let b = self.take(2)?;
        Some(i16::from_be_bytes([*b.first()?, *b.get(1)?]))
    }

    /// An array's count: negative, or more than the bytes left, is an error.
    fn count(&mut self) -> Option<usize> {
        let n = usize::try_from(self.int32()?).ok()?;
        (n <= self.0.len()).then_some(n)
    }

    fn string(&mut self) -> Option<String> {
        let n = usize::try_from(self.int16()?).ok()?;
        Some(String::from_utf8_lossy(self.take(n)?).into_owned())
    }

    /// The v0 part: the previous assignment.
    fn assignment(&mut self) -> Option<Vec<TopicPartition>> {
        let mut out = Vec::new();
        for _ in 0..self.count()? {
            let topic = self.string()?;
            for _ in 0..self.count()? {
                out.push(TopicPartition::new(topic.clone(), self.int32()?));
            }
        }
        Some(out)
    }
}

/// `StickyAssignor.memberData`: the previous assignment and generation in the user data (none
/// without user data; the v1 schema, else v0 without a generation, else nothing and the
/// default generation).
pub(super) fn sticky_member_data(user_data: Option<&Bytes>) -> (Vec<TopicPartition>, Option<i32>) {
    let Some(data) = user_data.filter(|d| !d.is_empty()) else {
        return (Vec::new(), None);
    };
    let mut v1 = Reader(data);
    if let Some(a) = v1.assignment() {
        if let Some(g) = v1.int32() {
            return (a, Some(g));
        }
    }
    match Reader(data).assignment() {
        Some(a) => (a, None),
        None => (Vec::new(), Some(DEFAULT_GENERATION)),
    }
}

/// Java's `StickyAssignor.assign` (eager): `members` in JoinGroup order with their previous
/// assignments in [`sticky_user_data`], the partition count of each topic, the racks of the
/// partitions' replicas (for rack-aware assignment). Every member gets an entry.
pub fn sticky_assign(
    members: &[Member],
    partitions_per_topic: &BTreeMap<String, i32>,
    racks: &PartitionRacks,
) -> Result<BTreeMap<String, Vec<TopicPartition>>> {
    let (assignment, _, _) = sticky_core(members, partitions_per_topic, racks, "sticky", |m| sticky_member_data(m.user_data.as_ref()))?;
    Ok(assignment)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_data_round_trips_in_both_schemas() {
        let tps = vec![TopicPartition::new("b", 2), TopicPartition::new("a", 0), TopicPartition::new("b", 1)];
        let (got, g) = sticky_member_data(Some(&sticky_user_data(&tps, Some(7))));
        assert_eq!(g, Some(7));
        assert_eq!(got, vec![TopicPartition::new("a", 0), TopicPartition::new("b", 2), TopicPartition::new("b", 1)]);
        let (got, g) = sticky_member_data(Some(&sticky_user_data(&tps, None)));
        assert_eq!((got.len(), g), (3, None));
        assert_eq!(sticky_member_data(None), (Vec::new(), None));
        assert_eq!(sticky_member_data(Some(&Bytes::from_static(&[0, 0, 0, 9]))), (Vec::new(), Some(-1)));
    }

    #[test]
    fn a_returning_member_keeps_its_partitions() {
        let counts: BTreeMap<String, i32> = [("t".to_string(), 4)].into();
        let m = |id: &str, owned: &[i32], g: i32| Member {
            member_id: id.into(),
            topics: vec!["t".into()],
            user_data: (!owned.is_empty()).then(|| sticky_user_data(&owned.iter().map(|p| TopicPartition::new("t", *p)).collect::<Vec<_>>(), Some(g))),
            ..Default::default()
        };
        let out = sticky_assign(&[m("a", &[1, 3], 5), m("b", &[0, 2], 5), m("c", &[], -1)], &counts, &PartitionRacks::new()).unwrap();
        // Eager: c gets one of them at once; a and b keep the others.
        assert_eq!(out.values().map(Vec::len).sum::<usize>(), 4);
        assert_eq!(out["c"].len(), 1);
        assert!(out["a"].iter().all(|tp| [1, 3].contains(&tp.partition)));
        assert!(out["b"].iter().all(|tp| [0, 2].contains(&tp.partition)));
    }
}
