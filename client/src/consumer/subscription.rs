//! The assigned partitions and their positions (Java's `SubscriptionState`).

use std::collections::{BTreeMap, BTreeSet};

use super::OffsetReset;
use crate::error::{ConsumerError, Error, Result};
use crate::topic_partition::TopicPartition;

/// One assigned partition's position and how it is known.
#[derive(Debug, Clone)]
pub(super) struct PartState {
    /// The next offset to return; `None` until it is known (committed or reset).
    pub(super) position: Option<i64>,
    /// The leader epoch of the last record returned (or of the committed offset).
    pub(super) epoch: Option<i32>,
    /// The leader epoch the position was last validated under.
    pub(super) validated_epoch: i32,
    pub(super) needs_validation: bool,
    /// A reset asked for (seek to beginning / end, out of range), instead of the committed offset.
    pub(super) reset: Option<OffsetReset>,
    /// Paused by the caller: not fetched, nothing returned, until resumed.
    pub(super) paused: bool,
    /// The end of the partition as the last fetch response gave it: the high watermark, or
    /// the last stable offset under read_committed (Java's `currentLag` reads it).
    pub(super) end: Option<i64>,
}

impl PartState {
    fn new() -> PartState {
        PartState { position: None, epoch: None, validated_epoch: -1, needs_validation: false, reset: None, paused: false, end: None }
    }
}

/// The partitions assigned (by hand or by the group), in order.
#[derive(Debug, Default)]
pub(super) struct Subscription {
    pub(super) partitions: BTreeMap<TopicPartition, PartState>,
}

impl Subscription {
    /// Changes the assignment to `wanted`: kept partitions keep their positions.
    pub(super) fn set(&mut self, wanted: &BTreeSet<TopicPartition>) {
        self.partitions.retain(|tp, _| wanted.contains(tp));
        for tp in wanted {
            self.partitions.entry(tp.clone()).or_insert_with(PartState::new);
        }
    }

    /// Sets the position of an assigned partition.
    pub(super) fn seek(&mut self, tp: &TopicPartition, offset: i64) -> Result<()> {
        let st = self.partitions.get_mut(tp).ok_or_else(|| Error::Consumer(ConsumerError::NotAssigned(tp.clone())))?;
        st.position = Some(offset);
        st.epoch = None;
        st.reset = None;
        st.needs_validation = false;
        Ok(())
    }

    /// Asks for `reset` of these partitions (all assigned ones when empty) at the next poll;
    /// returns the partitions reset.
    pub(super) fn reset(&mut self, tps: &[TopicPartition], reset: OffsetReset) -> Vec<TopicPartition> {
        let mut out = Vec::new();
        for (tp, st) in self.partitions.iter_mut().filter(|(tp, _)| tps.is_empty() || tps.contains(tp)) {
            st.position = None;
            st.epoch = None;
            st.reset = Some(reset);
            out.push(tp.clone());
        }
        out
    }

    /// Pauses or resumes these partitions (Java's `pause`/`resume`); all must be assigned.
    pub(super) fn set_paused(&mut self, tps: &[TopicPartition], paused: bool) -> Result<()> {
        if let Some(tp) = tps.iter().find(|tp| !self.partitions.contains_key(*tp)) {
            return Err(Error::Consumer(ConsumerError::NotAssigned(tp.clone())));
        }
        for tp in tps {
            if let Some(st) = self.partitions.get_mut(tp) {
                st.paused = paused;
            }
        }
        Ok(())
    }

    /// Whether a partition is assigned, not paused, and has a position to fetch from.
    pub(super) fn fetchable(st: &PartState) -> bool {
        st.position.is_some() && !st.needs_validation && !st.paused
    }

    /// How far a partition's position is behind its end, as of the last fetch response.
    pub(super) fn lag(st: &PartState) -> Option<i64> {
        Some((st.end? - st.position?).max(0))
    }

    /// The assigned partitions.
    pub(super) fn assigned(&self) -> BTreeSet<TopicPartition> {
        self.partitions.keys().cloned().collect()
    }
}
