//! The proxy (`kwire-proxy`'s binary) in front of a real Kafka broker, with real clients:
//! Java's producer, consumer and admin client, kcat and kafka-python. Every workload must
//! succeed through the proxy; no frame the proxy sends a client may hold a real broker address
//! (checked on the raw bytes of every frame, from the proxy's `--trace`); every frame it did not
//! rewrite must be the bytes that came, both ways. Then tenant prefixing, a bounded load test
//! (latency added against going straight to the broker, and the proxy's memory), and hostile
//! connections that must leave the others unaffected.
//!
//! Run by `scripts/proxy-tests.sh`, which starts the brokers. Needs `KWIRE_PROXY_BROKER` (a
//! `scripts/kafka.sh` env file); the cluster test `KWIRE_PROXY_CLUSTER` (a 3-node env
//! file); without them each test says so and passes, unless `KWIRE_REQUIRE_PROXY=1`. The proxy
//! run is the binary cargo built with this test, or `KWIRE_PROXY_BIN` (a release build, for the
//! figures in BENCHMARKS.md).
//! `KWIRE_PROXY_LOAD_REQUESTS` sets the load test's requests per side (default 100000).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kwire::codec::{ClientCodec, OutboundRequest};
use kwire::messages::{ListGroupsRequest, MetadataRequest, ResponseHeader};
use kwire::negotiate::{mediate, NegotiateOptions};
use kwire::{ApiKey, Bytes, BytesMut, Decode, RequestKind, ResponseKind, Visit};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[path = "../../tests/support/skip.rs"]
mod skip;

// ---------------------------------------------------------------------------------------------
// Setup

fn env_file(var: &str, test: &str) -> Option<BTreeMap<String, String>> {
    let required = std::env::var("KWIRE_REQUIRE_PROXY").as_deref() == Ok("1");
    let path = match std::env::var(var) {
        Ok(p) if !p.is_empty() => p,
        _ => {
            assert!(!required, "{test}: {var} is not set and KWIRE_REQUIRE_PROXY=1");
            eprintln!("{test}: skipped ({var} not set; run scripts/proxy-tests.sh)");
            return None;
        }
    };
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    Some(text.lines().filter_map(|l| l.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect())
}

fn proxy_bin() -> PathBuf {
    match std::env::var("KWIRE_PROXY_BIN") {
        Ok(bin) if !bin.is_empty() => PathBuf::from(bin),
        _ => PathBuf::from(env!("CARGO_BIN_EXE_kwire-proxy")),
    }
}

fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{prefix}-{}-{}", std::process::id(), nanos % 1_000_000_000)
}

/// The proxy, running, and what it printed.
struct Proxy {
    child: Child,
    bootstrap: String,
    /// Every listener: local address to upstream address.
    listeners: Arc<Mutex<Vec<(String, String)>>>,
    trace: PathBuf,
}

impl Proxy {
    /// A proxy tracing every frame into a fresh directory.
    fn start(upstream: &str, extra: &[&str]) -> Proxy {
        Proxy::launch(upstream, extra, Some(std::env::temp_dir().join(unique("kw-proxy-trace"))))
    }

    /// A proxy that does not trace (the trace would dominate the load test).
    fn without_trace(upstream: &str, extra: &[&str]) -> Proxy {
        Proxy::launch(upstream, extra, None)
    }

    fn launch(upstream: &str, extra: &[&str], trace: Option<PathBuf>) -> Proxy {
        let mut command = Command::new(proxy_bin());
        command.args(["--upstream", upstream]).args(extra).stdout(Stdio::piped());
        if let Some(dir) = &trace {
            command.arg("--trace").arg(dir);
        }
        let mut child = command.spawn().expect("the proxy starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let listeners = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let seen = listeners.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some((local, up)) = line.strip_prefix("proxy: listening ").and_then(|l| l.split_once(" -> ")) {
                    seen.lock().unwrap().push((local.to_string(), up.to_string()));
                    let _ = tx.send(local.to_string());
                }
            }
        });
        let bootstrap = rx.recv_timeout(Duration::from_secs(20)).expect("the proxy printed its bootstrap listener");
        Proxy { child, bootstrap, listeners, trace: trace.unwrap_or_default() }
    }

    fn local_ports(&self) -> BTreeSet<u16> {
        self.listeners.lock().unwrap().iter().filter_map(|(l, _)| l.rsplit_once(':')?.1.parse().ok()).collect()
    }

    /// Resident memory now and at its peak, in KiB (Linux).
    fn rss_kib(&self) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        let field = |name: &str| status.lines().find_map(|l| l.strip_prefix(name)?.trim().strip_suffix("kB")?.trim().parse().ok()).unwrap_or(0);
        (field("VmRSS:"), field("VmHWM:"))
    }

    fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if !self.trace.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.trace);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Trace audit

