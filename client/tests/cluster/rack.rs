//! Fetching from the closest replica (KIP-392) on the 3-node cluster (`KWIRE_CLUSTER`, as
//! `tests/cluster/consumer.rs`; `scripts/kafka.sh` puts node N in rack `rack-N` with the
//! rack-aware replica selector): a consumer whose `client_rack` is a follower's rack is sent to
//! that follower by the leader and reads every record from it; the follower is then killed
//! (SIGKILL) and the consumer goes back to the leader, with no record skipped or repeated; the
//! follower is started again at the end. And rack-aware assignment (KIP-881) in a classic
//! group: three members, one per rack, each get the partitions led in their rack; the
//! coordinator describes members with their racks (classic and KIP-848).
//!
//! Killing a broker would disturb the other cluster tests beside it: the `cluster` binary runs
//! one test at a time (`--test-threads 1`); this file's two tests also take turns by themselves.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kwire_client::{
    Admin, Assignor, Client, ClientConfig, Consumer, ConsumerConfig, GroupProtocol, NewTopic, OffsetReset, Producer, ProducerConfig, ProducerRecord,
    TopicPartition,
};
use tokio::sync::watch;

/// The tests take turns: one kills a broker.
static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const RECORDS: i64 = 600;

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
    let _turn = TURN.lock().await;
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

    let mut restart = common::restart_node(&version, follower);
    let status = tokio::time::timeout(Duration::from_secs(180), restart.wait()).await.expect("restart within 180 s").unwrap();
    assert!(status.success(), "kafka.sh restart-node failed");
    println!("node {follower} restarted; {:?} in all", started.elapsed());
}

/// A group member polling in a task, publishing its assignment (partition numbers).
fn member(client: Client, config: ConsumerConfig, topic: String, stop: Arc<AtomicBool>) -> (watch::Receiver<BTreeSet<i32>>, tokio::task::JoinHandle<()>) {
    let (tx, rx) = watch::channel(BTreeSet::new());
    let task = tokio::spawn(async move {
        let mut c = Consumer::new(client, config).unwrap();
        c.subscribe(&[&topic]).unwrap();
        while !stop.load(Ordering::SeqCst) {
            c.poll(Duration::from_millis(100)).await.unwrap();
            let now: BTreeSet<i32> = c.assignment().iter().map(|tp| tp.partition).collect();
            tx.send_if_modified(|a| {
                let changed = *a != now;
                *a = now.clone();
                changed
            });
        }
        c.close().await.unwrap();
    });
    (rx, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_classic_group_assigns_each_member_the_partitions_in_its_rack() {
    let Some(env) = common::cluster_env() else { return };
    let _turn = TURN.lock().await;
    let started = Instant::now();
    let client = Client::connect(ClientConfig::new(&env["BOOTSTRAP"])).await.unwrap();
    // One replica each: a partition is in its leader's rack only.
    let topic = common::unique("kw-rack-group");
    Admin::new(client.clone()).create_topic(NewTopic::new(&topic, 6).replication_factor(1)).await.unwrap();
    common::eventually("the topic in metadata", || async { client.topic(&topic).await.is_ok() }).await;
    let leaders: BTreeMap<i32, i32> = client.topic(&topic).await.unwrap().partitions.iter().map(|p| (p.index, p.leader)).collect();
    let nodes: Vec<i32> = client.metadata().brokers.keys().copied().collect();
    assert_eq!(nodes.len(), 3);
    // Two partitions a member: as many as can be in its rack.
    let expected_aligned: usize = nodes.iter().map(|n| leaders.values().filter(|l| *l == n).count().min(2)).sum();
    for assignor in [Assignor::Range, Assignor::Sticky, Assignor::CooperativeSticky] {
        let group = common::unique("kw-rack-group");
        let stop = Arc::new(AtomicBool::new(false));
        let mut members = Vec::new();
        for node in &nodes {
            let config = ConsumerConfig {
                assignors: vec![assignor],
                client_rack: Some(format!("rack-{node}")),
                session_timeout: Duration::from_secs(10),
                heartbeat_interval: Duration::from_millis(300),
                ..ConsumerConfig::group(&group)
            };
            let (rx, task) = member(client.clone(), config, topic.clone(), stop.clone());
            members.push((*node, rx, task));
        }
        // Settled: two partitions each, all six, for a second.
        let deadline = Instant::now() + Duration::from_secs(40);
        let mut settled_since: Option<Instant> = None;
        let assignments: Vec<(i32, BTreeSet<i32>)> = loop {
            let now: Vec<(i32, BTreeSet<i32>)> = members.iter().map(|(n, rx, _)| (*n, rx.borrow().clone())).collect();
            let all: BTreeSet<i32> = now.iter().flat_map(|(_, a)| a.iter().copied()).collect();
            if all.len() == 6 && now.iter().all(|(_, a)| a.len() == 2) {
                if settled_since.get_or_insert_with(Instant::now).elapsed() >= Duration::from_secs(1) {
                    break now;
                }
            } else {
                settled_since = None;
            }
            assert!(Instant::now() < deadline, "{assignor:?}: no settled assignment within 40 s: {now:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        // The coordinator has each member's rack (its subscription's rack_id).
        let described = Admin::new(client.clone()).describe_groups(&[&group]).await.unwrap().remove(0).unwrap();
        let mut racks: Vec<Option<String>> = described.members.iter().map(|m| m.rack.clone()).collect();
        racks.sort();
        assert_eq!(racks, nodes.iter().map(|n| Some(format!("rack-{n}"))).collect::<Vec<_>>(), "{assignor:?}: {described:?}");
        stop.store(true, Ordering::SeqCst);
        for (_, _, task) in members {
            task.await.unwrap();
        }
        let aligned: usize = assignments.iter().map(|(n, a)| a.iter().filter(|p| leaders.get(*p) == Some(n)).count()).sum();
        println!("{assignor:?}: {assignments:?} (member in rack-N first; leaders {leaders:?}): {aligned} of 6 in the member's rack");
        assert_eq!(aligned, expected_aligned, "{assignor:?}: every partition that can be is in its member's rack: {assignments:?}, leaders {leaders:?}");
    }
    // KIP-848: the rack in the heartbeat, as the coordinator describes the member.
    let group = common::unique("kw-rack-848");
    let config = ConsumerConfig { group_protocol: GroupProtocol::Consumer, client_rack: Some("rack-1".into()), ..ConsumerConfig::group(&group) };
    let stop = Arc::new(AtomicBool::new(false));
    let (mut rx, task) = member(client.clone(), config, topic.clone(), stop.clone());
    tokio::time::timeout(Duration::from_secs(30), rx.wait_for(|a| a.len() == 6)).await.expect("KIP-848 member assigned within 30 s").unwrap();
    let described = Admin::new(client.clone()).describe_groups(&[&group]).await.unwrap().remove(0).unwrap();
    stop.store(true, Ordering::SeqCst);
    task.await.unwrap();
    assert_eq!(described.group_type, "consumer", "{described:?}");
    assert_eq!(described.members.iter().map(|m| m.rack.as_deref()).collect::<Vec<_>>(), vec![Some("rack-1")], "{described:?}");
    println!("rack-aware assignment and racks in both protocols in {:?}", started.elapsed());
}
