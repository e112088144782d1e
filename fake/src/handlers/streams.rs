//! StreamsGroupHeartbeat, StreamsGroupDescribe and StreamsGroupTopologyDescriptionUpdate
//! (KIP-1071, on by default from Kafka 4.2): members join with their topology and get their
//! active tasks, leave at epoch -1; a pushed topology description is refused as a broker
//! without `group.streams.topology.description.plugin` refuses it.

use kwire::messages::{
    streams_group_describe_response, streams_group_heartbeat_response, StreamsGroupDescribeRequest, StreamsGroupDescribeResponse, StreamsGroupHeartbeatRequest,
    StreamsGroupHeartbeatResponse, StreamsGroupTopologyDescriptionUpdateRequest, StreamsGroupTopologyDescriptionUpdateResponse,
};
use kwire::ErrorCode;

use super::groups::coordinates;
use super::{s, Ctx};
use crate::groups::streams::{Member, Subtopology};

/// `group.streams.heartbeat.interval.ms`, `acceptable.recovery.lag` and
/// `task.offset.interval.ms` defaults.
const HEARTBEAT_MS: i32 = 5000;
const ACCEPTABLE_RECOVERY_LAG: i64 = 10_000;
const TASK_OFFSET_INTERVAL_MS: i32 = 60_000;

fn refuse(code: ErrorCode, why: String) -> StreamsGroupHeartbeatResponse {
    StreamsGroupHeartbeatResponse { error_code: code.0, error_message: Some(s(&why)), ..Default::default() }
}

pub(super) fn heartbeat(ctx: &Ctx<'_>, req: &StreamsGroupHeartbeatRequest) -> StreamsGroupHeartbeatResponse {
    use streams_group_heartbeat_response::TaskIds;
    let mut state = ctx.inner.state();
    if let Err(code) = coordinates(ctx, &state, &req.group_id) {
        return refuse(code, code.message().unwrap_or("").to_owned());
    }
    if req.group_id.is_empty() || req.member_id.is_empty() {
        return refuse(ErrorCode::INVALID_REQUEST, "GroupId and MemberId can't be empty.".into());
    }
    // A consumer, classic or share group of that id is another kind of group.
    if state.groups.groups.contains_key(&*req.group_id) {
        return refuse(ErrorCode::GROUP_ID_NOT_FOUND, format!("Group {} is not a streams group.", req.group_id));
    }
    let counts: std::collections::BTreeMap<String, i32> = state.topics.iter().map(|(n, t)| (n.clone(), t.partitions.len() as i32)).collect();
    let partitions = |t: &str| counts.get(t).copied();
    let group_id = req.group_id.to_string();
    let member_id = req.member_id.to_string();
    let now = tokio::time::Instant::now();
    let group = state.groups.streams.entry(group_id.clone()).or_default();
    if req.member_epoch == -1 || req.member_epoch == -2 {
        // Leaving (-2: a static member's temporary leave).
        if group.members.remove(&member_id).is_some() {
            group.reassign(&partitions);
        }
        return StreamsGroupHeartbeatResponse {
            member_id: req.member_id.clone(),
            member_epoch: req.member_epoch,
            heartbeat_interval_ms: HEARTBEAT_MS,
            ..Default::default()
        };
    }
    let joining = req.member_epoch == 0;
    match group.members.get(&member_id) {
        None if !joining => return refuse(ErrorCode::UNKNOWN_MEMBER_ID, format!("Member {member_id} is not a member of group {group_id}.")),
        Some(m) if !joining && req.member_epoch > m.epoch => {
            return refuse(ErrorCode::FENCED_MEMBER_EPOCH, format!("The member epoch {} is newer than the group's {}.", req.member_epoch, m.epoch))
        }
        _ => {}
    }
    if joining && req.topology.is_none() {
        return refuse(ErrorCode::INVALID_REQUEST, "Topology must be set when joining.".into());
    }
    let mut changed = joining && !group.members.contains_key(&member_id);
    if let Some(t) = &req.topology {
        let topology: Vec<Subtopology> = t
            .subtopologies
            .iter()
            .map(|st| Subtopology { id: st.subtopology_id.to_string(), source_topics: st.source_topics.iter().map(|n| n.to_string()).collect() })
            .collect();
        if group.topology != topology || group.topology_epoch != t.epoch {
            group.topology = topology;
            group.topology_epoch = t.epoch;
            changed = true;
        }
    }
    let topology_epoch = group.topology_epoch;
    let m = group.members.entry(member_id.clone()).or_insert_with(|| Member {
        epoch: 0,
        process_id: String::new(),
        client_id: String::new(),
        instance_id: None,
        rack_id: None,
        topology_epoch,
        active: Default::default(),
        last_seen: now,
    });
    m.last_seen = now;
    m.client_id = ctx.client_id.to_owned();
    m.topology_epoch = topology_epoch;
    if let Some(p) = &req.process_id {
        m.process_id = p.to_string();
    }
    if req.instance_id.is_some() {
        m.instance_id = req.instance_id.as_deref().map(str::to_owned);
    }
    if req.rack_id.is_some() {
        m.rack_id = req.rack_id.as_deref().map(str::to_owned);
    }
    if changed {
        group.reassign(&partitions);
    }
    let Some(m) = group.members.get(&member_id) else { return refuse(ErrorCode::UNKNOWN_MEMBER_ID, String::new()) };
    let tasks = |t: &std::collections::BTreeMap<String, Vec<i32>>| {
        Some(t.iter().map(|(id, ps)| TaskIds { subtopology_id: s(id), partitions: ps.iter().copied().collect(), ..Default::default() }).collect())
    };
    let v0 = ctx.version == 0;
    StreamsGroupHeartbeatResponse {
        member_id: req.member_id.clone(),
        member_epoch: m.epoch,
        heartbeat_interval_ms: HEARTBEAT_MS,
        acceptable_recovery_lag_legacy: if v0 { ACCEPTABLE_RECOVERY_LAG as i32 } else { 0 },
        acceptable_recovery_lag: if v0 { -1 } else { ACCEPTABLE_RECOVERY_LAG },
        task_offset_interval_ms: TASK_OFFSET_INTERVAL_MS,
        status: Some(Vec::new()),
        active_tasks: tasks(&m.active),
        standby_tasks: Some(Vec::new()),
        warmup_tasks: Some(Vec::new()),
        endpoint_information_epoch: 0,
        ..Default::default()
    }
}

