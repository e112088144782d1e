//! Share sessions and what they fetch (Java's `ShareConsumeRequestManager` and
//! `ShareSessionHandler`): per leader a share session (epoch 0 opens it with the partitions to
//! fetch, each later request carries the next epoch, only the partitions added and those with
//! acknowledgements, and the partitions to forget; -1 closes it), ShareFetch with
//! acknowledgements piggy-backed, ShareAcknowledge for the others (and for renewals, KIP-1222),
//! the records in the acquired ranges with their delivery counts, and the acknowledgement state:
//! records handed out and not acknowledged, and acknowledgements waiting to be sent.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use kwire::messages::{
    share_acknowledge_request::{AcknowledgePartition, AcknowledgeTopic, AcknowledgementBatch as AckRequestBatch},
    share_fetch_request::{AcknowledgementBatch as FetchAckBatch, FetchPartition, FetchTopic, ForgottenTopic},
    ShareAcknowledgeRequest, ShareAcknowledgeResponse, ShareFetchRequest, ShareFetchResponse,
};
use kwire::records::{Batch, DecodeOptions, RecordsField};
use kwire::{ApiKey, ByteString, Bytes, ErrorCode, Uuid};
use tracing::{debug, warn};

use super::acks::{batches, GAP, RENEW};
use super::{AcknowledgementCommit, ShareConsumerConfig, ShareRecord};
use crate::cluster::{BrokerInfo, Client};
use crate::conn::InFlight;
use crate::consumer::ConsumerRecord;
use crate::error::{ConsumerError, Error, Resource, Result};
use crate::route::Route;
use crate::topic_partition::TopicPartition;

/// A partition by topic id.
pub(super) type Tip = (Uuid, i32);

/// Acknowledgements of one broker's partitions: offset → acknowledge type.
type Acks = BTreeMap<Tip, BTreeMap<i64, i8>>;

/// At most this many offsets of one partition's acquired ranges are acknowledged as gaps per
/// response: a broker claiming a huge range without records costs no more.
const MAX_GAPS: usize = 1 << 16;

/// The share session with one broker.
#[derive(Debug, Default)]
pub(super) struct Session {
    /// The epoch of the next request: 0 opens a session.
    pub(super) epoch: i32,
    /// The partitions the broker's session holds.
    partitions: BTreeSet<Tip>,
}

/// A record fetched and not yet handed out.
struct Buffered {
    node: i32,
    tip: Tip,
    record: ShareRecord,
}

/// A commit in flight (`commit_async`), its outcome collected later.
struct AsyncAck {
    node: i32,
    acks: Acks,
    in_flight: InFlight<ShareAcknowledgeRequest>,
}

/// The share sessions, the fetched records and the acknowledgement state.
#[derive(Default)]
pub(super) struct Fetcher {
    pub(super) sessions: BTreeMap<i32, Session>,
    buffer: VecDeque<Buffered>,
    /// Handed out by the last poll and not yet acknowledged: offset → the broker it came from.
    in_flight: BTreeMap<Tip, BTreeMap<i64, i32>>,
    /// Acknowledgements to send, by broker.
    pending: BTreeMap<i32, Acks>,
    /// What the last ShareFetch (or ShareAcknowledge v2) said the acquisition lock lasts.
    pub(super) lock_timeout: Option<Duration>,
    async_acks: Vec<AsyncAck>,
    /// Outcomes not yet given to the application.
    pub(super) outcomes: Vec<AcknowledgementCommit>,
    /// Topic names by id, for outcomes.
    names: HashMap<Uuid, Arc<str>>,
}

fn next_epoch(epoch: i32) -> i32 {
    // After i32::MAX (and from the closing -1) comes 1: 0 would open a new session.
    match epoch.checked_add(1) {
        Some(next) if next > 0 => next,
        _ => 1,
    }
}

fn millis(d: Duration) -> i32 {
    d.as_millis().min(i32::MAX as u128) as i32
}

impl Fetcher {
    /// Records buffered and not handed out.
    pub(super) fn buffered(&self) -> usize {
        self.buffer.len()
    }

    /// Records handed out and not acknowledged.
    pub(super) fn unacknowledged(&self) -> usize {
        self.in_flight.values().map(BTreeMap::len).sum()
    }

    /// Whether acknowledgements wait to be sent.
    pub(super) fn has_pending(&self) -> bool {
        self.pending.values().any(|a| a.values().any(|o| !o.is_empty()))
    }

    fn topic_partition(&self, tip: &Tip) -> TopicPartition {
        let name = self.names.get(&tip.0).map_or_else(|| format!("{:?}", tip.0), |n| n.to_string());
        TopicPartition::new(name, tip.1)
    }

