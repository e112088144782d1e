//! kwire's consumers against kwire-fake's group coordinator, in memory on tokio's paused clock:
//! KIP-848 consumer groups and classic groups with static members share a topic, a member
//! leaves and the others take its partitions, and every record is consumed exactly once (by
//! the committed offsets); share consumers (KIP-932) release, reject and time out records.
//!
//!   cargo test -p kwire-client --test fake groups::

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use kwire_client::{
    AcknowledgeType, AcknowledgementMode, Client, ClientConfig, Connector, Consumer, ConsumerConfig, GroupProtocol, OffsetReset, Producer, ProducerConfig,
    ProducerRecord, ShareConsumer, ShareConsumerConfig, ShareRecord,
};
use kwire_fake::{Cluster, ClusterConfig};

const TOPIC: &str = "orders";
const PARTITIONS: i32 = 6;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().expect("a runtime")
}

async fn client(cluster: &Cluster, id: &str) -> Client {
    let config = ClientConfig::new(&cluster.bootstrap()).connector(Connector::new(cluster.connector())).seed(7).client_id(id);
    Client::connect(config).await.expect("connects")
}

async fn produce(cluster: &Cluster, topic: &str, from: usize, n: usize) {
    let producer = Producer::new(client(cluster, "producer").await, ProducerConfig { enable_metrics_push: false, ..Default::default() }).expect("a producer");
    let mut deliveries = Vec::new();
    for i in from..from + n {
        deliveries.push(producer.send(ProducerRecord::new(topic, format!("v{i}")).key(format!("k{i}"))).await.expect("sent"));
    }
    for d in deliveries {
        d.await.expect("delivered");
    }
    producer.close().await.expect("closed");
}

fn consumer_config(protocol: GroupProtocol, instance: Option<String>) -> ConsumerConfig {
    ConsumerConfig {
        group_protocol: protocol,
        group_instance_id: instance,
        enable_auto_commit: false,
        auto_offset_reset: OffsetReset::Earliest,
        session_timeout: Duration::from_secs(10),
        heartbeat_interval: Duration::from_millis(500),
        fetch_max_wait: Duration::from_millis(100),
        max_poll_records: 20,
        enable_metrics_push: false,
        ..ConsumerConfig::group("g")
    }
}

/// What the consumers saw: every (partition, offset) and who consumed it.
#[derive(Default)]
struct Seen {
    by_offset: BTreeMap<(i32, i64), Vec<usize>>,
}

impl Seen {
    /// One poll of `consumer` (number `who`), committed at once.
    async fn poll(&mut self, consumer: &mut Consumer, who: usize) -> usize {
        let records = consumer.poll(Duration::from_millis(100)).await.expect("poll");
        for r in &records {
            self.by_offset.entry((r.partition, r.offset)).or_default().push(who);
        }
        if !records.is_empty() {
            consumer.commit().await.expect("commit");
        }
        records.len()
    }

    fn consumers_of(&self, partition: i32, from: i64) -> BTreeSet<usize> {
        self.by_offset.range((partition, from)..(partition, i64::MAX)).flat_map(|(_, who)| who.iter().copied()).collect()
    }

    /// Every record of the log exactly once, and the group's offsets at the log end.
    fn check_exactly_once(&self, cluster: &Cluster) {
        let mut expected = BTreeSet::new();
        for p in 0..PARTITIONS {
            for r in cluster.records(TOPIC, p).expect("the log") {
                expected.insert((p, r.record.offset));
            }
            let end = cluster.offsets(TOPIC, p).expect("offsets").2;
            assert_eq!(cluster.committed_offset("g", TOPIC, p), Some(end), "partition {p}: committed at the log end");
        }
        let seen: BTreeSet<(i32, i64)> = self.by_offset.keys().copied().collect();
        assert_eq!(seen, expected, "every record consumed");
        let twice: Vec<_> = self.by_offset.iter().filter(|(_, who)| who.len() > 1).collect();
        assert!(twice.is_empty(), "consumed more than once: {twice:?}");
    }
}