/// What the audit of a trace found.
#[derive(Debug, Default)]
struct Audit {
    to_client: usize,
    rewritten: usize,
    passed_identical: usize,
    apis_passed: BTreeSet<i16>,
    apis_rewritten: BTreeSet<i16>,
    problems: Vec<String>,
}

/// Checks every frame of every connection in `dir`: no frame to a client holds any of `real`
/// (`host:port` of the brokers) as a host string followed by its port (int32 or uint16, as the
/// specs encode endpoints) or as text; every frame marked `pass` is byte-identical to the frame
/// read on the other side with the same correlation id; with `endpoints_only`, every rewritten
/// response differs from the broker's only in its endpoints (and ApiVersions in the mediation).
fn audit(dir: &Path, real: &[String], endpoints_only: bool) -> Audit {
    let needles: Vec<(String, Vec<Vec<u8>>)> = real
        .iter()
        .map(|addr| {
            let (host, port) = addr.rsplit_once(':').expect("host:port");
            let port: u16 = port.parse().expect("a port");
            let mut as_i32 = host.as_bytes().to_vec();
            as_i32.extend_from_slice(&i32::from(port).to_be_bytes());
            let mut as_u16 = host.as_bytes().to_vec();
            as_u16.extend_from_slice(&port.to_be_bytes());
            (addr.clone(), vec![as_i32, as_u16, addr.as_bytes().to_vec()])
        })
        .collect();
    let mut a = Audit::default();
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
        let text = std::fs::read_to_string(&path).unwrap();
        // (direction, correlation id) -> bytes read
        let mut read: HashMap<(&str, i32), Vec<u8>> = HashMap::new();
        let mut written = Vec::new();
        for line in text.lines() {
            let parts: Vec<&str> = line.split(' ').collect();
            let [dir, api, version, corr, mode, hex] = parts[..] else {
                a.problems.push(format!("{}: malformed line {line:.80}", path.display()));
                continue;
            };
            let corr: i32 = corr.parse().unwrap();
            let bytes = hex::decode(hex).unwrap();
            match dir {
                "c2p" | "u2p" => {
                    read.insert((dir, corr), bytes);
                }
                _ => written.push((dir, api.parse::<i16>().unwrap(), version.parse::<i16>().unwrap(), corr, mode, bytes)),
            }
        }
        for (dir, api, version, corr, mode, bytes) in written {
            if dir == "p2c" {
                a.to_client += 1;
                for (addr, forms) in &needles {
                    if forms.iter().any(|n| bytes.windows(n.len()).any(|w| w == n.as_slice())) {
                        a.problems.push(format!("{}: a frame to the client (api {api}, corr {corr}) holds {addr}", path.display()));
                    }
                }
            }
            let from = if dir == "p2c" { "u2p" } else { "c2p" };
            match mode {
                "pass" => match read.get(&(from, corr)) {
                    Some(original) if *original == bytes => {
                        a.passed_identical += 1;
                        a.apis_passed.insert(api);
                    }
                    Some(_) => a.problems.push(format!("{}: {dir} api {api} corr {corr} passed but changed", path.display())),
                    None => a.problems.push(format!("{}: {dir} api {api} corr {corr} passed, never read", path.display())),
                },
                "rewritten" => {
                    a.rewritten += 1;
                    a.apis_rewritten.insert(api);
                    if endpoints_only && dir == "p2c" {
                        match read.get(&(from, corr)) {
                            Some(original) => {
                                if let Err(e) = only_endpoints_changed(api, version, original, &bytes) {
                                    a.problems.push(format!("{}: api {api} v{version} corr {corr}: {e}", path.display()));
                                }
                            }
                            None => a.problems.push(format!("{}: api {api} corr {corr} rewritten, never read", path.display())),
                        }
                    }
                }
                _ => {}
            }
        }
    }
    a
}

/// Decodes a response frame (size prefix included) the way a client would.
fn decode_response(api: i16, version: i16, frame: &[u8]) -> Result<ResponseKind, String> {
    let key = ApiKey::from_i16(api).ok_or_else(|| format!("unknown api {api}"))?;
    let mut body = Bytes::copy_from_slice(frame.get(4..).ok_or("no size prefix")?);
    ResponseHeader::decode(&mut body, key.response_header_version(version)).map_err(|e| e.to_string())?;
    ResponseKind::decode(&mut body, api, version).map_err(|e| e.to_string())
}

/// Ok when `rewritten` is `original` with other endpoints (and, for ApiVersions, mediated).
fn only_endpoints_changed(api: i16, version: i16, original: &[u8], rewritten: &[u8]) -> Result<(), String> {
    let mut original = decode_response(api, version, original)?;
    let mut rewritten = decode_response(api, version, rewritten)?;
    if let ResponseKind::ApiVersions(r) = &mut original {
        *r = mediate(r, NegotiateOptions::default());
    }
    let blank = |body: &mut ResponseKind| {
        body.visit_endpoints_mut(&mut |mut e| {
            *e.host = "".into();
            e.port.set(0);
        })
    };
    blank(&mut original);
    blank(&mut rewritten);
    if original == rewritten {
        Ok(())
    } else {
        Err("the rewritten response differs from the broker's beyond its endpoints".into())
    }
}

