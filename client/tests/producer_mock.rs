//! Producer retries, metadata refreshes and the delivery timeout, against a broker double on
//! kafka-wire's ServerCodec whose Produce answers are scripted.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use kafka_wire::codec::{OutboundResponse, ServerCodec};
use kafka_wire::messages::{
    api_versions_response::ApiVersion,
    metadata_response::{MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic},
    produce_response::{PartitionProduceResponse, TopicProduceResponse},
    *,
};
use kafka_wire::{ApiKey, RequestKind, ResponseKind};
use kafka_wire_client::{Client, ClientConfig, Error, Producer, ProducerConfig, ProducerRecord};
use tokio::net::TcpListener;
use tokio_util::codec::Framed;

#[derive(Default)]
struct Script {
    /// Produce requests to fail before succeeding.
    failures: usize,
    /// The error code they fail with.
    error: i16,
    /// Answer with this base offset (42 unless set).
    base_offset: Option<i64>,
    /// Answer for partition 9 instead of 0.
    wrong_partition: bool,
    produces: AtomicUsize,
    metadata: AtomicUsize,
    sequences: std::sync::Mutex<Vec<(i64, i32)>>,
}

async fn broker(script: Arc<Script>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let local = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let script = script.clone();
            tokio::spawn(async move {
                let mut conn = Framed::new(tcp, ServerCodec::new());
                while let Some(Ok(frame)) = conn.next().await {
                    let body: ResponseKind = match frame.decode_body().unwrap() {
                        RequestKind::ApiVersions(_) => {
                            let apis = [ApiKey::ApiVersions, ApiKey::Metadata, ApiKey::Produce, ApiKey::InitProducerId];
                            let api_keys = apis
                                .iter()
                                .map(|a| ApiVersion { api_key: a.key(), min_version: a.stable_versions().lo, max_version: a.stable_versions().hi, ..Default::default() })
                                .collect();
                            ApiVersionsResponse { api_keys, ..Default::default() }.into()
                        }
                        RequestKind::Metadata(_) => {
                            script.metadata.fetch_add(1, Ordering::SeqCst);
                            MetadataResponse {
                                brokers: vec![MetadataResponseBroker { node_id: 1, host: "127.0.0.1".into(), port: local.port() as i32, ..Default::default() }],
                                controller_id: 1,
                                topics: vec![MetadataResponseTopic {
                                    name: Some("t".into()),
                                    partitions: vec![MetadataResponsePartition { partition_index: 0, leader_id: 1, ..Default::default() }],
                                    ..Default::default()
                                }],
                                ..Default::default()
                            }
                            .into()
                        }
                        RequestKind::InitProducerId(_) => InitProducerIdResponse { producer_id: 7, producer_epoch: 0, ..Default::default() }.into(),
                        RequestKind::Produce(p) => {
                            let n = script.produces.fetch_add(1, Ordering::SeqCst);
                            use kafka_wire::records::{Batch, RecordsField};
                            for b in p.topic_data[0].partition_data[0].records.batches() {
                                if let Ok(Batch::V2(b)) = b {
                                    script.sequences.lock().unwrap().push((b.producer_id(), b.base_sequence()));
                                }
                            }
                            let error_code = if n < script.failures { script.error } else { 0 };
                            ProduceResponse {
                                responses: vec![TopicProduceResponse {
                                    name: "t".into(),
                                    partition_responses: vec![PartitionProduceResponse {
                                        index: if script.wrong_partition { 9 } else { 0 },
                                        error_code,
                                        base_offset: script.base_offset.unwrap_or(42),
                                        log_append_time_ms: -1,
                                        ..Default::default()
                                    }],
                                    ..Default::default()
                                }],
                                ..Default::default()
                            }
                            .into()
                        }
                        _ => return,
                    };
                    if conn.send(OutboundResponse::new(&frame, body).unwrap()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    local.to_string()
}

fn config() -> ProducerConfig {
    ProducerConfig { retry_backoff: Duration::from_millis(20), retry_backoff_max: Duration::from_millis(50), linger: Duration::ZERO, ..Default::default() }
}

#[tokio::test]
async fn retriable_errors_are_retried_with_the_same_sequence_and_fresh_metadata() {
    let script = Arc::new(Script { failures: 3, error: 6, ..Default::default() }); // NOT_LEADER_OR_FOLLOWER
    let addr = broker(script.clone()).await;
    let client = Client::connect(ClientConfig::new(&addr)).await.unwrap();
    let producer = Producer::new(client, config()).unwrap();
    let m = producer.send(ProducerRecord::new("t", "v")).await.unwrap().await.unwrap();
    assert_eq!((m.partition, m.offset), (0, 42));
    assert_eq!(script.produces.load(Ordering::SeqCst), 4);
    assert!(script.metadata.load(Ordering::SeqCst) >= 4, "metadata refreshed after each NOT_LEADER_OR_FOLLOWER");
    assert_eq!(*script.sequences.lock().unwrap(), vec![(7, 0); 4], "every attempt carries producer id 7, sequence 0");
    let m = producer.send(ProducerRecord::new("t", "w")).await.unwrap().await.unwrap();
    assert_eq!(m.offset, 42);
    assert_eq!(script.sequences.lock().unwrap().last(), Some(&(7, 1)), "the next batch has the next sequence");
    producer.close().await.unwrap();
}

#[tokio::test]
async fn records_fail_after_the_delivery_timeout() {
    let script = Arc::new(Script { failures: usize::MAX, error: 6, ..Default::default() });
    let addr = broker(script.clone()).await;
    let client = Client::connect(ClientConfig::new(&addr)).await.unwrap();
    let producer = Producer::new(client, ProducerConfig { delivery_timeout: Duration::from_millis(600), ..config() }).unwrap();
    let start = std::time::Instant::now();
    let err = producer.send(ProducerRecord::new("t", "v")).await.unwrap().await.unwrap_err();
    println!("delivery timeout: {err}");
    assert!(start.elapsed() >= Duration::from_millis(550) && start.elapsed() < Duration::from_secs(5));
    assert!(matches!(&err, Error::Producer(m) if m.contains("delivery timeout") && m.contains("NOT_LEADER_OR_FOLLOWER")), "{err:?}");
    assert!(script.produces.load(Ordering::SeqCst) > 3, "retried until then");
    producer.close().await.unwrap();
}

#[tokio::test]
async fn non_retriable_errors_fail_at_once() {
    let script = Arc::new(Script { failures: 1, error: 10, ..Default::default() }); // MESSAGE_TOO_LARGE
    let addr = broker(script.clone()).await;
    let client = Client::connect(ClientConfig::new(&addr)).await.unwrap();
    let producer = Producer::new(client, config()).unwrap();
    let err = producer.send(ProducerRecord::new("t", "v")).await.unwrap().await.unwrap_err();
    assert_eq!(err.code().and_then(|c| c.name()), Some("MESSAGE_TOO_LARGE"), "{err}");
    assert!(!err.is_retriable());
    assert_eq!(script.produces.load(Ordering::SeqCst), 1);
    producer.close().await.unwrap();
}

#[tokio::test]
async fn odd_produce_responses_are_errors_or_saturate_not_panics() {
    let script = Arc::new(Script { wrong_partition: true, ..Default::default() });
    let addr = broker(script.clone()).await;
    let producer = Producer::new(Client::connect(ClientConfig::new(&addr)).await.unwrap(), config()).unwrap();
    let err = producer.send(ProducerRecord::new("t", "v")).await.unwrap().await.unwrap_err();
    assert!(matches!(&err, Error::UnexpectedResponse(m) if m.contains("t-0")), "{err:?}");
    producer.close().await.unwrap();

    let script = Arc::new(Script { base_offset: Some(i64::MAX), ..Default::default() });
    let addr = broker(script.clone()).await;
    let producer = Producer::new(Client::connect(ClientConfig::new(&addr)).await.unwrap(), ProducerConfig { linger: Duration::from_millis(50), ..config() }).unwrap();
    let (a, b) = (producer.send(ProducerRecord::new("t", "a")).await.unwrap(), producer.send(ProducerRecord::new("t", "b")).await.unwrap());
    assert_eq!((a.await.unwrap().offset, b.await.unwrap().offset), (i64::MAX, i64::MAX));
    producer.close().await.unwrap();
}

#[tokio::test]
async fn metadata_is_refreshed_periodically() {
    let script = Arc::new(Script::default());
    let addr = broker(script.clone()).await;
    let mut config = ClientConfig::new(&addr);
    config.metadata_max_age = Duration::from_millis(200);
    let client = Client::connect(config).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let n = script.metadata.load(Ordering::SeqCst);
    assert!((4..=8).contains(&n), "{n} Metadata requests in 1.1 s at a 200 ms max age");
    drop(client);
    // The refresh task ends with the client.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = script.metadata.load(Ordering::SeqCst);
    assert!(after <= n + 1, "refreshes went on after the client was dropped: {n} -> {after}");
}

#[tokio::test]
async fn a_dropped_producer_delivers_what_it_queued_then_stops() {
    let script = Arc::new(Script::default());
    let addr = broker(script.clone()).await;
    let client = Client::connect(ClientConfig::new(&addr)).await.unwrap();
    let producer = Producer::new(client, ProducerConfig { linger: Duration::from_millis(100), ..config() }).unwrap();
    let d = producer.send(ProducerRecord::new("t", "v")).await.unwrap();
    drop(producer);
    assert_eq!(d.await.unwrap().offset, 42);
}
