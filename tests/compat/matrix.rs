//! The agreement matrix: one row per (message, version), rendered as markdown and compared
//! with the committed `tests/compat/MATRIX*.md` (rewritten with `KWIRE_UPDATE_MATRIX=1`).

use std::collections::BTreeMap;
use std::fmt::Write;

use super::exceptions::{applying, Direction, Exception};

/// What a message type is, for grouping rows.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// A request or response body of an api key.
    Api { key: i16, request: bool },
    /// Headers, consumer-protocol and KRaft record types.
    Other,
}

/// The result for one (message, version, direction).
#[derive(Debug, Clone)]
pub enum Outcome {
    /// Identical bytes for every seed (direction a) or every built value (direction b).
    Agrees { seeds: usize },
    /// The first disagreement found, as evidence.
    Differs { detail: String },
    /// kafka-protocol does not know this version (or, `whole_message`, this message type).
    OnlyKwire { whole_message: bool },
    /// kwire does not know this version (or, `whole_message`, this message type).
    OnlyKafkaProtocol { whole_message: bool },
}

/// One (message, version) of one direction.
#[derive(Debug, Clone)]
pub struct Row {
    pub kind: Kind,
    pub message: String,
    pub version: i16,
    pub outcome: Outcome,
}

/// Why a version or message is known to one crate only; checked against the version ranges
/// so that a reason cannot be attached to a row it does not describe.
fn only_reason(row: &Row, ranges: &BTreeMap<String, ((i16, i16), Option<(i16, i16)>)>) -> &'static str {
    match row.outcome {
        // The four ZooKeeper-era inter-broker apis; anything else kwire alone has is O7.
        Outcome::OnlyKwire { whole_message: true } => {
            return match row.kind {
                Kind::Api { key: 4..=7, .. } => "O1",
                Kind::Api { .. } => "O7",
                Kind::Other if kafka_protocol_predates(&row.message) => "O9",
                Kind::Other => "O?",
            }
        }
        Outcome::OnlyKafkaProtocol { whole_message: true } => return "O3",
        _ => {}
    }
    let Some(&(ours, theirs)) = ranges.get(&row.message) else { return "O?" };
    match (&row.outcome, theirs) {
        (Outcome::OnlyKwire { .. }, Some((lo, _))) if row.version < lo => match row.kind {
            Kind::Api { key: 76..=79, .. } => "O8",
            _ => "O2",
        },
        (Outcome::OnlyKwire { .. }, Some((_, hi))) if row.version > hi && latest_unstable(row) => "O6",
        (Outcome::OnlyKwire { .. }, Some((_, hi))) if row.version > hi && kafka_protocol_predates(&row.message) => "O9",
        (Outcome::OnlyKafkaProtocol { .. }, _) if row.version > ours.1 => "O4",
        (Outcome::OnlyKafkaProtocol { .. }, _) if row.version < ours.0 => "O5",
        _ => "O?",
    }
}

/// True when the message's spec comes from a release newer than Kafka 4.1.0 (kafka-protocol's):
/// the build's newest release is 4.2 or later and its spec file is in it.
fn kafka_protocol_predates(message: &str) -> bool {
    let Some(newest) = std::env::split_paths(kwire::SPEC_DIR).last() else { return false };
    let release = newest.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let newer = ["kafka-4.2", "kafka-4.3", "kafka-4.4"].iter().any(|p| release.starts_with(p));
    newer && newest.join(format!("{message}.json")).is_file()
}

/// True when the row is the newest version of an api whose spec marks it `latestVersionUnstable`.
fn latest_unstable(row: &Row) -> bool {
    let Kind::Api { key, .. } = row.kind else { return false };
    kwire::ApiKey::from_i16(key).is_some_and(|k| k.info().latest_version_unstable && k.info().valid.hi == row.version)
}

