//! kwire-client in the client benchmark (common.rs has the arguments). Also the driver's
//! helper for topics and expected digests:
//!   kwire create BOOTSTRAP TOPIC PARTITIONS REPLICATION | kwire delete BOOTSTRAP TOPIC...
//!   kwire expect COUNT SIZE     (the digest of records 0..COUNT)
//!
//! The producer and the consumer run on a current-thread runtime, as kwire-client's own
//! benchmarks (client/examples/produce_bench.rs, consume_bench.rs) do; `KWIRE_BENCH_THREADS=N`
//! (N > 1) runs them on a multi-thread runtime of N workers instead.

#[path = "../common.rs"]
mod common;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use common::{fail, Latency, Phase, Pool};
use kwire::runtime::records::Compression;
use kwire_client::{Acks, Admin, Client, ClientConfig, Consumer, ConsumerConfig, NewTopic, OffsetReset, Producer, ProducerConfig, ProducerRecord, TopicPartition};

fn main() {
    let threads: usize = std::env::var("KWIRE_BENCH_THREADS").ok().and_then(|t| t.parse().ok()).unwrap_or(1);
    let runtime = if threads > 1 {
        tokio::runtime::Builder::new_multi_thread().worker_threads(threads).enable_all().build()
    } else {
        tokio::runtime::Builder::new_current_thread().enable_all().build()
    };
    runtime.unwrap_or_else(|e| fail(e)).block_on(run());
}

async fn run() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    match argv.first().map(String::as_str) {
        Some("expect") => {
            let (Some(count), Some(size)) = (argv.get(1).and_then(|c| c.parse().ok()), argv.get(2).and_then(|s| s.parse().ok())) else { fail("usage: expect COUNT SIZE") };
            println!("{:016x}", Pool::new(size).expected(count));
        }
        Some("create") => {
            let [_, bootstrap, topic, partitions, replication] = &argv[..] else { fail("usage: create BOOTSTRAP TOPIC PARTITIONS REPLICATION") };
            let client = Client::connect(ClientConfig::new(bootstrap)).await.unwrap_or_else(|e| fail(e));
            let topic = NewTopic::new(topic.as_str(), partitions.parse().unwrap_or_else(|e| fail(e))).replication_factor(replication.parse().unwrap_or_else(|e| fail(e)));
            Admin::new(client).create_topic(topic).await.unwrap_or_else(|e| fail(e));
        }
        Some("delete") if argv.len() >= 3 => {
            let client = Client::connect(ClientConfig::new(&argv[1])).await.unwrap_or_else(|e| fail(e));
            let names: Vec<&str> = argv[2..].iter().map(String::as_str).collect();
            // A topic already gone is not an error here: the driver deletes what it may have made.
            for r in Admin::new(client).delete_topics(&names).await.unwrap_or_else(|e| fail(e)) {
                if let Err(e) = r {
                    eprintln!("delete: {e}");
                }
            }
        }
        _ => {
            let args = common::args();
            if args.role == "produce" {
                produce(args).await
            } else {
                consume(args).await
            }
        }
    }
}

/// What the delivery callbacks add up at a fixed rate.
struct Acked {
    acked: AtomicU64,
    digest: AtomicU64,
    latency: Mutex<Latency>,
}

