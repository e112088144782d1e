//! The client's metrics, under the names Java's client gives them, through the [`metrics`]
//! crate's facade: install any recorder (a Prometheus exporter, OpenTelemetry, StatsD) before
//! creating the producer, consumer or client, and it receives them.
//!
//! Java keeps a metric as windowed statistics (`record-send-rate`, `request-latency-avg`,
//! `request-latency-max`); a facade leaves those to the recorder. So a Java `X-rate` and
//! `X-total` pair is the counter `X-total` here (its rate is the exporter's), and a Java
//! `X-avg` / `X-max` pair is the histogram `X` (mean and maximum from its samples). Names carry
//! the group as a prefix (`kafka.producer.`, `kafka.consumer.`, `kafka.connection.`), which a
//! Prometheus exporter writes as `kafka_producer_record_send_total`; every series carries the
//! `client_id` label. Times are in milliseconds, sizes in bytes, as Java's.
//!
//! ```no_run
//! # async fn run() -> kwire_client::Result<()> {
//! // Any recorder; this one serves http://127.0.0.1:9464/metrics.
//! // metrics_exporter_prometheus::PrometheusBuilder::new().with_http_listener(([127, 0, 0, 1], 9464)).install()?;
//! let client = kwire_client::Client::connect(kwire_client::ClientConfig::new("localhost:9092")).await?;
//! let producer = kwire_client::Producer::new(client, kwire_client::ProducerConfig::default())?;
//! producer.send(kwire_client::ProducerRecord::new("events", "hello")).await?.await?;
//! // kafka_producer_record_send_total{client_id="kwire-client"} 1
//! # Ok(()) }
//! ```
//!
//! Handles are made once per producer, consumer and client id, so a record costs an atomic add
//! or two; with no recorder installed the facade's half does nothing. The other half keeps the
//! values the producer and consumer push to the brokers when a client-metrics subscription
//! asks for them (KIP-714; see the `telemetry` module).
// The readings below (totals, windows, named sets) are what KIP-714 pushes; without the
// `telemetry` feature only the `metrics` facade reads the meters.
#![cfg_attr(not(feature = "telemetry"), allow(dead_code))]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use metrics::{counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram, Counter, Gauge, Histogram, Unit};

/// The producer's (Java's `producer-metrics` group).
pub mod producer {
    /// Records sent in Produce requests, resends included (Java's `record-send-total`).
    pub const RECORD_SEND_TOTAL: &str = "kafka.producer.record-send-total";
    /// Records whose sending failed (`record-error-total`).
    pub const RECORD_ERROR_TOTAL: &str = "kafka.producer.record-error-total";
    /// Records resent after a retriable error (`record-retry-total`).
    pub const RECORD_RETRY_TOTAL: &str = "kafka.producer.record-retry-total";
    /// Batches split after the broker refused them as too large (`batch-split-total`).
    pub const BATCH_SPLIT_TOTAL: &str = "kafka.producer.batch-split-total";
    /// Produce requests sent (`request-total`).
    pub const REQUEST_TOTAL: &str = "kafka.producer.request-total";
    /// Bytes of each batch as sent, compressed (`batch-size-avg`, `batch-size-max`).
    pub const BATCH_SIZE: &str = "kafka.producer.batch-size";
    /// Each batch's compressed size over its uncompressed size (`compression-rate-avg`).
    pub const COMPRESSION_RATE: &str = "kafka.producer.compression-rate";
    /// Records per Produce request (`records-per-request-avg`).
    pub const RECORDS_PER_REQUEST: &str = "kafka.producer.records-per-request";
    /// How long each batch waited in the accumulator before it was first sent, ms
    /// (`record-queue-time-avg`, `record-queue-time-max`).
    pub const RECORD_QUEUE_TIME: &str = "kafka.producer.record-queue-time";
    /// From a Produce request's dispatch to its response, ms (`request-latency-avg`,
    /// `request-latency-max`).
    pub const REQUEST_LATENCY: &str = "kafka.producer.request-latency";
    /// The throttle time brokers asked for in Produce responses, ms
    /// (`produce-throttle-time-avg`, `produce-throttle-time-max`).
    pub const PRODUCE_THROTTLE_TIME: &str = "kafka.producer.produce-throttle-time";
    /// Buffer memory not held by queued or in-flight records (`buffer-available-bytes`).
    pub const BUFFER_AVAILABLE_BYTES: &str = "kafka.producer.buffer-available-bytes";
    /// The producer's buffer memory (`buffer-total-bytes`).
    pub const BUFFER_TOTAL_BYTES: &str = "kafka.producer.buffer-total-bytes";
}

