//! Direction (a): kwire's schema-driven samples, encoded by kwire, decoded and
//! re-encoded by kafka-protocol. Visits every generated message type, so nothing is skipped
//! silently: every version of every message ends up in the matrix with an outcome.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages as kp;
use kafka_protocol::protocol::{Decodable, Encodable, Message as KpMessage, Request};
use kwire::runtime::sample::{MessageVisitor, Sample, SampleRng};
use kwire::Message;

use super::matrix::{Kind, Outcome, Row};

/// Seeds per (message, version): each gives different lengths, values and unknown tags.
pub const SEEDS: std::ops::Range<u64> = 0..8;

/// kafka-protocol's codec for one message type at one version: decode all of `bytes` and
/// encode the value again. `Err` carries which step failed.
type KpRoundTrip = fn(Bytes, i16) -> Result<Bytes, String>;

/// Where a kwire message type lives in kafka-protocol, and which versions it knows.
struct KpSide {
    kind: Kind,
    versions: Option<(i16, i16)>,
    round_trip: Option<KpRoundTrip>,
}

/// Collects one row per (message, version) known to either crate.
#[derive(Default)]
pub struct Forward {
    pub rows: Vec<Row>,
    /// Names kwire visited, to list what kafka-protocol has and kwire lacks.
    pub visited: Vec<&'static str>,
    /// Per message: kwire's versions and kafka-protocol's (if it has the type).
    pub ranges: std::collections::BTreeMap<String, ((i16, i16), Option<(i16, i16)>)>,
}

impl MessageVisitor for Forward {
    fn visit<M: Message + Sample>(&mut self) {
        self.visited.push(M::NAME);
        let kp = kp_side(M::NAME);
        let ours = (M::VERSIONS.lo, M::VERSIONS.hi);
        self.ranges.insert(M::NAME.to_string(), (ours, kp.versions));
        let (lo, hi) = match kp.versions {
            Some((a, b)) => (ours.0.min(a), ours.1.max(b)),
            None => ours,
        };
        for version in lo..=hi {
            let in_ours = M::VERSIONS.contains(version);
            let in_kp = kp.versions.is_some_and(|(a, b)| (a..=b).contains(&version));
            let outcome = match (in_ours, in_kp, kp.round_trip) {
                (true, true, Some(rt)) => compare::<M>(version, rt),
                (true, false, _) if kp.versions.is_none() => Outcome::OnlyKwire { whole_message: true },
                (true, false, _) => Outcome::OnlyKwire { whole_message: false },
                (false, true, _) => Outcome::OnlyKafkaProtocol { whole_message: false },
                _ => continue,
            };
            self.rows.push(Row { kind: kp.kind.clone(), message: M::NAME.to_string(), version, outcome });
        }
    }
}

/// Runs every seed; the first disagreement decides the outcome (and is kept as evidence).
fn compare<M: Message + Sample>(version: i16, kp_round_trip: KpRoundTrip) -> Outcome {
    for seed in SEEDS {
        let value = M::sample(version, &mut SampleRng::new(seed));
        let ours = match value.to_bytes(version) {
            Ok(b) => b,
            Err(e) => return Outcome::Differs { detail: format!("seed {seed}: kwire encode failed: {e}") },
        };
        match kp_round_trip(ours.clone(), version) {
            Ok(theirs) if theirs == ours => {}
            Ok(theirs) => return Outcome::Differs { detail: format!("seed {seed}: {}", first_difference(&ours, &theirs, ("kwire", "kafka-protocol"))) },
            Err(e) => return Outcome::Differs { detail: format!("seed {seed}: {e}") },
        }
    }
    Outcome::Agrees { seeds: SEEDS.count() }
}

/// Where two encodings first differ, with a little context in hex.
pub fn first_difference(expected: &[u8], actual: &[u8], names: (&str, &str)) -> String {
    let at = expected.iter().zip(actual).position(|(a, b)| a != b).unwrap_or(expected.len().min(actual.len()));
    let window = |b: &[u8]| hex::encode(&b[at.saturating_sub(4).min(b.len())..(at + 8).min(b.len())]);
    format!(
        "bytes differ at offset {at} ({} vs {} bytes): {} ..{}.. {} ..{}..",
        expected.len(),
        actual.len(),
        names.0,
        window(expected),
        names.1,
        window(actual)
    )
}

