//! Client metrics pushed to the brokers (KIP-714), as Java's `ClientTelemetryReporter` does:
//! GetTelemetrySubscriptions says which metrics the cluster's client-metrics subscriptions ask
//! of this client and how often; PushTelemetry sends them every push interval, encoded as
//! OpenTelemetry's OTLP `MetricsData` (protobuf) and compressed with the first codec the broker
//! accepts; the last push, when the producer or consumer closes, is marked terminating.
//!
//! One task per producer and per consumer (each has its client instance id). Nothing is sent to
//! brokers without the apis (before Kafka 3.7), and nothing is pushed while no subscription
//! matches the client. Errors are logged, never the caller's: the task gets a subscription again
//! (UNKNOWN_SUBSCRIPTION_ID, UNSUPPORTED_COMPRESSION_TYPE) or stops (INVALID_REQUEST,
//! INVALID_RECORD: the broker will not take this client's telemetry).

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kwire::messages::{GetTelemetrySubscriptionsRequest, PushTelemetryRequest};
use kwire::runtime::records::{compress, Compression};
use kwire::{Bytes, ErrorCode, Uuid};
use opentelemetry_proto::tonic::common::v1::InstrumentationScope;
use opentelemetry_proto::tonic::metrics::v1::{
    metric::Data, number_data_point, AggregationTemporality, Gauge, Metric, MetricsData, NumberDataPoint, ResourceMetrics, ScopeMetrics, Sum,
};
use prost::Message;
use tokio::sync::Notify;
use tracing::{debug, info, warn, Instrument};

use crate::cluster::Client;
use crate::error::{Error, Result};
use crate::metrics::{Named, Set, Value};
use crate::route::Route;

/// How long to wait before asking again when the broker gives no push interval.
const DEFAULT_INTERVAL: Duration = Duration::from_secs(300);

/// A subscription as GetTelemetrySubscriptions gave it.
#[derive(Debug, Clone)]
struct Subscription {
    id: i32,
    interval: Duration,
    /// Codecs the broker accepts, by its preference.
    compression: Vec<Compression>,
    max_bytes: usize,
    delta: bool,
    /// Prefixes of the metric names wanted; one empty prefix: all of them.
    prefixes: Vec<String>,
}

impl Subscription {
    fn wants(&self, name: &str) -> bool {
        self.prefixes.iter().any(|p| name.starts_with(p.as_str()))
    }
}

/// What the task and its owner share.
#[derive(Default)]
struct State {
    instance_id: Option<Uuid>,
    closing: bool,
}

/// The telemetry task of a producer or consumer.
pub(crate) struct Telemetry {
    state: Arc<Mutex<State>>,
    wake: Arc<Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Telemetry {
    /// Starts pushing `metrics` (as subscriptions ask) through `client`.
    pub(crate) fn start(client: Client, metrics: Set, kind: &'static str) -> Telemetry {
        let state = Arc::new(Mutex::new(State::default()));
        let wake = Arc::new(Notify::new());
        let pusher = Pusher { client, metrics, state: state.clone(), wake: wake.clone(), started: unix_nanos() };
        let task = tokio::spawn(pusher.run().instrument(tracing::debug_span!("kafka.telemetry", kind)));
        Telemetry { state, wake, task }
    }

    /// The client instance id the brokers gave (Java's `clientInstanceId`), once they have.
    pub(crate) fn instance_id(&self) -> Option<Uuid> {
        crate::sync::lock(&self.state).instance_id
    }

    /// Sends the terminating push (if subscribed), waiting at most `timeout`.
    pub(crate) async fn close(&mut self, timeout: Duration) {
        crate::sync::lock(&self.state).closing = true;
        self.wake.notify_one();
        if tokio::time::timeout(timeout, &mut self.task).await.is_err() {
            debug!("the terminating telemetry push did not finish in time");
        }
    }
}

/// The client instance id, waiting at most `timeout` for it.
pub(crate) async fn wait_instance_id(telemetry: &Telemetry, timeout: Duration) -> Option<Uuid> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(id) = telemetry.instance_id() {
            return Some(id);
        }
        if telemetry.task.is_finished() || tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn unix_nanos() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos().min(u128::from(u64::MAX)) as u64)
}

