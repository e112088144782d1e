//! Consumer group membership, both protocols.
//!
//! - Classic (JoinGroup, SyncGroup, Heartbeat, LeaveGroup): the leader member computes the
//!   assignment with an [`Assignor`] over the members' `ConsumerProtocolSubscription`s and
//!   hands it out in SyncGroup as `ConsumerProtocolAssignment`s (kwire's generated data
//!   messages, with Java's 2-byte version prefix). Eager protocol (range): everything is
//!   revoked (and, with auto-commit, committed) before joining again. Cooperative protocol
//!   (cooperative-sticky, KIP-429): the member keeps what it owns and reports it in its
//!   subscription; after SyncGroup it revokes only what it was not given again, and rejoins
//!   when it revoked something, so the partitions reach their new owners in the next round.
//! - KIP-848 (ConsumerGroupHeartbeat, Kafka 4.0+): the broker assigns; the member reconciles
//!   (commits and drops revoked partitions, then takes new ones) and acknowledges by
//!   reporting what it owns in the next heartbeat.
//!
//! A [`RebalanceListener`] hears of partitions revoked (before they go, so it can commit),
//! assigned and lost (taken away without a chance to commit), in both protocols.
//!
//! A background task sends the heartbeats, so a consumer busy between polls stays in the
//! group; what the heartbeats learn (a rebalance, a new assignment, fencing) is acted on in
//! the next `poll`.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kwire::messages::{
    consumer_group_heartbeat_request::TopicPartitions as HeartbeatTopicPartitions,
    consumer_protocol_assignment::TopicPartition as AssignedTopicPartition,
    consumer_protocol_subscription::TopicPartition as OwnedTopicPartition,
    join_group_request::JoinGroupRequestProtocol,
    leave_group_request::MemberIdentity,
    sync_group_request::SyncGroupRequestAssignment,
    ConsumerGroupHeartbeatRequest, ConsumerProtocolAssignment, ConsumerProtocolSubscription, FindCoordinatorRequest,
    HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, SyncGroupRequest,
};
use kwire::{ApiKey, ByteString, Bytes, ErrorCode, Message, ResponseKind, Uuid};
use tokio::sync::Notify;
use tracing::{debug, info, warn, Instrument};

use crate::assignor::{cooperative_sticky_assign, cooperative_sticky_user_data, StickyMember};
use crate::cluster::Client;
use crate::consumer::{Consumer, GroupProtocol, TopicPartition};
use crate::error::{ConsumerError, Error, GroupError, Resource, Result};
use crate::retry::{Backoff, Retry};

/// A classic-protocol partition assignor (`partition.assignment.strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Assignor {
    /// Java's `RangeAssignor`: per topic, consecutive ranges of partitions to the members in
    /// order (group instance id, else member id), the first ones taking one more.
    Range,
    /// Java's `CooperativeStickyAssignor` (KIP-429): balanced, moving as few partitions as it
    /// can, each in two rounds (revoked by the old owner, then assigned to the new one).
    CooperativeSticky,
}

impl Assignor {
    /// The protocol name in JoinGroup.
    pub fn name(self) -> &'static str {
        match self {
            Assignor::Range => "range",
            Assignor::CooperativeSticky => "cooperative-sticky",
        }
    }

    fn by_name(name: &str) -> Option<Assignor> {
        match name {
            "range" => Some(Assignor::Range),
            "cooperative-sticky" => Some(Assignor::CooperativeSticky),
            _ => None,
        }
    }

    fn cooperative(self) -> bool {
        self == Assignor::CooperativeSticky
    }
}

/// What [`RebalanceListener`] callbacks return: an error is returned by the `poll` (or
/// `close`) that ran the callback, once the rebalance step is done (as Java throws it).
pub type ListenerFuture<'a> = Pin<Box<dyn Future<Output = Result<()>> + Send + 'a>>;

/// Java's `ConsumerRebalanceListener`, for both group protocols. Called from within `poll`
/// (and `close`/`unsubscribe`); the callbacks may commit through `consumer`, not poll.
pub trait RebalanceListener: Send {
    /// `partitions` are about to go to another member: they are still assigned, so their
    /// positions can be committed now. Automatic commits have already been made.
    fn on_partitions_revoked<'a>(&'a mut self, consumer: &'a mut Consumer, partitions: &'a BTreeSet<TopicPartition>) -> ListenerFuture<'a> {
        let _ = (consumer, partitions);
        Box::pin(async { Ok(()) })
    }

    /// `partitions` were added to the assignment (classic: after every rebalance, maybe none).
    fn on_partitions_assigned<'a>(&'a mut self, consumer: &'a mut Consumer, partitions: &'a BTreeSet<TopicPartition>) -> ListenerFuture<'a> {
        let _ = (consumer, partitions);
        Box::pin(async { Ok(()) })
    }

    /// The group took `partitions` away already (this member was fenced or forgotten): other
    /// members may own them, so committing is pointless. By default, as Java's, the same as
    /// revoked.
    fn on_partitions_lost<'a>(&'a mut self, consumer: &'a mut Consumer, partitions: &'a BTreeSet<TopicPartition>) -> ListenerFuture<'a> {
        self.on_partitions_revoked(consumer, partitions)
    }
}

#[derive(Debug, Clone, Copy)]
enum Callback {
    Revoked,
    Assigned,
    Lost,
}

/// A member's subscription as the leader sees it.
#[derive(Debug, Clone)]
pub struct MemberSubscription {
    /// The member id.
    pub member_id: String,
    /// The static member id.
    pub group_instance_id: Option<String>,
    /// The topics.
    pub topics: Vec<String>,
}

