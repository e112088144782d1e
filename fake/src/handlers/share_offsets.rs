//! DescribeShareGroupOffsets, AlterShareGroupOffsets and DeleteShareGroupOffsets (KIP-932's
//! admin apis, the group coordinator's answers): a share group's start offset per partition,
//! set or dropped while the group has no members.

use kwire::messages::{
    alter_share_group_offsets_response, delete_share_group_offsets_response, describe_share_group_offsets_response, AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse, DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse, DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
};
use kwire::ErrorCode;

use super::groups::coordinates;
use super::{s, Ctx};
use crate::cluster::State;
use crate::groups::Group;

/// The group must be a share group this broker coordinates (GROUP_ID_NOT_FOUND otherwise, as
/// the coordinator answers for a missing or other kind of group).
fn share_group(ctx: &Ctx<'_>, state: &State, group: &str) -> Result<bool, ErrorCode> {
    coordinates(ctx, state, group)?;
    match state.groups.groups.get(group) {
        Some(Group::Share(g)) => Ok(g.members.is_empty()),
        _ => Err(ErrorCode::GROUP_ID_NOT_FOUND),
    }
}

fn message(code: ErrorCode) -> Option<kwire::ByteString> {
    (!code.is_ok()).then(|| s(code.message().unwrap_or("")))
}

