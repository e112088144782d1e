//! A Kafka proxy on kwire: one local listener per broker, every broker endpoint in every
//! response rewritten to the listener standing for it (so clients keep talking through the
//! proxy), ApiVersions mediated to what this build decodes, everything else passed on byte for
//! byte, and optionally a tenant's topic names prefixed on the way to the broker and stripped on
//! the way back.
//!
//! ```text
//! cargo run --example proxy --features tokio -- --upstream 127.0.0.1:9092 [--listen 127.0.0.1]
//!     [--advertise HOST] [--port N] [--tenant PREFIX] [--max-connections N] [--max-frame BYTES]
//!     [--max-listeners N] [--trace DIR]
//! ```
//!
//! It prints `proxy: listening LOCAL -> UPSTREAM` for each listener (the first is the bootstrap
//! one, on `--port`; brokers found in responses get listeners on free ports as they appear).
//!
//! - **Which frames are decoded**: responses of the api versions that can carry an endpoint
//!   (`ApiKey::response_endpoint_versions`, derived from the specs) and ApiVersions; with
//!   `--tenant`, every request and response this build knows. The rest pass as the bytes that
//!   came; a decoded frame the proxy did not change is sent as it came too.
//! - **SASL** passes through: its frames are ordinary Kafka frames the proxy does not change.
//!   **TLS** is not terminated: a connection opening with a TLS record is relayed as opaque
//!   bytes, so endpoints inside it are not rewritten (terminate TLS in front of the proxy, or
//!   advertise addresses that resolve to it).
//! - **Limits**: `--max-connections` (further clients are closed at once), `--max-frame` (a
//!   larger frame closes its connection), at most 4096 requests in flight per connection, and
//!   `--max-listeners` brokers.
//! - **Errors** close only the connection they happen on; the listeners keep serving.
//! - **`--tenant PREFIX`**: topic names (every field the specs mark `entityType: topicName`)
//!   are prefixed in requests and stripped in responses; Metadata and DescribeTopicPartitions
//!   list only the tenant's topics; topic ids are checked against the ids the proxy saw the
//!   broker give the tenant's topics, and any other id is sent as the zero id, which the broker
//!   answers with UNKNOWN_TOPIC_ID. Topic config resources (Describe/Alter/IncrementalAlterConfigs)
//!   are prefixed too; ACLs and group ids are not.
//! - **`--trace DIR`**: every frame in both directions, one file per connection (for the tests
//!   in `tests/proxy_real.rs`; costly).

mod conn;
mod rewrite;
mod trace;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kwire::codec::Selection;
use kwire::ApiKey;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// What the command line sets.
#[derive(Debug, Clone)]
pub struct Config {
    /// The bootstrap broker(s): `host:port`.
    pub upstream: String,
    /// The address the listeners bind to.
    pub listen: String,
    /// The host advertised to clients in place of the brokers'.
    pub advertise: String,
    /// The bootstrap listener's port (0: any free port).
    pub port: u16,
    /// The tenant's topic prefix.
    pub tenant: Option<String>,
    /// Client connections served at once.
    pub max_connections: usize,
    /// The largest frame (after its size prefix) either side may send.
    pub max_frame: usize,
    /// Brokers (listeners) the proxy stands in for.
    pub max_listeners: usize,
    /// Where to write frame traces.
    pub trace: Option<PathBuf>,
}

