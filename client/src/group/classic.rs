//! The classic protocol (JoinGroup, SyncGroup, LeaveGroup), as Java's `AbstractCoordinator`
//! and `ConsumerCoordinator` run it. The leader member computes the assignment with an
//! [`Assignor`] over the members' `ConsumerProtocolSubscription`s and hands it out in SyncGroup
//! as `ConsumerProtocolAssignment`s (kwire's generated data messages, with Java's 2-byte
//! version prefix). With the cooperative protocol (KIP-429) a member reports what it owns in
//! its subscription and keeps it until the new assignment says otherwise.

use std::collections::{BTreeMap, BTreeSet};

use kwire::messages::{
    consumer_protocol_assignment::TopicPartition as AssignedTopicPartition, consumer_protocol_subscription::TopicPartition as OwnedTopicPartition,
    join_group_request::JoinGroupRequestProtocol, join_group_response::JoinGroupResponseMember, leave_group_request::MemberIdentity,
    sync_group_request::SyncGroupRequestAssignment, ConsumerProtocolAssignment, ConsumerProtocolSubscription, JoinGroupRequest, JoinGroupResponse,
    LeaveGroupRequest, SyncGroupRequest,
};
use kwire::{ByteString, Bytes, ErrorCode, Message};
use tracing::{info, warn};

use super::{millis, to_bytestrings, Group, GroupConfig};
use crate::assignor::{cooperative_sticky_user_data, sticky_user_data, Assignor, Member, PartitionRacks};
use crate::coordinator::{coordinator_moved, Coordinator};
use crate::error::{Error, GroupError, Result};
use crate::retry::{Backoff, Retry};
use crate::route::Limits;
use crate::topic_partition::TopicPartition;

/// JoinGroup + SyncGroup attempts before giving up.
const ATTEMPTS: u32 = 50;

/// A consumer protocol message as Java's ConsumerProtocol carries it: the version first.
fn encode_versioned<M: Message>(m: &M, version: i16) -> Result<Bytes> {
    m.to_version_prefixed_bytes(version).map_err(|e| Error::Group(GroupError::Encoding(e.to_string())))
}

/// Reads a version-prefixed consumer protocol message (a newer version than ours is read as
/// ours: fields are only ever added at the end).
fn decode_versioned<M: Message>(raw: &Bytes, what: &str) -> Result<(M, i16)> {
    let (version, m) = M::from_version_prefixed(&mut raw.clone()).map_err(|e| Error::protocol("group coordinator", format!("{what}: {e}"), e))?;
    Ok((m, version))
}

/// What one JoinGroup round came to.
enum Joined {
    /// A generation: this member's id, and the leader's assignment to send (empty unless
    /// this member leads).
    Generation { response: Box<JoinGroupResponse>, assignments: Vec<SyncGroupRequestAssignment> },
    /// Join again (with the member id as it now is), after the backoff or at once.
    Again { backoff: bool },
}

impl Group {
    /// As Java's `onJoinPrepare` begins: whether this member's generation is gone, so its
    /// partitions are lost rather than revoked (its generation then no longer counts).
    pub(crate) fn lost_generation(&self) -> bool {
        let mut m = self.lock();
        let lost = m.rejoin.is_some_and(super::lost_membership);
        if lost {
            m.generation = -1;
        }
        lost
    }

    /// JoinGroup + SyncGroup until a generation is in place; returns the partitions assigned.
    /// `owned` is what this member keeps meanwhile (none after an eager revocation).
    pub(crate) async fn join(&mut self, owned: &BTreeSet<TopicPartition>) -> Result<BTreeSet<TopicPartition>> {
        let group = self.config.group_id.clone();
        let mut retry = Retry::new(Backoff::constant(self.config.retry_backoff), ATTEMPTS);
        while retry.next().await {
            let (member_id, generation) = {
                let mut m = self.lock();
                m.joined = false;
                m.rejoin = None;
                (m.member_id.clone(), m.generation)
            };
            let (response, assignments) = match self.join_round(&member_id, generation, owned).await? {
                Joined::Generation { response, assignments } => (response, assignments),
                Joined::Again { backoff } => {
                    if !backoff {
                        retry.without_backoff();
                    }
                    continue;
                }
            };
            let Some(assigned) = self.sync(&response, assignments).await? else {
                retry.without_backoff();
                continue;
            };
            info!(group = %group, generation = response.generation_id, partitions = ?assigned.iter().map(ToString::to_string).collect::<Vec<_>>(), "assignment");
            // Java's StickyAssignor.onAssignment: its user data from now on.
            self.sticky_previous = Some((assigned.iter().cloned().collect(), response.generation_id));
            {
                let mut m = self.lock();
                m.generation = response.generation_id;
                // A heartbeat's REBALANCE_IN_PROGRESS during the sync is for this generation
                // or an older one: only a newer finding counts.
                m.rejoin = None;
                m.joined = true;
            }
            self.start_heartbeat();
            return Ok(assigned);
        }
        Err(Error::Group(GroupError::NoGeneration { group, attempts: ATTEMPTS }))
    }