pub(super) fn describe(ctx: &Ctx<'_>, req: &DescribeShareGroupOffsetsRequest) -> DescribeShareGroupOffsetsResponse {
    use describe_share_group_offsets_response::*;
    let state = ctx.inner.state();
    let groups = req
        .groups
        .iter()
        .map(|g| {
            let mut out = DescribeShareGroupOffsetsResponseGroup { group_id: g.group_id.clone(), ..Default::default() };
            if let Err(code) = share_group(ctx, &state, &g.group_id) {
                out.error_code = code.0;
                out.error_message = message(code);
                return out;
            }
            // Null topics: every partition the group has state for.
            let asked: Vec<(String, Vec<i32>)> = match &g.topics {
                Some(ts) => ts.iter().map(|t| (t.topic_name.to_string(), t.partitions.iter().copied().collect())).collect(),
                None => {
                    let mut all: Vec<(String, Vec<i32>)> = Vec::new();
                    for (group, id, p) in state.groups.share_partitions.by_key.keys() {
                        if *group != *g.group_id {
                            continue;
                        }
                        let Some((name, _)) = state.topics.iter().find(|(_, t)| t.id == *id) else { continue };
                        match all.iter_mut().find(|(n, _)| n == name) {
                            Some((_, ps)) => ps.push(*p),
                            None => all.push((name.clone(), vec![*p])),
                        }
                    }
                    all
                }
            };
            out.topics = asked
                .into_iter()
                .map(|(name, partitions)| {
                    let topic = state.topics.get(&name);
                    let id = topic.map_or(kwire::Uuid::ZERO, |t| t.id);
                    let partitions = partitions
                        .into_iter()
                        .map(|p| {
                            let mut r = DescribeShareGroupOffsetsResponsePartition {
                                partition_index: p,
                                start_offset: -1,
                                leader_epoch: -1,
                                lag: -1,
                                ..Default::default()
                            };
                            match topic.and_then(|t| t.partition(p)) {
                                None => {
                                    r.error_code = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0;
                                    r.error_message = message(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
                                }
                                Some(part) => {
                                    if let Some(sp) = state.groups.share_partitions.by_key.get(&(g.group_id.to_string(), id, p)) {
                                        r.start_offset = sp.start;
                                        r.leader_epoch = part.leader_epoch;
                                        // KIP-1226: the records from the start offset not yet done with.
                                        let done = sp
                                            .records
                                            .values()
                                            .filter(|f| {
                                                matches!(
                                                    f.state,
                                                    crate::groups::share_partition::RecordState::Acknowledged
                                                        | crate::groups::share_partition::RecordState::Archived
                                                )
                                            })
                                            .count() as i64;
                                        if ctx.version >= 1 {
                                            r.lag = (part.log.high_watermark() - sp.start - done).max(0);
                                        }
                                    }
                                }
                            }
                            r
                        })
                        .collect();
                    DescribeShareGroupOffsetsResponseTopic { topic_name: s(&name), topic_id: id, partitions, ..Default::default() }
                })
                .collect();
            out
        })
        .collect();
    DescribeShareGroupOffsetsResponse { groups, ..Default::default() }
}

pub(super) fn alter(ctx: &Ctx<'_>, req: &AlterShareGroupOffsetsRequest) -> AlterShareGroupOffsetsResponse {
    use alter_share_group_offsets_response::*;
    let mut state = ctx.inner.state();
    let refused = match share_group(ctx, &state, &req.group_id) {
        Ok(true) => None,
        // Start offsets change only while no member consumes.
        Ok(false) => Some(ErrorCode::NON_EMPTY_GROUP),
        Err(code) => Some(code),
    };
    if let Some(code) = refused {
        return AlterShareGroupOffsetsResponse { error_code: code.0, error_message: message(code), ..Default::default() };
    }
    let mut responses = Vec::new();
    for t in &req.topics {
        let topic =
            state.topics.get(&*t.topic_name).map(|tp| (tp.id, tp.partitions.iter().map(|p| (p.log.log_start(), p.log.high_watermark())).collect::<Vec<_>>()));
        let mut partitions = Vec::new();
        for p in &t.partitions {
            let bounds = topic.as_ref().and_then(|(_, ps)| usize::try_from(p.partition_index).ok().and_then(|i| ps.get(i).copied()));
            let code = match (&topic, bounds) {
                (Some((id, _)), Some((start, end))) => {
                    if p.start_offset < start || p.start_offset > end {
                        ErrorCode::OFFSET_OUT_OF_RANGE
                    } else {
                        let key = (req.group_id.to_string(), *id, p.partition_index);
                        let rules = super::share::rules(&state.groups, &req.group_id);
                        state.groups.share_partitions.by_key.insert(key, crate::groups::share_partition::SharePartition::new(p.start_offset, rules));
                        ErrorCode::NONE
                    }
                }
                _ => ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
            };
            partitions.push(AlterShareGroupOffsetsResponsePartition {
                partition_index: p.partition_index,
                error_code: code.0,
                error_message: message(code),
                ..Default::default()
            });
        }
        responses.push(AlterShareGroupOffsetsResponseTopic {
            topic_name: t.topic_name.clone(),
            topic_id: topic.map_or(kwire::Uuid::ZERO, |(id, _)| id),
            partitions,
            ..Default::default()
        });
    }
    AlterShareGroupOffsetsResponse { responses, ..Default::default() }
}

pub(super) fn delete(ctx: &Ctx<'_>, req: &DeleteShareGroupOffsetsRequest) -> DeleteShareGroupOffsetsResponse {
    use delete_share_group_offsets_response::*;
    let mut state = ctx.inner.state();
    let refused = match share_group(ctx, &state, &req.group_id) {
        Ok(true) => None,
        Ok(false) => Some(ErrorCode::NON_EMPTY_GROUP),
        Err(code) => Some(code),
    };
    if let Some(code) = refused {
        return DeleteShareGroupOffsetsResponse { error_code: code.0, error_message: message(code), ..Default::default() };
    }
    let responses = req
        .topics
        .iter()
        .map(|t| {
            let id = state.topics.get(&*t.topic_name).map(|tp| tp.id);
            let code = match id {
                Some(id) => {
                    let group = req.group_id.to_string();
                    state.groups.share_partitions.by_key.retain(|(g, tid, _), _| !(*g == group && *tid == id));
                    ErrorCode::NONE
                }
                None => ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
            };
            DeleteShareGroupOffsetsResponseTopic {
                topic_name: t.topic_name.clone(),
                topic_id: id.unwrap_or(kwire::Uuid::ZERO),
                error_code: code.0,
                error_message: message(code),
                ..Default::default()
            }
        })
        .collect();
    DeleteShareGroupOffsetsResponse { responses, ..Default::default() }
}
