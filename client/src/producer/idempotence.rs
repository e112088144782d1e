//! Idempotence, as Java's `TransactionManager` does it for an idempotent producer: the
//! producer id and epoch (InitProducerId), each partition's sequences, and the epoch bump of
//! KIP-360 when a partition's sequences can no longer continue. Transactions build on this
//! state (a transactional id, the transaction's partitions and coordinator) next.
//!
//! Where Java risks a second copy, this does not. The broker writes a batch once per producer
//! id, epoch and sequence; the same records under other ones it writes again. So:
//!
//! 1. an attempt that ends without the broker's refusal (a lost connection, a timeout, an
//!    append not replicated in time) makes its batch *uncertain* for good: it may be in the
//!    log, or a copy may still reach the broker (a request read off a connection the client
//!    has given up on is still handled);
//! 2. an uncertain batch keeps its sequence: when its partition's sequences start over under
//!    a new epoch it fails as [`OutcomeUnknown`](crate::ProducerError::OutcomeUnknown), where
//!    Java's `startSequencesAtBeginning` would send it again under the new epoch (and
//!    `client/tests/simulation.rs` finds the duplicate that makes);
//! 3. a batch whose delivery timeout passes while it is in flight fails whatever its answer,
//!    and its partition's sequences become unresolved (Java's in-flight expiry): its answer
//!    never bumps the epoch, as an OUT_OF_ORDER_SEQUENCE_NUMBER for it used to;
//! 4. a batch refused with OUT_OF_ORDER_SEQUENCE_NUMBER though later sequences of its epoch
//!    were acknowledged can never be taken (the broker remembers only its last five batches;
//!    it may be one of the written ones): it fails at once, and the partition goes on.

use std::sync::Arc;

use kwire::messages::InitProducerIdRequest;
use kwire::ErrorCode;
use tracing::{debug, trace};

use crate::cluster::Client;
use crate::error::{Error, Result};
use crate::route::Route;

/// A producer id and epoch (Java's `ProducerIdAndEpoch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProducerIdAndEpoch {
    pub(crate) id: i64,
    pub(crate) epoch: i16,
}

impl ProducerIdAndEpoch {
    pub(crate) fn new(id: i64, epoch: i16) -> ProducerIdAndEpoch {
        ProducerIdAndEpoch { id, epoch }
    }

    /// The id and epoch a response carries, if it carries them (-1 stands for none).
    pub(crate) fn answered(id: i64, epoch: i16) -> Option<ProducerIdAndEpoch> {
        (id >= 0 && epoch >= 0).then_some(ProducerIdAndEpoch { id, epoch })
    }

    /// The same id with the next epoch; none once the epoch is exhausted (a new id is due).
    fn bumped(self) -> Option<ProducerIdAndEpoch> {
        Some(ProducerIdAndEpoch { id: self.id, epoch: self.epoch.checked_add(1)? })
    }
}

/// The producer id, epoch and base sequence a batch was sent with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sequenced {
    pub(crate) producer: ProducerIdAndEpoch,
    pub(crate) base: i32,
}

impl Sequenced {
    /// The sequence `records` records after this one, under the same producer id and epoch
    /// (the second half of a split batch).
    pub(crate) fn skip(self, records: usize) -> Sequenced {
        Sequenced { producer: self.producer, base: after(self.base, records) }
    }
}

/// `next` sequence after `records` records from `base` (sequences wrap at `i32::MAX`).
fn after(base: i32, records: usize) -> i32 {
    base.wrapping_add(records as i32) & i32::MAX
}

/// Whether sequence `a` is at or before `b`, as sequences wrap (within half the range).
fn at_or_before(a: i32, b: i32) -> bool {
    (b.wrapping_sub(a) & i32::MAX) < (1 << 30)
}

