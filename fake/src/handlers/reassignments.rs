//! AlterPartitionReassignments, ListPartitionReassignments and ElectLeaders (Kafka's
//! `ReplicationControlManager`). Every replica here is in sync, so a reassignment completes as
//! it is made: the partition takes the new replicas (its leader moves to the first of them when
//! it is not among them), and none is ever in progress to list or cancel.

use std::collections::BTreeSet;

use kwire::messages::{
    alter_partition_reassignments_response, elect_leaders_response, AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse,
    ElectLeadersRequest, ElectLeadersResponse, ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse,
};
use kwire::ErrorCode;

use super::{s, Ctx};
use crate::acl::{op, resource, CLUSTER_NAME};
use crate::cluster::State;

/// Election types.
const PREFERRED: i8 = 0;

fn refused_cluster(ctx: &Ctx<'_>, operation: i8) -> bool {
    !ctx.authorized(operation, resource::CLUSTER, CLUSTER_NAME)
}

/// Why `replicas` cannot be a partition's replicas.
fn check_replicas(state: &State, replicas: &[i32], current: usize, allow_rf_change: bool) -> Result<(), (ErrorCode, String)> {
    if replicas.is_empty() {
        return Err((ErrorCode::INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list.".into()));
    }
    if replicas.iter().collect::<BTreeSet<_>>().len() != replicas.len() {
        return Err((ErrorCode::INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes duplicate replicas.".into()));
    }
    if let Some(b) = replicas.iter().find(|b| !state.brokers.contains_key(b)) {
        return Err((ErrorCode::INVALID_REPLICA_ASSIGNMENT, format!("The manual partition assignment includes broker {b}, but no such broker is registered.")));
    }
    if !allow_rf_change && replicas.len() != current {
        return Err((
            ErrorCode::INVALID_REPLICATION_FACTOR,
            "The replication factor is changed from the current one and the request does not allow it.".into(),
        ));
    }
    Ok(())
}

pub(super) fn alter(ctx: &Ctx<'_>, req: &AlterPartitionReassignmentsRequest) -> AlterPartitionReassignmentsResponse {
    use alter_partition_reassignments_response::*;
    if refused_cluster(ctx, op::ALTER) {
        let code = ErrorCode::CLUSTER_AUTHORIZATION_FAILED;
        return AlterPartitionReassignmentsResponse {
            error_code: code.0,
            error_message: Some(s(code.message().unwrap_or(""))),
            allow_replication_factor_change: req.allow_replication_factor_change,
            ..Default::default()
        };
    }
    let allow_rf_change = ctx.version < 1 || req.allow_replication_factor_change;
    let mut state = ctx.inner.state();
    let mut responses = Vec::new();
    for t in &req.topics {
        let mut partitions = Vec::new();
        for p in &t.partitions {
            let current = state.topics.get(&*t.name).and_then(|topic| topic.partition(p.partition_index)).map(|part| part.replicas.len());
            let result = match (current, &p.replicas) {
                (None, _) => Err((ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.".into())),
                // Cancelling: nothing is ever in progress.
                (Some(_), None) => Err((ErrorCode::NO_REASSIGNMENT_IN_PROGRESS, format!("No ongoing reassignment for {}-{}.", t.name, p.partition_index))),
                (Some(n), Some(replicas)) => {
                    let replicas: Vec<i32> = replicas.iter().copied().collect();
                    check_replicas(&state, &replicas, n, allow_rf_change).map(|()| replicas)
                }
            };
            let (code, message) = match result {
                Ok(replicas) => {
                    let up: Vec<i32> = state.brokers.iter().filter(|(_, b)| b.up).map(|(id, _)| *id).collect();
                    if let Some(part) = state.topics.get_mut(&*t.name).and_then(|topic| topic.partition_mut(p.partition_index)) {
                        let leader = part.leader;
                        part.replicas = replicas.clone();
                        if !replicas.contains(&leader) {
                            match replicas.iter().find(|b| up.contains(b)) {
                                Some(b) => part.set_leader(*b),
                                None => part.set_leader(-1),
                            }
                        }
                    }
                    (ErrorCode::NONE, None)
                }
                Err((code, why)) => (code, Some(why)),
            };
            partitions.push(ReassignablePartitionResponse {
                partition_index: p.partition_index,
                error_code: code.0,
                error_message: message.as_deref().map(s),
                ..Default::default()
            });
        }
        responses.push(ReassignableTopicResponse { name: t.name.clone(), partitions, ..Default::default() });
    }
    drop(state);
    ctx.inner.wake();
    AlterPartitionReassignmentsResponse { responses, allow_replication_factor_change: req.allow_replication_factor_change, ..Default::default() }
}

pub(super) fn list(ctx: &Ctx<'_>, _req: &ListPartitionReassignmentsRequest) -> ListPartitionReassignmentsResponse {
    if refused_cluster(ctx, op::DESCRIBE) {
        let code = ErrorCode::CLUSTER_AUTHORIZATION_FAILED;
        return ListPartitionReassignmentsResponse { error_code: code.0, error_message: Some(s(code.message().unwrap_or(""))), ..Default::default() };
    }
    // Reassignments complete as they are made: none is ongoing.
    ListPartitionReassignmentsResponse::default()
}

pub(super) fn elect_leaders(ctx: &Ctx<'_>, req: &ElectLeadersRequest) -> ElectLeadersResponse {
    use elect_leaders_response::*;
    // v0 has no election type: preferred.
    let election = if ctx.version >= 1 { req.election_type } else { PREFERRED };
    if refused_cluster(ctx, op::ALTER) {
        let code = ErrorCode::CLUSTER_AUTHORIZATION_FAILED;
        let results = req
            .topic_partitions
            .iter()
            .flatten()
            .map(|t| ReplicaElectionResult {
                topic: t.topic.clone(),
                partition_result: t
                    .partitions
                    .iter()
                    .map(|p| PartitionResult {
                        partition_id: *p,
                        error_code: code.0,
                        error_message: Some(s(code.message().unwrap_or(""))),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        return ElectLeadersResponse { error_code: if ctx.version >= 1 { code.0 } else { 0 }, replica_election_results: results, ..Default::default() };
    }
    let mut state = ctx.inner.state();
    let all = req.topic_partitions.is_none();
    let asked: Vec<(String, Vec<i32>)> = match &req.topic_partitions {
        Some(list) => list.iter().map(|t| (t.topic.to_string(), t.partitions.iter().copied().collect())).collect(),
        None => state.topics.iter().map(|(n, t)| (n.clone(), (0..t.partitions.len() as i32).collect())).collect(),
    };
    let up: Vec<i32> = state.brokers.iter().filter(|(_, b)| b.up).map(|(id, _)| *id).collect();
    let mut results = Vec::new();
    for (topic, partitions) in asked {
        let mut out = Vec::new();
        for p in partitions {
            let code = match state.topics.get_mut(&topic).and_then(|t| t.partition_mut(p)) {
                None => ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                Some(part) if election == PREFERRED => {
                    let preferred = part.replicas.first().copied().unwrap_or(-1);
                    if part.leader == preferred {
                        ErrorCode::ELECTION_NOT_NEEDED
                    } else if up.contains(&preferred) {
                        part.set_leader(preferred);
                        ErrorCode::NONE
                    } else {
                        ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE
                    }
                }
                // Unclean: only a partition without a leader elects, any live replica.
                Some(part) if part.leader >= 0 => ErrorCode::ELECTION_NOT_NEEDED,
                Some(part) => match part.replicas.iter().copied().find(|b| up.contains(b)) {
                    Some(b) => {
                        part.set_leader(b);
                        ErrorCode::NONE
                    }
                    None => ErrorCode::ELIGIBLE_LEADERS_NOT_AVAILABLE,
                },
            };
            // Asked for every partition, those that needed no election are left out.
            if all && code == ErrorCode::ELECTION_NOT_NEEDED {
                continue;
            }
            out.push(PartitionResult {
                partition_id: p,
                error_code: code.0,
                error_message: (!code.is_ok()).then(|| s(code.message().unwrap_or(""))),
                ..Default::default()
            });
        }
        if !out.is_empty() {
            results.push(ReplicaElectionResult { topic: s(&topic), partition_result: out, ..Default::default() });
        }
    }
    drop(state);
    ctx.inner.wake();
    ElectLeadersResponse { replica_election_results: results, ..Default::default() }
}
