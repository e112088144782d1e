//! Secrets withheld from every decoded frame the tool prints (`tap`, `pcap`, `decode`), unless
//! `--show-secrets` is given.
//!
//! One rule, applied to a body's JSON by api key, direction and field path ([`RULES`]), after
//! decoding and before anything (JSON or the tap's text lines) is made from it, so that no
//! output form can carry what the rule removes. A withheld value becomes an object with
//! `"withheld": true`: bytes keep their `length`; SASL auth bytes also keep the `mechanism`
//! (from the connection's SaslHandshake, or recognised from the bytes' form) and the `user`
//! where the mechanism states it; config values keep nothing (a password's length is a hint).
//!
//! Withheld:
//! - SaslAuthenticate request and response `authBytes` (PLAIN passwords, SCRAM nonces, salts,
//!   iterations, proofs and signatures, OAUTHBEARER tokens, GSSAPI tokens), and the bare
//!   tokens that follow a SaslHandshake v0 ([`Secrets::sasl_token`], called by tap and pcap);
//! - delegation-token HMACs: CreateDelegationToken and DescribeDelegationToken responses,
//!   RenewDelegationToken and ExpireDelegationToken requests (token ids stay);
//! - AlterUserScramCredentials upsertions' `salt` and `saltedPassword` (iterations stay);
//! - config values whose name [looks secret](secret_config_name), or that the broker marks
//!   `isSensitive`: CreateTopics requests and responses, AlterConfigs and
//!   IncrementalAlterConfigs requests, DescribeConfigs responses (synonyms too), streams groups'
//!   topic configs;
//! - what may hold any of these: Envelope `requestData`/`responseData` (a forwarded request and
//!   its response), FetchSnapshot records and Fetch records of `__cluster_metadata` (the KRaft
//!   metadata log holds SCRAM credentials, delegation tokens and configs).
//!
//! Kept: SaslHandshake mechanisms, principals, token ids, the KIP-714 telemetry client instance
//! id, everything else.

use std::collections::HashMap;

use base64::Engine;
use kwire::runtime::json::serde_json::{json, Map, Value};
use kwire::ApiKey;

/// Whether secrets are withheld (the default) or printed (`--show-secrets`), and what the rule
/// has learnt of each connection: the SASL mechanism its SaslHandshake named.
#[derive(Debug, Default)]
pub struct Secrets {
    show: bool,
    mechanisms: HashMap<u64, String>,
}

/// Connections whose mechanism is remembered; past it (a tap running for weeks) they are
/// forgotten and later auth bytes are recognised by their form instead.
const MAX_CONNECTIONS: usize = 65_536;

impl Secrets {
    /// Withholds secrets unless `show` (`--show-secrets`).
    pub fn new(show: bool) -> Secrets {
        Secrets { show, mechanisms: HashMap::new() }
    }

    /// Applies the rule to one decoded body of `api_key` on `connection` (any number that is
    /// the same for the frames of one connection).
    pub fn apply(&mut self, connection: u64, api_key: i16, request: bool, body: &mut Value) {
        let Some(api) = ApiKey::from_i16(api_key) else { return };
        if api == ApiKey::SaslHandshake && request {
            if let Some(m) = body.get("mechanism").and_then(Value::as_str) {
                if self.mechanisms.len() >= MAX_CONNECTIONS {
                    self.mechanisms.clear();
                }
                self.mechanisms.insert(connection, m.to_owned());
            }
        }
        if self.show {
            return;
        }
        let mechanism = self.mechanisms.get(&connection).map(String::as_str);
        for rule in RULES.iter().filter(|r| r.api == api && r.request == request) {
            each_object(body, rule.path, &mut |o| match rule.what {
                What::Bytes(field) => withhold_bytes(o, field),
                What::Sasl => {
                    if let Some(v) = o.get_mut("authBytes") {
                        *v = sasl(v, mechanism, request);
                    }
                }
                What::Config { name, value } => withhold_config(o, name, value),
                What::MetadataLog(field) => {
                    if is_metadata_topic(o) {
                        if let Some(partitions) = o.get_mut("partitions") {
                            each_object(partitions, &[], &mut |p| withhold_bytes(p, field));
                        }
                    }
                }
            });
        }
    }

