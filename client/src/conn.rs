//! One broker connection: TCP or TLS, ApiVersions negotiation, SASL, pipelined requests.
//!
//! A connection is a task owning a `Framed` stream with kwire's [`ClientCodec`]; callers
//! send requests through a channel and wait for their response by correlation id, so many
//! requests are in flight at once. A frame the codec refuses closes that connection (every
//! waiting request gets the error); other connections go on. So does a request that times out,
//! as in Java's `NetworkClient`: a broker that stopped answering (or a half-open peer) is given
//! up on, every request in flight on the connection fails with [`Error::Timeout`] (retriable),
//! and the next request opens a new connection. Sockets have TCP keepalive on, so an idle
//! connection to a vanished peer is found too.

use std::collections::{BTreeMap, HashMap};
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use kwire::codec::{ClientCodec, CodecError, OutboundRequest, ResponseFrame};
use kwire::messages::{ApiVersionsRequest, SaslAuthenticateRequest, SaslHandshakeRequest};
use kwire::negotiate::{negotiate, NegotiateOptions, Negotiated};
use kwire::{ApiKey, ApiRequest, ByteString, Bytes, ErrorCode, RequestKind, ResponseKind, VersionRange};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, RwLock};
use tokio_util::codec::Framed;
use tracing::{debug, info, trace, warn, Instrument};

use crate::error::{Error, Result, Unexpected};
use crate::metrics::ConnectionMetrics;
use crate::sasl::{OAuthBearer, Sasl, ScramClient};
#[cfg(feature = "tls")]
use crate::tls::TlsConfig;

/// How to connect to brokers.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// The client id sent in every request header.
    pub client_id: String,
    /// TLS, or plain TCP when `None` (feature `tls`).
    #[cfg(feature = "tls")]
    pub tls: Option<TlsConfig>,
    /// SASL authentication, or none.
    pub sasl: Option<Sasl>,
    /// How long a TCP connect plus TLS handshake may take.
    pub connect_timeout: Duration,
    /// How long any one response may take.
    pub request_timeout: Duration,
    /// The largest response frame accepted.
    pub max_frame_size: usize,
    /// Opens the byte stream to a broker in place of TCP (TLS and SASL still run over it):
    /// an in-memory transport such as kwire-fake's, for tests that need no port.
    pub connector: Option<Connector>,
    /// The seed of the client's random choices (backoff jitter, sticky partitions,
    /// re-authentication timing, the member ids of its consumers' KIP-848 and share groups),
    /// for tests that replay a run exactly; from the OS when `None`. Member ids are drawn per
    /// seed and client id: members of one group need clients that differ in one of them.
    pub seed: Option<u64>,
    /// The ApiVersions version each broker (by address) answered at, shared by the connections
    /// made with these options: a broker older than this build (Kafka 3.9 refuses this build's
    /// newest ApiVersions, v5) is asked at its version from the second connection on, one round
    /// trip fewer.
    pub api_versions_seen: ApiVersionsSeen,
}

/// The ApiVersions request version brokers took, by address ([`ConnectOptions::api_versions_seen`]);
/// clones share it.
#[derive(Debug, Clone, Default)]
pub struct ApiVersionsSeen(Arc<Mutex<HashMap<String, i16>>>);

impl ApiVersionsSeen {
    fn get(&self, addr: &str) -> Option<i16> {
        crate::sync::lock(&self.0).get(addr).copied()
    }

    fn set(&self, addr: &str, version: i16) {
        let mut seen = crate::sync::lock(&self.0);
        // Bounded by the brokers a client is told of; a stale entry costs one refusal.
        if seen.len() < 4096 || seen.contains_key(addr) {
            seen.insert(addr.to_owned(), version);
        }
    }
}

/// Any stream a connection can run over: TCP, TLS, an in-memory pipe.
pub trait Transport: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Transport for T {}

/// The future a [`Connector`] returns.
pub type Connecting = Pin<Box<dyn std::future::Future<Output = std::io::Result<Box<dyn Transport>>> + Send>>;

/// Opens the stream to a broker's `host:port`, in place of a TCP connection
/// ([`ConnectOptions::connector`]).
///
/// ```
/// use kwire_client::{ClientConfig, Connector};
///
/// // Every broker address reaches one in-memory pipe's far end (a test's fake broker).
/// let connector = Connector::new(|addr: &str| {
///     let addr = addr.to_owned();
///     async move {
///         let (client, _broker) = tokio::io::duplex(64 << 10);
///         let _ = addr; // a fake cluster picks its broker by the address
///         Ok(client)
///     }
/// });
/// let config = ClientConfig::new("broker-0:9092").connector(connector);
/// # let _ = config;
/// ```
#[derive(Clone)]
pub struct Connector(Arc<dyn Fn(&str) -> Connecting + Send + Sync>);

