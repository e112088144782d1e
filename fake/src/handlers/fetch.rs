//! Fetch: records from each partition's leader, up to the high watermark (read uncommitted) or
//! the last stable offset with the aborted transactions listed (read committed), leader epochs
//! checked (KIP-320) and divergence reported (KIP-595); the answer waits for `min_bytes` or
//! `max_wait_ms`. Fetch sessions (KIP-227) from v7: a full request at epoch 0 opens one,
//! incremental requests name what changed, and their answers only partitions with news.

use std::time::Duration;

use kwire::messages::{
    fetch_response::{AbortedTransaction, EpochEndOffset, FetchableTopicResponse, LeaderIdAndEpoch, NodeEndpoint, PartitionData},
    FetchRequest, FetchResponse,
};
use kwire::{Bytes, BytesMut, ErrorCode, Uuid};

use super::{s, Ctx};
use crate::acl::{op, resource};
use crate::fetch_sessions::SessionPartition;

/// Read committed (KIP-98).
const READ_COMMITTED: i8 = 1;

/// Answers once `min_bytes` are there, an error is, or `max_wait_ms` (capped by the cluster's
/// `max_wait`) has passed.
pub(super) async fn fetch(ctx: &Ctx<'_>, req: &FetchRequest) -> FetchResponse {
    let session = match session(ctx, req) {
        Ok(s) => s,
        Err(code) => return FetchResponse { error_code: code.0, session_id: 0, ..Default::default() },
    };
    // The partitions to read: the request's, or with a session all of its partitions.
    let full;
    let req = match &session {
        Some((id, _)) => {
            full = session_request(ctx, req, *id);
            &full
        }
        None => req,
    };
    let wait = Duration::from_millis(u64::try_from(req.max_wait_ms).unwrap_or(0)).min(ctx.inner.config.max_wait);
    let deadline = tokio::time::Instant::now() + wait;
    let min_bytes = usize::try_from(req.min_bytes).unwrap_or(0);
    let mut response = loop {
        // Registered before reading, so an append between the read and the wait is not missed.
        let appended = ctx.inner.appended.notified();
        tokio::pin!(appended);
        appended.as_mut().enable();
        let (response, size, any_error) = fetch_once(ctx, req);
        if size >= min_bytes || any_error || tokio::time::Instant::now() >= deadline {
            break response;
        }
        if tokio::time::timeout_at(deadline, appended).await.is_err() {
            break fetch_once(ctx, req).0;
        }
    };
    if let Some((id, incremental)) = session {
        response.session_id = id;
        answered(ctx, id, incremental, &mut response);
    }
    response
}

/// The request's session (KIP-227): `Ok(None)` for a sessionless fetch, else its id and
/// whether the request is incremental; a new session for a full request at epoch 0, its
/// partitions updated for an incremental one.
fn session(ctx: &Ctx<'_>, req: &FetchRequest) -> Result<Option<(i32, bool)>, ErrorCode> {
    const FINAL_EPOCH: i32 = -1;
    if ctx.version < 7 {
        return Ok(None);
    }
    let mut state = ctx.inner.state();
    let state = &mut *state;
    let key = |t: &kwire::messages::fetch_request::FetchTopic, p: i32| (t.topic.to_string(), t.topic_id, p);
    match (req.session_id, req.session_epoch) {
        (0, FINAL_EPOCH) => Ok(None),
        (0, 0) => {
            let id = state.fetch_sessions.create(ctx.broker);
            if let Some(session) = state.fetch_sessions.by_id.get_mut(&(ctx.broker, id)) {
                for t in &req.topics {
                    for p in &t.partitions {
                        session.partitions.insert(key(t, p.partition), SessionPartition { fetch: p.clone(), last_sent: None });
                    }
                }
            }
            Ok(Some((id, false)))
        }
        (0, _) => Err(ErrorCode::INVALID_FETCH_SESSION_EPOCH),
        (id, FINAL_EPOCH) => {
            // Closes the session; the fetch itself is sessionless.
            state.fetch_sessions.by_id.remove(&(ctx.broker, id));
            Ok(None)
        }
        (id, epoch) => {
            let session = state.fetch_sessions.by_id.get_mut(&(ctx.broker, id)).ok_or(ErrorCode::FETCH_SESSION_ID_NOT_FOUND)?;
            if epoch != session.epoch {
                return Err(ErrorCode::INVALID_FETCH_SESSION_EPOCH);
            }
            session.epoch = next_epoch(epoch);
            for t in &req.topics {
                for p in &t.partitions {
                    let entry = session.partitions.entry(key(t, p.partition)).or_insert(SessionPartition { fetch: p.clone(), last_sent: None });
                    entry.fetch = p.clone();
                }
            }
            for f in &req.forgotten_topics_data {
                session.partitions.retain(|(name, tid, p), _| !(*name == *f.topic && *tid == f.topic_id && f.partitions.contains(p)));
            }
            Ok(Some((id, true)))
        }
    }
}