    /// Hands out up to `max` buffered records; they wait for acknowledgement.
    pub(super) fn drain(&mut self, max: usize) -> Vec<ShareRecord> {
        let n = self.buffer.len().min(max);
        let mut out = Vec::with_capacity(n);
        for b in self.buffer.drain(..n) {
            self.in_flight.entry(b.tip).or_default().insert(b.record.record.offset, b.node);
            out.push(b.record);
        }
        out
    }

    /// Acknowledges a record handed out by the last poll (`Renew` keeps it waiting for a final
    /// acknowledgement).
    pub(super) fn acknowledge(&mut self, tip: Tip, offset: i64, ty: i8) -> Option<()> {
        let offsets = self.in_flight.get_mut(&tip)?;
        let node = if ty == RENEW { *offsets.get(&offset)? } else { offsets.remove(&offset)? };
        if offsets.is_empty() {
            self.in_flight.remove(&tip);
        }
        self.pending.entry(node).or_default().entry(tip).or_default().insert(offset, ty);
        Some(())
    }

    /// Implicit mode: every record handed out and not acknowledged is accepted (explicit mode's
    /// close: released).
    pub(super) fn acknowledge_all(&mut self, ty: i8) {
        for (tip, offsets) in std::mem::take(&mut self.in_flight) {
            for (offset, node) in offsets {
                self.pending.entry(node).or_default().entry(tip).or_default().insert(offset, ty);
            }
        }
    }

    /// Releases the buffered records of the partitions `gone` says are no longer assigned (or
    /// all), so other members get them without waiting for the lock to time out.
    pub(super) fn release_buffered(&mut self, gone: impl Fn(&Tip) -> bool) {
        let mut kept = VecDeque::with_capacity(self.buffer.len());
        for b in std::mem::take(&mut self.buffer) {
            if gone(&b.tip) {
                self.pending.entry(b.node).or_default().entry(b.tip).or_default().insert(b.record.record.offset, super::AcknowledgeType::Release.wire());
            } else {
                kept.push_back(b);
            }
        }
        self.buffer = kept;
    }

    /// The outcome of acknowledgements `acks` sent to `node`: `error` for every partition, or
    /// per partition from `codes`.
    fn report(&mut self, acks: &Acks, error: Option<&Error>, codes: &HashMap<Tip, (i16, Option<String>)>, api: ApiKey) {
        for (tip, offsets) in acks {
            // Gaps are this client's own business: the application never saw them.
            let acknowledgements: Vec<(i64, super::AcknowledgeType)> =
                offsets.iter().filter_map(|(o, t)| super::AcknowledgeType::from_wire(*t).map(|t| (*o, t))).collect();
            if acknowledgements.is_empty() {
                continue;
            }
            let partition = self.topic_partition(tip);
            let error = match error {
                Some(e) => Some(e.clone()),
                None => match codes.get(tip) {
                    Some((code, message)) => {
                        let code = ErrorCode(*code);
                        (!code.is_ok()).then(|| {
                            Error::broker(code, message.clone(), format!("{} of {partition}", api.name())).about(Resource::Topic(partition.topic.clone()))
                        })
                    }
                    None => Some(Error::missing(api, &partition)),
                },
            };
            if let Some(e) = &error {
                warn!(%partition, error = %e, "acknowledgement failed");
            }
            self.outcomes.push(AcknowledgementCommit { partition, acknowledgements, error });
        }
    }

    /// Acknowledgements to `node` that cannot be sent (no share session with it any more):
    /// lost; the broker delivers the records again once their locks time out.
    fn lost(&mut self, node: i32, acks: &Acks) {
        let e = Error::broker(
            ErrorCode::SHARE_SESSION_NOT_FOUND,
            Some("no share session with the broker: the records are delivered again after their acquisition lock times out".into()),
            format!("acknowledging to broker {node}"),
        );
        self.report(acks, Some(&e), &HashMap::new(), ApiKey::ShareAcknowledge);
    }

    fn reset_session(&mut self, node: i32) {
        self.sessions.remove(&node);
    }

