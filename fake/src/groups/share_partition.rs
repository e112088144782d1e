//! Share partitions and share sessions (Kafka's `SharePartition` and `ShareSessionCache`):
//! per share group and partition, the records in flight from the share-partition start offset
//! on, each available, acquired by one member under an acquisition lock, acknowledged, or
//! archived, with its delivery count. A record released, or whose lock ran out, is available
//! again, unless it reached the delivery count limit: then it is archived. The start offset
//! moves past the records done with. A share session (per broker, group and member) holds the
//! partitions a member fetches, at an epoch each request moves on.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use kwire::runtime::records::{Batch, Batches};
use kwire::{Bytes, ErrorCode, Uuid};
use tokio::time::Instant;

use crate::log::PartitionLog;

/// A record's state in its share partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RecordState {
    Available,
    Acquired { member: String, until: Instant },
    Acknowledged,
    Archived,
}

#[derive(Debug, Clone)]
pub(crate) struct InFlight {
    pub(crate) state: RecordState,
    pub(crate) delivery_count: i16,
}

/// The acknowledge types of KIP-932 (and KIP-1222's renew).
pub(crate) const GAP: i8 = 0;
pub(crate) const ACCEPT: i8 = 1;
pub(crate) const RELEASE: i8 = 2;
pub(crate) const REJECT: i8 = 3;
pub(crate) const RENEW: i8 = 4;

/// What a share partition obeys, from its group's configs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rules {
    pub(crate) lock: Duration,
    pub(crate) delivery_limit: i16,
    pub(crate) max_in_flight: i64,
    pub(crate) read_committed: bool,
}

/// One share group's view of one partition.
#[derive(Debug)]
pub(crate) struct SharePartition {
    /// The share-partition start offset: every record before it is done with.
    pub(crate) start: i64,
    /// The first offset never fetched.
    pub(crate) end: i64,
    /// The records from `start` to `end`.
    pub(crate) records: BTreeMap<i64, InFlight>,
    pub(crate) rules: Rules,
}

/// Acquired records: ranges (first, last, delivery count) and the batches holding them.
#[derive(Debug, Default)]
pub(crate) struct Acquired {
    pub(crate) ranges: Vec<(i64, i64, i16)>,
    pub(crate) batches: Vec<Bytes>,
}

impl SharePartition {
    /// A share partition starting at `start` (`share.auto.offset.reset`: the log end for
    /// latest, the log start for earliest).
    pub(crate) fn new(start: i64, rules: Rules) -> SharePartition {
        SharePartition { start, end: start, records: BTreeMap::new(), rules }
    }

    /// A released or timed-out record goes back, or is archived at the delivery limit.
    fn back(&self, r: &mut InFlight) {
        r.state = if r.delivery_count >= self.rules.delivery_limit { RecordState::Archived } else { RecordState::Available };
    }

    /// Moves the start offset past the records done with.
    fn advance(&mut self) {
        while let Some(r) = self.records.get(&self.start) {
            if !matches!(r.state, RecordState::Acknowledged | RecordState::Archived) {
                break;
            }
            self.records.remove(&self.start);
            self.start += 1;
        }
        if self.records.is_empty() && self.end < self.start {
            self.end = self.start;
        }
    }

    /// Acquires up to `max_records` records for `member` (whole batches of new records, as
    /// Kafka aligns acquisition to batch boundaries): first those available again, then new ones
    /// from the log, up to the high watermark (the last stable offset when read committed; the
    /// records of aborted transactions and the control batches are archived, never delivered).
    pub(crate) fn acquire(&mut self, member: &str, log: &PartitionLog, max_records: usize, now: Instant) -> Acquired {
        if self.start < log.log_start() {
            // The log moved past records not delivered yet: they are gone.
            self.records.retain(|o, _| *o >= log.log_start());
            self.start = log.log_start();
            self.end = self.end.max(self.start);
        }
        let until = now + self.rules.lock;
        let mut taken: BTreeMap<i64, i16> = BTreeMap::new();
        for (offset, r) in self.records.iter_mut() {
            if taken.len() >= max_records {
                break;
            }
            if r.state == RecordState::Available {
                r.delivery_count = r.delivery_count.saturating_add(1);
                r.state = RecordState::Acquired { member: member.to_owned(), until };
                taken.insert(*offset, r.delivery_count);
            }
        }
        let upper = if self.rules.read_committed { log.last_stable() } else { log.high_watermark() };
        let aborted = log.aborted();
        for stored in log.batches() {
            if taken.len() >= max_records || self.end - self.start >= self.rules.max_in_flight {
                break;
            }
            if stored.last_offset < self.end || stored.base_offset >= upper {
                continue;
            }
            let header = Batches::new(stored.bytes.clone()).next().and_then(Result::ok);
            let (control, txn_pid) = match &header {
                Some(Batch::V2(b)) => (b.is_control(), b.is_transactional().then(|| b.producer_id())),
                _ => (false, None),
            };
            for offset in self.end.max(stored.base_offset)..=stored.last_offset {
                let aborted = self.rules.read_committed
                    && txn_pid.is_some_and(|pid| aborted.iter().any(|a| a.producer_id == pid && (a.first_offset..=a.last_offset).contains(&offset)));
                if control || aborted {
                    self.records.insert(offset, InFlight { state: RecordState::Archived, delivery_count: 0 });
                } else {
                    self.records.insert(offset, InFlight { state: RecordState::Acquired { member: member.to_owned(), until }, delivery_count: 1 });
                    taken.insert(offset, 1);
                }
            }
            self.end = stored.last_offset + 1;
        }
        self.advance();
        let mut out = Acquired::default();
        for (offset, count) in &taken {
            match out.ranges.last_mut() {
                Some((_, last, c)) if *last + 1 == *offset && *c == *count => *last = *offset,
                _ => out.ranges.push((*offset, *offset, *count)),
            }
        }
        if let (Some(first), Some(last)) = (taken.keys().next(), taken.keys().next_back()) {
            out.batches = log
                .batches()
                .iter()
                .filter(|b| b.last_offset >= *first && b.base_offset <= *last)
                .filter(|b| taken.range(b.base_offset..=b.last_offset).next().is_some())
                .map(|b| b.bytes.clone())
                .collect();
        }
        out
    }

