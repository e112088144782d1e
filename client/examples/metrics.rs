//! kwire-client's metrics on a Prometheus endpoint: installs the `metrics-exporter-prometheus`
//! recorder with its HTTP listener, then produces records and reads them back in a consumer
//! group, so that the producer's, consumer's and connections' metrics have values.
//!
//! ```sh
//! cargo run -p kwire-client --example metrics -- --bootstrap 127.0.0.1:9092 \
//!     [--listen 127.0.0.1:9464] [--topic T] [--count N]
//! curl -s http://127.0.0.1:9464/metrics | grep ^kafka_
//! ```
//!
//! Prints `serving http://ADDR/metrics` once the records are back, and serves until its
//! standard input closes (Ctrl-D).

use std::net::SocketAddr;
use std::time::Duration;

use kwire_client::{Admin, Client, ClientConfig, Consumer, ConsumerConfig, NewTopic, OffsetReset, Producer, ProducerConfig, ProducerRecord};
use metrics_exporter_prometheus::PrometheusBuilder;
use tokio::io::AsyncReadExt;

struct Args {
    bootstrap: String,
    listen: SocketAddr,
    topic: String,
    count: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args { bootstrap: String::new(), listen: SocketAddr::from(([127, 0, 0, 1], 9464)), topic: "kwire-metrics-example".into(), count: 1000 };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--bootstrap" => args.bootstrap = value()?,
            "--listen" => args.listen = value()?.parse().map_err(|e| format!("--listen: {e}"))?,
            "--topic" => args.topic = value()?,
            "--count" => args.count = value()?.parse().map_err(|e| format!("--count: {e}"))?,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if args.bootstrap.is_empty() {
        return Err("--bootstrap HOST:PORT is required".into());
    }
    Ok(args)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args()?;
    // First the recorder: handles are made when the producer, consumer and connections are.
    PrometheusBuilder::new().with_http_listener(args.listen).install()?;

    let client = Client::connect(ClientConfig::new(&args.bootstrap).client_id("metrics-example")).await?;
    let admin = Admin::new(client.clone());
    if let Err(e) = admin.create_topic(NewTopic::new(&args.topic, 3)).await {
        eprintln!("create topic {}: {e} (using it as it is)", args.topic);
    }

    let producer = Producer::new(client.clone(), ProducerConfig::default())?;
    let mut deliveries = Vec::with_capacity(args.count);
    for i in 0..args.count {
        let record = ProducerRecord::new(args.topic.as_str(), format!("value-{i:06}")).key(format!("key-{i:06}"));
        deliveries.push(producer.send(record).await?);
    }
    for d in deliveries {
        d.await?;
    }
    producer.close().await?;

    let group = format!("{}-group", args.topic);
    let config = ConsumerConfig { auto_offset_reset: OffsetReset::Earliest, enable_auto_commit: false, ..ConsumerConfig::group(group) };
    let mut consumer = Consumer::new(client, config)?;
    consumer.subscribe(&[&args.topic])?;
    let mut read = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while read < args.count && tokio::time::Instant::now() < deadline {
        read += consumer.poll(Duration::from_millis(500)).await?.len();
    }
    consumer.commit().await?;
    // One more fetch: its response gives the lag after the last record (0).
    consumer.poll(Duration::from_millis(200)).await?;
    if read < args.count {
        return Err(format!("read {read} of {} records", args.count).into());
    }

    println!("serving http://{}/metrics", args.listen);
    // Serves (with the consumer still a member) until standard input closes.
    let mut sink = Vec::new();
    tokio::io::stdin().read_to_end(&mut sink).await?;
    consumer.close().await?;
    Ok(())
}
