//! The consumer on a 3-node cluster (`KWIRE_CLUSTER`, as tests/cluster/routing.rs): a partition's
//! leader moves while records are produced and consumed; the consumer follows it (a
//! NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH fetch, fresh metadata, its position validated
//! at the new leader with OffsetForLeaderEpoch) and no record is skipped or delivered twice.

use crate::common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kwire_client::{Admin, Client, ClientConfig, Consumer, ConsumerConfig, NewTopic, OffsetReset, Producer, ProducerConfig, ProducerRecord, TopicPartition};

/// Takes a poll's records in, checking each is the one produced at its offset.
fn take(got: &mut BTreeMap<i32, Vec<i64>>, rs: Vec<kwire_client::ConsumerRecord>) {
    for r in rs {
        assert_eq!(r.value.as_deref(), Some(format!("{}-{}", r.partition, r.offset).as_bytes()), "the record at its offset");
        got.entry(r.partition).or_default().push(r.offset);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_change_during_consumption_skips_nothing() {
    let Some(env) = common::cluster_env() else { return };
    common::init_tracing();
    let first = env["BOOTSTRAP"].split(',').next().unwrap().to_owned();
    let client = Client::connect(ClientConfig::new(&first)).await.unwrap();
    let topic = common::unique("kw-consume-move");
    Admin::new(client.clone()).create_topic(NewTopic::new(&topic, 2).replication_factor(3)).await.unwrap();
    // Topics reach every broker's metadata a little after CreateTopics answers.
    common::eventually("the topic in metadata", || async { client.topic(&topic).await.is_ok() }).await;

    let stop = Arc::new(AtomicBool::new(false));
    let producing = {
        let (client, topic, stop) = (client.clone(), topic.clone(), stop.clone());
        tokio::spawn(async move {
            let p = Producer::new(client, ProducerConfig::default()).unwrap();
            let mut sent = [0i64; 2];
            while !stop.load(Ordering::SeqCst) {
                let mut ds = Vec::new();
                for (part, n) in sent.iter_mut().enumerate() {
                    for _ in 0..10 {
                        ds.push((part, p.send(ProducerRecord::new(&topic, format!("{part}-{n}")).partition(part as i32)).await.unwrap()));
                        *n += 1;
                    }
                }
                for (part, d) in ds {
                    let m = d.await.unwrap();
                    assert_eq!(m.partition, part as i32);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            p.close().await.unwrap();
            sent
        })
    };

    let config = ConsumerConfig { auto_offset_reset: OffsetReset::Earliest, max_poll_records: 50, ..Default::default() };
    let mut c = Consumer::new(client.clone(), config).unwrap();
    let tps: Vec<TopicPartition> = (0..2).map(|p| TopicPartition::new(&topic, p)).collect();
    c.assign(tps.clone()).unwrap();
    let mut got: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    // Consume a while, then move partition 0's leader (from another client: the consumer's
    // metadata is stale until a fetch tells it), keep consuming, move it again.
    let admin_client = Client::connect(ClientConfig::new(&first)).await.unwrap();
    for round in 0..2 {
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until {
            let rs = c.poll(Duration::from_millis(200)).await.unwrap();
            take(&mut got, rs);
        }
        let before = got.get(&0).map_or(0, Vec::len);
        let mover = {
            let (admin_client, topic) = (admin_client.clone(), topic.clone());
            tokio::spawn(async move { common::move_leader(&admin_client, &topic, 0).await })
        };
        while !mover.is_finished() {
            let rs = c.poll(Duration::from_millis(200)).await.unwrap();
            take(&mut got, rs);
        }
        let new_leader = mover.await.unwrap();
        let until = Instant::now() + Duration::from_secs(3);
        while Instant::now() < until {
            let rs = c.poll(Duration::from_millis(200)).await.unwrap();
            take(&mut got, rs);
        }
        assert!(got.get(&0).map_or(0, Vec::len) > before, "round {round}: consuming from the new leader {new_leader}");
        assert_eq!(c.client().metadata().leader(&topic, 0), Some(new_leader), "the consumer's metadata followed the move");
    }
    stop.store(true, Ordering::SeqCst);
    let sent = producing.await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while (0..2).any(|p| got.get(&p).map_or(0, Vec::len) < sent[p as usize] as usize) && Instant::now() < deadline {
        let rs = c.poll(Duration::from_millis(200)).await.unwrap();
        take(&mut got, rs);
    }
    for p in 0..2 {
        let offsets = got.get(&p).cloned().unwrap_or_default();
        let expect: Vec<i64> = (0..sent[p as usize]).collect();
        assert_eq!(offsets.len(), expect.len(), "partition {p}: {} of {} records", offsets.len(), expect.len());
        assert_eq!(offsets, expect, "partition {p}: every offset once, in order");
    }
    let stats = c.stats();
    assert!(stats.validations >= 1, "positions validated with OffsetForLeaderEpoch after the moves: {stats:?}");
    assert_eq!(stats.truncations, 0, "{stats:?}");
    println!("{} + {} records across two leader moves, none skipped or repeated; {stats:?}", sent[0], sent[1]);
}
