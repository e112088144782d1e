//! `examples/client.rs` (connect, create a topic, produce, read back, describe) against the real
//! broker, over TLS with the broker's CA and over SASL PLAIN: it exits 0 only when every record
//! it produced came back.

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

fn example() -> PathBuf {
    // target/<profile>/deps/<this test> -> target/<profile>/examples/client (cargo test builds it).
    let exe = std::env::current_exe().expect("test binary path");
    let path = exe.parent().and_then(|d| d.parent()).expect("target/<profile>").join("examples/client");
    assert!(path.exists(), "{} is missing: `cargo test -p kwire-client` builds it", path.display());
    path
}

async fn run(args: &[&str]) -> String {
    let child = tokio::process::Command::new(example()).args(args).kill_on_drop(true).output();
    let out = tokio::time::timeout(Duration::from_secs(90), child).await.expect("the example within 90 s").expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{args:?}: {}\n{stdout}{}", out.status, String::from_utf8_lossy(&out.stderr));
    stdout
}

#[tokio::test]
async fn the_example_client_over_tls_and_over_sasl() {
    let Some(b) = common::Broker::from_env("the_example_client_over_tls_and_over_sasl") else { return };
    let topic = common::unique("kw-example");
    let tls = run(&["--bootstrap", b.var("SSL"), "--tls-ca", b.var("SSL_CA"), "--topic", &topic, "--count", "500"]).await;
    assert!(tls.contains("500 records produced and 500 read back"), "{tls}");
    assert!(tls.contains("with 3 partitions"), "{tls}");
    let sasl = run(&["--bootstrap", b.var("SASL_PLAINTEXT"), "--sasl", "plain:admin:admin-secret", "--topic", &topic, "--count", "300"]).await;
    assert!(sasl.contains("300 records produced and 300 read back"), "the topic again, now existing: {sasl}");
}
