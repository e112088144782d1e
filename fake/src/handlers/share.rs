//! ShareFetch and ShareAcknowledge at the partitions' leaders (KIP-932): the share session
//! (epoch 0 opens it, each request carries the next epoch, -1 closes it and gives back what
//! the member still holds), the acknowledgements (piggy-backed on ShareFetch, or alone), and
//! the records acquired for the member under acquisition locks. A ShareFetch waits up to
//! `max_wait_ms` for records to acquire.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use kwire::messages::{
    share_acknowledge_response::{self, ShareAcknowledgeTopicResponse},
    share_fetch_response::{AcquiredRecords, LeaderIdAndEpoch, NodeEndpoint, PartitionData, ShareFetchableTopicResponse},
    ShareAcknowledgeRequest, ShareAcknowledgeResponse, ShareFetchRequest, ShareFetchResponse,
};
use kwire::{BytesMut, ErrorCode, Uuid};
use tokio::time::Instant;

use super::{s, Ctx};
use crate::acl::op;
use crate::cluster::State;
use crate::groups::share_partition::{next_epoch, Rules, SharePartition, RENEW};
use crate::groups::{defaults, Groups};

type Tip = (Uuid, i32);
type AckBatches = Vec<(i64, i64, Vec<i8>)>;

/// The rules of `group`'s share partitions, from its configs.
pub(super) fn rules(groups: &Groups, group: &str) -> Rules {
    Rules {
        lock: Duration::from_millis(u64::try_from(groups.config_i64(group, "share.record.lock.duration.ms", defaults::SHARE_LOCK_MS)).unwrap_or(30_000)),
        delivery_limit: i16::try_from(groups.config_i64(group, "share.delivery.count.limit", defaults::SHARE_DELIVERY_LIMIT)).unwrap_or(5),
        max_in_flight: defaults::SHARE_MAX_RECORD_LOCKS,
        read_committed: groups.config(group, "share.isolation.level") == "read_committed",
    }
}

/// The leader's check of a partition: its name if this broker leads it.
fn led_here(ctx: &Ctx<'_>, state: &State, tip: &Tip) -> Result<String, ErrorCode> {
    let name = state.topic_name("", tip.0).ok_or(ErrorCode::UNKNOWN_TOPIC_ID)?;
    // READ on the topic, as for a consumer's fetch.
    ctx.topic_access(state, op::READ, &name)?;
    let partition = state.topics.get(&name).and_then(|t| t.partition(tip.1)).ok_or(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)?;
    if partition.leader != ctx.broker {
        return Err(ErrorCode::NOT_LEADER_OR_FOLLOWER);
    }
    Ok(name)
}

/// Acknowledges `batches` of one partition for `member`.
fn acknowledge(ctx: &Ctx<'_>, state: &mut State, group: &str, member: &str, tip: &Tip, batches: &AckBatches) -> ErrorCode {
    if let Err(code) = led_here(ctx, state, tip) {
        return code;
    }
    match state.groups.share_partitions.by_key.get_mut(&(group.to_owned(), tip.0, tip.1)) {
        Some(p) => p.acknowledge(member, batches, Instant::now()).err().unwrap_or(ErrorCode::NONE),
        None => ErrorCode::INVALID_RECORD_STATE,
    }
}

#[allow(clippy::too_many_arguments)]
/// A share session step (Kafka's `SharePartitionManager.newContext`): the partitions to fetch
/// from, or the error of the whole request.
fn session_step(
    state: &mut State,
    broker: i32,
    group: &str,
    member: &str,
    epoch: i32,
    added: &[Tip],
    forgotten: &[Tip],
    has_acks: bool,
) -> Result<BTreeSet<Tip>, ErrorCode> {
    let key = (broker, group.to_owned(), member.to_owned());
    let sessions = &mut state.groups.sessions.by_key;
    match epoch {
        0 => {
            if has_acks {
                return Err(ErrorCode::INVALID_REQUEST);
            }
            let session = crate::groups::share_partition::Session { epoch: 1, partitions: added.iter().copied().collect() };
            let partitions = session.partitions.clone();
            sessions.insert(key, session);
            Ok(partitions)
        }
        -1 => {
            if sessions.remove(&key).is_none() {
                return Err(ErrorCode::SHARE_SESSION_NOT_FOUND);
            }
            Ok(BTreeSet::new())
        }
        _ => {
            let session = sessions.get_mut(&key).ok_or(ErrorCode::SHARE_SESSION_NOT_FOUND)?;
            if session.epoch != epoch {
                return Err(ErrorCode::INVALID_SHARE_SESSION_EPOCH);
            }
            session.partitions.extend(added.iter().copied());
            for f in forgotten {
                session.partitions.remove(f);
            }
            session.epoch = next_epoch(epoch);
            Ok(session.partitions.clone())
        }
    }
}

/// A session closed with -1: the member's records in its partitions here go back.
fn release_closed(state: &mut State, group: &str, member: &str, partitions: &BTreeSet<Tip>) {
    for (t, p) in partitions {
        if let Some(sp) = state.groups.share_partitions.by_key.get_mut(&(group.to_owned(), *t, *p)) {
            sp.release_member(member);
        }
    }
}

