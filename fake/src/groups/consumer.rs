//! KIP-848 consumer groups (Kafka's `ConsumerGroup`, `CurrentAssignmentBuilder` and the
//! consumer half of `GroupMetadataManager`). A change of subscription (or of a subscribed
//! topic's partitions) bumps the group epoch; the coordinator's assignor computes the target
//! assignment of that epoch; each member is reconciled towards it one heartbeat at a time: it
//! first revokes what it must give up (keeping its epoch until its heartbeat no longer reports
//! them), then moves to the target epoch and gets the partitions no other member still owns.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use kwire::messages::ConsumerGroupHeartbeatRequest;
use kwire::{ErrorCode, Uuid};
use tokio::time::Instant;

use super::assignor::{self, Assignment, MemberSpec};
use super::TopicsView;

/// Assignors the coordinator offers (`group.consumer.assignors`); the first is the default.
pub(crate) const ASSIGNORS: [&str; 2] = ["uniform", "range"];

/// Where a member is in its reconciliation (`MemberState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MemberState {
    Stable,
    /// It must stop owning `pending_revocation` before it moves on.
    UnrevokedPartitions,
    /// Some of its target partitions are still owned by others.
    UnreleasedPartitions,
}

#[derive(Debug, Clone)]
pub(crate) struct Member {
    pub(crate) id: String,
    pub(crate) instance_id: Option<String>,
    pub(crate) rack_id: Option<String>,
    pub(crate) client_id: String,
    pub(crate) client_host: String,
    /// -2: a static member that left for a while.
    pub(crate) epoch: i32,
    pub(crate) previous_epoch: i32,
    pub(crate) state: MemberState,
    pub(crate) rebalance_timeout: Duration,
    pub(crate) topic_names: Vec<String>,
    pub(crate) regex: Option<String>,
    pub(crate) server_assignor: Option<String>,
    pub(crate) assigned: Assignment,
    pub(crate) pending_revocation: Assignment,
    pub(crate) last_seen: Instant,
    /// Fenced at this time unless it revoked by then.
    revoke_by: Option<Instant>,
}

/// A heartbeat's answer.
#[derive(Debug, Default)]
pub(crate) struct Answer {
    pub(crate) member_id: String,
    pub(crate) epoch: i32,
    pub(crate) assignment: Option<Assignment>,
}

/// An error answer: the code and its message.
pub(crate) type Refusal = (ErrorCode, String);

fn refuse<T>(code: ErrorCode, message: impl Into<String>) -> Result<T, Refusal> {
    Err((code, message.into()))
}

/// A consumer group.
#[derive(Default)]
pub(crate) struct ConsumerGroup {
    pub(crate) group_epoch: i32,
    pub(crate) assignment_epoch: i32,
    pub(crate) members: BTreeMap<String, Member>,
    pub(crate) static_members: BTreeMap<String, String>,
    /// The target assignment of `assignment_epoch`, by member id.
    pub(crate) target: BTreeMap<String, Assignment>,
    /// The partition counts of the subscribed topics the target was computed with.
    subscribed_metadata: BTreeMap<String, (Uuid, i32)>,
    pub(crate) session_timeout: Duration,
}

impl ConsumerGroup {
    pub(crate) fn new(session_timeout: Duration) -> ConsumerGroup {
        ConsumerGroup { session_timeout, ..Default::default() }
    }