    /// One JoinGroup, with this member's subscription for each assignor; as the leader, the
    /// assignment.
    async fn join_round(&mut self, member_id: &str, generation: i32, owned: &BTreeSet<TopicPartition>) -> Result<Joined> {
        let config = self.config.clone();
        let group = config.group_id.as_str();
        let protocols = self.protocols(generation, owned)?;
        let instance = config.instance_id.clone().map(ByteString::from);
        let request = |v: i16| JoinGroupRequest {
            group_id: ByteString::from(group.to_owned()),
            session_timeout_ms: millis(config.session_timeout),
            rebalance_timeout_ms: millis(config.max_poll_interval),
            member_id: ByteString::from(member_id.to_owned()),
            group_instance_id: if v >= 5 { instance.clone() } else { None },
            protocol_type: ByteString::from_static("consumer"),
            protocols: protocols.clone(),
            reason: Some(ByteString::from_static("joining")),
            ..Default::default()
        };
        let join = match self.coordinator.try_send(Limits::within(self.join_timeout()), request).await {
            Ok(r) => r,
            Err(e) if e.is_retriable() => {
                warn!(group, error = %e, "JoinGroup failed: retrying");
                return Ok(Joined::Again { backoff: true });
            }
            Err(e) => return Err(e),
        };
        match ErrorCode(join.error_code) {
            ErrorCode::NONE => {}
            // The broker gave us an id: join again with it.
            ErrorCode::MEMBER_ID_REQUIRED => {
                self.lock().member_id = join.member_id.to_string();
                return Ok(Joined::Again { backoff: false });
            }
            // Start over without an id.
            ErrorCode::UNKNOWN_MEMBER_ID => {
                self.lock().member_id.clear();
                return Ok(Joined::Again { backoff: false });
            }
            ErrorCode::REBALANCE_IN_PROGRESS => return Ok(Joined::Again { backoff: false }),
            code if coordinator_moved(code) => {
                self.coordinator.forget();
                return Ok(Joined::Again { backoff: true });
            }
            code => {
                let e = Error::group(code, None, group, config.instance_id.as_deref(), format!("JoinGroup {group}"));
                if e.is_retriable() {
                    return Ok(Joined::Again { backoff: true });
                }
                self.lock().fatal = Some(e.clone());
                return Err(e);
            }
        }
        let my_id = join.member_id.to_string();
        self.lock().member_id = my_id.clone();
        let protocol = join.protocol_name.as_deref().unwrap_or("");
        info!(group, generation = join.generation_id, member = %my_id, leader = %join.leader, protocol, members = join.members.len(), "joined");
        self.snapshot = None; // set again if this member leads
        let assignments = if join.leader[..] == my_id[..] && !join.skip_assignment { self.lead(protocol, &join.members).await? } else { Vec::new() };
        Ok(Joined::Generation { response: Box::new(join), assignments })
    }

    /// JoinGroup and SyncGroup wait for the whole group, up to the rebalance timeout.
    fn join_timeout(&self) -> std::time::Duration {
        self.config.max_poll_interval + std::time::Duration::from_secs(5)
    }

