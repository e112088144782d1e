//! A Kafka proxy on kwire: one local listener per broker, every broker endpoint in every
//! response rewritten to the listener standing for it (so clients keep talking through the
//! proxy), ApiVersions mediated to what this build decodes, everything else passed on byte for
//! byte, and optionally a tenant's topic names prefixed on the way to the broker and stripped on
//! the way back. For tests it can also misbehave on purpose: [`FaultConfig`] drops, delays,
//! stalls, resets and truncates connections, chosen by a seeded random generator.
//!
//! The library is what the `kwire-proxy` binary runs; embed it to put a proxy inside a program
//! or a test:
//!
//! ```no_run
//! use kwire_proxy::{Config, Event, Proxy};
//!
//! # async fn run() -> Result<(), kwire_proxy::ProxyError> {
//! let config = Config::new("127.0.0.1:9092")
//!     .tenant("acme.")
//!     .on_event(|event| {
//!         if let Event::Listening { local, upstream } = event {
//!             println!("{local} stands for {upstream}");
//!         }
//!     });
//! let proxy = Proxy::start(config).await?;
//! println!("clients bootstrap from {}", proxy.bootstrap());
//! // ... the proxy serves until it is dropped or shut down.
//! proxy.shutdown();
//! # Ok(())
//! # }
//! ```
//!
//! - **Which frames are decoded**: responses of the api versions that can carry an endpoint
//!   (`ApiKey::response_endpoint_versions`, derived from the specs) and ApiVersions; with a
//!   tenant, every request and response this build knows. The rest pass as the bytes that
//!   came; a decoded frame the proxy did not change is sent as it came too. Frames are split
//!   by kwire's [`FrameDecoder`](kwire::codec::FrameDecoder), which reserves room as the bytes
//!   arrive, so a size prefix alone costs at most 64 KiB.
//! - **SASL** passes through: its frames are ordinary Kafka frames the proxy does not change.
//!   **TLS** is terminated when [`Config::tls`] gives the proxy a certificate (and spoken to the
//!   brokers with [`Config::upstream_tls`]); without it a connection opening with a TLS record
//!   is relayed as opaque bytes, so endpoints inside it are not rewritten.
//! - **Limits** ([`Config`]): connections (further clients are closed at once), frame size (a
//!   larger frame closes its connection), at most [`MAX_IN_FLIGHT`] requests in flight per
//!   connection, and brokers (listeners).
//! - **Errors** close only the connection they happen on ([`Event::ConnectionClosed`]); the
//!   listeners keep serving.
//! - **Tenant** ([`Config::tenant`]): topic names (every field the specs mark
//!   `entityType: topicName`) are prefixed in requests and stripped in responses; Metadata and
//!   DescribeTopicPartitions list only the tenant's topics; topic ids are checked against the
//!   ids the proxy saw the broker give the tenant's topics, and any other id is sent as the zero
//!   id, which the broker answers with UNKNOWN_TOPIC_ID. Topic config resources
//!   (Describe/Alter/IncrementalAlterConfigs) are prefixed too; ACLs and group ids are not.
//! - **Trace** ([`Config::trace`]): every frame in both directions, one file per connection
//!   (for tests; costly). **Observers** ([`Config::on_frame`]): a hook that sees every frame
//!   as read and as forwarded (what `kwire tap` prints).
//! - **Faults** ([`Config::faults`], [`fault`]): per connection, by a seeded generator, a
//!   connection dropped, delayed, stalled half-open, reset mid-frame or cut short.

#![warn(missing_docs)]

mod config;
mod conn;
mod error;
pub mod fault;
mod rewrite;
mod tls;
mod trace;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use kwire::codec::Selection;
use kwire::ApiKey;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

pub use config::{Config, EventHook, FrameHook, USAGE};
pub use conn::MAX_IN_FLIGHT;
pub use error::ProxyError;
pub use fault::{FaultConfig, FaultCounts, FaultKind};
pub use tls::{Identity, ServerTls, UpstreamTls};
pub use trace::{carries_secrets, Frame, FrameDirection, FrameMode};

