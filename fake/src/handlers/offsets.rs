//! ListOffsets, OffsetForLeaderEpoch and DeleteRecords: offsets of a partition's log, from its
//! leader.

use kwire::messages::{
    delete_records_response::{DeleteRecordsPartitionResult, DeleteRecordsTopicResult},
    list_offsets_response::{ListOffsetsPartitionResponse, ListOffsetsTopicResponse},
    offset_for_leader_epoch_response::{EpochEndOffset, OffsetForLeaderTopicResult},
    DeleteRecordsRequest, DeleteRecordsResponse, ListOffsetsRequest, ListOffsetsResponse, OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse,
};
use kwire::{smallvec, ErrorCode};

use super::Ctx;
use crate::acl::{op, resource, CLUSTER_NAME};
use crate::topics::Partition;

/// The leader check every partition request makes: the partition, if this broker leads it
/// under `current_epoch` (-1: any).
fn led<'a>(ctx: &Ctx<'_>, partition: Option<&'a Partition>, current_epoch: i32) -> Result<&'a Partition, ErrorCode> {
    let p = partition.ok_or(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)?;
    if p.leader != ctx.broker {
        return Err(ErrorCode::NOT_LEADER_OR_FOLLOWER);
    }
    if current_epoch >= 0 && current_epoch > p.leader_epoch {
        return Err(ErrorCode::UNKNOWN_LEADER_EPOCH);
    }
    if current_epoch >= 0 && current_epoch < p.leader_epoch {
        return Err(ErrorCode::FENCED_LEADER_EPOCH);
    }
    Ok(p)
}

/// Special timestamps of ListOffsets.
const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
const MAX_TIMESTAMP: i64 = -3;
const EARLIEST_LOCAL: i64 = -4;
const LATEST_TIERED: i64 = -5;
const EARLIEST_PENDING_UPLOAD: i64 = -6;

pub(super) fn list_offsets(ctx: &Ctx<'_>, req: &ListOffsetsRequest) -> ListOffsetsResponse {
    let version = ctx.version;
    let state = ctx.inner.state();
    let topics = req
        .topics
        .iter()
        .map(|t| ListOffsetsTopicResponse {
            name: t.name.clone(),
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let mut out =
                        ListOffsetsPartitionResponse { partition_index: p.partition_index, timestamp: -1, offset: -1, leader_epoch: -1, ..Default::default() };
                    let partition = state.topics.get(&*t.name).and_then(|topic| topic.partition(p.partition_index));
                    match ctx.topic_access(&state, op::DESCRIBE, &t.name).and_then(|()| led(ctx, partition, p.current_leader_epoch)) {
                        Err(code) => out.error_code = code.0,
                        Ok(partition) => {
                            let log = &partition.log;
                            // Read committed: the last stable offset is the end (KIP-98).
                            let latest = if req.isolation_level == 1 { log.last_stable() } else { log.high_watermark() };
                            let (offset, timestamp) = match p.timestamp {
                                LATEST => (latest, -1),
                                EARLIEST | EARLIEST_LOCAL => (log.log_start(), -1),
                                // No tiered storage: nothing was uploaded.
                                LATEST_TIERED | EARLIEST_PENDING_UPLOAD => (-1, -1),
                                MAX_TIMESTAMP => log.offset_for_timestamp(None).unwrap_or((-1, -1)),
                                t if t >= 0 => log.offset_for_timestamp(Some(t)).unwrap_or((-1, -1)),
                                _ => {
                                    out.error_code = ErrorCode::INVALID_REQUEST.0;
                                    (-1, -1)
                                }
                            };
                            out.offset = offset;
                            out.timestamp = timestamp;
                            if version >= 4 {
                                out.leader_epoch = partition.leader_epoch;
                            }
                            // v0 answers a list of offsets instead (at most max_num_offsets).
                            if version == 0 {
                                out.old_style_offsets = if offset >= 0 && p.max_num_offsets > 0 { smallvec![offset] } else { smallvec![] };
                                out.offset = -1;
                            }
                        }
                    }
                    out
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    ListOffsetsResponse { topics, ..Default::default() }
}

pub(super) fn offset_for_leader_epoch(ctx: &Ctx<'_>, req: &OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse {
    let state = ctx.inner.state();
    let topics = req
        .topics
        .iter()
        .map(|t| OffsetForLeaderTopicResult {
            topic: t.topic.clone(),
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let partition = state.topics.get(&*t.topic).and_then(|topic| topic.partition(p.partition));
                    let mut out = EpochEndOffset { partition: p.partition, leader_epoch: -1, end_offset: -1, ..Default::default() };
                    // Followers may (CLUSTER_ACTION); clients need DESCRIBE on the topic.
                    let allowed = ctx.authorized_in(&state, op::CLUSTER_ACTION, resource::CLUSTER, CLUSTER_NAME)
                        || ctx.authorized_in(&state, op::DESCRIBE, resource::TOPIC, &t.topic);
                    let access = if allowed { Ok(()) } else { Err(ErrorCode::TOPIC_AUTHORIZATION_FAILED) };
                    match access.and_then(|()| led(ctx, partition, p.current_leader_epoch)) {
                        Err(code) => out.error_code = code.0,
                        // Older than every epoch known, Kafka answers with undefined ones.
                        Ok(partition) => {
                            if let Some((epoch, end)) = partition.log.epoch_end(p.leader_epoch) {
                                out.leader_epoch = epoch;
                                out.end_offset = end;
                            }
                        }
                    }
                    out
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    OffsetForLeaderEpochResponse { topics, ..Default::default() }
}

pub(super) fn delete_records(ctx: &Ctx<'_>, req: &DeleteRecordsRequest) -> DeleteRecordsResponse {
    let mut state = ctx.inner.state();
    let topics = req
        .topics
        .iter()
        .map(|t| DeleteRecordsTopicResult {
            name: t.name.clone(),
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let mut out = DeleteRecordsPartitionResult { partition_index: p.partition_index, low_watermark: -1, ..Default::default() };
                    if let Err(code) = ctx.topic_access(&state, op::DELETE, &t.name) {
                        out.error_code = code.0;
                        return out;
                    }
                    let partition = state.topics.get_mut(&*t.name).and_then(|topic| topic.partition_mut(p.partition_index));
                    match partition {
                        None => out.error_code = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0,
                        Some(p2) if p2.leader != ctx.broker => out.error_code = ErrorCode::NOT_LEADER_OR_FOLLOWER.0,
                        Some(partition) => match partition.log.delete_before(p.offset) {
                            Ok(low) => out.low_watermark = low,
                            Err(code) => out.error_code = code.0,
                        },
                    }
                    out
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    DeleteRecordsResponse { topics, ..Default::default() }
}
