//! Share group membership (KIP-932's ShareGroupHeartbeat), as Java's `ShareMembershipManager`
//! keeps it: the member makes its own id; epoch 0 joins, the broker answers with the member
//! epoch, the heartbeat interval and the assignment (the partitions this member may fetch,
//! shared with other members); epoch -1 leaves. A fenced member (UNKNOWN_MEMBER_ID,
//! FENCED_MEMBER_EPOCH) joins again at epoch 0 with the same id. Unlike a consumer group's
//! member, a share group's member reports no owned partitions: nothing is revoked, an
//! assignment applies when it arrives.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use kwire::messages::ShareGroupHeartbeatRequest;
use kwire::{ApiKey, ByteString, ErrorCode, Uuid};
use tokio::sync::Notify;
use tracing::{debug, info, warn};

use crate::coordinator::{coordinator_moved, Coordinator};
use crate::error::Error;
use crate::route::Limits;

/// An assignment: partitions by topic id.
pub(super) type Assignment = Vec<(Uuid, Vec<i32>)>;

/// What the share consumer and its heartbeat task share.
#[derive(Debug, Default)]
pub(super) struct State {
    pub(super) member_id: String,
    /// The member epoch; 0 until joined (and after being fenced).
    pub(super) epoch: i32,
    /// The assignment last received (empty until the first).
    pub(super) assignment: Assignment,
    /// A new assignment came since the consumer last looked.
    pub(super) changed: bool,
    heartbeat_interval: Option<Duration>,
    /// What ended membership (an unsupported broker, not authorized, ...).
    pub(super) fatal: Option<Error>,
    stopped: bool,
}

/// The membership, shared with the heartbeat task.
pub(super) struct Membership {
    pub(super) state: Mutex<State>,
    /// Wakes the consumer when the heartbeat task learned something.
    pub(super) news: Notify,
    /// Wakes the heartbeat task (a rejoin).
    wake: Notify,
}

/// What the heartbeat needs of the consumer's settings.
#[derive(Debug, Clone)]
pub(super) struct HeartbeatConfig {
    pub(super) group_id: String,
    pub(super) topics: Vec<String>,
    pub(super) rack_id: Option<String>,
    /// Until the broker says (its answer sets the interval).
    pub(super) heartbeat_interval: Duration,
    pub(super) retry_backoff: Duration,
    pub(super) request_timeout: Duration,
}

impl Membership {
    pub(super) fn new(member_id: String) -> Arc<Membership> {
        Arc::new(Membership { state: Mutex::new(State { member_id, ..Default::default() }), news: Notify::new(), wake: Notify::new() })
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }

    /// Stops the heartbeat loop at its next turn.
    pub(super) fn stop(&self) {
        self.lock().stopped = true;
        self.wake.notify_one();
    }

    /// After leaving: not a member (the same member id joins again at epoch 0).
    pub(super) fn reset(&self) {
        let mut m = self.lock();
        m.epoch = 0;
        m.assignment.clear();
        m.changed = false;
        m.stopped = false;
    }
}

fn to_bytestrings(v: &[String]) -> Vec<ByteString> {
    v.iter().map(|s| ByteString::from(s.clone())).collect()
}

