//! Fetch: records from each partition's leader, up to the high watermark (read uncommitted) or
//! the last stable offset with the aborted transactions listed (read committed), leader epochs
//! checked (KIP-320) and divergence reported (KIP-595); the answer waits for `min_bytes` or
//! `max_wait_ms`. Fetch sessions (KIP-227) are not kept: every answer says session 0, and a
//! client then sends full requests, as it does to a broker with no session cache.

use std::time::Duration;

use kwire::messages::{
    fetch_response::{AbortedTransaction, EpochEndOffset, FetchableTopicResponse, LeaderIdAndEpoch, NodeEndpoint, PartitionData},
    FetchRequest, FetchResponse,
};
use kwire::{Bytes, BytesMut, ErrorCode, Uuid};

use super::{s, Ctx};

/// Read committed (KIP-98).
const READ_COMMITTED: i8 = 1;

/// Answers once `min_bytes` are there, an error is, or `max_wait_ms` (capped by the cluster's
/// `max_wait`) has passed.
pub(super) async fn fetch(ctx: &Ctx<'_>, req: &FetchRequest) -> FetchResponse {
    if req.session_id != 0 {
        // No session was ever created here.
        return FetchResponse { error_code: ErrorCode::FETCH_SESSION_ID_NOT_FOUND.0, session_id: 0, ..Default::default() };
    }
    let wait = Duration::from_millis(u64::try_from(req.max_wait_ms).unwrap_or(0)).min(ctx.inner.config.max_wait);
    let deadline = tokio::time::Instant::now() + wait;
    let min_bytes = usize::try_from(req.min_bytes).unwrap_or(0);
    loop {
        // Registered before reading, so an append between the read and the wait is not missed.
        let appended = ctx.inner.appended.notified();
        tokio::pin!(appended);
        appended.as_mut().enable();
        let (response, size, any_error) = fetch_once(ctx, req);
        if size >= min_bytes || any_error || tokio::time::Instant::now() >= deadline {
            return response;
        }
        if tokio::time::timeout_at(deadline, appended).await.is_err() {
            return fetch_once(ctx, req).0;
        }
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
            let error = match (found, partition) {
                (None, _) if version >= 13 => Some(ErrorCode::UNKNOWN_TOPIC_ID),
                (None, _) | (_, None) => Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION),
                (Some(_), Some(partition)) => {
                    let log = &partition.log;
                    if partition.leader != ctx.broker {
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
                        if let Some((epoch, end)) = diverged {
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
                                data.aborted_transactions = Some(aborted.iter().map(|a| AbortedTransaction { producer_id: a.producer_id, first_offset: a.first_offset, ..Default::default() }).collect());
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