    /// A bare SASL token (after a SaslHandshake v0, tokens travel as size-prefixed bytes, not
    /// in SaslAuthenticate frames): withheld as auth bytes are, or in base64 when shown.
    pub fn sasl_token(&self, connection: u64, request: bool, bytes: &[u8]) -> Value {
        if self.show {
            return Value::String(base64::engine::general_purpose::STANDARD.encode(bytes));
        }
        sasl_bytes(bytes, self.mechanisms.get(&connection).map(String::as_str), request)
    }
}

/// What a rule withholds in each object it reaches.
#[derive(Clone, Copy)]
enum What {
    /// A bytes or records field: its length stays.
    Bytes(&'static str),
    /// `authBytes`: length, mechanism and user stay.
    Sasl,
    /// A config entry: `value` when `name` looks secret or the entry is `isSensitive`.
    Config { name: &'static str, value: &'static str },
    /// A topic of the KRaft metadata log: this field of each of its `partitions`.
    MetadataLog(&'static str),
}

/// One place that holds a secret: the api, the direction, the path of objects (arrays on the
/// way are walked element by element) and what to withhold there.
struct Rule {
    api: ApiKey,
    request: bool,
    path: &'static [&'static str],
    what: What,
}

const fn rule(api: ApiKey, request: bool, path: &'static [&'static str], what: What) -> Rule {
    Rule { api, request, path, what }
}

const REQ: bool = true;
const RESP: bool = false;
const CONFIG: What = What::Config { name: "name", value: "value" };
const TOPIC_CONFIG: What = What::Config { name: "key", value: "value" };

/// Every place a secret is carried, by api key and field path (JSON names, as `kwire decode`
/// prints them).
const RULES: &[Rule] = &[
    rule(ApiKey::SaslAuthenticate, REQ, &[], What::Sasl),
    rule(ApiKey::SaslAuthenticate, RESP, &[], What::Sasl),
    rule(ApiKey::CreateDelegationToken, RESP, &[], What::Bytes("hmac")),
    rule(ApiKey::RenewDelegationToken, REQ, &[], What::Bytes("hmac")),
    rule(ApiKey::ExpireDelegationToken, REQ, &[], What::Bytes("hmac")),
    rule(ApiKey::DescribeDelegationToken, RESP, &["tokens"], What::Bytes("hmac")),
    rule(ApiKey::AlterUserScramCredentials, REQ, &["upsertions"], What::Bytes("salt")),
    rule(ApiKey::AlterUserScramCredentials, REQ, &["upsertions"], What::Bytes("saltedPassword")),
    rule(ApiKey::CreateTopics, REQ, &["topics", "configs"], CONFIG),
    rule(ApiKey::CreateTopics, RESP, &["topics", "configs"], CONFIG),
    rule(ApiKey::AlterConfigs, REQ, &["resources", "configs"], CONFIG),
    rule(ApiKey::IncrementalAlterConfigs, REQ, &["resources", "configs"], CONFIG),
    rule(ApiKey::DescribeConfigs, RESP, &["results", "configs"], CONFIG),
    rule(ApiKey::DescribeConfigs, RESP, &["results", "configs", "synonyms"], CONFIG),
    rule(ApiKey::StreamsGroupHeartbeat, REQ, &["topology", "subtopologies", "stateChangelogTopics", "topicConfigs"], TOPIC_CONFIG),
    rule(ApiKey::StreamsGroupHeartbeat, REQ, &["topology", "subtopologies", "repartitionSourceTopics", "topicConfigs"], TOPIC_CONFIG),
    rule(ApiKey::StreamsGroupDescribe, RESP, &["groups", "topology", "subtopologies", "stateChangelogTopics", "topicConfigs"], TOPIC_CONFIG),
    rule(ApiKey::StreamsGroupDescribe, RESP, &["groups", "topology", "subtopologies", "repartitionSourceTopics", "topicConfigs"], TOPIC_CONFIG),
    rule(ApiKey::Envelope, REQ, &[], What::Bytes("requestData")),
    rule(ApiKey::Envelope, RESP, &[], What::Bytes("responseData")),
    rule(ApiKey::Fetch, RESP, &["responses"], What::MetadataLog("records")),
    rule(ApiKey::FetchSnapshot, RESP, &["topics", "partitions"], What::Bytes("unalignedRecords")),
];

