//! Golden frames: expected bytes written BY HAND from the Kafka protocol's documented layout
//! (https://kafka.apache.org/protocol) and the Kafka 3.9.0 JSON message specs, field by field.
//!
//! Source of every expected byte string in this file: hand-written from the documented layout.
//! No expected bytes were produced by this crate's encoder (nor copied from its output); no
//! independent implementation was used. Each frame is checked both ways: the value built with
//! the generated types must encode to exactly these bytes, and these bytes must decode to
//! exactly that value (with nothing left over).
//!
//! Layout reminders (see the protocol guide):
//! - classic STRING = int16 length + UTF-8; NULLABLE_STRING length -1 (`ffff`) = null;
//! - classic BYTES / NULLABLE_BYTES / records = int32 length + bytes, -1 = null;
//! - ARRAY = int32 count + elements, -1 (`ffffffff`) = null;
//! - flexible versions: COMPACT_STRING / COMPACT_BYTES = uvarint(len + 1) + bytes, 0 = null;
//!   COMPACT_ARRAY = uvarint(count + 1) + elements, 0 = null; every struct ends with a tagged
//!   field section: uvarint count, then per field uvarint tag, uvarint size, value bytes, in
//!   ascending tag order;
//! - UUID = 16 bytes; BOOLEAN = 1 byte; integers big-endian;
//! - a request frame = int32 size + RequestHeader + body. RequestHeader v0 = api_key,
//!   api_version, correlation_id; v1 adds client_id (classic NULLABLE_STRING); v2 (flexible
//!   requests) adds a tagged section, client_id staying a classic string (its spec field says
//!   `"flexibleVersions": "none"`);
//! - a response frame = int32 size + ResponseHeader + body. ResponseHeader v0 = correlation_id;
//!   v1 (flexible responses) adds a tagged section; ApiVersionsResponse always uses v0.

// Messages gain fields in newer specs: `..Default::default()` keeps these literals building on every spec set.
#![allow(clippy::needless_update)]
// The frames are written against Kafka 3.9.0's specs (the default set); other spec sets
// change field types and drop versions, so this file only builds with 3.9.0.
#![cfg(kafka_specs_with_3_9_0)]

use kwire::messages::{self as m, RequestHeader, ResponseHeader};
use kwire::{smallvec, ApiKey, ByteString, Bytes, Decode, Message, SmallVec, UnknownTaggedFields, Uuid};

// ---------------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------------

/// Hex with whitespace ignored and `#` starting a comment that runs to the end of the line.
fn hex(s: &str) -> Vec<u8> {
    let mut clean = String::new();
    for line in s.lines() {
        let code = line.split('#').next().unwrap_or("");
        clean.extend(code.chars().filter(|c| !c.is_whitespace()));
    }
    hex::decode(&clean).unwrap_or_else(|e| panic!("bad hex in golden frame: {e}: {clean}"))
}

fn s(x: &str) -> ByteString {
    ByteString::from(x)
}

fn b(x: &'static [u8]) -> Bytes {
    Bytes::from_static(x)
}

/// A recognisable topic id: 01 23 45 67 89 ab cd ef fe dc ba 98 76 54 32 10.
const TOPIC_ID: Uuid = Uuid([0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10]);
/// A second one: 00 11 22 .. ff.
const TOPIC_ID_2: Uuid = Uuid([0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff]);

/// A small opaque records blob (raw bytes are enough: records are NULLABLE_BYTES on the wire).
const RECORDS: &[u8] = &[0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a];

