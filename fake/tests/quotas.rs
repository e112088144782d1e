//! Client quotas enforced as Kafka's brokers enforce them: a produce or fetch byte rate over its
//! quota answers with the throttle time Kafka's `ClientQuotaManager` computes, and the broker
//! reads nothing more from the connection until it is over; a test's own throttles. A bare
//! codec client over the in-memory transport, on tokio's paused clock, reads the responses.

#[path = "support/bare.rs"]
mod bare;

use std::time::Duration;

use bare::Bare;
use kwire::messages::fetch_request::{FetchPartition, FetchTopic};
use kwire::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kwire::messages::{CreateTopicsRequest, FetchRequest, MetadataRequest, ProduceRequest};
use kwire::runtime::records::{Record, RecordBatchBuilder};
use kwire::{ApiKey, Bytes, ErrorCode, RequestKind, ResponseKind};
use kwire_fake::{Cluster, ClusterConfig};
use tokio::time::Instant;

fn cluster() -> Cluster {
    let cluster = Cluster::start(ClusterConfig::default().seed(1).clock_start_ms(1_700_000_000_000));
    cluster.create_topic("q", 1, 1).unwrap();
    cluster
}

async fn client(cluster: &Cluster, client_id: &str) -> Bare {
    Bare::new(cluster.connect("broker-0:9092").await.unwrap(), client_id)
}

fn produce(value_len: usize) -> RequestKind {
    let mut batch = RecordBatchBuilder::new();
    batch.append(Record::new(0, 1_700_000_000_000, None, Some(Bytes::from(vec![b'x'; value_len])))).unwrap();
    let records = batch.build().unwrap();
    ProduceRequest {
        acks: 1,
        timeout_ms: 5000,
        topic_data: vec![TopicProduceData {
            name: "q".into(),
            partition_data: vec![PartitionProduceData { index: 0, records: Some(records), ..Default::default() }],
            ..Default::default()
        }],
        ..Default::default()
    }
    .into()
}

async fn throttle_of_produce(bare: &mut Bare, version: i16, value_len: usize) -> i32 {
    match bare.call(ApiKey::Produce, version, produce(value_len)).await {
        Some(ResponseKind::Produce(r)) => {
            assert_eq!(r.responses[0].partition_responses[0].error_code, 0, "written all the same");
            r.throttle_time_ms
        }
        other => panic!("{other:?}"),
    }
}

fn metadata() -> RequestKind {
    MetadataRequest { topics: Some(vec![]), ..Default::default() }.into()
}

#[tokio::test(start_paused = true)]
async fn a_produce_over_its_byte_rate_is_throttled_as_kafka_computes_it() {
    let cluster = cluster();
    cluster.set_quota(&[("client-id", Some("greedy"))], "producer_byte_rate", Some(100.0)).unwrap();
    let mut greedy = client(&cluster, "greedy").await;
    let throttle = throttle_of_produce(&mut greedy, 9, 2000).await;
    // One request of S bytes in a fresh sensor: a rate of S / 10 s (the window is at least ten
    // one-second samples), so the throttle is (S / 10 - 100) / 100 * 10 s.
    let size = greedy.last_request_size as i64;
    assert!(size > 2000);
    assert_eq!(i64::from(throttle), (size - 1000) * 10, "request of {size} bytes");
    assert_eq!(cluster.records("q", 0).unwrap().len(), 1, "a throttled produce is written");

    // Produce v9 is past KIP-219: the answer came at once and the broker now holds the
    // connection for the throttle time before it reads the next request.
    let start = Instant::now();
    assert!(matches!(greedy.call(ApiKey::Metadata, 12, metadata()).await, Some(ResponseKind::Metadata(_))));
    let waited = start.elapsed();
    assert!(waited >= Duration::from_millis(throttle as u64) && waited < Duration::from_millis(throttle as u64 + 5), "{waited:?} for {throttle} ms");

    // The quota is the client id's: another client is not throttled, and a small request from the
    // greedy client later, with the burst out of the window, is not either.
    let mut other = client(&cluster, "other").await;
    assert_eq!(throttle_of_produce(&mut other, 9, 2000).await, 0);
    tokio::time::sleep(Duration::from_secs(12)).await;
    assert_eq!(throttle_of_produce(&mut greedy, 9, 10).await, 0);
}

#[tokio::test(start_paused = true)]
async fn before_kip_219_the_broker_delays_the_response_instead() {
    let cluster = cluster();
    cluster.set_quota(&[("client-id", None)], "producer_byte_rate", Some(100.0)).unwrap();
    let mut old = client(&cluster, "old").await;
    let start = Instant::now();
    let throttle = throttle_of_produce(&mut old, 5, 2000).await;
    assert!(throttle > 0);
    let waited = start.elapsed();
    assert!(waited >= Duration::from_millis(throttle as u64), "the v5 answer came after {waited:?}, the throttle {throttle} ms");
}

