//! The share consumer (KIP-932) against a real broker (`KWIRE_BROKER`): two of ours and Java's
//! `KafkaShareConsumer` in one share group deliver and accept every record exactly once; a
//! released record comes back with delivery count 2; a member that stalls mid-batch has its
//! records delivered to another after the acquisition lock times out, one dropped (its
//! connections closed) at once, as does a Java member whose process is killed; rejected
//! records never come back; renewing a lock keeps the records past its duration. On a broker
//! without share groups (Kafka 3.x) each test asserts the typed unsupported-version error
//! instead.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{unique, Broker};
use kwire::messages::ShareGroupDescribeRequest;
use kwire::ApiKey;
use kwire_client::{
    AcknowledgeType, AcknowledgementCommit, AcknowledgementMode, Admin, Client, ConfigOp, ConfigResource, Error, NewTopic, Producer, ProducerConfig,
    ProducerRecord, ShareConsumer, ShareConsumerConfig, ShareError, ShareRecord,
};

/// Java's share consumer in explicit mode: accepts every record, commits, and prints
/// `A|F partition offset deliveryCount` per record as the commit went (A accepted, F failed).
/// Stops `idle` ms after its last record (or after `max` ms).
const JAVA_MEMBER: &str = r#"
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public class ShareMember {
    public static void main(String[] args) {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("group.id", args[2]);
        p.put("share.acknowledgement.mode", "explicit");
        p.put("max.poll.records", "20");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        long max = Long.parseLong(args[3]), idle = Long.parseLong(args[4]);
        try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p)) {
            c.subscribe(List.of(args[1]));
            long start = System.currentTimeMillis(), last = -1;
            while (true) {
                long now = System.currentTimeMillis();
                if (now - start > max || (last > 0 && now - last > idle)) break;
                ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(200));
                if (rs.isEmpty()) continue;
                last = System.currentTimeMillis();
                Map<Integer, List<ConsumerRecord<String, String>>> byPartition = new TreeMap<>();
                for (ConsumerRecord<String, String> r : rs) {
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                    byPartition.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(r);
                }
                Map<TopicIdPartition, Optional<KafkaException>> result = c.commitSync();
                for (Map.Entry<Integer, List<ConsumerRecord<String, String>>> e : byPartition.entrySet()) {
                    boolean failed = result.entrySet().stream().anyMatch(x -> x.getKey().partition() == e.getKey() && x.getValue().isPresent());
                    for (ConsumerRecord<String, String> r : e.getValue())
                        System.out.println((failed ? "F " : "A ") + r.partition() + " " + r.offset() + " " + r.deliveryCount().orElse((short) -1));
                }
                System.out.flush();
            }
        }
        System.out.println("DONE");
    }
}
"#;

/// Java's share consumer that takes a batch, prints it (`R offset deliveryCount`, then
/// `HOLDING`) and holds it, never acknowledging, until its process is killed.
const JAVA_HOLDER: &str = r#"
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.serialization.StringDeserializer;

public class ShareHolder {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("group.id", args[2]);
        p.put("share.acknowledgement.mode", "explicit");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p);
        c.subscribe(List.of(args[1]));
        while (true) {
            ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(200));
            if (rs.isEmpty()) continue;
            for (ConsumerRecord<String, String> r : rs) System.out.println("R " + r.offset() + " " + r.deliveryCount().orElse((short) -1));
            System.out.println("HOLDING");
            System.out.flush();
            Thread.sleep(600_000);
        }
    }
}
"#;

/// Whether the broker has share groups. Kafka 4 must; on 3.x the share consumer's poll must
/// fail with the typed unsupported-version error (asserted here), and the test stops.
async fn share_groups(b: &Broker, client: &Client) -> bool {
    if b.version().starts_with('4') {
        return true;
    }
    let mut c = ShareConsumer::new(client.clone(), ShareConsumerConfig::new(unique("kw-share-old"))).unwrap();
    c.subscribe(&["any"]).unwrap();
    let e = c.poll(Duration::from_secs(10)).await.expect_err("no share groups before Kafka 4");
    assert!(matches!(e, Error::UnsupportedVersion { api: ApiKey::ShareGroupHeartbeat, .. }), "{e:?}");
    println!("Kafka {}: {e}", b.version());
    c.close().await.unwrap();
    false
}

