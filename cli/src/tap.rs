//! `kwire tap`: a proxy (kwire-proxy) in front of a broker that prints every request and
//! response passing through it, decoded, and per-api counts and latencies when it stops.
//!
//! Frames reach this module through the proxy's frame hook, copied into a channel, so the
//! forwarding never waits for decoding or printing (up to 256 MiB queued; frames past that are
//! forwarded, not shown, and counted in the summary). What is decoded is what the client sent
//! and what the broker answered (before the proxy rewrote broker addresses for the client); a
//! frame that does not decode is printed with the error and was forwarded all the same.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use clap::Args;
use kwire::runtime::json::serde_json::{json, Map, Value};
use kwire::{ApiKey, ErrorCode};
use kwire_proxy::{Config, Event, FrameDirection, FrameMode, Identity, Proxy, ServerTls, UpstreamTls};
use tokio::sync::mpsc;

use crate::error::CliError;
use crate::format::{print_json, Table};
use crate::html::HtmlReport;
use crate::message::{request_json, response_json};
use crate::secrets::Secrets;
use crate::talkers::{Talkers, Target};

/// `kwire tap`.
#[derive(Args, Debug)]
pub struct TapArgs {
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub listen: String,
    /// The port clients bootstrap from (0: any free port, printed on stderr). The brokers the
    /// cluster advertises get listeners on free ports as they appear.
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// The host advertised to clients in place of the brokers' (default: --listen).
    #[arg(long)]
    pub advertise: Option<String>,
    /// One JSON object per frame (and a last one with the summary) instead of one line per
    /// request and its response.
    #[arg(long)]
    pub json: bool,
    /// Stops after this many frames (requests and responses).
    #[arg(long)]
    pub count: Option<u64>,
    /// Stops after this long: `30s`, `5m`, `500ms`, or seconds.
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Terminates clients' TLS with this certificate chain (PEM), so their frames can be read
    /// (without it a client's TLS is relayed unread); with --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Or the certificate and key in a PKCS#12 keystore (`.p12`, as keytool writes them).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["tls_cert", "tls_key"])]
    pub tls_p12: Option<PathBuf>,
    /// A file whose first line is the --tls-p12 keystore's password.
    #[arg(long, value_name = "FILE", requires = "tls_p12")]
    pub tls_p12_password_file: Option<PathBuf>,
    /// Requires clients' certificates, signed by this CA (PEM).
    #[arg(long, value_name = "FILE")]
    pub tls_client_ca: Option<PathBuf>,
    /// Speaks TLS to the brokers (an SSL or SASL_SSL listener), checking their certificates
    /// against this CA (PEM).
    #[arg(long, value_name = "FILE")]
    pub upstream_ca: Option<PathBuf>,
    /// The tap's client certificate towards the brokers (PEM), with --upstream-key.
    #[arg(long, value_name = "FILE", requires_all = ["upstream_key", "upstream_ca"])]
    pub upstream_cert: Option<PathBuf>,
    /// The private key of --upstream-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "upstream_cert")]
    pub upstream_key: Option<PathBuf>,
    #[command(flatten)]
    pub records: crate::ShowRecords,
    #[command(flatten)]
    pub report: crate::ShowReport,
    #[command(flatten)]
    pub secrets: crate::ShowSecrets,
}

/// `30s`, `5m`, `1h`, `500ms`, or a number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (number, unit) = s.find(|c: char| !c.is_ascii_digit() && c != '.').map_or((s, ""), |i| s.split_at(i));
    let n: f64 = number.parse().map_err(|_| format!("{s:?}: expected a duration such as 30s, 5m, 500ms"))?;
    let seconds = match unit {
        "" | "s" => n,
        "ms" => n / 1000.0,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (ms, s, m, h)")),
    };
    Duration::try_from_secs_f64(seconds).map_err(|e| format!("{s:?}: {e}"))
}

/// A frame the proxy forwarded, as the hook hands it over.
struct Seen {
    connection: u64,
    direction: FrameDirection,
    api_key: i16,
    api_version: i16,
    correlation_id: i32,
    mode: FrameMode,
    /// What was read from the client or the broker (the proxy's answer when it answered).
    payload: Vec<u8>,
    at: Instant,
    wall: SystemTime,
}

/// A request waiting for its response.
struct Pending {
    at: Instant,
    summary: String,
    /// `--records`: the request's records, printed under the line with its response.
    records: Vec<String>,
}