/// The consumer's (Java's `consumer-fetch-manager-metrics` and `consumer-coordinator-metrics`).
pub mod consumer {
    /// Records `poll` returned (`records-consumed-total`).
    pub const RECORDS_CONSUMED_TOTAL: &str = "kafka.consumer.records-consumed-total";
    /// Their key and value bytes (`bytes-consumed-total`).
    pub const BYTES_CONSUMED_TOTAL: &str = "kafka.consumer.bytes-consumed-total";
    /// Fetch requests sent (`fetch-total`).
    pub const FETCH_TOTAL: &str = "kafka.consumer.fetch-total";
    /// From a Fetch request to its response, ms (`fetch-latency-avg`, `fetch-latency-max`).
    pub const FETCH_LATENCY: &str = "kafka.consumer.fetch-latency";
    /// Record bytes per Fetch response (`fetch-size-avg`, `fetch-size-max`).
    pub const FETCH_SIZE: &str = "kafka.consumer.fetch-size";
    /// Records per Fetch response (`records-per-request-avg`).
    pub const RECORDS_PER_REQUEST: &str = "kafka.consumer.records-per-request";
    /// The throttle time brokers asked for in Fetch responses, ms (`fetch-throttle-time-avg`).
    pub const FETCH_THROTTLE_TIME: &str = "kafka.consumer.fetch-throttle-time";
    /// The largest lag of an assigned partition, in records, as of the last fetch response
    /// (`records-lag-max`): the high watermark (the last stable offset under read_committed)
    /// less the position.
    pub const RECORDS_LAG_MAX: &str = "kafka.consumer.records-lag-max";
    /// Offset commits sent (`commit-total`).
    pub const COMMIT_TOTAL: &str = "kafka.consumer.commit-total";
    /// From an OffsetCommit to its acknowledgement, ms (`commit-latency-avg`, `commit-latency-max`).
    pub const COMMIT_LATENCY: &str = "kafka.consumer.commit-latency";
    /// Rebalances the member went through (`rebalance-total`).
    pub const REBALANCE_TOTAL: &str = "kafka.consumer.rebalance-total";
    /// Partitions assigned to the consumer (`assigned-partitions`).
    pub const ASSIGNED_PARTITIONS: &str = "kafka.consumer.assigned-partitions";
}

/// The connections' (Java's selector metrics, in both groups above).
pub mod connection {
    /// Open connections to brokers (`connection-count`).
    pub const CONNECTION_COUNT: &str = "kafka.connection.connection-count";
    /// Connections established (`connection-creation-total`).
    pub const CONNECTION_CREATION_TOTAL: &str = "kafka.connection.connection-creation-total";
    /// Connections closed (`connection-close-total`).
    pub const CONNECTION_CLOSE_TOTAL: &str = "kafka.connection.connection-close-total";
    /// Requests sent, of every api (`request-total`).
    pub const REQUEST_TOTAL: &str = "kafka.connection.request-total";
    /// Responses received (`response-total`).
    pub const RESPONSE_TOTAL: &str = "kafka.connection.response-total";
    /// SASL authentications that succeeded (`successful-authentication-total`).
    pub const SUCCESSFUL_AUTHENTICATION_TOTAL: &str = "kafka.connection.successful-authentication-total";
    /// SASL re-authentications that succeeded, KIP-368 (`successful-reauthentication-total`).
    pub const SUCCESSFUL_REAUTHENTICATION_TOTAL: &str = "kafka.connection.successful-reauthentication-total";
    /// SASL authentications that failed (`failed-authentication-total`).
    pub const FAILED_AUTHENTICATION_TOTAL: &str = "kafka.connection.failed-authentication-total";
}