/// Kafka's `RackAwareReplicaSelector` on the leader, for a consumer's Fetch v11+ with a rack:
/// the leader itself (no preferred replica) when it is in the consumer's rack or no replica is,
/// else a replica in that rack that is up (every replica is caught up here: the lowest id).
fn preferred_read_replica(ctx: &Ctx<'_>, state: &crate::cluster::State, partition: &crate::topics::Partition, req: &FetchRequest) -> Option<i32> {
    if !ctx.inner.config.rack_aware_replica_selector || ctx.version < 11 || partition.leader != ctx.broker || req.replica_id >= 0 || req.rack_id.is_empty() {
        return None;
    }
    let in_rack = |b: i32| state.up(b) && state.brokers.get(&b).and_then(|s| s.rack.as_deref()) == Some(&*req.rack_id);
    if in_rack(partition.leader) {
        return None;
    }
    partition.replicas.iter().copied().filter(|b| in_rack(*b)).min()
}

/// The epoch after `epoch` (wrapping to 1, as Kafka's `nextEpoch`).
fn next_epoch(epoch: i32) -> i32 {
    if epoch == i32::MAX {
        1
    } else {
        epoch + 1
    }
}

/// The request with every partition of session `id`.
fn session_request(ctx: &Ctx<'_>, req: &FetchRequest, id: i32) -> FetchRequest {
    use kwire::messages::fetch_request::FetchTopic;
    let state = ctx.inner.state();
    let mut topics: Vec<FetchTopic> = Vec::new();
    if let Some(session) = state.fetch_sessions.by_id.get(&(ctx.broker, id)) {
        for ((name, tid, _), p) in &session.partitions {
            match topics.last_mut().filter(|t| *t.topic == **name && t.topic_id == *tid) {
                Some(t) => t.partitions.push(p.fetch.clone()),
                None => topics.push(FetchTopic { topic: s(name), topic_id: *tid, partitions: vec![p.fetch.clone()], ..Default::default() }),
            }
        }
    }
    FetchRequest { topics, forgotten_topics_data: Vec::new(), ..req.clone() }
}

/// Notes what the session's partitions were told; an incremental answer keeps only the
/// partitions with records, an error, or offsets that moved since.
fn answered(ctx: &Ctx<'_>, id: i32, incremental: bool, response: &mut FetchResponse) {
    let mut state = ctx.inner.state();
    let Some(session) = state.fetch_sessions.by_id.get_mut(&(ctx.broker, id)) else { return };
    for t in &mut response.responses {
        t.partitions.retain(|p| {
            let key = (t.topic.to_string(), t.topic_id, p.partition_index);
            let now = (p.high_watermark, p.last_stable_offset, p.log_start_offset);
            let Some(sp) = session.partitions.get_mut(&key) else { return true };
            let news = p.error_code != 0 || p.records.as_ref().is_some_and(|r| !r.is_empty()) || sp.last_sent != Some(now) || p.diverging_epoch.epoch >= 0;
            sp.last_sent = Some(now);
            !incremental || news
        });
    }
    if incremental {
        response.responses.retain(|t| !t.partitions.is_empty());
    }
}

