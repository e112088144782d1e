//! Truncation detection after a leader change, against a broker double on kwire's
//! ServerCodec: the consumer reads offsets 0-9 in leader epoch 5; the leader changes (epoch 6)
//! and the new leader's log ends at 7 for epoch 5 (7-9 were never replicated). The consumer's
//! next fetch is fenced, it refreshes metadata, asks the new leader with OffsetForLeaderEpoch,
//! moves its position back to 7 and reads the new leader's 7 and 8; under reset policy none it
//! fails with `Error::LogTruncation` instead. A fetch answered with a diverging epoch (Fetch v12+)
//! moves the position back the same way, without OffsetForLeaderEpoch.
//!
//! Fetching from a preferred read replica (KIP-392) against two doubles, a leader that names
//! its follower and the follower: every Fetch carries the consumer's rack; the follower serves
//! until it refuses a fetch (NOT_LEADER_OR_FOLLOWER, or OFFSET_OUT_OF_RANGE, which from a
//! replica is no reason to reset), then the leader does, every record once; the choice expires
//! after the metadata max age and the leader is asked again.
//!
//! Fetches to several brokers, against two doubles that each lead one partition, one slow: the
//! slow broker holds back only its own partition, and the next Fetch to a broker goes out
//! before `poll` returns the last one's records.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kwire::messages::{
    api_versions_response::ApiVersion,
    fetch_response::{FetchableTopicResponse, PartitionData},
    metadata_response::{MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic},
    offset_for_leader_epoch_response::{EpochEndOffset, OffsetForLeaderTopicResult},
    *,
};
use kwire::records::{Record, RecordBatchBuilder};
use kwire::{ApiKey, Bytes, RequestKind, ResponseKind, VersionRange};
use kwire_client::{Client, ClientConfig, Consumer, ConsumerConfig, Error, OffsetReset, TopicPartition};

#[derive(Default)]
struct Log {
    /// Answer the fetch past the truncation with a diverging epoch (Fetch v12+), as a real new
    /// leader does when the fetch carries the last fetched epoch, instead of fencing it.
    diverging: bool,
    fetches: AtomicUsize,
    /// (current leader epoch, epoch asked about) of each OffsetForLeaderEpoch.
    epoch_queries: std::sync::Mutex<Vec<(i32, i32)>>,
    /// Fetch offsets and the current leader epochs sent with them.
    fetch_offsets: std::sync::Mutex<Vec<(i64, i32)>>,
}

fn batch(base: i64, n: i64, epoch: i32, tag: &str) -> Bytes {
    let mut b = RecordBatchBuilder::new().base_offset(base).partition_leader_epoch(epoch);
    for o in base..base + n {
        b.append(Record::new(o, 0, None, Some(Bytes::from(format!("{tag}-{o}"))))).unwrap();
    }
    b.build().unwrap()
}

