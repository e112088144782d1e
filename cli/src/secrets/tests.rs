//! Every api that carries a secret, crafted with kwire's generated types at every version that
//! can hold it, through every output of `decode` (body, frame, jsonl, pretty), `tap` (lines and
//! JSON) and `pcap`, by the functions the commands call. Each output is searched for the
//! secret's bytes raw, in base64 (standard and URL alphabets, at every alignment), in hex, as
//! JSON text and as a list of byte values. With `--show-secrets` the same search must find the
//! secret in every JSON output, so a search that cannot see a leak fails too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use base64::Engine;
use kwire::messages::*;
use kwire::runtime::json::serde_json::{self, json, Value};
use kwire::{ApiKey, Bytes, Encode, Uuid};

use super::*;
use crate::Direction;

/// An encoded body at a version, or `None` where the message cannot hold it.
type Enc = Box<dyn Fn(i16) -> Option<Vec<u8>>>;

fn enc<T: Encode + 'static>(body: T) -> Enc {
    Box::new(move |version| {
        let mut out = Vec::new();
        body.encode(&mut out, version).ok()?;
        Some(out)
    })
}

struct Case {
    name: &'static str,
    api: ApiKey,
    /// The secret travels in the request (else in the response).
    request: bool,
    /// The body that carries the secrets, and the other direction's (default) body.
    body: Enc,
    other: Enc,
    /// Bytes that no output may hold.
    secrets: Vec<Vec<u8>>,
    /// Text the rule keeps, found in every JSON output.
    kept: Vec<&'static str>,
    /// A SaslHandshake naming this mechanism first on the connection.
    handshake: Option<&'static str>,
}

fn case(name: &'static str, api: ApiKey, request: bool, body: Enc, other: Enc, secrets: &[&[u8]], kept: &[&'static str]) -> Case {
    Case { name, api, request, body, other, secrets: secrets.iter().map(|s| s.to_vec()).collect(), kept: kept.to_vec(), handshake: None }
}

fn sasl_request(bytes: &[u8]) -> Enc {
    enc(SaslAuthenticateRequest { auth_bytes: Bytes::copy_from_slice(bytes), ..Default::default() })
}

fn sasl_response(bytes: &[u8]) -> Enc {
    enc(SaslAuthenticateResponse { auth_bytes: Bytes::copy_from_slice(bytes), ..Default::default() })
}

const HMAC: &[u8] = b"\x9f\x11hmac-of-the-token\x00\xfe\x01\x80";
const SALT: &[u8] = b"\x01\x02salt-of-alice\xff\xee";
const SALTED: &[u8] = b"\x10salted-password-of-alice\x7f\x00";
const JWT: &str = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg";

fn sasl_cases() -> Vec<Case> {
    let oauth = format!("n,,\u{1}auth=Bearer {JWT}\u{1}\u{1}").into_bytes();
    let oauth_authzid = format!("n,a=carol,\u{1}auth=Bearer {JWT}\u{1}\u{1}").into_bytes();
    let gssapi: &[u8] = b"\x60\x82kerberos-ticket-bytes\x00\x01\x02";
    let mut cases = vec![
        case("PLAIN", ApiKey::SaslAuthenticate, true, sasl_request(b"\0alice\0s3cr3t-pass"), sasl_response(b""), &[b"s3cr3t-pass"], &["alice", "PLAIN"]),
        case(
            "PLAIN with authzid",
            ApiKey::SaslAuthenticate,
            true,
            sasl_request(b"admin\0alice\0s3cr3t-pass"),
            sasl_response(b""),
            &[b"s3cr3t-pass"],
            &["alice", "admin"],
        ),
        case(
            "SCRAM client-first",
            ApiKey::SaslAuthenticate,
            true,
            sasl_request(b"n,,n=alice,r=fyko+d2lbbFgONRv9qkxdawL"),
            sasl_response(b""),
            &[b"fyko+d2lbbFgONRv9qkxdawL"],
            &["alice", "client-first"],
        ),
        case(
            "SCRAM server-first",
            ApiKey::SaslAuthenticate,
            false,
            sasl_response(b"r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096"),
            sasl_request(b""),
            &[b"QSXCR+Q6sek8bf92", b"i=4096", b"3rfcNHYJY1ZVvWVs7j"],
            &["server-first"],
        ),
        case(
            "SCRAM client-final",
            ApiKey::SaslAuthenticate,
            true,
            sasl_request(b"c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts="),
            sasl_response(b""),
            &[b"v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=", b"3rfcNHYJY1ZVvWVs7j"],
            &["client-final"],
        ),
        case(
            "SCRAM server-final",
            ApiKey::SaslAuthenticate,
            false,
            sasl_response(b"v=rmF9pqV8S7suAoZWja4dJRkFsKQ="),
            sasl_request(b""),
            &[b"rmF9pqV8S7suAoZWja4dJRkFsKQ="],
            &["server-final"],
        ),
        case("SCRAM server error", ApiKey::SaslAuthenticate, false, sasl_response(b"e=invalid-proof"), sasl_request(b""), &[], &["invalid-proof"]),
        case(
            "OAUTHBEARER",
            ApiKey::SaslAuthenticate,
            true,
            sasl_request(&oauth),
            sasl_response(b""),
            &[JWT.as_bytes(), b"c2lnbmF0dXJlLW9mLXRoZS10b2tlbg"],
            &["alice", "OAUTHBEARER"],
        ),
        case("OAUTHBEARER with authzid", ApiKey::SaslAuthenticate, true, sasl_request(&oauth_authzid), sasl_response(b""), &[JWT.as_bytes()], &["carol"]),
        case("GSSAPI", ApiKey::SaslAuthenticate, true, sasl_request(gssapi), sasl_response(b""), &[gssapi], &[]),
    ];
    // The mechanism from the connection's handshake, where the tap and pcap see one.
    for (c, m) in cases.iter_mut().zip([
        "PLAIN",
        "PLAIN",
        "SCRAM-SHA-256",
        "SCRAM-SHA-256",
        "SCRAM-SHA-512",
        "SCRAM-SHA-512",
        "SCRAM-SHA-256",
        "OAUTHBEARER",
        "OAUTHBEARER",
        "GSSAPI",
    ]) {
        c.handshake = Some(m);
    }
    // The same without a handshake: the form of the bytes.
    cases.push(case(
        "PLAIN, no handshake",
        ApiKey::SaslAuthenticate,
        true,
        sasl_request(b"\0alice\0s3cr3t-pass"),
        sasl_response(b""),
        &[b"s3cr3t-pass"],
        &["alice"],
    ));
    cases.push(case(
        "SCRAM, no handshake",
        ApiKey::SaslAuthenticate,
        true,
        sasl_request(b"n,,n=al=2Cice,r=fyko+d2lbbFgONRv9qkxdawL"),
        sasl_response(b""),
        &[b"fyko+d2lbbFgONRv9qkxdawL"],
        &["al,ice"],
    ));
    cases.push(case("OAUTHBEARER, no handshake", ApiKey::SaslAuthenticate, true, sasl_request(&oauth), sasl_response(b""), &[JWT.as_bytes()], &["alice"]));
    cases
}

