//! Committed offsets, shared by every kind of group, and the offsets transactions commit (held
//! until the transaction's marker, KIP-98/KIP-447).

use std::collections::BTreeMap;

use kwire::ByteString;

/// An offset as the coordinator keeps it.
#[derive(Debug, Clone)]
pub(crate) struct Committed {
    pub(crate) offset: i64,
    pub(crate) leader_epoch: i32,
    pub(crate) metadata: Option<ByteString>,
}

/// One group's offsets by (topic, partition).
type ByPartition = BTreeMap<(String, i32), Committed>;

/// Committed offsets by group and partition, and those of open transactions.
#[derive(Debug, Default)]
pub(crate) struct Offsets {
    committed: BTreeMap<String, ByPartition>,
    /// Producer id -> group -> offsets, until the transaction's marker.
    pending: BTreeMap<i64, BTreeMap<String, ByPartition>>,
}

impl Offsets {
    pub(crate) fn commit(&mut self, group: &str, topic: &str, partition: i32, c: Committed) {
        self.committed.entry(group.to_owned()).or_default().insert((topic.to_owned(), partition), c);
    }

    /// TxnOffsetCommit: offsets held for `producer_id`'s transaction.
    pub(crate) fn stage(&mut self, producer_id: i64, group: &str, topic: &str, partition: i32, c: Committed) {
        self.pending.entry(producer_id).or_default().entry(group.to_owned()).or_default().insert((topic.to_owned(), partition), c);
    }

    /// The transaction of `producer_id` ended: its offsets for `group` are committed, or dropped.
    pub(crate) fn complete(&mut self, producer_id: i64, group: &str, commit: bool) {
        let Some(by_group) = self.pending.get_mut(&producer_id) else { return };
        if let Some(offsets) = by_group.remove(group) {
            if commit {
                self.committed.entry(group.to_owned()).or_default().extend(offsets);
            }
        }
        if by_group.is_empty() {
            self.pending.remove(&producer_id);
        }
    }

    pub(crate) fn get(&self, group: &str, topic: &str, partition: i32) -> Option<&Committed> {
        self.committed.get(group)?.get(&(topic.to_owned(), partition))
    }

    /// Every committed offset of `group`, by topic.
    pub(crate) fn all(&self, group: &str) -> BTreeMap<String, Vec<(i32, &Committed)>> {
        let mut by_topic: BTreeMap<String, Vec<(i32, &Committed)>> = BTreeMap::new();
        for ((topic, p), c) in self.committed.get(group).into_iter().flatten() {
            by_topic.entry(topic.clone()).or_default().push((*p, c));
        }
        by_topic
    }

    /// Whether `group` has committed offsets (a simple group, with no members, exists by them).
    pub(crate) fn has_group(&self, group: &str) -> bool {
        self.committed.get(group).is_some_and(|o| !o.is_empty())
    }

    /// OffsetDelete: whether there was an offset.
    pub(crate) fn delete(&mut self, group: &str, topic: &str, partition: i32) -> bool {
        self.committed.get_mut(group).is_some_and(|o| o.remove(&(topic.to_owned(), partition)).is_some())
    }

    /// DeleteGroups: every offset of `group` goes, pending transactional ones too.
    pub(crate) fn delete_group(&mut self, group: &str) {
        self.committed.remove(group);
        for by_group in self.pending.values_mut() {
            by_group.remove(group);
        }
        self.pending.retain(|_, g| !g.is_empty());
    }

    /// Whether a group has offsets pending in a transaction for this partition (KIP-447: an
    /// OffsetFetch with require_stable waits).
    pub(crate) fn unstable(&self, group: &str, topic: &str, partition: i32) -> bool {
        self.pending.values().any(|g| g.get(group).is_some_and(|o| o.contains_key(&(topic.to_owned(), partition))))
    }
}
