//! Consumer groups as their coordinator keeps them: the classic join/sync rebalance protocol
//! (the leader client computes the assignment), heartbeats with session timeouts, committed
//! offsets, and the offsets transactions commit (kept pending until the transaction's marker).

use std::collections::BTreeMap;
use std::time::Duration;

use kwire::messages::{
    join_group_response::JoinGroupResponseMember, leave_group_response::MemberResponse, offset_commit_response,
    offset_fetch_response, *,
};
use kwire::{ByteString, Bytes};
use tokio::sync::oneshot;
use tokio::time::Instant;

use kwire::ErrorCode;

use crate::handlers::Ctx;

/// Kafka error codes as the generated messages carry them.
mod errors {
    use kwire::ErrorCode;
    pub const NONE: i16 = ErrorCode::NONE.0;
    pub const ILLEGAL_GENERATION: i16 = ErrorCode::ILLEGAL_GENERATION.0;
    pub const INCONSISTENT_GROUP_PROTOCOL: i16 = ErrorCode::INCONSISTENT_GROUP_PROTOCOL.0;
    pub const UNKNOWN_MEMBER_ID: i16 = ErrorCode::UNKNOWN_MEMBER_ID.0;
    pub const REBALANCE_IN_PROGRESS: i16 = ErrorCode::REBALANCE_IN_PROGRESS.0;
    pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
}

/// What a JoinGroup waiting for the rebalance to complete gets.
pub(crate) struct JoinOutcome {
    pub(crate) error_code: i16,
    pub(crate) generation_id: i32,
    pub(crate) protocol_type: String,
    pub(crate) protocol_name: String,
    pub(crate) leader: String,
    pub(crate) member_id: String,
    /// Every member and its metadata for the chosen protocol; only for the leader.
    pub(crate) members: Vec<(String, Bytes)>,
}

struct Member {
    protocols: Vec<(String, Bytes)>,
    session_timeout: Duration,
    rebalance_timeout: Duration,
    last_seen: Instant,
    assignment: Bytes,
    join_waiter: Option<oneshot::Sender<JoinOutcome>>,
    sync_waiter: Option<oneshot::Sender<(i16, Bytes)>>,
}

struct Group {
    state: State,
    generation: i32,
    protocol_type: String,
    protocol_name: String,
    leader: String,
    members: BTreeMap<String, Member>,
    rebalance_deadline: Instant,
}

impl Group {
    fn new() -> Group {
        Group {
            state: State::Empty,
            generation: 0,
            protocol_type: String::new(),
            protocol_name: String::new(),
            leader: String::new(),
            members: BTreeMap::new(),
            rebalance_deadline: Instant::now(),
        }
    }

    /// Moves to PreparingRebalance: members learn of it from Heartbeat and SyncGroup errors and
    /// rejoin; those that do not by the deadline are dropped.
    fn prepare_rebalance(&mut self) {
        if self.state == State::PreparingRebalance {
            return;
        }
        for member in self.members.values_mut() {
            if let Some(tx) = member.sync_waiter.take() {
                let _ = tx.send((errors::REBALANCE_IN_PROGRESS, Bytes::new()));
            }
        }
        let timeout = self.members.values().map(|m| m.rebalance_timeout).max().unwrap_or_default();
        self.rebalance_deadline = Instant::now() + timeout.min(MAX_TIMEOUT);
        self.state = State::PreparingRebalance;
    }