const CLIENT_ID: &str = "client_id";

/// The name Java's client pushes a metric under (KIP-714's naming): `org.apache.kafka.`, the
/// metric group without `-metrics` (`producer`, `consumer.fetch.manager`, ...), then the
/// metric's name, dashes made dots.
fn telemetry_name(group: &str, name: &str) -> String {
    let short = name.rsplit('.').next().unwrap_or(name);
    format!("org.apache.kafka.{group}.{}", short.replace('-', "."))
}

/// A counter: the facade's, and its total here.
#[derive(Clone)]
pub(crate) struct Count(Arc<CountInner>);

struct CountInner {
    facade: Counter,
    total: AtomicU64,
}

impl Count {
    fn new(name: &'static str, id: &str) -> Count {
        Count(Arc::new(CountInner { facade: counter!(name, CLIENT_ID => id.to_owned()), total: AtomicU64::new(0) }))
    }

    fn noop() -> Count {
        Count(Arc::new(CountInner { facade: Counter::noop(), total: AtomicU64::new(0) }))
    }

    pub(crate) fn increment(&self, n: u64) {
        self.0.facade.increment(n);
        self.0.total.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn total(&self) -> u64 {
        self.0.total.load(Ordering::Relaxed)
    }
}

/// A gauge: the facade's, and its value here.
#[derive(Clone)]
pub(crate) struct Level(Arc<LevelInner>);

struct LevelInner {
    facade: Gauge,
    /// The value's f64 bits.
    bits: AtomicU64,
}

impl Level {
    fn new(name: &'static str, id: &str) -> Level {
        Level(Arc::new(LevelInner { facade: gauge!(name, CLIENT_ID => id.to_owned()), bits: AtomicU64::new(0f64.to_bits()) }))
    }

    fn noop() -> Level {
        Level(Arc::new(LevelInner { facade: Gauge::noop(), bits: AtomicU64::new(0f64.to_bits()) }))
    }

    pub(crate) fn set(&self, v: f64) {
        self.0.facade.set(v);
        self.0.bits.store(v.to_bits(), Ordering::Relaxed);
    }

    pub(crate) fn increment(&self, by: f64) {
        self.0.facade.increment(by);
        let _ = self.0.bits.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| Some((f64::from_bits(b) + by).to_bits()));
    }

    pub(crate) fn decrement(&self, by: f64) {
        self.increment(-by);
    }

    pub(crate) fn value(&self) -> f64 {
        f64::from_bits(self.0.bits.load(Ordering::Relaxed))
    }
}

/// A histogram: the facade's, and here the samples' count, sum and maximum since the last
/// telemetry push (Java's `-avg` and `-max` are over a window too).
#[derive(Clone)]
pub(crate) struct Samples(Arc<SamplesInner>);

struct SamplesInner {
    facade: Histogram,
    window: Mutex<Window>,
}

/// Samples since the window opened.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Window {
    pub(crate) count: u64,
    pub(crate) sum: f64,
    pub(crate) max: f64,
}

impl Samples {
    fn new(name: &'static str, id: &str) -> Samples {
        Samples(Arc::new(SamplesInner { facade: histogram!(name, CLIENT_ID => id.to_owned()), window: Mutex::new(Window::default()) }))
    }

    fn noop() -> Samples {
        Samples(Arc::new(SamplesInner { facade: Histogram::noop(), window: Mutex::new(Window::default()) }))
    }

    pub(crate) fn record(&self, v: f64) {
        self.0.facade.record(v);
        let mut w = crate::sync::lock(&self.0.window);
        w.max = if w.count == 0 { v } else { w.max.max(v) };
        w.count += 1;
        w.sum += v;
    }