/// Whether an attempt that failed with `e` may have been written, or may yet be: no answer
/// came (the connection was lost, the request timed out, the response could not be read), or
/// the broker appended and then failed (REQUEST_TIMED_OUT waiting for replicas,
/// NOT_ENOUGH_REPLICAS_AFTER_APPEND, a storage error). Only a refusal the broker gives before
/// appending leaves the batch certainly unwritten.
pub(crate) fn may_be_written(e: &Error) -> bool {
    let Some(code) = e.code() else {
        // No code: the attempt never got the broker's answer for this partition.
        return true;
    };
    !matches!(
        code,
        ErrorCode::NOT_LEADER_OR_FOLLOWER
            | ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
            | ErrorCode::UNKNOWN_TOPIC_ID
            | ErrorCode::LEADER_NOT_AVAILABLE
            | ErrorCode::FENCED_LEADER_EPOCH
            | ErrorCode::NOT_ENOUGH_REPLICAS
            | ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER
            | ErrorCode::DUPLICATE_SEQUENCE_NUMBER
            | ErrorCode::UNKNOWN_PRODUCER_ID
            | ErrorCode::INVALID_PRODUCER_EPOCH
            | ErrorCode::PRODUCER_FENCED
            | ErrorCode::INVALID_TXN_STATE
            | ErrorCode::TRANSACTION_ABORTABLE
            | ErrorCode::CONCURRENT_TRANSACTIONS
            | ErrorCode::CORRUPT_MESSAGE
            | ErrorCode::INVALID_RECORD
            | ErrorCode::MESSAGE_TOO_LARGE
            | ErrorCode::RECORD_LIST_TOO_LARGE
            | ErrorCode::INVALID_REQUIRED_ACKS
            | ErrorCode::INVALID_TIMESTAMP
            | ErrorCode::TOPIC_AUTHORIZATION_FAILED
            | ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            | ErrorCode::CLUSTER_AUTHORIZATION_FAILED
            | ErrorCode::UNSUPPORTED_VERSION
            | ErrorCode::UNSUPPORTED_FOR_MESSAGE_FORMAT
            | ErrorCode::THROTTLING_QUOTA_EXCEEDED
    )
}

/// One partition's sequences (Java's `TxnPartitionEntry`).
#[derive(Debug, Default)]
pub(crate) struct Sequences {
    /// The partition, for the trace of its sequences.
    pub(crate) topic: Option<Arc<str>>,
    pub(crate) partition: i32,
    /// The producer id the in-flight batches were sent with.
    pub(crate) flight_pid: Option<ProducerIdAndEpoch>,
    /// The producer id under which the broker has acknowledged a batch of this partition.
    pub(crate) acked_pid: Option<ProducerIdAndEpoch>,
    /// The producer id and epoch the sequences count under: a batch sent under another one is
    /// given a new sequence when it is next sent.
    pid: Option<ProducerIdAndEpoch>,
    next_sequence: i32,
    /// The last sequence the broker acknowledged under `pid`.
    last_acked: Option<i32>,
    /// Batches sent at least once expired here: the sequence that should follow them. No new
    /// batch goes until the partition's outcome is known (Java's unresolved sequences).
    pub(crate) unresolved: Option<i32>,
    /// The sequences restart from 0 at the next epoch bump (Java's
    /// `partitionsToRewriteSequences`).
    rewrite: bool,
}

impl Sequences {
    /// Names the partition these sequences are of (for the trace).
    pub(crate) fn label(&mut self, topic: &Arc<str>, partition: i32) {
        self.topic = Some(topic.clone());
        self.partition = partition;
    }

    fn topic(&self) -> &str {
        self.topic.as_deref().unwrap_or("")
    }

    /// Whether `sequence` follows the last acknowledged one (Java's `isNextSequence`).
    fn is_next(&self, sequence: i32) -> bool {
        sequence == self.last_acked.map_or(0, |s| s.wrapping_add(1) & i32::MAX)
    }

    /// Whether a batch's sequence still counts (it was given under this partition's `pid`).
    pub(crate) fn owns(&self, sent: Option<Sequenced>) -> bool {
        sent.is_some_and(|s| self.pid == Some(s.producer))
    }

