//! The transaction coordinator's apis (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
//! EndTxn), TxnOffsetCommit at the group coordinator, DescribeProducers at the leaders, and the
//! markers that end a transaction in its partitions and groups.

use std::collections::BTreeSet;

use kwire::messages::{
    add_partitions_to_txn_response::{AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult},
    describe_producers_response::{PartitionResponse, ProducerState, TopicResponse},
    describe_transactions_response::{self, TopicData},
    list_transactions_response,
    txn_offset_commit_response::{TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic},
    AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, DescribeProducersRequest,
    DescribeProducersResponse, DescribeTransactionsRequest, DescribeTransactionsResponse, EndTxnRequest, EndTxnResponse, InitProducerIdRequest,
    InitProducerIdResponse, ListTransactionsRequest, ListTransactionsResponse, TxnOffsetCommitRequest, TxnOffsetCommitResponse, WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
};
use kwire::ErrorCode;

use super::{s, Ctx};
use crate::acl::{op, resource};
use crate::cluster::State;
use crate::txn::{check_producer, TxnMeta, TxnState};

/// NOT_COORDINATOR unless this broker coordinates transactional id `id`.
fn coordinates(ctx: &Ctx<'_>, state: &State, id: &str) -> Result<(), ErrorCode> {
    match state.coordinator(1, id, &ctx.inner.config) {
        Some(b) if b == ctx.broker => Ok(()),
        Some(_) => Err(ErrorCode::NOT_COORDINATOR),
        None => Err(ErrorCode::COORDINATOR_NOT_AVAILABLE),
    }
}

/// A new producer id.
fn allocate(state: &mut State) -> i64 {
    let id = state.next_producer_id;
    state.next_producer_id += 1;
    id
}

/// Writes the markers of `id`'s ending transaction where its partitions have leaders, and
/// commits or drops its groups' offsets; the transaction completes once every marker is
/// written (a test holding markers, or a partition without a leader, keeps it preparing).
pub(crate) fn write_markers(state: &mut State, id: &str, now_ms: i64) {
    if state.txns.hold_markers {
        return;
    }
    let Some(meta) = state.txns.by_id.get(id) else { return };
    let commit = match meta.state {
        TxnState::PrepareCommit => true,
        TxnState::PrepareAbort => false,
        _ => return,
    };
    let (pid, epoch, pending, groups) = (meta.producer_id, meta.marker_epoch, meta.pending_markers.clone(), meta.groups.clone());
    let mut written = BTreeSet::new();
    for (topic, partition) in &pending {
        let leader_up = state.topics.get(topic).and_then(|t| t.partition(*partition)).is_some_and(|p| p.leader >= 0);
        if !leader_up {
            continue;
        }
        if let Some(p) = state.topics.get_mut(topic).and_then(|t| t.partition_mut(*partition)) {
            let leader_epoch = p.leader_epoch;
            p.log.append_marker(pid, epoch, commit, 0, now_ms, leader_epoch);
        }
        written.insert((topic.clone(), *partition));
    }
    // A deleted topic's partitions have nothing to mark.
    for (topic, partition) in &pending {
        if state.topics.get(topic).and_then(|t| t.partition(*partition)).is_none() {
            written.insert((topic.clone(), *partition));
        }
    }
    let Some(meta) = state.txns.by_id.get_mut(id) else { return };
    meta.pending_markers.retain(|p| !written.contains(p));
    if meta.pending_markers.is_empty() {
        meta.state = if commit { TxnState::CompleteCommit } else { TxnState::CompleteAbort };
        meta.updated_ms = now_ms;
        for g in &groups {
            state.groups.complete(pid, g, commit);
        }
    }
}

/// Ends `id`'s ongoing transaction: PrepareCommit or PrepareAbort, then the markers. Under
/// transactions V2 (or when the coordinator aborts on its own) the epoch is bumped first, and
/// the markers carry the new one.
fn end(state: &mut State, id: &str, commit: bool, bump: bool, now_ms: i64) {
    let Some(meta) = state.txns.by_id.get_mut(id) else { return };
    if bump {
        meta.last_epoch = meta.epoch;
        meta.epoch = meta.epoch.saturating_add(1);
    }
    meta.state = if commit { TxnState::PrepareCommit } else { TxnState::PrepareAbort };
    meta.marker_epoch = meta.epoch;
    meta.pending_markers = meta.partitions.clone();
    meta.updated_ms = now_ms;
    write_markers(state, id, now_ms);
}