/// What the proxy reports as it runs, to the hook set with [`Config::on_event`].
#[derive(Debug)]
#[non_exhaustive]
pub enum Event {
    /// A listener is serving: the bootstrap one, or one for a broker a response named.
    Listening {
        /// Its local address.
        local: SocketAddr,
        /// The broker (`host:port`) it stands for.
        upstream: String,
    },
    /// A connection was closed by an error (an ordinary close is not reported).
    ConnectionClosed {
        /// The connection's number.
        id: u64,
        /// The client's address.
        peer: SocketAddr,
        /// Why.
        error: ProxyError,
    },
    /// A client was closed at once: [`Config::max_connections`] are open.
    Refused {
        /// The client's address.
        peer: SocketAddr,
        /// The limit.
        open: usize,
    },
    /// Accepting on a listener failed (out of file descriptors and the like); it retries.
    AcceptFailed {
        /// The listener.
        local: SocketAddr,
        /// The error.
        error: std::io::Error,
    },
    /// A connection's trace file could not be written; its frames go untraced.
    TraceFailed {
        /// The file.
        path: std::path::PathBuf,
        /// The error.
        error: std::io::Error,
    },
    /// The fault injector struck a connection.
    Fault {
        /// The connection's number.
        id: u64,
        /// What it did.
        kind: FaultKind,
    },
}

/// A running proxy. Dropping it (or [`Proxy::shutdown`]) closes its listeners and connections.
pub struct Proxy {
    shared: Arc<Shared>,
    bootstrap: SocketAddr,
}

impl Proxy {
    /// Binds the bootstrap listener (for the first address of [`Config::upstream`]) and starts
    /// serving on the current tokio runtime.
    pub async fn start(config: Config) -> Result<Proxy, ProxyError> {
        let upstream = config.upstream.split(',').next().unwrap_or_default().trim().to_string();
        let Some((host, port)) = upstream.rsplit_once(':').and_then(|(h, p)| Some((h.to_string(), p.parse::<u16>().ok()?))) else {
            return Err(ProxyError::Config(format!("upstream {upstream:?}: expected host:port")));
        };
        let shared = Arc::new(Shared::new(config)?);
        let listener = bind(&shared.config.listen, shared.config.port)?;
        let local = listener.local_addr().map_err(|e| ProxyError::io("reading a listener's address", e))?;
        shared.routes().insert((host, port), local.port());
        spawn_listener(shared.clone(), listener, upstream, local);
        Ok(Proxy { shared, bootstrap: local })
    }

    /// The bootstrap listener's address: what clients take as `bootstrap.servers`.
    pub fn bootstrap(&self) -> SocketAddr {
        self.bootstrap
    }

