//! Transactions (KIP-98), as Java's `TransactionManager` runs them: the state machine
//! ([`Transactions`], one per transactional producer, under the producer's lock with the
//! accumulator and the idempotence state), the requests to the transaction coordinator
//! ([`TxnCoordinator`]: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn) and to the
//! group coordinator (TxnOffsetCommit, KIP-447), and the producer's transactional methods.
//!
//! Two protocols, chosen by the cluster's finalized `transaction.version` feature:
//! - **V1** (KIP-98; Kafka 3.x): each partition is added to the transaction with
//!   AddPartitionsToTxn before its first batch goes (the sender does it before each drain), the
//!   group's offsets with AddOffsetsToTxn before TxnOffsetCommit; the epoch stays between
//!   transactions, and is bumped with InitProducerId after an aborted failed transaction
//!   (KIP-360).
//! - **V2** (KIP-890; `transaction.version` >= 2, Kafka 4.x): the partition leaders and the
//!   group coordinator add partitions themselves (Produce v12+, TxnOffsetCommit v5+), and
//!   every EndTxn bumps the epoch, which its response (v5+) returns.
//!
//! Errors are Java's classes: abortable ones put the transaction in
//! [`TransactionState::AbortableError`] (abort, then go on); fatal ones (fenced, not
//! authorized, a state the protocol cannot recover from) make every later call fail.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kwire::messages::{
    add_partitions_to_txn_request::AddPartitionsToTxnTopic,
    txn_offset_commit_request::{TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic},
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, EndTxnRequest, InitProducerIdRequest, TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
};
use kwire::{ApiKey, ApiRequest, ByteString, ErrorCode, Uuid};
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::idempotence::ProducerIdAndEpoch;
use super::Producer;
use crate::cluster::Client;
use crate::consumer::{ConsumerGroupMetadata, OffsetAndMetadata};
use crate::coordinator::Coordinator;
use crate::error::{Error, Resource, Result, TransactionError, TransactionState};
use crate::future::ClientFuture;
use crate::retry::Backoff;
use crate::route::CoordinatorKind;
use crate::route::Limits;
use crate::topic_partition::TopicPartition;

/// The feature whose finalized level picks the protocol (KIP-890).
const TRANSACTION_VERSION: &str = "transaction.version";

/// The last versions of Transactions V1 (Java's `LAST_BEFORE_TRANSACTION_V2_VERSION`s): from
/// the next one a request tells the broker the client runs V2 (Produce adds its partitions to
/// the transaction, EndTxn bumps the epoch), which under `transaction.version` 1 is not so.
pub(crate) struct LastBeforeV2 {
    pub(crate) produce: i16,
    pub(crate) end_txn: i16,
    pub(crate) txn_offset_commit: i16,
}

pub(crate) const LAST_BEFORE_V2: LastBeforeV2 = LastBeforeV2 { produce: 11, end_txn: 4, txn_offset_commit: 4 };

/// A partition of the transaction.
type Partition = (Arc<str>, i32);

/// What the transaction's counters show (for tests and stats).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct TxnCounts {
    pub(crate) add_partitions: u64,
    pub(crate) add_offsets: u64,
    pub(crate) end_txn: u64,
}

/// One transactional producer's transaction state (Java's `TransactionManager` state machine).
#[derive(Debug)]
pub(crate) struct Transactions {
    state: TransactionState,
    /// The error behind [`TransactionState::AbortableError`] or [`TransactionState::FatalError`].
    error: Option<Error>,
    /// Transactions V2 (KIP-890) for the current transaction.
    v2: bool,
    /// Partitions in the transaction: their batches may go.
    added: BTreeSet<Partition>,
    /// Partitions with records, to add (V1) before their first batch goes.
    new: BTreeSet<Partition>,
    /// The coordinator has the transaction (a partition or the offsets added): EndTxn is due.
    started: bool,
    /// InitProducerId must bump the epoch after the abort (V1, KIP-360): a batch failed, so the
    /// partitions' sequences start over.
    bump: bool,
    pub(crate) counts: TxnCounts,
}

impl Transactions {
    pub(crate) fn new() -> Transactions {
        Transactions {
            state: TransactionState::Uninitialized,
            error: None,
            v2: false,
            added: BTreeSet::new(),
            new: BTreeSet::new(),
            started: false,
            bump: false,
            counts: TxnCounts::default(),
        }
    }

    pub(crate) fn state(&self) -> TransactionState {
        self.state
    }

    pub(crate) fn v2(&self) -> bool {
        self.v2
    }

    /// The error of a failed state, for any call but `abort_transaction` (which is how an
    /// abortable error is left).
    fn failed(&self) -> Result<()> {
        match (self.state, &self.error) {
            (TransactionState::FatalError, Some(e)) => Err(fatal_error(e)),
            (TransactionState::AbortableError, Some(e)) => Err(Error::Transaction(TransactionError::Abortable(Box::new(e.clone())))),
            _ => Ok(()),
        }
    }

    fn refuse(&self, operation: &'static str) -> Error {
        Error::Transaction(match self.state {
            TransactionState::Uninitialized | TransactionState::Initializing => TransactionError::NotInitialized { operation },
            TransactionState::Ready => TransactionError::NoTransaction { operation },
            state => TransactionError::InvalidState { operation, state },
        })
    }

    /// `init_transactions`: from Uninitialized (or a retry of one that failed retriably).
    pub(crate) fn start_init(&mut self) -> Result<()> {
        self.failed()?;
        match self.state {
            TransactionState::Uninitialized | TransactionState::Initializing => {
                self.state = TransactionState::Initializing;
                Ok(())
            }
            state => Err(Error::Transaction(TransactionError::InvalidState { operation: "init_transactions", state })),
        }
    }