/// Decodes all of `bytes` as `T` at `version` and encodes it again, checking that
/// `compute_size` matches what `encode` wrote.
fn kp_round_trip<T: Decodable + Encodable>(mut bytes: Bytes, version: i16) -> Result<Bytes, String> {
    let value = T::decode(&mut bytes, version).map_err(|e| format!("kafka-protocol decode failed: {e:#}"))?;
    if !bytes.is_empty() {
        return Err(format!("kafka-protocol decode left {} bytes unread", bytes.len()));
    }
    kp_encode(&value, version)
}

pub fn kp_encode<T: Encodable>(value: &T, version: i16) -> Result<Bytes, String> {
    let mut out = BytesMut::new();
    value.encode(&mut out, version).map_err(|e| format!("kafka-protocol encode failed: {e:#}"))?;
    let size = value.compute_size(version).map_err(|e| format!("kafka-protocol compute_size failed: {e:#}"))?;
    if size != out.len() {
        return Err(format!("kafka-protocol compute_size {size} but encode wrote {}", out.len()));
    }
    Ok(out.freeze())
}

fn kp_request<const KEY: i16>(mut bytes: Bytes, version: i16) -> Result<Bytes, String> {
    let key = kp::ApiKey::try_from(KEY).map_err(|()| format!("kafka-protocol has no api key {KEY}"))?;
    let value = kp::RequestKind::decode(key, &mut bytes, version).map_err(|e| format!("kafka-protocol decode failed: {e:#}"))?;
    if !bytes.is_empty() {
        return Err(format!("kafka-protocol decode left {} bytes unread", bytes.len()));
    }
    let mut out = BytesMut::new();
    value.encode(&mut out, version).map_err(|e| format!("kafka-protocol encode failed: {e:#}"))?;
    Ok(out.freeze())
}

fn kp_response<const KEY: i16>(mut bytes: Bytes, version: i16) -> Result<Bytes, String> {
    let key = kp::ApiKey::try_from(KEY).map_err(|()| format!("kafka-protocol has no api key {KEY}"))?;
    let value = kp::ResponseKind::decode(key, &mut bytes, version).map_err(|e| format!("kafka-protocol decode failed: {e:#}"))?;
    if !bytes.is_empty() {
        return Err(format!("kafka-protocol decode left {} bytes unread", bytes.len()));
    }
    let mut out = BytesMut::new();
    value.encode(&mut out, version).map_err(|e| format!("kafka-protocol encode failed: {e:#}"))?;
    Ok(out.freeze())
}

/// Dispatches a runtime api key to the const-generic round trips above (one instance per key
/// kafka-protocol knows, so the `RequestKind`/`ResponseKind` enums do the per-key work).
macro_rules! by_key {
    ($f:ident, $key:expr, [$($k:literal)*]) => {
        match $key { $($k => Some($f::<$k> as KpRoundTrip),)* _ => None }
    };
}

fn kp_api_round_trip(key: i16, request: bool) -> Option<KpRoundTrip> {
    kp::ApiKey::try_from(key).ok()?;
    if request {
        by_key!(kp_request, key, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99])
    } else {
        by_key!(kp_response, key, [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99])
    }
}

/// The top-level message types that are not api bodies (headers, consumer protocol, KRaft
/// control records), by the name both crates give them.
macro_rules! non_api {
    ($name:expr, [$($t:ident)*]) => {
        match $name {
            $(stringify!($t) => Some((
                (<kp::$t as KpMessage>::VERSIONS.min, <kp::$t as KpMessage>::VERSIONS.max),
                kp_round_trip::<kp::$t> as KpRoundTrip,
            )),)*
            _ => None,
        }
    };
}

/// Non-api message types kafka-protocol has; the matrix lists those kwire lacks.
pub const KP_NON_API: &[&str] = &[
    "RequestHeader",
    "ResponseHeader",
    "ConsumerProtocolAssignment",
    "ConsumerProtocolSubscription",
    "DefaultPrincipalData",
    "EndTxnMarker",
    "KRaftVersionRecord",
    "LeaderChangeMessage",
    "SnapshotFooterRecord",
    "SnapshotHeaderRecord",
    "VotersRecord",
];

fn kp_non_api(name: &str) -> Option<((i16, i16), KpRoundTrip)> {
    non_api!(name, [
        RequestHeader ResponseHeader ConsumerProtocolAssignment ConsumerProtocolSubscription
        DefaultPrincipalData EndTxnMarker KRaftVersionRecord LeaderChangeMessage
        SnapshotFooterRecord SnapshotHeaderRecord VotersRecord
    ])
}

