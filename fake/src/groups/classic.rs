//! The classic group protocol (Kafka's `ClassicGroup` and the classic half of
//! `GroupMetadataManager`): JoinGroup collects the members (a new dynamic member first gets
//! MEMBER_ID_REQUIRED and its id, KIP-394), the coordinator picks the protocol and the leader,
//! the leader's SyncGroup hands out the assignment. Static members (KIP-345) keep their place
//! by `group.instance.id`: a restarted one takes over its old member id's assignment without a
//! rebalance when the group is stable. Sessions time out; a rebalance waits for every member
//! up to the rebalance timeout, and the first one of an empty group waits
//! `group.initial.rebalance.delay.ms` for more members.

use std::collections::BTreeMap;
use std::time::Duration;

use kwire::messages::JoinGroupRequest;
use kwire::{Bytes, ErrorCode};
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::defaults;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
}

/// What a JoinGroup gets.
#[derive(Debug)]
pub(crate) struct JoinOutcome {
    pub(crate) error_code: i16,
    pub(crate) generation_id: i32,
    pub(crate) protocol_type: Option<String>,
    pub(crate) protocol_name: Option<String>,
    pub(crate) leader: String,
    pub(crate) member_id: String,
    /// The leader of a stable group whose static member came back: no SyncGroup assignment
    /// needed (v9+).
    pub(crate) skip_assignment: bool,
    /// Every member, its instance id and its metadata for the chosen protocol; only for the leader.
    pub(crate) members: Vec<(String, Option<String>, Bytes)>,
}

impl JoinOutcome {
    pub(crate) fn error(code: ErrorCode, member_id: &str) -> JoinOutcome {
        JoinOutcome {
            error_code: code.0,
            generation_id: -1,
            protocol_type: None,
            protocol_name: None,
            leader: String::new(),
            member_id: member_id.to_owned(),
            skip_assignment: false,
            members: vec![],
        }
    }
}

/// What a SyncGroup gets: the code and the member's assignment.
pub(crate) type SyncOutcome = (ErrorCode, Bytes);

pub(crate) struct Member {
    pub(crate) instance_id: Option<String>,
    pub(crate) client_id: String,
    pub(crate) client_host: String,
    pub(crate) protocols: Vec<(String, Bytes)>,
    pub(crate) session_timeout: Duration,
    pub(crate) rebalance_timeout: Duration,
    pub(crate) last_seen: Instant,
    pub(crate) assignment: Bytes,
    join_waiter: Option<oneshot::Sender<JoinOutcome>>,
    sync_waiter: Option<oneshot::Sender<SyncOutcome>>,
}

impl Member {
    fn metadata(&self, protocol: &str) -> Bytes {
        self.protocols.iter().find(|(n, _)| n == protocol).map(|(_, b)| b.clone()).unwrap_or_default()
    }

    fn same_protocols(&self, protocols: &[(String, Bytes)]) -> bool {
        self.protocols == protocols
    }
}

/// What a join asks for, from the request.
pub(crate) struct JoinRequest {
    pub(crate) member_id: String,
    pub(crate) instance_id: Option<String>,
    pub(crate) protocol_type: String,
    pub(crate) protocols: Vec<(String, Bytes)>,
    pub(crate) session_timeout: Duration,
    pub(crate) rebalance_timeout: Duration,
    pub(crate) client_id: String,
    pub(crate) client_host: String,
    pub(crate) version: i16,
}

impl JoinRequest {
    pub(crate) fn new(req: &JoinGroupRequest, version: i16, client_id: &str) -> JoinRequest {
        let session_timeout = Duration::from_millis(u64::try_from(req.session_timeout_ms).unwrap_or(0));
        // v0 has no rebalance timeout: Kafka uses the session timeout.
        let rebalance_timeout = if req.rebalance_timeout_ms > 0 { super::millis(req.rebalance_timeout_ms) } else { session_timeout.min(defaults::MAX_WAIT) };
        JoinRequest {
            member_id: req.member_id.to_string(),
            instance_id: req.group_instance_id.as_deref().map(str::to_owned),
            protocol_type: req.protocol_type.to_string(),
            protocols: req.protocols.iter().map(|p| (p.name.to_string(), p.metadata.clone())).collect(),
            session_timeout,
            rebalance_timeout,
            client_id: client_id.to_owned(),
            client_host: "/127.0.0.1".to_owned(),
            version,
        }
    }
}