/// Java's `RangeAssignor`.
pub fn range_assign(members: &[MemberSubscription], partitions_per_topic: &BTreeMap<String, i32>) -> BTreeMap<String, Vec<TopicPartition>> {
    let mut out: BTreeMap<String, Vec<TopicPartition>> = members.iter().map(|m| (m.member_id.clone(), Vec::new())).collect();
    for (topic, &count) in partitions_per_topic {
        // Java's MemberInfo order: static members by instance id first, then by member id.
        let mut subscribed: Vec<&MemberSubscription> = members.iter().filter(|m| m.topics.iter().any(|t| t == topic)).collect();
        subscribed.sort_by(|a, b| match (&a.group_instance_id, &b.group_instance_id) {
            (Some(x), Some(y)) => x.cmp(y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => a.member_id.cmp(&b.member_id),
        });
        let n = subscribed.len() as i32;
        if n == 0 || count <= 0 {
            continue;
        }
        let (per, extra) = (count / n, count % n);
        for (i, m) in subscribed.iter().enumerate() {
            let i = i as i32;
            let start = per * i + i.min(extra);
            let len = per + i32::from(i < extra);
            if let Some(list) = out.get_mut(&m.member_id) {
                list.extend((start..start + len).map(|p| TopicPartition::new(topic.clone(), p)));
            }
        }
    }
    out
}

/// A consumer protocol message as Java's ConsumerProtocol carries it: the version first.
fn encode_versioned<M: Message>(m: &M, version: i16) -> Result<Bytes> {
    m.to_version_prefixed_bytes(version).map_err(|e| Error::Group(GroupError::Encoding(e.to_string())))
}

/// Reads a version-prefixed consumer protocol message (a newer version than ours is read as
/// ours: fields are only ever added at the end).
fn decode_versioned<M: Message>(raw: &Bytes, what: &str) -> Result<(M, i16)> {
    let (version, m) = M::from_version_prefixed(&mut raw.clone())
        .map_err(|e| Error::Protocol { addr: "group coordinator".into(), message: format!("{what}: {e}") })?;
    Ok((m, version))
}

/// What the consumer and its heartbeat task share.
#[derive(Debug, Default)]
struct Membership {
    member_id: String,
    /// Classic: the generation; KIP-848: the member epoch.
    generation: i32,
    /// Classic: a generation is in place (JoinGroup + SyncGroup done).
    joined: bool,
    /// Classic: a heartbeat or commit said to join again.
    rejoin: Option<ErrorCode>,
    /// KIP-848: a new assignment from the broker, not yet reconciled.
    target: Option<Vec<(Uuid, Vec<i32>)>>,
    /// KIP-848: the partitions this member owns, reported in each heartbeat.
    owned: Vec<(Uuid, Vec<i32>)>,
    /// KIP-848: the broker fenced this member; its partitions are lost (not committed).
    fenced: bool,
    heartbeat_interval: Option<Duration>,
    coordinator: Option<String>,
    fatal: Option<Error>,
    stopped: bool,
}

/// A subscribed consumer's group state.
pub(crate) struct GroupState {
    topics: Vec<String>,
    protocol: GroupProtocol,
    shared: Arc<Mutex<Membership>>,
    wake: Arc<Notify>,
    task: Option<tokio::task::JoinHandle<()>>,
    /// Classic leader: the partition counts the assignment was computed with (0: a topic
    /// metadata did not know yet), to rebalance when they change, as Java's leader does.
    snapshot: Option<BTreeMap<String, i32>>,
    snapshot_checked: std::time::Instant,
    /// The first error a rebalance listener returned, for `poll` to return.
    listener_error: Option<Error>,
}

impl Drop for GroupState {
    fn drop(&mut self) {
        // A consumer dropped without `close` stops heartbeating: the broker drops it after the
        // session timeout, as a crashed member.
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

impl GroupState {
    fn lock(&self) -> std::sync::MutexGuard<'_, Membership> {
        lock(&self.shared)
    }

    /// The generation (or member epoch) and member id to commit with.
    pub(crate) fn commit_identity(&self) -> (i32, String) {
        let m = self.lock();
        match self.protocol {
            GroupProtocol::Classic if !m.joined => (-1, String::new()),
            _ => (m.generation, m.member_id.clone()),
        }
    }

    /// A commit found the generation gone: join again (classic) before more records.
    pub(crate) fn request_rejoin(&self, code: ErrorCode) {
        let mut m = self.lock();
        if self.protocol == GroupProtocol::Classic {
            m.rejoin.get_or_insert(code);
        }
    }

    /// The member id (empty before the first join).
    pub(crate) fn member_id(&self) -> String {
        self.lock().member_id.clone()
    }
}

/// Whether `code` says this member's generation is gone, so its partitions are lost (not
/// revoked): ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, STALE_MEMBER_EPOCH.
fn lost_membership(code: ErrorCode) -> bool {
    matches!(code, ErrorCode::ILLEGAL_GENERATION | ErrorCode::UNKNOWN_MEMBER_ID | ErrorCode::FENCED_MEMBER_EPOCH | ErrorCode::STALE_MEMBER_EPOCH)
}

/// Whether `code` says to ask the coordinator again later or find it again.
fn coordinator_moved(code: ErrorCode) -> bool {
    matches!(code, ErrorCode::COORDINATOR_LOAD_IN_PROGRESS | ErrorCode::COORDINATOR_NOT_AVAILABLE | ErrorCode::NOT_COORDINATOR)
}

fn lock(m: &Mutex<Membership>) -> std::sync::MutexGuard<'_, Membership> {
    // Nothing panics under this lock; if something did, the data is still usable.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A random member id as Java's consumers make them for KIP-848 (a base64url UUID).
fn random_member_id() -> Result<String> {
    use base64::Engine;
    let bytes = crate::sasl::random_bytes(16).map_err(|e| Error::Group(GroupError::NoRandomness(e)))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// FindCoordinator for `group`, with retries over coordinator errors.
pub(crate) async fn find_coordinator(client: &Client, group: &str, backoff: Duration) -> Result<String> {
    let mut last = None;
    let mut retry = Retry::new(Backoff::constant(backoff), 30);
    while retry.next().await {
        // One key up to v3, a list of them from v4.
        let build = |v: i16| {
            let mut r = FindCoordinatorRequest { key_type: 0, ..Default::default() };
            if v >= 4 {
                r.coordinator_keys = vec![ByteString::from(group.to_owned())];
            } else {
                r.key = ByteString::from(group.to_owned());
            }
            kwire::RequestKind::from(r)
        };
        let response = match client.call_any_versioned(ApiKey::FindCoordinator, build).await {
            Ok(ResponseKind::FindCoordinator(r)) => r,
            Ok(other) => return Err(Error::UnexpectedResponse(format!("{:?} to FindCoordinator", other.api_key()))),
            Err(e) if e.is_retriable() => {
                last = Some(e);
                continue;
            }
            Err(e) => return Err(e),
        };
        // v4+ answers in `coordinators`, earlier versions at the top level.
        let (code, message, host, port) = match response.coordinators.first() {
            Some(c) => (c.error_code, c.error_message.as_deref().map(str::to_owned), c.host.to_string(), c.port),
            None => (response.error_code, response.error_message.as_deref().map(str::to_owned), response.host.to_string(), response.port),
        };
        if ErrorCode(code).is_ok() {
            let addr = if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") };
            debug!(group, coordinator = %addr, "found the group coordinator");
            return Ok(addr);
        }
        let e = Error::broker(ErrorCode(code), message, format!("FindCoordinator for group {group}")).about(Resource::Group(group.to_owned()));
        if !e.is_retriable() {
            return Err(e);
        }
        last = Some(e);
    }
    Err(last.unwrap_or_else(|| Error::Group(GroupError::CoordinatorNotAvailable { group: group.to_owned() })))
}

/// The coordinator gets a connection of its own (as Java's consumer does): fetches to the same
/// broker do not wait behind a JoinGroup, nor heartbeats behind a long poll.
pub(crate) fn coordinator_key(addr: &str) -> String {
    format!("group coordinator {addr}")
}

fn to_bytestrings(v: &[String]) -> Vec<ByteString> {
    v.iter().map(|s| ByteString::from(s.clone())).collect()
}

impl Consumer {
    /// Subscribes to `topics` as a member of the configured group (joining at the next poll).
    pub fn subscribe(&mut self, topics: &[&str]) -> Result<()> {
        if self.config.group_id.is_none() {
            return Err(Error::Config("subscribing needs a group_id".into()));
        }
        if self.group.is_some() {
            return Err(Error::Consumer(ConsumerError::AlreadySubscribed));
        }
        let member_id = match self.config.group_protocol {
            // KIP-1082: the member makes its own id.
            GroupProtocol::Consumer => random_member_id()?,
            GroupProtocol::Classic => String::new(),
        };
        self.set_assignment(&BTreeSet::new());
        let shared = Arc::new(Mutex::new(Membership { member_id, ..Default::default() }));
        self.group = Some(GroupState {
            topics: topics.iter().map(|t| t.to_string()).collect(),
            protocol: self.config.group_protocol,
            shared,
            wake: Arc::new(Notify::new()),
            task: None,
            snapshot: None,
            snapshot_checked: std::time::Instant::now(),
            listener_error: None,
        });
        Ok(())
    }

    /// Subscribes as [`subscribe`](Consumer::subscribe) does, with `listener` told of every
    /// partition revoked, assigned and lost.
    pub fn subscribe_with_listener(&mut self, topics: &[&str], listener: impl RebalanceListener + 'static) -> Result<()> {
        self.subscribe(topics)?;
        self.listener = Some(Mutex::new(Box::new(listener)));
        Ok(())
    }

    /// Runs a listener callback (the listener is taken out meanwhile, so it can use the
    /// consumer); its error is kept for `poll`.
    async fn notify(&mut self, callback: Callback, partitions: &BTreeSet<TopicPartition>) {
        let Some(listener) = self.listener.take() else { return };
        let mut listener = listener.into_inner().unwrap_or_else(|p| p.into_inner());
        let r = match callback {
            Callback::Revoked => listener.on_partitions_revoked(self, partitions).await,
            Callback::Assigned => listener.on_partitions_assigned(self, partitions).await,
            Callback::Lost => listener.on_partitions_lost(self, partitions).await,
        };
        self.listener.get_or_insert(Mutex::new(listener));
        if let Err(e) = r {
            warn!(?callback, error = %e, "rebalance listener failed");
            if let Some(g) = self.group.as_mut() {
                g.listener_error.get_or_insert(e);
            }
        }
    }

    /// The classic protocol is cooperative when every configured assignor supports it (as
    /// Java picks the rebalance protocol all its assignors share).
    fn cooperative(&self) -> bool {
        !self.config.assignors.is_empty() && self.config.assignors.iter().all(|a| a.cooperative())
    }

    /// Leaves the group (as `close` does) and drops the assignment.
    pub async fn unsubscribe(&mut self) -> Result<()> {
        if self.group.is_some() {
            self.leave_group().await?;
        }
        self.group = None;
        self.listener = None;
        self.set_assignment(&BTreeSet::new());
        Ok(())
    }

    /// The group generation (classic) or member epoch (KIP-848), once joined.
    pub fn group_generation(&self) -> Option<i32> {
        let g = self.group.as_ref()?;
        let m = g.lock();
        (m.generation > 0 && (m.joined || g.protocol == GroupProtocol::Consumer)).then_some(m.generation)
    }

    /// The member id in the group, once joined.
    pub fn member_id(&self) -> Option<String> {
        self.group.as_ref().map(GroupState::member_id).filter(|m| !m.is_empty())
    }

    /// Joins, rebalances or reconciles as the heartbeats found necessary.
    pub(crate) async fn maintain_group(&mut self) -> Result<()> {
        let Some(g) = &self.group else { return Ok(()) };
        if let Some(e) = g.lock().fatal.clone() {
            return Err(e);
        }
        match g.protocol {
            GroupProtocol::Classic => {
                let needed = {
                    let m = g.lock();
                    !m.joined || m.rejoin.is_some()
                };
                if needed {
                    self.join_classic().await?;
                } else {
                    self.check_snapshot().await;
                }
            }
            GroupProtocol::Consumer => {
                if g.task.is_none() {
                    self.start_heartbeat();
                }
                self.reconcile().await?;
            }
        }
        match self.group.as_mut().and_then(|g| g.listener_error.take()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn start_heartbeat(&mut self) {
        let client = self.client.clone();
        let config = self.config.clone();
        let Some(g) = self.group.as_mut() else { return };
        if g.task.is_some() {
            return;
        }
        let shared = g.shared.clone();
        let wake = g.wake.clone();
        let topics = g.topics.clone();
        let span = tracing::info_span!("kafka.group.heartbeat", group = config.group_id.as_deref().unwrap_or(""));
        let task = match g.protocol {
            GroupProtocol::Classic => tokio::spawn(classic_heartbeats(client, config, shared, wake).instrument(span)),
            GroupProtocol::Consumer => tokio::spawn(consumer_heartbeats(client, config, topics, shared, wake).instrument(span)),
        };
        g.task = Some(task);
    }

    async fn group_call(&mut self, api: ApiKey, build: impl Fn(i16) -> kwire::RequestKind, timeout: Duration) -> Result<ResponseKind> {
        let addr = self.coordinator().await?;
        match self.client.call_keyed_versioned(&coordinator_key(&addr), &addr, api, build, Some(timeout)).await {
            Err(e) if e.is_retriable() => {
                self.coordinator_lost();
                Err(e)
            }
            r => r,
        }
    }

    /// JoinGroup + SyncGroup until a generation is in place.
    async fn join_classic(&mut self) -> Result<()> {
        let group_id = self.group_id_owned()?;
        let cooperative = self.cooperative();
        // As Java's onJoinPrepare: a member the group forgot (or moved past) has lost its
        // partitions; otherwise it commits, then (eager) revokes everything or (cooperative)
        // keeps what it owns until the new assignment says otherwise.
        let lost = self.group.as_ref().is_some_and(|g| {
            let mut m = g.lock();
            let lost = m.rejoin.is_some_and(lost_membership);
            if lost {
                m.generation = -1;
            }
            lost
        });
        if !self.assignment.is_empty() {
            let owned = self.assignment();
            if lost {
                warn!(group = %group_id, partitions = owned.len(), "no longer a member of the generation: partitions lost");
                self.notify(Callback::Lost, &owned).await;
                self.set_assignment(&BTreeSet::new());
            } else {
                if self.config.enable_auto_commit {
                    if let Err(e) = self.commit().await {
                        warn!(group = %group_id, error = %e, "commit before rebalancing failed");
                    }
                }
                if !cooperative {
                    info!(group = %group_id, partitions = owned.len(), "revoking every partition to rejoin");
                    self.notify(Callback::Revoked, &owned).await;
                    self.set_assignment(&BTreeSet::new());
                }
            }
        }
        let topics = self.group.as_ref().map(|g| g.topics.clone()).unwrap_or_default();
        let join_timeout = self.config.max_poll_interval + Duration::from_secs(5);
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            if attempts > 50 {
                return Err(Error::Group(GroupError::NoGeneration { group: group_id, attempts: 50 }));
            }
            let (member_id, generation) = {
                let Some(g) = &self.group else { return Ok(()) };
                let mut m = g.lock();
                m.joined = false;
                m.rejoin = None;
                (m.member_id.clone(), m.generation)
            };
            // What this member owns (none after an eager revocation) and since which generation
            // (-1 before the first): the sticky assignors keep partitions where they are.
            let generation = if generation > 0 { generation } else { -1 };
            let mut owned: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
            for tp in self.assignment.keys() {
                owned.entry(tp.topic.as_str()).or_default().push(tp.partition);
            }
            let owned_partitions: Vec<OwnedTopicPartition> = owned
                .into_iter()
                .map(|(t, ps)| OwnedTopicPartition { topic: ByteString::from(t.to_owned()), partitions: ps.into_iter().collect() })
                .collect();
            let mut protocols = Vec::with_capacity(self.config.assignors.len());
            for a in &self.config.assignors {
                let subscription = ConsumerProtocolSubscription {
                    topics: to_bytestrings(&topics),
                    // Java's CooperativeStickyAssignor also puts its generation here, for
                    // leaders that read subscriptions older than v2.
                    user_data: (*a == Assignor::CooperativeSticky).then(|| cooperative_sticky_user_data(generation)),
                    owned_partitions: owned_partitions.clone(),
                    generation_id: generation,
                    rack_id: None,
                };
                let metadata = encode_versioned(&subscription, ConsumerProtocolSubscription::VERSIONS.hi)?;
                protocols.push(JoinGroupRequestProtocol { name: ByteString::from_static(a.name()), metadata, ..Default::default() });
            }
            let instance = self.config.group_instance_id.clone().map(ByteString::from);
            let (session_timeout, rebalance_timeout) = (millis(self.config.session_timeout), millis(self.config.max_poll_interval));
            let request = |v: i16| JoinGroupRequest {
                group_id: ByteString::from(group_id.clone()),
                session_timeout_ms: session_timeout,
                rebalance_timeout_ms: rebalance_timeout,
                member_id: ByteString::from(member_id.clone()),
                group_instance_id: if v >= 5 { instance.clone() } else { None },
                protocol_type: ByteString::from_static("consumer"),
                protocols: protocols.clone(),
                reason: Some(ByteString::from_static("joining")),
                ..Default::default()
            };
            let join = match self.group_call(ApiKey::JoinGroup, |v| request(v).into(), join_timeout).await {
                Ok(ResponseKind::JoinGroup(r)) => r,
                Ok(other) => return Err(Error::UnexpectedResponse(format!("{:?} to JoinGroup", other.api_key()))),
                Err(e) if e.is_retriable() => {
                    warn!(group = %group_id, error = %e, "JoinGroup failed: retrying");
                    tokio::time::sleep(self.config.retry_backoff).await;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let set_member = |c: &mut Consumer, id: String| {
                if let Some(g) = &c.group {
                    g.lock().member_id = id;
                }
            };
            match ErrorCode(join.error_code) {
                ErrorCode::NONE => {}
                // The broker gave us an id: join again with it.
                ErrorCode::MEMBER_ID_REQUIRED => {
                    set_member(self, join.member_id.to_string());
                    continue;
                }
                // Start over without an id.
                ErrorCode::UNKNOWN_MEMBER_ID => {
                    set_member(self, String::new());
                    continue;
                }
                ErrorCode::REBALANCE_IN_PROGRESS => continue,
                code if coordinator_moved(code) => {
                    self.coordinator_lost();
                    tokio::time::sleep(self.config.retry_backoff).await;
                    continue;
                }
                code => {
                    let e = Error::group(code, None, &group_id, self.config.group_instance_id.as_deref(), format!("JoinGroup {group_id}"));
                    if e.is_retriable() {
                        tokio::time::sleep(self.config.retry_backoff).await;
                        continue;
                    }
                    if let Some(g) = &self.group {
                        g.lock().fatal = Some(e.clone());
                    }
                    return Err(e);
                }
            }
            let my_id = join.member_id.to_string();
            set_member(self, my_id.clone());
            let protocol = join.protocol_name.as_deref().unwrap_or("").to_owned();
            let generation = join.generation_id;
            info!(group = %group_id, generation, member = %my_id, leader = %join.leader, protocol, members = join.members.len(), "joined");
            if let Some(g) = self.group.as_mut() {
                g.snapshot = None; // set again below if this member leads
            }
            let assignments = if join.leader[..] == my_id[..] && !join.skip_assignment {
                self.assign_as_leader(&protocol, &join.members).await?
            } else {
                Vec::new()
            };
            let sync = |v: i16| {
                kwire::RequestKind::from(SyncGroupRequest {
                    group_id: ByteString::from(group_id.clone()),
                    generation_id: generation,
                    member_id: ByteString::from(my_id.clone()),
                    group_instance_id: if v >= 3 { instance.clone() } else { None },
                    protocol_type: (v >= 5).then(|| ByteString::from_static("consumer")),
                    protocol_name: (v >= 5).then(|| ByteString::from(protocol.clone())),
                    assignments: assignments.clone(),
                    ..Default::default()
                })
            };
            let sync = match self.group_call(ApiKey::SyncGroup, sync, join_timeout).await {
                Ok(ResponseKind::SyncGroup(r)) => r,
                Ok(other) => return Err(Error::UnexpectedResponse(format!("{:?} to SyncGroup", other.api_key()))),
                Err(e) if e.is_retriable() => {
                    warn!(group = %group_id, error = %e, "SyncGroup failed: joining again");
                    continue;
                }
                Err(e) => return Err(e),
            };
            match ErrorCode(sync.error_code) {
                ErrorCode::NONE => {}
                ErrorCode::UNKNOWN_MEMBER_ID => {
                    set_member(self, String::new());
                    continue;
                }
                ErrorCode::ILLEGAL_GENERATION | ErrorCode::REBALANCE_IN_PROGRESS => continue,
                code if coordinator_moved(code) => {
                    self.coordinator_lost();
                    continue;
                }
                code => {
                    let e = Error::group(code, None, &group_id, self.config.group_instance_id.as_deref(), format!("SyncGroup {group_id}"));
                    if e.is_retriable() {
                        continue;
                    }
                    return Err(e);
                }
            }
            let assigned: BTreeSet<TopicPartition> = if sync.assignment.is_empty() {
                BTreeSet::new()
            } else {
                let (a, _): (ConsumerProtocolAssignment, _) = decode_versioned(&sync.assignment, "ConsumerProtocolAssignment")?;
                a.assigned_partitions
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(move |p| TopicPartition::new(t.topic.to_string(), *p)))
                    .collect()
            };
            info!(group = %group_id, generation, partitions = ?assigned.iter().map(ToString::to_string).collect::<Vec<_>>(), "assignment");
            let owned = self.assignment();
            if let Some(g) = &self.group {
                let mut m = g.lock();
                m.generation = generation;
                // A heartbeat's REBALANCE_IN_PROGRESS during the sync is for this generation
                // or an older one: only a newer finding counts.
                m.rejoin = None;
                m.joined = true;
            }
            self.start_heartbeat();
            // Cooperative: give up what is no longer ours (committing in the listener, with
            // this generation), then rejoin so the new owners get it.
            let revoked: BTreeSet<TopicPartition> = owned.difference(&assigned).cloned().collect();
            if cooperative && !revoked.is_empty() {
                info!(group = %group_id, generation, revoked = ?revoked.iter().map(ToString::to_string).collect::<Vec<_>>(), "revoking, then rejoining");
                self.notify(Callback::Revoked, &revoked).await;
                if let Some(g) = &self.group {
                    g.lock().rejoin.get_or_insert(ErrorCode::NONE);
                }
            }
            self.set_assignment(&assigned);
            let added: BTreeSet<TopicPartition> = assigned.difference(&owned).cloned().collect();
            self.notify(Callback::Assigned, &added).await;
            return Ok(());
        }
    }

    /// Classic leader: rejoins when a subscribed topic's partition count differs from the one
    /// the assignment used (a topic created or grown since). Metadata is refreshed for it at
    /// most every second while a topic is unknown.
    async fn check_snapshot(&mut self) {
        let Some(g) = &self.group else { return };
        let Some(snapshot) = g.snapshot.clone() else { return };
        let unknown = snapshot.values().any(|n| *n == 0);
        if unknown && g.snapshot_checked.elapsed() >= Duration::from_secs(1) {
            if let Some(g) = self.group.as_mut() {
                g.snapshot_checked = std::time::Instant::now();
            }
            if let Err(e) = self.client.refresh_metadata().await {
                warn!(error = %e, "metadata refresh for the subscribed topics failed");
            }
        }
        let metadata = self.client.metadata();
        let now: BTreeMap<String, i32> =
            snapshot.keys().map(|t| (t.clone(), metadata.topics.get(t).map_or(0, |i| i.partitions.len() as i32))).collect();
        if now != snapshot {
            info!(before = ?snapshot, now = ?now, "subscribed topics changed: rebalancing");
            if let Some(g) = &self.group {
                g.lock().rejoin.get_or_insert(ErrorCode::NONE);
            }
        }
    }

    fn group_id_owned(&self) -> Result<String> {
        self.config.group_id.clone().ok_or_else(|| Error::Config("no group_id".into()))
    }

    /// The leader's part: every member's subscription, the partition counts, the assignor.
    async fn assign_as_leader(
        &mut self,
        protocol: &str,
        members: &[kwire::messages::join_group_response::JoinGroupResponseMember],
    ) -> Result<Vec<SyncGroupRequestAssignment>> {
        let assignor = Assignor::by_name(protocol).ok_or_else(|| Error::Group(GroupError::UnknownAssignor { name: protocol.to_owned() }))?;
        let mut subs = Vec::with_capacity(members.len());
        let mut sticky = Vec::with_capacity(members.len());
        let mut version = ConsumerProtocolAssignment::VERSIONS.hi;
        for m in members {
            let (s, v): (ConsumerProtocolSubscription, i16) = decode_versioned(&m.metadata, "ConsumerProtocolSubscription")?;
            version = version.min(v);
            sticky.push(StickyMember {
                member_id: m.member_id.to_string(),
                topics: s.topics.iter().map(|t| t.to_string()).collect(),
                owned_partitions: s.owned_partitions.iter().flat_map(|t| t.partitions.iter().map(move |p| TopicPartition::new(t.topic.to_string(), *p))).collect(),
                generation_id: s.generation_id,
                user_data: s.user_data.clone(),
            });
            subs.push(MemberSubscription {
                member_id: m.member_id.to_string(),
                group_instance_id: m.group_instance_id.as_deref().map(str::to_owned),
                topics: s.topics.iter().map(|t| t.to_string()).collect(),
            });
        }
        let all: BTreeSet<&str> = subs.iter().flat_map(|s| s.topics.iter().map(String::as_str)).collect();
        let mut metadata = self.client.metadata();
        if all.iter().any(|t| !metadata.topics.contains_key(*t)) {
            metadata = self.client.refresh_metadata().await?;
        }
        let counts: BTreeMap<String, i32> =
            all.iter().filter_map(|t| metadata.topics.get(*t).map(|i| (t.to_string(), i.partitions.len() as i32))).collect();
        if let Some(g) = self.group.as_mut() {
            g.snapshot = Some(all.iter().map(|t| (t.to_string(), counts.get(*t).copied().unwrap_or(0))).collect());
            g.snapshot_checked = std::time::Instant::now();
        }
        let assignment = match assignor {
            Assignor::Range => range_assign(&subs, &counts),
            Assignor::CooperativeSticky => cooperative_sticky_assign(&sticky, &counts)?,
        };
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
        debug!(protocol, members = members.len(), "computed the assignment as leader");
        Ok(out)
    }

    /// KIP-848: brings the assignment to the broker's target. Revoked partitions are
    /// committed (with auto-commit) and dropped before the heartbeat acknowledges them.
    async fn reconcile(&mut self) -> Result<()> {
        let Some(g) = &self.group else { return Ok(()) };
        let (fenced, target) = {
            let mut m = g.lock();
            (std::mem::take(&mut m.fenced), m.target.take())
        };
        if fenced && !self.assignment.is_empty() {
            warn!(partitions = self.assignment.len(), "fenced by the group: partitions lost, rejoining");
            let lost = self.assignment();
            self.notify(Callback::Lost, &lost).await;
            self.set_assignment(&BTreeSet::new());
        }
        let Some(target) = target else { return Ok(()) };
        let mut metadata = self.client.metadata();
        if target.iter().any(|(id, _)| !metadata.topics.values().any(|t| t.id == *id)) {
            metadata = self.client.refresh_metadata().await?;
        }
        let names: BTreeMap<Uuid, String> = metadata.topics.values().map(|t| (t.id, t.name.clone())).collect();
        let mut wanted = BTreeSet::new();
        for (id, ps) in &target {
            let Some(name) = names.get(id) else {
                // A topic this client cannot see yet: try again at the next poll.
                if let Some(g) = &self.group {
                    g.lock().target.get_or_insert_with(|| target.clone());
                }
                return Ok(());
            };
            wanted.extend(ps.iter().map(|p| TopicPartition::new(name.clone(), *p)));
        }
        let revoked: Vec<TopicPartition> = self.assignment.keys().filter(|tp| !wanted.contains(*tp)).cloned().collect();
        if !revoked.is_empty() && self.config.enable_auto_commit {
            let offsets = revoked
                .iter()
                .filter_map(|tp| {
                    let s = self.assignment.get(tp)?;
                    s.position.map(|o| (tp.clone(), crate::consumer::OffsetAndMetadata { offset: o, leader_epoch: s.epoch, metadata: None }))
                })
                .collect();
            if let Err(e) = self.commit_offsets(&offsets).await {
                warn!(error = %e, "commit of revoked partitions failed");
            }
        }
        let added: BTreeSet<TopicPartition> = wanted.iter().filter(|tp| !self.assignment.contains_key(*tp)).cloned().collect();
        let changed = !revoked.is_empty() || !added.is_empty();
        if changed {
            info!(revoked = revoked.len(), partitions = ?wanted.iter().map(ToString::to_string).collect::<Vec<_>>(), "reconciled the assignment");
        } else {
            debug!("the assignment is unchanged");
        }
        if !revoked.is_empty() {
            self.notify(Callback::Revoked, &revoked.iter().cloned().collect()).await;
        }
        self.set_assignment(&wanted);
        if changed {
            self.notify(Callback::Assigned, &added).await;
        }
        if let Some(g) = &self.group {
            g.lock().owned = target;
            g.wake.notify_one();
        }
        Ok(())
    }

    /// LeaveGroup (classic, dynamic members) or a leaving heartbeat (KIP-848), then stops
    /// heartbeating.
    pub(crate) async fn leave_group(&mut self) -> Result<()> {
        // As Java's onLeavePrepare: the listener hears of the partitions going (lost, if the
        // group had already dropped this member).
        if !self.assignment.is_empty() {
            let owned = self.assignment();
            let lost = self.group.as_ref().is_some_and(|g| {
                let m = g.lock();
                m.fenced || m.rejoin.is_some_and(lost_membership)
            });
            self.notify(if lost { Callback::Lost } else { Callback::Revoked }, &owned).await;
        }
        let listener_error = self.group.as_mut().and_then(|g| g.listener_error.take());
        self.leave_group_inner().await?;
        listener_error.map_or(Ok(()), Err)
    }

    async fn leave_group_inner(&mut self) -> Result<()> {
        let Some(g) = self.group.as_mut() else { return Ok(()) };
        if let Some(t) = g.task.take() {
            t.abort();
        }
        let (member_id, generation, joined) = {
            let mut m = g.lock();
            m.stopped = true;
            (m.member_id.clone(), m.generation, m.joined)
        };
        let protocol = g.protocol;
        let topics = g.topics.clone();
        let group_id = self.group_id_owned()?;
        if member_id.is_empty() {
            return Ok(());
        }
        match protocol {
            GroupProtocol::Classic => {
                // A static member keeps its place until its session times out (Java does not
                // send LeaveGroup for one either).
                if self.config.group_instance_id.is_some() || !joined {
                    return Ok(());
                }
                // One member id up to v2, a list of members from v3.
                let request = |v: i16| {
                    let mut r = LeaveGroupRequest { group_id: ByteString::from(group_id.clone()), ..Default::default() };
                    if v >= 3 {
                        r.members = vec![MemberIdentity {
                            member_id: ByteString::from(member_id.clone()),
                            group_instance_id: None,
                            reason: Some(ByteString::from_static("the consumer is closing")),
                            ..Default::default()
                        }];
                    } else {
                        r.member_id = ByteString::from(member_id.clone());
                    }
                    kwire::RequestKind::from(r)
                };
                let timeout = self.client.config().connection.request_timeout;
                match self.group_call(ApiKey::LeaveGroup, request, timeout).await {
                    Ok(ResponseKind::LeaveGroup(r)) if r.error_code == 0 => info!(group = %group_id, member = %member_id, generation, "left the group"),
                    Ok(other) => warn!(group = %group_id, response = ?other.api_key(), "LeaveGroup refused"),
                    Err(e) => warn!(group = %group_id, error = %e, "LeaveGroup failed"),
                }
            }
            GroupProtocol::Consumer => {
                let epoch = if self.config.group_instance_id.is_some() { -2 } else { -1 };
                let request = ConsumerGroupHeartbeatRequest {
                    group_id: ByteString::from(group_id.clone()),
                    member_id: ByteString::from(member_id.clone()),
                    member_epoch: epoch,
                    instance_id: self.config.group_instance_id.clone().map(ByteString::from),
                    rebalance_timeout_ms: -1,
                    subscribed_topic_names: Some(to_bytestrings(&topics)),
                    ..Default::default()
                };
                let timeout = self.client.config().connection.request_timeout;
                match self.group_call(ApiKey::ConsumerGroupHeartbeat, |_| request.clone().into(), timeout).await {
                    Ok(ResponseKind::ConsumerGroupHeartbeat(r)) if r.error_code == 0 => info!(group = %group_id, member = %member_id, "left the group"),
                    Ok(other) => warn!(group = %group_id, response = ?other.api_key(), "leaving heartbeat refused"),
                    Err(e) => warn!(group = %group_id, error = %e, "leaving heartbeat failed"),
                }
            }
        }
        Ok(())
    }
}

fn millis(d: Duration) -> i32 {
    d.as_millis().min(i32::MAX as u128) as i32
}

/// Sends `build(version)` to the group coordinator of `shared`, finding it when unknown.
async fn heartbeat_call(
    client: &Client,
    group: &str,
    config: &crate::consumer::ConsumerConfig,
    shared: &Mutex<Membership>,
    api: ApiKey,
    build: impl Fn(i16) -> kwire::RequestKind,
) -> Result<ResponseKind> {
    let known = lock(shared).coordinator.clone();
    let addr = match known {
        Some(a) => a,
        None => {
            let a = find_coordinator(client, group, config.retry_backoff).await?;
            lock(shared).coordinator = Some(a.clone());
            a
        }
    };
    let r = client.call_keyed_versioned(&coordinator_key(&addr), &addr, api, build, None).await;
    if r.as_ref().is_err_and(Error::is_retriable) {
        lock(shared).coordinator = None;
    }
    r
}

/// The classic protocol's Heartbeat loop: liveness, and the news of a rebalance.
async fn classic_heartbeats(client: Client, config: crate::consumer::ConsumerConfig, shared: Arc<Mutex<Membership>>, wake: Arc<Notify>) {
    let group = config.group_id.clone().unwrap_or_default();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(config.heartbeat_interval) => {}
            _ = wake.notified() => {}
        }
        let (member_id, generation, joined, stopped) = {
            let m = lock(&shared);
            (m.member_id.clone(), m.generation, m.joined, m.stopped)
        };
        if stopped {
            return;
        }
        if !joined || member_id.is_empty() {
            continue;
        }
        let request = |v: i16| {
            kwire::RequestKind::from(HeartbeatRequest {
                group_id: ByteString::from(group.clone()),
                generation_id: generation,
                member_id: ByteString::from(member_id.clone()),
                group_instance_id: if v >= 3 { config.group_instance_id.clone().map(ByteString::from) } else { None },
                ..Default::default()
            })
        };
        let code = match heartbeat_call(&client, &group, &config, &shared, ApiKey::Heartbeat, request).await {
            Ok(ResponseKind::Heartbeat(r)) => r.error_code,
            Ok(other) => {
                warn!(response = ?other.api_key(), "not a Heartbeat response");
                continue;
            }
            Err(e) => {
                warn!(error = %e, "heartbeat failed");
                continue;
            }
        };
        let mut m = lock(&shared);
        if m.generation != generation {
            continue; // a new generation came while this was in flight
        }
        match ErrorCode(code) {
            ErrorCode::NONE => {}
            // Join again at the next poll.
            code @ (ErrorCode::REBALANCE_IN_PROGRESS | ErrorCode::ILLEGAL_GENERATION) => {
                debug!(code = ?code.name(), "rebalance: rejoining at the next poll");
                m.rejoin.get_or_insert(code);
            }
            // The session expired: join as a new member.
            code @ ErrorCode::UNKNOWN_MEMBER_ID => {
                warn!("the group forgot this member: rejoining");
                m.member_id.clear();
                m.rejoin.get_or_insert(code);
            }
            code if coordinator_moved(code) => m.coordinator = None,
            // Another consumer took this static member's place.
            ErrorCode::FENCED_INSTANCE_ID => {
                m.fatal = Some(Error::Group(GroupError::FencedInstance { group: group.clone(), instance_id: config.group_instance_id.clone() }));
                return;
            }
            c => warn!(code = ?c.name(), "heartbeat error"),
        }
    }
}

/// KIP-848's ConsumerGroupHeartbeat loop: joins, reports owned partitions, receives target
/// assignments (applied by the consumer's next poll).
async fn consumer_heartbeats(
    client: Client,
    config: crate::consumer::ConsumerConfig,
    topics: Vec<String>,
    shared: Arc<Mutex<Membership>>,
    wake: Arc<Notify>,
) {
    let group = config.group_id.clone().unwrap_or_default();
    let mut first = true;
    // What the broker last acknowledged of our owned partitions and subscription: the
    // request carries them only when they changed (a full request makes the broker send the
    // whole assignment back).
    let mut reported: Option<Vec<(Uuid, Vec<i32>)>> = None;
    loop {
        if !first {
            let interval = lock(&shared).heartbeat_interval.unwrap_or(config.heartbeat_interval);
            tokio::select! {
                _ = tokio::time::sleep(interval) => {}
                _ = wake.notified() => {}
            }
        }
        first = false;
        let (member_id, epoch, owned, stopped) = {
            let m = lock(&shared);
            (m.member_id.clone(), m.generation, m.owned.clone(), m.stopped)
        };
        if stopped {
            return;
        }
        let full = epoch == 0 || reported.is_none();
        let changed = full || reported.as_ref() != Some(&owned);
        let request = ConsumerGroupHeartbeatRequest {
            group_id: ByteString::from(group.clone()),
            member_id: ByteString::from(member_id),
            member_epoch: epoch,
            instance_id: config.group_instance_id.clone().map(ByteString::from),
            rack_id: None,
            rebalance_timeout_ms: if full { millis(config.max_poll_interval) } else { -1 },
            subscribed_topic_names: full.then(|| to_bytestrings(&topics)),
            subscribed_topic_regex: None,
            server_assignor: None,
            topic_partitions: changed.then(|| {
                owned.iter().map(|(id, ps)| HeartbeatTopicPartitions { topic_id: *id, partitions: ps.iter().copied().collect(), ..Default::default() }).collect()
            }),
            ..Default::default()
        };
        // v0 (Kafka 3.x): the broker makes the member id, so the first request has none.
        let build = |v: i16| {
            let mut r = request.clone();
            if v == 0 && epoch == 0 {
                r.member_id = ByteString::from_static("");
            }
            kwire::RequestKind::from(r)
        };
        let response = match heartbeat_call(&client, &group, &config, &shared, ApiKey::ConsumerGroupHeartbeat, build).await {
            Ok(ResponseKind::ConsumerGroupHeartbeat(r)) => r,
            Ok(other) => {
                warn!(response = ?other.api_key(), "not a ConsumerGroupHeartbeat response");
                continue;
            }
            Err(e @ Error::UnsupportedVersion { .. }) => {
                lock(&shared).fatal = Some(e);
                return;
            }
            Err(e) => {
                warn!(error = %e, "heartbeat failed");
                reported = None;
                tokio::time::sleep(config.retry_backoff).await;
                continue;
            }
        };
        reported = (response.error_code == 0).then_some(owned);
        let mut m = lock(&shared);
        match ErrorCode(response.error_code) {
            ErrorCode::NONE => {
                if let Some(id) = response.member_id.as_deref().filter(|id| !id.is_empty()) {
                    m.member_id = id.to_owned();
                }
                if response.member_epoch != m.generation {
                    debug!(epoch = response.member_epoch, "member epoch");
                }
                m.generation = response.member_epoch;
                if response.heartbeat_interval_ms > 0 {
                    m.heartbeat_interval = Some(Duration::from_millis(response.heartbeat_interval_ms as u64));
                }
                if let Some(a) = response.assignment {
                    m.target = Some(a.topic_partitions.iter().map(|t| (t.topic_id, t.partitions.to_vec())).collect());
                }
            }
            // Partitions lost: join again at epoch 0.
            code @ (ErrorCode::UNKNOWN_MEMBER_ID | ErrorCode::FENCED_MEMBER_EPOCH) => {
                warn!(code = ?code.name(), "fenced: rejoining");
                m.generation = 0;
                m.owned.clear();
                m.target = None;
                m.fenced = true;
                drop(m);
                wake.notify_one();
            }
            code if coordinator_moved(code) => m.coordinator = None,
            code => {
                let message = response.error_message.as_deref().map(str::to_owned);
                let e = Error::group(code, message, &group, config.group_instance_id.as_deref(), format!("ConsumerGroupHeartbeat for group {group}"));
                if e.is_retriable() {
                    warn!(error = %e, "heartbeat error");
                } else {
                    m.fatal = Some(e);
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: &str, instance: Option<&str>, topics: &[&str]) -> MemberSubscription {
        MemberSubscription { member_id: id.into(), group_instance_id: instance.map(Into::into), topics: topics.iter().map(|t| t.to_string()).collect() }
    }

    #[test]
    fn range_gives_consecutive_ranges_the_first_members_one_more() {
        let counts: BTreeMap<String, i32> = [("a".to_string(), 7), ("b".to_string(), 2)].into();
        let members = [member("m2", None, &["a", "b"]), member("m1", None, &["a", "b"]), member("m3", None, &["a"])];
        let out = range_assign(&members, &counts);
        let show = |m: &str| out[m].iter().map(ToString::to_string).collect::<Vec<_>>().join(",");
        assert_eq!(show("m1"), "a-0,a-1,a-2,b-0");
        assert_eq!(show("m2"), "a-3,a-4,b-1");
        assert_eq!(show("m3"), "a-5,a-6");
    }

    #[test]
    fn range_orders_static_members_first_by_instance_id() {
        let counts: BTreeMap<String, i32> = [("t".to_string(), 3)].into();
        let members = [member("a", None, &["t"]), member("z", Some("i2"), &["t"]), member("y", Some("i1"), &["t"])];
        let out = range_assign(&members, &counts);
        assert_eq!(out["y"], vec![TopicPartition::new("t", 0)]);
        assert_eq!(out["z"], vec![TopicPartition::new("t", 1)]);
        assert_eq!(out["a"], vec![TopicPartition::new("t", 2)]);
    }

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