    /// Whether a batch of `records` sent with `sent` lies at or before the last sequence
    /// acknowledged under the same producer id and epoch: the broker took later sequences, so
    /// it will never take this one (rule 4).
    fn behind_acknowledged(&self, sent: Option<Sequenced>, records: usize) -> bool {
        let (Some(sent), Some(last)) = (sent, self.last_acked) else { return false };
        self.owns(Some(sent)) && at_or_before(after(sent.base, records.saturating_sub(1)), last)
    }

    /// Starts over from sequence 0 under `pid`.
    fn restart(&mut self, pid: Option<ProducerIdAndEpoch>, why: &'static str) {
        trace!(topic = self.topic(), partition = self.partition, from = ?self.pid, to = ?pid, next = self.next_sequence, last_acked = ?self.last_acked, why, "sequences restart");
        self.pid = pid;
        self.next_sequence = 0;
        self.last_acked = None;
        self.unresolved = None;
    }

    /// The sequence a batch of `records` goes with under `current`: the one it was sent with
    /// (a resend must be recognised as one) unless the partition's sequences were rewritten
    /// since.
    pub(crate) fn for_batch(&mut self, sent: Option<Sequenced>, records: usize, current: ProducerIdAndEpoch) -> Sequenced {
        match sent {
            Some(s) if self.owns(sent) => s,
            _ => {
                if self.pid != Some(current) {
                    // Java's maybeUpdateProducerIdAndEpoch: nothing of the partition is in
                    // flight under the old id or epoch; start over under the current one.
                    trace!(topic = self.topic(), partition = self.partition, from = ?self.pid, to = ?current, "sequences follow the producer's epoch");
                    self.pid = Some(current);
                    self.next_sequence = 0;
                    self.last_acked = None;
                }
                let base = self.next_sequence;
                self.next_sequence = after(base, records);
                let given = Sequenced { producer: current, base };
                trace!(topic = self.topic(), partition = self.partition, before = ?sent, sequence = ?given, records, next = self.next_sequence, "sequence given");
                given
            }
        }
    }

    /// A batch of `records` sent with `sent` was acknowledged.
    pub(crate) fn acked(&mut self, sent: Sequenced, records: usize) {
        self.acked_pid = Some(sent.producer);
        if self.pid == Some(sent.producer) {
            let last = after(sent.base, records.saturating_sub(1));
            self.last_acked = Some(self.last_acked.map_or(last, |l| l.max(last)));
        }
        trace!(topic = self.topic(), partition = self.partition, sequence = ?sent, records, last_acked = ?self.last_acked, "acknowledged");
    }

    /// A batch sent with `sent` expired before its outcome was known: it may have been
    /// written, so what follows it is unresolved.
    pub(crate) fn expired(&mut self, sent: Option<Sequenced>, records: usize) {
        if let (true, Some(sent)) = (self.owns(sent), sent) {
            let next = after(sent.base, records);
            self.unresolved = Some(self.unresolved.map_or(next, |u| u.max(next)));
        }
        trace!(topic = self.topic(), partition = self.partition, sequence = ?sent, records, unresolved = ?self.unresolved, "expired");
    }
}

/// The producer's id and epoch, and whether an epoch bump is due.
#[derive(Debug, Default)]
pub(crate) struct Idempotence {
    pub(crate) producer_id: Option<ProducerIdAndEpoch>,
    /// An epoch bump is due (Java's `epochBumpRequired`), done before the next drain.
    bump: bool,
    /// Bumps so far.
    pub(crate) epoch_bumps: u64,
    /// The error that made the producer unusable (Java's `TransactionManager` fatal state):
    /// every later `send` and `flush` fails with it.
    pub(crate) fatal: Option<Error>,
    /// The producer is transactional: the epoch is bumped only by the transaction
    /// coordinator (InitProducerId after an abort, or EndTxn under V2), never here, and a
    /// batch refused for its sequence fails (the transaction is aborted) rather than being
    /// sent again under a bumped epoch, as Java's `TransactionManager` does.
    pub(crate) transactional: bool,
}

