//! The built-in OAUTHBEARER token provider: OAuth 2 client credentials (RFC 6749 section 4.4) at
//! an OIDC token endpoint, as Java's `HttpAccessTokenRetriever` / `ClientCredentialsJwtRetriever`
//! ask for a token (`sasl.oauthbearer.token.endpoint.url`, `clientId`, `clientSecret`, `scope`):
//! a form POST with the client's id and secret as HTTP basic authentication, retried with
//! backoff while the endpoint fails on its side. Or, as Java's `JwtBearerJwtRetriever`
//! (KIP-1139, Kafka 4.1+), the JWT-bearer grant (RFC 7523): the client signs an assertion with
//! its private key and presents that instead of a secret.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use tokio::time::Instant;

use reqwest::header::{ACCEPT, CACHE_CONTROL};
use tracing::{debug, warn};

use crate::error::OAuthError;
use crate::retry::Backoff;
use crate::sasl::{OAuthBearerToken, TokenFuture, TokenProvider};

/// Where and as whom to get tokens by the client-credentials grant.
#[derive(Clone)]
pub struct OidcConfig {
    /// The token endpoint (`sasl.oauthbearer.token.endpoint.url`), `https://` (or `http://` on a
    /// trusted network).
    pub token_endpoint: String,
    /// The client id.
    pub client_id: String,
    /// The client secret.
    pub client_secret: String,
    /// The scope to ask for (space-separated), if any.
    pub scope: Option<String>,
    /// How long connecting to the endpoint may take (`sasl.login.connect.timeout.ms`), 10 s.
    pub connect_timeout: Duration,
    /// How long one request may take (`sasl.login.read.timeout.ms`), 30 s.
    pub request_timeout: Duration,
    /// The first wait before a retry, doubling per attempt (`sasl.login.retry.backoff.ms`), 100 ms.
    pub retry_backoff: Duration,
    /// The longest wait, and the time retries may take in all (`sasl.login.retry.backoff.max.ms`),
    /// 10 s.
    pub retry_backoff_max: Duration,
    /// PEM files of the CAs to trust for an `https://` endpoint, in place of the system's
    /// roots (as a truststore in Java's `sasl.oauthbearer` SSL settings replaces the default);
    /// empty: the system's roots.
    pub ca_files: Vec<PathBuf>,
    /// The JWT-bearer grant's assertion: when set, tokens are asked for with it
    /// (`grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`) and `client_id` and
    /// `client_secret` are not sent.
    pub assertion: Option<JwtAssertion>,
    /// The JWT-bearer grant with an assertion made elsewhere
    /// (`sasl.oauthbearer.assertion.file`): the file is read again for every token request
    /// (whatever writes it keeps it fresh). Takes precedence over `assertion`.
    pub assertion_file: Option<PathBuf>,
}

/// How an assertion is signed (`sasl.oauthbearer.assertion.algorithm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum AssertionAlgorithm {
    /// RSA with SHA-256 (Java's default).
    #[default]
    Rs256,
    /// ECDSA on P-256 with SHA-256.
    Es256,
}

/// The assertion of the JWT-bearer grant (RFC 7523, KIP-1139), signed anew for each token
/// request, as Java's `sasl.oauthbearer.assertion.*` settings make it: the header names the
/// algorithm (and `typ` JWT); the claims are `iat` now, `exp` now plus `lifetime`, `nbf` now
/// less `not_before`, and `iss`, `sub`, `aud` and a random `jti` as set.
#[derive(Clone)]
pub struct JwtAssertion {
    /// The PEM private key to sign with (`sasl.oauthbearer.assertion.private.key.file`):
    /// PKCS#8, encrypted PKCS#8, or PKCS#1 (RSA) / SEC1 (EC).
    pub private_key_file: PathBuf,
    /// The encrypted key's passphrase (`...private.key.passphrase`).
    pub private_key_passphrase: Option<String>,
    /// The algorithm (`...assertion.algorithm`), RS256.
    pub algorithm: AssertionAlgorithm,
    /// `iss` (`...claim.iss`).
    pub issuer: Option<String>,
    /// `sub` (`...claim.sub`).
    pub subject: Option<String>,
    /// `aud` (`...claim.aud`).
    pub audience: Option<String>,
    /// How long the assertion is valid (`...claim.exp.seconds`), 300 s.
    pub lifetime: Duration,
    /// How far before now it is valid from (`...claim.nbf.seconds`), 60 s.
    pub not_before: Duration,
    /// Whether to add a random `jti` (`...claim.jti.include`), no.
    pub include_jti: bool,
}