/// One pass over the partitions: the response, the bytes of records in it, and whether a
/// partition answered with an error.
fn fetch_once(ctx: &Ctx<'_>, req: &FetchRequest) -> (FetchResponse, usize, bool) {
    let version = ctx.version;
    let state = ctx.inner.state();
    let mut budget = usize::try_from(req.max_bytes).unwrap_or(0);
    let mut total = 0;
    let mut any_error = false;
    let mut leaders = std::collections::BTreeSet::new();
    let mut responses = Vec::new();
    for t in &req.topics {
        let found = if version >= 13 { state.topics.iter().find(|(_, topic)| topic.id == t.topic_id) } else { state.topics.get_key_value(&*t.topic) };
        let mut partitions = Vec::new();
        for p in &t.partitions {
            let mut data = PartitionData {
                partition_index: p.partition,
                high_watermark: -1,
                last_stable_offset: -1,
                log_start_offset: -1,
                diverging_epoch: EpochEndOffset { epoch: -1, end_offset: -1, ..Default::default() },
                current_leader: LeaderIdAndEpoch { leader_id: -1, leader_epoch: -1, ..Default::default() },
                preferred_read_replica: -1,
                records: Some(Bytes::new()),
                ..Default::default()
            };
            let partition = found.and_then(|(_, topic)| topic.partition(p.partition));
            // A consumer needs READ on the topic (asked for by name, before it is known to
            // exist: a name it may not read is not told whether it does).
            let named = if version >= 13 { found.map(|(n, _)| n.as_str()) } else { Some(&*t.topic) };
            let denied = req.replica_id < 0 && named.is_some_and(|n| !ctx.authorized_in(&state, op::READ, resource::TOPIC, n));
            let error = match (found, partition) {
                _ if denied => Some(ErrorCode::TOPIC_AUTHORIZATION_FAILED),
                (None, _) if version >= 13 => Some(ErrorCode::UNKNOWN_TOPIC_ID),
                (None, _) | (_, None) => Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION),
                (Some(_), Some(partition)) => {
                    let log = &partition.log;
                    // KIP-392: a consumer that sends its metadata (v11+) may read from a follower.
                    let follower_read = version >= 11 && req.replica_id < 0 && req.replica_state.replica_id < 0 && partition.replicas.contains(&ctx.broker);
                    if partition.leader != ctx.broker && !follower_read {
                        if version >= 12 && partition.leader >= 0 {
                            data.current_leader = LeaderIdAndEpoch { leader_id: partition.leader, leader_epoch: partition.leader_epoch, ..Default::default() };
                            leaders.insert(partition.leader);
                        }
                        Some(ErrorCode::NOT_LEADER_OR_FOLLOWER)
                    } else if p.current_leader_epoch >= 0 && p.current_leader_epoch > partition.leader_epoch {
                        Some(ErrorCode::UNKNOWN_LEADER_EPOCH)
                    } else if p.current_leader_epoch >= 0 && p.current_leader_epoch < partition.leader_epoch {
                        Some(ErrorCode::FENCED_LEADER_EPOCH)
                    } else {
                        data.high_watermark = log.high_watermark();
                        data.last_stable_offset = log.last_stable();
                        data.log_start_offset = log.log_start();
                        // The fetcher's last epoch ended before its offset here: it must truncate.
                        let diverged = (version >= 12 && p.last_fetched_epoch >= 0)
                            .then(|| log.epoch_end(p.last_fetched_epoch))
                            .flatten()
                            .filter(|(epoch, end)| *epoch < p.last_fetched_epoch || *end < p.fetch_offset);
                        if let Some(replica) = preferred_read_replica(ctx, &state, partition, req) {
                            // The leader sends the consumer elsewhere and reads nothing.
                            data.preferred_read_replica = replica;
                            None
                        } else if let Some((epoch, end)) = diverged {
                            data.diverging_epoch = EpochEndOffset { epoch, end_offset: end, ..Default::default() };
                            None
                        } else if p.fetch_offset < log.log_start() || p.fetch_offset > log.end() {
                            Some(ErrorCode::OFFSET_OUT_OF_RANGE)
                        } else {
                            let committed = req.isolation_level == READ_COMMITTED;
                            let upper = if committed { log.last_stable() } else { log.high_watermark() };
                            let limit = usize::try_from(p.partition_max_bytes).unwrap_or(0).min(budget);
                            // KIP-74: the first partition with data returns at least one batch.
                            let limit = if total == 0 { limit.max(1) } else { limit };
                            let (batches, aborted) = if limit == 0 { (Vec::new(), Vec::new()) } else { log.read(p.fetch_offset, upper, limit) };
                            let size: usize = batches.iter().map(Bytes::len).sum();
                            let mut records = BytesMut::with_capacity(size);
                            for b in &batches {
                                records.extend_from_slice(b);
                            }
                            budget = budget.saturating_sub(size);
                            total += size;
                            data.records = Some(records.freeze());
                            if committed && version >= 4 {
                                data.aborted_transactions = Some(
                                    aborted
                                        .iter()
                                        .map(|a| AbortedTransaction { producer_id: a.producer_id, first_offset: a.first_offset, ..Default::default() })
                                        .collect(),
                                );
                            }
                            None
                        }
                    }
                }
            };
            if let Some(code) = error {
                data.error_code = code.0;
                any_error = true;
            }
            partitions.push(data);
        }
        responses.push(FetchableTopicResponse {
            topic: if version >= 13 { Default::default() } else { t.topic.clone() },
            topic_id: if version >= 13 { t.topic_id } else { Uuid::ZERO },
            partitions,
            ..Default::default()
        });
    }
    drop(state);
    let node_endpoints = leaders
        .into_iter()
        .map(|id| {
            let (host, port) = ctx.inner.address(id, ctx.listener);
            NodeEndpoint { node_id: id, host: s(&host), port, rack: None, ..Default::default() }
        })
        .collect();
    (FetchResponse { error_code: ErrorCode::NONE.0, session_id: 0, responses, node_endpoints, ..Default::default() }, total, any_error)
}
