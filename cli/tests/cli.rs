//! The `kwire` binary, subcommand by subcommand: output, exit codes (0 ok, 1 bad input,
//! 2 usage) and error messages, including malformed hex, truncated frames and corrupt captures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::io::Write;
use std::process::{Command, Output, Stdio};

use etherparse::PacketBuilder;
use kwire::messages::{
    metadata_request::MetadataRequestTopic, metadata_response::MetadataResponseTopic, MetadataRequest, MetadataResponse, RequestHeader, ResponseHeader,
};
use kwire::runtime::json::serde_json::{self, json, Value};
use kwire::runtime::records::{Compression, LegacyBuilder, Record, RecordBatchBuilder};
use kwire::{ApiKey, Bytes, Encode};

fn run(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kwire")).args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn ok_json(args: &[&str], stdin: &[u8]) -> Value {
    let out = run(args, stdin);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Runs, expects `code`, returns stderr.
fn fails(args: &[&str], stdin: &[u8], code: i32) -> String {
    let out = run(args, stdin);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(code), "stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

fn lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

// A Metadata v12 request body for topic "foo" with the zero topic id (compact encodings).
const METADATA_V12: &str = "02 00000000000000000000000000000000 04666f6f 00 01 00 00";

fn metadata_request() -> MetadataRequest {
    MetadataRequest { topics: Some(vec![MetadataRequestTopic { name: Some("foo".into()), ..Default::default() }]), ..Default::default() }
}

fn request_frame(corr: i32, api_key: i16, version: i16, body: &impl Encode) -> Vec<u8> {
    let header =
        RequestHeader { request_api_key: api_key, request_api_version: version, correlation_id: corr, client_id: Some("test".into()), ..Default::default() };
    let hv = ApiKey::from_i16(api_key).map_or(2, |k| k.request_header_version(version));
    let mut payload = Vec::new();
    header.encode(&mut payload, hv).unwrap();
    body.encode(&mut payload, version).unwrap();
    let mut frame = (payload.len() as i32).to_be_bytes().to_vec();
    frame.extend(payload);
    frame
}

fn response_frame(corr: i32, topic: &str) -> Vec<u8> {
    let body = MetadataResponse { topics: vec![MetadataResponseTopic { name: Some(topic.into()), ..Default::default() }], ..Default::default() };
    let mut payload = Vec::new();
    ResponseHeader { correlation_id: corr, ..Default::default() }.encode(&mut payload, 1).unwrap();
    body.encode(&mut payload, 12).unwrap();
    let mut frame = (payload.len() as i32).to_be_bytes().to_vec();
    frame.extend(payload);
    frame
}

// ---- apis ----

#[test]
fn apis_lists_every_key() {
    let out = run(&["apis"], b"");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), ApiKey::ALL.len() + 1);
    assert!(text.lines().any(|l| l.split_whitespace().take(2).eq(["3", "Metadata"])), "{text}");

    let table = ok_json(&["apis", "--json"], b"");
    let rows = table.as_array().unwrap();
    assert_eq!(rows.len(), ApiKey::ALL.len());
    let meta = rows.iter().find(|r| r["name"] == "Metadata").unwrap();
    let info = ApiKey::Metadata.info();
    let newest = info.releases.last().unwrap().release;
    assert_eq!(
        meta,
        &json!({"apiKey": 3, "name": "Metadata", "minVersion": info.valid.lo, "maxVersion": info.valid.hi, "flexibleFrom": info.flexible.lo,
                "origins": [{"minVersion": info.valid.lo, "maxVersion": info.valid.hi, "release": newest, "inNewestRelease": true, "unstable": false}]})
    );
    // Every valid version is in exactly one run of origins, in order.
    for row in rows {
        let covered: Vec<i64> =
            row["origins"].as_array().unwrap().iter().flat_map(|o| o["minVersion"].as_i64().unwrap()..=o["maxVersion"].as_i64().unwrap()).collect();
        let expected: Vec<i64> = match (row["minVersion"].as_i64(), row["maxVersion"].as_i64()) {
            (Some(lo), Some(hi)) => (lo..=hi).collect(),
            _ => Vec::new(),
        };
        assert_eq!(covered, expected, "{row}");
    }
    // An api that is never flexible has a null flexibleFrom.
    for (row, key) in rows.iter().zip(ApiKey::ALL) {
        assert_eq!(row["flexibleFrom"].is_null(), key.info().flexible.is_empty(), "{row}");
    }
}