/// The versions kafka-protocol's request or response type for `key` implements.
/// `kp::ApiKey::valid_versions` is not enough: it is the union of both sides, and
/// kafka-protocol leaves a spec's `latestVersionUnstable` version out of the request type only
/// (InitProducerId: `valid_versions` 0-6, `InitProducerIdRequest` 0-5, response 0-6).
pub fn kp_versions(key: i16, request: bool) -> Option<(i16, i16)> {
    macro_rules! table {
        ($($t:ident)*) => {
            match key {
                $(k if k == <kp::$t as Request>::KEY => {
                    let r = if request {
                        <kp::$t as KpMessage>::VERSIONS
                    } else {
                        <<kp::$t as Request>::Response as KpMessage>::VERSIONS
                    };
                    Some((r.min, r.max))
                })*
                _ => None,
            }
        };
    }
    table!(
        ProduceRequest FetchRequest ListOffsetsRequest MetadataRequest OffsetCommitRequest OffsetFetchRequest
        FindCoordinatorRequest JoinGroupRequest HeartbeatRequest LeaveGroupRequest SyncGroupRequest
        DescribeGroupsRequest ListGroupsRequest SaslHandshakeRequest ApiVersionsRequest CreateTopicsRequest
        DeleteTopicsRequest DeleteRecordsRequest InitProducerIdRequest OffsetForLeaderEpochRequest
        AddPartitionsToTxnRequest AddOffsetsToTxnRequest EndTxnRequest WriteTxnMarkersRequest TxnOffsetCommitRequest
        DescribeAclsRequest CreateAclsRequest DeleteAclsRequest DescribeConfigsRequest AlterConfigsRequest
        AlterReplicaLogDirsRequest DescribeLogDirsRequest SaslAuthenticateRequest CreatePartitionsRequest
        CreateDelegationTokenRequest RenewDelegationTokenRequest ExpireDelegationTokenRequest
        DescribeDelegationTokenRequest DeleteGroupsRequest ElectLeadersRequest IncrementalAlterConfigsRequest
        AlterPartitionReassignmentsRequest ListPartitionReassignmentsRequest OffsetDeleteRequest
        DescribeClientQuotasRequest AlterClientQuotasRequest DescribeUserScramCredentialsRequest
        AlterUserScramCredentialsRequest VoteRequest BeginQuorumEpochRequest EndQuorumEpochRequest
        DescribeQuorumRequest AlterPartitionRequest UpdateFeaturesRequest EnvelopeRequest FetchSnapshotRequest
        DescribeClusterRequest DescribeProducersRequest BrokerRegistrationRequest BrokerHeartbeatRequest
        UnregisterBrokerRequest DescribeTransactionsRequest ListTransactionsRequest AllocateProducerIdsRequest
        ConsumerGroupHeartbeatRequest ConsumerGroupDescribeRequest ControllerRegistrationRequest
        GetTelemetrySubscriptionsRequest PushTelemetryRequest AssignReplicasToDirsRequest ListConfigResourcesRequest
        DescribeTopicPartitionsRequest ShareGroupHeartbeatRequest ShareGroupDescribeRequest ShareFetchRequest
        ShareAcknowledgeRequest AddRaftVoterRequest RemoveRaftVoterRequest UpdateRaftVoterRequest
        InitializeShareGroupStateRequest ReadShareGroupStateRequest WriteShareGroupStateRequest
        DeleteShareGroupStateRequest ReadShareGroupStateSummaryRequest DescribeShareGroupOffsetsRequest
        AlterShareGroupOffsetsRequest DeleteShareGroupOffsetsRequest
    )
}

fn kp_side(name: &'static str) -> KpSide {
    for (suffix, request) in [("Request", true), ("Response", false)] {
        let Some(api) = name.strip_suffix(suffix) else { continue };
        let Some(key) = kwire::ApiKey::ALL.iter().find(|k| k.name() == api) else { continue };
        let kind = Kind::Api { key: key.key(), request };
        return KpSide { kind, versions: kp_versions(key.key(), request), round_trip: kp_api_round_trip(key.key(), request) };
    }
    match kp_non_api(name) {
        Some((versions, rt)) => KpSide { kind: Kind::Other, versions: Some(versions), round_trip: Some(rt) },
        None => KpSide { kind: Kind::Other, versions: None, round_trip: None },
    }
}
