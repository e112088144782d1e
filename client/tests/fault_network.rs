//! An idempotent acks=all producer through a faulty network: kwire-proxy's fault injector
//! between the client and a real broker drops connections, delays frames, stalls connections
//! half-open, resets them mid-frame and cuts frames short, chosen per connection by a seeded
//! generator. Afterwards Java's KafkaConsumer reads the topic straight from the broker, and
//! every record the producer acknowledged must be there exactly once, at the offset it was
//! acknowledged with, in the order it was sent within its partition; nothing may be written
//! twice. The client must not panic, and every error it returns must be one of its typed kinds
//! that a faulty network explains.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{unique, Broker};
use kwire_client::{Acks, Admin, Client, ClientConfig, Error, NewTopic, Producer, ProducerConfig, ProducerError, ProducerRecord};
use kwire_proxy::{Config, FaultConfig, FaultKind, FrameDirection, Proxy};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

const RECORDS: usize = 20_000;
/// Records sent after the faults stop: every one must be acknowledged (the producer recovers).
const CALM: usize = 2_000;
const PARTITIONS: i32 = 6;
const ROUNDS: usize = 40;

const JAVA: &str = r#"
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public class FaultReadBack {
    public static void main(String[] args) {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        p.put("check.crcs", "true");
        p.put("max.poll.records", "5000");
        int partitions = Integer.parseInt(args[2]);
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < partitions; i++) tps.add(new TopicPartition(args[1], i));
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            long deadline = System.currentTimeMillis() + 60000;
            boolean done = false;
            while (!done && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500)))
                    System.out.println(r.partition() + " " + r.offset() + " " + r.key() + " " + r.value());
                done = true;
                for (TopicPartition tp : tps) done &= c.position(tp) >= end.get(tp);
            }
            System.out.println(done ? "read to the end" : "timed out");
        }
    }
}
"#;

/// Java's idempotent producer with the settings the kwire producer gets below, sending the same
/// records in the same rounds: what a faulty network costs the reference client. After the
/// faulty rounds it prints `faulty done`, waits for a line on stdin (the test heals the network
/// meanwhile), sends the calm records and prints `recovered in SECONDS` once they are all
/// answered; then `acked SEQ PARTITION OFFSET` per acknowledged record, `failed SEQ EXCEPTION`
/// per failed one, and `produced in SECONDS` (the faulty rounds and their flush).
const JAVA_PRODUCER: &str = r#"
import java.io.*;
import java.util.*;
import java.util.concurrent.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.serialization.StringSerializer;

public class FaultProducer {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("acks", "all");
        p.put("enable.idempotence", "true");
        p.put("batch.size", "2048");
        p.put("linger.ms", "5");
        p.put("retry.backoff.ms", "50");
        p.put("retry.backoff.max.ms", "500");
        p.put("delivery.timeout.ms", args[5]);
        p.put("request.timeout.ms", "3000");
        p.put("max.block.ms", "10000");
        p.put("client.id", "java-fault-network");
        int records = Integer.parseInt(args[2]), rounds = Integer.parseInt(args[3]), calm = Integer.parseInt(args[4]);
        ConcurrentLinkedQueue<String> out = new ConcurrentLinkedQueue<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        long start = System.nanoTime();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            int perRound = records / rounds;
            for (int round = 0; round < rounds; round++) {
                for (int seq = round * perRound; seq < (round + 1) * perRound; seq++) send(producer, args[1], seq, out, null);
                Thread.sleep(50);
            }
            producer.flush();
            double produced = (System.nanoTime() - start) / 1e9;
            System.out.println("faulty done");
            System.out.flush();
            in.readLine();
            long healed = System.nanoTime();
            CountDownLatch answered = new CountDownLatch(calm);
            for (int seq = records; seq < records + calm; seq++) send(producer, args[1], seq, out, answered);
            producer.flush();
            answered.await();
            System.out.printf("recovered in %.3f%n", (System.nanoTime() - healed) / 1e9);
            for (String line : out) System.out.println(line);
            System.out.printf("produced in %.1f%n", produced);
        }
    }

    static void send(KafkaProducer<String, String> producer, String topic, int seq, ConcurrentLinkedQueue<String> out, CountDownLatch answered) {
        try {
            producer.send(new ProducerRecord<>(topic, "k" + (seq % 997), "v" + seq), (m, e) -> {
                if (e == null) out.add("acked " + seq + " " + m.partition() + " " + m.offset());
                else out.add("failed " + seq + " " + e.getClass().getSimpleName());
                if (answered != null) answered.countDown();
            });
        } catch (Exception e) {
            out.add("failed " + seq + " " + e.getClass().getSimpleName());
            if (answered != null) answered.countDown();
        }
    }
}
"#;

