//! SASL/OAUTHBEARER (RFC 7628; KIP-255, KIP-342, KIP-768) as Kafka speaks it: the token an
//! application's [`TokenProvider`] returns, kept and refreshed before it expires by
//! [`OAuthBearer`], the client's initial response with its SASL extensions, and the broker's
//! error reply.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use base64::Engine;
use tracing::{debug, warn};

use crate::error::OAuthError;

/// A bearer token for SASL/OAUTHBEARER: its value (a JWT for Kafka's OIDC validator), when it
/// expires, and optionally the principal it names and SASL extensions to send with it (KIP-342).
#[derive(Clone)]
pub struct OAuthBearerToken {
    value: String,
    expires_at: SystemTime,
    principal: Option<String>,
    extensions: Vec<(String, String)>,
}

impl fmt::Debug for OAuthBearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the value: it is a credential.
        f.debug_struct("OAuthBearerToken")
            .field("expires_at", &self.expires_at)
            .field("principal", &self.principal)
            .field("extensions", &self.extensions)
            .finish_non_exhaustive()
    }
}

impl OAuthBearerToken {
    /// A token valid for `lifetime` from now.
    pub fn new(value: impl Into<String>, lifetime: Duration) -> OAuthBearerToken {
        OAuthBearerToken::expiring_at(value, SystemTime::now() + lifetime)
    }

    /// A token that expires at `expires_at`.
    pub fn expiring_at(value: impl Into<String>, expires_at: SystemTime) -> OAuthBearerToken {
        OAuthBearerToken { value: value.into(), expires_at, principal: None, extensions: Vec::new() }
    }

    /// A JWT, its expiry read from its `exp` claim and its principal from `sub`. The signature
    /// is not checked: that is the broker's job (as Java's client validator, which checks only
    /// the form and the claims).
    pub fn from_jwt(value: impl Into<String>) -> Result<OAuthBearerToken, OAuthError> {
        let value = value.into();
        let claims = jwt_claims(&value)?;
        let exp = claims
            .get("exp")
            .and_then(serde_json::Value::as_f64)
            .ok_or_else(|| OAuthError::InvalidToken("the JWT has no exp claim (seconds since the epoch)".into()))?;
        let expires_at = Duration::try_from_secs_f64(exp)
            .ok()
            .and_then(|d| UNIX_EPOCH.checked_add(d))
            .ok_or_else(|| OAuthError::InvalidToken(format!("the JWT's exp claim {exp} is not a time")))?;
        let principal = claims.get("sub").and_then(serde_json::Value::as_str).map(str::to_owned);
        Ok(OAuthBearerToken { value, expires_at, principal, extensions: Vec::new() })
    }

