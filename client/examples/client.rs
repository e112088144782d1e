//! kwire-client end to end: connect (TLS with a CA file, SASL PLAIN or SCRAM, or both),
//! create a topic, produce keyed records, read them back, describe the topic.
//!
//! ```sh
//! cargo run -p kwire-client --example client -- --bootstrap 127.0.0.1:9092 \
//!     [--tls-ca ca.pem] [--sasl scram-sha-512:alice:alice-secret] [--topic T] [--count N]
//! ```
//!
//! `--sasl` takes `plain:`, `scram-sha-256:` or `scram-sha-512:` then `user:password`. Prints
//! one summary line and exits non-zero if any record did not come back as it was sent.

use std::time::Duration;

use kwire_client::{
    Admin, Client, ClientConfig, Consumer, ConsumerConfig, NewTopic, Producer, ProducerConfig, ProducerRecord, Sasl, TlsConfig, TopicPartition,
};

struct Args {
    bootstrap: String,
    tls_ca: Option<String>,
    sasl: Option<Sasl>,
    topic: String,
    count: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args { bootstrap: String::new(), tls_ca: None, sasl: None, topic: "kwire-example".into(), count: 1000 };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--bootstrap" => args.bootstrap = value()?,
            "--tls-ca" => args.tls_ca = Some(value()?),
            "--topic" => args.topic = value()?,
            "--count" => args.count = value()?.parse().map_err(|e| format!("--count: {e}"))?,
            "--sasl" => {
                let v = value()?;
                let mut parts = v.splitn(3, ':');
                let (Some(mechanism), Some(user), Some(password)) = (parts.next(), parts.next(), parts.next()) else {
                    return Err("--sasl MECHANISM:USER:PASSWORD".into());
                };
                args.sasl = Some(match mechanism {
                    "plain" => Sasl::plain(user, password),
                    "scram-sha-256" => Sasl::scram_sha256(user, password),
                    "scram-sha-512" => Sasl::scram_sha512(user, password),
                    other => return Err(format!("unknown SASL mechanism {other}")),
                });
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if args.bootstrap.is_empty() {
        return Err("--bootstrap HOST:PORT[,HOST:PORT...] is required".into());
    }
    Ok(args)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args()?;
    let mut config = ClientConfig::new(&args.bootstrap).client_id("kwire-example");
    if let Some(ca) = &args.tls_ca {
        config = config.tls(TlsConfig::ca_file(ca));
    }
    if let Some(sasl) = args.sasl.clone() {
        config = config.sasl(sasl);
    }
    let client = Client::connect(config).await?;

    // The topic, unless it is there already.
    let admin = Admin::new(client.clone());
    let existing = admin.describe_topics(&[&args.topic]).await?;
    if !existing.iter().any(|t| t.is_ok()) {
        admin.create_topic(NewTopic::new(&args.topic, 3)).await?;
    }

    // Produce: keyed records (Java's partitioner picks the partition), acks=all, idempotent.
    let producer = Producer::new(client.clone(), ProducerConfig::default())?;
    let run = std::process::id();
    let mut deliveries = Vec::with_capacity(args.count);
    for i in 0..args.count {
        let record = ProducerRecord::new(&args.topic, format!("{run}-{i}")).key(format!("key-{}", i % 10));
        deliveries.push(producer.send(record).await?);
    }
    let mut written = Vec::with_capacity(args.count);
    for d in deliveries {
        written.push(d.await?);
    }
    producer.close().await?;

    // Read each partition back from where this run's first record landed.
    let mut consumer = Consumer::new(client.clone(), ConsumerConfig::default())?;
    let mut starts = std::collections::BTreeMap::new();
    for m in &written {
        let start = starts.entry(m.partition).or_insert(m.offset);
        *start = (*start).min(m.offset);
    }
    consumer.assign(starts.keys().map(|&p| TopicPartition::new(&args.topic, p)))?;
    for (&p, &offset) in &starts {
        consumer.seek(&TopicPartition::new(&args.topic, p), offset)?;
    }
    let mut seen = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while seen < args.count && tokio::time::Instant::now() < deadline {
        for record in consumer.poll(Duration::from_secs(1)).await? {
            let value = record.value.as_deref().unwrap_or_default();
            if value.starts_with(format!("{run}-").as_bytes()) {
                seen += 1;
            }
        }
    }
    consumer.close().await?;

    let described = admin.describe_topics(&[&args.topic]).await?;
    let partitions = described.into_iter().flatten().map(|t| t.partitions.len()).sum::<usize>();
    println!("{}: {} records produced and {seen} read back, topic {} with {partitions} partitions", args.bootstrap, args.count, args.topic);
    if seen != args.count {
        return Err(format!("read back {seen} of {} records", args.count).into());
    }
    Ok(())
}