    /// Completes the join phase once every member has rejoined (or `force`, at the deadline).
    fn try_complete_join(&mut self, force: bool) {
        if self.state != State::PreparingRebalance {
            return;
        }
        if !force && !self.members.values().all(|m| m.join_waiter.is_some()) {
            return;
        }
        self.members.retain(|_, m| m.join_waiter.is_some());
        if self.members.is_empty() {
            self.state = State::Empty;
            return;
        }
        self.generation += 1;
        if !self.members.contains_key(&self.leader) {
            self.leader = self.members.keys().next().cloned().unwrap_or_default();
        }
        // The first of the leader's protocols that every member supports.
        let leader_protocols = self.members.get(&self.leader).map(|m| m.protocols.clone()).unwrap_or_default();
        let chosen = leader_protocols
            .iter()
            .map(|(name, _)| name.clone())
            .find(|name| self.members.values().all(|m| m.protocols.iter().any(|(n, _)| n == name)))
            .unwrap_or_default();
        self.protocol_name = chosen.clone();
        self.state = State::CompletingRebalance;
        let all: Vec<(String, Bytes)> = self
            .members
            .iter()
            .map(|(id, m)| {
                let meta = m.protocols.iter().find(|(n, _)| *n == chosen).map(|(_, b)| b.clone()).unwrap_or_default();
                (id.clone(), meta)
            })
            .collect();
        let now = Instant::now();
        for (id, member) in self.members.iter_mut() {
            member.assignment = Bytes::new();
            member.last_seen = now;
            if let Some(tx) = member.join_waiter.take() {
                let _ = tx.send(JoinOutcome {
                    error_code: errors::NONE,
                    generation_id: self.generation,
                    protocol_type: self.protocol_type.clone(),
                    protocol_name: chosen.clone(),
                    leader: self.leader.clone(),
                    member_id: id.clone(),
                    members: if *id == self.leader { all.clone() } else { vec![] },
                });
            }
        }
    }

    fn remove_member(&mut self, member_id: &str) -> bool {
        let Some(mut member) = self.members.remove(member_id) else { return false };
        if let Some(tx) = member.join_waiter.take() {
            let _ = tx.send(JoinOutcome::error(errors::UNKNOWN_MEMBER_ID, member_id));
        }
        if self.members.is_empty() {
            self.state = State::Empty;
        } else {
            self.prepare_rebalance();
            self.try_complete_join(false);
        }
        true
    }
}

impl JoinOutcome {
    pub(crate) fn error(error_code: i16, member_id: &str) -> JoinOutcome {
        JoinOutcome {
            error_code,
            generation_id: -1,
            protocol_type: String::new(),
            protocol_name: String::new(),
            leader: String::new(),
            member_id: member_id.to_owned(),
            members: vec![],
        }
    }
}

/// Longest a join or sync waits, and the cap on client-given timeouts.
const MAX_TIMEOUT: Duration = Duration::from_secs(300);

struct Committed {
    offset: i64,
    leader_epoch: i32,
    metadata: Option<ByteString>,
}

/// Every group, its committed offsets, and offsets transactions committed but not yet
/// decided.
#[derive(Default)]
pub(crate) struct Groups {
    groups: BTreeMap<String, Group>,
    offsets: BTreeMap<String, BTreeMap<(String, i32), Committed>>,
    /// Producer id -> group -> offsets, until the transaction's marker.
    pending: BTreeMap<i64, BTreeMap<String, BTreeMap<(String, i32), Committed>>>,
    next_member: u64,
}

impl std::fmt::Debug for Groups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Groups({})", self.groups.len())
    }
}

impl Groups {
    /// TxnOffsetCommit: offsets held for `producer_id`'s transaction.
    pub(crate) fn stage(&mut self, producer_id: i64, group: &str, topic: &str, partition: i32, offset: i64, leader_epoch: i32, metadata: Option<ByteString>) {
        self.pending.entry(producer_id).or_default().entry(group.to_owned()).or_default().insert((topic.to_owned(), partition), Committed { offset, leader_epoch, metadata });
    }

    /// The transaction of `producer_id` ended: its offsets for `group` are committed, or dropped.
    pub(crate) fn complete(&mut self, producer_id: i64, group: &str, commit: bool) {
        let Some(by_group) = self.pending.get_mut(&producer_id) else { return };
        if let Some(offsets) = by_group.remove(group) {
            if commit {
                self.offsets.entry(group.to_owned()).or_default().extend(offsets);
            }
        }
        if by_group.is_empty() {
            self.pending.remove(&producer_id);
        }
    }