/// Whether `e` leaves the producer unusable, as Java's `TransactionManager.handleFailedBatch`
/// treats it: fenced by a newer producer with its id (PRODUCER_FENCED), or refused the cluster
/// or transactional id it writes as. (INVALID_PRODUCER_EPOCH is not: an idempotent producer
/// fails that batch and bumps its epoch, as Java's does.)
pub(crate) fn is_fatal(e: &Error) -> bool {
    matches!(e, Error::Producer(crate::error::ProducerError::Fenced { code: ErrorCode::PRODUCER_FENCED, .. }))
        || matches!(e, Error::Authorization { code: ErrorCode::CLUSTER_AUTHORIZATION_FAILED | ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED, .. })
}

impl Idempotence {
    /// Enters the fatal state with `e`, unless already in it (the first error stays).
    pub(crate) fn fatal(&mut self, e: &Error) {
        if self.fatal.is_none() {
            tracing::warn!(error = %e, "the producer cannot go on: every later send fails");
            self.fatal = Some(e.clone());
        }
    }

    /// Java's `requestEpochBumpForPartition`.
    fn request_bump(&mut self, partition: &mut Sequences, why: &'static str) {
        trace!(topic = partition.topic(), partition = partition.partition, why, "epoch bump requested");
        self.bump = true;
        partition.rewrite = true;
    }