/// The kind of a client error, for the tally: the variant (and a broker's code, a delivery
/// timeout's last cause); `None` for one a faulty network does not explain (a malformed
/// response taken for a good one, a configuration error, the producer closing under the test).
fn kind(e: &Error) -> Option<String> {
    Some(match e {
        Error::Io { .. } => "io".into(),
        Error::Protocol { .. } => "protocol".into(),
        Error::Timeout { .. } => "timeout".into(),
        Error::Disconnected(_) => "disconnected".into(),
        Error::Broker { code, .. } => format!("broker {}", code.name().unwrap_or("unknown code")),
        Error::Producer(ProducerError::BufferFull { .. }) => "buffer full".into(),
        Error::Producer(ProducerError::DeliveryTimeout { last_error, .. }) => match last_error.as_deref() {
            Some(cause) => format!("delivery timeout, last {}", kind(cause)?),
            None => "delivery timeout".into(),
        },
        Error::Producer(ProducerError::OutcomeUnknown { last_error, .. }) => match last_error.as_deref() {
            Some(cause) => format!("outcome unknown, last {}", kind(cause)?),
            None => "outcome unknown".into(),
        },
        _ => return None,
    })
}

/// The producers' delivery timeout: 30 s, or `KWIRE_FAULT_DELIVERY_MS` (a soak that wants
/// batches to expire mid-fault, with a few seconds).
fn delivery_timeout() -> Duration {
    Duration::from_millis(std::env::var("KWIRE_FAULT_DELIVERY_MS").ok().and_then(|s| s.parse().ok()).unwrap_or(30_000))
}

/// The seed of the faults (`KWIRE_FAULT_SEED` to try another; scripts/client-tests.sh adds one
/// that changes every day).
fn seed() -> u64 {
    std::env::var("KWIRE_FAULT_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x6b_7769_7265)
}

/// The faulty network: six connections in ten struck within their first frames, and again in
/// every window of nine frames after. Late requests (held past the request timeout, then handled
/// by the broker after their client retried them on another connection) are what an idempotent
/// producer must not write twice.
fn faults(seed: u64) -> FaultConfig {
    FaultConfig::new(seed)
        .percent(60)
        .kinds(&[(FaultKind::Drop, 2), (FaultKind::Delay, 2), (FaultKind::Stall, 1), (FaultKind::Reset, 2), (FaultKind::Truncate, 2), (FaultKind::Late, 2)])
        .after_frames(8)
        .max_delay(Duration::from_millis(400))
        .stall(Duration::from_secs(8))
        .late(Duration::from_secs(4))
}

/// The requests a client sent through the proxy, by api, and the connections that carried them:
/// what the faults had to strike (they strike per window of frames, so a client sending more
/// frames meets more of them).
#[derive(Clone, Default)]
struct Requests(Arc<std::sync::Mutex<Tally>>);

#[derive(Default)]
struct Tally {
    by_api: BTreeMap<&'static str, usize>,
    connections: std::collections::BTreeSet<u64>,
    /// The batches in the Produce requests (one per partition a request carries).
    batches: usize,
}

impl Requests {
    /// The proxy's configuration with this tally watching its frames.
    fn watch(&self, config: Config) -> Config {
        let tally = self.clone();
        config.on_frame(move |f| {
            if f.direction == FrameDirection::Request {
                let name = kwire::ApiKey::from_i16(f.api_key).map_or("unknown", |k| k.name());
                let batches = match kwire::codec::RequestFrame::parse(bytes::Bytes::copy_from_slice(f.received)).map(|r| r.decode_body()) {
                    Ok(Ok(kwire::RequestKind::Produce(p))) => p.topic_data.iter().map(|t| t.partition_data.len()).sum(),
                    _ => 0,
                };
                let mut t = tally.0.lock().unwrap_or_else(|p| p.into_inner());
                *t.by_api.entry(name).or_default() += 1;
                t.connections.insert(f.connection);
                t.batches += batches;
            }
        })
    }
}

impl std::fmt::Display for Requests {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = self.0.lock().unwrap_or_else(|p| p.into_inner());
        write!(f, "{} requests on {} connections (", t.by_api.values().sum::<usize>(), t.connections.len())?;
        for (i, (api, n)) in t.by_api.iter().enumerate() {
            write!(f, "{}{api} {n}", if i == 0 { "" } else { ", " })?;
        }
        write!(f, "; {} batches in the Produce requests)", t.batches)
    }
}

