//! The cluster view: bootstrap, a metadata cache (brokers, topics, partitions, leaders)
//! refreshed periodically and on demand, a connection per broker with reconnect backoff, and
//! requests routed to the broker they belong to.
//!
//! Metadata requests are disciplined as Java's `Metadata`: at most one in flight, and no more
//! than one per `metadata_refresh_backoff` (a partition without a leader does not turn every
//! `send` into a Metadata request); what the producer needs refreshed asks for the topics it
//! uses only; leader hints in Produce and Fetch responses (KIP-951) update the cache with no
//! Metadata request at all.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use tokio::time::Instant;

use kwire::messages::{metadata_request::MetadataRequestTopic, MetadataRequest};
use kwire::{ApiRequest, ByteString, ErrorCode, Uuid};
use tracing::{debug, info, warn, Instrument};

use crate::conn::{ConnectOptions, Connection, Connector, InFlight};
use crate::error::{Error, Result};
use crate::future::ClientFuture;
use crate::random::Random;
use crate::retry::Backoff;
use crate::route::{Limits, Route};
use crate::sasl::Sasl;
#[cfg(feature = "tls")]
use crate::tls::TlsConfig;

/// Client settings.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// `host:port` addresses to start from.
    pub bootstrap: Vec<String>,
    /// Connection settings (client id, TLS, SASL, timeouts).
    pub connection: ConnectOptions,
    /// How old metadata may get before it is refreshed (Java's `metadata.max.age.ms`).
    pub metadata_max_age: Duration,
    /// The first wait before reconnecting to a broker that failed (`reconnect.backoff.ms`).
    pub reconnect_backoff: Duration,
    /// The longest such wait (`reconnect.backoff.max.ms`).
    pub reconnect_backoff_max: Duration,
    /// The least time between two Metadata requests (Java's `retry.backoff.ms` for
    /// metadata): refreshes asked for sooner wait, and share the one that follows.
    pub metadata_refresh_backoff: Duration,
}

impl ClientConfig {
    /// Settings for these bootstrap addresses (comma-separated `host:port` list).
    pub fn new(bootstrap: &str) -> ClientConfig {
        ClientConfig {
            bootstrap: bootstrap.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect(),
            connection: ConnectOptions::default(),
            metadata_max_age: Duration::from_secs(300),
            reconnect_backoff: Duration::from_millis(50),
            reconnect_backoff_max: Duration::from_secs(1),
            metadata_refresh_backoff: Duration::from_millis(100),
        }
    }

    /// Connect with TLS (feature `tls`).
    #[cfg(feature = "tls")]
    pub fn tls(mut self, tls: TlsConfig) -> Self {
        self.connection.tls = Some(tls);
        self
    }

    /// Authenticate with SASL.
    pub fn sasl(mut self, sasl: Sasl) -> Self {
        self.connection.sasl = Some(sasl);
        self
    }

    /// The client id.
    pub fn client_id(mut self, id: impl Into<String>) -> Self {
        self.connection.client_id = id.into();
        self
    }

    /// The per-request timeout.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.connection.request_timeout = timeout;
        self
    }

    /// Opens broker connections with `connector` in place of TCP (an in-memory transport,
    /// such as kwire-fake's).
    pub fn connector(mut self, connector: Connector) -> Self {
        self.connection.connector = Some(connector);
        self
    }

    /// Seeds the client's random choices ([`ConnectOptions::seed`]): on tokio's paused clock
    /// with an in-memory transport, a run replays exactly.
    pub fn seed(mut self, seed: u64) -> Self {
        self.connection.seed = Some(seed);
        self
    }
}

/// A broker as Metadata lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerInfo {
    /// The node id.
    pub id: i32,
    /// The host.
    pub host: String,
    /// The port.
    pub port: i32,
    /// The rack.
    pub rack: Option<String>,
}

impl BrokerInfo {
    /// A broker from a response's node endpoint (KIP-951's `NodeEndpoints`).
    pub(crate) fn endpoint(id: i32, host: &str, port: i32, rack: Option<&str>) -> BrokerInfo {
        BrokerInfo { id, host: host.to_owned(), port, rack: rack.map(str::to_owned) }
    }

