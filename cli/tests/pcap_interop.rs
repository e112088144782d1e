//! Interop: captures of real librdkafka traffic (a confluent-kafka producer), made on loopback by
//! `tests/pcap/make_capture.sh` against a tiny broker this test starts, decoded by
//! `kwire pcap` and compared with what tshark's Kafka dissector reports for the same file:
//! every request's api key, version and correlation id, every response's correlation id (and api
//! key where tshark gives one), and topic names wherever tshark reports them. Every capture is
//! also run through `kwire wireshark`'s dissector, which must agree with `kwire pcap` on every
//! field of every frame.
//!
//! Needs root (capturing on `lo`), tcpdump, tshark and python3 with confluent-kafka, as `.ci/run`
//! installs them. `KWIRE_SKIP_INTEROP=1` skips it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "pcap/broker.rs"]
mod broker;
#[path = "wireshark/check.rs"]
mod check;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use kwire::runtime::json::serde_json::{self, Value};
use kwire::ApiKey;

#[path = "../../tests/support/skip.rs"]
mod skip;

/// Skips with a line saying why: `KWIRE_SKIP_INTEROP=1`, or a tool the capture needs is
/// missing (tcpdump, tshark, confluent-kafka), unless `KWIRE_REQUIRE_CLIENTS` requires them.
fn skip() -> bool {
    if std::env::var("KWIRE_SKIP_INTEROP").is_ok_and(|v| v == "1") {
        eprintln!("skipped: KWIRE_SKIP_INTEROP=1");
        return true;
    }
    let probes: [&[&str]; 3] = [&["tcpdump", "--version"], &["tshark", "--version"], &["python3", "-c", "import confluent_kafka"]];
    for probe in probes {
        if skip::missing_tool("kwire pcap against tshark", probe[0], &probe[1..]) {
            return true;
        }
    }
    false
}

/// Captures a producer session against a broker that caps Metadata/Produce at `cap`.
fn capture(name: &str, cap: Option<i16>) -> (PathBuf, u16) {
    let port = broker::start(cap);
    let dir = std::env::temp_dir().join(format!("kwire-pcap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(format!("{name}.pcap"));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pcap/make_capture.sh");
    let status = Command::new(script).arg(&out).arg(port.to_string()).status().expect("run make_capture.sh");
    assert!(status.success(), "make_capture.sh failed: {status}");
    (out, port)
}

/// Key of one message: (client port, is response, correlation id).
type Key = (u16, bool, i32);

#[derive(Debug, Default)]
struct Ours {
    requests: BTreeMap<Key, (i64, i64)>,
    responses: BTreeMap<Key, i64>,
    topics: BTreeMap<Key, Vec<String>>,
}

fn collect_topic_names(v: &Value, parent_key: Option<&str>, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            if matches!(parent_key, Some("topics" | "topicData" | "responses")) {
                if let Some(Value::String(n)) = o.get("name") {
                    out.push(n.clone());
                }
            }
            for (k, child) in o {
                collect_topic_names(child, Some(k), out);
            }
        }
        Value::Array(a) => a.iter().for_each(|c| collect_topic_names(c, parent_key, out)),
        _ => {}
    }
}