/// Transactions past their timeout are aborted by the coordinator, their producers fenced by
/// the bumped epoch; markers held earlier are written when they can be.
pub(crate) fn end_timed_out(state: &mut State, now_ms: i64) {
    for id in state.txns.timed_out(now_ms) {
        end(state, &id, false, true, now_ms);
    }
    let preparing: Vec<String> =
        state.txns.by_id.iter().filter(|(_, m)| matches!(m.state, TxnState::PrepareCommit | TxnState::PrepareAbort)).map(|(id, _)| id.clone()).collect();
    for id in preparing {
        write_markers(state, &id, now_ms);
    }
}

pub(super) fn init_producer_id(ctx: &Ctx<'_>, req: &InitProducerIdRequest) -> InitProducerIdResponse {
    let now = ctx.inner.now_ms();
    let mut state = ctx.inner.state();
    let answer = |code: ErrorCode, pid: i64, epoch: i16| InitProducerIdResponse {
        error_code: code.0,
        producer_id: pid,
        producer_epoch: epoch,
        ongoing_txn_producer_id: -1,
        ongoing_txn_producer_epoch: -1,
        ..Default::default()
    };
    let Some(id) = req.transactional_id.as_deref().filter(|id| !id.is_empty()) else {
        // An idempotent producer: always a new id at epoch 0, whatever id and epoch it names, as
        // Kafka's transaction coordinator answers a request without a transactional id (it
        // bumps an idempotent producer's epoch itself, KIP-360, without asking).
        let pid = allocate(&mut state);
        return answer(ErrorCode::NONE, pid, 0);
    };
    if let Err(code) = coordinates(ctx, &state, id) {
        return answer(code, -1, -1);
    }
    let max = ctx.inner.config.max_transaction_timeout.as_millis().min(i32::MAX as u128) as i32;
    if req.transaction_timeout_ms <= 0 || req.transaction_timeout_ms > max {
        return answer(ErrorCode::INVALID_TRANSACTION_TIMEOUT, -1, -1);
    }
    let Some(meta) = state.txns.by_id.get(id).cloned() else {
        let pid = allocate(&mut state);
        state.txns.by_id.insert(
            id.to_owned(),
            TxnMeta {
                producer_id: pid,
                epoch: 0,
                last_epoch: -1,
                timeout_ms: req.transaction_timeout_ms,
                state: TxnState::Empty,
                partitions: BTreeSet::new(),
                groups: BTreeSet::new(),
                started_ms: now,
                updated_ms: now,
                v2: false,
                pending_markers: BTreeSet::new(),
                marker_epoch: 0,
            },
        );
        return answer(ErrorCode::NONE, pid, 0);
    };
    // KIP-360: a producer that names its id and epoch must be the current one.
    if req.producer_id >= 0 && (req.producer_id != meta.producer_id || (req.producer_epoch != meta.epoch && req.producer_epoch != meta.last_epoch)) {
        return answer(if ctx.version >= 4 { ErrorCode::PRODUCER_FENCED } else { ErrorCode::INVALID_PRODUCER_EPOCH }, -1, -1);
    }
    match meta.state {
        TxnState::PrepareCommit | TxnState::PrepareAbort => return answer(ErrorCode::CONCURRENT_TRANSACTIONS, -1, -1),
        TxnState::Ongoing => {
            // The open transaction is aborted under a bumped epoch (fencing its producer);
            // the caller retries once it completes.
            end(&mut state, id, false, true, now);
            return answer(ErrorCode::CONCURRENT_TRANSACTIONS, -1, -1);
        }
        TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort => {}
    }
    let Some(m) = state.txns.by_id.get_mut(id) else { return answer(ErrorCode::UNKNOWN_SERVER_ERROR, -1, -1) };
    m.last_epoch = m.epoch;
    if m.epoch >= i16::MAX - 1 {
        m.epoch = 0;
        m.last_epoch = -1;
        m.producer_id = -1;
    } else {
        m.epoch += 1;
    }
    m.timeout_ms = req.transaction_timeout_ms;
    m.state = TxnState::Empty;
    m.partitions.clear();
    m.groups.clear();
    m.updated_ms = now;
    if m.producer_id < 0 {
        let pid = allocate(&mut state);
        if let Some(m) = state.txns.by_id.get_mut(id) {
            m.producer_id = pid;
        }
    }
    let m = &state.txns.by_id[id];
    answer(ErrorCode::NONE, m.producer_id, m.epoch)
}