    /// An unsecured JWS (`alg: none`, no signature) naming `principal`, valid for `lifetime`:
    /// what a listener with Kafka's default OAUTHBEARER validator (the unsecured one, for
    /// development only) accepts.
    pub fn unsecured(principal: impl Into<String>, lifetime: Duration) -> OAuthBearerToken {
        let principal = principal.into();
        let iat = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        // Whole seconds, at least one: Kafka reads `exp` as a NumericDate.
        let exp = iat + lifetime.as_secs().max(1);
        let header = B64URL.encode(br#"{"alg":"none"}"#);
        let claims = serde_json::json!({ "sub": principal.as_str(), "iat": iat, "exp": exp });
        let value = format!("{header}.{}.", B64URL.encode(claims.to_string()));
        OAuthBearerToken { value, expires_at: UNIX_EPOCH + Duration::from_secs(exp), principal: Some(principal), extensions: Vec::new() }
    }

    /// The principal the token names (for logs; the broker takes it from the token).
    pub fn with_principal(mut self, principal: impl Into<String>) -> OAuthBearerToken {
        self.principal = Some(principal.into());
        self
    }

    /// A SASL extension to send with this token (KIP-342): the key letters only, the value
    /// printable ASCII; `auth` is reserved.
    pub fn with_extension(mut self, key: impl Into<String>, value: impl Into<String>) -> OAuthBearerToken {
        self.extensions.push((key.into(), value.into()));
        self
    }

    /// The token.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// When it expires.
    pub fn expires_at(&self) -> SystemTime {
        self.expires_at
    }

    /// The principal it names, if known.
    pub fn principal(&self) -> Option<&str> {
        self.principal.as_deref()
    }

    /// Its SASL extensions.
    pub fn extensions(&self) -> &[(String, String)] {
        &self.extensions
    }
}

/// The claims of a JWT (its second part, base64url JSON), unverified.
fn jwt_claims(jwt: &str) -> Result<serde_json::Map<String, serde_json::Value>, OAuthError> {
    let mut parts = jwt.split('.');
    let (Some(_header), Some(payload)) = (parts.next(), parts.next()) else {
        return Err(OAuthError::InvalidToken("not a JWT (header.payload.signature)".into()));
    };
    let json = B64URL.decode(payload.trim_end_matches('=')).map_err(|e| OAuthError::InvalidToken(format!("the JWT's payload is not base64url: {e}")))?;
    match serde_json::from_slice(&json) {
        Ok(serde_json::Value::Object(claims)) => Ok(claims),
        Ok(_) => Err(OAuthError::InvalidToken("the JWT's payload is not a JSON object".into())),
        Err(e) => Err(OAuthError::InvalidToken(format!("the JWT's payload is not JSON: {e}"))),
    }
}

/// What a [`TokenProvider`] returns.
pub type TokenFuture<'a> = Pin<Box<dyn Future<Output = Result<OAuthBearerToken, OAuthError>> + Send + 'a>>;

/// Where SASL/OAUTHBEARER tokens come from: the application's identity provider, or the built-in
/// OIDC client-credentials provider (`OidcProvider`, feature `oidc`).
///
/// [`token`](TokenProvider::token) should get a new token each call: the client keeps the one it
/// returned for every connection and calls again when the token nears its expiry (at about 80 %
/// of its lifetime, see [`RefreshPolicy`]), so connections that authenticate or re-authenticate
/// (KIP-368) after that present the new one. A closure returning a future is a provider.
///
/// ```no_run
/// use std::time::Duration;
/// use kwire_client::{ClientConfig, OAuthBearerToken, OAuthError, Sasl, TokenFuture, TokenProvider};
///
/// /// Tokens from the application's own identity service.
/// struct Vault {
///     url: String,
/// }
///
/// impl TokenProvider for Vault {
///     fn token(&self) -> TokenFuture<'_> {
///         Box::pin(async move {
///             let jwt = fetch_from(&self.url).await.map_err(OAuthError::provider)?;
///             // Expiry and principal from the JWT's exp and sub claims, plus a SASL extension.
///             Ok(OAuthBearerToken::from_jwt(jwt)?.with_extension("logicalCluster", "lkc-1"))
///         })
///     }
/// }
/// # async fn fetch_from(_: &str) -> Result<String, std::io::Error> { Ok(String::new()) }
///
/// # async fn run() -> kwire_client::Result<()> {
/// let config = ClientConfig::new("broker:9093").sasl(Sasl::oauthbearer(Vault { url: "https://vault/token".into() }));
/// // Or a closure:
/// let dev = Sasl::oauthbearer(|| async { Ok(OAuthBearerToken::unsecured("alice", Duration::from_secs(3600))) });
/// # let _ = (config, dev);
/// # Ok(()) }
/// ```
pub trait TokenProvider: Send + Sync {
    /// A new token.
    fn token(&self) -> TokenFuture<'_>;
}

impl<F, Fut> TokenProvider for F
where
    F: Fn() -> Fut + Send + Sync,
    Fut: Future<Output = Result<OAuthBearerToken, OAuthError>> + Send + 'static,
{
    fn token(&self) -> TokenFuture<'_> {
        Box::pin(self())
    }
}

/// When a token is refreshed, as Java's `ExpiringCredentialRefreshingLogin` decides it with
/// `sasl.login.refresh.*`: at `window_factor` of its lifetime plus up to `window_jitter` more,
/// but not later than `buffer` before it expires nor sooner than `min_period` after it was
/// obtained; a token too short-lived for both buffers is refreshed at the window alone.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RefreshPolicy {
    /// The fraction of the lifetime after which to refresh (`sasl.login.refresh.window.factor`, 0.8).
    pub window_factor: f64,
    /// Up to this fraction more, at random (`sasl.login.refresh.window.jitter`, 0.05).
    pub window_jitter: f64,
    /// No refresh sooner than this after the token was obtained
    /// (`sasl.login.refresh.min.period.seconds`, 60 s).
    pub min_period: Duration,
    /// Refresh at least this long before the token expires (`sasl.login.refresh.buffer.seconds`, 300 s).
    pub buffer: Duration,
}

impl Default for RefreshPolicy {
    fn default() -> Self {
        RefreshPolicy { window_factor: 0.8, window_jitter: 0.05, min_period: Duration::from_secs(60), buffer: Duration::from_secs(300) }
    }
}