/// `newer_ok`: a message at a version newer than this build's specs (a client newer than them)
/// may be reported as undecodable; its header (api key, version, correlation id) still counts.
fn ours(pcap: &Path, port: u16, newer_ok: bool) -> Ours {
    let out = Command::new(env!("CARGO_BIN_EXE_kwire")).args(["pcap", pcap.to_str().unwrap(), "--port", &port.to_string()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut o = Ours::default();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if let Some(e) = v.get("error") {
            let newer = e.as_str().is_some_and(|e| e.contains("is not supported"))
                && ApiKey::from_i16(v["apiKey"].as_i64().unwrap_or(-1) as i16)
                    .is_some_and(|api| v["apiVersion"].as_i64().unwrap_or(0) > i64::from(api.info().valid.hi));
            assert!(newer_ok && newer, "kwire reported an error: {line}");
            eprintln!("newer than this build's specs: {line}");
        }
        let client: std::net::SocketAddr = v["client"].as_str().unwrap().parse().unwrap();
        let response = v["direction"] == "response";
        let key = (client.port(), response, v["correlationId"].as_i64().unwrap() as i32);
        let (api, version) = (v["apiKey"].as_i64().unwrap(), v["apiVersion"].as_i64().unwrap());
        if response {
            assert!(o.responses.insert(key, api).is_none(), "duplicate {key:?}");
        } else {
            assert!(o.requests.insert(key, (api, version)).is_none(), "duplicate {key:?}");
        }
        let mut names = Vec::new();
        collect_topic_names(&v["body"], None, &mut names);
        o.topics.insert(key, names);
    }
    o
}

/// tshark's view, one row per packet that carries Kafka PDUs.
struct TsharkRow {
    client_port: u16,
    response: bool,
    api_keys: Vec<i64>,
    versions: Vec<i64>,
    correlation_ids: Vec<i32>,
    topics: Vec<String>,
}

fn tshark(pcap: &Path, port: u16) -> Vec<TsharkRow> {
    let out = Command::new("tshark")
        .args(["-r", pcap.to_str().unwrap(), "-d", &format!("tcp.port=={port},kafka"), "-T", "fields"])
        .args(["-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "kafka.api_key", "-e", "kafka.api_version"])
        .args(["-e", "kafka.correlation_id", "-e", "kafka.topic_name", "-E", "aggregator=|", "-E", "occurrence=a"])
        .output()
        .expect("run tshark");
    assert!(out.status.success(), "tshark: {}", String::from_utf8_lossy(&out.stderr));
    let list = |s: &str| -> Vec<String> { s.split('|').filter(|x| !x.is_empty()).map(str::to_string).collect() };
    let nums = |s: &str| -> Vec<i64> { list(s).iter().map(|x| x.parse().unwrap()).collect() };
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            let corr = nums(f[4]);
            if corr.is_empty() {
                return None;
            }
            let (src, dst): (u16, u16) = (f[0].parse().unwrap(), f[1].parse().unwrap());
            let response = src == port;
            Some(TsharkRow {
                client_port: if response { dst } else { src },
                response,
                api_keys: nums(f[2]),
                versions: nums(f[3]),
                correlation_ids: corr.into_iter().map(|c| c as i32).collect(),
                topics: list(f[5]),
            })
        })
        .collect()
}

/// Which session a capture holds, for the api keys it must show.
enum Session {
    /// The librdkafka producer: exactly ApiVersions, Metadata and three Produce or more.
    Producer,
    /// Kafka's Java admin, producer and consumer, or kcat and kafka-python: at least these
    /// api keys.
    JavaClients(&'static [i64]),
}

fn compare(name: &str, cap: Option<i16>, compare_topics: bool) {
    compare_capture(|attempt| capture(&format!("{name}-{attempt}"), cap), compare_topics, Session::Producer);
}

/// Captures filter on the broker's port: two at once would see each other's traffic.
static CAPTURING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Compares kwire pcap, tshark and the dissector on a capture; returns `--report`'s clients.
fn compare_capture(mut capture: impl FnMut(u32) -> (PathBuf, u16), compare_topics: bool, session: Session) -> Vec<Value> {
    let _one_at_a_time = CAPTURING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    // A capture can come back empty when tcpdump is stopped before libpcap hands it the packets
    // (seen on one CI kernel); capture again rather than compare nothing.
    let (pcap, port, rows) = (1..=3)
        .map(|attempt| {
            let (pcap, port) = capture(attempt);
            let rows = tshark(&pcap, port);
            if rows.is_empty() {
                eprintln!("capture {attempt}: tshark saw no Kafka traffic, capturing again");
            }
            (pcap, port, rows)
        })
        .find(|(_, _, rows)| !rows.is_empty())
        .expect("three captures in a row held no Kafka traffic (is tcpdump capturing on lo?)");
    let ours = ours(&pcap, port, matches!(session, Session::JavaClients(_)));
    let checked = check::against_kwire_pcap(Path::new(env!("CARGO_BIN_EXE_kwire")), &pcap, &[port], pcap.parent().unwrap());
    assert_eq!(checked.frames, ours.requests.len() + ours.responses.len(), "the dissector shows every message kwire pcap does");
    let builtin = check::builtin_coverage(&pcap, port);
    eprintln!(
        "{}: the dissector and kwire pcap agree on {} frames ({} field values, {} newer than the specs); tshark's built-in dissector decodes {} fully",
        pcap.display(),
        checked.frames,
        checked.values,
        checked.newer,
        builtin.full_frames
    );
    // --report: one last line with the clients, which sent every request counted above.
    let report = Command::new(env!("CARGO_BIN_EXE_kwire")).args(["pcap", pcap.to_str().unwrap(), "--port", &port.to_string(), "--report"]).output().unwrap();
    assert!(report.status.success(), "{}", String::from_utf8_lossy(&report.stderr));
    let text = String::from_utf8(report.stdout).unwrap();
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let clients = last["clients"].as_array().unwrap_or_else(|| panic!("no clients line: {last}"));
    let requests: u64 = clients.iter().map(|c| c["requests"].as_u64().unwrap()).sum();
    assert_eq!(requests, ours.requests.len() as u64, "{last}");
    for c in clients {
        assert_eq!(c["upgrade"]["target"], "4.0", "{c}");
        assert!(!c["upgrade"]["findings"].as_array().unwrap().is_empty(), "{c}");
        // Every client here sends ApiVersions v3+, which names its software.
        assert_ne!(c["client"], "(not named)", "{c}");
    }

    let mut theirs_requests = BTreeMap::new();
    let mut theirs_responses = BTreeSet::new();
    let mut topic_checks = 0;
    for row in &rows {
        let keys: Vec<Key> = row.correlation_ids.iter().map(|&c| (row.client_port, row.response, c)).collect();
        if row.response {
            theirs_responses.extend(keys.iter().copied());
            // tshark names the api of a response only when it dissected it; it must agree.
            if row.api_keys.len() == keys.len() {
                for (k, api) in keys.iter().zip(&row.api_keys) {
                    assert_eq!(ours.responses.get(k), Some(api), "response {k:?}");
                }
            }
        } else {
            assert_eq!(row.api_keys.len(), keys.len(), "tshark request row");
            assert_eq!(row.versions.len(), keys.len(), "tshark request row");
            for (i, k) in keys.iter().enumerate() {
                theirs_requests.insert(*k, (row.api_keys[i], row.versions[i]));
            }
        }
        if compare_topics && !row.topics.is_empty() {
            let mut mine: Vec<String> = keys.iter().flat_map(|k| ours.topics.get(k).cloned().unwrap_or_default()).collect();
            let mut theirs = row.topics.clone();
            mine.sort();
            theirs.sort();
            assert_eq!(mine, theirs, "topic names of {keys:?}");
            topic_checks += 1;
        }
    }
    assert_eq!(ours.requests, theirs_requests, "requests: (client port, response, correlation id) -> (api key, version)");
    assert_eq!(ours.responses.keys().copied().collect::<BTreeSet<_>>(), theirs_responses, "responses");
    let apis: BTreeSet<i64> = ours.requests.values().map(|(k, _)| *k).collect();
    match session {
        Session::Producer => {
            // The session: ApiVersions, Metadata and three Produce requests at least.
            assert_eq!(apis, BTreeSet::from([0, 3, 18]), "api keys in the session");
            assert!(ours.requests.values().filter(|(k, _)| *k == 0).count() >= 3);
        }
        Session::JavaClients(expected) => {
            let missing: Vec<&i64> = expected.iter().filter(|k| !apis.contains(k)).collect();
            assert!(missing.is_empty(), "api keys {missing:?} not in the session ({apis:?})");
        }
    }
    if compare_topics {
        assert!(topic_checks >= 6, "only {topic_checks} packets with topic names to compare");
    }
    clients.clone()
}

#[test]
fn librdkafka_capture_matches_tshark() {
    if skip() {
        return;
    }
    // Current versions (Produce v10, Metadata v12, flexible): tshark 4.0 does not dissect every
    // field of these, so compare api keys, versions and correlation ids.
    compare("current", None, false);
    // Versions tshark dissects fully: topic names too.
    compare("classic", Some(7), true);
}

/// Kafka's own Java admin client, producer and consumer (cli/tests/pcap/JavaClients.java, on the
/// broker's classpath) against a real Apache Kafka broker: `KWIRE_BROKER` is the env file of
/// `scripts/kafka.sh start VERSION`. Build the CLI from specs that cover the broker's versions
/// (the default specs for 3.9). Skips when unset unless `KWIRE_REQUIRE_BROKER=1`.
#[test]
fn java_clients_against_real_kafka_match_tshark() {
    if skip() {
        return;
    }
    let Some((bootstrap, lib)) = broker_env() else { return };
    // ApiVersions, Metadata, Produce, Fetch, ListOffsets, InitProducerId (idempotence),
    // CreateTopics (admin), a classic group's FindCoordinator, JoinGroup, SyncGroup,
    // OffsetFetch, OffsetCommit and LeaveGroup.
    java_clients_capture(&bootstrap, &lib, "java", &[18, 3, 0, 1, 2, 22, 19, 10, 11, 14, 9, 8, 13]);
}

/// Kafka's Java clients of an older release (`KWIRE_OLD_JAVA_LIB`: the jars' folder of
/// `scripts/kafka.sh classpath 2.8.2`, from Maven Central) against the real broker of
/// `KWIRE_BROKER`: an old client's capture, which `--report` names and judges against 4.0.
#[test]
fn old_java_clients_against_real_kafka_match_tshark() {
    if skip() {
        return;
    }
    let Some((bootstrap, _)) = broker_env() else { return };
    let Some(lib) = std::env::var("KWIRE_OLD_JAVA_LIB").ok().filter(|s| !s.is_empty()) else {
        assert!(std::env::var("KWIRE_REQUIRE_BROKER").map_or(true, |v| v != "1"), "KWIRE_OLD_JAVA_LIB is unset");
        eprintln!("skipped: KWIRE_OLD_JAVA_LIB is unset (the lib folder of scripts/kafka.sh classpath 2.8.2)");
        return;
    };
    let release = std::fs::read_dir(&lib)
        .unwrap_or_else(|e| panic!("{lib}: {e}"))
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_prefix("kafka-clients-")?.strip_suffix(".jar").map(str::to_owned))
        .next()
        .unwrap_or_else(|| panic!("{lib} holds no kafka-clients jar"));
    // As the current clients, but InitProducerId: idempotence is on by default from 3.0.
    let clients = java_clients_capture(&bootstrap, &lib, "old-java", &[18, 3, 0, 1, 2, 19, 10, 11, 14, 9, 8, 13]);
    let name = format!("apache-kafka-java {release}");
    assert!(clients.iter().any(|c| c["client"] == name.as_str()), "the report names {name}: {clients:?}");
}

/// JavaClients.java on `lib`'s jars against the real broker at `bootstrap`, captured and compared
/// as every capture; returns the report's clients.
fn java_clients_capture(bootstrap: &str, lib: &str, label: &str, expected: &'static [i64]) -> Vec<Value> {
    broker_session(bootstrap, label, expected, |topic| {
        let java = ["java", "-cp", &format!("{lib}/*"), "-Dlog4j.configuration=file:/dev/null"].map(OsString::from);
        let program = [here().join("JavaClients.java").into_os_string(), bootstrap.into(), topic.into(), "50".into()];
        java.into_iter().chain(program).collect()
    })
}

/// cli/tests/pcap.
fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pcap")
}