    /// Acknowledges batches (first, last, types: one for all or one per offset) for `member`:
    /// every offset must be acquired by it, else nothing is done (INVALID_RECORD_STATE).
    pub(crate) fn acknowledge(&mut self, member: &str, batches: &[(i64, i64, Vec<i8>)], now: Instant) -> Result<(), ErrorCode> {
        let mut updates: Vec<(i64, i8)> = Vec::new();
        for (first, last, types) in batches {
            if first > last || types.is_empty() {
                return Err(ErrorCode::INVALID_REQUEST);
            }
            let n = last.saturating_sub(*first).saturating_add(1);
            if types.len() != 1 && i64::try_from(types.len()).ok() != Some(n) {
                return Err(ErrorCode::INVALID_REQUEST);
            }
            if types.iter().any(|t| !(GAP..=RENEW).contains(t)) {
                return Err(ErrorCode::INVALID_REQUEST);
            }
            for (i, offset) in (*first..=*last).enumerate() {
                let ty = if types.len() == 1 { types[0] } else { types[i] };
                match self.records.get(&offset) {
                    Some(InFlight { state: RecordState::Acquired { member: m, .. }, .. }) if m == member => updates.push((offset, ty)),
                    _ => return Err(ErrorCode::INVALID_RECORD_STATE),
                }
            }
        }
        let until = now + self.rules.lock;
        let rules = self.rules;
        for (offset, ty) in updates {
            let Some(r) = self.records.get_mut(&offset) else { continue };
            match ty {
                ACCEPT => r.state = RecordState::Acknowledged,
                RELEASE => r.state = if r.delivery_count >= rules.delivery_limit { RecordState::Archived } else { RecordState::Available },
                RENEW => r.state = RecordState::Acquired { member: member.to_owned(), until },
                // REJECT, and GAP (an offset without a record).
                REJECT | GAP => r.state = RecordState::Archived,
                _ => {}
            }
        }
        self.advance();
        Ok(())
    }

    /// Locks that ran out: their records go back. Whether any did.
    pub(crate) fn expire(&mut self, now: Instant) -> bool {
        let expired: Vec<i64> =
            self.records.iter().filter(|(_, r)| matches!(&r.state, RecordState::Acquired { until, .. } if *until <= now)).map(|(o, _)| *o).collect();
        for o in &expired {
            if let Some(mut r) = self.records.remove(o) {
                self.back(&mut r);
                self.records.insert(*o, r);
            }
        }
        self.advance();
        !expired.is_empty()
    }

    /// Every record `member` holds goes back.
    pub(crate) fn release_member(&mut self, member: &str) {
        let held: Vec<i64> =
            self.records.iter().filter(|(_, r)| matches!(&r.state, RecordState::Acquired { member: m, .. } if m == member)).map(|(o, _)| *o).collect();
        for o in held {
            if let Some(mut r) = self.records.remove(&o) {
                self.back(&mut r);
                self.records.insert(o, r);
            }
        }
        self.advance();
    }
}

/// Every share partition, by (group, topic id, partition).
#[derive(Debug, Default)]
pub(crate) struct SharePartitions {
    pub(crate) by_key: BTreeMap<(String, Uuid, i32), SharePartition>,
}

impl SharePartitions {
    pub(crate) fn expire_locks(&mut self, now: Instant) -> bool {
        let mut any = false;
        for p in self.by_key.values_mut() {
            any |= p.expire(now);
        }
        any
    }

    pub(crate) fn release_member(&mut self, group: &str, member: &str) {
        for ((g, _, _), p) in self.by_key.iter_mut() {
            if g == group {
                p.release_member(member);
            }
        }
    }