// ---- decode ----

#[test]
fn lenient_decode_accepts_and_marks_what_the_spec_forbids() {
    // Metadata v4: one topic whose name is null (nullable only from v10), then two stray bytes.
    let body = "00000001 ffff 01";
    let args = ["decode", "--api-key", "Metadata", "--api-version", "4", "--request", "--hex"];
    let err = fails(&[&args[..], &[body]].concat(), b"", 1);
    assert!(err.contains("Name") && err.contains("null"), "{err}");
    let lenient = ok_json(&[&["--lenient"], &args[..], &[body]].concat(), b"");
    assert_eq!(
        lenient,
        json!({"topics": [{"name": ""}], "allowAutoTopicCreation": true,
               "_lenient": [{"offset": 6, "what": "null string in a version where the field is not nullable"}]})
    );
    let trailing = ok_json(&[&["--lenient"], &args[..], &["00000000 01 abcd"]].concat(), b"");
    assert_eq!(trailing["_lenient"], json!([{"offset": 5, "what": "2 trailing bytes after the body"}]));
    // Valid input is unmarked, and strict is the default for it too.
    let clean = ok_json(&[&["--lenient"], &args[..], &["00000000 01"]].concat(), b"");
    assert_eq!(clean, json!({"topics": [], "allowAutoTopicCreation": true}));
}

#[test]
fn decode_a_body_from_hex_and_from_stdin() {
    let expected = json!({
        "topics": [{"topicId": "AAAAAAAAAAAAAAAAAAAAAA", "name": "foo"}],
        "allowAutoTopicCreation": true,
        "includeTopicAuthorizedOperations": false
    });
    let args = ["decode", "--api-key", "3", "--api-version", "12", "--request", "--hex", METADATA_V12];
    assert_eq!(ok_json(&args, b""), expected);
    let raw = hex::decode(METADATA_V12.replace(' ', "")).unwrap();
    assert_eq!(ok_json(&["decode", "--api-key", "Metadata", "--api-version", "12", "--request"], &raw), expected);
    // Key order follows the spec, as Kafka's converter writes it.
    let out = run(&args, b"");
    assert!(String::from_utf8(out.stdout).unwrap().starts_with("{\"topics\""));
}

#[test]
fn decode_errors_name_the_field_and_offset() {
    let err = fails(&["decode", "--api-key", "3", "--api-version", "12", "--request", "--hex", "02 0000"], b"", 1);
    assert!(err.contains("MetadataRequest v12 field Topics[0].TopicId at offset 1"), "{err}");
    let err = fails(&["decode", "--api-key", "3", "--api-version", "12", "--request", "--hex", "0z"], b"", 1);
    assert!(err.contains("malformed hex"), "{err}");
    let err = fails(&["decode", "--api-key", "3", "--api-version", "12", "--request", "--hex", "abc"], b"", 1);
    assert!(err.contains("malformed hex"), "{err}");
    let err = fails(&["decode", "--api-key", "3", "--api-version", "12", "--request", "--hex", &format!("{METADATA_V12} 00")], b"", 1);
    assert!(err.contains("1 trailing bytes"), "{err}");
    let err = fails(&["decode", "--api-key", "999", "--api-version", "0", "--request", "--hex", "00"], b"", 1);
    assert!(err.contains("unknown api key 999"), "{err}");
}

#[test]
fn usage_errors_exit_2() {
    fails(&["decode", "--api-key", "3", "--request", "--hex", "00"], b"", 2);
    fails(&["decode", "--api-key", "3", "--api-version", "1", "--hex", "00"], b"", 2);
    fails(&["decode", "--api-key", "3", "--api-version", "1", "--request", "--response"], b"", 2);
    fails(&["decode", "--api-key", "NoSuchApi", "--api-version", "1", "--request"], b"", 2);
    fails(&["frobnicate"], b"", 2);
    fails(&[], b"", 2);
}

