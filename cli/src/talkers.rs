//! Who is talking, for `kwire tap` and `kwire pcap --report`: each connection's client (the
//! software name and version it sends in ApiVersions v3+, its client id, the SASL principal,
//! the KIP-714 client instance id) and what it did (apis and versions, error codes, throttles,
//! latencies, bytes), summed per client; and against a target release, what of it that release
//! no longer serves (KIP-896's removals in 4.0), what it still serves but has deprecated, the
//! classic group protocol, Transactions V1, and which client releases would do.
//!
//! Fed with the JSON lines the tap and pcap print (after secrets are withheld), so it sees what
//! a reader of their output sees. Bounded for a tap left running: 10,000 connections one by one
//! (later ones summed in one row), latencies over each one's last 1,000 responses.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use kwire::runtime::json::serde_json::{json, Map, Value};
use kwire::{ApiKey, VersionRange};

use crate::clients::{self, ClientTable};
use crate::error::CliError;
use crate::format::Table;
use crate::tap::{api_name, error_name, int};

/// Connections tracked one by one; later ones are summed under one row.
const MAX_CONNECTIONS: usize = 10_000;
/// Latencies kept per connection: the last ones (with the connections, at most 80 MB).
const MAX_LATENCIES: usize = 1_000;

/// The release an upgrade goes to: its api versions (a Java client of that release builds
/// exactly what its brokers serve).
pub struct Target {
    pub name: String,
    rows: clients::Rows,
}

impl Target {
    /// `4.0`, `4.4`, `3.9`...: a release the build has the tables of.
    pub fn parse(release: &str) -> Result<Target, CliError> {
        let (_, found, rows) = clients::find(&format!("java-{release}")).ok_or_else(|| {
            let known: Vec<String> = clients::names().into_iter().filter_map(|n| n.strip_prefix("java-").map(str::to_owned)).collect();
            CliError::Usage(format!("--target {release}: not a release this build knows ({})", known.join(", ")))
        })?;
        Ok(Target { name: found.rsplit_once('.').map_or(found, |(minor, _)| minor).to_owned(), rows })
    }

    fn range(&self, key: i16) -> Option<VersionRange> {
        clients::range(self.rows, key)
    }
}

/// What one connection (or several, summed) did.
#[derive(Default, Clone)]
struct Stats {
    connections: u64,
    requests: u64,
    bytes_out: u64,
    bytes_in: u64,
    /// (api key, version) of every request.
    versions: BTreeSet<(i16, i16)>,
    /// Error codes in responses, by code.
    errors: BTreeMap<i16, u64>,
    /// Responses with a throttle time, and their sum.
    throttled: u64,
    throttle_ms: u64,
    latencies_ms: Vec<f64>,
}

impl Stats {
    fn add(&mut self, other: &Stats) {
        self.connections += other.connections;
        self.requests += other.requests;
        self.bytes_out += other.bytes_out;
        self.bytes_in += other.bytes_in;
        self.versions.extend(&other.versions);
        for (code, n) in &other.errors {
            *self.errors.entry(*code).or_default() += n;
        }
        self.throttled += other.throttled;
        self.throttle_ms += other.throttle_ms;
        self.latencies_ms.extend(&other.latencies_ms);
    }

    /// The latency at quantile `q` (0-1), if any was measured.
    fn latency(&self, q: f64) -> Option<f64> {
        let mut l = self.latencies_ms.clone();
        l.sort_by(f64::total_cmp);
        crate::format::quantile(&l, q)
    }
}

/// One connection.
#[derive(Default)]
struct Conn {
    /// (name, version) from ApiVersions v3+.
    software: Option<(String, String)>,
    client_id: Option<String>,
    principal: Option<String>,
    instance_id: Option<String>,
    stats: Stats,
}

/// Whom a summed row is about.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Who {
    software: String,
    client_id: String,
    principal: String,
}

/// Every connection seen.
#[derive(Default)]
pub struct Talkers {
    conns: HashMap<u64, Conn>,
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned)
}