/// The reasons behind the `O*` codes, each checked by hand against both spec sets.
pub const ONLY_REASONS: &[(&str, &str)] = &[
    (
        "O1",
        "Api key or message removed from Kafka 4.0 (KIP-500 ZooKeeper removal: LeaderAndIsr, StopReplica, \
            UpdateMetadata, ControlledShutdown), so absent from kafka-protocol 0.18.0, which is generated from the \
            Kafka 4.1.0 specs. kwire generates it from the selected spec set.",
    ),
    (
        "O2",
        "Version below kafka-protocol's lowest: Kafka 4.0 removed these old versions (KIP-896, the spec files' \
            `validVersions` start higher in 4.x). Still valid in the selected spec set, so kwire keeps them.",
    ),
    ("O3", "Api key or message type added after the selected spec set (kafka-protocol follows Kafka 4.1.0)."),
    (
        "O4",
        "Version added after the selected spec set (kafka-protocol follows Kafka 4.1.0); kwire generates \
            exactly the versions of its spec set. (Api key 74 is ListClientMetricsResources in 3.9.0; 4.1.0 renames \
            it ListConfigResources and adds v1.)",
    ),
    (
        "O5",
        "Version the selected spec set does not have but Kafka 4.1.0 does: JoinGroup v0-v1, removed by KIP-896 \
            (still absent from trunk-2025-02-14) and added back in Kafka 4.0.1 and 4.1.0 for older librdkafka \
            (KAFKA-19444, apache/kafka#20116).",
    ),
    (
        "O6",
        "Newest version of an api whose spec sets `latestVersionUnstable: true`: kwire generates it (left \
            out of `stable_versions()`), kafka-protocol leaves it out of the request type (e.g. InitProducerIdRequest \
            stops at v5 while `ApiKey::InitProducerId.valid_versions()` says 0-6, from the response).",
    ),
    (
        "O8",
        "Share-group v0 (ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch, ShareAcknowledge): the KIP-932 \
            early-access version, unstable in the selected spec set and dropped in Kafka 4.1.0, whose first version \
            of these apis is v1.",
    ),
    (
        "O9",
        "Version or data message added after Kafka 4.1.0 (kafka-protocol's specs), in a newer release merged \
            into this build (the default merges 3.9.0 with 4.4.0): ListOffsets v11, OffsetCommit/OffsetFetch v10, \
            ShareFetch/ShareAcknowledge v2, ControlRecordTypeSchema, and the like.",
    ),
    (
        "O7",
        "Api kafka-protocol 0.18.0 does not generate: StreamsGroupHeartbeat (88) and StreamsGroupDescribe (89), \
            KIP-1071, still in development in Kafka 4.1.0; kafka-protocol's generator filters out unstable \
            messages (its CHANGELOG, v0.10.0).",
    ),
];

/// The rendered cell and, for a disagreement, the exception that explains it.
fn cell(
    row: Option<&Row>,
    direction: Direction,
    ranges: &BTreeMap<String, ((i16, i16), Option<(i16, i16)>)>,
    used: &mut BTreeMap<&'static str, Vec<String>>,
    unexplained: &mut Vec<String>,
) -> String {
    let Some(row) = row else { return "–".into() };
    match &row.outcome {
        Outcome::Agrees { seeds } if direction == Direction::Forward => format!("agree ({seeds} seeds)"),
        Outcome::Agrees { seeds } => format!("agree ({seeds} built)"),
        Outcome::Differs { detail } => match find_exception(&row.message, row.version, direction) {
            Some(e) => {
                used.entry(e.id).or_default().push(format!("{} v{}: {detail}", row.message, row.version));
                format!("**differs: {}**", e.id)
            }
            None => {
                unexplained.push(format!("{:?} {} v{}: {detail}", direction, row.message, row.version));
                "**UNEXPLAINED**".into()
            }
        },
        Outcome::OnlyKwire { .. } => format!("kwire only ({})", only_reason(row, ranges)),
        Outcome::OnlyKafkaProtocol { .. } => format!("kafka-protocol only ({})", only_reason(row, ranges)),
    }
}

fn find_exception(message: &str, version: i16, direction: Direction) -> Option<&'static Exception> {
    applying().find(|e| e.direction == direction && e.messages.contains(&message) && (e.versions.0..=e.versions.1).contains(&version))
}

/// The rendered matrix and what the test must fail on.
pub struct Rendered {
    pub markdown: String,
    /// Disagreements no exception explains.
    pub unexplained: Vec<String>,
    /// Exceptions that matched no disagreement (stale explanations).
    pub unused_exceptions: Vec<&'static str>,
    /// Rows whose one-sided reason could not be determined.
    pub unknown_reasons: Vec<String>,
}

/// Counts for the summary line of one direction.
fn counts(rows: &[Row]) -> (usize, usize, usize, usize) {
    let mut c = (0, 0, 0, 0);
    for r in rows {
        match r.outcome {
            Outcome::Agrees { .. } => c.0 += 1,
            Outcome::Differs { .. } => c.1 += 1,
            Outcome::OnlyKwire { .. } => c.2 += 1,
            Outcome::OnlyKafkaProtocol { .. } => c.3 += 1,
        }
    }
    c
}