/// A topic with `partitions`, and a share group reading it from the start (share groups start
/// at the latest offset by default), with `extra` group configs.
async fn setup(client: &Client, prefix: &str, partitions: i32, extra: &[(&str, &str)]) -> (String, String) {
    let topic = unique(prefix);
    let group = unique(&format!("{prefix}-group"));
    let admin = Admin::new(client.clone());
    admin.create_topic(NewTopic::new(&topic, partitions)).await.unwrap();
    let mut configs = vec![("share.auto.offset.reset", ConfigOp::Set("earliest".into()))];
    configs.extend(extra.iter().map(|(k, v)| (*k, ConfigOp::Set(v.to_string()))));
    admin.alter_configs(ConfigResource::Group, &group, &configs).await.unwrap();
    (topic, group)
}

async fn produce(client: &Client, topic: &str, partitions: i32, per_partition: usize) -> BTreeSet<(i32, i64)> {
    let p = Producer::new(client.clone(), ProducerConfig::default()).unwrap();
    let mut ds = Vec::new();
    for part in 0..partitions {
        for i in 0..per_partition {
            ds.push(p.send(ProducerRecord::new(topic, format!("v-{part}-{i}")).partition(part)).await.unwrap());
        }
    }
    let mut out = BTreeSet::new();
    for d in ds {
        let m = d.await.unwrap();
        out.insert((m.partition, m.offset));
    }
    p.close().await.unwrap();
    out
}

fn consumer(client: &Client, group: &str, mode: AcknowledgementMode) -> ShareConsumer {
    let config = ShareConsumerConfig { max_poll_records: 50, ..ShareConsumerConfig::new(group) }.acknowledgement_mode(mode);
    ShareConsumer::new(client.clone(), config).unwrap()
}

type Outcomes = Arc<Mutex<Vec<AcknowledgementCommit>>>;

fn record_outcomes(c: &mut ShareConsumer) -> Outcomes {
    let outcomes: Outcomes = Arc::default();
    let o = outcomes.clone();
    c.set_acknowledgement_commit_callback(move |a| o.lock().unwrap().push(a.clone()));
    outcomes
}

/// Polls until `n` records came (at most `within`).
async fn poll_n(c: &mut ShareConsumer, n: usize, within: Duration) -> Vec<ShareRecord> {
    let deadline = Instant::now() + within;
    let mut out = Vec::new();
    while out.len() < n && Instant::now() < deadline {
        out.extend(c.poll(Duration::from_millis(500)).await.unwrap());
    }
    out
}