/// The rules as the Wireshark dissector's `SECRETS` table (see `kwire::wireshark::SECRETS_LINE`).
/// Records are summarised there, never shown, so the metadata log needs no rule.
pub fn lua_rules() -> String {
    // Api key -> (request rules, response rules).
    let mut apis: std::collections::BTreeMap<i16, (Vec<String>, Vec<String>)> = std::collections::BTreeMap::new();
    for r in RULES {
        let path: Vec<String> = r.path.iter().map(|p| format!("\"{p}\"")).collect();
        let path = format!("{{ {} }}", path.join(", "));
        let rule = match r.what {
            What::Bytes(field) => format!("{{ path = {path}, bytes = \"{field}\" }}"),
            What::Sasl => format!("{{ path = {path}, bytes = \"authBytes\" }}"),
            What::Config { name, value } => format!("{{ path = {path}, config = {{ \"{name}\", \"{value}\" }} }}"),
            What::MetadataLog(_) => continue,
        };
        let (request, response) = apis.entry(r.api.key()).or_default();
        if r.request { request } else { response }.push(rule);
    }
    let mut out = String::from("local SECRETS = {\n");
    for (api, (request, response)) in apis {
        out.push_str(&format!("  [{api}] = {{ request = {{ {} }}, response = {{ {} }} }},\n", request.join(", "), response.join(", ")));
    }
    out.push('}');
    out
}

/// Calls `f` on every object at `path` under `v`, walking arrays on the way element by element.
fn each_object(v: &mut Value, path: &[&str], f: &mut dyn FnMut(&mut Map<String, Value>)) {
    match v {
        Value::Array(a) => a.iter_mut().for_each(|e| each_object(e, path, f)),
        Value::Object(o) => match path.split_first() {
            None => f(o),
            Some((first, rest)) => {
                if let Some(next) = o.get_mut(*first) {
                    each_object(next, rest, f);
                }
            }
        },
        _ => {}
    }
}

/// The marker of a withheld value, with what may be said about it.
fn withheld(length: Option<usize>) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("withheld".into(), Value::Bool(true));
    if let Some(n) = length {
        m.insert("length".into(), json!(n));
    }
    m
}

/// A bytes field's bytes (base64 in the JSON); `None` for null or a form this is not.
fn bytes_of(v: &Value) -> Option<Vec<u8>> {
    v.as_str().and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
}

fn withhold_bytes(o: &mut Map<String, Value>, field: &str) {
    if let Some(v) = o.get_mut(field) {
        if !v.is_null() {
            let length = bytes_of(v).map(|b| b.len());
            *v = Value::Object(withheld(length));
        }
    }
}

fn withhold_config(o: &mut Map<String, Value>, name: &str, value: &str) {
    let secret = o.get(name).and_then(Value::as_str).is_some_and(secret_config_name) || o.get("isSensitive").and_then(Value::as_bool) == Some(true);
    if let Some(v) = o.get_mut(value).filter(|v| secret && !v.is_null()) {
        *v = Value::Object(withheld(None));
    }
}

/// Whether a config's value is withheld, by its name (case-insensitive): names containing
/// `password`, `passphrase`, `secret` or `jaas.config`, names ending in `.key`
/// (`ssl.keystore.key`, `delegation.token.master.key`), and the inline PEM certificates Kafka
/// types as PASSWORD (`ssl.keystore.certificate.chain`, `ssl.truststore.certificates`). This
/// covers every config Kafka declares with type PASSWORD, under any prefix
/// (`listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config`).
pub fn secret_config_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["password", "passphrase", "secret", "jaas.config"].iter().any(|s| n.contains(s))
        || n.ends_with(".key")
        || n.ends_with("ssl.keystore.certificate.chain")
        || n.ends_with("ssl.truststore.certificates")
}

