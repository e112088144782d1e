//! Where the broker is: `KWIRE_BROKER=<env file of scripts/kafka.sh>`; tests skip with a
//! printed reason when it is unset, and fail instead under `KWIRE_REQUIRE_BROKER=1`.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use kwire::messages::{
    alter_partition_reassignments_request::{ReassignablePartition, ReassignableTopic},
    elect_leaders_request::TopicPartitions,
    AlterPartitionReassignmentsRequest, ElectLeadersRequest,
};
use kwire::ResponseKind;
use kwire_client::{Client, ClientConfig};

pub mod java;

pub struct Broker {
    pub vars: BTreeMap<String, String>,
    pub env_file: PathBuf,
}

impl Broker {
    pub fn from_env(test: &str) -> Option<Broker> {
        let required = std::env::var_os("KWIRE_REQUIRE_BROKER").is_some_and(|v| v == "1");
        let Some(spec) = std::env::var("KWIRE_BROKER").ok().filter(|s| !s.is_empty()) else {
            assert!(!required, "KWIRE_REQUIRE_BROKER=1 but KWIRE_BROKER is unset");
            eprintln!("skipping {test}: KWIRE_BROKER is unset (scripts/client-tests.sh sets it)");
            return None;
        };
        let text = std::fs::read_to_string(&spec).unwrap_or_else(|e| panic!("KWIRE_BROKER={spec}: {e}"));
        let vars = text.lines().filter_map(|l| l.split_once('=')).map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned())).collect();
        Some(Broker { vars, env_file: PathBuf::from(spec) })
    }

    pub fn var(&self, key: &str) -> &str {
        self.vars.get(key).unwrap_or_else(|| panic!("{}: no {key}", self.env_file.display()))
    }

    pub fn version(&self) -> &str {
        self.vars.get("KAFKA_VERSION").map(String::as_str).unwrap_or("unknown")
    }

    pub fn plaintext(&self) -> ClientConfig {
        ClientConfig::new(self.var("PLAINTEXT")).client_id("kwire-client-tests")
    }

    pub async fn client(&self) -> Client {
        Client::connect(self.plaintext()).await.expect("connects over PLAINTEXT")
    }

    /// The broker certificate and key (for the test's TLS-terminating proxy).
    pub fn certs_dir(&self) -> PathBuf {
        PathBuf::from(self.var("SSL_CA")).parent().expect("certs dir").to_owned()
    }
}

/// Runs the single-file Java program `source` (written to `dir/file`) with kafka-clients from
/// the broker's classpath and `args`, within `timeout`; its standard output.
pub async fn java(b: &Broker, dir: &Path, file: &str, source: &str, args: &[&str], timeout: Duration) -> String {
    let lib = b.var("KAFKA_LIB").to_owned();
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(file), source).unwrap();
    let run = tokio::process::Command::new("java")
        .arg("-cp")
        .arg(format!("{lib}/*"))
        .arg("-Dlog4j2.level=warn")
        .arg(dir.join(file))
        .args(args)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(timeout, run).await.expect("java in time").expect("java runs");
    assert!(out.status.success(), "{file} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Starts a Java program (as [`java`]) with piped stdin and stdout, for a test that talks to it.
pub fn java_interactive(b: &Broker, dir: &Path, file: &str, source: &str, args: &[&str]) -> tokio::process::Child {
    let lib = b.var("KAFKA_LIB").to_owned();
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(file), source).unwrap();
    tokio::process::Command::new("java")
        .arg("-cp")
        .arg(format!("{lib}/*"))
        .arg("-Dlog4j2.level=warn")
        .arg(dir.join(file))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("java runs")
}

/// Whether the broker speaks KIP-848's ConsumerGroupHeartbeat: Kafka 4 must (asserted);
/// scripts/kafka.sh turns it on for 3.x, where it is a preview. Prints why a test stops if not.
pub async fn kip848_supported(b: &Broker) -> bool {
    let client = b.client().await;
    let addr = client.node_addr(*client.metadata().brokers.keys().next().unwrap()).await.unwrap();
    let supported = client.connection(&addr).await.unwrap().version(kwire::ApiKey::ConsumerGroupHeartbeat).is_ok();
    assert!(supported || !b.version().starts_with('4'), "Kafka 4 has ConsumerGroupHeartbeat");
    if !supported {
        println!("Kafka {} has no ConsumerGroupHeartbeat: KIP-848 not tested", b.version());
    }
    supported
}

