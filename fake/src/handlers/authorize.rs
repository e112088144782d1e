//! The authorizer's checks that refuse a whole request before its handler runs, as Kafka's
//! `KafkaApis` makes them: a group api without READ (or DESCRIBE, DELETE) on its group, a
//! transactional one without WRITE on its transactional id. Checks of one topic, group or
//! resource among many are the handlers' own, entry by entry.

use kwire::{ErrorCode, RequestKind};

use super::Ctx;
use crate::acl::{op, resource, CLUSTER_NAME};
use crate::versions::Release;

/// The error that refuses `request` for this connection's principal, if one does.
pub(super) fn refusal(ctx: &Ctx<'_>, request: &RequestKind) -> Option<ErrorCode> {
    if ctx.unrestricted() {
        return None;
    }
    let state = ctx.inner.state();
    let may = |operation: i8, resource_type: i8, name: &str| ctx.authorized_in(&state, operation, resource_type, name);
    let group = |operation: i8, name: &str| (!may(operation, resource::GROUP, name)).then_some(ErrorCode::GROUP_AUTHORIZATION_FAILED);
    let transactional_id = |name: &str| (!may(op::WRITE, resource::TRANSACTIONAL_ID, name)).then_some(ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
    let cluster = |operation: i8| (!may(operation, resource::CLUSTER, CLUSTER_NAME)).then_some(ErrorCode::CLUSTER_AUTHORIZATION_FAILED);
    let checks_topics = ctx.inner.config.release >= Release::V4_0;
    let hidden_topic = |names: Option<&[kwire::ByteString]>| {
        names
            .filter(|_| checks_topics)
            .unwrap_or_default()
            .iter()
            .any(|n| !may(op::DESCRIBE, resource::TOPIC, n))
            .then_some(ErrorCode::TOPIC_AUTHORIZATION_FAILED)
    };
    match request {
        RequestKind::Produce(r) => r.transactional_id.as_deref().and_then(transactional_id),
        RequestKind::JoinGroup(r) => group(op::READ, &r.group_id),
        RequestKind::SyncGroup(r) => group(op::READ, &r.group_id),
        RequestKind::Heartbeat(r) => group(op::READ, &r.group_id),
        RequestKind::LeaveGroup(r) => group(op::READ, &r.group_id),
        RequestKind::OffsetCommit(r) => group(op::READ, &r.group_id),
        // From 4.0, a subscription naming a topic the principal may not DESCRIBE is refused whole.
        RequestKind::ConsumerGroupHeartbeat(r) => group(op::READ, &r.group_id).or_else(|| hidden_topic(r.subscribed_topic_names.as_deref())),
        RequestKind::ShareGroupHeartbeat(r) => group(op::READ, &r.group_id).or_else(|| hidden_topic(r.subscribed_topic_names.as_deref())),
        RequestKind::ShareFetch(r) => group(op::READ, r.group_id.as_deref().unwrap_or_default()),
        RequestKind::ShareAcknowledge(r) => group(op::READ, r.group_id.as_deref().unwrap_or_default()),
        RequestKind::OffsetDelete(r) => group(op::DELETE, &r.group_id),
        // v8+ names groups in a list, each checked by the handler.
        RequestKind::OffsetFetch(r) if ctx.version < 8 => group(op::DESCRIBE, &r.group_id),
        RequestKind::EndTxn(r) => transactional_id(&r.transactional_id),
        RequestKind::AddOffsetsToTxn(r) => transactional_id(&r.transactional_id).or_else(|| group(op::READ, &r.group_id)),
        RequestKind::TxnOffsetCommit(r) => transactional_id(&r.transactional_id).or_else(|| group(op::READ, &r.group_id)),
        RequestKind::AddPartitionsToTxn(r) if ctx.version <= 3 => transactional_id(&r.v3_and_below_transactional_id),
        // v4+ comes from brokers verifying a transaction (KIP-890).
        RequestKind::AddPartitionsToTxn(_) => cluster(op::CLUSTER_ACTION),
        RequestKind::InitProducerId(r) => match r.transactional_id.as_deref() {
            Some(id) => transactional_id(id),
            // An idempotent producer: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic.
            None if may(op::IDEMPOTENT_WRITE, resource::CLUSTER, CLUSTER_NAME) || ctx.authorized_any_in(&state, op::WRITE, resource::TOPIC) => None,
            None => Some(ErrorCode::CLUSTER_AUTHORIZATION_FAILED),
        },
        _ => None,
    }
}