impl RefreshPolicy {
    /// When to refresh a token obtained at `obtained` that expires at `expires`; `random` in
    /// [0, 1) picks the jitter.
    pub(crate) fn refresh_at(&self, obtained: SystemTime, expires: SystemTime, random: f64) -> SystemTime {
        let Ok(lifetime) = expires.duration_since(obtained) else {
            return obtained; // expired already: get another at the next chance
        };
        let fraction = self.window_factor + self.window_jitter * random;
        // Out of range (or NaN) settings must not make the duration arithmetic panic.
        let fraction = if fraction.is_nan() { 0.8 } else { fraction.clamp(0.0, 1.0) };
        let proposed = obtained + lifetime.mul_f64(fraction);
        if self.min_period + self.buffer > lifetime {
            return proposed;
        }
        proposed.min(expires - self.buffer).max(obtained + self.min_period)
    }
}

/// After a failed refresh, the old token (while it lasts) is used and a refresh tried again
/// this much later (Java's refreshing login waits 10 s too).
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(10);

/// The shortest wait before a background refresh.
const MIN_BACKGROUND_WAIT: Duration = Duration::from_secs(1);

/// SASL/OAUTHBEARER settings: the token provider, when tokens are refreshed, and SASL extensions
/// sent with every token. The current token is kept here and shared by every connection (and
/// every clone): the provider is called for the first connection, then again at the token's
/// refresh time in the background (as Java's `ExpiringCredentialRefreshingLogin` does, while
/// any clone of these settings lives), not once per connection.
#[derive(Clone)]
pub struct OAuthBearer {
    shared: Arc<Shared>,
}

struct Shared {
    provider: Arc<dyn TokenProvider>,
    refresh: RefreshPolicy,
    extensions: Vec<(String, String)>,
    current: tokio::sync::Mutex<Option<Current>>,
    fetched: AtomicU64,
    /// Counts scheduled background refreshes: only the latest one runs.
    refreshes: AtomicU64,
}

struct Current {
    token: OAuthBearerToken,
    refresh_at: SystemTime,
}

impl fmt::Debug for OAuthBearer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthBearer")
            .field("refresh", &self.shared.refresh)
            .field("extensions", &self.shared.extensions)
            .field("tokens_fetched", &self.tokens_fetched())
            .finish_non_exhaustive()
    }
}

impl OAuthBearer {
    /// Tokens from `provider`, refreshed by the default [`RefreshPolicy`].
    pub fn new(provider: impl TokenProvider + 'static) -> OAuthBearer {
        OAuthBearer::with_parts(Arc::new(provider), RefreshPolicy::default(), Vec::new())
    }

    fn with_parts(provider: Arc<dyn TokenProvider>, refresh: RefreshPolicy, extensions: Vec<(String, String)>) -> OAuthBearer {
        let shared = Shared { provider, refresh, extensions, current: tokio::sync::Mutex::new(None), fetched: AtomicU64::new(0), refreshes: AtomicU64::new(0) };
        OAuthBearer { shared: Arc::new(shared) }
    }

    /// Refreshes tokens by `refresh` (settings made this way start with no token).
    pub fn refresh_policy(self, refresh: RefreshPolicy) -> OAuthBearer {
        OAuthBearer::with_parts(self.shared.provider.clone(), refresh, self.shared.extensions.clone())
    }

    /// A SASL extension sent with every token (KIP-342; as `extension_<key>` options in Java's
    /// JAAS config): the key letters only, the value printable ASCII. A token's own extension
    /// of the same key wins.
    pub fn extension(self, key: impl Into<String>, value: impl Into<String>) -> OAuthBearer {
        let mut extensions = self.shared.extensions.clone();
        extensions.push((key.into(), value.into()));
        OAuthBearer::with_parts(self.shared.provider.clone(), self.shared.refresh, extensions)
    }

