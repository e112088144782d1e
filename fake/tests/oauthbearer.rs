//! SASL/OAUTHBEARER with unsecured JWS tokens (Kafka's default validator) against kwire-fake:
//! kwire-client's OAUTHBEARER support over the in-memory transport, and a bare codec client for
//! what the broker enforces itself (the session's end, KIP-368), on tokio's paused clock. The
//! tokens' times are the cluster's clock, which moves with tokio's.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[path = "support/bare.rs"]
mod bare;

use bare::Bare;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use base64::Engine;
use kwire::messages::{MetadataRequest, SaslAuthenticateRequest, SaslHandshakeRequest};
use kwire::{ApiKey, ByteString, Bytes, ErrorCode, RequestKind, ResponseKind};
use kwire_client::{ConnectOptions, Connection, Connector, Error, OAuthBearer, OAuthBearerToken, OAuthError, RefreshPolicy, Sasl};
use kwire_fake::{Cluster, ClusterConfig, OAuthBearerConfig};

const START_MS: i64 = 1_700_000_000_000;

fn cluster(config: OAuthBearerConfig) -> Cluster {
    Cluster::start(ClusterConfig::default().seed(1).clock_start_ms(START_MS).sasl_oauthbearer(config))
}

/// An unsecured JWS (`alg` none, no signature) with these claims.
fn jws(header: &str, claims: &serde_json::Value) -> String {
    format!("{}.{}.", B64URL.encode(header), B64URL.encode(claims.to_string()))
}

/// A token for `sub`, issued now on the cluster's clock and valid for `lifetime_s` seconds.
fn token(cluster: &Cluster, sub: &str, lifetime_s: f64) -> String {
    let now = cluster.now_ms() as f64 / 1000.0;
    jws(r#"{"alg":"none"}"#, &serde_json::json!({ "sub": sub, "iat": now.floor(), "exp": now + lifetime_s }))
}

fn options(cluster: &Cluster, sasl: Sasl) -> ConnectOptions {
    ConnectOptions { sasl: Some(sasl), connector: Some(Connector::new(cluster.connector())), request_timeout: Duration::from_secs(5), ..Default::default() }
}

/// Tokens from `make`, a new one at every authentication: the client's refresh policy would
/// otherwise keep one by the system clock, which the paused clock does not move.
fn provider<F: Fn(usize) -> String + Send + Sync + 'static>(make: F) -> (Sasl, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let make = Arc::new(make);
    let oauth = OAuthBearer::new(move || {
        let n = counted.fetch_add(1, Ordering::SeqCst);
        let jwt = make(n);
        async move { OAuthBearerToken::from_jwt(jwt) }
    })
    .refresh_policy(RefreshPolicy { window_factor: 0.0, window_jitter: 0.0, min_period: Duration::ZERO, buffer: Duration::ZERO });
    (Sasl::OAuthBearer(oauth), calls)
}

fn refusal(result: kwire_client::Result<Connection>) -> (String, Option<String>, Option<String>) {
    match result {
        Err(Error::OAuth(OAuthError::Refused { status, scope, message, .. })) => (status, scope, message),
        Err(other) => panic!("not a refusal: {other:?}"),
        Ok(_) => panic!("authenticated"),
    }
}