    /// A ShareAcknowledge of `acks` on `node`'s session at `epoch`.
    fn ack_request(group: &str, member_id: &str, epoch: i32, acks: &Acks) -> ShareAcknowledgeRequest {
        let mut topics: BTreeMap<Uuid, Vec<AcknowledgePartition>> = BTreeMap::new();
        for ((id, partition), offsets) in acks {
            if offsets.is_empty() {
                continue;
            }
            let acknowledgement_batches = batches(offsets)
                .into_iter()
                .map(|b| AckRequestBatch { first_offset: b.first, last_offset: b.last, acknowledge_types: b.types.into_iter().collect(), ..Default::default() })
                .collect();
            topics.entry(*id).or_default().push(AcknowledgePartition { partition_index: *partition, acknowledgement_batches, ..Default::default() });
        }
        ShareAcknowledgeRequest {
            group_id: Some(ByteString::from(group.to_owned())),
            member_id: Some(ByteString::from(member_id.to_owned())),
            share_session_epoch: epoch,
            is_renew_ack: acks.values().any(|o| o.values().any(|t| *t == RENEW)),
            topics: topics.into_iter().map(|(topic_id, partitions)| AcknowledgeTopic { topic_id, partitions, ..Default::default() }).collect(),
            ..Default::default()
        }
    }

    /// Takes `node`'s pending acknowledgements that can go in a ShareAcknowledge at the
    /// session's epoch (advancing it), reporting those that cannot. `None` when there is
    /// nothing to send.
    async fn take_ack(
        &mut self,
        client: &Client,
        node: i32,
        filter: impl Fn(&Tip) -> bool,
        group: &str,
        member_id: &str,
        closing: bool,
    ) -> Option<(Acks, ShareAcknowledgeRequest, i16)> {
        let mut acks: Acks = BTreeMap::new();
        if let Some(all) = self.pending.get_mut(&node) {
            let tips: Vec<Tip> = all.keys().filter(|t| filter(t)).copied().collect();
            for tip in tips {
                if let Some(o) = all.remove(&tip).filter(|o| !o.is_empty()) {
                    acks.insert(tip, o);
                }
            }
        }
        let epoch = self.sessions.get(&node).map_or(0, |s| s.epoch);
        if epoch == 0 {
            if !acks.is_empty() {
                self.lost(node, &acks);
            }
            return None;
        }
        if acks.is_empty() && !closing {
            return None;
        }
        let version = match client.version_at::<ShareAcknowledgeRequest>(Route::Node(node)).await {
            Ok(v) => v,
            Err(e) => {
                self.report(&acks, Some(&e), &HashMap::new(), ApiKey::ShareAcknowledge);
                return None;
            }
        };
        if version < 2 {
            // Renewal is KIP-1222's (ShareAcknowledge v2, Kafka 4.2+).
            let renewals: Acks = acks
                .iter_mut()
                .map(|(tip, o)| {
                    let renew: BTreeMap<i64, i8> = o.iter().filter(|(_, t)| **t == RENEW).map(|(k, v)| (*k, *v)).collect();
                    o.retain(|_, t| *t != RENEW);
                    (*tip, renew)
                })
                .collect();
            let e = Error::UnsupportedVersion {
                api: ApiKey::ShareAcknowledge,
                reason: format!("renewing acquisition locks needs v2, broker {node} uses v{version}"),
            };
            self.report(&renewals, Some(&e), &HashMap::new(), ApiKey::ShareAcknowledge);
        }
        let request_epoch = if closing { -1 } else { epoch };
        let request = Fetcher::ack_request(group, member_id, request_epoch, &acks);
        if closing {
            self.sessions.remove(&node);
        } else if let Some(s) = self.sessions.get_mut(&node) {
            s.epoch = next_epoch(epoch);
        }
        Some((acks, request, version))
    }

    /// Takes a ShareAcknowledge response (or its failure) for `acks` sent to `node`.
    fn ack_done(&mut self, node: i32, acks: &Acks, result: Result<ShareAcknowledgeResponse>) {
        let response = match result {
            Ok(r) => r,
            Err(e) => {
                self.reset_session(node);
                self.report(acks, Some(&e), &HashMap::new(), ApiKey::ShareAcknowledge);
                return;
            }
        };
        let code = ErrorCode(response.error_code);
        if !code.is_ok() {
            self.reset_session(node);
            let e = Error::broker(code, response.error_message.as_deref().map(str::to_owned), format!("ShareAcknowledge to broker {node}"));
            self.report(acks, Some(&e), &HashMap::new(), ApiKey::ShareAcknowledge);
            return;
        }
        if response.acquisition_lock_timeout_ms > 0 {
            self.lock_timeout = Some(Duration::from_millis(response.acquisition_lock_timeout_ms as u64));
        }
        let codes: HashMap<Tip, (i16, Option<String>)> = response
            .responses
            .iter()
            .flat_map(|t| t.partitions.iter().map(move |p| ((t.topic_id, p.partition_index), (p.error_code, p.error_message.as_deref().map(str::to_owned)))))
            .collect();
        self.report(acks, None, &codes, ApiKey::ShareAcknowledge);
    }

