//! librdkafka, through the `rdkafka` crate (built from its bundled source, `cmake-build`), in
//! the client benchmark; common.rs has the arguments. The producer is a ThreadedProducer (a
//! thread polls for delivery reports), the consumer a BaseConsumer polled message by message:
//! each crate's plain synchronous API, no async adapter in the way.

#[path = "../common.rs"]
mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{fail, Latency, Phase, Pool};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::{ClientContext, Offset, TopicPartitionList};

fn main() {
    let args = common::args();
    if args.role == "produce" {
        produce(args)
    } else {
        consume(args)
    }
}

/// What the delivery reports add up (on the producer's polling thread).
struct Acks {
    hashes: Vec<u64>,
    start: Instant,
    rate: u64,
    acked: AtomicU64,
    digest: AtomicU64,
    failed: AtomicU64,
    latency: Mutex<Latency>,
}

impl ClientContext for Acks {}

impl ProducerContext for Acks {
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, i: usize) {
        if let Err((e, _)) = result {
            eprintln!("FAIL: delivery: {e}");
            self.failed.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if self.rate > 0 {
            let ns = (self.start.elapsed().as_nanos() as u64).saturating_sub(common::due_ns(i as u64, self.rate));
            self.latency.lock().unwrap().record_ns(ns);
        }
        self.acked.fetch_add(1, Ordering::Relaxed);
        self.digest.fetch_add(self.hashes[i % self.hashes.len()], Ordering::Relaxed);
    }
}

fn produce(args: common::Args) {
    let pool = Pool::new(args.size);
    let start = Instant::now();
    let acks = Acks { hashes: pool.hashes.clone(), start, rate: args.rate, acked: AtomicU64::new(0), digest: AtomicU64::new(0), failed: AtomicU64::new(0), latency: Mutex::new(Latency::new()) };
    let producer: ThreadedProducer<Acks> = ClientConfig::new()
        .set("bootstrap.servers", &args.bootstrap)
        .set("acks", if args.acks_all { "all" } else { "1" })
        .set("enable.idempotence", args.acks_all.to_string())
        .set("linger.ms", "5")
        .set("batch.size", (64 << 10).to_string())
        .set("compression.type", &args.compression)
        .create_with_context(acks)
        .unwrap_or_else(|e| fail(e));
    // The topic's metadata before the clock starts.
    producer.client().fetch_metadata(Some(&args.topic), Duration::from_secs(30)).unwrap_or_else(|e| fail(e));
    let phase = Phase::start();
    let start = producer.context().start;
    for i in 0..args.count {
        if args.rate > 0 {
            let (due, now) = (common::due_ns(i, args.rate), start.elapsed().as_nanos() as u64);
            if due > now {
                std::thread::sleep(Duration::from_nanos(due - now));
            }
        }
        let mut record = BaseRecord::<(), [u8], usize>::with_opaque_to(&args.topic, i as usize).payload(pool.value(i));
        // librdkafka's queue (queue.buffering.max.messages) is full: wait for reports.
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                    record = r;
                    std::thread::sleep(Duration::from_micros(200));
                }
                Err((e, _)) => fail(e),
            }
        }
    }
    producer.flush(Duration::from_secs(120)).unwrap_or_else(|e| fail(e));
    let acks = producer.context();
    let (acked, failed) = (acks.acked.load(Ordering::Relaxed), acks.failed.load(Ordering::Relaxed));
    if acked != args.count || failed > 0 {
        fail(format!("{acked} of {} records acknowledged, {failed} failed", args.count));
    }
    let extra = if args.rate > 0 { acks.latency.lock().unwrap().extra() } else { String::new() };
    phase.report("rdkafka", "produce", acked, acked * args.size as u64, acks.digest.load(Ordering::Relaxed), &extra);
}

fn consume(args: common::Args) {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", &args.bootstrap)
        // librdkafka wants a group id for a consumer; no group is joined (assign, no commits).
        .set("group.id", "kwire-bench-rdkafka")
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("fetch.max.bytes", (50 << 20).to_string())
        .set("max.partition.fetch.bytes", (1 << 20).to_string())
        .set("fetch.wait.max.ms", "500")
        // librdkafka alone does not check record batch CRCs by default; Java, confluent-kafka,
        // franz-go and kwire-client do: the same work for every client.
        .set("check.crcs", "true")
        .create()
        .unwrap_or_else(|e| fail(e));
    let mut tpl = TopicPartitionList::new();
    for p in 0..args.partitions {
        tpl.add_partition_offset(&args.topic, p, Offset::Beginning).unwrap_or_else(|e| fail(e));
    }
    consumer.assign(&tpl).unwrap_or_else(|e| fail(e));
    let phase = Phase::start();
    let (mut count, mut bytes, mut digest) = (0u64, 0u64, 0u64);
    while count < args.count {
        if let Some(m) = consumer.poll(Duration::from_secs(1)) {
            let m = m.unwrap_or_else(|e| fail(e));
            let v = m.payload().unwrap_or(&[]);
            count += 1;
            bytes += v.len() as u64;
            digest = digest.wrapping_add(common::hash(v));
        }
        if phase.elapsed_ns() > 300_000_000_000 {
            fail(format!("only {count} of {} records in 300 s", args.count));
        }
    }
    phase.report("rdkafka", "consume", count, bytes, digest, "");
}