    pub(crate) fn state_name(&self) -> &'static str {
        if self.members.is_empty() {
            "Empty"
        } else if self.group_epoch != self.assignment_epoch {
            "Assigning"
        } else if self.members.values().any(|m| m.epoch != self.assignment_epoch || m.state != MemberState::Stable) {
            "Reconciling"
        } else {
            "Stable"
        }
    }

    /// The assignor in use: the one members asked for (most of them), else the default.
    pub(crate) fn assignor(&self) -> &'static str {
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for m in self.members.values() {
            if let Some(a) = m.server_assignor.as_deref() {
                *votes.entry(a).or_default() += 1;
            }
        }
        let best = votes.iter().max_by_key(|(_, n)| **n).map(|(a, _)| *a);
        ASSIGNORS.iter().copied().find(|a| Some(*a) == best).unwrap_or(ASSIGNORS[0])
    }

    /// The topics a member subscribes to: its names, and those its regex matches (in full,
    /// as RE2J's `matches`).
    fn member_topics(member: &Member, topics: &TopicsView) -> BTreeSet<String> {
        let mut out: BTreeSet<String> = member.topic_names.iter().filter(|t| topics.contains_key(*t)).cloned().collect();
        if let Some(re) = member.regex.as_deref().and_then(|r| regex::Regex::new(&format!("^(?:{r})$")).ok()) {
            out.extend(topics.keys().filter(|t| re.is_match(t)).cloned());
        }
        out
    }

    /// The subscribed topics of every member, with their ids and partitions.
    fn subscribed(&self, topics: &TopicsView) -> BTreeMap<String, (Uuid, i32)> {
        let mut out = BTreeMap::new();
        for m in self.members.values() {
            for t in Self::member_topics(m, topics) {
                if let Some(v) = topics.get(&t) {
                    out.insert(t, *v);
                }
            }
        }
        out
    }

    /// The member owning a partition (assigned, or not yet revoked), other than `except`.
    fn owner(&self, topic: &Uuid, partition: i32, except: &str) -> Option<&str> {
        self.members
            .values()
            .filter(|m| m.id != except)
            .find(|m| m.assigned.get(topic).is_some_and(|s| s.contains(&partition)) || m.pending_revocation.get(topic).is_some_and(|s| s.contains(&partition)))
            .map(|m| m.id.as_str())
    }

    /// A ConsumerGroupHeartbeat (not a leave) on this group; `now` for sessions.
    pub(crate) fn heartbeat(
        &mut self,
        req: &ConsumerGroupHeartbeatRequest,
        member_id: String,
        client_id: &str,
        topics: &TopicsView,
        now: Instant,
    ) -> Result<Answer, Refusal> {
        let joining = req.member_epoch == 0;
        let owned: Option<Assignment> =
            req.topic_partitions.as_ref().map(|tps| tps.iter().map(|t| (t.topic_id, t.partitions.iter().copied().collect())).collect());
        if let Some(re) = req.subscribed_topic_regex.as_deref() {
            if regex::Regex::new(re).is_err() {
                return refuse(ErrorCode::INVALID_REGULAR_EXPRESSION, format!("SubscribedTopicRegex `{re}` is not a valid regular expression."));
            }
        }
        // Get or create the member, checking its epoch.
        let old = match &req.instance_id {
            None => match self.members.get(&member_id) {
                Some(m) => {
                    check_epoch(m, req.member_epoch, owned.as_ref())?;
                    m.clone()
                }
                None if joining => self.new_member(&member_id, now),
                None => return refuse(ErrorCode::UNKNOWN_MEMBER_ID, format!("Member {member_id} is not a member of the group.")),
            },
            Some(instance) => {
                let existing = self.static_members.get(&**instance).and_then(|id| self.members.get(id)).cloned();
                match existing {
                    None if joining => self.new_member(&member_id, now),
                    None => return refuse(ErrorCode::UNKNOWN_MEMBER_ID, format!("Instance id {instance} is unknown.")),
                    Some(existing) if joining => {
                        // The instance comes back under a new member id: only once the previous one
                        // left with epoch -2.
                        if existing.epoch != -2 {
                            return refuse(ErrorCode::UNRELEASED_INSTANCE_ID, format!("Static member {member_id} with instance id {instance} cannot join the group because the instance id is owned by {} member.", existing.id));
                        }
                        self.replace(&existing.id, &member_id);
                        let mut m = existing;
                        m.id = member_id.clone();
                        m.epoch = 0;
                        m.previous_epoch = 0;
                        // In the group already: the replacement alone moves no epoch.
                        self.members.insert(member_id.clone(), m.clone());
                        m
                    }
                    Some(existing) if existing.id != member_id => {
                        return refuse(
                            ErrorCode::FENCED_INSTANCE_ID,
                            format!("Static member {member_id} with instance id {instance} was fenced by member {}.", existing.id),
                        );
                    }
                    Some(existing) => {
                        check_epoch(&existing, req.member_epoch, owned.as_ref())?;
                        existing
                    }
                }
            }
        };
        // Update what the request carries (null: unchanged).
        let mut member = old.clone();
        if let Some(i) = &req.instance_id {
            member.instance_id = Some(i.to_string());
        }
        if let Some(r) = &req.rack_id {
            member.rack_id = Some(r.to_string());
        }
        if req.rebalance_timeout_ms != -1 {
            member.rebalance_timeout = super::millis(req.rebalance_timeout_ms);
        }
        if let Some(a) = &req.server_assignor {
            member.server_assignor = Some(a.to_string());
        }
        if let Some(names) = &req.subscribed_topic_names {
            member.topic_names = names.iter().map(|n| n.to_string()).collect();
        }
        if let Some(re) = &req.subscribed_topic_regex {
            member.regex = (!re.is_empty()).then(|| re.to_string());
        }
        member.client_id = client_id.to_owned();
        member.last_seen = now;
        let subscription_changed =
            Self::member_topics(&member, topics) != Self::member_topics(&old, topics) || member.topic_names != old.topic_names || member.regex != old.regex;
        if let Some(i) = &member.instance_id {
            self.static_members.insert(i.clone(), member.id.clone());
        }
        let is_new = !self.members.contains_key(&member.id);
        self.members.insert(member.id.clone(), member);
        // 1. A new member, a new subscription or new partitions: a new group epoch.
        let metadata = self.subscribed(topics);
        if self.group_epoch == 0 || is_new || subscription_changed || metadata != self.subscribed_metadata {
            self.group_epoch += 1;
            self.subscribed_metadata = metadata;
        }
        // 2. The target assignment of the group epoch.
        if self.group_epoch > self.assignment_epoch {
            self.compute_target(topics);
        }
        // 3. Reconcile this member.
        let before = self.members.get(&member_id).map(|m| m.assigned.clone()).unwrap_or_default();
        self.reconcile(&member_id, owned.as_ref(), subscription_changed, topics, now);
        let member = self.members.get(&member_id).ok_or((ErrorCode::UNKNOWN_MEMBER_ID, String::new()))?;
        let full =
            req.rebalance_timeout_ms != -1 && (req.subscribed_topic_names.is_some() || req.subscribed_topic_regex.is_some()) && req.topic_partitions.is_some();
        let assignment = (joining || full || member.assigned != before).then(|| member.assigned.clone());
        Ok(Answer { member_id: member.id.clone(), epoch: member.epoch, assignment })
    }

    fn new_member(&self, id: &str, now: Instant) -> Member {
        Member {
            id: id.to_owned(),
            instance_id: None,
            rack_id: None,
            client_id: String::new(),
            client_host: "/127.0.0.1".into(),
            epoch: 0,
            previous_epoch: 0,
            state: MemberState::Stable,
            rebalance_timeout: Duration::from_secs(300),
            topic_names: Vec::new(),
            regex: None,
            server_assignor: None,
            assigned: Assignment::new(),
            pending_revocation: Assignment::new(),
            last_seen: now,
            revoke_by: None,
        }
    }

    /// A static member's new id takes over the old one's place and target.
    fn replace(&mut self, old_id: &str, new_id: &str) {
        self.members.remove(old_id);
        if let Some(t) = self.target.remove(old_id) {
            self.target.insert(new_id.to_owned(), t);
        }
    }

    /// The assignor's target for the group epoch.
    fn compute_target(&mut self, topics: &TopicsView) {
        let specs: Vec<MemberSpec> = self
            .members
            .values()
            .map(|m| MemberSpec {
                id: m.id.clone(),
                instance_id: m.instance_id.clone(),
                subscribed: Self::member_topics(m, topics).iter().filter_map(|t| topics.get(t).map(|(id, _)| *id)).collect(),
                current: self.target.get(&m.id).cloned().unwrap_or_default(),
            })
            .collect();
        let partitions: BTreeMap<Uuid, i32> = topics.values().copied().collect();
        self.target = assignor::assign(self.assignor(), &specs, &partitions);
        self.assignment_epoch = self.group_epoch;
    }

    /// Kafka's `CurrentAssignmentBuilder`: the member's next state towards its target.
    fn reconcile(&mut self, id: &str, owned: Option<&Assignment>, subscription_changed: bool, topics: &TopicsView, now: Instant) {
        let Some(member) = self.members.get(id).cloned() else { return };
        let owns = |revoking: &Assignment| -> bool {
            let Some(owned) = owned else { return true };
            owned.iter().any(|(t, ps)| revoking.get(t).is_some_and(|r| ps.iter().any(|p| r.contains(p))))
        };
        let next = match member.state {
            MemberState::Stable if member.epoch != self.assignment_epoch => Some(member.epoch),
            MemberState::Stable if subscription_changed => Some(member.epoch),
            MemberState::Stable => None,
            MemberState::UnrevokedPartitions if owns(&member.pending_revocation) => None,
            // Revoked: on to the next epoch (not past the target's).
            MemberState::UnrevokedPartitions => Some((member.epoch + 1).min(self.assignment_epoch)),
            MemberState::UnreleasedPartitions => Some(member.epoch),
        };
        let Some(epoch) = next else { return };
        let subscribed: BTreeSet<Uuid> = Self::member_topics(&member, topics).iter().filter_map(|t| topics.get(t).map(|(id, _)| *id)).collect();
        let target = self.target.get(id).cloned().unwrap_or_default();
        let mut assigned = Assignment::new();
        let mut revoking = Assignment::new();
        let mut adding = Assignment::new();
        let mut unreleased = false;
        let all: BTreeSet<Uuid> = target.keys().chain(member.assigned.keys()).copied().collect();
        for topic in all {
            let want: BTreeSet<i32> = if subscribed.contains(&topic) { target.get(&topic).cloned().unwrap_or_default() } else { BTreeSet::new() };
            let have = member.assigned.get(&topic).cloned().unwrap_or_default();
            let keep: BTreeSet<i32> = have.intersection(&want).copied().collect();
            let revoke: BTreeSet<i32> = have.difference(&keep).copied().collect();
            let mut add: BTreeSet<i32> = want.difference(&keep).copied().collect();
            let before = add.len();
            add.retain(|p| self.owner(&topic, *p, id).is_none() || member.pending_revocation.get(&topic).is_some_and(|r| r.contains(p)));
            unreleased |= add.len() != before;
            if !keep.is_empty() {
                assigned.insert(topic, keep);
            }
            if !revoke.is_empty() {
                revoking.insert(topic, revoke);
            }
            if !add.is_empty() {
                adding.insert(topic, add);
            }
        }
        let target_epoch = self.assignment_epoch;
        let Some(m) = self.members.get_mut(id) else { return };
        let set_epoch = |m: &mut Member, e: i32| {
            if m.epoch != e {
                m.previous_epoch = m.epoch;
                m.epoch = e;
            }
        };
        if !revoking.is_empty() && owns(&revoking) {
            set_epoch(m, epoch);
            m.state = MemberState::UnrevokedPartitions;
            m.assigned = assigned;
            m.pending_revocation = revoking;
            m.revoke_by = Some(now + m.rebalance_timeout);
            return;
        }
        for (topic, ps) in adding {
            assigned.entry(topic).or_default().extend(ps);
        }
        set_epoch(m, target_epoch);
        m.state = if unreleased { MemberState::UnreleasedPartitions } else { MemberState::Stable };
        m.assigned = assigned;
        m.pending_revocation = Assignment::new();
        m.revoke_by = None;
    }

    /// A member leaves (epoch -1) or is fenced: its partitions are free, the group epoch moves.
    pub(crate) fn remove_member(&mut self, id: &str) -> bool {
        let Some(m) = self.members.remove(id) else { return false };
        if let Some(i) = &m.instance_id {
            if self.static_members.get(i).is_some_and(|x| x == id) {
                self.static_members.remove(i);
            }
        }
        self.target.remove(id);
        self.group_epoch += 1;
        true
    }

    /// A leaving heartbeat (epoch -1, or -2 for a static member that comes back): the answer's
    /// member epoch.
    pub(crate) fn leave(&mut self, member_id: &str, instance_id: Option<&str>, epoch: i32) -> Result<i32, Refusal> {
        let id = match instance_id {
            None => {
                if !self.members.contains_key(member_id) {
                    return refuse(ErrorCode::UNKNOWN_MEMBER_ID, format!("Member {member_id} is not a member of the group."));
                }
                member_id.to_owned()
            }
            Some(instance) => match self.static_members.get(instance) {
                None => return refuse(ErrorCode::UNKNOWN_MEMBER_ID, format!("Instance id {instance} is unknown.")),
                Some(existing) if existing != member_id => {
                    return refuse(
                        ErrorCode::FENCED_INSTANCE_ID,
                        format!("Static member {member_id} with instance id {instance} was fenced by member {existing}."),
                    )
                }
                Some(existing) => existing.clone(),
            },
        };
        if epoch == -2 && instance_id.is_some() {
            // It keeps its assignment until its session times out or it comes back.
            if let Some(m) = self.members.get_mut(&id) {
                m.epoch = -2;
                m.pending_revocation.clear();
            }
            return Ok(-2);
        }
        self.remove_member(&id);
        Ok(epoch)
    }

    /// Kafka's `ConsumerGroup.validateOffsetCommit` (`transactional`: TxnOffsetCommit, whose
    /// stale epochs are ILLEGAL_GENERATION).
    pub(crate) fn validate_commit(&self, member_id: &str, instance_id: Option<&str>, epoch: i32, transactional: bool, version: i16) -> Result<(), ErrorCode> {
        if epoch < 0 && self.members.is_empty() {
            return Ok(());
        }
        if transactional && epoch == -1 && member_id.is_empty() && instance_id.is_none() {
            return Ok(());
        }
        let member = self.members.get(member_id).ok_or(ErrorCode::UNKNOWN_MEMBER_ID)?;
        if !transactional && version < 9 {
            return Err(ErrorCode::UNSUPPORTED_VERSION);
        }
        if epoch != member.epoch {
            return Err(if transactional { ErrorCode::ILLEGAL_GENERATION } else { ErrorCode::STALE_MEMBER_EPOCH });
        }
        Ok(())
    }

    /// The topics the group subscribes to (OffsetDelete refuses them).
    pub(crate) fn subscribed_topics(&self, topics: &TopicsView) -> BTreeSet<String> {
        self.members.values().flat_map(|m| Self::member_topics(m, topics)).chain(self.members.values().flat_map(|m| m.topic_names.clone())).collect()
    }

    /// Sessions that ran out and revocations not done within the rebalance timeout fence
    /// their members; partitions that changed bump the group epoch. Whether anything changed.
    pub(crate) fn tick(&mut self, now: Instant, topics: &TopicsView) -> bool {
        let timeout = self.session_timeout;
        let fenced: Vec<String> = self
            .members
            .values()
            .filter(|m| now.duration_since(m.last_seen) > timeout || m.revoke_by.is_some_and(|t| now >= t && m.state == MemberState::UnrevokedPartitions))
            .map(|m| m.id.clone())
            .collect();
        let mut changed = false;
        for id in fenced {
            changed |= self.remove_member(&id);
        }
        if !self.members.is_empty() {
            let metadata = self.subscribed(topics);
            if metadata != self.subscribed_metadata {
                self.subscribed_metadata = metadata;
                self.group_epoch += 1;
                changed = true;
            }
        }
        changed
    }
}