    /// Sends every pending acknowledgement in ShareAcknowledge requests, one per broker, and
    /// waits for the answers (`commit_sync`); or, `wait` false, leaves them in flight for
    /// [`collect`](Fetcher::collect) (`commit_async`).
    pub(super) async fn commit(&mut self, client: &Client, group: &str, member_id: &str, wait: bool) {
        let nodes: Vec<i32> = self.pending.keys().copied().collect();
        let mut calls = Vec::new();
        for node in nodes {
            let Some((acks, request, version)) = self.take_ack(client, node, |_| true, group, member_id, false).await else { continue };
            match client.dispatch(node, request, version).await {
                Ok(in_flight) => calls.push(AsyncAck { node, acks, in_flight }),
                Err(e) => self.ack_done(node, &acks, Err(e)),
            }
        }
        if wait {
            self.finish(calls).await;
        } else {
            self.async_acks.extend(calls);
        }
    }

    /// Waits for the acknowledgements `commit_async` left in flight.
    pub(super) async fn collect(&mut self) {
        let calls = std::mem::take(&mut self.async_acks);
        self.finish(calls).await;
    }

    async fn finish(&mut self, calls: Vec<AsyncAck>) {
        let results = futures_util::future::join_all(calls.into_iter().map(|c| async move {
            let r = c.in_flight.response().await;
            (c.node, c.acks, r)
        }))
        .await;
        for (node, acks, r) in results {
            self.ack_done(node, &acks, r);
        }
    }

    /// Closes every share session (ShareAcknowledge at epoch -1, with what is pending).
    pub(super) async fn close(&mut self, client: &Client, group: &str, member_id: &str) {
        self.collect().await;
        let nodes: BTreeSet<i32> = self.sessions.keys().chain(self.pending.keys()).copied().collect();
        let mut calls = Vec::new();
        for node in nodes {
            let Some((acks, request, version)) = self.take_ack(client, node, |_| true, group, member_id, true).await else { continue };
            match client.dispatch(node, request, version).await {
                Ok(in_flight) => calls.push(AsyncAck { node, acks, in_flight }),
                Err(e) => self.ack_done(node, &acks, Err(e)),
            }
        }
        self.finish(calls).await;
        self.pending.clear();
    }