/// KRaft's metadata topic: `__cluster_metadata`, id `Uuid(0, 1)` (Kafka's METADATA_TOPIC_ID).
fn is_metadata_topic(t: &Map<String, Value>) -> bool {
    let name = t.get("topic").or_else(|| t.get("name")).and_then(Value::as_str);
    name == Some("__cluster_metadata") || t.get("topicId").and_then(Value::as_str) == Some("AAAAAAAAAAAAAAAAAAAAAQ")
}

/// SASL auth bytes, withheld: their length, the mechanism, and what the mechanism states in
/// the clear (the user; a SCRAM step and a SCRAM server's error).
fn sasl(v: &Value, mechanism: Option<&str>, request: bool) -> Value {
    match bytes_of(v) {
        Some(bytes) => sasl_bytes(&bytes, mechanism, request),
        None if v.is_null() => Value::Null,
        None => Value::Object(withheld(None)),
    }
}

fn sasl_bytes(bytes: &[u8], mechanism: Option<&str>, request: bool) -> Value {
    let mut m = withheld(Some(bytes.len()));
    let seen = describe_sasl(bytes, mechanism, request);
    if let Some(mech) = mechanism.map(str::to_owned).or(seen.mechanism.map(str::to_owned)) {
        m.insert("mechanism".into(), json!(mech));
    }
    for (key, value) in [("step", seen.step.map(str::to_owned)), ("user", seen.user), ("authzid", seen.authzid), ("error", seen.error)] {
        if let Some(value) = value {
            m.insert(key.into(), json!(value));
        }
    }
    Value::Object(m)
}

/// What may be said of SASL bytes without giving their secret away.
#[derive(Debug, Default, PartialEq, Eq)]
struct Seen {
    /// The mechanism the bytes' form shows (when the handshake was not seen).
    mechanism: Option<&'static str>,
    step: Option<&'static str>,
    user: Option<String>,
    authzid: Option<String>,
    error: Option<String>,
}

/// Reads SASL bytes as the mechanism's messages (RFC 4616 PLAIN, RFC 5802 SCRAM, RFC 7628
/// OAUTHBEARER) to take out the parts that are not secret. Any bytes at all may arrive: what
/// does not parse says nothing. Without the handshake, the form decides: PLAIN messages hold
/// NULs, SCRAM and OAUTHBEARER messages never do, so no password is read as a SCRAM user name.
fn describe_sasl(b: &[u8], mechanism: Option<&str>, request: bool) -> Seen {
    let known = mechanism.map(str::to_ascii_uppercase);
    let may = |m: &str| known.as_deref().is_none_or(|k| k == m || (m == "SCRAM" && k.starts_with("SCRAM-")));
    let found = match (request, b.contains(&0)) {
        (true, true) if may("PLAIN") => plain(b).map(|s| Seen { mechanism: Some("PLAIN"), ..s }),
        (true, false) if may("OAUTHBEARER") && b.contains(&1) => oauthbearer(b).map(|s| Seen { mechanism: Some("OAUTHBEARER"), ..s }),
        (true, false) if may("SCRAM") => scram_client(b).map(|s| Seen { mechanism: Some("SCRAM"), ..s }),
        (false, false) if may("SCRAM") => scram_server(b).map(|s| Seen { mechanism: Some("SCRAM"), ..s }),
        _ => None,
    };
    found.unwrap_or_default()
}

/// Text that may be printed as a name: UTF-8, no control characters, not empty, not huge.
fn printable(b: &[u8]) -> Option<String> {
    let s = std::str::from_utf8(b).ok()?;
    (!s.is_empty() && s.chars().count() <= 256 && !s.chars().any(char::is_control)).then(|| s.to_owned())
}

/// PLAIN: `authzid NUL authcid NUL passwd`.
fn plain(b: &[u8]) -> Option<Seen> {
    let mut parts = b.split(|&c| c == 0);
    let (authzid, authcid, _password) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let user = printable(authcid)?;
    Some(Seen { user: Some(user), authzid: printable(authzid), ..Seen::default() })
}

/// A SCRAM name, `=2C` and `=3D` unescaped (RFC 5802 5.1).
fn scram_name(s: &str) -> Option<String> {
    printable(s.replace("=2C", ",").replace("=3D", "=").as_bytes())
}

