//! The connection codec (`kwire::codec`): framing limits, header versions, unknown apis
//! and versions, correlation-id tracking.

use kwire::codec::{ClientCodec, CodecError, FrameDecoder, OutboundRequest, OutboundResponse, ServerCodec};
use kwire::messages::{ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse, ProduceRequest};
use kwire::{ApiKey, BytesMut, Encode, RequestKind, ResponseKind};

#[test]
fn frame_larger_than_maximum_is_an_error_before_buffering() {
    let mut buf = BytesMut::from(&(1_000_000i32).to_be_bytes()[..]);
    let err = FrameDecoder::new(1000).decode(&mut buf).unwrap_err();
    assert!(matches!(err, CodecError::FrameTooLarge { size: 1_000_000, max: 1000 }), "{err}");
    assert!(buf.capacity() < 1000, "reserved {} bytes for a refused frame", buf.capacity());
    let mut buf = BytesMut::from(&(-5i32).to_be_bytes()[..]);
    assert!(matches!(FrameDecoder::new(1000).decode(&mut buf), Err(CodecError::NegativeFrameSize(-5))));
}

#[test]
fn partial_frames_wait_for_more_bytes() {
    let mut wire = BytesMut::new();
    let request = OutboundRequest::new(ApiKey::Metadata, 12, 9, MetadataRequest::default().into()).with_client_id("c");
    ClientCodec::new().encode_request(request, &mut wire).unwrap();
    let whole = wire.clone();
    let mut server = ServerCodec::new();
    for cut in 0..whole.len() {
        let mut part = BytesMut::from(&whole[..cut]);
        assert!(server.decode_request(&mut part).unwrap().is_none(), "cut at {cut}");
    }
    let frame = server.decode_request(&mut wire).unwrap().unwrap();
    assert_eq!(frame.header_version, 2); // Metadata v12 is flexible
    assert_eq!((frame.correlation_id(), frame.client_id()), (9, Some("c")));
    assert!(matches!(frame.decode_body().unwrap(), RequestKind::Metadata(_)));
    assert!(wire.is_empty());
}

fn raw_request(key: i16, version: i16, correlation_id: i32, body: &[u8]) -> BytesMut {
    // Header v1: key, version, correlation id, client id (int16 length + bytes).
    let mut frame = Vec::new();
    frame.extend_from_slice(&key.to_be_bytes());
    frame.extend_from_slice(&version.to_be_bytes());
    frame.extend_from_slice(&correlation_id.to_be_bytes());
    frame.extend_from_slice(&1i16.to_be_bytes());
    frame.push(b'x');
    frame.extend_from_slice(body);
    let mut out = BytesMut::from(&(frame.len() as i32).to_be_bytes()[..]);
    out.extend_from_slice(&frame);
    out
}

#[test]
fn unknown_api_keys_and_versions_are_typed_errors_with_the_header_intact() {
    let mut server = ServerCodec::new();
    let frame = server.decode_request(&mut raw_request(9999, 0, 77, b"junk")).unwrap().unwrap();
    assert_eq!(frame.correlation_id(), 77);
    assert!(matches!(frame.api_key(), Err(CodecError::UnknownApiKey(9999))));
    assert!(matches!(frame.decode_body(), Err(CodecError::UnknownApiKey(9999))));

    // Produce is flexible from v9 on, open-ended: v999's header is v2, so it ends with an
    // (empty) tagged-field section.
    let frame = server.decode_request(&mut raw_request(ApiKey::Produce.key(), 999, 78, &[0])).unwrap().unwrap();
    assert_eq!(frame.header_version, 2);
    assert_eq!(frame.correlation_id(), 78);
    let err = frame.decode_body().unwrap_err();
    assert!(matches!(err, CodecError::UnsupportedVersion { api_key: ApiKey::Produce, version: 999 }), "{err}");

    // A malformed body is a Body error naming the api and version.
    let frame = server.decode_request(&mut raw_request(ApiKey::Metadata.key(), 1, 79, &[0, 0, 0, 5])).unwrap().unwrap();
    let err = frame.decode_body().unwrap_err();
    assert!(matches!(err, CodecError::Body { api_key: ApiKey::Metadata, version: 1, .. }), "{err}");
}

