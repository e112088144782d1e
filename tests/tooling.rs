//! Issue 8: error codes, version negotiation, keyed lookups, header peek, entity visitors.

use kwire::header::{decode_request_header, peek_request_header};
use kwire::messages::api_versions_response::ApiVersion;
use kwire::messages::create_topics_request::CreatableTopic;
use kwire::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kwire::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kwire::messages::{ApiVersionsResponse, ProduceRequest, ProduceResponse, RequestHeader};
use kwire::negotiate::{negotiate, NegotiateOptions, NegotiationError};
use kwire::{ApiKey, Bytes, BytesMut, Encode, EntityMut, EntityType, EntityValue, ErrorCode, KeyedSlice, ResponseKind, VersionRange, Visit};

fn produce_response() -> ProduceResponse {
    let partition = |index, code: ErrorCode| PartitionProduceResponse { index, error_code: code.0, ..Default::default() };
    ProduceResponse {
        responses: vec![
            TopicProduceResponse {
                name: "a".into(),
                partition_responses: vec![partition(0, ErrorCode::NONE), partition(1, ErrorCode::NOT_LEADER_OR_FOLLOWER)],
                ..Default::default()
            },
            TopicProduceResponse { name: "b".into(), partition_responses: vec![partition(0, ErrorCode::TOPIC_AUTHORIZATION_FAILED)], ..Default::default() },
        ],
        ..Default::default()
    }
}

#[test]
fn every_error_code_of_a_response_is_found_without_knowing_its_shape() {
    let response = ResponseKind::from(produce_response());
    let errors = response.errors();
    assert_eq!(errors, vec![("ErrorCode", ErrorCode::NOT_LEADER_OR_FOLLOWER), ("ErrorCode", ErrorCode::TOPIC_AUTHORIZATION_FAILED)]);
    assert!(errors[0].1.is_retriable());
    assert!(!errors[1].1.is_retriable());
    let mut all = 0;
    response.visit_error_codes(&mut |_, _| all += 1);
    assert_eq!(all, 3, "NONE codes are visited too");
}

fn broker_versions(ranges: &[(i16, i16, i16)]) -> ApiVersionsResponse {
    ApiVersionsResponse {
        api_keys: ranges.iter().map(|&(api_key, min_version, max_version)| ApiVersion { api_key, min_version, max_version, ..Default::default() }).collect(),
        ..Default::default()
    }
}

#[test]
fn negotiation_picks_the_highest_common_version() {
    let produce = ApiKey::Produce.stable_versions();
    let metadata = ApiKey::Metadata.stable_versions();
    let response = broker_versions(&[
        (0, produce.lo, produce.hi + 5),   // newer broker: our max
        (3, metadata.lo, metadata.lo + 1), // older broker: its max
        (1, 200, 300),                     // no overlap
        (31000, 0, 3),                     // unknown to us
    ]);
    let n = negotiate(&response, NegotiateOptions::default());
    assert_eq!(n.version(ApiKey::Produce), Ok(produce.hi));
    assert_eq!(n.version(ApiKey::Metadata), Ok(metadata.lo + 1));
    match n.version(ApiKey::Fetch) {
        Err(NegotiationError::NoOverlap { theirs, .. }) => assert_eq!(theirs, VersionRange::new(200, 300)),
        other => panic!("expected no overlap, got {other:?}"),
    }
    assert_eq!(n.version(ApiKey::ApiVersions), Err(NegotiationError::NotAdvertised(ApiKey::ApiVersions)));
    assert_eq!(n.unknown_to_us, vec![31000]);
    assert!(n.version(ApiKey::Fetch).unwrap_err().to_string().contains("no common version for Fetch"));
    // Deprecated versions are flagged.
    let old = broker_versions(&[(3, metadata.lo, metadata.lo)]);
    let n = negotiate(&old, NegotiateOptions::default());
    assert_eq!(n.is_deprecated(ApiKey::Metadata), ApiKey::Metadata.info().deprecated.contains(metadata.lo));
}