async fn produce(args: common::Args) {
    let compression = match args.compression.as_str() {
        "none" => Compression::None,
        "lz4" => Compression::Lz4,
        "zstd" => Compression::Zstd,
        other => fail(format!("compression {other}")),
    };
    let client = Client::connect(ClientConfig::new(&args.bootstrap)).await.unwrap_or_else(|e| fail(e));
    // The topic's metadata before the clock starts, as the others' warm-ups do. A topic just
    // created may not be in the broker's metadata yet (the producer itself would wait for it,
    // up to max_block): asked again for up to 10 s.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while let Err(e) = client.topic(&args.topic).await {
        if std::time::Instant::now() > deadline {
            fail(e);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let config = ProducerConfig {
        acks: if args.acks_all { Acks::All } else { Acks::Leader },
        idempotence: args.acks_all,
        batch_size: 64 << 10,
        linger: Duration::from_millis(5),
        compression,
        // What librdkafka and franz-go do unasked: a batch the codec cannot shrink goes
        // uncompressed (Java's and confluent-kafka's producers compress every batch).
        compress_only_if_smaller: true,
        ..Default::default()
    };
    let producer = Producer::new(client, config).unwrap_or_else(|e| fail(e));
    let pool = Pool::new(args.size);
    // Values are slices of one shared buffer: the record holds a reference, no copy.
    let values = Bytes::from(pool.bytes.clone());
    let topic: Arc<str> = args.topic.as_str().into();
    let phase = Phase::start();
    let (mut acked, mut digest) = (0u64, 0u64);
    let mut extra = String::new();
    if args.rate == 0 {
        // A window of outstanding deliveries, awaited in order (most are done by then);
        // buffer_memory (32 MiB) bounds what the producer itself holds.
        let mut window = VecDeque::new();
        for i in 0..args.count {
            let record = ProducerRecord::new(&topic, values.slice(pool.range(i)));
            window.push_back((i, producer.send(record).await.unwrap_or_else(|e| fail(e))));
            if window.len() > 100_000 {
                let (i, d) = window.pop_front().unwrap();
                d.await.unwrap_or_else(|e| fail(e));
                acked += 1;
                digest = digest.wrapping_add(pool.hash_of(i));
            }
        }
        for (i, d) in window {
            d.await.unwrap_or_else(|e| fail(e));
            acked += 1;
            digest = digest.wrapping_add(pool.hash_of(i));
        }
    } else {
        // Fixed rate: each record's callback (`send_with`, as the other clients' callbacks)
        // takes its acknowledgement, so its latency is the acknowledgement's.
        let acks = Arc::new(Acked { acked: AtomicU64::new(0), digest: AtomicU64::new(0), latency: Mutex::new(Latency::new()) });
        let start = std::time::Instant::now();
        let rate = args.rate;
        for i in 0..args.count {
            let due = common::due_ns(i, rate);
            let now = start.elapsed().as_nanos() as u64;
            if due > now {
                tokio::time::sleep(Duration::from_nanos(due - now)).await;
            }
            let record = ProducerRecord::new(&topic, values.slice(pool.range(i)));
            let (acks, hash) = (acks.clone(), pool.hash_of(i));
            let callback = move |r: kwire_client::Result<kwire_client::RecordMetadata>| {
                r.unwrap_or_else(|e| fail(e));
                let ns = (start.elapsed().as_nanos() as u64).saturating_sub(common::due_ns(i, rate));
                acks.latency.lock().unwrap_or_else(|p| p.into_inner()).record_ns(ns);
                acks.acked.fetch_add(1, Ordering::Relaxed);
                acks.digest.fetch_add(hash, Ordering::Relaxed);
            };
            producer.send_with(record, callback).await.unwrap_or_else(|e| fail(e));
        }
        producer.flush().await.unwrap_or_else(|e| fail(e));
        (acked, digest) = (acks.acked.load(Ordering::Relaxed), acks.digest.load(Ordering::Relaxed));
        extra = acks.latency.lock().unwrap_or_else(|p| p.into_inner()).extra();
    }
    producer.close().await.unwrap_or_else(|e| fail(e));
    if acked != args.count {
        fail(format!("{acked} of {} records acknowledged", args.count));
    }
    phase.report("kwire", "produce", acked, acked * args.size as u64, digest, &extra);
}

async fn consume(args: common::Args) {
    let client = Client::connect(ClientConfig::new(&args.bootstrap)).await.unwrap_or_else(|e| fail(e));
    // Java's fetch defaults, spelled out; max.poll.records as the other clients are given.
    let config = ConsumerConfig {
        auto_offset_reset: OffsetReset::Earliest,
        max_poll_records: 10_000,
        fetch_max_bytes: 50 << 20,
        max_partition_fetch_bytes: 1 << 20,
        fetch_max_wait: Duration::from_millis(500),
        enable_auto_commit: false,
        ..Default::default()
    };
    let mut consumer = Consumer::new(client, config).unwrap_or_else(|e| fail(e));
    consumer.assign((0..args.partitions).map(|p| TopicPartition::new(args.topic.as_str(), p))).unwrap_or_else(|e| fail(e));
    let phase = Phase::start();
    let (mut count, mut bytes, mut digest) = (0u64, 0u64, 0u64);
    while count < args.count {
        for r in consumer.poll(Duration::from_secs(1)).await.unwrap_or_else(|e| fail(e)) {
            if count == args.count {
                break;
            }
            let v = r.value.as_deref().unwrap_or(&[]);
            count += 1;
            bytes += v.len() as u64;
            digest = digest.wrapping_add(common::hash(v));
        }
        if phase.elapsed_ns() > 300_000_000_000 {
            fail(format!("only {count} of {} records in 300 s", args.count));
        }
    }
    phase.report("kwire", "consume", count, bytes, digest, "");
}