/// Every non-zero `errorCode` in a body.
fn error_codes(v: &Value, out: &mut Vec<i16>) {
    match v {
        Value::Object(o) => {
            for (k, v) in o {
                match (k.as_str(), v.as_i64().and_then(|c| i16::try_from(c).ok())) {
                    ("errorCode", Some(c)) if c != 0 => out.push(c),
                    _ => error_codes(v, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| error_codes(v, out)),
        _ => {}
    }
}

impl Talkers {
    /// Takes in one printed frame (a tap or pcap JSON line) of `connection`.
    pub fn observe(&mut self, connection: u64, line: &Map<String, Value>) {
        let id = if self.conns.len() < MAX_CONNECTIONS || self.conns.contains_key(&connection) { connection } else { u64::MAX };
        let conn = self.conns.entry(id).or_insert_with(|| Conn { stats: Stats { connections: 1, ..Stats::default() }, ..Conn::default() });
        let (Some(api), Some(version)) = (line.get("apiKey").and_then(Value::as_i64), line.get("apiVersion").and_then(Value::as_i64)) else { return };
        let (Ok(api), Ok(version)) = (i16::try_from(api), i16::try_from(version)) else { return };
        let size = line.get("size").and_then(Value::as_u64).unwrap_or(0);
        let body = line.get("body").unwrap_or(&Value::Null);
        if line.get("direction").and_then(Value::as_str) == Some("request") {
            conn.stats.requests += 1;
            conn.stats.bytes_out += size;
            conn.stats.versions.insert((api, version));
            if let Some(id) = line.get("header").and_then(|h| text(h, "clientId")) {
                conn.client_id = Some(id);
            }
            match ApiKey::from_i16(api) {
                Some(ApiKey::ApiVersions) => {
                    if let Some(name) = text(body, "clientSoftwareName") {
                        conn.software = Some((name, text(body, "clientSoftwareVersion").unwrap_or_default()));
                    }
                }
                // The user the withheld SASL bytes name (PLAIN, SCRAM).
                Some(ApiKey::SaslAuthenticate) => {
                    if let Some(user) = body.get("authBytes").and_then(|a| text(a, "user")) {
                        conn.principal = Some(format!("User:{user}"));
                    }
                }
                Some(ApiKey::PushTelemetry) => conn.instance_id = text(body, "clientInstanceId").or(conn.instance_id.take()),
                _ => {}
            }
            return;
        }
        conn.stats.bytes_in += size;
        let mut codes = Vec::new();
        error_codes(body, &mut codes);
        for c in codes {
            *conn.stats.errors.entry(c).or_default() += 1;
        }
        if let Some(ms) = int(body, "throttleTimeMs").filter(|ms| *ms > 0) {
            conn.stats.throttled += 1;
            conn.stats.throttle_ms += ms.unsigned_abs();
        }
        if let Some(ms) = line.get("ms").and_then(Value::as_f64) {
            let l = &mut conn.stats.latencies_ms;
            if l.len() < MAX_LATENCIES {
                l.push(ms);
            } else if let Some(slot) = l.get_mut(conn.stats.requests as usize % MAX_LATENCIES) {
                *slot = ms;
            }
        }
        if ApiKey::from_i16(api) == Some(ApiKey::GetTelemetrySubscriptions) {
            conn.instance_id = text(body, "clientInstanceId").or(conn.instance_id.take());
        }
    }

    /// How the page names a connection: its client's software and client id.
    pub fn connection_label(&self, connection: u64) -> String {
        let Some(c) = self.conns.get(&connection) else { return String::new() };
        let software = c.software.as_ref().map_or_else(|| "(not named)".to_owned(), |(n, v)| format!("{n} {v}").trim().to_owned());
        match &c.client_id {
            Some(id) => format!("{software} ({id})"),
            None => software,
        }
    }

    /// The connections summed per client (software, client id, principal), with the instance
    /// ids seen.
    fn clients(&self) -> BTreeMap<Who, (Stats, BTreeSet<String>)> {
        let mut out: BTreeMap<Who, (Stats, BTreeSet<String>)> = BTreeMap::new();
        for (id, c) in &self.conns {
            let software = match (&c.software, *id) {
                (_, u64::MAX) => format!("(connections past {MAX_CONNECTIONS})"),
                (Some((n, v)), _) => format!("{n} {v}").trim().to_owned(),
                (None, _) => "(not named)".to_owned(),
            };
            let who = Who { software, client_id: c.client_id.clone().unwrap_or_default(), principal: c.principal.clone().unwrap_or_default() };
            let entry = out.entry(who).or_default();
            entry.0.add(&c.stats);
            entry.1.extend(c.instance_id.clone());
        }
        out
    }

    /// The clients as a table (text) and lines of what each used and met.
    pub fn print_text(&self, target: Option<&Target>, out: &mut impl std::io::Write) -> Result<(), CliError> {
        let clients = self.clients();
        if clients.is_empty() {
            return Ok(());
        }
        writeln!(out, "\nclients:").map_err(CliError::io)?;
        let mut table =
            Table::new(&["CLIENT", "CLIENT-ID", "PRINCIPAL", "CONNECTIONS", "REQUESTS", "ERRORS", "THROTTLED", "BYTES-OUT", "BYTES-IN", "P50-MS", "P99-MS"]);
        let ms = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.1}"));
        let dash = |s: &str| if s.is_empty() { "-".to_owned() } else { s.to_owned() };
        for (who, (s, _)) in &clients {
            table.row(vec![
                who.software.clone(),
                dash(&who.client_id),
                dash(&who.principal),
                s.connections.to_string(),
                s.requests.to_string(),
                s.errors.values().sum::<u64>().to_string(),
                s.throttled.to_string(),
                s.bytes_out.to_string(),
                s.bytes_in.to_string(),
                ms(s.latency(0.5)),
                ms(s.latency(0.99)),
            ]);
        }
        table.write(out)?;
        for (who, (s, instances)) in &clients {
            let name = label(who);
            writeln!(out, "  {name}: {}", apis_text(&s.versions)).map_err(CliError::io)?;
            if !s.errors.is_empty() {
                let errors: Vec<String> = s.errors.iter().map(|(c, n)| format!("{} x{n}", error_name(i64::from(*c)))).collect();
                writeln!(out, "  {name}: errors {}", errors.join(", ")).map_err(CliError::io)?;
            }
            if !instances.is_empty() {
                writeln!(out, "  {name}: client instance id {}", instances.iter().cloned().collect::<Vec<_>>().join(", ")).map_err(CliError::io)?;
            }
        }
        if let Some(target) = target {
            writeln!(out, "\nupgrade to Kafka {}:", target.name).map_err(CliError::io)?;
            for (who, (s, _)) in &clients {
                for f in findings(who, s, target) {
                    writeln!(out, "  {}: {f}", label(who)).map_err(CliError::io)?;
                }
            }
        }
        Ok(())
    }

    /// The clients as JSON (`{"clients": [...]}` in the summary).
    pub fn json(&self, target: Option<&Target>) -> Value {
        let clients: Vec<Value> = self
            .clients()
            .iter()
            .map(|(who, (s, instances))| {
                let mut apis: BTreeMap<String, Vec<i16>> = BTreeMap::new();
                for (api, v) in &s.versions {
                    apis.entry(api_name(*api)).or_default().push(*v);
                }
                let errors: Map<String, Value> = s.errors.iter().map(|(c, n)| (error_name(i64::from(*c)), json!(n))).collect();
                let mut o = json!({
                    "client": who.software, "clientId": who.client_id, "principal": who.principal,
                    "instanceIds": instances, "connections": s.connections, "requests": s.requests,
                    "bytesOut": s.bytes_out, "bytesIn": s.bytes_in, "apis": apis, "errors": errors,
                    "throttled": s.throttled, "throttleMs": s.throttle_ms, "p50Ms": s.latency(0.5), "p99Ms": s.latency(0.99),
                });
                if let (Some(t), Some(o)) = (target, o.as_object_mut()) {
                    o.insert("upgrade".into(), json!({"target": t.name, "findings": findings(who, s, t)}));
                }
                o
            })
            .collect();
        Value::Array(clients)
    }
}

/// A client in the lines under the table.
fn label(who: &Who) -> String {
    let mut s = who.software.clone();
    if !who.client_id.is_empty() {
        s.push_str(&format!(" ({})", who.client_id));
    }
    s
}

/// `Metadata v12, Produce v9-v11, ...`: each api with the versions used.
fn apis_text(versions: &BTreeSet<(i16, i16)>) -> String {
    let mut by_api: BTreeMap<String, Vec<i16>> = BTreeMap::new();
    for (api, v) in versions {
        by_api.entry(api_name(*api)).or_default().push(*v);
    }
    let parts: Vec<String> = by_api
        .iter()
        .map(|(name, vs)| match (vs.first(), vs.last()) {
            (Some(lo), Some(hi)) if lo != hi => format!("{name} v{lo}-v{hi}"),
            (Some(v), _) => format!("{name} v{v}"),
            _ => name.clone(),
        })
        .collect();
    parts.join(", ")
}

/// What a client will meet on `target`: versions it no longer serves, versions it deprecates,
/// the classic group protocol, Transactions V1; and the client releases known to send what it
/// serves.
fn findings(who: &Who, s: &Stats, target: &Target) -> Vec<String> {
    let mut out = Vec::new();
    let mut gone = Vec::new();
    for (key, v) in &s.versions {
        let Some(api) = ApiKey::from_i16(*key) else { continue };
        match target.range(*key) {
            None if api.info().valid.contains(*v) && !matches!(api, ApiKey::SaslHandshake | ApiKey::SaslAuthenticate) => {
                out.push(format!("{} v{v}: {} does not serve {} at all", api.name(), target.name, api.name()));
                gone.push((*key, i16::MAX));
            }
            Some(r) if !r.contains(*v) && *v < r.lo => {
                out.push(format!("{} v{v}: removed in {} (it serves v{}-v{})", api.name(), target.name, r.lo, r.hi));
                gone.push((*key, r.lo));
            }
            Some(r) if api.info().deprecated.contains(*v) && r.contains(*v) => {
                out.push(format!("{} v{v}: deprecated (still served by {})", api.name(), target.name));
            }
            _ => {}
        }
    }
    if let Some(v) = s.versions.iter().find(|(k, _)| *k == ApiKey::JoinGroup.key()).map(|(_, v)| v) {
        out.push(format!(
            "JoinGroup v{v}: the classic group protocol (still served; KIP-848's consumer protocol, group.protocol=consumer, is generally available from 4.0)"
        ));
    }
    if let Some(v) = s.versions.iter().find(|(k, v)| *k == ApiKey::EndTxn.key() && *v < 5).map(|(_, v)| v) {
        out.push(format!("EndTxn v{v}: Transactions V1 (KIP-890's V2 needs EndTxn v5 and Produce v12, clients 4.0 or later)"));
    }
    if !gone.is_empty() {
        out.push(upgrade(who, &gone, target));
    }
    if out.is_empty() {
        out.push(format!("nothing {} lacks", target.name));
    }
    out
}

/// The oldest release of each known client family whose newest version of every `gone` api
/// reaches what `target` serves (`(api, lowest served)`; `i16::MAX`: not served at all).
fn upgrade(who: &Who, gone: &[(i16, i16)], target: &Target) -> String {
    let family = match who.software.split(' ').next().unwrap_or_default() {
        "apache-kafka-java" => Some("java"),
        s if s == "librdkafka" || s.starts_with("confluent-kafka") => Some("librdkafka"),
        _ => None,
    };
    let fits = |(_, _, rows): &&ClientTable| gone.iter().all(|(key, lo)| clients::range(rows, *key).is_some_and(|r| r.hi >= *lo));
    let oldest = |f: &str| clients::CLIENTS.iter().filter(|(fam, _, _)| *fam == f).find(fits).map(|(fam, r, _)| format!("{fam} {r}"));
    let known: Vec<String> = match family {
        Some(f) => oldest(f).into_iter().collect(),
        None => ["java", "librdkafka"].iter().filter_map(|f| oldest(f)).collect(),
    };
    if known.is_empty() {
        format!("upgrade: no client release known here sends what {} serves", target.name)
    } else {
        format!("upgrade: to {} or later (the oldest known to send what {} serves)", known.join(" or "), target.name)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn line(direction: &str, api: ApiKey, version: i16, body: Value) -> Map<String, Value> {
        let v =
            json!({"direction": direction, "apiKey": api.key(), "apiVersion": version, "size": 100, "header": {"clientId": "old"}, "body": body, "ms": 2.0});
        v.as_object().unwrap().clone()
    }

    #[test]
    fn an_old_client_is_told_what_4_0_removed_and_what_to_upgrade_to() {
        let mut t = Talkers::default();
        t.observe(1, &line("request", ApiKey::Produce, 2, json!({})));
        t.observe(1, &line("response", ApiKey::Produce, 2, json!({"throttleTimeMs": 5, "responses": [{"partitionResponses": [{"errorCode": 6}]}]})));
        t.observe(1, &line("request", ApiKey::Metadata, 12, json!({})));
        t.observe(1, &line("request", ApiKey::JoinGroup, 1, json!({})));
        let target = Target::parse("4.0").unwrap();
        let report = t.json(Some(&target));
        let c = &report[0];
        assert_eq!((c["client"].as_str(), c["clientId"].as_str(), c["requests"].as_u64()), (Some("(not named)"), Some("old"), Some(3)));
        assert_eq!(c["errors"], json!({"NOT_LEADER_OR_FOLLOWER": 1}));
        assert_eq!((c["throttled"].as_u64(), c["throttleMs"].as_u64()), (Some(1), Some(5)));
        let findings: Vec<&str> = c["upgrade"]["findings"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        assert!(findings.contains(&"Produce v2: removed in 4.0 (it serves v3-v12)"), "{findings:?}");
        assert!(findings.contains(&"JoinGroup v1: removed in 4.0 (it serves v2-v9)"), "{findings:?}");
        assert!(findings.iter().any(|f| f.starts_with("JoinGroup v1: the classic group protocol")), "{findings:?}");
        assert!(findings.contains(&"upgrade: to java 3.6.2 or librdkafka 2.0.2 or later (the oldest known to send what 4.0 serves)"), "{findings:?}");
        assert!(!findings.iter().any(|f| f.starts_with("Metadata")), "Metadata v12 stays: {findings:?}");
        // On 3.9 nothing is removed.
        let on_39 = t.json(Some(&Target::parse("3.9").unwrap()));
        assert!(!on_39[0]["upgrade"]["findings"].as_array().unwrap().iter().any(|f| f.as_str().unwrap().contains("removed")), "{on_39}");
        assert!(Target::parse("1.0").is_err());
    }

    #[test]
    fn a_client_names_itself_and_its_principal() {
        let mut t = Talkers::default();
        t.observe(7, &line("request", ApiKey::ApiVersions, 3, json!({"clientSoftwareName": "librdkafka", "clientSoftwareVersion": "2.12.0"})));
        t.observe(7, &line("request", ApiKey::SaslAuthenticate, 2, json!({"authBytes": {"withheld": true, "mechanism": "PLAIN", "user": "alice"}})));
        t.observe(7, &line("response", ApiKey::GetTelemetrySubscriptions, 0, json!({"clientInstanceId": "AAAAAAAAAAAAAAAAAAAAAQ"})));
        let c = &t.json(None)[0];
        assert_eq!((c["client"].as_str(), c["principal"].as_str()), (Some("librdkafka 2.12.0"), Some("User:alice")));
        assert_eq!(c["instanceIds"], json!(["AAAAAAAAAAAAAAAAAAAAAQ"]));
        assert!(c.get("upgrade").is_none());
        let mut text = Vec::new();
        t.print_text(Some(&Target::parse("4.4").unwrap()), &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("librdkafka 2.12.0 (old): nothing 4.4 lacks"), "{text}");
    }
}