/// The share group's assignment epoch and its members' epochs and assignments
/// (ShareGroupDescribe; one broker, so the coordinator is any broker).
async fn members(client: &Client, group: &str) -> (i32, Vec<(i32, BTreeSet<i32>)>) {
    let request = ShareGroupDescribeRequest { group_ids: vec![group.to_owned().into()], ..Default::default() };
    let Ok(r) = client.send(kwire_client::Route::Any, request).await else { return (-1, Vec::new()) };
    let Some(g) = r.groups.first() else { return (-1, Vec::new()) };
    let members =
        g.members.iter().map(|m| (m.member_epoch, m.assignment.topic_partitions.iter().flat_map(|t| t.partitions.iter().copied()).collect())).collect();
    (g.assignment_epoch, members)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_record_is_accepted_once_across_two_of_ours_and_a_java_member() {
    common::init_tracing();
    let Some(b) = Broker::from_env("every_record_is_accepted_once_across_two_of_ours_and_a_java_member") else { return };
    let client = b.client().await;
    if !share_groups(&b, &client).await {
        return;
    }
    let (topic, group) = setup(&client, "kw-share-mixed", 4, &[]).await;
    let dir = std::env::temp_dir().join(unique("kw-java-share"));
    let java = {
        let (bb, dir, topic, group) = (Broker { vars: b.vars.clone(), env_file: b.env_file.clone() }, dir.clone(), topic.clone(), group.clone());
        tokio::spawn(async move {
            common::java(&bb, &dir, "ShareMember.java", JAVA_MEMBER, &[bb.var("PLAINTEXT"), &topic, &group, "30000", "3000"], Duration::from_secs(60)).await
        })
    };
    // Ours: one implicit, one explicit (accepting each record).
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut ours = Vec::new();
    for mode in [AcknowledgementMode::Implicit, AcknowledgementMode::Explicit] {
        let mut c = consumer(&client, &group, mode);
        let outcomes = record_outcomes(&mut c);
        c.subscribe(&[&topic]).unwrap();
        let stop = stop.clone();
        ours.push(tokio::spawn(async move {
            let mut delivered = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::Acquire) {
                let records = c.poll(Duration::from_millis(200)).await.unwrap();
                for r in &records {
                    if mode == AcknowledgementMode::Explicit {
                        c.acknowledge(r, AcknowledgeType::Accept).unwrap();
                    }
                    delivered.push((r.partition, r.offset, r.delivery_count));
                }
                // Something to do per record, so the members take turns.
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            c.close().await.unwrap();
            let outcomes = outcomes.lock().unwrap().clone();
            (delivered, outcomes)
        }));
    }
    // Records once the three are members with partitions each, so each gets some.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (epoch, m) = members(&client, &group).await;
        let covered: BTreeSet<i32> = m.iter().flat_map(|(_, a)| a.iter().copied()).collect();
        if m.len() == 3 && m.iter().all(|(e, a)| *e == epoch && !a.is_empty()) && covered.len() == 4 {
            println!("assignment epoch {epoch}: {m:?}");
            break;
        }
        assert!(Instant::now() < deadline, "three members with partitions within 30 s: {m:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let n = 100;
    let produced = produce(&client, &topic, 4, n).await;
    assert_eq!(produced.len(), 4 * n);
    let java_out = java.await.unwrap();
    // Java has stopped (idle): ours take what it left, if anything, then stop.
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, std::sync::atomic::Ordering::Release);
    let mut accepted: BTreeMap<(i32, i64), Vec<&str>> = BTreeMap::new();
    let mut java_failed = 0;
    for l in java_out.lines() {
        let f: Vec<&str> = l.split(' ').collect();
        if let [kind @ ("A" | "F"), p, o, _] = f[..] {
            if kind == "A" {
                accepted.entry((p.parse().unwrap(), o.parse().unwrap())).or_default().push("java");
            } else {
                java_failed += 1;
            }
        }
    }
    let java_count = accepted.len();
    let mut delivered_ours = 0;
    for (i, t) in ours.into_iter().enumerate() {
        let (delivered, outcomes) = t.await.unwrap();
        delivered_ours += delivered.len();
        let name = if i == 0 { "kwire-implicit" } else { "kwire-explicit" };
        let delivered: BTreeSet<(i32, i64)> = delivered.iter().map(|(p, o, _)| (*p, *o)).collect();
        for o in &outcomes {
            assert!(o.error.is_none(), "{name}: {o:?}");
            for off in o.offsets_of(AcknowledgeType::Accept) {
                let key = (o.partition.partition, off);
                assert!(delivered.contains(&key), "{name} acknowledged {key:?}, which it was not given");
                accepted.entry(key).or_default().push(name);
            }
        }
    }
    let twice: Vec<_> = accepted.iter().filter(|(_, by)| by.len() > 1).collect();
    assert!(twice.is_empty(), "accepted more than once: {twice:?}");
    let got: BTreeSet<(i32, i64)> = accepted.keys().copied().collect();
    let missing: Vec<_> = produced.difference(&got).collect();
    assert!(missing.is_empty(), "{} never accepted: {:?}", missing.len(), &missing[..missing.len().min(10)]);
    assert_eq!(got, produced);
    assert_eq!(java_failed, 0, "Java's commits failed: {java_out}");
    assert!(java_count > 0, "Java's member accepted nothing: {java_out}");
    println!("{} records: Java accepted {java_count}, ours {} (delivered {delivered_ours})", produced.len(), produced.len() - java_count);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_released_record_comes_back_with_delivery_count_two() {
    common::init_tracing();
    let Some(b) = Broker::from_env("a_released_record_comes_back_with_delivery_count_two") else { return };
    let client = b.client().await;
    if !share_groups(&b, &client).await {
        return;
    }
    let (topic, group) = setup(&client, "kw-share-release", 1, &[]).await;
    produce(&client, &topic, 1, 5).await;
    let mut c = consumer(&client, &group, AcknowledgementMode::Explicit);
    c.subscribe(&[&topic]).unwrap();
    let first = poll_n(&mut c, 5, Duration::from_secs(20)).await;
    assert_eq!(first.iter().map(|r| (r.offset, r.delivery_count)).collect::<Vec<_>>(), (0..5).map(|o| (o, 1)).collect::<Vec<_>>());
    // Explicit mode: the next poll is refused until each record is acknowledged.
    let e = c.poll(Duration::ZERO).await.expect_err("unacknowledged records");
    assert!(matches!(e, Error::Share(ShareError::Unacknowledged { records: 5 })), "{e:?}");
    for r in &first {
        c.acknowledge(r, if r.offset == 2 { AcknowledgeType::Release } else { AcknowledgeType::Accept }).unwrap();
    }
    // Twice is refused.
    let e = c.acknowledge(&first[0], AcknowledgeType::Accept).expect_err("already acknowledged");
    assert!(matches!(e, Error::Share(ShareError::NotDelivered { offset: 0, .. })), "{e:?}");
    let outcomes = c.commit_sync().await.unwrap();
    assert_eq!(outcomes.len(), 1, "{outcomes:?}");
    assert!(outcomes[0].error.is_none(), "{outcomes:?}");
    assert_eq!(outcomes[0].offsets(), vec![0, 1, 2, 3, 4]);
    assert_eq!(outcomes[0].offsets_of(AcknowledgeType::Release), vec![2]);
    let again = poll_n(&mut c, 1, Duration::from_secs(10)).await;
    assert_eq!(again.iter().map(|r| (r.offset, r.delivery_count)).collect::<Vec<_>>(), vec![(2, 2)], "only the released record, delivered twice");
    assert_eq!(again[0].value.as_deref(), Some(&b"v-0-2"[..]));
    c.acknowledge(&again[0], AcknowledgeType::Accept).unwrap();
    // Sent without waiting; its outcome reaches the callback from the next poll.
    let outcomes = record_outcomes(&mut c);
    c.commit_async().await.unwrap();
    assert!(c.poll(Duration::from_secs(1)).await.unwrap().is_empty(), "nothing comes back");
    let seen = outcomes.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!((seen[0].acknowledgements.clone(), seen[0].error.is_none()), (vec![(2, AcknowledgeType::Accept)], true));
    c.close().await.unwrap();
}

/// A member takes every record of a one-partition topic and then stalls (`stall`: keeps its
/// membership and connection, never acknowledges) or dies (dropped: no acknowledgement, no
/// leaving heartbeat, its connections closed); another member gets the records, delivered a
/// second time, and accepts them. Returns how long after the first member got them.
async fn taken_over(client: &Client, prefix: &str, stall: bool) -> Duration {
    let (topic, group) = setup(client, prefix, 1, &[("share.record.lock.duration.ms", "2000")]).await;
    produce(client, &topic, 1, 10).await;
    let mut first = consumer(client, &group, AcknowledgementMode::Explicit);
    first.subscribe(&[&topic]).unwrap();
    let taken = poll_n(&mut first, 10, Duration::from_secs(20)).await;
    let got = Instant::now();
    assert_eq!(taken.iter().map(|r| (r.offset, r.delivery_count)).collect::<Vec<_>>(), (0..10).map(|o| (o, 1)).collect::<Vec<_>>());
    assert_eq!(first.acquisition_lock_timeout(), Some(Duration::from_secs(2)));
    let mut heir = consumer(client, &group, AcknowledgementMode::Implicit);
    let outcomes = record_outcomes(&mut heir);
    heir.subscribe(&[&topic]).unwrap();
    let first = if stall {
        Some(first)
    } else {
        drop(first);
        None
    };
    let again = poll_n(&mut heir, 10, Duration::from_secs(20)).await;
    let after = got.elapsed();
    assert_eq!(again.iter().map(|r| (r.offset, r.delivery_count)).collect::<Vec<_>>(), (0..10).map(|o| (o, 2)).collect::<Vec<_>>());
    heir.close().await.unwrap();
    let outcomes = outcomes.lock().unwrap().clone();
    let accepted: Vec<i64> = outcomes.iter().filter(|o| o.error.is_none()).flat_map(|o| o.offsets_of(AcknowledgeType::Accept)).collect();
    assert_eq!(accepted, (0..10).collect::<Vec<_>>(), "{outcomes:?}");
    if let Some(first) = first {
        // Its records are gone: closing releases nothing of its own.
        first.close().await.unwrap();
    }
    after
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_members_records_go_to_another_after_the_lock_times_out() {
    common::init_tracing();
    let Some(b) = Broker::from_env("a_stalled_members_records_go_to_another_after_the_lock_times_out") else { return };
    let client = b.client().await;
    if !share_groups(&b, &client).await {
        return;
    }
    let after = taken_over(&client, "kw-share-stall", true).await;
    assert!(after >= Duration::from_millis(1900), "redelivered after {after:?}, before the 2 s lock timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_members_records_go_to_another() {
    common::init_tracing();
    let Some(b) = Broker::from_env("a_dead_members_records_go_to_another") else { return };
    let client = b.client().await;
    if !share_groups(&b, &client).await {
        return;
    }
    // The broker releases a closed connection's share session's records at once (Kafka 4.1+),
    // else when the lock times out.
    let after = taken_over(&client, "kw-share-dead", false).await;
    assert!(after < Duration::from_secs(15), "{after:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejected_records_are_not_delivered_again() {
    common::init_tracing();
    let Some(b) = Broker::from_env("rejected_records_are_not_delivered_again") else { return };
    let client = b.client().await;
    if !share_groups(&b, &client).await {
        return;
    }
    let (topic, group) = setup(&client, "kw-share-reject", 1, &[]).await;
    produce(&client, &topic, 1, 6).await;
    let mut c = consumer(&client, &group, AcknowledgementMode::Explicit);
    let outcomes = record_outcomes(&mut c);
    c.subscribe(&[&topic]).unwrap();
    let first = poll_n(&mut c, 6, Duration::from_secs(20)).await;
    assert_eq!(first.len(), 6);
    // Offsets 0-2 rejected, 3-5 released: one batch, a type per offset.
    for r in &first {
        c.acknowledge(r, if r.offset < 3 { AcknowledgeType::Reject } else { AcknowledgeType::Release }).unwrap();
    }
    // Piggy-backed on this poll's ShareFetch.
    let again = poll_n(&mut c, 3, Duration::from_secs(10)).await;
    assert_eq!(again.iter().map(|r| (r.offset, r.delivery_count)).collect::<Vec<_>>(), vec![(3, 2), (4, 2), (5, 2)]);
    for r in &again {
        c.acknowledge(r, AcknowledgeType::Reject).unwrap();
    }
    assert!(c.commit_sync().await.unwrap().iter().all(|o| o.error.is_none()));
    // Nothing is delivered again, nor to the member after it left and joined again.
    let late = poll_n(&mut c, 1, Duration::from_secs(2)).await;
    assert!(late.is_empty(), "{late:?}");
    let epoch = c.member_epoch();
    assert!(epoch > 0);
    c.unsubscribe().await.unwrap();
    assert_eq!((c.member_epoch(), c.assignment().len()), (0, 0));
    let e = c.poll(Duration::ZERO).await.expect_err("not subscribed");
    assert!(matches!(e, Error::Share(ShareError::NotSubscribed)), "{e:?}");
    c.subscribe(&[&topic]).unwrap();
    let late = poll_n(&mut c, 1, Duration::from_secs(2)).await;
    assert!(late.is_empty(), "{late:?}");
    assert!(c.member_epoch() > 0, "joined again");
    c.close().await.unwrap();
    let outcomes = outcomes.lock().unwrap().clone();
    assert!(outcomes.iter().all(|o| o.error.is_none()), "{outcomes:?}");
    let acked: Vec<(i64, AcknowledgeType)> = outcomes.iter().flat_map(|o| o.acknowledgements.clone()).collect();
    use AcknowledgeType::{Reject, Release};
    assert_eq!(acked, vec![(0, Reject), (1, Reject), (2, Reject), (3, Release), (4, Release), (5, Release), (3, Reject), (4, Reject), (5, Reject)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewing_keeps_records_past_the_lock_duration() {
    common::init_tracing();
    let Some(b) = Broker::from_env("renewing_keeps_records_past_the_lock_duration") else { return };
    let client = b.client().await;
    if !share_groups(&b, &client).await {
        return;
    }
    let (topic, group) = setup(&client, "kw-share-renew", 1, &[("share.record.lock.duration.ms", "2500")]).await;
    produce(&client, &topic, 1, 4).await;
    let mut c = consumer(&client, &group, AcknowledgementMode::Explicit);
    c.subscribe(&[&topic]).unwrap();
    let records = poll_n(&mut c, 4, Duration::from_secs(20)).await;
    assert_eq!(records.len(), 4);
    // Offsets 0-1 renewed every second for 4 s; 2-3 left to time out.
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(1000)).await;
        for r in &records[..2] {
            c.acknowledge(r, AcknowledgeType::Renew).unwrap();
        }
        let renewed = c.commit_sync().await.unwrap();
        assert!(!renewed.is_empty() && renewed.iter().all(|o| o.error.is_none()), "{renewed:?}");
    }
    // Held: the renewed records are still this member's to accept, 4 s into a 2.5 s lock.
    for r in &records[..2] {
        c.acknowledge(r, AcknowledgeType::Accept).unwrap();
    }
    let held = c.commit_sync().await.unwrap();
    assert_eq!(held.len(), 1, "{held:?}");
    assert!(held[0].error.is_none(), "renewed records were not held: {held:?}");
    // The others timed out: accepting them fails, and they come back.
    for r in &records[2..] {
        c.acknowledge(r, AcknowledgeType::Accept).unwrap();
    }
    let lost = c.commit_sync().await.unwrap();
    let e = lost.first().and_then(|o| o.error.as_ref()).expect("records 2-3 timed out");
    assert_eq!(e.code(), Some(kwire::ErrorCode::INVALID_RECORD_STATE), "{e}");
    let again = poll_n(&mut c, 2, Duration::from_secs(10)).await;
    assert_eq!(again.iter().map(|r| (r.offset, r.delivery_count)).collect::<Vec<_>>(), vec![(2, 2), (3, 2)]);
    for r in &again {
        c.acknowledge(r, AcknowledgeType::Accept).unwrap();
    }
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_java_members_records_go_to_ours() {
    use tokio::io::AsyncBufReadExt;
    common::init_tracing();
    let Some(b) = Broker::from_env("a_killed_java_members_records_go_to_ours") else { return };
    let client = b.client().await;
    if !share_groups(&b, &client).await {
        return;
    }
    let (topic, group) = setup(&client, "kw-share-killed", 1, &[("share.record.lock.duration.ms", "3000")]).await;
    produce(&client, &topic, 1, 10).await;
    let dir = std::env::temp_dir().join(unique("kw-java-share-holder"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("ShareHolder.java"), JAVA_HOLDER).unwrap();
    let mut java = tokio::process::Command::new("java")
        .arg("-cp")
        .arg(format!("{}/*", b.var("KAFKA_LIB")))
        .arg("-Dlog4j2.level=warn")
        .arg(dir.join("ShareHolder.java"))
        .args([b.var("PLAINTEXT"), &topic, &group])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("java runs");
    let mut lines = tokio::io::BufReader::new(java.stdout.take().unwrap()).lines();
    let mut held = Vec::new();
    let read = async {
        while let Some(l) = lines.next_line().await.unwrap() {
            if l == "HOLDING" {
                return;
            }
            if let Some((o, count)) = l.strip_prefix("R ").and_then(|r| r.split_once(' ')) {
                held.push((o.parse::<i64>().unwrap(), count.parse::<i16>().unwrap()));
            }
        }
        panic!("Java ended without holding records");
    };
    tokio::time::timeout(Duration::from_secs(40), read).await.expect("Java holds records within 40 s");
    assert_eq!(held, (0..10).map(|o| (o, 1)).collect::<Vec<_>>());
    let mut heir = consumer(&client, &group, AcknowledgementMode::Implicit);
    let outcomes = record_outcomes(&mut heir);
    heir.subscribe(&[&topic]).unwrap();
    java.kill().await.unwrap(); // SIGKILL: no acknowledgement, no leaving
    let again = poll_n(&mut heir, 10, Duration::from_secs(20)).await;
    assert_eq!(again.iter().map(|r| (r.offset, r.delivery_count)).collect::<Vec<_>>(), (0..10).map(|o| (o, 2)).collect::<Vec<_>>());
    heir.close().await.unwrap();
    let accepted: Vec<i64> = outcomes.lock().unwrap().iter().filter(|o| o.error.is_none()).flat_map(|o| o.offsets_of(AcknowledgeType::Accept)).collect();
    assert_eq!(accepted, (0..10).collect::<Vec<_>>());
}
