//! The producer benchmark of BENCHMARKS.md (issue 14): writes COUNT records of 100 bytes with
//! acks=all (idempotent), linger 5 ms, 64 KiB batches and lz4, and prints records/s and MB/s
//! from the first `send` to the end of `close` (every record acknowledged). Unkeyed records go
//! through the default (sticky) partitioner, as Kafka's ProducerPerformance and librdkafka's
//! do; `--round-robin` names the partitions instead (record i to partition i mod N). Creates
//! the topic (6 partitions) if it does not exist. The values are 100 random letters, digits,
//! `-` and `_` from a fixed-seed xorshift (random as ProducerPerformance's, so lz4 saves
//! little); `payloads FILE COUNT` writes the same values one a line, for `kcat -P -l FILE` and
//! ProducerPerformance's `--payload-file`.
//!
//!   cargo build --release -p kwire-client --example produce_bench
//!   target/release/examples/produce_bench BOOTSTRAP TOPIC COUNT [--round-robin] [--transactions N]
//!   target/release/examples/produce_bench payloads FILE COUNT
//!
//! `--transactions N`: a transactional producer (a fresh `transactional_id`), the records in
//! transactions of N, each committed before the next begins (the transactional rows of
//! BENCHMARKS.md, with `ProduceBenchTxn.java` and `produce_bench_librdkafka.py --transactions`).
//!
//! It also writes the data set of the consumer benchmark (`consume_bench`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kwire::runtime::records::Compression;
use kwire_client::{Admin, Client, ClientConfig, NewTopic, Producer, ProducerConfig, ProducerRecord};

const VALUE_LEN: usize = 100;

/// The system allocator, counting allocations (`alloc` and `realloc` calls): the report
/// gives allocations per record over the send phase, the producer's and this loop's.
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The benchmark's values: a fixed-seed xorshift over 64 symbols, so every run (and every
/// client, through the payload file) sends the same bytes.
struct Values(u64);

impl Values {
    fn new() -> Values {
        Values(0x9E37_79B9_7F4A_7C15)
    }

    fn next(&mut self) -> Vec<u8> {
        const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        (0..VALUE_LEN)
            .map(|_| {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                ALPHABET[(self.0 >> 58) as usize]
            })
            .collect()
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // RUST_LOG=kwire_client=trace shows each request's timing on stderr.
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_default_env() {
        tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
    }
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: produce_bench BOOTSTRAP TOPIC COUNT [--round-robin] [--transactions N] | produce_bench payloads FILE COUNT";
    let (Some(first), Some(second), Some(count)) = (args.get(1), args.get(2), args.get(3)) else {
        return Err(usage.into());
    };
    let count: usize = count.parse()?;
    let mut generator = Values::new();
    if first == "payloads" {
        let mut out = std::io::BufWriter::new(std::fs::File::create(second)?);
        for _ in 0..count {
            out.write_all(&generator.next())?;
            out.write_all(b"\n")?;
        }
        out.flush()?;
        return Ok(());
    }
    let (bootstrap, topic) = (first, second);
    let (mut round_robin, mut per_transaction) = (false, None);
    let mut flags = args.iter().skip(4);
    while let Some(flag) = flags.next() {
        match flag.as_str() {
            "--round-robin" => round_robin = true,
            "--transactions" => per_transaction = Some(flags.next().ok_or(usage)?.parse::<usize>()?.max(1)),
            _ => return Err(usage.into()),
        }
    }
    let client = Client::connect(ClientConfig::new(bootstrap)).await?;
    if client.topic(topic).await.is_err() {
        Admin::new(client.clone()).create_topic(NewTopic::new(topic.as_str(), 6)).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let partitions = client.topic(topic).await?.partitions.len();
    // Java's names: acks=all and enable.idempotence=true are the defaults.
    let transactional_id = per_transaction.map(|_| format!("produce-bench-{}", std::process::id()));
    let config =
        ProducerConfig { compression: Compression::Lz4, batch_size: 64 << 10, linger: Duration::from_millis(5), transactional_id, ..Default::default() };
    let producer = Producer::new(client, config)?;
    if per_transaction.is_some() {
        producer.init_transactions().await?;
    }
    // The values are made before the clock starts, as the other clients read theirs from a
    // file first, so the time is the producer's.
    let values: Vec<Vec<u8>> = (0..count).map(|_| generator.next()).collect();
    let (start, cpu_start, wait_start) = (Instant::now(), cpu_seconds(), run_queue_wait());
    let allocations_start = ALLOCATIONS.load(Ordering::Relaxed);
    // A window of outstanding deliveries, so the benchmark does not hold a million of them;
    // buffer_memory (32 MiB) bounds the records queued in the producer itself.
    let mut deliveries = std::collections::VecDeque::new();
    // One shared name for every record, as Java's ProducerRecord shares its String.
    let topic: std::sync::Arc<str> = topic.as_str().into();
    for (i, value) in values.into_iter().enumerate() {
        if let Some(n) = per_transaction {
            if i % n == 0 {
                if i > 0 {
                    // Commit waits for every record of the transaction.
                    producer.commit_transaction().await?;
                    deliveries.clear();
                }
                producer.begin_transaction().await?;
            }
        }
        let mut record = ProducerRecord::new(&topic, value);
        if round_robin {
            record = record.partition((i % partitions) as i32);
        }
        deliveries.push_back(producer.send(record).await?);
        if deliveries.len() > 100_000 {
            if let Some(d) = deliveries.pop_front() {
                d.await?;
            }
        }
    }
    if per_transaction.is_some() {
        producer.commit_transaction().await?;
    }
    for d in deliveries {
        d.await?;
    }
    let stats = producer.stats();
    producer.close().await?;
    let secs = start.elapsed().as_secs_f64();
    let allocations = ALLOCATIONS.load(Ordering::Relaxed) - allocations_start;
    let cpu = match (cpu_start, cpu_seconds()) {
        (Some(a), Some(b)) => format!("{:.2} s", b - a),
        _ => "unknown".into(),
    };
    let waited = match (wait_start, run_queue_wait()) {
        (Some(a), Some(b)) => format!("{:.2} s", b - a),
        _ => "unknown".into(),
    };
    let mb = (count * VALUE_LEN) as f64 / 1e6;
    let transactions = per_transaction.map_or(String::new(), |n| format!(" in transactions of {n}"));
    println!(
        "kwire-client: {count} records{transactions}, {mb:.1} MB of values in {secs:.2} s: {:.0} records/s, {:.1} MB/s, CPU (user + sys) {cpu}, waiting for a CPU {waited}, {:.2} allocations per record",
        count as f64 / secs,
        mb / secs,
        allocations as f64 / count as f64
    );
    println!("  {stats:?}");
    Ok(())
}

/// This process's user + system CPU time from /proc/self/stat (fields 14 and 15, in clock
/// ticks of 1/100 s, the Linux value of USER_HZ), or `None` off Linux.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces; the fields after it start past its `)`.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// How long this thread (the runtime's only one) has waited runnable for a CPU, from
/// /proc/thread-self/schedstat (its second field, in ns): on a loaded machine, the part of the
/// wall time that is neither work nor waiting for the broker.
fn run_queue_wait() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: f64 = stat.split(' ').nth(1)?.parse().ok()?;
    Some(ns / 1e9)
}
