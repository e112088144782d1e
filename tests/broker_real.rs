//! Conformance sweep against a real Apache Kafka broker (started by `scripts/kafka.sh`, run by
//! `scripts/broker-sweep.sh`): for every api the broker advertises and every version both sides
//! support, a valid request built from kwire's types goes out through the connection codec;
//! the answer must decode, re-encode to the same bytes, and carry exactly the error codes
//! expected (none where the request is valid). Versions this build knows and the broker does
//! not advertise must be refused as kwire predicts.
//!
//! Reads `KWIRE_BROKER` (the env file `scripts/kafka.sh start` writes, or a PLAINTEXT
//! `host:port`); skips when unset unless `KWIRE_REQUIRE_BROKER=1`. Writes the table of
//! (api, version, result) to `target/broker-sweep/<kafka version>.txt`.
//! `KWIRE_SWEEP_ONLY=refusals` checks only the refusals (for a build from another release's
//! specs), into `<kafka version>-refusals.txt`.

#[path = "real/mod.rs"]
mod sweep;

use sweep::{Broker, Sweep};

#[test]
fn every_advertised_api_version() {
    let Some(broker) = Broker::from_env() else { return };
    let mut sweep = Sweep::new(broker);
    if std::env::var("KWIRE_SWEEP_ONLY").is_ok_and(|v| v == "refusals") {
        sweep.run_refusals();
    } else {
        sweep.run();
    }
    let (passed, exercised) = sweep.write_table();
    let failed: Vec<String> = sweep.failures();
    assert!(failed.is_empty(), "{} of {exercised} api versions failed:\n{}", exercised - passed, failed.join("\n"));
}

fn refusals_only() -> bool {
    std::env::var("KWIRE_SWEEP_ONLY").is_ok_and(|v| v == "refusals")
}

/// The SSL listener (certificate made by scripts/kafka.sh, checked against its CA and the
/// loopback IP): ApiVersions through `openssl s_client`, bytes from kwire's codec.
#[test]
fn api_versions_over_ssl() {
    use std::io::{Read, Write};
    use std::process::{Command, Stdio};
    use std::time::Duration;

    use kwire::codec::{ClientCodec, OutboundRequest};
    use kwire::messages::ApiVersionsRequest;
    use kwire::{ApiKey, BytesMut, ResponseKind};

    let Some(broker) = Broker::from_env() else { return };
    if refusals_only() {
        return;
    }
    let (Some(addr), Some(ca)) = (broker.vars.get("SSL").cloned(), broker.vars.get("SSL_CA").cloned()) else {
        eprintln!("skipping: the broker env lists no SSL listener");
        return;
    };
    // Over PLAINTEXT first: what the broker advertises, at the ApiVersions version it knows.
    let plain = Sweep::new(broker);
    let mut child = Command::new("openssl")
        .args(["s_client", "-quiet", "-connect", &addr, "-CAfile", &ca, "-verify_return_error", "-verify_ip", "127.0.0.1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("openssl s_client (openssl is needed for the SSL listener test)");
    let mut codec = ClientCodec::new();
    let mut out = BytesMut::new();
    let request = ApiVersionsRequest { client_software_name: "kwire-sweep".into(), client_software_version: "0.1.0".into(), ..Default::default() };
    let version = plain.api_versions_version;
    codec.encode_request(OutboundRequest::new(ApiKey::ApiVersions, version, 1, request.into()), &mut out).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&out).unwrap();
    stdin.flush().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 65536];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut received = BytesMut::new();
    let frame = loop {
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(chunk) => received.extend_from_slice(&chunk),
            Err(_) => {
                let _ = child.kill();
                let mut err = String::new();
                let _ = child.stderr.take().map(|mut e| e.read_to_string(&mut err));
                panic!("no ApiVersions answer over SSL from {addr} within 30 s: {err}");
            }
        }
        if let Some(frame) = codec.decode_response(&mut received).unwrap() {
            break frame;
        }
    };
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    let ResponseKind::ApiVersions(r) = frame.body else { panic!("not an ApiVersions response") };
    assert_eq!(r.error_code, 0);
    assert_eq!(r.api_keys, plain.advertised.api_keys, "the SSL listener advertises what PLAINTEXT does");
}

/// What only several brokers show (sweep::cluster); `KWIRE_CLUSTER` is the env file of
/// `scripts/kafka.sh start VERSION --nodes 3` (required when `KWIRE_REQUIRE_CLUSTER=1`).
#[test]
fn three_node_cluster() {
    let Some(broker) = Broker::from_var("KWIRE_CLUSTER", "KWIRE_REQUIRE_CLUSTER", "scripts/kafka.sh start VERSION --nodes 3") else { return };
    let version = broker.version.clone();
    let mut sweep = Sweep::new(broker);
    match sweep::cluster::run(&mut sweep) {
        Ok(notes) => eprintln!("3-node Kafka {version}: {}", notes.join("; ")),
        Err(e) => panic!("3-node Kafka {version}: {e}"),
    }
}