fn assert_clean(proxy: &Proxy, real: &[String], what: &str) -> Audit {
    let a = audit(&proxy.trace, real, true);
    println!(
        "{what}: {} frames to clients, {} rewritten (apis {:?}), {} passed byte-identical",
        a.to_client, a.rewritten, a.apis_rewritten, a.passed_identical
    );
    assert!(a.problems.is_empty(), "{what}:\n{}", a.problems.iter().take(20).cloned().collect::<Vec<_>>().join("\n"));
    assert!(a.apis_rewritten.contains(&ApiKey::Metadata.key()), "{what}: no Metadata response was rewritten");
    assert!(a.passed_identical > 0, "{what}: nothing passed through");
    a
}

// ---------------------------------------------------------------------------------------------
// Clients

const JAVA: &str = r#"
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.*;

public class ProxyClient {
    public static void main(String[] args) throws Exception {
        String mode = args[0], bootstrap = args[1];
        Properties base = new Properties();
        base.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(base)) {
            if (mode.equals("list")) {
                for (String t : admin.listTopics().names().get()) System.out.println("topic " + t);
                return;
            }
            String topic = args[2];
            int n = Integer.parseInt(args[3]), partitions = Integer.parseInt(args[4]);
            short rf = Short.parseShort(args[5]);
            admin.createTopics(List.of(new NewTopic(topic, partitions, rf))).all().get();
            for (Node node : admin.describeCluster().nodes().get()) System.out.println("node " + node.id() + " " + node.host() + ":" + node.port());
            Node controller = admin.describeCluster().controller().get();
            if (controller != null) System.out.println("controller " + controller.host() + ":" + controller.port());
            for (String t : admin.listTopics().names().get()) System.out.println("topic " + t);
            if (mode.equals("create")) return;
            ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            AlterConfigOp op = new AlterConfigOp(new ConfigEntry("retention.ms", "123456789"), AlterConfigOp.OpType.SET);
            admin.incrementalAlterConfigs(Map.of(resource, List.of(op))).all().get();
            // Another node of a cluster may answer before the change reaches it: read until
            // it shows, for at most 15 s.
            String retention = "";
            for (long end = System.currentTimeMillis() + 15000; System.currentTimeMillis() < end; Thread.sleep(200)) {
                Config config = admin.describeConfigs(List.of(resource)).all().get().get(resource);
                retention = config.get("retention.ms").value();
                if (retention.equals("123456789")) break;
            }
            System.out.println("retention.ms " + retention);
            Properties pp = (Properties) base.clone();
            pp.put("key.serializer", StringSerializer.class.getName());
            pp.put("value.serializer", StringSerializer.class.getName());
            pp.put("acks", "all");
            try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
                List<java.util.concurrent.Future<RecordMetadata>> fs = new ArrayList<>();
                for (int i = 0; i < n; i++) fs.add(p.send(new ProducerRecord<>(topic, "k" + i, "v" + i)));
                for (var f : fs) f.get();
            }
            System.out.println("produced " + n);
            Properties cp = (Properties) base.clone();
            cp.put("key.deserializer", StringDeserializer.class.getName());
            cp.put("value.deserializer", StringDeserializer.class.getName());
            cp.put("group.id", "g-" + topic);
            cp.put("auto.offset.reset", "earliest");
            Set<String> seen = new HashSet<>();
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
                c.subscribe(List.of(topic));
                long deadline = System.currentTimeMillis() + 60000;
                while (seen.size() < n && System.currentTimeMillis() < deadline)
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) seen.add(r.key() + "=" + r.value());
                c.commitSync();
            }
            System.out.println("consumed " + seen.size());
        }
    }
}
"#;

