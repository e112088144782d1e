//! What a client holds at rest: its resident memory connected, after each of ROUNDS rounds of
//! producing COUNT records of 100 B (lz4) and after consuming COUNT on a one-thread runtime, idle after that, and after the record
//! codec's memory policy is lowered to keep nothing ([`MemoryPolicy::MINIMAL`]) and the thread
//! lets go of what it kept. BENCHMARKS.md has the figures.
//!
//!   cargo run --release -p kwire-client --example memory_at_rest -- BOOTSTRAP TOPIC [COUNT [ROUNDS]]

use std::time::Duration;

use kwire::records::{release_thread_memory, set_memory_policy, Compression, MemoryPolicy};
use kwire_client::{Client, ClientConfig, Consumer, ConsumerConfig, OffsetReset, Producer, ProducerConfig, ProducerRecord, TopicPartition};

/// Resident memory in MiB, from /proc (Linux).
fn rss_mib() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: f64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0.0);
    pages * 4096.0 / (1 << 20) as f64
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(bootstrap), Some(topic)) = (args.get(1), args.get(2)) else {
        return Err("usage: memory_at_rest BOOTSTRAP TOPIC [COUNT [ROUNDS]]".into());
    };
    let count: usize = args.get(3).map_or(Ok(200_000), |c| c.parse())?;
    let rounds: usize = args.get(4).map_or(Ok(2), |c| c.parse())?;
    println!("started           {:7.1} MiB", rss_mib());
    let client = Client::connect(ClientConfig::new(bootstrap)).await?;
    client.refresh_metadata().await?;
    println!("connected         {:7.1} MiB", rss_mib());

    let producer = Producer::new(client.clone(), ProducerConfig { compression: Compression::Lz4, linger: Duration::from_millis(5), ..Default::default() })?;
    let value = vec![b'x'; 100];
    // Rounds after the first: what they add is what producing keeps, not what the allocator
    // grew to once.
    for round in 1..=rounds {
        let mut last = None;
        for i in 0..count {
            last = Some(producer.send(ProducerRecord::new(topic.as_str(), value.clone()).key(format!("{i}"))).await?);
        }
        if let Some(last) = last {
            last.await?;
        }
        producer.flush().await?;
        println!("produced {count:>8} {:7.1} MiB (round {round})", rss_mib());
    }

    let partitions = client.topic(topic).await?.partitions.len() as i32;
    let mut consumer = Consumer::new(client.clone(), ConsumerConfig { auto_offset_reset: OffsetReset::Earliest, ..Default::default() })?;
    consumer.assign((0..partitions).map(|p| TopicPartition::new(topic.as_str(), p)))?;
    let mut read = 0;
    while read < count {
        read += consumer.poll(Duration::from_secs(1)).await?.len();
    }
    println!("consumed {read:>8} {:7.1} MiB", rss_mib());

    tokio::time::sleep(Duration::from_secs(2)).await;
    println!("idle 2 s          {:7.1} MiB", rss_mib());

    set_memory_policy(MemoryPolicy::MINIMAL);
    release_thread_memory();
    println!("memory released   {:7.1} MiB", rss_mib());
    consumer.close().await?;
    producer.close().await?;
    Ok(())
}
