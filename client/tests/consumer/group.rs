//! Consumer groups against the real broker, both protocols (classic everywhere, KIP-848's
//! where the broker has ConsumerGroupHeartbeat): two members split a 6-partition topic, a
//! third joins and leaves, one is killed without leaving and is replaced after the session
//! timeout; records are produced all along. Afterwards every record was processed at least
//! once, and none was processed after a commit that covered it.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{unique, Broker};
use kwire_client::{Admin, Client, Consumer, ConsumerConfig, GroupProtocol, NewTopic, OffsetReset, Producer, ProducerConfig, ProducerRecord, TopicPartition};
use tokio::sync::watch;

/// What every member did, in one order (a global sequence number).
#[derive(Default)]
pub struct Log {
    seq: AtomicU64,
    /// (seq, member, partition, offset)
    processed: Mutex<Vec<(u64, String, TopicPartition, i64)>>,
    /// (seq after the commit returned, partition, committed offset)
    commits: Mutex<Vec<(u64, TopicPartition, i64)>>,
    /// Each member's latest assignment.
    assignments: Mutex<BTreeMap<String, BTreeSet<TopicPartition>>>,
}

impl Log {
    fn next(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::SeqCst)
    }
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Stop {
    Run,
    /// Commit and leave the group.
    Close,
    /// Vanish: no commit, no LeaveGroup, no more heartbeats.
    Kill,
}

/// A member: polls, records what it processed, commits after processing.
fn member(name: &str, client: Client, config: ConsumerConfig, topic: String, log: Arc<Log>) -> (watch::Sender<Stop>, tokio::task::JoinHandle<()>) {
    let (tx, mut rx) = watch::channel(Stop::Run);
    let name = name.to_owned();
    let handle = tokio::spawn(async move {
        let mut c = Consumer::new(client, config).unwrap();
        c.subscribe(&[&topic]).unwrap();
        loop {
            let stop = *rx.borrow_and_update();
            match stop {
                Stop::Run => {}
                Stop::Close => {
                    c.commit().await.ok();
                    c.close().await.unwrap();
                    log.assignments.lock().unwrap().remove(&name);
                    return;
                }
                Stop::Kill => {
                    log.assignments.lock().unwrap().remove(&name);
                    drop(c);
                    return;
                }
            }
            let records = match c.poll(Duration::from_millis(200)).await {
                Ok(r) => r,
                Err(e) => panic!("{name}: poll failed: {e}"),
            };
            log.assignments.lock().unwrap().insert(name.clone(), c.assignment());
            if records.is_empty() {
                continue;
            }
            {
                let mut p = log.processed.lock().unwrap();
                for r in &records {
                    let seq = log.next();
                    p.push((seq, name.clone(), TopicPartition::new(&*r.topic, r.partition), r.offset));
                }
            }
            // Commit after processing; a commit refused because the group is rebalancing
            // is fine (the records come again to whoever gets the partition).
            let positions: Vec<(TopicPartition, i64)> = {
                let mut v = Vec::new();
                for tp in c.assignment() {
                    if let Ok(p) = c.position(&tp).await {
                        v.push((tp, p));
                    }
                }
                v
            };
            match c.commit().await {
                Ok(()) => {
                    let seq = log.next();
                    log.commits.lock().unwrap().extend(positions.into_iter().map(|(tp, o)| (seq, tp, o)));
                }
                Err(e) => println!("{name}: commit refused: {e}"),
            }
        }
    });
    (tx, handle)
}

