//! ApiVersions, Metadata, DescribeCluster and FindCoordinator: what the cluster looks like.

use kwire::messages::{
    api_versions_response::{ApiVersion, FinalizedFeatureKey, SupportedFeatureKey},
    describe_cluster_response::DescribeClusterBroker,
    find_coordinator_response::Coordinator,
    metadata_response::{MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic},
    ApiVersionsResponse, DescribeClusterRequest, DescribeClusterResponse, DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse,
    FindCoordinatorRequest, FindCoordinatorResponse, MetadataRequest, MetadataResponse,
};
use kwire::{ApiKey, ErrorCode, SmallVec, Uuid};

use super::{s, Ctx};
use crate::acl;
use crate::topics::valid_name;

/// The cluster id every response names.
pub(crate) const CLUSTER_ID: &str = "kwire-fake-cluster";

/// Authorized operations not asked for (`Integer.MIN_VALUE`).
const OPS_OMITTED: i32 = i32::MIN;

pub(super) fn api_versions(ctx: &Ctx<'_>) -> ApiVersionsResponse {
    let release = ctx.inner.config.release;
    let api_keys = ApiKey::ALL
        .iter()
        .filter_map(|api| {
            let r = release.versions(*api)?;
            Some(ApiVersion { api_key: api.key(), min_version: r.lo, max_version: r.hi, ..Default::default() })
        })
        .collect();
    let features = release.features();
    let finalized = ctx.inner.state().features.clone();
    ApiVersionsResponse {
        error_code: ErrorCode::NONE.0,
        api_keys,
        supported_features: features
            .iter()
            .map(|(n, level)| SupportedFeatureKey { name: s(n), min_version: release.min_feature_level(n), max_version: *level, ..Default::default() })
            .collect(),
        finalized_features_epoch: if finalized.is_empty() { -1 } else { 1 },
        finalized_features: finalized
            .iter()
            .map(|(n, level)| FinalizedFeatureKey { name: s(n), max_version_level: *level, min_version_level: *level, ..Default::default() })
            .collect(),
        ..Default::default()
    }
}

/// The brokers that are up, as this connection's listener reaches them.
fn brokers(ctx: &Ctx<'_>) -> Vec<(i32, String, i32, Option<String>)> {
    let state = ctx.inner.state();
    state
        .brokers
        .iter()
        .filter(|(_, b)| b.up)
        .map(|(id, b)| {
            let (host, port) = ctx.inner.address(*id, ctx.listener);
            (*id, host, port, b.rack.clone())
        })
        .collect()
}

/// The controller as clients see it (a KRaft broker answers with some live broker).
pub(super) fn controller(ctx: &Ctx<'_>) -> i32 {
    ctx.inner.state().brokers.iter().find(|(_, b)| b.up).map_or(-1, |(id, _)| *id)
}