#[test]
fn a_newer_api_versions_request_is_read_with_a_flexible_header() {
    // ApiVersions is flexible from v3, open-ended, so an unknown newer version has header v2.
    let newer = ApiKey::ApiVersions.info().valid.hi + 1;
    assert_eq!(kwire::header::request_header_version(ApiKey::ApiVersions.key(), newer), 2);
    assert_eq!(kwire::header::request_header_version(ApiKey::ApiVersions.key(), 2), 1);
    assert_eq!(kwire::header::request_header_version(ApiKey::ControlledShutdown.key(), 0), 0);
}

#[test]
fn client_matches_responses_by_correlation_id() {
    let (mut client, mut server) = (ClientCodec::new(), ServerCodec::new());
    let mut wire = BytesMut::new();
    client.encode_request(OutboundRequest::new(ApiKey::Metadata, 1, 1, MetadataRequest::default().into()), &mut wire).unwrap();
    client.encode_request(OutboundRequest::new(ApiKey::Metadata, 12, 2, MetadataRequest::default().into()), &mut wire).unwrap();
    assert!(matches!(
        client.encode_request(OutboundRequest::new(ApiKey::Metadata, 12, 2, MetadataRequest::default().into()), &mut wire),
        Err(CodecError::DuplicateCorrelationId(2))
    ));
    // acks = 0: no response expected, nothing remembered.
    let produce = ProduceRequest { acks: 0, ..Default::default() };
    client.encode_request(OutboundRequest::new(ApiKey::Produce, 9, 3, produce.into()), &mut wire).unwrap();
    assert_eq!(client.in_flight(), 2);

    let first = server.decode_request(&mut wire).unwrap().unwrap();
    let second = server.decode_request(&mut wire).unwrap().unwrap();
    let mut back = BytesMut::new();
    // Answered out of order: the client still decodes each at its own version.
    for frame in [&second, &first] {
        let response = OutboundResponse::new(frame, MetadataResponse { controller_id: 5, ..Default::default() }.into()).unwrap();
        server.encode_response(response, &mut back).unwrap();
    }
    let a = client.decode_response(&mut back).unwrap().unwrap();
    let b = client.decode_response(&mut back).unwrap().unwrap();
    assert_eq!((a.header.correlation_id, a.version), (2, 12));
    assert_eq!((b.header.correlation_id, b.version), (1, 1));
    assert_eq!(client.in_flight(), 0);

    // An unknown correlation id is an error, not a guess.
    let response = OutboundResponse::new(&first, MetadataResponse::default().into()).unwrap();
    server.encode_response(response, &mut back).unwrap();
    assert!(matches!(client.decode_response(&mut back), Err(CodecError::UnknownCorrelationId(1))));
}

#[test]
fn api_versions_error_at_v0_is_decoded_at_v0() {
    let mut client = ClientCodec::new();
    let mut wire = BytesMut::new();
    client.encode_request(OutboundRequest::new(ApiKey::ApiVersions, 3, 4, ApiVersionsRequest::default().into()), &mut wire).unwrap();
    // What a broker that does not know v3 sends: header v0, body v0 with error 35.
    let body = ApiVersionsResponse { error_code: 35, ..Default::default() };
    let mut frame = BytesMut::new();
    frame.extend_from_slice(&((4 + body.encoded_len(0)) as i32).to_be_bytes());
    frame.extend_from_slice(&4i32.to_be_bytes());
    body.encode(&mut frame, 0).unwrap();
    let response = client.decode_response(&mut frame).unwrap().unwrap();
    assert_eq!(response.version, 0);
    assert!(matches!(response.body, ResponseKind::ApiVersions(r) if r.error_code == 35));
}

#[test]
fn mismatched_body_and_unknown_versions_are_refused_on_encode() {
    let mut client = ClientCodec::new();
    let mut wire = BytesMut::new();
    let err = client.encode_request(OutboundRequest::new(ApiKey::Fetch, 4, 1, MetadataRequest::default().into()), &mut wire).unwrap_err();
    assert!(matches!(err, CodecError::ApiKeyMismatch { header: ApiKey::Fetch, body: ApiKey::Metadata }), "{err}");
    let err = client.encode_request(OutboundRequest::new(ApiKey::Metadata, 999, 1, MetadataRequest::default().into()), &mut wire).unwrap_err();
    assert!(matches!(err, CodecError::UnsupportedVersion { .. }), "{err}");
    assert!(wire.is_empty());
    assert_eq!(client.in_flight(), 0);
}