/// One transaction of an AddPartitionsToTxn request: its id, producer id and epoch, whether it
/// only verifies, and its partitions by topic.
type TxnPartitions = (String, i64, i16, bool, Vec<(String, Vec<i32>)>);

pub(super) fn add_partitions(ctx: &Ctx<'_>, req: &AddPartitionsToTxnRequest) -> AddPartitionsToTxnResponse {
    let now = ctx.inner.now_ms();
    let mut state = ctx.inner.state();
    // v0-3: one transaction, the client's; v4+: a batch of them, the brokers' form.
    let batch: Vec<TxnPartitions> = if ctx.version <= 3 {
        vec![(
            req.v3_and_below_transactional_id.to_string(),
            req.v3_and_below_producer_id,
            req.v3_and_below_producer_epoch,
            false,
            req.v3_and_below_topics.iter().map(|t| (t.name.to_string(), t.partitions.to_vec())).collect(),
        )]
    } else {
        req.transactions
            .iter()
            .map(|t| {
                (
                    t.transactional_id.to_string(),
                    t.producer_id,
                    t.producer_epoch,
                    t.verify_only,
                    t.topics.iter().map(|t| (t.name.to_string(), t.partitions.to_vec())).collect(),
                )
            })
            .collect()
    };
    let mut results = Vec::new();
    for (id, pid, epoch, verify_only, topics) in batch {
        let partitions: Vec<(String, i32)> = topics.iter().flat_map(|(t, ps)| ps.iter().map(move |p| (t.clone(), *p))).collect();
        let unknown: BTreeSet<(String, i32)> =
            partitions.iter().filter(|(t, p)| state.topics.get(t).and_then(|topic| topic.partition(*p)).is_none()).cloned().collect();
        // A client's request (v0-3) needs WRITE on each topic; brokers' (v4+) were let in whole.
        let refused: BTreeSet<(String, i32)> =
            partitions.iter().filter(|(t, _)| ctx.version <= 3 && ctx.topic_access(&state, op::WRITE, t).is_err()).cloned().collect();
        // Refused or unknown partitions fail the request before the coordinator sees it.
        let outcome = if !verify_only && (!refused.is_empty() || !unknown.is_empty()) { Err(ErrorCode::OPERATION_NOT_ATTEMPTED) } else { Ok(()) };
        let outcome = outcome.and_then(|()| coordinates(ctx, &state, &id)).and_then(|()| {
            if verify_only {
                let meta = state.txns.by_id.get(&id);
                check_producer(meta, pid, epoch)?;
                return if meta.is_some_and(|m| m.state == TxnState::Ongoing && partitions.iter().all(|p| m.partitions.contains(p))) {
                    Ok(())
                } else {
                    Err(ErrorCode::INVALID_TXN_STATE)
                };
            }
            state.txns.add(&id, pid, epoch, &partitions, None, now)
        });
        let code = |t: &str, p: i32| match outcome {
            Ok(()) => ErrorCode::NONE,
            Err(ErrorCode::OPERATION_NOT_ATTEMPTED) if refused.contains(&(t.to_owned(), p)) => ErrorCode::TOPIC_AUTHORIZATION_FAILED,
            Err(ErrorCode::OPERATION_NOT_ATTEMPTED) if unknown.contains(&(t.to_owned(), p)) => ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
            Err(code) => code,
        };
        let topic_results: Vec<AddPartitionsToTxnTopicResult> = topics
            .iter()
            .map(|(t, ps)| AddPartitionsToTxnTopicResult {
                name: s(t),
                results_by_partition: ps
                    .iter()
                    .map(|p| AddPartitionsToTxnPartitionResult { partition_index: *p, partition_error_code: code(t, *p).0, ..Default::default() })
                    .collect(),
                ..Default::default()
            })
            .collect();
        results.push((id, topic_results));
    }
    if ctx.version <= 3 {
        let results_by_topic_v3_and_below = results.pop().map(|(_, r)| r).unwrap_or_default();
        return AddPartitionsToTxnResponse { results_by_topic_v3_and_below, ..Default::default() };
    }
    AddPartitionsToTxnResponse {
        results_by_transaction: results
            .into_iter()
            .map(|(id, topic_results)| AddPartitionsToTxnResult { transactional_id: s(&id), topic_results, ..Default::default() })
            .collect(),
        ..Default::default()
    }
}