/// The ShareGroupHeartbeat loop: joins, keeps the member in the group, records assignments.
pub(super) async fn heartbeat(coordinator: Coordinator, config: HeartbeatConfig, shared: Arc<Membership>) {
    let group = config.group_id.clone();
    let mut first = true;
    // Whether the broker has the subscription: a request carries it only when it may not.
    let mut acknowledged = false;
    let mut refused_join = false;
    loop {
        if std::mem::take(&mut refused_join) {
            tokio::time::sleep(config.retry_backoff).await;
        }
        if !first {
            let interval = shared.lock().heartbeat_interval.unwrap_or(config.heartbeat_interval);
            tokio::select! {
                biased;
                _ = tokio::time::sleep(interval) => {}
                _ = shared.wake.notified() => {}
            }
        }
        first = false;
        let (member_id, epoch, stopped) = {
            let m = shared.lock();
            (m.member_id.clone(), m.epoch, m.stopped)
        };
        if stopped {
            return;
        }
        let full = epoch == 0 || !acknowledged;
        let request = ShareGroupHeartbeatRequest {
            group_id: ByteString::from(group.clone()),
            member_id: ByteString::from(member_id),
            member_epoch: epoch,
            rack_id: if full { config.rack_id.clone().map(ByteString::from) } else { None },
            subscribed_topic_names: full.then(|| to_bytestrings(&config.topics)),
            ..Default::default()
        };
        let response = match coordinator.try_send(Limits::default(), |_| request.clone()).await {
            Ok(r) => r,
            Err(e) if e.is_retriable() => {
                warn!(error = %e, "share group heartbeat failed");
                acknowledged = false;
                tokio::time::sleep(config.retry_backoff).await;
                continue;
            }
            // Too old a broker (Error::UnsupportedVersion), not authorized, ...: membership ends.
            Err(e) => {
                shared.lock().fatal = Some(e);
                shared.news.notify_waiters();
                return;
            }
        };
        let code = ErrorCode(response.error_code);
        acknowledged = code.is_ok();
        let mut m = shared.lock();
        match code {
            ErrorCode::NONE => {
                if response.member_epoch != m.epoch {
                    debug!(epoch = response.member_epoch, "member epoch");
                    if m.epoch == 0 {
                        info!(group, member = %m.member_id, epoch = response.member_epoch, "joined the share group");
                    }
                }
                m.epoch = response.member_epoch;
                if response.heartbeat_interval_ms > 0 {
                    m.heartbeat_interval = Some(Duration::from_millis(response.heartbeat_interval_ms as u64));
                }
                if let Some(a) = response.assignment {
                    let assignment: Assignment = a.topic_partitions.iter().map(|t| (t.topic_id, t.partitions.iter().copied().collect())).collect();
                    debug!(?assignment, "assignment");
                    m.assignment = assignment;
                    m.changed = true;
                }
                drop(m);
                shared.news.notify_waiters();
            }
            // Fenced: join again at once, at epoch 0 with the same member id.
            ErrorCode::UNKNOWN_MEMBER_ID | ErrorCode::FENCED_MEMBER_EPOCH => {
                warn!(code = ?code.name(), "fenced: joining the share group again");
                m.epoch = 0;
                m.assignment.clear();
                m.changed = true;
                first = true;
                drop(m);
                shared.news.notify_waiters();
                // The join itself refused (Kafka's coordinator fences an epoch-0 join of a
                // member it still holds at a later epoch, until that member's session ends):
                // again after the backoff, or the heartbeats go back to back.
                refused_join = epoch == 0;
            }
            code if coordinator_moved(code) => {
                drop(m);
                coordinator.moved(ApiKey::ShareGroupHeartbeat, code);
                tokio::time::sleep(config.retry_backoff).await;
            }
            // Share groups turned off on the broker (`share.version` 0).
            ErrorCode::UNSUPPORTED_VERSION => {
                let reason = response.error_message.as_deref().unwrap_or("share groups are not enabled on the broker").to_owned();
                m.fatal = Some(Error::UnsupportedVersion { api: ApiKey::ShareGroupHeartbeat, reason });
                drop(m);
                shared.news.notify_waiters();
                return;
            }
            code => {
                let message = response.error_message.as_deref().map(str::to_owned);
                let e = Error::group(code, message, &group, None, format!("ShareGroupHeartbeat for group {group}"));
                if e.is_retriable() {
                    drop(m);
                    warn!(error = %e, "share group heartbeat error");
                    tokio::time::sleep(config.retry_backoff).await;
                } else {
                    m.fatal = Some(e);
                    drop(m);
                    shared.news.notify_waiters();
                    return;
                }
            }
        }
    }
}

/// A leaving heartbeat (member epoch -1). A failure is logged: the session times out instead.
pub(super) async fn leave(coordinator: &Coordinator, config: &HeartbeatConfig, member_id: &str) {
    let group = config.group_id.as_str();
    let request = ShareGroupHeartbeatRequest {
        group_id: ByteString::from(group.to_owned()),
        member_id: ByteString::from(member_id.to_owned()),
        member_epoch: -1,
        ..Default::default()
    };
    match coordinator.try_send(Limits::within(config.request_timeout), |_| request.clone()).await {
        Ok(r) if ErrorCode(r.error_code).is_ok() => info!(group, member = %member_id, "left the share group"),
        Ok(r) => warn!(group, code = ?ErrorCode(r.error_code).name(), "leaving heartbeat refused"),
        Err(e) => warn!(group, error = %e, "leaving heartbeat failed"),
    }
}