    /// Java's `maybeResolveSequences`, then the bump if one is due: a partition whose sent
    /// batches expired is resolved once none of its sequenced batches is left (`idle`): if
    /// the broker has everything up to the next sequence, go on; otherwise there is a gap, and
    /// the epoch is bumped.
    pub(crate) fn resolve<'a>(&mut self, partitions: impl Iterator<Item = (&'a mut Sequences, bool)>) {
        let mut all = Vec::new();
        for (seq, idle) in partitions {
            if seq.unresolved.is_some() && idle {
                seq.unresolved = None;
                if !seq.is_next(seq.next_sequence) {
                    debug!(next = seq.next_sequence, last_acked = ?seq.last_acked, "unresolved sequences: bumping the epoch");
                    self.request_bump(seq, "unresolved sequences");
                } else {
                    trace!(topic = seq.topic(), partition = seq.partition, next = seq.next_sequence, "unresolved sequences resolved");
                }
            }
            all.push(seq);
        }
        if self.bump && !self.transactional {
            self.bump_epoch(all.into_iter());
        }
    }

    /// Java's `bumpIdempotentProducerEpoch`: the same producer id with the next epoch (a new
    /// id once the epoch is exhausted), and sequences from 0 for the partitions that asked.
    /// The broker takes a higher epoch with sequence 0 as a new start for the producer.
    fn bump_epoch<'a>(&mut self, partitions: impl Iterator<Item = &'a mut Sequences>) {
        self.bump = false;
        let before = self.producer_id;
        self.producer_id = before.and_then(ProducerIdAndEpoch::bumped);
        self.epoch_bumps += 1;
        debug!(?before, after = ?self.producer_id, "producer epoch bumped");
        for seq in partitions.filter(|s| s.rewrite) {
            seq.rewrite = false;
            seq.restart(self.producer_id, "epoch bump");
        }
    }

    /// Whether a batch sent with `sent` that failed with `e` is sent again (its attempts and
    /// delivery timeout allowing), by Java's `TransactionManager.canRetry`: UNKNOWN_PRODUCER_ID
    /// and OUT_OF_ORDER_SEQUENCE_NUMBER are retried, with an epoch bump when they show the
    /// broker lost the producer's state or a gap opened before this batch; other errors when
    /// retriable.
    pub(crate) fn can_retry(&mut self, partition: Option<&mut Sequences>, sent: Option<Sequenced>, records: usize, e: &Error, log_start_offset: i64) -> bool {
        let (Some(seq), Some(Sequenced { base: sequence, .. })) = (partition, sent) else {
            return e.is_retriable();
        };
        if e.code() == Some(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER) && seq.behind_acknowledged(sent, records) {
            trace!(topic = seq.topic(), partition = seq.partition, sequence = ?sent, last_acked = ?seq.last_acked, "refused behind acknowledged sequences: it fails, the partition goes on");
            return false;
        }
        // The partition's sequences were rewritten (an epoch bump) since it was sent: the
        // error is about the old ones; it goes again with a new sequence.
        let reset = !seq.owns(sent);
        if self.transactional {
            return match e.code() {
                // The broker may be mid-move without the log start offset: retry; otherwise the
                // transaction fails (and is aborted, then the epoch bumped).
                Some(ErrorCode::UNKNOWN_PRODUCER_ID) => log_start_offset == -1,
                // A batch behind one that failed or is late goes again; the next one refused
                // means a gap: the transaction fails.
                Some(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER) => seq.unresolved.is_none() && (reset || !seq.is_next(sequence)),
                _ => e.is_retriable(),
            };
        }
        match e.code() {
            Some(ErrorCode::UNKNOWN_PRODUCER_ID) => {
                // Without the log start offset the broker may be mid-move: just retry.
                // Otherwise the broker has no state for the producer here (retention removed
                // it, or data was lost): start the partition over under a bumped epoch.
                if log_start_offset != -1 && !reset {
                    self.request_bump(seq, "UNKNOWN_PRODUCER_ID");
                }
                true
            }
            Some(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER) => {
                if seq.unresolved.is_none() && (reset || !seq.is_next(sequence)) {
                    // Not the batch that follows the acknowledged ones: one before it failed
                    // or is late; it is resent after that one.
                    return true;
                }
                // The next batch refused (or the one after unresolved ones): a gap the broker
                // will not fill. Bump the epoch; the batch goes again from sequence 0.
                if seq.unresolved.is_none() || seq.unresolved == Some(sequence) {
                    self.request_bump(seq, "OUT_OF_ORDER_SEQUENCE_NUMBER for the next sequence");
                }
                true
            }
            _ => e.is_retriable(),
        }
    }

    /// Java's `handleFailedBatch`: a failed batch leaves a hole in its partition's sequences,
    /// so the epoch is bumped and the partition starts again from 0, unless the broker lost
    /// the producer (UNKNOWN_PRODUCER_ID: sequence 0 under the same epoch) or the batch used
    /// up its retries (it may have been written: its sequence must not be given to another
    /// batch, and the later ones show what happened).
    pub(crate) fn failed(&mut self, partition: Option<&mut Sequences>, sent: Option<Sequenced>, records: usize, e: &Error, retries_left: bool) {
        if self.transactional {
            // The transaction is aborted; the sequences start over under the epoch the
            // coordinator bumps then.
            return;
        }
        let mut none = Sequences::default();
        let seq = partition.unwrap_or(&mut none);
        match e.code() {
            // Behind acknowledged sequences: no hole follows it (rule 4).
            Some(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER) if seq.behind_acknowledged(sent, records) => {}
            Some(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER) => self.request_bump(seq, "batch failed: OUT_OF_ORDER_SEQUENCE_NUMBER"),
            Some(ErrorCode::UNKNOWN_PRODUCER_ID) => seq.restart(None, "batch failed: UNKNOWN_PRODUCER_ID"),
            _ if retries_left => self.request_bump(seq, "batch failed"),
            _ => {}
        }
    }
}

/// InitProducerId for an idempotent producer: its id and first epoch.
pub(crate) async fn init_producer_id(client: &Client) -> Result<ProducerIdAndEpoch> {
    let request = InitProducerIdRequest { transactional_id: None, transaction_timeout_ms: 60_000, producer_id: -1, producer_epoch: -1, ..Default::default() };
    let r = client.send(Route::Any, request).await?;
    Error::check(r.error_code, None, || "InitProducerId".into())?;
    debug!(producer_id = r.producer_id, epoch = r.producer_epoch, "producer id");
    Ok(ProducerIdAndEpoch::new(r.producer_id, r.producer_epoch))
}
