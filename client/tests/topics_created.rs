//! Topics created as Java's clients create them, against kwire-fake (which honours Metadata's
//! `allow_auto_topic_creation` under `auto.create.topics.enable`, as Kafka's brokers do): the
//! producer asks for every topic it sends to with it, the consumer for the topics it
//! subscribes to unless `allow_auto_create_topics` is false, a plain lookup never; a topic that
//! stays unknown fails the send after `max_block`, naming the topic.

use std::time::Duration;

use kwire::RequestKind;
use kwire_client::{Client, ClientConfig, Connector, Consumer, ConsumerConfig, Error, OffsetReset, Producer, ProducerConfig, ProducerRecord};
use kwire_fake::{Cluster, ClusterConfig};

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
    assert!(matches!(e, Error::UnknownTopicOrPartition(_)), "{e:?}");
    assert!(e.to_string().contains("nowhere") && e.to_string().contains("max_block"), "{e}");
    assert!((Duration::from_secs(5)..Duration::from_secs(7)).contains(&waited), "after max_block: {waited:?}");
    assert!(cluster.records("nowhere", 0).is_err());
}

#[tokio::test(start_paused = true)]
async fn a_lookup_never_creates_a_topic() {
    let cluster = Cluster::start(ClusterConfig::default().seed(4));
    let client = client(&cluster).await;
    assert!(matches!(client.topic("looked-up").await, Err(Error::UnknownTopicOrPartition(_))));
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
