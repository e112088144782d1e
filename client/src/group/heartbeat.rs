//! The heartbeat task of each protocol: it keeps the member in its group while the consumer is
//! busy between polls, and records what it learns (a rebalance, a new assignment, fencing) in
//! the membership for the next `poll` to act on.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use kwire::messages::{consumer_group_heartbeat_request::TopicPartitions as HeartbeatTopicPartitions, ConsumerGroupHeartbeatRequest, HeartbeatRequest};
use kwire::{ApiKey, ByteString, ErrorCode, Uuid};
use tokio::sync::Notify;
use tracing::{debug, warn};

use super::{millis, to_bytestrings, GroupConfig, Membership};
use crate::coordinator::{coordinator_moved, Coordinator};
use crate::error::{Error, GroupError};
use crate::route::Limits;

/// The classic protocol's Heartbeat loop: liveness, and the news of a rebalance.
pub(super) async fn classic(coordinator: Coordinator, config: Arc<GroupConfig>, shared: Arc<Mutex<Membership>>, wake: Arc<Notify>) {
    let group = config.group_id.clone();
    loop {
        tokio::select! {
            biased;
            _ = tokio::time::sleep(config.heartbeat_interval) => {}
            _ = wake.notified() => {}
        }
        let (member_id, generation, joined, stopped, idle) = {
            let m = crate::sync::lock(&shared);
            (m.member_id.clone(), m.generation, m.joined, m.stopped, m.poll_timed_out(config.max_poll_interval))
        };
        if stopped {
            return;
        }
        if !joined || member_id.is_empty() {
            continue;
        }
        if idle {
            // As Java's: the consumer is stuck between polls, so its partitions go to the
            // others now; it joins again (its partitions lost) when it next polls. A static
            // member does not leave: its session runs out instead.
            warn!(max_poll_interval = ?config.max_poll_interval, "no poll within max_poll_interval: leaving the group");
            if config.instance_id.is_none() {
                super::classic::leave(&coordinator, &config, &member_id, generation).await;
            }
            let mut m = crate::sync::lock(&shared);
            m.left_idle = true;
            m.joined = false;
            if config.instance_id.is_none() {
                m.member_id.clear();
            }
            m.rejoin = Some(ErrorCode::UNKNOWN_MEMBER_ID);
            continue;
        }
        let request = |v: i16| HeartbeatRequest {
            group_id: ByteString::from(group.clone()),
            generation_id: generation,
            member_id: ByteString::from(member_id.clone()),
            group_instance_id: if v >= 3 { config.instance_id.clone().map(ByteString::from) } else { None },
            ..Default::default()
        };
        let code = match coordinator.try_send(Limits::default(), request).await {
            Ok(r) => r.error_code,
            Err(e) => {
                warn!(error = %e, "heartbeat failed");
                continue;
            }
        };
        let mut m = crate::sync::lock(&shared);
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
            code if coordinator_moved(code) => coordinator.forget(),
            // Another consumer took this static member's place.
            ErrorCode::FENCED_INSTANCE_ID => {
                m.fatal = Some(Error::Group(GroupError::FencedInstance { group: group.clone(), instance_id: config.instance_id.clone() }));
                return;
            }
            c => warn!(code = ?c.name(), "heartbeat error"),
        }
    }
}