    /// InitProducerId failed retriably: `init_transactions` may be called again.
    pub(crate) fn init_failed(&mut self) {
        if self.state == TransactionState::Initializing {
            self.state = TransactionState::Uninitialized;
        }
    }

    /// InitProducerId succeeded.
    pub(crate) fn initialized(&mut self, v2: bool) {
        if self.state == TransactionState::Initializing {
            self.state = TransactionState::Ready;
            self.v2 = v2;
        }
    }

    /// `begin_transaction`: from Ready only.
    pub(crate) fn begin(&mut self, v2: Option<bool>) -> Result<()> {
        self.failed()?;
        match self.state {
            TransactionState::Ready => {
                self.state = TransactionState::InTransaction;
                if let Some(v2) = v2 {
                    self.v2 = v2;
                }
                Ok(())
            }
            TransactionState::Uninitialized | TransactionState::Initializing => {
                Err(Error::Transaction(TransactionError::NotInitialized { operation: "begin_transaction" }))
            }
            state => Err(Error::Transaction(TransactionError::InvalidState { operation: "begin_transaction", state })),
        }
    }

    /// Whether a record may be sent now (a transaction is open and has not failed).
    pub(crate) fn check_send(&self) -> Result<()> {
        self.failed()?;
        match self.state {
            TransactionState::InTransaction => Ok(()),
            _ => Err(self.refuse("send")),
        }
    }

    /// A record was queued for `partition`: under V1 it is added before its first batch goes;
    /// under V2 the leader adds it. Returns whether the sender has a partition to add.
    pub(crate) fn record_for(&mut self, topic: &Arc<str>, partition: i32) -> bool {
        let key = (topic.clone(), partition);
        if self.added.contains(&key) {
            return false;
        }
        if self.v2 {
            self.added.insert(key);
            self.started = true;
            false
        } else {
            self.new.insert(key)
        }
    }

    /// Whether batches of `partition` may go (it is in the transaction).
    pub(crate) fn can_send(&self, topic: &Arc<str>, partition: i32) -> bool {
        self.added.contains(&(topic.clone(), partition))
    }

    /// The partitions to add now (V1), while a transaction is open or committing.
    pub(crate) fn take_new(&mut self) -> Vec<Partition> {
        match self.state {
            TransactionState::InTransaction | TransactionState::Committing => std::mem::take(&mut self.new).into_iter().collect(),
            _ => Vec::new(),
        }
    }

    /// AddPartitionsToTxn failed retriably: try these again.
    pub(crate) fn add_again(&mut self, partitions: Vec<Partition>) {
        self.new.extend(partitions);
    }

    /// The coordinator added these partitions (or the group's offsets: none).
    pub(crate) fn added(&mut self, partitions: Vec<Partition>) {
        self.added.extend(partitions);
        self.started = true;
    }

    /// `send_offsets_to_transaction`: a transaction must be open.
    pub(crate) fn check_offsets(&self) -> Result<()> {
        self.failed()?;
        match self.state {
            TransactionState::InTransaction => Ok(()),
            _ => Err(self.refuse("send_offsets_to_transaction")),
        }
    }

    /// `commit_transaction`: from InTransaction (or a retry of a commit).
    pub(crate) fn start_commit(&mut self) -> Result<()> {
        self.failed()?;
        match self.state {
            TransactionState::InTransaction | TransactionState::Committing => {
                self.state = TransactionState::Committing;
                Ok(())
            }
            _ => Err(self.refuse("commit_transaction")),
        }
    }

    /// `abort_transaction`: from InTransaction, AbortableError (or a retry of an abort).
    pub(crate) fn start_abort(&mut self) -> Result<()> {
        match self.state {
            TransactionState::FatalError => self.failed(),
            TransactionState::InTransaction | TransactionState::AbortableError | TransactionState::Aborting => {
                self.state = TransactionState::Aborting;
                // Nothing more is added: what waits is failed.
                self.new.clear();
                Ok(())
            }
            _ => Err(self.refuse("abort_transaction")),
        }
    }

    /// Whether EndTxn is due (something reached the coordinator).
    pub(crate) fn started(&self) -> bool {
        self.started
    }

    /// A batch of the transaction was failed here after it was sent: its partition's
    /// sequences must start over (after the abort, under a bumped epoch).
    pub(crate) fn need_bump(&mut self) {
        self.bump = true;
    }

    /// Whether the epoch must be bumped after this abort (V1).
    pub(crate) fn bump_due(&self) -> bool {
        self.bump && !self.v2
    }

    /// The transaction ended (EndTxn answered, or there was nothing to end).
    pub(crate) fn completed(&mut self) {
        if matches!(self.state, TransactionState::Committing | TransactionState::Aborting) {
            self.state = TransactionState::Ready;
        }
        self.error = None;
        self.added.clear();
        self.new.clear();
        self.started = false;
        self.bump = false;
    }

    /// Java's `transitionToAbortableError`: the transaction can only be aborted now (not while
    /// aborting already, nor once fatal).
    pub(crate) fn abortable(&mut self, e: Error) {
        self.bump = true;
        match self.state {
            TransactionState::InTransaction | TransactionState::Committing | TransactionState::Initializing => {
                info!(error = %e, "the transaction must be aborted");
                self.state = TransactionState::AbortableError;
                self.error = Some(e);
            }
            _ => {}
        }
    }

    /// Java's `transitionToFatalError`: returns the error every later call fails with.
    pub(crate) fn fatal(&mut self, e: &Error) -> Error {
        if self.state != TransactionState::FatalError {
            warn!(error = %e, "the transactional producer cannot go on");
            self.state = TransactionState::FatalError;
            self.error = Some(unwrap_fatal(e).clone());
        }
        fatal_error(self.error.as_ref().unwrap_or(e))
    }