impl Connector {
    /// A connector from an async function of the address.
    pub fn new<F, Fut, T>(connect: F) -> Connector
    where
        F: Fn(&str) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = std::io::Result<T>> + Send + 'static,
        T: Transport + 'static,
    {
        Connector(Arc::new(move |addr| {
            let fut = connect(addr);
            Box::pin(async move { fut.await.map(|t| Box::new(t) as Box<dyn Transport>) })
        }))
    }

    fn connect(&self, addr: &str) -> Connecting {
        (self.0)(addr)
    }
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Connector(..)")
    }
}

impl ConnectOptions {
    fn uses_tls(&self) -> bool {
        #[cfg(feature = "tls")]
        return self.tls.is_some();
        #[cfg(not(feature = "tls"))]
        false
    }
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            client_id: "kwire-client".into(),
            #[cfg(feature = "tls")]
            tls: None,
            sasl: None,
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            max_frame_size: kwire::codec::DEFAULT_MAX_FRAME_SIZE,
            connector: None,
            seed: None,
            api_versions_seen: ApiVersionsSeen::default(),
        }
    }
}

/// The versions this client can use of an api, beyond what the build knows: magic v2 record
/// batches only (Produce 3+, Fetch 4+; Produce v13+ names topics by id, and the producer caps a
/// request at v12 when a topic of it has no id in the metadata, as Java's does),
/// Metadata with auto-creation control (4+), SaslHandshake v1 (tokens in SaslAuthenticate),
/// AddPartitionsToTxn up to v3 (v4+ is the brokers' batched form, as Java's client uses it).
pub(crate) fn client_versions(api: ApiKey) -> VersionRange {
    match api {
        ApiKey::AddPartitionsToTxn => VersionRange::new(0, 3),
        ApiKey::Produce => VersionRange::new(3, i16::MAX),
        ApiKey::Fetch => VersionRange::new(4, i16::MAX),
        ApiKey::Metadata => VersionRange::new(4, i16::MAX),
        ApiKey::SaslHandshake => VersionRange::new(1, 1),
        // KIP-932's v0 was Kafka 4.0's early access, removed in 4.1: share groups from v1.
        ApiKey::ShareGroupHeartbeat | ApiKey::ShareFetch | ApiKey::ShareAcknowledge => VersionRange::new(1, i16::MAX),
        _ => VersionRange::new(0, i16::MAX),
    }
}

// The codec's frame decoder reserves room for a frame as its bytes arrive (at most 64 KiB ahead),
// so a broker claiming a 100 MB frame and sending 10 bytes costs little (tests/hostile.rs).
type Stream = Framed<Pin<Box<dyn Transport>>, ClientCodec>;

type Reply = oneshot::Sender<Result<Option<ResponseFrame>>>;

struct Command {
    request: OutboundRequest,
    reply: Reply,
}

/// TCP keepalive: the first probe after this long idle, then every [`KEEPALIVE_INTERVAL`].
const KEEPALIVE_TIME: Duration = Duration::from_secs(60);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);

/// Turns TCP keepalive on (Java's client sets `SO_KEEPALIVE` on every socket).
fn set_keepalive(tcp: &TcpStream) -> std::io::Result<()> {
    let keepalive = socket2::TcpKeepalive::new().with_time(KEEPALIVE_TIME).with_interval(KEEPALIVE_INTERVAL);
    socket2::SockRef::from(tcp).set_tcp_keepalive(&keepalive)
}

struct Shared {
    addr: String,
    options: ConnectOptions,
    tx: mpsc::Sender<Command>,
    next_correlation_id: AtomicI32,
    closed: AtomicBool,
    /// Why the connection closed, for requests that come after.
    close_reason: Mutex<Option<Error>>,
    /// Successful SASL authentications (1 + re-authentications).
    authentications: AtomicU32,
    /// The session lifetime the broker set at the last authentication, in ms (0: none).
    session_lifetime_ms: std::sync::atomic::AtomicI64,
    /// Every ordinary request holds this for reading until its response; re-authentication
    /// takes it for writing, so it runs alone on the connection (KIP-368).
    gate: Arc<RwLock<()>>,
    negotiated: Mutex<Option<Arc<Versions>>>,
    /// Wakes the io task to close the connection (a request timed out).
    abort: Arc<tokio::sync::Notify>,
    metrics: Arc<ConnectionMetrics>,
}

/// A request [`dispatch`](Connection::dispatch)ed on a connection, its response to come.
pub(crate) struct InFlight<R> {
    conn: Connection,
    rx: oneshot::Receiver<Result<Option<ResponseFrame>>>,
    timeout: Duration,
    /// Held until the response, as every ordinary request holds the gate.
    _gate: tokio::sync::OwnedRwLockReadGuard<()>,
    _request: PhantomData<fn() -> R>,
}

impl<R: ApiRequest> InFlight<R> {
    /// The response, within the request timeout.
    pub(crate) async fn response(self) -> Result<R::Response> {
        typed::<R>(self.conn.wait(R::API, self.rx, self.timeout).await?.map(|f| f.body))
    }