pub(super) fn add_offsets(ctx: &Ctx<'_>, req: &AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse {
    let now = ctx.inner.now_ms();
    let mut state = ctx.inner.state();
    let code = coordinates(ctx, &state, &req.transactional_id)
        .and_then(|()| state.txns.add(&req.transactional_id, req.producer_id, req.producer_epoch, &[], Some(&req.group_id), now))
        .err()
        .unwrap_or(ErrorCode::NONE);
    AddOffsetsToTxnResponse { error_code: code.0, ..Default::default() }
}

pub(super) fn end_txn(ctx: &Ctx<'_>, req: &EndTxnRequest) -> EndTxnResponse {
    let now = ctx.inner.now_ms();
    let v2 = ctx.version >= 5;
    let mut state = ctx.inner.state();
    let answer = |code: ErrorCode, pid: i64, epoch: i16| EndTxnResponse { error_code: code.0, producer_id: pid, producer_epoch: epoch, ..Default::default() };
    let id: &str = &req.transactional_id;
    if let Err(code) = coordinates(ctx, &state, id) {
        return answer(code, -1, -1);
    }
    let Some(meta) = state.txns.by_id.get(id).cloned() else { return answer(ErrorCode::INVALID_PRODUCER_ID_MAPPING, -1, -1) };
    if meta.producer_id != req.producer_id {
        return answer(ErrorCode::INVALID_PRODUCER_ID_MAPPING, -1, -1);
    }
    let done = |commit: bool| if commit { TxnState::CompleteCommit } else { TxnState::CompleteAbort };
    // V2: a retry of the EndTxn that bumped the epoch gets the same answer.
    if v2 && req.producer_epoch == meta.last_epoch && meta.state == done(req.committed) {
        return answer(ErrorCode::NONE, meta.producer_id, meta.epoch);
    }
    if req.producer_epoch != meta.epoch {
        return answer(ErrorCode::PRODUCER_FENCED, -1, -1);
    }
    match meta.state {
        TxnState::Ongoing => {
            end(&mut state, id, req.committed, v2, now);
            let m = &state.txns.by_id[id];
            answer(ErrorCode::NONE, m.producer_id, m.epoch)
        }
        TxnState::PrepareCommit | TxnState::PrepareAbort => answer(ErrorCode::CONCURRENT_TRANSACTIONS, -1, -1),
        // V1: a retried end of the same kind succeeds; the other kind is a state error.
        s if s == done(req.committed) && !v2 => answer(ErrorCode::NONE, meta.producer_id, meta.epoch),
        // V2: an abort with nothing in the transaction bumps the epoch (a producer recovering).
        TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort if v2 && !req.committed => {
            if let Some(m) = state.txns.by_id.get_mut(id) {
                m.last_epoch = m.epoch;
                m.epoch = m.epoch.saturating_add(1);
                m.state = TxnState::CompleteAbort;
                m.updated_ms = now;
            }
            let m = &state.txns.by_id[id];
            answer(ErrorCode::NONE, m.producer_id, m.epoch)
        }
        _ => answer(ErrorCode::INVALID_TXN_STATE, -1, -1),
    }
}