    /// The error that queued batches fail with now (an abortable error, an abort).
    pub(crate) fn failing(&self) -> Option<Error> {
        match self.state {
            TransactionState::AbortableError => self.error.clone(),
            TransactionState::Aborting => Some(Error::Transaction(TransactionError::Aborted)),
            _ => None,
        }
    }
}

/// `e` as the error every call fails with once fatal.
fn fatal_error(e: &Error) -> Error {
    match e {
        Error::Transaction(TransactionError::Fatal(_)) => e.clone(),
        e => Error::Transaction(TransactionError::Fatal(Box::new(e.clone()))),
    }
}

fn unwrap_fatal(e: &Error) -> &Error {
    match e {
        Error::Transaction(TransactionError::Fatal(cause)) => cause,
        e => e,
    }
}

/// How a transactional request's error is handled (Java's handlers, condensed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Severity {
    /// Try again (the call may be repeated).
    Retriable,
    /// The transaction must be aborted.
    Abortable,
    /// The producer cannot go on.
    Fatal,
}

/// The severity of an error of a transactional request or of a transaction's batch.
pub(crate) fn severity(e: &Error) -> Severity {
    if matches!(e, Error::Transaction(TransactionError::Fatal(_))) {
        return Severity::Fatal;
    }
    if matches!(e, Error::Transaction(TransactionError::Abortable(_) | TransactionError::Aborted)) {
        return Severity::Abortable;
    }
    if matches!(e, Error::Group(_)) && !e.is_retriable() {
        // Offsets refused for the group's generation or member: Java's CommitFailedException.
        return Severity::Abortable;
    }
    if e.is_retriable() {
        return Severity::Retriable;
    }
    match e.code() {
        Some(
            ErrorCode::PRODUCER_FENCED
            | ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            | ErrorCode::CLUSTER_AUTHORIZATION_FAILED
            | ErrorCode::INVALID_TXN_STATE
            | ErrorCode::UNSUPPORTED_VERSION
            | ErrorCode::UNSUPPORTED_FOR_MESSAGE_FORMAT,
        ) => Severity::Fatal,
        Some(
            ErrorCode::UNKNOWN_PRODUCER_ID
            | ErrorCode::INVALID_PRODUCER_ID_MAPPING
            | ErrorCode::TRANSACTION_ABORTABLE
            | ErrorCode::GROUP_AUTHORIZATION_FAILED
            | ErrorCode::TOPIC_AUTHORIZATION_FAILED
            | ErrorCode::UNKNOWN_MEMBER_ID
            | ErrorCode::ILLEGAL_GENERATION
            | ErrorCode::FENCED_INSTANCE_ID
            | ErrorCode::OPERATION_NOT_ATTEMPTED,
        ) => Severity::Abortable,
        // Anything else a coordinator answers is unexpected: Java gives up on the producer.
        Some(_) => Severity::Fatal,
        None => match e {
            Error::Producer(_) | Error::UnknownTopicOrPartition { .. } => Severity::Abortable,
            _ => Severity::Fatal,
        },
    }
}

/// The severity of a batch's failure in a transaction: as [`severity`], except that a batch
/// refused for an old epoch (INVALID_PRODUCER_EPOCH, KIP-588: the transaction timed out and the
/// coordinator bumped the epoch) only aborts the transaction, and other broker errors on a
/// batch (out of retries, out of time) do too.
pub(crate) fn batch_severity(e: &Error) -> Severity {
    match e.code() {
        Some(ErrorCode::PRODUCER_FENCED | ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED | ErrorCode::CLUSTER_AUTHORIZATION_FAILED) => Severity::Fatal,
        _ if matches!(e, Error::Transaction(TransactionError::Fatal(_))) => Severity::Fatal,
        _ => Severity::Abortable,
    }
}

/// The transactional id's coordinator, and the group coordinators TxnOffsetCommit goes to.
pub(crate) struct TxnCoordinator {
    pub(crate) id: Arc<str>,
    timeout_ms: i32,
    coordinator: Coordinator,
    groups: Mutex<HashMap<String, Coordinator>>,
    backoff: Backoff,
    retry_backoff: Duration,
    /// One transactional call at a time (init, offsets, commit, abort).
    pub(crate) op: tokio::sync::Mutex<()>,
}

/// A coordinator's error code, as an error about the transactional id.
fn coordinator_error(id: &str, api: ApiKey, code: ErrorCode, message: Option<&str>) -> Error {
    Error::broker(code, message.map(str::to_owned), format!("{} for transactional id {id}", api.name())).about(Resource::TransactionalId(id.to_owned()))
}

impl TxnCoordinator {
    pub(crate) fn new(client: Client, id: &str, timeout: Duration, retry_backoff: Duration, retry_backoff_max: Duration) -> TxnCoordinator {
        let random = crate::random::Random::new(client.config().connection.seed, "transactions");
        TxnCoordinator {
            id: Arc::from(id),
            timeout_ms: timeout.as_millis().min(i32::MAX as u128) as i32,
            coordinator: Coordinator::of(client, CoordinatorKind::Transaction, id, retry_backoff),
            groups: Mutex::new(HashMap::new()),
            // Java retries CONCURRENT_TRANSACTIONS after 20 ms: the previous transaction is
            // usually a moment from complete.
            backoff: Backoff::exponential(Duration::from_millis(20).min(retry_backoff), retry_backoff_max, random),
            retry_backoff,
            op: tokio::sync::Mutex::new(()),
        }
    }