    /// This member's subscription, one per configured assignor: what it owns and since which
    /// generation (-1 before the first), so the sticky assignors keep partitions in place.
    fn protocols(&self, generation: i32, owned: &BTreeSet<TopicPartition>) -> Result<Vec<JoinGroupRequestProtocol>> {
        let generation = if generation > 0 { generation } else { -1 };
        let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        for tp in owned {
            by_topic.entry(tp.topic.as_str()).or_default().push(tp.partition);
        }
        let owned_partitions: Vec<OwnedTopicPartition> =
            by_topic.into_iter().map(|(t, ps)| OwnedTopicPartition { topic: ByteString::from(t.to_owned()), partitions: ps.into_iter().collect() }).collect();
        let mut protocols = Vec::with_capacity(self.config.assignors.len());
        for a in &self.config.assignors {
            let user_data = match a {
                // Java's CooperativeStickyAssignor also puts its generation here, for leaders
                // that read subscriptions older than v2.
                Assignor::CooperativeSticky => Some(cooperative_sticky_user_data(generation)),
                // Java's StickyAssignor: the last assignment and its generation (none before
                // the first).
                Assignor::Sticky => self.sticky_previous.as_ref().map(|(tps, g)| sticky_user_data(tps, Some(*g))),
                Assignor::Range | Assignor::RoundRobin => None,
            };
            let subscription = ConsumerProtocolSubscription {
                topics: to_bytestrings(&self.topics),
                user_data,
                owned_partitions: owned_partitions.clone(),
                generation_id: generation,
                rack_id: self.config.rack.clone().map(ByteString::from),
            };
            let metadata = encode_versioned(&subscription, ConsumerProtocolSubscription::VERSIONS.hi)?;
            protocols.push(JoinGroupRequestProtocol { name: ByteString::from_static(a.name()), metadata, ..Default::default() });
        }
        Ok(protocols)
    }

