//! SASL/OAUTHBEARER (RFC 7628, KIP-255) with unsecured JWS tokens, as a Kafka broker with its
//! default validator (`OAuthBearerUnsecuredValidatorCallbackHandler`) takes them: the client's
//! first message parsed as `OAuthBearerClientInitialResponse` does, the token read as
//! `OAuthBearerUnsecuredJws` does (header `alg` "none", an empty signature, a numeric `exp`, a
//! non-blank principal claim) and checked as `OAuthBearerValidationUtils` does (`iat` not in the
//! future, `exp` not past, `exp` after `iat`, the required scope). A refused token gets RFC
//! 7628's error reply (`{"status":"invalid_token"}`), not a failure: the failure comes when the
//! client acknowledges it.

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use base64::Engine;

/// How the brokers validate OAUTHBEARER tokens: the options of Kafka's unsecured validator
/// (`unsecuredValidator*` in the listener's JAAS config).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OAuthBearerConfig {
    /// The claim that names the principal (`unsecuredValidatorPrincipalClaimName`, `sub`).
    pub principal_claim: String,
    /// The claim that holds the token's scope, a string or a list of strings
    /// (`unsecuredValidatorScopeClaimName`, `scope`).
    pub scope_claim: String,
    /// Scope values every token must have (`unsecuredValidatorRequiredScope`, none); a token
    /// without one is refused with `insufficient_scope`.
    pub required_scope: Vec<String>,
    /// Clock skew allowed when checking `iat` and `exp`, in ms
    /// (`unsecuredValidatorAllowableClockSkewMs`, 0).
    pub allowable_clock_skew_ms: i64,
}

impl Default for OAuthBearerConfig {
    fn default() -> Self {
        OAuthBearerConfig { principal_claim: "sub".into(), scope_claim: "scope".into(), required_scope: Vec::new(), allowable_clock_skew_ms: 0 }
    }
}

impl OAuthBearerConfig {
    /// Sets [`required_scope`](Self::required_scope).
    pub fn required_scope<S: AsRef<str>>(mut self, scope: &[S]) -> Self {
        self.required_scope = scope.iter().map(|s| s.as_ref().to_owned()).collect();
        self
    }

    /// Sets [`principal_claim`](Self::principal_claim).
    pub fn principal_claim(mut self, claim: &str) -> Self {
        self.principal_claim = claim.to_owned();
        self
    }

    /// Sets [`allowable_clock_skew_ms`](Self::allowable_clock_skew_ms).
    pub fn allowable_clock_skew_ms(mut self, ms: i64) -> Self {
        self.allowable_clock_skew_ms = ms.max(0);
        self
    }
}

/// The client's first message, as `OAuthBearerClientInitialResponse` reads it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct InitialResponse {
    pub(crate) authzid: String,
    pub(crate) token: String,
    pub(crate) extensions: Vec<(String, String)>,
}

/// Why a first message was refused (Kafka's `SaslException`: the client is told only that its
/// credentials were invalid).
pub(crate) const INVALID_FIRST_MESSAGE: &str = "Invalid OAUTHBEARER client first message";

/// `n,[a=AUTHZID],\x01KEY=VALUE\x01...\x01` (RFC 7628 section 3.1) with an `auth=Bearer TOKEN`
/// pair among the keys.
pub(crate) fn parse_initial_response(message: &[u8]) -> Result<InitialResponse, &'static str> {
    let text = std::str::from_utf8(message).map_err(|_| INVALID_FIRST_MESSAGE)?;
    let rest = text.strip_prefix("n,").ok_or(INVALID_FIRST_MESSAGE)?;
    let (gs2, rest) = rest.split_once(',').ok_or(INVALID_FIRST_MESSAGE)?;
    let authzid = if gs2.is_empty() {
        String::new()
    } else {
        let a = gs2.strip_prefix("a=").ok_or(INVALID_FIRST_MESSAGE)?;
        if !valid_saslname(a) {
            return Err(INVALID_FIRST_MESSAGE);
        }
        a.to_owned()
    };
    // \x01 (KEY=VALUE\x01)* \x01
    let pairs = rest.strip_prefix('\x01').and_then(|r| r.strip_suffix('\x01')).ok_or(INVALID_FIRST_MESSAGE)?;
    let mut auth = None;
    let mut extensions = Vec::new();
    if !pairs.is_empty() {
        let body = pairs.strip_suffix('\x01').ok_or(INVALID_FIRST_MESSAGE)?;
        for pair in body.split('\x01') {
            let (key, value) = pair.split_once('=').ok_or(INVALID_FIRST_MESSAGE)?;
            if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphabetic()) || !valid_extension_value(value) {
                return Err(INVALID_FIRST_MESSAGE);
            }
            if key == "auth" {
                auth = Some(value);
            } else {
                // Later pairs of the same key win, as a map keeps them.
                extensions.retain(|(k, _): &(String, String)| k != key);
                extensions.push((key.to_owned(), value.to_owned()));
            }
        }
    }
    let auth = auth.ok_or("Invalid OAUTHBEARER client first message: 'auth' not specified")?;
    // (?<scheme>\w+)[ ]+(?<token>[-_.a-zA-Z0-9]+)
    let (scheme, token) = auth.split_once(' ').ok_or("Invalid OAUTHBEARER client first message: invalid 'auth' format")?;
    let token = token.trim_start_matches(' ');
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let token_char = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
    if scheme.is_empty() || !scheme.bytes().all(word) || token.is_empty() || !token.bytes().all(token_char) {
        return Err("Invalid OAUTHBEARER client first message: invalid 'auth' format");
    }
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err("Invalid scheme in OAUTHBEARER client first message");
    }
    Ok(InitialResponse { authzid, token: token.to_owned(), extensions })
}