fn parse_args() -> Result<Config, String> {
    let mut config = Config {
        upstream: String::new(),
        listen: "127.0.0.1".into(),
        advertise: String::new(),
        port: 0,
        tenant: None,
        max_connections: 1024,
        max_frame: 100 * 1024 * 1024,
        max_listeners: 64,
        trace: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        let number = |v: String| v.parse::<usize>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--upstream" => config.upstream = value()?,
            "--listen" => config.listen = value()?,
            "--advertise" => config.advertise = value()?,
            "--port" => config.port = value()?.parse().map_err(|e| format!("--port: {e}"))?,
            "--tenant" => config.tenant = Some(value()?).filter(|t| !t.is_empty()),
            "--max-connections" => config.max_connections = number(value()?)?,
            "--max-frame" => config.max_frame = number(value()?)?,
            "--max-listeners" => config.max_listeners = number(value()?)?,
            "--trace" => config.trace = Some(value()?.into()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if config.upstream.is_empty() {
        return Err("--upstream HOST:PORT is required".into());
    }
    if config.advertise.is_empty() {
        config.advertise = config.listen.clone();
    }
    Ok(config)
}

/// What every connection shares.
pub struct Shared {
    /// The configuration.
    pub config: Config,
    /// Requests decoded (only with a tenant).
    pub requests: Selection,
    /// Responses decoded.
    pub responses: Selection,
    /// Upstream `host:port` to the local port standing for it.
    routes: Mutex<HashMap<(String, u16), u16>>,
    connections: Arc<Semaphore>,
    next_connection: AtomicU64,
    /// The tenant's state, with `--tenant`.
    pub tenant: Option<rewrite::Tenant>,
    /// Frame traces, with `--trace`.
    pub trace: Option<trace::Traces>,
}

impl Shared {
    fn new(config: Config) -> Shared {
        let tenant = config.tenant.clone().map(rewrite::Tenant::new);
        let (requests, responses) = if tenant.is_some() {
            (Selection::all(), Selection::all())
        } else {
            // Endpoints only where the specs can put one, and ApiVersions to mediate.
            let endpoints = ApiKey::ALL
                .iter()
                .filter(|k| !k.response_endpoint_versions().is_empty())
                .fold(Selection::none(), |s, k| s.versions(*k, k.response_endpoint_versions()));
            (Selection::none(), endpoints.api(ApiKey::ApiVersions))
        };
        let trace = config.trace.clone().map(trace::Traces::new);
        Shared {
            connections: Arc::new(Semaphore::new(config.max_connections)),
            config,
            requests,
            responses,
            routes: Mutex::new(HashMap::new()),
            next_connection: AtomicU64::new(0),
            tenant,
            trace,
        }
    }

    /// The local port standing for the broker at `host:port`, binding a listener for it the
    /// first time it is seen.
    pub fn route(self: &Arc<Self>, host: &str, port: u16) -> Result<u16, ProxyError> {
        let key = (host.to_string(), port);
        let mut routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(local) = routes.get(&key) {
            return Ok(*local);
        }
        if routes.len() >= self.config.max_listeners {
            return Err(ProxyError::TooManyBrokers(self.config.max_listeners));
        }
        let listener = bind(&self.config.listen, 0)?;
        let local = listener.local_addr().map_err(|e| ProxyError::io("reading a listener's address", e))?;
        routes.insert(key, local.port());
        drop(routes);
        spawn_listener(self.clone(), listener, format!("{host}:{port}"), local);
        Ok(local.port())
    }
}

fn bind(host: &str, port: u16) -> Result<TcpListener, ProxyError> {
    let std = std::net::TcpListener::bind((host, port)).map_err(|e| ProxyError::io(format!("binding {host}:{port}"), e))?;
    std.set_nonblocking(true).map_err(|e| ProxyError::io("setting a listener non-blocking", e))?;
    TcpListener::from_std(std).map_err(|e| ProxyError::io("registering a listener", e))
}

fn spawn_listener(shared: Arc<Shared>, listener: TcpListener, upstream: String, local: SocketAddr) {
    println!("proxy: listening {local} -> {upstream}");
    tokio::spawn(async move {
        loop {
            let (socket, peer) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: back off, keep the listener.
                    eprintln!("proxy: accept on {local}: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let Ok(permit) = shared.connections.clone().try_acquire_owned() else {
                eprintln!("proxy: {} connections open; closing {peer}", shared.config.max_connections);
                continue;
            };
            let id = shared.next_connection.fetch_add(1, Ordering::Relaxed);
            let (shared, upstream) = (shared.clone(), upstream.clone());
            tokio::spawn(async move {
                if let Err(e) = conn::serve(&shared, socket, &upstream, id).await {
                    eprintln!("proxy: connection {id} from {peer}: {e}");
                }
                drop(permit);
            });
        }
    });
}

/// Why a connection was closed.
#[derive(Debug)]
pub enum ProxyError {
    /// A socket operation failed.
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
    /// A frame's size prefix is negative or over `--max-frame`.
    FrameSize {
        /// The size claimed.
        size: i64,
        /// The limit.
        max: usize,
    },
    /// A request header that does not parse.
    Header(kwire::codec::CodecError),
    /// A body the proxy had to decode that does not.
    Decode {
        /// Request or response.
        what: &'static str,
        /// The api.
        api: ApiKey,
        /// Its version.
        version: i16,
        /// The error.
        source: kwire::DecodeError,
    },
    /// A rewritten message that does not encode.
    Encode(kwire::EncodeError),
    /// The proxy's own answer (KIP-511) that does not encode.
    Answer(kwire::codec::CodecError),
    /// A response to no request in flight.
    UnexpectedResponse(i32),
    /// A response frame too short for its header.
    ShortResponse(usize),
    /// More requests in flight than the proxy tracks.
    TooManyInFlight,
    /// More brokers than `--max-listeners`.
    TooManyBrokers(usize),
}

impl ProxyError {
    fn io(context: impl Into<String>, source: std::io::Error) -> ProxyError {
        ProxyError::Io { context: context.into(), source }
    }
}

impl std::fmt::Display for ProxyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProxyError::Io { context, source } => write!(f, "{context}: {source}"),
            ProxyError::FrameSize { size, max } => write!(f, "frame size {size} outside 0..={max}"),
            ProxyError::Header(e) => write!(f, "request header: {e}"),
            ProxyError::Decode { what, api, version, source } => write!(f, "{what} {api:?} v{version}: {source}"),
            ProxyError::Encode(e) => write!(f, "re-encoding: {e}"),
            ProxyError::Answer(e) => write!(f, "answering an ApiVersions request: {e}"),
            ProxyError::UnexpectedResponse(c) => write!(f, "a response with correlation id {c} to no request in flight"),
            ProxyError::ShortResponse(n) => write!(f, "a response frame of {n} bytes has no room for its header"),
            ProxyError::TooManyInFlight => write!(f, "more than {} requests in flight", conn::MAX_IN_FLIGHT),
            ProxyError::TooManyBrokers(n) => write!(f, "more than {n} brokers to stand in for (--max-listeners)"),
        }
    }
}

