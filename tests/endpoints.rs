//! The endpoint and topic-id walkers against the specs this crate was built from: every struct
//! a spec pairs a host with a port in is reached by `visit_endpoints`, every `TopicId` by
//! `visit_entities`, and rewriting through the `_mut` walkers changes what goes on the wire.
//!
//! The specs are read here as plain JSON (the generator's loader is not used), from
//! `KWIRE_SPECS` when the build used it, else the default releases, as build.rs does.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use kwire::messages::metadata_response::MetadataResponseBroker;
use kwire::messages::{visit_messages, FetchRequest, MetadataResponse};
use kwire::runtime::sample::{MessageVisitor, Sample, SampleRng};
use kwire::{EntityMut, EntityType, EntityValue, Message, Uuid, Visit};

fn spec_dirs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    match option_env!("KWIRE_SPECS") {
        Some(dirs) => std::env::split_paths(dirs).map(|d| root.join(d)).collect(),
        None => ["kafka-3.9.0", "kafka-4.4.0"].iter().map(|r| root.join("../shared/message-specs").join(r)).collect(),
    }
}

fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    // The license header is `//` lines, which JSON does not allow.
    let json: String = text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What the specs hold, per message: the structs with a host and a port, and whether any
/// struct has a uuid `TopicId`.
#[derive(Default)]
struct Expected {
    endpoints: BTreeMap<String, BTreeSet<String>>,
    topic_ids: BTreeSet<String>,
}

fn expected() -> Expected {
    fn walk(message: &str, name: &str, fields: &[serde_json::Value], out: &mut Expected) {
        let has = |suffix: &str, types: &[&str]| {
            fields.iter().any(|f| f["name"].as_str().is_some_and(|n| n.ends_with(suffix)) && f["type"].as_str().is_some_and(|t| types.contains(&t)))
        };
        if has("Host", &["string"]) && has("Port", &["int32", "uint16", "int16"]) {
            out.endpoints.entry(message.to_string()).or_default().insert(name.to_string());
        }
        if has("TopicId", &["uuid"]) {
            out.topic_ids.insert(message.to_string());
        }
        for f in fields {
            if let (Some(inner), Some(ty)) = (f["fields"].as_array(), f["type"].as_str()) {
                walk(message, ty.trim_start_matches("[]"), inner, out);
            }
        }
    }
    let mut out = Expected::default();
    for dir in spec_dirs() {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
            if path.extension().is_none_or(|x| x != "json") {
                continue;
            }
            let spec = read_json(&path);
            let message = spec["name"].as_str().unwrap_or_default().to_string();
            walk(&message, &message, spec["fields"].as_array().map(Vec::as_slice).unwrap_or_default(), &mut out);
            for common in spec["commonStructs"].as_array().into_iter().flatten() {
                let name = common["name"].as_str().unwrap_or_default();
                walk(&message, name, common["fields"].as_array().map(Vec::as_slice).unwrap_or_default(), &mut out);
            }
        }
    }
    out
}

/// Samples of every message at every version (a few seeds each, so optional parts appear).
#[derive(Default)]
struct Reached {
    endpoints: BTreeMap<String, BTreeSet<String>>,
    topic_ids: BTreeSet<String>,
}

impl MessageVisitor for Reached {
    fn visit<M: Message + Sample>(&mut self) {
        for version in M::VERSIONS.lo..=M::VERSIONS.hi {
            for seed in 0..3 {
                let m = M::sample(version, &mut SampleRng::new(seed));
                m.visit_endpoints(&mut |e| {
                    self.endpoints.entry(M::NAME.to_string()).or_default().insert(e.struct_name.to_string());
                });
                m.visit_entities(&mut |field, value| {
                    if field.kind == EntityType::TopicId {
                        assert!(matches!(value, EntityValue::Uuid(_)), "{}: {value:?}", M::NAME);
                        self.topic_ids.insert(M::NAME.to_string());
                    }
                });
            }
        }
    }
}