fn leader_of(state: &State, tip: &Tip) -> LeaderIdAndEpoch {
    let p = state.topic_name("", tip.0).and_then(|n| state.topics.get(&n)).and_then(|t| t.partition(tip.1));
    match p {
        Some(p) => LeaderIdAndEpoch { leader_id: p.leader, leader_epoch: p.leader_epoch, ..Default::default() },
        None => LeaderIdAndEpoch { leader_id: -1, leader_epoch: -1, ..Default::default() },
    }
}

pub(super) async fn share_fetch(ctx: &Ctx<'_>, req: &ShareFetchRequest) -> ShareFetchResponse {
    let top = |code: ErrorCode| ShareFetchResponse { error_code: code.0, error_message: code.message().map(s), ..Default::default() };
    let (Some(group), Some(member)) = (req.group_id.as_deref().filter(|g| !g.is_empty()), req.member_id.as_deref().filter(|m| !m.is_empty())) else {
        return top(ErrorCode::INVALID_REQUEST);
    };
    let epoch = req.share_session_epoch;
    let mut ack_codes: BTreeMap<Tip, ErrorCode> = BTreeMap::new();
    let (fetch_from, lock) = {
        let mut guard = ctx.inner.state();
        let state = &mut *guard;
        let requested: Vec<Tip> = req.topics.iter().flat_map(|t| t.partitions.iter().map(move |p| (t.topic_id, p.partition_index))).collect();
        let forgotten: Vec<Tip> = req.forgotten_topics_data.iter().flat_map(|t| t.partitions.iter().map(move |p| (t.topic_id, *p))).collect();
        let has_acks = req.topics.iter().any(|t| t.partitions.iter().any(|p| !p.acknowledgement_batches.is_empty()));
        let closing_partitions = if epoch == -1 {
            state.groups.sessions.by_key.get(&(ctx.broker, group.to_owned(), member.to_owned())).map(|s| s.partitions.clone()).unwrap_or_default()
        } else {
            BTreeSet::new()
        };
        let partitions = match session_step(state, ctx.broker, group, member, epoch, &requested, &forgotten, has_acks) {
            Ok(p) => p,
            Err(code) => return top(code),
        };
        for t in &req.topics {
            for p in &t.partitions {
                if p.acknowledgement_batches.is_empty() {
                    continue;
                }
                let batches: AckBatches = p.acknowledgement_batches.iter().map(|b| (b.first_offset, b.last_offset, b.acknowledge_types.to_vec())).collect();
                let renew = batches.iter().any(|b| b.2.contains(&RENEW));
                let code = if renew && !req.is_renew_ack {
                    ErrorCode::INVALID_REQUEST
                } else {
                    acknowledge(ctx, state, group, member, &(t.topic_id, p.partition_index), &batches)
                };
                ack_codes.insert((t.topic_id, p.partition_index), code);
            }
        }
        if epoch == -1 {
            release_closed(state, group, member, &closing_partitions);
        }
        // KIP-1222: a request renewing locks acquires nothing.
        let fetch_from = if epoch == -1 || req.is_renew_ack { BTreeSet::new() } else { partitions };
        (fetch_from, rules(&state.groups, group).lock)
    };
    if !ack_codes.is_empty() {
        ctx.inner.wake();
    }
    let wait = Duration::from_millis(u64::try_from(req.max_wait_ms).unwrap_or(0)).min(ctx.inner.config.max_wait);
    let deadline = Instant::now() + wait;
    let max_records = usize::try_from(req.max_records).ok().filter(|n| *n > 0).unwrap_or(500);
    loop {
        let notified = ctx.inner.appended.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let (response, acquired) = acquire_once(ctx, group, member, &fetch_from, &ack_codes, max_records, lock);
        if acquired || fetch_from.is_empty() || Instant::now() >= deadline {
            return response;
        }
        if tokio::time::timeout_at(deadline, notified).await.is_err() {
            return acquire_once(ctx, group, member, &fetch_from, &ack_codes, max_records, lock).0;
        }
    }
}