    /// The leader's part: every member's subscription, the partition counts, the assignor.
    async fn lead(&mut self, protocol: &str, members: &[JoinGroupResponseMember]) -> Result<Vec<SyncGroupRequestAssignment>> {
        let assignor = Assignor::by_name(protocol).ok_or_else(|| Error::Group(GroupError::UnknownAssignor { name: protocol.to_owned() }))?;
        let mut subscriptions = Vec::with_capacity(members.len());
        let mut version = ConsumerProtocolAssignment::VERSIONS.hi;
        for m in members {
            let (s, v): (ConsumerProtocolSubscription, i16) = decode_versioned(&m.metadata, "ConsumerProtocolSubscription")?;
            version = version.min(v);
            subscriptions.push(Member {
                member_id: m.member_id.to_string(),
                group_instance_id: m.group_instance_id.as_deref().map(str::to_owned),
                topics: s.topics.iter().map(|t| t.to_string()).collect(),
                owned_partitions: s
                    .owned_partitions
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(move |p| TopicPartition::new(t.topic.to_string(), *p)))
                    .collect(),
                generation_id: s.generation_id,
                user_data: s.user_data.clone(),
                rack_id: s.rack_id.as_deref().map(str::to_owned),
            });
        }
        let all: BTreeSet<&str> = subscriptions.iter().flat_map(|s| s.topics.iter().map(String::as_str)).collect();
        let client = self.coordinator.client();
        let mut metadata = client.metadata();
        if all.iter().any(|t| !metadata.topics.contains_key(*t)) {
            metadata = client.refresh_metadata().await?;
        }
        let counts: BTreeMap<String, i32> = all.iter().filter_map(|t| metadata.topics.get(*t).map(|i| (t.to_string(), i.partitions.len() as i32))).collect();
        self.snapshot = Some(all.iter().map(|t| (t.to_string(), counts.get(*t).copied().unwrap_or(0))).collect());
        self.snapshot_checked = tokio::time::Instant::now();
        // Rack-aware assignment: the racks of each partition's replicas, when members have racks.
        let mut racks = PartitionRacks::new();
        if subscriptions.iter().any(|m| m.rack().is_some()) {
            for t in counts.keys() {
                let Some(info) = metadata.topics.get(t) else { continue };
                for p in &info.partitions {
                    let rs = p.replicas.iter().filter_map(|id| metadata.brokers.get(id).and_then(|b| b.rack.clone())).collect();
                    racks.insert(TopicPartition::new(t.clone(), p.index), rs);
                }
            }
        }
        let assignment = assignor.assign_with_racks(&subscriptions, &counts, &racks)?;
        let mut out = Vec::with_capacity(assignment.len());
        for (member, tps) in assignment {
            let mut by_topic: BTreeMap<String, Vec<i32>> = BTreeMap::new();
            for tp in tps {
                by_topic.entry(tp.topic).or_default().push(tp.partition);
            }
            let a = ConsumerProtocolAssignment {
                assigned_partitions: by_topic
                    .into_iter()
                    .map(|(t, ps)| AssignedTopicPartition { topic: ByteString::from(t), partitions: ps.into_iter().collect() })
                    .collect(),
                user_data: None,
            };
            out.push(SyncGroupRequestAssignment { member_id: ByteString::from(member), assignment: encode_versioned(&a, version)?, ..Default::default() });
        }
        Ok(out)
    }

    /// SyncGroup for the generation `join` made: the partitions assigned, or `None` to join
    /// again.
    async fn sync(&mut self, join: &JoinGroupResponse, assignments: Vec<SyncGroupRequestAssignment>) -> Result<Option<BTreeSet<TopicPartition>>> {
        let config = self.config.clone();
        let group = config.group_id.as_str();
        let instance = config.instance_id.clone().map(ByteString::from);
        let protocol = join.protocol_name.as_deref().unwrap_or("").to_owned();
        let request = |v: i16| SyncGroupRequest {
            group_id: ByteString::from(group.to_owned()),
            generation_id: join.generation_id,
            member_id: join.member_id.clone(),
            group_instance_id: if v >= 3 { instance.clone() } else { None },
            protocol_type: (v >= 5).then(|| ByteString::from_static("consumer")),
            protocol_name: (v >= 5).then(|| ByteString::from(protocol.clone())),
            assignments: assignments.clone(),
            ..Default::default()
        };
        let sync = match self.coordinator.try_send(Limits::within(self.join_timeout()), request).await {
            Ok(r) => r,
            Err(e) if e.is_retriable() => {
                warn!(group, error = %e, "SyncGroup failed: joining again");
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        match ErrorCode(sync.error_code) {
            ErrorCode::NONE => {}
            ErrorCode::UNKNOWN_MEMBER_ID => {
                self.lock().member_id.clear();
                return Ok(None);
            }
            ErrorCode::ILLEGAL_GENERATION | ErrorCode::REBALANCE_IN_PROGRESS => return Ok(None),
            code if coordinator_moved(code) => {
                self.coordinator.forget();
                return Ok(None);
            }
            code => {
                let e = Error::group(code, None, group, config.instance_id.as_deref(), format!("SyncGroup {group}"));
                if e.is_retriable() {
                    return Ok(None);
                }
                return Err(e);
            }
        }
        if sync.assignment.is_empty() {
            return Ok(Some(BTreeSet::new()));
        }
        let (a, _): (ConsumerProtocolAssignment, _) = decode_versioned(&sync.assignment, "ConsumerProtocolAssignment")?;
        Ok(Some(a.assigned_partitions.iter().flat_map(|t| t.partitions.iter().map(move |p| TopicPartition::new(t.topic.to_string(), *p))).collect()))
    }
}

/// LeaveGroup for a dynamic member (one member id up to v2, a list of members from v3).
pub(super) async fn leave(coordinator: &Coordinator, config: &GroupConfig, member_id: &str, generation: i32) {
    let group = config.group_id.as_str();
    let request = |v: i16| {
        let mut r = LeaveGroupRequest { group_id: ByteString::from(group.to_owned()), ..Default::default() };
        if v >= 3 {
            r.members = vec![MemberIdentity {
                member_id: ByteString::from(member_id.to_owned()),
                group_instance_id: None,
                reason: Some(ByteString::from_static("the consumer is closing")),
                ..Default::default()
            }];
        } else {
            r.member_id = ByteString::from(member_id.to_owned());
        }
        r
    };
    match coordinator.try_send(Limits::within(config.request_timeout), request).await {
        Ok(r) if ErrorCode(r.error_code).is_ok() => info!(group, member = %member_id, generation, "left the group"),
        Ok(r) => warn!(group, error = %ErrorCode(r.error_code), "LeaveGroup refused"),
        Err(e) => warn!(group, error = %e, "LeaveGroup failed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscriptions_round_trip_with_javas_version_prefix() {
        let s = ConsumerProtocolSubscription {
            topics: vec![ByteString::from_static("t")],
            owned_partitions: vec![OwnedTopicPartition { topic: ByteString::from_static("t"), partitions: [1, 2].into_iter().collect() }],
            generation_id: 4,
            ..Default::default()
        };
        let raw = encode_versioned(&s, 3).unwrap();
        assert_eq!(&raw[..2], &[0, 3]);
        let (back, v): (ConsumerProtocolSubscription, i16) = decode_versioned(&raw, "s").unwrap();
        assert_eq!((back, v), (s, 3));
        assert!(decode_versioned::<ConsumerProtocolSubscription>(&Bytes::from_static(&[0]), "s").is_err());
        assert!(decode_versioned::<ConsumerProtocolSubscription>(&Bytes::from_static(&[0, 3, 0, 0, 0, 9]), "s").is_err());
    }
}