/// A record timestamp an hour ago (fixed for the run). Records older than the topics'
/// retention (7 days) roll a segment per append and go at the broker's next retention check.
pub fn recent_ts() -> i64 {
    static TS: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    *TS.get_or_init(|| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        now.as_millis() as i64 - 3_600_000
    })
}

/// A topic name unique to this run.
pub fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{prefix}-{}-{}", std::process::id(), nanos % 1_000_000_000)
}

/// `RUST_LOG=kwire_client=debug` shows the client's events (off without it).
pub fn init_tracing() {
    let Ok(filter) = tracing_subscriber::EnvFilter::try_from_default_env() else { return };
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_test_writer().try_init();
}

/// A record read back with kwire's own Fetch, with its batch's producer fields.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub record: kwire::runtime::records::Record,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub compression: kwire::runtime::records::Compression,
}

/// Fetches `partition` of `topic` from offset 0 until `count` records (bounded rounds).
pub async fn fetch_all(client: &Client, topic: &str, partition: i32, count: usize) -> Vec<Fetched> {
    use kwire::messages::fetch_request::{FetchPartition, FetchTopic};
    use kwire::records::{Batch, RecordsField};
    let leader = client.metadata().leader(topic, partition).expect("a leader");
    // Names up to Fetch v12, ids from v13: set both, the version picks.
    let topic_id = client.metadata().topics.get(topic).map(|t| t.id).unwrap_or_default();
    let mut out = Vec::new();
    let mut offset = 0;
    for _ in 0..50 {
        if out.len() >= count {
            break;
        }
        let request = kwire::messages::FetchRequest {
            replica_id: -1,
            max_wait_ms: 200,
            min_bytes: 1,
            max_bytes: 50 << 20,
            topics: vec![FetchTopic {
                topic: topic.to_owned().into(),
                topic_id,
                partitions: vec![FetchPartition { partition, fetch_offset: offset, partition_max_bytes: 10 << 20, ..Default::default() }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let r = client.send(kwire_client::Route::Node(leader), request).await.expect("fetch");
        let p = &r.responses[0].partitions[0];
        assert_eq!(p.error_code, 0, "fetch {topic}-{partition}");
        for batch in p.records.batches() {
            let Batch::V2(b) = batch.expect("a batch") else { continue };
            for rec in b.records().expect("records") {
                let rec = rec.expect("a record");
                if rec.offset >= offset {
                    offset = rec.offset + 1;
                    out.push(Fetched {
                        record: rec,
                        producer_id: b.producer_id(),
                        producer_epoch: b.producer_epoch(),
                        base_sequence: b.base_sequence(),
                        compression: b.compression(),
                    });
                }
            }
        }
    }
    out
}

/// Polls `check` every 100 ms until it holds, for at most 10 s (changes reach brokers through
/// the metadata log, a little after the controller answers).
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..100 {
        if check().await {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("{what}: not within 10 s");
}

/// The 3-node cluster's env file (`KWIRE_CLUSTER`); `None` (skip) without it, a failure
/// then under `KWIRE_REQUIRE_CLUSTER=1`.
pub fn cluster_env() -> Option<BTreeMap<String, String>> {
    let required = std::env::var_os("KWIRE_REQUIRE_CLUSTER").is_some_and(|v| v == "1");
    let Some(spec) = std::env::var("KWIRE_CLUSTER").ok().filter(|s| !s.is_empty()) else {
        assert!(!required, "KWIRE_REQUIRE_CLUSTER=1 but KWIRE_CLUSTER is unset");
        eprintln!("skipping: KWIRE_CLUSTER is unset (scripts/client-tests.sh sets it)");
        return None;
    };
    let text = std::fs::read_to_string(&spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
    Some(text.lines().filter_map(|l| l.split_once('=')).map(|(k, v)| (k.to_owned(), v.to_owned())).collect())
}

/// Moves `partition`'s leader to another replica (reassignment with the new leader first,
/// then a preferred election); returns the new leader.
pub async fn move_leader(admin_client: &Client, topic: &str, partition: i32) -> i32 {
    let m = admin_client.fetch_topic_metadata(&[topic]).await.unwrap();
    let p = m.topics[topic].partitions.iter().find(|p| p.index == partition).unwrap().clone();
    let mut replicas = p.replicas.clone();
    while replicas[0] == p.leader {
        replicas.rotate_left(1);
    }
    let new_leader = replicas[0];
    let alter = AlterPartitionReassignmentsRequest {
        timeout_ms: 30_000,
        topics: vec![ReassignableTopic {
            name: topic.to_owned().into(),
            partitions: vec![ReassignablePartition { partition_index: partition, replicas: Some(replicas.iter().copied().collect()), ..Default::default() }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = admin_client.send(kwire_client::Route::Controller, alter).await.unwrap();
    assert_eq!(r.error_code, 0);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let elect = ElectLeadersRequest {
            election_type: 0,
            topic_partitions: Some(vec![TopicPartitions {
                topic: topic.to_owned().into(),
                partitions: [partition].into_iter().collect(),
                ..Default::default()
            }]),
            timeout_ms: 30_000,
            ..Default::default()
        };
        admin_client.send(kwire_client::Route::Controller, elect).await.unwrap();
        let m = admin_client.fetch_topic_metadata(&[topic]).await.unwrap();
        if m.leader(topic, partition) == Some(new_leader) {
            println!("{topic}-{partition}: leader {} -> {new_leader}", p.leader);
            return new_leader;
        }
        assert!(std::time::Instant::now() < deadline, "the leader of {topic}-{partition} did not move to {new_leader}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// A broker double on kwire's ServerCodec at a free local port: each request is answered
/// with `answer(port, request)`; `None` closes that connection. Returns `host:port`.
pub async fn serve<F>(answer: F) -> String
where
    F: Fn(u16, kwire::RequestKind) -> Option<ResponseKind> + Send + Sync + 'static,
{
    use futures_util::{SinkExt, StreamExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a local port");
    let local = listener.local_addr().expect("its address");
    let answer = std::sync::Arc::new(answer);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let answer = answer.clone();
            tokio::spawn(async move {
                let mut conn = tokio_util::codec::Framed::new(tcp, kwire::codec::ServerCodec::new());
                while let Some(Ok(frame)) = conn.next().await {
                    let Some(body) = answer(local.port(), frame.decode_body().expect("a request the double can read")) else { return };
                    if conn.send(kwire::codec::OutboundResponse::new(&frame, body).expect("a response")).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    local.to_string()
}

/// A broker double's ApiVersions answer: `apis` at their stable versions.
pub fn api_versions(apis: &[kwire::ApiKey]) -> kwire::messages::ApiVersionsResponse {
    use kwire::messages::api_versions_response::ApiVersion;
    let api_keys = apis
        .iter()
        .map(|a| ApiVersion { api_key: a.key(), min_version: a.stable_versions().lo, max_version: a.stable_versions().hi, ..Default::default() })
        .collect();
    kwire::messages::ApiVersionsResponse { api_keys, ..Default::default() }
}

/// A broker double's Metadata answer: itself (node 1 on `port`) leading topic `t`'s one partition.
pub fn one_partition_metadata(port: u16) -> kwire::messages::MetadataResponse {
    use kwire::messages::metadata_response::{MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic};
    kwire::messages::MetadataResponse {
        brokers: vec![MetadataResponseBroker { node_id: 1, host: "127.0.0.1".into(), port: port as i32, ..Default::default() }],
        controller_id: 1,
        topics: vec![MetadataResponseTopic {
            name: Some("t".into()),
            partitions: vec![MetadataResponsePartition { partition_index: 0, leader_id: 1, ..Default::default() }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// xorshift64*: reproducible scenarios and mutations without a dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// A broker double's Metadata answer: itself (node 1 on `port`) leading each of `partitions`
/// partitions of topic `t`, whose id is `topic_id`.
pub fn topic_metadata(port: u16, topic_id: kwire::Uuid, partitions: i32) -> kwire::messages::MetadataResponse {
    use kwire::messages::metadata_response::{MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic};
    kwire::messages::MetadataResponse {
        brokers: vec![MetadataResponseBroker { node_id: 1, host: "127.0.0.1".into(), port: port.into(), ..Default::default() }],
        controller_id: 1,
        topics: vec![MetadataResponseTopic {
            name: Some("t".into()),
            topic_id,
            partitions: (0..partitions).map(|i| MetadataResponsePartition { partition_index: i, leader_id: 1, ..Default::default() }).collect(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// A broker double's answer to a Fetch (by name or by topic id, as asked): each partition asked
/// for answered with `answer(partition asked)`.
pub fn fetch_answer(
    f: &kwire::messages::FetchRequest,
    answer: impl Fn(&kwire::messages::fetch_request::FetchPartition) -> kwire::messages::fetch_response::PartitionData,
) -> kwire::messages::FetchResponse {
    use kwire::messages::fetch_response::FetchableTopicResponse;
    let responses = f
        .topics
        .iter()
        .map(|t| FetchableTopicResponse {
            topic: t.topic.clone(),
            topic_id: t.topic_id,
            partitions: t.partitions.iter().map(&answer).collect(),
            ..Default::default()
        })
        .collect();
    kwire::messages::FetchResponse { responses, ..Default::default() }
}

/// Reads each `topic:partitions` argument from the beginning to its last stable offset with
/// read_committed, and prints `topic partition offset value` per record, then `END`.
const READ_COMMITTED: &str = r#"
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public class ReadCommitted {
    public static void main(String[] args) {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("isolation.level", "read_committed");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 1; i < args.length; i++) {
                String[] tp = args[i].split(":");
                for (int x = 0; x < Integer.parseInt(tp[1]); x++) tps.add(new TopicPartition(tp[0], x));
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            // Under read_committed, the end offsets are the last stable offsets.
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            long deadline = System.currentTimeMillis() + 30000;
            while (System.currentTimeMillis() < deadline) {
                boolean done = true;
                for (TopicPartition tp : tps) done &= c.position(tp) >= end.get(tp);
                if (done) break;
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200)))
                    System.out.println(r.topic() + " " + r.partition() + " " + r.offset() + " " + r.value());
            }
        }
        System.out.println("END");
    }
}
"#;

/// What Java's read_committed consumer reads of these topics: each topic's values (sorted).
pub async fn read_committed(b: &Broker, topics: &[(&str, i32)]) -> BTreeMap<String, Vec<String>> {
    let dir = std::env::temp_dir().join(unique("kw-txn-read"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut args = vec![b.var("PLAINTEXT").to_owned()];
    args.extend(topics.iter().map(|(t, n)| format!("{t}:{n}")));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = java(b, &dir, "ReadCommitted.java", READ_COMMITTED, &args, Duration::from_secs(90)).await;
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.lines().last() == Some("END"), "the reader did not finish: {out}");
    let mut by_topic: BTreeMap<String, Vec<String>> = topics.iter().map(|(t, _)| (t.to_string(), Vec::new())).collect();
    for line in out.lines().filter(|l| *l != "END") {
        let mut f = line.splitn(4, ' ');
        let (topic, value) = (f.next().unwrap(), f.nth(2).unwrap_or_default());
        by_topic.entry(topic.to_owned()).or_default().push(value.to_owned());
    }
    by_topic.values_mut().for_each(|v| v.sort());
    by_topic
}

fn kafka_sh() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/kafka.sh")
}

/// `scripts/kafka.sh restart-node` on the 3-node cluster: SIGKILL node `node` if it runs,
/// start it again, wait until it answers (bounded by the script).
pub fn restart_node(version: &str, node: i32) -> tokio::process::Child {
    tokio::process::Command::new(kafka_sh())
        .args(["restart-node", version, "--nodes", "3", "--node", &node.to_string()])
        .kill_on_drop(true)
        .spawn()
        .expect("run kafka.sh restart-node")
}