/// What the log read back shows of the acknowledged records (`seq -> (partition, offset)`):
/// the first few missing, written twice, found elsewhere than acknowledged, out of send order.
#[derive(Debug, Default)]
#[allow(clippy::type_complexity)]
struct Audit {
    missing: Vec<(usize, (i32, i64))>,
    duplicated: Vec<(usize, Vec<(i32, i64)>)>,
    moved: Vec<(usize, (i32, i64))>,
    out_of_order: Vec<(i32, (i64, usize), (i64, usize))>,
    /// How many records each check found (the lists above keep the first few).
    counts: AuditCounts,
}

#[derive(Debug, Default, Clone, Copy)]
struct AuditCounts {
    missing: usize,
    duplicated: usize,
    moved: usize,
    out_of_order: usize,
}

fn audit(log: &[(i32, i64, String, usize)], acked: &HashMap<usize, (i32, i64)>) -> Audit {
    // seq -> where it is in the log (more than one place: a duplicate).
    let mut found: HashMap<usize, Vec<(i32, i64)>> = HashMap::new();
    for (partition, offset, key, seq) in log {
        assert_eq!(*key, format!("k{}", seq % 997), "record {seq}'s key");
        found.entry(*seq).or_default().push((*partition, *offset));
    }
    let duplicated = found.iter().filter(|(_, at)| at.len() > 1).take(5).map(|(s, at)| (*s, at.clone())).collect();
    let missing = acked.iter().filter(|(seq, _)| !found.contains_key(seq)).take(5).map(|(s, at)| (*s, *at)).collect();
    let moved = acked.iter().filter(|(seq, at)| found.get(seq).is_some_and(|f| f.len() == 1 && f[0] != **at)).take(5).map(|(s, at)| (*s, *at)).collect();
    let mut counts = AuditCounts {
        missing: acked.keys().filter(|seq| !found.contains_key(seq)).count(),
        duplicated: found.values().filter(|at| at.len() > 1).count(),
        moved: acked.iter().filter(|(seq, at)| found.get(seq).is_some_and(|f| f.len() == 1 && f[0] != **at)).count(),
        out_of_order: 0,
    };
    // Per partition, by offset, the records in the order they were sent.
    let mut by_partition: BTreeMap<i32, Vec<(i64, usize)>> = BTreeMap::new();
    for (partition, offset, _, seq) in log {
        by_partition.entry(*partition).or_default().push((*offset, *seq));
    }
    let mut out_of_order = Vec::new();
    for (partition, records) in &mut by_partition {
        records.sort_unstable();
        counts.out_of_order += records.windows(2).filter(|w| w[0].1 >= w[1].1).count();
        out_of_order.extend(records.windows(2).filter(|w| w[0].1 >= w[1].1).map(|w| (*partition, w[0], w[1])).take(5));
    }
    Audit { missing, duplicated, moved, out_of_order, counts }
}