    /// The window's samples, and a new window.
    pub(crate) fn take(&self) -> Window {
        std::mem::take(&mut *crate::sync::lock(&self.0.window))
    }
}

/// One metric as telemetry reads it.
#[derive(Clone)]
pub(crate) enum Value {
    Count(Count),
    Level(Level),
    Samples(Samples),
}

/// A metric named for telemetry.
#[derive(Clone)]
pub(crate) struct Named {
    /// Its name in pushed telemetry (Java's).
    pub(crate) name: String,
    pub(crate) value: Value,
}

/// The metrics a producer or consumer pushes (its own and its connections').
pub(crate) type Set = Vec<Named>;

fn named(group: &str, name: &str, value: Value) -> Named {
    Named { name: telemetry_name(group, name), value }
}

/// The producer's handles.
#[derive(Clone)]
pub(crate) struct ProducerMetrics {
    pub(crate) record_send: Count,
    pub(crate) record_error: Count,
    pub(crate) record_retry: Count,
    pub(crate) batch_split: Count,
    pub(crate) requests: Count,
    pub(crate) batch_size: Samples,
    pub(crate) compression_rate: Samples,
    pub(crate) records_per_request: Samples,
    pub(crate) record_queue_time: Samples,
    pub(crate) request_latency: Samples,
    pub(crate) throttle_time: Samples,
    pub(crate) buffer_available: Level,
    buffer_total: Level,
    client_id: String,
}

impl ProducerMetrics {
    pub(crate) fn new(client_id: &str, buffer_memory: usize) -> ProducerMetrics {
        use producer::*;
        describe_counter!(RECORD_SEND_TOTAL, Unit::Count, "Records sent in Produce requests, resends included");
        describe_counter!(RECORD_ERROR_TOTAL, Unit::Count, "Records whose sending failed");
        describe_counter!(RECORD_RETRY_TOTAL, Unit::Count, "Records resent after a retriable error");
        describe_counter!(BATCH_SPLIT_TOTAL, Unit::Count, "Batches split after MESSAGE_TOO_LARGE");
        describe_counter!(REQUEST_TOTAL, Unit::Count, "Produce requests sent");
        describe_histogram!(BATCH_SIZE, Unit::Bytes, "Bytes of each batch as sent");
        describe_histogram!(COMPRESSION_RATE, "Compressed over uncompressed size of each batch");
        describe_histogram!(RECORDS_PER_REQUEST, Unit::Count, "Records per Produce request");
        describe_histogram!(RECORD_QUEUE_TIME, Unit::Milliseconds, "Time batches waited before they were first sent");
        describe_histogram!(REQUEST_LATENCY, Unit::Milliseconds, "Produce request latency");
        describe_histogram!(PRODUCE_THROTTLE_TIME, Unit::Milliseconds, "Throttle time in Produce responses");
        describe_gauge!(BUFFER_AVAILABLE_BYTES, Unit::Bytes, "Buffer memory not in use");
        describe_gauge!(BUFFER_TOTAL_BYTES, Unit::Bytes, "The producer's buffer memory");
        let id = client_id;
        let buffer_total = Level::new(BUFFER_TOTAL_BYTES, id);
        buffer_total.set(buffer_memory as f64);
        let buffer_available = Level::new(BUFFER_AVAILABLE_BYTES, id);
        buffer_available.set(buffer_memory as f64);
        ProducerMetrics {
            record_send: Count::new(RECORD_SEND_TOTAL, id),
            record_error: Count::new(RECORD_ERROR_TOTAL, id),
            record_retry: Count::new(RECORD_RETRY_TOTAL, id),
            batch_split: Count::new(BATCH_SPLIT_TOTAL, id),
            requests: Count::new(REQUEST_TOTAL, id),
            batch_size: Samples::new(BATCH_SIZE, id),
            compression_rate: Samples::new(COMPRESSION_RATE, id),
            records_per_request: Samples::new(RECORDS_PER_REQUEST, id),
            record_queue_time: Samples::new(RECORD_QUEUE_TIME, id),
            request_latency: Samples::new(REQUEST_LATENCY, id),
            throttle_time: Samples::new(PRODUCE_THROTTLE_TIME, id),
            buffer_available,
            buffer_total,
            client_id: id.to_owned(),
        }
    }