#[test]
fn every_host_and_port_pair_in_the_specs_is_visited() {
    let expected = expected();
    // The client-facing endpoints the issue names, so an empty walk cannot pass.
    for m in ["MetadataResponse", "FindCoordinatorResponse", "DescribeClusterResponse", "FetchResponse", "ProduceResponse"] {
        assert!(expected.endpoints.contains_key(m), "the specs have no endpoint in {m}?");
    }
    let mut reached = Reached::default();
    visit_messages(&mut reached);
    let mut missed = Vec::new();
    for (message, structs) in &expected.endpoints {
        for s in structs {
            if !reached.endpoints.get(message).is_some_and(|r| r.contains(s)) {
                missed.push(format!("{message}.{s}"));
            }
        }
    }
    assert!(missed.is_empty(), "host/port structs the walker does not reach: {missed:?}");
    // Nothing else is reported as an endpoint.
    for (message, structs) in &reached.endpoints {
        for s in structs {
            assert!(expected.endpoints.get(message).is_some_and(|e| e.contains(s)), "{message}.{s} is no host/port pair");
        }
    }
}

#[test]
fn every_topic_id_in_the_specs_is_visited() {
    let expected = expected();
    assert!(expected.topic_ids.contains("FetchRequest") && expected.topic_ids.contains("MetadataResponse"));
    let mut reached = Reached::default();
    visit_messages(&mut reached);
    let missed: Vec<_> = expected.topic_ids.difference(&reached.topic_ids).collect();
    assert!(missed.is_empty(), "messages whose TopicId the walker does not reach: {missed:?}");
}

#[test]
fn rewriting_endpoints_changes_the_encoded_response() {
    let broker = |id, host: &str, port| MetadataResponseBroker { node_id: id, host: host.into(), port, rack: Some("rack-a".into()), ..Default::default() };
    let mut response = MetadataResponse { brokers: vec![broker(1, "kafka-1.internal", 9092), broker(2, "kafka-2.internal", 9093)], ..Default::default() };
    response.visit_endpoints_mut(&mut |mut e| {
        let id = e.node_id.as_deref().copied().unwrap_or(-1);
        *e.host = "proxy.local".into();
        e.port.set(19000 + id as u16);
        assert_eq!(e.struct_name, "MetadataResponseBroker");
    });
    let version = 12;
    let bytes = response.to_bytes(version).unwrap();
    assert!(!bytes.windows(8).any(|w| w == b"internal"), "a real host left in the encoded response");
    let decoded = MetadataResponse::from_slice(&bytes, version).unwrap();
    let mut seen = Vec::new();
    decoded.visit_endpoints(&mut |e| seen.push((e.node_id, e.host.to_string(), e.port, e.rack.map(str::to_string))));
    assert_eq!(
        seen,
        vec![(Some(1), "proxy.local".to_string(), 19001, Some("rack-a".to_string())), (Some(2), "proxy.local".to_string(), 19002, Some("rack-a".to_string())),]
    );
}

#[test]
fn topic_ids_are_rewritten_beside_names() {
    let mut rng = SampleRng::new(7);
    let mut request = FetchRequest::sample(13, &mut rng);
    let mut before = Vec::new();
    request.visit_entities(&mut |field, value| {
        if let EntityValue::Uuid(id) = value {
            assert_eq!((field.kind, field.field), (EntityType::TopicId, "TopicId"));
            before.push(id);
        }
    });
    assert!(!before.is_empty(), "a Fetch v13 sample carries topic ids");
    let mapped = Uuid([7; 16]);
    request.visit_entities_mut(&mut |_, value| {
        if let EntityMut::Uuid(id) = value {
            *id = mapped;
        }
    });
    let decoded = FetchRequest::from_slice(&request.to_bytes(13).unwrap(), 13).unwrap();
    let mut after = Vec::new();
    decoded.visit_entities(&mut |_, value| {
        if let EntityValue::Uuid(id) = value {
            after.push(id);
        }
    });
    assert_eq!(after, vec![mapped; before.len()]);
}
