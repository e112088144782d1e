//! Every disagreement between kwire and kafka-protocol, with which side deviates from
//! Kafka's Java code and the evidence. The matrix test fails on a disagreement not listed
//! here and on an entry that no longer matches any disagreement.

/// Which way the bytes went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// (a) kwire encodes, kafka-protocol decodes and re-encodes.
    Forward,
    /// (b) kafka-protocol encodes, kwire decodes and re-encodes.
    Reverse,
}

/// One explained disagreement.
pub struct Exception {
    pub id: &'static str,
    pub messages: &'static [&'static str],
    /// Inclusive version range.
    pub versions: (i16, i16),
    pub direction: Direction,
    /// `kwire` or `kafka-protocol`.
    pub deviates: &'static str,
    pub explanation: &'static str,
    /// The spec sets (the newest release of the build) it holds for; empty: every one.
    pub newest_release: &'static [&'static str],
}

impl Exception {
    /// Whether it can hold for this build: its newest release defines the versions named.
    pub fn applies(&self) -> bool {
        let newest = std::env::split_paths(kwire::SPEC_DIR).last();
        let newest = newest.as_deref().and_then(|p| p.file_name()).and_then(|n| n.to_str()).unwrap_or("");
        self.newest_release.is_empty() || self.newest_release.contains(&newest)
    }
}

/// The exceptions that can hold for this build.
pub fn applying() -> impl Iterator<Item = &'static Exception> {
    EXCEPTIONS.iter().filter(|e| e.applies())
}

pub const EXCEPTIONS: &[Exception] = &[
    Exception {
        id: "E1",
        messages: &["LeaderChangeMessage", "VotersRecord"],
        versions: (0, 1),
        direction: Direction::Forward,
        deviates: "kafka-protocol",
        explanation: "Both specs (LeaderChangeMessage.json, VotersRecord.json) have a top-level int16 field \
            `Version`. kafka-protocol's generated `Decodable::decode` binds the decoded field as `let version = \
            types::Int16.decode(buf)?`, shadowing the `version` argument, and then decodes the nested `Voters` / \
            `GrantingVoters` / `Endpoints` / `KRaftVersionFeature` structs at that field's value \
            (leader_change_message.rs, voters_record.rs in kafka-protocol 0.18.0). Kafka's Java generator names the \
            parameter `_version` so a field called `version` cannot shadow it (the generated `read(Readable \
            _readable, short _version)` assigns `this.version = _readable.readShort()` and keeps branching on \
            `_version`). With the sample's random non-default `Version`, kafka-protocol rejects the nested struct \
            (\"specified version not supported\"). `version_field_equal_to_schema_version_agrees` shows the two \
            crates agree byte for byte when the field equals the schema version, as Kafka writes it.",
        newest_release: &[],
    },
    Exception {
        id: "E2",
        messages: &["ReadShareGroupStateSummaryResponse"],
        versions: (0, 0),
        direction: Direction::Forward,
        deviates: "neither (the spec changed)",
        explanation: "ReadShareGroupStateSummary v0 was still in development in Kafka 3.9.0 (the request spec \
            sets `latestVersionUnstable: true`; share groups are KIP-932, early access only in 4.0). The 3.9.0 \
            (and trunk-2025-02-14) ReadShareGroupStateSummaryResponse.json has Results[].Partitions[] = Partition, \
            ErrorCode, ErrorMessage, StateEpoch, StartOffset; the Kafka 4.1.0 spec kafka-protocol is generated \
            from inserts `LeaderEpoch` (int32, 0+) before StartOffset without a new version. Each crate encodes \
            its own spec exactly; kafka-protocol runs out of bytes reading the extra int32. Unstable versions \
            are not advertised by kwire by default (`ApiKey::stable_versions`). A build merged with a \
            newer release (the default, 3.9.0 + 4.4.0) takes v0 from that release, with `LeaderEpoch`, and agrees.",
        newest_release: &["kafka-3.9.0", "kafka-trunk-2025-02-14"],
    },
];
