//! The sweep's plumbing: a blocking connection on kwire's sans-io [`ClientCodec`], the
//! byte-for-byte re-encoding check on every response, and the result table.

// Each test binary uses part of this module.
#![allow(dead_code)]

mod apis;
pub mod cluster;
mod kafka4;
mod scram;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use kwire::codec::{ClientCodec, OutboundRequest};
use kwire::messages::ApiVersionsResponse;
use kwire::runtime::json::serde_json;
use kwire::{ApiKey, BytesMut, Encode, RequestKind, ResponseKind, VersionRange, VersionedJson, Visit};

pub type R<T> = Result<T, String>;

/// How long one response may take (a real broker on a loaded 2-core machine).
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);

/// Where the broker is: from `KWIRE_BROKER`, an env file of `scripts/kafka.sh` or `host:port`.
#[derive(Debug, Clone, Default)]
pub struct Broker {
    pub version: String,
    /// kwire-fake imitating `version` (the env file's `KWIRE_FAKE=1`, from
    /// `scripts/broker-sweep.sh --fake`), not an Apache Kafka broker.
    pub fake: bool,
    pub plaintext: String,
    pub sasl: Option<String>,
    pub vars: BTreeMap<String, String>,
}

impl Broker {
    pub fn from_env() -> Option<Broker> {
        Broker::from_var("KWIRE_BROKER", "KWIRE_REQUIRE_BROKER", "scripts/kafka.sh start VERSION")
    }

    /// From `var` (an env file or `host:port`); `None` with a note when unset, unless
    /// `require`=1, which makes that a failure.
    pub fn from_var(var: &str, require: &str, how: &str) -> Option<Broker> {
        let required = std::env::var_os(require).is_some_and(|v| v == "1");
        let Some(spec) = std::env::var(var).ok().filter(|s| !s.is_empty()) else {
            assert!(!required, "{require}=1 but {var} is unset (scripts/broker-sweep.sh sets it)");
            eprintln!("skipping: {var} is unset (start a broker with {how}, or run scripts/broker-sweep.sh)");
            return None;
        };
        let mut vars = BTreeMap::new();
        if let Ok(text) = std::fs::read_to_string(&spec) {
            for line in text.lines() {
                if let Some((k, v)) = line.split_once('=') {
                    vars.insert(k.trim().to_owned(), v.trim().to_owned());
                }
            }
        } else {
            vars.insert("PLAINTEXT".into(), spec.clone());
        }
        let first_node = vars.get("BOOTSTRAP").and_then(|b| b.split(',').next()).map(str::to_owned);
        let plaintext = vars.get("PLAINTEXT").cloned().or(first_node).unwrap_or_else(|| panic!("{spec}: no PLAINTEXT address"));
        let version = std::env::var("KWIRE_BROKER_VERSION").ok().or_else(|| vars.get("KAFKA_VERSION").cloned()).unwrap_or_else(|| "unknown".into());
        let fake = vars.get("KWIRE_FAKE").is_some_and(|v| v == "1");
        Some(Broker { version, fake, plaintext, sasl: vars.get("SASL_PLAINTEXT").cloned(), vars })
    }

    /// What the broker is, for the table: `Apache Kafka 4.4.0` or `kwire-fake 4.4`.
    pub fn name(&self) -> String {
        if self.fake {
            format!("kwire-fake {}", self.version)
        } else {
            format!("Apache Kafka {}", self.version)
        }
    }

    /// The broker's major version (3, 4, ...).
    pub fn major(&self) -> u32 {
        self.version.split('.').next().and_then(|m| m.parse().ok()).unwrap_or(0)
    }
}

/// A blocking connection speaking through kwire's [`ClientCodec`].
pub struct Conn {
    stream: TcpStream,
    codec: ClientCodec,
    buf: BytesMut,
    next_correlation_id: i32,
    pub addr: String,
}

impl Conn {
    pub fn connect(addr: &str) -> R<Conn> {
        let stream = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
        stream.set_nodelay(true).ok();
        stream.set_read_timeout(Some(RESPONSE_TIMEOUT)).ok();
        stream.set_write_timeout(Some(RESPONSE_TIMEOUT)).ok();
        Ok(Conn { stream, codec: ClientCodec::new(), buf: BytesMut::new(), next_correlation_id: 1, addr: addr.to_owned() })
    }

