//! The group coordinator's apis: the classic protocol (JoinGroup, SyncGroup, Heartbeat,
//! LeaveGroup), KIP-848's ConsumerGroupHeartbeat and ConsumerGroupDescribe, KIP-932's
//! ShareGroupHeartbeat and ShareGroupDescribe, offsets (OffsetCommit, OffsetFetch,
//! OffsetDelete) and the admin apis (ListGroups, DescribeGroups, DeleteGroups). A group id is
//! one group of one kind: an empty group of another kind is replaced, a non-empty one refuses
//! (online migration between the classic and consumer protocols is not modelled: the fake
//! answers as a broker whose `group.consumer.migration.policy` is `disabled`).

use std::collections::BTreeMap;

use kwire::messages::*;
use kwire::{Bytes, ErrorCode, Uuid};
use tokio::time::Instant;

use super::{s, Ctx};
use crate::acl::{op, resource, CLUSTER_NAME};
use crate::cluster::State;
use crate::groups::assignor::Assignment;
use crate::groups::classic::{ClassicGroup, JoinOutcome, JoinRequest, Joined};
use crate::groups::consumer::ConsumerGroup;
use crate::groups::offsets::Committed;
use crate::groups::share::ShareGroup;
use crate::groups::{defaults, topics_view, Group, Groups};

/// NOT_COORDINATOR unless this broker coordinates `group` (COORDINATOR_NOT_AVAILABLE when no
/// broker can).
pub(super) fn coordinates(ctx: &Ctx<'_>, state: &State, group: &str) -> Result<(), ErrorCode> {
    match state.coordinator(0, group, &ctx.inner.config) {
        Some(b) if b == ctx.broker => Ok(()),
        Some(_) => Err(ErrorCode::NOT_COORDINATOR),
        None => Err(ErrorCode::COORDINATOR_NOT_AVAILABLE),
    }
}