#[test]
fn decode_frames() {
    let frame = request_frame(7, 3, 12, &metadata_request());
    let v = ok_json(&["decode", "--frame", "--hex", &hex::encode(&frame)], b"");
    assert_eq!(v["header"], json!({"requestApiKey": 3, "requestApiVersion": 12, "correlationId": 7, "clientId": "test"}));
    assert_eq!(v["body"]["topics"][0]["name"], "foo");

    let frame = response_frame(7, "bar");
    let v = ok_json(&["decode", "--frame", "--response", "--api-key", "3", "--api-version", "12", "--hex", &hex::encode(&frame)], b"");
    assert_eq!(v["header"], json!({"correlationId": 7}));
    assert_eq!(v["body"]["topics"][0]["name"], "bar");

    // Truncated: the size says more than what follows.
    let cut = &frame[..frame.len() - 3];
    let err = fails(&["decode", "--frame", "--response", "--api-key", "3", "--api-version", "12", "--hex", &hex::encode(cut)], b"", 1);
    assert!(err.contains("truncated frame"), "{err}");
    let err = fails(&["decode", "--frame", "--hex", "0000"], b"", 1);
    assert!(err.contains("truncated frame"), "{err}");
    // A response frame needs its api key and version.
    fails(&["decode", "--frame", "--response", "--hex", &hex::encode(&frame)], b"", 2);
}

#[test]
fn decode_jsonl_answers_every_line() {
    let input = format!(
        "{}\n\nnot json\n{}\n{}\n",
        json!({"apiKey": 3, "apiVersion": 12, "kind": "request", "hex": METADATA_V12}),
        json!({"apiKey": 3, "apiVersion": 12, "kind": "request", "hex": "02"}),
        json!({"apiKey": 3, "apiVersion": 12, "kind": "sideways", "hex": ""}),
    );
    let out = run(&["decode", "--jsonl"], input.as_bytes());
    assert_eq!(out.status.code(), Some(1));
    let l = lines(&out);
    assert_eq!(l.len(), 4);
    assert_eq!(l[0]["ok"], true);
    assert_eq!(l[0]["json"]["topics"][0]["name"], "foo");
    assert_eq!(l[1]["ok"], false);
    assert!(l[1]["error"].as_str().unwrap().starts_with("invalid JSON"));
    assert!(l[2]["error"].as_str().unwrap().contains("MetadataRequest v12 field Topics at offset 1"), "{}", l[2]);
    assert!(l[3]["error"].as_str().unwrap().contains("\"kind\""), "{}", l[3]);
}

// ---- encode ----

#[test]
fn encode_hex_raw_and_jsonl() {
    let body =
        json!({"topics": [{"topicId": "AAAAAAAAAAAAAAAAAAAAAA", "name": "foo"}], "allowAutoTopicCreation": true, "includeTopicAuthorizedOperations": false});
    let args = ["encode", "--api-key", "3", "--api-version", "12", "--request"];
    let out = run(&args, body.to_string().as_bytes());
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap().trim(), METADATA_V12.replace(' ', ""));
    let out = run(&[&args[..], &["--raw"]].concat(), body.to_string().as_bytes());
    assert_eq!(out.stdout, hex::decode(METADATA_V12.replace(' ', "")).unwrap());

    let err = fails(&args, br#"{"topics": []}"#, 1);
    assert!(err.contains("allowAutoTopicCreation: field is mandatory"), "{err}");
    let err = fails(&args, b"{not json", 1);
    assert!(err.contains("invalid JSON"), "{err}");

    let input = format!(
        "{}\n{}\n",
        json!({"apiKey": 3, "apiVersion": 12, "kind": "request", "json": body}),
        json!({"apiKey": 3, "apiVersion": 3, "kind": "request", "json": body}),
    );
    let out = run(&["encode", "--jsonl"], input.as_bytes());
    assert_eq!(out.status.code(), Some(1));
    let l = lines(&out);
    assert_eq!(l[0], json!({"ok": true, "hex": METADATA_V12.replace(' ', "")}));
    assert!(l[1]["error"].as_str().unwrap().contains("MetadataRequest v3"), "{}", l[1]);
}

// ---- records ----