/// The double: leader epoch 5 until the first fetch has been answered, then 6.
async fn broker(log: Arc<Log>) -> String {
    common::serve(move |port, request| {
        let epoch = if log.fetches.load(Ordering::SeqCst) == 0 { 5 } else { 6 };
        let body: ResponseKind = match request {
            RequestKind::ApiVersions(_) => {
                let apis = [ApiKey::ApiVersions, ApiKey::Metadata, ApiKey::Fetch, ApiKey::OffsetForLeaderEpoch];
                let api_keys = apis
                    .iter()
                    .map(|a| {
                        // Fetch v12: topic names and the last fetched epoch.
                        let v = if *a == ApiKey::Fetch { VersionRange::new(4, 12) } else { a.stable_versions() };
                        ApiVersion { api_key: a.key(), min_version: v.lo, max_version: v.hi, ..Default::default() }
                    })
                    .collect();
                ApiVersionsResponse { api_keys, ..Default::default() }.into()
            }
            RequestKind::Metadata(_) => MetadataResponse {
                brokers: vec![MetadataResponseBroker { node_id: 1, host: "127.0.0.1".into(), port: port as i32, ..Default::default() }],
                controller_id: 1,
                topics: vec![MetadataResponseTopic {
                    name: Some("t".into()),
                    partitions: vec![MetadataResponsePartition { partition_index: 0, leader_id: 1, leader_epoch: epoch, ..Default::default() }],
                    ..Default::default()
                }],
                ..Default::default()
            }
            .into(),
            RequestKind::Fetch(f) => {
                let p = &f.topics[0].partitions[0];
                log.fetch_offsets.lock().unwrap().push((p.fetch_offset, p.current_leader_epoch));
                let n = log.fetches.fetch_add(1, Ordering::SeqCst);
                let mut diverging_epoch = kwire::messages::fetch_response::EpochEndOffset { epoch: -1, end_offset: -1, ..Default::default() };
                let (error_code, records) = match (n, p.fetch_offset) {
                    (0, 0) => (0, Some(batch(0, 10, 5, "old"))),
                    (_, 10) if log.diverging && p.last_fetched_epoch == 5 => {
                        diverging_epoch.epoch = 5;
                        diverging_epoch.end_offset = 7;
                        (0, None)
                    }
                    // The old leader's epoch is fenced at the new leader.
                    (_, _) if p.current_leader_epoch < 6 => (74, None),
                    (_, 7) => (0, Some(batch(7, 2, 6, "new"))),
                    // Anything else (offset 10: truncation not noticed) is empty.
                    _ => (0, None),
                };
                FetchResponse {
                    responses: vec![FetchableTopicResponse {
                        topic: "t".into(),
                        partitions: vec![PartitionData { partition_index: 0, error_code, high_watermark: 9, records, diverging_epoch, ..Default::default() }],
                        ..Default::default()
                    }],
                    ..Default::default()
                }
                .into()
            }
            RequestKind::OffsetForLeaderEpoch(r) => {
                let p = &r.topics[0].partitions[0];
                log.epoch_queries.lock().unwrap().push((p.current_leader_epoch, p.leader_epoch));
                OffsetForLeaderEpochResponse {
                    topics: vec![OffsetForLeaderTopicResult {
                        topic: "t".into(),
                        partitions: vec![EpochEndOffset { partition: 0, leader_epoch: 5, end_offset: 7, ..Default::default() }],
                        ..Default::default()
                    }],
                    ..Default::default()
                }
                .into()
            }
            _ => return None,
        };
        Some(body)
    })
    .await
}

async fn consumer(reset: OffsetReset) -> (Consumer, Arc<Log>) {
    consumer_of(reset, Log::default()).await
}

async fn consumer_of(reset: OffsetReset, log: Log) -> (Consumer, Arc<Log>) {
    let log = Arc::new(log);
    let addr = broker(log.clone()).await;
    let client = Client::connect(ClientConfig::new(&addr)).await.unwrap();
    let config = ConsumerConfig { auto_offset_reset: reset, retry_backoff: Duration::from_millis(10), ..Default::default() };
    let mut c = Consumer::new(client, config).unwrap();
    let tp = TopicPartition::new("t", 0);
    c.assign([tp.clone()]).unwrap();
    c.seek(&tp, 0).unwrap();
    (c, log)
}