/// Polls every consumer in turn until `done`, within a minute of the cluster's clock.
async fn poll_until(consumers: &mut [(usize, Consumer)], seen: &mut Seen, mut done: impl FnMut(&Seen) -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !done(seen) {
        assert!(tokio::time::Instant::now() < deadline, "not done within a minute: {} records seen", seen.by_offset.len());
        for (who, c) in consumers.iter_mut() {
            seen.poll(c, *who).await;
        }
    }
}

/// Polls every consumer in turn until each owns `each` partitions (the group reconciled).
async fn poll_until_balanced(consumers: &mut [(usize, Consumer)], seen: &mut Seen, each: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while !consumers.iter().all(|(_, c)| partitions_of(c).len() == each) {
        let owned: Vec<BTreeSet<i32>> = consumers.iter().map(|(_, c)| partitions_of(c)).collect();
        assert!(tokio::time::Instant::now() < deadline, "not balanced within two minutes: {owned:?}");
        for (who, c) in consumers.iter_mut() {
            seen.poll(c, *who).await;
        }
    }
}

fn partitions_of(consumer: &Consumer) -> BTreeSet<i32> {
    consumer.assignment().into_iter().map(|tp| tp.partition).collect()
}

/// Three KIP-848 consumers share the topic; one leaves (epoch -1) and the two others take its
/// partitions once the coordinator reconciled them; nothing is read twice.
#[test]
fn consumer_protocol_members_share_a_topic_and_take_over_a_leaving_members_partitions() {
    let started = std::time::Instant::now();
    runtime().block_on(async {
        let cluster = Cluster::start(ClusterConfig::default().brokers(3).seed(11));
        cluster.create_topic(TOPIC, PARTITIONS, 3).unwrap();
        produce(&cluster, TOPIC, 0, 300).await;
        let mut consumers = Vec::new();
        for who in 0..3 {
            let mut c = Consumer::new(client(&cluster, &format!("c{who}")).await, consumer_config(GroupProtocol::Consumer, None)).unwrap();
            c.subscribe(&[TOPIC]).unwrap();
            consumers.push((who, c));
        }
        let mut seen = Seen::default();
        poll_until(&mut consumers, &mut seen, |s| s.by_offset.len() >= 300).await;
        // The coordinator reconciles the members to two partitions each, none shared.
        poll_until_balanced(&mut consumers, &mut seen, 2).await;
        let owned: Vec<BTreeSet<i32>> = consumers.iter().map(|(_, c)| partitions_of(c)).collect();
        assert_eq!(owned.iter().flatten().collect::<BTreeSet<_>>().len(), 6, "{owned:?}");
        let left = owned[2].clone();
        // The third leaves; more records come.
        let (_, third) = consumers.pop().unwrap();
        third.close().await.expect("leaves");
        let ends: Vec<i64> = (0..PARTITIONS).map(|p| cluster.offsets(TOPIC, p).unwrap().2).collect();
        produce(&cluster, TOPIC, 300, 300).await;
        poll_until(&mut consumers, &mut seen, |s| s.by_offset.len() >= 600).await;
        poll_until_balanced(&mut consumers, &mut seen, 3).await;
        for p in &left {
            let after = seen.consumers_of(*p, ends[*p as usize]);
            assert!(!after.contains(&2) && !after.is_empty(), "partition {p} went to the others: {after:?}");
        }
        seen.check_exactly_once(&cluster);
        for (_, c) in consumers {
            c.close().await.unwrap();
        }
    });
    println!("consumer protocol: {:.2}s", started.elapsed().as_secs_f64());
}

/// What the consumer tasks share: the records seen, and each one's assignment and generation.
#[derive(Default)]
struct Shared {
    seen: Seen,
    assigned: BTreeMap<usize, BTreeSet<i32>>,
    generation: BTreeMap<usize, Option<i32>>,
}

type SharedRef = std::sync::Arc<std::sync::Mutex<Shared>>;