impl fmt::Debug for JwtAssertion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the passphrase.
        f.debug_struct("JwtAssertion")
            .field("private_key_file", &self.private_key_file)
            .field("algorithm", &self.algorithm)
            .field("issuer", &self.issuer)
            .field("subject", &self.subject)
            .field("audience", &self.audience)
            .field("lifetime", &self.lifetime)
            .field("not_before", &self.not_before)
            .field("include_jti", &self.include_jti)
            .finish_non_exhaustive()
    }
}

impl JwtAssertion {
    /// An assertion signed with the key in `private_key_file`, with Java's defaults (RS256,
    /// 300 s, `nbf` 60 s back, no `jti`) and no `iss`, `sub` or `aud` yet.
    pub fn new(private_key_file: impl Into<PathBuf>) -> JwtAssertion {
        JwtAssertion {
            private_key_file: private_key_file.into(),
            private_key_passphrase: None,
            algorithm: AssertionAlgorithm::Rs256,
            issuer: None,
            subject: None,
            audience: None,
            lifetime: Duration::from_secs(300),
            not_before: Duration::from_secs(60),
            include_jti: false,
        }
    }

    /// The signing key from `private_key_file`.
    fn key(&self) -> Result<jsonwebtoken::EncodingKey, OAuthError> {
        let source = format!("assertion private key {}", self.private_key_file.display());
        let pem = std::fs::read(&self.private_key_file).map_err(|e| OAuthError::Config(format!("{source}: {e}")))?;
        // The TLS code's reader: encrypted PKCS#8 decrypted, errors that name the file.
        let key = crate::tls::pem_key(&pem, self.private_key_passphrase.as_deref(), &source).map_err(|e| OAuthError::Config(e.to_string()))?;
        let (label, der) = match &key {
            tokio_rustls::rustls::pki_types::PrivateKeyDer::Pkcs1(k) => ("RSA PRIVATE KEY", k.secret_pkcs1_der()),
            tokio_rustls::rustls::pki_types::PrivateKeyDer::Sec1(k) => ("EC PRIVATE KEY", k.secret_sec1_der()),
            tokio_rustls::rustls::pki_types::PrivateKeyDer::Pkcs8(k) => ("PRIVATE KEY", k.secret_pkcs8_der()),
            _ => return Err(OAuthError::Config(format!("{source}: not a PKCS#8, PKCS#1 or SEC1 key"))),
        };
        // jsonwebtoken reads every one of these forms from PEM; back to PEM it goes.
        let pem = pem_block(label, der);
        let key = match self.algorithm {
            AssertionAlgorithm::Rs256 => jsonwebtoken::EncodingKey::from_rsa_pem(pem.as_bytes()),
            AssertionAlgorithm::Es256 => jsonwebtoken::EncodingKey::from_ec_pem(pem.as_bytes()),
        };
        key.map_err(|e| OAuthError::Config(format!("{source}: not a key for {:?}: {e}", self.algorithm)))
    }

    /// A fresh assertion signed with `key`.
    fn sign(&self, key: &jsonwebtoken::EncodingKey) -> Result<String, OAuthError> {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let mut claims = serde_json::json!({
            "iat": now,
            "exp": now + self.lifetime.as_secs(),
            "nbf": now.saturating_sub(self.not_before.as_secs()),
        });
        for (name, value) in [("iss", &self.issuer), ("sub", &self.subject), ("aud", &self.audience)] {
            if let Some(v) = value {
                claims[name] = v.as_str().into();
            }
        }
        if self.include_jti {
            let mut id = [0u8; 16];
            getrandom::getrandom(&mut id).map_err(|e| OAuthError::Config(format!("no randomness for the assertion's jti: {e}")))?;
            claims["jti"] = id.iter().map(|b| format!("{b:02x}")).collect::<String>().into();
        }
        let algorithm = match self.algorithm {
            AssertionAlgorithm::Rs256 => jsonwebtoken::Algorithm::RS256,
            AssertionAlgorithm::Es256 => jsonwebtoken::Algorithm::ES256,
        };
        jsonwebtoken::encode(&jsonwebtoken::Header::new(algorithm), &claims, key)
            .map_err(|e| OAuthError::Config(format!("signing the assertion with {}: {e}", self.private_key_file.display())))
    }
}

