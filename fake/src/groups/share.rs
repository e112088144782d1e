//! KIP-932 share group membership (Kafka's `ShareGroup` and the share half of
//! `GroupMetadataManager`): members make their own ids, join at epoch 0 and leave at -1; a
//! change of members or subscriptions bumps the group epoch and the `simple` assignor hands
//! out partitions (shared by several members when they outnumber the partitions). Nothing is
//! revoked: a member takes its new assignment, and the target epoch, at its next heartbeat.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use kwire::messages::ShareGroupHeartbeatRequest;
use kwire::{ErrorCode, Uuid};
use tokio::time::Instant;

use super::assignor::{self, Assignment, MemberSpec};
use super::consumer::Refusal;
use super::TopicsView;

#[derive(Debug, Clone)]
pub(crate) struct Member {
    pub(crate) id: String,
    pub(crate) rack_id: Option<String>,
    pub(crate) client_id: String,
    pub(crate) client_host: String,
    pub(crate) epoch: i32,
    pub(crate) previous_epoch: i32,
    pub(crate) topic_names: Vec<String>,
    pub(crate) assigned: Assignment,
    pub(crate) last_seen: Instant,
}

/// A share group.
#[derive(Default)]
pub(crate) struct ShareGroup {
    pub(crate) group_epoch: i32,
    pub(crate) assignment_epoch: i32,
    pub(crate) members: BTreeMap<String, Member>,
    pub(crate) target: BTreeMap<String, Assignment>,
    subscribed_metadata: BTreeMap<String, (Uuid, i32)>,
    /// Topics whose share-partition state was initialised (KIP-932: a subscribed topic's
    /// partitions are assigned only once the share coordinator has their state, so a member
    /// joining gets them at a later heartbeat, under a new group epoch).
    initialized: BTreeSet<Uuid>,
    pub(crate) session_timeout: Duration,
}

/// A heartbeat's answer: member epoch and, when it changed or was asked for, the assignment.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) epoch: i32,
    pub(crate) assignment: Option<Assignment>,
}

impl ShareGroup {
    pub(crate) fn new(session_timeout: Duration) -> ShareGroup {
        ShareGroup { session_timeout, ..Default::default() }
    }