    /// The current token, from the provider if there is none yet or it is due for refresh
    /// (normally the background refresh has fetched it already). A
    /// refresh that fails while the current token is still valid logs a warning and returns
    /// the current token (tried again 10 s later), as Java's refreshing login keeps its
    /// credential.
    pub async fn token(&self) -> Result<OAuthBearerToken, OAuthError> {
        // Held across the provider's call: connections opening at once share one request.
        let mut current = self.shared.current.lock().await;
        let now = SystemTime::now();
        if let Some(c) = current.as_ref().filter(|c| now < c.refresh_at) {
            return Ok(c.token.clone());
        }
        match self.shared.provider.token().await {
            Ok(token) => {
                self.shared.fetched.fetch_add(1, Ordering::Relaxed);
                let refresh_at = self.shared.refresh.refresh_at(now, token.expires_at, crate::random::Random::new(None, "oauth").unit());
                if token.expires_at <= now {
                    // Sent all the same: the broker is the judge, and its refusal names the reason.
                    warn!(principal = token.principal(), "the token provider returned an expired token");
                }
                debug!(principal = token.principal(), expires_at = ?token.expires_at, refresh_at = ?refresh_at, "new OAUTHBEARER token");
                *current = Some(Current { token: token.clone(), refresh_at });
                self.refresh_in_background(refresh_at);
                Ok(token)
            }
            Err(e) => match current.as_mut().filter(|c| c.token.expires_at > now) {
                Some(c) => {
                    warn!(error = %e, expires_at = ?c.token.expires_at, "token refresh failed: using the current token while it lasts");
                    c.refresh_at = (now + RETRY_AFTER_FAILURE).min(c.token.expires_at);
                    self.refresh_in_background(c.refresh_at);
                    Ok(c.token.clone())
                }
                None => Err(e),
            },
        }
    }

    /// Calls the provider at `at` (when no later refresh was scheduled meanwhile and these
    /// settings are still in use), so a connection that opens or re-authenticates after that
    /// finds the new token ready.
    fn refresh_in_background(&self, at: SystemTime) {
        // Outside a runtime (no connection can be either) tokens are fetched when asked for.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        // A token due at once (expired when it came) is fetched again when a connection asks,
        // and none sooner than a second from now: a provider of ever-expired tokens must not be
        // called in a loop.
        let Ok(wait) = at.duration_since(SystemTime::now()) else { return };
        if wait.is_zero() {
            return;
        }
        let wait = wait.max(MIN_BACKGROUND_WAIT);
        let this = self.shared.refreshes.fetch_add(1, Ordering::AcqRel) + 1;
        let weak = Arc::downgrade(&self.shared);
        runtime.spawn(async move {
            tokio::time::sleep(wait).await;
            let Some(shared) = weak.upgrade() else { return };
            if shared.refreshes.load(Ordering::Acquire) != this {
                return;
            }
            // Failures are logged there and retried 10 s later while the token lasts.
            let _ = OAuthBearer { shared }.token().await;
        });
    }

    /// How many tokens the provider has returned.
    pub fn tokens_fetched(&self) -> u64 {
        self.shared.fetched.load(Ordering::Relaxed)
    }

    /// The client's initial response for `token` (RFC 7628 section 3.1, as Kafka's
    /// `OAuthBearerClientInitialResponse` writes it): `n,,` (no authorization id), then
    /// `\x01auth=Bearer <token>`, each extension as `\x01key=value`, and `\x01\x01`.
    pub(crate) fn initial_response(&self, token: &OAuthBearerToken) -> Result<Vec<u8>, OAuthError> {
        // Kafka's server takes a token of these characters only (its AUTH_PATTERN).
        let token_ok = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
        if token.value.is_empty() || !token.value.bytes().all(token_ok) {
            return Err(OAuthError::InvalidToken("a bearer token must be letters, digits, '-', '_' and '.' (a JWT), and not empty".into()));
        }
        let mut extensions: Vec<(&str, &str)> = Vec::new();
        for (key, value) in self.shared.extensions.iter().chain(&token.extensions) {
            check_extension(key, value)?;
            match extensions.iter_mut().find(|(k, _)| k == key) {
                Some(e) => e.1 = value,
                None => extensions.push((key, value)),
            }
        }
        let mut message = format!("n,,\x01auth=Bearer {}", token.value);
        for (key, value) in extensions {
            message.push('\x01');
            message.push_str(key);
            message.push('=');
            message.push_str(value);
        }
        message.push_str("\x01\x01");
        Ok(message.into_bytes())
    }
}

/// A SASL extension as Kafka's `SaslExtensions` allows it: the key `[A-Za-z]+` and not `auth`,
/// the value `[\x21-\x7E \t\r\n]+`.
fn check_extension(key: &str, value: &str) -> Result<(), OAuthError> {
    if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphabetic()) || key == "auth" {
        return Err(OAuthError::InvalidToken(format!("SASL extension key {key:?}: letters only, and not \"auth\"")));
    }
    if value.is_empty() || !value.bytes().all(|b| matches!(b, 0x21..=0x7e | b' ' | b'\t' | b'\r' | b'\n')) {
        return Err(OAuthError::InvalidToken(format!("SASL extension {key}: the value must be printable ASCII")));
    }
    Ok(())
}