#[tokio::test]
async fn a_log_truncated_under_a_new_leader_moves_the_position_back() {
    let (mut c, log) = consumer(OffsetReset::Earliest).await;
    let mut values = Vec::new();
    for _ in 0..20 {
        for r in c.poll(Duration::from_millis(100)).await.unwrap() {
            values.push((r.offset, String::from_utf8(r.value.unwrap().to_vec()).unwrap(), r.leader_epoch));
        }
        if values.len() >= 12 {
            break;
        }
    }
    let offsets: Vec<i64> = values.iter().map(|v| v.0).collect();
    assert_eq!(offsets, vec![0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 7, 8], "{values:?}");
    assert_eq!(values[10], (7, "new-7".to_owned(), Some(6)));
    assert_eq!(*log.epoch_queries.lock().unwrap(), vec![(6, 5)], "asked the new leader (epoch 6) where epoch 5 ends");
    let fetches = log.fetch_offsets.lock().unwrap().clone();
    assert_eq!(fetches.first(), Some(&(0, 5)));
    assert!(fetches.contains(&(10, 5)), "the fenced fetch: {fetches:?}");
    assert!(fetches.contains(&(7, 6)), "then from the end of epoch 5 under epoch 6: {fetches:?}");
    let stats = c.stats();
    assert_eq!((stats.truncations, stats.validations), (1, 1), "{stats:?}");
    assert_eq!(c.position(&TopicPartition::new("t", 0)).await.unwrap(), 9);
}

#[tokio::test]
async fn with_reset_policy_none_a_truncation_is_an_error() {
    let (mut c, _log) = consumer(OffsetReset::None).await;
    let first = c.poll(Duration::from_secs(1)).await.unwrap();
    assert_eq!(first.len(), 10);
    let mut result = Ok(Vec::new());
    for _ in 0..10 {
        result = c.poll(Duration::from_millis(100)).await;
        if result.is_err() {
            break;
        }
    }
    match result {
        Err(Error::LogTruncation { partition, position: 10, end_offset: 7 }) => assert_eq!(partition, "t-0"),
        other => panic!("expected LogTruncation, got {other:?}"),
    }
}

#[tokio::test]
async fn a_diverging_epoch_in_a_fetch_moves_the_position_back() {
    let (mut c, log) = consumer_of(OffsetReset::Earliest, Log { diverging: true, ..Default::default() }).await;
    let mut offsets = Vec::new();
    for _ in 0..20 {
        offsets.extend(c.poll(Duration::from_millis(100)).await.unwrap().iter().map(|r| r.offset));
        if offsets.len() >= 12 {
            break;
        }
    }
    assert_eq!(offsets, vec![0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 7, 8]);
    assert_eq!(c.stats().truncations, 1);
    // Found by the fetch itself: the very next fetch is from 7 (the double then fences that
    // epoch-5 fetch, and the position is validated under epoch 6 as after any leader change).
    let fetches = log.fetch_offsets.lock().unwrap().clone();
    assert_eq!(fetches.get(..3), Some(&[(0, 5), (10, 5), (7, 5)][..]), "{fetches:?}");
}

/// How the preferred read replica double answers (KIP-392).
#[derive(Clone, Copy, PartialEq, Debug)]
enum ReplicaEnd {
    /// From offset 10 on, the replica refuses with this partition error (and the leader serves).
    Error(i16),
    /// The replica serves everything; the leader always names it.
    Never,
}