    /// The response if one is due (none for Produce with acks=0), within the request timeout.
    pub(crate) async fn response_if_any(self) -> Result<Option<R::Response>> {
        match self.conn.wait(R::API, self.rx, self.timeout).await? {
            Some(frame) => typed::<R>(Some(frame.body)).map(Some),
            None => Ok(None),
        }
    }
}

/// The response body of `R`, or an error saying what came instead.
pub(crate) fn typed<R: ApiRequest>(body: Option<ResponseKind>) -> Result<R::Response> {
    match body {
        Some(body) => R::Response::try_from(body).map_err(|other| Error::unexpected(R::API, Unexpected::OtherApi(other.api_key()))),
        None => Err(Error::unexpected(R::API, Unexpected::NoResponse)),
    }
}

/// What one broker supports, from its ApiVersions response.
#[derive(Debug)]
pub struct Versions {
    negotiated: Negotiated,
    theirs: HashMap<i16, VersionRange>,
    /// The cluster's finalized feature levels (KIP-584, ApiVersions v3+): name, max level.
    finalized: Vec<(String, i16)>,
}

impl Versions {
    fn new(response: &kwire::messages::ApiVersionsResponse) -> Versions {
        let negotiated = negotiate(response, NegotiateOptions::default());
        let theirs = response.api_keys.iter().map(|k| (k.api_key, VersionRange::new(k.min_version, k.max_version))).collect();
        let finalized = response.finalized_features.iter().map(|f| (f.name.to_string(), f.max_version_level)).collect();
        Versions { negotiated, theirs, finalized }
    }

    /// The finalized level of a feature (`transaction.version`, say) as the broker reported
    /// it, `None` when it reported none.
    pub(crate) fn finalized_feature(&self, name: &str) -> Option<i16> {
        self.finalized.iter().find(|(n, _)| n == name).map(|&(_, level)| level)
    }

    /// The version to use for `api`: the highest this build, this client and the broker
    /// support, or a typed error naming the ranges when there is none.
    pub fn version(&self, api: ApiKey) -> Result<i16> {
        let common = self.negotiated.version(api).map_err(Error::negotiation)?;
        let limit = client_versions(api);
        let theirs = self.theirs.get(&api.key()).copied().unwrap_or(VersionRange::new(0, common));
        let v = common.min(limit.hi);
        if v < limit.lo || v < theirs.lo {
            return Err(Error::UnsupportedVersion {
                api,
                reason: if limit.hi == i16::MAX {
                    format!("the broker supports {theirs}, this client needs {} or later", limit.lo)
                } else {
                    format!("the broker supports {theirs}, this client needs {limit}")
                },
            });
        }
        Ok(v)
    }
}

/// A connection to one broker. Cheap to clone; closed when the last clone is dropped.
#[derive(Clone)]
pub struct Connection {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Connection({})", self.shared.addr)
    }
}

#[cfg(feature = "tls")]
fn host_of(addr: &str) -> &str {
    // "[::1]:9092", "host:9092"
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    host.trim_start_matches('[').trim_end_matches(']')
}

impl Connection {
    /// Connects to `addr` (`host:port`), negotiates versions and authenticates.
    pub async fn connect(addr: &str, options: &ConnectOptions) -> Result<Connection> {
        let span = tracing::info_span!("kafka.connect", addr = %addr, tls = options.uses_tls(), sasl = options.sasl.as_ref().map(Sasl::mechanism_name));
        Self::connect_inner(addr, options).instrument(span).await
    }

