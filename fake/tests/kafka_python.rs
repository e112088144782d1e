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
    // kafka-python's group join is timing-dependent on a loaded 2-core machine (a member's
    // heartbeat thread can stall through a rebalance); a second run on a fresh broker must pass.
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/group_consumers.py");
    let mut attempt = 0;
    let broker = loop {
        attempt += 1;
        let broker = Broker::start(&[]);
        let out = run_with_timeout(Command::new("python3").arg(script).arg(&broker.addr), None, Duration::from_secs(600));
        let stdout = String::from_utf8_lossy(&out.stdout);
        if out.status.success() && stdout.contains("OK") {
            break broker;
        }
        let report = format!(
            "group_consumers.py failed (attempt {attempt}):\n{stdout}\n{}\nbroker log:\n{}",
            String::from_utf8_lossy(&out.stderr),
            broker.log()
        );
        assert!(attempt < 2, "{report}");
        eprintln!("{report}\nretrying once");
        let _ = broker.stop();
    };
    let versions = broker.versions_used("kafka-python");
    for api in ["JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit", "OffsetFetch", "FindCoordinator", "CreateTopics"] {
        assert!(versions.contains_key(api), "kafka-python never sent {api}: {versions:?}");
    }
    record_versions("kafka_python_group", &versions);
    assert!(!broker.log().contains("closing"), "{}", broker.log());
    assert!(broker.stop().is_some_and(|s| s.success()), "kwire-fake did not stop cleanly on SIGTERM");
}