/// Per-api counts.
#[derive(Default)]
struct ApiStats {
    requests: u64,
    responses: u64,
    undecodable: u64,
    errors: u64,
    request_bytes: u64,
    response_bytes: u64,
    /// The last [`MAX_API_LATENCIES`] latencies (p50 and p99 are of those), and the largest
    /// of all.
    latencies_ms: Vec<f64>,
    max_ms: Option<f64>,
    timed: u64,
}

/// Latencies kept per api: a tap left running keeps a bounded window, not every one.
const MAX_API_LATENCIES: usize = 100_000;

/// What the printer keeps between frames.
#[derive(Default)]
struct State {
    pending: HashMap<(u64, i32), Pending>,
    /// Topic names by id, from Metadata responses: Produce v13 and Fetch v13 name topics by id.
    topics: HashMap<String, String>,
    apis: BTreeMap<i16, ApiStats>,
    produced_records: u64,
    fetched_records: u64,
    frames: u64,
    undecodable: u64,
    /// Pending requests forgotten at [`MAX_PENDING`].
    abandoned: u64,
    /// Frames forwarded but not shown: the printer was [`MAX_QUEUED_BYTES`] behind.
    not_shown: u64,
    /// Withholds secrets from every body before anything is printed from it.
    secrets: Secrets,
    /// `--records`: the records shown per frame.
    records: Option<usize>,
    /// Bytes of record lines held by pending requests (at most [`MAX_PENDING_RECORDS`]).
    pending_records: usize,
    /// Who is talking: the clients in the summary.
    talkers: Talkers,
    /// `--report`: the release whose upgrade the summary looks at.
    target: Option<Target>,
    /// `--html FILE`: the page, written with the summary.
    page: Option<(PathBuf, HtmlReport)>,
    /// Connections after a SaslHandshake v0, until a Kafka request follows: their SASL tokens
    /// are bare size-prefixed bytes, whose "api key" and "correlation id" are secret bytes.
    raw_sasl: HashSet<u64>,
}

/// Requests awaiting a response that the tap remembers (their connections may have closed).
const MAX_PENDING: usize = 65_536;

/// Bytes of `--records` lines held for requests awaiting their response; past it a request's
/// records are not kept (its line says so).
const MAX_PENDING_RECORDS: usize = 64 << 20;

/// Bytes of frames copied for the printer and not yet printed. Past it (a terminal slower than
/// the traffic) frames are forwarded but not shown, and counted, so memory stays bounded.
const MAX_QUEUED_BYTES: usize = 256 << 20;

