//! Targeted checks behind the matrix's explanations: unknown tagged fields survive both ways,
//! and the E1 disagreement disappears when the `Version` field holds the schema version.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages as kp;
use kafka_protocol::protocol::{Decodable, Encodable};
use kwire::messages::{api_versions_response::ApiVersion, ApiVersionsResponse, LeaderChangeMessage, VotersRecord};
use kwire::runtime::sample::{Sample, SampleRng};
use kwire::{Decode, Message, UnknownTaggedFields};

fn kp_encode<T: Encodable>(value: &T, version: i16) -> Bytes {
    let mut out = BytesMut::new();
    value.encode(&mut out, version).expect("kafka-protocol encodes");
    out.freeze()
}

fn unknown(fields: &[(u32, &'static [u8])]) -> UnknownTaggedFields {
    let mut u = UnknownTaggedFields::default();
    for &(tag, data) in fields {
        u.push(tag, Bytes::from_static(data));
    }
    u
}

/// kwire's unknown tags (top level and nested, above the known tags 0-3) are kept by
/// kafka-protocol as the same (tag, bytes) pairs and written back at the same place.
#[test]
fn unknown_tagged_fields_are_kept_by_kafka_protocol() {
    let version = 3;
    let value = ApiVersionsResponse {
        error_code: 35,
        api_keys: vec![ApiVersion { api_key: 18, min_version: 0, max_version: 4, unknown_tagged_fields: unknown(&[(7, b"\x2a")]) }],
        zk_migration_ready: true, // known tag 3, written before the unknown ones
        unknown_tagged_fields: unknown(&[(4, b""), (250, b"\x01\x02\x03")]),
        ..Default::default()
    };
    let ours = value.to_bytes(version).expect("kwire encodes");
    let decoded = kp::ApiVersionsResponse::decode(&mut ours.clone(), version).expect("kafka-protocol decodes");
    let top: Vec<(i32, &[u8])> = decoded.unknown_tagged_fields.iter().map(|(k, v)| (*k, v.as_ref())).collect();
    assert_eq!(top, vec![(4, &b""[..]), (250, &b"\x01\x02\x03"[..])]);
    let nested: Vec<(i32, &[u8])> = decoded.api_keys[0].unknown_tagged_fields.iter().map(|(k, v)| (*k, v.as_ref())).collect();
    assert_eq!(nested, vec![(7, &b"\x2a"[..])]);
    assert!(decoded.zk_migration_ready);
    assert_eq!(kp_encode(&decoded, version), ours);
}

/// kafka-protocol's unknown tags (a `BTreeMap`, so inserted in any order but written in tag
/// order) decode in kwire as the same fields in tag order and re-encode identically.
#[test]
fn unknown_tagged_fields_from_kafka_protocol_are_kept_by_kwire() {
    let version = 4;
    let mut value = kp::ApiVersionsResponse::default();
    value.error_code = 35;
    value.unknown_tagged_fields.insert(300, Bytes::from_static(b"late"));
    value.unknown_tagged_fields.insert(5, Bytes::from_static(b"\x00"));
    let theirs = kp_encode(&value, version);
    let decoded = ApiVersionsResponse::decode(&mut theirs.clone(), version).expect("kwire decodes");
    assert_eq!(decoded.unknown_tagged_fields, unknown(&[(5, b"\x00"), (300, b"late")]));
    assert_eq!(decoded.to_bytes(version).expect("kwire encodes"), theirs);
}

/// E1: with `Version` equal to the version the record is written at (as Kafka's
/// `ControlRecordUtils` writes it), kafka-protocol decodes kwire's bytes and writes
/// them back identically; only the shadowing of the version by the field makes them differ.
#[test]
fn version_field_equal_to_schema_version_agrees() {
    for seed in 0..8 {
        for version in LeaderChangeMessage::VERSIONS.iter() {
            let mut value = LeaderChangeMessage::sample(version, &mut SampleRng::new(seed));
            value.version = version;
            let ours = value.to_bytes(version).expect("kwire encodes");
            let decoded = kp::LeaderChangeMessage::decode(&mut ours.clone(), version).expect("kafka-protocol decodes");
            assert_eq!(kp_encode(&decoded, version), ours, "LeaderChangeMessage v{version} seed {seed}");
        }
        let mut value = VotersRecord::sample(0, &mut SampleRng::new(seed));
        value.version = 0;
        let ours = value.to_bytes(0).expect("kwire encodes");
        let decoded = kp::VotersRecord::decode(&mut ours.clone(), 0).expect("kafka-protocol decodes");
        assert_eq!(kp_encode(&decoded, 0), ours, "VotersRecord v0 seed {seed}");
    }
}