/// RFC 5801's saslname: UTF-8 without `=` or `,` except as `=2C` and `=3D` (Kafka takes ASCII).
fn valid_saslname(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'=' if b[i..].starts_with(b"=2C") || b[i..].starts_with(b"=3D") => i += 3,
            b'=' | b',' | 0 | 0x80.. => return false,
            _ => i += 1,
        }
    }
    !s.is_empty()
}

fn valid_extension_value(v: &str) -> bool {
    !v.is_empty() && v.bytes().all(|b| matches!(b, 0x21..=0x7e | b' ' | b'\t' | b'\r' | b'\n'))
}

/// A claim as Kafka's unsecured JWS keeps it: arrays as lists of strings, numbers as numbers,
/// anything else as its text.
#[derive(Debug, Clone, PartialEq)]
enum Claim {
    Text(String),
    Number(f64),
    List(Vec<String>),
}

impl Claim {
    fn from_json(v: &serde_json::Value) -> Claim {
        match v {
            serde_json::Value::Array(a) => Claim::List(a.iter().map(as_text).collect()),
            serde_json::Value::Number(n) => Claim::Number(n.as_f64().unwrap_or(f64::NAN)),
            other => Claim::Text(as_text(other)),
        }
    }

    fn type_name(&self) -> &'static str {
        match self {
            Claim::Text(_) => "String",
            Claim::Number(_) => "Number",
            Claim::List(_) => "List",
        }
    }
}

/// Jackson's `asText`: a string's value, a scalar's text, "" for containers.
fn as_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "null".into(),
        serde_json::Value::Bool(b) => b.to_string(),
        serde_json::Value::Number(n) => n.to_string(),
        serde_json::Value::Array(_) | serde_json::Value::Object(_) => String::new(),
    }
}

/// A token that passed: who it names and when it expires.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Validated {
    pub(crate) principal: String,
    /// `exp`, in ms since the epoch.
    pub(crate) expires_ms: i64,
}

/// Why a token was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// RFC 7628's error reply: `status` (`invalid_token` or `insufficient_scope`), and the
    /// required scope with the latter; `why` for the broker's log only.
    Token { status: &'static str, scope: Option<String>, why: String },
    /// The token broke the validator itself (a header without `alg`): Kafka's broker closes the
    /// connection without an answer.
    Broken(String),
}

impl Refusal {
    fn invalid(why: impl Into<String>) -> Refusal {
        Refusal::Token { status: "invalid_token", scope: None, why: why.into() }
    }

