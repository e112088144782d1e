//! The transaction coordinator (Kafka's `TransactionCoordinator` and its state machine): producer
//! ids for transactional ids, the partitions and groups of each transaction, commit and abort
//! with their markers, epoch fencing, transaction timeouts; transactions V1 and V2 (KIP-890:
//! the epoch bumped at every end, partitions added by their leaders).

use std::collections::{BTreeMap, BTreeSet};

use kwire::ErrorCode;

/// A transaction's state (Kafka's `TransactionState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TxnState {
    Empty,
    Ongoing,
    PrepareCommit,
    PrepareAbort,
    CompleteCommit,
    CompleteAbort,
}

impl TxnState {
    /// Kafka's name, as DescribeTransactions and ListTransactions give it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            TxnState::Empty => "Empty",
            TxnState::Ongoing => "Ongoing",
            TxnState::PrepareCommit => "PrepareCommit",
            TxnState::PrepareAbort => "PrepareAbort",
            TxnState::CompleteCommit => "CompleteCommit",
            TxnState::CompleteAbort => "CompleteAbort",
        }
    }
}

/// One transactional id's metadata.
#[derive(Debug, Clone)]
pub(crate) struct TxnMeta {
    pub(crate) producer_id: i64,
    pub(crate) epoch: i16,
    /// The epoch before the last bump, for a retried EndTxn under V2 and KIP-360 recovery.
    pub(crate) last_epoch: i16,
    pub(crate) timeout_ms: i32,
    pub(crate) state: TxnState,
    pub(crate) partitions: BTreeSet<(String, i32)>,
    pub(crate) groups: BTreeSet<String>,
    /// When the transaction began (its first partition), ms.
    pub(crate) started_ms: i64,
    pub(crate) updated_ms: i64,
    /// The transaction runs transactions V2 (its producer's EndTxn is v5+ or its Produce v12+).
    pub(crate) v2: bool,
    /// Markers not written yet (a partition without a leader, or markers held by a test): the
    /// state stays PrepareCommit or PrepareAbort until they are.
    pub(crate) pending_markers: BTreeSet<(String, i32)>,
    /// The epoch the pending markers are written with.
    pub(crate) marker_epoch: i16,
}

/// Every transactional id's metadata, and the transactions' partitions for verification.
#[derive(Debug, Default)]
pub(crate) struct Transactions {
    pub(crate) by_id: BTreeMap<String, TxnMeta>,
    /// Markers are held (not written) while set: a test's "hold transaction markers".
    pub(crate) hold_markers: bool,
}

/// Checks a request's producer id and epoch against the metadata, as Kafka's coordinator does
/// for AddPartitionsToTxn, AddOffsetsToTxn and EndTxn (V1).
pub(crate) fn check_producer(meta: Option<&TxnMeta>, producer_id: i64, epoch: i16) -> Result<(), ErrorCode> {
    let Some(meta) = meta else { return Err(ErrorCode::INVALID_PRODUCER_ID_MAPPING) };
    if meta.producer_id != producer_id {
        return Err(ErrorCode::INVALID_PRODUCER_ID_MAPPING);
    }
    if meta.epoch != epoch {
        return Err(ErrorCode::PRODUCER_FENCED);
    }
    Ok(())
}

impl Transactions {
    /// The producer id of an open transaction of `producer_id` with `epoch` (for a leader
    /// verifying a transactional batch): whether its transaction includes the partition.
    pub(crate) fn includes(&self, producer_id: i64, epoch: i16, topic: &str, partition: i32) -> Result<(), ErrorCode> {
        let meta = self.by_id.values().find(|m| m.producer_id == producer_id);
        match meta {
            Some(m) if m.epoch != epoch => Err(ErrorCode::INVALID_PRODUCER_EPOCH),
            Some(m) if m.state == TxnState::Ongoing && m.partitions.contains(&(topic.to_owned(), partition)) => Ok(()),
            _ => Err(ErrorCode::INVALID_TXN_STATE),
        }
    }

    /// Transactions V2: a leader adds the partition of a transactional batch (Produce v12+).
    pub(crate) fn add_by_leader(&mut self, producer_id: i64, epoch: i16, topic: &str, partition: i32, now_ms: i64) -> Result<(), ErrorCode> {
        let Some(meta) = self.by_id.values_mut().find(|m| m.producer_id == producer_id) else {
            return Err(ErrorCode::INVALID_PRODUCER_ID_MAPPING);
        };
        if meta.epoch != epoch {
            return Err(ErrorCode::INVALID_PRODUCER_EPOCH);
        }
        match meta.state {
            TxnState::PrepareCommit | TxnState::PrepareAbort => return Err(ErrorCode::CONCURRENT_TRANSACTIONS),
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort => {
                meta.state = TxnState::Ongoing;
                meta.started_ms = now_ms;
                meta.partitions.clear();
                meta.groups.clear();
            }
            TxnState::Ongoing => {}
        }
        meta.v2 = true;
        meta.updated_ms = now_ms;
        meta.partitions.insert((topic.to_owned(), partition));
        Ok(())
    }

    /// Transactions V2: the group coordinator adds a group whose offsets a transaction commits
    /// (TxnOffsetCommit v5+).
    pub(crate) fn add_group_by_coordinator(&mut self, id: &str, producer_id: i64, epoch: i16, group: &str, now_ms: i64) -> Result<(), ErrorCode> {
        check_producer(self.by_id.get(id), producer_id, epoch)?;
        let Some(meta) = self.by_id.get_mut(id) else { return Err(ErrorCode::INVALID_PRODUCER_ID_MAPPING) };
        meta.v2 = true;
        self.add(id, producer_id, epoch, &[], Some(group), now_ms)
    }

    /// Adds partitions (or, for AddOffsetsToTxn, a group) to `id`'s transaction.
    pub(crate) fn add(
        &mut self,
        id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: &[(String, i32)],
        group: Option<&str>,
        now_ms: i64,
    ) -> Result<(), ErrorCode> {
        check_producer(self.by_id.get(id), producer_id, epoch)?;
        let Some(meta) = self.by_id.get_mut(id) else { return Err(ErrorCode::INVALID_PRODUCER_ID_MAPPING) };
        match meta.state {
            TxnState::PrepareCommit | TxnState::PrepareAbort => return Err(ErrorCode::CONCURRENT_TRANSACTIONS),
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort => {
                meta.state = TxnState::Ongoing;
                meta.started_ms = now_ms;
                meta.partitions.clear();
                meta.groups.clear();
            }
            TxnState::Ongoing => {}
        }
        meta.updated_ms = now_ms;
        meta.partitions.extend(partitions.iter().cloned());
        if let Some(g) = group {
            meta.groups.insert(g.to_owned());
        }
        Ok(())
    }

    /// Transactions whose timeout has passed: aborted by the coordinator with a bumped epoch
    /// (fencing the producer). Returns the ids to end.
    pub(crate) fn timed_out(&self, now_ms: i64) -> Vec<String> {
        self.by_id.iter().filter(|(_, m)| m.state == TxnState::Ongoing && now_ms - m.started_ms > i64::from(m.timeout_ms)).map(|(id, _)| id.clone()).collect()
    }
}