/// Runs the tap until a signal, `--count` or `--duration`.
pub async fn run(upstream: String, args: TapArgs, out: &mut impl Write) -> Result<(), CliError> {
    let target = args.report.target()?;
    let (tx, mut rx) = mpsc::unbounded_channel::<Seen>();
    let queued = Arc::new(AtomicUsize::new(0));
    let skipped = Arc::new(AtomicU64::new(0));
    let (queued_in, skipped_in) = (queued.clone(), skipped.clone());
    let mut config = Config::new(upstream.clone()).listen(args.listen.clone()).port(args.port);
    if let Some(a) = &args.advertise {
        config = config.advertise(a.clone());
    }
    let identity = match (&args.tls_cert, &args.tls_key, &args.tls_p12) {
        (Some(cert), Some(key), _) => Some(Identity::Pem { cert: cert.clone(), key: key.clone() }),
        (_, _, Some(path)) => {
            let password = match &args.tls_p12_password_file {
                Some(file) => std::fs::read_to_string(file)
                    .map_err(|e| CliError::Usage(format!("--tls-p12-password-file {}: {e}", file.display())))?
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .to_owned(),
                None => String::new(),
            };
            Some(Identity::Pkcs12 { path: path.clone(), password })
        }
        _ => None,
    };
    match identity {
        Some(identity) => config = config.tls(ServerTls { identity, client_ca: args.tls_client_ca.clone() }),
        None if args.tls_client_ca.is_some() => return Err(CliError::Usage("--tls-client-ca needs --tls-cert or --tls-p12".into())),
        None => {}
    }
    if let Some(ca) = &args.upstream_ca {
        let cert = args.upstream_cert.clone().zip(args.upstream_key.clone());
        config = config.upstream_tls(UpstreamTls { ca: ca.clone(), cert });
    }
    let config = config
        .on_frame(move |f| {
            // The broker's (or client's) bytes as read; the proxy's own answers have none.
            let payload = if f.received.is_empty() { f.forwarded } else { f.received };
            if queued_in.fetch_add(payload.len(), Ordering::AcqRel) + payload.len() > MAX_QUEUED_BYTES {
                queued_in.fetch_sub(payload.len(), Ordering::AcqRel);
                skipped_in.fetch_add(1, Ordering::Relaxed);
                return;
            }
            let _ = tx.send(Seen {
                connection: f.connection,
                direction: f.direction,
                api_key: f.api_key,
                api_version: f.api_version,
                correlation_id: f.correlation_id,
                mode: f.mode,
                payload: payload.to_vec(),
                at: Instant::now(),
                wall: SystemTime::now(),
            });
        })
        .on_event(|e| match e {
            Event::Listening { local, upstream } => eprintln!("kwire tap: listening on {local} for {upstream}"),
            Event::ConnectionClosed { id, peer, error } => eprintln!("kwire tap: connection {id} from {peer} closed: {error}"),
            _ => {}
        });
    let proxy = Proxy::start(config).await.map_err(CliError::Proxy)?;
    let page = args.report.html.clone().map(|path| (path, HtmlReport::default()));
    let mut state = State { secrets: Secrets::new(args.secrets.show_secrets), records: args.records.records, target, page, ..State::default() };
    let deadline = args.duration.map(|d| tokio::time::Instant::now() + d);
    let stop = stop_signal();
    tokio::pin!(stop);
    loop {
        let sleep = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            seen = rx.recv() => {
                let Some(seen) = seen else { break };
                queued.fetch_sub(seen.payload.len(), Ordering::AcqRel);
                state.frame(seen, args.json, out)?;
                out.flush().map_err(CliError::io)?;
                if args.count.is_some_and(|n| state.frames >= n) {
                    break;
                }
            }
            () = &mut stop => break,
            () = sleep => break,
        }
    }
    proxy.shutdown();
    // Frames forwarded before the stop are still printed (but not past --count).
    while let Ok(seen) = rx.try_recv() {
        if args.count.is_some_and(|n| state.frames >= n) {
            break;
        }
        state.frame(seen, args.json, out)?;
    }
    state.not_shown = skipped.load(Ordering::Relaxed);
    state.summary(args.json, out)
}

/// Resolves on SIGINT or (on Unix) SIGTERM.
async fn stop_signal() {
    #[cfg(unix)]
    {
        let term = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut s) => {
                    s.recv().await;
                }
                Err(_) => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            () = term => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

pub(crate) fn api_name(key: i16) -> String {
    ApiKey::from_i16(key).map_or_else(|| format!("Api{key}"), |k| k.name().to_owned())
}

fn mode_name(mode: FrameMode) -> &'static str {
    match mode {
        FrameMode::Pass => "pass",
        FrameMode::Rewritten => "rewritten",
        FrameMode::Local => "local",
    }
}

pub(crate) fn error_name(code: i64) -> String {
    i16::try_from(code).ok().and_then(|c| ErrorCode(c).name()).map_or_else(|| format!("error {code}"), str::to_owned)
}

/// Records in a records blob (the base64 of its bytes in the JSON): each v2 batch's count, one
/// per legacy message. Stops quietly at a partial batch (fetches may end with one).
fn count_records(records: &Value) -> (u64, u64) {
    let Some(b64) = records.as_str() else { return (0, 0) };
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(b64) else { return (0, 0) };
    let mut rest = bytes.as_slice();
    let mut count = 0u64;
    while let Some(len) = rest.get(8..12).and_then(|b| b.try_into().ok()).map(i32::from_be_bytes) {
        let Some(total) = usize::try_from(len).ok().and_then(|l| l.checked_add(12)) else { break };
        let Some(batch) = rest.get(..total) else { break };
        // Magic at byte 16; a v2 batch's record count at 57.
        count += match batch.get(16) {
            Some(2) => batch.get(57..61).and_then(|b| b.try_into().ok()).map(i32::from_be_bytes).and_then(|n| u64::try_from(n).ok()).unwrap_or(0),
            _ => 1,
        };
        rest = rest.get(total..).unwrap_or_default();
    }
    (count, bytes.len() as u64)
}