fn unknown(fields: &[(u32, &'static [u8])]) -> UnknownTaggedFields {
    let mut u = UnknownTaggedFields::default();
    for (tag, data) in fields {
        u.push(*tag, Bytes::from_static(data));
    }
    u
}

fn diff(what: &str, actual: &[u8], expected: &[u8]) -> String {
    let at = actual.iter().zip(expected).position(|(a, e)| a != e).unwrap_or(actual.len().min(expected.len()));
    format!(
        "{what}: bytes differ at offset {at} (actual len {}, expected len {})\n  actual:   {}\n  expected: {}",
        actual.len(),
        expected.len(),
        hex::encode(actual),
        hex::encode(expected)
    )
}

/// Encodes `value` at `version` and compares with `expected`; decodes `expected` and compares
/// with `value`.
fn check<M: Message>(value: &M, version: i16, expected: &[u8]) {
    let what = format!("{} v{version}", M::NAME);
    let encoded = value.to_bytes(version).unwrap_or_else(|e| panic!("{what}: encode failed: {e}"));
    assert!(encoded[..] == expected[..], "{}", diff(&format!("{what} encode"), &encoded, expected));
    assert_eq!(value.encoded_len(version), expected.len(), "{what}: encoded_len");
    let mut buf = Bytes::copy_from_slice(expected);
    let decoded = M::decode(&mut buf, version).unwrap_or_else(|e| panic!("{what}: decode failed: {e}"));
    assert_eq!(buf.len(), 0, "{what}: decode left {} bytes", buf.len());
    assert_eq!(&decoded, value, "{what}: decoded value differs");
}

fn take_size(what: &str, expected: &[u8]) -> Bytes {
    assert!(expected.len() >= 4, "{what}: frame shorter than its size prefix");
    let size = i32::from_be_bytes(expected[..4].try_into().unwrap());
    assert_eq!(size as usize, expected.len() - 4, "{what}: golden size prefix disagrees with golden frame length");
    Bytes::copy_from_slice(&expected[4..])
}

/// A whole request frame: int32 size + RequestHeader (at `header_version`, which must be the one
/// Kafka uses for this api and version) + body.
fn check_request_frame<M: Message>(api: ApiKey, version: i16, header_version: i16, correlation_id: i32, client_id: Option<&str>, body: &M, expected: &[u8]) {
    let what = format!("request frame {} v{version}", M::NAME);
    assert_eq!(api.request_header_version(version), header_version, "{what}: request header version");
    let header = RequestHeader { request_api_key: api as i16, request_api_version: version, correlation_id, ..Default::default() };
    // RequestHeader v0 has no client_id on the wire; the value then keeps the field's default
    // ("", as in Kafka's own RequestHeaderData), which is what decoding v0 yields.
    let header = if header_version >= 1 {
        RequestHeader { client_id: client_id.map(ByteString::from), ..header }
    } else {
        assert!(client_id.is_none(), "{what}: header v0 cannot carry a client id");
        header
    };
    let h = header.to_bytes(header_version).unwrap_or_else(|e| panic!("{what}: header encode failed: {e}"));
    let bd = body.to_bytes(version).unwrap_or_else(|e| panic!("{what}: body encode failed: {e}"));
    let mut frame = ((h.len() + bd.len()) as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&h);
    frame.extend_from_slice(&bd);
    assert!(frame == expected, "{}", diff(&format!("{what} encode"), &frame, expected));

    let mut buf = take_size(&what, expected);
    let h2 = RequestHeader::decode(&mut buf, header_version).unwrap_or_else(|e| panic!("{what}: header decode: {e}"));
    assert_eq!(h2, header, "{what}: decoded header differs");
    let b2 = M::decode(&mut buf, version).unwrap_or_else(|e| panic!("{what}: body decode: {e}"));
    assert_eq!(buf.len(), 0, "{what}: decode left {} bytes", buf.len());
    assert_eq!(&b2, body, "{what}: decoded body differs");
}

/// A whole response frame: int32 size + ResponseHeader (at `header_version`) + body.
fn check_response_frame<M: Message>(api: ApiKey, version: i16, header_version: i16, correlation_id: i32, body: &M, expected: &[u8]) {
    let what = format!("response frame {} v{version}", M::NAME);
    assert_eq!(api.response_header_version(version), header_version, "{what}: response header version");
    let header = ResponseHeader { correlation_id, ..Default::default() };
    let h = header.to_bytes(header_version).unwrap_or_else(|e| panic!("{what}: header encode failed: {e}"));
    let bd = body.to_bytes(version).unwrap_or_else(|e| panic!("{what}: body encode failed: {e}"));
    let mut frame = ((h.len() + bd.len()) as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&h);
    frame.extend_from_slice(&bd);
    assert!(frame == expected, "{}", diff(&format!("{what} encode"), &frame, expected));

    let mut buf = take_size(&what, expected);
    let h2 = ResponseHeader::decode(&mut buf, header_version).unwrap_or_else(|e| panic!("{what}: header decode: {e}"));
    assert_eq!(h2, header, "{what}: decoded header differs");
    let b2 = M::decode(&mut buf, version).unwrap_or_else(|e| panic!("{what}: body decode: {e}"));
    assert_eq!(buf.len(), 0, "{what}: decode left {} bytes", buf.len());
    assert_eq!(&b2, body, "{what}: decoded body differs");
}

// ---------------------------------------------------------------------------------------------
// headers
// ---------------------------------------------------------------------------------------------

/// RequestHeader v0 (only ControlledShutdown v0 uses it): no client_id. Full frame.
#[test]
fn controlled_shutdown_request_v0_frame_header_v0() {
    let body = m::ControlledShutdownRequest { broker_id: 3, ..Default::default() };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        0000000c            # frame size: 12 bytes follow
        0007                # RequestHeader v0: request_api_key = 7 (ControlledShutdown)
        0000                #   request_api_version = 0
        00000001            #   correlation_id = 1
                            #   (v0 has no client_id)
        00000003            # ControlledShutdownRequest v0: broker_id = 3
        ");
    check_request_frame(ApiKey::ControlledShutdown, 0, 0, 1, None, &body, &expected);
}

/// RequestHeader v2 with unknown tagged fields: must survive decode -> encode byte for byte.
#[test]
fn request_header_v2_unknown_tagged_fields_round_trip() {
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        0003                # request_api_key = 3 (Metadata)
        000c                # request_api_version = 12
        0000002a            # correlation_id = 42
        0003 636c69         # client_id: classic NULLABLE_STRING (int16 len 3) \"cli\"
        02                  # tagged fields: uvarint count 2
        03 02 abcd          #   tag 3 (unknown), size 2, bytes ab cd
        0a 01 ff            #   tag 10 (unknown), size 1, byte ff
        ");
    let header = RequestHeader {
        request_api_key: 3,
        request_api_version: 12,
        correlation_id: 42,
        client_id: Some(s("cli")),
        unknown_tagged_fields: unknown(&[(3, &[0xab, 0xcd]), (10, &[0xff])]),
    };
    check(&header, 2, &expected);
    // And straight bytes -> value -> bytes, without building the value by hand.
    let decoded = RequestHeader::decode(&mut Bytes::from(expected.clone()), 2).unwrap();
    assert_eq!(&decoded.to_bytes(2).unwrap()[..], &expected[..]);
}

/// RequestHeader v1 with a null client id.
#[test]
fn request_header_v1_null_client_id() {
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        0001                # request_api_key = 1 (Fetch)
        0004                # request_api_version = 4
        7fffffff            # correlation_id = i32::MAX
        ffff                # client_id: NULLABLE_STRING null (length -1)
        ");
    let header = RequestHeader { request_api_key: 1, request_api_version: 4, correlation_id: i32::MAX, client_id: None, ..Default::default() };
    check(&header, 1, &expected);
}

/// ResponseHeader v1 with an unknown tagged field.
#[test]
fn response_header_v1_unknown_tagged_field_round_trip() {
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        0000002a            # correlation_id = 42
        01                  # tagged fields: count 1
        00 03 010203        #   tag 0 (unknown in ResponseHeader), size 3
        ");
    let header = ResponseHeader { correlation_id: 42, unknown_tagged_fields: unknown(&[(0, &[1, 2, 3])]) };
    check(&header, 1, &expected);
    let decoded = ResponseHeader::decode(&mut Bytes::from(expected.clone()), 1).unwrap();
    assert_eq!(&decoded.to_bytes(1).unwrap()[..], &expected[..]);
}

// ---------------------------------------------------------------------------------------------
// ApiVersions (key 18): flexible 3+; the response header is always v0
// ---------------------------------------------------------------------------------------------

#[test]
fn api_versions_request_v0_frame() {
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        0000000d            # frame size 13
        0012                # RequestHeader v1: request_api_key = 18
        0000                #   request_api_version = 0
        00000001            #   correlation_id = 1
        0003 636c69         #   client_id \"cli\"
                            # ApiVersionsRequest v0 has no fields
        ");
    check_request_frame(ApiKey::ApiVersions, 0, 1, 1, Some("cli"), &m::ApiVersionsRequest::default(), &expected);
}

#[test]
fn api_versions_request_v3_frame() {
    let body = m::ApiVersionsRequest { client_software_name: s("kw"), client_software_version: s("0.1"), ..Default::default() };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        00000016            # frame size 22
        0012                # RequestHeader v2: request_api_key = 18
        0003                #   request_api_version = 3
        00000002            #   correlation_id = 2
        0003 636c69         #   client_id: classic NULLABLE_STRING even in header v2
        00                  #   header tagged fields: 0
        03 6b77             # client_software_name: COMPACT_STRING uvarint(2+1) \"kw\"
        04 302e31           # client_software_version: COMPACT_STRING uvarint(3+1) \"0.1\"
        00                  # tagged fields: 0
        ");
    check_request_frame(ApiKey::ApiVersions, 3, 2, 2, Some("cli"), &body, &expected);
}

#[test]
fn api_versions_response_v0_frame() {
    let body = m::ApiVersionsResponse {
        error_code: 0,
        api_keys: vec![
            m::api_versions_response::ApiVersion { api_key: 18, min_version: 0, max_version: 3, ..Default::default() },
            m::api_versions_response::ApiVersion { api_key: 3, min_version: 0, max_version: 12, ..Default::default() },
        ],
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        00000016            # frame size 22
        00000001            # ResponseHeader v0: correlation_id = 1
        0000                # error_code = 0
        00000002            # api_keys: ARRAY int32 count 2
        0012 0000 0003      #   api_key 18, min_version 0, max_version 3
        0003 0000 000c      #   api_key 3, min_version 0, max_version 12
                            # (throttle_time_ms is v1+)
        ");
    check_response_frame(ApiKey::ApiVersions, 0, 0, 1, &body, &expected);
}

#[test]
fn api_versions_response_v3_frame_all_tagged_fields() {
    use m::api_versions_response::{ApiVersion, FinalizedFeatureKey, SupportedFeatureKey};
    let body = m::ApiVersionsResponse {
        error_code: 0,
        api_keys: vec![
            ApiVersion { api_key: 18, min_version: 0, max_version: 4, ..Default::default() },
            ApiVersion { api_key: 3, min_version: 0, max_version: 12, ..Default::default() },
        ],
        throttle_time_ms: 0,
        supported_features: vec![SupportedFeatureKey { name: s("metadata.version"), min_version: 1, max_version: 20, ..Default::default() }],
        finalized_features_epoch: 7,
        finalized_features: vec![FinalizedFeatureKey { name: s("metadata.version"), max_version_level: 21, min_version_level: 1, ..Default::default() }],
        zk_migration_ready: true,
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        00000059            # frame size 89
        00000002            # ResponseHeader v0 (always v0 for ApiVersions): correlation_id = 2
        0000                # error_code = 0
        03                  # api_keys: COMPACT_ARRAY uvarint(2+1)
        0012 0000 0004 00   #   api_key 18, min 0, max 4, tagged fields 0
        0003 0000 000c 00   #   api_key 3, min 0, max 12, tagged fields 0
        00000000            # throttle_time_ms = 0
        04                  # tagged fields: count 4
        00 17               #   tag 0 SupportedFeatures, size 23
        02                  #     COMPACT_ARRAY count 1
        11 6d657461646174612e76657273696f6e  # name COMPACT_STRING \"metadata.version\" (16)
        0001 0014 00        #     min_version 1, max_version 20, tagged fields 0
        01 08               #   tag 1 FinalizedFeaturesEpoch, size 8
        0000000000000007    #     int64 7
        02 17               #   tag 2 FinalizedFeatures, size 23
        02                  #     COMPACT_ARRAY count 1
        11 6d657461646174612e76657273696f6e  # name \"metadata.version\"
        0015 0001 00        #     max_version_level 21, min_version_level 1 (that order), tagged 0
        03 01 01            #   tag 3 ZkMigrationReady, size 1, true
        ");
    check_response_frame(ApiKey::ApiVersions, 3, 0, 2, &body, &expected);
}

// ---------------------------------------------------------------------------------------------
// Metadata (key 3): flexible 9+
// ---------------------------------------------------------------------------------------------

fn md_topic(name: &str) -> m::metadata_request::MetadataRequestTopic {
    m::metadata_request::MetadataRequestTopic { name: Some(s(name)), ..Default::default() }
}

#[test]
fn metadata_request_v0() {
    let value = m::MetadataRequest { topics: Some(vec![md_topic("orders")]), ..Default::default() };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        00000001            # topics: ARRAY count 1
        0006 6f7264657273   #   name STRING \"orders\"
        ");
    check(&value, 0, &expected);
}

#[test]
fn metadata_request_v1_null_topics() {
    let value = m::MetadataRequest { topics: None, ..Default::default() };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        ffffffff            # topics: null ARRAY (count -1) = all topics (nullable from v1)
        ");
    check(&value, 1, &expected);
}

#[test]
fn metadata_request_v4() {
    let value = m::MetadataRequest { topics: Some(vec![md_topic("orders")]), allow_auto_topic_creation: false, ..Default::default() };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        00000001            # topics: ARRAY count 1
        0006 6f7264657273   #   name \"orders\"
        00                  # allow_auto_topic_creation = false (v4+)
        ");
    check(&value, 4, &expected);
}

#[test]
fn metadata_request_v9_frame() {
    let body = m::MetadataRequest {
        topics: Some(vec![md_topic("orders")]),
        allow_auto_topic_creation: true,
        include_cluster_authorized_operations: false,
        include_topic_authorized_operations: true,
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        00000018            # frame size 24
        0003 0009           # RequestHeader v2: api_key 3, api_version 9
        00000007            #   correlation_id 7
        ffff                #   client_id null (classic NULLABLE_STRING)
        00                  #   tagged fields 0
        02                  # topics: COMPACT_ARRAY count 1
        07 6f7264657273     #   name COMPACT_STRING \"orders\"
        00                  #   tagged fields 0
        01                  # allow_auto_topic_creation = true
        00                  # include_cluster_authorized_operations = false (v8-10)
        01                  # include_topic_authorized_operations = true
        00                  # tagged fields 0
        ");
    check_request_frame(ApiKey::Metadata, 9, 2, 7, None, &body, &expected);
}

#[test]
fn metadata_request_v10_topic_ids() {
    use m::metadata_request::MetadataRequestTopic;
    let value = m::MetadataRequest {
        topics: Some(vec![
            MetadataRequestTopic { topic_id: TOPIC_ID, name: None, ..Default::default() },
            MetadataRequestTopic { topic_id: Uuid([0; 16]), name: Some(s("orders")), ..Default::default() },
        ]),
        allow_auto_topic_creation: true,
        include_cluster_authorized_operations: false,
        include_topic_authorized_operations: false,
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        03                                  # topics: COMPACT_ARRAY count 2
        0123456789abcdeffedcba9876543210    #   topic_id UUID (v10+)
        00                                  #   name COMPACT_NULLABLE_STRING null (nullable v10+)
        00                                  #   tagged fields 0
        00000000000000000000000000000000    #   topic_id zero UUID
        07 6f7264657273                     #   name \"orders\"
        00                                  #   tagged fields 0
        01                                  # allow_auto_topic_creation = true
        00                                  # include_cluster_authorized_operations = false
        00                                  # include_topic_authorized_operations = false
        00                                  # tagged fields 0
        ");
    check(&value, 10, &expected);
}

#[test]
fn metadata_request_v12_topic_id_with_unknown_tag() {
    use m::metadata_request::MetadataRequestTopic;
    let value = m::MetadataRequest {
        topics: Some(vec![MetadataRequestTopic { topic_id: TOPIC_ID, name: None, unknown_tagged_fields: unknown(&[(5, &[0x2a])]) }]),
        allow_auto_topic_creation: false,
        include_topic_authorized_operations: true,
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        02                                  # topics: COMPACT_ARRAY count 1
        0123456789abcdeffedcba9876543210    #   topic_id
        00                                  #   name null
        01 05 01 2a                         #   tagged fields: 1; tag 5 (unknown), size 1, 2a
        00                                  # allow_auto_topic_creation = false
                                            # (include_cluster_authorized_operations is v8-10 only)
        01                                  # include_topic_authorized_operations = true
        00                                  # tagged fields 0
        ");
    check(&value, 12, &expected);
}

#[test]
fn metadata_response_v0() {
    use m::metadata_response::{MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic};
    let value = m::MetadataResponse {
        brokers: vec![MetadataResponseBroker { node_id: 1, host: s("b1"), port: 9092, ..Default::default() }],
        topics: vec![MetadataResponseTopic {
            error_code: 0,
            name: Some(s("orders")),
            partitions: vec![MetadataResponsePartition {
                error_code: 0,
                partition_index: 0,
                leader_id: 1,
                replica_nodes: smallvec![1],
                isr_nodes: smallvec![1],
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        00000001            # brokers: ARRAY count 1
        00000001            #   node_id 1
        0002 6231           #   host \"b1\"
        00002384            #   port 9092
                            # (rack v1+, cluster_id v2+, controller_id v1+)
        00000001            # topics: ARRAY count 1
        0000                #   error_code 0
        0006 6f7264657273   #   name \"orders\"
        00000001            #   partitions: ARRAY count 1
        0000                #     error_code 0
        00000000            #     partition_index 0
        00000001            #     leader_id 1
        00000001 00000001   #     replica_nodes [1]
        00000001 00000001   #     isr_nodes [1]
        ");
    check(&value, 0, &expected);
}

#[test]
fn metadata_response_v12_frame() {
    use m::metadata_response::{MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic};
    let body = m::MetadataResponse {
        throttle_time_ms: 0,
        brokers: vec![MetadataResponseBroker { node_id: 1, host: s("b1"), port: 9092, rack: None, ..Default::default() }],
        cluster_id: Some(s("c1")),
        controller_id: 1,
        topics: vec![MetadataResponseTopic {
            error_code: 0,
            name: Some(s("orders")),
            topic_id: TOPIC_ID,
            is_internal: false,
            partitions: vec![MetadataResponsePartition {
                error_code: 0,
                partition_index: 0,
                leader_id: 1,
                leader_epoch: 5,
                replica_nodes: smallvec![1],
                isr_nodes: smallvec![1],
                offline_replicas: SmallVec::new(),
                ..Default::default()
            }],
            topic_authorized_operations: i32::MIN,
            ..Default::default()
        }],
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        0000005a                            # frame size 90
        0000000c                            # ResponseHeader v1: correlation_id 12
        00                                  #   tagged fields 0
        00000000                            # throttle_time_ms 0
        02                                  # brokers: COMPACT_ARRAY count 1
        00000001                            #   node_id 1
        03 6231                             #   host COMPACT_STRING \"b1\"
        00002384                            #   port 9092
        00                                  #   rack COMPACT_NULLABLE_STRING null
        00                                  #   tagged fields 0
        03 6331                             # cluster_id \"c1\"
        00000001                            # controller_id 1
        02                                  # topics: COMPACT_ARRAY count 1
        0000                                #   error_code 0
        07 6f7264657273                     #   name \"orders\" (nullable v12+)
        0123456789abcdeffedcba9876543210    #   topic_id
        00                                  #   is_internal false
        02                                  #   partitions: COMPACT_ARRAY count 1
        0000                                #     error_code 0
        00000000                            #     partition_index 0
        00000001                            #     leader_id 1
        00000005                            #     leader_epoch 5
        02 00000001                         #     replica_nodes [1]
        02 00000001                         #     isr_nodes [1]
        01                                  #     offline_replicas [] (count 0 -> 01)
        00                                  #     tagged fields 0
        80000000                            #   topic_authorized_operations i32::MIN
        00                                  #   tagged fields 0
                                            # (cluster_authorized_operations is v8-10 only)
        00                                  # tagged fields 0
        ");
    check_response_frame(ApiKey::Metadata, 12, 1, 12, &body, &expected);
}

// ---------------------------------------------------------------------------------------------
// Produce (key 0): flexible 9+; records = NULLABLE_BYTES / COMPACT_NULLABLE_BYTES
// ---------------------------------------------------------------------------------------------

fn produce_value() -> m::ProduceRequest {
    use m::produce_request::{PartitionProduceData, TopicProduceData};
    m::ProduceRequest {
        transactional_id: None,
        acks: -1,
        timeout_ms: 30000,
        topic_data: vec![TopicProduceData {
            name: s("orders"),
            partition_data: vec![PartitionProduceData { index: 0, records: Some(b(RECORDS)), ..Default::default() }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[test]
fn produce_request_v3() {
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        ffff                # transactional_id NULLABLE_STRING null (v3+)
        ffff                # acks -1
        00007530            # timeout_ms 30000
        00000001            # topic_data: ARRAY count 1
        0006 6f7264657273   #   name \"orders\"
        00000001            #   partition_data: ARRAY count 1
        00000000            #     index 0
        0000000a            #     records: NULLABLE_BYTES int32 length 10
        0102030405060708090a
        ");
    check(&produce_value(), 3, &expected);
}

#[test]
fn produce_request_v9_frame() {
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        00000030            # frame size 48
        0000 0009           # RequestHeader v2: api_key 0 (Produce), api_version 9
        00000003            #   correlation_id 3
        0003 636c69         #   client_id \"cli\"
        00                  #   tagged fields 0
        00                  # transactional_id COMPACT_NULLABLE_STRING null
        ffff                # acks -1
        00007530            # timeout_ms 30000
        02                  # topic_data: COMPACT_ARRAY count 1
        07 6f7264657273     #   name \"orders\"
        02                  #   partition_data: COMPACT_ARRAY count 1
        00000000            #     index 0
        0b                  #     records: COMPACT_NULLABLE_BYTES uvarint(10+1)
        0102030405060708090a
        00                  #     tagged fields 0
        00                  #   tagged fields 0
        00                  # tagged fields 0
        ");
    check_request_frame(ApiKey::Produce, 9, 2, 3, Some("cli"), &produce_value(), &expected);
}

// ---------------------------------------------------------------------------------------------
// Fetch (key 1): flexible 12+; topic ids from 13
// ---------------------------------------------------------------------------------------------

#[test]
fn fetch_request_v4() {
    use m::fetch_request::{FetchPartition, FetchTopic};
    let value = m::FetchRequest {
        replica_id: -1,
        max_wait_ms: 500,
        min_bytes: 1,
        max_bytes: 1 << 20,
        isolation_level: 1,
        topics: vec![FetchTopic {
            topic: s("orders"),
            partitions: vec![FetchPartition { partition: 0, fetch_offset: 100, partition_max_bytes: 1 << 20, ..Default::default() }],
            ..Default::default()
        }],
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        ffffffff            # replica_id -1
        000001f4            # max_wait_ms 500
        00000001            # min_bytes 1
        00100000            # max_bytes 1 MiB (v3+)
        01                  # isolation_level READ_COMMITTED (v4+)
        00000001            # topics: ARRAY count 1
        0006 6f7264657273   #   topic \"orders\"
        00000001            #   partitions: ARRAY count 1
        00000000            #     partition 0
        0000000000000064    #     fetch_offset 100
        00100000            #     partition_max_bytes 1 MiB
        ");
    check(&value, 4, &expected);
}

#[test]
fn fetch_request_v12_tagged_cluster_id_and_unknown_tag() {
    use m::fetch_request::{FetchPartition, FetchTopic};
    let value = m::FetchRequest {
        cluster_id: Some(s("c1")),
        replica_id: -1,
        max_wait_ms: 500,
        min_bytes: 1,
        max_bytes: i32::MAX,
        isolation_level: 0,
        session_id: 0,
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic: s("orders"),
            partitions: vec![FetchPartition {
                partition: 0,
                current_leader_epoch: 5,
                fetch_offset: 100,
                last_fetched_epoch: 4,
                log_start_offset: -1,
                partition_max_bytes: 1 << 20,
                ..Default::default()
            }],
            ..Default::default()
        }],
        forgotten_topics_data: vec![],
        rack_id: s(""),
        unknown_tagged_fields: unknown(&[(7, &[0xbe, 0xef])]),
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        ffffffff            # replica_id -1 (v0-14)
        000001f4            # max_wait_ms 500
        00000001            # min_bytes 1
        7fffffff            # max_bytes i32::MAX
        00                  # isolation_level 0
        00000000            # session_id 0 (v7+)
        ffffffff            # session_epoch -1 (v7+)
        02                  # topics: COMPACT_ARRAY count 1
        07 6f7264657273     #   topic \"orders\" (v0-12)
        02                  #   partitions: COMPACT_ARRAY count 1
        00000000            #     partition 0
        00000005            #     current_leader_epoch 5 (v9+)
        0000000000000064    #     fetch_offset 100
        00000004            #     last_fetched_epoch 4 (v12+)
        ffffffffffffffff    #     log_start_offset -1 (v5+)
        00100000            #     partition_max_bytes 1 MiB
        00                  #     tagged fields 0
        00                  #   tagged fields 0
        01                  # forgotten_topics_data: COMPACT_ARRAY count 0 (v7+)
        01                  # rack_id COMPACT_STRING \"\" (v11+)
        02                  # tagged fields: count 2, ascending tags
        00 03 03 6331       #   tag 0 ClusterId, size 3, COMPACT_NULLABLE_STRING \"c1\"
        07 02 beef          #   tag 7 (unknown), size 2
        ");
    check(&value, 12, &expected);
}

#[test]
fn fetch_request_v13_topic_ids() {
    use m::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
    let value = m::FetchRequest {
        replica_id: -1,
        max_wait_ms: 500,
        min_bytes: 1,
        max_bytes: i32::MAX,
        isolation_level: 0,
        session_id: 42,
        session_epoch: 1,
        topics: vec![FetchTopic {
            topic_id: TOPIC_ID,
            partitions: vec![FetchPartition {
                partition: 0,
                current_leader_epoch: 5,
                fetch_offset: 100,
                last_fetched_epoch: 4,
                log_start_offset: -1,
                partition_max_bytes: 1 << 20,
                ..Default::default()
            }],
            ..Default::default()
        }],
        forgotten_topics_data: vec![ForgottenTopic { topic_id: TOPIC_ID_2, partitions: smallvec![1], ..Default::default() }],
        rack_id: s("rack-a"),
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        ffffffff                            # replica_id -1
        000001f4                            # max_wait_ms 500
        00000001                            # min_bytes 1
        7fffffff                            # max_bytes
        00                                  # isolation_level 0
        0000002a                            # session_id 42
        00000001                            # session_epoch 1
        02                                  # topics: COMPACT_ARRAY count 1
        0123456789abcdeffedcba9876543210    #   topic_id UUID (v13+; no name)
        02                                  #   partitions: count 1
        00000000                            #     partition 0
        00000005                            #     current_leader_epoch 5
        0000000000000064                    #     fetch_offset 100
        00000004                            #     last_fetched_epoch 4
        ffffffffffffffff                    #     log_start_offset -1
        00100000                            #     partition_max_bytes
        00                                  #     tagged fields 0
        00                                  #   tagged fields 0
        02                                  # forgotten_topics_data: count 1
        00112233445566778899aabbccddeeff    #   topic_id UUID
        02 00000001                         #   partitions COMPACT_ARRAY [1]
        00                                  #   tagged fields 0
        07 7261636b2d61                     # rack_id \"rack-a\"
        00                                  # tagged fields 0 (cluster_id null: not written)
        ");
    check(&value, 13, &expected);
}

#[test]
fn fetch_response_v4_aborted_transactions_and_records() {
    use m::fetch_response::{AbortedTransaction, FetchableTopicResponse, PartitionData};
    let value = m::FetchResponse {
        throttle_time_ms: 0,
        responses: vec![FetchableTopicResponse {
            topic: s("orders"),
            partitions: vec![PartitionData {
                partition_index: 0,
                error_code: 0,
                high_watermark: 100,
                last_stable_offset: 90,
                aborted_transactions: Some(vec![AbortedTransaction { producer_id: 7, first_offset: 80, ..Default::default() }]),
                records: Some(b(RECORDS)),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        00000000            # throttle_time_ms 0 (v1+)
                            # (error_code, session_id are v7+)
        00000001            # responses: ARRAY count 1
        0006 6f7264657273   #   topic \"orders\"
        00000001            #   partitions: ARRAY count 1
        00000000            #     partition_index 0
        0000                #     error_code 0
        0000000000000064    #     high_watermark 100
        000000000000005a    #     last_stable_offset 90 (v4+)
        00000001            #     aborted_transactions: nullable ARRAY count 1 (v4+)
        0000000000000007    #       producer_id 7
        0000000000000050    #       first_offset 80
        0000000a            #     records: NULLABLE_BYTES length 10
        0102030405060708090a
        ");
    check(&value, 4, &expected);
}

#[test]
fn fetch_response_v12_frame_records_and_tagged_struct() {
    use m::fetch_response::{FetchableTopicResponse, LeaderIdAndEpoch, PartitionData};
    let body = m::FetchResponse {
        throttle_time_ms: 0,
        error_code: 0,
        session_id: 42,
        responses: vec![FetchableTopicResponse {
            topic: s("orders"),
            partitions: vec![PartitionData {
                partition_index: 0,
                error_code: 0,
                high_watermark: 100,
                last_stable_offset: 90,
                log_start_offset: 0,
                current_leader: LeaderIdAndEpoch { leader_id: 1, leader_epoch: 5, ..Default::default() },
                aborted_transactions: None,
                preferred_read_replica: -1,
                records: Some(b(RECORDS)),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        00000054            # frame size 84
        00000005            # ResponseHeader v1: correlation_id 5
        00                  #   tagged fields 0
        00000000            # throttle_time_ms 0
        0000                # error_code 0
        0000002a            # session_id 42
        02                  # responses: COMPACT_ARRAY count 1
        07 6f7264657273     #   topic \"orders\"
        02                  #   partitions: count 1
        00000000            #     partition_index 0
        0000                #     error_code 0
        0000000000000064    #     high_watermark 100
        000000000000005a    #     last_stable_offset 90
        0000000000000000    #     log_start_offset 0 (v5+)
        00                  #     aborted_transactions: COMPACT_ARRAY null
        ffffffff            #     preferred_read_replica -1 (v11+)
        0b                  #     records: COMPACT_NULLABLE_BYTES uvarint(10+1)
        0102030405060708090a
        01                  #     tagged fields: count 1
        01 09               #       tag 1 CurrentLeader, size 9
        00000001            #         leader_id 1
        00000005            #         leader_epoch 5
        00                  #         tagged fields 0 (of the LeaderIdAndEpoch struct)
        00                  #   tagged fields 0
        00                  # tagged fields 0
        ");
    check_response_frame(ApiKey::Fetch, 12, 1, 5, &body, &expected);
}

// ---------------------------------------------------------------------------------------------
// FindCoordinator (key 10): flexible 3+; batched keys from 4
// ---------------------------------------------------------------------------------------------

#[test]
fn find_coordinator_request_v0() {
    let value = m::FindCoordinatorRequest { key: s("group-1"), ..Default::default() };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        0007 67726f75702d31 # key \"group-1\" (v0-3)
        ");
    check(&value, 0, &expected);
}

#[test]
fn find_coordinator_request_v4_frame() {
    let body = m::FindCoordinatorRequest { key_type: 0, coordinator_keys: vec![s("group-1"), s("group-2")], ..Default::default() };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        00000021            # frame size 33
        000a 0004           # RequestHeader v2: api_key 10, api_version 4
        00000009            #   correlation_id 9
        0003 636c69         #   client_id \"cli\"
        00                  #   tagged fields 0
        00                  # key_type 0 (GROUP)
        03                  # coordinator_keys: COMPACT_ARRAY count 2 of COMPACT_STRING
        08 67726f75702d31   #   \"group-1\"
        08 67726f75702d32   #   \"group-2\"
        00                  # tagged fields 0
        ");
    check_request_frame(ApiKey::FindCoordinator, 4, 2, 9, Some("cli"), &body, &expected);
}

#[test]
fn find_coordinator_response_v0() {
    let value = m::FindCoordinatorResponse { error_code: 0, node_id: 1, host: s("b1"), port: 9092, ..Default::default() };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        0000                # error_code 0
        00000001            # node_id 1
        0002 6231           # host \"b1\"
        00002384            # port 9092
        ");
    check(&value, 0, &expected);
}

#[test]
fn find_coordinator_response_v4() {
    let value = m::FindCoordinatorResponse {
        throttle_time_ms: 0,
        coordinators: vec![m::find_coordinator_response::Coordinator {
            key: s("group-1"),
            node_id: 1,
            host: s("b1"),
            port: 9092,
            error_code: 0,
            error_message: None,
            ..Default::default()
        }],
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        00000000            # throttle_time_ms 0
        02                  # coordinators: COMPACT_ARRAY count 1
        08 67726f75702d31   #   key \"group-1\"
        00000001            #   node_id 1
        03 6231             #   host \"b1\"
        00002384            #   port 9092
        0000                #   error_code 0
        00                  #   error_message null
        00                  #   tagged fields 0
        00                  # tagged fields 0
        ");
    check(&value, 4, &expected);
}

// ---------------------------------------------------------------------------------------------
// JoinGroup (key 11): flexible 6+
// ---------------------------------------------------------------------------------------------

#[test]
fn join_group_request_v5() {
    let value = m::JoinGroupRequest {
        group_id: s("g"),
        session_timeout_ms: 10000,
        rebalance_timeout_ms: 60000,
        member_id: s(""),
        group_instance_id: None,
        protocol_type: s("consumer"),
        protocols: vec![m::join_group_request::JoinGroupRequestProtocol { name: s("range"), metadata: b(&[1, 2, 3]), ..Default::default() }],
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        0001 67                 # group_id \"g\"
        00002710                # session_timeout_ms 10000
        0000ea60                # rebalance_timeout_ms 60000 (v1+)
        0000                    # member_id \"\"
        ffff                    # group_instance_id null (v5+)
        0008 636f6e73756d6572   # protocol_type \"consumer\"
        00000001                # protocols: ARRAY count 1
        0005 72616e6765         #   name \"range\"
        00000003 010203         #   metadata BYTES int32 length 3
        ");
    check(&value, 5, &expected);
}

#[test]
fn join_group_request_v8_flexible_with_reason() {
    let value = m::JoinGroupRequest {
        group_id: s("g"),
        session_timeout_ms: 10000,
        rebalance_timeout_ms: 60000,
        member_id: s(""),
        group_instance_id: Some(s("i1")),
        protocol_type: s("consumer"),
        protocols: vec![m::join_group_request::JoinGroupRequestProtocol { name: s("range"), metadata: b(&[1, 2, 3]), ..Default::default() }],
        reason: Some(s("r")),
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        02 67                   # group_id COMPACT_STRING \"g\"
        00002710                # session_timeout_ms 10000
        0000ea60                # rebalance_timeout_ms 60000
        01                      # member_id \"\"
        03 6931                 # group_instance_id \"i1\"
        09 636f6e73756d6572     # protocol_type \"consumer\"
        02                      # protocols: COMPACT_ARRAY count 1
        06 72616e6765           #   name \"range\"
        04 010203               #   metadata COMPACT_BYTES uvarint(3+1)
        00                      #   tagged fields 0
        02 72                   # reason \"r\" (v8+)
        00                      # tagged fields 0
        ");
    check(&value, 8, &expected);
}

#[test]
fn join_group_response_v7() {
    let value = m::JoinGroupResponse {
        throttle_time_ms: 0,
        error_code: 0,
        generation_id: 1,
        protocol_type: Some(s("consumer")),
        protocol_name: Some(s("range")),
        leader: s("m1"),
        member_id: s("m1"),
        members: vec![m::join_group_response::JoinGroupResponseMember {
            member_id: s("m1"),
            group_instance_id: None,
            metadata: b(&[0x0a, 0x0b]),
            ..Default::default()
        }],
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        00000000                # throttle_time_ms 0
        0000                    # error_code 0
        00000001                # generation_id 1
        09 636f6e73756d6572     # protocol_type \"consumer\" (v7+)
        06 72616e6765           # protocol_name \"range\"
        03 6d31                 # leader \"m1\"
                                # (skip_assignment is v9+)
        03 6d31                 # member_id \"m1\"
        02                      # members: COMPACT_ARRAY count 1
        03 6d31                 #   member_id \"m1\"
        00                      #   group_instance_id null
        03 0a0b                 #   metadata COMPACT_BYTES
        00                      #   tagged fields 0
        00                      # tagged fields 0
        ");
    check(&value, 7, &expected);
}

// ---------------------------------------------------------------------------------------------
// SyncGroup (key 14): flexible 4+
// ---------------------------------------------------------------------------------------------

#[test]
fn sync_group_request_v3() {
    let value = m::SyncGroupRequest {
        group_id: s("g"),
        generation_id: 1,
        member_id: s("m1"),
        group_instance_id: None,
        assignments: vec![m::sync_group_request::SyncGroupRequestAssignment { member_id: s("m1"), assignment: b(&[0x0a, 0x0b]), ..Default::default() }],
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        0001 67             # group_id \"g\"
        00000001            # generation_id 1
        0002 6d31           # member_id \"m1\"
        ffff                # group_instance_id null (v3+)
        00000001            # assignments: ARRAY count 1
        0002 6d31           #   member_id \"m1\"
        00000002 0a0b       #   assignment BYTES
        ");
    check(&value, 3, &expected);
}

#[test]
fn sync_group_response_v5() {
    let value = m::SyncGroupResponse {
        throttle_time_ms: 0,
        error_code: 0,
        protocol_type: Some(s("consumer")),
        protocol_name: Some(s("range")),
        assignment: b(&[0x0a, 0x0b]),
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        00000000                # throttle_time_ms 0
        0000                    # error_code 0
        09 636f6e73756d6572     # protocol_type \"consumer\" (v5+)
        06 72616e6765           # protocol_name \"range\" (v5+)
        03 0a0b                 # assignment COMPACT_BYTES
        00                      # tagged fields 0
        ");
    check(&value, 5, &expected);
}

// ---------------------------------------------------------------------------------------------
// Heartbeat (key 12): flexible 4+
// ---------------------------------------------------------------------------------------------

#[test]
fn heartbeat_request_v0() {
    let value = m::HeartbeatRequest { group_id: s("g"), generation_id: 1, member_id: s("m1"), ..Default::default() };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        0001 67             # group_id \"g\"
        00000001            # generation_id 1
        0002 6d31           # member_id \"m1\"
        ");
    check(&value, 0, &expected);
}

#[test]
fn heartbeat_request_v4_frame() {
    let body = m::HeartbeatRequest { group_id: s("g"), generation_id: 1, member_id: s("m1"), group_instance_id: Some(s("i1")), ..Default::default() };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        0000001b            # frame size 27
        000c 0004           # RequestHeader v2: api_key 12, api_version 4
        0000000b            #   correlation_id 11
        0003 636c69         #   client_id \"cli\"
        00                  #   tagged fields 0
        02 67               # group_id \"g\"
        00000001            # generation_id 1
        03 6d31             # member_id \"m1\"
        03 6931             # group_instance_id \"i1\"
        00                  # tagged fields 0
        ");
    check_request_frame(ApiKey::Heartbeat, 4, 2, 11, Some("cli"), &body, &expected);
}

#[test]
fn heartbeat_response_v0() {
    let value = m::HeartbeatResponse { error_code: 25, ..Default::default() };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        0019                # error_code 25 (UNKNOWN_MEMBER_ID); no throttle_time_ms before v1
        ");
    check(&value, 0, &expected);
}

#[test]
fn heartbeat_response_v4_frame() {
    let body = m::HeartbeatResponse { throttle_time_ms: 0, error_code: 27, ..Default::default() };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        0000000c            # frame size 12
        0000000b            # ResponseHeader v1: correlation_id 11
        00                  #   tagged fields 0
        00000000            # throttle_time_ms 0
        001b                # error_code 27 (REBALANCE_IN_PROGRESS)
        00                  # tagged fields 0
        ");
    check_response_frame(ApiKey::Heartbeat, 4, 1, 11, &body, &expected);
}

// ---------------------------------------------------------------------------------------------
// OffsetCommit (key 8): flexible 8+
// ---------------------------------------------------------------------------------------------

#[test]
fn offset_commit_request_v2() {
    use m::offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic};
    let value = m::OffsetCommitRequest {
        group_id: s("g"),
        generation_id_or_member_epoch: 1,
        member_id: s("m1"),
        retention_time_ms: -1,
        topics: vec![OffsetCommitRequestTopic {
            name: s("orders"),
            partitions: vec![OffsetCommitRequestPartition { partition_index: 0, committed_offset: 100, committed_metadata: None, ..Default::default() }],
            ..Default::default()
        }],
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        0001 67             # group_id \"g\"
        00000001            # generation_id_or_member_epoch 1 (v1+)
        0002 6d31           # member_id \"m1\" (v1+)
        ffffffffffffffff    # retention_time_ms -1 (v2-4)
        00000001            # topics: ARRAY count 1
        0006 6f7264657273   #   name \"orders\"
        00000001            #   partitions: ARRAY count 1
        00000000            #     partition_index 0
        0000000000000064    #     committed_offset 100
                            #     (commit_timestamp is v1 only; committed_leader_epoch v6+)
        ffff                #     committed_metadata null
        ");
    check(&value, 2, &expected);
}

#[test]
fn offset_commit_request_v8() {
    use m::offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic};
    let value = m::OffsetCommitRequest {
        group_id: s("g"),
        generation_id_or_member_epoch: 1,
        member_id: s("m1"),
        group_instance_id: None,
        topics: vec![OffsetCommitRequestTopic {
            name: s("orders"),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: 100,
                committed_leader_epoch: 5,
                committed_metadata: Some(s("")),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        02 67               # group_id \"g\"
        00000001            # generation_id_or_member_epoch 1
        03 6d31             # member_id \"m1\"
        00                  # group_instance_id null (v7+)
        02                  # topics: COMPACT_ARRAY count 1
        07 6f7264657273     #   name \"orders\"
        02                  #   partitions: count 1
        00000000            #     partition_index 0
        0000000000000064    #     committed_offset 100
        00000005            #     committed_leader_epoch 5
        01                  #     committed_metadata \"\" (empty, not null)
        00                  #     tagged fields 0
        00                  #   tagged fields 0
        00                  # tagged fields 0
        ");
    check(&value, 8, &expected);
}

#[test]
fn offset_commit_response_v8() {
    use m::offset_commit_response::{OffsetCommitResponsePartition, OffsetCommitResponseTopic};
    let value = m::OffsetCommitResponse {
        throttle_time_ms: 0,
        topics: vec![OffsetCommitResponseTopic {
            name: s("orders"),
            partitions: vec![OffsetCommitResponsePartition { partition_index: 0, error_code: 0, ..Default::default() }],
            ..Default::default()
        }],
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        00000000            # throttle_time_ms 0
        02                  # topics: count 1
        07 6f7264657273     #   name \"orders\"
        02                  #   partitions: count 1
        00000000 0000 00    #     partition_index 0, error_code 0, tagged fields 0
        00                  #   tagged fields 0
        00                  # tagged fields 0
        ");
    check(&value, 8, &expected);
}

// ---------------------------------------------------------------------------------------------
// OffsetFetch (key 9): flexible 6+; groups array from 8
// ---------------------------------------------------------------------------------------------

#[test]
fn offset_fetch_request_v8_groups() {
    use m::offset_fetch_request::{OffsetFetchRequestGroup, OffsetFetchRequestTopics};
    let value = m::OffsetFetchRequest {
        groups: vec![
            OffsetFetchRequestGroup {
                group_id: s("g1"),
                topics: Some(vec![OffsetFetchRequestTopics { name: s("orders"), partition_indexes: smallvec![0, 1], ..Default::default() }]),
                ..Default::default()
            },
            OffsetFetchRequestGroup { group_id: s("g2"), topics: None, ..Default::default() },
        ],
        require_stable: true,
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        03                  # groups: COMPACT_ARRAY count 2
        03 6731             #   group_id \"g1\"
                            #   (member_id, member_epoch are v9+)
        02                  #   topics: COMPACT_ARRAY count 1 (nullable)
        07 6f7264657273     #     name \"orders\"
        03 00000000 00000001  #   partition_indexes [0, 1]
        00                  #     tagged fields 0
        00                  #   tagged fields 0
        03 6732             #   group_id \"g2\"
        00                  #   topics null = all topics
        00                  #   tagged fields 0
        01                  # require_stable true
        00                  # tagged fields 0
        ");
    check(&value, 8, &expected);
}

#[test]
fn offset_fetch_response_v8_groups() {
    use m::offset_fetch_response::{OffsetFetchResponseGroup, OffsetFetchResponsePartitions, OffsetFetchResponseTopics};
    let value = m::OffsetFetchResponse {
        throttle_time_ms: 0,
        groups: vec![OffsetFetchResponseGroup {
            group_id: s("g1"),
            topics: vec![OffsetFetchResponseTopics {
                name: s("orders"),
                partitions: vec![OffsetFetchResponsePartitions {
                    partition_index: 0,
                    committed_offset: 100,
                    committed_leader_epoch: 5,
                    metadata: Some(s("")),
                    error_code: 0,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            error_code: 0,
            ..Default::default()
        }],
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        00000000            # throttle_time_ms 0
        02                  # groups: count 1
        03 6731             #   group_id \"g1\"
        02                  #   topics: count 1
        07 6f7264657273     #     name \"orders\"
        02                  #     partitions: count 1
        00000000            #       partition_index 0
        0000000000000064    #       committed_offset 100
        00000005            #       committed_leader_epoch 5
        01                  #       metadata \"\"
        0000                #       error_code 0
        00                  #       tagged fields 0
        00                  #     tagged fields 0
        0000                #   error_code 0 (of the group)
        00                  #   tagged fields 0
        00                  # tagged fields 0
        ");
    check(&value, 8, &expected);
}

// ---------------------------------------------------------------------------------------------
// ListOffsets (key 2): flexible 6+
// ---------------------------------------------------------------------------------------------

#[test]
fn list_offsets_request_v1() {
    use m::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    let value = m::ListOffsetsRequest {
        replica_id: -1,
        topics: vec![ListOffsetsTopic {
            name: s("orders"),
            partitions: vec![ListOffsetsPartition { partition_index: 0, timestamp: -1, ..Default::default() }],
            ..Default::default()
        }],
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        ffffffff            # replica_id -1
                            # (isolation_level is v2+)
        00000001            # topics: ARRAY count 1
        0006 6f7264657273   #   name \"orders\"
        00000001            #   partitions: ARRAY count 1
        00000000            #     partition_index 0
        ffffffffffffffff    #     timestamp -1 (latest); max_num_offsets is v0 only
        ");
    check(&value, 1, &expected);
}

#[test]
fn list_offsets_request_v7() {
    use m::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    let value = m::ListOffsetsRequest {
        replica_id: -1,
        isolation_level: 1,
        topics: vec![ListOffsetsTopic {
            name: s("orders"),
            partitions: vec![ListOffsetsPartition { partition_index: 0, current_leader_epoch: 5, timestamp: -2, ..Default::default() }],
            ..Default::default()
        }],
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        ffffffff            # replica_id -1
        01                  # isolation_level 1
        02                  # topics: COMPACT_ARRAY count 1
        07 6f7264657273     #   name \"orders\"
        02                  #   partitions: count 1
        00000000            #     partition_index 0
        00000005            #     current_leader_epoch 5 (v4+)
        fffffffffffffffe    #     timestamp -2 (earliest)
        00                  #     tagged fields 0
        00                  #   tagged fields 0
        00                  # tagged fields 0
        ");
    check(&value, 7, &expected);
}

#[test]
fn list_offsets_response_v4() {
    use m::list_offsets_response::{ListOffsetsPartitionResponse, ListOffsetsTopicResponse};
    let value = m::ListOffsetsResponse {
        throttle_time_ms: 0,
        topics: vec![ListOffsetsTopicResponse {
            name: s("orders"),
            partitions: vec![ListOffsetsPartitionResponse {
                partition_index: 0,
                error_code: 0,
                timestamp: -1,
                offset: 100,
                leader_epoch: 5,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        00000000            # throttle_time_ms 0 (v2+)
        00000001            # topics: ARRAY count 1
        0006 6f7264657273   #   name \"orders\"
        00000001            #   partitions: ARRAY count 1
        00000000            #     partition_index 0
        0000                #     error_code 0
                            #     (old_style_offsets is v0 only)
        ffffffffffffffff    #     timestamp -1
        0000000000000064    #     offset 100
        00000005            #     leader_epoch 5 (v4+)
        ");
    check(&value, 4, &expected);
}

// ---------------------------------------------------------------------------------------------
// CreateTopics (key 19): flexible 5+
// ---------------------------------------------------------------------------------------------

#[test]
fn create_topics_request_v5() {
    use m::create_topics_request::{CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig};
    let value = m::CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: s("orders"),
            num_partitions: -1,
            replication_factor: -1,
            assignments: vec![CreatableReplicaAssignment { partition_index: 0, broker_ids: smallvec![1, 2], ..Default::default() }],
            configs: vec![
                CreatableTopicConfig { name: s("cleanup.policy"), value: Some(s("compact")), ..Default::default() },
                CreatableTopicConfig { name: s("retention.ms"), value: None, ..Default::default() },
            ],
            ..Default::default()
        }],
        timeout_ms: 60000,
        validate_only: false,
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        02                  # topics: COMPACT_ARRAY count 1
        07 6f7264657273     #   name \"orders\"
        ffffffff            #   num_partitions -1
        ffff                #   replication_factor -1
        02                  #   assignments: count 1
        00000000            #     partition_index 0
        03 00000001 00000002  #   broker_ids [1, 2]
        00                  #     tagged fields 0
        03                  #   configs: count 2
        0f 636c65616e75702e706f6c696379  # name \"cleanup.policy\" (14)
        08 636f6d70616374   #     value \"compact\"
        00                  #     tagged fields 0
        0d 726574656e74696f6e2e6d73      # name \"retention.ms\" (12)
        00                  #     value null
        00                  #     tagged fields 0
        00                  #   tagged fields 0
        0000ea60            # timeout_ms 60000
        00                  # validate_only false (v1+)
        00                  # tagged fields 0
        ");
    check(&value, 5, &expected);
}

#[test]
fn create_topics_response_v5_tagged_topic_config_error_code() {
    use m::create_topics_response::{CreatableTopicConfigs, CreatableTopicResult};
    let value = m::CreateTopicsResponse {
        throttle_time_ms: 0,
        topics: vec![CreatableTopicResult {
            name: s("orders"),
            error_code: 0,
            error_message: None,
            topic_config_error_code: 40,
            num_partitions: 1,
            replication_factor: 3,
            configs: Some(vec![CreatableTopicConfigs {
                name: s("cleanup.policy"),
                value: Some(s("compact")),
                read_only: false,
                config_source: 1,
                is_sensitive: false,
                ..Default::default()
            }]),
            ..Default::default()
        }],
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        00000000            # throttle_time_ms 0
        02                  # topics: count 1
        07 6f7264657273     #   name \"orders\"
                            #   (topic_id is v7+)
        0000                #   error_code 0
        00                  #   error_message null
        00000001            #   num_partitions 1
        0003                #   replication_factor 3
        02                  #   configs: COMPACT_ARRAY (nullable) count 1
        0f 636c65616e75702e706f6c696379  # name \"cleanup.policy\"
        08 636f6d70616374   #     value \"compact\"
        00                  #     read_only false
        01                  #     config_source 1 (DYNAMIC_TOPIC_CONFIG)
        00                  #     is_sensitive false
        00                  #     tagged fields 0
        01                  #   tagged fields: count 1
        00 02 0028          #     tag 0 TopicConfigErrorCode, size 2, int16 40
        00                  # tagged fields 0
        ");
    check(&value, 5, &expected);
}

#[test]
fn create_topics_response_v7_topic_id() {
    use m::create_topics_response::CreatableTopicResult;
    let value = m::CreateTopicsResponse {
        throttle_time_ms: 0,
        topics: vec![CreatableTopicResult {
            name: s("orders"),
            topic_id: TOPIC_ID,
            error_code: 36,
            error_message: Some(s("exists")),
            num_partitions: -1,
            replication_factor: -1,
            configs: None,
            ..Default::default()
        }],
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        00000000                            # throttle_time_ms 0
        02                                  # topics: count 1
        07 6f7264657273                     #   name \"orders\"
        0123456789abcdeffedcba9876543210    #   topic_id (v7+)
        0024                                #   error_code 36 (TOPIC_ALREADY_EXISTS)
        07 657869737473                     #   error_message \"exists\"
        ffffffff                            #   num_partitions -1
        ffff                                #   replication_factor -1
        00                                  #   configs null
        00                                  #   tagged fields 0 (topic_config_error_code 0 = default)
        00                                  # tagged fields 0
        ");
    check(&value, 7, &expected);
}

// ---------------------------------------------------------------------------------------------
// DescribeConfigs (key 32): flexible 4+
// ---------------------------------------------------------------------------------------------

#[test]
fn describe_configs_request_v1_null_keys() {
    let value = m::DescribeConfigsRequest {
        resources: vec![m::describe_configs_request::DescribeConfigsResource {
            resource_type: 2,
            resource_name: s("orders"),
            configuration_keys: None,
            ..Default::default()
        }],
        include_synonyms: true,
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        00000001            # resources: ARRAY count 1
        02                  #   resource_type 2 (TOPIC)
        0006 6f7264657273   #   resource_name \"orders\"
        ffffffff            #   configuration_keys: null ARRAY = all
        01                  # include_synonyms true (v1+)
        ");
    check(&value, 1, &expected);
}

#[test]
fn describe_configs_request_v4() {
    let value = m::DescribeConfigsRequest {
        resources: vec![m::describe_configs_request::DescribeConfigsResource {
            resource_type: 2,
            resource_name: s("orders"),
            configuration_keys: Some(vec![s("cleanup.policy")]),
            ..Default::default()
        }],
        include_synonyms: false,
        include_documentation: true,
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        02                  # resources: COMPACT_ARRAY count 1
        02                  #   resource_type 2 (TOPIC)
        07 6f7264657273     #   resource_name \"orders\"
        02                  #   configuration_keys: count 1
        0f 636c65616e75702e706f6c696379  # \"cleanup.policy\"
        00                  #   tagged fields 0
        00                  # include_synonyms false
        01                  # include_documentation true (v3+)
        00                  # tagged fields 0
        ");
    check(&value, 4, &expected);
}

#[test]
fn describe_configs_response_v4() {
    use m::describe_configs_response::{DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym};
    let value = m::DescribeConfigsResponse {
        throttle_time_ms: 0,
        results: vec![DescribeConfigsResult {
            error_code: 0,
            error_message: None,
            resource_type: 2,
            resource_name: s("orders"),
            configs: vec![DescribeConfigsResourceResult {
                name: s("cleanup.policy"),
                value: Some(s("delete")),
                read_only: false,
                config_source: 5,
                is_sensitive: false,
                synonyms: vec![DescribeConfigsSynonym { name: s("log.cleanup.policy"), value: Some(s("delete")), source: 5, ..Default::default() }],
                config_type: 2,
                documentation: None,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        00000000            # throttle_time_ms 0
        02                  # results: count 1
        0000                #   error_code 0
        00                  #   error_message null
        02                  #   resource_type 2
        07 6f7264657273     #   resource_name \"orders\"
        02                  #   configs: count 1
        0f 636c65616e75702e706f6c696379  # name \"cleanup.policy\"
        07 64656c657465     #     value \"delete\"
        00                  #     read_only false
                            #     (is_default is v0 only)
        05                  #     config_source 5 (DEFAULT_CONFIG) (v1+)
        00                  #     is_sensitive false
        02                  #     synonyms: count 1
        13 6c6f672e636c65616e75702e706f6c696379  # name \"log.cleanup.policy\" (18)
        07 64656c657465     #       value \"delete\"
        05                  #       source 5
        00                  #       tagged fields 0
        02                  #     config_type 2 (STRING) (v3+)
        00                  #     documentation null (v3+)
        00                  #     tagged fields 0
        00                  #   tagged fields 0
        00                  # tagged fields 0
        ");
    check(&value, 4, &expected);
}

// ---------------------------------------------------------------------------------------------
// SaslHandshake (key 17, never flexible) and SaslAuthenticate (key 36, flexible 2+)
// ---------------------------------------------------------------------------------------------

#[test]
fn sasl_handshake_request_v1_frame() {
    let body = m::SaslHandshakeRequest { mechanism: s("PLAIN"), ..Default::default() };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        00000014            # frame size 20
        0011 0001           # RequestHeader v1: api_key 17, api_version 1
        0000000d            #   correlation_id 13
        0003 636c69         #   client_id \"cli\"
        0005 504c41494e     # mechanism \"PLAIN\"
        ");
    check_request_frame(ApiKey::SaslHandshake, 1, 1, 13, Some("cli"), &body, &expected);
}

#[test]
fn sasl_handshake_response_v0() {
    let value = m::SaslHandshakeResponse { error_code: 0, mechanisms: vec![s("PLAIN"), s("SCRAM-SHA-256")], ..Default::default() };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        0000                # error_code 0
        00000002            # mechanisms: ARRAY count 2 of STRING
        0005 504c41494e     #   \"PLAIN\"
        000d 5343 52414d 2d 534841 2d 323536  # \"SCRAM-SHA-256\" (13)
        ");
    check(&value, 0, &expected);
}

#[test]
fn sasl_authenticate_request_v0() {
    let value = m::SaslAuthenticateRequest { auth_bytes: b(b"\0user\0pass"), ..Default::default() };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        0000000a 00757365720070617373   # auth_bytes BYTES int32 length 10: \\0user\\0pass
        ");
    check(&value, 0, &expected);
}

#[test]
fn sasl_authenticate_request_v2_frame() {
    let body = m::SaslAuthenticateRequest { auth_bytes: b(b"\0user\0pass"), ..Default::default() };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        0000001a            # frame size 26
        0024 0002           # RequestHeader v2: api_key 36, api_version 2
        0000000e            #   correlation_id 14
        0003 636c69         #   client_id \"cli\"
        00                  #   tagged fields 0
        0b 00757365720070617373  # auth_bytes COMPACT_BYTES uvarint(10+1)
        00                  # tagged fields 0
        ");
    check_request_frame(ApiKey::SaslAuthenticate, 2, 2, 14, Some("cli"), &body, &expected);
}

#[test]
fn sasl_authenticate_response_v2() {
    let value =
        m::SaslAuthenticateResponse { error_code: 0, error_message: None, auth_bytes: Bytes::new(), session_lifetime_ms: 3_600_000, ..Default::default() };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        0000                # error_code 0
        00                  # error_message COMPACT_NULLABLE_STRING null
        01                  # auth_bytes COMPACT_BYTES empty (uvarint 0+1)
        000000000036ee80    # session_lifetime_ms 3600000 (v1+)
        00                  # tagged fields 0
        ");
    check(&value, 2, &expected);
}

// ---------------------------------------------------------------------------------------------
// InitProducerId (key 22): flexible 2+
// ---------------------------------------------------------------------------------------------

#[test]
fn init_producer_id_request_v0_null_transactional_id() {
    let value = m::InitProducerIdRequest { transactional_id: None, transaction_timeout_ms: 60000, ..Default::default() };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        ffff                # transactional_id NULLABLE_STRING null
        0000ea60            # transaction_timeout_ms 60000
        ");
    check(&value, 0, &expected);
}

#[test]
fn init_producer_id_request_v4() {
    let value =
        m::InitProducerIdRequest { transactional_id: Some(s("tx")), transaction_timeout_ms: 60000, producer_id: -1, producer_epoch: -1, ..Default::default() };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        03 7478             # transactional_id \"tx\"
        0000ea60            # transaction_timeout_ms 60000
        ffffffffffffffff    # producer_id -1 (v3+)
        ffff                # producer_epoch -1 (v3+)
        00                  # tagged fields 0
        ");
    check(&value, 4, &expected);
}

#[test]
fn init_producer_id_response_v4() {
    let value = m::InitProducerIdResponse { throttle_time_ms: 0, error_code: 0, producer_id: 1000, producer_epoch: 0, ..Default::default() };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        00000000            # throttle_time_ms 0
        0000                # error_code 0
        00000000000003e8    # producer_id 1000
        0000                # producer_epoch 0
        00                  # tagged fields 0
        ");
    check(&value, 4, &expected);
}

// ---------------------------------------------------------------------------------------------
// DescribeCluster (key 60): flexible from v0
// ---------------------------------------------------------------------------------------------

#[test]
fn describe_cluster_request_v0_frame() {
    let body = m::DescribeClusterRequest { include_cluster_authorized_operations: true, ..Default::default() };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        00000010            # frame size 16
        003c 0000           # RequestHeader v2 (flexible from v0): api_key 60, api_version 0
        00000010            #   correlation_id 16
        0003 636c69         #   client_id \"cli\"
        00                  #   tagged fields 0
        01                  # include_cluster_authorized_operations true
        00                  # tagged fields 0
        ");
    check_request_frame(ApiKey::DescribeCluster, 0, 2, 16, Some("cli"), &body, &expected);
}

#[test]
fn describe_cluster_request_v1() {
    let value = m::DescribeClusterRequest { include_cluster_authorized_operations: false, endpoint_type: 2, ..Default::default() };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        00                  # include_cluster_authorized_operations false
        02                  # endpoint_type 2 (controller) (v1+)
        00                  # tagged fields 0
        ");
    check(&value, 1, &expected);
}

#[test]
fn describe_cluster_response_v1() {
    let value = m::DescribeClusterResponse {
        throttle_time_ms: 0,
        error_code: 0,
        error_message: None,
        endpoint_type: 1,
        cluster_id: s("c1"),
        controller_id: 1,
        brokers: vec![m::describe_cluster_response::DescribeClusterBroker {
            broker_id: 1,
            host: s("b1"),
            port: 9092,
            rack: Some(s("r1")),
            ..Default::default()
        }],
        cluster_authorized_operations: i32::MIN,
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        00000000            # throttle_time_ms 0
        0000                # error_code 0
        00                  # error_message null
        01                  # endpoint_type 1 (brokers) (v1+)
        03 6331             # cluster_id \"c1\"
        00000001            # controller_id 1
        02                  # brokers: COMPACT_ARRAY count 1
        00000001            #   broker_id 1
        03 6231             #   host \"b1\"
        00002384            #   port 9092
        03 7231             #   rack \"r1\"
        00                  #   tagged fields 0
        80000000            # cluster_authorized_operations i32::MIN
        00                  # tagged fields 0
        ");
    check(&value, 1, &expected);
}

// ---------------------------------------------------------------------------------------------
// multi-byte uvarints, tagged structs, top-level tagged arrays
// ---------------------------------------------------------------------------------------------

/// Lengths above 126 need a two-byte uvarint: a 130-char topic name (uvarint 131 = 83 01) and a
/// 200-byte records blob (uvarint 201 = c9 01).
#[test]
fn produce_request_v9_two_byte_uvarint_lengths() {
    use m::produce_request::{PartitionProduceData, TopicProduceData};
    let value = m::ProduceRequest {
        transactional_id: None,
        acks: 1,
        timeout_ms: 30000,
        topic_data: vec![TopicProduceData {
            name: s(&"t".repeat(130)),
            partition_data: vec![PartitionProduceData { index: 0, records: Some(Bytes::from(vec![0x5a; 200])), ..Default::default() }],
            ..Default::default()
        }],
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex(&format!(
        "
        00                  # transactional_id null
        0001                # acks 1
        00007530            # timeout_ms 30000
        02                  # topic_data: count 1
        8301 {name}         #   name: uvarint(130+1 = 131) = 83 01, then 130 x 't' (74)
        02                  #   partition_data: count 1
        00000000            #     index 0
        c901 {records}      #     records: uvarint(200+1 = 201) = c9 01, then 200 x 5a
        00                  #     tagged fields 0
        00                  #   tagged fields 0
        00                  # tagged fields 0
        ",
        name = "74".repeat(130),
        records = "5a".repeat(200),
    ));
    check(&value, 9, &expected);
}

/// An unknown tag above 127 with a value above 127 bytes: both the tag and the size take two
/// uvarint bytes, and the field survives decode -> encode byte for byte.
#[test]
fn request_header_v2_unknown_tag_300_size_130() {
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex(&format!(
        "
        0012 0003           # request_api_key 18, request_api_version 3
        00000001            # correlation_id 1
        ffff                # client_id null
        01                  # tagged fields: count 1
        ac02                #   tag 300 = uvarint ac 02
        8201                #   size 130 = uvarint 82 01
        {data}              #   130 x 11
        ",
        data = "11".repeat(130),
    ));
    let header = RequestHeader {
        request_api_key: 18,
        request_api_version: 3,
        correlation_id: 1,
        client_id: None,
        unknown_tagged_fields: {
            let mut u = UnknownTaggedFields::default();
            u.push(300, Bytes::from(vec![0x11; 130]));
            u
        },
    };
    check(&header, 2, &expected);
}

#[test]
fn offset_fetch_request_v7_null_topics() {
    let value = m::OffsetFetchRequest { group_id: s("g"), topics: None, require_stable: true, ..Default::default() };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        02 67               # group_id \"g\" (v0-7)
        00                  # topics: COMPACT_ARRAY null = all (nullable 2-7)
        01                  # require_stable true (v7+)
        00                  # tagged fields 0
        ");
    check(&value, 7, &expected);
}

/// ProduceResponse v10: record errors, a nullable error message, the tagged CurrentLeader struct
/// (partition tag 0) and the tagged top-level NodeEndpoints array (tag 0).
#[test]
fn produce_response_v10_tagged_current_leader_and_node_endpoints() {
    use m::produce_response::{BatchIndexAndErrorMessage, LeaderIdAndEpoch, NodeEndpoint, PartitionProduceResponse, TopicProduceResponse};
    let value = m::ProduceResponse {
        responses: vec![TopicProduceResponse {
            name: s("orders"),
            partition_responses: vec![PartitionProduceResponse {
                index: 0,
                error_code: 6,
                base_offset: -1,
                log_append_time_ms: -1,
                log_start_offset: -1,
                record_errors: vec![BatchIndexAndErrorMessage { batch_index: 0, batch_index_error_message: Some(s("bad")), ..Default::default() }],
                error_message: Some(s("not leader")),
                current_leader: LeaderIdAndEpoch { leader_id: 2, leader_epoch: 6, ..Default::default() },
                ..Default::default()
            }],
            ..Default::default()
        }],
        throttle_time_ms: 0,
        node_endpoints: vec![NodeEndpoint { node_id: 2, host: s("b2"), port: 9092, rack: None, ..Default::default() }],
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        02                  # responses: COMPACT_ARRAY count 1
        07 6f7264657273     #   name \"orders\"
        02                  #   partition_responses: count 1
        00000000            #     index 0
        0006                #     error_code 6 (NOT_LEADER_OR_FOLLOWER)
        ffffffffffffffff    #     base_offset -1
        ffffffffffffffff    #     log_append_time_ms -1 (v2+)
        ffffffffffffffff    #     log_start_offset -1 (v5+)
        02                  #     record_errors: count 1 (v8+)
        00000000            #       batch_index 0
        04 626164           #       batch_index_error_message \"bad\"
        00                  #       tagged fields 0
        0b 6e6f74206c6561646572  #  error_message \"not leader\" (10)
        01                  #     tagged fields: count 1
        00 09               #       tag 0 CurrentLeader, size 9
        00000002 00000006 00  #       leader_id 2, leader_epoch 6, tagged fields 0
        00                  #   tagged fields 0
        00000000            # throttle_time_ms 0
        01                  # tagged fields: count 1
        00 0e               #   tag 0 NodeEndpoints, size 14
        02                  #     COMPACT_ARRAY count 1
        00000002            #       node_id 2
        03 6232             #       host \"b2\"
        00002384            #       port 9092
        00                  #       rack null
        00                  #       tagged fields 0
        ");
    check(&value, 10, &expected);
}

/// FetchRequest v15: replica_id moved into the tagged ReplicaState struct (tag 1).
#[test]
fn fetch_request_v15_tagged_replica_state() {
    let value = m::FetchRequest {
        replica_state: m::fetch_request::ReplicaState { replica_id: 3, replica_epoch: 10, ..Default::default() },
        max_wait_ms: 500,
        min_bytes: 1,
        max_bytes: i32::MAX,
        isolation_level: 0,
        session_id: 0,
        session_epoch: -1,
        topics: vec![],
        forgotten_topics_data: vec![],
        rack_id: s(""),
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
                            # (replica_id is v0-14)
        000001f4            # max_wait_ms 500
        00000001            # min_bytes 1
        7fffffff            # max_bytes
        00                  # isolation_level 0
        00000000            # session_id 0
        ffffffff            # session_epoch -1
        01                  # topics: empty COMPACT_ARRAY
        01                  # forgotten_topics_data: empty
        01                  # rack_id \"\"
        01                  # tagged fields: count 1
        01 0d               #   tag 1 ReplicaState, size 13
        00000003            #     replica_id 3
        000000000000000a    #     replica_epoch 10
        00                  #     tagged fields 0
        ");
    check(&value, 15, &expected);
}

/// FetchResponse v16: topic id, two tagged structs in a partition (tags 0 and 2), empty (not
/// null) aborted transactions and records, and the top-level NodeEndpoints (tag 0).
#[test]
fn fetch_response_v16_tagged_structs_and_node_endpoints() {
    use m::fetch_response::{EpochEndOffset, FetchableTopicResponse, NodeEndpoint, PartitionData, SnapshotId};
    let value = m::FetchResponse {
        throttle_time_ms: 0,
        error_code: 0,
        session_id: 0,
        responses: vec![FetchableTopicResponse {
            topic_id: TOPIC_ID,
            partitions: vec![PartitionData {
                partition_index: 0,
                error_code: 0,
                high_watermark: 100,
                last_stable_offset: 100,
                log_start_offset: 0,
                diverging_epoch: EpochEndOffset { epoch: 3, end_offset: 80, ..Default::default() },
                snapshot_id: SnapshotId { end_offset: 40, epoch: 2, ..Default::default() },
                aborted_transactions: Some(vec![]),
                preferred_read_replica: -1,
                records: Some(Bytes::new()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        node_endpoints: vec![NodeEndpoint { node_id: 1, host: s("b1"), port: 9092, rack: Some(s("r1")), ..Default::default() }],
        ..Default::default()
    };
    // Expected bytes: written by hand from the documented layout, not by this crate's encoder.
    let expected = hex("
        00000000                            # throttle_time_ms 0
        0000                                # error_code 0
        00000000                            # session_id 0
        02                                  # responses: count 1
        0123456789abcdeffedcba9876543210    #   topic_id (v13+)
        02                                  #   partitions: count 1
        00000000                            #     partition_index 0
        0000                                #     error_code 0
        0000000000000064                    #     high_watermark 100
        0000000000000064                    #     last_stable_offset 100
        0000000000000000                    #     log_start_offset 0
        01                                  #     aborted_transactions: empty (not null)
        ffffffff                            #     preferred_read_replica -1
        01                                  #     records: empty COMPACT_NULLABLE_BYTES (not null)
        02                                  #     tagged fields: count 2
        00 0d                               #       tag 0 DivergingEpoch, size 13
        00000003 0000000000000050 00        #         epoch 3, end_offset 80, tagged 0
        02 0d                               #       tag 2 SnapshotId, size 13
        0000000000000028 00000002 00        #         end_offset 40, epoch 2, tagged 0
        00                                  #   tagged fields 0
        01                                  # tagged fields: count 1
        00 10                               #   tag 0 NodeEndpoints (v16+), size 16
        02                                  #     count 1
        00000001                            #       node_id 1
        03 6231                             #       host \"b1\"
        00002384                            #       port 9092
        03 7231                             #       rack \"r1\"
        00                                  #       tagged fields 0
        ");
    check(&value, 16, &expected);
}

// ---------------------------------------------------------------------------------------------
// the harness itself
// ---------------------------------------------------------------------------------------------

#[test]
fn hex_helper_ignores_whitespace_and_comments() {
    assert_eq!(hex("00 0a # comment ff\n  ff\t# x\n"), vec![0x00, 0x0a, 0xff]);
}

/// The comparison really compares: one wrong byte must fail.
#[test]
#[should_panic(expected = "bytes differ")]
fn check_rejects_a_wrong_byte() {
    let value = m::HeartbeatResponse { error_code: 25, ..Default::default() };
    check(&value, 0, &hex("001a"));
}