/// KIP-848's ConsumerGroupHeartbeat loop: joins, reports owned partitions, receives target
/// assignments (applied by the consumer's next poll).
pub(super) async fn consumer(
    coordinator: Coordinator,
    config: Arc<GroupConfig>,
    topics: Vec<String>,
    regex: Option<String>,
    shared: Arc<Mutex<Membership>>,
    wake: Arc<Notify>,
) {
    let group = config.group_id.clone();
    // SubscribedTopicRegex came with v1 (Kafka 4.0): the coordinator's version is checked before
    // the first heartbeat with a pattern (v0 would drop it silently).
    let mut regex_checked = regex.is_none();
    let mut first = true;
    // What the broker last acknowledged of our owned partitions and subscription: the
    // request carries them only when they changed (a full request makes the broker send the
    // whole assignment back).
    let mut reported: Option<Vec<(Uuid, Vec<i32>)>> = None;
    loop {
        if !first {
            let interval = crate::sync::lock(&shared).heartbeat_interval.unwrap_or(config.heartbeat_interval);
            tokio::select! {
                biased;
                _ = tokio::time::sleep(interval) => {}
                _ = wake.notified() => {}
            }
        }
        first = false;
        let (member_id, epoch, owned, stopped, idle, left) = {
            let m = crate::sync::lock(&shared);
            (m.member_id.clone(), m.generation, m.owned.clone(), m.stopped, m.poll_timed_out(config.max_poll_interval), m.left_idle)
        };
        if stopped {
            return;
        }
        if left {
            continue; // until the consumer polls again
        }
        if idle && epoch > 0 {
            // As Java's: leave (epoch -1; a static member -2, keeping its assignment for its
            // session), and join again at epoch 0 when the consumer next polls.
            warn!(max_poll_interval = ?config.max_poll_interval, "no poll within max_poll_interval: leaving the group");
            let leave = ConsumerGroupHeartbeatRequest {
                group_id: ByteString::from(group.clone()),
                member_id: ByteString::from(member_id),
                member_epoch: if config.instance_id.is_some() { -2 } else { -1 },
                instance_id: config.instance_id.clone().map(ByteString::from),
                ..Default::default()
            };
            if let Err(e) = coordinator.try_send(Limits::default(), |_| leave.clone()).await {
                warn!(error = %e, "leaving heartbeat failed");
            }
            let mut m = crate::sync::lock(&shared);
            m.left_idle = true;
            m.generation = 0;
            m.owned.clear();
            m.target = None;
            m.fenced = true;
            reported = None;
            continue;
        }
        if !regex_checked {
            match coordinator.versions().await.and_then(|v| v.version(ApiKey::ConsumerGroupHeartbeat)) {
                Ok(v) if v < 1 => {
                    let reason = format!("a topic pattern needs ConsumerGroupHeartbeat v1 or later (Kafka 4.0); the coordinator has v{v}");
                    crate::sync::lock(&shared).fatal = Some(Error::UnsupportedVersion { api: ApiKey::ConsumerGroupHeartbeat, reason });
                    return;
                }
                Ok(_) => regex_checked = true,
                Err(e @ Error::UnsupportedVersion { .. }) => {
                    crate::sync::lock(&shared).fatal = Some(e);
                    return;
                }
                Err(e) => {
                    debug!(error = %e, "the coordinator's versions: not yet");
                    coordinator.forget();
                    tokio::time::sleep(config.retry_backoff).await;
                    continue;
                }
            }
        }
        let full = epoch == 0 || reported.is_none();
        let changed = full || reported.as_ref() != Some(&owned);
        let request = ConsumerGroupHeartbeatRequest {
            group_id: ByteString::from(group.clone()),
            member_id: ByteString::from(member_id),
            member_epoch: epoch,
            instance_id: config.instance_id.clone().map(ByteString::from),
            // As the other settings, in full heartbeats only (null: unchanged).
            rack_id: if full { config.rack.clone().map(ByteString::from) } else { None },
            rebalance_timeout_ms: if full { millis(config.max_poll_interval) } else { -1 },
            // With a pattern the coordinator resolves the topics, and the names are empty (as
            // Java's `subscribe(SubscriptionPattern)` sends them).
            subscribed_topic_names: full.then(|| to_bytestrings(&topics)),
            subscribed_topic_regex: if full { regex.clone().map(ByteString::from) } else { None },
            server_assignor: None,
            topic_partitions: changed.then(|| {
                owned
                    .iter()
                    .map(|(id, ps)| HeartbeatTopicPartitions { topic_id: *id, partitions: ps.iter().copied().collect(), ..Default::default() })
                    .collect()
            }),
            ..Default::default()
        };
        // v0 (Kafka 3.x): the broker makes the member id, so the first request has none.
        let build = |v: i16| {
            let mut r = request.clone();
            if v == 0 && epoch == 0 {
                r.member_id = ByteString::from_static("");
            }
            r
        };
        let response = match coordinator.try_send(Limits::default(), build).await {
            Ok(r) => r,
            Err(e @ Error::UnsupportedVersion { .. }) => {
                crate::sync::lock(&shared).fatal = Some(e);
                return;
            }
            Err(e) => {
                warn!(error = %e, "heartbeat failed");
                reported = None;
                tokio::time::sleep(config.retry_backoff).await;
                continue;
            }
        };
        reported = ErrorCode(response.error_code).is_ok().then_some(owned);
        // Fenced: whether to rejoin after the backoff rather than at once.
        let mut rejoin = None;
        {
            let mut m = crate::sync::lock(&shared);
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
                    // The rejoin itself refused (the coordinator still holds the member at a later
                    // epoch until its session ends): try again after the backoff, not at once, or
                    // the heartbeats would go back to back until then.
                    rejoin = Some(epoch == 0);
                }
                code if coordinator_moved(code) => coordinator.forget(),
                code => {
                    let message = response.error_message.as_deref().map(str::to_owned);
                    let e = Error::group(code, message, &group, config.instance_id.as_deref(), format!("ConsumerGroupHeartbeat for group {group}"));
                    if e.is_retriable() {
                        warn!(error = %e, "heartbeat error");
                    } else {
                        m.fatal = Some(e);
                        return;
                    }
                }
            }
        }
        if let Some(later) = rejoin {
            if later {
                tokio::time::sleep(config.retry_backoff).await;
            }
            wake.notify_one();
        }
    }
}