    async fn connect_inner(addr: &str, options: &ConnectOptions) -> Result<Connection> {
        let io_err = |e: std::io::Error| Error::io(addr, e);
        let timed_out = || Error::io(addr, std::io::Error::new(std::io::ErrorKind::TimedOut, format!("connect timed out after {:?}", options.connect_timeout)));
        let tcp: Box<dyn Transport> = match &options.connector {
            Some(connector) => tokio::time::timeout(options.connect_timeout, connector.connect(addr)).await.map_err(|_| timed_out())?.map_err(io_err)?,
            None => {
                let tcp = tokio::time::timeout(options.connect_timeout, TcpStream::connect(addr)).await.map_err(|_| timed_out())?.map_err(io_err)?;
                tcp.set_nodelay(true).map_err(io_err)?;
                set_keepalive(&tcp).map_err(io_err)?;
                Box::new(tcp)
            }
        };
        #[cfg(feature = "tls")]
        let io: Pin<Box<dyn Transport>> = match &options.tls {
            None => Box::into_pin(tcp),
            Some(tls) => {
                let config = tls.build()?;
                let name = tls.name_for(host_of(addr))?;
                let connector = tokio_rustls::TlsConnector::from(config);
                let stream = tokio::time::timeout(options.connect_timeout, connector.connect(name, tcp))
                    .await
                    .map_err(|_| Error::tls(addr, std::io::Error::new(std::io::ErrorKind::TimedOut, "handshake timed out")))?
                    .map_err(|e| Error::tls(addr, e))?;
                debug!("TLS established");
                Box::pin(stream)
            }
        };
        #[cfg(not(feature = "tls"))]
        let io: Pin<Box<dyn Transport>> = Box::into_pin(tcp);
        let metrics = ConnectionMetrics::of(&options.client_id);
        metrics.created.increment(1);
        metrics.open.increment(1.0);
        let codec = ClientCodec::with_max_frame_size(options.max_frame_size);
        let framed = Framed::new(io, codec);
        let (tx, rx) = mpsc::channel(256);
        let abort = Arc::new(tokio::sync::Notify::new());
        let shared = Arc::new(Shared {
            addr: addr.to_owned(),
            options: options.clone(),
            tx,
            next_correlation_id: AtomicI32::new(1),
            closed: AtomicBool::new(false),
            close_reason: Mutex::new(None),
            authentications: AtomicU32::new(0),
            session_lifetime_ms: std::sync::atomic::AtomicI64::new(0),
            gate: Arc::new(RwLock::new(())),
            negotiated: Mutex::new(None),
            abort: abort.clone(),
            metrics: metrics.clone(),
        });
        tokio::spawn(io_task(framed, rx, abort, Arc::downgrade(&shared), metrics).instrument(tracing::debug_span!("kafka.conn", addr = %addr)));
        let conn = Connection { shared };
        conn.negotiate().await?;
        if let Some(sasl) = &options.sasl {
            conn.authenticate(sasl, false).await?;
        }
        info!("connected");
        Ok(conn)
    }

    /// The broker's address.
    pub fn addr(&self) -> &str {
        &self.shared.addr
    }

    /// How many times this connection has authenticated with SASL: 1, plus one per
    /// re-authentication (KIP-368).
    pub fn authentications(&self) -> u32 {
        self.shared.authentications.load(Ordering::Acquire)
    }

    /// The session lifetime the broker set at the last SASL authentication (`None`: none).
    pub fn session_lifetime(&self) -> Option<Duration> {
        let ms = self.shared.session_lifetime_ms.load(Ordering::Acquire);
        (ms > 0).then(|| Duration::from_millis(ms as u64))
    }

