//! SASL/OAUTHBEARER against the real broker's OAUTH listener, which checks RS256 JWTs with
//! Kafka's OIDC validator (`OAuthBearerValidatorCallbackHandler`) against the JWKS that
//! scripts/kafka.sh made. The test serves the token endpoint itself, on loopback: client
//! credentials in, JWTs signed with the key from the env file out, each request counted.
// The OIDC provider is the `oidc` feature's (on by default).
#![cfg(feature = "oidc")]

use crate::common;

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use common::{unique, Broker};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use kwire_client::{
    Admin, AssertionAlgorithm, Client, ClientConfig, ConnectOptions, Connection, Consumer, ConsumerConfig, Error, JwtAssertion, NewTopic, OAuthBearerToken,
    OAuthError, OffsetReset, OidcConfig, Producer, ProducerConfig, ProducerRecord, Sasl, TopicPartition,
};

const CLIENT_ID: &str = "kwire-test-client";
const CLIENT_SECRET: &str = "kwire-test-secret";

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// What the listener expects of a token, from the env file.
#[derive(Clone)]
struct Issuer {
    key: EncodingKey,
    other_key: EncodingKey,
    kid: String,
    issuer: String,
    audience: String,
    principal: String,
}

impl Issuer {
    fn new(b: &Broker) -> Issuer {
        let pem = |var: &str| std::fs::read(b.var(var)).unwrap_or_else(|e| panic!("{var}: {e}"));
        Issuer {
            key: EncodingKey::from_rsa_pem(&pem("OAUTH_JWKS_KEY")).expect("the signing key"),
            other_key: EncodingKey::from_rsa_pem(&pem("OAUTH_OTHER_KEY")).expect("the other key"),
            kid: b.var("OAUTH_JWKS_KID").to_owned(),
            issuer: b.var("OAUTH_ISSUER").to_owned(),
            audience: b.var("OAUTH_AUDIENCE").to_owned(),
            principal: b.var("OAUTH_PRINCIPAL").to_owned(),
        }
    }

    /// The claims of a good token valid for `lifetime_secs` from now.
    fn claims(&self, lifetime_secs: u64) -> serde_json::Value {
        let now = now_secs();
        serde_json::json!({
            "sub": self.principal, "iss": self.issuer, "aud": self.audience, "scope": "kafka",
            "iat": now, "exp": now + lifetime_secs,
        })
    }

    fn sign(&self, claims: &serde_json::Value, key: &EncodingKey) -> String {
        let header = Header { kid: Some(self.kid.clone()), ..Header::new(Algorithm::RS256) };
        jsonwebtoken::encode(&header, claims, key).expect("signs")
    }

    fn mint(&self, lifetime_secs: u64) -> String {
        self.sign(&self.claims(lifetime_secs), &self.key)
    }
}

/// The token endpoint: POST with HTTP basic client credentials and
/// `grant_type=client_credentials`; answers 401 `invalid_client` to other credentials.
struct Endpoint {
    url: String,
    hits: AtomicUsize,
    lifetime_secs: AtomicU64,
    issuer: Issuer,
    /// For the JWT-bearer grant: the client's public key and algorithm the assertion must
    /// verify with, and the claims of the last one verified.
    assertion_key: std::sync::Mutex<Option<(jsonwebtoken::DecodingKey, Algorithm)>>,
    last_assertion: std::sync::Mutex<Option<(Header, serde_json::Value)>>,
}

impl Endpoint {
    async fn start(issuer: Issuer, lifetime_secs: u64) -> Arc<Endpoint> {
        Endpoint::serve(issuer, lifetime_secs, None).await
    }

    /// The endpoint over TLS (`https://127.0.0.1:...`), with the certificate scripts/kafka.sh
    /// made for the broker (its CA's, for IP 127.0.0.1).
    async fn start_tls(issuer: Issuer, lifetime_secs: u64, certs: &std::path::Path) -> Arc<Endpoint> {
        let chain: Vec<_> =
            rustls_pemfile::certs(&mut std::io::BufReader::new(std::fs::File::open(certs.join("broker.pem")).unwrap())).map(Result::unwrap).collect();
        let key = rustls_pemfile::private_key(&mut std::io::BufReader::new(std::fs::File::open(certs.join("broker.key")).unwrap())).unwrap().expect("a key");
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let config = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("the broker's certificate");
        Endpoint::serve(issuer, lifetime_secs, Some(tokio_rustls::TlsAcceptor::from(Arc::new(config)))).await
    }