    /// What the producer pushes (group `producer-metrics`, connections' included).
    pub(crate) fn telemetry(&self) -> Set {
        use producer::*;
        let g = "producer";
        let mut set = vec![
            named(g, RECORD_SEND_TOTAL, Value::Count(self.record_send.clone())),
            named(g, RECORD_ERROR_TOTAL, Value::Count(self.record_error.clone())),
            named(g, RECORD_RETRY_TOTAL, Value::Count(self.record_retry.clone())),
            named(g, BATCH_SPLIT_TOTAL, Value::Count(self.batch_split.clone())),
            named(g, REQUEST_TOTAL, Value::Count(self.requests.clone())),
            named(g, BATCH_SIZE, Value::Samples(self.batch_size.clone())),
            named(g, COMPRESSION_RATE, Value::Samples(self.compression_rate.clone())),
            named(g, RECORDS_PER_REQUEST, Value::Samples(self.records_per_request.clone())),
            named(g, RECORD_QUEUE_TIME, Value::Samples(self.record_queue_time.clone())),
            named(g, REQUEST_LATENCY, Value::Samples(self.request_latency.clone())),
            named(g, PRODUCE_THROTTLE_TIME, Value::Samples(self.throttle_time.clone())),
            named(g, BUFFER_AVAILABLE_BYTES, Value::Level(self.buffer_available.clone())),
            named(g, BUFFER_TOTAL_BYTES, Value::Level(self.buffer_total.clone())),
        ];
        set.extend(ConnectionMetrics::of(&self.client_id).telemetry(g));
        set
    }
}

/// The consumer's handles.
#[derive(Clone)]
pub(crate) struct ConsumerMetrics {
    pub(crate) records_consumed: Count,
    pub(crate) bytes_consumed: Count,
    pub(crate) fetches: Count,
    pub(crate) fetch_latency: Samples,
    pub(crate) fetch_size: Samples,
    pub(crate) records_per_request: Samples,
    pub(crate) throttle_time: Samples,
    pub(crate) records_lag_max: Level,
    pub(crate) commits: Count,
    pub(crate) commit_latency: Samples,
    pub(crate) rebalances: Count,
    pub(crate) assigned_partitions: Level,
    client_id: String,
}

impl ConsumerMetrics {
    pub(crate) fn new(client_id: &str) -> ConsumerMetrics {
        use consumer::*;
        describe_counter!(RECORDS_CONSUMED_TOTAL, Unit::Count, "Records returned by poll");
        describe_counter!(BYTES_CONSUMED_TOTAL, Unit::Bytes, "Key and value bytes returned by poll");
        describe_counter!(FETCH_TOTAL, Unit::Count, "Fetch requests sent");
        describe_histogram!(FETCH_LATENCY, Unit::Milliseconds, "Fetch request latency");
        describe_histogram!(FETCH_SIZE, Unit::Bytes, "Record bytes per Fetch response");
        describe_histogram!(RECORDS_PER_REQUEST, Unit::Count, "Records per Fetch response");
        describe_histogram!(FETCH_THROTTLE_TIME, Unit::Milliseconds, "Throttle time in Fetch responses");
        describe_gauge!(RECORDS_LAG_MAX, Unit::Count, "The largest lag of an assigned partition, in records");
        describe_counter!(COMMIT_TOTAL, Unit::Count, "Offset commits sent");
        describe_histogram!(COMMIT_LATENCY, Unit::Milliseconds, "Offset commit latency");
        describe_counter!(REBALANCE_TOTAL, Unit::Count, "Rebalances the member went through");
        describe_gauge!(ASSIGNED_PARTITIONS, Unit::Count, "Partitions assigned to the consumer");
        let id = client_id;
        ConsumerMetrics {
            records_consumed: Count::new(RECORDS_CONSUMED_TOTAL, id),
            bytes_consumed: Count::new(BYTES_CONSUMED_TOTAL, id),
            fetches: Count::new(FETCH_TOTAL, id),
            fetch_latency: Samples::new(FETCH_LATENCY, id),
            fetch_size: Samples::new(FETCH_SIZE, id),
            records_per_request: Samples::new(RECORDS_PER_REQUEST, id),
            throttle_time: Samples::new(FETCH_THROTTLE_TIME, id),
            records_lag_max: Level::new(RECORDS_LAG_MAX, id),
            commits: Count::new(COMMIT_TOTAL, id),
            commit_latency: Samples::new(COMMIT_LATENCY, id),
            rebalances: Count::new(REBALANCE_TOTAL, id),
            assigned_partitions: Level::new(ASSIGNED_PARTITIONS, id),
            client_id: id.to_owned(),
        }
    }