/// Two doubles: node 1 leads partition t-0 (20 records, in batches of 5) but names node 2 (its
/// follower) as the preferred read replica until the replica has refused a fetch; node 2 serves
/// up to offset 10, then answers as `end` says. Returns the leader's address, and every fetch
/// as (node, offset, rack_id).
async fn leader_and_replica(end: ReplicaEnd) -> (String, Arc<std::sync::Mutex<Vec<(i32, i64, String)>>>) {
    let ports = Arc::new([std::sync::atomic::AtomicU16::new(0), std::sync::atomic::AtomicU16::new(0)]);
    let fetches: Arc<std::sync::Mutex<Vec<(i32, i64, String)>>> = Arc::default();
    let refused = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let double = |node: i32| {
        let (ports, fetches, refused) = (ports.clone(), fetches.clone(), refused.clone());
        move |_port: u16, request: RequestKind| {
            let body: ResponseKind = match request {
                RequestKind::ApiVersions(_) => {
                    let apis = [ApiKey::ApiVersions, ApiKey::Metadata, ApiKey::Fetch];
                    let api_keys = apis
                        .iter()
                        .map(|a| {
                            // Fetch v12: topic names, and the rack (v11+).
                            let v = if *a == ApiKey::Fetch { VersionRange::new(4, 12) } else { a.stable_versions() };
                            ApiVersion { api_key: a.key(), min_version: v.lo, max_version: v.hi, ..Default::default() }
                        })
                        .collect();
                    ApiVersionsResponse { api_keys, ..Default::default() }.into()
                }
                RequestKind::Metadata(_) => MetadataResponse {
                    brokers: (1..=2)
                        .map(|id| MetadataResponseBroker {
                            node_id: id,
                            host: "127.0.0.1".into(),
                            port: ports[id as usize - 1].load(Ordering::SeqCst).into(),
                            rack: Some(format!("rack-{id}").into()),
                            ..Default::default()
                        })
                        .collect(),
                    controller_id: 1,
                    topics: vec![MetadataResponseTopic {
                        name: Some("t".into()),
                        partitions: vec![MetadataResponsePartition {
                            partition_index: 0,
                            leader_id: 1,
                            replica_nodes: vec![1, 2].into_iter().collect(),
                            isr_nodes: vec![1, 2].into_iter().collect(),
                            ..Default::default()
                        }],
                        ..Default::default()
                    }],
                    ..Default::default()
                }
                .into(),
                RequestKind::Fetch(f) => {
                    let rack = f.rack_id.to_string();
                    common::fetch_answer(&f, |p| {
                        fetches.lock().unwrap().push((node, p.fetch_offset, rack.clone()));
                        let o = p.fetch_offset;
                        let serve = || (o < 20).then(|| batch(o, 5.min(20 - o), -1, "v"));
                        let mut data = PartitionData { partition_index: 0, high_watermark: 20, preferred_read_replica: -1, ..Default::default() };
                        match node {
                            1 if !refused.load(Ordering::SeqCst) => data.preferred_read_replica = 2,
                            1 => data.records = serve(),
                            _ => match end {
                                ReplicaEnd::Error(code) if o >= 10 => {
                                    refused.store(true, Ordering::SeqCst);
                                    data.error_code = code;
                                }
                                _ => data.records = serve(),
                            },
                        }
                        data
                    })
                    .into()
                }
                _ => return None,
            };
            Some(body)
        }
    };
    let leader = serve_two(&ports, double(1), double(2)).await;
    (leader, fetches)
}

/// Polls `c` until it has 20 records or `polls` polls went by.
async fn read_twenty(c: &mut Consumer, polls: usize) -> Vec<i64> {
    let mut offsets = Vec::new();
    for _ in 0..polls {
        for r in c.poll(Duration::from_millis(50)).await.unwrap() {
            assert_eq!(r.value.as_deref(), Some(format!("v-{}", r.offset).as_bytes()));
            offsets.push(r.offset);
        }
        if offsets.len() >= 20 {
            break;
        }
    }
    offsets
}

