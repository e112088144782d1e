//! A tiny single-node "broker" for capturing real client traffic: it answers ApiVersions,
//! Metadata and Produce with kwire's types, enough for librdkafka to produce. It keeps no
//! data; it exists so a real client has something to talk to on loopback.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

use kwire::messages::{
    api_versions_response::ApiVersion,
    metadata_response::{MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic},
    produce_response::{PartitionProduceResponse, TopicProduceResponse},
    ApiVersionsResponse, MetadataResponse, ProduceResponse, RequestHeader, ResponseHeader,
};
use kwire::{smallvec, ApiKey, Bytes, BytesMut, Decode, Encode, RequestKind, ResponseKind, Uuid};

const SERVED: [ApiKey; 3] = [ApiKey::ApiVersions, ApiKey::Metadata, ApiKey::Produce];
const UNSUPPORTED_VERSION: i16 = 35;

/// Starts the broker on an ephemeral loopback port; returns the port. `cap` limits the
/// versions advertised for Metadata and Produce (older dissectors know only older versions).
pub fn start(cap: Option<i16>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let _ = serve(conn, port, cap);
            });
        }
    });
    port
}

fn serve(mut conn: TcpStream, port: u16, cap: Option<i16>) -> std::io::Result<()> {
    let mut offset = 0i64;
    loop {
        let mut size = [0u8; 4];
        conn.read_exact(&mut size)?;
        let mut frame = vec![0u8; i32::from_be_bytes(size).max(0) as usize];
        conn.read_exact(&mut frame)?;
        let mut buf = Bytes::from(frame);
        let key = i16::from_be_bytes([buf[0], buf[1]]);
        let version = i16::from_be_bytes([buf[2], buf[3]]);
        let Some(api) = ApiKey::from_i16(key) else { return Ok(()) };
        let header = RequestHeader::decode(&mut buf, api.request_header_version(version));
        let Ok(header) = header else {
            // An ApiVersions version this build lacks: answer v0 with UNSUPPORTED_VERSION, as Kafka does.
            let corr = i32::from_be_bytes(buf.get(4..8).and_then(|b| b.try_into().ok()).unwrap_or_default());
            respond(&mut conn, corr, ApiKey::ApiVersions, 0, api_versions(UNSUPPORTED_VERSION, cap).into())?;
            continue;
        };
        let corr = header.correlation_id;
        let body = match RequestKind::decode(&mut buf, key, version) {
            Ok(b) => b,
            Err(_) if api == ApiKey::ApiVersions => {
                respond(&mut conn, corr, api, 0, api_versions(UNSUPPORTED_VERSION, cap).into())?;
                continue;
            }
            Err(e) => panic!("tiny broker cannot decode {api:?} v{version}: {e}"),
        };
        let response: ResponseKind = match body {
            RequestKind::ApiVersions(_) => api_versions(0, cap).into(),
            RequestKind::Metadata(m) => {
                let names: Vec<String> = m.topics.unwrap_or_default().into_iter().filter_map(|t| t.name.map(|n| n.to_string())).collect();
                metadata(&names, port).into()
            }
            RequestKind::Produce(p) => {
                if p.acks == 0 {
                    continue;
                }
                let responses = p
                    .topic_data
                    .iter()
                    .map(|t| TopicProduceResponse {
                        name: t.name.clone(),
                        partition_responses: t
                            .partition_data
                            .iter()
                            .map(|pd| {
                                offset += 1;
                                PartitionProduceResponse { index: pd.index, base_offset: offset, ..Default::default() }
                            })
                            .collect(),
                        ..Default::default()
                    })
                    .collect();
                ProduceResponse { responses, ..Default::default() }.into()
            }
            other => panic!("tiny broker does not serve {:?}", other.api_key()),
        };
        respond(&mut conn, corr, api, version, response)?;
    }
}

fn api_versions(error_code: i16, cap: Option<i16>) -> ApiVersionsResponse {
    let api_keys = SERVED
        .iter()
        .map(|&k| {
            let mut max = k.stable_versions().hi;
            if let (Some(cap), true) = (cap, k != ApiKey::ApiVersions) {
                max = max.min(cap);
            }
            ApiVersion { api_key: k.key(), min_version: k.info().valid.lo, max_version: max, ..Default::default() }
        })
        .collect();
    ApiVersionsResponse { error_code, api_keys, ..Default::default() }
}

fn topic_id(name: &str) -> Uuid {
    let h = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    Uuid::from_u64_pair(h, !h)
}

fn metadata(names: &[String], port: u16) -> MetadataResponse {
    let topics = names
        .iter()
        .map(|n| MetadataResponseTopic {
            name: Some(n.as_str().into()),
            topic_id: topic_id(n),
            partitions: vec![MetadataResponsePartition {
                partition_index: 0,
                leader_id: 0,
                leader_epoch: 0,
                replica_nodes: smallvec![0],
                isr_nodes: smallvec![0],
                ..Default::default()
            }],
            ..Default::default()
        })
        .collect();
    MetadataResponse {
        brokers: vec![MetadataResponseBroker { node_id: 0, host: "127.0.0.1".into(), port: i32::from(port), ..Default::default() }],
        cluster_id: Some("tiny-cluster".into()),
        controller_id: 0,
        topics,
        ..Default::default()
    }
}

fn respond(conn: &mut TcpStream, corr: i32, api: ApiKey, version: i16, body: ResponseKind) -> std::io::Result<()> {
    let hv = api.response_header_version(version);
    let header = ResponseHeader { correlation_id: corr, ..Default::default() };
    let mut out = BytesMut::new();
    out.extend_from_slice(&[0; 4]);
    header.encode(&mut out, hv).expect("header");
    body.encode(&mut out, version).expect("body");
    let size = (out.len() - 4) as i32;
    out[..4].copy_from_slice(&size.to_be_bytes());
    conn.write_all(&out)
}
