//! Differential tests against the `kafka-protocol` crate (=0.18.0), in both directions, for
//! every (message, version) both crates know. The outcome of every cell, including versions
//! only one crate knows, is rendered to `tests/compat/MATRIX.md` (per spec set) and compared
//! with the committed file; `KWIRE_UPDATE_MATRIX=1` rewrites it instead.

mod compat;

use std::path::PathBuf;

use compat::forward::Forward;
use compat::matrix::{self, Kind, Outcome, Row};

/// The committed matrix for the spec set this crate was built from; `None` for a spec set
/// without one (a custom `KWIRE_SPECS`), which is still checked for disagreements.
fn matrix_path() -> Option<(String, PathBuf)> {
    // A merged build's set is its releases joined with `+`.
    let names: Option<Vec<String>> = std::env::split_paths(kwire::SPEC_DIR).map(|d| d.file_name().and_then(|n| n.to_str()).map(str::to_string)).collect();
    let set = names?.join("+");
    let file = match set.as_str() {
        "kafka-3.9.0+kafka-4.4.0" => "MATRIX.md".to_string(),
        "kafka-3.9.0" | "kafka-4.4.0" => format!("MATRIX-{set}.md"),
        _ => return None,
    };
    Some((set, PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/compat").join(file)))
}

#[test]
fn differential_matrix() {
    let mut forward = Forward::default();
    kwire::messages::visit_messages(&mut forward);
    let mut rows = forward.rows;
    // Api keys and message types only kafka-protocol has: listed, not skipped.
    for key in kafka_protocol::messages::ApiKey::iter() {
        if kwire::ApiKey::from_i16(key as i16).is_none() {
            for (suffix, request) in [("Request", true), ("Response", false)] {
                let Some((lo, hi)) = compat::forward::kp_versions(key as i16, request) else { continue };
                for version in lo..=hi {
                    rows.push(Row {
                        kind: Kind::Api { key: key as i16, request },
                        message: format!("{key:?}{suffix}"),
                        version,
                        outcome: Outcome::OnlyKafkaProtocol { whole_message: true },
                    });
                }
            }
        }
    }
    for name in compat::forward::KP_NON_API {
        if !forward.visited.contains(name) {
            rows.push(Row { kind: Kind::Other, message: name.to_string(), version: 0, outcome: Outcome::OnlyKafkaProtocol { whole_message: true } });
        }
    }
    rows.sort_by(|a, b| (&a.kind, &a.message, a.version).cmp(&(&b.kind, &b.message, b.version)));
    let ranges = forward.ranges;
    let (reverse, builder_bugs) = compat::built::run();

    let spec = matrix_path();
    let set = spec.as_ref().map_or(kwire::SPEC_DIR.to_string(), |(s, _)| s.clone());
    let rendered = matrix::render(&set, &rows, &reverse, &ranges);
    let mut problems = Vec::new();
    if !builder_bugs.is_empty() {
        problems.push(format!("values built for direction (b) that kafka-protocol cannot encode:\n  {}", builder_bugs.join("\n  ")));
    }
    if !rendered.unexplained.is_empty() {
        problems.push(format!("{} unexplained disagreements:\n  {}", rendered.unexplained.len(), rendered.unexplained.join("\n  ")));
    }
    if !rendered.unused_exceptions.is_empty() {
        problems.push(format!("explanations matching no disagreement: {:?}", rendered.unused_exceptions));
    }
    if !rendered.unknown_reasons.is_empty() {
        problems.push(format!("one-sided cells without a reason: {:?}", rendered.unknown_reasons));
    }
    if let Some((_, path)) = &spec {
        if std::env::var_os("KWIRE_UPDATE_MATRIX").is_some_and(|v| v == "1") {
            std::fs::write(path, &rendered.markdown).expect("write matrix");
        } else {
            let committed = std::fs::read_to_string(path).unwrap_or_default();
            if committed != rendered.markdown {
                problems.push(format!("{} is stale; rerun with KWIRE_UPDATE_MATRIX=1 and review the diff", path.display()));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}