#[test]
fn records_batches_and_legacy_sets() {
    let mut b = RecordBatchBuilder::new().compression(Compression::Gzip);
    b.append(Record::new(5, 1000, Some(Bytes::from_static(b"k")), None).with_header("h", Some(Bytes::from_static(b"x")))).unwrap();
    b.append(Record::new(6, 1001, None, Some(Bytes::from_static(b"v")))).unwrap();
    let v2 = b.build().unwrap();
    let mut legacy = LegacyBuilder::new(1);
    legacy.append(Record::new(9, 2000, None, Some(Bytes::from_static(b"old")))).unwrap();
    let legacy = legacy.build().unwrap();
    let mut both = v2.to_vec();
    both.extend_from_slice(&legacy);

    let v = ok_json(&["records", "--hex", &hex::encode(&both)], b"");
    let batches = v["batches"].as_array().unwrap();
    assert_eq!(batches.len(), 2);
    assert_eq!(batches[0]["magic"], 2);
    assert_eq!(batches[0]["compression"], "gzip");
    assert_eq!(batches[0]["baseOffset"], 5);
    assert_eq!(
        batches[0]["records"],
        json!([
            {"offset": 5, "timestamp": 1000, "key": "aw==", "value": null, "headers": [{"key": "h", "value": "eA=="}]},
            {"offset": 6, "timestamp": 1001, "key": null, "value": "dg==", "headers": []}
        ])
    );
    assert_eq!(batches[1]["magic"], 1);
    assert_eq!(batches[1]["records"][0]["offset"], 9);
    assert_eq!(batches[1]["records"][0]["value"], "b2xk");
    // Raw bytes on stdin give the same.
    assert_eq!(ok_json(&["records"], &both), v);

    // A truncated tail is reported as partial, not as corruption.
    let cut = &both[..v2.len() + 20];
    let v = ok_json(&["records", "--hex", &hex::encode(cut)], b"");
    assert_eq!(v["batches"][1]["partial"], true);

    // A flipped byte inside the batch fails its CRC.
    let mut bad = v2.to_vec();
    let last = bad.len() - 1;
    bad[last] ^= 0xff;
    let err = fails(&["records", "--hex", &hex::encode(&bad)], b"", 1);
    assert!(err.contains("batch 0"), "{err}");
    fails(&["records", "--hex", "xyz"], b"", 1);

    let input = format!("{}\n{}\n", json!({"hex": hex::encode(&v2)}), json!({"hex": "zz"}));
    let out = run(&["records", "--jsonl"], input.as_bytes());
    assert_eq!(out.status.code(), Some(1));
    let l = lines(&out);
    assert_eq!(l[0]["ok"], true);
    assert_eq!(l[0]["json"]["batches"][0]["records"][1]["offset"], 6);
    assert_eq!(l[1]["ok"], false);
}

// ---- pcap ----

const CLIENT: u16 = 50000;
const BROKER: u16 = 9092;

/// An Ethernet/IPv4/TCP packet on loopback.
fn packet(from_client: bool, seq: u32, syn: bool, payload: &[u8]) -> Vec<u8> {
    let (src, dst) = if from_client { (CLIENT, BROKER) } else { (BROKER, CLIENT) };
    let b = PacketBuilder::ethernet2([0; 6], [0; 6]).ipv4([127, 0, 0, 1], [127, 0, 0, 1], 64).tcp(src, dst, seq, 65535);
    let b = if syn { b.syn() } else { b.ack(1) };
    let mut out = Vec::new();
    b.write(&mut out, payload).unwrap();
    out
}

fn write_pcap(path: &std::path::Path, packets: &[Vec<u8>]) {
    use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
    let file = std::fs::File::create(path).unwrap();
    let mut w = PcapWriter::with_header(file, PcapHeader { datalink: pcap_file::DataLink::ETHERNET, ..Default::default() }).unwrap();
    for (i, p) in packets.iter().enumerate() {
        w.write_packet(&PcapPacket::new(std::time::Duration::from_micros(1_700_000_000_000_000 + i as u64), p.len() as u32, p)).unwrap();
    }
}