    /// Whether the connection has been closed (by an error or by the broker).
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire) || self.shared.tx.is_closed()
    }

    /// The broker's versions.
    pub fn versions(&self) -> Result<Arc<Versions>> {
        crate::sync::lock(&self.shared.negotiated).clone().ok_or_else(|| Error::Disconnected(format!("{}: versions not negotiated", self.shared.addr)))
    }

    /// The version this connection uses for `api`.
    pub fn version(&self, api: ApiKey) -> Result<i16> {
        self.versions()?.version(api)
    }

    /// Sends `body`, a request of any api, at the negotiated version and returns the response
    /// as it came (a tool's raw access; [`send`](Connection::send) returns it typed).
    pub async fn request(&self, body: impl Into<RequestKind>) -> Result<ResponseKind> {
        let body = body.into();
        let api = body.api_key();
        let version = self.version(api)?;
        self.exchange(version, body, None).await?.ok_or(Error::unexpected(api, Unexpected::NoResponse))
    }

    /// Sends `body` at `version` under the gate and waits up to `timeout` (`None`: the
    /// request timeout) for the response (none for Produce with acks=0).
    pub(crate) async fn exchange(&self, version: i16, body: RequestKind, timeout: Option<Duration>) -> Result<Option<ResponseKind>> {
        let _guard = self.shared.gate.read().await;
        Ok(self.send_within(version, body, timeout.unwrap_or(self.shared.options.request_timeout)).await?.map(|f| f.body))
    }

    /// Puts `request` on the connection's queue at the negotiated version or `max`, the lower
    /// (a request whose body cannot be written at the newest version, such as Produce v13+ for
    /// a topic without an id), and returns at once: requests dispatched one after another are
    /// written in that order (a caller that needs its requests in order, such as the
    /// producer's sender for a broker, awaits each dispatch before the next).
    /// [`InFlight::response`] waits for the answer.
    pub(crate) async fn dispatch<R: ApiRequest>(&self, request: R, max: i16) -> Result<InFlight<R>> {
        let version = self.version(R::API)?.min(max);
        let gate = self.shared.gate.clone().read_owned().await;
        let rx = self.enqueue(version, request.into()).await?;
        Ok(InFlight { conn: self.clone(), rx, timeout: self.shared.options.request_timeout, _gate: gate, _request: PhantomData })
    }

    /// Sends at an explicit version, with no gate (used under the gate or before any other
    /// request can be sent).
    async fn send_ungated(&self, version: i16, body: RequestKind) -> Result<Option<ResponseFrame>> {
        self.send_within(version, body, self.shared.options.request_timeout).await
    }

    async fn send_within(&self, version: i16, body: RequestKind, timeout: Duration) -> Result<Option<ResponseFrame>> {
        let api = body.api_key();
        let rx = self.enqueue(version, body).await?;
        self.wait(api, rx, timeout).await
    }

    /// Queues the request for the io task; the receiver gets its response.
    async fn enqueue(&self, version: i16, body: RequestKind) -> Result<oneshot::Receiver<Result<Option<ResponseFrame>>>> {
        if self.is_closed() {
            return Err(self.closed_error());
        }
        let id = self.shared.next_correlation_id.fetch_add(1, Ordering::Relaxed) & i32::MAX;
        let request = OutboundRequest::new(body.api_key(), version, id, body).with_client_id(self.shared.options.client_id.as_str());
        let (reply, rx) = oneshot::channel();
        self.shared.tx.send(Command { request, reply }).await.map_err(|_| self.closed_error())?;
        Ok(rx)
    }

    /// The response of a queued request, within `timeout`.
    async fn wait(&self, api: ApiKey, rx: oneshot::Receiver<Result<Option<ResponseFrame>>>, timeout: Duration) -> Result<Option<ResponseFrame>> {
        match tokio::time::timeout(timeout, rx).await {
            Err(_) => {
                warn!(api = api.name(), ?timeout, addr = %self.shared.addr, "request timed out: closing the connection");
                let e = Error::Timeout { api, after: timeout };
                self.close_with(e.clone());
                Err(e)
            }
            Ok(Err(_)) => Err(self.closed_error()),
            Ok(Ok(r)) => r,
        }
    }

    /// Closes the connection for `reason`: no request is sent on it any more, the io task
    /// ends and fails the requests in flight.
    fn close_with(&self, reason: Error) {
        crate::sync::lock(&self.shared.close_reason).get_or_insert(reason);
        self.shared.closed.store(true, Ordering::Release);
        self.shared.abort.notify_one();
    }

    /// The error that closed the connection, or a plain disconnection.
    fn closed_error(&self) -> Error {
        let reason = crate::sync::lock(&self.shared.close_reason).clone();
        reason.unwrap_or_else(|| Error::Disconnected(format!("connection to {} is closed", self.shared.addr)))
    }

    /// ApiVersions at our newest version; a broker that does not know it answers
    /// UNSUPPORTED_VERSION at v0 with its range (KIP-511), and we retry at the newest common one.
    async fn negotiate(&self) -> Result<()> {
        let ours = ApiKey::ApiVersions.info().versions(false);
        let request = || {
            RequestKind::from(ApiVersionsRequest {
                client_software_name: ByteString::from_static("kwire-client"),
                client_software_version: ByteString::from_static(env!("CARGO_PKG_VERSION")),
                ..Default::default()
            })
        };
        let seen = &self.shared.options.api_versions_seen;
        let mut version = seen.get(&self.shared.addr).filter(|v| ours.contains(*v)).unwrap_or(ours.hi);
        let mut response = typed::<ApiVersionsRequest>(self.send_ungated(version, request()).await?.map(|f| f.body))?;
        if response.error_code == ErrorCode::UNSUPPORTED_VERSION.0 {
            let theirs = response.api_keys.iter().find(|k| k.api_key == ApiKey::ApiVersions.key());
            let common = theirs.map(|k| VersionRange::new(k.min_version, k.max_version).intersect(&ours));
            version = common.filter(|c| !c.is_empty()).map(|c| c.hi).ok_or_else(|| Error::UnsupportedVersion {
                api: ApiKey::ApiVersions,
                reason: format!("the broker supports {:?}, this build {ours}", theirs.map(|k| (k.min_version, k.max_version))),
            })?;
            debug!(version, "retrying ApiVersions at the broker's version");
            response = typed::<ApiVersionsRequest>(self.send_ungated(version, request()).await?.map(|f| f.body))?;
        }
        Error::check(response.error_code, None, || format!("ApiVersions v{version} to {}", self.shared.addr))?;
        seen.set(&self.shared.addr, version);
        let versions = Versions::new(&response);
        debug!(apis = response.api_keys.len(), "negotiated");
        *crate::sync::lock(&self.shared.negotiated) = Some(Arc::new(versions));
        Ok(())
    }

    /// A SASL request, sent with no gate (authentication runs before other requests, and
    /// re-authentication holds the gate for writing).
    async fn sasl_call<R: ApiRequest>(&self, request: R) -> Result<R::Response> {
        let version = self.version(R::API)?;
        typed::<R>(self.send_ungated(version, request.into()).await?.map(|f| f.body))
    }

    /// SaslHandshake v1 and the SaslAuthenticate exchange of `sasl`; when the broker sets a
    /// session lifetime, schedules re-authentication before it ends (KIP-368).
    async fn authenticate(&self, sasl: &Sasl, reauth: bool) -> Result<()> {
        let mechanism = sasl.mechanism_name();
        let span = tracing::info_span!("kafka.sasl", mechanism, user = sasl.username(), reauth);
        let lifetime_ms = async {
            let auth_err = |message: String| Error::Authentication { mechanism: mechanism.to_owned(), message };
            let h = self.sasl_call(SaslHandshakeRequest { mechanism: ByteString::from_static(mechanism) }).await?;
            if !ErrorCode(h.error_code).is_ok() {
                let offered: Vec<&str> = h.mechanisms.iter().map(|m| &m[..]).collect();
                return Err(auth_err(format!("{} (the broker offers {})", ErrorCode(h.error_code).name().unwrap_or("handshake refused"), offered.join(", "))));
            }
            let authenticate = |token: Bytes| async move {
                let r = self.sasl_authenticate(token).await?;
                if !ErrorCode(r.error_code).is_ok() {
                    let name = ErrorCode(r.error_code).name().unwrap_or("UNKNOWN");
                    return Err(auth_err(format!("{name}: {}", r.error_message.as_deref().unwrap_or(""))));
                }
                Ok(r)
            };
            let last = match sasl {
                Sasl::Plain { username, password } => authenticate(Bytes::from(format!("\0{username}\0{password}"))).await?,
                Sasl::Scram { .. } | Sasl::DelegationToken { .. } => {
                    let mut scram = match sasl {
                        Sasl::DelegationToken { mechanism, token_id, hmac_base64 } => ScramClient::for_token(*mechanism, token_id, hmac_base64),
                        Sasl::Scram { mechanism, username, password } => ScramClient::new(*mechanism, username, password),
                        Sasl::Plain { .. } | Sasl::OAuthBearer(_) => Err("not SCRAM".to_owned()),
                    }
                    .map_err(auth_err)?;
                    let first = authenticate(Bytes::from(scram.first())).await?;
                    let fin = scram.final_message(&first.auth_bytes).map_err(auth_err)?;
                    let last = authenticate(Bytes::from(fin)).await?;
                    scram.verify_server_final(&last.auth_bytes).map_err(auth_err)?;
                    last
                }
                Sasl::OAuthBearer(oauth) => {
                    let first = self.oauthbearer_response(oauth).await?;
                    let r = authenticate(Bytes::from(first)).await?;
                    if !r.auth_bytes.is_empty() {
                        // RFC 7628's error reply: acknowledge it so the broker ends the exchange
                        // (its answer is the failure), and report the broker's reason.
                        let ended = self.sasl_authenticate(Bytes::from_static(crate::sasl::ERROR_ACKNOWLEDGEMENT)).await?;
                        return Err(Error::OAuth(crate::sasl::refusal(&r.auth_bytes, ended.error_message.as_deref().map(str::to_owned))));
                    }
                    r
                }
            };
            Ok(last.session_lifetime_ms)
        }
        .instrument(span)
        .await
        .inspect_err(|_| self.shared.metrics.failed_authentications.increment(1))?;
        info!(mechanism, user = sasl.username(), session_lifetime_ms = lifetime_ms, "authenticated");
        if reauth {
            self.shared.metrics.reauthentications.increment(1);
        } else {
            self.shared.metrics.authentications.increment(1);
        }
        self.shared.authentications.fetch_add(1, Ordering::AcqRel);
        self.shared.session_lifetime_ms.store(lifetime_ms, Ordering::Release);
        if lifetime_ms > 0 {
            self.schedule_reauthentication(sasl.clone(), lifetime_ms);
        }
        Ok(())
    }

    /// One SaslAuthenticate round, its error code unchecked.
    async fn sasl_authenticate(&self, auth_bytes: Bytes) -> Result<kwire::messages::SaslAuthenticateResponse> {
        self.sasl_call(SaslAuthenticateRequest { auth_bytes, ..Default::default() }).await
    }

    /// The OAUTHBEARER initial response with the current token.
    async fn oauthbearer_response(&self, oauth: &OAuthBearer) -> Result<Vec<u8>> {
        let token = oauth.token().await.map_err(Error::OAuth)?;
        debug!(principal = token.principal(), expires_at = ?token.expires_at(), "presenting an OAUTHBEARER token");
        oauth.initial_response(&token).map_err(Error::OAuth)
    }

    fn schedule_reauthentication(&self, sasl: Sasl, lifetime_ms: i64) {
        // As Kafka's Java client: at 85-95% of the session lifetime.
        let jitter = crate::random::Random::new(self.shared.options.seed, &self.shared.addr).unit();
        let after = Duration::from_millis(((lifetime_ms as f64) * (0.85 + 0.10 * jitter)) as u64);
        let weak: Weak<Shared> = Arc::downgrade(&self.shared);
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            let Some(shared) = weak.upgrade() else { return };
            let conn = Connection { shared };
            if conn.is_closed() {
                return;
            }
            // A token due for refresh is fetched before requests are held back: the token
            // endpoint may take a while, and the exchange under the gate then finds it ready.
            if let Sasl::OAuthBearer(oauth) = &sasl {
                if let Err(e) = oauth.token().await {
                    warn!(addr = %conn.shared.addr, error = %e, "no token to re-authenticate with");
                }
            }
            let _exclusive = conn.shared.gate.write().await;
            if let Err(e) = Box::pin(conn.authenticate(&sasl, true)).await {
                warn!(addr = %conn.shared.addr, error = %e, "re-authentication failed: closing the connection");
                conn.shared.closed.store(true, Ordering::Release);
            }
        });
    }
}

