//! kwire-fake's speed: starting a 3-broker cluster, and records produced and consumed through it
//! in memory by kwire-client (no sockets). `cargo bench -p kwire-fake`; BENCHMARKS.md has the
//! numbers.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use kwire_client::{Acks, Client, ClientConfig, Connector, Consumer, ConsumerConfig, OffsetReset, Producer, ProducerConfig, ProducerRecord};
use kwire_fake::{Cluster, ClusterConfig};

const RECORDS: usize = 200_000;
const VALUE: usize = 100;

fn start(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let _guard = rt.enter();
    c.bench_function("start a 3-broker cluster", |b| b.iter_batched(|| (), |()| Cluster::start(ClusterConfig::default().brokers(3)), BatchSize::SmallInput));
    c.bench_function("start a 3-broker cluster and create a 6-partition topic", |b| {
        b.iter(|| {
            let cluster = Cluster::start(ClusterConfig::default().brokers(3));
            cluster.create_topic("t", 6, 3).unwrap();
            cluster
        })
    });
}

/// Produces `RECORDS` records of `VALUE` bytes (acks=all, idempotent, lz4-free) into a fresh
/// cluster and reads them all back with a consumer; the time of both.
async fn produce_and_consume() -> Duration {
    let cluster = Cluster::start(ClusterConfig::default().brokers(3));
    cluster.create_topic("bench", 6, 3).unwrap();
    let config = ClientConfig::new(&cluster.bootstrap()).connector(Connector::new(cluster.connector()));
    let started = Instant::now();
    let producer = Producer::new(
        Client::connect(config.clone()).await.unwrap(),
        ProducerConfig { acks: Acks::All, batch_size: 256 * 1024, linger: Duration::from_millis(1), enable_metrics_push: false, ..Default::default() },
    )
    .unwrap();
    let value = vec![b'x'; VALUE];
    let mut last = None;
    for i in 0..RECORDS {
        last = Some(producer.send(ProducerRecord::new("bench", value.clone()).partition((i % 6) as i32)).await.unwrap());
    }
    producer.flush().await.unwrap();
    last.unwrap().await.unwrap();
    producer.close().await.unwrap();
    let consumer_config =
        ConsumerConfig { auto_offset_reset: OffsetReset::Earliest, enable_metrics_push: false, max_poll_records: 10_000, ..ConsumerConfig::group("bench") };
    let mut consumer = Consumer::new(Client::connect(config).await.unwrap(), consumer_config).unwrap();
    consumer.assign((0..6).map(|p| kwire_client::TopicPartition::new("bench", p))).unwrap();
    let mut read = 0;
    while read < RECORDS {
        read += consumer.poll(Duration::from_millis(100)).await.unwrap().len();
    }
    started.elapsed()
}

fn throughput(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut group = c.benchmark_group("in memory");
    group.sample_size(10).throughput(Throughput::Elements(RECORDS as u64));
    group.bench_function("produce and consume 200k records of 100 B (kwire-client, 3 brokers)", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| rt.block_on(produce_and_consume())).sum())
    });
    group.finish();
}

criterion_group!(benches, start, throughput);
criterion_main!(benches);
