//! This consumer next to Kafka's Java clients (kafka-clients from the broker's classpath,
//! single-file programs run at test time): a Java `KafkaConsumer` and this one in the same
//! classic group split the partitions and each resumes from the other's commits; records of a
//! Java transactional producer's aborted transactions are never delivered under
//! read_committed, committed ones are delivered whole.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{unique, Broker};
use kwire_client::{Admin, Client, Consumer, ConsumerConfig, IsolationLevel, NewTopic, OffsetReset, Producer, ProducerConfig, ProducerRecord, TopicPartition};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::sync::watch;

/// A Java member of the group. It runs until a line (or the end) on its standard input, or,
/// given a count, until it has read that many records; at most 150 s either way, so that a JVM
/// slow to start under load is never mistaken for a member that left. It prints `A <partitions>`
/// when its assignment changes and `R <partition> <offset>` for each record, committing after
/// each poll that returned records.
const MEMBER: &str = r#"
import java.io.IOException;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public class Member {
    public static void main(String[] args) {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("group.id", args[2]);
        p.put("group.protocol", "classic");
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("session.timeout.ms", "6000");
        p.put("heartbeat.interval.ms", "500");
        p.put("max.poll.interval.ms", "20000");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        boolean untilStdin = args[3].equals("stdin");
        long want = untilStdin ? Long.MAX_VALUE : Long.parseLong(args[3]);
        AtomicBoolean stop = new AtomicBoolean();
        if (untilStdin) {
            Thread t = new Thread(() -> {
                try { System.in.read(); } catch (IOException e) { }
                stop.set(true);
            });
            t.setDaemon(true);
            t.start();
        }
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            c.subscribe(List.of(args[1]));
            long end = System.currentTimeMillis() + 150_000;
            long read = 0;
            Set<TopicPartition> last = Set.of();
            while (!stop.get() && read < want && System.currentTimeMillis() < end) {
                ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(200));
                if (!c.assignment().equals(last)) {
                    last = new HashSet<>(c.assignment());
                    StringBuilder s = new StringBuilder("A");
                    for (int x : new TreeSet<>(last.stream().map(TopicPartition::partition).toList())) s.append(' ').append(x);
                    System.out.println(s);
                }
                for (ConsumerRecord<String, String> r : rs) System.out.println("R " + r.partition() + " " + r.offset());
                System.out.flush();
                read += rs.count();
                if (!rs.isEmpty()) c.commitSync();
            }
        }
        System.out.println("DONE");
    }
}
"#;

const TRANSACTIONS: &str = r#"
import java.util.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.serialization.StringSerializer;

public class Transactions {
    static KafkaProducer<String, String> producer(String bootstrap, String id) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("transactional.id", id);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        KafkaProducer<String, String> k = new KafkaProducer<>(p);
        k.initTransactions();
        return k;
    }
    public static void main(String[] args) throws Exception {
        String topic = args[1];
        try (KafkaProducer<String, String> a = producer(args[0], args[2] + "-a");
             KafkaProducer<String, String> b = producer(args[0], args[2] + "-b")) {
            // Two transactions interleaved in one partition: b commits, a aborts.
            a.beginTransaction();
            b.beginTransaction();
            for (int i = 0; i < 10; i++) {
                a.send(new ProducerRecord<>(topic, 0, "k", "aborted-" + i)).get();
                b.send(new ProducerRecord<>(topic, 0, "k", "committed-" + i)).get();
            }
            b.commitTransaction();
            a.abortTransaction();
            a.beginTransaction();
            for (int i = 0; i < 5; i++) a.send(new ProducerRecord<>(topic, 0, "k", "late-" + i));
            a.commitTransaction();
            b.beginTransaction();
            for (int i = 0; i < 3; i++) b.send(new ProducerRecord<>(topic, 0, "k", "aborted-late-" + i));
            b.flush();
            b.abortTransaction();
        }
        System.out.println("OK");
    }
}
"#;

type Processed = Arc<Mutex<Vec<(i32, i64)>>>;

/// Our member: polls, records, commits after each poll; stops (commit + leave) when told.
fn our_member(
    client: Client,
    config: ConsumerConfig,
    topic: String,
    processed: Processed,
    assignment: watch::Sender<BTreeSet<i32>>,
) -> (watch::Sender<bool>, tokio::task::JoinHandle<()>) {
    let (stop_tx, stop) = watch::channel(false);
    let h = tokio::spawn(async move {
        let mut c = Consumer::new(client, config).unwrap();
        c.subscribe(&[&topic]).unwrap();
        while !*stop.borrow() {
            let rs = c.poll(Duration::from_millis(200)).await.unwrap();
            assignment.send_replace(c.assignment().iter().map(|tp| tp.partition).collect());
            if !rs.is_empty() {
                processed.lock().unwrap().extend(rs.iter().map(|r| (r.partition, r.offset)));
                c.commit().await.unwrap();
            }
        }
        c.close().await.unwrap();
    });
    (stop_tx, h)
}