/// Fetch responses are big (up to `fetch_max_bytes`) and come one after another. Read each
/// into a new allocation, and glibc gives the previous one back to the OS once its records are
/// dropped (trimming its heap or unmapping it), then faults the next one in again page by page:
/// in the consumer benchmark that was 70 % of the CPU. So a connection keeps the allocation of
/// the last fetch response and alternates between two: after a fetch response, the read buffer
/// moves to the spare, provided nothing read into that one is still held (records are slices
/// of a response), and the spare becomes the allocation just used. Held memory: at most two
/// responses' worth per connection that fetches.
#[derive(Default)]
struct FetchBuffers {
    spare: Option<kwire::BytesMut>,
}

/// A spare smaller than this is not worth keeping.
const SPARE_MIN: usize = 64 << 10;

impl FetchBuffers {
    fn after_fetch(&mut self, read: &mut kwire::BytesMut) {
        if let Some(spare) = self.spare.as_mut() {
            // Asking for more than the handle has makes `try_reclaim` take back the whole
            // allocation (without allocating), which it can only while no other handle is left.
            let whole = spare.capacity() + 1;
            if !spare.try_reclaim(whole) {
                return; // still in use: the caller holds records of it
            }
        }
        let next = self.spare.take().filter(|s| s.capacity() >= SPARE_MIN.max(read.len()));
        let mut next = next.unwrap_or_else(|| kwire::BytesMut::with_capacity(read.len().max(8 << 10)));
        // Bytes of the next frame already read.
        next.extend_from_slice(read);
        let mut used = std::mem::replace(read, next);
        used.clear();
        self.spare = Some(used);
    }
}