/// Runs the Java client program; its stdout lines.
fn java(env: &BTreeMap<String, String>, args: &[&str]) -> Vec<String> {
    let lib = env.get("KAFKA_LIB").expect("KAFKA_LIB in the env file");
    let dir = std::env::temp_dir().join("kw-proxy-java");
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join("ProxyClient.java");
    std::fs::write(&source, JAVA).unwrap();
    let out = Command::new("java")
        .arg("-cp")
        .arg(format!("{lib}/*"))
        .arg("-Dlog4j2.level=warn")
        .arg("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
        .arg(&source)
        .args(args)
        .output()
        .expect("java runs");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "java {args:?} failed:\n{stdout}\n{}", tail(&String::from_utf8_lossy(&out.stderr), 40));
    stdout.lines().map(str::to_owned).collect()
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn real_addresses(env: &BTreeMap<String, String>) -> Vec<String> {
    let mut out: Vec<String> = env
        .iter()
        .filter(|(k, _)| k.as_str() == "PLAINTEXT" || k.as_str() == "CONTROLLER" || (k.starts_with("NODE") && k.ends_with("_PLAINTEXT")))
        .map(|(_, v)| v.clone())
        .collect();
    out.sort();
    out
}

fn port_of(addr: &str) -> u16 {
    addr.rsplit_once(':').and_then(|(_, p)| p.parse().ok()).unwrap_or_else(|| panic!("no port in {addr}"))
}

/// A Java workload through `proxy`: the nodes it sees are the proxy's, and it reads back what
/// it wrote.
fn java_workload(env: &BTreeMap<String, String>, proxy: &Proxy, topic: &str, partitions: &str, rf: &str) -> Vec<String> {
    let n = 500;
    let out = java(env, &["all", &proxy.bootstrap, topic, &n.to_string(), partitions, rf]);
    assert!(out.contains(&format!("produced {n}")), "{out:?}");
    assert!(out.contains(&format!("consumed {n}")), "{out:?}");
    assert!(out.contains(&"retention.ms 123456789".to_string()), "the topic's config, altered and read back: {out:?}");
    let ports = proxy.local_ports();
    let nodes: Vec<&String> = out.iter().filter(|l| l.starts_with("node ")).collect();
    assert!(!nodes.is_empty(), "{out:?}");
    for node in &nodes {
        let addr = node.rsplit(' ').next().unwrap();
        assert!(ports.contains(&port_of(addr)), "Java's admin sees {node}, not a proxy listener {ports:?}");
    }
    out
}

#[test]
fn java_clients_through_the_proxy() {
    let Some(env) = env_file("KWIRE_PROXY_BROKER", "java_clients_through_the_proxy") else { return };
    let proxy = Proxy::start(&env["PLAINTEXT"], &[]);
    let topic = unique("kw-proxy-java");
    let out = java_workload(&env, &proxy, &topic, "3", "1");
    assert!(out.contains(&format!("topic {topic}")), "{out:?}");
    let a = assert_clean(&proxy, &real_addresses(&env), "Java through the proxy");
    // FindCoordinator (the consumer group) is decoded and rewritten too.
    assert!(a.apis_rewritten.contains(&ApiKey::FindCoordinator.key()), "{:?}", a.apis_rewritten);
}

/// kcat through `proxy`: the brokers it lists are the proxy's, and 200 values produced to
/// `topic` (which must exist) are consumed back. `extra` are kcat's `-X` settings.
fn kcat_workload(proxy: &Proxy, topic: &str, extra: &[&str]) {
    let listing = Command::new("kcat").args(["-b", &proxy.bootstrap, "-L", "-t", topic]).args(extra).output().expect("kcat runs");
    let listing = String::from_utf8_lossy(&listing.stdout).to_string();
    let ports = proxy.local_ports();
    let brokers: Vec<&str> = listing.lines().filter(|l| l.trim_start().starts_with("broker ")).collect();
    assert!(!brokers.is_empty(), "{listing}");
    for b in &brokers {
        let addr = b.split_whitespace().nth(3).unwrap_or_default();
        assert!(ports.contains(&port_of(addr)), "kcat lists {b}");
    }
    let values: Vec<String> = (0..200).map(|i| format!("kcat-{i}")).collect();
    let mut producer =
        Command::new("kcat").args(["-b", &proxy.bootstrap, "-P", "-t", topic, "-X", "acks=all"]).args(extra).stdin(Stdio::piped()).spawn().expect("kcat runs");
    producer.stdin.take().unwrap().write_all(format!("{}\n", values.join("\n")).as_bytes()).unwrap();
    assert!(producer.wait().unwrap().success());
    let consumed =
        Command::new("kcat").args(["-b", &proxy.bootstrap, "-C", "-t", topic, "-o", "beginning", "-e", "-q"]).args(extra).output().expect("kcat runs");
    assert!(consumed.status.success(), "{}", String::from_utf8_lossy(&consumed.stderr));
    let got: BTreeSet<String> = String::from_utf8_lossy(&consumed.stdout).lines().map(str::to_owned).collect();
    assert_eq!(got, values.iter().cloned().collect::<BTreeSet<_>>());
}

#[test]
fn kcat_through_the_proxy() {
    let Some(env) = env_file("KWIRE_PROXY_BROKER", "kcat_through_the_proxy") else { return };
    if skip::missing_tool("kcat_through_the_proxy", "kcat", &["-V"]) {
        return;
    }
    let proxy = Proxy::start(&env["PLAINTEXT"], &[]);
    let topic = unique("kw-proxy-kcat");
    java(&env, &["create", &proxy.bootstrap, &topic, "0", "2", "1"]);
    kcat_workload(&proxy, &topic, &[]);
    assert_clean(&proxy, &real_addresses(&env), "kcat through the proxy");
}

const PYTHON: &str = r#"
import sys
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic
bootstrap, topic, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
admin = KafkaAdminClient(bootstrap_servers=bootstrap)
admin.create_topics([NewTopic(topic, 2, 1)])
for b in admin.describe_cluster()["brokers"]:
    print("node %s:%s" % (b["host"], b["port"]))
admin.close()
p = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
for i in range(n):
    p.send(topic, key=b"k%d" % i, value=b"v%d" % i)
p.flush()
p.close()
print("produced %d" % n)
c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id="g-" + topic, auto_offset_reset="earliest", consumer_timeout_ms=20000)
seen = set()
for r in c:
    seen.add((r.key, r.value))
    if len(seen) >= n:
        break