/// A PEM block of `der` under `label`.
fn pem_block(label: &str, der: &[u8]) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

impl fmt::Debug for OidcConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the secret.
        f.debug_struct("OidcConfig")
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .field("scope", &self.scope)
            .field("ca_files", &self.ca_files)
            .field("assertion", &self.assertion)
            .field("assertion_file", &self.assertion_file)
            .finish_non_exhaustive()
    }
}

impl OidcConfig {
    /// Client credentials for `token_endpoint`, with Java's timeouts and backoff.
    pub fn new(token_endpoint: impl Into<String>, client_id: impl Into<String>, client_secret: impl Into<String>) -> OidcConfig {
        OidcConfig {
            token_endpoint: token_endpoint.into(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            scope: None,
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            retry_backoff: Duration::from_millis(100),
            retry_backoff_max: Duration::from_secs(10),
            ca_files: Vec::new(),
            assertion: None,
            assertion_file: None,
        }
    }

    /// The JWT-bearer grant at `token_endpoint` with `assertion` (Java's
    /// `sasl.oauthbearer.jwt.retriever.class=...JwtBearerJwtRetriever`).
    ///
    /// ```no_run
    /// use kwire_client::{JwtAssertion, OidcConfig, Sasl};
    /// # fn run() -> Result<(), kwire_client::OAuthError> {
    /// let assertion = JwtAssertion {
    ///     issuer: Some("my-service".into()),
    ///     subject: Some("my-service".into()),
    ///     audience: Some("https://login.example.com".into()),
    ///     ..JwtAssertion::new("/etc/kafka/assertion-key.pem")
    /// };
    /// let sasl = Sasl::oidc(OidcConfig::jwt_bearer("https://login.example.com/oauth2/token", assertion).scope("kafka"))?;
    /// # let _ = sasl; Ok(()) }
    /// ```
    pub fn jwt_bearer(token_endpoint: impl Into<String>, assertion: JwtAssertion) -> OidcConfig {
        OidcConfig { assertion: Some(assertion), ..OidcConfig::new(token_endpoint, "", "") }
    }

    /// The JWT-bearer grant at `token_endpoint` with the signed assertion in the file at
    /// `path`, read for every token request (Java's `sasl.oauthbearer.assertion.file`).
    pub fn jwt_bearer_file(token_endpoint: impl Into<String>, path: impl Into<PathBuf>) -> OidcConfig {
        OidcConfig { assertion_file: Some(path.into()), ..OidcConfig::new(token_endpoint, "", "") }
    }

    /// Trusts the CA certificates in the PEM file at `path` (one or more) for the endpoint,
    /// and no longer the system's roots; call again for more files.
    ///
    /// ```
    /// let oidc = kwire_client::OidcConfig::new("https://idp.internal/token", "id", "secret").ca_file("/etc/kafka/idp-ca.pem");
    /// assert_eq!(oidc.ca_files.len(), 1);
    /// ```
    pub fn ca_file(mut self, path: impl Into<PathBuf>) -> OidcConfig {
        self.ca_files.push(path.into());
        self
    }

    /// Asks for `scope`.
    pub fn scope(mut self, scope: impl Into<String>) -> OidcConfig {
        self.scope = Some(scope.into());
        self
    }
}

/// A [`TokenProvider`] that gets each token from an OIDC token endpoint with the client
/// credentials grant. The token is a JWT: its expiry and principal come from its `exp` and `sub`
/// claims (else `expires_in` of the response gives the expiry).
///
/// ```no_run
/// use kwire_client::{Client, ClientConfig, OidcConfig, Sasl};
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let oidc = OidcConfig::new("https://login.example.com/oauth2/token", "my-client", "my-secret").scope("kafka");
/// let client = Client::connect(ClientConfig::new("broker:9093").sasl(Sasl::oidc(oidc)?)).await?;
/// # let _ = client; Ok(()) }
/// ```
pub struct OidcProvider {
    config: OidcConfig,
    http: reqwest::Client,
    /// The assertion's key, read once.
    assertion_key: Option<jsonwebtoken::EncodingKey>,
}

impl fmt::Debug for OidcProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OidcProvider").field("config", &self.config).finish_non_exhaustive()
    }
}