    /// `host:port`.
    pub fn addr(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// A partition as Metadata lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionInfo {
    /// The partition index.
    pub index: i32,
    /// The leader's node id, -1 when there is none.
    pub leader: i32,
    /// The leader epoch.
    pub leader_epoch: i32,
    /// The replicas.
    pub replicas: Vec<i32>,
    /// The in-sync replicas.
    pub isr: Vec<i32>,
    /// The partition's error (LEADER_NOT_AVAILABLE, ...), NONE when fine.
    pub error: ErrorCode,
}

/// A topic as Metadata lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicInfo {
    /// The name.
    pub name: String,
    /// The topic id.
    pub id: Uuid,
    /// Whether the topic is internal (`__consumer_offsets`, ...).
    pub internal: bool,
    /// The partitions, by index.
    pub partitions: Vec<PartitionInfo>,
}

/// A snapshot of the cluster.
#[derive(Debug, Clone, Default)]
pub struct ClusterMetadata {
    /// The cluster id.
    pub cluster_id: Option<String>,
    /// The controller's node id (in KRaft, a broker that forwards to the controller).
    pub controller_id: i32,
    /// The brokers, by node id.
    pub brokers: BTreeMap<i32, BrokerInfo>,
    /// The topics, by name (shared: [`Client::topic`] hands them out without copying).
    pub topics: BTreeMap<String, Arc<TopicInfo>>,
    pub(crate) fetched_at: Option<Instant>,
}

impl ClusterMetadata {
    /// The leader of a partition, if known.
    pub fn leader(&self, topic: &str, partition: i32) -> Option<i32> {
        let p = self.topics.get(topic)?.partitions.iter().find(|p| p.index == partition)?;
        (p.leader >= 0).then_some(p.leader)
    }
}

#[derive(Default)]
struct Slot {
    conn: Option<Connection>,
    failures: u32,
    retry_at: Option<Instant>,
}

struct Inner {
    config: ClientConfig,
    metadata: RwLock<Arc<ClusterMetadata>>,
    slots: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Slot>>>>,
    /// Held by the one Metadata request in flight; holds when the last one started.
    refresh: tokio::sync::Mutex<Option<Instant>>,
    /// The topics the producer has asked for ([`Client::topic`]): what its refreshes ask for.
    in_use: Mutex<BTreeSet<String>>,
    /// A background refresh of the topics in use is asked for or running.
    update_pending: AtomicBool,
    /// Reconnection backoff jitter.
    random: Random,
    /// Member ids of a seeded client's groups (`None`: from the OS).
    member_ids: Option<Random>,
    /// The coordinators found so far ([`crate::coordinator`]), by FindCoordinator's key type
    /// and key (a group or a transactional id): address.
    coordinators: Mutex<HashMap<(i8, String), String>>,
}

impl Inner {
    /// `member_ids`: those of the client this one is made from (its clones and derived clients
    /// draw from one sequence, so that their members' ids differ).
    fn new(config: ClientConfig, metadata: Arc<ClusterMetadata>, member_ids: Option<Random>) -> Arc<Inner> {
        Arc::new(Inner {
            metadata: RwLock::new(metadata),
            slots: Mutex::new(HashMap::new()),
            refresh: tokio::sync::Mutex::new(None),
            in_use: Mutex::new(BTreeSet::new()),
            update_pending: AtomicBool::new(false),
            coordinators: Mutex::new(HashMap::new()),
            random: Random::new(config.connection.seed, "cluster"),
            // Per client id too: clients given one seed but different ids (a test's members)
            // must not make the same member ids.
            member_ids: member_ids.or_else(|| config.connection.seed.map(|seed| Random::new(Some(seed), &format!("member {}", config.connection.client_id)))),
            config,
        })
    }
}