/// A join answered now, or one waiting for the rebalance.
pub(crate) enum Joined {
    Now(JoinOutcome),
    Wait(oneshot::Receiver<JoinOutcome>),
}

/// A classic group.
pub(crate) struct ClassicGroup {
    pub(crate) state: State,
    pub(crate) generation: i32,
    pub(crate) protocol_type: Option<String>,
    pub(crate) protocol_name: Option<String>,
    pub(crate) leader: Option<String>,
    pub(crate) members: BTreeMap<String, Member>,
    /// group.instance.id -> member id.
    pub(crate) static_members: BTreeMap<String, String>,
    /// Members given an id with MEMBER_ID_REQUIRED, until they join with it (or their session
    /// times out).
    pending: BTreeMap<String, Instant>,
    /// When the join phase ends whatever: the rebalance timeout, or the initial delay.
    join_deadline: Instant,
    /// The first rebalance of an empty group: (the time it may still extend to, a member came
    /// during the current delay).
    initial: Option<(Instant, bool)>,
    initial_delay: Duration,
}

impl ClassicGroup {
    pub(crate) fn new(initial_delay: Duration) -> ClassicGroup {
        ClassicGroup {
            state: State::Empty,
            generation: 0,
            protocol_type: None,
            protocol_name: None,
            leader: None,
            members: BTreeMap::new(),
            static_members: BTreeMap::new(),
            pending: BTreeMap::new(),
            join_deadline: Instant::now(),
            initial: None,
            initial_delay,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.state == State::Empty
    }

    pub(crate) fn state_name(&self) -> &'static str {
        match self.state {
            State::Empty => "Empty",
            State::PreparingRebalance => "PreparingRebalance",
            State::CompletingRebalance => "CompletingRebalance",
            State::Stable => "Stable",
        }
    }

    /// `ClassicGroup.supportsProtocols`: an empty group takes any non-empty protocol list; a
    /// group with members needs the same protocol type and one protocol all support.
    fn supports(&self, protocol_type: &str, protocols: &[(String, Bytes)]) -> bool {
        if self.members.is_empty() {
            return !protocol_type.is_empty() && !protocols.is_empty();
        }
        self.protocol_type.as_deref() == Some(protocol_type)
            && protocols.iter().any(|(name, _)| self.members.values().all(|m| m.protocols.iter().any(|(n, _)| n == name)))
    }

    /// Whether the members use the consumer protocol (their metadata is a
    /// `ConsumerProtocolSubscription`).
    pub(crate) fn uses_consumer_protocol(&self) -> bool {
        self.protocol_type.as_deref() == Some("consumer")
    }

    /// Kafka's `validateMember`: the instance id must map to this member id, and the member must
    /// exist.
    pub(crate) fn validate_member(&self, member_id: &str, instance_id: Option<&str>) -> Result<(), ErrorCode> {
        if let Some(instance) = instance_id {
            match self.static_members.get(instance) {
                None => return Err(ErrorCode::UNKNOWN_MEMBER_ID),
                Some(existing) if existing != member_id => return Err(ErrorCode::FENCED_INSTANCE_ID),
                Some(_) => {}
            }
        }
        if self.members.contains_key(member_id) {
            Ok(())
        } else {
            Err(ErrorCode::UNKNOWN_MEMBER_ID)
        }
    }

