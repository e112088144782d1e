//! Confluent's pure-Rust client (`confluent-kafka`, a translation of the Java client) in the
//! client benchmark; common.rs has the arguments. Configured with Java's property names, as its
//! documentation does; a multi-thread runtime, since its sender and network tasks stand in for
//! the Java client's I/O threads.

#[path = "../common.rs"]
mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use common::{fail, Latency, Phase, Pool};
use confluent_kafka::common::serialization::{ByteArraySerializer, BytesDeserializer};
use confluent_kafka::common::TopicPartition;
use confluent_kafka::consumer::{Consumer, ConsumerConfig, KafkaConsumer};
use confluent_kafka::producer::{Callback, KafkaProducer, Producer, ProducerConfig, ProducerRecord};

fn props(pairs: &[(&str, String)]) -> HashMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

#[tokio::main]
async fn main() {
    let args = common::args();
    if args.role == "produce" {
        produce(args).await
    } else {
        consume(args).await
    }
}

/// What the delivery callbacks add up, from whichever task runs them.
struct Acks {
    acked: AtomicU64,
    digest: AtomicU64,
    failed: AtomicU64,
    latency: Mutex<Latency>,
}

async fn produce(args: common::Args) {
    let config = ProducerConfig::new(&props(&[
        ("bootstrap.servers", args.bootstrap.clone()),
        ("acks", if args.acks_all { "all" } else { "1" }.into()),
        ("enable.idempotence", args.acks_all.to_string()),
        ("linger.ms", "5".into()),
        ("batch.size", (64 << 10).to_string()),
        ("compression.type", args.compression.clone()),
    ]))
    .unwrap_or_else(|e| fail(e));
    let producer = KafkaProducer::<Vec<u8>, Vec<u8>>::new(config, ByteArraySerializer::new(), ByteArraySerializer::new()).unwrap_or_else(|e| fail(e));
    // The topic's metadata before the clock starts.
    producer.partitions_for(&args.topic).await.unwrap_or_else(|e| fail(e));
    let pool = Arc::new(Pool::new(args.size));
    let acks = Arc::new(Acks { acked: AtomicU64::new(0), digest: AtomicU64::new(0), failed: AtomicU64::new(0), latency: Mutex::new(Latency::new()) });
    let phase = Phase::start();
    let start = std::time::Instant::now();
    let rate = args.rate;
    for i in 0..args.count {
        if rate > 0 {
            let (due, now) = (common::due_ns(i, rate), start.elapsed().as_nanos() as u64);
            if due > now {
                tokio::time::sleep(Duration::from_nanos(due - now)).await;
            }
        }
        let (acks, hash) = (acks.clone(), pool.hash_of(i));
        let callback: Box<dyn Callback> = Box::new(confluent_kafka::producer::callback::new(move |_, error| {
            if let Some(e) = error {
                eprintln!("FAIL: delivery: {e}");
                acks.failed.fetch_add(1, Ordering::Relaxed);
                return;
            }
            if rate > 0 {
                let ns = (start.elapsed().as_nanos() as u64).saturating_sub(common::due_ns(i, rate));
                acks.latency.lock().unwrap().record_ns(ns);
            }
            acks.acked.fetch_add(1, Ordering::Relaxed);
            acks.digest.fetch_add(hash, Ordering::Relaxed);
        }));
        // The borrowed-bytes send: the value is copied into the batch, not serialized.
        let record = ProducerRecord::<&[u8], &[u8]>::new(args.topic.clone(), Some(pool.value(i)));
        producer.send(record, Some(callback)).await.unwrap_or_else(|e| fail(e));
    }
    producer.flush().await.unwrap_or_else(|e| fail(e));
    producer.close().await.unwrap_or_else(|e| fail(e));
    let (acked, failed) = (acks.acked.load(Ordering::Relaxed), acks.failed.load(Ordering::Relaxed));
    if acked != args.count || failed > 0 {
        fail(format!("{acked} of {} records acknowledged, {failed} failed", args.count));
    }
    let extra = if rate > 0 { acks.latency.lock().unwrap().extra() } else { String::new() };
    phase.report("confluent", "produce", acked, acked * args.size as u64, acks.digest.load(Ordering::Relaxed), &extra);
}

async fn consume(args: common::Args) {
    let config = ConsumerConfig::new(&props(&[
        ("bootstrap.servers", args.bootstrap.clone()),
        // Its only group protocol (KIP-848); no group is joined, the partitions are assigned.
        ("group.protocol", "consumer".into()),
        ("auto.offset.reset", "earliest".into()),
        ("enable.auto.commit", "false".into()),
        ("max.poll.records", "10000".into()),
        ("fetch.max.bytes", (50 << 20).to_string()),
        ("max.partition.fetch.bytes", (1 << 20).to_string()),
        ("fetch.max.wait.ms", "500".into()),
    ]))
    .unwrap_or_else(|e| fail(e));
    let mut consumer = KafkaConsumer::<Bytes, Bytes>::new(config, BytesDeserializer::new(), BytesDeserializer::new()).unwrap_or_else(|e| fail(e));
    consumer.assign((0..args.partitions).map(|p| TopicPartition::new(args.topic.as_str(), p)).collect()).await.unwrap_or_else(|e| fail(e));
    let phase = Phase::start();
    let (mut count, mut bytes, mut digest) = (0u64, 0u64, 0u64);
    while count < args.count {
        let records = consumer.poll(Duration::from_secs(1)).await.unwrap_or_else(|e| fail(e));
        for r in &records {
            if count == args.count {
                break;
            }
            let v: &[u8] = r.value().map_or(&[], |v| v.as_ref());
            count += 1;
            bytes += v.len() as u64;
            digest = digest.wrapping_add(common::hash(v));
        }
        if phase.elapsed_ns() > 300_000_000_000 {
            fail(format!("only {count} of {} records in 300 s", args.count));
        }
    }
    phase.report("confluent", "consume", count, bytes, digest, "");
    consumer.close().await.unwrap_or_else(|e| fail(e));
}