fn ms(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn new_classic(ctx: &Ctx<'_>) -> Group {
    Group::Classic(ClassicGroup::new(ctx.inner.config.group_initial_rebalance_delay))
}

// ---------------------------------------------------------------------------------------------
// The classic protocol.

pub(super) fn join_response(outcome: JoinOutcome, version: i16) -> JoinGroupResponse {
    JoinGroupResponse {
        error_code: outcome.error_code,
        generation_id: outcome.generation_id,
        protocol_type: outcome.protocol_type.as_deref().filter(|_| version >= 7).map(s),
        // Nullable from v7; before, an empty string.
        protocol_name: match outcome.protocol_name.as_deref() {
            Some(n) => Some(s(n)),
            None if version >= 7 => None,
            None => Some(s("")),
        },
        leader: s(&outcome.leader),
        skip_assignment: outcome.skip_assignment,
        member_id: s(&outcome.member_id),
        members: outcome
            .members
            .into_iter()
            .map(|(member_id, instance, metadata)| join_group_response::JoinGroupResponseMember {
                member_id: s(&member_id),
                group_instance_id: instance.as_deref().map(s),
                metadata,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

pub(super) async fn join_group(ctx: &Ctx<'_>, req: &JoinGroupRequest) -> JoinGroupResponse {
    let version = ctx.version;
    let joined = {
        let mut guard = ctx.inner.state();
        let state = &mut *guard;
        if let Err(code) = coordinates(ctx, state, &req.group_id) {
            return join_response(JoinOutcome::error(code, &req.member_id), version);
        }
        if req.group_id.is_empty() {
            return join_response(JoinOutcome::error(ErrorCode::INVALID_GROUP_ID, &req.member_id), version);
        }
        let groups = &mut state.groups.groups;
        match groups.get(&*req.group_id) {
            Some(Group::Classic(_)) => {}
            // An empty consumer group becomes a classic group.
            Some(Group::Consumer(g)) if g.members.is_empty() => {
                groups.insert(req.group_id.to_string(), new_classic(ctx));
            }
            Some(_) => return join_response(JoinOutcome::error(ErrorCode::INCONSISTENT_GROUP_PROTOCOL, ""), version),
            None if !req.member_id.is_empty() => return join_response(JoinOutcome::error(ErrorCode::UNKNOWN_MEMBER_ID, &req.member_id), version),
            None => {
                groups.insert(req.group_id.to_string(), new_classic(ctx));
            }
        }
        let Some(Group::Classic(group)) = state.groups.groups.get_mut(&*req.group_id) else {
            return join_response(JoinOutcome::error(ErrorCode::UNKNOWN_MEMBER_ID, &req.member_id), version);
        };
        group.join(JoinRequest::new(req, version, ctx.client_id), &mut state.rng)
    };
    let outcome = match joined {
        Joined::Now(outcome) => outcome,
        Joined::Wait(rx) => match tokio::time::timeout(defaults::MAX_WAIT, rx).await {
            Ok(Ok(outcome)) => outcome,
            _ => JoinOutcome::error(ErrorCode::REBALANCE_IN_PROGRESS, &req.member_id),
        },
    };
    join_response(outcome, version)
}

pub(super) async fn sync_group(ctx: &Ctx<'_>, req: &SyncGroupRequest) -> SyncGroupResponse {
    let version = ctx.version;
    let respond = |code: ErrorCode, assignment: Bytes, protocol: Option<(Option<String>, Option<String>)>| SyncGroupResponse {
        error_code: code.0,
        assignment,
        protocol_type: protocol.as_ref().filter(|_| version >= 5).and_then(|(t, _)| t.as_deref().map(s)),
        protocol_name: protocol.as_ref().filter(|_| version >= 5).and_then(|(_, n)| n.as_deref().map(s)),
        ..Default::default()
    };
    let (waited, protocol) = {
        let mut guard = ctx.inner.state();
        let state = &mut *guard;
        if let Err(code) = coordinates(ctx, state, &req.group_id) {
            return respond(code, Bytes::new(), None);
        }
        let Some(Group::Classic(group)) = state.groups.groups.get_mut(&*req.group_id) else {
            return respond(ErrorCode::UNKNOWN_MEMBER_ID, Bytes::new(), None);
        };
        let protocol = Some((group.protocol_type.clone(), group.protocol_name.clone()));
        let assignments = req.assignments.iter().map(|a| (a.member_id.to_string(), a.assignment.clone())).collect();
        let waited = group.sync(
            &req.member_id,
            req.group_instance_id.as_deref(),
            req.generation_id,
            (req.protocol_type.as_deref(), req.protocol_name.as_deref()),
            assignments,
        );
        (waited, protocol)
    };
    let (code, assignment) = match waited {
        Err(answer) => answer,
        Ok(rx) => match tokio::time::timeout(defaults::MAX_WAIT, rx).await {
            Ok(Ok(answer)) => answer,
            _ => (ErrorCode::REBALANCE_IN_PROGRESS, Bytes::new()),
        },
    };
    respond(code, assignment, protocol.filter(|_| code == ErrorCode::NONE))
}

pub(super) fn heartbeat(ctx: &Ctx<'_>, req: &HeartbeatRequest) -> HeartbeatResponse {
    let mut guard = ctx.inner.state();
    let state = &mut *guard;
    let code = match coordinates(ctx, state, &req.group_id) {
        Err(code) => code,
        Ok(()) => match state.groups.groups.get_mut(&*req.group_id) {
            Some(Group::Classic(g)) => g.heartbeat(&req.member_id, req.group_instance_id.as_deref(), req.generation_id),
            _ => ErrorCode::UNKNOWN_MEMBER_ID,
        },
    };
    HeartbeatResponse { error_code: code.0, ..Default::default() }
}

pub(super) fn leave_group(ctx: &Ctx<'_>, req: &LeaveGroupRequest) -> LeaveGroupResponse {
    let mut guard = ctx.inner.state();
    let state = &mut *guard;
    if let Err(code) = coordinates(ctx, state, &req.group_id) {
        return LeaveGroupResponse { error_code: code.0, ..Default::default() };
    }
    let group = state.groups.groups.get_mut(&*req.group_id);
    if ctx.version < 3 {
        let code = match group {
            Some(Group::Classic(g)) => g.leave(&req.member_id, None),
            _ => ErrorCode::UNKNOWN_MEMBER_ID,
        };
        return LeaveGroupResponse { error_code: code.0, ..Default::default() };
    }
    let Some(group) = group else {
        return LeaveGroupResponse { error_code: ErrorCode::UNKNOWN_MEMBER_ID.0, ..Default::default() };
    };
    let members = req
        .members
        .iter()
        .map(|m| {
            let code = match group {
                Group::Classic(g) => g.leave(&m.member_id, m.group_instance_id.as_deref()),
                _ => ErrorCode::UNKNOWN_MEMBER_ID,
            };
            leave_group_response::MemberResponse {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                error_code: code.0,
                ..Default::default()
            }
        })
        .collect();
    LeaveGroupResponse { error_code: ErrorCode::NONE.0, members, ..Default::default() }
}

// ---------------------------------------------------------------------------------------------
// Offsets.

/// Kafka's checks of an offset commit against its group (`OffsetMetadataManager`): a group
/// that does not exist is created (empty, classic) by a commit from outside any generation.
pub(crate) fn validate_commit(
    ctx: &Ctx<'_>,
    groups: &mut Groups,
    group: &str,
    member_id: &str,
    instance_id: Option<&str>,
    generation: i32,
    transactional: bool,
) -> Result<(), ErrorCode> {
    match groups.groups.get_mut(group) {
        None if generation < 0 => {
            groups.groups.insert(group.to_owned(), new_classic(ctx));
            Ok(())
        }
        None if transactional || ctx.version < 9 => Err(ErrorCode::ILLEGAL_GENERATION),
        None => Err(ErrorCode::GROUP_ID_NOT_FOUND),
        Some(Group::Classic(g)) => g.validate_commit(member_id, instance_id, generation, transactional),
        Some(Group::Consumer(g)) => g.validate_commit(member_id, instance_id, generation, transactional, ctx.version),
        Some(Group::Share(_)) => Err(ErrorCode::GROUP_ID_NOT_FOUND),
    }
}

pub(super) fn offset_commit(ctx: &Ctx<'_>, req: &OffsetCommitRequest) -> OffsetCommitResponse {
    let mut guard = ctx.inner.state();
    let state = &mut *guard;
    let group_error = match coordinates(ctx, state, &req.group_id) {
        Err(code) => Err(code),
        Ok(()) => {
            validate_commit(ctx, &mut state.groups, &req.group_id, &req.member_id, req.group_instance_id.as_deref(), req.generation_id_or_member_epoch, false)
        }
    };
    let topics = req
        .topics
        .iter()
        .map(|t| offset_commit_response::OffsetCommitResponseTopic {
            name: t.name.clone(),
            topic_id: t.topic_id,
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    // v10 names topics by id.
                    let name = state.topic_name(&t.name, t.topic_id);
                    let exists = name.as_deref().and_then(|n| state.topics.get(n)).is_some_and(|topic| topic.partition(p.partition_index).is_some());
                    let code = match group_error.and_then(|()| ctx.topic_access(state, op::READ, name.as_deref().unwrap_or(&t.name))) {
                        Err(code) => code,
                        Ok(()) if !exists && t.name.is_empty() => ErrorCode::UNKNOWN_TOPIC_ID,
                        Ok(()) if !exists => ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                        Ok(()) if p.committed_metadata.as_ref().is_some_and(|m| m.len() > defaults::OFFSET_METADATA_MAX) => {
                            ErrorCode::OFFSET_METADATA_TOO_LARGE
                        }
                        Ok(()) => {
                            let c = Committed { offset: p.committed_offset, leader_epoch: p.committed_leader_epoch, metadata: p.committed_metadata.clone() };
                            state.groups.offsets.commit(&req.group_id, name.as_deref().unwrap_or_default(), p.partition_index, c);
                            ErrorCode::NONE
                        }
                    };
                    offset_commit_response::OffsetCommitResponsePartition { partition_index: p.partition_index, error_code: code.0, ..Default::default() }
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    OffsetCommitResponse { topics, ..Default::default() }
}

/// OffsetFetch v9+ from a member of a consumer group: its epoch must be current.
fn validate_fetch(groups: &Groups, group: &str, member_id: Option<&str>, epoch: i32) -> Result<(), ErrorCode> {
    let Some(member_id) = member_id else { return Ok(()) };
    if epoch < 0 {
        return Ok(());
    }
    match groups.groups.get(group) {
        Some(Group::Consumer(g)) => match g.members.get(member_id) {
            None => Err(ErrorCode::UNKNOWN_MEMBER_ID),
            Some(m) if m.epoch != epoch => Err(ErrorCode::STALE_MEMBER_EPOCH),
            Some(_) => Ok(()),
        },
        _ => Ok(()),
    }
}

pub(super) fn offset_fetch(ctx: &Ctx<'_>, req: &OffsetFetchRequest) -> OffsetFetchResponse {
    let version = ctx.version;
    let state = ctx.inner.state();
    let groups = &state.groups;
    // (topic, partitions) asked for, or every committed one when the list is null; a topic
    // without DESCRIBE is refused when named and left out when not.
    type Found<'a> = Vec<(String, Vec<(i32, Result<Option<&'a Committed>, ErrorCode>)>)>;
    let lookup = |group_id: &str, asked: Option<Vec<(String, Vec<i32>)>>| -> Found<'_> {
        match asked {
            Some(list) => list
                .into_iter()
                .map(|(topic, parts)| {
                    let access = ctx.topic_access(&state, op::DESCRIBE, &topic);
                    let found = parts.into_iter().map(|p| (p, access.map(|()| groups.offsets.get(group_id, &topic, p)))).collect();
                    (topic, found)
                })
                .collect(),
            None => groups
                .offsets
                .all(group_id)
                .into_iter()
                .filter(|(t, _)| ctx.topic_access(&state, op::DESCRIBE, t).is_ok())
                .map(|(t, ps)| (t, ps.into_iter().map(|(p, c)| (p, Ok(Some(c)))).collect()))
                .collect(),
        }
    };
    let epoch = |c: Option<&Committed>| if version >= 5 { c.map_or(-1, |c| c.leader_epoch) } else { -1 };
    if version >= 8 {
        let out = req
            .groups
            .iter()
            .map(|g| {
                let group_error = group_access(ctx, &state, op::DESCRIBE, &g.group_id)
                    .and_then(|()| coordinates(ctx, &state, &g.group_id))
                    .and_then(|()| validate_fetch(groups, &g.group_id, g.member_id.as_deref(), g.member_epoch));
                if let Err(code) = group_error {
                    return offset_fetch_response::OffsetFetchResponseGroup { group_id: g.group_id.clone(), error_code: code.0, ..Default::default() };
                }
                // v10 names topics by id.
                let asked = g.topics.as_ref().map(|ts| {
                    ts.iter()
                        .map(|t| {
                            (
                                if t.name.is_empty() { state.topic_name("", t.topic_id).unwrap_or_default() } else { t.name.to_string() },
                                t.partition_indexes.to_vec(),
                            )
                        })
                        .collect()
                });
                offset_fetch_response::OffsetFetchResponseGroup {
                    group_id: g.group_id.clone(),
                    error_code: ErrorCode::NONE.0,
                    topics: lookup(&g.group_id, asked)
                        .into_iter()
                        .map(|(name, parts)| offset_fetch_response::OffsetFetchResponseTopics {
                            topic_id: state.topic_id(&name),
                            name: s(&name),
                            partitions: parts
                                .into_iter()
                                .map(|(p, c)| {
                                    // KIP-447: offsets a transaction holds are not given to a consumer that wants
                                    // stable ones; it asks again.
                                    let unstable = req.require_stable && groups.offsets.unstable(&g.group_id, &name, p);
                                    let code = fetched_code(&c, unstable);
                                    let c = c.ok().flatten().filter(|_| !unstable);
                                    offset_fetch_response::OffsetFetchResponsePartitions {
                                        partition_index: p,
                                        committed_offset: c.map_or(-1, |c| c.offset),
                                        committed_leader_epoch: epoch(c),
                                        metadata: Some(c.and_then(|c| c.metadata.clone()).unwrap_or_default()),
                                        error_code: code.0,
                                        ..Default::default()
                                    }
                                })
                                .collect(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }
            })
            .collect();
        return OffsetFetchResponse { groups: out, ..Default::default() };
    }
    if let Err(code) = coordinates(ctx, &state, &req.group_id) {
        return OffsetFetchResponse { error_code: code.0, ..Default::default() };
    }
    let asked = req.topics.as_ref().map(|ts| ts.iter().map(|t| (t.name.to_string(), t.partition_indexes.to_vec())).collect());
    let topics = lookup(&req.group_id, asked)
        .into_iter()
        .map(|(name, parts)| offset_fetch_response::OffsetFetchResponseTopic {
            name: s(&name),
            partitions: parts
                .into_iter()
                .map(|(p, c)| {
                    let unstable = version >= 7 && req.require_stable && groups.offsets.unstable(&req.group_id, &name, p);
                    let code = fetched_code(&c, unstable);
                    let c = c.ok().flatten().filter(|_| !unstable);
                    offset_fetch_response::OffsetFetchResponsePartition {
                        partition_index: p,
                        committed_offset: c.map_or(-1, |c| c.offset),
                        committed_leader_epoch: epoch(c),
                        metadata: Some(c.and_then(|c| c.metadata.clone()).unwrap_or_default()),
                        error_code: code.0,
                        ..Default::default()
                    }
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    OffsetFetchResponse { topics, error_code: ErrorCode::NONE.0, ..Default::default() }
}

/// A partition's error in an OffsetFetch response: its topic's refusal, or an unstable offset.
fn fetched_code(found: &Result<Option<&Committed>, ErrorCode>, unstable: bool) -> ErrorCode {
    match found {
        Err(code) => *code,
        Ok(_) if unstable => ErrorCode::UNSTABLE_OFFSET_COMMIT,
        Ok(_) => ErrorCode::NONE,
    }
}

/// GROUP_AUTHORIZATION_FAILED unless this principal may do `operation` on group `id`.
fn group_access(ctx: &Ctx<'_>, state: &State, operation: i8, id: &str) -> Result<(), ErrorCode> {
    if ctx.authorized_in(state, operation, resource::GROUP, id) {
        Ok(())
    } else {
        Err(ErrorCode::GROUP_AUTHORIZATION_FAILED)
    }
}

/// OffsetDelete: a group's offsets of topics it does not subscribe to.
pub(super) fn offset_delete(ctx: &Ctx<'_>, req: &OffsetDeleteRequest) -> OffsetDeleteResponse {
    let mut guard = ctx.inner.state();
    let state = &mut *guard;
    let top = |code: ErrorCode| OffsetDeleteResponse { error_code: code.0, ..Default::default() };
    if let Err(code) = coordinates(ctx, state, &req.group_id) {
        return top(code);
    }
    let topics = topics_view(&state.topics);
    let subscribed: Vec<String> = match state.groups.groups.get(&*req.group_id) {
        None if state.groups.offsets.has_group(&req.group_id) => Vec::new(),
        None => return top(ErrorCode::GROUP_ID_NOT_FOUND),
        Some(Group::Classic(g)) if !g.is_empty() && !g.uses_consumer_protocol() => return top(ErrorCode::NON_EMPTY_GROUP),
        Some(Group::Classic(g)) => g.subscribed_topics(),
        Some(Group::Consumer(g)) => g.subscribed_topics(&topics).into_iter().collect(),
        Some(Group::Share(_)) => return top(ErrorCode::GROUP_ID_NOT_FOUND),
    };
    let out = req
        .topics
        .iter()
        .map(|t| offset_delete_response::OffsetDeleteResponseTopic {
            name: t.name.clone(),
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let code = if let Err(code) = ctx.topic_access(state, op::READ, &t.name) {
                        code
                    } else if subscribed.iter().any(|x| *x == *t.name) {
                        ErrorCode::GROUP_SUBSCRIBED_TO_TOPIC
                    } else {
                        state.groups.offsets.delete(&req.group_id, &t.name, p.partition_index);
                        ErrorCode::NONE
                    };
                    offset_delete_response::OffsetDeleteResponsePartition { partition_index: p.partition_index, error_code: code.0 }
                })
                .collect(),
        })
        .collect();
    OffsetDeleteResponse { error_code: ErrorCode::NONE.0, topics: out, ..Default::default() }
}

// ---------------------------------------------------------------------------------------------
// Admin.

pub(super) fn list_groups(ctx: &Ctx<'_>, req: &ListGroupsRequest) -> ListGroupsResponse {
    let state = ctx.inner.state();
    let states: Vec<String> = req.states_filter.iter().map(|f| f.to_lowercase()).collect();
    let types: Vec<String> = req.types_filter.iter().map(|f| f.to_lowercase()).collect();
    let mut listed: BTreeMap<String, (String, String, String)> = BTreeMap::new();
    // DESCRIBE on the cluster lists every group; else those the principal may DESCRIBE.
    let every = ctx.authorized_in(&state, op::DESCRIBE, resource::CLUSTER, CLUSTER_NAME);
    for (id, g) in state.groups.groups.iter().filter(|(id, _)| every || group_access(ctx, &state, op::DESCRIBE, id).is_ok()) {
        listed.insert(id.clone(), (g.protocol_type(), g.state_name().to_owned(), g.type_name().to_owned()));
    }
    let groups = listed
        .into_iter()
        // Each broker lists the groups it coordinates.
        .filter(|(id, _)| state.coordinator(0, id, &ctx.inner.config) == Some(ctx.broker))
        .filter(|(_, (_, st, _))| states.is_empty() || states.contains(&st.to_lowercase()))
        .filter(|(_, (_, _, ty))| types.is_empty() || types.contains(ty))
        .map(|(id, (protocol_type, group_state, group_type))| list_groups_response::ListedGroup {
            group_id: s(&id),
            protocol_type: s(&protocol_type),
            group_state: s(&group_state),
            group_type: s(&group_type),
            ..Default::default()
        })
        .collect();
    ListGroupsResponse { error_code: ErrorCode::NONE.0, groups, ..Default::default() }
}

pub(super) fn describe_groups(ctx: &Ctx<'_>, req: &DescribeGroupsRequest) -> DescribeGroupsResponse {
    let version = ctx.version;
    let state = ctx.inner.state();
    let groups = req
        .groups
        .iter()
        .map(|id| {
            let mut out = describe_groups_response::DescribedGroup { group_id: id.clone(), authorized_operations: i32::MIN, ..Default::default() };
            if let Err(code) = group_access(ctx, &state, op::DESCRIBE, id).and_then(|()| coordinates(ctx, &state, id)) {
                out.error_code = code.0;
                return out;
            }
            match state.groups.groups.get(&**id) {
                Some(Group::Classic(g)) => {
                    out.group_state = s(g.state_name());
                    out.protocol_type = s(g.protocol_type.as_deref().unwrap_or_default());
                    let stable = g.state_name() == "Stable";
                    let protocol = g.protocol_name.clone().unwrap_or_default();
                    out.protocol_data = s(if stable { &protocol } else { "" });
                    out.members = g
                        .members
                        .iter()
                        .map(|(mid, m)| describe_groups_response::DescribedGroupMember {
                            member_id: s(mid),
                            group_instance_id: m.instance_id.as_deref().map(s),
                            client_id: s(&m.client_id),
                            client_host: s(&m.client_host),
                            member_metadata: if stable {
                                m.protocols.iter().find(|(n, _)| *n == protocol).map(|(_, b)| b.clone()).unwrap_or_default()
                            } else {
                                Bytes::new()
                            },
                            member_assignment: if stable { m.assignment.clone() } else { Bytes::new() },
                            ..Default::default()
                        })
                        .collect();
                }
                Some(Group::Consumer(g)) => {
                    out.group_state = s(g.state_name());
                    out.protocol_type = s("consumer");
                    out.protocol_data = s(g.assignor());
                    out.members = g
                        .members
                        .values()
                        .map(|m| describe_groups_response::DescribedGroupMember {
                            member_id: s(&m.id),
                            group_instance_id: m.instance_id.as_deref().map(s),
                            client_id: s(&m.client_id),
                            client_host: s(&m.client_host),
                            ..Default::default()
                        })
                        .collect();
                }
                _ if state.groups.offsets.has_group(id) => out.group_state = s("Empty"),
                _ if version >= 6 => {
                    out.error_code = ErrorCode::GROUP_ID_NOT_FOUND.0;
                    out.error_message = Some(s(&format!("Group {id} not found.")));
                    out.group_state = s("Dead");
                }
                _ => out.group_state = s("Dead"),
            }
            out
        })
        .collect();
    DescribeGroupsResponse { groups, ..Default::default() }
}

pub(super) fn delete_groups(ctx: &Ctx<'_>, req: &DeleteGroupsRequest) -> DeleteGroupsResponse {
    let mut guard = ctx.inner.state();
    let state = &mut *guard;
    let results = req
        .groups_names
        .iter()
        .map(|id| {
            let code = match group_access(ctx, state, op::DELETE, id).and_then(|()| coordinates(ctx, state, id)) {
                Err(code) => code,
                Ok(()) if !state.groups.exists(id) => ErrorCode::GROUP_ID_NOT_FOUND,
                Ok(()) if state.groups.groups.get(&**id).is_some_and(|g| !g.is_empty()) => ErrorCode::NON_EMPTY_GROUP,
                Ok(()) => {
                    state.groups.groups.remove(&**id);
                    state.groups.offsets.delete_group(id);
                    state.groups.share_partitions.delete_group(id);
                    ErrorCode::NONE
                }
            };
            delete_groups_response::DeletableGroupResult {
                group_id: id.clone(),
                error_code: code.0,
                error_message: (code != ErrorCode::NONE).then(|| code.message().map(s)).flatten(),
                ..Default::default()
            }
        })
        .collect();
    DeleteGroupsResponse { results, ..Default::default() }
}

// ---------------------------------------------------------------------------------------------
// KIP-848.

fn assignment_of(a: &Assignment) -> consumer_group_heartbeat_response::Assignment {
    consumer_group_heartbeat_response::Assignment {
        topic_partitions: a
            .iter()
            .map(|(t, ps)| consumer_group_heartbeat_response::TopicPartitions { topic_id: *t, partitions: ps.iter().copied().collect(), ..Default::default() })
            .collect(),
        ..Default::default()
    }
}

pub(super) fn consumer_group_heartbeat(ctx: &Ctx<'_>, req: &ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse {
    let refuse =
        |code: ErrorCode, message: String| ConsumerGroupHeartbeatResponse { error_code: code.0, error_message: Some(s(&message)), ..Default::default() };
    // GroupCoordinatorService's checks of the request.
    let epoch = req.member_epoch;
    if (ctx.version >= 1 || epoch > 0 || epoch == -1) && req.member_id.is_empty() {
        return refuse(ErrorCode::INVALID_REQUEST, "MemberId can't be empty.".into());
    }
    if req.group_id.is_empty() {
        return refuse(ErrorCode::INVALID_REQUEST, "GroupId can't be empty.".into());
    }
    if req.instance_id.as_ref().is_some_and(|i| i.is_empty()) || req.rack_id.as_ref().is_some_and(|i| i.is_empty()) {
        return refuse(ErrorCode::INVALID_REQUEST, "InstanceId and RackId can't be empty.".into());
    }
    if epoch == 0 {
        if req.rebalance_timeout_ms == -1 {
            return refuse(ErrorCode::INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.".into());
        }
        if req.topic_partitions.as_ref().is_none_or(|t| !t.is_empty()) {
            return refuse(ErrorCode::INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.".into());
        }
        if req.subscribed_topic_names.is_none() && req.subscribed_topic_regex.is_none() {
            return refuse(ErrorCode::INVALID_REQUEST, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.".into());
        }
    } else if epoch == -2 && req.instance_id.is_none() {
        return refuse(ErrorCode::INVALID_REQUEST, "InstanceId can't be null.".into());
    } else if epoch < -2 {
        return refuse(ErrorCode::INVALID_REQUEST, "MemberEpoch is invalid.".into());
    }
    if let Some(a) = req.server_assignor.as_deref().filter(|a| !crate::groups::consumer::ASSIGNORS.contains(a)) {
        return refuse(ErrorCode::UNSUPPORTED_ASSIGNOR, format!("ServerAssignor {a} is not supported. Supported assignors: uniform, range."));
    }
    let mut guard = ctx.inner.state();
    let state = &mut *guard;
    if let Err(code) = coordinates(ctx, state, &req.group_id) {
        return refuse(code, code.message().unwrap_or_default().to_owned());
    }
    let group_id = req.group_id.to_string();
    let session = std::time::Duration::from_millis(
        u64::try_from(state.groups.config_i64(&group_id, "consumer.session.timeout.ms", defaults::CONSUMER_SESSION_MS)).unwrap_or(45_000),
    );
    let interval = state.groups.config_i64(&group_id, "consumer.heartbeat.interval.ms", defaults::CONSUMER_HEARTBEAT_MS);
    let topics = topics_view(&state.topics);
    let groups = &mut state.groups.groups;
    match groups.get(&group_id) {
        Some(Group::Consumer(_)) => {}
        // An empty classic group (offsets committed outside any generation, say) becomes a
        // consumer group.
        Some(Group::Classic(g)) if g.is_empty() && epoch == 0 => {
            groups.insert(group_id.clone(), Group::Consumer(ConsumerGroup::new(session)));
        }
        Some(_) if epoch == 0 => return refuse(ErrorCode::GROUP_ID_NOT_FOUND, format!("Group {group_id} is not a consumer group.")),
        Some(_) | None if epoch != 0 => return refuse(ErrorCode::GROUP_ID_NOT_FOUND, format!("Consumer group {group_id} not found.")),
        _ => {
            groups.insert(group_id.clone(), Group::Consumer(ConsumerGroup::new(session)));
        }
    }
    let Some(Group::Consumer(group)) = groups.get_mut(&group_id) else {
        return refuse(ErrorCode::GROUP_ID_NOT_FOUND, format!("Consumer group {group_id} not found."));
    };
    group.session_timeout = session;
    if epoch == -1 || epoch == -2 {
        return match group.leave(&req.member_id, req.instance_id.as_deref(), epoch) {
            Ok(e) => ConsumerGroupHeartbeatResponse { member_id: Some(req.member_id.clone()), member_epoch: e, heartbeat_interval_ms: 0, ..Default::default() },
            Err((code, message)) => refuse(code, message),
        };
    }
    let member_id = if req.member_id.is_empty() { crate::groups::uuid_string(&mut state.rng) } else { req.member_id.to_string() };
    match group.heartbeat(req, member_id, ctx.client_id, &topics, Instant::now()) {
        Ok(answer) => ConsumerGroupHeartbeatResponse {
            member_id: Some(s(&answer.member_id)),
            member_epoch: answer.epoch,
            heartbeat_interval_ms: i32::try_from(interval).unwrap_or(5000),
            assignment: answer.assignment.as_ref().map(assignment_of),
            ..Default::default()
        },
        Err((code, message)) => refuse(code, message),
    }
}

fn described(a: &Assignment, names: &BTreeMap<Uuid, String>) -> consumer_group_describe_response::Assignment {
    consumer_group_describe_response::Assignment {
        topic_partitions: a
            .iter()
            .map(|(t, ps)| consumer_group_describe_response::TopicPartitions {
                topic_id: *t,
                topic_name: s(names.get(t).map_or("", |n| n.as_str())),
                partitions: ps.iter().copied().collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

pub(super) fn consumer_group_describe(ctx: &Ctx<'_>, req: &ConsumerGroupDescribeRequest) -> ConsumerGroupDescribeResponse {
    let state = ctx.inner.state();
    let names: BTreeMap<Uuid, String> = state.topics.iter().map(|(n, t)| (t.id, n.clone())).collect();
    let groups = req
        .group_ids
        .iter()
        .map(|id| {
            let mut out = consumer_group_describe_response::DescribedGroup { group_id: id.clone(), authorized_operations: i32::MIN, ..Default::default() };
            if let Err(code) = group_access(ctx, &state, op::DESCRIBE, id).and_then(|()| coordinates(ctx, &state, id)) {
                out.error_code = code.0;
                return out;
            }
            match state.groups.groups.get(&**id) {
                Some(Group::Consumer(g)) => {
                    out.group_state = s(g.state_name());
                    out.group_epoch = g.group_epoch;
                    out.assignment_epoch = g.assignment_epoch;
                    out.assignor_name = s(g.assignor());
                    out.members = g
                        .members
                        .values()
                        .map(|m| consumer_group_describe_response::Member {
                            member_id: s(&m.id),
                            instance_id: m.instance_id.as_deref().map(s),
                            rack_id: m.rack_id.as_deref().map(s),
                            member_epoch: m.epoch,
                            client_id: s(&m.client_id),
                            client_host: s(&m.client_host),
                            subscribed_topic_names: m.topic_names.iter().map(|n| s(n)).collect(),
                            subscribed_topic_regex: m.regex.as_deref().map(s),
                            assignment: described(&m.assigned, &names),
                            target_assignment: described(g.target.get(&m.id).unwrap_or(&Assignment::new()), &names),
                            // 1: the consumer protocol.
                            member_type: if ctx.version >= 1 { 1 } else { -1 },
                            ..Default::default()
                        })
                        .collect();
                }
                Some(_) => {
                    out.error_code = ErrorCode::GROUP_ID_NOT_FOUND.0;
                    out.error_message = Some(s(&format!("Group {id} is not a consumer group.")));
                }
                None => {
                    out.error_code = ErrorCode::GROUP_ID_NOT_FOUND.0;
                    out.error_message = Some(s(&format!("Group {id} not found.")));
                }
            }
            out
        })
        .collect();
    ConsumerGroupDescribeResponse { groups, ..Default::default() }
}

// ---------------------------------------------------------------------------------------------
// KIP-932 membership.

pub(super) fn share_group_heartbeat(ctx: &Ctx<'_>, req: &ShareGroupHeartbeatRequest) -> ShareGroupHeartbeatResponse {
    let refuse = |code: ErrorCode, message: String| ShareGroupHeartbeatResponse { error_code: code.0, error_message: Some(s(&message)), ..Default::default() };
    if req.member_id.is_empty() {
        return refuse(ErrorCode::INVALID_REQUEST, "MemberId can't be empty.".into());
    }
    if req.group_id.is_empty() {
        return refuse(ErrorCode::INVALID_REQUEST, "GroupId can't be empty.".into());
    }
    if req.rack_id.as_ref().is_some_and(|r| r.is_empty()) {
        return refuse(ErrorCode::INVALID_REQUEST, "RackId can't be empty.".into());
    }
    let epoch = req.member_epoch;
    if epoch == 0 && req.subscribed_topic_names.as_ref().is_none_or(Vec::is_empty) {
        return refuse(ErrorCode::INVALID_REQUEST, "SubscribedTopicNames must be set in first request.".into());
    }
    if epoch < -1 {
        return refuse(ErrorCode::INVALID_REQUEST, "MemberEpoch is invalid.".into());
    }
    let mut guard = ctx.inner.state();
    let state = &mut *guard;
    if let Err(code) = coordinates(ctx, state, &req.group_id) {
        return refuse(code, code.message().unwrap_or_default().to_owned());
    }
    let group_id = req.group_id.to_string();
    let session = std::time::Duration::from_millis(
        u64::try_from(state.groups.config_i64(&group_id, "share.session.timeout.ms", defaults::SHARE_SESSION_MS)).unwrap_or(45_000),
    );
    let interval = state.groups.config_i64(&group_id, "share.heartbeat.interval.ms", defaults::SHARE_HEARTBEAT_MS);
    let topics = topics_view(&state.topics);
    match state.groups.groups.get(&group_id) {
        Some(Group::Share(_)) => {}
        // Share groups take no group of another kind, empty or not.
        Some(_) => return refuse(ErrorCode::GROUP_ID_NOT_FOUND, format!("Group {group_id} is not a share group.")),
        None if epoch != 0 => return refuse(ErrorCode::GROUP_ID_NOT_FOUND, format!("Share group {group_id} not found.")),
        None => {
            state.groups.groups.insert(group_id.clone(), Group::Share(ShareGroup::new(session)));
        }
    }
    let Some(Group::Share(group)) = state.groups.groups.get_mut(&group_id) else {
        return refuse(ErrorCode::GROUP_ID_NOT_FOUND, format!("Share group {group_id} not found."));
    };
    group.session_timeout = session;
    if epoch == -1 {
        if !group.remove_member(&req.member_id) {
            return refuse(ErrorCode::UNKNOWN_MEMBER_ID, format!("Member {} is not a member of the share group.", req.member_id));
        }
        state.groups.member_left_share_group(&group_id, &req.member_id);
        ctx.inner.wake();
        return ShareGroupHeartbeatResponse { member_id: Some(req.member_id.clone()), member_epoch: -1, ..Default::default() };
    }
    match group.heartbeat(req, ctx.client_id, &topics, Instant::now()) {
        Ok(answer) => ShareGroupHeartbeatResponse {
            member_id: Some(req.member_id.clone()),
            member_epoch: answer.epoch,
            heartbeat_interval_ms: i32::try_from(interval).unwrap_or(5000),
            assignment: answer.assignment.map(|a| share_group_heartbeat_response::Assignment {
                topic_partitions: a
                    .iter()
                    .map(|(t, ps)| share_group_heartbeat_response::TopicPartitions {
                        topic_id: *t,
                        partitions: ps.iter().copied().collect(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }),
            ..Default::default()
        },
        Err((code, message)) => refuse(code, message),
    }
}

pub(super) fn share_group_describe(ctx: &Ctx<'_>, req: &ShareGroupDescribeRequest) -> ShareGroupDescribeResponse {
    let state = ctx.inner.state();
    let names: BTreeMap<Uuid, String> = state.topics.iter().map(|(n, t)| (t.id, n.clone())).collect();
    let groups = req
        .group_ids
        .iter()
        .map(|id| {
            let mut out = share_group_describe_response::DescribedGroup { group_id: id.clone(), authorized_operations: i32::MIN, ..Default::default() };
            if let Err(code) = group_access(ctx, &state, op::DESCRIBE, id).and_then(|()| coordinates(ctx, &state, id)) {
                out.error_code = code.0;
                return out;
            }
            match state.groups.groups.get(&**id) {
                Some(Group::Share(g)) => {
                    out.group_state = s(g.state_name());
                    out.group_epoch = g.group_epoch;
                    out.assignment_epoch = g.assignment_epoch;
                    out.assignor_name = s("simple");
                    out.members = g
                        .members
                        .values()
                        .map(|m| share_group_describe_response::Member {
                            member_id: s(&m.id),
                            rack_id: m.rack_id.as_deref().map(s),
                            member_epoch: m.epoch,
                            client_id: s(&m.client_id),
                            client_host: s(&m.client_host),
                            subscribed_topic_names: m.topic_names.iter().map(|n| s(n)).collect(),
                            assignment: share_group_describe_response::Assignment {
                                topic_partitions: m
                                    .assigned
                                    .iter()
                                    .map(|(t, ps)| share_group_describe_response::TopicPartitions {
                                        topic_id: *t,
                                        topic_name: s(names.get(t).map_or("", |n| n.as_str())),
                                        partitions: ps.iter().copied().collect(),
                                        ..Default::default()
                                    })
                                    .collect(),
                                ..Default::default()
                            },
                            ..Default::default()
                        })
                        .collect();
                }
                Some(_) => {
                    out.error_code = ErrorCode::GROUP_ID_NOT_FOUND.0;
                    out.error_message = Some(s(&format!("Group {id} is not a share group.")));
                }
                None => {
                    out.error_code = ErrorCode::GROUP_ID_NOT_FOUND.0;
                    out.error_message = Some(s(&format!("Group {id} not found.")));
                }
            }
            out
        })
        .collect();
    ShareGroupDescribeResponse { groups, ..Default::default() }
}

/// `ms` for a lock duration.
pub(super) fn lock_ms(d: std::time::Duration) -> i32 {
    i32::try_from(ms(d)).unwrap_or(i32::MAX)
}