    /// A JoinGroup.
    pub(crate) fn join(&mut self, req: JoinRequest, rng: &mut fastrand::Rng) -> Joined {
        if !(defaults::CLASSIC_MIN_SESSION_MS..=defaults::CLASSIC_MAX_SESSION_MS).contains(&i32::try_from(req.session_timeout.as_millis()).unwrap_or(i32::MAX))
        {
            return Joined::Now(JoinOutcome::error(ErrorCode::INVALID_SESSION_TIMEOUT, &req.member_id));
        }
        if req.member_id.is_empty() {
            return self.join_new(req, rng);
        }
        if !self.supports(&req.protocol_type, &req.protocols) {
            return Joined::Now(JoinOutcome::error(ErrorCode::INCONSISTENT_GROUP_PROTOCOL, &req.member_id));
        }
        if self.pending.remove(&req.member_id).is_some() {
            let id = req.member_id.clone();
            return self.add_member(id, req);
        }
        // validateExistingMember
        let known = match &req.instance_id {
            None => self.members.contains_key(&req.member_id).then_some(()).ok_or(ErrorCode::UNKNOWN_MEMBER_ID),
            Some(instance) => match self.static_members.get(instance) {
                None => Err(ErrorCode::UNKNOWN_MEMBER_ID),
                Some(existing) if *existing != req.member_id => Err(ErrorCode::FENCED_INSTANCE_ID),
                Some(_) => Ok(()),
            },
        };
        if let Err(code) = known {
            return Joined::Now(JoinOutcome::error(code, &req.member_id));
        }
        let id = req.member_id.clone();
        let is_leader = self.leader.as_deref() == Some(id.as_str());
        let same = self.members.get(&id).is_some_and(|m| m.same_protocols(&req.protocols));
        match self.state {
            State::PreparingRebalance => self.update_member(id, req),
            // A join whose answer was lost: the same answer again.
            State::CompletingRebalance if same => Joined::Now(self.current_join(&id, false)),
            State::Stable if same && !is_leader => Joined::Now(self.current_join(&id, false)),
            _ => self.update_member(id, req),
        }
    }

    /// A join without a member id.
    fn join_new(&mut self, req: JoinRequest, rng: &mut fastrand::Rng) -> Joined {
        if !self.supports(&req.protocol_type, &req.protocols) {
            return Joined::Now(JoinOutcome::error(ErrorCode::INCONSISTENT_GROUP_PROTOCOL, ""));
        }
        let prefix = req.instance_id.clone().unwrap_or_else(|| req.client_id.clone());
        let new_id = format!("{prefix}-{}", super::uuid_string(rng));
        if let Some(instance) = req.instance_id.clone() {
            if let Some(old_id) = self.static_members.get(&instance).cloned() {
                return self.replace_static_member(&instance, &old_id, new_id, req);
            }
            return self.add_member(new_id, req);
        }
        // KIP-394: a dynamic member first learns its id, and joins with it.
        if req.version >= 4 {
            self.pending.insert(new_id.clone(), Instant::now() + req.session_timeout);
            return Joined::Now(JoinOutcome::error(ErrorCode::MEMBER_ID_REQUIRED, &new_id));
        }
        self.add_member(new_id, req)
    }

    fn new_member(req: &JoinRequest, tx: oneshot::Sender<JoinOutcome>) -> Member {
        Member {
            instance_id: req.instance_id.clone(),
            client_id: req.client_id.clone(),
            client_host: req.client_host.clone(),
            protocols: req.protocols.clone(),
            session_timeout: req.session_timeout,
            rebalance_timeout: req.rebalance_timeout,
            last_seen: Instant::now(),
            assignment: Bytes::new(),
            join_waiter: Some(tx),
            sync_waiter: None,
        }
    }

    fn add_member(&mut self, id: String, req: JoinRequest) -> Joined {
        let (tx, rx) = oneshot::channel();
        if self.members.is_empty() {
            self.protocol_type = Some(req.protocol_type.clone());
        }
        if let Some(instance) = &req.instance_id {
            self.static_members.insert(instance.clone(), id.clone());
        }
        if self.leader.is_none() {
            self.leader = Some(id.clone());
        }
        self.members.insert(id, Self::new_member(&req, tx));
        if let Some((_, added)) = &mut self.initial {
            *added = true;
        }
        self.prepare_or_complete();
        Joined::Wait(rx)
    }

    fn update_member(&mut self, id: String, req: JoinRequest) -> Joined {
        let (tx, rx) = oneshot::channel();
        let Some(member) = self.members.get_mut(&id) else {
            return Joined::Now(JoinOutcome::error(ErrorCode::UNKNOWN_MEMBER_ID, &id));
        };
        if let Some(old) = member.join_waiter.replace(tx) {
            let _ = old.send(JoinOutcome::error(ErrorCode::UNKNOWN_MEMBER_ID, &id));
        }
        member.protocols = req.protocols;
        member.session_timeout = req.session_timeout;
        member.rebalance_timeout = req.rebalance_timeout;
        member.last_seen = Instant::now();
        self.prepare_or_complete();
        Joined::Wait(rx)
    }