struct Pusher {
    client: Client,
    metrics: Set,
    state: Arc<Mutex<State>>,
    wake: Arc<Notify>,
    /// When the metrics started counting (the start of cumulative sums).
    started: u64,
}

enum Next {
    /// Ask for the subscription again.
    Resubscribe,
    /// Push again after the interval.
    Push,
    /// No more telemetry from this client.
    Stop,
}

impl Pusher {
    async fn run(self) {
        let mut instance_id = Uuid::ZERO;
        // The previous push's cumulative values, for delta temporality, and its time.
        let mut last_push = self.started;
        let mut last_totals: Vec<u64> = vec![0; self.metrics.len()];
        let mut failures = 0u32;
        loop {
            let subscription = match self.subscribe(&mut instance_id).await {
                Ok(s) => {
                    failures = 0;
                    s
                }
                Err(Error::UnsupportedVersion { .. }) => {
                    debug!("the brokers take no client telemetry (KIP-714)");
                    return;
                }
                Err(e) => {
                    failures += 1;
                    debug!(error = %e, "GetTelemetrySubscriptions failed");
                    if self.sleep(Duration::from_secs(1) * failures.min(30)).await {
                        return;
                    }
                    continue;
                }
            };
            if subscription.prefixes.is_empty() {
                // Nothing asked of this client: ask again after the interval.
                if self.sleep(subscription.interval).await {
                    return;
                }
                continue;
            }
            // As Java's: the first push at a random point of the first interval.
            let mut wait = subscription.interval.mul_f64(0.5 + jitter());
            loop {
                let closing = self.sleep(wait).await;
                wait = subscription.interval;
                let now = unix_nanos();
                let payload = self.encode(&subscription, &mut last_totals, last_push, now);
                last_push = now;
                match self.push(instance_id, &subscription, payload, closing).await {
                    _ if closing => return,
                    Next::Push => {}
                    Next::Resubscribe => break,
                    Next::Stop => return,
                }
            }
        }
    }

    /// Waits `d` or until the owner closes; returns whether it is closing.
    async fn sleep(&self, d: Duration) -> bool {
        if crate::sync::lock(&self.state).closing {
            return true;
        }
        tokio::select! {
            biased;
            () = tokio::time::sleep(d) => {}
            () = self.wake.notified() => {}
        }
        crate::sync::lock(&self.state).closing
    }

    async fn subscribe(&self, instance_id: &mut Uuid) -> Result<Subscription> {
        let request = GetTelemetrySubscriptionsRequest { client_instance_id: *instance_id, ..Default::default() };
        let r = self.client.send(Route::Any, request).await?;
        let code = ErrorCode(r.error_code);
        if !code.is_ok() {
            return Err(Error::broker(code, None, "GetTelemetrySubscriptions".to_owned()));
        }
        if r.client_instance_id != Uuid::ZERO {
            if *instance_id == Uuid::ZERO {
                info!(client_instance_id = ?r.client_instance_id, "client telemetry instance id");
            }
            *instance_id = r.client_instance_id;
            crate::sync::lock(&self.state).instance_id = Some(r.client_instance_id);
        }
        let interval = u64::try_from(r.push_interval_ms).ok().filter(|ms| *ms > 0).map_or(DEFAULT_INTERVAL, Duration::from_millis);
        let subscription = Subscription {
            id: r.subscription_id,
            interval,
            compression: r.accepted_compression_types.iter().filter_map(|c| u8::try_from(*c).ok().and_then(Compression::from_id)).collect(),
            max_bytes: usize::try_from(r.telemetry_max_bytes).unwrap_or(0),
            delta: r.delta_temporality,
            prefixes: r.requested_metrics.iter().map(|p| p.to_string()).collect(),
        };
        debug!(?subscription, "telemetry subscription");
        Ok(subscription)
    }

