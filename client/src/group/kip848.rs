//! KIP-848's consumer protocol (ConsumerGroupHeartbeat, Kafka 4.0+): the broker assigns; the
//! heartbeat task receives the target assignment, the consumer reconciles it (commits and
//! drops revoked partitions, then takes new ones) and the next heartbeat reports what it owns.

use kwire::messages::ConsumerGroupHeartbeatRequest;
use kwire::{ByteString, ErrorCode, Uuid};
use tracing::{info, warn};

use super::{to_bytestrings, Group, GroupConfig};
use crate::coordinator::Coordinator;
use crate::route::Limits;

/// A target assignment: partitions by topic id.
pub(crate) type Target = Vec<(Uuid, Vec<i32>)>;

impl Group {
    /// Starts heartbeating (which joins), once.
    pub(crate) fn heartbeat(&mut self) {
        self.start_heartbeat();
    }

    /// Whether the broker fenced this member since the last call (its partitions are lost),
    /// and the target assignment not yet reconciled.
    pub(crate) fn take_assignment(&self) -> (bool, Option<Target>) {
        let mut m = self.lock();
        (std::mem::take(&mut m.fenced), m.target.take())
    }

    /// Keeps `target` for the next poll (a topic this client cannot name yet), unless a newer
    /// one came meanwhile.
    pub(crate) fn defer_assignment(&self, target: Target) {
        self.lock().target.get_or_insert(target);
    }

    /// `target` is what this member owns now: the next heartbeat (at once) says so.
    pub(crate) fn reconciled(&self, target: Target) {
        self.lock().owned = target;
        self.wake.notify_one();
    }
}

/// A leaving heartbeat: member epoch -1 (-2 for a static member, which keeps its place until
/// its session times out).
pub(super) async fn leave(coordinator: &Coordinator, config: &GroupConfig, topics: &[String], member_id: &str) {
    let group = config.group_id.as_str();
    let request = ConsumerGroupHeartbeatRequest {
        group_id: ByteString::from(group.to_owned()),
        member_id: ByteString::from(member_id.to_owned()),
        member_epoch: if config.instance_id.is_some() { -2 } else { -1 },
        instance_id: config.instance_id.clone().map(ByteString::from),
        rebalance_timeout_ms: -1,
        subscribed_topic_names: Some(to_bytestrings(topics)),
        ..Default::default()
    };
    match coordinator.try_send(Limits::within(config.request_timeout), |_| request.clone()).await {
        Ok(r) if ErrorCode(r.error_code).is_ok() => info!(group, member = %member_id, "left the group"),
        Ok(r) => warn!(group, error = %ErrorCode(r.error_code), "leaving heartbeat refused"),
        Err(e) => warn!(group, error = %e, "leaving heartbeat failed"),
    }
}
