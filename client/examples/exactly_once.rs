//! Exactly-once consume-transform-produce (KIP-98, KIP-447): reads `--input` in a consumer
//! group with read_committed, writes each record to `--output` and commits the consumer's
//! offsets in the same transaction, so every input record appears in the output exactly once
//! for read_committed readers, whether the program is killed and restarted or not.
//!
//! ```sh
//! cargo run -p kwire-client --example exactly_once -- --bootstrap 127.0.0.1:9092 \
//!     --input orders --output orders-copy --group copier --transactional-id copier-1 [--idle 5]
//! ```
//!
//! The output record has the input's key and value and a `source` header
//! (`topic-partition@offset`). Exits after `--idle` seconds without input; prints a line per
//! committed transaction. A restarted instance with the same transactional id fences the old
//! one and aborts what it left open; with the same group instance id it takes its partitions
//! back at once (static membership).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kwire_client::{
    Client, ClientConfig, Consumer, ConsumerConfig, Error, IsolationLevel, OffsetAndMetadata, OffsetReset, Producer, ProducerConfig, ProducerRecord,
    TopicPartition, TransactionError,
};

struct Args {
    bootstrap: String,
    input: String,
    output: String,
    group: String,
    transactional_id: String,
    idle: Duration,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        bootstrap: String::new(),
        input: String::new(),
        output: String::new(),
        group: "kwire-exactly-once".into(),
        transactional_id: "kwire-exactly-once-1".into(),
        idle: Duration::from_secs(5),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--bootstrap" => args.bootstrap = value()?,
            "--input" => args.input = value()?,
            "--output" => args.output = value()?,
            "--group" => args.group = value()?,
            "--transactional-id" => args.transactional_id = value()?,
            "--idle" => args.idle = Duration::from_secs_f64(value()?.parse().map_err(|e| format!("--idle: {e}"))?),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if args.bootstrap.is_empty() || args.input.is_empty() || args.output.is_empty() {
        return Err("--bootstrap, --input and --output are needed".into());
    }
    Ok(args)
}

/// Puts the consumer back where the group's committed offsets are (after an aborted
/// transaction, its records are read and written again).
async fn rewind(consumer: &mut Consumer) -> Result<(), Error> {
    let assigned: Vec<TopicPartition> = consumer.assignment().into_iter().collect();
    let committed = consumer.committed(&assigned).await?;
    for tp in &assigned {
        match committed.get(tp) {
            Some(o) => consumer.seek(tp, o.offset)?,
            None => consumer.seek_to_beginning(std::slice::from_ref(tp)),
        }
    }
    Ok(())
}

async fn run(args: Args) -> Result<(), Error> {
    let client = Client::connect(ClientConfig::new(&args.bootstrap).client_id("kwire-exactly-once")).await?;
    let consumer_config = ConsumerConfig {
        isolation_level: IsolationLevel::ReadCommitted, // other transactions' aborted records never come in
        enable_auto_commit: false,                      // offsets are committed by the transactions
        auto_offset_reset: OffsetReset::Earliest,
        group_instance_id: Some(args.transactional_id.clone()),
        session_timeout: Duration::from_secs(10),
        ..ConsumerConfig::group(&args.group)
    };
    let mut consumer = Consumer::new(client.clone(), consumer_config)?;
    consumer.subscribe(&[&args.input])?;
    let producer_config = ProducerConfig { transactional_id: Some(args.transactional_id.clone()), ..Default::default() };
    let producer = Producer::new(client, producer_config)?;
    // Fences an earlier instance with this id and aborts the transaction it left open.
    producer.init_transactions().await?;

    let (mut copied, mut transactions, mut aborted) = (0usize, 0usize, 0usize);
    let mut last_input = Instant::now();
    while last_input.elapsed() < args.idle {
        let records = consumer.poll(Duration::from_millis(500)).await?;
        if records.is_empty() {
            continue;
        }
        last_input = Instant::now();
        producer.begin_transaction().await?;
        let mut offsets: BTreeMap<TopicPartition, OffsetAndMetadata> = BTreeMap::new();
        let mut deliveries = Vec::with_capacity(records.len());
        for r in &records {
            let mut out = ProducerRecord { topic: args.output.as_str().into(), key: r.key.clone(), value: r.value.clone(), ..Default::default() };
            out = out.header("source", Some(format!("{}-{}@{}", r.topic, r.partition, r.offset).into()));
            deliveries.push(producer.send(out).await?);
            offsets.insert(TopicPartition::new(&*r.topic, r.partition), OffsetAndMetadata::new(r.offset + 1));
        }
        // The consumer's group generation and member id go with the offsets: a zombie whose
        // partitions moved to another member cannot commit them (KIP-447).
        let outcome = match producer.send_offsets_to_transaction(&offsets, &consumer.group_metadata()?).await {
            Ok(()) => producer.commit_transaction().await,
            Err(e) => Err(e),
        };
        match outcome {
            Ok(()) => {
                copied += records.len();
                transactions += 1;
                println!("committed {} records ({copied} in {transactions} transactions)", records.len());
            }
            // The transaction failed (a record was not written, the offsets were refused):
            // abort it and read the records again from the committed offsets.
            Err(Error::Transaction(TransactionError::Abortable(cause))) => {
                eprintln!("aborting: {cause}");
                producer.abort_transaction().await?;
                aborted += 1;
                rewind(&mut consumer).await?;
            }
            // Fenced by a newer instance, or not authorized: this instance is done.
            Err(e) => return Err(e),
        }
        drop(deliveries);
    }
    producer.close().await?;
    consumer.close().await?;
    println!("done: {copied} records copied in {transactions} transactions, {aborted} aborted");
    Ok(())
}

#[tokio::main]
async fn main() {
    // RUST_LOG=kwire_client=debug shows the client's events on stderr.
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_default_env() {
        tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
    }
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(args).await {
        eprintln!("exactly_once: {e}");
        std::process::exit(1);
    }
}