    /// The error reply as `OAuthBearerSaslServer.jsonErrorResponse` writes it.
    pub(crate) fn json(&self) -> Option<String> {
        match self {
            Refusal::Token { status, scope: None, .. } => Some(format!(r#"{{"status":"{status}"}}"#)),
            Refusal::Token { status, scope: Some(s), .. } => Some(format!(r#"{{"status":"{status}", "scope":"{s}"}}"#)),
            Refusal::Broken(_) => None,
        }
    }
}

/// One part of a compact serialization: base64url (the standard alphabet taken too), then a JSON
/// object.
fn decode_part(part: &str) -> Result<serde_json::Map<String, serde_json::Value>, Refusal> {
    let normalized: String = part
        .trim_end_matches('=')
        .chars()
        .map(|c| {
            if c == '+' {
                '-'
            } else if c == '/' {
                '_'
            } else {
                c
            }
        })
        .collect();
    let bytes = B64URL.decode(normalized).map_err(|_| Refusal::invalid("malformed Base64 URL encoded value"))?;
    match serde_json::from_slice(&bytes) {
        Ok(serde_json::Value::Object(map)) => Ok(map),
        _ => Err(Refusal::invalid("malformed JSON")),
    }
}

/// Validates `token` at `now_ms` as Kafka's unsecured validator does.
pub(crate) fn validate(token: &str, config: &OAuthBearerConfig, now_ms: i64) -> Result<Validated, Refusal> {
    if token.contains("..") {
        return Err(Refusal::invalid("Malformed compact serialization contains '..'"));
    }
    // Java's split drops trailing empty parts, then one is added back for a trailing dot.
    let mut parts: Vec<&str> = token.split('.').collect();
    while parts.last() == Some(&"") {
        parts.pop();
    }
    if token.ends_with('.') {
        parts.push("");
    }
    let [header, claims, signature] = parts.as_slice() else {
        return Err(Refusal::invalid("Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values"));
    };
    let header = decode_part(header)?;
    let claims: std::collections::BTreeMap<String, Claim> = decode_part(claims)?.iter().map(|(k, v)| (k.clone(), Claim::from_json(v))).collect();
    let Some(alg) = header.get("alg") else {
        return Err(Refusal::Broken("JWS header must have an Algorithm value".into()));
    };
    // Kafka compares the value's text: a number or a list is never "none".
    if as_text(alg) != "none" {
        return Err(Refusal::invalid("Unsecured JWS must have 'none' for an algorithm"));
    }
    if !signature.is_empty() {
        return Err(Refusal::invalid("Unsecured JWS must not contain a digital signature"));
    }
    let wrong_type = |name: &str, want: &str, got: &Claim| Refusal::invalid(format!("The '{name}' claim was not of type {want}: {}", got.type_name()));
    // The scope: a string (one value) or a list.
    let scope: Vec<String> = match claims.get(&config.scope_claim) {
        None => Vec::new(),
        Some(Claim::Text(s)) if s.trim().is_empty() => Vec::new(),
        Some(Claim::Text(s)) => vec![s.trim().to_owned()],
        Some(Claim::List(l)) => l.iter().filter(|s| !s.trim().is_empty()).map(|s| s.trim().to_owned()).collect(),
        Some(other) => return Err(wrong_type(&config.scope_claim, "List", other)),
    };
    let number = |name: &str| match claims.get(name) {
        None => Ok(None),
        Some(Claim::Number(n)) => Ok(Some(*n)),
        Some(other) => Err(wrong_type(name, "Number", other)),
    };
    let exp = number("exp")?.ok_or_else(|| Refusal::invalid("No expiration time in JWT"))?;
    let principal = match claims.get(&config.principal_claim) {
        Some(Claim::Text(s)) if !s.trim().is_empty() => s.clone(),
        None | Some(Claim::Text(_)) => return Err(Refusal::invalid(format!("No principal name in JWT claim: {}", config.principal_claim))),
        Some(other) => return Err(wrong_type(&config.principal_claim, "String", other)),
    };
    let iat = number("iat")?;
    let skew = config.allowable_clock_skew_ms.max(0) as f64;
    let now = now_ms as f64;
    if let Some(iat) = iat {
        if 1000.0 * iat > now + skew {
            return Err(Refusal::invalid(format!("The Issued At value ({iat} seconds) was after the indicated time ({now_ms} ms) plus allowable clock skew")));
        }
    }
    if now - skew >= 1000.0 * exp {
        return Err(Refusal::invalid(format!(
            "The indicated time ({now_ms} ms) minus allowable clock skew was on or after the Expiration Time value ({exp} seconds)"
        )));
    }
    if let Some(iat) = iat {
        if exp <= iat {
            return Err(Refusal::invalid(format!("The Expiration Time time ({exp} seconds) was not after the Issued At time ({iat} seconds)")));
        }
    }
    if let Some(missing) = config.required_scope.iter().find(|s| !scope.contains(s)) {
        // Java's List.toString: [a, b].
        return Err(Refusal::Token {
            status: "insufficient_scope",
            scope: Some(format!("[{}]", config.required_scope.join(", "))),
            why: format!("The provided scope was missing a required scope ({missing})"),
        });
    }
    Ok(Validated { principal, expires_ms: (exp * 1000.0).round() as i64 })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jws(header: &str, claims: &str) -> String {
        format!("{}.{}.", B64URL.encode(header), B64URL.encode(claims))
    }

    const NOW: i64 = 1_700_000_000_000;

    #[test]
    fn a_valid_token_names_its_subject_and_expiry() {
        let t = jws(r#"{"alg":"none"}"#, r#"{"sub":"alice","iat":1699999999,"exp":1700000100}"#);
        assert_eq!(validate(&t, &OAuthBearerConfig::default(), NOW), Ok(Validated { principal: "alice".into(), expires_ms: 1_700_000_100_000 }));
    }

    #[test]
    fn refusals_as_kafka_decides_them() {
        let c = OAuthBearerConfig::default();
        let refused = |t: &str| match validate(t, &c, NOW) {
            Err(Refusal::Token { status, why, .. }) => format!("{status}: {why}"),
            other => format!("{other:?}"),
        };
        assert!(refused(&jws(r#"{"alg":"none"}"#, r#"{"sub":"alice","exp":1700000000}"#)).contains("on or after the Expiration Time"));
        assert!(refused(&jws(r#"{"alg":"RS256"}"#, r#"{"sub":"alice","exp":1800000000}"#)).contains("'none'"));
        assert!(refused(&jws(r#"{"alg":"none"}"#, r#"{"sub":"alice"}"#)).contains("No expiration time"));
        assert!(refused(&jws(r#"{"alg":"none"}"#, r#"{"sub":" ","exp":1800000000}"#)).contains("No principal name"));
        assert!(refused(&jws(r#"{"alg":"none"}"#, r#"{"sub":5,"exp":1800000000}"#)).contains("not of type String"));
        assert!(refused(&jws(r#"{"alg":"none"}"#, r#"{"sub":"a","exp":"soon"}"#)).contains("not of type Number"));
        assert!(refused(&jws(r#"{"alg":"none"}"#, r#"{"sub":"a","iat":1800000000,"exp":1900000000}"#)).contains("Issued At"));
        assert!(refused(&jws(r#"{"alg":"none"}"#, r#"{"sub":"a","iat":1600000000,"exp":1500000000}"#)).contains("Expiration Time"));
        assert!(refused(&format!("{}sig", jws(r#"{"alg":"none"}"#, r#"{"sub":"a","exp":1800000000}"#))).contains("digital signature"));
        assert!(refused("a.b").contains("3 dot-separated"));
        assert!(refused("a..b").contains("'..'"));
        assert!(refused("!!.!!.").contains("Base64"));
        assert!(refused(&jws("[1]", r#"{"sub":"a","exp":1800000000}"#)).contains("JSON"));
        assert!(matches!(validate(&jws("{}", r#"{"sub":"a","exp":1800000000}"#), &c, NOW), Err(Refusal::Broken(_))));
        // The clock skew allowed.
        let skewed = OAuthBearerConfig::default().allowable_clock_skew_ms(5_000);
        assert!(validate(&jws(r#"{"alg":"none"}"#, r#"{"sub":"a","exp":1699999998}"#), &skewed, NOW).is_ok());
    }

    #[test]
    fn scope_is_required_when_configured() {
        let c = OAuthBearerConfig::default().required_scope(&["kafka", "write"]);
        let t = jws(r#"{"alg":"none"}"#, r#"{"sub":"a","exp":1800000000,"scope":["kafka"]}"#);
        let refusal = validate(&t, &c, NOW).unwrap_err();
        assert_eq!(refusal.json().unwrap(), r#"{"status":"insufficient_scope", "scope":"[kafka, write]"}"#);
        let t = jws(r#"{"alg":"none"}"#, r#"{"sub":"a","exp":1800000000,"scope":["kafka","write"," "]}"#);
        assert!(validate(&t, &c, NOW).is_ok());
        assert_eq!(Refusal::invalid("x").json().unwrap(), r#"{"status":"invalid_token"}"#);
    }

    #[test]
    fn first_messages() {
        let r = parse_initial_response(b"n,,\x01auth=Bearer abc.def.\x01traceId=t-1\x01\x01").unwrap();
        assert_eq!(r, InitialResponse { authzid: String::new(), token: "abc.def.".into(), extensions: vec![("traceId".into(), "t-1".into())] });
        let r = parse_initial_response(b"n,a=alice,\x01auth=bearer  x\x01\x01").unwrap();
        assert_eq!((r.authzid.as_str(), r.token.as_str()), ("alice", "x"));
        for bad in [
            &b"n,,auth=Bearer x\x01\x01"[..],
            b"y,,\x01auth=Bearer x\x01\x01",
            b"n,,\x01auth=Basic x\x01\x01",
            b"n,,\x01auth=Bearer x y\x01\x01",
            b"n,,\x01\x01",
            b"n,,\x01auth=Bearer x\x011x=y\x01\x01",
            b"n,a=,\x01auth=Bearer x\x01\x01",
            b"\xff",
            b"",
        ] {
            assert!(parse_initial_response(bad).is_err(), "{bad:?}");
        }
    }
}