#[test]
fn unstable_versions_only_on_opt_in() {
    let Some(api) = ApiKey::ALL.iter().copied().find(|k| k.info().latest_version_unstable && k.info().valid.hi > k.info().valid.lo) else {
        return; // this spec set has no api with an unstable version above a stable one
    };
    let valid = api.info().valid;
    let response = broker_versions(&[(api.key(), valid.lo, valid.hi)]);
    assert_eq!(negotiate(&response, NegotiateOptions::default()).version(api), Ok(valid.hi - 1));
    assert_eq!(negotiate(&response, NegotiateOptions { include_unstable: true }).version(api), Ok(valid.hi));
}

#[test]
fn map_key_arrays_keep_order_and_duplicates_with_lookups() {
    let topic = |name: &str, n| CreatableTopic { name: name.into(), num_partitions: n, ..Default::default() };
    let topics = [topic("a", 1), topic("b", 2), topic("a", 3)];
    assert_eq!(topics.find("a").map(|t| t.num_partitions), Some(1));
    assert_eq!(topics.find_all("a").map(|t| t.num_partitions).collect::<Vec<_>>(), vec![1, 3]);
    assert_eq!(topics.position("b"), Some(1));
    assert!(topics.find("z").is_none());
    let index = topics.index_by_key();
    assert_eq!(index.len(), 2);
    assert_eq!(index["a"], 0);
}

fn request_frame_body(header: &RequestHeader, version: i16) -> Bytes {
    let mut out = BytesMut::new();
    header.encode(&mut out, version).unwrap();
    out.extend_from_slice(b"body");
    out.freeze()
}

#[test]
fn header_peek_works_for_any_api_key() {
    // An api key from the future: header v1 layout.
    let unknown = RequestHeader { request_api_key: 32000, request_api_version: 4, correlation_id: 99, client_id: Some("tool".into()), ..Default::default() };
    let bytes = request_frame_body(&unknown, 1);
    let peek = peek_request_header(&bytes).unwrap();
    assert_eq!((peek.api_key, peek.api_version, peek.correlation_id, peek.client_id), (32000, 4, 99, Some("tool")));
    assert_eq!(peek.known_api_key(), None);
    assert!(decode_request_header(&mut bytes.clone()).is_err());

    // A flexible request: header v2 (client id still a classic string), decoded whole.
    let version = ApiKey::Metadata.stable_versions().hi;
    let header = RequestHeader { request_api_key: 3, request_api_version: version, correlation_id: 5, client_id: None, ..Default::default() };
    let hv = ApiKey::Metadata.request_header_version(version);
    let mut bytes = request_frame_body(&header, hv);
    assert_eq!(peek_request_header(&bytes).unwrap().client_id, None);
    let (decoded, got_version) = decode_request_header(&mut bytes).unwrap();
    assert_eq!((decoded, got_version), (header, hv));
    assert_eq!(&bytes[..], b"body");

    // Short input is an error, never a panic.
    for cut in 0..9 {
        assert!(peek_request_header(&[0u8; 12][..cut]).is_err());
    }
    assert!(peek_request_header(&[0, 3, 0, 1, 0, 0, 0, 1, 0, 5, b'a']).is_err());
}

#[test]
fn entity_visitors_find_and_rename_topics() {
    let mut request = ProduceRequest {
        transactional_id: Some("tx-1".into()),
        topic_data: vec![
            TopicProduceData { name: "orders".into(), partition_data: vec![PartitionProduceData::default()], ..Default::default() },
            TopicProduceData { name: "payments".into(), ..Default::default() },
        ],
        ..Default::default()
    };
    let mut seen = Vec::new();
    request.visit_entities(&mut |field, value| {
        if let EntityValue::Str(s) = value {
            seen.push((field.kind, s.to_string()));
        }
    });
    assert_eq!(
        seen,
        vec![(EntityType::TransactionalId, "tx-1".to_string()), (EntityType::TopicName, "orders".to_string()), (EntityType::TopicName, "payments".to_string()),]
    );
    // A proxy prefixing every topic name.
    request.visit_entities_mut(&mut |field, value| {
        if let (EntityType::TopicName, EntityMut::Str(s)) = (field.kind, value) {
            *s = format!("tenant-a.{}", &**s).into();
        }
    });
    let names: Vec<_> = request.topic_data.iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, ["tenant-a.orders", "tenant-a.payments"]);
    assert_eq!(request.transactional_id.as_deref(), Some("tx-1"));
}
