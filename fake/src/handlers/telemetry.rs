//! GetTelemetrySubscriptions and PushTelemetry (KIP-714): a client instance id for a client
//! without one, no metrics asked for (no client-metrics subscription is configured), and pushes
//! checked as Kafka's `ClientMetricsManager` checks them.

use kwire::messages::{GetTelemetrySubscriptionsRequest, GetTelemetrySubscriptionsResponse, PushTelemetryRequest, PushTelemetryResponse};
use kwire::{ErrorCode, Uuid};

use super::Ctx;
use crate::telemetry::{Instance, PUSH_INTERVAL_MS};

/// The id of the (empty) set of subscriptions that applies to every client.
const SUBSCRIPTION_ID: i32 = 0;
/// The compression types a push may use: none, gzip, snappy, lz4, zstd.
const COMPRESSION_TYPES: [i8; 5] = [0, 1, 2, 3, 4];
/// The largest metrics payload taken (`telemetry.max.bytes`, 1 MiB).
const MAX_BYTES: usize = 1 << 20;

pub(super) fn get_subscriptions(ctx: &Ctx<'_>, req: &GetTelemetrySubscriptionsRequest) -> GetTelemetrySubscriptionsResponse {
    let now = ctx.inner.now_ms();
    let mut state = ctx.inner.state();
    let id = if req.client_instance_id == Uuid::ZERO { state.new_uuid() } else { req.client_instance_id };
    state.telemetry.instances.insert(id, Instance { subscription_id: SUBSCRIPTION_ID, last_ms: now - i64::from(PUSH_INTERVAL_MS), terminated: false });
    GetTelemetrySubscriptionsResponse {
        client_instance_id: id,
        subscription_id: SUBSCRIPTION_ID,
        accepted_compression_types: COMPRESSION_TYPES.to_vec().into_iter().collect(),
        push_interval_ms: PUSH_INTERVAL_MS,
        telemetry_max_bytes: MAX_BYTES as i32,
        delta_temporality: true,
        ..Default::default()
    }
}

pub(super) fn push(ctx: &Ctx<'_>, req: &PushTelemetryRequest) -> PushTelemetryResponse {
    let now = ctx.inner.now_ms();
    let mut state = ctx.inner.state();
    let code = match state.telemetry.instances.get_mut(&req.client_instance_id) {
        None => ErrorCode::UNKNOWN_SUBSCRIPTION_ID,
        Some(i) if i.subscription_id != req.subscription_id => ErrorCode::UNKNOWN_SUBSCRIPTION_ID,
        // Nothing is taken after a terminating push.
        Some(i) if i.terminated => ErrorCode::INVALID_REQUEST,
        Some(_) if !COMPRESSION_TYPES.contains(&req.compression_type) => ErrorCode::UNSUPPORTED_COMPRESSION_TYPE,
        Some(_) if req.metrics.len() > MAX_BYTES => ErrorCode::TELEMETRY_TOO_LARGE,
        // Sooner than the push interval, unless the client is closing.
        Some(i) if !req.terminating && now - i.last_ms < i64::from(PUSH_INTERVAL_MS) => ErrorCode::THROTTLING_QUOTA_EXCEEDED,
        Some(i) => {
            i.last_ms = now;
            i.terminated = req.terminating;
            ErrorCode::NONE
        }
    };
    PushTelemetryResponse { error_code: code.0, ..Default::default() }
}
