//! The consumer with partitions assigned by hand, against the real broker: every record back
//! in order, fetch sessions, positions, ListOffsets, seek, offset reset, commits, streams and
//! their backpressure.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{unique, Broker};
use futures_util::StreamExt;
use kwire_client::{
    Admin, Consumer, ConsumerConfig, Error, NewTopic, OffsetAndMetadata, OffsetReset, OffsetSpec, Producer, ProducerConfig, ProducerRecord, TopicPartition,
};

/// The records' first timestamp (an hour ago: see `common::recent_ts`).
fn ts0() -> i64 {
    common::recent_ts()
}

async fn produce(client: &kwire_client::Client, topic: &str, partitions: i32, per_partition: usize, value_len: usize) {
    // Small batches: several per fetch, and several fetches per partition.
    let producer = Producer::new(client.clone(), ProducerConfig { batch_size: 1000, ..Default::default() }).unwrap();
    let mut ds = Vec::new();
    for p in 0..partitions {
        for i in 0..per_partition {
            let value = format!("{p}-{i}-{}", "x".repeat(value_len));
            let r = ProducerRecord::new(topic, value).key(format!("k{i}")).partition(p).timestamp(ts0() + i as i64);
            ds.push(producer.send(r).await.unwrap());
        }
    }
    for d in ds {
        d.await.unwrap();
    }
    producer.close().await.unwrap();
}

