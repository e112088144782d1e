//! Against a 3-node cluster (`scripts/kafka.sh start VERSION --nodes 3`, its env file in
//! `KWIRE_CLUSTER`; skips without, fails then under `KWIRE_REQUIRE_CLUSTER=1`):
//! requests routed to each partition's leader, and a leader moved under the producer's cached
//! metadata (NOT_LEADER_OR_FOLLOWER, refresh, retry at the new leader).

use crate::common;

use std::collections::BTreeSet;

use kwire::messages::{
    produce_request::{PartitionProduceData, TopicProduceData},
    ProduceRequest,
};
use kwire::runtime::records::{Record, RecordBatchBuilder};
use kwire::Bytes;
use kwire_client::partitioner::partition_for_key;
use kwire_client::{Admin, Client, ClientConfig, NewTopic, Producer, ProducerConfig, ProducerRecord};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_routing_and_a_moved_leader() {
    let Some(env) = common::cluster_env() else { return };
    // Bootstrap from one node: the others come from Metadata.
    let first = env["BOOTSTRAP"].split(',').next().unwrap().to_owned();
    let client = Client::connect(ClientConfig::new(&first)).await.unwrap();
    assert_eq!(client.metadata().brokers.len(), 3);
    let admin = Admin::new(client.clone());
    let name = common::unique("kw-cluster");
    admin.create_topic(NewTopic::new(&name, 6).replication_factor(3)).await.unwrap();
    // Topics reach every broker's metadata a little after CreateTopics answers.
    common::eventually("the topic in metadata", || async { client.topic(&name).await.is_ok() }).await;
    let t = client.topic(&name).await.unwrap();
    let leaders: BTreeSet<i32> = t.partitions.iter().map(|p| p.leader).collect();
    assert!(leaders.len() >= 2, "leaders spread over brokers: {leaders:?}");

    let producer = Producer::new(client.clone(), ProducerConfig::default()).unwrap();
    let mut ds = Vec::new();
    for i in 0..300 {
        let key = Bytes::from(format!("k{i}"));
        ds.push((key.clone(), producer.send(ProducerRecord::new(&name, format!("v{i}")).key(key)).await.unwrap()));
    }
    let mut per_partition = [0usize; 6];
    for (key, d) in ds {
        let m = d.await.unwrap();
        assert_eq!(m.partition, partition_for_key(&key, 6));
        per_partition[m.partition as usize] += 1;
    }
    for p in 0..6 {
        let back = common::fetch_all(&client, &name, p, per_partition[p as usize]).await;
        assert_eq!(back.len(), per_partition[p as usize], "partition {p} at its leader");
    }

    // A follower refuses a Produce: routing matters.
    let p0 = t.partitions.iter().find(|p| p.index == 0).unwrap().clone();
    let follower = *p0.replicas.iter().find(|r| **r != p0.leader).unwrap();
    let mut b = RecordBatchBuilder::new();
    b.append(Record::new(0, 0, None, Some(Bytes::from_static(b"x")))).unwrap();
    #[allow(clippy::useless_conversion)]
    let records = Some(b.build().unwrap()).into();
    let produce = ProduceRequest {
        acks: -1,
        timeout_ms: 10_000,
        // Names up to Produce v12, ids from v13: set both, the version picks.
        topic_data: vec![TopicProduceData {
            name: name.clone().into(),
            topic_id: client.metadata().topics.get(&name).map(|t| t.id).unwrap_or_default(),
            partition_data: vec![PartitionProduceData { index: 0, records, ..Default::default() }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = client.send(kwire_client::Route::Node(follower), produce).await.unwrap();
    assert_eq!(r.responses[0].partition_responses[0].error_code, 6, "NOT_LEADER_OR_FOLLOWER from broker {follower}");

    // Move partition 0's leader; the producer's client still has the old leader cached: a
    // second client does the move.
    let other = Client::connect(ClientConfig::new(&first)).await.unwrap();
    let new_leader = common::move_leader(&other, &name, 0).await;
    assert_ne!(new_leader, p0.leader);
    assert_eq!(client.metadata().leader(&name, 0), Some(p0.leader), "the producer's metadata is stale");
    let m = producer.send(ProducerRecord::new(&name, "after the move").partition(0)).await.unwrap().await.unwrap();
    assert_eq!((m.partition, m.offset), (0, per_partition[0] as i64));
    assert_eq!(client.metadata().leader(&name, 0), Some(new_leader), "refreshed after NOT_LEADER_OR_FOLLOWER");
    println!("partition 0: leader {} -> {new_leader}; the producer followed", p0.leader);
    producer.close().await.unwrap();
}
