//! Client telemetry (KIP-714) against the real broker: a client-metrics subscription
//! (IncrementalAlterConfigs on a CLIENT_METRICS resource) asks the clients whose id it matches
//! for their producer and consumer metrics every half second; a kwire producer and consumer
//! push them; the broker's receiver (scripts/kafka/TelemetryReceiver.java, decoding with the OTLP
//! classes kafka-clients ships) writes what came. The names are Java's, the values add up to what
//! the clients did, the last push on close is terminating, and a client the subscription does
//! not match pushes nothing.

use crate::common;

use std::time::Duration;

use common::{unique, Broker};
use kwire_client::{
    Admin, Client, ConfigOp, ConfigResource, Consumer, ConsumerConfig, NewTopic, OffsetReset, Producer, ProducerConfig, ProducerRecord, TopicPartition,
};

/// One pushed data point, as the receiver wrote it.
#[derive(Debug, Clone)]
struct Point {
    instance: String,
    terminating: bool,
    name: String,
    kind: String,
    value: f64,
}

fn points(log: &str) -> Vec<Point> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            assert_ne!(f.get(3), Some(&"ERROR"), "the broker could not decode a push: {l}");
            let [instance, terminating, _client_id, name, kind, value] = f.as_slice() else { return None };
            Some(Point {
                instance: instance.to_string(),
                terminating: *terminating == "true",
                name: name.to_string(),
                kind: kind.to_string(),
                value: value.parse().ok()?,
            })
        })
        .collect()
}