impl std::error::Error for ProxyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ProxyError::Io { source, .. } => Some(source),
            ProxyError::Header(e) | ProxyError::Answer(e) => Some(e),
            ProxyError::Decode { source, .. } => Some(source),
            ProxyError::Encode(e) => Some(e),
            _ => None,
        }
    }
}

#[tokio::main]
async fn main() {
    let config = match parse_args() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("proxy: {e}");
            std::process::exit(2);
        }
    };
    let shared = Arc::new(Shared::new(config));
    // The bootstrap listener stands for the first upstream address given.
    let upstream = shared.config.upstream.split(',').next().unwrap_or_default().to_string();
    let Some((host, port)) = upstream.rsplit_once(':').and_then(|(h, p)| Some((h.to_string(), p.parse::<u16>().ok()?))) else {
        eprintln!("proxy: --upstream {upstream}: expected host:port");
        std::process::exit(2);
    };
    let listener = match bind(&shared.config.listen, shared.config.port) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("proxy: {e}");
            std::process::exit(1);
        }
    };
    let local = match listener.local_addr() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("proxy: {e}");
            std::process::exit(1);
        }
    };
    shared.routes.lock().unwrap_or_else(|p| p.into_inner()).insert((host, port), local.port());
    spawn_listener(shared.clone(), listener, upstream, local);
    let _ = tokio::signal::ctrl_c().await;
}