    /// Whether the cluster runs Transactions V2: its finalized `transaction.version` is 2 or
    /// more (the coordinator's ApiVersions answer, as Java reads the finalized features).
    pub(crate) async fn transaction_v2(&self) -> Result<bool> {
        let versions = self.coordinator.versions().await?;
        let level = versions.finalized_feature(TRANSACTION_VERSION).unwrap_or(0);
        debug!(level, "transaction.version");
        Ok(level >= 2 && versions.version(ApiKey::EndTxn).is_ok_and(|v| v >= 5))
    }

    /// `build(version)` to `coordinator` (at version `max` at most) until it answers with a
    /// code that is not retriable (`code_of` reads it), or `deadline` passes (then the last
    /// retriable error).
    async fn call_until<R: ApiRequest>(
        &self,
        coordinator: &Coordinator,
        build: impl Fn(i16) -> R,
        code_of: impl Fn(&R::Response) -> i16,
        deadline: Instant,
        max: i16,
    ) -> Result<R::Response> {
        let api = R::API;
        let mut failures = 0;
        loop {
            let e = match coordinator.try_send(Limits::at_most(max), &build).await {
                Ok(r) => {
                    let code = ErrorCode(code_of(&r));
                    match coordinator.moved(api, code) {
                        Some(e) => e,
                        None if code.is_retriable() => coordinator_error(&self.id, api, code, None),
                        None => return Ok(r),
                    }
                }
                Err(e) if e.is_retriable() => e,
                Err(e) => return Err(e),
            };
            failures += 1;
            let wait = self.backoff.delay(failures);
            if Instant::now() + wait >= deadline {
                return Err(e);
            }
            debug!(api = api.name(), error = %e, ?wait, "retrying");
            tokio::time::sleep(wait).await;
        }
    }

    /// InitProducerId with the transactional id: a first id (`current` none) or the next
    /// epoch of `current` (KIP-360).
    pub(crate) async fn init_producer_id(&self, current: Option<ProducerIdAndEpoch>, deadline: Instant) -> Result<ProducerIdAndEpoch> {
        let (producer_id, producer_epoch) = current.map_or((-1, -1), |p| (p.id, p.epoch));
        let request = InitProducerIdRequest {
            transactional_id: Some(ByteString::from(self.id.to_string())),
            transaction_timeout_ms: self.timeout_ms,
            producer_id,
            producer_epoch,
            ..Default::default()
        };
        let build = |v: i16| {
            let mut r = request.clone();
            if v < 3 {
                (r.producer_id, r.producer_epoch) = (-1, -1);
            }
            r
        };
        let r = self.call_until(&self.coordinator, build, |r| r.error_code, deadline, i16::MAX).await?;
        if r.error_code != 0 {
            return Err(coordinator_error(&self.id, ApiKey::InitProducerId, ErrorCode(r.error_code), None));
        }
        info!(transactional_id = %self.id, producer_id = r.producer_id, epoch = r.producer_epoch, "transactional producer id");
        Ok(ProducerIdAndEpoch::new(r.producer_id, r.producer_epoch))
    }

