//! kcat (librdkafka) against kwire-fake: metadata listing, 10,000 messages produced and
//! consumed back identical with each compression codec, and with SASL/PLAIN.

#[path = "clients/harness.rs"]
mod harness;

use std::process::Command;
use std::time::Duration;

use harness::{missing_tool, record_versions, run_with_timeout, stored_codecs, Broker};

const MESSAGES: usize = 10_000;
const TIMEOUT: Duration = Duration::from_secs(240);

fn kcat(broker: &Broker, extra: &[&str]) -> Command {
    let mut cmd = Command::new("kcat");
    cmd.args(["-b", &broker.addr]).args(extra);
    cmd
}

fn messages(tag: &str) -> Vec<String> {
    // Distinct keys and values, of varied lengths, so that a lost, duplicated, reordered or
    // corrupted message shows.
    (0..MESSAGES).map(|i| format!("key-{i}:{tag}-value-{i}-{}", "x".repeat(i % 97))).collect()
}

/// Produces `MESSAGES` keyed messages with `extra` client options and consumes them back.
fn roundtrip(broker: &Broker, topic: &str, produce_opts: &[&str], common: &[&str]) {
    let sent = messages(topic);
    let input = sent.iter().map(|m| format!("{m}\n")).collect::<String>().into_bytes();
    let out = run_with_timeout(kcat(broker, common).args(["-P", "-t", topic, "-K", ":", "-X", "linger.ms=20"]).args(produce_opts), Some(input), TIMEOUT);
    assert!(out.status.success(), "kcat -P failed: {}\n{}", String::from_utf8_lossy(&out.stderr), broker.log());

    let out = run_with_timeout(kcat(broker, common).args(["-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%k:%s\n"]), None, TIMEOUT);
    assert!(out.status.success(), "kcat -C failed: {}\n{}", String::from_utf8_lossy(&out.stderr), broker.log());
    let received: Vec<&str> = std::str::from_utf8(&out.stdout).expect("utf-8").lines().collect();
    assert_eq!(received.len(), sent.len(), "message count");
    for (i, (got, want)) in received.iter().zip(&sent).enumerate() {
        assert_eq!(got, want, "message {i}");
    }
}

#[test]
fn kcat_lists_metadata() {
    if missing_tool("kcat_lists_metadata", "kcat", &["-V"]) {
        return;
    }
    let broker = Broker::start(&["--partitions", "3"]);
    roundtrip_small(&broker, "listed-topic");
    let out = run_with_timeout(&mut kcat(&broker, &["-L", "-m", "30"]), None, TIMEOUT);
    assert!(out.status.success(), "kcat -L failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("broker 0 at {}", broker.addr)), "{text}");
    assert!(text.contains("topic \"listed-topic\" with 3 partitions"), "{text}");
    for p in 0..3 {
        assert!(text.contains(&format!("partition {p}, leader 0, replicas: 0, isrs: 0")), "{text}");
    }
    record_versions("kcat_lists_metadata", &broker.versions_used("rdkafka"));
    assert!(!broker.log().contains("closing"), "{}", broker.log());
    assert!(broker.stop().is_some_and(|s| s.success()), "kwire-fake did not stop cleanly on SIGTERM");
}

fn roundtrip_small(broker: &Broker, topic: &str) {
    let out = run_with_timeout(&mut kcat(broker, &["-P", "-t", topic]), Some(b"one\n".to_vec()), TIMEOUT);
    assert!(out.status.success(), "kcat -P failed: {}", String::from_utf8_lossy(&out.stderr));
}

/// Produces and consumes with `codec` against the fake imitating `release`.
fn codec_roundtrip(codec: &str, release: &str) {
    if missing_tool(&format!("kcat roundtrip {codec}"), "kcat", &["-V"]) {
        return;
    }
    let broker = Broker::start(&["--as-version", release]);
    let topic = format!("codec-{codec}");
    roundtrip(&broker, &topic, &["-z", codec], &[]);
    // The batches are stored as sent: compressed with the codec asked for. librdkafka 2.0.2
    // enables gzip, snappy and lz4 only when the broker offers Produce v2 and Fetch v2, which
    // Kafka 4's brokers no longer offer; it then sends them uncompressed, as it does to a real
    // 4.x broker.
    let legacy_probe = release == "3.9";
    let expected = if legacy_probe || matches!(codec, "none" | "zstd") { codec } else { "none" };
    let codecs = stored_codecs(&broker.addr, &topic);
    assert_eq!(codecs.into_iter().collect::<Vec<_>>(), vec![expected.to_owned()]);
    record_versions(&format!("kcat_{codec}"), &broker.versions_used("rdkafka"));
    assert!(!broker.log().contains("closing"), "{}", broker.log());
}

#[test]
fn kcat_roundtrip_none() {
    codec_roundtrip("none", "3.9");
}

#[test]
fn kcat_roundtrip_gzip() {
    codec_roundtrip("gzip", "3.9");
}

#[test]
fn kcat_roundtrip_snappy() {
    codec_roundtrip("snappy", "3.9");
}

#[test]
fn kcat_roundtrip_lz4() {
    codec_roundtrip("lz4", "3.9");
}

#[test]
fn kcat_roundtrip_zstd() {
    codec_roundtrip("zstd", "3.9");
}

/// Against a Kafka 4 broker's versions, librdkafka 2.0.2 sends gzip uncompressed.
#[test]
fn kcat_roundtrip_gzip_as_kafka_4() {
    codec_roundtrip("gzip", "4.4");
}

const SASL: &[&str] =
    &["-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username=alice", "-X", "sasl.password=alice-secret"];

#[test]
fn kcat_roundtrip_sasl_plain() {
    if missing_tool("kcat_roundtrip_sasl_plain", "kcat", &["-V"]) {
        return;
    }
    let broker = Broker::start(&["--sasl-plain", "alice:alice-secret"]);
    roundtrip(&broker, "sasl-topic", &["-z", "lz4"], SASL);
    let versions = broker.versions_used("rdkafka");
    assert!(versions.contains_key("SaslHandshake") && versions.contains_key("SaslAuthenticate"), "{versions:?}");
    record_versions("kcat_sasl_plain", &versions);

    // A wrong password is refused: kcat gets no metadata.
    let wrong: Vec<&str> = SASL.iter().map(|a| if *a == "sasl.password=alice-secret" { "sasl.password=wrong" } else { a }).collect();
    let out = run_with_timeout(kcat(&broker, &wrong).args(["-L", "-m", "5"]), None, TIMEOUT);
    assert!(!out.status.success(), "kcat -L succeeded with a wrong password");
    assert!(broker.log().contains("Authentication failed"), "{}", broker.log());
}
