//! The share coordinator's persisted state (KIP-932's `__share_group_state`, Kafka's
//! `ShareCoordinatorShard`): per share group, topic and partition, the state epoch, the
//! leader epoch of the last writer, the share-partition start offset and the state batches of
//! the records in flight, as the brokers' share partitions write and read them.

use std::collections::BTreeMap;

use kwire::{ErrorCode, Uuid};

/// One state batch: offsets `first..=last`, their delivery state and count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StateBatch {
    pub(crate) first: i64,
    pub(crate) last: i64,
    pub(crate) delivery_state: i8,
    pub(crate) delivery_count: i16,
}

/// One share-partition's persisted state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PartitionState {
    pub(crate) state_epoch: i32,
    pub(crate) leader_epoch: i32,
    pub(crate) start_offset: i64,
    pub(crate) delivery_complete_count: i32,
    pub(crate) batches: Vec<StateBatch>,
}

/// Every share-partition's state, by (group, topic id, partition).
#[derive(Debug, Default)]
pub(crate) struct ShareStates {
    pub(crate) by_key: BTreeMap<(String, Uuid, i32), PartitionState>,
}

impl ShareStates {
    /// InitializeShareGroupState: a new state epoch and start offset, no batches. An older
    /// state epoch than the one stored is fenced.
    pub(crate) fn initialize(&mut self, key: (String, Uuid, i32), state_epoch: i32, start_offset: i64) -> Result<(), ErrorCode> {
        if let Some(s) = self.by_key.get(&key) {
            if state_epoch < s.state_epoch {
                return Err(ErrorCode::FENCED_STATE_EPOCH);
            }
        }
        self.by_key.insert(key, PartitionState { state_epoch, leader_epoch: -1, start_offset, delivery_complete_count: 0, batches: Vec::new() });
        Ok(())
    }

    /// Read with a leader epoch: fenced when older than the stored one, else it becomes it.
    pub(crate) fn read(&mut self, key: &(String, Uuid, i32), leader_epoch: i32) -> Result<Option<PartitionState>, ErrorCode> {
        let Some(s) = self.by_key.get_mut(key) else { return Ok(None) };
        if leader_epoch < s.leader_epoch {
            return Err(ErrorCode::FENCED_LEADER_EPOCH);
        }
        s.leader_epoch = s.leader_epoch.max(leader_epoch);
        Ok(Some(s.clone()))
    }

    /// WriteShareGroupState: fenced by an older state or leader epoch; otherwise the batches
    /// merge in (a batch written again replaces the old one) and the start offset moves, the
    /// batches wholly before it dropped.
    pub(crate) fn write(&mut self, key: (String, Uuid, i32), new: PartitionState) -> Result<(), ErrorCode> {
        let Some(s) = self.by_key.get_mut(&key) else {
            self.by_key.insert(key, new);
            return Ok(());
        };
        if new.state_epoch < s.state_epoch {
            return Err(ErrorCode::FENCED_STATE_EPOCH);
        }
        if new.leader_epoch < s.leader_epoch {
            return Err(ErrorCode::FENCED_LEADER_EPOCH);
        }
        s.state_epoch = new.state_epoch;
        s.leader_epoch = new.leader_epoch;
        if new.start_offset >= 0 {
            s.start_offset = new.start_offset;
        }
        if new.delivery_complete_count >= 0 {
            s.delivery_complete_count = new.delivery_complete_count;
        }
        for b in new.batches {
            s.batches.retain(|old| old.last < b.first || old.first > b.last);
            s.batches.push(b);
        }
        let start = s.start_offset;
        s.batches.retain(|b| b.last >= start);
        s.batches.sort_by_key(|b| b.first);
        Ok(())
    }
}
