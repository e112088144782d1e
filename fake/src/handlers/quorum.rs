//! The KRaft apis a broker forwards to its controller: DescribeQuorum, UpdateFeatures,
//! AddRaftVoter, RemoveRaftVoter, UnregisterBroker and UnregisterController, answered as a
//! cluster whose controller quorum is one static voter (`controller.quorum.voters`, so
//! `kraft.version` 0): the controller is the first live broker, the other brokers observe.

use kwire::messages::{
    describe_quorum_response, update_features_response, AddRaftVoterResponse, DescribeQuorumRequest, DescribeQuorumResponse, RemoveRaftVoterResponse,
    UnregisterBrokerRequest, UnregisterBrokerResponse, UnregisterControllerRequest, UnregisterControllerResponse, UpdateFeaturesRequest,
    UpdateFeaturesResponse,
};
use kwire::{ErrorCode, Uuid};

use super::{s, Ctx};
use crate::acl::{op, resource, CLUSTER_NAME};

/// The metadata log's topic.
const METADATA_TOPIC: &str = "__cluster_metadata";
/// KRaft writes a no-op record this often when idle (`metadata.max.idle.interval.ms`): the
/// metadata log's end moves with the clock.
const NOOP_INTERVAL_MS: i64 = 500;
/// Upgrade types of UpdateFeatures v1+.
const UPGRADE: i8 = 1;
const SAFE_DOWNGRADE: i8 = 2;
const UNSAFE_DOWNGRADE: i8 = 3;

fn message(code: ErrorCode) -> Option<kwire::ByteString> {
    (!code.is_ok()).then(|| s(code.message().unwrap_or("")))
}