/// Runs Java's consumer on `topic`: (partition, offset, key, value) of every record.
async fn read_back(b: &Broker, topic: &str) -> Vec<(i32, i64, String, usize)> {
    let dir = std::env::temp_dir().join(unique("kw-fault-readback"));
    let stdout = common::java(b, &dir, "FaultReadBack.java", JAVA, &[b.var("PLAINTEXT"), topic, &PARTITIONS.to_string()], Duration::from_secs(120)).await;
    let _ = std::fs::remove_dir_all(&dir);
    assert!(stdout.ends_with("read to the end\n"), "java did not read to the end: {}", &stdout[stdout.len().saturating_sub(200)..]);
    stdout
        .lines()
        .filter(|l| *l != "read to the end")
        .map(|l| {
            let parts: Vec<&str> = l.split(' ').collect();
            let [partition, offset, key, value] = parts[..] else { panic!("java printed {l:?}") };
            let seq = value.strip_prefix('v').and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("a value {value:?}"));
            (partition.parse().unwrap(), offset.parse().unwrap(), key.to_owned(), seq)
        })
        .collect()
}

/// How many batches the log holds (runs of records with one producer id, epoch and base
/// sequence): how finely a client cut its records, whichever client wrote them.
async fn batches_in_log(b: &Broker, topic: &str, log: &[(i32, i64, String, usize)]) -> usize {
    let reader = b.client().await;
    let mut batches = 0;
    for p in 0..PARTITIONS {
        let count = log.iter().filter(|r| r.0 == p).count();
        let mut last = None;
        for f in common::fetch_all(&reader, topic, p, count).await {
            let key = Some((f.producer_id, f.producer_epoch, f.base_sequence));
            if key != last {
                batches += 1;
                last = key;
            }
        }
    }
    batches
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotent_producer_through_a_faulty_network_loses_and_duplicates_nothing() {
    let Some(b) = Broker::from_env("an_idempotent_producer_through_a_faulty_network_loses_and_duplicates_nothing") else { return };
    common::init_tracing();
    let started = Instant::now();
    // Panics anywhere (the client's tasks included) are counted, not only the test's own.
    let panics = Arc::new(AtomicUsize::new(0));
    let seen = panics.clone();
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        seen.fetch_add(1, Ordering::SeqCst);
        default_hook(info);
    }));

    let topic = unique("kw-faults");
    Admin::new(b.client().await).create_topic(NewTopic::new(&topic, PARTITIONS)).await.unwrap();

    let seed = seed();
    let requests = Requests::default();
    let proxy = Proxy::start(requests.watch(Config::new(b.var("PLAINTEXT")).faults(faults(seed)))).await.unwrap();
    let mut errors: BTreeMap<String, usize> = BTreeMap::new();
    let mut unexplained = Vec::new();
    let mut tally = |e: Error| match kind(&e) {
        Some(k) => *errors.entry(k).or_default() += 1,
        None => unexplained.push(e.to_string()),
    };
    // Every connection may be struck, the bootstrap ones too: a few tries.
    let config = ClientConfig::new(&proxy.bootstrap().to_string()).client_id("kwire-fault-network").request_timeout(Duration::from_secs(3));
    let mut client = None;
    for _ in 0..10 {
        match tokio::time::timeout(Duration::from_secs(20), Client::connect(config.clone())).await.expect("connect settles in time") {
            Ok(c) => {
                client = Some(c);
                break;
            }
            Err(e) => tally(e),
        }
    }
    let client = client.expect("connected within 10 tries");

    let producer = Producer::new(
        client,
        ProducerConfig {
            acks: Acks::All,
            idempotence: true,
            batch_size: 2048,
            linger: Duration::from_millis(5),
            retry_backoff: Duration::from_millis(50),
            retry_backoff_max: Duration::from_millis(500),
            delivery_timeout: delivery_timeout(),
            max_block: Duration::from_secs(10),
            ..Default::default()
        },
    )
    .unwrap();

    // In rounds, so that the records span many requests and connections.
    let mut deliveries = Vec::with_capacity(RECORDS);
    let per_round = RECORDS / ROUNDS;
    for round in 0..ROUNDS {
        for seq in round * per_round..(round + 1) * per_round {
            let record = ProducerRecord::new(&topic, format!("v{seq}")).key(format!("k{}", seq % 997));
            match tokio::time::timeout(Duration::from_secs(20), producer.send(record)).await.expect("send in time") {
                Ok(d) => deliveries.push((seq, d)),
                Err(e) => tally(e),
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::timeout(Duration::from_secs(60), producer.flush()).await.expect("flushed in time").ok();
    let produced_in = started.elapsed();
    // The network heals: whatever state the faults left the producer in (epochs, sequences,
    // connections), what it is given now gets through. The counts are read after the switch,
    // so that a fault striking at the moment of the switch is counted before.
    proxy.set_faults_enabled(false);
    let requests_faulty = requests.to_string();
    let healed = Instant::now();
    let faults_over = proxy.fault_counts();
    let mut calm = Vec::with_capacity(CALM);
    for seq in RECORDS..RECORDS + CALM {
        let record = ProducerRecord::new(&topic, format!("v{seq}")).key(format!("k{}", seq % 997));
        calm.push((seq, tokio::time::timeout(Duration::from_secs(20), producer.send(record)).await.expect("send in time").expect("sent on a healed network")));
    }
    let mut calm_failed = Vec::new();
    let mut calm_acked = HashMap::new();
    for (seq, d) in calm {
        match tokio::time::timeout(Duration::from_secs(60), d).await.expect("every delivery settles") {
            Ok(m) => {
                calm_acked.insert(seq, (m.partition, m.offset));
            }
            Err(e) => calm_failed.push((seq, e.to_string())),
        }
    }
    let recovered_in = healed.elapsed();

    // seq -> (partition, offset) of every acknowledged record.
    let mut acked: HashMap<usize, (i32, i64)> = HashMap::new();
    for (seq, d) in deliveries {
        match tokio::time::timeout(Duration::from_secs(60), d).await.expect("every delivery settles") {
            Ok(m) => {
                acked.insert(seq, (m.partition, m.offset));
            }
            Err(e) => tally(e),
        }
    }
    let stats = producer.stats();
    tokio::time::timeout(Duration::from_secs(30), producer.close()).await.expect("closed in time").ok();
    let counts = proxy.fault_counts();
    assert_eq!((counts.total(), counts.connections >= faults_over.connections), (faults_over.total(), true), "no fault once disabled");
    let faulty_acked = acked.len();
    acked.extend(calm_acked);
    drop(proxy);

    let log = read_back(&b, &topic).await;
    let batches = batches_in_log(&b, &topic, &log).await;
    let Audit { missing, duplicated, moved, out_of_order, counts: found } = audit(&log, &acked);
    if !duplicated.is_empty() {
        // The evidence: the batches (producer epoch and base sequence) each copy was written in.
        let reader = b.client().await;
        let partitions: std::collections::BTreeSet<i32> = duplicated.iter().flat_map(|(_, at)| at.iter().map(|(p, _)| *p)).collect();
        for p in partitions {
            let count = log.iter().filter(|r| r.0 == p).count();
            let mut batches: Vec<(i64, i16, i32, i64, usize)> = Vec::new();
            for f in common::fetch_all(&reader, &topic, p, count).await {
                let key = (f.producer_id, f.producer_epoch, f.base_sequence);
                match batches.last_mut() {
                    Some(last) if (last.0, last.1, last.2) == key => last.4 += 1,
                    _ => batches.push((key.0, key.1, key.2, f.record.offset, 1)),
                }
            }
            println!("partition {p}'s batches (producer id, epoch, base sequence, first offset, records): {batches:?}");
        }
    }

    println!(
        "fault network: {} records sent under faults, {} acknowledged, then {CALM} on the healed network ({} failed), {} errors ({errors:?}), {} in the log (read back by Java), \
         {} of them unacknowledged; faults over {} connections: {} dropped, {} delayed, {} stalled, {} reset, {} truncated, {} late; \
         produced in {:.1}s, {:.1}s in all (seed {seed}); {batches} batches in the log, {:?}; under faults {requests_faulty}",
        RECORDS,
        faulty_acked,
        calm_failed.len(),
        errors.values().sum::<usize>() + unexplained.len(),
        log.len(),
        log.len() - acked.len().min(log.len()),
        counts.connections,
        counts.drop,
        counts.delay,
        counts.stall,
        counts.reset,
        counts.truncate,
        counts.late,
        produced_in.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        stats
    );
    // One line for scripts/fault-soak.sh's table.
    println!(
        "soak: client=kwire seed={seed} sent={} acked={} failed={} in_log={} duplicated={} lost={} moved={} out_of_order={} produced_s={:.1} recovered_s={:.3} faults={}",
        RECORDS + CALM,
        acked.len(),
        // Records, not errors: a connection attempt refused by the faults is an error too.
        RECORDS + CALM - acked.len(),
        log.len(),
        found.duplicated,
        found.missing,
        found.moved,
        found.out_of_order,
        produced_in.as_secs_f64(),
        recovered_in.as_secs_f64(),
        counts.total()
    );
    let _ = std::panic::take_hook();
    assert!(missing.is_empty(), "acknowledged records missing from the log: {missing:?}");
    assert!(duplicated.is_empty(), "records written twice: {duplicated:?}");
    assert!(moved.is_empty(), "acknowledged at one offset, found at another: {moved:?}");
    assert!(out_of_order.is_empty(), "out of send order within a partition: {out_of_order:?}");
    assert_eq!(panics.load(Ordering::SeqCst), 0, "a panic (the client's tasks included)");
    assert!(unexplained.is_empty(), "errors a faulty network does not explain: {:?}", &unexplained[..unexplained.len().min(5)]);
    assert!(calm_failed.is_empty(), "after the faults stopped, {} of {CALM} records failed, first {:?}", calm_failed.len(), calm_failed.first());
    assert!(faulty_acked > 0, "records got through the faulty network");
    // The default seed is known to strike enough; another one (CI's rotating seed, a soak) that
    // strikes too little proves little, and says so rather than failing on the harness.
    if std::env::var_os("KWIRE_FAULT_SEED").is_none() || counts.total() >= 5 {
        assert!(counts.total() >= 5, "the network was faulty enough: {counts:?}");
    } else {
        println!("uninformative: seed {seed} struck only {} faults ({counts:?})", counts.total());
    }
}

/// The reference for the kwire producer's recovery: Java's idempotent producer through the same
/// faulty network (the same seed, fault mix and settings, the same records in the same rounds),
/// with the same audit of its log. Not in CI (it measures Java, and takes a minute): run it
/// beside the test above to compare how many records each lets time out under the faults.
///
///   KWIRE_BROKER=target/kafka/4.4.0/env cargo test -p kwire-client --test fault_network -- --ignored --nocapture
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement of Java's producer, run by hand"]
async fn java_producer_through_the_same_faulty_network() {
    let Some(b) = Broker::from_env("java_producer_through_the_same_faulty_network") else { return };
    let topic = unique("kw-faults-java");
    Admin::new(b.client().await).create_topic(NewTopic::new(&topic, PARTITIONS)).await.unwrap();
    let seed = seed();
    let requests = Requests::default();
    let proxy = Proxy::start(requests.watch(Config::new(b.var("PLAINTEXT")).faults(faults(seed)))).await.unwrap();
    let dir = std::env::temp_dir().join(unique("kw-fault-java"));
    let bootstrap = proxy.bootstrap().to_string();
    // The faulty rounds, then (once Java says so) the healed network and the calm records.
    let mut child = common::java_interactive(
        &b,
        &dir,
        "FaultProducer.java",
        JAVA_PRODUCER,
        &[&bootstrap, &topic, &RECORDS.to_string(), &ROUNDS.to_string(), &CALM.to_string(), &delivery_timeout().as_millis().to_string()],
    );
    let mut lines = tokio::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut stdin = child.stdin.take().expect("stdin");
    let mut out = Vec::new();
    let mut counts = None;
    let mut requests_faulty = String::new();
    let run = async {
        while let Some(line) = lines.next_line().await.expect("java's output") {
            if line == "faulty done" {
                proxy.set_faults_enabled(false);
                counts = Some(proxy.fault_counts());
                requests_faulty = requests.to_string();
                stdin.write_all(b"heal\n").await.expect("java's stdin");
                stdin.flush().await.expect("java's stdin");
            }
            out.push(line);
        }
    };
    tokio::time::timeout(Duration::from_secs(240), run).await.expect("java in time");
    let status = child.wait().await.expect("java ends");
    assert!(status.success(), "FaultProducer failed: {}", out.join("\n"));
    let _ = std::fs::remove_dir_all(&dir);
    let counts = counts.unwrap_or_else(|| proxy.fault_counts());
    drop(proxy);
    let mut acked = HashMap::new();
    let mut failed: BTreeMap<String, usize> = BTreeMap::new();
    let mut produced_in = String::new();
    let mut recovered_in = String::new();
    for line in &out {
        let parts: Vec<&str> = line.split(' ').collect();
        match parts[..] {
            ["acked", seq, partition, offset] => {
                acked.insert(seq.parse().unwrap(), (partition.parse().unwrap(), offset.parse().unwrap()));
            }
            ["failed", _, kind] => *failed.entry(kind.to_owned()).or_default() += 1,
            ["produced", "in", secs] => produced_in = secs.to_owned(),
            ["recovered", "in", secs] => recovered_in = secs.to_owned(),
            // Its log lines (warnings of each retry) go to stdout too.
            _ => {}
        }
    }
    let log = read_back(&b, &topic).await;
    let batches = batches_in_log(&b, &topic, &log).await;
    let audit = audit(&log, &acked);
    println!(
        "soak: client=java seed={seed} sent={} acked={} failed={} in_log={} duplicated={} lost={} moved={} out_of_order={} produced_s={produced_in} recovered_s={recovered_in} faults={}",
        RECORDS + CALM,
        acked.len(),
        failed.values().sum::<usize>(),
        log.len(),
        audit.counts.duplicated,
        audit.counts.missing,
        audit.counts.moved,
        audit.counts.out_of_order,
        counts.total()
    );
    println!(
        "java through the fault network: {RECORDS} records sent, {} acknowledged, {} failed ({failed:?}), {} in the log; \
         faults over {} connections: {} dropped, {} delayed, {} stalled, {} reset, {} truncated, {} late; produced in {produced_in}s (seed {seed}); \
         {batches} batches in the log; {audit:?}; under faults {requests_faulty}",
        acked.len(),
        failed.values().sum::<usize>(),
        log.len(),
        counts.connections,
        counts.drop,
        counts.delay,
        counts.stall,
        counts.reset,
        counts.truncate,
        counts.late,
    );
    assert_eq!(acked.len() + failed.values().sum::<usize>(), RECORDS + CALM, "every record answered");
    assert!(audit.missing.is_empty() && audit.duplicated.is_empty(), "{audit:?}");
}
