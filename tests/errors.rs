//! Each encode and decode error the protocol can raise, asserted with its context: message,
//! version, field path and (for decoding) byte offset.

use kwire::messages::fetch_request::ReplicaState;
use kwire::messages::metadata_request::MetadataRequestTopic;
use kwire::messages::metadata_response::{MetadataResponsePartition, MetadataResponseTopic};
use kwire::messages::{FetchRequest, JoinGroupRequest, MetadataRequest, MetadataResponse, RequestHeader};
use kwire::{smallvec, Bytes, Decode, DecodeErrorKind, EncodeErrorKind, Message, UnknownTaggedFields};

fn path(e: &kwire::EncodeError) -> String {
    e.path()
        .map(|s| match s {
            kwire::runtime::PathSegment::Field(f) => f.to_string(),
            kwire::runtime::PathSegment::Index(i) => format!("[{i}]"),
        })
        .collect::<Vec<_>>()
        .join(".")
}

#[test]
fn encode_unsupported_version() {
    let past = MetadataRequest::VERSIONS.hi + 1;
    let err = MetadataRequest::default().to_bytes(past).unwrap_err();
    assert_eq!(err.kind(), &EncodeErrorKind::UnsupportedVersion);
    assert_eq!(err.to_string(), format!("failed to encode MetadataRequest v{past}: version is not supported"));
    let err = MetadataRequest::decode(&mut Bytes::new(), -1).unwrap_err();
    assert_eq!(err.kind(), &DecodeErrorKind::UnsupportedVersion { version: -1 });
}

#[test]
fn encode_non_default_value_of_a_field_the_version_lacks() {
    // IncludeClusterAuthorizedOperations exists in v8-10 only and is not ignorable.
    let req = MetadataRequest { include_cluster_authorized_operations: true, ..Default::default() };
    assert!(req.to_bytes(10).is_ok());
    let err = req.to_bytes(11).unwrap_err();
    assert_eq!(err.kind(), &EncodeErrorKind::NonDefaultInVersion);
    assert_eq!(path(&err), "IncludeClusterAuthorizedOperations");
    assert_eq!(err.message(), Some("MetadataRequest"));
    assert_eq!(err.version(), Some(11));

    // A tagged struct (FetchRequest.ReplicaState, tag 1, v15+) that is not ignorable.
    let fetch = FetchRequest { replica_state: ReplicaState { replica_id: 7, ..Default::default() }, ..Default::default() };
    assert!(fetch.to_bytes(15).is_ok());
    let err = fetch.to_bytes(14).unwrap_err();
    assert_eq!(err.kind(), &EncodeErrorKind::NonDefaultInVersion);
    assert_eq!(path(&err), "ReplicaState");

    // AllowAutoTopicCreation (v4+, default true) is explicitly not ignorable.
    let req = MetadataRequest { allow_auto_topic_creation: false, ..Default::default() };
    assert_eq!(req.to_bytes(3).unwrap_err().kind(), &EncodeErrorKind::NonDefaultInVersion);

    // Ignorable fields are dropped silently: JoinGroupRequest.RebalanceTimeoutMs (v1+) at v0
    // (where the spec set still has v0).
    if !JoinGroupRequest::VERSIONS.contains(0) {
        return;
    }
    let join = JoinGroupRequest { rebalance_timeout_ms: 5000, ..Default::default() };
    let v0 = join.to_bytes(0).unwrap();
    assert_eq!(JoinGroupRequest::decode(&mut v0.clone(), 0).unwrap().rebalance_timeout_ms, -1);
}

#[test]
fn encode_null_in_a_non_nullable_version() {
    // Topics is nullable from v1; at v0 null is not allowed.
    let req = MetadataRequest { topics: None, ..Default::default() };
    assert!(req.to_bytes(1).is_ok());
    let err = req.to_bytes(0).unwrap_err();
    assert_eq!(err.kind(), &EncodeErrorKind::NullInNonNullableVersion);
    assert_eq!(path(&err), "Topics");

    // A nested one: Topics[0].Name is nullable from v10 only.
    let req = MetadataRequest { topics: Some(vec![MetadataRequestTopic { name: None, ..Default::default() }]), ..Default::default() };
    assert!(req.to_bytes(10).is_ok());
    let err = req.to_bytes(9).unwrap_err();
    assert_eq!(path(&err), "Topics.[0].Name");
}