#[tokio::test]
async fn a_preferred_read_replica_serves_until_it_refuses_then_the_leader_does() {
    // NOT_LEADER_OR_FOLLOWER (6), then OFFSET_OUT_OF_RANGE (1) under reset policy none: from the
    // replica neither is the consumer's to act on; it goes back to the leader, which serves.
    for code in [6, 1] {
        let (addr, fetches) = leader_and_replica(ReplicaEnd::Error(code)).await;
        let client = Client::connect(ClientConfig::new(&addr)).await.unwrap();
        let config = ConsumerConfig {
            client_rack: Some("rack-2".into()),
            auto_offset_reset: OffsetReset::None,
            retry_backoff: Duration::from_millis(10),
            ..Default::default()
        };
        let mut c = Consumer::new(client, config).unwrap();
        let tp = TopicPartition::new("t", 0);
        c.assign([tp.clone()]).unwrap();
        c.seek(&tp, 0).unwrap();
        let offsets = read_twenty(&mut c, 100).await;
        assert_eq!(offsets, (0..20).collect::<Vec<i64>>(), "error {code}: every record once, in order");
        let fetches = fetches.lock().unwrap().clone();
        let by_node = |n: i32| fetches.iter().filter(|f| f.0 == n).map(|f| f.1).collect::<Vec<i64>>();
        // The leader names the replica; the replica serves 0-9 and refuses at 10; the leader
        // serves 10-19.
        assert_eq!(by_node(1).first(), Some(&0), "error {code}: {fetches:?}");
        assert_eq!(by_node(2).get(..3), Some(&[0, 5, 10][..]), "error {code}: {fetches:?}");
        assert!(by_node(1).windows(2).any(|w| w == [10, 15]), "error {code}: the leader serves after the refusal: {fetches:?}");
        assert!(fetches.iter().all(|f| f.2 == "rack-2"), "every Fetch carries the rack: {fetches:?}");
        let stats = c.stats();
        assert!(stats.fetches_by_node[&2] >= 3 && stats.fetches_by_node[&1] >= 3, "{stats:?}");
    }
}

#[tokio::test]
async fn a_preferred_read_replica_expires_after_the_metadata_max_age() {
    let (addr, fetches) = leader_and_replica(ReplicaEnd::Never).await;
    let client = Client::connect(ClientConfig { metadata_max_age: Duration::from_millis(300), ..ClientConfig::new(&addr) }).await.unwrap();
    let config = ConsumerConfig { client_rack: Some("rack-2".into()), fetch_max_wait: Duration::from_millis(20), ..Default::default() };
    let mut c = Consumer::new(client, config).unwrap();
    let tp = TopicPartition::new("t", 0);
    c.assign([tp.clone()]).unwrap();
    c.seek(&tp, 0).unwrap();
    assert_eq!(read_twenty(&mut c, 100).await, (0..20).collect::<Vec<i64>>());
    // Polling on at the end of the log: the leader is asked again each time the choice expires.
    let until = std::time::Instant::now() + Duration::from_millis(1000);
    while std::time::Instant::now() < until {
        assert!(c.poll(Duration::from_millis(50)).await.unwrap().is_empty());
    }
    let fetches = fetches.lock().unwrap().clone();
    let leader = fetches.iter().filter(|f| f.0 == 1).count();
    let replica = fetches.iter().filter(|f| f.0 == 2).count();
    assert!(leader >= 2 && replica > leader, "the leader again after each expiry, the replica in between: {fetches:?}");
    assert!(fetches.iter().filter(|f| f.0 == 1).all(|f| f.1 == 0 || f.1 == 20), "records only from the replica: {fetches:?}");
}