/// One record in text: offset, timestamp, key, value and headers.
fn record_line(at: &str, r: &Value) -> String {
    let mut line =
        format!("{at} @{} ts={} key={} value={}", int(r, "offset").unwrap_or(-1), int(r, "timestamp").unwrap_or(-1), shown(&r["key"]), shown(&r["value"]));
    let headers: Vec<String> =
        arr(r, "headers").iter().map(|h| format!("{}={}", h.get("key").and_then(Value::as_str).unwrap_or("?"), shown(&h["value"]))).collect();
    if !headers.is_empty() {
        line.push_str(&format!(" headers: {}", headers.join(" ")));
    }
    if let Some(n) = int(r, "omittedHeaders") {
        line.push_str(&format!(" (and {n} more header(s))"));
    }
    line
}

/// A key, value or header value as [`crate::records::expand`] shows it, in text: quoted text,
/// `base64:...`, `schema-id=N:...`, `schema-guid=...`, `(N B)` after a cut one.
fn shown(v: &Value) -> String {
    let cut = |o: &Value| int(o, "length").map_or_else(String::new, |n| format!("...({n} B)"));
    match v {
        Value::Null => "null".into(),
        Value::String(s) => format!("{s:?}"),
        o if o.get("schemaId").is_some() => format!("schema-id={}:{}", int(o, "schemaId").unwrap_or(-1), shown(&o["payload"])),
        o if o.get("schemaGuid").is_some() => format!("schema-guid={}", o["schemaGuid"].as_str().unwrap_or("?")),
        o if o.get("text").is_some() => format!("{:?}{}", o["text"].as_str().unwrap_or_default(), cut(o)),
        o => format!("base64:{}{}", o.get("base64").and_then(Value::as_str).unwrap_or_default(), cut(o)),
    }
}

fn size(bytes: u64) -> String {
    match bytes {
        0..=1023 => format!("{bytes} B"),
        1024..=1_048_575 => format!("{:.1} KB", bytes as f64 / 1024.0),
        _ => format!("{:.1} MB", bytes as f64 / 1_048_576.0),
    }
}

fn arr<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

pub(crate) fn int(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(Value::as_i64)
}

impl State {
    /// A topic's name from an entry with `name`/`topic` or a `topicId`.
    fn topic(&self, t: &Value) -> String {
        if let Some(n) = t.get("name").or_else(|| t.get("topic")).and_then(Value::as_str) {
            return n.to_owned();
        }
        let id = t.get("topicId").and_then(Value::as_str).unwrap_or("?");
        self.topics.get(id).cloned().unwrap_or_else(|| id.to_owned())
    }

    /// `--records`: decodes the body's records (after the summary counted them) and returns
    /// their lines for the text form.
    fn expand_records(&self, key: i16, request: bool, body: &mut Value) -> Vec<String> {
        let Some(mut budget) = self.records else { return Vec::new() };
        crate::records::expand(key, request, body, &mut budget);
        self.record_lines(key, request, body)
    }

    /// One indented line per record the body's records show (those
    /// [`crate::records::expand`] decoded), under its topic and partition.
    fn record_lines(&self, key: i16, request: bool, body: &Value) -> Vec<String> {
        let (topics, partitions, index) = match (ApiKey::from_i16(key), request) {
            (Some(ApiKey::Produce), true) => ("topicData", "partitionData", "index"),
            (Some(ApiKey::Fetch | ApiKey::ShareFetch), false) => ("responses", "partitions", "partitionIndex"),
            _ => return Vec::new(),
        };
        let mut lines = Vec::new();
        for t in arr(body, topics) {
            let topic = self.topic(t);
            for p in arr(t, partitions) {
                let at = format!("  {topic} p{}", int(p, index).unwrap_or(-1));
                for b in p.get("records").map_or(&[][..], |r| arr(r, "batches")) {
                    if let Some(e) = b.get("error").and_then(Value::as_str) {
                        lines.push(format!("{at} batch at {}: {e}", int(b, "baseOffset").unwrap_or(-1)));
                    }
                    for r in arr(b, "records") {
                        lines.push(match r.get("marker").and_then(Value::as_str) {
                            Some(marker) => {
                                format!("{at} @{} {marker} marker (producer {})", int(r, "offset").unwrap_or(-1), int(b, "producerId").unwrap_or(-1))
                            }
                            None => record_line(&at, r),
                        });
                    }
                    if let Some(n) = int(b, "omittedRecords") {
                        lines.push(format!("{at} ... {n} more record(s) not shown"));
                    }
                }
            }
        }
        lines
    }