/// RFC 7523's grant type.
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// The most of a token response read: a token endpoint has no reason to send more.
const MAX_RESPONSE: usize = 1 << 20;

/// HTTP statuses not worth retrying, Java's `HttpAccessTokenRetriever.UNRETRYABLE_HTTP_CODES`:
/// the request itself is wrong (bad credentials, no such endpoint, ...).
const UNRETRYABLE: [u16; 17] = [400, 401, 402, 403, 404, 405, 406, 407, 409, 410, 411, 412, 413, 414, 415, 501, 505];

impl OidcProvider {
    /// A provider for `config`; an error if the endpoint is not an http(s) URL.
    pub fn new(config: OidcConfig) -> Result<OidcProvider, OAuthError> {
        let bad = |message: String| OAuthError::Config(format!("token endpoint {:?}: {message}", config.token_endpoint));
        let url = reqwest::Url::parse(&config.token_endpoint).map_err(|e| bad(e.to_string()))?;
        if !matches!(url.scheme(), "https" | "http") {
            return Err(bad("not an http or https URL".into()));
        }
        let mut builder = reqwest::Client::builder().connect_timeout(config.connect_timeout).timeout(config.request_timeout);
        if !config.ca_files.is_empty() {
            builder = builder.tls_built_in_root_certs(false);
        }
        for path in &config.ca_files {
            let bad_file = |message: String| OAuthError::Config(format!("token endpoint CA file {}: {message}", path.display()));
            let pem = std::fs::read(path).map_err(|e| bad_file(e.to_string()))?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| bad_file(error_chain(&e)))?;
            if certs.is_empty() {
                return Err(bad_file("no PEM certificate in it".into()));
            }
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        let http = builder.build().map_err(|e| OAuthError::Transport { url: config.token_endpoint.clone(), message: e.to_string() })?;
        let assertion_key = config.assertion.as_ref().map(JwtAssertion::key).transpose()?;
        Ok(OidcProvider { config, http, assertion_key })
    }

    /// A new token from the endpoint: retried with exponential backoff while the endpoint cannot
    /// be reached or fails on its side, for at most `retry_backoff_max` in all (Java's `Retry`);
    /// a refusal (401 for bad credentials, say) at once.
    pub async fn fetch(&self) -> Result<OAuthBearerToken, OAuthError> {
        let backoff = Backoff::exponential(self.config.retry_backoff, self.config.retry_backoff_max, crate::random::Random::new(None, "oidc"));
        let deadline = Instant::now() + self.config.retry_backoff_max;
        let mut failures = 0;
        loop {
            let error = match self.attempt().await {
                Ok(token) => return Ok(token),
                Err(e) if !worth_retrying(&e) => return Err(e),
                Err(e) => e,
            };
            failures += 1;
            let wait = backoff.delay(failures).min(deadline.saturating_duration_since(Instant::now()));
            if wait.is_zero() {
                return Err(error);
            }
            warn!(url = %self.config.token_endpoint, error = %error, ?wait, "token request failed: retrying");
            tokio::time::sleep(wait).await;
        }
    }

    async fn attempt(&self) -> Result<OAuthBearerToken, OAuthError> {
        let url = &self.config.token_endpoint;
        let transport = |e: reqwest::Error| OAuthError::Transport { url: url.clone(), message: error_chain(&e) };
        let mut form = vec![("grant_type", "client_credentials".to_owned())];
        let mut request = self.http.post(url);
        match (&self.config.assertion_file, &self.config.assertion, &self.assertion_key) {
            (Some(path), ..) => {
                let bad = |message: String| OAuthError::Config(format!("assertion file {}: {message}", path.display()));
                let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
                let assertion = text.trim();
                if assertion.is_empty() {
                    return Err(bad("empty".into()));
                }
                form = vec![("grant_type", JWT_BEARER.to_owned()), ("assertion", assertion.to_owned())];
            }
            (None, Some(assertion), Some(key)) => {
                form = vec![("grant_type", JWT_BEARER.to_owned()), ("assertion", assertion.sign(key)?)];
            }
            _ => request = request.basic_auth(&self.config.client_id, Some(&self.config.client_secret)),
        }
        if let Some(scope) = &self.config.scope {
            form.push(("scope", scope.clone()));
        }
        let mut response = request.header(ACCEPT, "application/json").header(CACHE_CONTROL, "no-cache").form(&form).send().await.map_err(transport)?;
        let status = response.status().as_u16();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(transport)? {
            if body.len() + chunk.len() > MAX_RESPONSE {
                return Err(OAuthError::BadResponse { url: url.clone(), message: format!("a response over {MAX_RESPONSE} bytes") });
            }
            body.extend_from_slice(&chunk);
        }
        debug!(%url, status, bytes = body.len(), "token endpoint answered");
        if !(200..300).contains(&status) {
            let (error, description) = oauth_error(&body);
            return Err(OAuthError::TokenEndpoint { url: url.clone(), status, error, description });
        }
        token_from_response(url, &body)
    }
}