/// Kafka's member epoch check: a newer epoch than known is fenced; an older one too, unless it
/// is the previous epoch and the member owns only what it is assigned (the answer that bumped
/// its epoch was lost).
fn check_epoch(member: &Member, received: i32, owned: Option<&Assignment>) -> Result<(), Refusal> {
    if received > member.epoch {
        return refuse(ErrorCode::FENCED_MEMBER_EPOCH, format!("The consumer group member has a greater member epoch ({received}) than the one known by the group coordinator ({}). The member must abandon all its partitions and rejoin.", member.epoch));
    }
    if received < member.epoch {
        let subset = owned.is_some_and(|o| o.iter().all(|(t, ps)| ps.is_empty() || member.assigned.get(t).is_some_and(|a| ps.is_subset(a))));
        if received != member.previous_epoch || !subset {
            return refuse(ErrorCode::FENCED_MEMBER_EPOCH, format!("The consumer group member has a smaller member epoch ({received}) than the one known by the group coordinator ({}). The member must abandon all its partitions and rejoin.", member.epoch));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kwire::messages::consumer_group_heartbeat_request::TopicPartitions;
    use kwire::ByteString;

    fn topics() -> TopicsView {
        [("t".to_owned(), (Uuid([7; 16]), 4))].into_iter().collect()
    }

    fn hb(id: &str, epoch: i32, owned: Option<&Assignment>) -> ConsumerGroupHeartbeatRequest {
        ConsumerGroupHeartbeatRequest {
            group_id: ByteString::from_static("g"),
            member_id: ByteString::from(id.to_owned()),
            member_epoch: epoch,
            rebalance_timeout_ms: if epoch == 0 { 60_000 } else { -1 },
            subscribed_topic_names: (epoch == 0).then(|| vec![ByteString::from_static("t")]),
            topic_partitions: owned
                .map(|o| o.iter().map(|(t, ps)| TopicPartitions { topic_id: *t, partitions: ps.iter().copied().collect(), ..Default::default() }).collect()),
            ..Default::default()
        }
    }

    fn count(a: &Assignment) -> usize {
        a.values().map(BTreeSet::len).sum()
    }

    #[tokio::test(start_paused = true)]
    async fn a_partition_moves_only_after_its_owner_revoked_it() {
        let t = topics();
        let now = Instant::now();
        let mut g = ConsumerGroup::new(Duration::from_secs(45));
        let a = g.heartbeat(&hb("a", 0, Some(&Assignment::new())), "a".into(), "c", &t, now).unwrap();
        assert_eq!((a.epoch, a.assignment.as_ref().map(count)), (1, Some(4)));
        let a_owns = a.assignment.unwrap();
        // b joins: epoch 2, but a still owns everything, so b gets nothing yet.
        let b = g.heartbeat(&hb("b", 0, Some(&Assignment::new())), "b".into(), "c", &t, now).unwrap();
        assert_eq!((b.epoch, b.assignment.as_ref().map(count)), (2, Some(0)));
        assert_eq!(g.state_name(), "Reconciling");
        // a heartbeats still owning all four: it must revoke two, and stays at epoch 1.
        let a2 = g.heartbeat(&hb("a", 1, Some(&a_owns)), "a".into(), "c", &t, now).unwrap();
        assert_eq!((a2.epoch, a2.assignment.as_ref().map(count)), (1, Some(2)));
        let kept = a2.assignment.unwrap();
        // Still unrevoked: b keeps waiting.
        let b2 = g.heartbeat(&hb("b", 2, Some(&Assignment::new())), "b".into(), "c", &t, now).unwrap();
        assert_eq!(b2.assignment, None);
        // a revoked: epoch 2; then b gets the two partitions.
        let a3 = g.heartbeat(&hb("a", 1, Some(&kept)), "a".into(), "c", &t, now).unwrap();
        assert_eq!(a3.epoch, 2);
        let b3 = g.heartbeat(&hb("b", 2, Some(&Assignment::new())), "b".into(), "c", &t, now).unwrap();
        assert_eq!(b3.assignment.as_ref().map(count), Some(2));
        assert_eq!(g.state_name(), "Stable");
        // Epochs out of step are fenced; the previous epoch with a subset of what it owns is not.
        assert_eq!(g.heartbeat(&hb("a", 5, Some(&kept)), "a".into(), "c", &t, now).err().map(|e| e.0), Some(ErrorCode::FENCED_MEMBER_EPOCH));
        assert!(g.heartbeat(&hb("a", 1, Some(&kept)), "a".into(), "c", &t, now).is_ok());
        assert_eq!(g.heartbeat(&hb("a", 0, Some(&kept)), "a".into(), "c", &t, now).err().map(|e| e.0), Some(ErrorCode::FENCED_MEMBER_EPOCH));
        assert_eq!(g.heartbeat(&hb("zz", 2, None), "zz".into(), "c", &t, now).err().map(|e| e.0), Some(ErrorCode::UNKNOWN_MEMBER_ID));
    }

    #[tokio::test(start_paused = true)]
    async fn an_expired_session_frees_the_partitions_and_a_static_member_must_be_released() {
        let t = topics();
        let mut g = ConsumerGroup::new(Duration::from_secs(45));
        let mut join = hb("a", 0, Some(&Assignment::new()));
        join.instance_id = Some(ByteString::from_static("i"));
        g.heartbeat(&join, "a".into(), "c", &t, Instant::now()).unwrap();
        g.heartbeat(&hb("b", 0, Some(&Assignment::new())), "b".into(), "c", &t, Instant::now()).unwrap();
        // Another process with the same instance id: refused while a is in the group.
        let mut other = join.clone();
        other.member_id = ByteString::from_static("a2");
        assert_eq!(g.heartbeat(&other, "a2".into(), "c", &t, Instant::now()).err().map(|e| e.0), Some(ErrorCode::UNRELEASED_INSTANCE_ID));
        // a leaves for a while (-2): a2 takes its place and its assignment.
        assert_eq!(g.leave("a", Some("i"), -2), Ok(-2));
        let a_target = g.target.get("a").cloned().unwrap();
        let a2 = g.heartbeat(&other, "a2".into(), "c", &t, Instant::now());
        let a2 = a2.unwrap();
        assert_eq!(g.target.get("a2"), Some(&a_target));
        assert!(!g.members.contains_key("a"));
        assert_eq!(a2.member_id, "a2");
        // b stops heartbeating: after the session timeout it is gone and the group epoch moves.
        let epoch = g.group_epoch;
        tokio::time::advance(Duration::from_secs(30)).await;
        g.heartbeat(&hb("a2", a2.epoch, a2.assignment.as_ref()), "a2".into(), "c", &t, Instant::now()).unwrap();
        tokio::time::advance(Duration::from_secs(16)).await;
        assert!(g.tick(Instant::now(), &t));
        assert!(!g.members.contains_key("b"));
        assert!(g.group_epoch > epoch);
    }
}
