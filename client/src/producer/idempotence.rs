//! Idempotence, as Java's `TransactionManager` does it for an idempotent producer: the
//! producer id and epoch (InitProducerId), each partition's sequences, and the epoch bump of
//! KIP-360 when a partition's sequences can no longer continue. Transactions build on this
//! state (a transactional id, the transaction's partitions and coordinator) next.

use kwire::messages::InitProducerIdRequest;
use kwire::{ErrorCode, ResponseKind};
use tracing::debug;

use crate::cluster::Client;
use crate::error::{Error, Result};

/// A producer id and epoch.
pub(crate) type ProducerIdEpoch = (i64, i16);

/// The producer id, epoch and base sequence a batch was sent with.
pub(crate) type Sequenced = (i64, i16, i32);

/// `next` sequence after `records` records from `base` (sequences wrap at `i32::MAX`).
fn after(base: i32, records: usize) -> i32 {
    base.wrapping_add(records as i32) & i32::MAX
}

/// One partition's sequences (Java's `TxnPartitionEntry`).
#[derive(Debug, Default)]
pub(crate) struct Sequences {
    /// The producer id the in-flight batches were sent with.
    pub(crate) flight_pid: Option<ProducerIdEpoch>,
    /// The producer id under which the broker has acknowledged a batch of this partition.
    pub(crate) acked_pid: Option<ProducerIdEpoch>,
    /// The producer id and epoch the sequences count under: a batch sent under another one is
    /// given a new sequence when it is next sent.
    pid: Option<ProducerIdEpoch>,
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
    /// Whether `sequence` follows the last acknowledged one (Java's `isNextSequence`).
    fn is_next(&self, sequence: i32) -> bool {
        sequence == self.last_acked.map_or(0, |s| s.wrapping_add(1) & i32::MAX)
    }

    /// Whether a batch's sequence still counts (it was given under this partition's `pid`).
    pub(crate) fn owns(&self, sent: Option<Sequenced>) -> bool {
        sent.is_some_and(|(p, e, _)| self.pid == Some((p, e)))
    }

    /// Starts over from sequence 0 under `pid`.
    fn restart(&mut self, pid: Option<ProducerIdEpoch>) {
        self.pid = pid;
        self.next_sequence = 0;
        self.last_acked = None;
        self.unresolved = None;
    }

    /// The sequence a batch of `records` goes with under `current`: the one it was sent with
    /// (a resend must be recognised as one) unless the partition's sequences were rewritten
    /// since.
    pub(crate) fn for_batch(&mut self, sent: Option<Sequenced>, records: usize, current: ProducerIdEpoch) -> Sequenced {
        match sent {
            Some(s) if self.owns(sent) => s,
            _ => {
                if self.pid != Some(current) {
                    // Java's maybeUpdateProducerIdAndEpoch: nothing of the partition is in
                    // flight under the old id or epoch; start over under the current one.
                    self.pid = Some(current);
                    self.next_sequence = 0;
                    self.last_acked = None;
                }
                let base = self.next_sequence;
                self.next_sequence = after(base, records);
                (current.0, current.1, base)
            }
        }
    }

    /// A batch of `records` sent with `sent` was acknowledged.
    pub(crate) fn acked(&mut self, (pid, epoch, base): Sequenced, records: usize) {
        self.acked_pid = Some((pid, epoch));
        if self.pid == Some((pid, epoch)) {
            let last = after(base, records.saturating_sub(1));
            self.last_acked = Some(self.last_acked.map_or(last, |l| l.max(last)));
        }
    }

    /// A batch sent with `sent` expired before its outcome was known: it may have been
    /// written, so what follows it is unresolved.
    pub(crate) fn expired(&mut self, sent: Option<Sequenced>, records: usize) {
        if let (true, Some((_, _, base))) = (self.owns(sent), sent) {
            let next = after(base, records);
            self.unresolved = Some(self.unresolved.map_or(next, |u| u.max(next)));
        }
    }
}

/// The producer's id and epoch, and whether an epoch bump is due.
#[derive(Debug, Default)]
pub(crate) struct Idempotence {
    pub(crate) producer_id: Option<ProducerIdEpoch>,
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
        || matches!(
            e,
            Error::Authorization { code: ErrorCode::CLUSTER_AUTHORIZATION_FAILED | ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED, .. }
        )
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
    fn request_bump(&mut self, partition: &mut Sequences) {
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
                    self.request_bump(seq);
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
        self.producer_id = match before {
            Some((pid, epoch)) if epoch < i16::MAX => Some((pid, epoch + 1)),
            _ => None,
        };
        self.epoch_bumps += 1;
        debug!(?before, after = ?self.producer_id, "producer epoch bumped");
        for seq in partitions.filter(|s| s.rewrite) {
            seq.rewrite = false;
            seq.restart(self.producer_id);
        }
    }

    /// Whether a batch sent with `sent` that failed with `e` is sent again (its attempts and
    /// delivery timeout allowing), by Java's `TransactionManager.canRetry`: UNKNOWN_PRODUCER_ID
    /// and OUT_OF_ORDER_SEQUENCE_NUMBER are retried, with an epoch bump when they show the
    /// broker lost the producer's state or a gap opened before this batch; other errors when
    /// retriable.
    pub(crate) fn can_retry(&mut self, partition: Option<&mut Sequences>, sent: Option<Sequenced>, e: &Error, log_start_offset: i64) -> bool {
        let (Some(seq), Some((_, _, sequence))) = (partition, sent) else {
            return e.is_retriable();
        };
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
                    self.request_bump(seq);
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
                    self.request_bump(seq);
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
    pub(crate) fn failed(&mut self, partition: Option<&mut Sequences>, e: &Error, retries_left: bool) {
        if self.transactional {
            // The transaction is aborted; the sequences start over under the epoch the
            // coordinator bumps then.
            return;
        }
        let mut none = Sequences::default();
        let seq = partition.unwrap_or(&mut none);
        match e.code() {
            Some(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER) => self.request_bump(seq),
            Some(ErrorCode::UNKNOWN_PRODUCER_ID) => seq.restart(None),
            _ if retries_left => self.request_bump(seq),
            _ => {}
        }
    }
}

/// InitProducerId for an idempotent producer: its id and first epoch.
pub(crate) async fn init_producer_id(client: &Client) -> Result<ProducerIdEpoch> {
    let request = InitProducerIdRequest { transactional_id: None, transaction_timeout_ms: 60_000, producer_id: -1, producer_epoch: -1, ..Default::default() };
    let response = client.call_any(request).await?;
    let ResponseKind::InitProducerId(r) = response else {
        return Err(Error::UnexpectedResponse(format!("{:?} to InitProducerId", response.api_key())));
    };
    Error::check(r.error_code, None, || "InitProducerId".into())?;
    debug!(producer_id = r.producer_id, epoch = r.producer_epoch, "producer id");
    Ok((r.producer_id, r.producer_epoch))
}
