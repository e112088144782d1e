//! Rebalance listeners and cooperative rebalancing against a real broker.
//!
//! - Two of our members, in each protocol (classic eager with range and with sticky, classic
//!   cooperative with cooperative-sticky, KIP-848), commit only in `on_partitions_revoked` (and
//!   so on close):
//!   records keep coming while the second joins and then leaves, and no record is processed
//!   twice, none is missed; the listener's events say what each protocol moves (eager:
//!   everything revoked; cooperative and KIP-848: only what the other member gets).
//! - A Java `KafkaConsumer` with `CooperativeStickyAssignor` and ours in one group: the
//!   partitions are split and handed over both ways, each side keeping what it had, and
//!   neither processes a record the other committed.
//! - A Java `KafkaConsumer` with `StickyAssignor` (eager) and two of ours with `Assignor::Sticky`
//!   in one group: whoever leads reads the others' previous assignments from their user data
//!   (Java's from ours, or ours from Java's), so when the third member joins, the two that were
//!   there each keep two of the three partitions they had.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{unique, Broker};
use kwire_client::{
    Admin, Assignor, Client, Consumer, ConsumerConfig, GroupProtocol, ListenerFuture, NewTopic, OffsetReset, Producer, ProducerConfig, ProducerRecord,
    RebalanceListener, TopicPartition,
};
use tokio::sync::watch;

/// A listener event: the kind and the partitions.
type Events = Arc<Mutex<Vec<(&'static str, BTreeSet<i32>)>>>;

/// Records every callback; commits what was consumed when partitions are revoked (the only
/// commits its member makes), as Java's documentation shows.
struct Recorder {
    events: Events,
}

fn partitions(tps: &BTreeSet<TopicPartition>) -> BTreeSet<i32> {
    tps.iter().map(|tp| tp.partition).collect()
}

impl RebalanceListener for Recorder {
    fn on_partitions_revoked<'a>(&'a mut self, consumer: &'a mut Consumer, tps: &'a BTreeSet<TopicPartition>) -> ListenerFuture<'a> {
        Box::pin(async move {
            // Still assigned: their positions are there to commit.
            assert!(tps.iter().all(|tp| consumer.assignment().contains(tp)), "revoked partitions are still assigned in the callback");
            self.events.lock().unwrap().push(("revoked", partitions(tps)));
            consumer.commit().await
        })
    }
    fn on_partitions_assigned<'a>(&'a mut self, consumer: &'a mut Consumer, tps: &'a BTreeSet<TopicPartition>) -> ListenerFuture<'a> {
        Box::pin(async move {
            assert!(tps.iter().all(|tp| consumer.assignment().contains(tp)), "assigned partitions are in the assignment");
            self.events.lock().unwrap().push(("assigned", partitions(tps)));
            Ok(())
        })
    }
    fn on_partitions_lost<'a>(&'a mut self, _consumer: &'a mut Consumer, tps: &'a BTreeSet<TopicPartition>) -> ListenerFuture<'a> {
        Box::pin(async move {
            self.events.lock().unwrap().push(("lost", partitions(tps)));
            Ok(())
        })
    }
}

type Processed = Arc<Mutex<Vec<(i32, i64)>>>;

/// A member that polls and records; it commits only through its listener.
fn member(
    client: Client,
    config: ConsumerConfig,
    topic: String,
    processed: Processed,
    events: Events,
) -> (watch::Receiver<BTreeSet<i32>>, watch::Sender<bool>, tokio::task::JoinHandle<()>) {
    let (stop_tx, stop) = watch::channel(false);
    let (seen_tx, seen) = watch::channel(BTreeSet::new());
    let h = tokio::spawn(async move {
        let mut c = Consumer::new(client, config).unwrap();
        c.subscribe_with_listener(&[&topic], Recorder { events }).unwrap();
        while !*stop.borrow() {
            let rs = c.poll(Duration::from_millis(200)).await.unwrap();
            processed.lock().unwrap().extend(rs.iter().map(|r| (r.partition, r.offset)));
            seen_tx.send_replace(c.assignment().iter().map(|tp| tp.partition).collect());
        }
        c.close().await.unwrap();
    });
    (seen, stop_tx, h)
}