impl TokenProvider for OidcProvider {
    fn token(&self) -> TokenFuture<'_> {
        Box::pin(self.fetch())
    }
}

/// Whether Java's retriever would try again: the endpoint unreachable, or an HTTP status not on
/// its list of refusals (5xx, 408, 429, ...).
fn worth_retrying(e: &OAuthError) -> bool {
    match e {
        OAuthError::Transport { .. } => true,
        OAuthError::TokenEndpoint { status, .. } => !UNRETRYABLE.contains(status),
        _ => false,
    }
}

/// A reqwest error with its causes (the connect error behind "error sending request").
fn error_chain(e: &reqwest::Error) -> String {
    let mut message = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    message
}

/// The OAuth error of a refusal (RFC 6749 section 5.2), or the body's start as the description.
fn oauth_error(body: &[u8]) -> (Option<String>, Option<String>) {
    if let Ok(serde_json::Value::Object(o)) = serde_json::from_slice::<serde_json::Value>(body) {
        let field = |k: &str| o.get(k).and_then(serde_json::Value::as_str).map(str::to_owned);
        if field("error").is_some() {
            return (field("error"), field("error_description"));
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    (None, (!text.is_empty()).then(|| text.chars().take(200).collect()))
}

/// The token of a successful response: `access_token`, its expiry from the JWT's `exp` or else
/// the response's `expires_in`.
fn token_from_response(url: &str, body: &[u8]) -> Result<OAuthBearerToken, OAuthError> {
    let bad = |message: String| OAuthError::BadResponse { url: url.to_owned(), message };
    let json: serde_json::Value = serde_json::from_slice(body).map_err(|e| bad(format!("not JSON: {e}")))?;
    let access_token = json.get("access_token").and_then(serde_json::Value::as_str).filter(|t| !t.is_empty()).ok_or_else(|| bad("no access_token".into()))?;
    match OAuthBearerToken::from_jwt(access_token) {
        Ok(token) => Ok(token),
        Err(jwt_error) => match json.get("expires_in").and_then(serde_json::Value::as_u64) {
            Some(secs) => Ok(OAuthBearerToken::new(access_token, Duration::from_secs(secs))),
            None => Err(bad(format!("no expiry: no expires_in, and {jwt_error}"))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_carry_the_oauth_error() {
        assert_eq!(oauth_error(br#"{"error":"invalid_client","error_description":"bad secret"}"#), (Some("invalid_client".into()), Some("bad secret".into())));
        assert_eq!(oauth_error(b"<html>nope</html>"), (None, Some("<html>nope</html>".into())));
        assert_eq!(oauth_error(b""), (None, None));
    }

    #[test]
    fn token_responses() {
        let e = token_from_response("u", b"{}").unwrap_err();
        assert!(e.to_string().contains("no access_token"), "{e}");
        assert!(token_from_response("u", b"nope").is_err());
        let opaque = token_from_response("u", br#"{"access_token":"opaque","expires_in":60}"#).unwrap();
        assert_eq!(opaque.value(), "opaque");
        let e = token_from_response("u", br#"{"access_token":"opaque"}"#).unwrap_err();
        assert!(matches!(&e, OAuthError::BadResponse { message, .. } if message.contains("no expiry")), "{e:?}");
    }

    #[test]
    fn endpoints_must_be_http_urls() {
        assert!(OidcProvider::new(OidcConfig::new("ftp://x/token", "a", "b")).is_err());
        assert!(OidcProvider::new(OidcConfig::new("not a url", "a", "b")).is_err());
        assert!(!format!("{:?}", OidcConfig::new("https://x/token", "a", "s3cret")).contains("s3cret"));
    }
}