fn write_pcapng(path: &std::path::Path, packets: &[Vec<u8>]) {
    use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
    use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionBlock;
    use pcap_file::pcapng::PcapNgWriter;
    let file = std::fs::File::create(path).unwrap();
    let mut w = PcapNgWriter::new(file).unwrap();
    w.write_pcapng_block(InterfaceDescriptionBlock { linktype: pcap_file::DataLink::ETHERNET, snaplen: 0, options: vec![] }).unwrap();
    for p in packets {
        let block = EnhancedPacketBlock {
            interface_id: 0,
            timestamp: std::time::Duration::from_secs(1_700_000_000),
            original_len: p.len() as u32,
            data: std::borrow::Cow::Borrowed(&p[..]),
            options: vec![],
        };
        w.write_pcapng_block(block).unwrap();
    }
}

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("kwire-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn pcap_lines(path: &std::path::Path) -> Vec<Value> {
    let out = run(&["pcap", path.to_str().unwrap(), "--port", "9092"], b"");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    lines(&out)
}

/// A session: two requests and their responses, with the request stream split mid-frame, a
/// segment delivered out of order and one retransmitted.
fn session() -> Vec<Vec<u8>> {
    let r1 = request_frame(1, 3, 12, &metadata_request());
    let r2 = request_frame(2, 3, 12, &metadata_request());
    let mut reqs = r1.clone();
    reqs.extend(&r2);
    let (a, rest) = reqs.split_at(10);
    let (b, c) = rest.split_at(r1.len() - 10 + 5);
    let c0 = 1000u32; // client ISN
    let s0 = 5000u32; // broker ISN
    let resp1 = response_frame(1, "foo");
    let resp2 = response_frame(2, "foo");
    vec![
        packet(true, c0, true, b""),
        packet(false, s0, true, b""),
        packet(true, c0 + 1 + a.len() as u32, false, b), // out of order
        packet(true, c0 + 1, false, a),
        packet(true, c0 + 1, false, a), // retransmitted
        packet(false, s0 + 1, false, &resp1),
        packet(true, c0 + 1 + (a.len() + b.len()) as u32, false, c),
        packet(false, s0 + 1 + resp1.len() as u32, false, &resp2),
    ]
}

#[test]
fn pcap_reassembles_and_pairs() {
    for (name, write) in [("s.pcap", write_pcap as fn(&std::path::Path, &[Vec<u8>])), ("s.pcapng", write_pcapng)] {
        let path = tmp(name);
        write(&path, &session());
        let l = pcap_lines(&path);
        assert_eq!(l.len(), 4, "{name}: {l:?}");
        let summary: Vec<(String, i64, i64)> =
            l.iter().map(|v| (v["direction"].as_str().unwrap().to_string(), v["apiKey"].as_i64().unwrap(), v["correlationId"].as_i64().unwrap())).collect();
        assert_eq!(summary, [("request".into(), 3, 1), ("response".into(), 3, 1), ("request".into(), 3, 2), ("response".into(), 3, 2)]);
        assert_eq!(l[0]["client"], "127.0.0.1:50000");
        assert_eq!(l[0]["broker"], "127.0.0.1:9092");
        assert_eq!(l[0]["header"]["clientId"], "test");
        assert_eq!(l[1]["apiVersion"], 12);
        assert_eq!(l[1]["body"]["topics"][0]["name"], "foo");
        if name.ends_with(".pcap") {
            // The first request completes with the packet that fills the hole (the 4th).
            assert_eq!(l[0]["timestamp"], "1700000000.000003");
        }
    }
}

#[test]
fn pcap_mid_stream_start_and_unknown_api_key() {
    // The capture starts inside a request; then an unknown api key; then a good request.
    let r1 = request_frame(1, 3, 12, &metadata_request());
    let unknown = request_frame(2, 999, 0, &metadata_request());
    let r3 = request_frame(3, 3, 12, &metadata_request());
    let mut stream = r1[7..].to_vec();
    let tail_start = stream.len();
    stream.extend(&r3);
    let mut synced = unknown.clone();
    synced.extend(&r3);
    let path = tmp("mid.pcap");
    write_pcap(&path, &[packet(true, 77, false, &stream)]);
    let l = pcap_lines(&path);
    assert_eq!(l.len(), 2, "{l:?}");
    assert_eq!(l[0]["error"], format!("skipped {tail_start} bytes: not at a frame boundary (mid-stream start or after a gap)"));
    assert_eq!(l[1]["correlationId"], 3);

    // From a SYN, an unknown api key is an error for that frame only.
    let path = tmp("unknown.pcap");
    write_pcap(&path, &[packet(true, 10, true, b""), packet(true, 11, false, &synced)]);
    let l = pcap_lines(&path);
    assert_eq!(l.len(), 2, "{l:?}");
    assert_eq!(l[0]["apiKey"], 999);
    assert_eq!(l[0]["error"], "unknown api key 999");
    assert_eq!(l[1]["body"]["topics"][0]["name"], "foo");
}