pub(super) fn txn_offset_commit(ctx: &Ctx<'_>, req: &TxnOffsetCommitRequest) -> TxnOffsetCommitResponse {
    let mut guard = ctx.inner.state();
    let state = &mut *guard;
    let coordinator = match state.coordinator(0, &req.group_id, &ctx.inner.config) {
        Some(b) if b == ctx.broker => None,
        Some(_) => Some(ErrorCode::NOT_COORDINATOR),
        None => Some(ErrorCode::COORDINATOR_NOT_AVAILABLE),
    };
    // Transactions V2 (v5+): the group coordinator adds the group to the transaction itself.
    let now = ctx.inner.now_ms();
    let added = if coordinator.is_none() && ctx.version >= 5 {
        state.txns.add_group_by_coordinator(&req.transactional_id, req.producer_id, req.producer_epoch, &req.group_id, now).err()
    } else {
        None
    };
    // The producer must be the transactional id's current one, with the group in its
    // transaction (AddOffsetsToTxn first, before V2).
    let txn = state.txns.by_id.get(&*req.transactional_id);
    let producer = match txn {
        Some(m) if m.producer_id != req.producer_id => Some(ErrorCode::INVALID_PRODUCER_ID_MAPPING),
        Some(m) if m.epoch != req.producer_epoch => Some(ErrorCode::PRODUCER_FENCED),
        Some(m) if m.state != TxnState::Ongoing || !m.groups.contains(&*req.group_id) => Some(ErrorCode::INVALID_TXN_STATE),
        Some(_) => None,
        None => Some(ErrorCode::INVALID_PRODUCER_ID_MAPPING),
    };
    // KIP-447: the group checks the member and its generation (a consumer group member's epoch)
    // as Kafka's GroupCoordinator does; a commit from outside any generation passes.
    let group = if coordinator.or(added).or(producer).is_none() {
        super::groups::validate_commit(
            ctx,
            &mut state.groups,
            &req.group_id,
            &req.member_id,
            req.group_instance_id.as_deref(),
            req.generation_id_or_member_epoch,
            true,
        )
        .err()
    } else {
        None
    };
    let error = coordinator.or(added).or(producer).or(group);
    let topics = req
        .topics
        .iter()
        .map(|t| TxnOffsetCommitResponseTopic {
            name: t.name.clone(),
            topic_id: t.topic_id,
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let code = error.unwrap_or_else(|| {
                        // v6 names topics by id.
                        let Some(name) = state.topic_name(&t.name, t.topic_id) else {
                            return if t.name.is_empty() { ErrorCode::UNKNOWN_TOPIC_ID } else { ErrorCode::UNKNOWN_TOPIC_OR_PARTITION };
                        };
                        if let Err(code) = ctx.topic_access(state, op::READ, &name) {
                            return code;
                        }
                        if state.topics.get(&name).and_then(|topic| topic.partition(p.partition_index)).is_none() {
                            return ErrorCode::UNKNOWN_TOPIC_OR_PARTITION;
                        }
                        state.groups.stage(
                            req.producer_id,
                            &req.group_id,
                            &name,
                            p.partition_index,
                            p.committed_offset,
                            p.committed_leader_epoch,
                            p.committed_metadata.clone(),
                        );
                        ErrorCode::NONE
                    });
                    TxnOffsetCommitResponsePartition { partition_index: p.partition_index, error_code: code.0, ..Default::default() }
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    TxnOffsetCommitResponse { topics, ..Default::default() }
}

pub(super) fn describe_producers(ctx: &Ctx<'_>, req: &DescribeProducersRequest) -> DescribeProducersResponse {
    let state = ctx.inner.state();
    let topics = req
        .topics
        .iter()
        .map(|t| TopicResponse {
            name: t.name.clone(),
            partitions: t
                .partition_indexes
                .iter()
                .map(|p| {
                    let partition = state.topics.get(&*t.name).and_then(|topic| topic.partition(*p));
                    let mut out = PartitionResponse { partition_index: *p, ..Default::default() };
                    match partition {
                        _ if ctx.topic_access(&state, op::READ, &t.name).is_err() => out.error_code = ErrorCode::TOPIC_AUTHORIZATION_FAILED.0,
                        None => out.error_code = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0,
                        Some(partition) if partition.leader != ctx.broker => out.error_code = ErrorCode::NOT_LEADER_OR_FOLLOWER.0,
                        Some(partition) => {
                            out.active_producers = partition
                                .log
                                .producers()
                                .into_iter()
                                .map(|(producer_id, epoch, last_sequence, last_timestamp, coordinator_epoch, start)| ProducerState {
                                    producer_id,
                                    producer_epoch: i32::from(epoch),
                                    last_sequence,
                                    last_timestamp,
                                    coordinator_epoch,
                                    current_txn_start_offset: start,
                                    ..Default::default()
                                })
                                .collect();
                        }
                    }
                    out
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    DescribeProducersResponse { topics, ..Default::default() }
}

pub(super) fn describe_transactions(ctx: &Ctx<'_>, req: &DescribeTransactionsRequest) -> DescribeTransactionsResponse {
    let state = ctx.inner.state();
    let transaction_states = req
        .transactional_ids
        .iter()
        .map(|id| {
            let mut out = describe_transactions_response::TransactionState {
                transactional_id: id.clone(),
                producer_id: -1,
                producer_epoch: -1,
                transaction_start_time_ms: -1,
                ..Default::default()
            };
            let access = if ctx.authorized_in(&state, op::DESCRIBE, resource::TRANSACTIONAL_ID, id) {
                Ok(())
            } else {
                Err(ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
            };
            match (access.and_then(|()| coordinates(ctx, &state, id)), state.txns.by_id.get(&**id)) {
                (Err(code), _) => out.error_code = code.0,
                (Ok(()), None) => out.error_code = ErrorCode::TRANSACTIONAL_ID_NOT_FOUND.0,
                (Ok(()), Some(m)) => {
                    out.transaction_state = s(m.state.name());
                    out.transaction_timeout_ms = m.timeout_ms;
                    out.transaction_start_time_ms = if m.state == TxnState::Ongoing { m.started_ms } else { -1 };
                    out.producer_id = m.producer_id;
                    out.producer_epoch = m.epoch;
                    let mut by_topic: std::collections::BTreeMap<&str, Vec<i32>> = Default::default();
                    // Topics the principal may not DESCRIBE are left out.
                    for (t, p) in m.partitions.iter().filter(|(t, _)| ctx.topic_access(&state, op::DESCRIBE, t).is_ok()) {
                        by_topic.entry(t).or_default().push(*p);
                    }
                    out.topics =
                        by_topic.into_iter().map(|(t, ps)| TopicData { topic: s(t), partitions: ps.into_iter().collect(), ..Default::default() }).collect();
                }
            }
            out
        })
        .collect();
    DescribeTransactionsResponse { transaction_states, ..Default::default() }
}

pub(super) fn list_transactions(ctx: &Ctx<'_>, req: &ListTransactionsRequest) -> ListTransactionsResponse {
    let now = ctx.inner.now_ms();
    let state = ctx.inner.state();
    let known = ["Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"];
    let unknown_state_filters = req.state_filters.iter().filter(|f| !known.contains(&&***f)).cloned().collect();
    let transaction_states = state
        .txns
        .by_id
        .iter()
        // Each broker lists the transactions it coordinates.
        .filter(|(id, _)| state.coordinator(1, id, &ctx.inner.config) == Some(ctx.broker))
        .filter(|(id, _)| ctx.authorized_in(&state, op::DESCRIBE, resource::TRANSACTIONAL_ID, id))
        .filter(|(_, m)| req.state_filters.is_empty() || req.state_filters.iter().any(|f| &**f == m.state.name()))
        .filter(|(_, m)| req.producer_id_filters.is_empty() || req.producer_id_filters.contains(&m.producer_id))
        .filter(|(_, m)| req.duration_filter < 0 || (m.state == TxnState::Ongoing && now - m.started_ms >= req.duration_filter))
        .map(|(id, m)| list_transactions_response::TransactionState {
            transactional_id: s(id),
            producer_id: m.producer_id,
            transaction_state: s(m.state.name()),
            ..Default::default()
        })
        .collect();
    ListTransactionsResponse { unknown_state_filters, transaction_states, ..Default::default() }
}

/// WriteTxnMarkers (coordinator to partition leaders, CLUSTER_ACTION): each marker is written
/// to the partitions this broker leads, closing its producer's transaction there; an older
/// producer epoch than the partition knows is INVALID_PRODUCER_EPOCH.
pub(super) fn write_txn_markers(ctx: &Ctx<'_>, req: &WriteTxnMarkersRequest) -> WriteTxnMarkersResponse {
    use kwire::messages::write_txn_markers_response::{WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult};
    let allowed = ctx.authorized(crate::acl::op::CLUSTER_ACTION, crate::acl::resource::CLUSTER, crate::acl::CLUSTER_NAME);
    let now = ctx.inner.now_ms();
    let mut state = ctx.inner.state();
    let markers = req
        .markers
        .iter()
        .map(|m| WritableTxnMarkerResult {
            producer_id: m.producer_id,
            topics: m
                .topics
                .iter()
                .map(|t| WritableTxnMarkerTopicResult {
                    name: t.name.clone(),
                    partitions: t
                        .partition_indexes
                        .iter()
                        .map(|p| {
                            let code = match state.topics.get_mut(&*t.name).and_then(|topic| topic.partition_mut(*p)) {
                                _ if !allowed => ErrorCode::CLUSTER_AUTHORIZATION_FAILED,
                                None => ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                                Some(part) if part.leader != ctx.broker => ErrorCode::NOT_LEADER_OR_FOLLOWER,
                                Some(part) if part.log.producers().iter().any(|(pid, epoch, ..)| *pid == m.producer_id && *epoch > m.producer_epoch) => {
                                    ErrorCode::INVALID_PRODUCER_EPOCH
                                }
                                Some(part) => {
                                    let leader_epoch = part.leader_epoch;
                                    part.log.append_marker(m.producer_id, m.producer_epoch, m.transaction_result, m.coordinator_epoch, now, leader_epoch);
                                    ErrorCode::NONE
                                }
                            };
                            WritableTxnMarkerPartitionResult { partition_index: *p, error_code: code.0, ..Default::default() }
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    drop(state);
    ctx.inner.wake();
    WriteTxnMarkersResponse { markers, ..Default::default() }
}