    /// Sends `body` at `version` and reads the answer; checks that the response re-encodes to
    /// the bytes it was read from. `Ok(None)` for Produce with acks 0.
    pub fn send(&mut self, version: i16, body: RequestKind) -> R<Option<ResponseKind>> {
        let api = body.api_key();
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id += 1;
        let request = OutboundRequest::new(api, version, correlation_id, body).with_client_id("kwire-sweep");
        let expects_response = request.expects_response();
        let mut out = BytesMut::new();
        self.codec.encode_request(request, &mut out).map_err(|e| format!("{} v{version}: request does not encode: {e}", api.name()))?;
        self.stream.write_all(&out).map_err(|e| format!("{} v{version}: write: {e}", api.name()))?;
        if !expects_response {
            return Ok(None);
        }
        // Keep the frame's bytes for the re-encoding check, then hand it to the codec whole.
        let raw = self.read_frame().map_err(|e| format!("{} v{version}: {e}", api.name()))?;
        let mut sized = BytesMut::with_capacity(raw.len() + 4);
        sized.extend_from_slice(&(raw.len() as i32).to_be_bytes());
        sized.extend_from_slice(&raw);
        let frame = match self.codec.decode_response(&mut sized) {
            Ok(Some(frame)) => frame,
            Ok(None) => return Err(format!("{} v{version}: a whole frame did not decode", api.name())),
            Err(e) => return Err(format!("{} v{version}: response does not decode: {e}", api.name())),
        };
        if frame.header.correlation_id != correlation_id {
            return Err(format!("{} v{version}: correlation id {} for {correlation_id}", api.name(), frame.header.correlation_id));
        }
        // Byte for byte: header at its version, body at the version it was decoded at.
        let mut again = BytesMut::new();
        frame.header.encode(&mut again, api.response_header_version(frame.version)).map_err(|e| format!("{e}"))?;
        frame.body.encode(&mut again, frame.version).map_err(|e| format!("{} v{version}: re-encode: {e}", api.name()))?;
        if again[..] != raw[..] {
            let at = again.iter().zip(raw.iter()).position(|(a, b)| a != b).unwrap_or(again.len().min(raw.len()));
            return Err(format!(
                "{} v{version}: re-encoded response differs from the broker's at byte {at} ({} vs {} bytes)",
                api.name(),
                again.len(),
                raw.len()
            ));
        }
        Ok(Some(frame.body))
    }

    /// Sends and expects an answer.
    pub fn call(&mut self, version: i16, body: impl Into<RequestKind>) -> R<ResponseKind> {
        let body = body.into();
        let api = body.api_key();
        self.send(version, body)?.ok_or_else(|| format!("{} v{version}: no response expected", api.name()))
    }

    /// One size-prefixed frame off the socket (without its size).
    fn read_frame(&mut self) -> R<Vec<u8>> {
        let mut chunk = [0u8; 65536];
        loop {
            if self.buf.len() >= 4 {
                let size = i32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]);
                if size < 0 {
                    return Err(format!("negative frame size {size}"));
                }
                if self.buf.len() >= 4 + size as usize {
                    let mut frame = self.buf.split_to(4 + size as usize);
                    return Ok(frame.split_off(4).to_vec());
                }
            }
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err("connection closed by the broker".into()),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) => return Err(format!("read: {e}")),
            }
        }
    }

    /// Sends raw bytes (a hand-built frame) and reads the raw answer: for versions the codec
    /// refuses to encode.
    pub fn raw(&mut self, frame: &[u8]) -> R<Vec<u8>> {
        self.stream.write_all(frame).map_err(|e| format!("write: {e}"))?;
        self.read_frame()
    }
}

/// Every error code in a response that is not NONE, as a set.
pub fn errors(r: &ResponseKind) -> BTreeSet<i16> {
    r.errors().into_iter().map(|(_, code)| code.0).collect()
}

/// The response's non-NONE error codes must be exactly `expected`.
pub fn expect(r: &ResponseKind, expected: &[i16]) -> R<()> {
    let got = errors(r);
    let want: BTreeSet<i16> = expected.iter().copied().collect();
    if got == want {
        Ok(())
    } else {
        Err(format!("{}: error codes {} where {} expected{}", r.api_key().name(), names(&got), names(&want), messages(r)))
    }
}

fn names(codes: &BTreeSet<i16>) -> String {
    if codes.is_empty() {
        return "NONE".into();
    }
    let v: Vec<String> = codes.iter().map(|c| format!("{}({c})", kwire::ErrorCode(*c).name().unwrap_or("?"))).collect();
    v.join(",")
}