async fn wait_for_split(log: &Log, members: &[&str], sizes: &[usize], what: &str, within: Duration) {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        {
            let a = log.assignments.lock().unwrap();
            let mut got: Vec<usize> = members.iter().map(|m| a.get(*m).map_or(0, BTreeSet::len)).collect();
            got.sort_unstable();
            let mut want = sizes.to_vec();
            want.sort_unstable();
            let all: BTreeSet<&TopicPartition> = members.iter().filter_map(|m| a.get(*m)).flatten().collect();
            let total: usize = got.iter().sum();
            if got == want && all.len() == total {
                println!("{what}: {:?}", members.iter().map(|m| (m, a.get(*m).map(|s| s.iter().map(|t| t.partition).collect::<Vec<_>>()))).collect::<Vec<_>>());
                return;
            }
            assert!(tokio::time::Instant::now() < deadline, "{what}: assignment sizes {got:?}, want {want:?}: {a:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Produces keyed records to every partition until told to stop; returns how many went to each.
fn producer(client: Client, topic: String, stop: Arc<AtomicBool>) -> tokio::task::JoinHandle<BTreeMap<i32, i64>> {
    tokio::spawn(async move {
        let p = Producer::new(client, ProducerConfig { linger: Duration::from_millis(2), ..Default::default() }).unwrap();
        let mut counts = BTreeMap::new();
        let mut i = 0u64;
        while !stop.load(Ordering::SeqCst) {
            let mut ds = Vec::new();
            for _ in 0..12 {
                ds.push(p.send(ProducerRecord::new(&topic, format!("v{i}")).key(format!("k{i}"))).await.unwrap());
                i += 1;
            }
            for d in ds {
                let m = d.await.unwrap();
                *counts.entry(m.partition).or_insert(0) += 1;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        p.close().await.unwrap();
        counts
    })
}

fn check(log: &Log, topic: &str, produced: &BTreeMap<i32, i64>) {
    let processed = log.processed.lock().unwrap();
    let commits = log.commits.lock().unwrap();
    let seen: BTreeSet<(i32, i64)> = processed.iter().map(|(_, _, tp, o)| (tp.partition, *o)).collect();
    for (&p, &n) in produced {
        for o in 0..n {
            assert!(seen.contains(&(p, o)), "{topic}-{p} offset {o} never processed");
        }
    }
    // No record processed after a commit past it.
    let mut violations = Vec::new();
    for (seq, who, tp, o) in processed.iter() {
        if let Some((cseq, _, c)) = commits.iter().find(|(cseq, ctp, c)| cseq < seq && ctp == tp && c > o) {
            violations.push(format!("{who} processed {tp}@{o} at {seq} after the commit of {c} at {cseq}"));
        }
    }
    assert!(violations.is_empty(), "{} records processed after their commit: {:?}", violations.len(), &violations[..violations.len().min(5)]);
    let total: i64 = produced.values().sum();
    println!(
        "{} records produced, {} processed ({} again after a rebalance, none after its commit), {} commits",
        total,
        processed.len(),
        processed.len() as i64 - total,
        commits.len()
    );
}

async fn scenario(b: &Broker, protocol: GroupProtocol) {
    common::init_tracing();
    let client = b.client().await;
    let topic = unique(&format!("kw-group-{protocol:?}").to_lowercase());
    Admin::new(client.clone()).create_topic(NewTopic::new(&topic, 6)).await.unwrap();
    let group = unique("kw-group");
    let config = ConsumerConfig {
        group_id: Some(group.clone()),
        group_protocol: protocol,
        auto_offset_reset: OffsetReset::Earliest,
        enable_auto_commit: false,
        // Classic: the broker's minimum session (6 s); KIP-848 groups take the broker's (8 s).
        session_timeout: Duration::from_secs(6),
        heartbeat_interval: Duration::from_millis(500),
        max_poll_interval: Duration::from_secs(20),
        max_poll_records: 50,
        ..Default::default()
    };
    let log = Arc::new(Log::default());
    let stop = Arc::new(AtomicBool::new(false));
    let produced = producer(client.clone(), topic.clone(), stop.clone());
    let t0 = std::time::Instant::now();

    let (a, ha) = member("a", client.clone(), config.clone(), topic.clone(), log.clone());
    let (bm, hb) = member("b", client.clone(), config.clone(), topic.clone(), log.clone());
    wait_for_split(&log, &["a", "b"], &[3, 3], "two members", Duration::from_secs(30)).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (c, hc) = member("c", client.clone(), config.clone(), topic.clone(), log.clone());
    wait_for_split(&log, &["a", "b", "c"], &[2, 2, 2], "a third member", Duration::from_secs(30)).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    c.send(Stop::Close).unwrap();
    hc.await.unwrap();
    wait_for_split(&log, &["a", "b"], &[3, 3], "the third left", Duration::from_secs(30)).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let killed_at = std::time::Instant::now();
    bm.send(Stop::Kill).unwrap();
    hb.await.unwrap();
    wait_for_split(&log, &["a"], &[6], "b killed, replaced after the session timeout", Duration::from_secs(40)).await;
    let replaced = killed_at.elapsed();
    assert!(replaced >= Duration::from_secs(2), "b's partitions moved only after its session timed out ({replaced:?})");
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.store(true, Ordering::SeqCst);
    let produced = produced.await.unwrap();
    let total: i64 = produced.values().sum();
    // a drains what is left.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let done = {
            let p = log.processed.lock().unwrap();
            let seen: BTreeSet<(i32, i64)> = p.iter().map(|(_, _, tp, o)| (tp.partition, *o)).collect();
            produced.iter().all(|(&p, &n)| (0..n).all(|o| seen.contains(&(p, o))))
        };
        if done || tokio::time::Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    a.send(Stop::Close).unwrap();
    ha.await.unwrap();
    check(&log, &topic, &produced);
    println!("{protocol:?} on Kafka {}: {total} records, b replaced {replaced:?} after being killed, {:?} in all", b.version(), t0.elapsed());

    // The group's commits cover everything: a new member starts at the end.
    let mut last = Consumer::new(client.clone(), config).unwrap();
    let tps: Vec<TopicPartition> = (0..6).map(|p| TopicPartition::new(&topic, p)).collect();
    let committed = last.committed(&tps).await.unwrap();
    for tp in &tps {
        assert_eq!(committed.get(tp).map(|o| o.offset), produced.get(&tp.partition).copied(), "{tp} committed at its end");
    }
    last.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn classic_group_rebalances_without_losing_or_redoing_commits() {
    let Some(b) = Broker::from_env("classic_group_rebalances_without_losing_or_redoing_commits") else { return };
    scenario(&b, GroupProtocol::Classic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kip848_group_rebalances_without_losing_or_redoing_commits() {
    let Some(b) = Broker::from_env("kip848_group_rebalances_without_losing_or_redoing_commits") else { return };
    if common::kip848_supported(&b).await {
        scenario(&b, GroupProtocol::Consumer).await;
    }
}

/// A member's assignment (partitions) and generation.
type Seen = (BTreeSet<i32>, Option<i32>);

/// A member that publishes its assignment and generation after every poll.
fn watched(client: Client, config: ConsumerConfig, topic: String) -> (watch::Receiver<Seen>, watch::Sender<Stop>, tokio::task::JoinHandle<()>) {
    let (state_tx, state_rx) = watch::channel((BTreeSet::new(), None));
    let (stop_tx, stop_rx) = watch::channel(Stop::Run);
    let h = tokio::spawn(async move {
        let mut c = Consumer::new(client, config).unwrap();
        c.subscribe(&[&topic]).unwrap();
        loop {
            let stop = *stop_rx.borrow();
            match stop {
                Stop::Run => {}
                Stop::Close => return c.close().await.unwrap(),
                Stop::Kill => return,
            }
            c.poll(Duration::from_millis(100)).await.unwrap();
            state_tx.send_replace((c.assignment().iter().map(|tp| tp.partition).collect(), c.group_generation()));
        }
    });
    (state_rx, stop_tx, h)
}

async fn wait_until(rx: &mut watch::Receiver<Seen>, what: &str, f: impl Fn(&Seen) -> bool) -> Seen {
    tokio::time::timeout(Duration::from_secs(30), rx.wait_for(|s| f(s))).await.unwrap_or_else(|_| panic!("{what}: not within 30 s")).unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_member_restarted_within_its_session_keeps_its_partitions() {
    let Some(b) = Broker::from_env("a_static_member_restarted_within_its_session_keeps_its_partitions") else { return };
    let client = b.client().await;
    let topic = unique("kw-static");
    Admin::new(client.clone()).create_topic(NewTopic::new(&topic, 4)).await.unwrap();
    let config = |instance: &str| ConsumerConfig {
        group_id: Some(format!("{topic}-group")),
        group_instance_id: Some(instance.to_owned()),
        session_timeout: Duration::from_secs(20),
        heartbeat_interval: Duration::from_millis(500),
        max_poll_interval: Duration::from_secs(20),
        ..Default::default()
    };
    let (mut s1, stop1, h1) = watched(client.clone(), config("i1"), topic.clone());
    let (mut s2, stop2, h2) = watched(client.clone(), config("i2"), topic.clone());
    let (a1, _) = wait_until(&mut s1, "i1 has 2 partitions", |(a, _)| a.len() == 2).await;
    let (a2, g2) = wait_until(&mut s2, "i2 has the other 2", |(a, g)| a.len() == 2 && g.is_some()).await;
    assert!(a1.is_disjoint(&a2));
    // Range over static members orders them by instance id: i1 first.
    assert_eq!(a1, [0, 1].into_iter().collect::<BTreeSet<i32>>());
    stop1.send(Stop::Kill).unwrap();
    h1.await.unwrap();
    let restarted = std::time::Instant::now();
    let (mut s1b, stop1b, h1b) = watched(client.clone(), config("i1"), topic.clone());
    let (again, _) = wait_until(&mut s1b, "i1 restarted gets its partitions back", |(a, _)| a.len() == 2).await;
    assert_eq!(again, a1, "the same partitions");
    assert!(restarted.elapsed() < Duration::from_secs(15), "back before the 20 s session timeout: {:?}", restarted.elapsed());
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (still, g2_after) = s2.borrow().clone();
    assert_eq!((still, g2_after), (a2, g2), "i2 saw no rebalance");
    println!("static member i1 back in {:?} with {again:?}; i2 kept generation {g2:?}", restarted.elapsed());
    stop1b.send(Stop::Close).unwrap();
    stop2.send(Stop::Close).unwrap();
    h1b.await.unwrap();
    h2.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_created_after_subscribing_is_assigned() {
    let Some(b) = Broker::from_env("a_topic_created_after_subscribing_is_assigned") else { return };
    let client = b.client().await;
    let topic = unique("kw-later");
    let config = ConsumerConfig { group_id: Some(format!("{topic}-group")), heartbeat_interval: Duration::from_millis(500), ..Default::default() };
    let (mut seen, stop, h) = watched(client.clone(), config, topic.clone());
    // Joined with nothing to assign: the topic does not exist yet.
    wait_until(&mut seen, "joined", |(_, g)| g.is_some()).await;
    assert!(seen.borrow().0.is_empty());
    Admin::new(client.clone()).create_topic(NewTopic::new(&topic, 3)).await.unwrap();
    // The leader sees the topic in metadata and rebalances.
    let (a, g) = wait_until(&mut seen, "the new topic's partitions assigned", |(a, _)| a.len() == 3).await;
    println!("assigned {a:?} in generation {g:?} once the topic existed");
    stop.send(Stop::Close).unwrap();
    h.await.unwrap();
}
