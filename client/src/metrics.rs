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
//! Handles are made once per producer, consumer and connection, so a record costs an atomic
//! add at most; with no recorder installed they do nothing.

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

/// The producer's handles.
#[derive(Clone)]
pub(crate) struct ProducerMetrics {
    pub(crate) record_send: Counter,
    pub(crate) record_error: Counter,
    pub(crate) record_retry: Counter,
    pub(crate) batch_split: Counter,
    pub(crate) requests: Counter,
    pub(crate) batch_size: Histogram,
    pub(crate) compression_rate: Histogram,
    pub(crate) records_per_request: Histogram,
    pub(crate) record_queue_time: Histogram,
    pub(crate) request_latency: Histogram,
    pub(crate) throttle_time: Histogram,
    pub(crate) buffer_available: Gauge,
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
        let id = client_id.to_owned();
        gauge!(BUFFER_TOTAL_BYTES, CLIENT_ID => id.clone()).set(buffer_memory as f64);
        ProducerMetrics {
            record_send: counter!(RECORD_SEND_TOTAL, CLIENT_ID => id.clone()),
            record_error: counter!(RECORD_ERROR_TOTAL, CLIENT_ID => id.clone()),
            record_retry: counter!(RECORD_RETRY_TOTAL, CLIENT_ID => id.clone()),
            batch_split: counter!(BATCH_SPLIT_TOTAL, CLIENT_ID => id.clone()),
            requests: counter!(REQUEST_TOTAL, CLIENT_ID => id.clone()),
            batch_size: histogram!(BATCH_SIZE, CLIENT_ID => id.clone()),
            compression_rate: histogram!(COMPRESSION_RATE, CLIENT_ID => id.clone()),
            records_per_request: histogram!(RECORDS_PER_REQUEST, CLIENT_ID => id.clone()),
            record_queue_time: histogram!(RECORD_QUEUE_TIME, CLIENT_ID => id.clone()),
            request_latency: histogram!(REQUEST_LATENCY, CLIENT_ID => id.clone()),
            throttle_time: histogram!(PRODUCE_THROTTLE_TIME, CLIENT_ID => id.clone()),
            buffer_available: gauge!(BUFFER_AVAILABLE_BYTES, CLIENT_ID => id),
        }
    }
}

/// The consumer's handles.
#[derive(Clone)]
pub(crate) struct ConsumerMetrics {
    pub(crate) records_consumed: Counter,
    pub(crate) bytes_consumed: Counter,
    pub(crate) fetches: Counter,
    pub(crate) fetch_latency: Histogram,
    pub(crate) fetch_size: Histogram,
    pub(crate) records_per_request: Histogram,
    pub(crate) throttle_time: Histogram,
    pub(crate) records_lag_max: Gauge,
    pub(crate) commits: Counter,
    pub(crate) commit_latency: Histogram,
    pub(crate) rebalances: Counter,
    pub(crate) assigned_partitions: Gauge,
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
        let id = client_id.to_owned();
        ConsumerMetrics {
            records_consumed: counter!(RECORDS_CONSUMED_TOTAL, CLIENT_ID => id.clone()),
            bytes_consumed: counter!(BYTES_CONSUMED_TOTAL, CLIENT_ID => id.clone()),
            fetches: counter!(FETCH_TOTAL, CLIENT_ID => id.clone()),
            fetch_latency: histogram!(FETCH_LATENCY, CLIENT_ID => id.clone()),
            fetch_size: histogram!(FETCH_SIZE, CLIENT_ID => id.clone()),
            records_per_request: histogram!(RECORDS_PER_REQUEST, CLIENT_ID => id.clone()),
            throttle_time: histogram!(FETCH_THROTTLE_TIME, CLIENT_ID => id.clone()),
            records_lag_max: gauge!(RECORDS_LAG_MAX, CLIENT_ID => id.clone()),
            commits: counter!(COMMIT_TOTAL, CLIENT_ID => id.clone()),
            commit_latency: histogram!(COMMIT_LATENCY, CLIENT_ID => id.clone()),
            rebalances: counter!(REBALANCE_TOTAL, CLIENT_ID => id.clone()),
            assigned_partitions: gauge!(ASSIGNED_PARTITIONS, CLIENT_ID => id),
        }
    }
}

impl Default for ConsumerMetrics {
    /// Handles that record nothing (until the consumer makes its own).
    fn default() -> Self {
        ConsumerMetrics {
            records_consumed: Counter::noop(),
            bytes_consumed: Counter::noop(),
            fetches: Counter::noop(),
            fetch_latency: Histogram::noop(),
            fetch_size: Histogram::noop(),
            records_per_request: Histogram::noop(),
            throttle_time: Histogram::noop(),
            records_lag_max: Gauge::noop(),
            commits: Counter::noop(),
            commit_latency: Histogram::noop(),
            rebalances: Counter::noop(),
            assigned_partitions: Gauge::noop(),
        }
    }
}

/// A connection's handles.
pub(crate) struct ConnectionMetrics {
    pub(crate) open: Gauge,
    pub(crate) created: Counter,
    pub(crate) closed: Counter,
    pub(crate) requests: Counter,
    pub(crate) responses: Counter,
    pub(crate) authentications: Counter,
    pub(crate) reauthentications: Counter,
    pub(crate) failed_authentications: Counter,
}

impl ConnectionMetrics {
    pub(crate) fn new(client_id: &str) -> ConnectionMetrics {
        use connection::*;
        describe_gauge!(CONNECTION_COUNT, Unit::Count, "Open connections to brokers");
        describe_counter!(CONNECTION_CREATION_TOTAL, Unit::Count, "Connections established");
        describe_counter!(CONNECTION_CLOSE_TOTAL, Unit::Count, "Connections closed");
        describe_counter!(REQUEST_TOTAL, Unit::Count, "Requests sent");
        describe_counter!(RESPONSE_TOTAL, Unit::Count, "Responses received");
        describe_counter!(SUCCESSFUL_AUTHENTICATION_TOTAL, Unit::Count, "SASL authentications that succeeded");
        describe_counter!(SUCCESSFUL_REAUTHENTICATION_TOTAL, Unit::Count, "SASL re-authentications that succeeded");
        describe_counter!(FAILED_AUTHENTICATION_TOTAL, Unit::Count, "SASL authentications that failed");
        let id = client_id.to_owned();
        ConnectionMetrics {
            open: gauge!(CONNECTION_COUNT, CLIENT_ID => id.clone()),
            created: counter!(CONNECTION_CREATION_TOTAL, CLIENT_ID => id.clone()),
            closed: counter!(CONNECTION_CLOSE_TOTAL, CLIENT_ID => id.clone()),
            requests: counter!(REQUEST_TOTAL, CLIENT_ID => id.clone()),
            responses: counter!(RESPONSE_TOTAL, CLIENT_ID => id.clone()),
            authentications: counter!(SUCCESSFUL_AUTHENTICATION_TOTAL, CLIENT_ID => id.clone()),
            reauthentications: counter!(SUCCESSFUL_REAUTHENTICATION_TOTAL, CLIENT_ID => id.clone()),
            failed_authentications: counter!(FAILED_AUTHENTICATION_TOTAL, CLIENT_ID => id),
        }
    }
}

/// Milliseconds of a duration, as a histogram sample.
pub(crate) fn millis(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
