//! What proxies need from the codec: ApiVersions mediation, the KIP-511 answer to an
//! ApiVersions version this build does not know, selective decoding with raw passthrough, and
//! byte-exact re-encoding of frames a proxy decoded but did not change.

use kwire::codec::{ClientCodec, OutboundRequest, SelectedResponse, Selection, ServerCodec};
use kwire::messages::api_versions_response::ApiVersion;
use kwire::messages::metadata_request::MetadataRequestTopic;
use kwire::messages::{ApiVersionsResponse, MetadataRequest, MetadataResponse, ProduceRequest, ProduceResponse};
use kwire::negotiate::{mediate, NegotiateOptions};
use kwire::{ApiKey, Bytes, BytesMut, Decode, Encode, ErrorCode, Message, ResponseKind};

fn advertised(key: i16, lo: i16, hi: i16) -> ApiVersion {
    ApiVersion { api_key: key, min_version: lo, max_version: hi, ..Default::default() }
}

#[test]
fn mediation_intersects_the_brokers_ranges_with_what_this_build_decodes() {
    let produce = ApiKey::Produce.stable_versions();
    let broker = ApiVersionsResponse {
        error_code: 0,
        throttle_time_ms: 7,
        api_keys: vec![
            advertised(ApiKey::Produce.key(), 0, produce.hi + 5), // newer than this build
            advertised(999, 0, 3),                                // an api this build does not know
            advertised(ApiKey::Metadata.key(), 1, 4),             // older than this build's newest
        ],
        ..Default::default()
    };
    let mediated = mediate(&broker, NegotiateOptions::default());
    assert_eq!(mediated.throttle_time_ms, 7, "the rest of the response kept");
    assert_eq!(mediated.api_keys, vec![advertised(ApiKey::Produce.key(), produce.lo.max(0), produce.hi), advertised(ApiKey::Metadata.key(), 1, 4)]);
    // Ranges that do not meet leave the api out.
    let disjoint = ApiVersionsResponse { api_keys: vec![advertised(ApiKey::Metadata.key(), 900, 901)], ..Default::default() };
    assert!(mediate(&disjoint, NegotiateOptions::default()).api_keys.is_empty());
}

/// A request frame: size, header at the version the api dictates, body bytes.
fn request_frame(key: i16, version: i16, correlation_id: i32, body: &[u8]) -> BytesMut {
    let header = kwire::messages::RequestHeader {
        request_api_key: key,
        request_api_version: version,
        correlation_id,
        client_id: Some("proxy-test".into()),
        ..Default::default()
    };
    let hv = kwire::header::request_header_version(key, version);
    let mut out = BytesMut::new();
    out.extend_from_slice(&((header.encoded_len(hv) + body.len()) as i32).to_be_bytes());
    header.encode(&mut out, hv).unwrap();
    out.extend_from_slice(body);
    out
}

#[test]
fn an_api_versions_version_this_build_lacks_is_answered_at_v0_without_decoding_it() {
    let newer = ApiKey::ApiVersions.info().valid.hi + 3;
    // A body this build cannot read: it is never decoded.
    let mut wire = request_frame(ApiKey::ApiVersions.key(), newer, 5, &[0xde, 0xad, 0xbe, 0xef]);
    let frame = ServerCodec::new().decode_request(&mut wire).unwrap().unwrap();
    let ours = ApiKey::ApiVersions.stable_versions();
    let answer = frame.unsupported_api_versions(ours).expect("answered");
    assert_eq!((answer.correlation_id, answer.version), (5, 0));
    let ResponseKind::ApiVersions(body) = &answer.body else { panic!("{:?}", answer.body) };
    assert_eq!(body.error_code, ErrorCode::UNSUPPORTED_VERSION.0);
    assert_eq!(body.api_keys, vec![advertised(ApiKey::ApiVersions.key(), ours.lo, ours.hi)]);
    // A client that asked at that version reads it at v0, as Kafka's clients do.
    let mut out = BytesMut::new();
    ServerCodec::new().encode_response(answer, &mut out).unwrap();
    let mut client = ClientCodec::new();
    client.expect_response(5, ApiKey::ApiVersions, ours.hi).unwrap();
    let response = client.decode_response(&mut out).unwrap().unwrap();
    assert_eq!(response.version, 0);
    // A version this side serves is not answered here.
    let mut wire = request_frame(ApiKey::ApiVersions.key(), ours.hi, 6, &[0, 0, 0]);
    let frame = ServerCodec::new().decode_request(&mut wire).unwrap().unwrap();
    assert!(frame.unsupported_api_versions(ours).is_none());
}