pub(super) fn describe_quorum(ctx: &Ctx<'_>, req: &DescribeQuorumRequest) -> DescribeQuorumResponse {
    use describe_quorum_response::*;
    // Error messages are v2+.
    let message = |code: ErrorCode| if ctx.version >= 2 { message(code) } else { None };
    if !ctx.authorized(op::DESCRIBE, resource::CLUSTER, CLUSTER_NAME) {
        let code = ErrorCode::CLUSTER_AUTHORIZATION_FAILED;
        return DescribeQuorumResponse { error_code: code.0, error_message: message(code), ..Default::default() };
    }
    let asked_metadata =
        matches!(req.topics.as_slice(), [t] if *t.topic_name == *METADATA_TOPIC && matches!(t.partitions.as_slice(), [p] if p.partition_index == 0));
    if !asked_metadata {
        // Only the metadata partition has a quorum.
        let code = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION;
        let topics = req
            .topics
            .iter()
            .map(|t| TopicData {
                topic_name: t.topic_name.clone(),
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| PartitionData {
                        partition_index: p.partition_index,
                        error_code: code.0,
                        error_message: message(code),
                        leader_id: -1,
                        leader_epoch: -1,
                        high_watermark: -1,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        return DescribeQuorumResponse { topics, ..Default::default() };
    }
    let controller = super::metadata::controller(ctx);
    let now = ctx.inner.now_ms();
    let (end, observers, directory) = {
        let state = ctx.inner.state();
        let start = ctx.inner.clock.start_ms();
        let end = (now - start) / NOOP_INTERVAL_MS + state.topics.len() as i64 + 1;
        let observers: Vec<i32> = state.brokers.iter().filter(|(id, b)| b.up && **id != controller).map(|(id, _)| *id).collect();
        (end, observers, Uuid::from_u64_pair(0x6b77_6972_652d_6661, 0x6b65_2d6d_6574_6100 | controller as u64 & 0xff))
    };
    // Directory ids are v2+, fetch times v1+.
    let v = ctx.version;
    let replica = |id: i32, leader: bool| ReplicaState {
        replica_id: id,
        replica_directory_id: if leader && v >= 2 { directory } else { Uuid::ZERO },
        log_end_offset: end,
        last_fetch_timestamp: if v >= 1 { now } else { -1 },
        last_caught_up_timestamp: if v >= 1 { now } else { -1 },
        ..Default::default()
    };
    let partition = PartitionData {
        partition_index: 0,
        leader_id: controller,
        leader_epoch: 1,
        high_watermark: end,
        current_voters: vec![replica(controller, true)],
        observers: observers.iter().map(|b| replica(*b, false)).collect(),
        ..Default::default()
    };
    let (host, port) = ctx.inner.address(controller, ctx.listener);
    let nodes = if v < 2 {
        Vec::new()
    } else {
        vec![Node {
            node_id: controller,
            listeners: vec![Listener { name: s("CONTROLLER"), host: s(&host), port: u16::try_from(port).unwrap_or(0), ..Default::default() }],
            ..Default::default()
        }]
    };
    DescribeQuorumResponse {
        topics: vec![TopicData { topic_name: s(METADATA_TOPIC), partitions: vec![partition], ..Default::default() }],
        nodes,
        ..Default::default()
    }
}

/// One feature update's outcome, as `FeatureControlManager` decides it.
fn check_update(
    ctx: &Ctx<'_>,
    finalized: &std::collections::BTreeMap<String, i16>,
    feature: &str,
    level: i16,
    upgrade_type: i8,
) -> Result<(), (ErrorCode, String)> {
    let release = ctx.inner.config.release;
    let Some((_, max)) = release.features().iter().find(|(n, _)| *n == feature) else {
        return Err((
            ErrorCode::INVALID_UPDATE_VERSION,
            format!("Invalid update version {level} for feature {feature}. The controller does not support the given feature."),
        ));
    };
    if !(UPGRADE..=UNSAFE_DOWNGRADE).contains(&upgrade_type) {
        return Err((ErrorCode::INVALID_REQUEST, format!("Unknown upgrade type {upgrade_type}")));
    }
    let min = release.min_feature_level(feature);
    if level > *max || (level < min && !(feature != "metadata.version" && level == 0)) {
        return Err((
            ErrorCode::INVALID_UPDATE_VERSION,
            format!("Invalid update version {level} for feature {feature}. Local controller supports versions {min}-{max}"),
        ));
    }
    let current = finalized.get(feature).copied().unwrap_or(0);
    if level < current {
        if upgrade_type == UPGRADE {
            return Err((ErrorCode::INVALID_UPDATE_VERSION, format!("Invalid update version {level} for feature {feature}. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.")));
        }
        if feature == "metadata.version" {
            return Err((
                ErrorCode::INVALID_UPDATE_VERSION,
                format!("Invalid metadata.version {level}. Unsafe metadata downgrade is not supported in this version."),
            ));
        }
    }
    Ok(())
}

pub(super) fn update_features(ctx: &Ctx<'_>, req: &UpdateFeaturesRequest) -> UpdateFeaturesResponse {
    use update_features_response::*;
    if !ctx.authorized(op::ALTER, resource::CLUSTER, CLUSTER_NAME) {
        let code = ErrorCode::CLUSTER_AUTHORIZATION_FAILED;
        // Per-feature results are v0-1.
        let results = if ctx.version >= 2 {
            Vec::new()
        } else {
            req.feature_updates
                .iter()
                .map(|u| UpdatableFeatureResult { feature: u.feature.clone(), error_code: code.0, error_message: message(code), ..Default::default() })
                .collect()
        };
        return UpdateFeaturesResponse { error_code: code.0, error_message: message(code), results, ..Default::default() };
    }
    let mut state = ctx.inner.state();
    let mut results = Vec::new();
    let mut first_error: Option<(ErrorCode, String)> = None;
    let mut changes = Vec::new();
    for u in &req.feature_updates {
        // v0 says downgrade with a flag: a safe downgrade.
        let upgrade_type = if ctx.version == 0 {
            if u.allow_downgrade {
                SAFE_DOWNGRADE
            } else {
                UPGRADE
            }
        } else {
            u.upgrade_type
        };
        let outcome = if u.feature.is_empty() {
            Err((ErrorCode::INVALID_REQUEST, "Feature names must not be empty".to_owned()))
        } else {
            check_update(ctx, &state.features, &u.feature, u.max_version_level, upgrade_type)
        };
        match outcome {
            Ok(()) => {
                changes.push((u.feature.to_string(), u.max_version_level));
                results.push(UpdatableFeatureResult { feature: u.feature.clone(), ..Default::default() });
            }
            Err((code, why)) => {
                results.push(UpdatableFeatureResult { feature: u.feature.clone(), error_code: code.0, error_message: Some(s(&why)), ..Default::default() });
                first_error.get_or_insert((code, why));
            }
        }
    }
    // Applied only when every update is valid, and not when only validating.
    if first_error.is_none() && !(ctx.version >= 1 && req.validate_only) {
        for (feature, level) in changes {
            if level == 0 {
                state.features.remove(&feature);
            } else {
                state.features.insert(feature, level);
            }
        }
    }
    if ctx.version >= 2 {
        // v2 answers in the top-level error only.
        return match first_error {
            Some((code, why)) => UpdateFeaturesResponse { error_code: code.0, error_message: Some(s(&why)), ..Default::default() },
            None => UpdateFeaturesResponse::default(),
        };
    }
    UpdateFeaturesResponse { results, ..Default::default() }
}

/// AddRaftVoter and RemoveRaftVoter: a static quorum (`kraft.version` 0) takes no membership
/// change.
fn static_quorum(ctx: &Ctx<'_>, what: &str) -> (ErrorCode, String) {
    if !ctx.authorized(op::ALTER, resource::CLUSTER, CLUSTER_NAME) {
        return (ErrorCode::CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.".into());
    }
    (ErrorCode::UNSUPPORTED_VERSION, format!("Cluster doesn't support {what} because the kraft.version feature is 0"))
}

pub(super) fn add_raft_voter(ctx: &Ctx<'_>) -> AddRaftVoterResponse {
    let (code, why) = static_quorum(ctx, "adding voter");
    AddRaftVoterResponse { error_code: code.0, error_message: Some(s(&why)), ..Default::default() }
}

pub(super) fn remove_raft_voter(ctx: &Ctx<'_>) -> RemoveRaftVoterResponse {
    let (code, why) = static_quorum(ctx, "removing voter");
    RemoveRaftVoterResponse { error_code: code.0, error_message: Some(s(&why)), ..Default::default() }
}

pub(super) fn unregister_broker(ctx: &Ctx<'_>, req: &UnregisterBrokerRequest) -> UnregisterBrokerResponse {
    let code = if !ctx.authorized(op::ALTER, resource::CLUSTER, CLUSTER_NAME) {
        ErrorCode::CLUSTER_AUTHORIZATION_FAILED
    } else if !ctx.inner.state().brokers.contains_key(&req.broker_id) {
        ErrorCode::BROKER_ID_NOT_REGISTERED
    } else {
        // A live broker's registration goes, and the broker registers again at its next
        // heartbeat: nothing a client sees changes.
        ErrorCode::NONE
    };
    UnregisterBrokerResponse { error_code: code.0, error_message: message(code), ..Default::default() }
}

pub(super) fn unregister_controller(ctx: &Ctx<'_>, req: &UnregisterControllerRequest) -> UnregisterControllerResponse {
    let (code, why) = if !ctx.authorized(op::ALTER, resource::CLUSTER, CLUSTER_NAME) {
        (ErrorCode::CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.".to_owned())
    } else if req.controller_id != super::metadata::controller(ctx) {
        (ErrorCode::CONTROLLER_ID_NOT_REGISTERED, format!("Controller {} is not registered.", req.controller_id))
    } else {
        (ErrorCode::INVALID_REQUEST, format!("Controller {} is a voter of the static quorum and cannot be unregistered.", req.controller_id))
    };
    UnregisterControllerResponse { error_code: code.0, error_message: Some(s(&why)), ..Default::default() }
}