    async fn serve(issuer: Issuer, lifetime_secs: u64, tls: Option<tokio_rustls::TlsAcceptor>) -> Arc<Endpoint> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
        let scheme = if tls.is_some() { "https" } else { "http" };
        let url = format!("{scheme}://{}/oauth2/token", listener.local_addr().unwrap());
        let endpoint = Arc::new(Endpoint {
            url,
            hits: AtomicUsize::new(0),
            lifetime_secs: AtomicU64::new(lifetime_secs),
            issuer,
            assertion_key: Default::default(),
            last_assertion: Default::default(),
        });
        let weak = Arc::downgrade(&endpoint);
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let Some(endpoint) = weak.upgrade() else { return };
                let tls = tls.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let endpoint = endpoint.clone();
                        async move { Ok::<_, Infallible>(endpoint.answer(req).await) }
                    });
                    let http = hyper::server::conn::http1::Builder::new();
                    match tls {
                        // A client that does not trust the certificate fails the handshake: no request.
                        Some(tls) => {
                            if let Ok(stream) = tls.accept(tcp).await {
                                let _ = http.serve_connection(hyper_util::rt::TokioIo::new(stream), service).await;
                            }
                        }
                        None => {
                            let _ = http.serve_connection(hyper_util::rt::TokioIo::new(tcp), service).await;
                        }
                    }
                });
            }
        });
        endpoint
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    async fn answer(&self, req: Request<Incoming>) -> Response<Full<Bytes>> {
        self.hits.fetch_add(1, Ordering::SeqCst);
        let json = |status: u16, body: serde_json::Value| {
            Response::builder().status(status).header("content-type", "application/json").body(Full::new(Bytes::from(body.to_string()))).unwrap()
        };
        let expected = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}")));
        let authorized = req.headers().get("authorization").is_some_and(|v| v.as_bytes() == expected.as_bytes());
        if req.method() != hyper::Method::POST {
            return json(405, serde_json::json!({"error": "invalid_request"}));
        }
        let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
        let form = String::from_utf8_lossy(&body);
        // RFC 7523: the assertion, verified with the client's public key, stands for the secret.
        if form.split('&').any(|kv| kv == "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer") {
            let assertion = form.split('&').find_map(|kv| kv.strip_prefix("assertion=")).unwrap_or_default();
            let Some((key, alg)) = self.assertion_key.lock().unwrap().clone() else {
                return json(400, serde_json::json!({"error": "unsupported_grant_type"}));
            };
            let mut validation = jsonwebtoken::Validation::new(alg);
            validation.set_audience(&[&self.url]);
            validation.set_issuer(&[CLIENT_ID]);
            validation.set_required_spec_claims(&["exp", "nbf", "iss", "sub", "aud"]);
            validation.validate_nbf = true;
            return match jsonwebtoken::decode::<serde_json::Value>(assertion, &key, &validation) {
                Ok(data) if data.claims["sub"] == CLIENT_ID => {
                    *self.last_assertion.lock().unwrap() = Some((data.header, data.claims));
                    let lifetime = self.lifetime_secs.load(Ordering::SeqCst);
                    json(200, serde_json::json!({"access_token": self.issuer.mint(lifetime), "token_type": "Bearer", "expires_in": lifetime}))
                }
                Ok(data) => json(400, serde_json::json!({"error": "invalid_grant", "error_description": format!("sub {}", data.claims["sub"])})),
                Err(e) => json(400, serde_json::json!({"error": "invalid_grant", "error_description": e.to_string()})),
            };
        }
        if !form.split('&').any(|kv| kv == "grant_type=client_credentials") {
            return json(400, serde_json::json!({"error": "unsupported_grant_type", "error_description": form}));
        }
        if !authorized {
            return json(401, serde_json::json!({"error": "invalid_client", "error_description": "unknown client or wrong secret"}));
        }
        let lifetime = self.lifetime_secs.load(Ordering::SeqCst);
        json(200, serde_json::json!({"access_token": self.issuer.mint(lifetime), "token_type": "Bearer", "expires_in": lifetime}))
    }

    fn oidc(&self) -> OidcConfig {
        OidcConfig::new(&self.url, CLIENT_ID, CLIENT_SECRET).scope("kafka")
    }
}

async fn connect(addr: &str, sasl: Sasl) -> kwire_client::Result<Connection> {
    Connection::connect(addr, &ConnectOptions { sasl: Some(sasl), client_id: "kwire-oauth-tests".into(), ..Default::default() }).await
}