    /// KIP-345: a static member joins again under a new member id. The old id is fenced; in a
    /// stable group whose protocol stays, the new one takes its assignment without a rebalance.
    fn replace_static_member(&mut self, instance: &str, old_id: &str, new_id: String, req: JoinRequest) -> Joined {
        let Some(mut member) = self.members.remove(old_id) else {
            return self.add_member(new_id, req);
        };
        if let Some(tx) = member.join_waiter.take() {
            let _ = tx.send(JoinOutcome::error(ErrorCode::FENCED_INSTANCE_ID, old_id));
        }
        if let Some(tx) = member.sync_waiter.take() {
            let _ = tx.send((ErrorCode::FENCED_INSTANCE_ID, Bytes::new()));
        }
        let (tx, rx) = oneshot::channel();
        member.join_waiter = Some(tx);
        member.protocols = req.protocols.clone();
        member.session_timeout = req.session_timeout;
        member.rebalance_timeout = req.rebalance_timeout;
        member.client_id = req.client_id.clone();
        member.last_seen = Instant::now();
        self.members.insert(new_id.clone(), member);
        self.static_members.insert(instance.to_owned(), new_id.clone());
        if self.leader.as_deref() == Some(old_id) {
            self.leader = Some(new_id.clone());
        }
        match self.state {
            State::Stable if self.protocol_name.as_deref() == Some(self.select_protocol().as_str()) => {
                let is_leader = self.leader.as_deref() == Some(new_id.as_str());
                let skip = req.version >= 9;
                let outcome = self.current_join(&new_id, skip && is_leader);
                let outcome = JoinOutcome { skip_assignment: skip && is_leader, members: if skip && is_leader { outcome.members } else { vec![] }, ..outcome };
                if let Some(tx) = self.members.get_mut(&new_id).and_then(|m| m.join_waiter.take()) {
                    let _ = tx.send(outcome);
                }
            }
            State::Stable | State::CompletingRebalance => self.prepare_rebalance(),
            _ => self.try_complete_join(false),
        }
        Joined::Wait(rx)
    }

    /// The answer of the current generation for `id` (with every member when asked, for a leader).
    fn current_join(&self, id: &str, with_members: bool) -> JoinOutcome {
        let protocol = self.protocol_name.clone().unwrap_or_default();
        let leader = self.leader.clone().unwrap_or_default();
        let with_members = with_members || leader == id;
        JoinOutcome {
            error_code: ErrorCode::NONE.0,
            generation_id: self.generation,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol_name.clone(),
            leader,
            member_id: id.to_owned(),
            skip_assignment: false,
            members: if with_members {
                self.members.iter().map(|(mid, m)| (mid.clone(), m.instance_id.clone(), m.metadata(&protocol))).collect()
            } else {
                vec![]
            },
        }
    }

    /// `maybePrepareRebalanceOrCompleteJoin`.
    fn prepare_or_complete(&mut self) {
        match self.state {
            State::Empty | State::Stable | State::CompletingRebalance => self.prepare_rebalance(),
            State::PreparingRebalance => self.try_complete_join(false),
        }
    }

    /// Moves to PreparingRebalance: members learn of it from Heartbeat and SyncGroup errors and
    /// join again; those that do not by the deadline are dropped. The first rebalance of an
    /// empty group waits the initial delay (extended while members keep coming, up to the
    /// rebalance timeout).
    pub(crate) fn prepare_rebalance(&mut self) {
        if self.state == State::CompletingRebalance {
            for member in self.members.values_mut() {
                member.assignment = Bytes::new();
                if let Some(tx) = member.sync_waiter.take() {
                    let _ = tx.send((ErrorCode::REBALANCE_IN_PROGRESS, Bytes::new()));
                }
            }
        }
        let timeout = self.members.values().map(|m| m.rebalance_timeout).max().unwrap_or_default();
        let now = Instant::now();
        if self.state == State::Empty {
            let delay = self.initial_delay.min(timeout);
            self.join_deadline = now + delay;
            self.initial = Some((now + timeout, false));
        } else {
            self.join_deadline = now + timeout;
            self.initial = None;
        }
        self.state = State::PreparingRebalance;
    }