    /// What the consumer pushes (Java's groups `consumer-fetch-manager-metrics`,
    /// `consumer-coordinator-metrics`, and `consumer-metrics` for the connections).
    pub(crate) fn telemetry(&self) -> Set {
        use consumer::*;
        let (f, c) = ("consumer.fetch.manager", "consumer.coordinator");
        let mut set = vec![
            named(f, RECORDS_CONSUMED_TOTAL, Value::Count(self.records_consumed.clone())),
            named(f, BYTES_CONSUMED_TOTAL, Value::Count(self.bytes_consumed.clone())),
            named(f, FETCH_TOTAL, Value::Count(self.fetches.clone())),
            named(f, FETCH_LATENCY, Value::Samples(self.fetch_latency.clone())),
            named(f, FETCH_SIZE, Value::Samples(self.fetch_size.clone())),
            named(f, RECORDS_PER_REQUEST, Value::Samples(self.records_per_request.clone())),
            named(f, FETCH_THROTTLE_TIME, Value::Samples(self.throttle_time.clone())),
            named(f, RECORDS_LAG_MAX, Value::Level(self.records_lag_max.clone())),
            named(c, COMMIT_TOTAL, Value::Count(self.commits.clone())),
            named(c, COMMIT_LATENCY, Value::Samples(self.commit_latency.clone())),
            named(c, REBALANCE_TOTAL, Value::Count(self.rebalances.clone())),
            named(c, ASSIGNED_PARTITIONS, Value::Level(self.assigned_partitions.clone())),
        ];
        set.extend(ConnectionMetrics::of(&self.client_id).telemetry("consumer"));
        set
    }
}

impl Default for ConsumerMetrics {
    /// Handles that record nothing (until the consumer makes its own).
    fn default() -> Self {
        ConsumerMetrics {
            records_consumed: Count::noop(),
            bytes_consumed: Count::noop(),
            fetches: Count::noop(),
            fetch_latency: Samples::noop(),
            fetch_size: Samples::noop(),
            records_per_request: Samples::noop(),
            throttle_time: Samples::noop(),
            records_lag_max: Level::noop(),
            commits: Count::noop(),
            commit_latency: Samples::noop(),
            rebalances: Count::noop(),
            assigned_partitions: Level::noop(),
            client_id: String::new(),
        }
    }
}

/// The connections' handles, one set per client id (the facade keeps one series per id too).
pub(crate) struct ConnectionMetrics {
    pub(crate) open: Level,
    pub(crate) created: Count,
    pub(crate) closed: Count,
    pub(crate) requests: Count,
    pub(crate) responses: Count,
    pub(crate) authentications: Count,
    pub(crate) reauthentications: Count,
    pub(crate) failed_authentications: Count,
}