    /// DeleteGroups of a share group: its partitions' state goes.
    pub(crate) fn delete_group(&mut self, group: &str) {
        self.by_key.retain(|(g, _, _), _| g != group);
    }
}

/// A share session: its epoch (of the next request) and partitions.
#[derive(Debug, Default)]
pub(crate) struct Session {
    pub(crate) epoch: i32,
    pub(crate) partitions: BTreeSet<(Uuid, i32)>,
}

/// Share sessions by (broker, group, member).
#[derive(Debug, Default)]
pub(crate) struct ShareSessions {
    pub(crate) by_key: BTreeMap<(i32, String, String), Session>,
}

/// The epoch after `epoch` (1 after i32::MAX: 0 opens a session).
pub(crate) fn next_epoch(epoch: i32) -> i32 {
    match epoch.checked_add(1) {
        Some(n) if n > 0 => n,
        _ => 1,
    }
}

impl ShareSessions {
    pub(crate) fn remove_member(&mut self, group: &str, member: &str) {
        self.by_key.retain(|(_, g, m), _| !(g == group && m == member));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{AppendRules, TxnCheck};
    use kwire::runtime::records::{Record, RecordBatchBuilder};

    struct NoTxn;
    impl TxnCheck for NoTxn {
        fn verify(&mut self, _: i64, _: i16) -> Result<(), ErrorCode> {
            Ok(())
        }
    }

    fn log_with(n: usize) -> PartitionLog {
        let mut log = PartitionLog::default();
        let mut b = RecordBatchBuilder::new();
        for i in 0..n {
            b.append(Record::new(i as i64, 0, None, Some(Bytes::from(format!("v{i}"))))).unwrap();
        }
        let rules = AppendRules { max_batch_bytes: 1 << 20, log_append_time: false, produce_version: 11 };
        log.append(b.build().unwrap(), 0, 0, rules, &mut NoTxn).unwrap();
        log
    }

    fn rules() -> Rules {
        Rules { lock: Duration::from_secs(30), delivery_limit: 3, max_in_flight: 2000, read_committed: false }
    }

    #[tokio::test(start_paused = true)]
    async fn a_lock_that_runs_out_gives_the_record_to_another_member_with_its_count_up() {
        let log = log_with(4);
        let mut p = SharePartition::new(0, rules());
        let a = p.acquire("a", &log, 10, Instant::now());
        assert_eq!(a.ranges, vec![(0, 3, 1)]);
        assert_eq!(a.batches.len(), 1);
        // a accepts 0, releases 1, rejects 2; 3 it leaves.
        p.acknowledge("a", &[(0, 2, vec![ACCEPT, RELEASE, REJECT])], Instant::now()).unwrap();
        assert_eq!(p.start, 1);
        // b gets 1 again (count 2); 3 is still a's.
        let b = p.acquire("b", &log, 10, Instant::now());
        assert_eq!(b.ranges, vec![(1, 1, 2)]);
        // b cannot acknowledge a's record.
        assert_eq!(p.acknowledge("b", &[(3, 3, vec![ACCEPT])], Instant::now()), Err(ErrorCode::INVALID_RECORD_STATE));
        tokio::time::advance(Duration::from_secs(31)).await;
        assert!(p.expire(Instant::now()));
        // a's lock ran out: 3 goes to b, delivered a second time; 2 (rejected) never again.
        let b = p.acquire("b", &log, 10, Instant::now());
        assert_eq!(b.ranges, vec![(1, 1, 3), (3, 3, 2)]);
        assert_eq!(p.acknowledge("a", &[(3, 3, vec![ACCEPT])], Instant::now()), Err(ErrorCode::INVALID_RECORD_STATE));
    }

    #[tokio::test(start_paused = true)]
    async fn a_record_delivered_the_limit_times_is_archived() {
        let log = log_with(1);
        let mut p = SharePartition::new(0, rules());
        for round in 1..=3 {
            let got = p.acquire("a", &log, 10, Instant::now());
            assert_eq!(got.ranges, vec![(0, 0, round)]);
            p.acknowledge("a", &[(0, 0, vec![RELEASE])], Instant::now()).unwrap();
        }
        assert!(p.acquire("a", &log, 10, Instant::now()).ranges.is_empty());
        assert_eq!(p.start, 1, "archived: the start offset moved past it");
        // Renewing a lock keeps the record past its first deadline.
        let log = log_with(1);
        let mut p = SharePartition::new(0, rules());
        p.acquire("a", &log, 10, Instant::now());
        tokio::time::advance(Duration::from_secs(20)).await;
        p.acknowledge("a", &[(0, 0, vec![RENEW])], Instant::now()).unwrap();
        tokio::time::advance(Duration::from_secs(20)).await;
        assert!(!p.expire(Instant::now()));
        p.acknowledge("a", &[(0, 0, vec![ACCEPT])], Instant::now()).unwrap();
        assert_eq!(p.start, 1);
    }
}