/// A provider that always returns `token` (a JWT).
fn fixed(token: String) -> Sasl {
    Sasl::oauthbearer(move || {
        let token = token.clone();
        async move { OAuthBearerToken::from_jwt(token) }
    })
}

fn assert_refused(result: kwire_client::Result<Connection>, what: &str) {
    match result {
        Err(Error::OAuth(OAuthError::Refused { status, .. })) => {
            assert_eq!(status, "invalid_token", "{what}");
        }
        Err(other) => panic!("{what}: refused with {other:?}"),
        Ok(_) => panic!("{what}: accepted"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oidc_tokens_carry_a_producer_and_a_consumer() {
    let Some(b) = Broker::from_env("oidc_tokens_carry_a_producer_and_a_consumer") else { return };
    common::init_tracing();
    let endpoint = Endpoint::start(Issuer::new(&b), 300).await;
    let sasl = Sasl::oidc(endpoint.oidc()).expect("an http URL");
    let client = Client::connect(ClientConfig::new(b.var("OAUTH")).client_id("kwire-oauth-tests").sasl(sasl)).await.expect("connects over OAUTHBEARER");
    let topic = unique("kw-oauth");
    Admin::new(client.clone()).create_topic(NewTopic::new(&topic, 1)).await.expect("the token's principal is a super user");

    let producer = Producer::new(client.clone(), ProducerConfig::default()).unwrap();
    let mut deliveries = Vec::new();
    for i in 0..20 {
        deliveries.push(producer.send(ProducerRecord::new(topic.as_str(), format!("v{i}")).key(format!("k{i}"))).await.unwrap());
    }
    for d in deliveries {
        d.await.expect("delivered");
    }
    producer.close().await.unwrap();

    let mut consumer = Consumer::new(client.clone(), ConsumerConfig { auto_offset_reset: OffsetReset::Earliest, ..Default::default() }).unwrap();
    consumer.assign([TopicPartition::new(&topic, 0)]).unwrap();
    let mut values = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while values.len() < 20 && tokio::time::Instant::now() < deadline {
        for r in consumer.poll(Duration::from_millis(500)).await.unwrap() {
            values.push(String::from_utf8(r.value.unwrap().to_vec()).unwrap());
        }
    }
    assert_eq!(values, (0..20).map(|i| format!("v{i}")).collect::<Vec<_>>());
    // Every connection (bootstrap, the leader's, the consumer's) presented the one token.
    assert_eq!(endpoint.hits(), 1, "one token request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_provider_with_sasl_extensions() {
    let Some(b) = Broker::from_env("a_custom_provider_with_sasl_extensions") else { return };
    let issuer = Issuer::new(&b);
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let provider = move || {
        counted.fetch_add(1, Ordering::SeqCst);
        let jwt = issuer.mint(300);
        async move { Ok(OAuthBearerToken::from_jwt(jwt)?.with_extension("traceId", "kwire-test")) }
    };
    let sasl = Sasl::OAuthBearer(kwire_client::OAuthBearer::new(provider).extension("logicalCluster", "lkc-kwire"));
    let conn = connect(b.var("OAUTH"), sasl.clone()).await.expect("a custom provider's token");
    conn.request(kwire::messages::MetadataRequest::default()).await.expect("metadata over the authenticated connection");
    assert_eq!(conn.authentications(), 1);
    // A second connection with the same settings reuses the token.
    connect(b.var("OAUTH"), sasl).await.expect("a second connection");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_tokens_and_endpoints_say_why() {
    let Some(b) = Broker::from_env("refused_tokens_and_endpoints_say_why") else { return };
    let issuer = Issuer::new(&b);
    let addr = b.var("OAUTH");

    // Past the validator's 30 s clock skew allowance.
    let mut expired = issuer.claims(0);
    expired["iat"] = (now_secs() - 1200).into();
    expired["exp"] = (now_secs() - 600).into();
    let err = connect(addr, fixed(issuer.sign(&expired, &issuer.key))).await;
    if let Err(e) = &err {
        println!("expired: {e}");
    }
    assert_refused(err, "an expired token");

    assert_refused(connect(addr, fixed(issuer.sign(&issuer.claims(300), &issuer.other_key))).await, "signed by a key the JWKS lacks");
    let mut other_audience = issuer.claims(300);
    other_audience["aud"] = "someone-else".into();
    assert_refused(connect(addr, fixed(issuer.sign(&other_audience, &issuer.key))).await, "for another audience");
    let dev = Sasl::oauthbearer(|| async { Ok(OAuthBearerToken::unsecured("kwire-oauth", Duration::from_secs(60))) });
    assert_refused(connect(addr, dev).await, "an unsigned token");

    // The token endpoint refuses wrong client credentials: at once, not retried.
    let endpoint = Endpoint::start(issuer.clone(), 300).await;
    let wrong = OidcConfig { client_secret: "wrong".into(), ..endpoint.oidc() };
    match connect(addr, Sasl::oidc(wrong).unwrap()).await {
        Err(Error::OAuth(OAuthError::TokenEndpoint { status: 401, error: Some(error), .. })) => assert_eq!(error, "invalid_client"),
        other => panic!("wrong secret: {other:?}"),
    }
    assert_eq!(endpoint.hits(), 1, "a refusal is not retried");

    // An endpoint that does not answer: retried within retry_backoff_max, then a transport error.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let mut gone = OidcConfig::new(format!("http://{closed}/token"), CLIENT_ID, CLIENT_SECRET);
    gone.retry_backoff_max = Duration::from_millis(600);
    let started = std::time::Instant::now();
    let err = connect(addr, Sasl::oidc(gone).unwrap()).await.expect_err("no token");
    assert!(matches!(&err, Error::OAuth(OAuthError::Transport { .. })), "{err:?}");
    assert!(err.is_retriable());
    assert!(started.elapsed() < Duration::from_secs(5), "bounded retries: {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reauthentication_presents_a_new_token() {
    let Some(b) = Broker::from_env("reauthentication_presents_a_new_token") else { return };
    common::init_tracing();
    let reauth_ms: u64 = b.var("OAUTH_REAUTH_MS").parse().unwrap();
    // Tokens of 5 s on sessions of 3 s: the token is refreshed at 80-85 % of its life, and the
    // second re-authentication comes after that. A connection that presented the first token
    // again would get a session ending at its expiry (the broker's session lifetime is the
    // token's remaining life at most), and be closed at the next request after ~5 s.
    let endpoint = Endpoint::start(Issuer::new(&b), 5).await;
    let conn = connect(b.var("OAUTH"), Sasl::oidc(endpoint.oidc()).unwrap()).await.expect("connects");
    assert_eq!(conn.session_lifetime(), Some(Duration::from_millis(reauth_ms)), "the listener's connections.max.reauth.ms");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(9);
    let mut requests = 0;
    while tokio::time::Instant::now() < deadline {
        conn.request(kwire::messages::MetadataRequest::default()).await.expect("the connection keeps working");
        requests += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!("{requests} requests over 9 s, {} authentications, {} token requests", conn.authentications(), endpoint.hits());
    assert!(conn.authentications() >= 3, "{} authentications", conn.authentications());
    assert!(endpoint.hits() >= 2, "re-authentication got a new token: {} token requests", endpoint.hits());
    assert!(!conn.is_closed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsecured_tokens_for_development() {
    let Some(b) = Broker::from_env("unsecured_tokens_for_development") else { return };
    let principal = b.var("OAUTH_PRINCIPAL").to_owned();
    let sasl = Sasl::oauthbearer(move || {
        let principal = principal.clone();
        async move { Ok(OAuthBearerToken::unsecured(principal, Duration::from_secs(60))) }
    });
    let conn = connect(b.var("OAUTH_UNSECURED"), sasl).await.expect("the unsecured validator takes an alg none token");
    conn.request(kwire::messages::MetadataRequest::default()).await.expect("metadata");
}

/// The token endpoint over TLS with a certificate of the test's own CA: trusted with
/// `OidcConfig::ca_file` (the token then logs in), refused without it (the system's roots do
/// not hold that CA: a transport error naming the certificate, retried then given up), and a
/// CA file that is missing or holds no certificate refused before any request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_endpoint_over_tls_with_its_own_ca() {
    let Some(b) = Broker::from_env("a_token_endpoint_over_tls_with_its_own_ca") else { return };
    let certs = b.certs_dir();
    let endpoint = Endpoint::start_tls(Issuer::new(&b), 300, &certs).await;
    assert!(endpoint.url.starts_with("https://127.0.0.1:"), "{}", endpoint.url);

    let trusted = endpoint.oidc().ca_file(certs.join("ca.pem"));
    let conn = connect(b.var("OAUTH"), Sasl::oidc(trusted).unwrap()).await.expect("a token from the https endpoint");
    conn.request(kwire::messages::MetadataRequest::default()).await.expect("metadata");
    assert_eq!(endpoint.hits(), 1);

    let mut untrusted = endpoint.oidc();
    untrusted.retry_backoff_max = Duration::from_millis(300);
    let err = connect(b.var("OAUTH"), Sasl::oidc(untrusted).unwrap()).await.expect_err("an unknown issuer");
    match &err {
        Error::OAuth(OAuthError::Transport { message, .. }) => assert!(message.contains("certificate") || message.contains("UnknownIssuer"), "{message}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(endpoint.hits(), 1, "no request without a handshake");

    let missing = certs.join("no-such-ca.pem");
    match Sasl::oidc(endpoint.oidc().ca_file(&missing)) {
        Err(OAuthError::Config(m)) => assert!(m.contains("no-such-ca.pem"), "{m}"),
        other => panic!("{other:?}"),
    }
    match Sasl::oidc(endpoint.oidc().ca_file(certs.join("ext.cnf"))) {
        Err(OAuthError::Config(m)) => assert!(m.contains("ext.cnf") && m.contains("no PEM certificate"), "{m}"),
        other => panic!("{other:?}"),
    }
}

/// `openssl` with `args`, which must succeed.
fn openssl(args: &[&str]) {
    let out = std::process::Command::new("openssl").args(args).output().expect("openssl");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// The JWT-bearer grant (KIP-1139): the client signs an assertion with its own key (an
/// encrypted PKCS#8 RSA key for RS256, a P-256 key for ES256, made here by openssl), which the
/// endpoint verifies with the public half before it hands out a token that logs in. The
/// assertion has Java's claims (iat, exp 300 s on, nbf 60 s back, iss, sub, aud, a jti when
/// asked); one signed by a key the endpoint does not know is refused with invalid_grant, a
/// wrong passphrase before any request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jwt_bearer_assertions_signed_by_the_client() {
    let Some(b) = Broker::from_env("jwt_bearer_assertions_signed_by_the_client") else { return };
    let dir = std::env::temp_dir().join(unique("kw-jwt-bearer"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |f: &str| dir.join(f).to_string_lossy().into_owned();
    openssl(&["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-aes-256-cbc", "-pass", "pass:kw-pass", "-out", &path("rsa.key")]);
    openssl(&["pkey", "-in", &path("rsa.key"), "-passin", "pass:kw-pass", "-pubout", "-out", &path("rsa.pub")]);
    openssl(&["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", &path("ec.key")]);
    openssl(&["pkey", "-in", &path("ec.key"), "-pubout", "-out", &path("ec.pub")]);
    openssl(&["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", &path("stranger.key")]);

    let endpoint = Endpoint::start(Issuer::new(&b), 300).await;
    let assertion = |key: &str, algorithm| JwtAssertion {
        issuer: Some(CLIENT_ID.into()),
        subject: Some(CLIENT_ID.into()),
        audience: Some(endpoint.url.clone()),
        algorithm,
        ..JwtAssertion::new(path(key))
    };

    let rsa = JwtAssertion { private_key_passphrase: Some("kw-pass".into()), ..assertion("rsa.key", AssertionAlgorithm::Rs256) };
    *endpoint.assertion_key.lock().unwrap() =
        Some((jsonwebtoken::DecodingKey::from_rsa_pem(&std::fs::read(path("rsa.pub")).unwrap()).unwrap(), Algorithm::RS256));
    let conn = connect(b.var("OAUTH"), Sasl::oidc(OidcConfig::jwt_bearer(&endpoint.url, rsa.clone()).scope("kafka")).unwrap())
        .await
        .expect("a token for an RS256 assertion");
    conn.request(kwire::messages::MetadataRequest::default()).await.expect("metadata");
    let (header, claims) = endpoint.last_assertion.lock().unwrap().clone().expect("an assertion verified");
    assert_eq!((header.alg, header.typ.as_deref()), (Algorithm::RS256, Some("JWT")));
    let (iat, exp, nbf) = (claims["iat"].as_u64().unwrap(), claims["exp"].as_u64().unwrap(), claims["nbf"].as_u64().unwrap());
    assert_eq!((exp - iat, iat - nbf), (300, 60), "{claims}");
    assert!(iat.abs_diff(now_secs()) <= 5, "{claims}");
    assert_eq!((claims["iss"].as_str(), claims["aud"].as_str()), (Some(CLIENT_ID), Some(endpoint.url.as_str())));
    assert!(claims.get("jti").is_none(), "{claims}");

    let ec = JwtAssertion { include_jti: true, lifetime: Duration::from_secs(120), ..assertion("ec.key", AssertionAlgorithm::Es256) };
    *endpoint.assertion_key.lock().unwrap() =
        Some((jsonwebtoken::DecodingKey::from_ec_pem(&std::fs::read(path("ec.pub")).unwrap()).unwrap(), Algorithm::ES256));
    connect(b.var("OAUTH"), Sasl::oidc(OidcConfig::jwt_bearer(&endpoint.url, ec)).unwrap()).await.expect("a token for an ES256 assertion");
    let (header, claims) = endpoint.last_assertion.lock().unwrap().clone().unwrap();
    assert_eq!(header.alg, Algorithm::ES256);
    assert_eq!(claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(), 120);
    assert_eq!(claims["jti"].as_str().map(str::len), Some(32), "{claims}");

    // Signed by a key the endpoint does not hold: refused, not retried.
    let hits = endpoint.hits();
    match connect(b.var("OAUTH"), Sasl::oidc(OidcConfig::jwt_bearer(&endpoint.url, assertion("stranger.key", AssertionAlgorithm::Rs256))).unwrap()).await {
        Err(Error::OAuth(OAuthError::TokenEndpoint { status: 400, error: Some(error), .. })) => assert_eq!(error, "invalid_grant"),
        other => panic!("a stranger's assertion: {other:?}"),
    }
    assert_eq!(endpoint.hits(), hits + 1);
    // Configuration errors name the file, before any request.
    match Sasl::oidc(OidcConfig::jwt_bearer(&endpoint.url, JwtAssertion { private_key_passphrase: Some("wrong".into()), ..rsa.clone() })) {
        Err(OAuthError::Config(m)) => assert!(m.contains("rsa.key") && m.contains("decrypt"), "{m}"),
        other => panic!("{other:?}"),
    }
    match Sasl::oidc(OidcConfig::jwt_bearer(&endpoint.url, JwtAssertion { private_key_passphrase: None, ..rsa })) {
        Err(OAuthError::Config(m)) => assert!(m.contains("rsa.key") && m.contains("encrypted"), "{m}"),
        other => panic!("{other:?}"),
    }
    match Sasl::oidc(OidcConfig::jwt_bearer(&endpoint.url, assertion("ec.key", AssertionAlgorithm::Rs256))) {
        Err(OAuthError::Config(m)) => assert!(m.contains("ec.key"), "{m}"),
        other => panic!("an EC key for RS256: {other:?}"),
    }
    assert_eq!(endpoint.hits(), hits + 1);

    // A ready-made assertion in a file (sasl.oauthbearer.assertion.file), read per request:
    // signed here with the RSA key, as an outside signer would.
    *endpoint.assertion_key.lock().unwrap() =
        Some((jsonwebtoken::DecodingKey::from_rsa_pem(&std::fs::read(path("rsa.pub")).unwrap()).unwrap(), Algorithm::RS256));
    let plain = path("rsa-plain.key");
    openssl(&["pkey", "-in", &path("rsa.key"), "-passin", "pass:kw-pass", "-out", &plain]);
    let now = now_secs();
    let claims =
        serde_json::json!({"iss": CLIENT_ID, "sub": CLIENT_ID, "aud": endpoint.url, "iat": now, "nbf": now - 60, "exp": now + 300, "jti": "from-a-file"});
    let signed = jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims, &EncodingKey::from_rsa_pem(&std::fs::read(&plain).unwrap()).unwrap()).unwrap();
    std::fs::write(path("assertion.jwt"), format!("{signed}\n")).unwrap();
    connect(b.var("OAUTH"), Sasl::oidc(OidcConfig::jwt_bearer_file(&endpoint.url, path("assertion.jwt"))).unwrap())
        .await
        .expect("a token for the file's assertion");
    assert_eq!(endpoint.last_assertion.lock().unwrap().clone().unwrap().1["jti"], "from-a-file");
    let hits = endpoint.hits();
    match connect(b.var("OAUTH"), Sasl::oidc(OidcConfig::jwt_bearer_file(&endpoint.url, path("no-such.jwt"))).unwrap()).await {
        Err(Error::OAuth(OAuthError::Config(m))) => assert!(m.contains("no-such.jwt"), "{m}"),
        other => panic!("a missing assertion file: {other:?}"),
    }
    assert_eq!(endpoint.hits(), hits, "no request without an assertion");
    let _ = std::fs::remove_dir_all(&dir);
}