/// What the client sends after the server's error reply, so the server ends the exchange
/// (RFC 7628 section 3.2.3: a single `%x01`).
pub(crate) const ERROR_ACKNOWLEDGEMENT: &[u8] = b"\x01";

/// The broker's error reply (RFC 7628 section 3.2.2: a JSON object with `status`, and `scope`
/// and `openid-configuration` when it has them) as a refusal; `message` is the broker's
/// message on the SaslAuthenticate response that ends the exchange.
pub(crate) fn refusal(reply: &[u8], message: Option<String>) -> OAuthError {
    let json: Option<serde_json::Map<String, serde_json::Value>> = serde_json::from_slice(reply).ok();
    let field = |k: &str| json.as_ref().and_then(|j| j.get(k)).and_then(serde_json::Value::as_str).map(str::to_owned);
    OAuthError::Refused {
        status: field("status").unwrap_or_else(|| String::from_utf8_lossy(reply).into_owned()),
        scope: field("scope"),
        openid_configuration: field("openid-configuration"),
        message: message.filter(|m| !m.is_empty()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A provider that is never asked.
    fn never() -> OAuthBearer {
        OAuthBearer::new(|| async { Err::<OAuthBearerToken, _>(OAuthError::provider("unused")) })
    }

    fn jwt(claims: serde_json::Value) -> String {
        format!("{}.{}.c2ln", B64URL.encode(br#"{"alg":"RS256"}"#), B64URL.encode(claims.to_string()))
    }

    #[test]
    fn the_initial_response_is_kafkas() {
        let o = never().extension("traceId", "abc").extension("cluster", "x");
        let t = OAuthBearerToken::new("a.b-c_d", Duration::from_secs(60)).with_extension("cluster", "y");
        assert_eq!(o.initial_response(&t).unwrap(), b"n,,\x01auth=Bearer a.b-c_d\x01traceId=abc\x01cluster=y\x01\x01");
        let bare = never();
        assert_eq!(bare.initial_response(&t.clone()).unwrap(), b"n,,\x01auth=Bearer a.b-c_d\x01cluster=y\x01\x01");
        let plain = OAuthBearerToken::new("tok", Duration::from_secs(1));
        assert_eq!(bare.initial_response(&plain).unwrap(), b"n,,\x01auth=Bearer tok\x01\x01");
    }

    #[test]
    fn bad_tokens_and_extensions_are_refused_before_sending() {
        let o = never();
        let t = |v: &str| OAuthBearerToken::new(v, Duration::from_secs(60));
        for bad in ["", "has space", "new\x01line"] {
            assert!(matches!(o.initial_response(&t(bad)), Err(OAuthError::InvalidToken(_))), "{bad:?}");
        }
        for (k, v) in [("auth", "x"), ("a1", "x"), ("", "x"), ("ok", ""), ("ok", "\x01")] {
            assert!(matches!(o.initial_response(&t("tok").with_extension(k, v)), Err(OAuthError::InvalidToken(_))), "{k:?}={v:?}");
        }
    }

    #[test]
    fn jwts_give_their_expiry_and_subject() {
        let t = OAuthBearerToken::from_jwt(jwt(serde_json::json!({"sub": "svc", "exp": 2_000_000_000}))).unwrap();
        assert_eq!(t.expires_at(), UNIX_EPOCH + Duration::from_secs(2_000_000_000));
        assert_eq!(t.principal(), Some("svc"));
        for bad in [jwt(serde_json::json!({"sub": "svc"})), jwt(serde_json::json!({"exp": -1})), "x".into(), "a.!!.c".into(), jwt(serde_json::json!([1]))] {
            assert!(matches!(OAuthBearerToken::from_jwt(bad.clone()), Err(OAuthError::InvalidToken(_))), "{bad}");
        }
        assert!(!format!("{t:?}").contains(t.value()), "Debug shows no credential");
    }

    #[test]
    fn unsecured_tokens_are_alg_none_jws() {
        let t = OAuthBearerToken::unsecured("dev", Duration::from_secs(60));
        let parts: Vec<&str> = t.value().split('.').collect();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[2], "", "no signature");
        assert_eq!(B64URL.decode(parts[0]).unwrap(), br#"{"alg":"none"}"#);
        let back = OAuthBearerToken::from_jwt(t.value()).unwrap();
        assert_eq!(back.principal(), Some("dev"));
        assert_eq!(back.expires_at(), t.expires_at());
    }

    #[test]
    fn refresh_at_follows_javas_refreshing_login() {
        let p = RefreshPolicy::default();
        let t0 = UNIX_EPOCH + Duration::from_secs(1_000_000);
        let at = |lifetime: u64, random: f64| p.refresh_at(t0, t0 + Duration::from_secs(lifetime), random).duration_since(t0).unwrap();
        // An hour: 80 % to 85 %.
        assert_eq!(at(3600, 0.0), Duration::from_secs(2880));
        assert_eq!(at(3600, 1.0), Duration::from_secs(3060));
        // Ten minutes: 80 % would be inside the 300 s buffer: at the buffer.
        assert_eq!(at(600, 0.0), Duration::from_secs(300));
        // Seven minutes: the buffer would put it before the minimum period: at the minimum period.
        assert_eq!(at(370, 0.0), Duration::from_secs(70));
        // Too short for both: the window alone.
        assert_eq!(at(10, 0.0), Duration::from_secs(8));
        // Expired: now.
        assert_eq!(p.refresh_at(t0, t0 - Duration::from_secs(1), 0.5), t0);
    }

    #[test]
    fn refusals_name_the_brokers_status() {
        let e = refusal(br#"{"status":"invalid_token","scope":"kafka"}"#, Some(r#"{"status":"invalid_token"}"#.into()));
        assert!(matches!(&e, OAuthError::Refused { status, scope: Some(s), .. } if status == "invalid_token" && s == "kafka"), "{e:?}");
        assert!(e.to_string().contains("refused the token: invalid_token (scope kafka)"), "{e}");
        let e = refusal(b"not json", None);
        assert!(matches!(&e, OAuthError::Refused { status, .. } if status == "not json"), "{e:?}");
    }

    #[tokio::test]
    async fn tokens_are_refreshed_in_the_background_while_the_settings_live() {
        let o = OAuthBearer::new(|| async { Ok::<_, OAuthError>(OAuthBearerToken::new("t", Duration::from_secs(2))) }).refresh_policy(RefreshPolicy {
            window_factor: 0.5,
            window_jitter: 0.0,
            min_period: Duration::ZERO,
            buffer: Duration::ZERO,
        });
        o.token().await.unwrap();
        // Due after 1 s: fetched then without anyone asking.
        tokio::time::sleep(Duration::from_millis(1600)).await;
        assert_eq!(o.tokens_fetched(), 2);
        let weak = Arc::downgrade(&o.shared);
        drop(o);
        tokio::time::sleep(Duration::from_millis(1200)).await;
        assert!(weak.upgrade().is_none(), "the refresh task holds no strong reference while it waits");
    }

    #[tokio::test]
    async fn tokens_are_kept_until_their_refresh_time_and_kept_when_a_refresh_fails() {
        use std::sync::atomic::AtomicU32;
        let calls = Arc::new(AtomicU32::new(0));
        let c = calls.clone();
        let provider = move || {
            let n = c.fetch_add(1, Ordering::SeqCst);
            async move {
                match n {
                    0 => Ok(OAuthBearerToken::new("first", Duration::from_secs(3600))),
                    1 => Err(OAuthError::provider("down")),
                    _ => Ok(OAuthBearerToken::new("second", Duration::from_secs(3600))),
                }
            }
        };
        let no_buffers = RefreshPolicy { window_factor: 0.0, window_jitter: 0.0, min_period: Duration::ZERO, buffer: Duration::ZERO };
        let o = OAuthBearer::new(provider.clone());
        assert_eq!(o.token().await.unwrap().value(), "first");
        assert_eq!(o.clone().token().await.unwrap().value(), "first", "clones share the token");
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        // Due at once: the failed refresh keeps the first token, and waits before the next.
        calls.store(0, Ordering::SeqCst);
        let o = OAuthBearer::new(provider).refresh_policy(no_buffers);
        assert_eq!(o.token().await.unwrap().value(), "first");
        assert_eq!(o.token().await.unwrap().value(), "first");
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        assert_eq!(o.token().await.unwrap().value(), "first", "not retried at once");
        assert_eq!(o.tokens_fetched(), 1);
        // With no token to fall back on, the error.
        let failing = OAuthBearer::new(|| async { Err::<OAuthBearerToken, _>(OAuthError::provider("down")) });
        assert!(matches!(failing.token().await, Err(OAuthError::Provider(_))));
    }
}
