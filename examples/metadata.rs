//! Encodes a MetadataRequest v12 frame with its header, then decodes a MetadataResponse frame.
//!
//! `cargo run --example metadata`

use kwire::messages::metadata_request::MetadataRequestTopic;
use kwire::messages::metadata_response::{MetadataResponseBroker, MetadataResponseTopic};
use kwire::messages::{MetadataRequest, MetadataResponse, RequestHeader, ResponseHeader};
use kwire::{ApiKey, Bytes, BytesMut, Decode, Encode};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let version = 12;
    let header = RequestHeader {
        request_api_key: ApiKey::Metadata.key(),
        request_api_version: version,
        correlation_id: 7,
        client_id: Some("example".into()),
        ..Default::default()
    };
    let body = MetadataRequest { topics: Some(vec![MetadataRequestTopic { name: Some("orders".into()), ..Default::default() }]), ..Default::default() };

    // A frame is an int32 size, the header at the version the api key dictates, then the body.
    let header_version = ApiKey::Metadata.request_header_version(version);
    let size = header.encoded_len(header_version) + body.encoded_len(version);
    let mut frame = BytesMut::with_capacity(4 + size);
    frame.extend_from_slice(&(size as i32).to_be_bytes());
    header.encode(&mut frame, header_version)?;
    body.encode(&mut frame, version)?;
    println!("request frame ({} bytes): {}", frame.len(), hex(&frame));

    // The broker's answer, built here so the example is self-contained.
    let response = MetadataResponse {
        brokers: vec![MetadataResponseBroker { node_id: 1, host: "localhost".into(), port: 9092, ..Default::default() }],
        topics: vec![MetadataResponseTopic { name: Some("orders".into()), ..Default::default() }],
        ..Default::default()
    };
    let response_header = ResponseHeader { correlation_id: 7, ..Default::default() };
    let rh_version = ApiKey::Metadata.response_header_version(version);
    let mut wire = BytesMut::new();
    response_header.encode(&mut wire, rh_version)?;
    response.encode(&mut wire, version)?;

    // Decoding: the header first, then the body, both zero-copy slices of `input`.
    let mut input: Bytes = wire.freeze();
    let got_header = ResponseHeader::decode(&mut input, rh_version)?;
    let got = MetadataResponse::decode(&mut input, version)?;
    println!("correlation id {}: {} broker(s), topic {:?}", got_header.correlation_id, got.brokers.len(), got.topics[0].name);
    assert_eq!(got, response);
    Ok(())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
