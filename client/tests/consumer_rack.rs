//! Fetching from the closest replica (KIP-392) on the 3-node cluster (`KWIRE_CLUSTER`, as
//! `tests/consumer_cluster.rs`; `scripts/kafka.sh` puts node N in rack `rack-N` with the
//! rack-aware replica selector): a consumer whose `client_rack` is a follower's rack is sent to
//! that follower by the leader and reads every record from it; the follower is then killed
//! (SIGKILL) and the consumer goes back to the leader, with no record skipped or repeated; the
//! follower is started again at the end.
//!
//! Its own test binary: killing a broker would disturb the other cluster tests beside it.

mod common;

use std::time::{Duration, Instant};

use kwire_client::{Admin, Client, ClientConfig, Consumer, ConsumerConfig, NewTopic, OffsetReset, Producer, ProducerConfig, ProducerRecord, TopicPartition};

const RECORDS: i64 = 600;

fn kafka_sh() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/kafka.sh")
}

/// Polls until `offsets` holds `until` records (or `deadline`), checking each record is the
/// one produced at its offset.
async fn consume(c: &mut Consumer, offsets: &mut Vec<i64>, until: usize, deadline: Instant) {
    while offsets.len() < until && Instant::now() < deadline {
        for r in c.poll(Duration::from_millis(200)).await.unwrap() {
            assert_eq!(r.value.as_deref(), Some(format!("value-{}", r.offset).as_bytes()), "the record at its offset");
            offsets.push(r.offset);
        }
    }
}

fn fetches(c: &Consumer, node: i32) -> u64 {
    c.stats().fetches_by_node.get(&node).copied().unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_fetches_from_the_follower_in_its_rack_and_back_from_the_leader_when_it_dies() {
    let Some(env) = common::cluster_env() else { return };
    common::init_tracing();
    let started = Instant::now();
    let version = env["KAFKA_VERSION"].clone();
    let client = Client::connect(ClientConfig::new(&env["BOOTSTRAP"])).await.unwrap();
    let topic = common::unique("kw-rack");
    Admin::new(client.clone()).create_topic(NewTopic::new(&topic, 1).replication_factor(3)).await.unwrap();
    common::eventually("the topic in metadata", || async { client.topic(&topic).await.is_ok() }).await;
    let info = client.topic(&topic).await.unwrap();
    let p = info.partitions.iter().find(|p| p.index == 0).unwrap().clone();
    let leader = p.leader;
    let follower = *p.replicas.iter().find(|r| **r != leader).expect("a follower");
    let rack = env.get(&format!("NODE{follower}_RACK")).cloned().unwrap_or_else(|| format!("rack-{follower}"));
    assert_eq!(client.metadata().brokers[&follower].rack.as_deref(), Some(rack.as_str()), "the brokers advertise their racks");

    // Every record first (acks=all: on every replica), in batches of 10 so that fetches of a
    // KiB return a few batches each.
    let producer = Producer::new(client.clone(), ProducerConfig::default()).unwrap();
    for chunk in 0..RECORDS / 10 {
        let mut ds = Vec::new();
        for i in 0..10 {
            ds.push(producer.send(ProducerRecord::new(&topic, format!("value-{}", chunk * 10 + i)).partition(0)).await.unwrap());
        }
        for d in ds {
            d.await.unwrap();
        }
    }
    producer.close().await.unwrap();
    println!("{RECORDS} records produced ({:?}); leader {leader}, follower {follower} in {rack}", started.elapsed());

    let consumer_client = Client::connect(ClientConfig::new(&env["BOOTSTRAP"])).await.unwrap();
    let config = ConsumerConfig {
        auto_offset_reset: OffsetReset::Earliest,
        client_rack: Some(rack.clone()),
        max_partition_fetch_bytes: 1024,
        fetch_max_bytes: 1024,
        max_poll_records: 20,
        ..Default::default()
    };
    let mut c = Consumer::new(consumer_client, config).unwrap();
    c.assign([TopicPartition::new(&topic, 0)]).unwrap();
    let mut offsets = Vec::new();
    consume(&mut c, &mut offsets, RECORDS as usize / 3, Instant::now() + Duration::from_secs(20)).await;
    assert!(offsets.len() >= RECORDS as usize / 3, "a third of the records within 20 s: {}", offsets.len());
    let (from_leader, from_follower) = (fetches(&c, leader), fetches(&c, follower));
    println!("{} records read; fetches by node {:?}", offsets.len(), c.stats().fetches_by_node);
    assert!(from_follower >= 2, "the follower in the consumer's rack serves its fetches: {:?}", c.stats());
    assert!(from_leader <= 2, "the leader only pointed to the follower: {:?}", c.stats());

    // The follower dies (no clean shutdown): the consumer's fetches to it fail and it goes back
    // to the leader (which stops naming the follower once the controller fences it).
    let pid = &env[&format!("NODE{follower}_PID")];
    let status = std::process::Command::new("kill").args(["-KILL", pid]).status().unwrap();
    assert!(status.success(), "kill node {follower}");
    let killed = Instant::now();
    println!("node {follower} killed after {} records", offsets.len());
    consume(&mut c, &mut offsets, RECORDS as usize, Instant::now() + Duration::from_secs(40)).await;
    let expect: Vec<i64> = (0..RECORDS).collect();
    assert_eq!(offsets.len(), expect.len(), "every record, {} of {RECORDS}, within 40 s of the kill", offsets.len());
    assert_eq!(offsets, expect, "every offset once, in order");
    assert!(fetches(&c, leader) > from_leader, "back to the leader: {:?}", c.stats());
    println!("the rest read from the leader {:?} after the kill; fetches by node {:?}", killed.elapsed(), c.stats().fetches_by_node);
    c.close().await.unwrap();

    let restart = tokio::process::Command::new(kafka_sh())
        .args(["restart-node", &version, "--nodes", "3", "--node", &follower.to_string()])
        .kill_on_drop(true)
        .status();
    let status = tokio::time::timeout(Duration::from_secs(180), restart).await.expect("restart within 180 s").unwrap();
    assert!(status.success(), "kafka.sh restart-node failed");
    println!("node {follower} restarted; {:?} in all", started.elapsed());
}
