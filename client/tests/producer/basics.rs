//! The producer against the real broker: Java's partitioning, read-back, codecs, acks,
//! idempotence, buffer memory, flush and close, topics by id.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{fetch_all, unique, Broker};
use kwire::messages::{
    produce_request::{PartitionProduceData, TopicProduceData},
    InitProducerIdRequest, ProduceRequest,
};
use kwire::runtime::records::{Compression, Record, RecordBatchBuilder};
use kwire::{ApiKey, Bytes};
use kwire_client::partitioner::partition_for_key;
use kwire_client::{Acks, Admin, Client, ClientConfig, Error, NewTopic, Producer, ProducerConfig, ProducerError, ProducerRecord};

async fn topic(client: &Client, prefix: &str, partitions: i32) -> String {
    let name = unique(prefix);
    Admin::new(client.clone()).create_topic(NewTopic::new(&name, partitions)).await.expect("creates the topic");
    name
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyed_records_land_where_java_puts_them_and_read_back_identically() {
    let Some(b) = Broker::from_env("keyed_records_land_where_java_puts_them_and_read_back_identically") else { return };
    let client = b.client().await;
    let name = topic(&client, "kw-keyed", 6).await;
    let producer = Producer::new(client.clone(), ProducerConfig::default()).unwrap();
    let mut deliveries = Vec::new();
    let mut sent: BTreeMap<i32, Vec<(Bytes, Bytes, i64)>> = BTreeMap::new();
    for i in 0..300 {
        let (key, value) = (Bytes::from(format!("key-{i}")), Bytes::from(format!("value-{i}-{}", "x".repeat(i % 50))));
        let ts = common::recent_ts() + i as i64;
        let record = ProducerRecord::new(&name, value.clone()).key(key.clone()).timestamp(ts).header("i", Some(Bytes::from(i.to_string())));
        deliveries.push((key.clone(), producer.send(record).await.unwrap()));
        sent.entry(partition_for_key(&key, 6)).or_default().push((key, value, ts));
    }
    let mut offsets: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    for (key, d) in deliveries {
        let m = d.await.unwrap();
        assert_eq!(m.partition, partition_for_key(&key, 6), "key {key:?}");
        offsets.entry(m.partition).or_default().push(m.offset);
    }
    for (p, o) in &offsets {
        assert_eq!(*o, (0..o.len() as i64).collect::<Vec<_>>(), "partition {p}: offsets in send order");
    }
    assert_eq!(sent.len(), 6, "300 keys spread over all partitions");
    for (p, records) in &sent {
        let back = fetch_all(&client, &name, *p, records.len()).await;
        for f in &back {
            let i = f.record.key.as_deref().and_then(|k| std::str::from_utf8(&k[4..]).ok()).unwrap().to_owned();
            assert_eq!(f.record.headers.to_vec(), vec![kwire::runtime::records::Header::new("i", Some(Bytes::from(i)))]);
        }
        let back: Vec<_> = back.iter().map(|f| (f.record.key.clone().unwrap(), f.record.value.clone().unwrap(), f.record.timestamp)).collect();
        assert_eq!(&back, records, "partition {p} reads back identically");
    }
    let back = fetch_all(&client, &name, 0, 1).await;
    assert!(back[0].producer_id >= 0, "idempotent by default: batches carry a producer id");
    producer.close().await.unwrap();
    let err = producer.send(ProducerRecord::new(&name, "late")).await.err().expect("closed");
    assert!(matches!(err, Error::Producer(_)), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_codec_and_acks_level() {
    let Some(b) = Broker::from_env("every_codec_and_acks_level") else { return };
    let client = b.client().await;
    let cases = [
        (Compression::None, Acks::All, true),
        (Compression::Gzip, Acks::All, true),
        (Compression::Snappy, Acks::Leader, false),
        (Compression::Lz4, Acks::All, false),
        (Compression::Zstd, Acks::All, true),
        (Compression::None, Acks::None, false),
    ];
    for (compression, acks, idempotence) in cases {
        let name = topic(&client, "kw-codec", 1).await;
        let config = ProducerConfig { compression, acks, idempotence, linger: Duration::from_millis(20), batch_size: 2000, ..Default::default() };
        let producer = Producer::new(client.clone(), config).unwrap();
        let values: Vec<Bytes> = (0..200).map(|i| Bytes::from(format!("{compression:?}-{i}-{}", "abc".repeat(i % 30)))).collect();
        let mut ds = Vec::new();
        for v in &values {
            ds.push(producer.send(ProducerRecord::new(&name, v.clone()).partition(0)).await.unwrap());
        }
        producer.flush().await.unwrap();
        for (i, d) in ds.into_iter().enumerate() {
            let m = d.await.unwrap();
            let expected = if acks == Acks::None { -1 } else { i as i64 };
            assert_eq!(m.offset, expected, "{compression:?} {acks:?}");
        }
        let back = fetch_all(&client, &name, 0, values.len()).await;
        let got: Vec<Bytes> = back.iter().map(|f| f.record.value.clone().unwrap()).collect();
        assert_eq!(got, values, "{compression:?} {acks:?} reads back");
        assert!(back.iter().all(|f| f.compression == compression), "{compression:?}");
        assert_eq!(back.iter().all(|f| f.producer_id >= 0), idempotence, "{compression:?}: producer id iff idempotent");
        if idempotence {
            // Sequences run on across batches: each batch starts where the previous ended, except
            // where an epoch bump (KIP-360, after a sequence error the broker reported) restarts
            // them at 0, and there are exactly as many restarts as the producer counted bumps.
            let (mut batches, mut restarts, mut next) = (0, 0, 0i64);
            let mut current = None;
            for f in &back {
                if current != Some(f.base_sequence) {
                    batches += 1;
                    let seq = i64::from(f.base_sequence);
                    if seq != next {
                        assert_eq!(seq, 0, "{compression:?}: base sequence of the batch at {} (expected {next})", f.record.offset);
                        restarts += 1;
                    }
                    current = Some(f.base_sequence);
                    next = seq;
                }
                next += 1;
            }
            assert!(batches > 1, "{compression:?}: several batches");
            assert_eq!(restarts as u64, producer.stats().epoch_bumps as u64, "{compression:?}: a restart of the sequences per epoch bump");
        }
        producer.close().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unkeyed_records_stick_to_a_partition_per_batch() {
    let Some(b) = Broker::from_env("unkeyed_records_stick_to_a_partition_per_batch") else { return };
    let client = b.client().await;
    let name = topic(&client, "kw-sticky", 4).await;
    let config = ProducerConfig { linger: Duration::from_millis(200), batch_size: 1000, ..Default::default() };
    let producer = Producer::new(client.clone(), config).unwrap();
    let mut ds = Vec::new();
    // Records of 313 bytes as Java counts them (304 of value; lengths, deltas and attributes;
    // one timestamp, so every delta is 0) in 1000-byte batches: three and the batch header's 61
    // fill a batch exactly, so KIP-794 moves on after every third record.
    let ts = 1_700_000_000_000;
    for i in 0..200 {
        ds.push(producer.send(ProducerRecord::new(&name, format!("{i:0304}")).timestamp(ts)).await.unwrap());
    }
    let mut partitions = Vec::new();
    for d in ds {
        partitions.push(d.await.unwrap().partition);
    }
    let mut used = partitions.clone();
    used.sort();
    used.dedup();
    println!("sticky: partitions {used:?}, by 3: {:?}", partitions.iter().step_by(3).collect::<Vec<_>>());
    // The runs of records on one partition: whole batches of three (the next partition is drawn
    // at random, so it may be the same one again), and not always pairs of batches (as when
    // records counted larger and the switch came at twice batch_size, after six).
    let mut runs = vec![1usize];
    for w in partitions.windows(2) {
        match runs.last_mut() {
            Some(n) if w[0] == w[1] => *n += 1,
            _ => runs.push(1),
        }
    }
    let last = runs.pop().unwrap_or(0);
    assert!(runs.iter().all(|n| n % 3 == 0) && last % 3 == 2, "runs of whole batches of three: {runs:?} then {last}");
    assert!(runs.iter().any(|n| n % 6 == 3), "a switch after every batch: {runs:?}");
    assert!(used.len() >= 2, "moves on to other partitions: {partitions:?}");
    producer.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffer_memory_is_bounded() {
    let Some(b) = Broker::from_env("buffer_memory_is_bounded") else { return };
    let client = b.client().await;
    let name = topic(&client, "kw-memory", 1).await;
    let config = ProducerConfig {
        buffer_memory: 3000,
        max_block: Duration::from_millis(300),
        linger: Duration::from_secs(30),
        batch_size: 1 << 20,
        ..Default::default()
    };
    let producer = Producer::new(client.clone(), config).unwrap();
    let value = Bytes::from(vec![b'v'; 1000]);
    let d1 = producer.send(ProducerRecord::new(&name, value.clone())).await.unwrap();
    let d2 = producer.send(ProducerRecord::new(&name, value.clone())).await.unwrap();
    let start = std::time::Instant::now();
    let err = producer.send(ProducerRecord::new(&name, value.clone())).await.err().expect("the buffer is full");
    assert!(start.elapsed() >= Duration::from_millis(250), "send waited max_block");
    assert!(matches!(&err, Error::Producer(ProducerError::BufferFull { .. }) if err.to_string().contains("buffer memory")), "{err:?}");
    let err = producer.send(ProducerRecord::new(&name, Bytes::from(vec![0; 5000]))).await.err().expect("larger than the buffer");
    assert!(matches!(err, Error::Producer(_)));
    producer.flush().await.unwrap();
    assert_eq!(d1.await.unwrap().offset, 0);
    assert_eq!(d2.await.unwrap().offset, 1);
    // Memory came back.
    producer.send(ProducerRecord::new(&name, value)).await.unwrap();
    producer.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_topics_and_partitions_are_typed_errors() {
    let Some(b) = Broker::from_env("unknown_topics_and_partitions_are_typed_errors") else { return };
    let client = b.client().await;
    let name = topic(&client, "kw-unknown", 2).await;
    let config = ProducerConfig { max_block: Duration::from_millis(300), ..Default::default() };
    let producer = Producer::new(client.clone(), config).unwrap();
    let err = producer.send(ProducerRecord::new(&name, "x").partition(5)).await.err().expect("no partition 5");
    assert!(matches!(err, Error::UnknownTopicOrPartition { .. }), "{err:?}");
    let err = producer.send(ProducerRecord::new("kw-no-such-topic", "x")).await.err().expect("no such topic");
    assert!(matches!(err, Error::UnknownTopicOrPartition { .. }), "{err:?}");
    producer.close().await.unwrap();
}

/// What the producer's epoch bump (KIP-360, as Java's idempotent producer does it) relies on,
/// against the real broker: it takes the same producer id with the next epoch from sequence 0,
/// then fences the old epoch; and InitProducerId with the current id and epoch gives a
/// non-transactional producer a new id, not a bumped epoch (so the producer does not ask).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_broker_takes_a_locally_bumped_epoch_from_sequence_0() {
    let Some(b) = Broker::from_env("the_broker_takes_a_locally_bumped_epoch_from_sequence_0") else { return };
    let client = b.client().await;
    let name = topic(&client, "kw-epoch", 1).await;
    common::eventually("the topic's leader", || async { client.topic(&name).await.is_ok_and(|t| t.partitions.iter().all(|p| p.leader >= 0)) }).await;
    let init = |producer_id: i64, producer_epoch: i16| {
        let client = client.clone();
        async move {
            let request = InitProducerIdRequest { transactional_id: None, transaction_timeout_ms: 60_000, producer_id, producer_epoch, ..Default::default() };
            let r = client.send(kwire_client::Route::Any, request).await.unwrap();
            (r.error_code, r.producer_id, r.producer_epoch)
        }
    };
    let produce = |pid: i64, epoch: i16, sequence: i32| {
        let (client, name) = (client.clone(), name.clone());
        async move {
            let mut builder = RecordBatchBuilder::new().producer(pid, epoch, sequence);
            builder.append(Record::new(0, common::recent_ts(), None, Some(Bytes::from(format!("{epoch}/{sequence}"))))).unwrap();
            // `records` is nullable in the 3.9 specs, not in later ones: `From` covers both.
            #[allow(clippy::useless_conversion)]
            let request = ProduceRequest {
                acks: -1,
                timeout_ms: 10_000,
                // Names up to Produce v12, ids from v13: set both, the version picks.
                topic_data: vec![TopicProduceData {
                    name: name.clone().into(),
                    topic_id: client.metadata().topics.get(&name).map(|t| t.id).unwrap_or_default(),
                    partition_data: vec![PartitionProduceData { index: 0, records: Some(builder.build().unwrap()).into(), ..Default::default() }],
                    ..Default::default()
                }],
                ..Default::default()
            };
            let r = client.send(kwire_client::Route::Leader(&name, 0), request).await.unwrap();
            r.responses[0].partition_responses[0].error_code
        }
    };
    let (code, pid, epoch) = init(-1, -1).await;
    assert_eq!(code, 0);
    assert_eq!((produce(pid, epoch, 0).await, produce(pid, epoch, 1).await), (0, 0));
    let (code, other, _) = init(pid, epoch).await;
    assert_eq!(code, 0);
    assert_ne!(other, pid, "InitProducerId with the current id and epoch, no transactional id: a new id");
    assert_eq!(produce(pid, epoch + 1, 0).await, 0, "the same id, the next epoch, sequence 0");
    assert_eq!(produce(pid, epoch + 1, 1).await, 0);
    let fenced = produce(pid, epoch, 2).await;
    assert!(fenced == 47 || fenced == 90, "the old epoch is fenced (INVALID_PRODUCER_EPOCH or PRODUCER_FENCED): {fenced}");
    assert_eq!(produce(pid, epoch + 2, 5).await, 45, "a new epoch must start at sequence 0 (OUT_OF_ORDER_SEQUENCE_NUMBER)");
}

/// The producer's epoch bumps on the real broker. A second writer fences the producer's epoch
/// (the same producer id, the next epoch, 2 records): the producer's next batch is refused
/// (INVALID_PRODUCER_EPOCH) and fails, as in Java; the one after goes under its bumped epoch
/// from sequence 0, which the broker refuses (OUT_OF_ORDER_SEQUENCE_NUMBER: that epoch is at
/// sequence 2 already) for the next batch, so the producer bumps again and it is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fenced_epoch_is_bumped_past_and_later_records_are_written() {
    let Some(b) = Broker::from_env("a_fenced_epoch_is_bumped_past_and_later_records_are_written") else { return };
    let client = b.client().await;
    let name = topic(&client, "kw-bump", 1).await;
    common::eventually("the topic's leader", || async { client.topic(&name).await.is_ok_and(|t| t.partitions.iter().all(|p| p.leader >= 0)) }).await;
    let config = ProducerConfig { linger: Duration::ZERO, retry_backoff: Duration::from_millis(20), ..Default::default() };
    let producer = Producer::new(client.clone(), config).unwrap();
    producer.send(ProducerRecord::new(&name, "a")).await.unwrap().await.unwrap();
    let pid = fetch_all(&client, &name, 0, 1).await[0].producer_id;
    let mut builder = RecordBatchBuilder::new().producer(pid, 1, 0);
    for (i, v) in ["x", "y"].into_iter().enumerate() {
        builder.append(Record::new(i as i64, common::recent_ts(), None, Some(Bytes::from(v)))).unwrap();
    }
    // `records` is nullable in the 3.9 specs, not in later ones: `From` covers both.
    #[allow(clippy::useless_conversion)]
    let request = ProduceRequest {
        acks: -1,
        timeout_ms: 10_000,
        // Names up to Produce v12, ids from v13: set both, the version picks.
        topic_data: vec![TopicProduceData {
            name: name.clone().into(),
            topic_id: client.metadata().topics.get(&name).map(|t| t.id).unwrap_or_default(),
            partition_data: vec![PartitionProduceData { index: 0, records: Some(builder.build().unwrap()).into(), ..Default::default() }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = client.send(kwire_client::Route::Leader(&name, 0), request).await.unwrap();
    assert_eq!(r.responses[0].partition_responses[0].error_code, 0, "the other writer, epoch 1");
    let err = producer.send(ProducerRecord::new(&name, "b")).await.unwrap().await.unwrap_err();
    assert_eq!(err.code().and_then(|c| c.name()), Some("INVALID_PRODUCER_EPOCH"), "{err}");
    let c = producer.send(ProducerRecord::new(&name, "c")).await.unwrap().await.unwrap();
    let d = producer.send(ProducerRecord::new(&name, "d")).await.unwrap().await.unwrap();
    assert_eq!((c.offset, d.offset), (3, 4));
    assert_eq!(producer.stats().epoch_bumps, 2, "{:?}", producer.stats());
    producer.close().await.unwrap();
    let back = fetch_all(&client, &name, 0, 5).await;
    let got: Vec<(String, i64, i32)> =
        back.iter().map(|f| (String::from_utf8_lossy(f.record.value.as_deref().unwrap_or_default()).into_owned(), f.producer_id, f.base_sequence)).collect();
    let want = [("a", 0), ("x", 0), ("y", 0), ("c", 0), ("d", 1)].map(|(v, seq)| (v.to_owned(), pid, seq));
    assert_eq!(got, want, "one producer id throughout; c and d from sequence 0 of the new epoch");
}

/// Produce v13+ names topics by id (KIP-516): the producer sends ids wherever the broker takes
/// them (the versions on the wire, read through a tracing proxy), and after the topic is deleted
/// and created again under the same name, its records go to the new topic (the old id is
/// refused with UNKNOWN_TOPIC_ID, the metadata refreshed, the batch resent).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn produce_names_topics_by_id_and_follows_a_recreated_topic() {
    let Some(b) = Broker::from_env("produce_names_topics_by_id_and_follows_a_recreated_topic") else { return };
    let direct = b.client().await;
    let name = topic(&direct, "kw-by-id", 2).await;
    // The cache may not have the new topic's leader yet (one CI run): asked again, for 10 s.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let node = loop {
        if let Some(node) = direct.metadata().leader(&name, 0) {
            break node;
        }
        assert!(std::time::Instant::now() < deadline, "no leader for {name}-0 within 10 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
        let _ = direct.refresh_metadata().await;
    };
    let broker_max = direct.connection(&direct.node_addr(node).await.unwrap()).await.unwrap().version(ApiKey::Produce).unwrap();
    let trace = std::env::temp_dir().join(unique("kw-by-id-trace"));
    let proxy = kwire_proxy::Proxy::start(kwire_proxy::Config::new(b.var("PLAINTEXT")).trace(&trace)).await.unwrap();
    let client = Client::connect(ClientConfig::new(&proxy.bootstrap().to_string())).await.unwrap();
    let producer = Producer::new(client.clone(), ProducerConfig { linger: Duration::from_millis(1), ..Default::default() }).unwrap();

    let send = |from: usize, to: usize| {
        let (producer, name) = (&producer, &name);
        async move {
            let mut deliveries = Vec::new();
            for i in from..to {
                deliveries.push(producer.send(ProducerRecord::new(name, format!("v{i}")).key(format!("k{i}"))).await.unwrap());
            }
            for d in deliveries {
                tokio::time::timeout(Duration::from_secs(30), d).await.expect("delivered in time").expect("acknowledged");
            }
        }
    };
    send(0, 20).await;

    // The same name, a new topic (deletion finishes in the background: retried until it takes).
    let admin = Admin::new(direct.clone());
    let old_id = direct.metadata().topics.get(&name).map(|t| t.id).unwrap();
    admin.delete_topics(&[&name]).await.unwrap().into_iter().for_each(|r| r.expect("deleted"));
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        match admin.create_topic(NewTopic::new(&name, 2)).await {
            Ok(_) => break,
            Err(e) if std::time::Instant::now() < deadline => {
                println!("recreating {name}: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("{name} not recreated: {e}"),
        }
    }
    send(20, 40).await;
    producer.close().await.unwrap();
    drop(proxy);

    direct.refresh_metadata().await.unwrap();
    let new_id = direct.metadata().topics.get(&name).map(|t| t.id).unwrap();
    assert_ne!(new_id, old_id, "a new topic");
    let mut values: Vec<String> = Vec::new();
    for p in 0..2 {
        let end = offsets_end(&direct, &name, p).await;
        values
            .extend(fetch_all(&direct, &name, p, end as usize).await.iter().map(|f| String::from_utf8_lossy(f.record.value.as_deref().unwrap()).into_owned()));
    }
    values.sort_by_key(|v| v[1..].parse::<usize>().unwrap());
    assert_eq!(values, (20..40).map(|i| format!("v{i}")).collect::<Vec<_>>(), "the new topic holds the records sent after it was created, once each");

    // Every Produce request on the wire: `c2p API VERSION ...` lines of the proxy's traces.
    let mut versions = std::collections::BTreeSet::new();
    for file in std::fs::read_dir(&trace).unwrap() {
        let text = std::fs::read_to_string(file.unwrap().path()).unwrap();
        versions.extend(text.lines().filter_map(|l| l.strip_prefix("c2p 0 ")).map(|l| l.split(' ').next().unwrap().parse::<i16>().unwrap()));
    }
    let _ = std::fs::remove_dir_all(&trace);
    println!("Kafka {}: Produce up to v{broker_max}; the producer sent {versions:?}", b.version());
    assert_eq!(versions, std::collections::BTreeSet::from([broker_max]), "every Produce request at the broker's newest version");
    assert!(broker_max >= 13 || !b.version().starts_with('4'), "Kafka 4.4 takes Produce v13");
}

/// The log end offset of a partition.
async fn offsets_end(client: &Client, topic: &str, partition: i32) -> i64 {
    let tp = kwire_client::TopicPartition::new(topic, partition);
    let listed = Admin::new(client.clone()).list_offsets(&[(tp.clone(), kwire_client::OffsetSpec::Latest)], false).await.unwrap();
    listed.get(&tp).expect("listed").offset
}

/// A batch the broker refuses as too large (MESSAGE_TOO_LARGE: a topic whose
/// `max.message.bytes` is below the producer's `batch_size`) is split and resent, halving until
/// the parts fit, as Java's producer splits: every record written once, in the order sent; a
/// single record over the limit fails with the broker's error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_refused_as_too_large_are_split_and_resent() {
    let Some(b) = Broker::from_env("batches_refused_as_too_large_are_split_and_resent") else { return };
    let client = b.client().await;
    let name = unique("kw-split");
    Admin::new(client.clone()).create_topic(NewTopic::new(&name, 1).config("max.message.bytes", "3000")).await.expect("creates the topic");
    let config = ProducerConfig { linger: Duration::from_millis(100), batch_size: 16384, ..Default::default() };
    let producer = Producer::new(client.clone(), config).unwrap();
    let mut deliveries = Vec::new();
    for i in 0..300 {
        deliveries.push(producer.send(ProducerRecord::new(&name, format!("{i:0100}"))).await.unwrap());
    }
    let mut offsets = Vec::new();
    for d in deliveries {
        offsets.push(tokio::time::timeout(Duration::from_secs(60), d).await.expect("in time").expect("written").offset);
    }
    assert_eq!(offsets, (0..300).collect::<Vec<i64>>(), "each record once, in the order sent");
    let back = fetch_all(&client, &name, 0, 300).await;
    let values: Vec<String> = back.iter().map(|f| String::from_utf8_lossy(f.record.value.as_deref().unwrap()).into_owned()).collect();
    assert_eq!(values, (0..300).map(|i| format!("{i:0100}")).collect::<Vec<_>>());
    let splits = producer.stats().batch_splits;
    println!("MESSAGE_TOO_LARGE: {splits} batch splits for 300 records of 100 bytes (max.message.bytes 3000)");
    assert!(splits >= 3, "a 16 KB batch halves at least three times to fit 3000 bytes: {splits}");
    let err = producer.send(ProducerRecord::new(&name, "x".repeat(5000))).await.unwrap().await.unwrap_err();
    assert_eq!(err.code().and_then(|c| c.name()), Some("MESSAGE_TOO_LARGE"), "{err}");
    producer.close().await.unwrap();
}

/// Produce requests in flight to a broker stay within `max_in_flight`, however many partitions
/// have batches ready (Java's `max.in.flight.requests.per.connection`): counted between the
/// client and the broker by kwire-proxy's frame hook, requests forwarded less responses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn produce_requests_in_flight_per_broker_stay_within_max_in_flight() {
    use std::sync::atomic::{AtomicI64, Ordering};
    use std::sync::Arc;
    let Some(b) = Broker::from_env("produce_requests_in_flight_per_broker_stay_within_max_in_flight") else { return };
    let name = topic(&b.client().await, "kw-in-flight", 6).await;
    let (outstanding, most) = (Arc::new(AtomicI64::new(0)), Arc::new(AtomicI64::new(0)));
    let (o, m) = (outstanding.clone(), most.clone());
    // Responses held a little (up to 20 ms, from a point in each window of four frames), so
    // that batches become ready while requests are in flight.
    let slow = kwire_proxy::FaultConfig::new(7)
        .percent(100)
        .kinds(&[(kwire_proxy::FaultKind::Delay, 1)])
        .directions(&[kwire_proxy::fault::Direction::Responses])
        .after_frames(3)
        .max_delay(Duration::from_millis(20));
    let config = kwire_proxy::Config::new(b.var("PLAINTEXT")).faults(slow).on_frame(move |f| {
        if f.api_key == ApiKey::Produce.key() {
            match f.direction {
                kwire_proxy::FrameDirection::Request => m.fetch_max(o.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst),
                _ => o.fetch_sub(1, Ordering::SeqCst),
            };
        }
    });
    let proxy = kwire_proxy::Proxy::start(config).await.unwrap();
    let client = Client::connect(ClientConfig::new(&proxy.bootstrap().to_string())).await.unwrap();
    // A batch's worth of records for one partition after another, a moment apart, so that each
    // is drained on its own while the earlier ones are in flight: with two batches of each of
    // six partitions in flight, twelve requests.
    let config = ProducerConfig { batch_size: 1024, linger: Duration::ZERO, max_in_flight: 2, ..Default::default() };
    let producer = Producer::new(client, config).unwrap();
    let mut deliveries = Vec::new();
    for burst in 0..300 {
        for i in 0..50 {
            let record = ProducerRecord::new(&name, format!("value-{burst:04}-{i:04}")).partition(burst % 6);
            deliveries.push(producer.send(record).await.unwrap());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    for d in deliveries {
        d.await.unwrap();
    }
    let requests = producer.stats().requests;
    producer.close().await.unwrap();
    let most = most.load(Ordering::SeqCst);
    println!("{requests} Produce requests, at most {most} in flight at once");
    assert!(most <= 2, "{most} Produce requests in flight to one broker, max_in_flight 2");
    assert!(most == 2, "requests were pipelined ({most} at most in flight)");
}