/// A client session against the real broker at `bootstrap` (`client` is its command, given the
/// topic to use), captured by make_capture.sh and compared as every capture; returns the
/// report's clients.
fn broker_session(bootstrap: &str, label: &str, expected: &'static [i64], client: impl Fn(&str) -> Vec<OsString>) -> Vec<Value> {
    let port: u16 = bootstrap.rsplit(':').next().unwrap().parse().unwrap();
    let dir = std::env::temp_dir().join(format!("kwire-pcap-{label}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let capture = |attempt: u32| {
        let out = dir.join(format!("{label}-{attempt}.pcap"));
        let topic = format!("{label}-pcap-{}-{attempt}", std::process::id());
        let status = Command::new(here().join("make_capture.sh")).arg(&out).arg(port.to_string()).args(client(&topic)).status().expect("run make_capture.sh");
        assert!(status.success(), "make_capture.sh with the {label} clients failed: {status}");
        (out, port)
    };
    compare_capture(capture, false, Session::JavaClients(expected))
}

/// The real broker of `KWIRE_BROKER` (the env file of `scripts/kafka.sh start VERSION`): its
/// PLAINTEXT bootstrap address and its jars' folder. `None` (skip) when unset, unless
/// `KWIRE_REQUIRE_BROKER=1`.
fn broker_env() -> Option<(String, String)> {
    let Some(env) = std::env::var("KWIRE_BROKER").ok().filter(|s| !s.is_empty()) else {
        assert!(std::env::var("KWIRE_REQUIRE_BROKER").map_or(true, |v| v != "1"), "KWIRE_BROKER is unset");
        eprintln!("skipped: KWIRE_BROKER is unset (scripts/kafka.sh start VERSION writes the env file it names)");
        return None;
    };
    let text = std::fs::read_to_string(&env).unwrap_or_else(|e| panic!("{env}: {e}"));
    let var = |k: &str| -> String {
        text.lines().find_map(|l| l.strip_prefix(k).and_then(|r| r.strip_prefix('='))).unwrap_or_else(|| panic!("{env}: no {k}")).to_owned()
    };
    Some((var("PLAINTEXT"), var("KAFKA_LIB")))
}

/// kcat and kafka-python (cli/tests/pcap/kcat_and_python.sh) against the real broker of
/// `KWIRE_BROKER`, as the Java clients above.
#[test]
fn kcat_and_kafka_python_against_real_kafka_match_tshark() {
    if skip()
        || skip::missing_tool("kcat and kafka-python captures", "kcat", &["-V"])
        || skip::missing_tool("kcat and kafka-python captures", "python3", &["-c", "import kafka"])
    {
        return;
    }
    let Some((bootstrap, _)) = broker_env() else { return };
    // ApiVersions, Metadata, Produce, Fetch, ListOffsets, CreateTopics, and kafka-python's
    // classic group: FindCoordinator, JoinGroup, SyncGroup, OffsetFetch, OffsetCommit, Heartbeat
    // or LeaveGroup.
    broker_session(&bootstrap, "kcat-python", &[18, 3, 0, 1, 2, 19, 10, 11, 14, 9, 8], |topic| {
        vec![here().join("kcat_and_python.sh").into_os_string(), bootstrap.as_str().into(), topic.into()]
    });
}