/// A client of one cluster: shared by the [`Admin`](crate::Admin) and
/// [`Producer`](crate::Producer) built on it. Cheap to clone.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl Client {
    /// The seeded draws for this client's new member ids (a simulated run's), or `None` for the
    /// OS's randomness: a group member's id comes from here (`group::new_member_id`).
    pub(crate) fn member_ids(&self) -> Option<&Random> {
        self.inner.member_ids.as_ref()
    }

    /// The coordinator cache ([`crate::coordinator`]).
    pub(crate) fn coordinators(&self) -> &Mutex<HashMap<(i8, String), String>> {
        &self.inner.coordinators
    }

    /// Connects to the cluster: reads Metadata from the first bootstrap broker that answers,
    /// and starts the periodic metadata refresh.
    pub fn connect(config: ClientConfig) -> ClientFuture<'static, Result<Client>> {
        ClientFuture::boxed(Client::connect_boxed(config))
    }

    async fn connect_boxed(config: ClientConfig) -> Result<Client> {
        if config.bootstrap.is_empty() {
            return Err(Error::Config("no bootstrap address".into()));
        }
        let inner = Inner::new(config, Arc::new(ClusterMetadata::default()), None);
        let client = Client { inner };
        client.refresh_metadata().await?;
        let weak = Arc::downgrade(&client.inner);
        let period = client.inner.config.metadata_max_age;
        tokio::spawn(periodic_refresh(weak, period));
        Ok(client)
    }

    /// The settings.
    pub fn config(&self) -> &ClientConfig {
        &self.inner.config
    }

    /// The current metadata snapshot.
    pub fn metadata(&self) -> Arc<ClusterMetadata> {
        crate::sync::read(&self.inner.metadata).clone()
    }

    /// Reads Metadata for every topic from some broker (a known one, else the bootstrap list)
    /// and replaces the cache. Concurrent callers share one refresh; one sooner than
    /// `metadata_refresh_backoff` after the last waits for it.
    pub async fn refresh_metadata(&self) -> Result<Arc<ClusterMetadata>> {
        self.refresh(None, false).await
    }

    /// Reads Metadata for the topics the producer uses ([`topic`](Client::topic)) and
    /// updates them in the cache (every topic if none is in use yet), under the same
    /// discipline as [`refresh_metadata`](Client::refresh_metadata).
    pub(crate) async fn refresh_in_use(&self) -> Result<Arc<ClusterMetadata>> {
        let topics: Vec<String> = crate::sync::lock(&self.inner.in_use).iter().cloned().collect();
        self.refresh((!topics.is_empty()).then_some(topics), false).await
    }

    /// Asks for a refresh of the topics in use in the background and returns at once (Java's
    /// `Metadata.requestUpdate`): many asks while one is pending make one request.
    pub(crate) fn request_update(&self) {
        if self.inner.update_pending.swap(true, Ordering::AcqRel) {
            return;
        }
        let client = self.clone();
        tokio::spawn(async move {
            let result = client.refresh_in_use().await;
            client.inner.update_pending.store(false, Ordering::Release);
            if let Err(e) = result {
                debug!(error = %e, "metadata update failed");
            }
        });
    }

    /// One Metadata request, for `topics` (merged into the cache) or every topic (replacing
    /// it), at most one in flight and one per `metadata_refresh_backoff`; with `create`, a
    /// broker with `auto.create.topics.enable` creates those of `topics` that do not exist.
    async fn refresh(&self, topics: Option<Vec<String>>, create: bool) -> Result<Arc<ClusterMetadata>> {
        let before = self.metadata().fetched_at;
        let mut last_request = self.inner.refresh.lock().await;
        let current = self.metadata();
        if current.fetched_at != before && current.fetched_at.is_some() {
            return Ok(current); // someone else refreshed while we waited
        }
        if let Some(at) = *last_request {
            tokio::time::sleep_until(at + self.inner.config.metadata_refresh_backoff).await;
        }
        *last_request = Some(Instant::now());
        let span = tracing::debug_span!("kafka.metadata_refresh", topics = topics.as_ref().map_or(0, Vec::len));
        async {
            let mut addrs: Vec<String> = current.brokers.values().map(BrokerInfo::addr).collect();
            for b in &self.inner.config.bootstrap {
                if !addrs.contains(b) {
                    addrs.push(b.clone());
                }
            }
            let mut last = None;
            for addr in addrs {
                let request = metadata_request(topics.as_deref(), create);
                // To the address itself (not a route, which may need metadata first).
                match self.send_at(&addr, &addr, Limits::default(), &|_| request.clone()).await {
                    Ok(r) => {
                        let mut m = parse_metadata(r);
                        if let Some(asked) = &topics {
                            // The other topics stay as they were; those asked for and not
                            // listed (deleted) go.
                            let mut all = current.topics.clone();
                            for t in asked {
                                all.remove(t);
                            }
                            all.append(&mut m.topics);
                            m.topics = all;
                            // Not a full refresh: one waiting for a full one still makes it.
                            m.fetched_at = current.fetched_at;
                        }
                        let m = Arc::new(m);
                        debug!(brokers = m.brokers.len(), topics = m.topics.len(), "metadata refreshed");
                        *crate::sync::write(&self.inner.metadata) = m.clone();
                        return Ok(m);
                    }
                    // Authentication and version errors will not improve on another broker.
                    Err(e @ (Error::Authentication { .. } | Error::OAuth(_) | Error::Tls { .. } | Error::Config(_))) => return Err(e),
                    Err(e) => {
                        warn!(addr = %addr, error = %e, "metadata request failed");
                        last = Some(e)
                    }
                }
            }
            Err(last.unwrap_or_else(|| Error::Config("no broker to ask for metadata".into())))
        }
        .instrument(span)
        .await
    }

    /// Metadata for `topic`, and the topic counted as in use (refreshes of the producer ask
    /// for it). Shared with the cache (the producer calls this for every record): no copy.
    /// An unknown topic is asked for (under the refresh backoff); a known one with partitions
    /// without a leader is returned as it is, and an update asked for in the background.
    pub fn topic<'a>(&'a self, topic: &'a str) -> ClientFuture<'a, Result<Arc<TopicInfo>>> {
        self.topic_with(topic, false)
    }

    /// [`topic`](Client::topic), and with `create` an unknown topic is asked for alone with
    /// `allow_auto_topic_creation`, as Java's producer asks for every topic it sends to and its
    /// consumer for the topics it subscribes to (`allow.auto.create.topics`): a broker with
    /// `auto.create.topics.enable` creates it.
    pub(crate) fn topic_with<'a>(&'a self, topic: &'a str, create: bool) -> ClientFuture<'a, Result<Arc<TopicInfo>>> {
        let m = self.metadata();
        if let Some(t) = m.topics.get(topic) {
            if t.partitions.iter().any(|p| p.leader < 0) {
                self.use_topic(topic);
                self.request_update();
            }
            return ClientFuture::ready(Ok(t.clone()));
        }
        self.use_topic(topic);
        ClientFuture::boxed(async move {
            let m = if create { self.refresh(Some(vec![topic.to_owned()]), true).await? } else { self.refresh_in_use().await? };
            m.topics.get(topic).cloned().ok_or_else(|| Error::unknown(topic, None, "not in the cluster's metadata"))
        })
    }

    fn use_topic(&self, topic: &str) {
        let mut in_use = crate::sync::lock(&self.inner.in_use);
        if !in_use.contains(topic) {
            in_use.insert(topic.to_owned());
        }
    }

    /// Takes leader hints (KIP-951: a Produce or Fetch response's `CurrentLeader` for a
    /// partition it refused as NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH, and the
    /// `NodeEndpoints` of those leaders) into the cache: `(topic, partition, leader, epoch)`,
    /// each taken when its epoch is not older than the cached one and its leader is a known
    /// broker. Returns how many were taken; the others need a Metadata request.
    pub(crate) fn update_leaders<'a>(
        &self,
        leaders: impl IntoIterator<Item = (&'a str, i32, i32, i32)>,
        endpoints: impl IntoIterator<Item = BrokerInfo>,
    ) -> usize {
        let mut cache = crate::sync::write(&self.inner.metadata);
        let mut m = ClusterMetadata::clone(&cache);
        for b in endpoints {
            m.brokers.insert(b.id, b);
        }
        let mut taken = 0;
        for (topic, partition, leader, epoch) in leaders {
            if leader < 0 || !m.brokers.contains_key(&leader) {
                continue;
            }
            let Some(t) = m.topics.get_mut(topic) else { continue };
            let t = Arc::make_mut(t);
            let Some(p) = t.partitions.iter_mut().find(|p| p.index == partition) else { continue };
            if epoch < p.leader_epoch {
                continue; // older than what we know
            }
            debug!(topic, partition, leader, epoch, "leader hint");
            p.leader = leader;
            p.leader_epoch = epoch;
            p.error = ErrorCode::NONE;
            taken += 1;
        }
        if taken > 0 {
            *cache = Arc::new(m);
        }
        taken
    }

    /// Metadata for specific topics straight from a broker (not cached): for topics this
    /// principal may only describe by name.
    pub async fn fetch_topic_metadata(&self, topics: &[&str]) -> Result<ClusterMetadata> {
        Ok(parse_metadata(self.send(Route::Any, metadata_request(Some(topics), false)).await?))
    }

    /// A client of the same cluster with connections of its own (and a copy of the metadata):
    /// a consumer's long-polling Fetches and its JoinGroup, which the broker answers only when
    /// the group is complete, must not hold up other users' requests on a shared connection
    /// (a broker handles one request per connection at a time).
    pub fn with_own_connections(&self) -> Client {
        let inner = Inner::new(self.inner.config.clone(), self.metadata(), self.inner.member_ids.clone());
        tokio::spawn(periodic_refresh(Arc::downgrade(&inner), inner.config.metadata_max_age));
        Client { inner }
    }

    /// The connection to `addr`, opening one (after the backoff of earlier failures) if needed.
    pub async fn connection(&self, addr: &str) -> Result<Connection> {
        self.connection_keyed(addr, addr).await
    }

    /// A connection to `addr` pooled under `key`: a second connection to the same broker for
    /// another purpose (the group coordinator's, say).
    pub async fn connection_keyed(&self, key: &str, addr: &str) -> Result<Connection> {
        let slot = {
            let mut slots = crate::sync::lock(&self.inner.slots);
            slots.entry(key.to_owned()).or_default().clone()
        };
        let mut slot = slot.lock().await;
        if let Some(c) = slot.conn.as_ref().filter(|c| !c.is_closed()) {
            return Ok(c.clone());
        }
        slot.conn = None;
        if let Some(at) = slot.retry_at {
            // Bounded by reconnect_backoff_max.
            tokio::time::sleep_until(at).await;
        }
        match Connection::connect(addr, &self.inner.config.connection).await {
            Ok(c) => {
                slot.failures = 0;
                slot.retry_at = None;
                slot.conn = Some(c.clone());
                Ok(c)
            }
            Err(e) => {
                slot.failures = slot.failures.saturating_add(1);
                let cfg = &self.inner.config;
                let backoff = Backoff::exponential(cfg.reconnect_backoff, cfg.reconnect_backoff_max, self.inner.random.clone()).delay(slot.failures);
                slot.retry_at = Some(Instant::now() + backoff);
                warn!(addr = %addr, error = %e, ?backoff, "connect failed");
                Err(e)
            }
        }
    }

    /// Puts `request` on the connection to broker `node`, at the negotiated version or `max`,
    /// the lower, and returns without waiting for the response: requests dispatched one after
    /// another reach the broker in that order. A pooled connection found closed is replaced
    /// once.
    pub(crate) async fn dispatch<R: ApiRequest + Clone>(&self, node: i32, request: R, max: i16) -> Result<InFlight<R>> {
        let addr = self.node_addr(node).await?;
        let conn = self.connection(&addr).await?;
        match conn.dispatch(request.clone(), max).await {
            Err(e @ (Error::Disconnected(_) | Error::Io { .. })) if conn.is_closed() => {
                debug!(addr = %addr, reason = %e, "pooled connection was closed: reconnecting");
                self.connection(&addr).await?.dispatch(request, max).await
            }
            r => r,
        }
    }

    /// The address of broker `node`, refreshing metadata once if it is unknown.
    pub async fn node_addr(&self, node: i32) -> Result<String> {
        if let Some(b) = self.metadata().brokers.get(&node) {
            return Ok(b.addr());
        }
        let m = self.refresh_metadata().await?;
        m.brokers.get(&node).map(BrokerInfo::addr).ok_or(Error::UnknownBroker(node))
    }

    /// The leader of `topic`/`partition`, refreshing metadata once if none is known.
    pub(crate) async fn leader_of(&self, topic: &str, partition: i32) -> Result<i32> {
        match self.metadata().leader(topic, partition) {
            Some(l) => Ok(l),
            None => self.refresh_metadata().await?.leader(topic, partition).ok_or_else(|| Error::unknown(topic, Some(partition), "no known leader")),
        }
    }

    /// Whether an error code calls for fresh metadata (leadership or topic changed): the codes
    /// Kafka's metadata-invalidating exceptions stand for ([`ErrorCode::invalidates_metadata`]),
    /// and two Java's clients also refresh on though they are not among them: a leader epoch
    /// the broker does not know yet (the fetcher's `requestMetadataUpdate`) and a request to a
    /// broker that is no longer the controller (the admin client's).
    pub fn needs_metadata_refresh(code: ErrorCode) -> bool {
        code.invalidates_metadata() || matches!(code, ErrorCode::UNKNOWN_LEADER_EPOCH | ErrorCode::NOT_CONTROLLER)
    }
}