/// A consumer polling in a task of its own (a classic member's rebalance needs every member
/// to poll meanwhile), until told to stop; then it is handed back.
fn spawn_polling(who: usize, mut consumer: Consumer, shared: SharedRef, mut stop: tokio::sync::watch::Receiver<bool>) -> tokio::task::JoinHandle<Consumer> {
    tokio::spawn(async move {
        while !*stop.borrow_and_update() {
            let records = consumer.poll(Duration::from_millis(100)).await.expect("poll");
            if !records.is_empty() {
                consumer.commit().await.expect("commit");
            }
            let mut s = shared.lock().unwrap();
            for r in &records {
                s.seen.by_offset.entry((r.partition, r.offset)).or_default().push(who);
            }
            s.assigned.insert(who, partitions_of(&consumer));
            s.generation.insert(who, consumer.group_generation());
        }
        consumer
    })
}

/// Waits (on the paused clock) until `done`, within two minutes.
async fn wait_for(shared: &SharedRef, what: &str, done: impl Fn(&Shared) -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while !done(&shared.lock().unwrap()) {
        let s = shared.lock().unwrap();
        assert!(tokio::time::Instant::now() < deadline, "{what}: not within two minutes ({} records, {:?})", s.seen.by_offset.len(), s.assigned);
        drop(s);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Three static members of a classic group: one restarts with its instance id and takes its
/// place back without a rebalance (the others' generation stays); then it goes for good, and
/// once its session times out the others take its partitions.
#[test]
fn classic_static_members_restart_without_a_rebalance_and_a_lost_one_is_replaced() {
    let started = std::time::Instant::now();
    runtime().block_on(async {
        let cluster = Cluster::start(ClusterConfig::default().brokers(3).seed(12));
        cluster.create_topic(TOPIC, PARTITIONS, 3).unwrap();
        produce(&cluster, TOPIC, 0, 300).await;
        let shared = SharedRef::default();
        let mut tasks = BTreeMap::new();
        let start = |who: usize, instance: usize| {
            let (cluster, shared) = (cluster.clone(), shared.clone());
            async move {
                let mut c =
                    Consumer::new(client(&cluster, &format!("s{who}")).await, consumer_config(GroupProtocol::Classic, Some(format!("instance-{instance}"))))
                        .unwrap();
                c.subscribe(&[TOPIC]).unwrap();
                let (tx, rx) = tokio::sync::watch::channel(false);
                (tx, spawn_polling(who, c, shared, rx))
            }
        };
        for who in 0..3 {
            tasks.insert(who, start(who, who).await);
        }
        let balanced = |members: &'static [usize], each: usize| move |s: &Shared| members.iter().all(|m| s.assigned.get(m).is_some_and(|a| a.len() == each));
        wait_for(&shared, "the first 300", |s| s.seen.by_offset.len() >= 300).await;
        wait_for(&shared, "balanced", balanced(&[0, 1, 2], 2)).await;
        let (generation, owned_2) = {
            let s = shared.lock().unwrap();
            (s.generation[&0], s.assigned[&2].clone())
        };
        // instance-2 restarts: a new consumer with the same instance id, at once.
        let (tx, task) = tasks.remove(&2).unwrap();
        tx.send(true).unwrap();
        task.await.unwrap().close().await.expect("closes (a static member does not leave)");
        tasks.insert(3, start(3, 2).await);
        produce(&cluster, TOPIC, 300, 60).await;
        wait_for(&shared, "the restarted member's share", |s| s.seen.by_offset.len() >= 360 && s.assigned.get(&3) == Some(&owned_2)).await;
        {
            let s = shared.lock().unwrap();
            assert_eq!((s.generation[&0], s.generation[&3]), (generation, generation), "no rebalance");
        }
        // Now it is gone for good: its session (10 s) times out, the others take over.
        let (tx, task) = tasks.remove(&3).unwrap();
        tx.send(true).unwrap();
        task.await.unwrap().close().await.unwrap();
        produce(&cluster, TOPIC, 360, 240).await;
        wait_for(&shared, "all 600", |s| s.seen.by_offset.len() >= 600).await;
        wait_for(&shared, "two members, three partitions each", balanced(&[0, 1], 3)).await;
        assert!(shared.lock().unwrap().generation[&0] > generation, "a rebalance after the session timeout");
        for (_, (tx, task)) in tasks {
            tx.send(true).unwrap();
            task.await.unwrap().close().await.unwrap();
        }
        shared.lock().unwrap().seen.check_exactly_once(&cluster);
    });
    println!("classic static members: {:.2}s", started.elapsed().as_secs_f64());
}

fn offsets(records: &[ShareRecord]) -> Vec<(i64, i16)> {
    records.iter().map(|r| (r.offset, r.delivery_count)).collect()
}

/// Two share consumers on one partition: A releases some records, which B then gets (their
/// delivery count 2); A rejects some, never delivered again; A holds two without acknowledging,
/// which B gets once their acquisition lock ran out.
#[test]
fn share_consumers_release_reject_and_time_out_records() {
    let started = std::time::Instant::now();
    runtime().block_on(async {
        let cluster = Cluster::start(ClusterConfig::default().brokers(3).seed(13));
        cluster.create_topic("jobs", 1, 3).unwrap();
        cluster.set_group_config("workers", "share.auto.offset.reset", "earliest").unwrap();
        cluster.set_group_config("workers", "share.record.lock.duration.ms", "5000").unwrap();
        produce(&cluster, "jobs", 0, 20).await;
        let config = ShareConsumerConfig::new("workers").acknowledgement_mode(AcknowledgementMode::Explicit);
        let mut a = ShareConsumer::new(client(&cluster, "a").await, config.clone()).unwrap();
        a.subscribe(&["jobs"]).unwrap();
        let mut got = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while got.len() < 20 {
            assert!(tokio::time::Instant::now() < deadline, "a got {} records", got.len());
            let records = a.poll(Duration::from_millis(500)).await.expect("poll");
            got.extend(records);
            if got.len() < 20 && !got.is_empty() {
                // Explicit mode: all acknowledged before the next poll; here, one batch is all.
                break;
            }
        }
        assert_eq!(offsets(&got), (0..20).map(|o| (o, 1)).collect::<Vec<_>>());
        assert_eq!(a.acquisition_lock_timeout(), Some(Duration::from_secs(5)));
        for r in &got {
            let ty = match r.offset {
                0..=4 => AcknowledgeType::Release,
                5..=7 => AcknowledgeType::Reject,
                8 | 9 => continue, // held: its lock runs out
                _ => AcknowledgeType::Accept,
            };
            a.acknowledge(r, ty).unwrap();
        }
        let commits = a.commit_sync().await.expect("acknowledged");
        assert!(commits.iter().all(|c| c.error.is_none()), "{commits:?}");
        // B joins: the partition is shared. It gets the released records, not the rejected.
        let mut b = ShareConsumer::new(client(&cluster, "b").await, config).unwrap();
        b.subscribe(&["jobs"]).unwrap();
        let mut b_got: Vec<(i64, i16)> = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while !b_got.iter().any(|(o, _)| *o == 9) {
            assert!(tokio::time::Instant::now() < deadline, "b got only {b_got:?}");
            let records = b.poll(Duration::from_millis(500)).await.expect("poll");
            for r in &records {
                b.acknowledge(r, AcknowledgeType::Accept).unwrap();
            }
            b_got.extend(offsets(&records));
        }
        let released: Vec<(i64, i16)> = b_got.iter().copied().filter(|(o, _)| *o < 5).collect();
        assert_eq!(released, (0..5).map(|o| (o, 2)).collect::<Vec<_>>(), "released records come again, once more delivered");
        assert!(b_got.iter().all(|(o, _)| !(5..=7).contains(o)), "rejected records never come again: {b_got:?}");
        let timed_out: Vec<(i64, i16)> = b_got.iter().copied().filter(|(o, _)| *o == 8 || *o == 9).collect();
        assert_eq!(timed_out, vec![(8, 2), (9, 2)], "held past the lock: delivered again, count up");
        assert_eq!(b_got.len(), 7, "nothing else: {b_got:?}");
        b.commit_sync().await.unwrap();
        // A's late acknowledgement of a record it no longer holds is refused.
        if let Some(r) = got.iter().find(|r| r.offset == 8) {
            a.acknowledge(r, AcknowledgeType::Accept).unwrap();
            let late = a.commit_sync().await.unwrap();
            assert!(late.iter().any(|c| c.error.is_some()), "{late:?}");
        }
        b.close().await.unwrap();
        a.close().await.unwrap();
    });
    println!("share consumers: {:.2}s", started.elapsed().as_secs_f64());
}