    /// AddPartitionsToTxn (V1): the first error of a partition, if any.
    pub(crate) async fn add_partitions(&self, pid: ProducerIdAndEpoch, partitions: &[Partition], deadline: Instant) -> Result<()> {
        let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        for (t, p) in partitions {
            topics.entry(t).or_default().push(*p);
        }
        let request = AddPartitionsToTxnRequest {
            v3_and_below_transactional_id: ByteString::from(self.id.to_string()),
            v3_and_below_producer_id: pid.id,
            v3_and_below_producer_epoch: pid.epoch,
            v3_and_below_topics: topics
                .iter()
                .map(|(t, ps)| AddPartitionsToTxnTopic {
                    name: ByteString::from(t.to_string()),
                    partitions: ps.iter().copied().collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let codes = |r: &AddPartitionsToTxnResponse| -> Vec<(String, i32, i16)> {
            r.results_by_topic_v3_and_below
                .iter()
                .flat_map(|t| t.results_by_partition.iter().map(move |p| (t.name.to_string(), p.partition_index, p.partition_error_code)))
                .collect()
        };
        // A retriable code of any partition retries the request.
        let code_of = |r: &AddPartitionsToTxnResponse| codes(r).into_iter().map(|(_, _, c)| c).find(|&c| ErrorCode(c).is_retriable()).unwrap_or(0);
        let api = ApiKey::AddPartitionsToTxn;
        let response = self.call_until(&self.coordinator, |_| request.clone(), code_of, deadline, i16::MAX).await?;
        let mut errors: Vec<(String, i32, ErrorCode)> =
            codes(&response).into_iter().filter(|&(_, _, c)| c != 0).map(|(t, p, c)| (t, p, ErrorCode(c))).collect();
        // OPERATION_NOT_ATTEMPTED only says another partition failed: report that one.
        errors.sort_by_key(|(_, _, c)| *c == ErrorCode::OPERATION_NOT_ATTEMPTED);
        match errors.first() {
            None => Ok(()),
            Some((topic, partition, code)) => {
                let e = coordinator_error(&self.id, api, *code, None);
                Err(if *code == ErrorCode::TOPIC_AUTHORIZATION_FAILED {
                    Error::broker(*code, None, format!("AddPartitionsToTxn {topic}-{partition}")).about(Resource::Topic(topic.clone()))
                } else {
                    e
                })
            }
        }
    }

    /// AddOffsetsToTxn (V1): the group's offsets partition joins the transaction.
    pub(crate) async fn add_offsets(&self, pid: ProducerIdAndEpoch, group: &str, deadline: Instant) -> Result<()> {
        let request = AddOffsetsToTxnRequest {
            transactional_id: ByteString::from(self.id.to_string()),
            producer_id: pid.id,
            producer_epoch: pid.epoch,
            group_id: ByteString::from(group.to_owned()),
            ..Default::default()
        };
        let r = self.call_until(&self.coordinator, |_| request.clone(), |r| r.error_code, deadline, i16::MAX).await?;
        Err(match ErrorCode(r.error_code) {
            ErrorCode::NONE => return Ok(()),
            code @ ErrorCode::GROUP_AUTHORIZATION_FAILED => {
                Error::broker(code, None, format!("AddOffsetsToTxn for group {group}")).about(Resource::Group(group.to_owned()))
            }
            code => coordinator_error(&self.id, ApiKey::AddOffsetsToTxn, code, None),
        })
    }

    /// The group's coordinator (one per group, cached).
    fn group_coordinator(&self, group: &str) -> Coordinator {
        let mut groups = crate::sync::lock(&self.groups);
        groups.entry(group.to_owned()).or_insert_with(|| Coordinator::new(self.coordinator.client().clone(), group, self.retry_backoff)).clone()
    }

    /// TxnOffsetCommit to the group's coordinator, as the consumer's member (KIP-447): a
    /// zombie's generation or member id is refused.
    pub(crate) async fn commit_offsets(
        &self,
        pid: ProducerIdAndEpoch,
        offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>,
        group: &ConsumerGroupMetadata,
        deadline: Instant,
        v2: bool,
    ) -> Result<()> {
        let coordinator = self.group_coordinator(&group.group_id);
        let metadata = coordinator.client().metadata();
        let mut topics: BTreeMap<&str, Vec<TxnOffsetCommitRequestPartition>> = BTreeMap::new();
        for (tp, o) in offsets {
            topics.entry(tp.topic.as_str()).or_default().push(TxnOffsetCommitRequestPartition {
                partition_index: tp.partition,
                committed_offset: o.offset,
                committed_leader_epoch: o.leader_epoch.unwrap_or(-1),
                committed_metadata: Some(ByteString::from(o.metadata.clone().unwrap_or_default())),
                ..Default::default()
            });
        }
        let build = |v: i16| {
            let member = v >= 3;
            TxnOffsetCommitRequest {
                transactional_id: ByteString::from(self.id.to_string()),
                group_id: ByteString::from(group.group_id.clone()),
                producer_id: pid.id,
                producer_epoch: pid.epoch,
                generation_id_or_member_epoch: if member { group.generation_id } else { -1 },
                member_id: ByteString::from(if member { group.member_id.clone() } else { String::new() }),
                group_instance_id: group.group_instance_id.clone().filter(|_| member).map(ByteString::from),
                topics: topics
                    .iter()
                    .map(|(t, partitions)| TxnOffsetCommitRequestTopic {
                        // Names up to v5, ids from v6: set both, the version picks.
                        name: ByteString::from(t.to_string()),
                        topic_id: metadata.topics.get(*t).map_or(Uuid::ZERO, |i| i.id),
                        partitions: partitions.clone(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }
        };
        let codes = |r: &TxnOffsetCommitResponse| -> Vec<i16> { r.topics.iter().flat_map(|t| &t.partitions).map(|p| p.error_code).collect() };
        let code_of = |r: &TxnOffsetCommitResponse| {
            let codes = codes(r);
            // REQUEST_TIMED_OUT from a group coordinator means look it up again, as Java does.
            codes
                .iter()
                .copied()
                .find(|&c| crate::coordinator::coordinator_moved(ErrorCode(c)))
                .or_else(|| codes.iter().copied().find(|&c| ErrorCode(c).is_retriable()))
                .unwrap_or(0)
        };
        let max = if v2 { i16::MAX } else { LAST_BEFORE_V2.txn_offset_commit };
        let response = self.call_until(&coordinator, build, code_of, deadline, max).await?;
        match codes(&response).into_iter().find(|&c| c != 0) {
            None => Ok(()),
            Some(code) => {
                let context = format!("TxnOffsetCommit for group {} (transactional id {})", group.group_id, self.id);
                let e = Error::group(ErrorCode(code), None, &group.group_id, group.group_instance_id.as_deref(), context);
                Err(e)
            }
        }
    }

    /// EndTxn: the transaction's outcome. Under V2 (v5+) the answer carries the bumped
    /// producer id and epoch.
    pub(crate) async fn end_txn(&self, pid: ProducerIdAndEpoch, commit: bool, deadline: Instant, v2: bool) -> Result<Option<ProducerIdAndEpoch>> {
        let request = EndTxnRequest {
            transactional_id: ByteString::from(self.id.to_string()),
            producer_id: pid.id,
            producer_epoch: pid.epoch,
            committed: commit,
            ..Default::default()
        };
        let max = if v2 { i16::MAX } else { LAST_BEFORE_V2.end_txn };
        let r = self.call_until(&self.coordinator, |_| request.clone(), |r| r.error_code, deadline, max).await?;
        if r.error_code != 0 {
            return Err(coordinator_error(&self.id, ApiKey::EndTxn, ErrorCode(r.error_code), None));
        }
        debug!(commit, producer_id = r.producer_id, epoch = r.producer_epoch, "transaction ended");
        Ok(ProducerIdAndEpoch::answered(r.producer_id, r.producer_epoch))
    }
}

impl Producer {
    /// The transactional coordinator of a producer with a `transactional_id`.
    fn txn(&self, operation: &'static str) -> Result<&TxnCoordinator> {
        self.shared.txn.as_ref().ok_or(Error::Transaction(TransactionError::NotTransactional { operation }))
    }

    /// When a transactional call gives up retrying.
    fn txn_deadline(&self) -> Instant {
        Instant::now() + self.shared.config.max_block
    }

    /// Takes a failed transactional request's error in: fatal ones end the producer,
    /// abortable ones the transaction; retriable ones leave the state for the call to be
    /// repeated. Returns the error for the caller.
    fn txn_failed(&self, e: Error) -> Error {
        let mut state = self.lock();
        match severity(&e) {
            Severity::Fatal => {
                let e = state.enter_fatal(&e);
                drop(state);
                self.shared.wake.notify_one();
                e
            }
            Severity::Abortable => {
                if let Some(t) = state.txn.as_mut() {
                    t.abortable(e.clone());
                }
                drop(state);
                self.shared.wake.notify_one();
                Error::Transaction(TransactionError::Abortable(Box::new(e)))
            }
            Severity::Retriable => e,
        }
    }

    /// The producer id and epoch, with the transaction state's check `check`.
    fn txn_check(&self, check: impl FnOnce(&mut Transactions) -> Result<()>) -> Result<ProducerIdAndEpoch> {
        let mut state = self.lock();
        let pid = state.idempotence.producer_id;
        let txn = state.txn.as_mut().ok_or(Error::Transaction(TransactionError::NotTransactional { operation: "transaction" }))?;
        check(txn)?;
        pid.ok_or(Error::Transaction(TransactionError::NotInitialized { operation: "transaction" }))
    }

    /// Where the transactional producer is (`None` without a `transactional_id`).
    pub fn transaction_state(&self) -> Option<TransactionState> {
        self.lock().txn.as_ref().map(Transactions::state)
    }

    /// Java's `initTransactions`: finds the transaction coordinator, gets the producer id and
    /// epoch for the `transactional_id` (fencing every older producer with it, and aborting
    /// or completing a transaction it left open), and finds which protocol the cluster runs
    /// (V2 when its `transaction.version` is 2 or more). Retries while the coordinator loads,
    /// moves or completes an earlier transaction, for at most `max_block`.
    ///
    /// Call once, before the first transaction. A retriable failure (a timeout) may be
    /// retried; a fatal one ([`TransactionError::Fatal`]) ends the producer.
    pub fn init_transactions(&self) -> ClientFuture<'_, Result<()>> {
        ClientFuture::boxed(self.init_transactions_boxed())
    }

    async fn init_transactions_boxed(&self) -> Result<()> {
        let txn = self.txn("init_transactions")?;
        let _op = txn.op.lock().await;
        self.lock().txn_mut().start_init()?;
        let id = match txn.init_producer_id(None, self.txn_deadline()).await {
            Ok(id) => id,
            Err(e) => {
                if severity(&e) == Severity::Retriable {
                    self.lock().txn_mut().init_failed();
                    return Err(e);
                }
                return Err(self.txn_failed(e));
            }
        };
        let v2 = match txn.transaction_v2().await {
            Ok(v2) => v2,
            Err(e) => {
                self.lock().txn_mut().init_failed();
                return Err(e);
            }
        };
        let mut state = self.lock();
        state.set_producer_id(id);
        state.txn_mut().initialized(v2);
        info!(transactional_id = %txn.id, v2, "transactions initialized");
        Ok(())
    }

    /// Java's `beginTransaction`: opens a transaction; `send` is allowed until it is committed
    /// or aborted. Re-reads the cluster's `transaction.version` (the protocol may change
    /// between transactions, as in Java).
    pub fn begin_transaction(&self) -> ClientFuture<'_, Result<()>> {
        ClientFuture::boxed(self.begin_transaction_boxed())
    }

    async fn begin_transaction_boxed(&self) -> Result<()> {
        let txn = self.txn("begin_transaction")?;
        let _op = txn.op.lock().await;
        let v2 = txn.transaction_v2().await.ok();
        self.lock().txn_mut().begin(v2)
    }

    /// Java's `sendOffsetsToTransaction`: the consumer's offsets (`offsets`: the next offset
    /// to read per partition) are committed for `group` with the transaction, and only if it
    /// commits. V1: AddOffsetsToTxn to the transaction coordinator first; V2: the group
    /// coordinator adds them (TxnOffsetCommit v5+). The group's coordinator refuses the offsets
    /// of a member that is no longer in the generation (KIP-447): the transaction must then be
    /// aborted ([`TransactionError::Abortable`]).
    pub fn send_offsets_to_transaction<'a>(
        &'a self,
        offsets: &'a BTreeMap<TopicPartition, OffsetAndMetadata>,
        group: &'a ConsumerGroupMetadata,
    ) -> ClientFuture<'a, Result<()>> {
        ClientFuture::boxed(self.send_offsets_to_transaction_boxed(offsets, group))
    }

    async fn send_offsets_to_transaction_boxed(&self, offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>, group: &ConsumerGroupMetadata) -> Result<()> {
        let txn = self.txn("send_offsets_to_transaction")?;
        let _op = txn.op.lock().await;
        let pid = self.txn_check(|t| t.check_offsets())?;
        if offsets.is_empty() {
            return Ok(());
        }
        let deadline = self.txn_deadline();
        let v2 = self.lock().txn_mut().v2();
        if !v2 {
            self.lock().txn_mut().counts.add_offsets += 1;
            if let Err(e) = txn.add_offsets(pid, &group.group_id, deadline).await {
                return Err(self.txn_failed(e));
            }
        }
        self.lock().txn_mut().added(Vec::new());
        if let Err(e) = txn.commit_offsets(pid, offsets, group, deadline, v2).await {
            return Err(self.txn_failed(e));
        }
        Ok(())
    }

    /// Java's `commitTransaction`: sends what is queued (the sender adds new partitions to
    /// the transaction first), waits for every record, then EndTxn(commit). Under V2 the
    /// coordinator bumps the epoch, and the next transaction uses the new one.
    ///
    /// If a record of the transaction failed, the transaction cannot commit: this returns
    /// [`TransactionError::Abortable`]; abort it. A retriable failure (a timeout) leaves the
    /// commit to be retried with another call.
    pub fn commit_transaction(&self) -> ClientFuture<'_, Result<()>> {
        ClientFuture::boxed(self.commit_transaction_boxed())
    }

    async fn commit_transaction_boxed(&self) -> Result<()> {
        self.end_transaction(true).await
    }

    /// Java's `abortTransaction`: records not sent yet fail ([`TransactionError::Aborted`]),
    /// those in flight are waited for, then EndTxn(abort); read_committed consumers never see
    /// the transaction's records. After a failed transaction (V1) the epoch is bumped with
    /// InitProducerId (KIP-360), so the partitions' sequences start over.
    pub fn abort_transaction(&self) -> ClientFuture<'_, Result<()>> {
        ClientFuture::boxed(self.abort_transaction_boxed())
    }

