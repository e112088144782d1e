//! The consumer benchmark of BENCHMARKS.md: `produce` writes COUNT records of 100 bytes (lz4)
//! round-robin over the topic's partitions; `consume` reads COUNT records from the start
//! (every partition assigned by hand) and prints records/s and MB/s. `produce` creates the topic
//! (6 partitions) if it does not exist.
//!
//!   cargo run --release -p kafka-wire-client --example consume_bench -- produce|consume BOOTSTRAP TOPIC COUNT

use std::time::{Duration, Instant};

use kafka_wire::runtime::records::Compression;
use kafka_wire_client::{Admin, NewTopic, Client, ClientConfig, Consumer, ConsumerConfig, OffsetReset, Producer, ProducerConfig, ProducerRecord, TopicPartition};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(mode), Some(bootstrap), Some(topic), Some(count)) = (args.get(1), args.get(2), args.get(3), args.get(4)) else {
        return Err("usage: consume_bench produce|consume BOOTSTRAP TOPIC COUNT".into());
    };
    let count: usize = count.parse()?;
    let client = Client::connect(ClientConfig::new(bootstrap)).await?;
    if mode == "produce" && client.topic(topic).await.is_err() {
        Admin::new(client.clone()).create_topic(NewTopic::new(topic.as_str(), 6)).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let partitions = client.topic(topic).await?.partitions.len() as i32;
    let start = Instant::now();
    match mode.as_str() {
        "produce" => {
            let config = ProducerConfig { compression: Compression::Lz4, batch_size: 64 << 10, linger: Duration::from_millis(10), ..Default::default() };
            let producer = Producer::new(client, config)?;
            // 100 random letters and digits per record (as Kafka's ProducerPerformance's random
            // payloads: lz4 saves little on them), from a fixed-seed xorshift.
            const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
            let mut state = 0x9E37_79B9_7F4A_7C15u64;
            let mut deliveries = std::collections::VecDeque::new();
            for i in 0..count {
                let value: Vec<u8> = (0..100)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        ALPHABET[(state >> 58) as usize]
                    })
                    .collect();
                let record = ProducerRecord::new(topic.as_str(), value).partition((i % partitions as usize) as i32);
                deliveries.push_back(producer.send(record).await?);
                if deliveries.len() > 100_000 {
                    if let Some(d) = deliveries.pop_front() {
                        d.await?;
                    }
                }
            }
            for d in deliveries {
                d.await?;
            }
            producer.close().await?;
            println!("produced {count} records in {:.2} s", start.elapsed().as_secs_f64());
        }
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
                "kafka-wire-client: {records} records, {:.1} MB of values in {secs:.2} s: {:.0} records/s, {:.1} MB/s ({} fetches)",
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