/// Waits (at most 20 s) until the log has a point of `instance` for which `check` holds.
async fn pushed(log: &str, instance: &str, what: &str, check: impl Fn(&Point) -> bool) -> Point {
    for _ in 0..200 {
        if let Some(p) = points(log).into_iter().rev().find(|p| p.instance == instance && check(p)) {
            return p;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mine: Vec<Point> = points(log).into_iter().filter(|p| p.instance == instance).collect();
    panic!("{what}: not pushed within 20 s; pushed by {instance}: {mine:?}");
}

/// A counter's value as pushed so far: the sum of the deltas (delta temporality, what brokers
/// ask for by default) or the last cumulative value.
fn counted(log: &str, instance: &str, name: &str) -> Option<f64> {
    let mine: Vec<Point> = points(log).into_iter().filter(|p| p.instance == instance && p.name == name).collect();
    let last = mine.last()?;
    match last.kind.as_str() {
        "sum:1:true" => Some(mine.iter().map(|p| p.value).sum()),
        "sum:2:true" => Some(last.value),
        other => panic!("{name}: a monotonic sum expected, pushed as {other}"),
    }
}

/// Waits (at most 20 s) until the counter `name` of `instance` was pushed as `expected`.
async fn pushed_count(log: &str, instance: &str, name: &str, expected: impl Fn() -> f64) {
    for _ in 0..200 {
        if counted(log, instance, name) == Some(expected()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{name} of {instance}: {:?} pushed, {} expected", counted(log, instance, name), expected());
}

/// The Java form of a Uuid, as the receiver prints it (base64url, no padding).
fn java_uuid(id: kwire::Uuid) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id.as_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producer_and_consumer_metrics_pushed_to_the_broker() {
    let Some(b) = Broker::from_env("producer_and_consumer_metrics_pushed_to_the_broker") else { return };
    common::init_tracing();
    let log = b.var("TELEMETRY_LOG").to_owned();
    let client_id = unique("kwtel");
    let admin = Admin::new(b.client().await);
    let subscription = unique("kwtel-sub");
    admin
        .alter_configs(
            ConfigResource::ClientMetrics,
            &subscription,
            &[
                ("metrics", ConfigOp::Set("org.apache.kafka.producer.,org.apache.kafka.consumer.".into())),
                ("interval.ms", ConfigOp::Set("500".into())),
                ("match", ConfigOp::Set(format!("client_id={client_id}"))),
            ],
        )
        .await
        .unwrap();
    let topic = unique("kwtel");
    admin.create_topic(NewTopic::new(&topic, 2)).await.unwrap();

    let client = Client::connect(b.plaintext().client_id(&client_id)).await.unwrap();
    let producer = Producer::new(client.clone(), ProducerConfig::default()).unwrap();
    let n = 500;
    let mut ds = Vec::new();
    for i in 0..n {
        ds.push(producer.send(ProducerRecord::new(topic.as_str(), format!("v{i}"))).await.unwrap());
    }
    for d in ds {
        d.await.unwrap();
    }
    let id = producer.client_instance_id(Duration::from_secs(10)).await.expect("the broker gave a client instance id");
    let instance = java_uuid(id);
    // Each record sent once, and again per retry; none failed.
    pushed(&log, &instance, "record.retry.total", |p| p.name == "org.apache.kafka.producer.record.retry.total").await;
    let retries = || counted(&log, &instance, "org.apache.kafka.producer.record.retry.total").unwrap_or(0.0);
    pushed_count(&log, &instance, "org.apache.kafka.producer.record.send.total", || n as f64 + retries()).await;
    pushed_count(&log, &instance, "org.apache.kafka.producer.record.error.total", || 0.0).await;
    let total = pushed(&log, &instance, "buffer.total.bytes", |p| p.name == "org.apache.kafka.producer.buffer.total.bytes").await;
    assert_eq!((total.kind.as_str(), total.value), ("gauge", f64::from(32u32 << 20)));
    pushed(&log, &instance, "request.latency.avg", |p| p.name == "org.apache.kafka.producer.request.latency.avg" && p.value > 0.0).await;
    pushed(&log, &instance, "connection.count", |p| p.name == "org.apache.kafka.producer.connection.count" && p.value >= 1.0).await;
    assert!(
        points(&log).iter().filter(|p| p.instance == instance).all(|p| p.name.starts_with("org.apache.kafka.producer.")),
        "only what the subscription asks for"
    );

    // The consumer: its own instance id, its records counted.
    let config = ConsumerConfig { auto_offset_reset: OffsetReset::Earliest, ..Default::default() };
    let mut consumer = Consumer::new(client.clone(), config).unwrap();
    consumer.assign((0..2).map(|p| TopicPartition::new(&topic, p))).unwrap();
    let mut read = 0;
    while read < n {
        read += consumer.poll(Duration::from_millis(500)).await.unwrap().len();
    }
    let consumer_id = java_uuid(consumer.client_instance_id(Duration::from_secs(10)).await.expect("an instance id"));
    assert_ne!(consumer_id, instance, "one instance id per client");
    pushed_count(&log, &consumer_id, "org.apache.kafka.consumer.fetch.manager.records.consumed.total", || n as f64).await;
    pushed(&log, &consumer_id, "fetch.latency.max", |p| p.name == "org.apache.kafka.consumer.fetch.manager.fetch.latency.max" && p.value > 0.0).await;

    // Closing pushes once more, marked terminating.
    producer.close().await.unwrap();
    let last = pushed(&log, &instance, "the terminating push", |p| p.terminating).await;
    assert!(last.name.starts_with("org.apache.kafka.producer."));
    consumer.close().await.unwrap();
    pushed(&log, &consumer_id, "the consumer's terminating push", |p| p.terminating).await;

    // A client the subscription does not match: an instance id, no pushes.
    let other = Client::connect(b.plaintext().client_id(unique("kwtel-other"))).await.unwrap();
    let quiet = Producer::new(other, ProducerConfig::default()).unwrap();
    quiet.send(ProducerRecord::new(topic.as_str(), "x")).await.unwrap().await.unwrap();
    let quiet_id = java_uuid(quiet.client_instance_id(Duration::from_secs(10)).await.expect("an instance id"));
    tokio::time::sleep(Duration::from_secs(2)).await;
    quiet.close().await.unwrap();
    assert!(points(&log).iter().all(|p| p.instance != quiet_id), "an unmatched client pushed telemetry");

    // Switched off: no instance id, nothing asked.
    let off = Producer::new(client, ProducerConfig { enable_metrics_push: false, ..Default::default() }).unwrap();
    assert_eq!(off.client_instance_id(Duration::from_millis(200)).await, None);
    off.close().await.unwrap();
    admin
        .alter_configs(
            ConfigResource::ClientMetrics,
            &subscription,
            &[("metrics", ConfigOp::Delete), ("interval.ms", ConfigOp::Delete), ("match", ConfigOp::Delete)],
        )
        .await
        .ok();
}