    /// Every listener so far, as (local address, the broker's `host:port`), the bootstrap one
    /// first.
    pub fn listeners(&self) -> Vec<(SocketAddr, String)> {
        self.shared.listeners.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// What the fault injector has done so far (all zero without [`Config::faults`]).
    pub fn fault_counts(&self) -> FaultCounts {
        self.shared.faults.as_ref().map(|f| f.counts()).unwrap_or_default()
    }

    /// Turns fault injection on or off (it starts on when [`Config::faults`] is set). Off,
    /// connections opened from now on are never struck, and open ones are spared from their
    /// next window on; on again, those opened while it was on meet faults again from their next
    /// window, and new ones from their first.
    pub fn set_faults_enabled(&self, enabled: bool) {
        if let Some(f) = &self.shared.faults {
            f.set_enabled(enabled);
        }
    }

    /// Closes every listener and connection (idempotent; also done on drop).
    pub fn shutdown(&self) {
        self.shared.shutdown.send_replace(true);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// What every connection shares.
pub(crate) struct Shared {
    /// The configuration.
    pub config: Config,
    /// Requests decoded (only with a tenant).
    pub requests: Selection,
    /// Responses decoded.
    pub responses: Selection,
    /// Upstream `host:port` to the local port standing for it.
    routes: Mutex<HashMap<(String, u16), u16>>,
    listeners: Mutex<Vec<(SocketAddr, String)>>,
    connections: Arc<Semaphore>,
    next_connection: AtomicU64,
    /// The tenant's state.
    pub tenant: Option<rewrite::Tenant>,
    /// Frame traces.
    pub trace: Option<trace::Traces>,
    /// The fault injector.
    pub faults: Option<fault::Injector>,
    /// Terminates clients' TLS ([`Config::tls`]).
    pub tls: Option<tokio_rustls::TlsAcceptor>,
    /// Speaks TLS to the brokers ([`Config::upstream_tls`]).
    pub upstream_tls: Option<tokio_rustls::TlsConnector>,
    shutdown: watch::Sender<bool>,
}

impl Shared {
    fn new(config: Config) -> Result<Shared, ProxyError> {
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
        let trace = config.trace.clone().map(|dir| trace::Traces::new(dir, config.trace_secrets)).transpose()?;
        let faults = config.faults.clone().map(fault::Injector::new);
        let tls = config.tls.as_ref().map(tls::ServerTls::acceptor).transpose()?;
        let upstream_tls = config.upstream_tls.as_ref().map(tls::UpstreamTls::connector).transpose()?;
        Ok(Shared {
            connections: Arc::new(Semaphore::new(config.max_connections)),
            config,
            requests,
            responses,
            routes: Mutex::new(HashMap::new()),
            listeners: Mutex::new(Vec::new()),
            next_connection: AtomicU64::new(0),
            tenant,
            trace,
            faults,
            tls,
            upstream_tls,
            shutdown: watch::Sender::new(false),
        })
    }

    fn routes(&self) -> MutexGuard<'_, HashMap<(String, u16), u16>> {
        self.routes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reports `event` to the hook, if any.
    pub fn event(&self, event: Event) {
        if let Some(hook) = &self.config.on_event {
            hook(&event);
        }
    }

    /// The local port standing for the broker at `host:port`, binding a listener for it the
    /// first time it is seen.
    pub fn route(self: &Arc<Self>, host: &str, port: u16) -> Result<u16, ProxyError> {
        let key = (host.to_string(), port);
        let mut routes = self.routes();
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

    /// Resolves when the proxy shuts down.
    async fn closed(&self) {
        let mut rx = self.shutdown.subscribe();
        let _ = rx.wait_for(|closed| *closed).await;
    }
}

fn bind(host: &str, port: u16) -> Result<TcpListener, ProxyError> {
    let std = std::net::TcpListener::bind((host, port)).map_err(|e| ProxyError::io(format!("binding {host}:{port}"), e))?;
    std.set_nonblocking(true).map_err(|e| ProxyError::io("setting a listener non-blocking", e))?;
    TcpListener::from_std(std).map_err(|e| ProxyError::io("registering a listener", e))
}

fn spawn_listener(shared: Arc<Shared>, listener: TcpListener, upstream: String, local: SocketAddr) {
    shared.listeners.lock().unwrap_or_else(|p| p.into_inner()).push((local, upstream.clone()));
    shared.event(Event::Listening { local, upstream: upstream.clone() });
    tokio::spawn(async move {
        let accept = async {
            loop {
                let (socket, peer) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        // Out of file descriptors and the like: back off, keep the listener.
                        shared.event(Event::AcceptFailed { local, error });
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let Ok(permit) = shared.connections.clone().try_acquire_owned() else {
                    shared.event(Event::Refused { peer, open: shared.config.max_connections });
                    continue;
                };
                let id = shared.next_connection.fetch_add(1, Ordering::Relaxed);
                let (shared, upstream) = (shared.clone(), upstream.clone());
                tokio::spawn(async move {
                    let result = tokio::select! {
                        r = conn::serve(&shared, socket, &upstream, id) => r,
                        () = shared.closed() => Ok(()),
                    };
                    if let Err(error) = result {
                        shared.event(Event::ConnectionClosed { id, peer, error });
                    }
                    drop(permit);
                });
            }
        };
        tokio::select! {
            () = accept => {}
            () = shared.closed() => {}
        }
    });
}