    /// The short form of a request; counts the records of Produce requests.
    fn request_summary(&mut self, key: i16, body: &Value) -> String {
        match ApiKey::from_i16(key) {
            Some(ApiKey::Produce) => {
                let mut parts = Vec::new();
                for t in arr(body, "topicData") {
                    let topic = self.topic(t);
                    for p in arr(t, "partitionData") {
                        let (n, bytes) = p.get("records").map_or((0, 0), count_records);
                        self.produced_records += n;
                        parts.push(format!("topic={topic} p{}: {n} records {}", int(p, "index").unwrap_or(-1), size(bytes)));
                    }
                }
                if int(body, "acks") == Some(0) {
                    parts.push("acks=0".into());
                }
                parts.join("; ")
            }
            Some(ApiKey::Fetch) => {
                let parts: Vec<String> = arr(body, "topics")
                    .iter()
                    .map(|t| {
                        let ps: Vec<String> = arr(t, "partitions")
                            .iter()
                            .map(|p| format!("p{}@{}", int(p, "partition").unwrap_or(-1), int(p, "fetchOffset").unwrap_or(-1)))
                            .collect();
                        format!("topic={} {}", self.topic(t), ps.join(","))
                    })
                    .collect();
                if parts.is_empty() {
                    "(session)".into()
                } else {
                    parts.join("; ")
                }
            }
            Some(ApiKey::Metadata) => match body.get("topics").and_then(Value::as_array) {
                None => "all topics".into(),
                Some(ts) => format!("topics={}", ts.iter().map(|t| self.topic(t)).collect::<Vec<_>>().join(",")),
            },
            Some(ApiKey::SaslAuthenticate) => crate::secrets::sasl_summary(body).unwrap_or_default(),
            _ => {
                for field in ["groupId", "transactionalId", "key", "mechanism"] {
                    if let Some(v) = body.get(field).and_then(Value::as_str) {
                        return format!("{field}={v}");
                    }
                }
                // CreateTopics, DeleteTopics, ListOffsets, OffsetFetch...: the topics named.
                let names: Vec<String> = arr(body, "topics").iter().filter(|t| t.is_object()).map(|t| self.topic(t)).collect();
                if names.is_empty() {
                    String::new()
                } else {
                    format!("topics={}", names.join(","))
                }
            }
        }
    }

    /// The short form of a response, its error count (codes other than NONE, anywhere in
    /// it), and for Fetch the records it carries.
    fn response_summary(&mut self, key: i16, body: &Value) -> (String, u64) {
        let errors = count_errors(body);
        let text = match ApiKey::from_i16(key) {
            Some(ApiKey::Produce) => {
                let parts: Vec<String> = arr(body, "responses")
                    .iter()
                    .flat_map(|t| {
                        arr(t, "partitionResponses").iter().map(|p| match int(p, "errorCode") {
                            Some(0) | None => format!("offset {}", int(p, "baseOffset").unwrap_or(-1)),
                            Some(c) => error_name(c),
                        })
                    })
                    .collect();
                parts.join(", ")
            }
            Some(ApiKey::Fetch) => {
                let mut parts = Vec::new();
                for t in arr(body, "responses") {
                    let topic = self.topic(t);
                    for p in arr(t, "partitions") {
                        let (n, bytes) = p.get("records").map_or((0, 0), count_records);
                        self.fetched_records += n;
                        let index = int(p, "partitionIndex").unwrap_or(-1);
                        match int(p, "errorCode") {
                            Some(0) | None => {
                                parts.push(format!("topic={topic} p{index}: {n} records {} hw={}", size(bytes), int(p, "highWatermark").unwrap_or(-1)))
                            }
                            Some(c) => parts.push(format!("topic={topic} p{index}: {}", error_name(c))),
                        }
                    }
                }
                if parts.is_empty() {
                    "no data".into()
                } else {
                    parts.join("; ")
                }
            }
            Some(ApiKey::Metadata) => {
                for t in arr(body, "topics") {
                    if let (Some(id), Some(name)) = (t.get("topicId").and_then(Value::as_str), t.get("name").and_then(Value::as_str)) {
                        self.topics.insert(id.to_owned(), name.to_owned());
                    }
                }
                format!("{} broker(s), {} topic(s)", arr(body, "brokers").len(), arr(body, "topics").len())
            }
            Some(ApiKey::FindCoordinator) => {
                let nodes: Vec<String> = arr(body, "coordinators")
                    .iter()
                    .map(|c| format!("{}: node {}", c.get("key").and_then(Value::as_str).unwrap_or("?"), int(c, "nodeId").unwrap_or(-1)))
                    .collect();
                if nodes.is_empty() {
                    format!("node {}", int(body, "nodeId").unwrap_or(-1))
                } else {
                    nodes.join(", ")
                }
            }
            _ => match int(body, "errorCode") {
                Some(c) if c != 0 => error_name(c),
                _ if errors > 0 => format!("{errors} error(s)"),
                _ => "ok".into(),
            },
        };
        (text, errors)
    }