/// Error messages the broker put in the response, for the failure report.
fn messages(r: &ResponseKind) -> String {
    let json = r.to_json(32767).or_else(|_| r.to_json(0)).ok();
    let mut out = Vec::new();
    fn walk(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    if k.to_ascii_lowercase().ends_with("errormessage") {
                        if let Some(s) = x.as_str() {
                            out.push(s.to_owned());
                        }
                    }
                    walk(x, out);
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    if let Some(j) = json {
        walk(&j, &mut out);
    }
    if out.is_empty() {
        String::new()
    } else {
        format!(" ({})", out.join("; "))
    }
}

/// Sets fields that exist only in some spec sets or versions: `msg` at `version` as JSON,
/// `patch` merged in (objects by key, arrays element by element; keys the version lacks are
/// skipped), read back. So one builder serves every version and both spec sets.
pub fn patch<T: VersionedJson>(msg: T, version: i16, patch: serde_json::Value) -> R<T> {
    fn merge(base: &mut serde_json::Value, p: &serde_json::Value) {
        use serde_json::Value::{Array, Object};
        match (base, p) {
            (Object(b), Object(p)) => {
                for (k, pv) in p {
                    if let Some(bv) = b.get_mut(k) {
                        merge(bv, pv);
                    }
                }
            }
            (Array(b), Array(p)) => b.iter_mut().zip(p).for_each(|(bv, pv)| merge(bv, pv)),
            (b, p) => *b = p.clone(),
        }
    }
    let mut json = msg.to_json(version).map_err(|e| format!("patch: {e}"))?;
    merge(&mut json, &patch);
    T::from_json(&json, version).map_err(|e| format!("patch: {e}"))
}

/// Kafka's string form of a uuid (for [`patch`]).
pub fn uuid_json(id: kwire::Uuid) -> serde_json::Value {
    id.to_json(0).unwrap_or_default()
}

/// Retries `f` (bounded) while the response carries one of `transient`: coordinators loading,
/// a transaction still completing.
pub fn retry(transient: &[i16], mut f: impl FnMut() -> R<ResponseKind>) -> R<ResponseKind> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r = f()?;
        if std::env::var_os("SWEEP_DEBUG").is_some() {
            eprintln!("retry: {:?}", errors(&r));
        }
        if !errors(&r).iter().any(|e| transient.contains(e)) || Instant::now() > deadline {
            return Ok(r);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR.
pub const COORDINATOR_TRANSIENT: &[i16] = &[14, 15, 16];

#[derive(Debug, Clone)]
pub enum Outcome {
    Pass(String),
    Fail(String),
}

pub struct Row {
    pub api: ApiKey,
    pub version: i16,
    pub outcome: Outcome,
    /// Wall time of the row's requests, for the table.
    pub ms: u128,
}

pub struct Sweep {
    pub broker: Broker,
    pub conn: Conn,
    pub advertised: ApiVersionsResponse,
    /// The ApiVersions version the broker answered (the build's newest, or the broker's).
    pub api_versions_version: i16,
    pub rows: Vec<Row>,
    pub notes: Vec<String>,
    pub state: apis::State,
    /// Appended to the table's file name.
    pub label: String,
}

impl Sweep {
    pub fn new(broker: Broker) -> Sweep {
        let mut conn = Conn::connect(&broker.plaintext).unwrap();
        let mut v = ApiKey::ApiVersions.stable_versions().hi;
        let advertised = loop {
            let ResponseKind::ApiVersions(r) = conn
                .call(
                    v,
                    kwire::messages::ApiVersionsRequest {
                        client_software_name: "kwire-sweep".into(),
                        client_software_version: env!("CARGO_PKG_VERSION").into(),
                        ..Default::default()
                    },
                )
                .unwrap()
            else {
                panic!("ApiVersions answered with another api")
            };
            // KIP-511: a broker older than this build answers UNSUPPORTED_VERSION with its own
            // ApiVersions range; ask again at the highest version both know, as Java's client does.
            let theirs = r.api_keys.iter().find(|k| k.api_key == ApiKey::ApiVersions.key()).map(|k| k.max_version);
            match theirs {
                Some(theirs) if r.error_code == kwire::ErrorCode::UNSUPPORTED_VERSION.0 && theirs < v => v = theirs,
                _ => break r,
            }
        };
        assert_eq!(advertised.error_code, 0, "ApiVersions v{v}");
        Sweep { broker, conn, advertised, api_versions_version: v, rows: Vec::new(), notes: Vec::new(), state: apis::State::default(), label: String::new() }
    }

    /// Every (api, version) both sides support, in key order.
    pub fn common(&self) -> Vec<(ApiKey, VersionRange)> {
        let mut out = Vec::new();
        for k in &self.advertised.api_keys {
            if let Some(api) = ApiKey::from_i16(k.api_key) {
                let common = api.stable_versions().intersect(&VersionRange::new(k.min_version, k.max_version));
                if !common.is_empty() {
                    out.push((api, common));
                }
            }
        }
        out
    }

    pub fn run(&mut self) {
        let started = Instant::now();
        if let Err(e) = apis::setup(self) {
            panic!("setup against {} failed: {e}", self.broker.name());
        }
        for k in self.advertised.api_keys.clone() {
            if ApiKey::from_i16(k.api_key).is_none() {
                self.notes.push(format!(
                    "api key {} (v{}-{}) is advertised but unknown to this build's specs ({})",
                    k.api_key,
                    k.min_version,
                    k.max_version,
                    kwire::SPEC_DIR
                ));
            }
        }
        for (api, range) in self.common() {
            for version in range.lo..=range.hi {
                let t = Instant::now();
                let outcome = match apis::exercise(self, api, version) {
                    Ok(note) => Outcome::Pass(note),
                    Err(e) => Outcome::Fail(e),
                };
                if t.elapsed() > Duration::from_secs(10) {
                    eprintln!("slow: {} v{version} took {:?}", api.name(), t.elapsed());
                }
                // A failure may leave the connection mid-frame: start afresh.
                if matches!(outcome, Outcome::Fail(_)) {
                    if let Ok(c) = Conn::connect(&self.broker.plaintext) {
                        self.conn = c;
                    }
                }
                self.rows.push(Row { api, version, outcome, ms: t.elapsed().as_millis() });
            }
        }
        apis::refused_versions(self);
        eprintln!("sweep against {} took {:?}", self.broker.name(), started.elapsed());
    }

    /// Only the versions the broker must refuse: for a build from another release's specs,
    /// which knows versions this broker lacks.
    pub fn run_refusals(&mut self) {
        self.label = "-refusals".into();
        apis::refused_versions(self);
        if self.rows.len() <= 1 {
            self.notes.push("this build knows no version outside the broker's ranges but ApiVersions'".into());
        }
    }

    pub fn failures(&self) -> Vec<String> {
        self.rows
            .iter()
            .filter_map(|r| match &r.outcome {
                Outcome::Fail(e) => Some(format!("{} v{}: {e}", r.api.name(), r.version)),
                Outcome::Pass(_) => None,
            })
            .collect()
    }

    /// Writes `target/broker-sweep/<version>.txt`; returns (passed, exercised).
    pub fn write_table(&self) -> (usize, usize) {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target").join("broker-sweep");
        std::fs::create_dir_all(&dir).unwrap();
        let mut text = format!(
            "# kwire sweep against {} ({} listener), specs {}\n{:<34} {:>3}  {:<6} {:>6}  {}\n",
            self.broker.name(),
            self.broker.plaintext,
            kwire::SPEC_DIR,
            "api",
            "v",
            "result",
            "ms",
            "detail"
        );
        let mut passed = 0;
        for r in &self.rows {
            let (word, detail) = match &r.outcome {
                Outcome::Pass(d) => {
                    passed += 1;
                    ("pass", d.as_str())
                }
                Outcome::Fail(d) => ("FAIL", d.as_str()),
            };
            text += &format!("{:<34} {:>3}  {:<6} {:>6}  {}\n", format!("{}({})", r.api.name(), r.api.key()), r.version, word, r.ms, detail);
        }
        for n in &self.notes {
            text += &format!("# note: {n}\n");
        }
        // The refusal-only table gets another word, so `broker sweep:` lines stay one per version.
        let what = if self.label.is_empty() { "broker sweep" } else { "broker refusals" };
        let summary = format!("{what}: {passed} of {} api versions pass against {}\n", self.rows.len(), self.broker.name());
        text += &summary;
        let file = if self.broker.fake { format!("kwire-fake-{}", self.broker.version) } else { self.broker.version.clone() };
        std::fs::write(dir.join(format!("{file}{}.txt", self.label)), &text).unwrap();
        eprint!("{text}");
        (passed, self.rows.len())
    }
}

/// Shorthand: the response's variant, or an error naming what came instead.
#[macro_export]
macro_rules! as_resp {
    ($r:expr, $v:ident) => {
        match $r {
            kwire::ResponseKind::$v(x) => x,
            other => return Err(format!("expected {}, got {}", stringify!($v), other.api_key().name())),
        }
    };
}