pub(super) fn metadata(ctx: &Ctx<'_>, req: &MetadataRequest) -> MetadataResponse {
    let version = ctx.version;
    let brokers = brokers(ctx)
        .into_iter()
        .map(|(node_id, host, port, rack)| MetadataResponseBroker { node_id, host: s(&host), port, rack: rack.as_deref().map(s), ..Default::default() })
        .collect();
    let controller_id = if version >= 1 { controller(ctx) } else { -1 };
    let mut state = ctx.inner.state();
    let names: Vec<(Option<String>, Uuid)> = match &req.topics {
        None => state.topics.iter().map(|(n, t)| (Some(n.clone()), t.id)).collect(),
        // v0 asks for every topic with an empty list.
        Some(list) if list.is_empty() && version == 0 => state.topics.iter().map(|(n, t)| (Some(n.clone()), t.id)).collect(),
        Some(list) => list.iter().map(|t| (t.name.as_deref().map(str::to_owned), t.topic_id)).collect(),
    };
    let auto_create = ctx.inner.config.auto_create_topics && (version < 4 || req.allow_auto_topic_creation);
    let mut topics = Vec::new();
    for (name, id) in names {
        let name = match name {
            Some(n) => n,
            None => match state.topics.iter().find(|(_, t)| t.id == id) {
                Some((n, _)) => n.clone(),
                None => {
                    topics.push(MetadataResponseTopic {
                        error_code: ErrorCode::UNKNOWN_TOPIC_ID.0,
                        name: None,
                        topic_id: id,
                        topic_authorized_operations: OPS_OMITTED,
                        ..Default::default()
                    });
                    continue;
                }
            },
        };
        // The authorizer: a topic named and not DESCRIBE-able is refused; one it did not name
        // (all topics) is left out.
        if !ctx.authorized_in(&state, acl::op::DESCRIBE, acl::resource::TOPIC, &name) {
            if req.topics.as_ref().is_some_and(|l| !l.is_empty()) {
                topics.push(MetadataResponseTopic {
                    error_code: ErrorCode::TOPIC_AUTHORIZATION_FAILED.0,
                    name: Some(s(&name)),
                    topic_authorized_operations: OPS_OMITTED,
                    ..Default::default()
                });
            }
            continue;
        }
        if !valid_name(&name) {
            topics.push(MetadataResponseTopic {
                error_code: ErrorCode::INVALID_TOPIC_EXCEPTION.0,
                name: Some(s(&name)),
                topic_authorized_operations: OPS_OMITTED,
                ..Default::default()
            });
            continue;
        }
        if !state.topics.contains_key(&name) && auto_create {
            let (partitions, replicas) = (ctx.inner.config.default_partitions, ctx.inner.config.default_replication.min(state.brokers.len() as i16));
            state.create_topic(&name, partitions, replicas, Default::default());
        }
        let Some(topic) = state.topics.get(&name) else {
            topics.push(MetadataResponseTopic {
                error_code: ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0,
                name: Some(s(&name)),
                topic_authorized_operations: OPS_OMITTED,
                ..Default::default()
            });
            continue;
        };
        let partitions = topic
            .partitions
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let up = |b: i32| state.up(b);
                let isr = p.isr(&up);
                let offline: SmallVec<[i32; 4]> = p.replicas.iter().copied().filter(|b| !up(*b)).collect();
                MetadataResponsePartition {
                    error_code: if p.leader < 0 { ErrorCode::LEADER_NOT_AVAILABLE.0 } else { ErrorCode::NONE.0 },
                    partition_index: i as i32,
                    leader_id: p.leader,
                    leader_epoch: if version >= 7 { p.leader_epoch } else { -1 },
                    replica_nodes: p.replicas.iter().copied().collect(),
                    isr_nodes: isr.into_iter().collect(),
                    offline_replicas: if version >= 5 { offline } else { SmallVec::new() },
                    ..Default::default()
                }
            })
            .collect();
        topics.push(MetadataResponseTopic {
            error_code: ErrorCode::NONE.0,
            name: Some(s(&name)),
            topic_id: if version >= 10 { topic.id } else { Uuid::ZERO },
            is_internal: false,
            partitions,
            topic_authorized_operations: OPS_OMITTED,
            ..Default::default()
        });
    }
    MetadataResponse {
        brokers,
        cluster_id: (version >= 2).then(|| s(CLUSTER_ID)),
        controller_id,
        topics,
        cluster_authorized_operations: OPS_OMITTED,
        ..Default::default()
    }
}

pub(super) fn describe_cluster(ctx: &Ctx<'_>, _req: &DescribeClusterRequest) -> DescribeClusterResponse {
    let brokers = brokers(ctx)
        .into_iter()
        .map(|(broker_id, host, port, rack)| DescribeClusterBroker {
            broker_id,
            host: s(&host),
            port,
            rack: rack.as_deref().map(s),
            is_fenced: false,
            ..Default::default()
        })
        .collect();
    DescribeClusterResponse {
        error_code: ErrorCode::NONE.0,
        endpoint_type: 1,
        cluster_id: s(CLUSTER_ID),
        controller_id: controller(ctx),
        brokers,
        cluster_authorized_operations: OPS_OMITTED,
        ..Default::default()
    }
}