impl ConnectionMetrics {
    /// The handles of connections made under `client_id`.
    pub(crate) fn of(client_id: &str) -> Arc<ConnectionMetrics> {
        static BY_CLIENT_ID: OnceLock<Mutex<HashMap<String, Arc<ConnectionMetrics>>>> = OnceLock::new();
        let mut all = crate::sync::lock(BY_CLIENT_ID.get_or_init(Default::default));
        all.entry(client_id.to_owned()).or_insert_with(|| Arc::new(ConnectionMetrics::new(client_id))).clone()
    }

    fn new(client_id: &str) -> ConnectionMetrics {
        use connection::*;
        describe_gauge!(CONNECTION_COUNT, Unit::Count, "Open connections to brokers");
        describe_counter!(CONNECTION_CREATION_TOTAL, Unit::Count, "Connections established");
        describe_counter!(CONNECTION_CLOSE_TOTAL, Unit::Count, "Connections closed");
        describe_counter!(REQUEST_TOTAL, Unit::Count, "Requests sent");
        describe_counter!(RESPONSE_TOTAL, Unit::Count, "Responses received");
        describe_counter!(SUCCESSFUL_AUTHENTICATION_TOTAL, Unit::Count, "SASL authentications that succeeded");
        describe_counter!(SUCCESSFUL_REAUTHENTICATION_TOTAL, Unit::Count, "SASL re-authentications that succeeded");
        describe_counter!(FAILED_AUTHENTICATION_TOTAL, Unit::Count, "SASL authentications that failed");
        let id = client_id;
        ConnectionMetrics {
            open: Level::new(CONNECTION_COUNT, id),
            created: Count::new(CONNECTION_CREATION_TOTAL, id),
            closed: Count::new(CONNECTION_CLOSE_TOTAL, id),
            requests: Count::new(REQUEST_TOTAL, id),
            responses: Count::new(RESPONSE_TOTAL, id),
            authentications: Count::new(SUCCESSFUL_AUTHENTICATION_TOTAL, id),
            reauthentications: Count::new(SUCCESSFUL_REAUTHENTICATION_TOTAL, id),
            failed_authentications: Count::new(FAILED_AUTHENTICATION_TOTAL, id),
        }
    }

    /// Pushed in the producer's or consumer's group (Java's selector metrics are in both).
    fn telemetry(&self, group: &str) -> Set {
        use connection::*;
        vec![
            named(group, CONNECTION_COUNT, Value::Level(self.open.clone())),
            named(group, CONNECTION_CREATION_TOTAL, Value::Count(self.created.clone())),
            named(group, CONNECTION_CLOSE_TOTAL, Value::Count(self.closed.clone())),
            named(group, REQUEST_TOTAL, Value::Count(self.requests.clone())),
            named(group, RESPONSE_TOTAL, Value::Count(self.responses.clone())),
            named(group, SUCCESSFUL_AUTHENTICATION_TOTAL, Value::Count(self.authentications.clone())),
            named(group, SUCCESSFUL_REAUTHENTICATION_TOTAL, Value::Count(self.reauthentications.clone())),
            named(group, FAILED_AUTHENTICATION_TOTAL, Value::Count(self.failed_authentications.clone())),
        ]
    }
}

/// Milliseconds of a duration, as a histogram sample.
pub(crate) fn millis(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn telemetry_names_are_javas() {
        assert_eq!(telemetry_name("producer", producer::RECORD_SEND_TOTAL), "org.apache.kafka.producer.record.send.total");
        assert_eq!(telemetry_name("consumer.fetch.manager", consumer::RECORDS_LAG_MAX), "org.apache.kafka.consumer.fetch.manager.records.lag.max");
        assert_eq!(telemetry_name("consumer", connection::CONNECTION_COUNT), "org.apache.kafka.consumer.connection.count");
    }

    #[test]
    fn a_window_holds_the_samples_since_it_was_taken() {
        let s = Samples::noop();
        s.record(3.0);
        s.record(1.0);
        assert_eq!(s.take(), Window { count: 2, sum: 4.0, max: 3.0 });
        assert_eq!(s.take(), Window::default());
        s.record(-2.0);
        assert_eq!(s.take().max, -2.0);
    }
}