    /// Prints one frame (a request now only in --json, or with acks=0; a response with its
    /// request) and counts it.
    fn frame(&mut self, seen: Seen, json: bool, out: &mut impl Write) -> Result<(), CliError> {
        self.frames += 1;
        let request = seen.direction == FrameDirection::Request;
        if request {
            let valid = ApiKey::from_i16(seen.api_key).is_some_and(|api| api.info().valid.contains(seen.api_version));
            if !valid && self.raw_sasl.contains(&seen.connection) {
                return self.sasl_token(&seen, json, out);
            }
            if seen.api_key == ApiKey::SaslHandshake.key() && seen.api_version == 0 {
                if self.raw_sasl.len() >= MAX_PENDING {
                    self.raw_sasl.clear();
                }
                self.raw_sasl.insert(seen.connection);
            } else {
                self.raw_sasl.remove(&seen.connection);
            }
        }
        let mut decoded = if request { request_json(&seen.payload) } else { response_json(&seen.payload, seen.api_key, seen.api_version) };
        if let Ok((_, body)) = &mut decoded {
            self.secrets.apply(seen.connection, seen.api_key, request, body);
        }
        let name = api_name(seen.api_key);
        let stats = self.apis.entry(seen.api_key).or_default();
        let len = seen.payload.len() as u64 + 4;
        if request {
            stats.requests += 1;
            stats.request_bytes += len;
        } else {
            stats.responses += 1;
            stats.response_bytes += len;
        }
        if decoded.is_err() {
            stats.undecodable += 1;
            self.undecodable += 1;
        }
        let mut line = Map::new();
        line.insert("timestamp".into(), json!(seen.wall.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis())));
        line.insert("connection".into(), json!(seen.connection));
        line.insert("direction".into(), json!(if request { "request" } else { "response" }));
        line.insert("apiKey".into(), json!(seen.api_key));
        line.insert("apiName".into(), json!(name));
        line.insert("apiVersion".into(), json!(seen.api_version));
        line.insert("correlationId".into(), json!(seen.correlation_id));
        line.insert("size".into(), json!(len));
        line.insert("forwarded".into(), json!(mode_name(seen.mode)));
        let head = format!("c{} {name} v{} corr={}", seen.connection, seen.api_version, seen.correlation_id);
        if request && self.pending.len() >= MAX_PENDING {
            // Requests of connections that closed unanswered: forget them rather than grow.
            self.abandoned += self.pending.len() as u64;
            self.pending.clear();
            self.pending_records = 0;
        }
        let key = (seen.connection, seen.correlation_id);
        let text = match (request, decoded) {
            (true, Ok((header, mut body))) => {
                let summary = self.request_summary(seen.api_key, &body);
                let records = self.expand_records(seen.api_key, true, &mut body);
                let acks0 = seen.api_key == ApiKey::Produce.key() && int(&body, "acks") == Some(0);
                line.insert("header".into(), header);
                line.insert("body".into(), body);
                if acks0 {
                    Some(std::iter::once(format!("{head} {summary}")).chain(records).collect::<Vec<_>>().join("\n"))
                } else {
                    let size: usize = records.iter().map(String::len).sum();
                    let records = if self.pending_records + size <= MAX_PENDING_RECORDS {
                        self.pending_records += size;
                        records
                    } else if records.is_empty() {
                        records
                    } else {
                        vec![format!("  ({} record line(s) not kept: {} MiB of them await responses)", records.len(), MAX_PENDING_RECORDS >> 20)]
                    };
                    if let Some(old) = self.pending.insert(key, Pending { at: seen.at, summary, records }) {
                        self.pending_records -= old.records.iter().map(String::len).sum::<usize>().min(self.pending_records);
                    }
                    None
                }
            }
            (true, Err(e)) => {
                line.insert("error".into(), json!(e.to_string()));
                self.pending.insert(key, Pending { at: seen.at, summary: "(undecodable)".into(), records: Vec::new() });
                Some(format!("{head} undecodable request: {e}"))
            }
            (false, decoded) => {
                let pending = self.pending.remove(&key);
                let ms = pending.as_ref().map(|p| seen.at.duration_since(p.at).as_secs_f64() * 1000.0);
                if let Some(ms) = ms {
                    line.insert("ms".into(), json!((ms * 1000.0).round() / 1000.0));
                    if let Some(s) = self.apis.get_mut(&seen.api_key) {
                        s.max_ms = Some(s.max_ms.map_or(ms, |m| m.max(ms)));
                        let slot = usize::try_from(s.timed).unwrap_or(usize::MAX) % MAX_API_LATENCIES;
                        match s.latencies_ms.get_mut(slot) {
                            Some(old) => *old = ms,
                            None => s.latencies_ms.push(ms),
                        }
                        s.timed += 1;
                    }
                }
                let (request_summary, mut records) = pending.map(|p| (p.summary, p.records)).unwrap_or_default();
                self.pending_records -= records.iter().map(String::len).sum::<usize>().min(self.pending_records);
                let (response_summary, errors) = match decoded {
                    Ok((header, mut body)) => {
                        let (text, errors) = self.response_summary(seen.api_key, &body);
                        records.extend(self.expand_records(seen.api_key, false, &mut body));
                        line.insert("header".into(), header);
                        line.insert("body".into(), body);
                        (text, errors)
                    }
                    Err(e) => {
                        line.insert("error".into(), json!(e.to_string()));
                        (format!("undecodable response: {e}"), 0)
                    }
                };
                if let Some(s) = self.apis.get_mut(&seen.api_key) {
                    s.errors += errors;
                }
                let req = if request_summary.is_empty() { String::new() } else { format!(" {request_summary}") };
                let ms = ms.map_or_else(String::new, |ms| format!(", {ms:.1} ms"));
                Some(std::iter::once(format!("{head}{req} -> {response_summary}{ms}")).chain(records).collect::<Vec<_>>().join("\n"))
            }
        };
        self.talkers.observe(seen.connection, &line);
        if let Some((_, page)) = &mut self.page {
            page.observe(seen.connection, seen.wall.duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64() * 1000.0), &line);
        }
        if json {
            return print_json(out, &Value::Object(line));
        }
        if let Some(text) = text {
            writeln!(out, "{text}").map_err(CliError::io)?;
        }
        Ok(())
    }

    /// A bare SASL token from the client, withheld: no api, version or correlation id (its
    /// bytes), one line even in text form (no response is paired with it).
    fn sasl_token(&mut self, seen: &Seen, json: bool, out: &mut impl Write) -> Result<(), CliError> {
        let token = self.secrets.sasl_token(seen.connection, true, &seen.payload);
        if json {
            let line = json!({"timestamp": seen.wall.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis()), "connection": seen.connection,
                "direction": "request", "size": seen.payload.len() + 4, "forwarded": mode_name(seen.mode), "saslToken": token});
            return print_json(out, &line);
        }
        let text = crate::secrets::sasl_summary(&json!({"authBytes": token})).unwrap_or_else(|| format!("{} bytes", seen.payload.len()));
        writeln!(out, "c{} SASL token (after SaslHandshake v0) {text}", seen.connection).map_err(CliError::io)
    }

    /// Per-api counts and latencies: a table, or with --json one object `{"summary": ...}`; and
    /// the `--html` page.
    fn summary(&mut self, json: bool, out: &mut impl Write) -> Result<(), CliError> {
        if let Some((path, page)) = &self.page {
            page.write(path, &self.talkers, self.target.as_ref())?;
        }
        let mut rows = Vec::new();
        let mut table = Table::new(&["API", "REQUESTS", "RESPONSES", "ERRORS", "UNDECODABLE", "BYTES-OUT", "BYTES-IN", "P50-MS", "P99-MS", "MAX-MS"]);
        for (key, s) in &mut self.apis {
            s.latencies_ms.sort_by(f64::total_cmp);
            let pct = |q: f64| crate::format::quantile(&s.latencies_ms, q);
            let (p50, p99, max) = (pct(0.5), pct(0.99), s.max_ms);
            let ms = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.1}"));
            table.row(vec![
                api_name(*key),
                s.requests.to_string(),
                s.responses.to_string(),
                s.errors.to_string(),
                s.undecodable.to_string(),
                s.request_bytes.to_string(),
                s.response_bytes.to_string(),
                ms(p50),
                ms(p99),
                ms(max),
            ]);
            rows.push(json!({"apiKey": key, "apiName": api_name(*key), "requests": s.requests, "responses": s.responses, "errors": s.errors,
                "undecodable": s.undecodable, "requestBytes": s.request_bytes, "responseBytes": s.response_bytes,
                "p50Ms": p50, "p99Ms": p99, "maxMs": max}));
        }
        if json {
            return print_json(
                out,
                &json!({"summary": {"frames": self.frames, "undecodable": self.undecodable, "producedRecords": self.produced_records,
                    "fetchedRecords": self.fetched_records, "unanswered": self.pending.len() as u64 + self.abandoned,
                    "notShown": self.not_shown, "apis": rows, "clients": self.talkers.json(self.target.as_ref())}}),
            );
        }
        writeln!(out).map_err(CliError::io)?;
        table.write(out)?;
        writeln!(
            out,
            "{} frames, {} undecodable; records produced {}, fetched {}; {} request(s) unanswered{}",
            self.frames,
            self.undecodable,
            self.produced_records,
            self.fetched_records,
            self.pending.len() as u64 + self.abandoned,
            match self.not_shown {
                0 => String::new(),
                n => format!("; {n} frame(s) forwarded but not shown (the output fell behind)"),
            }
        )
        .map_err(CliError::io)?;
        self.talkers.print_text(self.target.as_ref(), out)
    }
}

