//! Failure behaviour against broker doubles: brokers that stop answering, partitions without
//! a leader, leader hints, fatal producer errors.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use kwire::codec::{OutboundResponse, ServerCodec};
use kwire::messages::metadata_response::{MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic};
use kwire::messages::produce_response::{LeaderIdAndEpoch, NodeEndpoint, PartitionProduceResponse, TopicProduceResponse};
use kwire::messages::{InitProducerIdResponse, MetadataRequest, MetadataResponse, ProduceResponse};
use kwire::{ApiKey, ErrorCode, RequestKind, ResponseKind};
use kwire_client::{Client, ClientConfig, Error, Producer, ProducerConfig, ProducerError, ProducerRecord, Resource};
use tokio::net::TcpListener;
use tokio_util::codec::Framed;

/// A broker that answers the first `answered` requests of each connection (ApiVersions and
/// Metadata) and then reads on without ever answering again: a broker that hung, or a peer
/// gone half-open. Counts the connections it accepted and those the client closed.
struct Hung {
    addr: String,
    accepted: Arc<AtomicUsize>,
    closed: Arc<AtomicUsize>,
}

impl Hung {
    async fn start(answered: usize) -> Hung {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (accepted, closed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (a, c) = (accepted.clone(), closed.clone());
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                a.fetch_add(1, Ordering::SeqCst);
                let c = c.clone();
                tokio::spawn(async move {
                    let mut conn = Framed::new(tcp, ServerCodec::new());
                    let mut n = 0;
                    while let Some(Ok(frame)) = conn.next().await {
                        n += 1;
                        if n > answered {
                            continue; // read, never answered
                        }
                        let body: ResponseKind = match frame.decode_body().unwrap() {
                            RequestKind::ApiVersions(_) => common::api_versions(&[ApiKey::ApiVersions, ApiKey::Metadata]).into(),
                            RequestKind::Metadata(_) => common::one_partition_metadata(addr.port()).into(),
                            _ => return,
                        };
                        conn.send(OutboundResponse::new(&frame, body).unwrap()).await.unwrap();
                    }
                    // The client closed its end.
                    c.fetch_add(1, Ordering::SeqCst);
                });
            }
        });
        Hung { addr: addr.to_string(), accepted, closed }
    }
}

#[tokio::test]
async fn a_request_timeout_closes_the_connection_and_fails_every_request_in_flight() {
    common::init_tracing();
    let timeout = Duration::from_millis(500);
    // ApiVersions and the bootstrap Metadata are answered, then the broker hangs.
    let broker = Hung::start(2).await;
    let client = Client::connect(ClientConfig::new(&broker.addr).request_timeout(timeout)).await.unwrap();
    let conn = client.connection(&broker.addr).await.unwrap();
    assert_eq!(broker.accepted.load(Ordering::SeqCst), 1);

    let request = |conn: kwire_client::Connection| async move {
        let start = Instant::now();
        (conn.request(MetadataRequest::default()).await, start.elapsed())
    };
    let first = tokio::spawn(request(conn.clone()));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let second = tokio::spawn(request(conn.clone()));
    let (first, first_took) = first.await.unwrap();
    let (second, second_took) = second.await.unwrap();
    println!("first failed after {first_took:?}: {first:?}; second after {second_took:?}: {second:?}");

    let first = first.unwrap_err();
    assert!(matches!(first, Error::Timeout { api: ApiKey::Metadata, .. }) && first.is_retriable(), "{first:?}");
    assert!(first_took >= timeout - Duration::from_millis(10) && first_took < timeout * 2, "{first_took:?}");
    // The second was in flight on the same connection: it fails with it, before its own
    // timeout would have run out, and may be retried.
    let second = second.unwrap_err();
    assert!(matches!(second, Error::Timeout { api: ApiKey::Metadata, .. }) && second.is_retriable(), "{second:?}");
    assert!(second_took < timeout - Duration::from_millis(100), "{second_took:?}");
    assert!(conn.is_closed(), "the timed-out connection is closed");
    // A request on the closed connection fails at once, retriable.
    let late = conn.request(MetadataRequest::default()).await.unwrap_err();
    assert!(late.is_retriable(), "{late:?}");
    common::eventually("the broker sees the connection closed", || {
        let closed = broker.closed.clone();
        async move { closed.load(Ordering::SeqCst) == 1 }
    })
    .await;

    // The next call connects again, and the new connection answers.
    let replaced = client.connection(&broker.addr).await.unwrap();
    assert!(!replaced.is_closed());
    assert_eq!(broker.accepted.load(Ordering::SeqCst), 2);
    client.send(kwire_client::Route::Any, MetadataRequest::default()).await.unwrap();
}

