//! Java's kafka-clients against kwire-fake, each release's clients against the fake imitating
//! that release (tests/clients/JavaFlows.java): Admin, an idempotent producer, a transactional
//! one (commits and an abort), read_committed consumers in a classic group resuming from their
//! committed offsets, a KIP-848 consumer group and two share consumers on 4.4. The jars come
//! from Maven Central through scripts/kafka.sh (cached under target/kafka/cache).

#[path = "clients/harness.rs"]
mod harness;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use harness::{missing_tool, record_versions, run_with_timeout, skipped, Broker};

/// The lib directory of Kafka `version`'s jars, fetched if need be; `None` (the test skipped)
/// when they cannot be had.
fn kafka_lib(test: &str, version: &str) -> Option<PathBuf> {
    if missing_tool(test, "java", &["-version"]) || missing_tool(test, "mvn", &["-v"]) {
        return None;
    }
    // One fetch at a time: the two tests share Maven's local repository.
    static FETCH: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = FETCH.lock().unwrap_or_else(|e| e.into_inner());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/kafka.sh");
    let out = run_with_timeout(Command::new(script).args(["classpath", version]), None, Duration::from_secs(900));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lib = stdout.lines().last().map(PathBuf::from).filter(|p| out.status.success() && p.is_dir());
    if lib.is_none() {
        skipped(test, &format!("Kafka {version}'s jars could not be fetched: {}", String::from_utf8_lossy(&out.stderr)));
    }
    lib
}

fn java(lib: &Path, program: &str, args: &[&str]) -> (bool, String) {
    let source = format!("{}/tests/clients/{program}", env!("CARGO_MANIFEST_DIR"));
    let out = run_with_timeout(
        Command::new("java").arg("-cp").arg(format!("{}/*", lib.display())).arg("-Dlog4j2.level=warn").arg(source).args(args),
        None,
        Duration::from_secs(300),
    );
    let text = format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success() && String::from_utf8_lossy(&out.stdout).lines().any(|l| l == "OK"), text)
}

fn flows(test: &str, release: &str, jars: &str, kip848: bool) {
    let Some(lib) = kafka_lib(test, jars) else { return };
    let broker = Broker::start(&["--as-version", release]);
    let (ok, output) = java(&lib, "JavaFlows.java", &[&broker.addr, &kip848.to_string()]);
    assert!(ok, "Java's clients {jars} against kwire-fake {release}:\n{output}\nbroker log (last lines):\n{}", tail(&broker.log()));
    if kip848 {
        let (ok, output) = java(&lib, "JavaShare.java", &[&broker.addr]);
        assert!(ok, "Java's share consumers {jars} against kwire-fake {release}:\n{output}\nbroker log (last lines):\n{}", tail(&broker.log()));
    }
    let versions = broker.versions_used("java-");
    let mut wanted = vec!["CreateTopics", "Metadata", "Produce", "InitProducerId", "EndTxn", "Fetch", "JoinGroup", "SyncGroup", "OffsetCommit", "OffsetFetch"];
    if kip848 {
        wanted.extend(["ConsumerGroupHeartbeat", "ShareGroupHeartbeat", "ShareFetch", "ShareAcknowledge"]);
        // transaction.version 2 (KIP-890) finalized as on Kafka 4.4: partitions join the
        // transaction with their first Produce, and EndTxn is v5 or later.
        assert!(!versions.contains_key("AddPartitionsToTxn"), "Java added partitions itself under transaction.version 2: {versions:?}");
        assert!(versions["EndTxn"].iter().all(|v| *v >= 5), "EndTxn below v5 under transaction.version 2: {versions:?}");
    } else {
        wanted.push("AddPartitionsToTxn");
    }
    for api in wanted {
        assert!(versions.contains_key(api), "Java's clients never sent {api}: {versions:?}");
    }
    record_versions(test, &versions);
    assert!(!broker.log().contains("closing"), "kwire-fake closed a connection:\n{}", tail(&broker.log()));
    assert!(broker.stop().is_some_and(|s| s.success()), "kwire-fake did not stop cleanly on SIGTERM");
}

fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

#[test]
fn java_clients_3_9_against_the_fake_as_3_9() {
    flows("java_clients_3_9", "3.9", "3.9.2", false);
}

#[test]
fn java_clients_4_4_against_the_fake_as_4_4() {
    flows("java_clients_4_4", "4.4", "4.4.0", true);
}

/// OAUTHBEARER (SASL_PLAINTEXT) with Java's unsecured login module making the tokens
/// (tests/clients/JavaOAuth.java): Admin, a producer and a consumer group authenticate, and a
/// token without `sub` is refused with `invalid_token`.
#[test]
fn java_clients_4_4_oauthbearer() {
    let test = "java_clients_4_4_oauthbearer";
    let Some(lib) = kafka_lib(test, "4.4.0") else { return };
    let broker = Broker::start(&["--as-version", "4.4", "--sasl-oauthbearer"]);
    let (ok, output) = java(&lib, "JavaOAuth.java", &[&broker.addr]);
    assert!(ok, "Java's clients over OAUTHBEARER against kwire-fake:\n{output}\nbroker log (last lines):\n{}", tail(&broker.log()));
    let versions = broker.versions_used("java-oauth");
    for api in ["SaslHandshake", "SaslAuthenticate", "CreateTopics", "Produce", "Fetch"] {
        assert!(versions.contains_key(api), "Java's clients never sent {api}: {versions:?}");
    }
    // The refused token's connection was closed; the others never were.
    let closed = broker.log().lines().filter(|l| l.starts_with("closing")).count();
    assert!(closed >= 1 && broker.log().lines().filter(|l| l.starts_with("closing")).all(|l| l.contains("invalid_token")), "{}", tail(&broker.log()));
    assert!(broker.stop().is_some_and(|s| s.success()), "kwire-fake did not stop cleanly on SIGTERM");
}