#[test]
fn pcap_response_without_request_and_cut_frame() {
    let resp = response_frame(42, "x");
    let req = request_frame(1, 3, 12, &metadata_request());
    let path = tmp("cut.pcap");
    write_pcap(
        &path,
        &[
            packet(false, 1, true, b""),
            packet(false, 2, false, &resp),
            packet(true, 1, true, b""),
            packet(true, 2, false, &req[..req.len() - 4]), // the capture ends mid-frame
        ],
    );
    let l = pcap_lines(&path);
    assert_eq!(l.len(), 2, "{l:?}");
    assert_eq!(l[0]["error"], "no request with this correlation id was seen on the connection");
    assert!(l[1]["error"].as_str().unwrap().starts_with("frame cut short"), "{}", l[1]);
}

#[test]
fn corrupt_captures_fail_cleanly() {
    let path = tmp("empty.pcap");
    std::fs::write(&path, b"").unwrap();
    let err = fails(&["pcap", path.to_str().unwrap()], b"", 1);
    assert!(err.contains("not a pcap or pcapng file"), "{err}");

    let path = tmp("garbage.pcap");
    std::fs::write(&path, b"this is not a capture at all, just text").unwrap();
    fails(&["pcap", path.to_str().unwrap()], b"", 1);

    // A good capture cut inside a packet record: the packets before it are printed, then exit 1.
    let good = tmp("good.pcap");
    write_pcap(&good, &session());
    let bytes = std::fs::read(&good).unwrap();
    let path = tmp("truncated.pcap");
    std::fs::write(&path, &bytes[..bytes.len() - 30]).unwrap();
    let out = run(&["pcap", path.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("corrupt capture"));
    assert!(lines(&out).len() >= 2);

    // Every prefix and a spread of single-byte corruptions: no panic, exit 0 or 1.
    for cut in (0..bytes.len()).step_by(7) {
        let path = tmp("prefix.pcap");
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let out = run(&["pcap", path.to_str().unwrap()], b"");
        assert!(matches!(out.status.code(), Some(0 | 1)), "cut {cut}: {out:?}");
    }
    for i in (0..bytes.len()).step_by(11) {
        let mut b = bytes.clone();
        b[i] ^= 0x5a;
        let path = tmp("flip.pcap");
        std::fs::write(&path, &b).unwrap();
        let out = run(&["pcap", path.to_str().unwrap()], b"");
        assert!(matches!(out.status.code(), Some(0 | 1)), "flip {i}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    }
    let err = fails(&["pcap", "/nonexistent/file.pcap"], b"", 1);
    assert!(err.contains("/nonexistent/file.pcap"), "{err}");
}

#[test]
fn connection_settings_errors_name_the_setting() {
    // Refused before any connection: exit 2, the setting and where it came from named.
    let err = fails(&["-b", "127.0.0.1:1", "-X", "sasl.usrname=alice", "topics", "list"], b"", 2);
    assert!(err.contains("-X: sasl.usrname: unknown setting"), "{err}");
    let err = fails(&["-X", "client.id=x", "topics", "list"], b"", 2);
    assert!(err.contains("no bootstrap brokers"), "{err}");
    let err = fails(&["-b", "127.0.0.1:1", "-X", "security.protocol=SASL_SSL", "check"], b"", 2);
    assert!(err.contains("no credentials"), "{err}");
    let err = fails(&["-b", "127.0.0.1:1", "consume", "-t", "x", "-o", "later"], b"", 2);
    assert!(err.contains("is not beginning, end"), "{err}");
    let err = fails(&["-b", "127.0.0.1:1", "consume", "-t", "x", "-f", "%q"], b"", 2);
    assert!(err.contains("unknown directive %q"), "{err}");
    // A broker that is not there: exit 3.
    let err = fails(&["-b", "127.0.0.1:1", "topics", "list"], b"", 3);
    assert!(err.contains("127.0.0.1:1"), "{err}");
}

#[test]
fn every_broker_subcommand_has_examples_in_its_help() {
    for sub in ["produce", "consume", "topics", "groups", "configs", "versions", "check"] {
        let out = run(&[sub, "--help"], b"");
        assert_eq!(out.status.code(), Some(0), "{sub}");
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(help.contains("Examples:") && help.contains("kwire -b"), "{sub}: {help}");
    }
}

/// The request versions a spec directory gives each api: validVersions, less an unstable latest.
fn spec_ranges(dir: &std::path::Path) -> std::collections::BTreeMap<i64, (i64, i64)> {
    let mut out = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if !path.to_string_lossy().ends_with("Request.json") {
            continue;
        }
        let text: String = std::fs::read_to_string(&path).unwrap().lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
        let spec: Value = serde_json::from_str(&text).unwrap();
        if spec["type"] != "request" || !spec["listeners"].as_array().is_some_and(|ls| ls.iter().any(|l| l == "broker")) {
            continue;
        }
        let valid = spec["validVersions"].as_str().unwrap();
        let (lo, hi) = valid.split_once('-').unwrap_or((valid, valid));
        let Ok(lo) = lo.parse::<i64>() else { continue };
        let hi = hi.parse::<i64>().unwrap() - i64::from(spec["latestVersionUnstable"] == true);
        // An api whose only version is unstable is not sent at all.
        if hi >= lo {
            out.insert(spec["apiKey"].as_i64().unwrap(), (lo, hi));
        }
    }
    out
}

#[test]
fn versions_of_other_clients_without_a_broker() {
    // Java's table is what the release's own specs say (when the spec sets are at hand).
    let specs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/message-specs");
    for (client, dir) in [("java-3.9", "kafka-3.9.0"), ("java-4.4", "kafka-4.4.0")] {
        let v = ok_json(&["versions", "--client", client, "--json"], b"");
        let ours: std::collections::BTreeMap<i64, (i64, i64)> = v["apis"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| (a["apiKey"].as_i64().unwrap(), (a["client"]["min"].as_i64().unwrap(), a["client"]["max"].as_i64().unwrap())))
            .collect();
        if specs.join(dir).is_dir() {
            assert_eq!(ours, spec_ranges(&specs.join(dir)), "{client}");
        }
        assert!(ours.len() > 50, "{client}: {}", ours.len());
    }
    // Kafka 4.0 removed Produce v0-v2 (KIP-896): what a 4.0 client sends starts at v3; and
    // librdkafka 2.0 stops at Produce v7 and Metadata v4.
    let produce = |client: &str| {
        let v = ok_json(&["versions", "--client", client, "--json"], b"");
        v["apis"].as_array().unwrap().iter().find(|a| a["name"] == "Produce").unwrap()["client"].clone()
    };
    assert_eq!(produce("java-4.0"), json!({"min": 3, "max": 12}));
    assert_eq!(produce("java-3.6"), json!({"min": 0, "max": 9}));
    assert_eq!(produce("librdkafka-2.0"), json!({"min": 0, "max": 7}));
    let table = String::from_utf8(run(&["versions", "--client", "librdkafka-2.0"], b"").stdout).unwrap();
    assert!(table.contains("LIBRDKAFKA-2.0.2"), "{table}");
    assert!(table.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["3", "Metadata", "0-4", "0-13"]), "{table}");
    let err = fails(&["versions", "--client", "java-1.0"], b"", 2);
    assert!(err.contains("java-3.6") && err.contains("librdkafka-2.12"), "{err}");
}

#[test]
fn completions_and_tap_usage() {
    for shell in ["bash", "zsh", "fish"] {
        let out = run(&["completions", shell], b"");
        let text = String::from_utf8(out.stdout).unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert!(text.contains("kwire") && text.contains("acls") && text.contains("tap"), "{shell}");
    }
    fails(&["completions", "tcsh"], b"", 2);
    assert!(fails(&["tap"], b"", 2).contains("-b HOST:PORT"));
    assert!(fails(&["-b", "127.0.0.1:9093", "-X", "security.protocol=SSL", "tap"], b"", 2).contains("TLS"));
    fails(&["-b", "127.0.0.1:9092", "tap", "--duration", "5 parsecs"], b"", 2);
}