/// Polls until `n` records came (or 30 s passed).
async fn poll_n(c: &mut Consumer, n: usize) -> Vec<kwire_client::ConsumerRecord> {
    let mut out = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while out.len() < n && tokio::time::Instant::now() < deadline {
        out.extend(c.poll(Duration::from_millis(500)).await.unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manual_assignment_positions_offsets_and_fetch_sessions() {
    let Some(b) = Broker::from_env("manual_assignment_positions_offsets_and_fetch_sessions") else { return };
    let client = b.client().await;
    let topic = unique("kw-consume");
    Admin::new(client.clone()).create_topic(NewTopic::new(&topic, 3)).await.unwrap();
    produce(&client, &topic, 3, 100, 50).await;
    let tps: Vec<TopicPartition> = (0..3).map(|p| TopicPartition::new(&topic, p)).collect();

    // Small partition fetches: several rounds, so the fetch session goes incremental.
    let config = ConsumerConfig { auto_offset_reset: OffsetReset::Earliest, max_partition_fetch_bytes: 2000, ..Default::default() };
    let mut c = Consumer::new(client.clone(), config.clone()).unwrap();
    c.assign(tps.clone()).unwrap();
    let records = poll_n(&mut c, 300).await;
    assert_eq!(records.len(), 300, "every record once");
    let mut by_partition: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    for r in &records {
        let i = by_partition.entry(r.partition).or_default();
        let n = i.len();
        assert_eq!(r.offset, n as i64, "in order, without gaps, in partition {}", r.partition);
        assert_eq!(r.value.as_deref(), Some(format!("{}-{n}-{}", r.partition, "x".repeat(50)).as_bytes()));
        assert_eq!(r.key.as_deref(), Some(format!("k{n}").as_bytes()));
        assert_eq!(r.timestamp, ts0() + n as i64);
        i.push(r.offset);
    }
    assert_eq!(by_partition.len(), 3);
    for tp in &tps {
        assert_eq!(c.position(tp).await.unwrap(), 100);
    }
    let stats = c.stats();
    let leader = client.metadata().leader(&topic, 0).unwrap();
    assert!(stats.sessions_created >= 1, "the broker made a fetch session: {stats:?}");
    assert!(stats.incremental_fetches >= 3 && stats.fetches == stats.incremental_fetches + 1, "one full fetch, then incremental ones: {stats:?}");
    assert!(c.fetch_session(leader).is_some_and(|(id, epoch)| id != 0 && epoch > 1), "{:?}", c.fetch_session(leader));
    println!("fetch stats {stats:?}");

    // ListOffsets.
    let tp0 = tps[0].clone();
    assert_eq!(c.beginning_offsets(&tps).await.unwrap()[&tp0], 0);
    assert_eq!(c.end_offsets(&tps).await.unwrap()[&tps[2]], 100);
    let by_time = c.list_offsets(&[(tp0.clone(), OffsetSpec::Timestamp(ts0() + 50))]).await.unwrap();
    assert_eq!(by_time[&tp0].0, 50);
    let past = c.list_offsets(&[(tp0.clone(), OffsetSpec::Timestamp(ts0() + 1000))]).await.unwrap();
    assert!(past.is_empty(), "no record that late: {past:?}");
    // Java's offsetsForTimes: the first record at or after each time, or none.
    let times = BTreeMap::from([(tp0.clone(), ts0() + 50), (tps[1].clone(), ts0() + 1000), (tps[2].clone(), 0)]);
    let found = c.offsets_for_times(&times).await.unwrap();
    assert_eq!(found.len(), 3, "an answer for every partition asked: {found:?}");
    let at = found[&tp0].expect("a record at ts0 + 50");
    assert_eq!((at.offset, at.timestamp), (50, ts0() + 50));
    assert!(at.leader_epoch.is_some_and(|e| e >= 0), "{at:?}");
    assert_eq!(found[&tps[1]], None, "no record that late");
    assert_eq!(found[&tps[2]].map(|o| (o.offset, o.timestamp)), Some((0, ts0())));
    assert!(matches!(c.offsets_for_times(&BTreeMap::from([(tp0.clone(), -1)])).await, Err(Error::Config(_))));
    // Java's currentLag: from the last fetch response, no request.
    for tp in &tps {
        assert_eq!(c.current_lag(tp), Some(0), "{tp} read to its end");
    }
    assert_eq!(c.current_lag(&TopicPartition::new(&topic, 7)), None, "not assigned");

    // Seek back: only partition 0's tail comes again.
    c.seek(&tp0, 90).unwrap();
    assert_eq!(c.current_lag(&tp0), Some(10));
    let again = poll_n(&mut c, 10).await;
    assert_eq!(again.iter().map(|r| (r.partition, r.offset)).collect::<Vec<_>>(), (90..100).map(|o| (0, o)).collect::<Vec<_>>());
    c.seek_to_beginning(&[tps[1].clone()]);
    assert_eq!(c.position(&tps[1]).await.unwrap(), 0);
    c.seek_to_end(&[]);
    assert_eq!(c.position(&tps[1]).await.unwrap(), 100);

    // Out of range, by reset policy.
    for (reset, expect) in [(OffsetReset::Earliest, Some(0)), (OffsetReset::Latest, Some(100)), (OffsetReset::None, None)] {
        let mut c = Consumer::new(client.clone(), ConsumerConfig { auto_offset_reset: reset, ..Default::default() }).unwrap();
        c.assign([tp0.clone()]).unwrap();
        c.seek(&tp0, 5000).unwrap();
        let r = c.poll(Duration::from_secs(2)).await;
        match expect {
            Some(at) => {
                let got = r.unwrap();
                assert!(got.len() as i64 <= 100 - at, "{reset:?}");
                assert!(got.first().is_none_or(|r| r.offset == at), "{reset:?} starts at {at}");
                if got.is_empty() {
                    assert_eq!(c.position(&tp0).await.unwrap(), at, "{reset:?}");
                }
            }
            None => assert!(matches!(r, Err(Error::OffsetOutOfRange { offset: 5000, .. })), "{r:?}"),
        }
    }
    // Without a committed offset and reset none: NoOffset.
    let mut none =
        Consumer::new(client.clone(), ConsumerConfig { auto_offset_reset: OffsetReset::None, group_id: Some(unique("kw-none")), ..Default::default() })
            .unwrap();
    none.assign([tp0.clone()]).unwrap();
    assert!(matches!(none.poll(Duration::from_secs(1)).await, Err(Error::NoOffset(_))));
    // Commits need a group id.
    assert!(matches!(c.commit().await, Err(Error::Config(_))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commits_resume_where_the_last_consumer_stopped() {
    let Some(b) = Broker::from_env("commits_resume_where_the_last_consumer_stopped") else { return };
    let client = b.client().await;
    let topic = unique("kw-commit");
    Admin::new(client.clone()).create_topic(NewTopic::new(&topic, 2)).await.unwrap();
    produce(&client, &topic, 2, 50, 10).await;
    let group = unique("kw-commit-group");
    let tps: Vec<TopicPartition> = (0..2).map(|p| TopicPartition::new(&topic, p)).collect();
    let config = ConsumerConfig {
        group_id: Some(group.clone()),
        auto_offset_reset: OffsetReset::Earliest,
        enable_auto_commit: false,
        max_poll_records: 30,
        ..Default::default()
    };
    let mut c = Consumer::new(client.clone(), config.clone()).unwrap();
    c.assign(tps.clone()).unwrap();
    assert!(c.committed(&tps).await.unwrap().is_empty(), "nothing committed yet");
    let first = c.poll(Duration::from_secs(10)).await.unwrap();
    assert!(!first.is_empty() && first.len() <= 30, "max_poll_records: {}", first.len());
    c.commit().await.unwrap();
    let committed = c.committed(&tps).await.unwrap();
    for tp in &tps {
        let pos = c.position(tp).await.unwrap();
        if pos > 0 {
            assert_eq!(committed[tp].offset, pos, "{tp}");
            assert!(committed[tp].leader_epoch.is_some(), "the epoch is committed too");
        }
    }
    // Explicit offsets with metadata.
    let explicit: BTreeMap<_, _> = [(tps[1].clone(), OffsetAndMetadata { offset: 40, leader_epoch: None, metadata: Some("note".into()) })].into();
    c.commit_offsets(&explicit).await.unwrap();
    assert_eq!(c.committed(&tps[1..]).await.unwrap()[&tps[1]], explicit[&tps[1]]);
    c.close().await.unwrap();

    // A new consumer of the group starts at the commits.
    let mut d = Consumer::new(client.clone(), config).unwrap();
    d.assign(tps.clone()).unwrap();
    let p0 = committed.get(&tps[0]).map_or(0, |o| o.offset);
    assert_eq!(d.position(&tps[0]).await.unwrap(), p0);
    assert_eq!(d.position(&tps[1]).await.unwrap(), 40);
    let rest = poll_n(&mut d, (50 - p0 as usize) + 10).await;
    assert_eq!(rest.len(), (50 - p0 as usize) + 10);
    assert!(rest.iter().all(|r| if r.partition == 0 { r.offset >= p0 } else { r.offset >= 40 }));

    // Auto-commit: positions committed at the interval, and on close.
    let auto = ConsumerConfig {
        group_id: Some(unique("kw-auto")),
        auto_offset_reset: OffsetReset::Earliest,
        auto_commit_interval: Duration::from_millis(100),
        ..Default::default()
    };
    let mut e = Consumer::new(client.clone(), auto.clone()).unwrap();
    e.assign(tps.clone()).unwrap();
    let got = poll_n(&mut e, 100).await;
    assert_eq!(got.len(), 100);
    e.close().await.unwrap();
    let mut f = Consumer::new(client.clone(), auto).unwrap();
    f.assign(tps.clone()).unwrap();
    assert_eq!(f.committed(&tps).await.unwrap().values().map(|o| o.offset).collect::<Vec<_>>(), vec![50, 50]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_fetch_only_as_fast_as_they_are_read() {
    let Some(b) = Broker::from_env("streams_fetch_only_as_fast_as_they_are_read") else { return };
    let client = b.client().await;
    let topic = unique("kw-stream");
    Admin::new(client.clone()).create_topic(NewTopic::new(&topic, 1)).await.unwrap();
    produce(&client, &topic, 1, 2000, 1000).await;
    let tp = TopicPartition::new(&topic, 0);
    let config = ConsumerConfig { auto_offset_reset: OffsetReset::Earliest, max_partition_fetch_bytes: 64 << 10, ..Default::default() };
    let mut c = Consumer::new(client.clone(), config).unwrap();
    c.assign([tp.clone()]).unwrap();
    let first = {
        let mut s = std::pin::pin!(c.stream());
        s.next().await.unwrap().unwrap()
    };
    assert_eq!(first.offset, 0);
    let before = c.stats();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = c.stats();
    assert_eq!(before.fetches, after.fetches, "no fetching while the reader is idle");
    // One partition fetch of at most 64 KiB (plus one batch, which the broker may complete).
    assert!(after.buffered_bytes <= (64 << 10) + 20_000, "bounded buffer: {after:?}");
    assert!(after.buffered_records > 0 && after.buffered_records < 100, "{after:?}");

    let mut next = 1;
    {
        let mut s = std::pin::pin!(c.stream());
        while next < 2000 {
            let r = tokio::time::timeout(Duration::from_secs(30), s.next()).await.expect("records in time").unwrap().unwrap();
            assert_eq!(r.offset, next);
            next += 1;
        }
    }
    assert!(c.stats().fetches >= 2000 * 1000 / (64 << 10), "many small fetches: {:?}", c.stats());
    // Batches: what is left is nothing; a new record comes as a batch of one.
    produce(&client, &topic, 1, 1, 5).await;
    let mut batches = std::pin::pin!(c.batches());
    let batch = tokio::time::timeout(Duration::from_secs(10), batches.next()).await.unwrap().unwrap().unwrap();
    assert_eq!(batch.iter().map(|r| r.offset).collect::<Vec<_>>(), vec![2000]);
}