    /// The protocol most members prefer among those all support (Kafka's vote).
    fn select_protocol(&self) -> String {
        let Some(first) = self.members.values().next() else { return String::new() };
        let candidates: Vec<&str> =
            first.protocols.iter().map(|(n, _)| n.as_str()).filter(|name| self.members.values().all(|m| m.protocols.iter().any(|(n, _)| n == name))).collect();
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for m in self.members.values() {
            if let Some((name, _)) = m.protocols.iter().find(|(n, _)| candidates.contains(&n.as_str())) {
                *votes.entry(name.as_str()).or_default() += 1;
            }
        }
        let best = votes.values().copied().max().unwrap_or(0);
        candidates.into_iter().find(|c| votes.get(c).copied() == Some(best)).unwrap_or_default().to_owned()
    }

    /// Completes the join phase once every member has joined again (not during the initial
    /// delay), or at the deadline (`force`): members that did not join are dropped.
    fn try_complete_join(&mut self, force: bool) {
        if self.state != State::PreparingRebalance {
            return;
        }
        if !force && (self.initial.is_some() || !self.members.values().all(|m| m.join_waiter.is_some())) {
            return;
        }
        let gone: Vec<String> = self.members.iter().filter(|(_, m)| m.join_waiter.is_none()).map(|(id, _)| id.clone()).collect();
        for id in gone {
            self.drop_member(&id);
        }
        self.initial = None;
        self.generation += 1;
        if self.members.is_empty() {
            self.state = State::Empty;
            self.protocol_name = None;
            self.leader = None;
            return;
        }
        if !self.leader.as_ref().is_some_and(|l| self.members.contains_key(l)) {
            self.leader = self.members.keys().next().cloned();
        }
        self.protocol_name = Some(self.select_protocol());
        self.state = State::CompletingRebalance;
        let now = Instant::now();
        let ids: Vec<String> = self.members.keys().cloned().collect();
        for id in ids {
            let outcome = self.current_join(&id, false);
            if let Some(member) = self.members.get_mut(&id) {
                member.assignment = Bytes::new();
                member.last_seen = now;
                if let Some(tx) = member.join_waiter.take() {
                    let _ = tx.send(outcome);
                }
            }
        }
    }

    fn drop_member(&mut self, id: &str) -> Option<Member> {
        let mut member = self.members.remove(id)?;
        if let Some(instance) = &member.instance_id {
            if self.static_members.get(instance).is_some_and(|m| m == id) {
                self.static_members.remove(instance);
            }
        }
        if let Some(tx) = member.join_waiter.take() {
            let _ = tx.send(JoinOutcome::error(ErrorCode::UNKNOWN_MEMBER_ID, id));
        }
        if let Some(tx) = member.sync_waiter.take() {
            let _ = tx.send((ErrorCode::UNKNOWN_MEMBER_ID, Bytes::new()));
        }
        if self.leader.as_deref() == Some(id) {
            self.leader = None;
        }
        Some(member)
    }

    /// A member leaves (LeaveGroup, or its session expired): a rebalance follows.
    pub(crate) fn remove_member(&mut self, id: &str) -> bool {
        if self.pending.remove(id).is_some() {
            return true;
        }
        if self.drop_member(id).is_none() {
            return false;
        }
        match self.state {
            State::Stable | State::CompletingRebalance => self.prepare_rebalance(),
            State::PreparingRebalance => self.try_complete_join(false),
            State::Empty => {}
        }
        if self.members.is_empty() && self.state == State::PreparingRebalance && self.initial.is_none() {
            self.try_complete_join(true);
        }
        true
    }

    /// LeaveGroup v3+ of one member: by instance id (its member id, if given, must match), or
    /// by member id.
    pub(crate) fn leave(&mut self, member_id: &str, instance_id: Option<&str>) -> ErrorCode {
        let id = match instance_id {
            Some(instance) => match self.static_members.get(instance) {
                None => return ErrorCode::UNKNOWN_MEMBER_ID,
                Some(existing) if !member_id.is_empty() && existing != member_id => return ErrorCode::FENCED_INSTANCE_ID,
                Some(existing) => existing.clone(),
            },
            None => member_id.to_owned(),
        };
        if self.remove_member(&id) {
            ErrorCode::NONE
        } else {
            ErrorCode::UNKNOWN_MEMBER_ID
        }
    }

