//! kwire's codec-level example client (examples/codec_client.rs, built by `cargo test
//! --workspace`) against kwire-fake: version negotiation (including the ApiVersions
//! UNSUPPORTED_VERSION fallback), SASL/PLAIN, produce and fetch.

#[path = "clients/harness.rs"]
mod harness;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use harness::{example_binary, record_versions, run_with_timeout, skipped, Broker};

const TIMEOUT: Duration = Duration::from_secs(120);

/// The example, unless this build has none (`cargo test -p kwire-fake` alone builds no kwire
/// example): the test is then skipped, saying so.
fn codec_client(test: &str) -> Option<PathBuf> {
    let path = example_binary("codec_client");
    if path.is_none() {
        skipped(test, "kwire's codec_client example is not built (cargo test --workspace builds it)");
    }
    path
}

fn client(bin: &PathBuf, broker: &Broker, args: &[&str]) -> std::process::Output {
    run_with_timeout(Command::new(bin).args(["--bootstrap", &broker.addr]).args(args), None, TIMEOUT)
}

#[test]
fn example_client_round_trips() {
    let Some(bin) = codec_client("example_client_round_trips") else { return };
    let broker = Broker::start(&[]);
    let out = client(&bin, &broker, &["--count", "5000", "--topic", "client-topic"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "client failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("produced 5000 records at offset 0"), "{stdout}");
    assert!(stdout.contains("fetched 5000 records back, identical"), "{stdout}");
    let versions = broker.versions_used("kwire-example-client");
    // The client asks with its newest ApiVersions first; if the broker does not support that
    // one it answers at v0 and the client retries with the newest common version.
    let api_versions = versions.get("ApiVersions").cloned().unwrap_or_default();
    assert!(!api_versions.is_empty(), "{versions:?}");
    record_versions("example_client", &versions);
    // A second run appends after the first.
    let out = client(&bin, &broker, &["--count", "10", "--topic", "client-topic"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("produced 10 records at offset 5000"));
    assert!(!broker.log().contains("closing"), "{}", broker.log());
}

#[test]
fn example_client_sasl_plain() {
    let Some(bin) = codec_client("example_client_sasl_plain") else { return };
    let broker = Broker::start(&["--sasl-plain", "bob:hunter2"]);
    let out = client(&bin, &broker, &["--sasl-plain", "bob:hunter2", "--count", "100"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "client failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("authenticated as bob") && stdout.contains("fetched 100 records back, identical"), "{stdout}");

    let out = client(&bin, &broker, &["--sasl-plain", "bob:wrong"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("SASL/PLAIN failed with error 58"), "{:?}", out);

    // Without authenticating, a Metadata request gets the connection closed, as in Kafka.
    let out = client(&bin, &broker, &[]);
    assert!(!out.status.success());
    assert!(broker.log().contains("Metadata request before SASL authentication"), "{}", broker.log());
}