    pub(crate) fn state_name(&self) -> &'static str {
        if self.members.is_empty() {
            "Empty"
        } else {
            "Stable"
        }
    }

    fn subscribed(&self, topics: &TopicsView) -> BTreeMap<String, (Uuid, i32)> {
        self.members.values().flat_map(|m| m.topic_names.iter()).filter_map(|t| topics.get(t).map(|v| (t.clone(), *v))).collect()
    }

    /// A ShareGroupHeartbeat that is not a leave.
    pub(crate) fn heartbeat(&mut self, req: &ShareGroupHeartbeatRequest, client_id: &str, topics: &TopicsView, now: Instant) -> Result<Answer, Refusal> {
        let id = req.member_id.to_string();
        let old = match self.members.get(&id) {
            Some(m) => {
                if req.member_epoch > m.epoch || (req.member_epoch < m.epoch && req.member_epoch != m.previous_epoch) {
                    return Err((
                        ErrorCode::FENCED_MEMBER_EPOCH,
                        format!("The share group member has a member epoch ({}) other than the one known by the group coordinator ({}). The member must abandon all its partitions and rejoin.", req.member_epoch, m.epoch),
                    ));
                }
                m.clone()
            }
            None if req.member_epoch == 0 => Member {
                id: id.clone(),
                rack_id: None,
                client_id: String::new(),
                client_host: "/127.0.0.1".into(),
                epoch: 0,
                previous_epoch: 0,
                topic_names: Vec::new(),
                assigned: Assignment::new(),
                last_seen: now,
            },
            None => return Err((ErrorCode::UNKNOWN_MEMBER_ID, format!("Member {id} is not a member of the share group."))),
        };
        let mut member = old.clone();
        if let Some(r) = &req.rack_id {
            member.rack_id = Some(r.to_string());
        }
        if let Some(names) = &req.subscribed_topic_names {
            member.topic_names = names.iter().map(|n| n.to_string()).collect();
        }
        member.client_id = client_id.to_owned();
        member.last_seen = now;
        let is_new = !self.members.contains_key(&id);
        let changed = is_new || member.topic_names != old.topic_names;
        self.members.insert(id.clone(), member);
        let metadata = self.subscribed(topics);
        if self.group_epoch == 0 || changed || metadata != self.subscribed_metadata {
            self.group_epoch += 1;
            self.subscribed_metadata = metadata;
        }
        if self.group_epoch > self.assignment_epoch {
            self.compute_target(topics);
        }
        // Subscribed topics not initialised yet are now: the next heartbeat assigns them.
        let pending: Vec<Uuid> = self.subscribed_metadata.values().map(|(id, _)| *id).filter(|id| !self.initialized.contains(id)).collect();
        if !pending.is_empty() {
            self.initialized.extend(pending);
            self.group_epoch += 1;
        }
        let target = self.target.get(&id).cloned().unwrap_or_default();
        let epoch = self.assignment_epoch;
        let m = self.members.get_mut(&id).ok_or((ErrorCode::UNKNOWN_MEMBER_ID, String::new()))?;
        let assignment_changed = m.epoch != epoch || m.assigned != target;
        if m.epoch != epoch {
            m.previous_epoch = m.epoch;
            m.epoch = epoch;
        }
        m.assigned = target;
        let send = req.member_epoch == 0 || req.subscribed_topic_names.is_some() || assignment_changed;
        Ok(Answer { epoch: m.epoch, assignment: send.then(|| m.assigned.clone()) })
    }

    fn compute_target(&mut self, topics: &TopicsView) {
        let specs: Vec<MemberSpec> = self
            .members
            .values()
            .map(|m| MemberSpec {
                id: m.id.clone(),
                instance_id: None,
                subscribed: m.topic_names.iter().filter_map(|t| topics.get(t).map(|(id, _)| *id)).collect::<BTreeSet<Uuid>>(),
                current: self.target.get(&m.id).cloned().unwrap_or_default(),
            })
            .collect();
        let partitions: BTreeMap<Uuid, i32> = topics.values().copied().filter(|(id, _)| self.initialized.contains(id)).collect();
        self.target = assignor::assign("simple", &specs, &partitions);
        self.assignment_epoch = self.group_epoch;
    }

    /// A member leaves (epoch -1) or is fenced.
    pub(crate) fn remove_member(&mut self, id: &str) -> bool {
        if self.members.remove(id).is_none() {
            return false;
        }
        self.target.remove(id);
        self.group_epoch += 1;
        true
    }

    /// Members whose session ran out are removed: their ids.
    pub(crate) fn tick(&mut self, now: Instant) -> Vec<String> {
        let timeout = self.session_timeout;
        let expired: Vec<String> = self.members.values().filter(|m| now.duration_since(m.last_seen) > timeout).map(|m| m.id.clone()).collect();
        for id in &expired {
            self.remove_member(id);
        }
        expired
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kwire::ByteString;

    fn hb(id: &str, epoch: i32) -> ShareGroupHeartbeatRequest {
        ShareGroupHeartbeatRequest {
            group_id: ByteString::from_static("s"),
            member_id: ByteString::from(id.to_owned()),
            member_epoch: epoch,
            subscribed_topic_names: (epoch == 0).then(|| vec![ByteString::from_static("t")]),
            ..Default::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn members_share_the_partitions_and_stale_epochs_are_fenced() {
        let t: TopicsView = [("t".to_owned(), (Uuid([3; 16]), 2))].into_iter().collect();
        let mut g = ShareGroup::new(Duration::from_secs(45));
        let count = |x: &Option<Assignment>| x.as_ref().map(|x| x.values().map(BTreeSet::len).sum::<usize>());
        // Joining: nothing yet, the topic's state is initialised first.
        let a = g.heartbeat(&hb("a", 0), "c", &t, Instant::now()).unwrap();
        assert_eq!((a.epoch, count(&a.assignment)), (1, Some(0)));
        let b = g.heartbeat(&hb("b", 0), "c", &t, Instant::now()).unwrap();
        assert_eq!((b.epoch, count(&b.assignment)), (3, Some(1)));
        // a's next heartbeat: the new epoch and half the partitions, no revocation step.
        let a2 = g.heartbeat(&hb("a", 1), "c", &t, Instant::now()).unwrap();
        assert_eq!((a2.epoch, count(&a2.assignment)), (3, Some(1)));
        assert_eq!(g.heartbeat(&hb("a", 7), "c", &t, Instant::now()).err().map(|e| e.0), Some(ErrorCode::FENCED_MEMBER_EPOCH));
        assert_eq!(g.heartbeat(&hb("x", 3), "c", &t, Instant::now()).err().map(|e| e.0), Some(ErrorCode::UNKNOWN_MEMBER_ID));
        tokio::time::advance(Duration::from_secs(46)).await;
        assert_eq!(g.tick(Instant::now()).len(), 2);
        assert_eq!(g.state_name(), "Empty");
    }
}