#[tokio::test(start_paused = true)]
async fn a_fetch_over_its_quota_is_answered_empty_and_the_next_one_moves_on() {
    let cluster = cluster();
    let mut producer = client(&cluster, "producer").await;
    for _ in 0..5 {
        assert_eq!(throttle_of_produce(&mut producer, 9, 1000).await, 0);
    }
    // 200 B/s: at most 2,000 bytes in a window, about two of the five batches.
    cluster.set_quota(&[("user", Some("ANONYMOUS")), ("client-id", Some("consumer"))], "consumer_byte_rate", Some(200.0)).unwrap();
    let mut consumer = client(&cluster, "consumer").await;
    let fetch = |offset: i64| -> RequestKind {
        FetchRequest {
            replica_id: -1,
            max_wait_ms: 0,
            max_bytes: 50 << 20,
            session_epoch: -1,
            topics: vec![FetchTopic {
                topic: "q".into(),
                partitions: vec![FetchPartition { partition: 0, fetch_offset: offset, partition_max_bytes: 1 << 20, ..Default::default() }],
                ..Default::default()
            }],
            ..Default::default()
        }
        .into()
    };
    // The quota caps a fetch at 2,000 bytes (its bytes over a full window): a batch or two per
    // answer; answers over the rate come empty, with the throttle time, until the window moves.
    let mut offset = 0;
    let mut throttled = 0;
    let mut answers = 0;
    while offset < 5 && answers < 500 {
        answers += 1;
        let Some(ResponseKind::Fetch(r)) = consumer.call(ApiKey::Fetch, 11, fetch(offset)).await else { panic!("no fetch answer") };
        if r.throttle_time_ms > 0 {
            throttled += 1;
            // Kafka's throttled answer: no partitions at all.
            assert!(r.responses.is_empty(), "{r:?}");
            continue;
        }
        let records = r.responses[0].partitions[0].records.clone().unwrap_or_default();
        let read = kwire::runtime::records::Batches::new(records).flatten().count() as i64;
        assert!(read <= 2, "the quota's window caps the answer: {read} batches");
        offset += read;
    }
    assert_eq!(offset, 5, "every record read in the end");
    assert!(throttled >= 1, "the quota throttled some fetches");
}

#[tokio::test(start_paused = true)]
async fn a_test_throttles_a_client_or_a_broker() {
    let cluster = Cluster::start(ClusterConfig::default().brokers(2).seed(1));
    cluster.throttle_client("slowed", Duration::from_millis(1500));
    let mut slowed = Bare::new(cluster.connect("broker-0:9092").await.unwrap(), "slowed");
    let Some(ResponseKind::Metadata(m)) = slowed.call(ApiKey::Metadata, 12, metadata()).await else { panic!() };
    assert_eq!(m.throttle_time_ms, 1500);
    let start = Instant::now();
    slowed.call(ApiKey::Metadata, 12, metadata()).await.unwrap();
    assert!(start.elapsed() >= Duration::from_millis(1500), "muted for the throttle");

    cluster.throttle_broker(1, Duration::from_millis(700)).unwrap();
    let mut on_1 = Bare::new(cluster.connect("broker-1:9092").await.unwrap(), "anyone");
    let mut on_0 = Bare::new(cluster.connect("broker-0:9092").await.unwrap(), "anyone");
    let Some(ResponseKind::Metadata(m1)) = on_1.call(ApiKey::Metadata, 12, metadata()).await else { panic!() };
    let Some(ResponseKind::Metadata(m0)) = on_0.call(ApiKey::Metadata, 12, metadata()).await else { panic!() };
    assert_eq!((m1.throttle_time_ms, m0.throttle_time_ms), (700, 0));
    cluster.clear_throttles();
    let Some(ResponseKind::Metadata(m)) = slowed.call(ApiKey::Metadata, 12, metadata()).await else { panic!() };
    assert_eq!(m.throttle_time_ms, 0);
    assert!(cluster.throttle_broker(9, Duration::from_secs(1)).is_err());
}