/// A Metadata request for `topics`, or every topic; `create`: those that do not exist are
/// created where the broker allows it.
fn metadata_request<T: AsRef<str>>(topics: Option<&[T]>, create: bool) -> MetadataRequest {
    let topics = topics
        .map(|topics| topics.iter().map(|t| MetadataRequestTopic { name: Some(ByteString::from(t.as_ref().to_owned())), ..Default::default() }).collect());
    MetadataRequest { topics, allow_auto_topic_creation: create, ..Default::default() }
}

/// A Metadata response's partitions, sorted by index.
pub(crate) fn partitions_of(partitions: &[kwire::messages::metadata_response::MetadataResponsePartition]) -> Vec<PartitionInfo> {
    let mut out: Vec<PartitionInfo> = partitions
        .iter()
        .map(|p| PartitionInfo {
            index: p.partition_index,
            leader: p.leader_id,
            leader_epoch: p.leader_epoch,
            replicas: p.replica_nodes.to_vec(),
            isr: p.isr_nodes.to_vec(),
            error: ErrorCode(p.error_code),
        })
        .collect();
    out.sort_by_key(|p| p.index);
    out
}

fn parse_metadata(r: kwire::messages::MetadataResponse) -> ClusterMetadata {
    let brokers = r
        .brokers
        .into_iter()
        .map(|b| (b.node_id, BrokerInfo { id: b.node_id, host: b.host.to_string(), port: b.port, rack: b.rack.map(|r| r.to_string()) }))
        .collect();
    let topics = r
        .topics
        .into_iter()
        .filter(|t| t.error_code == ErrorCode::NONE.0)
        .filter_map(|t| {
            let name = t.name?.to_string();
            let partitions = partitions_of(&t.partitions);
            Some((name.clone(), Arc::new(TopicInfo { name, id: t.topic_id, internal: t.is_internal, partitions })))
        })
        .collect();
    ClusterMetadata { cluster_id: r.cluster_id.map(|c| c.to_string()), controller_id: r.controller_id, brokers, topics, fetched_at: Some(Instant::now()) }
}

async fn periodic_refresh(weak: Weak<Inner>, period: Duration) {
    loop {
        tokio::time::sleep(period).await;
        let Some(inner) = weak.upgrade() else { return };
        let client = Client { inner };
        if let Err(e) = client.refresh_metadata().await {
            warn!(error = %e, "periodic metadata refresh failed");
        } else {
            info!("periodic metadata refresh");
        }
    }
}
