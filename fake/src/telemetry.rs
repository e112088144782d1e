//! Client telemetry (KIP-714, Kafka's `ClientMetricsManager`): the client instances that asked
//! for their subscription, what they were told, and when they last pushed. No client-metrics
//! subscription is configured, so no metric is asked for.

use std::collections::BTreeMap;

use kwire::Uuid;

/// The push interval a client is given (`interval.ms` of a subscription; 5 minutes by default).
pub(crate) const PUSH_INTERVAL_MS: i32 = 300_000;

/// What the broker remembers of a client instance.
#[derive(Debug, Clone)]
pub(crate) struct Instance {
    pub(crate) subscription_id: i32,
    /// When it last pushed (or got its subscription), ms.
    pub(crate) last_ms: i64,
    pub(crate) terminated: bool,
}

#[derive(Debug, Default)]
pub(crate) struct Telemetry {
    pub(crate) instances: BTreeMap<Uuid, Instance>,
}
