//! Against an in-process broker double on kwire's ServerCodec (no real broker needed):
//! hostile frames, a too-old broker, SASL session lifetimes (KIP-368 re-authentication).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use kwire::codec::{OutboundResponse, ServerCodec};
use kwire::messages::{api_versions_response::ApiVersion, *};
use kwire::{ApiKey, Bytes, RequestKind, ResponseKind};
use kwire_client::{ConnectOptions, Connection, Error, Sasl};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio_util::codec::Framed;

#[derive(Clone, Copy)]
enum Mode {
    /// Answers Metadata with a frame whose body is garbage.
    GarbageMetadata,
    /// Advertises Produce up to v2 only.
    OldProduce,
    /// SASL/PLAIN with a 400 ms session lifetime; counts handshakes.
    ShortSessions,
    /// Never answers Metadata.
    Silent,
    /// Answers one Metadata request per connection, then closes it; counts connections.
    OnePerConnection,
}

fn api_versions(mode: Mode) -> ApiVersionsResponse {
    let mut api_keys: Vec<ApiVersion> = [ApiKey::ApiVersions, ApiKey::Metadata, ApiKey::SaslHandshake, ApiKey::SaslAuthenticate, ApiKey::Produce]
        .iter()
        .map(|api| {
            let r = api.stable_versions();
            ApiVersion { api_key: api.key(), min_version: r.lo, max_version: r.hi, ..Default::default() }
        })
        .collect();
    if let Mode::OldProduce = mode {
        api_keys.last_mut().unwrap().max_version = 2;
        api_keys.last_mut().unwrap().min_version = 0;
    }
    ApiVersionsResponse { api_keys, ..Default::default() }
}