pub(super) fn find_coordinator(ctx: &Ctx<'_>, req: &FindCoordinatorRequest) -> FindCoordinatorResponse {
    let find = |key: &str| -> (i32, String, i32, ErrorCode) {
        if !(0..=2).contains(&req.key_type) {
            return (-1, String::new(), -1, ErrorCode::INVALID_REQUEST);
        }
        if req.key_type == 1 && key.is_empty() {
            return (-1, String::new(), -1, ErrorCode::INVALID_REQUEST);
        }
        // DESCRIBE on the group or transactional id; share-state keys are brokers' (CLUSTER_ACTION).
        let (allowed, refused) = match req.key_type {
            0 => (ctx.authorized(acl::op::DESCRIBE, acl::resource::GROUP, key), ErrorCode::GROUP_AUTHORIZATION_FAILED),
            1 => (ctx.authorized(acl::op::DESCRIBE, acl::resource::TRANSACTIONAL_ID, key), ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
            _ => (ctx.authorized(acl::op::CLUSTER_ACTION, acl::resource::CLUSTER, acl::CLUSTER_NAME), ErrorCode::CLUSTER_AUTHORIZATION_FAILED),
        };
        if !allowed {
            return (-1, String::new(), -1, refused);
        }
        match ctx.inner.state().coordinator(req.key_type, key, &ctx.inner.config) {
            Some(node) => {
                let (host, port) = ctx.inner.address(node, ctx.listener);
                (node, host, port, ErrorCode::NONE)
            }
            None => (-1, String::new(), -1, ErrorCode::COORDINATOR_NOT_AVAILABLE),
        }
    };
    if ctx.version >= 4 {
        let coordinators = req
            .coordinator_keys
            .iter()
            .map(|key| {
                let (node_id, host, port, code) = find(key);
                Coordinator {
                    key: key.clone(),
                    node_id,
                    host: s(&host),
                    port,
                    error_code: code.0,
                    error_message: (!code.is_ok()).then(|| s(code.message().unwrap_or(""))),
                    ..Default::default()
                }
            })
            .collect();
        return FindCoordinatorResponse { coordinators, ..Default::default() };
    }
    let (node_id, host, port, code) = find(&req.key);
    FindCoordinatorResponse {
        error_code: code.0,
        error_message: (!code.is_ok()).then(|| s(code.message().unwrap_or(""))),
        node_id,
        host: s(&host),
        port,
        ..Default::default()
    }
}

/// DescribeTopicPartitions (KIP-966): the topics asked for (every topic for none), by name,
/// from the cursor on, at most `response_partition_limit` partitions (and at most 2000,
/// `max.request.partition.size.limit`); the next cursor where it stopped.
pub(super) fn describe_topic_partitions(ctx: &Ctx<'_>, req: &DescribeTopicPartitionsRequest) -> DescribeTopicPartitionsResponse {
    use kwire::messages::describe_topic_partitions_response::{Cursor, DescribeTopicPartitionsResponsePartition, DescribeTopicPartitionsResponseTopic};
    const MAX_PARTITIONS: i32 = 2000;
    let state = ctx.inner.state();
    let mut names: Vec<String> =
        if req.topics.is_empty() { state.topics.keys().cloned().collect() } else { req.topics.iter().map(|t| t.name.to_string()).collect() };
    names.sort();
    names.dedup();
    let (cursor_topic, mut cursor_partition) = match &req.cursor {
        Some(c) => (Some(c.topic_name.to_string()), c.partition_index.max(0)),
        None => (None, 0),
    };
    // A cursor names one of the topics asked for.
    if let Some(t) = &cursor_topic {
        if !req.topics.is_empty() && !names.contains(t) {
            return DescribeTopicPartitionsResponse {
                topics: vec![DescribeTopicPartitionsResponseTopic {
                    error_code: ErrorCode::INVALID_REQUEST.0,
                    name: Some(s(t)),
                    topic_authorized_operations: OPS_OMITTED,
                    ..Default::default()
                }],
                ..Default::default()
            };
        }
        names.retain(|n| n >= t);
    }
    let mut budget = req.response_partition_limit.clamp(1, MAX_PARTITIONS);
    let mut topics = Vec::new();
    let mut next_cursor = None;
    let up = |b: i32| state.up(b);
    for name in names {
        let first = if cursor_topic.as_deref() == Some(name.as_str()) { std::mem::take(&mut cursor_partition) } else { 0 };
        let authorized = ctx.authorized_in(&state, acl::op::DESCRIBE, acl::resource::TOPIC, &name);
        let Some(topic) = state.topics.get(&name).filter(|_| authorized) else {
            // Asked for by name: an error entry; an unauthorized topic of "all" is left out.
            if !req.topics.is_empty() {
                let code = if authorized { ErrorCode::UNKNOWN_TOPIC_OR_PARTITION } else { ErrorCode::TOPIC_AUTHORIZATION_FAILED };
                topics.push(DescribeTopicPartitionsResponseTopic {
                    error_code: code.0,
                    name: Some(s(&name)),
                    topic_authorized_operations: OPS_OMITTED,
                    ..Default::default()
                });
            }
            continue;
        };
        if budget == 0 {
            next_cursor = Some(Cursor { topic_name: s(&name), partition_index: first, ..Default::default() });
            break;
        }
        let mut partitions = Vec::new();
        for (i, p) in topic.partitions.iter().enumerate().skip(usize::try_from(first).unwrap_or(0)) {
            if budget == 0 {
                next_cursor = Some(Cursor { topic_name: s(&name), partition_index: i as i32, ..Default::default() });
                break;
            }
            budget -= 1;
            partitions.push(DescribeTopicPartitionsResponsePartition {
                error_code: if p.leader < 0 { ErrorCode::LEADER_NOT_AVAILABLE.0 } else { 0 },
                partition_index: i as i32,
                leader_id: p.leader,
                leader_epoch: p.leader_epoch,
                replica_nodes: p.replicas.iter().copied().collect(),
                isr_nodes: p.isr(&up).into_iter().collect(),
                eligible_leader_replicas: Some(Default::default()),
                last_known_elr: Some(Default::default()),
                offline_replicas: p.replicas.iter().copied().filter(|b| !up(*b)).collect(),
                ..Default::default()
            });
        }
        topics.push(DescribeTopicPartitionsResponseTopic {
            name: Some(s(&name)),
            topic_id: topic.id,
            is_internal: false,
            partitions,
            topic_authorized_operations: OPS_OMITTED,
            ..Default::default()
        });
        if next_cursor.is_some() {
            break;
        }
    }
    DescribeTopicPartitionsResponse { topics, next_cursor, ..Default::default() }
}
