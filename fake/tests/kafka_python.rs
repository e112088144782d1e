//! kafka-python against kwire-fake: a consumer group of two, committed offsets, and a
//! consumer resuming from them (tests/clients/group_consumers.py).

#[path = "clients/harness.rs"]
mod harness;

use std::process::Command;
use std::time::Duration;

use harness::{missing_tool, record_versions, run_with_timeout, Broker};

#[test]
fn kafka_python_consumer_group() {
    if missing_tool("kafka_python_consumer_group", "python3", &["-c", "import kafka"]) {
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/group_consumers.py");
    let broker = Broker::start(&[]);
    let out = run_with_timeout(Command::new("python3").arg(script).arg(&broker.addr), None, Duration::from_secs(600));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("OK"),
        "group_consumers.py failed:\n{stdout}\n{}\nbroker log:\n{}",
        String::from_utf8_lossy(&out.stderr),
        broker.log()
    );
    let versions = broker.versions_used("kafka-python");
    for api in ["JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit", "OffsetFetch", "FindCoordinator", "CreateTopics"] {
        assert!(versions.contains_key(api), "kafka-python never sent {api}: {versions:?}");
    }
    record_versions("kafka_python_group", &versions);
    assert!(!broker.log().contains("closing"), "{}", broker.log());
    assert!(broker.stop().is_some_and(|s| s.success()), "kwire-fake did not stop cleanly on SIGTERM");
}