#[tokio::test(start_paused = true)]
async fn an_unsecured_token_authenticates_its_subject_for_its_lifetime() {
    let cluster = cluster(OAuthBearerConfig::default());
    let c = cluster.clone();
    let (sasl, calls) = provider(move |_| token(&c, "alice", 60.0));
    let conn = Connection::connect("broker-0:9092", &options(&cluster, sasl)).await.expect("authenticated");
    assert_eq!(conn.authentications(), 1);
    // The session lasts as long as the token (Kafka's credential lifetime, KIP-368).
    assert_eq!(conn.session_lifetime(), Some(Duration::from_secs(60)));
    conn.request(MetadataRequest { topics: Some(vec![]), ..Default::default() }).await.expect("served once authenticated");

    // Before the session ends the client re-authenticates with a new token, on the same
    // connection, and goes on being served.
    tokio::time::sleep(Duration::from_secs(125)).await;
    assert!(conn.authentications() >= 3, "re-authenticated twice in 125 s of 60 s sessions: {}", conn.authentications());
    assert!(calls.load(Ordering::SeqCst) >= 3);
    conn.request(MetadataRequest { topics: Some(vec![]), ..Default::default() }).await.expect("served after re-authenticating");
    assert!(!conn.is_closed());
    let handshakes: Vec<_> = cluster.journal().into_iter().filter(|e| e.api == ApiKey::SaslHandshake).collect();
    assert!(handshakes.len() >= 3 && handshakes.iter().all(|e| e.connection == handshakes[0].connection && e.errors.is_empty()), "{handshakes:?}");
}