    /// The offset `group` committed for a partition, if any.
    pub(crate) fn committed(&self, group: &str, topic: &str, partition: i32) -> Option<i64> {
        self.offsets.get(group)?.get(&(topic.to_owned(), partition)).map(|c| c.offset)
    }

    /// Whether a group has offsets pending in a transaction for this partition (KIP-447: an
    /// OffsetFetch with require_stable waits).
    pub(crate) fn unstable(&self, group: &str, topic: &str, partition: i32) -> bool {
        self.pending.values().any(|g| g.get(group).is_some_and(|o| o.contains_key(&(topic.to_owned(), partition))))
    }
}

fn millis(ms: i32) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0)).min(MAX_TIMEOUT)
}

fn s(v: &str) -> ByteString {
    ByteString::from(v.to_owned())
}

pub(crate) async fn join_group(ctx: &Ctx<'_>, req: &JoinGroupRequest) -> JoinOutcome {
    let client_id = ctx.client_id;
    let rx = {
        let mut state = ctx.inner.state();
        let groups = &mut state.groups;
        let next = groups.next_member;
        let group = groups.groups.entry(req.group_id.to_string()).or_insert_with(Group::new);
        if req.protocol_type.is_empty() || req.protocols.is_empty() {
            return JoinOutcome::error(errors::INCONSISTENT_GROUP_PROTOCOL, &req.member_id);
        }
        let supports_common = group.members.is_empty()
            || (group.protocol_type == *req.protocol_type
                && req.protocols.iter().any(|p| group.members.values().all(|m| m.protocols.iter().any(|(n, _)| *n == *p.name))));
        if !supports_common {
            return JoinOutcome::error(errors::INCONSISTENT_GROUP_PROTOCOL, &req.member_id);
        }
        let member_id = if req.member_id.is_empty() {
            format!("{client_id}-{next}")
        } else if group.members.contains_key(&*req.member_id) {
            req.member_id.to_string()
        } else {
            return JoinOutcome::error(errors::UNKNOWN_MEMBER_ID, &req.member_id);
        };
        group.protocol_type = req.protocol_type.to_string();
        let (tx, rx) = oneshot::channel();
        let session_timeout = millis(req.session_timeout_ms);
        // v0 has no rebalance timeout: Kafka uses the session timeout.
        let rebalance_timeout = if req.rebalance_timeout_ms > 0 { millis(req.rebalance_timeout_ms) } else { session_timeout };
        let previous = group.members.insert(
            member_id.clone(),
            Member {
                protocols: req.protocols.iter().map(|p| (p.name.to_string(), p.metadata.clone())).collect(),
                session_timeout,
                rebalance_timeout,
                last_seen: Instant::now(),
                assignment: Bytes::new(),
                join_waiter: Some(tx),
                sync_waiter: None,
            },
        );
        if let Some(old_tx) = previous.and_then(|mut m| m.join_waiter.take()) {
            let _ = old_tx.send(JoinOutcome::error(errors::UNKNOWN_MEMBER_ID, &member_id));
        }
        group.prepare_rebalance();
        group.try_complete_join(false);
        groups.next_member += 1;
        rx
    };
    match tokio::time::timeout(MAX_TIMEOUT, rx).await {
        Ok(Ok(outcome)) => outcome,
        _ => JoinOutcome::error(errors::REBALANCE_IN_PROGRESS, &req.member_id),
    }
}

