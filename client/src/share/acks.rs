//! Acknowledgements as ShareFetch and ShareAcknowledge carry them: per partition, batches of
//! contiguous offsets, each with one acknowledge type for the whole batch or one per offset
//! (as Java's `Acknowledgements.getAcknowledgementBatches` builds them).

use std::collections::BTreeMap;

/// How a record is acknowledged (KIP-932; `Renew` is KIP-1222, Kafka 4.2+).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AcknowledgeType {
    /// Processed: the record is done for the group.
    Accept,
    /// Not processed: the record goes back to be delivered again (to this or another
    /// member), its delivery count one higher.
    Release,
    /// Unprocessable: the record is archived and never delivered again.
    Reject,
    /// Still being processed: the acquisition lock is renewed (KIP-1222); the record must
    /// still be acknowledged with one of the others.
    Renew,
}

/// The wire code of an offset in an acquired range that holds no record (a control batch,
/// a compacted offset): acknowledged as a gap, which archives it.
pub(super) const GAP: i8 = 0;

impl AcknowledgeType {
    /// The code in `AcknowledgeTypes`.
    pub(super) fn wire(self) -> i8 {
        match self {
            AcknowledgeType::Accept => 1,
            AcknowledgeType::Release => 2,
            AcknowledgeType::Reject => 3,
            AcknowledgeType::Renew => 4,
        }
    }
}

impl AcknowledgeType {
    /// The type of a wire code; `None` for a gap (and codes this client does not send).
    pub(super) fn from_wire(code: i8) -> Option<AcknowledgeType> {
        Some(match code {
            1 => AcknowledgeType::Accept,
            2 => AcknowledgeType::Release,
            3 => AcknowledgeType::Reject,
            4 => AcknowledgeType::Renew,
            _ => return None,
        })
    }
}

/// The renew code: a request carrying it sets `IsRenewAck`.
pub(super) const RENEW: i8 = 4;

/// One acknowledgement batch: first offset, last offset (inclusive), and the types (one for
/// the whole batch, or one per offset).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct AckBatch {
    pub(super) first: i64,
    pub(super) last: i64,
    pub(super) types: Vec<i8>,
}

/// The batches of one partition's acknowledgements (offset → type): a batch per run of
/// contiguous offsets; a run all of one type carries that type once.
pub(super) fn batches(acks: &BTreeMap<i64, i8>) -> Vec<AckBatch> {
    let mut out: Vec<AckBatch> = Vec::new();
    for (&offset, &ty) in acks {
        match out.last_mut() {
            Some(b) if b.last.checked_add(1) == Some(offset) => {
                b.last = offset;
                b.types.push(ty);
            }
            _ => out.push(AckBatch { first: offset, last: offset, types: vec![ty] }),
        }
    }
    for b in &mut out {
        if let Some(&first) = b.types.first() {
            if b.types.iter().all(|t| *t == first) {
                b.types.truncate(1);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguous_runs_of_one_type_are_one_batch_with_one_type() {
        let acks: BTreeMap<i64, i8> = [(5, 1), (6, 1), (7, 1), (9, 3), (10, 2), (11, 1), (20, 0)].into_iter().collect();
        let b = batches(&acks);
        assert_eq!(
            b,
            vec![
                AckBatch { first: 5, last: 7, types: vec![1] },
                AckBatch { first: 9, last: 11, types: vec![3, 2, 1] },
                AckBatch { first: 20, last: 20, types: vec![GAP] },
            ]
        );
        assert!(batches(&BTreeMap::new()).is_empty());
        // No overflow at the end of the offset space.
        let edge: BTreeMap<i64, i8> = [(i64::MAX - 1, 1), (i64::MAX, 1)].into_iter().collect();
        assert_eq!(batches(&edge), vec![AckBatch { first: i64::MAX - 1, last: i64::MAX, types: vec![1] }]);
    }

    #[test]
    fn wire_codes_are_kip_932s() {
        let codes: Vec<i8> =
            [AcknowledgeType::Accept, AcknowledgeType::Release, AcknowledgeType::Reject, AcknowledgeType::Renew].iter().map(|t| t.wire()).collect();
        assert_eq!(codes, vec![1, 2, 3, RENEW]);
        assert!(codes.iter().all(|c| AcknowledgeType::from_wire(*c).is_some_and(|t| t.wire() == *c)));
        assert_eq!(AcknowledgeType::from_wire(GAP), None);
    }
}