c.close()
print("consumed %d" % len(seen))
"#;

/// kafka-python through `proxy`: admin, producer and consumer group on a new `topic`.
fn python_workload(proxy: &Proxy, topic: &str) {
    let out = Command::new("python3").args(["-c", PYTHON, &proxy.bootstrap, topic, "300"]).output().expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{stdout}\n{}", tail(&String::from_utf8_lossy(&out.stderr), 30));
    assert!(stdout.contains("produced 300") && stdout.contains("consumed 300"), "{stdout}");
    let ports = proxy.local_ports();
    for node in stdout.lines().filter(|l| l.starts_with("node ")) {
        assert!(ports.contains(&port_of(node)), "kafka-python sees {node}");
    }
}

#[test]
fn kafka_python_through_the_proxy() {
    let Some(env) = env_file("KWIRE_PROXY_BROKER", "kafka_python_through_the_proxy") else { return };
    if skip::missing_tool("kafka_python_through_the_proxy", "python3", &["-c", "import kafka"]) {
        return;
    }
    let proxy = Proxy::start(&env["PLAINTEXT"], &[]);
    python_workload(&proxy, &unique("kw-proxy-py"));
    assert_clean(&proxy, &real_addresses(&env), "kafka-python through the proxy");
}

#[test]
fn sasl_passes_through_the_proxy() {
    let Some(env) = env_file("KWIRE_PROXY_BROKER", "sasl_passes_through_the_proxy") else { return };
    if skip::missing_tool("sasl_passes_through_the_proxy", "kcat", &["-V"]) {
        return;
    }
    // Traced whole (the SASL frames too, asked for by name), so passing them untouched shows.
    let proxy = Proxy::start(&env["SASL_PLAINTEXT"], &["--trace-secrets"]);
    let sasl = ["-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username=admin", "-X", "sasl.password=admin-secret"];
    let topic = unique("kw-proxy-sasl");
    java(&env, &["create", &env["PLAINTEXT"], &topic, "0", "1", "1"]);
    kcat_workload(&proxy, &topic, &sasl);
    let mut real = real_addresses(&env);
    real.push(env["SASL_PLAINTEXT"].clone());
    let a = assert_clean(&proxy, &real, "SASL PLAIN through the proxy");
    // The handshake and the authentication itself went through untouched.
    for api in [ApiKey::SaslHandshake, ApiKey::SaslAuthenticate] {
        assert!(!a.apis_rewritten.contains(&api.key()), "{api:?} was rewritten");
        assert!(a.apis_passed.contains(&api.key()), "no {api:?} passed through: {:?}", a.apis_passed);
    }
}

#[test]
fn tls_is_relayed_opaque() {
    let Some(env) = env_file("KWIRE_PROXY_BROKER", "tls_is_relayed_opaque") else { return };
    if skip::missing_tool("tls_is_relayed_opaque", "kcat", &["-V"]) {
        return;
    }
    let proxy = Proxy::start(&env["SSL"], &[]);
    let tls = ["-X", "security.protocol=SSL", "-X", &format!("ssl.ca.location={}", env["SSL_CA"]), "-X", "ssl.endpoint.identification.algorithm=none"];
    let listing = Command::new("kcat").args(["-b", &proxy.bootstrap, "-L"]).args(tls).output().expect("kcat runs");
    assert!(listing.status.success(), "{}", String::from_utf8_lossy(&listing.stderr));
    // Not terminated: the metadata inside is the broker's, as the proxy's docs say.
    let text = String::from_utf8_lossy(&listing.stdout);
    assert!(text.contains(&env["SSL"]), "{text}");
    let traced = std::fs::read_dir(&proxy.trace).map(|d| d.count()).unwrap_or(0);
    assert_eq!(traced, 0, "a TLS connection was parsed as Kafka frames");
}