pub fn render(spec_set: &str, forward: &[Row], reverse: &[Row], ranges: &BTreeMap<String, ((i16, i16), Option<(i16, i16)>)>) -> Rendered {
    let mut used: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    let mut unexplained = Vec::new();
    let mut md = String::new();
    let (fa, fd, fw, fp) = counts(forward);
    let (ra, rd, _, _) = counts(reverse);
    let _ = writeln!(md, "# Differential matrix: kwire vs kafka-protocol 0.18.0 ({spec_set})\n");
    let env = spec_set.split('+').map(|r| format!("../shared/message-specs/{r}")).collect::<Vec<_>>().join(":");
    let _ = writeln!(
        md,
        "Generated by `tests/compat_kafka_protocol.rs`; do not edit. Regenerate with\n\
         `KWIRE_UPDATE_MATRIX=1 cargo test --test compat_kafka_protocol` (add\n\
         `KWIRE_SPECS={env}` for this spec set) and review the diff.\n\
         Explanations live in `tests/compat/exceptions.rs`; the test fails on any disagreement without one,\n\
         and on an explanation that no longer matches a disagreement.\n"
    );
    let _ = writeln!(
        md,
        "- **(a) kwire → kafka-protocol**: for every seed in {:?}, kwire's schema-driven sample \
         (a non-default value in every field present at the version, plus unknown tagged fields where \
         flexible) is encoded by kwire, decoded by kafka-protocol (which must read every byte) and \
         re-encoded by kafka-protocol (whose `compute_size` must match): the bytes must be identical.\n\
         - **(b) kafka-protocol → kwire**: values built with kafka-protocol's own types and builders \
         (`tests/compat/built.rs`) are encoded by kafka-protocol, decoded by kwire and re-encoded by \
         kwire: the bytes must be identical. `–` means no value is built for that cell.\n",
        super::forward::SEEDS
    );
    let _ = writeln!(md, "## Summary\n");
    let _ = writeln!(md, "| direction | agree | differ (explained) | kwire only | kafka-protocol only |");
    let _ = writeln!(md, "| --- | ---: | ---: | ---: | ---: |");
    let _ = writeln!(md, "| (a) kwire → kafka-protocol | {fa} | {fd} | {fw} | {fp} |");
    let _ = writeln!(md, "| (b) kafka-protocol → kwire | {ra} | {rd} | | |\n");
    let _ = writeln!(md, "Counts are (message, version) pairs; a request and its response count separately.\n");

    // Api bodies: one line per (key, version), request and response side by side.
    let index =
        |rows: &[Row]| -> BTreeMap<(Kind, String, i16), Row> { rows.iter().map(|r| ((r.kind.clone(), r.message.clone(), r.version), r.clone())).collect() };
    let (fwd, rev) = (index(forward), index(reverse));
    let mut apis: BTreeMap<(i16, i16), (String, Option<String>, Option<String>)> = BTreeMap::new();
    for r in forward {
        if let Kind::Api { key, request } = r.kind {
            let api = r.message.trim_end_matches("Request").trim_end_matches("Response").to_string();
            let e = apis.entry((key, r.version)).or_insert((api, None, None));
            if request {
                e.1 = Some(r.message.clone())
            } else {
                e.2 = Some(r.message.clone())
            }
        }
    }
    let _ = writeln!(md, "## Api bodies\n");
    let _ = writeln!(md, "| key | api | version | request (a) | response (a) | request (b) | response (b) |");
    let _ = writeln!(md, "| ---: | --- | ---: | --- | --- | --- | --- |");
    for ((key, version), (api, req, resp)) in &apis {
        let mut cells = Vec::new();
        for (map, dir) in [(&fwd, Direction::Forward), (&rev, Direction::Reverse)] {
            for (name, request) in [(req, true), (resp, false)] {
                let row = name.as_ref().and_then(|n| map.get(&(Kind::Api { key: *key, request }, n.clone(), *version)));
                cells.push(cell(row, dir, ranges, &mut used, &mut unexplained));
            }
        }
        let _ = writeln!(md, "| {key} | {api} | {version} | {} |", cells.join(" | "));
    }

    let _ = writeln!(md, "\n## Other message types\n");
    let _ = writeln!(md, "| message | version | (a) | (b) |");
    let _ = writeln!(md, "| --- | ---: | --- | --- |");
    for r in forward.iter().filter(|r| r.kind == Kind::Other) {
        let a = cell(Some(r), Direction::Forward, ranges, &mut used, &mut unexplained);
        let b = cell(rev.get(&(Kind::Other, r.message.clone(), r.version)), Direction::Reverse, ranges, &mut used, &mut unexplained);
        let _ = writeln!(md, "| {} | {} | {a} | {b} |", r.message, r.version);
    }

    let _ = writeln!(md, "\n## Known to one crate only\n");
    for (code, why) in ONLY_REASONS {
        let _ = writeln!(md, "- **{code}**: {}", why.split_whitespace().collect::<Vec<_>>().join(" "));
    }
    let unknown_reasons: Vec<String> = forward
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::OnlyKwire { .. } | Outcome::OnlyKafkaProtocol { .. }))
        .filter(|r| only_reason(r, ranges) == "O?")
        .map(|r| format!("{} v{}", r.message, r.version))
        .collect();

    let _ = writeln!(md, "\n## Explained disagreements\n");
    if applying().next().is_none() {
        let _ = writeln!(md, "None.");
    }
    for e in applying() {
        let _ = writeln!(md, "### {}: {} ({:?}, v{}-v{})\n", e.id, e.messages.join(", "), e.direction, e.versions.0, e.versions.1);
        let _ = writeln!(md, "Deviates from Kafka's Java code: **{}**.\n", e.deviates);
        let _ = writeln!(md, "{}\n", e.explanation.split_whitespace().collect::<Vec<_>>().join(" "));
        if let Some(evidence) = used.get(e.id) {
            let _ = writeln!(md, "Observed ({} cells), first:\n\n```text\n{}\n```\n", evidence.len(), evidence[0].trim_end());
        }
    }
    let unused_exceptions = applying().map(|e| e.id).filter(|id| !used.contains_key(id)).collect();
    Rendered { markdown: md, unexplained, unused_exceptions, unknown_reasons }
}