pub(super) fn describe(ctx: &Ctx<'_>, req: &StreamsGroupDescribeRequest) -> StreamsGroupDescribeResponse {
    use streams_group_describe_response::*;
    let state = ctx.inner.state();
    let groups = req
        .group_ids
        .iter()
        .map(|id| {
            let mut out = DescribedGroup { group_id: id.clone(), authorized_operations: i32::MIN, ..Default::default() };
            if let Err(code) = coordinates(ctx, &state, id) {
                out.error_code = code.0;
                return out;
            }
            let Some(g) = state.groups.streams.get(&**id) else {
                out.error_code = ErrorCode::GROUP_ID_NOT_FOUND.0;
                out.error_message = Some(s(&format!("Group {id} not found.")));
                return out;
            };
            let tasks = |t: &std::collections::BTreeMap<String, Vec<i32>>| {
                t.iter().map(|(sid, ps)| TaskIds { subtopology_id: s(sid), partitions: ps.iter().copied().collect(), ..Default::default() }).collect::<Vec<_>>()
            };
            out.group_state = s(g.state_name());
            out.group_epoch = g.group_epoch;
            out.assignment_epoch = g.group_epoch;
            out.topology = Some(Topology {
                epoch: g.topology_epoch,
                subtopologies: Some(
                    g.topology
                        .iter()
                        .map(|st| Subtopology {
                            subtopology_id: s(&st.id),
                            source_topics: st.source_topics.iter().map(|t| s(t)).collect(),
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            });
            out.members = g
                .members
                .iter()
                .map(|(mid, m)| Member {
                    member_id: s(mid),
                    member_epoch: m.epoch,
                    instance_id: m.instance_id.as_deref().map(s),
                    rack_id: m.rack_id.as_deref().map(s),
                    client_id: s(&m.client_id),
                    client_host: s("/127.0.0.1"),
                    topology_epoch: m.topology_epoch,
                    process_id: s(&m.process_id),
                    assignment: Assignment { active_tasks: tasks(&m.active), ..Default::default() },
                    target_assignment: Assignment { active_tasks: tasks(&m.active), ..Default::default() },
                    ..Default::default()
                })
                .collect();
            if ctx.version >= 1 {
                out.assignor_name = Some(s("sticky"));
            }
            out
        })
        .collect();
    StreamsGroupDescribeResponse { groups, ..Default::default() }
}

pub(super) fn topology_description_update(ctx: &Ctx<'_>, req: &StreamsGroupTopologyDescriptionUpdateRequest) -> StreamsGroupTopologyDescriptionUpdateResponse {
    let state = ctx.inner.state();
    let (code, why) = if let Err(code) = coordinates(ctx, &state, &req.group_id) {
        (code, code.message().unwrap_or("").to_owned())
    } else if !state.groups.streams.get(&*req.group_id).is_some_and(|g| g.members.contains_key(&*req.member_id)) {
        (ErrorCode::UNKNOWN_MEMBER_ID, format!("Member {} is not a member of group {}.", req.member_id, req.group_id))
    } else {
        (
            ErrorCode::UNSUPPORTED_VERSION,
            "Topology descriptions are kept only through a plugin, and group.streams.topology.description.plugin is not configured.".to_owned(),
        )
    };
    StreamsGroupTopologyDescriptionUpdateResponse { error_code: code.0, error_message: Some(s(&why)), ..Default::default() }
}