fn token_cases() -> Vec<Case> {
    use describe_delegation_token_response::DescribedDelegationToken;
    vec![
        case(
            "CreateDelegationToken",
            ApiKey::CreateDelegationToken,
            false,
            enc(CreateDelegationTokenResponse { token_id: "token-id-1".into(), hmac: Bytes::from_static(HMAC), ..Default::default() }),
            enc(CreateDelegationTokenRequest::default()),
            &[HMAC],
            &["token-id-1"],
        ),
        case(
            "RenewDelegationToken",
            ApiKey::RenewDelegationToken,
            true,
            enc(RenewDelegationTokenRequest { hmac: Bytes::from_static(HMAC), ..Default::default() }),
            enc(RenewDelegationTokenResponse::default()),
            &[HMAC],
            &[],
        ),
        case(
            "ExpireDelegationToken",
            ApiKey::ExpireDelegationToken,
            true,
            enc(ExpireDelegationTokenRequest { hmac: Bytes::from_static(HMAC), ..Default::default() }),
            enc(ExpireDelegationTokenResponse::default()),
            &[HMAC],
            &[],
        ),
        case(
            "DescribeDelegationToken",
            ApiKey::DescribeDelegationToken,
            false,
            enc(DescribeDelegationTokenResponse {
                tokens: vec![DescribedDelegationToken { token_id: "token-id-2".into(), hmac: Bytes::from_static(HMAC), ..Default::default() }],
                ..Default::default()
            }),
            enc(DescribeDelegationTokenRequest::default()),
            &[HMAC],
            &["token-id-2"],
        ),
        case(
            "AlterUserScramCredentials",
            ApiKey::AlterUserScramCredentials,
            true,
            enc(AlterUserScramCredentialsRequest {
                upsertions: vec![alter_user_scram_credentials_request::ScramCredentialUpsertion {
                    name: "alice".into(),
                    mechanism: 1,
                    iterations: 8192,
                    salt: Bytes::from_static(SALT),
                    salted_password: Bytes::from_static(SALTED),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            enc(AlterUserScramCredentialsResponse::default()),
            &[SALT, SALTED],
            &["alice"],
        ),
    ]
}

fn config_cases() -> Vec<Case> {
    use create_topics_request::{CreatableTopic, CreatableTopicConfig};
    use create_topics_response::{CreatableTopicConfigs, CreatableTopicResult};
    use describe_configs_response::{DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym};
    let jaas = "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"alice\" password=\"jaas-s3cret-value\";";
    vec![
        case(
            "CreateTopics request",
            ApiKey::CreateTopics,
            true,
            enc(CreateTopicsRequest {
                topics: vec![CreatableTopic {
                    name: "orders".into(),
                    configs: vec![
                        CreatableTopicConfig { name: "sasl.jaas.config".into(), value: Some(jaas.into()), ..Default::default() },
                        CreatableTopicConfig { name: "retention.ms".into(), value: Some("86400321".into()), ..Default::default() },
                    ],
                    ..Default::default()
                }],
                ..Default::default()
            }),
            enc(CreateTopicsResponse::default()),
            &[b"jaas-s3cret-value"],
            &["86400321", "sasl.jaas.config"],
        ),
        case(
            "CreateTopics response",
            ApiKey::CreateTopics,
            false,
            enc(CreateTopicsResponse {
                topics: vec![CreatableTopicResult {
                    name: "orders".into(),
                    configs: Some(vec![
                        CreatableTopicConfigs { name: "ssl.key.password".into(), value: Some("key-pass-s3cret".into()), ..Default::default() },
                        CreatableTopicConfigs {
                            name: "custom.thing".into(),
                            value: Some("marked-sensitive-value".into()),
                            is_sensitive: true,
                            ..Default::default()
                        },
                        CreatableTopicConfigs { name: "cleanup.policy".into(), value: Some("compact".into()), ..Default::default() },
                    ]),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            enc(CreateTopicsRequest::default()),
            &[b"key-pass-s3cret", b"marked-sensitive-value"],
            &["compact"],
        ),
        case(
            "AlterConfigs",
            ApiKey::AlterConfigs,
            true,
            enc(AlterConfigsRequest {
                resources: vec![alter_configs_request::AlterConfigsResource {
                    resource_type: 4,
                    resource_name: "1".into(),
                    configs: vec![
                        alter_configs_request::AlterableConfig {
                            name: "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config".into(),
                            value: Some(jaas.into()),
                            ..Default::default()
                        },
                        alter_configs_request::AlterableConfig {
                            name: "ssl.keystore.key".into(),
                            value: Some("-----BEGIN PRIVATE KEY-----MIIEprivatekeybytes".into()),
                            ..Default::default()
                        },
                    ],
                    ..Default::default()
                }],
                ..Default::default()
            }),
            enc(AlterConfigsResponse::default()),
            &[b"jaas-s3cret-value", b"MIIEprivatekeybytes"],
            &["ssl.keystore.key"],
        ),
        case(
            "IncrementalAlterConfigs",
            ApiKey::IncrementalAlterConfigs,
            true,
            enc(IncrementalAlterConfigsRequest {
                resources: vec![incremental_alter_configs_request::AlterConfigsResource {
                    resource_type: 4,
                    resource_name: "1".into(),
                    configs: vec![
                        incremental_alter_configs_request::AlterableConfig {
                            name: "ssl.truststore.password".into(),
                            value: Some("trust-s3cret-pw".into()),
                            ..Default::default()
                        },
                        incremental_alter_configs_request::AlterableConfig {
                            name: "delegation.token.secret.key".into(),
                            value: Some("master-key-s3cret".into()),
                            ..Default::default()
                        },
                        incremental_alter_configs_request::AlterableConfig {
                            name: "log.retention.ms".into(),
                            value: Some("7654321".into()),
                            ..Default::default()
                        },
                    ],
                    ..Default::default()
                }],
                ..Default::default()
            }),
            enc(IncrementalAlterConfigsResponse::default()),
            &[b"trust-s3cret-pw", b"master-key-s3cret"],
            &["7654321"],
        ),
        case(
            "DescribeConfigs",
            ApiKey::DescribeConfigs,
            false,
            enc(DescribeConfigsResponse {
                results: vec![DescribeConfigsResult {
                    resource_type: 4,
                    resource_name: "1".into(),
                    configs: vec![
                        DescribeConfigsResourceResult {
                            name: "ssl.keystore.password".into(),
                            value: Some("keystore-s3cret".into()),
                            synonyms: vec![DescribeConfigsSynonym {
                                name: "listener.name.external.ssl.keystore.password".into(),
                                value: Some("synonym-s3cret".into()),
                                ..Default::default()
                            }],
                            ..Default::default()
                        },
                        DescribeConfigsResourceResult { name: "password.encoder.secret".into(), value: Some("encoder-s3cret".into()), ..Default::default() },
                        DescribeConfigsResourceResult {
                            name: "some.plugin.setting".into(),
                            value: Some("flagged-by-broker".into()),
                            is_sensitive: true,
                            ..Default::default()
                        },
                        DescribeConfigsResourceResult { name: "num.io.threads".into(), value: Some("8123".into()), ..Default::default() },
                    ],
                    ..Default::default()
                }],
                ..Default::default()
            }),
            enc(DescribeConfigsRequest::default()),
            &[b"keystore-s3cret", b"synonym-s3cret", b"encoder-s3cret", b"flagged-by-broker"],
            &["8123", "ssl.keystore.password"],
        ),
        case(
            "StreamsGroupHeartbeat",
            ApiKey::StreamsGroupHeartbeat,
            true,
            enc(StreamsGroupHeartbeatRequest {
                group_id: "app".into(),
                topology: Some(streams_group_heartbeat_request::Topology {
                    subtopologies: vec![streams_group_heartbeat_request::Subtopology {
                        state_changelog_topics: vec![streams_group_heartbeat_request::TopicInfo {
                            name: "app-store-changelog".into(),
                            topic_configs: vec![streams_group_heartbeat_request::KeyValue {
                                key: "sasl.jaas.config".into(),
                                value: jaas.into(),
                                ..Default::default()
                            }],
                            ..Default::default()
                        }],
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
                ..Default::default()
            }),
            enc(StreamsGroupHeartbeatResponse::default()),
            &[b"jaas-s3cret-value"],
            &["app-store-changelog"],
        ),
        case(
            "StreamsGroupDescribe",
            ApiKey::StreamsGroupDescribe,
            false,
            enc(StreamsGroupDescribeResponse {
                groups: vec![streams_group_describe_response::DescribedGroup {
                    group_id: "app".into(),
                    topology: Some(streams_group_describe_response::Topology {
                        subtopologies: Some(vec![streams_group_describe_response::Subtopology {
                            repartition_source_topics: vec![streams_group_describe_response::TopicInfo {
                                name: "app-repartition".into(),
                                topic_configs: vec![streams_group_describe_response::KeyValue {
                                    key: "ssl.key.password".into(),
                                    value: "streams-s3cret-pw".into(),
                                    ..Default::default()
                                }],
                                ..Default::default()
                            }],
                            ..Default::default()
                        }]),
                        ..Default::default()
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            enc(StreamsGroupDescribeRequest::default()),
            &[b"streams-s3cret-pw"],
            &["app-repartition"],
        ),
    ]
}

fn carrier_cases() -> Vec<Case> {
    use fetch_response::{FetchableTopicResponse, PartitionData};
    use fetch_snapshot_response::{PartitionSnapshot, TopicSnapshot};
    let log: &[u8] = b"\x00\x00metadata-log-record-with-scram-credential\x01";
    // Fetch names topics up to v12 and ids from v13 (the other is dropped when encoding).
    let fetch = |topic: &str, topic_id: Uuid, versions: std::ops::RangeInclusive<i16>| -> Enc {
        let body = enc(FetchResponse {
            responses: vec![FetchableTopicResponse {
                topic: topic.into(),
                topic_id,
                partitions: vec![PartitionData {
                    records: Some(Bytes::from_static(b"\x00\x00metadata-log-record-with-scram-credential\x01")),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        });
        Box::new(move |v| if versions.contains(&v) { body(v) } else { None })
    };
    vec![
        case(
            "Envelope request",
            ApiKey::Envelope,
            true,
            enc(EnvelopeRequest { request_data: Bytes::from_static(b"forwarded-request-with-s3cret"), ..Default::default() }),
            enc(EnvelopeResponse::default()),
            &[b"forwarded-request-with-s3cret"],
            &[],
        ),
        case(
            "Envelope response",
            ApiKey::Envelope,
            false,
            enc(EnvelopeResponse { response_data: Some(Bytes::from_static(b"forwarded-response-with-s3cret")), ..Default::default() }),
            enc(EnvelopeRequest::default()),
            &[b"forwarded-response-with-s3cret"],
            &[],
        ),
        case(
            "FetchSnapshot",
            ApiKey::FetchSnapshot,
            false,
            enc(FetchSnapshotResponse {
                topics: vec![TopicSnapshot {
                    name: "__cluster_metadata".into(),
                    partitions: vec![PartitionSnapshot { unaligned_records: Bytes::from_static(b"snapshot-with-delegation-token"), ..Default::default() }],
                    ..Default::default()
                }],
                ..Default::default()
            }),
            enc(FetchSnapshotRequest::default()),
            &[b"snapshot-with-delegation-token"],
            &[],
        ),
        case(
            "Fetch of __cluster_metadata by name",
            ApiKey::Fetch,
            false,
            fetch("__cluster_metadata", Uuid::default(), 0..=12),
            enc(FetchRequest::default()),
            &[log],
            &[],
        ),
        case(
            "Fetch of __cluster_metadata by id",
            ApiKey::Fetch,
            false,
            fetch("", Uuid::from_u64_pair(0, 1), 13..=i16::MAX),
            enc(FetchRequest::default()),
            &[log],
            &[],
        ),
    ]
}

/// The forms in which bytes could be printed.
fn forms(secret: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut out = vec![("raw".to_owned(), secret.to_vec())];
    for (alphabet, engine) in [("base64", base64::engine::general_purpose::STANDARD), ("base64url", base64::engine::general_purpose::URL_SAFE)] {
        // At each alignment, the characters that only the secret's bytes decide.
        for k in 0..3 {
            let mut b = vec![0u8; k];
            b.extend_from_slice(secret);
            let e = engine.encode(&b);
            if let Some(middle) = e.get(4..e.len().saturating_sub(4)).filter(|m| m.len() >= 4) {
                out.push((format!("{alphabet} at {k}"), middle.as_bytes().to_vec()));
            }
        }
    }
    out.push(("hex".into(), hex::encode(secret).into_bytes()));
    out.push(("HEX".into(), hex::encode_upper(secret).into_bytes()));
    let text = serde_json::to_string(&String::from_utf8_lossy(secret)).unwrap_or_default();
    out.push(("JSON text".into(), text.trim_matches('"').as_bytes().to_vec()));
    out.push(("byte list".into(), secret.iter().map(u8::to_string).collect::<Vec<_>>().join(",").into_bytes()));
    out
}

/// The form in which `secret` appears in `output`, if any.
fn leak(output: &[u8], secret: &[u8]) -> Option<String> {
    forms(secret).into_iter().find(|(_, f)| !f.is_empty() && output.windows(f.len()).any(|w| w == f.as_slice())).map(|(name, _)| name)
}

fn request_payload(api: ApiKey, version: i16, corr: i32, body: &[u8]) -> Vec<u8> {
    let header = RequestHeader {
        request_api_key: api.key(),
        request_api_version: version,
        correlation_id: corr,
        client_id: Some("secrets-test".into()),
        ..Default::default()
    };
    let mut out = Vec::new();
    header.encode(&mut out, api.request_header_version(version)).unwrap_or_default();
    out.extend_from_slice(body);
    out
}

fn response_payload(api: ApiKey, version: i16, corr: i32, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    ResponseHeader { correlation_id: corr, ..Default::default() }.encode(&mut out, kwire::header::response_header_version(api, version)).unwrap_or_default();
    out.extend_from_slice(body);
    out
}

fn sized(payload: &[u8]) -> Vec<u8> {
    let mut f = (payload.len() as i32).to_be_bytes().to_vec();
    f.extend_from_slice(payload);
    f
}

/// The frames of one exchange: `(request, api key, version, correlation id, payload)`, the
/// handshake first when there is one.
type Frames = Vec<(bool, i16, i16, i32, Vec<u8>)>;

fn exchange(c: &Case, version: i16, body: &[u8], other: &[u8]) -> Frames {
    let mut frames = Frames::new();
    if let Some(m) = c.handshake {
        let hs = SaslHandshakeRequest { mechanism: m.into() };
        let mut b = Vec::new();
        hs.encode(&mut b, 1).unwrap_or_default();
        frames.push((true, ApiKey::SaslHandshake.key(), 1, 1, request_payload(ApiKey::SaslHandshake, 1, 1, &b)));
        let mut r = Vec::new();
        SaslHandshakeResponse { mechanisms: vec![m.into()], ..Default::default() }.encode(&mut r, 1).unwrap_or_default();
        frames.push((false, ApiKey::SaslHandshake.key(), 1, 1, response_payload(ApiKey::SaslHandshake, 1, 1, &r)));
    }
    let (req, resp) = if c.request { (body, other) } else { (other, body) };
    frames.push((true, c.api.key(), version, 2, request_payload(c.api, version, 2, req)));
    frames.push((false, c.api.key(), version, 2, response_payload(c.api, version, 2, resp)));
    frames
}

/// An Ethernet/IPv4/TCP capture of the frames, requests from 127.0.0.1:50000 to port 9092.
fn write_pcap(path: &std::path::Path, frames: &Frames) {
    use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
    let file = std::fs::File::create(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut w = PcapWriter::with_header(file, PcapHeader { datalink: pcap_file::DataLink::ETHERNET, ..Default::default() }).unwrap_or_else(|e| panic!("{e}"));
    let (mut client_seq, mut broker_seq) = (1000u32, 5000u32);
    let mut packets = Vec::new();
    for (from_client, syn, payload) in [(true, true, Vec::new()), (false, true, Vec::new())]
        .into_iter()
        .chain(frames.iter().map(|(request, _, _, _, payload)| (*request, false, sized(payload))))
    {
        let (src, dst, seq) = if from_client { (50000, 9092, &mut client_seq) } else { (9092, 50000, &mut broker_seq) };
        let b = etherparse::PacketBuilder::ethernet2([0; 6], [0; 6]).ipv4([127, 0, 0, 1], [127, 0, 0, 1], 64).tcp(src, dst, *seq, 65535);
        let b = if syn { b.syn() } else { b.ack(1) };
        let mut p = Vec::new();
        b.write(&mut p, &payload).unwrap_or_else(|e| panic!("{e}"));
        *seq = seq.wrapping_add(if syn { 1 } else { payload.len() as u32 });
        packets.push(p);
    }
    for (i, p) in packets.iter().enumerate() {
        w.write_packet(&PcapPacket::new(std::time::Duration::from_micros(1_700_000_000_000_000 + i as u64), p.len() as u32, p))
            .unwrap_or_else(|e| panic!("{e}"));
    }
}

/// Every output the commands make of one exchange: `(name, bytes, holds bodies)`.
fn outputs(c: &Case, version: i16, frames: &Frames, show: bool) -> Vec<(String, Vec<u8>, bool)> {
    let mut out = Vec::new();
    // The frame that carries the secrets: the last one in its direction.
    let payload = frames.iter().rev().find(|f| f.0 == c.request).map(|f| f.4.clone()).unwrap();
    // decode: the body alone, compact and pretty.
    let header_len = {
        let mut buf = Bytes::from(payload.clone());
        if c.request {
            kwire::header::decode_request_header(&mut buf).unwrap();
        } else {
            <ResponseHeader as kwire::Decode>::decode(&mut buf, kwire::header::response_header_version(c.api, version)).unwrap();
        }
        payload.len() - buf.len()
    };
    let body_bytes = payload.get(header_len..).unwrap_or_default().to_vec();
    let mut secrets = Secrets::new(show);
    let json = crate::message::decode_body(c.api.key(), version, c.request, &body_bytes, &mut secrets).unwrap_or_else(|e| panic!("{}: {e}", c.name));
    let mut text = Vec::new();
    crate::input::print_json(&mut text, &json, false).unwrap_or_default();
    out.push(("decode".into(), text, true));
    let mut text = Vec::new();
    crate::input::print_json(&mut text, &json, true).unwrap_or_default();
    out.push(("decode --pretty".into(), text, true));
    // decode --frame.
    let dir = Direction { request: c.request, response: !c.request };
    let json = crate::message::decode_frame(&sized(&payload), dir, Some(c.api.key()), Some(version), &mut Secrets::new(show))
        .unwrap_or_else(|e| panic!("{}: {e}", c.name));
    out.push(("decode --frame".into(), json.to_string().into_bytes(), true));
    // decode --jsonl: the handshake's body first, as a batch of one connection.
    let mut lines = String::new();
    if let Some(m) = c.handshake {
        let mut b = Vec::new();
        SaslHandshakeRequest { mechanism: m.into() }.encode(&mut b, 1).unwrap_or_default();
        lines.push_str(&json!({"apiKey": 17, "apiVersion": 1, "kind": "request", "hex": hex::encode(&b)}).to_string());
        lines.push('\n');
    }
    let kind = if c.request { "request" } else { "response" };
    lines.push_str(&json!({"apiKey": c.api.key(), "apiVersion": version, "kind": kind, "hex": hex::encode(&body_bytes)}).to_string());
    let mut text = Vec::new();
    crate::message::decode_jsonl(lines.as_bytes(), &mut text, &mut Secrets::new(show)).unwrap_or_else(|e| panic!("{}: {e}", c.name));
    out.push(("decode --jsonl".into(), text, true));
    // tap, both forms.
    out.push(("tap".into(), crate::tap::render(frames, false, show, None), false));
    out.push(("tap --json".into(), crate::tap::render(frames, true, show, None), true));
    out.push(("tap --records".into(), crate::tap::render(frames, false, show, Some(100)), false));
    out.push(("tap --json --records".into(), crate::tap::render(frames, true, show, Some(100)), true));
    // pcap.
    let path = std::env::temp_dir().join(format!("kwire-secrets-{}-{}.pcap", std::process::id(), COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)));
    write_pcap(&path, frames);
    for records in [None, Some(100)] {
        let mut text = Vec::new();
        crate::pcap::run(&path, &[9092], crate::pcap::Shown { secrets: Secrets::new(show), records, report: None, html: None }, &mut text)
            .unwrap_or_else(|e| panic!("{}: {e}", c.name));
        out.push((if records.is_some() { "pcap --records" } else { "pcap" }.into(), text, true));
    }
    let _ = std::fs::remove_file(&path);
    out
}

static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

#[test]
fn every_secret_is_withheld_from_every_output_at_every_version() {
    let cases: Vec<Case> = [sasl_cases(), token_cases(), config_cases(), carrier_cases()].into_iter().flatten().collect();
    for c in &cases {
        let mut checked = Vec::new();
        for version in c.api.info().valid.iter() {
            let (Some(body), Some(other)) = ((c.body)(version), (c.other)(version)) else { continue };
            // A version without the field cannot carry the secret.
            if !c.secrets.iter().all(|s| body.windows(s.len()).any(|w| w == s.as_slice())) {
                continue;
            }
            let frames = exchange(c, version, &body, &other);
            for (name, output, bodies) in outputs(c, version, &frames, false) {
                for s in &c.secrets {
                    if let Some(form) = leak(&output, s) {
                        panic!(
                            "{} v{version}: {name} prints the secret {:?} ({form}):\n{}",
                            c.name,
                            String::from_utf8_lossy(s),
                            String::from_utf8_lossy(&output)
                        );
                    }
                }
                let text = String::from_utf8_lossy(&output);
                if bodies {
                    assert!(
                        text.contains("\"withheld\":true") || text.contains("\"withheld\": true"),
                        "{} v{version}: {name}: nothing withheld:\n{text}",
                        c.name
                    );
                    for k in &c.kept {
                        assert!(text.contains(k), "{} v{version}: {name} lost {k:?}:\n{text}", c.name);
                    }
                }
            }
            // --show-secrets: the same search finds each secret in every output with bodies.
            for (name, output, bodies) in outputs(c, version, &frames, true) {
                for s in c.secrets.iter().filter(|_| bodies) {
                    assert!(leak(&output, s).is_some(), "{} v{version}: {name} with --show-secrets lacks {:?}", c.name, String::from_utf8_lossy(s));
                }
                assert!(!String::from_utf8_lossy(&output).contains("withheld"), "{} v{version}: {name}", c.name);
            }
            checked.push(version);
        }
        assert!(!checked.is_empty(), "{}: no version carries the secret", c.name);
    }
}

#[test]
fn the_tap_line_names_the_mechanism_and_user() {
    let c = &sasl_cases()[0];
    let frames = exchange(c, 2, &(c.body)(2).unwrap_or_default(), &(c.other)(2).unwrap_or_default());
    let text = String::from_utf8_lossy(&crate::tap::render(&frames, false, false, None)).to_string();
    assert!(text.contains("c1 SaslHandshake v1 corr=1 mechanism=PLAIN -> ok"), "{text}");
    assert!(text.contains("c1 SaslAuthenticate v2 corr=2 PLAIN user=alice, 18 bytes withheld -> ok"), "{text}");
}

#[test]
fn sasl_bytes_say_only_what_is_not_secret() {
    let seen = |b: &[u8], m: Option<&str>, request: bool| describe_sasl(b, m, request);
    let plain = seen(b"admin\0alice\0pw", None, true);
    assert_eq!((plain.mechanism, plain.user.as_deref(), plain.authzid.as_deref()), (Some("PLAIN"), Some("alice"), Some("admin")));
    // A PLAIN message whose password looks like SCRAM is still PLAIN: its user, not the password.
    let tricky = seen(b"n,a\0b\0,n=secret,r=x", None, true);
    assert_eq!(tricky.user.as_deref(), Some("b"));
    // The handshake's mechanism decides: PLAIN bytes under SCRAM say nothing.
    assert_eq!(seen(b"\0alice\0pw", Some("SCRAM-SHA-256"), true), Seen::default());
    assert_eq!(seen(b"n,,n=alice,r=abc", Some("PLAIN"), true), Seen::default());
    assert_eq!(seen(b"n,,n=alice,r=abc", Some("scram-sha-512"), true).user.as_deref(), Some("alice"));
    // Control characters in a name: not printed.
    assert_eq!(seen(b"\0al\x1bice\0pw", None, true).user, None);
    assert_eq!(seen(b"e=other-error", None, false).error.as_deref(), Some("other-error"));
    assert_eq!(seen(b"e=other-error", None, true), Seen::default());
}

#[test]
fn malformed_sasl_bytes_do_not_panic() {
    let mut inputs: Vec<Vec<u8>> = vec![Vec::new(), vec![0], vec![0, 0], vec![0, 0, 0], b"\x01".to_vec(), b"n,".to_vec(), b"n,,\x01auth=Bearer".to_vec()];
    inputs.extend((0..=255u8).map(|b| vec![b]));
    let valid: [&[u8]; 5] = [b"\0alice\0pw", b"n,,n=alice,r=abc", b"r=a,s=b,i=1", b"n,a=x,\x01auth=Bearer a.eyJzdWIiOiJ4In0.c\x01\x01", b"e=invalid-proof"];
    for v in valid {
        inputs.extend((0..=v.len()).map(|n| v.get(..n).unwrap_or_default().to_vec()));
    }
    // A fixed pseudo-random spread over the characters that matter to the parsers.
    let alphabet = b"\0\x01,=nrpvcsiaeyBearer .\xff\xc3";
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..5000 {
        let len = (x % 40) as usize;
        let mut b = Vec::with_capacity(len);
        for _ in 0..len {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b.push(alphabet.get((x % alphabet.len() as u64) as usize).copied().unwrap_or(0));
        }
        inputs.push(b);
        x = x.wrapping_add(1);
    }
    let engine = base64::engine::general_purpose::STANDARD;
    for b in &inputs {
        for m in [None, Some("PLAIN"), Some("SCRAM-SHA-256"), Some("OAUTHBEARER"), Some("GSSAPI"), Some("")] {
            for request in [true, false] {
                let _ = describe_sasl(b, m, request);
            }
        }
        let mut body = json!({"authBytes": engine.encode(b)});
        Secrets::new(false).apply(0, ApiKey::SaslAuthenticate.key(), true, &mut body);
        assert_eq!(body["authBytes"]["length"], b.len(), "{b:?}");
    }
    // JSON that is not what the decoder makes (a hand-written body): still no panic, no secret.
    for auth in [json!(null), json!(5), json!("not base64!"), json!({"x": 1}), json!([1, 2])] {
        let mut body = json!({"authBytes": auth.clone(), "hmac": auth});
        Secrets::new(false).apply(0, ApiKey::SaslAuthenticate.key(), true, &mut body);
        Secrets::new(false).apply(0, ApiKey::RenewDelegationToken.key(), true, &mut body);
        assert!(auth.is_null() || body["authBytes"]["withheld"] == true, "{body}");
    }
    // Bodies of other shapes under the rules' paths.
    for key in [ApiKey::DescribeConfigs, ApiKey::CreateTopics, ApiKey::Fetch, ApiKey::DescribeDelegationToken] {
        for body in [json!(null), json!([]), json!({"results": 3, "topics": [1, null, {"configs": "x"}], "responses": [{"partitions": 1}], "tokens": {}})] {
            let mut b = body.clone();
            Secrets::new(false).apply(0, key.key(), false, &mut b);
            Secrets::new(false).apply(0, key.key(), true, &mut b);
        }
    }
    Secrets::new(false).apply(0, 9999, true, &mut json!({}));
}

#[test]
fn config_names_that_are_secret() {
    for name in [
        "sasl.jaas.config",
        "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config",
        "ssl.key.password",
        "ssl.keystore.password",
        "ssl.truststore.password",
        "SSL.KEYSTORE.PASSWORD",
        "ssl.keystore.key",
        "ssl.keystore.certificate.chain",
        "ssl.truststore.certificates",
        "listener.name.external.ssl.keystore.certificate.chain",
        "sasl.oauthbearer.client.credentials.client.secret",
        "sasl.oauthbearer.assertion.private.key.passphrase",
        "password.encoder.secret",
        "password.encoder.old.secret",
        "delegation.token.master.key",
        "delegation.token.secret.key",
        "producer.override.sasl.jaas.config",
        "database.password",
    ] {
        assert!(secret_config_name(name), "{name}");
    }
    for name in [
        "retention.ms",
        "cleanup.policy",
        "ssl.keystore.location",
        "ssl.keystore.type",
        "ssl.truststore.location",
        "sasl.mechanism",
        "sasl.enabled.mechanisms",
        "sasl.oauthbearer.token.endpoint.url",
        "delegation.token.max.lifetime.ms",
        "sasl.oauthbearer.client.credentials.client.id",
        "message.timestamp.type",
    ] {
        assert!(!secret_config_name(name), "{name}");
    }
}

#[test]
fn pcap_withholds_bare_tokens_after_a_handshake_v0() {
    // SaslHandshake v0, then the PLAIN token as bare size-prefixed bytes (read as a frame, its
    // bytes from the 5th would be a correlation id: "word"), the broker's empty answer, then
    // Kafka frames again.
    let mut hs = Vec::new();
    SaslHandshakeRequest { mechanism: "PLAIN".into() }.encode(&mut hs, 0).unwrap();
    let mut hs_resp = Vec::new();
    SaslHandshakeResponse { mechanisms: vec!["PLAIN".into()], ..Default::default() }.encode(&mut hs_resp, 0).unwrap();
    let mut meta = Vec::new();
    MetadataRequest::default().encode(&mut meta, 1).unwrap();
    let frames: Frames = vec![
        (true, 17, 0, 1, request_payload(ApiKey::SaslHandshake, 0, 1, &hs)),
        (false, 17, 0, 1, response_payload(ApiKey::SaslHandshake, 0, 1, &hs_resp)),
        (true, 0, 0, 0, b"\0a\0password-1234".to_vec()),
        (false, 0, 0, 0, Vec::new()),
        (true, 3, 1, 2, request_payload(ApiKey::Metadata, 1, 2, &meta)),
    ];
    for show in [false, true] {
        let path = std::env::temp_dir().join(format!("kwire-secrets-v0-{}-{show}.pcap", std::process::id()));
        write_pcap(&path, &frames);
        let mut out = Vec::new();
        crate::pcap::run(&path, &[9092], crate::pcap::Shown { secrets: Secrets::new(show), records: None, report: None, html: None }, &mut out).unwrap();
        let _ = std::fs::remove_file(&path);
        let lines: Vec<Value> = String::from_utf8_lossy(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 5, "{lines:?}");
        assert!(lines[2].get("correlationId").is_none() && lines[2].get("apiKey").is_none(), "{}", lines[2]);
        if show {
            assert_eq!(lines[2]["saslToken"], base64::engine::general_purpose::STANDARD.encode(b"\0a\0password-1234"));
        } else {
            assert_eq!(lines[2]["saslToken"], json!({"withheld": true, "length": 16, "mechanism": "PLAIN", "user": "a"}));
            assert_eq!(leak(&out, b"password-1234"), None);
        }
        assert_eq!(lines[3]["saslToken"]["withheld"], if show { Value::Null } else { json!(true) });
        assert_eq!(lines[4]["apiKey"], 3, "{}", lines[4]);
    }
}

#[test]
fn tap_withholds_bare_tokens_after_a_handshake_v0() {
    // The proxy hands a bare token over with an "api key", "version" and "correlation id" read
    // from its bytes, as it reads any frame.
    let token = b"\0a\0password-1234".to_vec();
    let (key, version, corr) = kwire::header::peek_request_start(&token).unwrap();
    let mut hs = Vec::new();
    SaslHandshakeRequest { mechanism: "PLAIN".into() }.encode(&mut hs, 0).unwrap();
    let mut hs_resp = Vec::new();
    SaslHandshakeResponse { mechanisms: vec!["PLAIN".into()], ..Default::default() }.encode(&mut hs_resp, 0).unwrap();
    let frames: Frames = vec![
        (true, 17, 0, 1, request_payload(ApiKey::SaslHandshake, 0, 1, &hs)),
        (false, 17, 0, 1, response_payload(ApiKey::SaslHandshake, 0, 1, &hs_resp)),
        (true, key, version, corr, token),
    ];
    for json in [false, true] {
        let out = crate::tap::render(&frames, json, false, None);
        let text = String::from_utf8_lossy(&out);
        assert_eq!(leak(&out, b"password-1234"), None, "{text}");
        // The correlation id the token's bytes would make (ten digits, no timestamp's).
        assert!(!text.contains(&corr.to_string()) && !text.contains("Api97"), "{text}");
        assert!(text.contains("\"saslToken\":{\"withheld\":true,\"length\":16,\"mechanism\":\"PLAIN\",\"user\":\"a\"}") || !json, "{text}");
        assert!(text.contains("c1 SASL token (after SaslHandshake v0) PLAIN user=a, 16 bytes withheld") || json, "{text}");
    }
}

#[test]
fn what_is_not_secret_is_kept() {
    // The KIP-714 client identity, handshake mechanisms, owners and token ids, SCRAM
    // iterations as DescribeUserScramCredentials lists them, null and ordinary config values.
    let bodies = [
        (ApiKey::GetTelemetrySubscriptions, true, json!({"clientInstanceId": "AAAAAAAAAAAAAAAAAAAAAQ"})),
        (
            ApiKey::PushTelemetry,
            true,
            json!({"clientInstanceId": "AAAAAAAAAAAAAAAAAAAAAQ", "subscriptionId": 1, "terminating": false, "compressionType": 0, "metrics": ""}),
        ),
        (ApiKey::SaslHandshake, false, json!({"errorCode": 0, "mechanisms": ["PLAIN", "SCRAM-SHA-512"]})),
        (ApiKey::CreateDelegationToken, true, json!({"ownerPrincipalType": "User", "ownerPrincipalName": "alice", "renewers": [], "maxLifetimeMs": -1})),
        (ApiKey::DescribeUserScramCredentials, false, json!({"results": [{"user": "alice", "credentialInfos": [{"mechanism": 1, "iterations": 8192}]}]})),
        (
            ApiKey::DescribeConfigs,
            false,
            json!({"results": [{"configs": [{"name": "ssl.key.password", "value": null, "isSensitive": true}, {"name": "retention.ms", "value": "1"}]}]}),
        ),
        (ApiKey::Fetch, false, json!({"responses": [{"topic": "orders", "partitions": [{"records": "AAEC"}]}]})),
    ];
    for (api, request, body) in bodies {
        let mut b = body.clone();
        let mut secrets = Secrets::new(false);
        secrets.apply(1, api.key(), request, &mut b);
        assert_eq!(b, body, "{api:?}");
    }
}

/// The proxy's traces cut frames by api and direction ([`kwire_proxy::carries_secrets`]); every
/// place this rule withholds must be in such a frame. Fetch is the exception: only the KRaft
/// metadata log's records carry secrets, between controllers and brokers, not through a
/// client's proxy.
#[test]
fn the_proxys_traces_cut_every_frame_this_rule_withholds_from() {
    for r in RULES.iter().filter(|r| r.api != ApiKey::Fetch) {
        assert!(kwire_proxy::carries_secrets(r.api, r.request), "{:?} {}: the proxy's trace keeps it", r.api, if r.request { "request" } else { "response" });
    }
}
