//! kwire-client against kwire-fake: how it asks for topics and versions.
//!
//! Topics are created as Java's clients create them (the fake honours Metadata's
//! `allow_auto_topic_creation` under `auto.create.topics.enable`, as Kafka's brokers do): the
//! producer asks for every topic it sends to with it, the consumer for the topics it
//! subscribes to unless `allow_auto_create_topics` is false, a plain lookup never; a topic that
//! stays unknown fails the send after `max_block`, naming the topic. ApiVersions goes at the
//! version a broker took before, so an older broker costs one refused request per address,
//! not one per connection.

use std::time::Duration;

use kwire::{ApiKey, RequestKind};
use kwire_client::{Client, ClientConfig, Connector, Consumer, ConsumerConfig, Error, OffsetReset, Producer, ProducerConfig, ProducerRecord};
use kwire_fake::{Cluster, ClusterConfig, Release};

async fn client(cluster: &Cluster) -> Client {
    let config = ClientConfig::new(&cluster.bootstrap()).connector(Connector::new(cluster.connector())).seed(1).request_timeout(Duration::from_secs(5));
    Client::connect(config).await.expect("connected")
}

fn producer(client: Client, max_block: Duration) -> Producer {
    Producer::new(client, ProducerConfig { enable_metrics_push: false, max_block, ..Default::default() }).expect("a producer")
}

/// Whether any Metadata request the fake answered asked for topic creation.
fn asked_to_create(cluster: &Cluster) -> bool {
    cluster.journal().iter().any(|e| matches!(&e.request, RequestKind::Metadata(m) if m.allow_auto_topic_creation))
}

#[tokio::test(start_paused = true)]
async fn the_producer_creates_the_topic_it_sends_to() {
    let cluster = Cluster::start(ClusterConfig::default().brokers(3).seed(2).default_partitions(2));
    let producer = producer(client(&cluster).await, Duration::from_secs(60));
    let started = tokio::time::Instant::now();
    let written = producer.send(ProducerRecord::new("new-topic", "hello")).await.expect("sent").await.expect("written");
    assert!(started.elapsed() < Duration::from_secs(2), "created and written at once, not after waiting: {:?}", started.elapsed());
    let log = cluster.records("new-topic", written.partition).expect("the broker created the topic");
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].record.offset, written.offset);
    assert!(asked_to_create(&cluster));
}

#[tokio::test(start_paused = true)]
async fn a_topic_the_broker_will_not_create_fails_the_send_after_max_block_naming_it() {
    let cluster = Cluster::start(ClusterConfig::default().seed(3).auto_create_topics(false));
    let producer = producer(client(&cluster).await, Duration::from_secs(5));
    let started = tokio::time::Instant::now();
    let Err(e) = producer.send(ProducerRecord::new("nowhere", "x")).await else { panic!("sent to a topic that does not exist") };
    let waited = started.elapsed();
    assert!(matches!(e, Error::UnknownTopicOrPartition { .. }), "{e:?}");
    assert!(e.to_string().contains("nowhere") && e.to_string().contains("max_block"), "{e}");
    assert!((Duration::from_secs(5)..Duration::from_secs(7)).contains(&waited), "after max_block: {waited:?}");
    assert!(cluster.records("nowhere", 0).is_err());
}

#[tokio::test(start_paused = true)]
async fn a_lookup_never_creates_a_topic() {
    let cluster = Cluster::start(ClusterConfig::default().seed(4));
    let client = client(&cluster).await;
    assert!(matches!(client.topic("looked-up").await, Err(Error::UnknownTopicOrPartition { .. })));
    assert!(cluster.records("looked-up", 0).is_err());
    assert!(!asked_to_create(&cluster));
}

async fn subscribe_and_poll(cluster: &Cluster, topic: &str, allow: bool) {
    let config = ConsumerConfig {
        allow_auto_create_topics: allow,
        auto_offset_reset: OffsetReset::Earliest,
        enable_metrics_push: false,
        ..ConsumerConfig::group("readers")
    };
    let mut consumer = Consumer::new(client(cluster).await, config).expect("a consumer");
    consumer.subscribe(&[topic]).expect("subscribed");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while tokio::time::Instant::now() < deadline {
        consumer.poll(Duration::from_millis(200)).await.expect("poll");
    }
    consumer.close().await.expect("closed");
}

#[tokio::test(start_paused = true)]
async fn the_consumer_creates_its_subscribed_topics_unless_told_not_to() {
    let cluster = Cluster::start(ClusterConfig::default().brokers(3).seed(5));
    subscribe_and_poll(&cluster, "wanted", true).await;
    assert!(cluster.records("wanted", 0).is_ok(), "allow_auto_create_topics (Java's default) creates it");
    let cluster = Cluster::start(ClusterConfig::default().brokers(3).seed(6));
    subscribe_and_poll(&cluster, "not-wanted", false).await;
    assert!(cluster.records("not-wanted", 0).is_err(), "allow_auto_create_topics false: not created");
    assert!(!asked_to_create(&cluster));
}

#[tokio::test(start_paused = true)]
async fn an_older_broker_is_asked_at_its_api_versions_version_after_the_first_refusal() {
    let cluster = Cluster::start(ClusterConfig::default().seed(8).release(Release::V3_9));
    let config = ClientConfig::new(&cluster.bootstrap()).connector(Connector::new(cluster.connector())).seed(1);
    // (version, refused) of every ApiVersions request the cluster took.
    let asked =
        |cluster: &Cluster| cluster.journal().iter().filter(|e| e.api == ApiKey::ApiVersions).map(|e| (e.version, !e.errors.is_empty())).collect::<Vec<_>>();
    // Kafka 3.9 serves ApiVersions up to v4; this build asks at its newest first.
    let theirs = Release::V3_9.versions(ApiKey::ApiVersions).expect("served").hi;
    let ours = ApiKey::ApiVersions.info().versions(false).hi;
    assert!(theirs < ours, "this build knows a newer ApiVersions than Kafka 3.9");
    let first = Client::connect(config.clone()).await.expect("connected");
    first.refresh_metadata().await.expect("metadata");
    let before = asked(&cluster);
    assert_eq!(before.first(), Some(&(ours, true)), "refused at first: {before:?}");
    assert_eq!(before.get(1), Some(&(theirs, false)), "then taken at the broker's version: {before:?}");
    // A second client made from the same settings shares what the first learnt: no refusal.
    let second = Client::connect(config).await.expect("connected");
    second.refresh_metadata().await.expect("metadata");
    let after = asked(&cluster);
    assert!(after.len() > before.len(), "the second client connected: {after:?}");
    assert!(after[before.len()..].iter().all(|a| *a == (theirs, false)), "{after:?}");
}