#[tokio::test]
async fn a_broker_that_accepts_and_never_answers_is_given_up_within_the_request_timeout() {
    let timeout = Duration::from_millis(300);
    let broker = Hung::start(0).await;
    let start = Instant::now();
    let err = Client::connect(ClientConfig::new(&broker.addr).request_timeout(timeout)).await.err().expect("no client");
    let took = start.elapsed();
    println!("half-open broker: {err} after {took:?}");
    assert!(matches!(err, Error::Timeout { api: ApiKey::ApiVersions, .. }) && err.is_retriable(), "{err:?}");
    assert!(took < timeout * 3, "{took:?}");
    common::eventually("the connection to the silent broker is closed", || {
        let closed = broker.closed.clone();
        async move { closed.load(Ordering::SeqCst) == 1 }
    })
    .await;
}

/// Metadata naming brokers `nodes` (node id and port) with topic `t`'s one partition led by
/// `leader` (-1: none, LEADER_NOT_AVAILABLE) at `epoch`.
fn metadata(nodes: &[(i32, u16)], leader: i32, epoch: i32) -> MetadataResponse {
    MetadataResponse {
        brokers: nodes
            .iter()
            .map(|&(id, port)| MetadataResponseBroker { node_id: id, host: "127.0.0.1".into(), port: port.into(), ..Default::default() })
            .collect(),
        controller_id: 1,
        topics: vec![MetadataResponseTopic {
            name: Some("t".into()),
            partitions: vec![MetadataResponsePartition {
                partition_index: 0,
                leader_id: leader,
                leader_epoch: epoch,
                error_code: if leader < 0 { ErrorCode::LEADER_NOT_AVAILABLE.0 } else { 0 },
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// A Produce answer for `t`-0.
fn produce_answer(partition: PartitionProduceResponse, node_endpoints: Vec<NodeEndpoint>) -> ProduceResponse {
    ProduceResponse {
        responses: vec![TopicProduceResponse {
            name: "t".into(),
            partition_responses: vec![PartitionProduceResponse { index: 0, log_append_time_ms: -1, ..partition }],
            ..Default::default()
        }],
        node_endpoints,
        ..Default::default()
    }
}

const PRODUCER_APIS: [ApiKey; 4] = [ApiKey::ApiVersions, ApiKey::Metadata, ApiKey::Produce, ApiKey::InitProducerId];

/// Counts of what a broker double was asked.
#[derive(Default)]
struct Counts {
    metadata: AtomicUsize,
    /// Metadata requests for every topic (no topic list).
    all_topics: AtomicUsize,
    produce: AtomicUsize,
    fetch: AtomicUsize,
    init_producer_id: AtomicUsize,
}

impl Counts {
    fn metadata(&self, request: &MetadataRequest) {
        self.metadata.fetch_add(1, Ordering::SeqCst);
        if request.topics.is_none() {
            self.all_topics.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[tokio::test]
async fn a_partition_without_a_leader_does_not_make_every_send_a_metadata_request() {
    common::init_tracing();
    let counts = Arc::new(Counts::default());
    let started = Instant::now();
    let leaderless_for = Duration::from_millis(1500);
    let c = counts.clone();
    let addr = common::serve(move |port, request| {
        Some(match request {
            RequestKind::ApiVersions(_) => common::api_versions(&PRODUCER_APIS).into(),
            RequestKind::Metadata(r) => {
                c.metadata(&r);
                let leader = if started.elapsed() < leaderless_for { -1 } else { 1 };
                metadata(&[(1, port)], leader, 0).into()
            }
            RequestKind::InitProducerId(_) => InitProducerIdResponse { producer_id: 7, ..Default::default() }.into(),
            RequestKind::Produce(_) => {
                c.produce.fetch_add(1, Ordering::SeqCst);
                produce_answer(PartitionProduceResponse { base_offset: 0, ..Default::default() }, vec![]).into()
            }
            _ => return None,
        })
    })
    .await;
    let client = Client::connect(ClientConfig::new(&addr)).await.unwrap();
    let backoff = client.config().metadata_refresh_backoff;
    let producer = Producer::new(client, ProducerConfig::default()).unwrap();
    let mut deliveries = Vec::new();
    // Records go on being sent while the partition has no leader.
    let sending = Instant::now();
    while sending.elapsed() < Duration::from_millis(1200) {
        for _ in 0..20 {
            deliveries.push(producer.send(ProducerRecord::new("t", "v").partition(0)).await.unwrap());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for d in deliveries.drain(..) {
        d.await.unwrap();
    }
    let elapsed = started.elapsed();
    let (metadata, all_topics) = (counts.metadata.load(Ordering::SeqCst), counts.all_topics.load(Ordering::SeqCst));
    let bound = (elapsed.as_millis() / backoff.as_millis()) as usize + 2;
    println!("{metadata} Metadata requests ({all_topics} for every topic) in {elapsed:?}, bound {bound}; {} Produce", counts.produce.load(Ordering::SeqCst));
    assert!(metadata <= bound, "{metadata} Metadata requests in {elapsed:?} (backoff {backoff:?})");
    // Only the bootstrap asked for every topic; the producer's refreshes ask for its topic.
    assert_eq!(all_topics, 1);
}

#[tokio::test]
async fn a_produce_leader_hint_sends_the_retry_to_the_new_leader_without_a_metadata_request() {
    common::init_tracing();
    let counts = Arc::new(Counts::default());
    // Node 2, the new leader: takes the records.
    let new_leader = {
        let c = counts.clone();
        common::serve(move |_, request| {
            Some(match request {
                RequestKind::ApiVersions(_) => common::api_versions(&PRODUCER_APIS).into(),
                RequestKind::Produce(_) => {
                    c.produce.fetch_add(1, Ordering::SeqCst);
                    produce_answer(PartitionProduceResponse { base_offset: 42, ..Default::default() }, vec![]).into()
                }
                _ => return None,
            })
        })
        .await
    };
    let port2: u16 = new_leader.rsplit_once(':').unwrap().1.parse().unwrap();
    // Node 1, the leader in metadata: refuses, naming node 2 at epoch 6 (a node Metadata has
    // not listed: its endpoint comes with the hint).
    let refused = Arc::new(AtomicUsize::new(0));
    let (c, r) = (counts.clone(), refused.clone());
    let addr = common::serve(move |port, request| {
        Some(match request {
            RequestKind::ApiVersions(_) => common::api_versions(&PRODUCER_APIS).into(),
            RequestKind::Metadata(m) => {
                c.metadata(&m);
                metadata(&[(1, port)], 1, 5).into()
            }
            RequestKind::InitProducerId(_) => InitProducerIdResponse { producer_id: 7, ..Default::default() }.into(),
            RequestKind::Produce(_) => {
                r.fetch_add(1, Ordering::SeqCst);
                let refusal = PartitionProduceResponse {
                    error_code: ErrorCode::NOT_LEADER_OR_FOLLOWER.0,
                    base_offset: -1,
                    current_leader: LeaderIdAndEpoch { leader_id: 2, leader_epoch: 6, ..Default::default() },
                    ..Default::default()
                };
                let endpoint = NodeEndpoint { node_id: 2, host: "127.0.0.1".into(), port: port2.into(), ..Default::default() };
                produce_answer(refusal, vec![endpoint]).into()
            }
            _ => return None,
        })
    })
    .await;
    let client = Client::connect(ClientConfig::new(&addr)).await.unwrap();
    assert_eq!(counts.metadata.load(Ordering::SeqCst), 1, "the bootstrap's");
    let producer = Producer::new(client.clone(), ProducerConfig::default()).unwrap();
    let start = Instant::now();
    let written = producer.send(ProducerRecord::new("t", "v").partition(0)).await.unwrap().await.unwrap();
    println!("written at offset {} after {:?}", written.offset, start.elapsed());
    assert_eq!(written.offset, 42, "by the hinted leader");
    assert_eq!(refused.load(Ordering::SeqCst), 1);
    assert_eq!(counts.produce.load(Ordering::SeqCst), 1);
    assert_eq!(counts.metadata.load(Ordering::SeqCst), 1, "no Metadata request between the refusal and the retry");
    assert_eq!(client.metadata().leader("t", 0), Some(2));
    assert_eq!(client.metadata().brokers.get(&2).map(|b| b.port), Some(i32::from(port2)));
}

/// A broker double for the producer whose InitProducerId and Produce answer these codes;
/// counts the requests.
async fn producer_broker(init_error: ErrorCode, produce_error: ErrorCode, counts: Arc<Counts>) -> String {
    common::serve(move |port, request| {
        Some(match request {
            RequestKind::ApiVersions(_) => common::api_versions(&PRODUCER_APIS).into(),
            RequestKind::Metadata(r) => {
                counts.metadata(&r);
                common::one_partition_metadata(port).into()
            }
            RequestKind::InitProducerId(_) => {
                counts.init_producer_id.fetch_add(1, Ordering::SeqCst);
                InitProducerIdResponse { error_code: init_error.0, producer_id: 7, ..Default::default() }.into()
            }
            RequestKind::Produce(_) => {
                counts.produce.fetch_add(1, Ordering::SeqCst);
                produce_answer(PartitionProduceResponse { error_code: produce_error.0, base_offset: 0, ..Default::default() }, vec![]).into()
            }
            _ => return None,
        })
    })
    .await
}

/// After a fatal error the producer refuses at once, with that error: `send`, `flush`.
async fn assert_fatal(producer: &Producer, is_it: impl Fn(&Error) -> bool) {
    let start = Instant::now();
    for _ in 0..3 {
        let e = producer.send(ProducerRecord::new("t", "later").partition(0)).await.err().expect("send refused after a fatal error");
        assert!(is_it(&e), "{e:?}");
        assert!(!e.is_retriable(), "{e:?}");
        let e = producer.flush().await.expect_err("flush fails after a fatal error");
        assert!(is_it(&e), "{e:?}");
    }
    assert!(start.elapsed() < Duration::from_millis(100), "at once: {:?}", start.elapsed());
}

#[tokio::test]
async fn a_fenced_producer_fails_every_later_send_with_the_same_error() {
    // (INVALID_PRODUCER_EPOCH is not fatal to an idempotent producer, as in Java: it fails the
    // batch and bumps the epoch; tests/doubles/producer.rs.)
    for code in [ErrorCode::PRODUCER_FENCED] {
        let counts = Arc::new(Counts::default());
        let addr = producer_broker(ErrorCode::NONE, code, counts.clone()).await;
        let client = Client::connect(ClientConfig::new(&addr)).await.unwrap();
        let producer = Producer::new(client, ProducerConfig::default()).unwrap();
        let e = producer.send(ProducerRecord::new("t", "v").partition(0)).await.unwrap().await.unwrap_err();
        println!("{}: {e}", code.name().unwrap_or("?"));
        let fenced = move |e: &Error| matches!(e, Error::Producer(ProducerError::Fenced { code: c, .. }) if *c == code);
        assert!(fenced(&e), "{e:?}");
        assert_fatal(&producer, fenced).await;
        assert_eq!(counts.produce.load(Ordering::SeqCst), 1, "nothing sent after the fence");
        producer.close().await.unwrap();
    }
}

#[tokio::test]
async fn init_producer_id_refused_by_cluster_authorization_is_fatal() {
    let counts = Arc::new(Counts::default());
    let addr = producer_broker(ErrorCode::CLUSTER_AUTHORIZATION_FAILED, ErrorCode::NONE, counts.clone()).await;
    let client = Client::connect(ClientConfig::new(&addr)).await.unwrap();
    let producer = Producer::new(client, ProducerConfig::default()).unwrap();
    let e = producer.send(ProducerRecord::new("t", "v").partition(0)).await.unwrap().await.unwrap_err();
    println!("{e}");
    let refused = |e: &Error| matches!(e, Error::Authorization { resource: Resource::Cluster, code: ErrorCode::CLUSTER_AUTHORIZATION_FAILED, .. });
    assert!(refused(&e), "{e:?}");
    assert_fatal(&producer, refused).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(counts.init_producer_id.load(Ordering::SeqCst), 1, "not asked again");
    assert_eq!(counts.produce.load(Ordering::SeqCst), 0);
    producer.close().await.unwrap();
}

#[tokio::test]
async fn a_fetch_leader_hint_moves_the_consumer_to_the_new_leader_without_a_metadata_request() {
    use kwire::messages::fetch_response::{self, PartitionData};
    use kwire::records::{Record, RecordBatchBuilder};
    use kwire_client::{Consumer, ConsumerConfig, TopicPartition};
    common::init_tracing();
    const TOPIC_ID: kwire::Uuid = kwire::Uuid::from_u64_pair(7, 7);
    let apis = [ApiKey::ApiVersions, ApiKey::Metadata, ApiKey::Fetch];
    let counts = Arc::new(Counts::default());
    // Node 2, the new leader at epoch 6: has the records.
    let new_leader = {
        let c = counts.clone();
        common::serve(move |_, request| {
            Some(match request {
                RequestKind::ApiVersions(_) => common::api_versions(&apis).into(),
                RequestKind::Fetch(f) => {
                    c.fetch.fetch_add(1, Ordering::SeqCst);
                    let mut batch = RecordBatchBuilder::new().base_offset(0).partition_leader_epoch(6);
                    for o in 0..3 {
                        batch.append(Record::new(o, 0, None, Some(kwire::Bytes::from(format!("r{o}"))))).unwrap();
                    }
                    let records = Some(batch.build().unwrap());
                    common::fetch_answer(&f, |_| PartitionData { high_watermark: 3, records: records.clone(), ..Default::default() }).into()
                }
                _ => return None,
            })
        })
        .await
    };
    let port2: u16 = new_leader.rsplit_once(':').unwrap().1.parse().unwrap();
    // Node 1, the leader at epoch 5 in metadata: refuses, naming node 2 (with its endpoint).
    let c = counts.clone();
    let addr = common::serve(move |port, request| {
        Some(match request {
            RequestKind::ApiVersions(_) => common::api_versions(&apis).into(),
            RequestKind::Metadata(m) => {
                c.metadata(&m);
                let mut r = metadata(&[(1, port)], 1, 5);
                r.topics[0].topic_id = TOPIC_ID;
                r.into()
            }
            RequestKind::Fetch(f) => {
                let refusal = PartitionData {
                    error_code: ErrorCode::NOT_LEADER_OR_FOLLOWER.0,
                    current_leader: fetch_response::LeaderIdAndEpoch { leader_id: 2, leader_epoch: 6, ..Default::default() },
                    ..Default::default()
                };
                let endpoint = fetch_response::NodeEndpoint { node_id: 2, host: "127.0.0.1".into(), port: port2.into(), ..Default::default() };
                let mut answer = common::fetch_answer(&f, |_| refusal.clone());
                answer.node_endpoints = vec![endpoint];
                answer.into()
            }
            _ => return None,
        })
    })
    .await;
    let client = Client::connect(ClientConfig::new(&addr)).await.unwrap();
    let tp = TopicPartition::new("t", 0);
    let mut consumer = Consumer::new(client, ConsumerConfig { retry_backoff: Duration::from_millis(10), ..Default::default() }).unwrap();
    consumer.assign([tp.clone()]).unwrap();
    consumer.seek(&tp, 0).unwrap();
    let start = Instant::now();
    let mut read = Vec::new();
    while read.len() < 3 && start.elapsed() < Duration::from_secs(5) {
        read.extend(consumer.poll(Duration::from_millis(100)).await.unwrap().iter().map(|r| r.offset));
    }
    println!("read {read:?} in {:?}", start.elapsed());
    assert_eq!(read, [0, 1, 2], "from the hinted leader");
    assert!(counts.fetch.load(Ordering::SeqCst) >= 1);
    assert_eq!(counts.metadata.load(Ordering::SeqCst), 1, "only the bootstrap's Metadata request");
}