/// Frames as the proxy's hook would hand them over (`(request, api key, version, correlation
/// id, payload)` on connection 1), printed as `kwire tap` prints them (`records`: with
/// `--records N`), summary included: for tests of what the tap's output holds.
#[cfg(test)]
pub(crate) fn render(frames: &[(bool, i16, i16, i32, Vec<u8>)], json: bool, show_secrets: bool, records: Option<usize>) -> Vec<u8> {
    let mut state = State { secrets: Secrets::new(show_secrets), records, ..State::default() };
    let mut out = Vec::new();
    for (request, api_key, api_version, correlation_id, payload) in frames {
        let direction = if *request { FrameDirection::Request } else { FrameDirection::Response };
        let seen = Seen {
            connection: 1,
            direction,
            api_key: *api_key,
            api_version: *api_version,
            correlation_id: *correlation_id,
            mode: FrameMode::Pass,
            payload: payload.clone(),
            at: Instant::now(),
            wall: SystemTime::now(),
        };
        if let Err(e) = state.frame(seen, json, &mut out) {
            out.extend_from_slice(e.to_string().as_bytes());
        }
    }
    if let Err(e) = state.summary(json, &mut out) {
        out.extend_from_slice(e.to_string().as_bytes());
    }
    out
}

/// Error codes other than NONE anywhere in a response body.
fn count_errors(v: &Value) -> u64 {
    match v {
        Value::Object(o) => o.iter().map(|(k, v)| if k == "errorCode" { u64::from(v.as_i64().is_some_and(|c| c != 0)) } else { count_errors(v) }).sum(),
        Value::Array(a) => a.iter().map(count_errors).sum(),
        _ => 0,
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn records_are_counted_without_trusting_the_lengths() {
        // Garbage, a length past the end, a negative length: no records, no panic.
        for bytes in [vec![1u8, 2, 3], vec![0; 8].into_iter().chain([0x7f, 0xff, 0xff, 0xff]).collect(), vec![0xff; 70]] {
            let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
            assert_eq!(count_records(&json!(b64)).0, 0);
        }
        // A v2 batch header claiming 3 records.
        let mut batch = vec![0u8; 61];
        batch[8..12].copy_from_slice(&49i32.to_be_bytes());
        batch[16] = 2;
        batch[57..61].copy_from_slice(&3i32.to_be_bytes());
        let b64 = base64::engine::general_purpose::STANDARD.encode(&batch);
        assert_eq!(count_records(&json!(b64)), (3, 61));
    }
}