/// Two doubles, each leading one partition of `t` (node 1 partition 0, node 2 partition 1),
/// serving 5 records a fetch up to offset 10,000; node 1 holds every Fetch `slow` before it
/// answers. Returns node 1's address.
async fn two_leaders(slow: Duration) -> String {
    let ports = Arc::new([std::sync::atomic::AtomicU16::new(0), std::sync::atomic::AtomicU16::new(0)]);
    let double = |node: i32| {
        let ports = ports.clone();
        move |_port: u16, request: RequestKind| {
            let body: ResponseKind = match request {
                RequestKind::ApiVersions(_) => {
                    let mut v = common::api_versions(&[ApiKey::ApiVersions, ApiKey::Metadata, ApiKey::Fetch]);
                    // Fetch v12: topic names (the doubles know no topic ids).
                    v.api_keys.iter_mut().filter(|a| a.api_key == ApiKey::Fetch.key()).for_each(|a| a.max_version = 12);
                    v.into()
                }
                RequestKind::Metadata(_) => MetadataResponse {
                    brokers: (1..=2)
                        .map(|id| MetadataResponseBroker {
                            node_id: id,
                            host: "127.0.0.1".into(),
                            port: ports[id as usize - 1].load(Ordering::SeqCst).into(),
                            ..Default::default()
                        })
                        .collect(),
                    controller_id: 1,
                    topics: vec![MetadataResponseTopic {
                        name: Some("t".into()),
                        partitions: (0..2).map(|p| MetadataResponsePartition { partition_index: p, leader_id: p + 1, ..Default::default() }).collect(),
                        ..Default::default()
                    }],
                    ..Default::default()
                }
                .into(),
                RequestKind::Fetch(f) => {
                    if node == 1 {
                        // A blocking wait: the test runs on worker threads to spare.
                        std::thread::sleep(slow);
                    }
                    common::fetch_answer(&f, |p| {
                        let o = p.fetch_offset;
                        let records = (o < 10_000).then(|| batch(o, 5, -1, &format!("p{}", p.partition)));
                        PartitionData { partition_index: p.partition, high_watermark: 10_000, records, ..Default::default() }
                    })
                    .into()
                }
                _ => return None,
            };
            Some(body)
        }
    };
    serve_two(&ports, double(1), double(2)).await
}

/// Serves two doubles, nodes 1 and 2, and puts their ports in `ports` (which their Metadata
/// answers read). Returns node 1's address.
async fn serve_two<A, B>(ports: &[std::sync::atomic::AtomicU16; 2], one: A, two: B) -> String
where
    A: Fn(u16, RequestKind) -> Option<ResponseKind> + Send + Sync + 'static,
    B: Fn(u16, RequestKind) -> Option<ResponseKind> + Send + Sync + 'static,
{
    let first = common::serve(one).await;
    let second = common::serve(two).await;
    for (port, addr) in ports.iter().zip([&first, &second]) {
        port.store(addr.rsplit(':').next().unwrap().parse().unwrap(), Ordering::SeqCst);
    }
    first
}

/// One Fetch per broker in flight, each taken in when it is answered: a broker that answers
/// slowly holds back only its own partitions, and the next Fetch to a broker is sent before
/// `poll` returns the last one's records, so the broker works while the caller does.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_slow_broker_holds_back_only_its_own_partitions() {
    let addr = two_leaders(Duration::from_millis(700)).await;
    let client = Client::connect(ClientConfig::new(&addr)).await.unwrap();
    let mut c = Consumer::new(client, ConsumerConfig::default()).unwrap();
    let tps = [TopicPartition::new("t", 0), TopicPartition::new("t", 1)];
    c.assign(tps.clone()).unwrap();
    for tp in &tps {
        c.seek(tp, 0).unwrap();
    }
    let mut next = [0i64, 0];
    let mut pipelined = false;
    let until = std::time::Instant::now() + Duration::from_millis(1500);
    while std::time::Instant::now() < until {
        let records = c.poll(Duration::from_millis(100)).await.unwrap();
        for r in &records {
            let p = r.partition as usize;
            assert_eq!(r.offset, next[p], "partition {p} in order, without gaps");
            assert_eq!(r.value.as_deref(), Some(format!("p{p}-{}", r.offset).as_bytes()));
            next[p] += 1;
        }
        // Node 2's records handed out, and its next Fetch already sent.
        if records.iter().any(|r| r.partition == 1) {
            let s = c.stats();
            pipelined |= s.fetches_by_node.get(&2).copied().unwrap_or(0) as i64 > next[1] / 5;
        }
    }
    let stats = c.stats();
    // Within 1.5 s node 1 answered at most twice; node 2, not held back, many times.
    assert!(next[1] >= 100, "partition 1 is not held back by the slow broker: {next:?} {stats:?}");
    assert!(next[0] <= 10, "partition 0 (slow broker): {next:?} {stats:?}");
    assert!(pipelined, "the next Fetch goes out before poll returns: {stats:?}");
}