#[test]
fn a_tenant_sees_only_its_topics_unprefixed() {
    let Some(env) = env_file("KWIRE_PROXY_BROKER", "a_tenant_sees_only_its_topics_unprefixed") else { return };
    let direct = &env["PLAINTEXT"];
    let other = unique("kw-other");
    java(&env, &["create", direct, &other, "0", "1", "1"]);
    let proxy = Proxy::start(direct, &["--tenant", "acme."]);
    let topic = unique("kw-tenant");
    // Admin, producer, consumer group (offsets, Fetch by topic id) through the tenant's proxy.
    let out = java_workload(&env, &proxy, &topic, "2", "1");
    let seen: BTreeSet<&str> = out.iter().filter_map(|l| l.strip_prefix("topic ")).collect();
    assert!(seen.contains(topic.as_str()), "the tenant lists its topic unprefixed: {seen:?}");
    assert!(!seen.contains(other.as_str()), "the tenant sees another's topic: {seen:?}");
    assert!(seen.iter().all(|t| !t.starts_with("acme.")), "a prefix leaked: {seen:?}");
    // This test alone makes `acme.` topics: the tenant's listing is exactly its one topic.
    let listed: BTreeSet<String> = java(&env, &["list", &proxy.bootstrap]).into_iter().collect();
    assert_eq!(listed, BTreeSet::from([format!("topic {topic}")]));
    // The broker has it prefixed, and not unprefixed.
    let on_broker: BTreeSet<String> = java(&env, &["list", direct]).into_iter().filter_map(|l| l.strip_prefix("topic ").map(str::to_owned)).collect();
    assert!(on_broker.contains(&format!("acme.{topic}")), "{on_broker:?}");
    assert!(!on_broker.contains(&topic), "{on_broker:?}");
    let a = audit(&proxy.trace, &real_addresses(&env), false);
    assert!(a.problems.is_empty(), "{:?}", a.problems);
    assert!(a.apis_rewritten.contains(&ApiKey::Produce.key()) && a.apis_rewritten.contains(&ApiKey::Fetch.key()), "{:?}", a.apis_rewritten);
    println!("tenant: {} frames to clients, {} rewritten (apis {:?})", a.to_client, a.rewritten, a.apis_rewritten);
}

#[test]
fn clients_through_the_proxy_to_three_brokers() {
    let Some(env) = env_file("KWIRE_PROXY_CLUSTER", "clients_through_the_proxy_to_three_brokers") else { return };
    let test = "clients_through_the_proxy_to_three_brokers";
    if skip::missing_tool(test, "kcat", &["-V"]) || skip::missing_tool(test, "python3", &["-c", "import kafka"]) {
        return;
    }
    let proxy = Proxy::start(&env["NODE1_PLAINTEXT"], &[]);
    let topic = unique("kw-proxy-cluster");
    let out = java_workload(&env, &proxy, &topic, "6", "3");
    let nodes = out.iter().filter(|l| l.starts_with("node ")).count();
    assert_eq!(nodes, 3, "{out:?}");
    let upstreams: BTreeSet<String> = proxy.listeners.lock().unwrap().iter().map(|(_, u)| u.clone()).collect();
    let real: BTreeSet<String> = real_addresses(&env).into_iter().collect();
    assert_eq!(upstreams, real, "one listener per broker");
    let kcat_topic = unique("kw-proxy-cluster-kcat");
    java(&env, &["create", &proxy.bootstrap, &kcat_topic, "0", "3", "3"]);
    kcat_workload(&proxy, &kcat_topic, &[]);
    python_workload(&proxy, &unique("kw-proxy-cluster-py"));
    assert_clean(&proxy, &real_addresses(&env), "Java, kcat and kafka-python through the proxy to 3 brokers");
}

// ---------------------------------------------------------------------------------------------
// Load and hostile connections, with kwire's own codec as the client

/// A connection sending one request at a time.
struct Conn {
    stream: TcpStream,
    codec: ClientCodec,
    buf: BytesMut,
    next: i32,
}

impl Conn {
    async fn open(addr: &str) -> std::io::Result<Conn> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Conn { stream, codec: ClientCodec::new(), buf: BytesMut::new(), next: 0 })
    }

    async fn send(&mut self, api: ApiKey, version: i16, body: RequestKind) -> std::io::Result<()> {
        self.next += 1;
        let mut out = BytesMut::new();
        self.codec.encode_request(OutboundRequest::new(api, version, self.next, body), &mut out).map_err(std::io::Error::other)?;
        self.stream.write_all(&out).await
    }

    async fn recv(&mut self) -> std::io::Result<ResponseKind> {
        loop {
            if let Some(frame) = self.codec.decode_response(&mut self.buf).map_err(std::io::Error::other)? {
                return Ok(frame.body);
            }
            if self.stream.read_buf(&mut self.buf).await? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
        }
    }

    async fn call(&mut self, api: ApiKey, version: i16, body: RequestKind) -> std::io::Result<ResponseKind> {
        self.send(api, version, body).await?;
        self.recv().await
    }
}

fn metadata() -> RequestKind {
    RequestKind::Metadata(MetadataRequest { topics: Some(vec![]), ..Default::default() })
}

fn list_groups() -> RequestKind {
    RequestKind::ListGroups(ListGroupsRequest::default())
}

