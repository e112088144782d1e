//! The dissector `kwire wireshark` writes, run by tshark on a capture, against `kwire pcap` on the
//! same capture: tshark's JSON (`-T json --no-duplicate-keys`) of the `kwire` protocol and
//! `kwire pcap`'s bodies are read into the same shape (per field, its values in wire order) and
//! compared frame by frame. Shared by tests/wireshark.rs and tests/pcap_interop.rs.

#![allow(dead_code)] // each test binary uses part of it

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use base64::Engine as _;
use kwire::runtime::json::serde_json::{self, Value};

/// A field's values, by field name (lower case, no underscores: `topicName` and `topic_name`
/// are `topicname`).
pub type Leaves = BTreeMap<String, Vec<String>>;

/// One Kafka frame as the dissector showed it.
#[derive(Debug)]
pub struct Pdu {
    pub frame: u64,
    /// The client's TCP port.
    pub client_port: u16,
    pub response: bool,
    pub correlation_id: i32,
    pub api_key: i64,
    pub api_version: i64,
    pub leaves: Leaves,
    /// Expert infos of the frame: (field, message).
    pub experts: Vec<(String, String)>,
}

impl Pdu {
    /// What keeps the frame from being fully decoded: malformed, unknown version, no request.
    pub fn problems(&self) -> Vec<String> {
        self.experts.iter().map(|(f, m)| format!("{f}: {m}")).collect()
    }
}

