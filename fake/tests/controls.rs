//! Cluster controls a test uses to put clients in the situations a real cluster produces: held
//! transaction markers (the last stable offset stuck after a commit), a preferred read replica
//! chosen by rack (KIP-392), and compaction on demand. kwire-client and a bare codec client over the in-memory
//! transport, on tokio's paused clock.

#[path = "support/bare.rs"]
mod bare;
#[path = "clients/harness.rs"]
mod harness;

use std::time::Duration;

use bare::Bare;
use kwire::messages::fetch_request::{FetchPartition, FetchTopic};
use kwire::messages::fetch_response::PartitionData;
use kwire::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kwire::messages::{FetchRequest, ProduceRequest};
use kwire::runtime::records::{Batch, Batches, Record, RecordBatchBuilder};
use kwire::{ApiKey, Bytes, ErrorCode, RequestKind, ResponseKind};
use kwire_client::{
    Admin, Client, ClientConfig, Connector, Consumer, ConsumerConfig, NewTopic, OffsetReset, Producer, ProducerConfig, ProducerRecord, TopicPartition,
};
use kwire_fake::{Cluster, ClusterConfig, Release};

fn fetch(topic: &str, offset: i64, committed: bool, rack: &str) -> RequestKind {
    FetchRequest {
        replica_id: -1,
        max_wait_ms: 0,
        max_bytes: 1 << 20,
        isolation_level: i8::from(committed),
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic: topic.into(),
            partitions: vec![FetchPartition {
                partition: 0,
                fetch_offset: offset,
                partition_max_bytes: 1 << 20,
                current_leader_epoch: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        rack_id: rack.into(),
        ..Default::default()
    }
    .into()
}

async fn partition(bare: &mut Bare, version: i16, request: RequestKind) -> PartitionData {
    match bare.call(ApiKey::Fetch, version, request).await {
        Some(ResponseKind::Fetch(mut r)) => {
            assert_eq!(r.error_code, 0);
            r.responses.remove(0).partitions.remove(0)
        }
        other => panic!("{other:?}"),
    }
}

fn records(p: &PartitionData) -> usize {
    Batches::new(p.records.clone().unwrap_or_default())
        .flatten()
        .filter(|b| !matches!(b, Batch::V2(v2) if v2.is_control()))
        .map(|b| b.records().map(|r| r.len()).unwrap_or(0))
        .sum()
}

#[tokio::test(start_paused = true)]
async fn held_markers_keep_the_last_stable_offset_until_released() {
    // 3.9: transaction.version 1, partitions added with AddPartitionsToTxn.
    let cluster = Cluster::start(ClusterConfig::default().release(Release::V3_9).seed(5));
    cluster.create_topic("txn", 1, 1).unwrap();
    let config = ClientConfig::new(&cluster.bootstrap()).connector(Connector::new(cluster.connector())).seed(1);
    let client = Client::connect(config).await.unwrap();
    let producer = Producer::new(client, ProducerConfig { transactional_id: Some("held".into()), enable_metrics_push: false, ..Default::default() }).unwrap();
    producer.init_transactions().await.unwrap();

    cluster.hold_markers();
    producer.begin_transaction().await.unwrap();
    producer.send(ProducerRecord::new("txn", "a")).await.unwrap().await.unwrap();
    producer.send(ProducerRecord::new("txn", "b")).await.unwrap().await.unwrap();
    // The coordinator answers the commit; the marker is not written.
    producer.commit_transaction().await.expect("EndTxn answered");
    assert_eq!(cluster.offsets("txn", 0).unwrap(), (0, 0, 2), "(log start, LSO, HW): the LSO stuck at the transaction's start");
    assert!(cluster.committed_records("txn", 0).unwrap().is_empty());
    let mut reader = Bare::new(cluster.connect("broker-0:9092").await.unwrap(), "reader");
    let p = partition(&mut reader, 12, fetch("txn", 0, true, "")).await;
    assert_eq!((p.last_stable_offset, p.high_watermark, records(&p)), (0, 2, 0), "read_committed sees nothing");

    // The next transaction cannot start while the last one is preparing.
    producer.begin_transaction().await.unwrap();
    let next = tokio::spawn({
        let producer = producer.clone();
        async move { producer.send(ProducerRecord::new("txn", "c")).await.unwrap().await }
    });
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!next.is_finished());
    assert!(cluster.journal().iter().any(|e| e.errors.contains(&ErrorCode::CONCURRENT_TRANSACTIONS)), "CONCURRENT_TRANSACTIONS while the markers are held");

    cluster.release_markers();
    next.await.unwrap().expect("the next transaction's record, once the markers are written");
    let committed: Vec<_> = cluster.committed_records("txn", 0).unwrap().into_iter().map(|r| r.record.value.unwrap()).collect();
    assert_eq!(committed, ["a", "b"]);
    let p = partition(&mut reader, 12, fetch("txn", 0, true, "")).await;
    assert_eq!((p.last_stable_offset, records(&p)), (3, 2), "the marker at 2, the LSO at the open transaction's first record");
}

fn produce(topic: &str, n: usize) -> RequestKind {
    let mut batch = RecordBatchBuilder::new();
    for i in 0..n {
        batch.append(Record::new(i as i64, 1_700_000_000_000, None, Some(Bytes::from(format!("v{i}"))))).unwrap();
    }
    ProduceRequest {
        acks: -1,
        timeout_ms: 5000,
        topic_data: vec![TopicProduceData {
            name: topic.into(),
            partition_data: vec![PartitionProduceData { index: 0, records: Some(batch.build().unwrap()), ..Default::default() }],
            ..Default::default()
        }],
        ..Default::default()
    }
    .into()
}

#[tokio::test(start_paused = true)]
async fn the_leader_names_a_replica_in_the_consumers_rack() {
    let cluster = Cluster::start(ClusterConfig::default().brokers(3).racks(&["rack-0", "rack-1", "rack-2"]).rack_aware_replica_selector().seed(2));
    cluster.create_topic("near", 1, 3).unwrap();
    let (leader, _) = cluster.leader("near", 0).unwrap();
    let follower = (leader + 1) % 3;
    let mut to_leader = Bare::new(cluster.connect(&format!("broker-{leader}:9092")).await.unwrap(), "consumer");
    assert!(matches!(to_leader.call(ApiKey::Produce, 9, produce("near", 3)).await, Some(ResponseKind::Produce(_))));

    // From another rack: the leader sends the consumer to the follower there, with no records.
    let p = partition(&mut to_leader, 12, fetch("near", 0, false, &format!("rack-{follower}"))).await;
    assert_eq!((p.error_code, p.preferred_read_replica, p.high_watermark, records(&p)), (0, follower, 3, 0));
    // From the leader's rack, or without a rack, or before v11: the leader serves it.
    for (version, rack) in [(12, format!("rack-{leader}")), (12, String::new()), (10, format!("rack-{follower}"))] {
        let p = partition(&mut to_leader, version, fetch("near", 0, false, &rack)).await;
        assert_eq!((p.preferred_read_replica, records(&p)), (-1, 3), "v{version} rack {rack:?}");
    }
    // The follower serves the consumer (KIP-392), from v11.
    let mut to_follower = Bare::new(cluster.connect(&format!("broker-{follower}:9092")).await.unwrap(), "consumer");
    let p = partition(&mut to_follower, 12, fetch("near", 0, false, &format!("rack-{follower}"))).await;
    assert_eq!((p.error_code, p.preferred_read_replica, records(&p)), (0, -1, 3));
    let p = partition(&mut to_follower, 10, fetch("near", 0, false, "")).await;
    assert_eq!(p.error_code, ErrorCode::NOT_LEADER_OR_FOLLOWER.0);

    // A stopped follower is not chosen; nor is any without the selector.
    cluster.stop_broker(follower).unwrap();
    let p = partition(&mut to_leader, 12, fetch("near", 0, false, &format!("rack-{follower}"))).await;
    assert_eq!(p.preferred_read_replica, -1);
    let plain = Cluster::start(ClusterConfig::default().brokers(3).racks(&["rack-0", "rack-1", "rack-2"]).seed(2));
    plain.create_topic("near", 1, 3).unwrap();
    let (leader, _) = plain.leader("near", 0).unwrap();
    let mut bare = Bare::new(plain.connect(&format!("broker-{leader}:9092")).await.unwrap(), "consumer");
    let p = partition(&mut bare, 12, fetch("near", 0, false, &format!("rack-{}", (leader + 1) % 3))).await;
    assert_eq!(p.preferred_read_replica, -1);
}

fn keyed(topic: &str, base: i64, records: &[(&str, Option<&str>)]) -> RequestKind {
    let mut batch = RecordBatchBuilder::new();
    for (i, (k, v)) in records.iter().enumerate() {
        let value = v.map(|v| Bytes::from(v.to_owned()));
        batch.append(Record::new(base + i as i64, 1_700_000_000_000, Some(Bytes::from(k.to_string())), value)).unwrap();
    }
    ProduceRequest {
        acks: -1,
        timeout_ms: 5000,
        topic_data: vec![TopicProduceData {
            name: topic.into(),
            partition_data: vec![PartitionProduceData { index: 0, records: Some(batch.build().unwrap()), ..Default::default() }],
            ..Default::default()
        }],
        ..Default::default()
    }
    .into()
}

#[tokio::test(start_paused = true)]
async fn compaction_keeps_the_latest_record_of_each_key_at_its_offset() {
    let cluster = Cluster::start(ClusterConfig::default().seed(3));
    cluster.create_topic("compacted", 1, 1).unwrap();
    assert!(
        matches!(cluster.compact("compacted"), Err(kwire_fake::ControlError::Kafka(code, _)) if code == ErrorCode::INVALID_CONFIG),
        "cleanup.policy=delete"
    );
    cluster.set_topic_config("compacted", "cleanup.policy", "compact").unwrap();
    let mut bare = Bare::new(cluster.connect("broker-0:9092").await.unwrap(), "producer");
    for request in [
        keyed("compacted", 0, &[("k1", Some("a")), ("k2", Some("b")), ("k1", Some("c"))]),
        keyed("compacted", 0, &[("k2", None), ("k3", Some("d"))]),
        keyed("compacted", 0, &[("k1", Some("e"))]),
    ] {
        assert!(matches!(bare.call(ApiKey::Produce, 9, request).await, Some(ResponseKind::Produce(_))));
    }
    // An aborted transaction's record (offset 6) and its marker (7).
    let config = ClientConfig::new(&cluster.bootstrap()).connector(Connector::new(cluster.connector())).seed(1);
    let producer = Producer::new(
        Client::connect(config).await.unwrap(),
        ProducerConfig { transactional_id: Some("t".into()), enable_metrics_push: false, ..Default::default() },
    )
    .unwrap();
    producer.init_transactions().await.unwrap();
    producer.begin_transaction().await.unwrap();
    producer.send(ProducerRecord::new("compacted", "f").key("k4")).await.unwrap().await.unwrap();
    producer.abort_transaction().await.unwrap();
    assert_eq!(cluster.offsets("compacted", 0).unwrap(), (0, 8, 8));

    // k1@0, k2@1, k1@2, the tombstone k2@3 and the aborted k4@6 go.
    assert_eq!(cluster.compact("compacted").unwrap(), 5);
    let left: Vec<_> = cluster.records("compacted", 0).unwrap().into_iter().map(|r| (r.record.offset, r.record.value.unwrap())).collect();
    assert_eq!(left, [(4, Bytes::from("d")), (5, Bytes::from("e"))]);
    assert_eq!(cluster.offsets("compacted", 0).unwrap(), (0, 8, 8), "offsets unchanged");
    // The second batch, rebuilt: its base offset and last offset as they were, a valid CRC.
    let batches = cluster.batches("compacted", 0).unwrap();
    assert_eq!(batches.len(), 3, "the first batch emptied and gone; the marker kept");
    let Some(Ok(Batch::V2(second))) = Batches::new(batches[0].clone()).next() else { panic!() };
    assert_eq!((second.base_offset(), second.last_offset(), second.record_count()), (3, 4, 1));
    assert_eq!(second.crc(), crc32c::crc32c(&batches[0][21..]));
    // A consumer reading from 0 gets them, and its next offset after the log is the end.
    let mut reader = Bare::new(cluster.connect("broker-0:9092").await.unwrap(), "reader");
    let p = partition(&mut reader, 12, fetch("compacted", 0, false, "")).await;
    let read: Vec<Batch> = Batches::new(p.records.clone().unwrap()).flatten().collect();
    assert_eq!(records(&p), 2);
    let last = read.iter().filter_map(|b| if let Batch::V2(b) = b { Some(b.next_offset()) } else { None }).last();
    assert_eq!(last, Some(8));
    // Compacting again removes nothing.
    assert_eq!(cluster.compact("compacted").unwrap(), 0);
}

/// kwire-client's consumer in a follower's rack: sent there by the leader, it reads every record
/// from the follower.
#[tokio::test(start_paused = true)]
async fn kwire_clients_consumer_reads_from_the_replica_in_its_rack() {
    let cluster = Cluster::start(ClusterConfig::default().brokers(3).racks(&["rack-0", "rack-1", "rack-2"]).rack_aware_replica_selector().seed(4));
    cluster.create_topic("near", 1, 3).unwrap();
    let (leader, _) = cluster.leader("near", 0).unwrap();
    let follower = (leader + 2) % 3;
    let config = ClientConfig::new(&cluster.bootstrap()).connector(Connector::new(cluster.connector())).seed(1);
    let producer = Producer::new(Client::connect(config.clone()).await.unwrap(), ProducerConfig { enable_metrics_push: false, ..Default::default() }).unwrap();
    for i in 0..100 {
        producer.send(ProducerRecord::new("near", format!("r{i}"))).await.unwrap().await.unwrap();
    }
    let consumer_config = kwire_client::ConsumerConfig {
        auto_offset_reset: kwire_client::OffsetReset::Earliest,
        enable_metrics_push: false,
        client_rack: Some(format!("rack-{follower}")),
        ..kwire_client::ConsumerConfig::group("near-group")
    };
    let mut consumer = kwire_client::Consumer::new(Client::connect(config.client_id("near-consumer")).await.unwrap(), consumer_config).unwrap();
    consumer.assign([kwire_client::TopicPartition::new("near", 0)]).unwrap();
    let mut read = 0;
    for _ in 0..100 {
        read += consumer.poll(Duration::from_millis(100)).await.unwrap().len();
        if read >= 100 {
            break;
        }
    }
    assert_eq!(read, 100);
    let fetches: Vec<_> = cluster.journal().into_iter().filter(|e| e.api == ApiKey::Fetch && e.client_id == "near-consumer").collect();
    assert!(fetches.iter().any(|e| e.broker == leader), "first at the leader");
    assert!(fetches.iter().any(|e| e.broker == follower), "then at the follower: {:?}", fetches.iter().map(|e| e.broker).collect::<Vec<_>>());
    assert!(fetches.iter().all(|e| e.broker == leader || e.broker == follower));
}

/// The binary's `--rack` and `--rack-aware-replica-selector` over TCP: the brokers advertise
/// their racks, and a consumer in a follower's rack reads from that follower.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_puts_brokers_in_racks_and_a_consumer_reads_from_its_own() {
    let broker = harness::Broker::start(&["--brokers", "3", "--rack", "r0", "--rack", "r1", "--rack", "r2", "--rack-aware-replica-selector"]);
    let client = Client::connect(ClientConfig::new(&broker.addr)).await.unwrap();
    let racks: Vec<(i32, Option<String>)> = client.metadata().brokers.values().map(|b| (b.id, b.rack.clone())).collect();
    assert_eq!(racks, (0..3).map(|id| (id, Some(format!("r{id}")))).collect::<Vec<_>>());
    Admin::new(client.clone()).create_topic(NewTopic::new("racked", 1).replication_factor(3)).await.unwrap();
    let info = client.topic("racked").await.unwrap();
    let leader = info.partitions[0].leader;
    let follower = (leader + 1) % 3;
    let producer = Producer::new(client.clone(), ProducerConfig::default()).unwrap();
    for i in 0..10 {
        producer.send(ProducerRecord::new("racked", format!("v{i}")).partition(0)).await.unwrap().await.unwrap();
    }
    let config = ConsumerConfig { auto_offset_reset: OffsetReset::Earliest, client_rack: Some(format!("r{follower}")), ..Default::default() };
    let mut consumer = Consumer::new(Client::connect(ClientConfig::new(&broker.addr)).await.unwrap(), config).unwrap();
    consumer.assign([TopicPartition::new("racked", 0)]).unwrap();
    let mut read = Vec::new();
    for _ in 0..50 {
        read.extend(consumer.poll(Duration::from_millis(100)).await.unwrap().into_iter().map(|r| r.offset));
        if read.len() >= 10 {
            break;
        }
    }
    assert_eq!(read, (0..10).collect::<Vec<i64>>());
    let by_node = consumer.stats().fetches_by_node;
    assert!(by_node.get(&follower).is_some_and(|n| *n >= 1), "the follower in r{follower} served the consumer: {by_node:?}");
}