/// Latencies (microseconds) of `total` requests over `connections` connections to `addr`,
/// alternating Metadata (rewritten by the proxy) and ListGroups (passed through).
async fn load(addr: &str, connections: usize, total: usize) -> (Vec<u64>, Vec<u64>) {
    let per = total.div_ceil(connections);
    let mut tasks = Vec::new();
    for _ in 0..connections {
        let addr = addr.to_string();
        tasks.push(tokio::spawn(async move {
            let mut c = Conn::open(&addr).await.expect("connect");
            let (mut meta, mut pass) = (Vec::with_capacity(per / 2 + 1), Vec::with_capacity(per / 2 + 1));
            for i in 0..per {
                let t = Instant::now();
                if i % 2 == 0 {
                    let r = c.call(ApiKey::Metadata, 12, metadata()).await.expect("metadata");
                    assert!(matches!(r, ResponseKind::Metadata(_)));
                    meta.push(t.elapsed().as_micros() as u64);
                } else {
                    let r = c.call(ApiKey::ListGroups, 4, list_groups()).await.expect("list groups");
                    assert!(matches!(r, ResponseKind::ListGroups(_)));
                    pass.push(t.elapsed().as_micros() as u64);
                }
            }
            (meta, pass)
        }));
    }
    let (mut meta, mut pass) = (Vec::new(), Vec::new());
    for t in tasks {
        let (m, p) = t.await.expect("a load task");
        meta.extend(m);
        pass.extend(p);
    }
    meta.sort_unstable();
    pass.sort_unstable();
    (meta, pass)
}

fn pct(sorted: &[u64], p: f64) -> u64 {
    sorted.get(((sorted.len() as f64 * p) as usize).min(sorted.len().saturating_sub(1))).copied().unwrap_or(0)
}

#[test]
fn load_through_the_proxy_is_bounded_in_memory_and_latency() {
    let Some(env) = env_file("KWIRE_PROXY_BROKER", "load_through_the_proxy_is_bounded_in_memory_and_latency") else { return };
    let total: usize = std::env::var("KWIRE_PROXY_LOAD_REQUESTS").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let connections = 200;
    let mut proxy = Proxy::without_trace(&env["PLAINTEXT"], &[]);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let (idle_rss, _) = proxy.rss_kib();
    // Warm the broker's JIT first, so the direct side (measured first) is not the cold one.
    rt.block_on(load(&env["PLAINTEXT"], connections, 20_000));
    let t0 = Instant::now();
    let (dm, dp) = rt.block_on(load(&env["PLAINTEXT"], connections, total));
    let direct_time = t0.elapsed();
    let t1 = Instant::now();
    let (pm, pp) = rt.block_on(load(&proxy.bootstrap, connections, total));
    let proxy_time = t1.elapsed();
    // One connection, one request at a time: the latency the proxy adds without queueing.
    let (sm, sp) = rt.block_on(load(&env["PLAINTEXT"], 1, 4000));
    let (spm, spp) = rt.block_on(load(&proxy.bootstrap, 1, 4000));
    let (rss, peak) = proxy.rss_kib();
    assert!(proxy.alive(), "the proxy died under load");
    let line = |name: &str, d: &[u64], p: &[u64]| {
        println!(
            "load: {name}: {} requests; direct p50 {} us p99 {} us; via proxy p50 {} us p99 {} us; added p50 {} us p99 {} us",
            p.len(),
            pct(d, 0.5),
            pct(d, 0.99),
            pct(p, 0.5),
            pct(p, 0.99),
            pct(p, 0.5) as i64 - pct(d, 0.5) as i64,
            pct(p, 0.99) as i64 - pct(d, 0.99) as i64
        );
    };
    line("Metadata (rewritten), 200 connections", &dm, &pm);
    line("ListGroups (passed through), 200 connections", &dp, &pp);
    line("Metadata (rewritten), 1 connection", &sm, &spm);
    line("ListGroups (passed through), 1 connection", &sp, &spp);
    println!(
        "load: {connections} connections, {} requests each side; direct {:.1}s, via proxy {:.1}s; proxy RSS idle {} KiB, after {} KiB, peak {} KiB",
        dm.len() + dp.len(),
        direct_time.as_secs_f64(),
        proxy_time.as_secs_f64(),
        idle_rss,
        rss,
        peak
    );
    assert_eq!(pm.len() + pp.len(), dm.len() + dp.len());
    // Bounded: per-connection state is a few buffers, whatever the number of requests.
    assert!(peak < 256 * 1024, "proxy peak RSS {peak} KiB");
}

/// Reads until the peer closes; true if it did within `within`.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let mut sink = [0u8; 1024];
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut sink)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