fn as_list(v: &Value) -> Vec<&Value> {
    match v {
        Value::Array(a) => a.iter().collect(),
        other => vec![other],
    }
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// The filter names of the dissector's subtree fields (structs and arrays of structs), which
/// carry no value: read from its `FIELDS` table.
pub fn subtree_fields(lua: &str) -> BTreeSet<String> {
    lua.lines().filter_map(|l| l.trim().strip_prefix("{ \"")?.split_once("\", \"none\", ").map(|(name, _)| name.to_string())).collect()
}

/// The `kwire` frames of one packet; `subtrees` are the fields that hold no value.
pub fn pdus(packet: &Value, subtrees: &BTreeSet<String>) -> Vec<Pdu> {
    let layers = &packet["_source"]["layers"];
    let frame = text(&layers["frame"]["frame.number"]).parse().unwrap_or(0);
    let port = |k: &str| text(&layers["tcp"][k]).parse::<u16>().unwrap_or(0);
    let Some(kwire) = layers.get("kwire") else { return Vec::new() };
    as_list(kwire)
        .into_iter()
        .map(|pdu| {
            let num = |k: &str| text(&pdu[k]).parse::<i64>().unwrap_or_else(|_| panic!("frame {frame}: no {k} in {pdu}"));
            let mut leaves = Leaves::new();
            let mut experts = Vec::new();
            walk_tshark(pdu, subtrees, &mut leaves, &mut experts);
            let response = matches!(text(&pdu["kwire.response"]), "1" | "True" | "true");
            Pdu {
                frame,
                client_port: if response { port("tcp.dstport") } else { port("tcp.srcport") },
                response,
                correlation_id: num("kwire.header.correlation_id") as i32,
                api_key: num("kwire.header.api_key"),
                api_version: num("kwire.header.api_version"),
                leaves,
                experts,
            }
        })
        .collect()
}

fn normalize(name: &str) -> String {
    let name = name.strip_suffix("_field").unwrap_or(name);
    name.chars().filter(|c| *c != '_').flat_map(char::to_lowercase).collect()
}

/// A body field's name from its filter name: `kwire.topic_name`, `kwire.name.string`.
fn field_name(key: &str) -> Option<String> {
    let rest = key.strip_prefix("kwire.")?;
    if ["header.", "batch.", "request_in", "tagged."].iter().any(|p| rest.starts_with(p))
        || ["batch", "length", "response"].contains(&rest)
        || rest.ends_with("_tree")
    {
        return None;
    }
    Some(normalize(rest.split('.').next().unwrap_or(rest)))
}

fn walk_tshark(v: &Value, subtrees: &BTreeSet<String>, leaves: &mut Leaves, experts: &mut Vec<(String, String)>) {
    let Value::Object(o) = v else { return };
    for (k, child) in o {
        if k == "_ws.expert" {
            for e in as_list(child) {
                let field = e.as_object().and_then(|o| o.keys().find(|k| !k.starts_with("_ws.expert"))).cloned().unwrap_or_default();
                experts.push((field, text(&e["_ws.expert.message"]).to_string()));
            }
            continue;
        }
        // Text items (a struct's elements, a null) hold fields or nothing.
        if k == "_ws.lua.text" {
            as_list(child).into_iter().for_each(|c| walk_tshark(c, subtrees, leaves, experts));
            continue;
        }
        if k == "_ws.lua.fake" {
            continue; // a generated item without bytes (a response's api key)
        }
        if k.starts_with("_ws.") {
            experts.push((k.clone(), child.to_string()));
            continue;
        }
        let name = field_name(k).filter(|_| !subtrees.contains(k));
        for value in as_list(child) {
            match (value, &name) {
                (Value::String(s), Some(name)) => leaves.entry(name.clone()).or_default().push(s.clone()),
                (Value::Object(_), _) => walk_tshark(value, subtrees, leaves, experts),
                _ => {}
            }
        }
    }
}

/// A `kwire pcap` body's values, written as tshark writes them: numbers in decimal, booleans
/// as 1 and 0, bytes as colon-separated hex, strings and uuids as they are.
pub fn json_leaves(body: &Value) -> Leaves {
    let mut leaves = Leaves::new();
    walk_json(body, &mut leaves);
    leaves
}

fn walk_json(v: &Value, leaves: &mut Leaves) {
    let Value::Object(o) = v else { return };
    for (k, child) in o {
        if k == "_unknownTaggedFields" {
            continue;
        }
        for value in as_list(child) {
            match value {
                Value::Object(_) => walk_json(value, leaves),
                Value::Null => {}
                Value::Bool(b) => leaves.entry(normalize(k)).or_default().push(if *b { "1" } else { "0" }.into()),
                other => leaves.entry(normalize(k)).or_default().push(other.as_str().map_or_else(|| other.to_string(), str::to_string)),
            }
        }
    }
}

/// Whether tshark's values are `kwire pcap`'s, field by field in order; bytes are base64 in
/// the one and hex in the other. On a difference, says where.
pub fn agree(tshark: &Leaves, ours: &Leaves) -> Result<(), String> {
    let names: std::collections::BTreeSet<&String> = tshark.keys().chain(ours.keys()).collect();
    for name in names {
        let (t, o) = (tshark.get(name).map_or(&[][..], Vec::as_slice), ours.get(name).map_or(&[][..], Vec::as_slice));
        if t.len() != o.len() {
            return Err(format!("{name}: tshark has {} values {t:?}, kwire pcap {} {o:?}", t.len(), o.len()));
        }
        for (i, (a, b)) in t.iter().zip(o).enumerate() {
            let same = a == b || base64_as_hex(b).is_some_and(|h| &h == a) || a.parse::<f64>().ok().zip(b.parse::<f64>().ok()).is_some_and(|(x, y)| x == y);
            if !same {
                return Err(format!("{name}[{i}]: tshark {a:?}, kwire pcap {b:?}"));
            }
        }
    }
    Ok(())
}

/// Bytes as tshark's JSON writes them.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

/// A base64 value (Kafka's JSON form of bytes) as tshark's hex.
fn base64_as_hex(s: &str) -> Option<String> {
    base64::engine::general_purpose::STANDARD.decode(s).ok().map(|b| hex(&b))
}

/// What tshark's own Kafka dissector makes of a capture.
pub struct Coverage {
    /// Frames without a malformed, undecoded or unsupported-version mark.
    pub full_frames: usize,
    /// Such frames by api key and version.
    pub full: BTreeMap<(i64, i64), usize>,
}

pub fn builtin_coverage(pcap: &Path, port: u16) -> Coverage {
    let out = Command::new("tshark")
        .args(["-r", pcap.to_str().unwrap(), "-d", &format!("tcp.port=={port},kafka"), "-T", "json", "--no-duplicate-keys", "-J", "kafka"])
        .output()
        .expect("run tshark");
    assert!(out.status.success(), "tshark: {}", String::from_utf8_lossy(&out.stderr));
    let packets: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let mut full: BTreeMap<(i64, i64), usize> = BTreeMap::new();
    let mut full_frames = 0;
    for packet in &packets {
        let Some(kafka) = packet["_source"]["layers"].get("kafka") else { continue };
        for pdu in as_list(kafka) {
            let key = text(&pdu["kafka.api_key"]).parse::<i64>().unwrap_or(-1);
            let version = [&pdu["kafka.api_version"], &pdu["kafka.response.version"]].iter().find_map(|v| text(v).parse::<i64>().ok()).unwrap_or(-1);
            let s = pdu.to_string();
            let clean = !s.contains("_ws.malformed") && !s.contains("_ws.expert") && key >= 0;
            if clean {
                full_frames += 1;
                *full.entry((key, version)).or_default() += 1;
            }
        }
    }
    Coverage { full_frames, full }
}

/// tshark's packets as JSON, repeated keys merged into arrays.
pub fn tshark_json(pcap: &Path, extra: &[&str]) -> Vec<Value> {
    let out = Command::new("tshark").args(["-r", pcap.to_str().unwrap(), "-T", "json", "--no-duplicate-keys"]).args(extra).output().expect("run tshark");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "tshark: {stderr}");
    assert!(!stderr.contains("Lua"), "tshark reported a Lua problem: {stderr}");
    serde_json::from_slice::<Vec<Value>>(&out.stdout).unwrap_or_else(|e| panic!("tshark's JSON: {e}"))
}

