//! confluent-kafka for Python (librdkafka) against kwire-fake (tests/clients/confluent_flows.py):
//! AdminClient creating, refusing and describing topics, an idempotent producer, a
//! transactional one (commits around an abort), and read_committed consumer groups that read
//! each committed record once and commit past the markers.

#[path = "clients/harness.rs"]
mod harness;

use std::process::Command;
use std::time::Duration;

use harness::{missing_tool, record_versions, run_with_timeout, Broker};

#[test]
fn confluent_kafka_flows() {
    if missing_tool("confluent_kafka_flows", "python3", &["-c", "import confluent_kafka"]) {
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/confluent_flows.py");
    let broker = Broker::start(&[]);
    let out = run_with_timeout(Command::new("python3").arg(script).arg(&broker.addr), None, Duration::from_secs(600));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.lines().any(|l| l == "OK"),
        "confluent_flows.py failed:\n{stdout}\n{}\nbroker log:\n{}",
        String::from_utf8_lossy(&out.stderr),
        broker.log()
    );
    let versions = broker.versions_used("confluent-");
    for api in ["CreateTopics", "Metadata", "InitProducerId", "Produce", "EndTxn", "FindCoordinator", "JoinGroup", "SyncGroup", "Fetch", "OffsetCommit"] {
        assert!(versions.contains_key(api), "librdkafka never sent {api}: {versions:?}");
    }
    record_versions("confluent_kafka", &versions);
    assert!(!broker.log().contains("closing"), "{}", broker.log());
    assert!(broker.stop().is_some_and(|s| s.success()), "kwire-fake did not stop cleanly on SIGTERM");
}