    /// A SyncGroup: its answer, or a wait for the leader's assignment.
    pub(crate) fn sync(
        &mut self,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        protocol: (Option<&str>, Option<&str>),
        assignments: Vec<(String, Bytes)>,
    ) -> Result<oneshot::Receiver<SyncOutcome>, SyncOutcome> {
        self.validate_member(member_id, instance_id).map_err(|c| (c, Bytes::new()))?;
        if generation != self.generation {
            return Err((ErrorCode::ILLEGAL_GENERATION, Bytes::new()));
        }
        let type_mismatch = protocol.0.is_some_and(|t| self.protocol_type.as_deref() != Some(t));
        let name_mismatch = protocol.1.is_some_and(|n| self.protocol_name.as_deref() != Some(n));
        if type_mismatch || name_mismatch {
            return Err((ErrorCode::INCONSISTENT_GROUP_PROTOCOL, Bytes::new()));
        }
        let now = Instant::now();
        match self.state {
            State::Empty => return Err((ErrorCode::UNKNOWN_MEMBER_ID, Bytes::new())),
            State::PreparingRebalance => return Err((ErrorCode::REBALANCE_IN_PROGRESS, Bytes::new())),
            State::Stable => {
                let m = self.members.get_mut(member_id).ok_or((ErrorCode::UNKNOWN_MEMBER_ID, Bytes::new()))?;
                m.last_seen = now;
                return Err((ErrorCode::NONE, m.assignment.clone()));
            }
            State::CompletingRebalance => {}
        }
        let (tx, rx) = oneshot::channel();
        if let Some(m) = self.members.get_mut(member_id) {
            m.last_seen = now;
            m.sync_waiter = Some(tx);
        }
        if self.leader.as_deref() == Some(member_id) {
            // Members the leader left out get an empty assignment.
            for m in self.members.values_mut() {
                m.assignment = Bytes::new();
            }
            for (id, assignment) in assignments {
                if let Some(m) = self.members.get_mut(&id) {
                    m.assignment = assignment;
                }
            }
            self.state = State::Stable;
            for m in self.members.values_mut() {
                if let Some(tx) = m.sync_waiter.take() {
                    let _ = tx.send((ErrorCode::NONE, m.assignment.clone()));
                }
            }
        }
        Ok(rx)
    }

    /// A Heartbeat.
    pub(crate) fn heartbeat(&mut self, member_id: &str, instance_id: Option<&str>, generation: i32) -> ErrorCode {
        if let Err(code) = self.validate_member(member_id, instance_id) {
            return code;
        }
        if generation != self.generation {
            return ErrorCode::ILLEGAL_GENERATION;
        }
        match self.state {
            State::Empty => ErrorCode::UNKNOWN_MEMBER_ID,
            State::PreparingRebalance => {
                self.touch(member_id);
                ErrorCode::REBALANCE_IN_PROGRESS
            }
            State::CompletingRebalance | State::Stable => {
                self.touch(member_id);
                ErrorCode::NONE
            }
        }
    }

    /// The member's session starts again.
    pub(crate) fn touch(&mut self, member_id: &str) {
        if let Some(m) = self.members.get_mut(member_id) {
            m.last_seen = Instant::now();
        }
    }

    /// Kafka's `ClassicGroup.validateOffsetCommit` (`transactional`: TxnOffsetCommit's rules).
    pub(crate) fn validate_commit(&mut self, member_id: &str, instance_id: Option<&str>, generation: i32, transactional: bool) -> Result<(), ErrorCode> {
        if generation < 0 && self.state == State::Empty {
            return Ok(());
        }
        if generation >= 0 || !member_id.is_empty() || instance_id.is_some() {
            self.validate_member(member_id, instance_id)?;
            if generation != self.generation {
                return Err(ErrorCode::ILLEGAL_GENERATION);
            }
        } else if !transactional && self.state != State::Empty {
            return Err(ErrorCode::UNKNOWN_MEMBER_ID);
        }
        if !transactional && self.state == State::CompletingRebalance {
            return Err(ErrorCode::REBALANCE_IN_PROGRESS);
        }
        if !transactional && matches!(self.state, State::Stable | State::PreparingRebalance) {
            self.touch(member_id);
        }
        Ok(())
    }