#[test]
fn encode_tagged_fields_in_a_non_flexible_version() {
    let mut unknown = UnknownTaggedFields::default();
    unknown.push(5, Bytes::from_static(b"x"));
    let req = MetadataRequest { unknown_tagged_fields: unknown, ..Default::default() };
    assert!(req.to_bytes(9).is_ok());
    let err = req.to_bytes(8).unwrap_err();
    assert_eq!(err.kind(), &EncodeErrorKind::TaggedFieldsInNonFlexibleVersion);
}

#[test]
fn encode_string_too_long() {
    let long: String = "x".repeat(40_000);
    let req = MetadataRequest { topics: Some(vec![MetadataRequestTopic { name: Some(long.into()), ..Default::default() }]), ..Default::default() };
    let err = req.to_bytes(12).unwrap_err();
    assert_eq!(err.kind(), &EncodeErrorKind::TooLong(40_000));
    assert_eq!(path(&err), "Topics.[0].Name");
}

fn sample_response() -> MetadataResponse {
    MetadataResponse {
        topics: vec![MetadataResponseTopic {
            name: Some("orders".into()),
            partitions: vec![MetadataResponsePartition { replica_nodes: smallvec![1, 2, 3], ..Default::default() }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[test]
fn decode_truncated_names_message_path_and_offset() {
    let bytes = sample_response().to_bytes(12).unwrap();
    // Cut inside the replica list of the first partition.
    let cut = bytes.len() - 12;
    let err = MetadataResponse::decode(&mut bytes.slice(..cut), 12).unwrap_err();
    assert_eq!(err.message(), Some("MetadataResponse"));
    assert_eq!(err.version(), Some(12));
    assert!(err.path_string().starts_with("Topics[0].Partitions[0]."), "{}", err.path_string());
    let offset = err.offset().unwrap();
    assert!(offset <= cut, "offset {offset} beyond the input");
    assert!(err.to_string().starts_with("failed to decode MetadataResponse v12 field Topics[0].Partitions[0]."), "{err}");
}

#[test]
fn decode_null_in_a_non_nullable_version() {
    // MetadataRequest v0: Topics is an int32-counted array, not nullable at v0.
    let err = MetadataRequest::decode(&mut Bytes::from_static(&[0xff, 0xff, 0xff, 0xff]), 0).unwrap_err();
    assert_eq!(err.kind(), &DecodeErrorKind::UnexpectedNull);
    assert_eq!(err.path_string(), "Topics");
    // At v1 the same bytes are a null array.
    let req = MetadataRequest::decode(&mut Bytes::from_static(&[0xff, 0xff, 0xff, 0xff]), 1).unwrap();
    assert_eq!(req.topics, None);
}

/// FetchRequest v12 with empty topics, ending in its top-level tagged section.
fn fetch_v12_with_tags(tags: &[u8]) -> Bytes {
    let plain = FetchRequest::default().to_bytes(12).unwrap();
    assert_eq!(plain.last(), Some(&0), "empty tagged section last");
    let mut v = plain[..plain.len() - 1].to_vec();
    v.extend_from_slice(tags);
    Bytes::from(v)
}

#[test]
fn decode_known_tag_in_a_version_where_it_is_not_valid() {
    // Tag 1 (ReplicaState) exists from v15; v12 is flexible but does not have it.
    let bytes = fetch_v12_with_tags(&[1, 1, 0]);
    let err = FetchRequest::decode(&mut bytes.clone(), 12).unwrap_err();
    assert_eq!(err.kind(), &DecodeErrorKind::TagNotValidForVersion { tag: 1, version: 12 });
}

#[test]
fn a_lenient_decode_keeps_a_tag_of_another_version_and_marks_it() {
    use kwire::runtime::lenient::{decode_leniently, Leniency, LeniencyKind};
    let bytes = fetch_v12_with_tags(&[1, 1, 0]);
    let (decoded, notes) = decode_leniently(|| FetchRequest::decode(&mut bytes.clone(), 12));
    let request = decoded.unwrap();
    let tags: Vec<u32> = request.unknown_tagged_fields.iter().map(|f| f.tag).collect();
    assert_eq!(tags, [1], "kept as an unknown tagged field");
    assert_eq!(notes, [Leniency { kind: LeniencyKind::TagNotValidForVersion { tag: 1 }, remaining: 0 }]);
    assert_eq!(request.to_bytes(12).unwrap(), bytes, "written back as it came");
    // Strict again outside the scope.
    assert!(FetchRequest::decode(&mut bytes.clone(), 12).is_err());
}

#[test]
fn decode_tagged_field_whose_size_does_not_match() {
    // Tag 0 (ClusterId, compact nullable string) declares 5 bytes but the string "ab" takes 3.
    let bytes = fetch_v12_with_tags(&[1, 0, 5, 3, b'a', b'b', 0, 0]);
    let err = FetchRequest::decode(&mut bytes.clone(), 12).unwrap_err();
    assert_eq!(err.kind(), &DecodeErrorKind::TaggedFieldSizeMismatch { tag: 0, declared: 5, consumed: 3 });
    assert_eq!(err.path_string(), "");
    // And the right size decodes.
    let ok = FetchRequest::decode(&mut fetch_v12_with_tags(&[1, 0, 3, 3, b'a', b'b']), 12).unwrap();
    assert_eq!(ok.cluster_id.as_deref(), Some("ab"));
}

#[test]
fn decode_invalid_utf8_and_overlong_varint() {
    // RequestHeader v1: api key, version, correlation id, client id "\xc3\x28".
    let bad = [0, 3, 0, 12, 0, 0, 0, 7, 0, 2, 0xc3, 0x28];
    let err = RequestHeader::decode(&mut Bytes::copy_from_slice(&bad), 1).unwrap_err();
    assert_eq!(err.kind(), &DecodeErrorKind::InvalidUtf8);
    assert_eq!(err.path_string(), "ClientId");
    assert_eq!(err.offset(), Some(10));
    // RequestHeader v2 with a tagged section count that never ends.
    let bad = [0, 3, 0, 12, 0, 0, 0, 7, 0xff, 0xff, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01];
    let err = RequestHeader::decode(&mut Bytes::copy_from_slice(&bad), 2).unwrap_err();
    assert_eq!(err.kind(), &DecodeErrorKind::VarintTooLong);
}

#[test]
fn unknown_tagged_fields_survive_byte_for_byte() {
    // RequestHeader v2, null client id, then two unknown tags (7 and 9) in wire order.
    let wire = [0, 18, 0, 3, 0, 0, 0, 1, 0xff, 0xff, 2, 7, 1, 0xaa, 9, 2, 0xbb, 0xcc];
    let header = RequestHeader::decode(&mut Bytes::copy_from_slice(&wire), 2).unwrap();
    assert_eq!(header.unknown_tagged_fields.len(), 2);
    assert_eq!(header.to_bytes(2).unwrap().as_ref(), &wire[..]);
}

/// The default limits refuse what Kafka 4.4's generated decoders refuse (`MessageUtil`'s
/// `MAX_ARRAY_LENGTH` = 1,000,000 elements, `MAX_TAGGED_FIELD_COUNT` = 10,000 fields), and
/// nothing less: exactly at the bound decodes, one past it fails before anything is allocated,
/// in the owned decode and the borrowed view alike.
mod default_limits_match_kafka {
    use kwire::messages::describe_log_dirs_request::DescribableLogDirTopic;
    use kwire::messages::{ApiVersionsRequest, DescribeLogDirsRequest};
    use kwire::runtime::limits::Limit;
    use kwire::{Bytes, Decode, DecodeErrorKind, Message, SmallVec, Viewed};

    type ApiVersionsRequestView<'a> = <ApiVersionsRequest as Viewed>::View<'a>;
    type DescribeLogDirsRequestView<'a> = <DescribeLogDirsRequest as Viewed>::View<'a>;

    fn limit_of(kind: &DecodeErrorKind) -> Option<(Limit, u64, u64)> {
        match kind {
            DecodeErrorKind::LimitExceeded { limit, value, max } => Some((*limit, *value, *max)),
            _ => None,
        }
    }

    /// A DescribeLogDirs v4 request whose one topic lists `n` partitions (int32 each).
    fn log_dirs(n: i32) -> Bytes {
        let topic = DescribableLogDirTopic { topic: "t".into(), partitions: SmallVec::from_vec((0..n).collect()), ..Default::default() };
        DescribeLogDirsRequest { topics: Some(vec![topic]), ..Default::default() }.to_bytes(4).unwrap()
    }

    #[test]
    fn an_array_of_one_million_elements_decodes_and_one_more_does_not() {
        let at = log_dirs(1_000_000);
        let owned = DescribeLogDirsRequest::decode(&mut at.clone(), 4).unwrap();
        assert_eq!(owned.topics.as_ref().map(|t| t[0].partitions.len()), Some(1_000_000));
        let view = DescribeLogDirsRequestView::decode(&mut &at[..], 4).unwrap();
        assert_eq!(view.topics.map(|t| t.len()), Some(1));

        let over = log_dirs(1_000_001);
        let err = DescribeLogDirsRequest::decode(&mut over.clone(), 4).unwrap_err();
        assert_eq!(limit_of(err.kind()), Some((Limit::ArrayLen, 1_000_001, 1_000_000)), "{err}");
        assert_eq!(err.path_string(), "Topics[0].Partitions");
        let view_err = DescribeLogDirsRequestView::decode(&mut &over[..], 4).unwrap_err();
        assert_eq!(view_err, err, "the view fails where the owned decode does");
    }

    /// An ApiVersions v3 request body (two empty compact strings) with `n` unknown tagged fields
    /// of no bytes each, tags from 100 up.
    fn api_versions_with_tags(n: u32) -> Bytes {
        let mut body = vec![1u8, 1];
        let varint = |mut v: u32, out: &mut Vec<u8>| loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(byte);
                break;
            }
            out.push(byte | 0x80);
        };
        varint(n, &mut body);
        for tag in 100..100 + n {
            varint(tag, &mut body);
            body.push(0);
        }
        Bytes::from(body)
    }

    #[test]
    fn a_tagged_section_of_ten_thousand_fields_decodes_and_one_more_does_not() {
        let at = api_versions_with_tags(10_000);
        let owned = ApiVersionsRequest::decode(&mut at.clone(), 3).unwrap();
        assert_eq!(owned.unknown_tagged_fields.len(), 10_000);
        assert_eq!(owned.to_bytes(3).unwrap(), at, "every unknown field is written back");
        assert!(ApiVersionsRequestView::decode(&mut &at[..], 3).is_ok());

        let over = api_versions_with_tags(10_001);
        let err = ApiVersionsRequest::decode(&mut over.clone(), 3).unwrap_err();
        assert_eq!(limit_of(err.kind()), Some((Limit::TaggedFields, 10_001, 10_000)), "{err}");
        let view_err = ApiVersionsRequestView::decode(&mut &over[..], 3).unwrap_err();
        assert_eq!(view_err, err, "the view fails where the owned decode does");
    }

    #[test]
    fn the_limits_are_configurable() {
        use kwire::runtime::limits::{decode_with_limits, DecodeLimits};
        let over = log_dirs(1_000_001);
        let roomy = DecodeLimits { max_array_len: 2_000_000, ..DecodeLimits::DEFAULT };
        assert!(decode_with_limits(&roomy, || DescribeLogDirsRequest::decode(&mut over.clone(), 4)).is_ok());
        let tight = DecodeLimits { max_tagged_fields: 3, ..DecodeLimits::DEFAULT };
        let err = decode_with_limits(&tight, || ApiVersionsRequest::decode(&mut api_versions_with_tags(4), 3)).unwrap_err();
        assert_eq!(limit_of(err.kind()), Some((Limit::TaggedFields, 4, 3)));
        assert!(decode_with_limits(&tight, || ApiVersionsRequest::decode(&mut api_versions_with_tags(3), 3)).is_ok());
    }
}