#[tokio::test(start_paused = true)]
async fn refused_tokens_get_rfc_7628_error_replies() {
    let cluster = cluster(OAuthBearerConfig::default());
    let now = START_MS as f64 / 1000.0;
    let cases = [
        ("expired", jws(r#"{"alg":"none"}"#, &serde_json::json!({ "sub": "alice", "iat": now - 100.0, "exp": now - 1.0 }))),
        ("signed", jws(r#"{"alg":"HS256"}"#, &serde_json::json!({ "sub": "alice", "exp": now + 60.0 }))),
        ("no exp", jws(r#"{"alg":"none"}"#, &serde_json::json!({ "sub": "alice" }))),
        ("no sub", jws(r#"{"alg":"none"}"#, &serde_json::json!({ "exp": now + 60.0 }))),
        ("issued in the future", jws(r#"{"alg":"none"}"#, &serde_json::json!({ "sub": "alice", "iat": now + 30.0, "exp": now + 60.0 }))),
    ];
    for (what, jwt) in cases {
        let sasl = Sasl::oauthbearer(move || {
            let jwt = jwt.clone();
            async move { Ok(OAuthBearerToken::new(jwt, Duration::from_secs(60))) }
        });
        let (status, scope, message) = refusal(Connection::connect("broker-0:9092", &options(&cluster, sasl)).await);
        assert_eq!(status, "invalid_token", "{what}");
        assert_eq!(scope, None, "{what}");
        // The exchange ends, after the client's acknowledgement, with the reply as the message.
        assert_eq!(message.as_deref(), Some(r#"{"status":"invalid_token"}"#), "{what}");
    }
    let failures =
        cluster.journal().into_iter().filter(|e| e.api == ApiKey::SaslAuthenticate && e.errors.contains(&ErrorCode::SASL_AUTHENTICATION_FAILED)).count();
    assert_eq!(failures, 5, "one failed acknowledgement per refused token");
}

#[tokio::test(start_paused = true)]
async fn a_missing_required_scope_is_insufficient_scope() {
    let cluster = cluster(OAuthBearerConfig::default().required_scope(&["kafka"]));
    let c = cluster.clone();
    let (sasl, _) = provider(move |_| token(&c, "alice", 60.0));
    let (status, scope, _) = refusal(Connection::connect("broker-0:9092", &options(&cluster, sasl)).await);
    assert_eq!((status.as_str(), scope.as_deref()), ("insufficient_scope", Some("[kafka]")));

    let now = START_MS as f64 / 1000.0;
    let scoped = jws(r#"{"alg":"none"}"#, &serde_json::json!({ "sub": "alice", "exp": now + 60.0, "scope": ["kafka", "other"] }));
    let (sasl, _) = provider(move |_| scoped.clone());
    Connection::connect("broker-0:9092", &options(&cluster, sasl)).await.expect("a token with the scope");
}

#[tokio::test(start_paused = true)]
async fn re_authentication_may_not_change_the_principal() {
    let cluster = cluster(OAuthBearerConfig::default());
    let c = cluster.clone();
    // The second token names someone else.
    let (sasl, _) = provider(move |n| token(&c, if n == 0 { "alice" } else { "mallory" }, 60.0));
    let conn = Connection::connect("broker-0:9092", &options(&cluster, sasl)).await.expect("authenticated");
    tokio::time::sleep(Duration::from_secs(58)).await;
    assert!(conn.is_closed(), "the re-authentication failed and the connection closed");
    let failed: Vec<_> = cluster.journal().into_iter().filter(|e| e.api == ApiKey::SaslAuthenticate && !e.errors.is_empty()).collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].errors, [ErrorCode::SASL_AUTHENTICATION_FAILED]);
}

#[tokio::test(start_paused = true)]
async fn the_plaintext_listener_offers_oauthbearer_only_when_configured() {
    let cluster = Cluster::start(ClusterConfig::default().seed(1).sasl_plain("bob", "pw"));
    let c = cluster.clone();
    let (sasl, _) = provider(move |_| token(&c, "alice", 60.0));
    match Connection::connect("broker-0:9092", &options(&cluster, sasl)).await {
        Err(Error::Authentication { message, .. }) => assert!(message.contains("UNSUPPORTED_SASL_MECHANISM") && !message.contains("OAUTHBEARER"), "{message}"),
        other => panic!("{:?}", other.map(|_| ())),
    }
}

#[tokio::test(start_paused = true)]
async fn the_broker_closes_a_connection_whose_session_ended() {
    let cluster = cluster(OAuthBearerConfig::default());
    let stream = cluster.connect("broker-0:9092").await.unwrap();
    let mut bare = Bare::new(stream, "kwire-bare");
    let Some(ResponseKind::SaslHandshake(h)) =
        bare.call(ApiKey::SaslHandshake, 1, SaslHandshakeRequest { mechanism: ByteString::from_static("OAUTHBEARER") }.into()).await
    else {
        panic!("no handshake")
    };
    assert_eq!(h.error_code, 0);
    assert!(h.mechanisms.iter().any(|m| &m[..] == "OAUTHBEARER"));
    let first = format!("n,,\x01auth=Bearer {}\x01\x01", token(&cluster, "alice", 10.0));
    let Some(ResponseKind::SaslAuthenticate(a)) =
        bare.call(ApiKey::SaslAuthenticate, 2, SaslAuthenticateRequest { auth_bytes: Bytes::from(first), ..Default::default() }.into()).await
    else {
        panic!("no answer")
    };
    assert_eq!((a.error_code, a.session_lifetime_ms), (0, 10_000));
    let metadata = || RequestKind::from(MetadataRequest { topics: Some(vec![]), ..Default::default() });
    assert!(matches!(bare.call(ApiKey::Metadata, 12, metadata()).await, Some(ResponseKind::Metadata(_))));
    tokio::time::sleep(Duration::from_millis(10_001)).await;
    // Not re-authenticated: the next request closes the connection, unanswered.
    assert!(bare.call(ApiKey::Metadata, 12, metadata()).await.is_none());
}

#[tokio::test(start_paused = true)]
async fn a_malformed_first_message_fails_without_a_reason() {
    let cluster = cluster(OAuthBearerConfig::default());
    let stream = cluster.connect("broker-0:9092").await.unwrap();
    let mut bare = Bare::new(stream, "kwire-bare");
    bare.call(ApiKey::SaslHandshake, 1, SaslHandshakeRequest { mechanism: ByteString::from_static("OAUTHBEARER") }.into()).await.unwrap();
    let Some(ResponseKind::SaslAuthenticate(a)) = bare
        .call(ApiKey::SaslAuthenticate, 2, SaslAuthenticateRequest { auth_bytes: Bytes::from_static(b"n,,auth=Bearer x"), ..Default::default() }.into())
        .await
    else {
        panic!("no answer")
    };
    assert_eq!(a.error_code, ErrorCode::SASL_AUTHENTICATION_FAILED.0);
    assert_eq!(a.error_message.as_deref(), Some("Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER"));
    assert!(bare.call(ApiKey::Metadata, 12, MetadataRequest::default().into()).await.is_none(), "closed after the failure");
}