    /// The topics the members subscribe to (from their `ConsumerProtocolSubscription`s), when
    /// they use the consumer protocol.
    pub(crate) fn subscribed_topics(&self) -> Vec<String> {
        if !self.uses_consumer_protocol() {
            return Vec::new();
        }
        let protocol = self.protocol_name.clone().unwrap_or_default();
        let mut topics: Vec<String> = self.members.values().flat_map(|m| subscription_topics(&m.metadata(&protocol))).collect();
        topics.sort();
        topics.dedup();
        topics
    }

    /// Expires sessions and ends join phases whose deadline passed. Whether anything changed.
    pub(crate) fn tick(&mut self, now: Instant) -> bool {
        let mut changed = false;
        let before = self.pending.len();
        self.pending.retain(|_, deadline| *deadline > now);
        changed |= self.pending.len() != before;
        let expired: Vec<String> = self
            .members
            .iter()
            .filter(|(_, m)| m.join_waiter.is_none() && m.sync_waiter.is_none() && now.duration_since(m.last_seen) > m.session_timeout)
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            changed |= self.remove_member(&id);
        }
        if self.state == State::PreparingRebalance && now >= self.join_deadline {
            match self.initial {
                // Members came during the delay: wait again, within the rebalance timeout.
                Some((limit, true)) if now < limit => {
                    self.join_deadline = now + self.initial_delay.min(limit - now);
                    self.initial = Some((limit, false));
                }
                _ => {
                    self.initial = None;
                    self.try_complete_join(true);
                    changed = true;
                }
            }
        }
        changed
    }
}

