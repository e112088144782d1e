//! The built-in OAUTHBEARER token provider: OAuth 2 client credentials (RFC 6749 section 4.4) at
//! an OIDC token endpoint, as Java's `HttpAccessTokenRetriever` / `ClientCredentialsJwtRetriever`
//! ask for a token (`sasl.oauthbearer.token.endpoint.url`, `clientId`, `clientSecret`, `scope`):
//! a form POST with the client's id and secret as HTTP basic authentication, retried with
//! backoff while the endpoint fails on its side.

use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

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
}

impl fmt::Debug for OidcConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the secret.
        f.debug_struct("OidcConfig")
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .field("scope", &self.scope)
            .field("ca_files", &self.ca_files)
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
        }
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
}

impl fmt::Debug for OidcProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OidcProvider").field("config", &self.config).finish_non_exhaustive()
    }
}

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
        let http = builder
            .build()
            .map_err(|e| OAuthError::Transport { url: config.token_endpoint.clone(), message: e.to_string() })?;
        Ok(OidcProvider { config, http })
    }

    /// A new token from the endpoint: retried with exponential backoff while the endpoint cannot
    /// be reached or fails on its side, for at most `retry_backoff_max` in all (Java's `Retry`);
    /// a refusal (401 for bad credentials, say) at once.
    pub async fn fetch(&self) -> Result<OAuthBearerToken, OAuthError> {
        let backoff = Backoff::exponential(self.config.retry_backoff, self.config.retry_backoff_max);
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
        let mut form = vec![("grant_type", "client_credentials")];
        if let Some(scope) = &self.config.scope {
            form.push(("scope", scope.as_str()));
        }
        let mut response = self
            .http
            .post(url)
            .basic_auth(&self.config.client_id, Some(&self.config.client_secret))
            .header(ACCEPT, "application/json")
            .header(CACHE_CONTROL, "no-cache")
            .form(&form)
            .send()
            .await
            .map_err(transport)?;
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
    let access_token = json
        .get("access_token")
        .and_then(serde_json::Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| bad("no access_token".into()))?;
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
        assert_eq!(
            oauth_error(br#"{"error":"invalid_client","error_description":"bad secret"}"#),
            (Some("invalid_client".into()), Some("bad secret".into()))
        );
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