/// kwire-client's producer under a produce quota: every record written, the throttle times in
/// the journal (`Entry::throttle_ms`), and time spent on them (the broker mutes the connection,
/// the client backs off; the paused clock moves by at least half their sum).
#[tokio::test(start_paused = true)]
async fn kwire_clients_producer_is_throttled_and_goes_on() {
    let cluster = cluster();
    cluster.set_quota(&[("client-id", None)], "producer_byte_rate", Some(1000.0)).unwrap();
    let config =
        kwire_client::ClientConfig::new(&cluster.bootstrap()).connector(kwire_client::Connector::new(cluster.connector())).client_id("quota-producer").seed(1);
    let client = kwire_client::Client::connect(config).await.unwrap();
    let producer = kwire_client::Producer::new(
        client,
        kwire_client::ProducerConfig { linger: Duration::from_millis(1), enable_metrics_push: false, ..Default::default() },
    )
    .unwrap();
    let start = Instant::now();
    for i in 0..40 {
        producer.send(kwire_client::ProducerRecord::new("q", vec![b'x'; 1000]).partition(0)).await.unwrap().await.unwrap_or_else(|e| panic!("record {i}: {e}"));
    }
    assert_eq!(cluster.records("q", 0).unwrap().len(), 40);
    let throttles: Vec<i32> = cluster.journal().iter().filter(|e| e.api == ApiKey::Produce).map(|e| e.throttle_ms).collect();
    let total: i64 = throttles.iter().map(|t| i64::from(*t)).sum();
    assert!(total > 0, "{throttles:?}");
    assert!(start.elapsed() >= Duration::from_millis(total as u64 / 2), "the client waited: {:?} for {total} ms of throttles", start.elapsed());
}

fn create_topics(topics: &[(&str, i32)]) -> RequestKind {
    use kwire::messages::create_topics_request::CreatableTopic;
    let topics = topics.iter().map(|(name, partitions)| CreatableTopic {
        name: (*name).into(),
        num_partitions: *partitions,
        replication_factor: 1,
        ..Default::default()
    });
    CreateTopicsRequest { topics: topics.collect(), timeout_ms: 5000, ..Default::default() }.into()
}

/// (error code per topic, throttle time) of a CreateTopics.
async fn created(bare: &mut Bare, version: i16, topics: &[(&str, i32)]) -> (Vec<ErrorCode>, i32) {
    match bare.call(ApiKey::CreateTopics, version, create_topics(topics)).await {
        Some(ResponseKind::CreateTopics(r)) => (r.topics.iter().map(|t| ErrorCode(t.error_code)).collect(), r.throttle_time_ms),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn partition_mutations_draw_on_a_token_bucket_as_kip_599_says() {
    let cluster = cluster();
    // One partition a second: a burst of 11 (11 samples of 1 s), refilled at 1 a second.
    cluster.set_quota(&[("client-id", Some("admin"))], "controller_mutation_rate", Some(1.0)).unwrap();
    let mut admin = client(&cluster, "admin").await;
    // v6+ is strict: a topic goes while the bucket is not below zero, even one that takes it
    // there (11 - 10 = 1, then 1 - 5 = -4); the next is refused, and the throttle is the time the
    // bucket takes to climb back to zero (4 s).
    let (codes, throttle) = created(&mut admin, 7, &[("m-a", 10), ("m-b", 5), ("m-c", 1)]).await;
    assert_eq!(codes, [ErrorCode::NONE, ErrorCode::NONE, ErrorCode::THROTTLING_QUOTA_EXCEEDED]);
    assert_eq!(throttle, 4000);
    assert!(cluster.records("m-b", 4).is_ok() && cluster.records("m-c", 0).is_err());

    // The connection was muted for the throttle: by the next request the bucket is back at zero,
    // which is not below it, so m-c goes now, and takes it to -1.
    let (codes, throttle) = created(&mut admin, 7, &[("m-c", 1)]).await;
    assert_eq!((codes, throttle), (vec![ErrorCode::NONE], 0));

    // Before v6 the quota is permissive: every topic goes, and the response is throttled.
    let (codes, throttle) = created(&mut admin, 5, &[("m-d", 2)]).await;
    assert_eq!((codes, throttle), (vec![ErrorCode::NONE], 3000));

    // Another client id has no quota.
    let mut other = client(&cluster, "other").await;
    assert_eq!(created(&mut other, 7, &[("m-e", 50)]).await, (vec![ErrorCode::NONE], 0));
}

#[tokio::test(start_paused = true)]
async fn request_time_over_its_percentage_is_throttled() {
    let cluster = cluster();
    // A share of a thread no request can stay under: any handler time is over it.
    cluster.set_quota(&[("client-id", Some("busy"))], "request_percentage", Some(1e-9)).unwrap();
    let mut busy = client(&cluster, "busy").await;
    let Some(ResponseKind::Metadata(m)) = busy.call(ApiKey::Metadata, 12, metadata()).await else { panic!("no metadata") };
    assert!(m.throttle_time_ms > 0, "{}", m.throttle_time_ms);
    let journaled = cluster.journal().iter().filter(|e| e.api == ApiKey::Metadata).map(|e| e.throttle_ms).collect::<Vec<_>>();
    assert_eq!(journaled, [m.throttle_time_ms]);
    let mut other = client(&cluster, "other").await;
    let Some(ResponseKind::Metadata(m)) = other.call(ApiKey::Metadata, 12, metadata()).await else { panic!("no metadata") };
    assert_eq!(m.throttle_time_ms, 0, "another client id has no quota");
}