/// The records of a Produce request, in encode order: they go out uncopied, as chunks of a
/// vectored write.
fn produce_records(body: &RequestKind) -> Vec<Bytes> {
    match body {
        RequestKind::Produce(p) => p.topic_data.iter().flat_map(|t| &t.partition_data).filter_map(|p| p.records.clone()).collect(),
        _ => Vec::new(),
    }
}

/// Writes a request whose records are large with one vectored write (`writev`) of the frame's
/// chunks: the header and small fields copied, each records `Bytes` as it is. What the codec
/// buffered before goes first, so requests keep their order.
async fn send_vectored(framed: &mut Stream, request: &OutboundRequest, records: Vec<Bytes>) -> std::result::Result<(), CodecError> {
    framed.flush().await?;
    let chunks = framed.codec_mut().encode_request_vectored(request, records)?;
    write_chunks(framed.get_mut(), chunks).await?;
    Ok(())
}

/// Writes every chunk, as few `write_vectored` calls as the stream takes.
async fn write_chunks<W: AsyncWrite + Unpin + ?Sized>(io: &mut W, chunks: Vec<Bytes>) -> std::io::Result<()> {
    use bytes::Buf;
    use tokio::io::AsyncWriteExt;
    let mut chunks: std::collections::VecDeque<Bytes> = chunks.into_iter().filter(|c| !c.is_empty()).collect();
    while !chunks.is_empty() {
        let slices: Vec<std::io::IoSlice<'_>> = chunks.iter().take(64).map(|c| std::io::IoSlice::new(c)).collect();
        let mut written = io.write_vectored(&slices).await?;
        drop(slices);
        if written == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        while let Some(front) = chunks.front_mut() {
            if written < front.len() {
                front.advance(written);
                break;
            }
            written -= front.len();
            chunks.pop_front();
        }
    }
    io.flush().await
}