    /// The subscribed metrics as OTLP `MetricsData`.
    fn encode(&self, subscription: &Subscription, last_totals: &mut [u64], last_push: u64, now: u64) -> Vec<u8> {
        let mut metrics = Vec::new();
        for (Named { name, value }, last) in self.metrics.iter().zip(last_totals.iter_mut()) {
            if !subscription.wants(name) {
                // A window not pushed still ends, so that the next push covers its own interval.
                if let Value::Samples(s) = value {
                    s.take();
                }
                continue;
            }
            match value {
                Value::Count(c) => {
                    let total = c.total();
                    let (v, start) = if subscription.delta { (total.saturating_sub(*last), last_push) } else { (total, self.started) };
                    *last = total;
                    let temporality = if subscription.delta { AggregationTemporality::Delta } else { AggregationTemporality::Cumulative };
                    metrics.push(sum(name.clone(), v as f64, start, now, temporality));
                }
                Value::Level(l) => metrics.push(gauge(name.clone(), l.value(), now)),
                Value::Samples(s) => {
                    // Java's `-avg` and `-max` over the interval.
                    let w = s.take();
                    let avg = if w.count == 0 { 0.0 } else { w.sum / w.count as f64 };
                    metrics.push(gauge(format!("{name}.avg"), avg, now));
                    metrics.push(gauge(format!("{name}.max"), w.max, now));
                }
            }
        }
        let data = MetricsData {
            resource_metrics: vec![ResourceMetrics {
                scope_metrics: vec![ScopeMetrics {
                    scope: Some(InstrumentationScope { name: "kwire-client".into(), version: env!("CARGO_PKG_VERSION").into(), ..Default::default() }),
                    metrics,
                    ..Default::default()
                }],
                ..Default::default()
            }],
        };
        data.encode_to_vec()
    }

    async fn push(&self, instance_id: Uuid, subscription: &Subscription, payload: Vec<u8>, terminating: bool) -> Next {
        // The first codec the broker accepts that this build has; none if none is.
        let (codec, bytes) = subscription
            .compression
            .iter()
            .filter(|c| **c != Compression::None)
            .find_map(|c| {
                let mut out = Vec::new();
                compress(*c, &payload, &mut out, 2).ok().map(|()| (*c, out))
            })
            .unwrap_or((Compression::None, payload));
        if subscription.max_bytes > 0 && bytes.len() > subscription.max_bytes {
            warn!(bytes = bytes.len(), max = subscription.max_bytes, "telemetry larger than the broker takes: not pushed");
            return Next::Push;
        }
        let request = PushTelemetryRequest {
            client_instance_id: instance_id,
            subscription_id: subscription.id,
            terminating,
            compression_type: codec.id() as i8,
            metrics: Bytes::from(bytes),
            ..Default::default()
        };
        match self.client.send(Route::Any, request).await {
            Ok(r) => match ErrorCode(r.error_code) {
                ErrorCode::NONE => Next::Push,
                ErrorCode::UNKNOWN_SUBSCRIPTION_ID | ErrorCode::UNSUPPORTED_COMPRESSION_TYPE => Next::Resubscribe,
                code @ (ErrorCode::INVALID_REQUEST | ErrorCode::INVALID_RECORD) => {
                    warn!(code = ?code.name(), "the broker refuses this client's telemetry: no more pushes");
                    Next::Stop
                }
                code => {
                    debug!(code = ?code.name(), "telemetry push refused");
                    Next::Push
                }
            },
            Err(e) => {
                debug!(error = %e, "telemetry push failed");
                Next::Resubscribe
            }
        }
    }
}

fn sum(name: String, value: f64, start: u64, now: u64, temporality: AggregationTemporality) -> Metric {
    Metric {
        name,
        data: Some(Data::Sum(Sum { data_points: vec![point(value, start, now)], aggregation_temporality: temporality as i32, is_monotonic: true })),
        ..Default::default()
    }
}

fn gauge(name: String, value: f64, now: u64) -> Metric {
    Metric { name, data: Some(Data::Gauge(Gauge { data_points: vec![point(value, 0, now)] })), ..Default::default() }
}

fn point(value: f64, start: u64, now: u64) -> NumberDataPoint {
    NumberDataPoint { start_time_unix_nano: start, time_unix_nano: now, value: Some(number_data_point::Value::AsDouble(value)), ..Default::default() }
}

/// A number in [0, 1) for the first push's place in its interval.
fn jitter() -> f64 {
    crate::sasl::random_bytes(2).ok().and_then(|b| <[u8; 2]>::try_from(b.as_slice()).ok()).map_or(0.5, |b| f64::from(u16::from_be_bytes(b)) / 65536.0)
}