#[test]
fn frames_not_selected_pass_through_untouched_and_selected_ones_decode() {
    let selection = Selection::none().api(ApiKey::Metadata);
    assert!(selection.wants(ApiKey::Metadata.key(), 12) && !selection.wants(ApiKey::Produce.key(), 9));
    assert!(Selection::all().wants(ApiKey::Produce.key(), 9));
    // Requests: Produce passes through as it came, even with a body that is not a Produce body.
    let mut wire = request_frame(ApiKey::Produce.key(), 9, 1, &[1, 2, 3]);
    let produce = ServerCodec::new().decode_request(&mut wire).unwrap().unwrap();
    assert_eq!(produce.decode_selected(&selection).unwrap(), None);
    assert_eq!(produce.body.as_ref(), &[1, 2, 3]);
    let metadata = MetadataRequest { topics: Some(vec![MetadataRequestTopic { name: Some("t".into()), ..Default::default() }]), ..Default::default() };
    let mut wire = request_frame(ApiKey::Metadata.key(), 12, 2, &metadata.to_bytes(12).unwrap());
    let frame = ServerCodec::new().decode_request(&mut wire).unwrap().unwrap();
    assert_eq!(frame.decode_selected(&selection).unwrap(), Some(metadata.into()));

    // Responses: the Produce response comes back as the bytes that arrived.
    let mut client = ClientCodec::new();
    client.encode_request(OutboundRequest::new(ApiKey::Produce, 9, 3, ProduceRequest { acks: 1, ..Default::default() }.into()), &mut BytesMut::new()).unwrap();
    client.encode_request(OutboundRequest::new(ApiKey::Metadata, 12, 4, MetadataRequest::default().into()), &mut BytesMut::new()).unwrap();
    let mut wire = BytesMut::new();
    for (corr, api, body) in [(3, ApiKey::Produce, ResponseKind::from(ProduceResponse::default())), (4, ApiKey::Metadata, MetadataResponse::default().into())] {
        let response = kwire::codec::OutboundResponse { correlation_id: corr, api_key: api, version: if corr == 3 { 9 } else { 12 }, body };
        ServerCodec::new().encode_response(response, &mut wire).unwrap();
    }
    let first_frame = Bytes::copy_from_slice(&wire[4..4 + i32::from_be_bytes(wire[..4].try_into().unwrap()) as usize]);
    match client.decode_response_selected(&mut wire, &selection).unwrap().unwrap() {
        SelectedResponse::Raw { correlation_id, api_key, version, frame } => {
            assert_eq!((correlation_id, api_key, version), (3, ApiKey::Produce, 9));
            assert_eq!(frame, first_frame, "the frame as it came");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(client.decode_response_selected(&mut wire, &selection).unwrap().unwrap(), SelectedResponse::Decoded(r) if r.api_key == ApiKey::Metadata));
    assert_eq!(client.in_flight(), 0);
}

#[test]
fn a_decoded_frame_the_proxy_did_not_change_re_encodes_byte_for_byte() {
    // Unknown tags, a duplicate among them, around a known one (MetadataRequest v12's tagged
    // section has no known tags; the struct keeps the unknown ones in wire order).
    let mut request = MetadataRequest { topics: Some(vec![]), ..Default::default() };
    for (tag, data) in [(3u32, &b"a"[..]), (3, b"b"), (7, b"")] {
        request.unknown_tagged_fields.push(tag, Bytes::copy_from_slice(data));
    }
    let bytes = request.to_bytes(12).unwrap();
    let decoded = MetadataRequest::decode(&mut bytes.clone(), 12).unwrap();
    let tags: Vec<u32> = decoded.unknown_tagged_fields.iter().map(|f| f.tag).collect();
    assert_eq!(tags, [3, 3, 7], "duplicates and order kept");
    assert_eq!(decoded.to_bytes(12).unwrap(), bytes);
    // Out of ascending order (Kafka never writes that, but a peer might): kept as it came.
    let mut request = MetadataRequest { topics: Some(vec![]), ..Default::default() };
    for tag in [9u32, 2] {
        request.unknown_tagged_fields.push(tag, Bytes::new());
    }
    let bytes = request.to_bytes(12).unwrap();
    let decoded = MetadataRequest::decode(&mut bytes.clone(), 12).unwrap();
    assert_eq!(decoded.to_bytes(12).unwrap(), bytes);
}
