//! The consumer benchmark of BENCHMARKS.md: reads COUNT records from the start (every
//! partition assigned by hand) and prints records/s and MB/s. The data set is written by the
//! producer benchmark: `produce_bench BOOTSTRAP TOPIC COUNT --round-robin`.
//!
//!   cargo run --release -p kwire-client --example consume_bench -- consume BOOTSTRAP TOPIC COUNT

use std::time::{Duration, Instant};

use kwire_client::{Client, ClientConfig, Consumer, ConsumerConfig, OffsetReset, TopicPartition};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(mode), Some(bootstrap), Some(topic), Some(count)) = (args.get(1), args.get(2), args.get(3), args.get(4)) else {
        return Err("usage: consume_bench consume BOOTSTRAP TOPIC COUNT".into());
    };
    let count: usize = count.parse()?;
    let client = Client::connect(ClientConfig::new(bootstrap)).await?;
    let partitions = client.topic(topic).await?.partitions.len() as i32;
    let start = Instant::now();
    match mode.as_str() {
        "consume" => {
            let mut config = ConsumerConfig { auto_offset_reset: OffsetReset::Earliest, max_poll_records: 10_000, ..Default::default() };
            // BENCH_PARTITION_BYTES: another max.partition.fetch.bytes than Java's 1 MiB.
            if let Some(b) = std::env::var("BENCH_PARTITION_BYTES").ok().and_then(|b| b.parse().ok()) {
                config.max_partition_fetch_bytes = b;
            }
            let mut consumer = Consumer::new(client, config)?;
            consumer.assign((0..partitions).map(|p| TopicPartition::new(topic.as_str(), p)))?;
            let (mut records, mut bytes) = (0usize, 0usize);
            while records < count {
                for r in consumer.poll(Duration::from_secs(1)).await? {
                    records += 1;
                    bytes += r.value.as_ref().map_or(0, |v| v.len());
                }
                if start.elapsed() > Duration::from_secs(300) {
                    return Err(format!("only {records} of {count} records in 300 s").into());
                }
            }
            let secs = start.elapsed().as_secs_f64();
            println!(
                "kwire-client: {records} records, {:.1} MB of values in {secs:.2} s: {:.0} records/s, {:.1} MB/s ({} fetches)",
                bytes as f64 / 1e6,
                records as f64 / secs,
                bytes as f64 / 1e6 / secs,
                consumer.stats().fetches
            );
        }
        other => return Err(format!("unknown mode {other}").into()),
    }
    Ok(())
}
