//! The `kwire` binary withholds secrets from what it prints: `tap` between kwire's own client
//! and an in-process cluster that authenticates with SASL/PLAIN and SCRAM, `pcap` on a capture
//! of a SASL/PLAIN login, and `decode`; each with `--show-secrets` to show that the secret was
//! there to withhold. (Every api and version that carries a secret, through every output, is
//! tested in `src/secrets/tests.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::io::{BufRead, Read, Write};
use std::process::{Command, Output, Stdio};

use kwire::messages::{
    create_topics_request::{CreatableTopic, CreatableTopicConfig},
    CreateTopicsRequest, CreateTopicsResponse, RequestHeader, ResponseHeader, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    SaslHandshakeResponse,
};
use kwire::runtime::json::serde_json::{self, Value};
use kwire::{ApiKey, Bytes, Encode};
use kwire_fake::{Cluster, ClusterConfig};

const PASSWORD: &str = "s3cr3t-pass";
/// `\0alice\0s3cr3t-pass` in base64, as the issue found it printed.
const PLAIN_B64: &str = "AGFsaWNlAHMzY3IzdC1wYXNz";
const JAAS_SECRET: &str = "jaas-e2e-s3cret";

fn kwire(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kwire")).args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

/// Stdout and stderr together: a secret may not appear in either.
fn all_output(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// The forms a secret could be printed in: as text, base64 (any alignment), hex.
fn assert_absent(output: &str, secret: &str, what: &str) {
    use base64::Engine;
    let mut forms = vec![secret.to_owned(), hex::encode(secret), hex::encode_upper(secret)];
    for k in 0..3 {
        let e = base64::engine::general_purpose::STANDARD.encode([&vec![0u8; k][..], secret.as_bytes()].concat());
        forms.push(e[4..e.len() - 4].to_owned());
    }
    for f in forms {
        assert!(!output.contains(&f), "{what}: prints {secret:?} as {f:?}:\n{output}");
    }
}

#[test]
fn every_command_that_prints_frames_names_show_secrets_in_its_help() {
    for sub in ["decode", "pcap", "tap"] {
        let out = kwire(&[sub, "--help"], b"");
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(help.contains("--show-secrets") && help.contains("withheld"), "{sub}: {help}");
    }
}

#[test]
fn decode_withholds_sasl_bytes() {
    let args = ["decode", "--api-key", "SaslAuthenticate", "--api-version", "2", "--request", "--hex", "1300616c696365007333637233742d7061737300"];
    let out = kwire(&args, b"");
    assert!(out.status.success(), "{}", all_output(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["authBytes"], serde_json::json!({"withheld": true, "length": 18, "mechanism": "PLAIN", "user": "alice"}));
    assert_absent(&all_output(&out), PASSWORD, "decode");
    let shown = kwire(&[&args[..], &["--show-secrets"]].concat(), b"");
    let v: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(v["authBytes"], PLAIN_B64);
}

fn request(corr: i32, api: ApiKey, version: i16, body: &impl Encode) -> Vec<u8> {
    let header =
        RequestHeader { request_api_key: api.key(), request_api_version: version, correlation_id: corr, client_id: Some("e2e".into()), ..Default::default() };
    let mut payload = Vec::new();
    header.encode(&mut payload, api.request_header_version(version)).unwrap();
    body.encode(&mut payload, version).unwrap();
    [&(payload.len() as i32).to_be_bytes()[..], &payload].concat()
}

fn response(corr: i32, api: ApiKey, version: i16, body: &impl Encode) -> Vec<u8> {
    let mut payload = Vec::new();
    ResponseHeader { correlation_id: corr, ..Default::default() }.encode(&mut payload, kwire::header::response_header_version(api, version)).unwrap();
    body.encode(&mut payload, version).unwrap();
    [&(payload.len() as i32).to_be_bytes()[..], &payload].concat()
}

#[test]
fn pcap_withholds_a_plain_login_and_a_jaas_config() {
    let jaas = format!("org.apache.kafka.common.security.plain.PlainLoginModule required username=\"alice\" password=\"{JAAS_SECRET}\";");
    let create = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: "orders".into(),
            num_partitions: 1,
            replication_factor: 1,
            configs: vec![CreatableTopicConfig { name: "sasl.jaas.config".into(), value: Some(jaas.as_str().into()), ..Default::default() }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let from_client = [
        request(1, ApiKey::SaslHandshake, 1, &SaslHandshakeRequest { mechanism: "PLAIN".into() }),
        request(2, ApiKey::SaslAuthenticate, 2, &SaslAuthenticateRequest { auth_bytes: Bytes::from_static(b"\0alice\0s3cr3t-pass"), ..Default::default() }),
        request(3, ApiKey::CreateTopics, 7, &create),
    ];
    let from_broker = [
        response(1, ApiKey::SaslHandshake, 1, &SaslHandshakeResponse { mechanisms: vec!["PLAIN".into()], ..Default::default() }),
        response(2, ApiKey::SaslAuthenticate, 2, &SaslAuthenticateResponse::default()),
        response(3, ApiKey::CreateTopics, 7, &CreateTopicsResponse::default()),
    ];
    let packet = |from_client: bool, seq: u32, syn: bool, payload: &[u8]| {
        let (src, dst) = if from_client { (50000, 9092) } else { (9092, 50000) };
        let b = etherparse::PacketBuilder::ethernet2([0; 6], [0; 6]).ipv4([127, 0, 0, 1], [127, 0, 0, 1], 64).tcp(src, dst, seq, 65535);
        let b = if syn { b.syn() } else { b.ack(1) };
        let mut out = Vec::new();
        b.write(&mut out, payload).unwrap();
        out
    };
    let mut packets = vec![packet(true, 100, true, b""), packet(false, 900, true, b"")];
    let (mut c, mut s) = (101u32, 901u32);
    for (req, resp) in from_client.iter().zip(&from_broker) {
        packets.push(packet(true, c, false, req));
        c += req.len() as u32;
        packets.push(packet(false, s, false, resp));
        s += resp.len() as u32;
    }
    let path = std::env::temp_dir().join(format!("kwire-secrets-e2e-{}.pcap", std::process::id()));
    {
        use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
        let mut w =
            PcapWriter::with_header(std::fs::File::create(&path).unwrap(), PcapHeader { datalink: pcap_file::DataLink::ETHERNET, ..Default::default() })
                .unwrap();
        for (i, p) in packets.iter().enumerate() {
            w.write_packet(&PcapPacket::new(std::time::Duration::from_micros(1_700_000_000_000_000 + i as u64), p.len() as u32, p)).unwrap();
        }
    }
    let file = path.to_str().unwrap();
    let out = kwire(&["pcap", file], b"");
    assert!(out.status.success(), "{}", all_output(&out));
    let text = all_output(&out);
    assert_absent(&text, PASSWORD, "pcap");
    assert_absent(&text, JAAS_SECRET, "pcap");
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 6, "{text}");
    assert_eq!(lines[2]["body"]["authBytes"], serde_json::json!({"withheld": true, "length": 18, "mechanism": "PLAIN", "user": "alice"}));
    assert_eq!(lines[4]["body"]["topics"][0]["configs"][0], serde_json::json!({"name": "sasl.jaas.config", "value": {"withheld": true}}));

    let shown = all_output(&kwire(&["pcap", file, "--show-secrets"], b""));
    assert!(shown.contains(PLAIN_B64) && shown.contains(JAAS_SECRET), "{shown}");
    let _ = std::fs::remove_file(&path);
}

/// A running `kwire tap`, its stdout read on a thread.
struct Tap {
    child: std::process::Child,
    bootstrap: String,
    stdout: Option<std::thread::JoinHandle<String>>,
}

impl Drop for Tap {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Tap {
    fn start(upstream: &str, args: &[&str]) -> Tap {
        let mut all = vec!["-b", upstream, "tap"];
        all.extend_from_slice(args);
        let mut child =
            Command::new(env!("CARGO_BIN_EXE_kwire")).args(&all).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let mut out = child.stdout.take().unwrap();
        let stdout = std::thread::spawn(move || {
            let mut s = String::new();
            out.read_to_string(&mut s).unwrap();
            s
        });
        let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        err.read_line(&mut line).unwrap();
        let bootstrap = line.split("listening on ").nth(1).and_then(|r| r.split(' ').next()).unwrap_or_else(|| panic!("tap said {line:?}")).to_owned();
        std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
        Tap { child, bootstrap, stdout: Some(stdout) }
    }

    fn stop(mut self) -> String {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "tap exited {status:?}");
        self.stdout.take().unwrap().join().unwrap()
    }
}

/// kwire's client through a tap: a PLAIN login listing topics, a SCRAM-SHA-256 one, a topic
/// created with a `sasl.jaas.config` and a config altered with `ssl.key.password`.
fn through_tap(upstream: &str, tap_args: &[&str]) -> String {
    let tap = Tap::start(upstream, tap_args);
    let plain = ["-b", &tap.bootstrap, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username=alice", "-X"];
    let plain_password = format!("sasl.password={PASSWORD}");
    let out = kwire(&[&plain[..], &[&plain_password, "topics", "list"]].concat(), b"");
    assert!(out.status.success(), "PLAIN through the tap: {}", all_output(&out));
    let scram = ["-b", &tap.bootstrap, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=SCRAM-SHA-256", "-X", "sasl.username=bob", "-X"];
    let out = kwire(&[&scram[..], &["sasl.password=scram-s3cret-pw", "topics", "list"]].concat(), b"");
    assert!(out.status.success(), "SCRAM through the tap: {}", all_output(&out));
    // Refused or not by the cluster, the requests went through the tap with the secrets.
    let jaas = format!("sasl.jaas.config=x required password=\"{JAAS_SECRET}\";");
    kwire(&[&plain[..], &[&plain_password, "topics", "create", "tapped", "--partitions", "1", "--replication-factor", "1", "--config", &jaas]].concat(), b"");
    kwire(&[&plain[..], &[&plain_password, "configs", "alter", "--topic", "tapped", "--add-config", "ssl.key.password=e2e-key-s3cret"]].concat(), b"");
    tap.stop()
}

#[test]
fn tap_withholds_plain_and_scram_logins_and_secret_configs() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let _guard = runtime.enter();
    let cluster = Cluster::start(ClusterConfig::default().brokers(1).sasl_plain("alice", PASSWORD).sasl_scram("bob", "scram-s3cret-pw"));
    let addrs = runtime.block_on(cluster.listen("127.0.0.1:0".parse().unwrap())).unwrap();
    let upstream = addrs[0].to_string();

    // --show-secrets first: the secrets are there to be withheld, and SCRAM's salt is learnt.
    let shown = through_tap(&upstream, &["--json", "--show-secrets"]);
    assert!(shown.contains(PLAIN_B64) && shown.contains(JAAS_SECRET) && shown.contains("e2e-key-s3cret"), "{shown}");
    let scram_messages: Vec<String> = shown
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|f| f["apiName"] == "SaslAuthenticate")
        .filter_map(|f| f["body"]["authBytes"].as_str().map(str::to_owned))
        .map(|b| {
            use base64::Engine;
            String::from_utf8_lossy(&base64::engine::general_purpose::STANDARD.decode(b).unwrap()).into_owned()
        })
        .collect();
    let salt = scram_messages.iter().find_map(|m| m.split(',').find_map(|f| f.strip_prefix("s="))).unwrap_or_else(|| panic!("{scram_messages:?}")).to_owned();

    for args in [&["--json"][..], &[]] {
        let out = through_tap(&upstream, args);
        for secret in [PASSWORD, JAAS_SECRET, "e2e-key-s3cret", "scram-s3cret-pw", &salt] {
            assert_absent(&out, secret, &format!("tap {args:?}"));
        }
        if args.is_empty() {
            assert!(out.contains("SaslAuthenticate v2 corr=") && out.contains("PLAIN user=alice, 18 bytes withheld"), "{out}");
            assert!(out.contains("SCRAM-SHA-256 client-first user=bob"), "{out}");
            continue;
        }
        let frames: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let auth: Vec<&Value> = frames.iter().filter(|f| f["apiName"] == "SaslAuthenticate").map(|f| &f["body"]["authBytes"]).collect();
        // PLAIN's requests and responses, SCRAM's two round trips (per connection).
        assert!(auth.len() >= 6, "{out}");
        assert!(auth.iter().all(|a| a["withheld"] == true), "{auth:?}");
        assert!(auth.iter().any(|a| a["user"] == "alice" && a["mechanism"] == "PLAIN"), "{auth:?}");
        assert!(auth.iter().any(|a| a["user"] == "bob" && a["mechanism"] == "SCRAM-SHA-256" && a["step"] == "client-first"), "{auth:?}");
        for step in ["server-first", "client-final", "server-final"] {
            assert!(auth.iter().any(|a| a["step"] == step), "{step}: {auth:?}");
        }
    }
    drop(cluster);
}