/// Sends to every partition until stopped; returns how many records each got.
fn producer(client: Client, topic: String, stop: Arc<AtomicBool>) -> tokio::task::JoinHandle<BTreeMap<i32, i64>> {
    tokio::spawn(async move {
        let p = Producer::new(client, ProducerConfig { linger: Duration::from_millis(2), ..Default::default() }).unwrap();
        let mut counts = BTreeMap::new();
        let mut i = 0u64;
        while !stop.load(Ordering::SeqCst) {
            let mut ds = Vec::new();
            for part in 0..6 {
                ds.push(p.send(ProducerRecord::new(&topic, format!("v{i}")).partition(part)).await.unwrap());
                i += 1;
            }
            for d in ds {
                let m = d.await.unwrap();
                *counts.entry(m.partition).or_insert(0) += 1;
            }
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
        p.close().await.unwrap();
        counts
    })
}

async fn wait_for(rx: &mut watch::Receiver<BTreeSet<i32>>, what: &str, f: impl Fn(&BTreeSet<i32>) -> bool) -> BTreeSet<i32> {
    let r = tokio::time::timeout(Duration::from_secs(60), rx.wait_for(|s| f(s))).await;
    r.unwrap_or_else(|_| panic!("timed out waiting for {what}")).unwrap_or_else(|_| panic!("member ended before {what}")).clone()
}

fn events_of(e: &Events) -> Vec<(&'static str, BTreeSet<i32>)> {
    e.lock().unwrap().clone()
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Eager,
    /// Eager with the sticky assignor (its previous assignment in the user data).
    EagerSticky,
    Cooperative,
    Kip848,
}

async fn two_members(b: &Broker, mode: Mode) {
    let client = b.client().await;
    let topic = unique("kw-listen");
    Admin::new(client.clone()).create_topic(NewTopic::new(&topic, 6)).await.unwrap();
    let config = ConsumerConfig {
        group_id: Some(unique("kw-listen-group")),
        group_protocol: if mode == Mode::Kip848 { GroupProtocol::Consumer } else { GroupProtocol::Classic },
        assignors: vec![match mode {
            Mode::Cooperative => Assignor::CooperativeSticky,
            Mode::EagerSticky => Assignor::Sticky,
            _ => Assignor::Range,
        }],
        auto_offset_reset: OffsetReset::Earliest,
        enable_auto_commit: false,
        session_timeout: Duration::from_secs(6),
        heartbeat_interval: Duration::from_millis(300),
        max_poll_interval: Duration::from_secs(20),
        max_poll_records: 50,
        ..Default::default()
    };
    let stop_producing = Arc::new(AtomicBool::new(false));
    let produced = producer(client.clone(), topic.clone(), stop_producing.clone());
    let processed: Processed = Arc::default();
    let (ea, eb): (Events, Events) = (Arc::default(), Arc::default());
    let (mut seen_a, stop_a, a) = member(client.clone(), config.clone(), topic.clone(), processed.clone(), ea.clone());
    wait_for(&mut seen_a, "a holding all 6", |s| s.len() == 6).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (mut seen_b, stop_b, bh) = member(client.clone(), config.clone(), topic.clone(), processed.clone(), eb.clone());
    let b_share = wait_for(&mut seen_b, "b holding 3", |s| s.len() == 3).await;
    let a_share = wait_for(&mut seen_a, "a down to 3", |s| s.len() == 3).await;
    assert!(a_share.is_disjoint(&b_share), "a {a_share:?}, b {b_share:?}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop_b.send(true).unwrap();
    bh.await.unwrap();
    wait_for(&mut seen_a, "a holding all 6 again", |s| s.len() == 6).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop_producing.store(true, Ordering::SeqCst);
    let counts = produced.await.unwrap();
    let want: BTreeSet<(i32, i64)> = counts.iter().flat_map(|(p, n)| (0..*n).map(move |o| (*p, o))).collect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while processed.lock().unwrap().iter().copied().collect::<BTreeSet<_>>() != want && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    stop_a.send(true).unwrap();
    a.await.unwrap();

    // Every record once: each handover was committed by the listener of the member giving up
    // the partitions.
    let all = processed.lock().unwrap().clone();
    let unique_set: BTreeSet<(i32, i64)> = all.iter().copied().collect();
    let missing: Vec<_> = want.difference(&unique_set).take(5).collect();
    assert!(missing.is_empty(), "{mode:?}: missing {missing:?}");
    let mut seen = BTreeSet::new();
    let twice: Vec<_> = all.iter().filter(|r| !seen.insert(**r)).take(5).collect();
    assert!(twice.is_empty(), "{mode:?}: processed twice {twice:?} (of {})", all.len());

    let (ea, eb) = (events_of(&ea), events_of(&eb));
    let six: BTreeSet<i32> = (0..6).collect();
    // a: all 6 first (after an empty assignment if the topic was not in the leader's metadata
    // yet); revoked when b joined; b's 3 back when b left; all 6 revoked on close.
    assert_eq!(ea.iter().find(|(_, p)| !p.is_empty()), Some(&("assigned", six.clone())), "{mode:?} a: {ea:?}");
    assert_eq!(ea.last(), Some(&("revoked", six.clone())), "{mode:?} a: {ea:?}");
    let revoked_a: Vec<&BTreeSet<i32>> = ea.iter().filter(|(k, _)| *k == "revoked").map(|(_, p)| p).collect();
    match mode {
        // Eager: everything goes, then a gets its half again.
        Mode::Eager | Mode::EagerSticky => assert!(revoked_a.contains(&&six) && revoked_a.len() >= 3, "{mode:?} a: {ea:?}"),
        // Cooperative and KIP-848: only b's share goes; a keeps its own throughout.
        _ => {
            assert!(revoked_a.iter().take(revoked_a.len() - 1).all(|r| r.is_disjoint(&a_share)), "{mode:?}: a revoked some of what it kept: {ea:?}");
            assert!(revoked_a.contains(&&b_share), "{mode:?} a: {ea:?}");
        }
    }
    assert!(ea.iter().all(|(k, _)| *k != "lost") && eb.iter().all(|(k, _)| *k != "lost"), "{mode:?}: nothing lost: {ea:?} {eb:?}");
    let assigned_b: BTreeSet<i32> = eb.iter().filter(|(k, _)| *k == "assigned").flat_map(|(_, p)| p.iter().copied()).collect();
    assert_eq!(assigned_b, b_share, "{mode:?} b: {eb:?}");
    assert_eq!(eb.last(), Some(&("revoked", b_share.clone())), "{mode:?} b: {eb:?}");
    println!("{mode:?} on Kafka {}: {} records once each; a {ea:?}; b {eb:?}", b.version(), all.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eager_listener_commits_on_revocation() {
    let Some(b) = Broker::from_env("eager_listener_commits_on_revocation") else { return };
    two_members(&b, Mode::Eager).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eager_sticky_listener_commits_on_revocation() {
    let Some(b) = Broker::from_env("eager_sticky_listener_commits_on_revocation") else { return };
    two_members(&b, Mode::EagerSticky).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cooperative_members_revoke_only_what_moves() {
    let Some(b) = Broker::from_env("cooperative_members_revoke_only_what_moves") else { return };
    two_members(&b, Mode::Cooperative).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kip848_listener_commits_on_revocation() {
    let Some(b) = Broker::from_env("kip848_listener_commits_on_revocation") else { return };
    if common::kip848_supported(&b).await {
        two_members(&b, Mode::Kip848).await;
    }
}

const JAVA_MEMBER: &str = r#"
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public class CoopMember {
    static String show(Collection<TopicPartition> tps) {
        StringBuilder s = new StringBuilder();
        for (int x : new TreeSet<>(tps.stream().map(TopicPartition::partition).toList())) s.append(' ').append(x);
        return s.toString();
    }
    public static void main(String[] args) {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("group.id", args[2]);
        p.put("group.protocol", "classic");
        p.put("partition.assignment.strategy", args.length > 4 ? args[4] : CooperativeStickyAssignor.class.getName());
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("session.timeout.ms", "6000");
        p.put("heartbeat.interval.ms", "300");
        p.put("max.poll.interval.ms", "20000");
        p.put("max.poll.records", "50");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        long runMs = Long.parseLong(args[3]);
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            c.subscribe(List.of(args[1]), new ConsumerRebalanceListener() {
                public void onPartitionsRevoked(Collection<TopicPartition> tps) {
                    if (!tps.isEmpty()) { c.commitSync(); System.out.println("REVOKED" + show(tps)); }
                }
                public void onPartitionsAssigned(Collection<TopicPartition> tps) { System.out.println("ASSIGNED" + show(tps)); }
            });
            long end = System.currentTimeMillis() + runMs;
            while (System.currentTimeMillis() < end) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) System.out.println("R " + r.partition() + " " + r.offset());
                System.out.println("A" + show(c.assignment()));
            }
        }
        System.out.println("DONE");
    }
}
"#;

async fn java(b: &Broker, dir: &Path, args: &[&str], timeout: Duration) -> String {
    let lib = b.var("KAFKA_LIB").to_owned();
    std::fs::write(dir.join("CoopMember.java"), JAVA_MEMBER).unwrap();
    let run = tokio::process::Command::new("java")
        .arg("-cp")
        .arg(format!("{lib}/*"))
        .arg("-Dlog4j2.level=warn")
        .arg(dir.join("CoopMember.java"))
        .args(args)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(timeout, run).await.expect("java in time").expect("java runs");
    assert!(out.status.success(), "CoopMember failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn java_set(line: &str) -> BTreeSet<i32> {
    line.split_whitespace().filter_map(|p| p.parse().ok()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_cooperative_sticky_and_this_consumer_hand_over_partitions() {
    let Some(b) = Broker::from_env("java_cooperative_sticky_and_this_consumer_hand_over_partitions") else { return };
    let client = b.client().await;
    let topic = unique("kw-coop-java");
    let group = unique("kw-coop-java-group");
    Admin::new(client.clone()).create_topic(NewTopic::new(&topic, 6)).await.unwrap();
    let dir = std::env::temp_dir().join(unique("kw-java-coop"));
    std::fs::create_dir_all(&dir).unwrap();
    let config = ConsumerConfig {
        group_id: Some(group.clone()),
        assignors: vec![Assignor::CooperativeSticky],
        auto_offset_reset: OffsetReset::Earliest,
        enable_auto_commit: false,
        session_timeout: Duration::from_secs(6),
        heartbeat_interval: Duration::from_millis(300),
        max_poll_interval: Duration::from_secs(20),
        max_poll_records: 50,
        ..Default::default()
    };
    let stop_producing = Arc::new(AtomicBool::new(false));
    let produced = producer(client.clone(), topic.clone(), stop_producing.clone());
    let processed: Processed = Arc::default();
    let events: Events = Arc::default();
    // Ours alone first: all 6. Then Java joins for 12 s and leaves.
    let (mut seen, stop, ours) = member(client.clone(), config, topic.clone(), processed.clone(), events.clone());
    wait_for(&mut seen, "holding all 6", |s| s.len() == 6).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let java_run = {
        let (bb, dir, topic, group) = (Broker { vars: b.vars.clone(), env_file: b.env_file.clone() }, dir.clone(), topic.clone(), group.clone());
        tokio::spawn(async move { java(&bb, &dir, &[bb.var("PLAINTEXT"), &topic, &group, "12000"], Duration::from_secs(90)).await })
    };
    let kept = wait_for(&mut seen, "down to 3 with Java in", |s| s.len() == 3).await;
    let java_out = java_run.await.unwrap();
    assert!(java_out.contains("DONE"), "{java_out}");
    wait_for(&mut seen, "all 6 again after Java left", |s| s.len() == 6).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop_producing.store(true, Ordering::SeqCst);
    let counts = produced.await.unwrap();
    let java_records: Vec<(i32, i64)> = java_out
        .lines()
        .filter_map(|l| l.strip_prefix("R "))
        .filter_map(|l| l.split_once(' '))
        .map(|(p, o)| (p.parse().unwrap(), o.parse().unwrap()))
        .collect();
    let want: BTreeSet<(i32, i64)> = counts.iter().flat_map(|(p, n)| (0..*n).map(move |o| (*p, o))).collect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let got: BTreeSet<(i32, i64)> = processed.lock().unwrap().iter().chain(java_records.iter()).copied().collect();
        if got == want || tokio::time::Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    stop.send(true).unwrap();
    ours.await.unwrap();

    // Java held the other 3 while we held ours, and was given them without a revocation on
    // its side before it left (cooperative: nothing it held moved).
    let javas: BTreeSet<i32> = (0..6).filter(|p| !kept.contains(p)).collect();
    let java_assignments: Vec<BTreeSet<i32>> = java_out.lines().filter_map(|l| l.strip_prefix('A')).map(java_set).collect();
    assert!(java_assignments.contains(&javas), "Java held {javas:?} while we held {kept:?}: {:?}", java_assignments.iter().collect::<BTreeSet<_>>());
    let java_assigned: BTreeSet<i32> = java_out.lines().filter_map(|l| l.strip_prefix("ASSIGNED")).flat_map(java_set).collect();
    assert_eq!(java_assigned, javas, "{java_out}");
    // Ours revoked exactly Java's share when Java came, kept its own, and never lost any.
    let evs = events_of(&events);
    let revoked: Vec<&BTreeSet<i32>> = evs.iter().filter(|(k, _)| *k == "revoked").map(|(_, p)| p).collect();
    assert_eq!(revoked.first(), Some(&&javas), "{evs:?}");
    assert!(evs.iter().all(|(k, _)| *k != "lost"), "{evs:?}");

    // Each record once across both: every handover was committed by the side giving it up.
    let ours_records = processed.lock().unwrap().clone();
    let all: Vec<(i32, i64)> = ours_records.iter().chain(java_records.iter()).copied().collect();
    let got: BTreeSet<(i32, i64)> = all.iter().copied().collect();
    let missing: Vec<_> = want.difference(&got).take(5).collect();
    assert!(missing.is_empty(), "missing {missing:?}");
    let mut once = BTreeSet::new();
    let twice: Vec<_> = all.iter().filter(|r| !once.insert(**r)).take(5).collect();
    assert!(twice.is_empty(), "processed twice: {twice:?}");
    assert!(!java_records.is_empty() && java_records.iter().all(|(p, _)| javas.contains(p)), "Java read only its share");
    println!("cooperative with Java: we kept {kept:?}, Java held {javas:?}, {} records once each ({} by Java)", all.len(), java_records.len());
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_sticky_and_these_consumers_keep_their_partitions() {
    let Some(b) = Broker::from_env("java_sticky_and_these_consumers_keep_their_partitions") else { return };
    let client = b.client().await;
    let topic = unique("kw-sticky-java");
    let group = unique("kw-sticky-java-group");
    Admin::new(client.clone()).create_topic(NewTopic::new(&topic, 6)).await.unwrap();
    let dir = std::env::temp_dir().join(unique("kw-java-sticky"));
    std::fs::create_dir_all(&dir).unwrap();
    let config = ConsumerConfig {
        group_id: Some(group.clone()),
        assignors: vec![Assignor::Sticky],
        auto_offset_reset: OffsetReset::Earliest,
        enable_auto_commit: false,
        session_timeout: Duration::from_secs(6),
        heartbeat_interval: Duration::from_millis(300),
        max_poll_interval: Duration::from_secs(20),
        max_poll_records: 50,
        ..Default::default()
    };
    // Java first (for 25 s), then one of ours: three partitions each.
    let java_run = {
        let (bb, dir, topic, group) = (Broker { vars: b.vars.clone(), env_file: b.env_file.clone() }, dir.clone(), topic.clone(), group.clone());
        tokio::spawn(async move {
            java(&bb, &dir, &[bb.var("PLAINTEXT"), &topic, &group, "25000", "org.apache.kafka.clients.consumer.StickyAssignor"], Duration::from_secs(90)).await
        })
    };
    tokio::time::sleep(Duration::from_secs(4)).await;
    let (mut seen1, stop1, one) = member(client.clone(), config.clone(), topic.clone(), Arc::default(), Arc::default());
    let first = wait_for(&mut seen1, "three with Java in", |s| s.len() == 3).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    // A third member: two each, the two that were there keeping two of their three.
    let (mut seen2, stop2, two) = member(client.clone(), config, topic.clone(), Arc::default(), Arc::default());
    let kept = wait_for(&mut seen1, "two with three members", |s| s.len() == 2).await;
    let second = wait_for(&mut seen2, "two for the new member", |s| s.len() == 2).await;
    assert!(kept.is_subset(&first), "ours kept two of its {first:?}: {kept:?}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop2.send(true).unwrap();
    two.await.unwrap();
    stop1.send(true).unwrap();
    one.await.unwrap();
    let java_out = java_run.await.unwrap();
    assert!(java_out.contains("DONE"), "{java_out}");
    // Java's assignments in turn: the three it had with one of ours, then two of them.
    let java_sets: Vec<BTreeSet<i32>> = java_out.lines().filter_map(|l| l.strip_prefix('A')).map(java_set).collect();
    let two_at = java_sets.iter().position(|s| s.len() == 2).unwrap_or_else(|| panic!("Java never held two: {java_out}"));
    let had = java_sets.get(..two_at).and_then(|b| b.iter().rev().find(|s| s.len() == 3)).unwrap_or_else(|| panic!("Java never held three: {java_out}"));
    let java_two = &java_sets[two_at];
    assert!(java_two.is_subset(had), "Java kept two of its {had:?}: {java_two:?}");
    assert!(had.is_disjoint(&first), "Java's three and ours: {had:?} {first:?}");
    let all: BTreeSet<i32> = kept.iter().chain(second.iter()).chain(java_two.iter()).copied().collect();
    assert_eq!(all.len(), 6, "ours {kept:?}, the new one {second:?}, Java {java_two:?}");
    println!("sticky with Java: ours {first:?} -> {kept:?}, Java {had:?} -> {java_two:?}, the new member {second:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