/// One pass: acquires records in every partition of the session, within `max_records`.
fn acquire_once(
    ctx: &Ctx<'_>,
    group: &str,
    member: &str,
    partitions: &BTreeSet<Tip>,
    ack_codes: &BTreeMap<Tip, ErrorCode>,
    max_records: usize,
    lock: Duration,
) -> (ShareFetchResponse, bool) {
    let mut guard = ctx.inner.state();
    let state = &mut *guard;
    let mut budget = max_records;
    let mut by_topic: BTreeMap<Uuid, Vec<PartitionData>> = BTreeMap::new();
    let mut acquired_any = false;
    let mut leaders = BTreeSet::new();
    let all: BTreeSet<Tip> = partitions.iter().chain(ack_codes.keys()).copied().collect();
    for tip in all {
        let mut data =
            PartitionData { partition_index: tip.1, current_leader: leader_of(state, &tip), records: Some(Default::default()), ..Default::default() };
        if let Some(code) = ack_codes.get(&tip) {
            data.acknowledge_error_code = code.0;
        }
        if partitions.contains(&tip) {
            match led_here(ctx, state, &tip) {
                Err(code) => {
                    data.error_code = code.0;
                    if code == ErrorCode::NOT_LEADER_OR_FOLLOWER && data.current_leader.leader_id >= 0 {
                        leaders.insert(data.current_leader.leader_id);
                    }
                }
                Ok(name) if budget > 0 => {
                    let rules = rules(&state.groups, group);
                    let earliest = state.groups.config(group, "share.auto.offset.reset") == "earliest";
                    let Some(log) = state.topics.get(&name).and_then(|t| t.partition(tip.1)).map(|p| &p.log) else { continue };
                    let sp = state
                        .groups
                        .share_partitions
                        .by_key
                        .entry((group.to_owned(), tip.0, tip.1))
                        .or_insert_with(|| SharePartition::new(if earliest { log.log_start() } else { log.high_watermark() }, rules));
                    let got = sp.acquire(member, log, budget, Instant::now());
                    let n: i64 = got.ranges.iter().map(|(f, l, _)| l - f + 1).sum();
                    budget = budget.saturating_sub(usize::try_from(n).unwrap_or(0));
                    if !got.ranges.is_empty() {
                        acquired_any = true;
                        let size = got.batches.iter().map(|b| b.len()).sum();
                        let mut records = BytesMut::with_capacity(size);
                        for b in &got.batches {
                            records.extend_from_slice(b);
                        }
                        data.records = Some(records.freeze());
                        data.acquired_records = got
                            .ranges
                            .iter()
                            .map(|(f, l, c)| AcquiredRecords { first_offset: *f, last_offset: *l, delivery_count: *c, ..Default::default() })
                            .collect();
                    }
                }
                Ok(_) => {}
            }
        }
        let interesting = data.error_code != 0 || ack_codes.contains_key(&tip) || !data.acquired_records.is_empty();
        if interesting {
            by_topic.entry(tip.0).or_default().push(data);
        }
    }
    drop(guard);
    let node_endpoints = leaders
        .into_iter()
        .map(|id| {
            let (host, port) = ctx.inner.address(id, ctx.listener);
            NodeEndpoint { node_id: id, host: s(&host), port, rack: None, ..Default::default() }
        })
        .collect();
    let responses = by_topic.into_iter().map(|(topic_id, partitions)| ShareFetchableTopicResponse { topic_id, partitions, ..Default::default() }).collect();
    (ShareFetchResponse { acquisition_lock_timeout_ms: super::groups::lock_ms(lock), responses, node_endpoints, ..Default::default() }, acquired_any)
}

pub(super) fn share_acknowledge(ctx: &Ctx<'_>, req: &ShareAcknowledgeRequest) -> ShareAcknowledgeResponse {
    let top = |code: ErrorCode| ShareAcknowledgeResponse { error_code: code.0, error_message: code.message().map(s), ..Default::default() };
    let (Some(group), Some(member)) = (req.group_id.as_deref().filter(|g| !g.is_empty()), req.member_id.as_deref().filter(|m| !m.is_empty())) else {
        return top(ErrorCode::INVALID_REQUEST);
    };
    let epoch = req.share_session_epoch;
    if epoch == 0 {
        return top(ErrorCode::INVALID_SHARE_SESSION_EPOCH);
    }
    let mut guard = ctx.inner.state();
    let state = &mut *guard;
    let closing_partitions = if epoch == -1 {
        state.groups.sessions.by_key.get(&(ctx.broker, group.to_owned(), member.to_owned())).map(|s| s.partitions.clone()).unwrap_or_default()
    } else {
        BTreeSet::new()
    };
    if let Err(code) = session_step(state, ctx.broker, group, member, epoch, &[], &[], true) {
        return top(code);
    }
    let responses = req
        .topics
        .iter()
        .map(|t| ShareAcknowledgeTopicResponse {
            topic_id: t.topic_id,
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let tip = (t.topic_id, p.partition_index);
                    let batches: AckBatches = p.acknowledgement_batches.iter().map(|b| (b.first_offset, b.last_offset, b.acknowledge_types.to_vec())).collect();
                    let renew = batches.iter().any(|b| b.2.contains(&RENEW));
                    let code = if renew && !req.is_renew_ack { ErrorCode::INVALID_REQUEST } else { acknowledge(ctx, state, group, member, &tip, &batches) };
                    let leader = leader_of(state, &tip);
                    share_acknowledge_response::PartitionData {
                        partition_index: p.partition_index,
                        error_code: code.0,
                        current_leader: share_acknowledge_response::LeaderIdAndEpoch {
                            leader_id: leader.leader_id,
                            leader_epoch: leader.leader_epoch,
                            ..Default::default()
                        },
                        ..Default::default()
                    }
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    if epoch == -1 {
        release_closed(state, group, member, &closing_partitions);
    }
    let lock = rules(&state.groups, group).lock;
    drop(guard);
    ctx.inner.wake();
    ShareAcknowledgeResponse { acquisition_lock_timeout_ms: if ctx.version >= 2 { super::groups::lock_ms(lock) } else { 0 }, responses, ..Default::default() }
}