/// SCRAM client-first (`gs2-header n=user,r=nonce[,ext]`) or client-final (`c=..,r=..,p=..`).
fn scram_client(b: &[u8]) -> Option<Seen> {
    let s = std::str::from_utf8(b).ok()?;
    let fields: Vec<&str> = s.split(',').collect();
    match fields.as_slice() {
        [flag, authzid, user, nonce, ..] if (*flag == "n" || *flag == "y" || flag.starts_with("p=")) && user.starts_with("n=") && nonce.starts_with("r=") => {
            let authzid = authzid.strip_prefix("a=").and_then(scram_name);
            Some(Seen { step: Some("client-first"), user: user.strip_prefix("n=").and_then(scram_name), authzid, ..Seen::default() })
        }
        [channel, ..] if channel.starts_with("c=") && fields.iter().any(|f| f.starts_with("p=")) => {
            Some(Seen { step: Some("client-final"), ..Seen::default() })
        }
        _ => None,
    }
}

/// SCRAM server-first (`r=..,s=..,i=..`) or server-final (`v=..`, or `e=error`: not secret,
/// and what a failing client needs to know).
fn scram_server(b: &[u8]) -> Option<Seen> {
    let s = std::str::from_utf8(b).ok()?;
    if s.starts_with("r=") && s.contains(",s=") && s.contains(",i=") {
        return Some(Seen { step: Some("server-first"), ..Seen::default() });
    }
    if s.starts_with("v=") {
        return Some(Seen { step: Some("server-final"), ..Seen::default() });
    }
    let error = s.strip_prefix("e=")?;
    let error = error.split(',').next().and_then(|e| printable(e.as_bytes()))?;
    Some(Seen { step: Some("server-final"), error: Some(error), ..Seen::default() })
}

/// OAUTHBEARER's client response: `gs2-header ^A auth=Bearer TOKEN ^A ... ^A^A`. The user is the
/// header's `a=`, else the token's `sub` claim when the token is a JWT (Kafka's default
/// principal claim); the token itself is the secret.
fn oauthbearer(b: &[u8]) -> Option<Seen> {
    let s = std::str::from_utf8(b).ok()?;
    let (header, rest) = s.split_once('\u{1}')?;
    let mut header_fields = header.split(',');
    let flag = header_fields.next()?;
    if !(flag == "n" || flag == "y" || flag.starts_with("p=")) {
        return None;
    }
    let authzid = header_fields.next().and_then(|a| a.strip_prefix("a=")).and_then(scram_name);
    let token = rest
        .split('\u{1}')
        .find_map(|kv| kv.strip_prefix("auth="))
        .and_then(|a| a.get(7..).filter(|_| a.get(..7).is_some_and(|p| p.eq_ignore_ascii_case("Bearer "))));
    let sub = token.and_then(jwt_sub);
    Some(Seen { user: authzid.or(sub), ..Seen::default() })
}

/// The `sub` claim of a JWT (`header.claims.signature`, base64url), without checking anything.
fn jwt_sub(token: &str) -> Option<String> {
    let claims = token.split('.').nth(1)?;
    let json = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(claims.trim_end_matches('=')).ok()?;
    let v: Value = kwire::runtime::json::serde_json::from_slice(&json).ok()?;
    printable(v.get("sub")?.as_str()?.as_bytes())
}

/// The tap's text for withheld SASL bytes: `PLAIN user=alice, 19 bytes withheld`.
pub fn sasl_summary(body: &Value) -> Option<String> {
    let a = body.get("authBytes")?;
    if a.get("withheld") != Some(&Value::Bool(true)) {
        return None;
    }
    let mut parts: Vec<String> = Vec::new();
    for key in ["mechanism", "step"] {
        if let Some(v) = a.get(key).and_then(Value::as_str) {
            parts.push(v.to_owned());
        }
    }
    for key in ["user", "authzid", "error"] {
        if let Some(v) = a.get(key).and_then(Value::as_str) {
            parts.push(format!("{key}={v}"));
        }
    }
    let length = a.get("length").and_then(Value::as_u64).unwrap_or(0);
    Some(format!("{}{length} bytes withheld", if parts.is_empty() { String::new() } else { format!("{}, ", parts.join(" ")) }))
}

#[cfg(test)]
mod tests;