fn java_records(out: &str) -> Vec<(i32, i64)> {
    out.lines().filter_map(|l| l.strip_prefix("R ")).filter_map(|l| l.split_once(' ')).map(|(p, o)| (p.parse().unwrap(), o.parse().unwrap())).collect()
}

async fn produce(client: &Client, topic: &str, per_partition: usize, tag: &str) {
    let p = Producer::new(client.clone(), ProducerConfig::default()).unwrap();
    let mut ds = Vec::new();
    for part in 0..6 {
        for i in 0..per_partition {
            ds.push(p.send(ProducerRecord::new(topic, format!("{tag}-{i}")).partition(part)).await.unwrap());
        }
    }
    for d in ds {
        d.await.unwrap();
    }
    p.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_and_this_consumer_share_a_classic_group() {
    let Some(b) = Broker::from_env("java_and_this_consumer_share_a_classic_group") else { return };
    let client = b.client().await;
    let topic = unique("kw-mixed");
    let group = unique("kw-mixed-group");
    Admin::new(client.clone()).create_topic(NewTopic::new(&topic, 6)).await.unwrap();
    let dir = std::env::temp_dir().join(unique("kw-java-group"));
    std::fs::create_dir_all(&dir).unwrap();
    let config = ConsumerConfig {
        group_id: Some(group.clone()),
        auto_offset_reset: OffsetReset::Earliest,
        enable_auto_commit: false,
        session_timeout: Duration::from_secs(6),
        heartbeat_interval: Duration::from_millis(500),
        max_poll_interval: Duration::from_secs(20),
        max_poll_records: 20,
        ..Default::default()
    };

    // Java and us together: 3 partitions each, until Java is told to leave.
    let processed: Processed = Arc::default();
    let (assign_tx, mut assign_rx) = watch::channel(BTreeSet::new());
    let mut java = common::java_interactive(&b, &dir, "Member.java", MEMBER, &[b.var("PLAINTEXT"), &topic, &group, "stdin"]);
    let mut java_stdin = java.stdin.take().expect("stdin");
    let (java_tx, mut java_lines) = tokio::sync::mpsc::unbounded_channel::<String>();
    let java_stdout = java.stdout.take().expect("stdout");
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(java_stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let _ = java_tx.send(line);
        }
    });
    let mut java_out: Vec<String> = Vec::new();
    let (stop, ours) = our_member(client.clone(), config.clone(), topic.clone(), processed.clone(), assign_tx);
    // Java's assignment (its last `A` line) and ours as they changed, for the checks and for a
    // failure's message.
    let started = tokio::time::Instant::now();
    let mut seen: Vec<(Duration, BTreeSet<i32>)> = Vec::new();
    let mut javas: BTreeSet<i32> = BTreeSet::new();
    let all: BTreeSet<i32> = (0..6).collect();
    // Both in the group with complementary halves. A JVM starting under load takes its time:
    // this waits for Java's join, however long, up to its own bound.
    let ours_while_shared = loop {
        tokio::select! {
            line = java_lines.recv() => {
                let Some(line) = line else { panic!("Java ended before sharing the group; ours over time: {seen:?}; Java's output: {java_out:?}") };
                if let Some(parts) = line.strip_prefix('A') {
                    javas = parts.split_whitespace().map(|p| p.parse().unwrap()).collect();
                }
                java_out.push(line);
            }
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
        let a = assign_rx.borrow_and_update().clone();
        if seen.last().is_none_or(|(_, last)| *last != a) {
            seen.push((started.elapsed(), a.clone()));
        }
        if a.len() == 3 && javas == all.difference(&a).copied().collect() {
            break a;
        }
        assert!(started.elapsed() < Duration::from_secs(180), "no shared split in 180 s; ours over time: {seen:?}; Java's output: {java_out:?}");
    };
    // Records once both are in, so each member gets its half; Java leaves once it has read its
    // half (and committed it).
    produce(&client, &topic, 100, "first").await;
    let javas_half = javas.len() * 100;
    while java_records(&java_out.join("\n")).len() < javas_half {
        let line = tokio::time::timeout(Duration::from_secs(60), java_lines.recv()).await;
        let Ok(Some(line)) = line else { panic!("Java read {} of its {javas_half} records: {java_out:?}", java_records(&java_out.join("\n")).len()) };
        java_out.push(line);
    }
    java_stdin.write_all(b"leave\n").await.expect("java's stdin");
    java_stdin.flush().await.expect("java's stdin");
    while let Ok(Some(line)) = tokio::time::timeout(Duration::from_secs(60), java_lines.recv()).await {
        java_out.push(line);
    }
    let status = tokio::time::timeout(Duration::from_secs(60), java.wait()).await.expect("Java ends in time").expect("Java ends");
    let java_out = java_out.join("\n");
    assert!(status.success() && java_out.contains("DONE"), "{java_out}");
    let javas_records = java_records(&java_out);
    for p in &javas {
        for o in 0..100 {
            assert!(javas_records.contains(&(*p, o)), "Java processed {p}@{o}");
        }
    }
    // After Java left we got its partitions and resumed at its commits: none of the records
    // Java processed (and committed) comes to us again.
    tokio::time::timeout(Duration::from_secs(60), assign_rx.wait_for(|a| a.len() == 6)).await.expect("Java's partitions ours in 60 s").unwrap();
    produce(&client, &topic, 10, "second").await;
    let want: BTreeSet<(i32, i64)> = (0..6).flat_map(|p| (0..110).map(move |o| (p, o))).collect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let got: BTreeSet<(i32, i64)> = processed.lock().unwrap().iter().copied().chain(javas_records.iter().copied()).collect();
        if got.is_superset(&want) || tokio::time::Instant::now() > deadline {
            assert!(got.is_superset(&want), "missing {:?}", want.difference(&got).take(5).collect::<Vec<_>>());
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let redone: Vec<(i32, i64)> = processed.lock().unwrap().iter().filter(|(p, o)| javas.contains(p) && *o < 100).copied().collect();
    assert!(redone.is_empty(), "we processed records Java had committed: {:?}", &redone[..redone.len().min(5)]);
    stop.send(true).unwrap();
    ours.await.unwrap();

    // Java alone resumes at our commits: only records produced after we left.
    let java_run = {
        let (bb, dir, topic, group) = (Broker { vars: b.vars.clone(), env_file: b.env_file.clone() }, dir.clone(), topic.clone(), group.clone());
        tokio::spawn(
            async move { common::java(&bb, &dir, "Member.java", MEMBER, &[bb.var("PLAINTEXT"), &topic, &group, "30"], Duration::from_secs(180)).await },
        )
    };
    tokio::time::sleep(Duration::from_secs(5)).await;
    produce(&client, &topic, 5, "third").await;
    let out = java_run.await.unwrap();
    let again: BTreeSet<(i32, i64)> = java_records(&out).into_iter().collect();
    let expect: BTreeSet<(i32, i64)> = (0..6).flat_map(|p| (110..115).map(move |o| (p, o))).collect();
    assert_eq!(again, expect, "Java resumed exactly at our commits");
    println!("mixed group: we held {ours_while_shared:?}, Java {javas:?}; each resumed the other's commits");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_committed_skips_javas_aborted_transactions() {
    let Some(b) = Broker::from_env("read_committed_skips_javas_aborted_transactions") else { return };
    let client = b.client().await;
    let topic = unique("kw-txn");
    Admin::new(client.clone()).create_topic(NewTopic::new(&topic, 1)).await.unwrap();
    let dir = std::env::temp_dir().join(unique("kw-java-txn"));
    std::fs::create_dir_all(&dir).unwrap();
    let out = common::java(&b, &dir, "Transactions.java", TRANSACTIONS, &[b.var("PLAINTEXT"), &topic, &unique("kw-txn-id")], Duration::from_secs(90)).await;
    assert!(out.contains("OK"), "{out}");
    let tp = TopicPartition::new(&topic, 0);
    let mut values = BTreeMap::new();
    for isolation in [IsolationLevel::ReadCommitted, IsolationLevel::ReadUncommitted] {
        let config = ConsumerConfig { isolation_level: isolation, auto_offset_reset: OffsetReset::Earliest, ..Default::default() };
        let mut c = Consumer::new(client.clone(), config).unwrap();
        c.assign([tp.clone()]).unwrap();
        let end = c.end_offsets(std::slice::from_ref(&tp)).await.unwrap()[&tp];
        let mut got = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while c.position(&tp).await.unwrap() < end && tokio::time::Instant::now() < deadline {
            for r in c.poll(Duration::from_millis(500)).await.unwrap() {
                got.push(String::from_utf8(r.value.unwrap().to_vec()).unwrap());
            }
        }
        assert_eq!(c.position(&tp).await.unwrap(), end, "{isolation:?}: read to the end (past the markers)");
        values.insert(format!("{isolation:?}"), got);
    }
    let committed: Vec<String> = (0..10).map(|i| format!("committed-{i}")).chain((0..5).map(|i| format!("late-{i}"))).collect();
    assert_eq!(values["ReadCommitted"], committed, "aborted records skipped, committed ones whole and in order");
    let all = &values["ReadUncommitted"];
    assert_eq!(all.len(), 10 + 10 + 5 + 3, "read_uncommitted: every data record, no markers: {all:?}");
    assert!(all.iter().any(|v| v == "aborted-3") && all.iter().any(|v| v == "aborted-late-2"));
    println!("read_committed: {} of {} records (aborted transactions skipped)", values["ReadCommitted"].len(), all.len());
    let _ = std::fs::remove_dir_all(&dir);
}