async fn mock(mode: Mode, handshakes: Arc<AtomicUsize>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let handshakes = handshakes.clone();
            if let Mode::OnePerConnection = mode {
                handshakes.fetch_add(1, Ordering::SeqCst);
            }
            tokio::spawn(async move {
                let mut conn = Framed::new(tcp, ServerCodec::new());
                while let Some(Ok(frame)) = conn.next().await {
                    let body = match frame.decode_body().unwrap() {
                        RequestKind::ApiVersions(_) => api_versions(mode).into(),
                        RequestKind::SaslHandshake(_) => {
                            handshakes.fetch_add(1, Ordering::SeqCst);
                            SaslHandshakeResponse { mechanisms: vec!["PLAIN".into()], ..Default::default() }.into()
                        }
                        RequestKind::SaslAuthenticate(_) => SaslAuthenticateResponse { session_lifetime_ms: 400, ..Default::default() }.into(),
                        RequestKind::Metadata(_) => {
                            if let Mode::GarbageMetadata = mode {
                                // A frame with the right correlation id and a truncated body.
                                let mut raw = Vec::new();
                                raw.extend_from_slice(&6i32.to_be_bytes());
                                raw.extend_from_slice(&frame.correlation_id().to_be_bytes());
                                raw.extend_from_slice(&[0xff, 0xff]);
                                let _ = conn.get_mut().write_all(&raw).await;
                                continue;
                            }
                            if let Mode::Silent = mode {
                                continue;
                            }
                            let body = ResponseKind::from(MetadataResponse::default());
                            if let Mode::OnePerConnection = mode {
                                let _ = conn.send(OutboundResponse::new(&frame, body).unwrap()).await;
                                return;
                            }
                            body
                        }
                        _ => return,
                    };
                    if conn.send(OutboundResponse::new(&frame, body).unwrap()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

#[tokio::test]
async fn a_hostile_frame_fails_that_connection_only() {
    let bad = mock(Mode::GarbageMetadata, Default::default()).await;
    let good = mock(Mode::OldProduce, Default::default()).await;
    let bad = Connection::connect(&bad, &ConnectOptions::default()).await.unwrap();
    let good = Connection::connect(&good, &ConnectOptions::default()).await.unwrap();
    let err = bad.request(MetadataRequest::default()).await.unwrap_err();
    println!("hostile frame: {err}");
    assert!(matches!(err, Error::Protocol { .. }), "{err:?}");
    // The bad connection is closed; requests on it fail fast with the reason, the other works.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(bad.is_closed());
    assert!(matches!(bad.request(MetadataRequest::default()).await.unwrap_err(), Error::Protocol { .. }));
    good.send(MetadataRequest::default()).await.unwrap();
}

#[tokio::test]
async fn a_too_old_broker_gives_a_typed_version_error() {
    let addr = mock(Mode::OldProduce, Default::default()).await;
    let conn = Connection::connect(&addr, &ConnectOptions::default()).await.unwrap();
    let err = conn.version(ApiKey::Produce).unwrap_err();
    println!("old broker: {err}");
    assert!(
        matches!(&err, Error::UnsupportedVersion { api: ApiKey::Produce, reason } if reason.contains("0-2") && reason.contains("needs 3 or later")),
        "{err:?}"
    );
    let err = conn.request(ProduceRequest::default()).await.unwrap_err();
    assert!(matches!(err, Error::UnsupportedVersion { .. }), "{err:?}");
    let err = conn.version(ApiKey::Fetch).unwrap_err();
    assert!(matches!(err, Error::UnsupportedVersion { api: ApiKey::Fetch, .. }), "not advertised: {err:?}");
}

#[tokio::test]
async fn sessions_with_a_lifetime_are_reauthenticated() {
    let handshakes = Arc::new(AtomicUsize::new(0));
    let addr = mock(Mode::ShortSessions, handshakes.clone()).await;
    let options = ConnectOptions { sasl: Some(Sasl::plain("u", "p")), ..Default::default() };
    let conn = Connection::connect(&addr, &options).await.unwrap();
    assert_eq!(handshakes.load(Ordering::SeqCst), 1);
    // Keep requests flowing across several lifetimes: each re-authentication runs alone.
    let deadline = tokio::time::Instant::now() + Duration::from_millis(1500);
    let mut n = 0;
    while tokio::time::Instant::now() < deadline {
        conn.request(MetadataRequest::default()).await.unwrap();
        n += 1;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let h = handshakes.load(Ordering::SeqCst);
    println!("{n} requests, {h} handshakes");
    assert!(h >= 3, "re-authenticated {} times in 1.5 s of 400 ms sessions", h - 1);
    let _ = Bytes::new();
}

#[tokio::test]
async fn a_request_without_an_answer_times_out() {
    let addr = mock(Mode::Silent, Default::default()).await;
    let options = ConnectOptions { request_timeout: Duration::from_millis(300), ..Default::default() };
    let conn = Connection::connect(&addr, &options).await.unwrap();
    let start = std::time::Instant::now();
    let err = conn.request(MetadataRequest::default()).await.unwrap_err();
    assert!(matches!(err, Error::Timeout { api: ApiKey::Metadata, .. }), "{err:?}");
    assert!(err.is_retriable());
    assert!(start.elapsed() >= Duration::from_millis(290));
}

#[tokio::test]
async fn closed_connections_are_reopened_and_failed_connects_back_off() {
    let connections = Arc::new(AtomicUsize::new(0));
    let addr = mock(Mode::OnePerConnection, connections.clone()).await;
    let mut config = kwire_client::ClientConfig::new(&addr);
    config.reconnect_backoff = Duration::from_millis(300);
    config.reconnect_backoff_max = Duration::from_millis(300);
    let client = kwire_client::Client::connect(config).await.unwrap();
    for _ in 0..3 {
        // Each call finds the connection closed by the broker after the last one: reconnects.
        client.send(kwire_client::Route::Any, MetadataRequest::default()).await.unwrap();
    }
    assert!(connections.load(Ordering::SeqCst) >= 4, "{} connections", connections.load(Ordering::SeqCst));

    // Nothing listens there: the first connect fails at once, the next waits out the backoff.
    let dead = TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap().to_string();
    let err = client.connection(&dead).await.unwrap_err();
    assert!(matches!(err, Error::Io { .. }) && err.is_retriable(), "{err:?}");
    let start = std::time::Instant::now();
    client.connection(&dead).await.unwrap_err();
    assert!(start.elapsed() >= Duration::from_millis(200), "backed off {:?}", start.elapsed());
}
