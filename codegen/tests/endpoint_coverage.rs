//! The endpoint walker's coverage, on every spec set in `../shared/message-specs`: each struct in
//! a spec's JSON that holds a host and a port must be one the generator treats as an endpoint.
//! The JSON is read here directly (not through the generator's loader), and with a looser rule
//! than the generator's (any string field ending in `Host` beside an int field ending in `Port`),
//! so a new api, or a renamed field, that the generator would miss fails here.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use kwire_build::internal::load_model;

fn spec_sets() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/message-specs");
    let mut sets: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    sets.sort();
    assert!(sets.len() >= 3, "expected the spec sets in {}, found {sets:?}", root.display());
    sets
}

/// Kafka's spec files open with `//` license lines; JSON has no comments.
fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let json: String = text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every (message, struct) of a spec whose fields hold a host and a port.
fn host_port_structs(spec: &serde_json::Value) -> Vec<(String, String)> {
    fn is_pair(fields: &[serde_json::Value]) -> bool {
        let has = |suffix: &str, types: &[&str]| {
            fields.iter().any(|f| f["name"].as_str().is_some_and(|n| n.ends_with(suffix)) && f["type"].as_str().is_some_and(|t| types.contains(&t)))
        };
        has("Host", &["string"]) && has("Port", &["int32", "uint16", "int16"])
    }
    fn walk(message: &str, name: &str, fields: &[serde_json::Value], out: &mut Vec<(String, String)>) {
        if is_pair(fields) {
            out.push((message.to_string(), name.to_string()));
        }
        for f in fields {
            if let (Some(inner), Some(ty)) = (f["fields"].as_array(), f["type"].as_str()) {
                walk(message, ty.trim_start_matches("[]"), inner, out);
            }
        }
    }
    let message = spec["name"].as_str().unwrap_or_default();
    let mut out = Vec::new();
    walk(message, message, spec["fields"].as_array().map(Vec::as_slice).unwrap_or_default(), &mut out);
    for common in spec["commonStructs"].as_array().into_iter().flatten() {
        let name = common["name"].as_str().unwrap_or_default();
        walk(message, name, common["fields"].as_array().map(Vec::as_slice).unwrap_or_default(), &mut out);
    }
    out
}

#[test]
fn every_host_and_port_in_every_spec_set_is_an_endpoint() {
    for set in spec_sets() {
        let model = load_model(&set).unwrap_or_else(|e| panic!("{}: {e}", set.display()));
        let mut files: Vec<PathBuf> = std::fs::read_dir(&set)
            .unwrap_or_else(|e| panic!("{}: {e}", set.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        let mut pairs = Vec::new();
        for file in &files {
            pairs.extend(host_port_structs(&read_json(file)));
        }
        // The client-facing ones at least: a walk that found none would pass vacuously.
        for expected in ["MetadataResponse", "FindCoordinatorResponse", "DescribeClusterResponse", "FetchResponse"] {
            assert!(pairs.iter().any(|(m, _)| m == expected), "{}: no host/port in {expected}", set.display());
        }
        let mut missed = BTreeSet::new();
        for (message, name) in &pairs {
            let Some(m) = model.messages.iter().find(|m| &m.name == message) else {
                missed.insert(format!("{message}: not in the model"));
                continue;
            };
            match m.structs.iter().find(|s| &s.name == name) {
                Some(s) if s.endpoint().is_some() => {}
                Some(_) => {
                    missed.insert(format!("{message}.{name}: holds a host and port, not treated as an endpoint"));
                }
                None => {
                    missed.insert(format!("{message}.{name}: no such struct in the model"));
                }
            }
        }
        assert!(missed.is_empty(), "{}:\n{}", set.display(), missed.into_iter().collect::<Vec<_>>().join("\n"));
        // And the other way: nothing is an endpoint that the specs do not pair.
        for m in &model.messages {
            for s in m.structs.iter().filter(|s| s.endpoint().is_some()) {
                assert!(
                    pairs.iter().any(|(pm, ps)| pm == &m.name && ps == &s.name),
                    "{}: {}.{} is an endpoint without a host/port pair",
                    set.display(),
                    m.name,
                    s.name
                );
            }
        }
    }
}