/// What [`against_kwire_pcap`] compared.
pub struct Checked {
    /// Kafka frames in the capture (each decoded by both).
    pub frames: usize,
    /// Field values compared.
    pub values: usize,
    /// Frames `kwire pcap` could not decode (a version newer than the build's specs), which
    /// the dissector must mark as such.
    pub newer: usize,
}

/// Writes the dissector for `ports` (secrets shown, as `kwire pcap --show-secrets` shows them),
/// runs it on `pcap` and wants every Kafka frame `kwire pcap` prints: decoded, nothing malformed,
/// the same api key, version and field values. `kwire` is the CLI's binary.
pub fn against_kwire_pcap(kwire: &Path, pcap: &Path, ports: &[u16], dir: &Path) -> Checked {
    let run = |args: &[&str]| {
        let out = Command::new(kwire).args(args).output().unwrap();
        assert!(out.status.success(), "kwire {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let port_args: Vec<String> = ports.iter().flat_map(|p| ["--port".to_string(), p.to_string()]).collect();
    let port_args: Vec<&str> = port_args.iter().map(String::as_str).collect();
    let lua = dir.join(format!("{}.lua", pcap.file_stem().unwrap().to_string_lossy()));
    let script = run(&[&["wireshark", "--show-secrets"][..], &port_args].concat());
    let subtrees = subtree_fields(&script);
    assert!(subtrees.contains("kwire.topics"), "the FIELDS table's shape changed");
    std::fs::write(&lua, script).unwrap();

    // kwire pcap's messages by (client port, response, correlation id).
    let mut ours: BTreeMap<(u16, bool, i32), Value> = BTreeMap::new();
    for line in run(&[&["pcap", pcap.to_str().unwrap(), "--show-secrets"][..], &port_args].concat()).lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let client: std::net::SocketAddr = text(&v["client"]).parse().unwrap_or_else(|e| panic!("{e}: {line}"));
        let key = (client.port(), v["direction"] == "response", v["correlationId"].as_i64().unwrap() as i32);
        assert!(ours.insert(key, v).is_none(), "kwire pcap printed {key:?} twice");
    }

    let packets = tshark_json(pcap, &["-X", &format!("lua_script:{}", lua.display()), "-J", "frame tcp kwire"]);
    let mut seen = BTreeSet::new();
    let (mut values, mut newer) = (0, 0);
    for packet in &packets {
        // A Lua error or a malformed mark anywhere in the packet, inside the kwire layer or not.
        let layers = packet["_source"]["layers"].to_string();
        assert!(
            !["Lua Error", "_ws.lua.error", "_ws.malformed"].iter().any(|bad| layers.contains(bad)),
            "frame {}: {layers}",
            packet["_source"]["layers"]["frame"]["frame.number"]
        );
        for pdu in pdus(packet, &subtrees) {
            let key = (pdu.client_port, pdu.response, pdu.correlation_id);
            let mine = ours.get(&key).unwrap_or_else(|| panic!("frame {}: {key:?} is not in kwire pcap's output", pdu.frame));
            let name = kwire::ApiKey::from_i16(pdu.api_key as i16).map_or("?", |a| a.name());
            let what = format!("frame {} {name} v{} {}", pdu.frame, pdu.api_version, if pdu.response { "response" } else { "request" });
            assert_eq!((Some(pdu.api_key), Some(pdu.api_version)), (mine["apiKey"].as_i64(), mine["apiVersion"].as_i64()), "{what}");
            assert!(seen.insert(key), "{what}: {key:?} twice");
            if mine.get("error").is_some() {
                // Only a version newer than the specs may fail, and the dissector says so.
                assert!(pdu.experts.iter().all(|(f, _)| f == "kwire.unknown_version") && !pdu.experts.is_empty(), "{what}: {mine} / {:?}", pdu.experts);
                newer += 1;
                continue;
            }
            assert!(pdu.problems().is_empty(), "{what}: {:?}", pdu.problems());
            let expected = json_leaves(&mine["body"]);
            if let Err(e) = agree(&pdu.leaves, &expected) {
                panic!("{what}: {e}");
            }
            values += expected.values().map(Vec::len).sum::<usize>();
        }
    }
    let missing: Vec<_> = ours.keys().filter(|k| !seen.contains(k)).collect();
    assert!(missing.is_empty(), "messages kwire pcap printed that the dissector did not show: {missing:?}");
    Checked { frames: seen.len(), values, newer }
}
