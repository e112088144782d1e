//! Subscriptions by pattern against the real broker, both group protocols: the classic member
//! matches topic names itself (Java's `subscribe(Pattern)`), a KIP-848 member has the group
//! coordinator match them (`SubscribedTopicRegex`, Kafka 4.0+; 3.9's v0 heartbeat has no
//! regex, and the consumer says so). Matching topics' records come, others' never (a name
//! matches whole, not in part); a topic created later joins, a deleted one leaves.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use common::{unique, Broker};
use kwire_client::{Admin, Client, Consumer, ConsumerConfig, Error, GroupProtocol, NewTopic, OffsetReset, Producer, ProducerConfig, ProducerRecord};

async fn produce(client: &Client, topic: &str, partitions: i32, per_partition: usize) {
    let producer = Producer::new(client.clone(), ProducerConfig::default()).unwrap();
    let mut ds = Vec::new();
    for p in 0..partitions {
        for i in 0..per_partition {
            ds.push(producer.send(ProducerRecord::new(topic, format!("{topic}:{p}:{i}")).partition(p)).await.unwrap());
        }
    }
    for d in ds {
        d.await.unwrap();
    }
    producer.close().await.unwrap();
}

/// Polls until `done` holds for the records read per topic, for at most `secs`.
async fn poll_until(c: &mut Consumer, seen: &mut BTreeMap<String, BTreeSet<String>>, secs: u64, done: impl Fn(&BTreeMap<String, BTreeSet<String>>) -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    while !done(seen) {
        assert!(tokio::time::Instant::now() < deadline, "not within {secs} s; read {:?}", seen.iter().map(|(t, v)| (t, v.len())).collect::<Vec<_>>());
        for r in c.poll(Duration::from_millis(300)).await.unwrap() {
            let value = String::from_utf8(r.value.unwrap().to_vec()).unwrap();
            assert!(seen.entry(r.topic.to_string()).or_default().insert(value.clone()), "{value} read twice");
        }
    }
}

async fn pattern_subscription(b: &Broker, protocol: GroupProtocol) {
    let client = Client::connect(kwire_client::ClientConfig { metadata_max_age: Duration::from_secs(1), ..b.plaintext() }).await.unwrap();
    let admin = Admin::new(client.clone());
    let base = unique(match protocol {
        GroupProtocol::Classic => "kwpat-classic",
        GroupProtocol::Consumer => "kwpat-kip848",
    });
    let (a, bb, c_topic) = (format!("{base}-a"), format!("{base}-b"), format!("{base}-c"));
    // Names that contain the pattern's text but do not match it whole.
    let (other, prefixed) = (format!("{base}x-other"), format!("pre{base}-z"));
    for (t, n) in [(&a, 2), (&bb, 1), (&other, 1), (&prefixed, 1)] {
        admin.create_topic(NewTopic::new(t, n)).await.unwrap();
        produce(&client, t, n, 10).await;
    }
    let config = ConsumerConfig { auto_offset_reset: OffsetReset::Earliest, group_protocol: protocol, ..ConsumerConfig::group(unique("kwpat-group")) };
    let mut c = Consumer::new(client.clone(), config).unwrap();
    assert!(matches!(c.subscribe_pattern("kwpat-(unclosed"), Err(Error::Config(_))), "not a regular expression");
    c.subscribe_pattern(&format!("{base}-.*")).unwrap();

    let mut seen = BTreeMap::new();
    poll_until(&mut c, &mut seen, 60, |s| s.get(&a).map_or(0, BTreeSet::len) == 20 && s.get(&bb).map_or(0, BTreeSet::len) == 10).await;
    let topics: BTreeSet<String> = c.assignment().iter().map(|tp| tp.topic.clone()).collect();
    assert_eq!(topics, BTreeSet::from([a.clone(), bb.clone()]));

    // A new matching topic joins the subscription.
    admin.create_topic(NewTopic::new(&c_topic, 1)).await.unwrap();
    produce(&client, &c_topic, 1, 10).await;
    poll_until(&mut c, &mut seen, 90, |s| s.get(&c_topic).map_or(0, BTreeSet::len) == 10).await;

    // A deleted one leaves it.
    admin.delete_topics(&[&a]).await.unwrap().remove(0).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    while c.assignment().iter().any(|tp| tp.topic == a) {
        assert!(tokio::time::Instant::now() < deadline, "{a} still assigned: {:?}", c.assignment());
        c.poll(Duration::from_millis(300)).await.unwrap();
    }
    let topics: BTreeSet<String> = c.assignment().iter().map(|tp| tp.topic.clone()).collect();
    assert_eq!(topics, BTreeSet::from([bb.clone(), c_topic.clone()]));
    assert!(!seen.contains_key(&other) && !seen.contains_key(&prefixed), "only whole-name matches: {:?}", seen.keys());
    assert_eq!(seen.values().map(BTreeSet::len).sum::<usize>(), 40, "every record once");
    c.close().await.unwrap();
    admin.delete_topics(&[&bb, &c_topic, &other, &prefixed]).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_classic_member_matches_the_pattern_itself() {
    let Some(b) = Broker::from_env("a_classic_member_matches_the_pattern_itself") else { return };
    common::init_tracing();
    pattern_subscription(&b, GroupProtocol::Classic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kip848_member_has_the_coordinator_match_the_pattern() {
    let Some(b) = Broker::from_env("a_kip848_member_has_the_coordinator_match_the_pattern") else { return };
    common::init_tracing();
    if !common::kip848_supported(&b).await {
        return;
    }
    if b.version().starts_with('3') {
        // ConsumerGroupHeartbeat v0 only: no SubscribedTopicRegex.
        let config = ConsumerConfig { group_protocol: GroupProtocol::Consumer, ..ConsumerConfig::group(unique("kwpat-group")) };
        let mut c = Consumer::new(b.client().await, config).unwrap();
        c.subscribe_pattern("kwpat-.*").unwrap();
        let mut result = Ok(Vec::new());
        for _ in 0..20 {
            result = c.poll(Duration::from_millis(300)).await;
            if result.is_err() {
                break;
            }
        }
        assert!(matches!(&result, Err(Error::UnsupportedVersion { api: kwire::ApiKey::ConsumerGroupHeartbeat, .. })), "{result:?}");
        return;
    }
    pattern_subscription(&b, GroupProtocol::Consumer).await;
}