    /// One round: a ShareFetch to each leader of the assigned partitions (in parallel),
    /// carrying the acknowledgements of those partitions; the other acknowledgements (and
    /// renewals) in a ShareAcknowledge before it. Returns whether metadata needs a refresh.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn fetch(
        &mut self,
        client: &Client,
        config: &ShareConsumerConfig,
        group: &str,
        member_id: &str,
        assigned: &BTreeMap<Tip, Arc<str>>,
        max_wait: Duration,
    ) -> Result<bool> {
        let metadata = client.metadata();
        for (tip, name) in assigned {
            self.names.entry(tip.0).or_insert_with(|| name.clone());
        }
        let mut refresh = false;
        let mut by_node: BTreeMap<i32, BTreeSet<Tip>> = BTreeMap::new();
        for (tip, name) in assigned {
            match metadata.leader(name, tip.1) {
                Some(leader) => {
                    by_node.entry(leader).or_default().insert(*tip);
                }
                None => refresh = true,
            }
        }
        // Brokers with acknowledgements and no partition to fetch: ShareAcknowledge alone.
        let others: Vec<i32> = self.pending.keys().filter(|n| !by_node.contains_key(n)).copied().collect();
        let mut calls = Vec::new();
        for node in others {
            if let Some((acks, request, version)) = self.take_ack(client, node, |_| true, group, member_id, false).await {
                match client.dispatch(node, request, version).await {
                    Ok(in_flight) => self.async_acks.push(AsyncAck { node, acks, in_flight }),
                    Err(e) => self.ack_done(node, &acks, Err(e)),
                }
            }
        }
        for (node, wanted) in by_node {
            let version = match client.version_at::<ShareFetchRequest>(Route::Node(node)).await {
                Ok(v) => v,
                Err(e) if e.is_retriable() => {
                    warn!(node, error = %e, "no connection to the leader");
                    self.reset_session(node);
                    refresh = true;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let epoch = self.sessions.get(&node).map_or(0, |s| s.epoch);
            let renewing = self.pending.get(&node).is_some_and(|a| a.values().any(|o| o.values().any(|t| *t == RENEW)));
            // Piggy-backed: the acknowledgements of partitions this fetch names, on an open
            // session and with no renewal among them; the rest go first in a ShareAcknowledge.
            let piggyback = |t: &Tip| epoch != 0 && !renewing && wanted.contains(t);
            let ack_first = self.take_ack(client, node, |t| !piggyback(t), group, member_id, false).await;
            let mut acks: Acks = BTreeMap::new();
            if let Some(all) = self.pending.get_mut(&node) {
                let tips: Vec<Tip> = all.keys().filter(|t| piggyback(t)).copied().collect();
                for tip in tips {
                    if let Some(o) = all.remove(&tip).filter(|o| !o.is_empty()) {
                        acks.insert(tip, o);
                    }
                }
            }
            let session = self.sessions.entry(node).or_default();
            let epoch = session.epoch;
            let forgotten: Vec<Tip> = if epoch == 0 { Vec::new() } else { session.partitions.difference(&wanted).copied().collect() };
            let request = build_fetch(config, group, member_id, epoch, &session.partitions, &wanted, &acks, &forgotten, max_wait);
            // The session as the broker will hold it if the request succeeds.
            session.epoch = next_epoch(epoch);
            session.partitions = wanted.clone();
            let client = client.clone();
            calls.push(async move {
                let first = match ack_first {
                    Some((first_acks, request, v)) => Some((first_acks, client.dispatch(node, request, v).await)),
                    None => None,
                };
                let fetch = client.dispatch(node, request, version).await;
                let first = match first {
                    Some((a, Ok(f))) => Some((a, f.response().await)),
                    Some((a, Err(e))) => Some((a, Err(e))),
                    None => None,
                };
                let fetched = match fetch {
                    Ok(f) => f.response().await,
                    Err(e) => Err(e),
                };
                (node, first, acks, fetched)
            });
        }
        let results = futures_util::future::join_all(calls).await;
        let options = DecodeOptions { verify_crc: config.check_crcs, ..Default::default() };
        // Every response is taken in (records buffered, outcomes reported) before an error
        // of one is returned.
        let mut failed = None;
        for (node, first, acks, fetched) in results {
            if let Some((first_acks, r)) = first {
                self.ack_done(node, &first_acks, r);
            }
            match self.fetched(client, node, group, &acks, fetched, assigned, &options) {
                Ok(r) => refresh |= r,
                Err(e) => failed = failed.or(Some(e)),
            }
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(refresh),
        }
    }

    /// Takes one ShareFetch response in: session, acknowledgement outcomes, records.
    #[allow(clippy::too_many_arguments)]
    fn fetched(
        &mut self,
        client: &Client,
        node: i32,
        group: &str,
        acks: &Acks,
        result: Result<ShareFetchResponse>,
        assigned: &BTreeMap<Tip, Arc<str>>,
        options: &DecodeOptions,
    ) -> Result<bool> {
        let response = match result {
            Ok(r) => r,
            Err(e) if e.is_retriable() => {
                warn!(node, error = %e, "share fetch failed");
                self.reset_session(node);
                self.report(acks, Some(&e), &HashMap::new(), ApiKey::ShareFetch);
                return Ok(true);
            }
            Err(e) => {
                self.reset_session(node);
                self.report(acks, Some(&e), &HashMap::new(), ApiKey::ShareFetch);
                return Err(e);
            }
        };
        let code = ErrorCode(response.error_code);
        if !code.is_ok() {
            self.reset_session(node);
            let e = Error::broker(code, response.error_message.as_deref().map(str::to_owned), format!("ShareFetch from broker {node}"));
            self.report(acks, Some(&e), &HashMap::new(), ApiKey::ShareFetch);
            // The session is gone or out of step: a new one next round.
            // The member fenced or not (yet) known: the heartbeat joins again meanwhile.
            if matches!(
                code,
                ErrorCode::SHARE_SESSION_NOT_FOUND
                    | ErrorCode::INVALID_SHARE_SESSION_EPOCH
                    | ErrorCode::SHARE_SESSION_LIMIT_REACHED
                    | ErrorCode::UNKNOWN_MEMBER_ID
                    | ErrorCode::FENCED_MEMBER_EPOCH
            ) || e.is_retriable()
                || Client::needs_metadata_refresh(code)
            {
                debug!(node, code = ?code.name(), "share session reset");
                return Ok(Client::needs_metadata_refresh(code));
            }
            return Err(e.about(Resource::Group(group.to_owned())));
        }
        if response.acquisition_lock_timeout_ms > 0 {
            self.lock_timeout = Some(Duration::from_millis(response.acquisition_lock_timeout_ms as u64));
        }
        let mut refresh = false;
        let mut failed = None;
        let mut hints: Vec<(String, i32, i32, i32)> = Vec::new();
        let mut codes: HashMap<Tip, (i16, Option<String>)> = HashMap::new();
        let endpoints: Vec<BrokerInfo> = response.node_endpoints.iter().map(|n| BrokerInfo::endpoint(n.node_id, &n.host, n.port, n.rack.as_deref())).collect();
        for t in response.responses {
            for p in t.partitions {
                let tip = (t.topic_id, p.partition_index);
                codes.insert(tip, (p.acknowledge_error_code, p.acknowledge_error_message.as_deref().map(str::to_owned)));
                let Some(topic) = assigned.get(&tip) else {
                    // Not assigned any more: what it acquired goes back at once.
                    let acquired: Vec<(i64, i64, i16)> = p.acquired_records.iter().map(|a| (a.first_offset, a.last_offset, a.delivery_count)).collect();
                    let release = acquired_offsets(&acquired, i64::MIN, &BTreeSet::new(), MAX_GAPS);
                    if !release.is_empty() {
                        debug!(node, partition = p.partition_index, records = release.len(), "releasing records of a partition no longer assigned");
                        let pending = self.pending.entry(node).or_default().entry(tip).or_default();
                        pending.extend(release.into_iter().map(|o| (o, super::AcknowledgeType::Release.wire())));
                    }
                    continue;
                };
                let code = ErrorCode(p.error_code);
                if !code.is_ok() {
                    let tp = TopicPartition::new(topic.to_string(), p.partition_index);
                    if Client::needs_metadata_refresh(code) || code.is_retriable() {
                        if let Some(s) = self.sessions.get_mut(&node) {
                            s.partitions.remove(&tip);
                        }
                        // KIP-951: the new leader, if the answer names it; else a refresh.
                        let leader_change = matches!(code, ErrorCode::NOT_LEADER_OR_FOLLOWER | ErrorCode::FENCED_LEADER_EPOCH);
                        if leader_change && p.current_leader.leader_id >= 0 {
                            hints.push((topic.to_string(), p.partition_index, p.current_leader.leader_id, p.current_leader.leader_epoch));
                        } else {
                            debug!(partition = %tp, code = ?code.name(), "share fetch: partition error, refreshing metadata");
                            refresh = true;
                        }
                        continue;
                    }
                    // Not authorized, say: the other partitions are still taken in.
                    let e = Error::broker(code, p.error_message.as_deref().map(str::to_owned), format!("share fetch {tp}"))
                        .about(Resource::Topic(tp.topic.clone()));
                    failed = failed.or(Some(e));
                    continue;
                }
                let acquired: Vec<(i64, i64, i16)> = p.acquired_records.iter().map(|a| (a.first_offset, a.last_offset, a.delivery_count)).collect();
                if acquired.is_empty() {
                    continue;
                }
                let records = p.records.clone().unwrap_or_default();
                let parsed = match parse_partition(topic, p.partition_index, &records, acquired, options) {
                    Ok(parsed) => parsed,
                    // Undecodable: nothing of it is handed out; its records come again when
                    // their locks time out.
                    Err(e) => {
                        failed = failed.or(Some(e));
                        continue;
                    }
                };
                for record in parsed.records {
                    self.buffer.push_back(Buffered { node, tip, record });
                }
                if !parsed.gaps.is_empty() || !parsed.unread.is_empty() {
                    let pending = self.pending.entry(node).or_default().entry(tip).or_default();
                    pending.extend(parsed.gaps.into_iter().map(|o| (o, GAP)));
                    pending.extend(parsed.unread.into_iter().map(|o| (o, super::AcknowledgeType::Release.wire())));
                }
            }
        }
        self.report(acks, None, &codes, ApiKey::ShareFetch);
        if !hints.is_empty() {
            let taken = client.update_leaders(hints.iter().map(|(t, p, leader, epoch)| (t.as_str(), *p, *leader, *epoch)), endpoints);
            refresh |= taken < hints.len();
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(refresh),
        }
    }
}

/// A ShareFetch at `epoch`: a new session (epoch 0) names every partition to fetch; a later
/// request only those added since and those with acknowledgements, and forgets the rest.
#[allow(clippy::too_many_arguments)]
fn build_fetch(
    config: &ShareConsumerConfig,
    group: &str,
    member_id: &str,
    epoch: i32,
    in_session: &BTreeSet<Tip>,
    wanted: &BTreeSet<Tip>,
    acks: &Acks,
    forgotten: &[Tip],
    max_wait: Duration,
) -> ShareFetchRequest {
    let mut topics: BTreeMap<Uuid, Vec<FetchPartition>> = BTreeMap::new();
    for tip in wanted {
        let tip_acks = acks.get(tip).filter(|a| !a.is_empty());
        if epoch != 0 && in_session.contains(tip) && tip_acks.is_none() {
            continue;
        }
        let acknowledgement_batches = tip_acks
            .map(|a| {
                batches(a)
                    .into_iter()
                    .map(|b| FetchAckBatch {
                        first_offset: b.first,
                        last_offset: b.last,
                        acknowledge_types: b.types.into_iter().collect(),
                        ..Default::default()
                    })
                    .collect()
            })
            .unwrap_or_default();
        topics.entry(tip.0).or_default().push(FetchPartition { partition_index: tip.1, acknowledgement_batches, ..Default::default() });
    }
    let mut forgotten_topics: BTreeMap<Uuid, Vec<i32>> = BTreeMap::new();
    for (id, p) in forgotten {
        forgotten_topics.entry(*id).or_default().push(*p);
    }
    let max_records = config.max_poll_records.min(i32::MAX as usize) as i32;
    ShareFetchRequest {
        group_id: Some(ByteString::from(group.to_owned())),
        member_id: Some(ByteString::from(member_id.to_owned())),
        share_session_epoch: epoch,
        max_wait_ms: millis(max_wait),
        min_bytes: config.fetch_min_bytes,
        max_bytes: config.fetch_max_bytes,
        max_records,
        batch_size: max_records,
        topics: topics.into_iter().map(|(topic_id, partitions)| FetchTopic { topic_id, partitions, ..Default::default() }).collect(),
        forgotten_topics_data: forgotten_topics
            .into_iter()
            .map(|(topic_id, ps)| ForgottenTopic { topic_id, partitions: ps.into_iter().collect(), ..Default::default() })
            .collect(),
        ..Default::default()
    }
}

/// What one partition's share fetch holds for this member.
#[derive(Debug, Default)]
struct Parsed {
    /// The records in the acquired ranges, with their delivery counts.
    records: Vec<ShareRecord>,
    /// Acquired offsets the data covers without a record (control batches, compacted away):
    /// acknowledged as gaps.
    gaps: Vec<i64>,
    /// Acquired offsets past the data (a truncated last batch): released, to come again.
    unread: Vec<i64>,
}

/// The offsets of `acquired` ranges at or past `from` and not in `seen`, at most `limit`
/// (a broker claiming a huge range costs no more).
fn acquired_offsets(acquired: &[(i64, i64, i16)], from: i64, seen: &BTreeSet<i64>, limit: usize) -> Vec<i64> {
    let mut out = Vec::new();
    for (first, last, _) in acquired {
        let mut offset = (*first).max(from);
        while offset <= *last {
            if !seen.contains(&offset) {
                if out.len() >= limit {
                    warn!(limit, "acquired ranges with more offsets than this client tracks per response");
                    return out;
                }
                out.push(offset);
            }
            match offset.checked_add(1) {
                Some(next) => offset = next,
                None => break,
            }
        }
    }
    out
}

/// The records of one partition's share fetch that lie in the acquired ranges (first, last,
/// delivery count), and the acquired offsets without one: gaps where the data covers them,
/// unread past its end.
fn parse_partition(topic: &Arc<str>, partition: i32, records: &Bytes, mut acquired: Vec<(i64, i64, i16)>, options: &DecodeOptions) -> Result<Parsed> {
    let tp = || TopicPartition::new(topic.to_string(), partition);
    let bad = |e: kwire::DecodeError| Error::protocol(&tp().to_string(), format!("records of {}: {e}", tp()), e);
    acquired.retain(|(first, last, _)| first <= last);
    acquired.sort_unstable();
    let count_of = |offset: i64| -> Option<i16> {
        let i = acquired.partition_point(|(first, _, _)| *first <= offset);
        let (_, last, count) = *acquired.get(i.checked_sub(1)?)?;
        (offset <= last).then_some(count)
    };
    let mut out = Vec::new();
    let mut seen: BTreeSet<i64> = BTreeSet::new();
    // Where the complete batches end: acquired offsets below it without a record are gaps.
    let mut covered = i64::MIN;
    for batch in records.batches_with(*options) {
        let b = match batch.map_err(bad)? {
            Batch::V2(b) => b,
            Batch::Partial(_) => break,
            Batch::Legacy(_) => return Err(Error::Consumer(ConsumerError::LegacyRecords(tp()))),
        };
        covered = covered.max(b.next_offset());
        if b.is_control() {
            continue; // its offsets are gaps
        }
        for r in b.records_with(options).map_err(bad)? {
            let r = r.map_err(bad)?;
            let Some(delivery_count) = count_of(r.offset) else { continue };
            if !seen.insert(r.offset) {
                continue;
            }
            let record = ConsumerRecord::from_batch(topic, partition, &b, r);
            out.push(ShareRecord { record, delivery_count });
        }
    }
    let missing = acquired_offsets(&acquired, i64::MIN, &seen, MAX_GAPS);
    let (gaps, unread) = missing.into_iter().partition(|o| *o < covered);
    Ok(Parsed { records: out, gaps, unread })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kwire::records::{Record, RecordBatchBuilder};

    fn batch(base: i64, n: usize) -> Vec<u8> {
        let mut b = RecordBatchBuilder::new().base_offset(base);
        for i in 0..n {
            b.append(Record::new(base + i as i64, 0, None, Some(Bytes::from(format!("v{}", base + i as i64))))).unwrap();
        }
        b.build().unwrap().to_vec()
    }

    #[test]
    fn only_acquired_records_are_handed_out_and_the_rest_of_a_range_is_a_gap() {
        let mut raw = batch(0, 4);
        raw.extend(RecordBatchBuilder::end_txn_marker(4, 0, 7, 0, true, 0).unwrap().to_vec());
        raw.extend(batch(5, 3));
        let raw = Bytes::from(raw);
        let topic: Arc<str> = Arc::from("t");
        // 1-2 acquired (2nd delivery), 4-6 acquired (1st): 4 is the marker.
        let parsed = parse_partition(&topic, 0, &raw, vec![(4, 6, 1), (1, 2, 2)], &DecodeOptions::default()).unwrap();
        let got: Vec<(i64, i16)> = parsed.records.iter().map(|r| (r.record.offset, r.delivery_count)).collect();
        assert_eq!(got, vec![(1, 2), (2, 2), (5, 1), (6, 1)]);
        assert_eq!((parsed.gaps, parsed.unread), (vec![4], vec![]));
        // Acquired past the data (a truncated batch): released, not archived as gaps.
        let parsed = parse_partition(&topic, 0, &raw, vec![(6, 9, 1)], &DecodeOptions::default()).unwrap();
        assert_eq!(parsed.records.iter().map(|r| r.record.offset).collect::<Vec<_>>(), vec![6, 7]);
        assert_eq!((parsed.gaps, parsed.unread), (vec![], vec![8, 9]));
        // Nonsense ranges from a broker: inverted ones ignored, huge ones capped.
        let parsed = parse_partition(&topic, 0, &raw, vec![(9, 3, 1), (100, i64::MAX, 1)], &DecodeOptions::default()).unwrap();
        assert!(parsed.records.is_empty());
        assert_eq!(parsed.unread.len(), MAX_GAPS);
        assert_eq!(acquired_offsets(&[(i64::MAX - 1, i64::MAX, 1)], i64::MIN, &BTreeSet::new(), 10), vec![i64::MAX - 1, i64::MAX]);
        // Garbage bytes: an error or nothing, never a panic.
        let garbage = Bytes::from_static(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 90, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]);
        if let Ok(parsed) = parse_partition(&topic, 0, &garbage, vec![(0, 1, 1)], &DecodeOptions::default()) {
            assert!(parsed.records.is_empty());
        }
    }

    #[test]
    fn a_session_names_only_what_changed_and_forgets_the_rest() {
        let config = ShareConsumerConfig::new("g");
        let a = Uuid([1; 16]);
        let wanted: BTreeSet<Tip> = [(a, 0), (a, 1)].into_iter().collect();
        let first = build_fetch(&config, "g", "m", 0, &BTreeSet::new(), &wanted, &BTreeMap::new(), &[], Duration::from_millis(10));
        assert_eq!((first.share_session_epoch, first.topics.len(), first.topics[0].partitions.len()), (0, 1, 2));
        // Epoch 3: partition 1 stays (with acks), 2 is new, 0 is forgotten.
        let in_session: BTreeSet<Tip> = [(a, 0), (a, 1)].into_iter().collect();
        let wanted: BTreeSet<Tip> = [(a, 1), (a, 2)].into_iter().collect();
        let acks: Acks = [((a, 1), [(10, 1), (11, 1), (12, 2)].into_iter().collect())].into_iter().collect();
        let r = build_fetch(&config, "g", "m", 3, &in_session, &wanted, &acks, &[(a, 0)], Duration::from_millis(10));
        assert_eq!(r.share_session_epoch, 3);
        let parts: Vec<i32> = r.topics[0].partitions.iter().map(|p| p.partition_index).collect();
        assert_eq!(parts, vec![1, 2]);
        let b = &r.topics[0].partitions[0].acknowledgement_batches[0];
        assert_eq!((b.first_offset, b.last_offset, b.acknowledge_types.iter().copied().collect::<Vec<i8>>()), (10, 12, vec![1, 1, 2]));
        assert_eq!(r.forgotten_topics_data[0].partitions.iter().copied().collect::<Vec<i32>>(), vec![0]);
        assert_eq!(next_epoch(i32::MAX), 1);
    }
}