/// Owns the stream: writes requests as they come, reads responses and hands each to the
/// request with its correlation id. Any error ends the connection, failing what waits.
async fn io_task(mut framed: Stream, mut rx: mpsc::Receiver<Command>, abort: Arc<tokio::sync::Notify>, shared: Weak<Shared>, metrics: Arc<ConnectionMetrics>) {
    // In correlation id order: at a close, the requests fail in the order they were sent.
    let mut pending: BTreeMap<i32, (ApiKey, Reply)> = BTreeMap::new();
    let mut fetch_buffers = FetchBuffers::default();
    let addr = shared.upgrade().map(|s| s.addr.clone()).unwrap_or_default();
    let error = loop {
        tokio::select! {
            biased;
            () = abort.notified() => {
                break Some(shared.upgrade().and_then(|s| crate::sync::lock(&s.close_reason).clone())
                    .unwrap_or_else(|| Error::Disconnected(format!("connection to {addr} closed"))));
            }
            frame = framed.next() => match frame {
                None => break Some(Error::Disconnected(format!("{addr} closed the connection"))),
                Some(Err(e)) => break Some(Error::codec(&addr, e)),
                Some(Ok(frame)) => {
                    metrics.responses.increment(1);
                    trace!(api = frame.api_key.name(), correlation_id = frame.header.correlation_id, "response read");
                    if frame.api_key == ApiKey::Fetch {
                        fetch_buffers.after_fetch(framed.read_buffer_mut());
                    }
                    if let Some((_, reply)) = pending.remove(&frame.header.correlation_id) {
                        let _ = reply.send(Ok(Some(frame)));
                    }
                }
            },
            command = rx.recv() => {
                let Some(Command { request, reply }) = command else { break None };
                let id = request.header.correlation_id;
                let api = request.body.api_key();
                let expects_response = request.expects_response();
                let records = produce_records(&request.body);
                // Small records are cheaper copied than written as chunks of their own.
                let sent = if !records.iter().any(|r| r.len() >= 1024) {
                    framed.send(request).await
                } else {
                    send_vectored(&mut framed, &request, records).await
                };
                if sent.is_ok() {
                    metrics.requests.increment(1);
                    trace!(api = api.name(), correlation_id = id, "request written");
                }
                match sent {
                    Ok(()) if expects_response => { pending.insert(id, (api, reply)); }
                    Ok(()) => { let _ = reply.send(Ok(None)); }
                    Err(e) => {
                        let e = Error::codec(&addr, e);
                        let _ = reply.send(Err(e.clone()));
                        break Some(e);
                    }
                }
            }
        }
    };
    if let Some(e) = &error {
        warn!(error = %e, in_flight = pending.len(), "connection closed");
    }
    metrics.open.decrement(1.0);
    metrics.closed.increment(1);
    let e = error.unwrap_or_else(|| Error::Disconnected(format!("connection to {addr} dropped")));
    if let Some(s) = shared.upgrade() {
        *crate::sync::lock(&s.close_reason) = Some(e.clone());
        s.closed.store(true, Ordering::Release);
    }
    rx.close();
    for (_, (api, reply)) in std::mem::take(&mut pending) {
        // After a timeout, each request in flight fails as timed out (Java's
        // `NetworkClient` cancels them so): retriable, on a new connection.
        let e = match &e {
            Error::Timeout { after, .. } => Error::Timeout { api, after: *after },
            other => other.clone(),
        };
        let _ = reply.send(Err(e));
    }
    // Commands queued behind the error.
    while let Ok(Command { reply, .. }) = rx.try_recv() {
        let _ = reply.send(Err(e.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kwire::BytesMut;

    /// A read buffer after the codec took a frame of `len` bytes off an allocation of `cap`.
    fn after_frame(cap: usize, len: usize) -> (BytesMut, Bytes, *const u8) {
        let mut read = BytesMut::with_capacity(cap);
        read.resize(len, 7);
        let base = read.as_ptr();
        let frame = read.split_to(len).freeze();
        (read, frame, base)
    }

    #[test]
    fn fetch_responses_alternate_between_two_allocations_once_their_records_are_dropped() {
        let mut buffers = FetchBuffers::default();
        let (mut read, frame_a, base_a) = after_frame(1 << 20, 1 << 20);
        buffers.after_fetch(&mut read);
        // The next response goes elsewhere; A waits as the spare.
        assert_ne!(read.as_ptr(), base_a);
        read.resize(1 << 20, 8);
        let base_b = read.as_ptr();
        let frame_b = read.split_to(1 << 20).freeze();
        // A's records still held: A cannot be reused, the read buffer is left alone.
        buffers.after_fetch(&mut read);
        assert_eq!(read.capacity(), 0);
        drop(frame_a);
        buffers.after_fetch(&mut read);
        // Now A is back, whole, and B is the spare.
        assert_eq!(read.as_ptr(), base_a);
        assert!(read.capacity() >= 1 << 20);
        drop(frame_b);
        read.resize(1 << 20, 9);
        let frame_a2 = read.split_to(1 << 20).freeze();
        buffers.after_fetch(&mut read);
        assert_eq!(read.as_ptr(), base_b);
        assert_eq!(frame_a2.first(), Some(&9));
    }

    #[test]
    fn bytes_of_the_next_frame_move_with_the_buffer() {
        let mut buffers = FetchBuffers::default();
        let (mut read, frame, _) = after_frame(1 << 20, 1000);
        read.extend_from_slice(&[1, 2, 3]);
        buffers.after_fetch(&mut read);
        assert_eq!(&read[..], &[1, 2, 3]);
        drop(frame);
    }
}
