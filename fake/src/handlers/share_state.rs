//! InitializeShareGroupState, ReadShareGroupState, WriteShareGroupState,
//! DeleteShareGroupState and ReadShareGroupStateSummary: the share coordinator's apis (broker to
//! coordinator, CLUSTER_ACTION), over [`crate::share_state`]. A partition's state lives with
//! the coordinator of its key `group:topicId:partition`.

use kwire::messages::*;
use kwire::{ErrorCode, Uuid};

use super::Ctx;
use crate::acl::{op, resource, CLUSTER_NAME};
use crate::share_state::{PartitionState, StateBatch};

/// The error for a partition before its state is looked at: CLUSTER_AUTHORIZATION_FAILED, or
/// NOT_COORDINATOR when another broker coordinates its key.
fn check(ctx: &Ctx<'_>, allowed: bool, group: &str, topic: Uuid, partition: i32) -> Result<(), ErrorCode> {
    if !allowed {
        return Err(ErrorCode::CLUSTER_AUTHORIZATION_FAILED);
    }
    // Kafka's `Uuid.toString`: URL-safe base64 without padding.
    let id = base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, topic.as_bytes());
    let key = format!("{group}:{id}:{partition}");
    match ctx.inner.state().coordinator(2, &key, &ctx.inner.config) {
        Some(b) if b == ctx.broker => Ok(()),
        Some(_) => Err(ErrorCode::NOT_COORDINATOR),
        None => Err(ErrorCode::COORDINATOR_NOT_AVAILABLE),
    }
}

fn message(code: ErrorCode) -> Option<kwire::ByteString> {
    (!code.is_ok()).then(|| super::s(code.message().unwrap_or("")))
}

fn allowed(ctx: &Ctx<'_>) -> bool {
    ctx.authorized(op::CLUSTER_ACTION, resource::CLUSTER, CLUSTER_NAME)
}

pub(super) fn initialize(ctx: &Ctx<'_>, req: &InitializeShareGroupStateRequest) -> InitializeShareGroupStateResponse {
    use initialize_share_group_state_response::*;
    let ok = allowed(ctx);
    let results = req
        .topics
        .iter()
        .map(|t| InitializeStateResult {
            topic_id: t.topic_id,
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let r = check(ctx, ok, &req.group_id, t.topic_id, p.partition).and_then(|()| {
                        ctx.inner.state().share_states.initialize((req.group_id.to_string(), t.topic_id, p.partition), p.state_epoch, p.start_offset)
                    });
                    let code = r.err().unwrap_or(ErrorCode::NONE);
                    PartitionResult { partition: p.partition, error_code: code.0, error_message: message(code), ..Default::default() }
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    InitializeShareGroupStateResponse { results, ..Default::default() }
}

pub(super) fn read(ctx: &Ctx<'_>, req: &ReadShareGroupStateRequest) -> ReadShareGroupStateResponse {
    use read_share_group_state_response::*;
    let ok = allowed(ctx);
    let results = req
        .topics
        .iter()
        .map(|t| ReadStateResult {
            topic_id: t.topic_id,
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let mut out = PartitionResult { partition: p.partition, state_epoch: -1, start_offset: -1, ..Default::default() };
                    let r = check(ctx, ok, &req.group_id, t.topic_id, p.partition)
                        .and_then(|()| ctx.inner.state().share_states.read(&(req.group_id.to_string(), t.topic_id, p.partition), p.leader_epoch));
                    match r {
                        // Never initialised: no state yet, as an uninitialised share partition reads.
                        Ok(None) => {}
                        Ok(Some(st)) => {
                            out.state_epoch = st.state_epoch;
                            out.start_offset = st.start_offset;
                            out.state_batches = st
                                .batches
                                .iter()
                                .map(|b| StateBatch {
                                    first_offset: b.first,
                                    last_offset: b.last,
                                    delivery_state: b.delivery_state,
                                    delivery_count: b.delivery_count,
                                    ..Default::default()
                                })
                                .collect();
                        }
                        Err(code) => {
                            out.error_code = code.0;
                            out.error_message = message(code);
                        }
                    }
                    out
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    ReadShareGroupStateResponse { results, ..Default::default() }
}

pub(super) fn summary(ctx: &Ctx<'_>, req: &ReadShareGroupStateSummaryRequest) -> ReadShareGroupStateSummaryResponse {
    use read_share_group_state_summary_response::*;
    let ok = allowed(ctx);
    let results = req
        .topics
        .iter()
        .map(|t| ReadStateSummaryResult {
            topic_id: t.topic_id,
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let mut out = PartitionResult {
                        partition: p.partition,
                        state_epoch: -1,
                        leader_epoch: -1,
                        start_offset: -1,
                        delivery_complete_count: -1,
                        ..Default::default()
                    };
                    let r = check(ctx, ok, &req.group_id, t.topic_id, p.partition)
                        .and_then(|()| ctx.inner.state().share_states.read(&(req.group_id.to_string(), t.topic_id, p.partition), p.leader_epoch));
                    match r {
                        Ok(None) => {}
                        Ok(Some(st)) => {
                            out.state_epoch = st.state_epoch;
                            out.leader_epoch = st.leader_epoch;
                            out.start_offset = st.start_offset;
                            out.delivery_complete_count = st.delivery_complete_count;
                        }
                        Err(code) => {
                            out.error_code = code.0;
                            out.error_message = message(code);
                        }
                    }
                    out
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    ReadShareGroupStateSummaryResponse { results, ..Default::default() }
}

pub(super) fn write(ctx: &Ctx<'_>, req: &WriteShareGroupStateRequest) -> WriteShareGroupStateResponse {
    use write_share_group_state_response::*;
    let ok = allowed(ctx);
    let results = req
        .topics
        .iter()
        .map(|t| WriteStateResult {
            topic_id: t.topic_id,
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let new = PartitionState {
                        state_epoch: p.state_epoch,
                        leader_epoch: p.leader_epoch,
                        start_offset: p.start_offset,
                        delivery_complete_count: p.delivery_complete_count,
                        batches: p
                            .state_batches
                            .iter()
                            .map(|b| StateBatch {
                                first: b.first_offset,
                                last: b.last_offset,
                                delivery_state: b.delivery_state,
                                delivery_count: b.delivery_count,
                            })
                            .collect(),
                    };
                    let r = check(ctx, ok, &req.group_id, t.topic_id, p.partition)
                        .and_then(|()| ctx.inner.state().share_states.write((req.group_id.to_string(), t.topic_id, p.partition), new));
                    let code = r.err().unwrap_or(ErrorCode::NONE);
                    PartitionResult { partition: p.partition, error_code: code.0, error_message: message(code), ..Default::default() }
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    WriteShareGroupStateResponse { results, ..Default::default() }
}

pub(super) fn delete(ctx: &Ctx<'_>, req: &DeleteShareGroupStateRequest) -> DeleteShareGroupStateResponse {
    use delete_share_group_state_response::*;
    let ok = allowed(ctx);
    let results = req
        .topics
        .iter()
        .map(|t| DeleteStateResult {
            topic_id: t.topic_id,
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let r = check(ctx, ok, &req.group_id, t.topic_id, p.partition)
                        .map(|()| ctx.inner.state().share_states.by_key.remove(&(req.group_id.to_string(), t.topic_id, p.partition)));
                    let code = r.err().unwrap_or(ErrorCode::NONE);
                    PartitionResult { partition: p.partition, error_code: code.0, error_message: message(code), ..Default::default() }
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    DeleteShareGroupStateResponse { results, ..Default::default() }
}