#[test]
fn hostile_connections_leave_the_others_unaffected() {
    let Some(env) = env_file("KWIRE_PROXY_BROKER", "hostile_connections_leave_the_others_unaffected") else { return };
    let mut proxy = Proxy::without_trace(&env["PLAINTEXT"], &["--max-frame", "1048576", "--max-connections", "50"]);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let addr = proxy.bootstrap.clone();
    rt.block_on(async {
        let mut healthy = Conn::open(&addr).await.unwrap();
        // A slow reader: 2000 Metadata requests pipelined, no response ever read.
        let mut slow = Conn::open(&addr).await.unwrap();
        for _ in 0..2000 {
            slow.send(ApiKey::Metadata, 12, metadata()).await.unwrap();
        }
        // Garbage: an HTTP request, whose first bytes claim a 1.2 GB frame.
        let mut garbage = TcpStream::connect(&addr).await.unwrap();
        garbage.write_all(b"GET / HTTP/1.1\r\nHost: kafka\r\n\r\n").await.unwrap();
        // Oversized: a frame of 2 MiB against the 1 MiB limit.
        let mut oversized = TcpStream::connect(&addr).await.unwrap();
        oversized.write_all(&(2 * 1024 * 1024i32).to_be_bytes()).await.unwrap();
        oversized.write_all(&[0u8; 4096]).await.unwrap();
        // After a good request, a frame whose header does not parse (a client id of length -1,
        // then a tagged-field count cut short).
        let mut bad_body = Conn::open(&addr).await.unwrap();
        bad_body.send(ApiKey::Metadata, 12, metadata()).await.unwrap();
        bad_body.recv().await.unwrap();
        bad_body.stream.write_all(&[0, 0, 0, 12, 0, 3, 0, 12, 0, 0, 0, 9, 0xff, 0xff, 0xff, 0xff]).await.unwrap();
        assert!(closed_within(&mut garbage, Duration::from_secs(5)).await, "garbage was not closed");
        assert!(closed_within(&mut oversized, Duration::from_secs(5)).await, "an oversized frame was not closed");
        assert!(closed_within(&mut bad_body.stream, Duration::from_secs(10)).await, "a malformed body was not closed");
        let mut worst = Duration::ZERO;
        for _ in 0..300 {
            let t = Instant::now();
            let r = healthy.call(ApiKey::Metadata, 12, metadata()).await.expect("the healthy connection");
            assert!(matches!(r, ResponseKind::Metadata(_)));
            worst = worst.max(t.elapsed());
        }
        println!("hostile: a healthy connection's slowest of 300 requests took {worst:?} beside a stalled reader");
        assert!(worst < Duration::from_secs(2), "{worst:?}");
        // KIP-511: an ApiVersions version no one knows is answered by the proxy, at v0, with
        // UNSUPPORTED_VERSION (35), its correlation id, and the versions the proxy serves.
        let mut future = TcpStream::connect(&addr).await.unwrap();
        let header = [0, 18, 0, 99, 0, 0, 0, 77, 0xff, 0xff, 0];
        let mut frame = (header.len() as i32 + 3).to_be_bytes().to_vec();
        frame.extend_from_slice(&header);
        frame.extend_from_slice(&[0xde, 0xad, 0xbe]);
        future.write_all(&frame).await.unwrap();
        let mut answer = [0u8; 10];
        tokio::time::timeout(Duration::from_secs(5), future.read_exact(&mut answer)).await.unwrap().unwrap();
        assert_eq!(answer[4..], [0, 0, 0, 77, 0, 35], "{answer:?}");
        // A new connection is still served, and the slow reader still gets its answers.
        let mut fresh = Conn::open(&addr).await.unwrap();
        assert!(matches!(fresh.call(ApiKey::ApiVersions, 3, RequestKind::ApiVersions(Default::default())).await.unwrap(), ResponseKind::ApiVersions(_)));
        for _ in 0..2000 {
            assert!(matches!(slow.recv().await.unwrap(), ResponseKind::Metadata(_)));
        }
    });
    assert!(proxy.alive());
}

#[test]
fn connections_over_the_limit_are_closed_and_the_rest_served() {
    let Some(env) = env_file("KWIRE_PROXY_BROKER", "connections_over_the_limit_are_closed_and_the_rest_served") else { return };
    let proxy = Proxy::without_trace(&env["PLAINTEXT"], &["--max-connections", "4"]);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let addr = proxy.bootstrap.clone();
    rt.block_on(async {
        let mut open = Vec::new();
        for _ in 0..4 {
            let mut c = Conn::open(&addr).await.unwrap();
            assert!(matches!(c.call(ApiKey::Metadata, 12, metadata()).await.unwrap(), ResponseKind::Metadata(_)));
            open.push(c);
        }
        let mut fifth = TcpStream::connect(&addr).await.unwrap();
        assert!(closed_within(&mut fifth, Duration::from_secs(5)).await, "a fifth connection was served");
        drop(open.pop());
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut again = Conn::open(&addr).await.unwrap();
        assert!(matches!(again.call(ApiKey::Metadata, 12, metadata()).await.unwrap(), ResponseKind::Metadata(_)));
        for c in &mut open {
            assert!(matches!(c.call(ApiKey::ListGroups, 4, list_groups()).await.unwrap(), ResponseKind::ListGroups(_)));
        }
    });
    drop(proxy);
}