/// The topics of a `ConsumerProtocolSubscription` (version, then the topic names); empty when it
/// does not parse.
pub(crate) fn subscription_topics(metadata: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let read = |at: usize, n: usize| metadata.get(at..at + n);
    let Some(count) = read(2, 4).map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]])) else { return out };
    let mut at = 6;
    for _ in 0..count.max(0) {
        let Some(len) = read(at, 2).map(|b| i16::from_be_bytes([b[0], b[1]])) else { return out };
        let Ok(len) = usize::try_from(len) else { return out };
        let Some(name) = read(at + 2, len) else { return out };
        out.push(String::from_utf8_lossy(name).into_owned());
        at += 2 + len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(member_id: &str, instance: Option<&str>, version: i16) -> JoinRequest {
        JoinRequest {
            member_id: member_id.into(),
            instance_id: instance.map(Into::into),
            protocol_type: "consumer".into(),
            protocols: vec![("range".into(), Bytes::from_static(b"m"))],
            session_timeout: Duration::from_secs(10),
            rebalance_timeout: Duration::from_secs(30),
            client_id: "c".into(),
            client_host: "/h".into(),
            version,
        }
    }

    fn now_or_panic(j: Joined) -> JoinOutcome {
        match j {
            Joined::Now(o) => o,
            Joined::Wait(_) => panic!("expected an answer now"),
        }
    }

    fn waited(j: Joined) -> JoinOutcome {
        match j {
            Joined::Now(o) => panic!("expected a wait, got {o:?}"),
            Joined::Wait(mut rx) => rx.try_recv().expect("the join completed"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_new_member_learns_its_id_then_joins_after_the_initial_delay() {
        let mut rng = fastrand::Rng::with_seed(1);
        let mut g = ClassicGroup::new(defaults::INITIAL_REBALANCE_DELAY);
        let first = now_or_panic(g.join(request("", None, 9), &mut rng));
        assert_eq!(ErrorCode(first.error_code), ErrorCode::MEMBER_ID_REQUIRED);
        assert!(first.member_id.starts_with("c-"));
        let Joined::Wait(mut rx) = g.join(request(&first.member_id, None, 9), &mut rng) else { panic!() };
        assert!(rx.try_recv().is_err(), "the initial delay holds the join");
        tokio::time::advance(Duration::from_millis(3100)).await;
        assert!(g.tick(Instant::now()));
        let joined = rx.try_recv().unwrap();
        assert_eq!((joined.generation_id, joined.leader.as_str(), joined.members.len()), (1, first.member_id.as_str(), 1));
        // An unknown member id, and v3's join without MEMBER_ID_REQUIRED.
        assert_eq!(ErrorCode(now_or_panic(g.join(request("nobody", None, 9), &mut rng)).error_code), ErrorCode::UNKNOWN_MEMBER_ID);
        assert!(matches!(g.join(request("", None, 3), &mut rng), Joined::Wait(_)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_static_member_replaced_in_a_stable_group_keeps_its_assignment_without_a_rebalance() {
        let mut rng = fastrand::Rng::with_seed(2);
        let mut g = ClassicGroup::new(Duration::ZERO);
        let Joined::Wait(mut a) = g.join(request("", Some("i-a"), 9), &mut rng) else { panic!() };
        let Joined::Wait(mut b) = g.join(request("", Some("i-b"), 9), &mut rng) else { panic!() };
        // The initial delay (zero here) ends, again since b came during it, then the join.
        for _ in 0..2 {
            tokio::time::advance(Duration::from_millis(10)).await;
            g.tick(Instant::now());
        }
        let (a, b) = (a.try_recv().unwrap(), b.try_recv().unwrap());
        assert_eq!(a.generation_id, 1);
        let leader = a.leader.clone();
        let follower = if leader == a.member_id { b.member_id.clone() } else { a.member_id.clone() };
        let assignments = vec![(leader.clone(), Bytes::from_static(b"L")), (follower.clone(), Bytes::from_static(b"F"))];
        let follower_instance = if follower == b.member_id { "i-b" } else { "i-a" };
        let mut wait = g.sync(&follower, Some(follower_instance), 1, (None, None), vec![]).unwrap();
        g.sync(&leader, None, 1, (None, None), assignments).unwrap();
        assert_eq!(wait.try_recv().unwrap(), (ErrorCode::NONE, Bytes::from_static(b"F")));
        assert_eq!(g.state, State::Stable);
        // The follower restarts: a new member id, the same generation and assignment.
        let again = waited(g.join(request("", Some(follower_instance), 9), &mut rng));
        assert_eq!((again.generation_id, g.state), (1, State::Stable));
        assert_ne!(again.member_id, follower);
        assert_eq!(g.sync(&again.member_id, Some(follower_instance), 1, (None, None), vec![]).err(), Some((ErrorCode::NONE, Bytes::from_static(b"F"))));
        // The old instance is fenced.
        assert_eq!(g.heartbeat(&follower, Some(follower_instance), 1), ErrorCode::FENCED_INSTANCE_ID);
        assert_eq!(g.heartbeat(&again.member_id, Some(follower_instance), 1), ErrorCode::NONE);
        assert_eq!(g.leave("other", Some(follower_instance)), ErrorCode::FENCED_INSTANCE_ID);
    }

    #[tokio::test(start_paused = true)]
    async fn an_expired_session_rebalances_the_others() {
        let mut rng = fastrand::Rng::with_seed(3);
        let mut g = ClassicGroup::new(Duration::ZERO);
        let Joined::Wait(mut a) = g.join(request("", Some("a"), 9), &mut rng) else { panic!() };
        let Joined::Wait(mut b) = g.join(request("", Some("b"), 9), &mut rng) else { panic!() };
        // The initial delay (zero here) ends, again since b came during it, then the join.
        for _ in 0..2 {
            tokio::time::advance(Duration::from_millis(10)).await;
            g.tick(Instant::now());
        }
        let (a, b) = (a.try_recv().unwrap(), b.try_recv().unwrap());
        let leader = a.leader.clone();
        g.sync(&leader, None, 1, (None, None), vec![]).unwrap();
        // a heartbeats, b does not: after the session timeout b is gone and a must join again.
        for _ in 0..12 {
            tokio::time::advance(Duration::from_secs(1)).await;
            g.heartbeat(&a.member_id, Some("a"), 1);
            g.tick(Instant::now());
        }
        assert!(!g.members.contains_key(&b.member_id));
        assert_eq!(g.heartbeat(&a.member_id, Some("a"), 1), ErrorCode::REBALANCE_IN_PROGRESS);
    }
}