    async fn abort_transaction_boxed(&self) -> Result<()> {
        self.end_transaction(false).await
    }

    async fn end_transaction(&self, commit: bool) -> Result<()> {
        let operation = if commit { "commit_transaction" } else { "abort_transaction" };
        let txn = self.txn(operation)?;
        let _op = txn.op.lock().await;
        {
            let mut state = self.lock();
            let t = state.txn_mut();
            if commit {
                t.start_commit()?;
            } else {
                t.start_abort()?;
            }
        }
        // The sender adds the partitions (V1) and sends what is queued; when aborting it
        // fails what is not in flight yet.
        self.shared.wake.notify_one();
        self.wait_sent().await;
        let (pid, started, bump) = {
            let mut state = self.lock();
            let pid = state.idempotence.producer_id;
            let t = state.txn_mut();
            // A record failed while committing: the transaction must be aborted now.
            t.failed()?;
            let pid = pid.ok_or(Error::Transaction(TransactionError::NotInitialized { operation }))?;
            (pid, t.started(), t.bump_due())
        };
        let deadline = self.txn_deadline();
        let mut next = None;
        if started {
            let v2 = {
                let mut state = self.lock();
                let t = state.txn_mut();
                t.counts.end_txn += 1;
                t.v2()
            };
            match txn.end_txn(pid, commit, deadline, v2).await {
                Ok(bumped) => next = bumped.filter(|_| self.lock().txn_mut().v2()),
                Err(e) => return Err(self.txn_failed(e)),
            }
        } else {
            debug!(commit, "nothing reached the coordinator: no EndTxn");
        }
        if !commit && bump && next.is_none() {
            // KIP-360: a failed transaction's partitions start their sequences over under the
            // next epoch, which the coordinator gives.
            match txn.init_producer_id(Some(pid), deadline).await {
                Ok(id) => next = Some(id),
                Err(e) => return Err(self.txn_failed(e)),
            }
        }
        let mut state = self.lock();
        if let Some(id) = next {
            state.set_producer_id(id);
        }
        state.txn_mut().completed();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(e: Result<()>) -> String {
        match e {
            Ok(()) => "ok".into(),
            Err(Error::Transaction(TransactionError::NotInitialized { operation })) => format!("not initialized: {operation}"),
            Err(Error::Transaction(TransactionError::NoTransaction { operation })) => format!("no transaction: {operation}"),
            Err(Error::Transaction(TransactionError::InvalidState { operation, state })) => format!("{operation} in {state:?}"),
            Err(Error::Transaction(TransactionError::Abortable(e))) => format!("abortable: {:?}", e.code()),
            Err(Error::Transaction(TransactionError::Fatal(e))) => format!("fatal: {:?}", e.code()),
            Err(e) => format!("other: {e}"),
        }
    }

    fn ready() -> Transactions {
        let mut t = Transactions::new();
        t.start_init().unwrap();
        t.initialized(false);
        t
    }

    fn broker(code: ErrorCode) -> Error {
        Error::broker(code, None, "test".into())
    }

    #[test]
    fn nothing_before_init_transactions() {
        let mut t = Transactions::new();
        assert_eq!(code(t.begin(None)), "not initialized: begin_transaction");
        assert_eq!(code(t.check_send()), "not initialized: send");
        assert_eq!(code(t.check_offsets()), "not initialized: send_offsets_to_transaction");
        assert_eq!(code(t.start_commit()), "not initialized: commit_transaction");
        assert_eq!(code(t.start_abort()), "not initialized: abort_transaction");
        assert_eq!(t.state(), TransactionState::Uninitialized);
        // A retriable InitProducerId failure: init may be called again.
        t.start_init().unwrap();
        t.init_failed();
        assert_eq!(t.state(), TransactionState::Uninitialized);
        t.start_init().unwrap();
        t.initialized(true);
        assert_eq!((t.state(), t.v2()), (TransactionState::Ready, true));
        assert_eq!(code(t.start_init()), "init_transactions in Ready");
    }

    #[test]
    fn java_forbids_what_is_forbidden_here() {
        let mut t = ready();
        assert_eq!(code(t.check_send()), "no transaction: send");
        assert_eq!(code(t.start_commit()), "no transaction: commit_transaction");
        assert_eq!(code(t.start_abort()), "no transaction: abort_transaction");
        assert_eq!(code(t.check_offsets()), "no transaction: send_offsets_to_transaction");
        t.begin(None).unwrap();
        assert_eq!(code(t.begin(None)), "begin_transaction in InTransaction");
        assert_eq!(code(t.start_init()), "init_transactions in InTransaction");
        assert_eq!(code(t.check_send()), "ok");
        t.start_commit().unwrap();
        assert_eq!(code(t.check_send()), "send in Committing");
        assert_eq!(code(t.begin(None)), "begin_transaction in Committing");
        assert_eq!(code(t.start_abort()), "abort_transaction in Committing");
        // A commit that failed retriably may be called again.
        assert_eq!(code(t.start_commit()), "ok");
        t.completed();
        assert_eq!(t.state(), TransactionState::Ready);
        // Committing twice: the second finds no transaction.
        assert_eq!(code(t.start_commit()), "no transaction: commit_transaction");
        t.begin(None).unwrap();
        t.start_abort().unwrap();
        assert_eq!(code(t.start_commit()), "commit_transaction in Aborting");
        assert_eq!(code(t.check_send()), "send in Aborting");
        t.completed();
        assert_eq!(code(t.start_abort()), "no transaction: abort_transaction");
    }

    #[test]
    fn an_abortable_error_allows_only_abort() {
        let mut t = ready();
        t.begin(None).unwrap();
        t.abortable(broker(ErrorCode::TRANSACTION_ABORTABLE));
        assert_eq!(t.state(), TransactionState::AbortableError);
        let abortable = format!("abortable: {:?}", Some(ErrorCode::TRANSACTION_ABORTABLE));
        assert_eq!(code(t.check_send()), abortable);
        assert_eq!(code(t.start_commit()), abortable);
        assert_eq!(code(t.begin(None)), abortable);
        assert_eq!(code(t.check_offsets()), abortable);
        assert!(t.failing().is_some(), "queued batches fail with it");
        t.start_abort().unwrap();
        assert!(matches!(t.failing(), Some(Error::Transaction(TransactionError::Aborted))));
        assert!(t.bump_due(), "V1 bumps the epoch after a failed transaction");
        t.completed();
        assert_eq!(t.state(), TransactionState::Ready);
        assert!(!t.bump_due());
        t.begin(None).unwrap();
    }

    #[test]
    fn a_fatal_error_is_every_later_answer() {
        let mut t = ready();
        t.begin(None).unwrap();
        let e = t.fatal(&broker(ErrorCode::PRODUCER_FENCED));
        assert!(matches!(&e, Error::Transaction(TransactionError::Fatal(c)) if c.code() == Some(ErrorCode::PRODUCER_FENCED)), "{e:?}");
        assert_eq!(e.code(), Some(ErrorCode::PRODUCER_FENCED));
        // The first fatal error stays.
        t.fatal(&broker(ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED));
        t.abortable(broker(ErrorCode::TRANSACTION_ABORTABLE));
        let fenced = format!("fatal: {:?}", Some(ErrorCode::PRODUCER_FENCED));
        for r in [t.check_send(), t.start_commit(), t.start_abort(), t.begin(None), t.check_offsets(), t.start_init()] {
            assert_eq!(code(r), fenced);
        }
        assert_eq!(t.state(), TransactionState::FatalError);
    }

    #[test]
    fn partitions_are_added_once_under_v1_and_implicitly_under_v2() {
        let topic: Arc<str> = Arc::from("t");
        let mut t = ready();
        t.begin(None).unwrap();
        assert!(t.record_for(&topic, 0));
        assert!(!t.record_for(&topic, 0), "already waiting to be added");
        assert!(!t.can_send(&topic, 0));
        let new = t.take_new();
        assert_eq!(new.len(), 1);
        assert!(!t.started());
        t.added(new);
        assert!(t.can_send(&topic, 0) && t.started());
        assert!(!t.record_for(&topic, 0));
        t.start_commit().unwrap();
        t.completed();
        assert!(!t.can_send(&topic, 0), "a new transaction adds its partitions again");

        let mut t = ready();
        t.begin(Some(true)).unwrap();
        assert!(!t.record_for(&topic, 1), "V2: nothing to add");
        assert!(t.can_send(&topic, 1) && t.started());
        assert!(t.take_new().is_empty());
    }

    #[test]
    fn errors_are_classed_as_java_classes_them() {
        for (c, s) in [
            (ErrorCode::PRODUCER_FENCED, Severity::Fatal),
            (ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED, Severity::Fatal),
            (ErrorCode::INVALID_TXN_STATE, Severity::Fatal),
            (ErrorCode::CONCURRENT_TRANSACTIONS, Severity::Retriable),
            (ErrorCode::COORDINATOR_LOAD_IN_PROGRESS, Severity::Retriable),
            (ErrorCode::NOT_COORDINATOR, Severity::Retriable),
            (ErrorCode::TRANSACTION_ABORTABLE, Severity::Abortable),
            (ErrorCode::UNKNOWN_PRODUCER_ID, Severity::Abortable),
        ] {
            assert_eq!(severity(&broker(c)), s, "{c:?}");
        }
        let e = Error::group(ErrorCode::ILLEGAL_GENERATION, None, "g", None, "TxnOffsetCommit".into());
        assert_eq!(severity(&e), Severity::Abortable);
        let e = Error::broker(ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None, "x".into()).about(Resource::TransactionalId("t".into()));
        assert!(matches!(e, Error::Authorization { .. }));
        assert_eq!(severity(&e), Severity::Fatal);
        // A batch refused for an old epoch aborts the transaction; a fenced one ends the producer.
        let fenced = |code| Error::Producer(crate::error::ProducerError::Fenced { topic: "t".into(), partition: 0, code, message: None });
        assert_eq!(batch_severity(&fenced(ErrorCode::INVALID_PRODUCER_EPOCH)), Severity::Abortable);
        assert_eq!(batch_severity(&fenced(ErrorCode::PRODUCER_FENCED)), Severity::Fatal);
    }
}