pub(crate) fn join_response(outcome: JoinOutcome, version: i16) -> JoinGroupResponse {
    JoinGroupResponse {
        error_code: outcome.error_code,
        generation_id: outcome.generation_id,
        protocol_type: (version >= 7).then(|| s(&outcome.protocol_type)),
        protocol_name: Some(s(&outcome.protocol_name)),
        leader: s(&outcome.leader),
        member_id: s(&outcome.member_id),
        members: outcome
            .members
            .into_iter()
            .map(|(member_id, metadata)| JoinGroupResponseMember {
                member_id: s(&member_id),
                group_instance_id: None,
                metadata,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

pub(crate) async fn sync_group(ctx: &Ctx<'_>, req: &SyncGroupRequest) -> SyncGroupResponse {
    let version = ctx.version;
    let respond = |error_code: i16, assignment: Bytes, protocol: Option<(String, String)>| SyncGroupResponse {
        error_code,
        assignment,
        protocol_type: protocol.as_ref().filter(|_| version >= 5).map(|(t, _)| s(t)),
        protocol_name: protocol.as_ref().filter(|_| version >= 5).map(|(_, n)| s(n)),
        ..Default::default()
    };
    let (rx, protocol) = {
        let mut state = ctx.inner.state();
        let groups = &mut state.groups;
        let Some(group) = groups.groups.get_mut(&*req.group_id) else {
            return respond(errors::UNKNOWN_MEMBER_ID, Bytes::new(), None);
        };
        let protocol = Some((group.protocol_type.clone(), group.protocol_name.clone()));
        let generation = group.generation;
        let state = group.state;
        let leader = group.leader.clone();
        let Some(member) = group.members.get_mut(&*req.member_id) else {
            return respond(errors::UNKNOWN_MEMBER_ID, Bytes::new(), None);
        };
        if req.generation_id != generation {
            return respond(errors::ILLEGAL_GENERATION, Bytes::new(), None);
        }
        member.last_seen = Instant::now();
        match state {
            State::Empty => return respond(errors::UNKNOWN_MEMBER_ID, Bytes::new(), None),
            State::PreparingRebalance => return respond(errors::REBALANCE_IN_PROGRESS, Bytes::new(), None),
            State::Stable => return respond(errors::NONE, member.assignment.clone(), protocol),
            State::CompletingRebalance => {}
        }
        let (tx, rx) = oneshot::channel();
        member.sync_waiter = Some(tx);
        if *req.member_id == leader {
            for a in &req.assignments {
                if let Some(m) = group.members.get_mut(&*a.member_id) {
                    m.assignment = a.assignment.clone();
                }
            }
            group.state = State::Stable;
            for m in group.members.values_mut() {
                if let Some(tx) = m.sync_waiter.take() {
                    let _ = tx.send((errors::NONE, m.assignment.clone()));
                }
            }
        }
        (rx, protocol)
    };
    match tokio::time::timeout(MAX_TIMEOUT, rx).await {
        Ok(Ok((error, assignment))) if error == errors::NONE => respond(error, assignment, protocol),
        Ok(Ok((error, _))) => respond(error, Bytes::new(), None),
        _ => respond(errors::REBALANCE_IN_PROGRESS, Bytes::new(), None),
    }
}

pub(crate) fn heartbeat(ctx: &Ctx<'_>, req: &HeartbeatRequest) -> HeartbeatResponse {
    let mut state = ctx.inner.state();
    let groups = &mut state.groups;
    let error_code = match groups.groups.get_mut(&*req.group_id) {
        None => errors::UNKNOWN_MEMBER_ID,
        Some(group) => {
            let (state, generation) = (group.state, group.generation);
            match group.members.get_mut(&*req.member_id) {
                None => errors::UNKNOWN_MEMBER_ID,
                Some(member) => {
                    member.last_seen = Instant::now();
                    match state {
                        State::Empty => errors::UNKNOWN_MEMBER_ID,
                        State::PreparingRebalance => errors::REBALANCE_IN_PROGRESS,
                        _ if req.generation_id != generation => errors::ILLEGAL_GENERATION,
                        _ => errors::NONE,
                    }
                }
            }
        }
    };
    HeartbeatResponse { error_code, ..Default::default() }
}

pub(crate) fn leave_group(ctx: &Ctx<'_>, req: &LeaveGroupRequest) -> LeaveGroupResponse {
    let version = ctx.version;
    let mut state = ctx.inner.state();
    let groups = &mut state.groups;
    let group = groups.groups.get_mut(&*req.group_id);
    if version < 3 {
        let removed = group.is_some_and(|g| g.remove_member(&req.member_id));
        let error_code = if removed { errors::NONE } else { errors::UNKNOWN_MEMBER_ID };
        return LeaveGroupResponse { error_code, ..Default::default() };
    }
    let Some(group) = group else {
        return LeaveGroupResponse { error_code: errors::UNKNOWN_MEMBER_ID, ..Default::default() };
    };
    let members = req
        .members
        .iter()
        .map(|m| MemberResponse {
            member_id: m.member_id.clone(),
            group_instance_id: m.group_instance_id.clone(),
            error_code: if group.remove_member(&m.member_id) { errors::NONE } else { errors::UNKNOWN_MEMBER_ID },
            ..Default::default()
        })
        .collect();
    LeaveGroupResponse { error_code: errors::NONE, members, ..Default::default() }
}

pub(crate) fn offset_commit(ctx: &Ctx<'_>, req: &OffsetCommitRequest) -> OffsetCommitResponse {
    let mut state = ctx.inner.state();
    let state = &mut *state;
    let topics = &state.topics;
    let groups = &mut state.groups;
    let group_error = match groups.groups.get_mut(&*req.group_id) {
        // A commit from outside any generation (a simple consumer, or v0) is accepted while
        // the group has no members, as in Kafka.
        _ if req.generation_id_or_member_epoch < 0 && req.member_id.is_empty() => {
            let busy = groups.groups.get(&*req.group_id).is_some_and(|g| !g.members.is_empty());
            if busy { errors::UNKNOWN_MEMBER_ID } else { errors::NONE }
        }
        None => errors::UNKNOWN_MEMBER_ID,
        Some(group) => match group.members.get_mut(&*req.member_id) {
            None => errors::UNKNOWN_MEMBER_ID,
            Some(_) if group.generation != req.generation_id_or_member_epoch => errors::ILLEGAL_GENERATION,
            Some(_) if group.state == State::PreparingRebalance => errors::REBALANCE_IN_PROGRESS,
            Some(member) => {
                member.last_seen = Instant::now();
                errors::NONE
            }
        },
    };
    let offsets = groups.offsets.entry(req.group_id.to_string()).or_default();
    let results = req
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
                    let name = if t.name.is_empty() { topics.iter().find(|(_, x)| x.id == t.topic_id).map(|(n, _)| n.clone()) } else { Some(t.name.to_string()) };
                    let exists = name
                        .as_deref()
                        .and_then(|n| topics.get(n))
                        .is_some_and(|topic| usize::try_from(p.partition_index).is_ok_and(|i| i < topic.partitions.len()));
                    let error_code = if group_error != errors::NONE {
                        group_error
                    } else if !exists {
                        if t.name.is_empty() { ErrorCode::UNKNOWN_TOPIC_ID.0 } else { errors::UNKNOWN_TOPIC_OR_PARTITION }
                    } else {
                        offsets.insert(
                            (name.clone().unwrap_or_default(), p.partition_index),
                            Committed {
                                offset: p.committed_offset,
                                leader_epoch: p.committed_leader_epoch,
                                metadata: p.committed_metadata.clone(),
                            },
                        );
                        errors::NONE
                    };
                    offset_commit_response::OffsetCommitResponsePartition {
                        partition_index: p.partition_index,
                        error_code,
                        ..Default::default()
                    }
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    OffsetCommitResponse { topics: results, ..Default::default() }
}

pub(crate) fn offset_fetch(ctx: &Ctx<'_>, req: &OffsetFetchRequest) -> OffsetFetchResponse {
    let version = ctx.version;
    let state = ctx.inner.state();
    let groups = &state.groups;
    // (topic, partitions) asked for, or every committed one when the list is null.
    let lookup = |group_id: &str, asked: Option<Vec<(String, Vec<i32>)>>| -> Vec<(String, Vec<(i32, Option<&Committed>)>)> {
        let committed = groups.offsets.get(group_id);
        match asked {
            Some(list) => list
                .into_iter()
                .map(|(topic, parts)| {
                    let found = parts.into_iter().map(|p| (p, committed.and_then(|c| c.get(&(topic.clone(), p))))).collect();
                    (topic, found)
                })
                .collect(),
            None => {
                let mut by_topic: BTreeMap<String, Vec<(i32, Option<&Committed>)>> = BTreeMap::new();
                for ((topic, p), c) in committed.into_iter().flatten() {
                    by_topic.entry(topic.clone()).or_default().push((*p, Some(c)));
                }
                by_topic.into_iter().collect()
            }
        }
    };
    let epoch = |c: Option<&Committed>| if version >= 5 { c.map_or(-1, |c| c.leader_epoch) } else { -1 };
    if version >= 8 {
        let out = req
            .groups
            .iter()
            .map(|g| {
                // v10 names topics by id.
                let asked = g.topics.as_ref().map(|ts| {
                    ts.iter().map(|t| (if t.name.is_empty() { state.topic_name("", t.topic_id).unwrap_or_default() } else { t.name.to_string() }, t.partition_indexes.to_vec())).collect()
                });
                offset_fetch_response::OffsetFetchResponseGroup {
                    group_id: g.group_id.clone(),
                    error_code: errors::NONE,
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
                                    let unstable = req.require_stable && groups.unstable(&g.group_id, &name, p);
                                    let c = c.filter(|_| !unstable);
                                    offset_fetch_response::OffsetFetchResponsePartitions {
                                        partition_index: p,
                                        committed_offset: c.map_or(-1, |c| c.offset),
                                        committed_leader_epoch: epoch(c),
                                        metadata: Some(c.and_then(|c| c.metadata.clone()).unwrap_or_default()),
                                        error_code: if unstable { ErrorCode::UNSTABLE_OFFSET_COMMIT.0 } else { errors::NONE },
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
    let asked = req.topics.as_ref().map(|ts| ts.iter().map(|t| (t.name.to_string(), t.partition_indexes.to_vec())).collect());
    let topics = lookup(&req.group_id, asked)
        .into_iter()
        .map(|(name, parts)| offset_fetch_response::OffsetFetchResponseTopic {
            name: s(&name),
            partitions: parts
                .into_iter()
                .map(|(p, c)| {
                    let unstable = version >= 7 && req.require_stable && groups.unstable(&req.group_id, &name, p);
                    let c = c.filter(|_| !unstable);
                    offset_fetch_response::OffsetFetchResponsePartition {
                        partition_index: p,
                        committed_offset: c.map_or(-1, |c| c.offset),
                        committed_leader_epoch: epoch(c),
                        metadata: Some(c.and_then(|c| c.metadata.clone()).unwrap_or_default()),
                        error_code: if unstable { ErrorCode::UNSTABLE_OFFSET_COMMIT.0 } else { errors::NONE },
                        ..Default::default()
                    }
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    OffsetFetchResponse { topics, error_code: errors::NONE, ..Default::default() }
}

/// Expires members whose session ran out and completes rebalances whose deadline passed.
pub(crate) fn tick(groups: &mut Groups) {
    let now = Instant::now();
    for group in groups.groups.values_mut() {
        let expired: Vec<String> =
            group.members.iter().filter(|(_, m)| m.join_waiter.is_none() && now.duration_since(m.last_seen) > m.session_timeout).map(|(id, _)| id.clone()).collect();
        for id in expired {
            group.remove_member(&id);
        }
        if group.state == State::PreparingRebalance && now >= group.rebalance_deadline {
            group.try_complete_join(true);
        }
    }
}
