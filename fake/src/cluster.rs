//! The cluster: its state under one lock, its clock, and what a test does to it (stop a broker,
//! move a leader, hook requests, read the log).

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use kwire::runtime::records::{Batch, Batches, Record};
use kwire::{Bytes, ErrorCode, Uuid};
use tokio::io::DuplexStream;
use tokio::sync::{watch, Notify};

use crate::acl::Acls;
use crate::config::ClusterConfig;
use crate::control::{Entry, Hook, HookId, Hooks, Journal};
use crate::fetch_sessions::FetchSessions;
use crate::groups::Groups;
use crate::network::{self, FaultConfig, Network};
use crate::quotas::Quotas;
use crate::scram::ScramCredentials;
use crate::server::Peer;
use crate::share_state::ShareStates;
use crate::telemetry::Telemetry;
use crate::tokens::Tokens;
use crate::topics::{Partition, Topic};
use crate::txn::Transactions;

/// The port every broker of the in-memory network listens on (`broker-N:9092`).
pub const MEMORY_PORT: u16 = 9092;
/// The client address an in-memory connection has for ACLs (a loopback one, as a local TCP
/// client's).
const MEMORY_HOST: &str = "127.0.0.1";

/// One broker's state.
#[derive(Debug)]
pub(crate) struct BrokerState {
    pub(crate) up: bool,
    pub(crate) rack: Option<String>,
    /// Wakes (ends) the broker's connections when it stops.
    pub(crate) stopped: watch::Sender<bool>,
}

/// Where a connection came in: the addresses its Metadata answers give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Listener {
    Memory,
    Tcp(Security),
}

/// A TCP listener's security protocol (Kafka's `listener.security.protocol.map` values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Security {
    /// No authentication: the principal is `User:ANONYMOUS`.
    Plaintext,
    /// SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER when configured) before any other
    /// request.
    SaslPlaintext,
    /// TLS ([`ClusterConfig::tls`]'s certificate), no authentication.
    Ssl,
    /// TLS, then SASL.
    SaslSsl,
}

/// Everything the brokers share: topics and logs, producers, transactions, groups.
pub(crate) struct State {
    pub(crate) brokers: BTreeMap<i32, BrokerState>,
    pub(crate) topics: BTreeMap<String, Topic>,
    pub(crate) rng: fastrand::Rng,
    pub(crate) next_producer_id: i64,
    pub(crate) txns: Transactions,
    pub(crate) groups: Groups,
    /// Coordinators moved by a test: (key type: 0 group, 1 transaction, 2 share) and key -> broker.
    pub(crate) coordinators: BTreeMap<(i8, String), i32>,
    pub(crate) acls: Acls,
    pub(crate) scram: ScramCredentials,
    pub(crate) quotas: Quotas,
    pub(crate) tokens: Tokens,
    pub(crate) telemetry: Telemetry,
    pub(crate) fetch_sessions: FetchSessions,
    /// The share coordinator's persisted share-partition states.
    pub(crate) share_states: ShareStates,
    /// Finalized feature levels (`metadata.version` and the release's others), by name.
    pub(crate) features: BTreeMap<String, i16>,
}

impl State {
    pub(crate) fn up(&self, broker: i32) -> bool {
        self.brokers.get(&broker).is_some_and(|b| b.up)
    }

    /// A topic named by name or, when the name is empty (requests that name topics by id), by
    /// id: its name, if it exists.
    pub(crate) fn topic_name(&self, name: &str, id: Uuid) -> Option<String> {
        if name.is_empty() {
            self.topics.iter().find(|(_, t)| t.id == id && id != Uuid::ZERO).map(|(n, _)| n.clone())
        } else {
            self.topics.contains_key(name).then(|| name.to_owned())
        }
    }

    /// A topic's id (zero for an unknown topic).
    pub(crate) fn topic_id(&self, name: &str) -> Uuid {
        self.topics.get(name).map_or(Uuid::ZERO, |t| t.id)
    }

    /// A topic id, from the cluster's seeded generator.
    pub(crate) fn new_uuid(&mut self) -> Uuid {
        loop {
            let id = Uuid::from_u64_pair(self.rng.u64(..), self.rng.u64(..));
            if id != Uuid::ZERO {
                return id;
            }
        }
    }

    /// Creates a topic with `partitions` partitions of `replicas` replicas each (Kafka's
    /// rack-unaware assignment: round robin from a random broker).
    pub(crate) fn create_topic(&mut self, name: &str, partitions: i32, replicas: i16, configs: BTreeMap<String, String>) -> &Topic {
        let ids: Vec<i32> = self.brokers.keys().copied().collect();
        let n = ids.len().max(1);
        let start = self.rng.usize(..n);
        let shift = self.rng.usize(..n);
        let id = self.new_uuid();
        let mut list = Vec::new();
        for p in 0..partitions.max(0) as usize {
            let first = (start + p) % n;
            let mut r = vec![ids[first]];
            for j in 1..usize::try_from(replicas).unwrap_or(1).min(n) {
                r.push(ids[(first + 1 + (shift + j - 1) % (n - 1).max(1)) % n]);
            }
            r.dedup();
            let mut partition = Partition { replicas: r, leader: -1, leader_epoch: -1, log: Default::default() };
            let up = |b: i32| self.brokers.get(&b).is_some_and(|s| s.up);
            partition.elect(&up);
            list.push(partition);
        }
        self.topics.entry(name.to_owned()).or_insert(Topic { id, partitions: list, configs })
    }

    /// The coordinator of `key` (0 group, 1 transaction, 2 share group): the leader of its
    /// partition of the internal topic (`abs(hashCode) % partitions`, as Kafka's), unless a test
    /// moved it.
    pub(crate) fn coordinator(&self, kind: i8, key: &str, config: &ClusterConfig) -> Option<i32> {
        if let Some(b) = self.coordinators.get(&(kind, key.to_owned())) {
            return self.up(*b).then_some(*b);
        }
        let partitions = if kind == 1 { config.transaction_partitions } else { config.offsets_partitions };
        let partition = java_hash(key).unsigned_abs() % partitions.max(1) as u32;
        let ids: Vec<i32> = self.brokers.keys().copied().collect();
        let n = ids.len();
        // The internal topics' replicas: every broker, starting at the partition's index.
        (0..n).map(|i| ids[(partition as usize + i) % n]).find(|b| self.up(*b))
    }

    /// Every partition with a replica on `broker` elects again (its broker went down or up).
    fn reelect(&mut self) {
        let up: BTreeMap<i32, bool> = self.brokers.iter().map(|(id, b)| (*id, b.up)).collect();
        let is_up = |b: i32| up.get(&b).copied().unwrap_or(false);
        for topic in self.topics.values_mut() {
            for p in &mut topic.partitions {
                p.elect(&is_up);
            }
        }
    }
}

/// Java's `String.hashCode` (over UTF-16 code units), for coordinator placement.
fn java_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// The cluster's clock: wall-clock milliseconds that move with tokio's clock (so a test on the
/// paused clock sees the same times on every run).
pub(crate) struct Clock {
    start_ms: i64,
    start: tokio::time::Instant,
}

impl Clock {
    pub(crate) fn now_ms(&self) -> i64 {
        self.start_ms + self.start.elapsed().as_millis() as i64
    }

    /// When the cluster started, in ms since the epoch.
    pub(crate) fn start_ms(&self) -> i64 {
        self.start_ms
    }
}

pub(crate) struct Inner {
    pub(crate) config: ClusterConfig,
    state: Mutex<State>,
    /// Woken on every append, for Fetch requests waiting for data.
    pub(crate) appended: Notify,
    /// Woken when a group or transaction changes, for requests waiting on one.
    pub(crate) changed: Notify,
    pub(crate) clock: Clock,
    hooks: Mutex<Hooks>,
    journal: Mutex<Journal>,
    pub(crate) network: Network,
    next_connection: AtomicU64,
    /// TCP addresses of the brokers' listeners.
    tcp: Mutex<BTreeMap<(i32, Security), SocketAddr>>,
    /// Client ids cut off: their connections close, new ones are refused.
    cut: Mutex<Vec<String>>,
    /// Bumped to close every connection of cut clients.
    pub(crate) cut_changed: watch::Sender<u64>,
    /// Quota rate sensors and the throttles a test imposed.
    throttling: Mutex<crate::throttle::Throttling>,
}

impl Inner {
    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        // A handler that panicked left the state as it was; go on with it.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Whether connections of `listener` authenticate with SASL first: a SASL_PLAINTEXT
    /// listener's, and in-memory ones when the cluster has SASL users.
    pub(crate) fn needs_sasl(&self, listener: Listener) -> bool {
        match listener {
            Listener::Memory => self.config.has_sasl(),
            Listener::Tcp(security) => matches!(security, Security::SaslPlaintext | Security::SaslSsl),
        }
    }

    pub(crate) fn next_connection(&self) -> u64 {
        self.next_connection.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn hooks(&self) -> MutexGuard<'_, Hooks> {
        self.hooks.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Taken after the state's lock when both are.
    pub(crate) fn throttling(&self) -> MutexGuard<'_, crate::throttle::Throttling> {
        self.throttling.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn journal(&self) -> MutexGuard<'_, Journal> {
        self.journal.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn is_cut(&self, client_id: &str) -> bool {
        self.cut.lock().unwrap_or_else(|p| p.into_inner()).iter().any(|c| c == client_id)
    }

    /// The host and port of `broker` as clients of `listener` reach it.
    pub(crate) fn address(&self, broker: i32, listener: Listener) -> (String, i32) {
        match listener {
            Listener::Memory => (format!("broker-{broker}"), i32::from(MEMORY_PORT)),
            Listener::Tcp(security) => match self.tcp.lock().unwrap_or_else(|p| p.into_inner()).get(&(broker, security)) {
                Some(a) => (a.ip().to_string(), i32::from(a.port())),
                None => (format!("broker-{broker}"), i32::from(MEMORY_PORT)),
            },
        }
    }

    /// Tells waiting requests (fetches, joins) to look again.
    pub(crate) fn wake(&self) {
        self.appended.notify_waiters();
        self.changed.notify_waiters();
    }
}

/// A record as the log holds it, with its batch's producer fields.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LoggedRecord {
    /// The record (its offset and timestamp absolute).
    pub record: Record,
    /// Its batch's producer id (-1 without idempotence).
    pub producer_id: i64,
    /// Its batch's producer epoch (-1 without idempotence).
    pub producer_epoch: i16,
    /// Its batch's base sequence (-1 without idempotence).
    pub base_sequence: i32,
    /// Its batch is part of a transaction.
    pub transactional: bool,
}

/// An in-process Kafka cluster. Cheap to clone; every clone is the same cluster. Needs a tokio
/// runtime (its timers run as tasks); runs on tokio's paused clock too.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use kwire_fake::{Cluster, ClusterConfig};
///
/// let cluster = Cluster::start(ClusterConfig::default().brokers(3));
/// cluster.create_topic("orders", 6, 3).unwrap();
/// assert_eq!(cluster.bootstrap(), "broker-0:9092,broker-1:9092,broker-2:9092");
/// # }
/// ```
#[derive(Clone)]
pub struct Cluster {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cluster({} brokers, Kafka {})", self.inner.config.brokers, self.inner.config.release)
    }
}

/// Why a cluster operation was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ControlError {
    /// No such topic or partition.
    UnknownPartition(String),
    /// No such broker.
    UnknownBroker(i32),
    /// Kafka's error for the operation (an invalid topic, one that exists).
    Kafka(ErrorCode, String),
}

impl std::fmt::Display for ControlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ControlError::UnknownPartition(p) => write!(f, "no partition {p}"),
            ControlError::UnknownBroker(b) => write!(f, "no broker {b}"),
            ControlError::Kafka(code, m) => write!(f, "{}: {m}", code.name().unwrap_or("error")),
        }
    }
}

impl std::error::Error for ControlError {}

/// The future [`Cluster::connector`] returns.
pub type Connecting = Pin<Box<dyn std::future::Future<Output = io::Result<DuplexStream>> + Send>>;

impl Cluster {
    /// Starts a cluster with `config`: every broker up, no topics.
    pub fn start(config: ClusterConfig) -> Cluster {
        let mut brokers = BTreeMap::new();
        for id in 0..config.brokers {
            let rack = (!config.racks.is_empty()).then(|| config.racks[id as usize % config.racks.len()].clone());
            brokers.insert(id, BrokerState { up: true, rack, stopped: watch::channel(false).0 });
        }
        let clock = Clock {
            start_ms: config
                .clock_start_ms
                .unwrap_or_else(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)),
            start: tokio::time::Instant::now(),
        };
        let state = State {
            brokers,
            topics: BTreeMap::new(),
            rng: fastrand::Rng::with_seed(config.seed),
            next_producer_id: 1000,
            txns: Transactions::default(),
            groups: Groups::default(),
            coordinators: BTreeMap::new(),
            acls: Acls::default(),
            scram: ScramCredentials::default(),
            quotas: Quotas::default(),
            tokens: Tokens::default(),
            share_states: ShareStates::default(),
            telemetry: Telemetry::default(),
            fetch_sessions: FetchSessions::default(),
            features: config.release.features().iter().map(|(n, l)| ((*n).to_owned(), *l)).collect(),
        };
        let mut state = state;
        // The SCRAM users, as `kafka-storage format --add-scram` makes them.
        for (user, password) in &config.sasl_scram {
            for m in crate::scram::Mechanism::ALL {
                let salt = crate::scram::random_bytes(&mut state.rng, 16);
                let c = crate::scram::Credential::from_password(m, password, &salt, crate::scram::DEFAULT_ITERATIONS);
                state.scram.users.entry(user.clone()).or_default().insert(m, c);
            }
        }
        let inner = Arc::new(Inner {
            journal: Mutex::new(Journal::new(config.journal_capacity)),
            network: Network::new(config.seed),
            config,
            state: Mutex::new(state),
            appended: Notify::new(),
            changed: Notify::new(),
            clock,
            hooks: Mutex::new(Hooks::default()),
            next_connection: AtomicU64::new(0),
            tcp: Mutex::new(BTreeMap::new()),
            cut: Mutex::new(Vec::new()),
            cut_changed: watch::channel(0).0,
            throttling: Mutex::new(Default::default()),
        });
        tokio::spawn(crate::timers::run(Arc::downgrade(&inner)));
        Cluster { inner }
    }

    /// The settings.
    pub fn config(&self) -> &ClusterConfig {
        &self.inner.config
    }

    /// The bootstrap list of the in-memory network (`broker-0:9092,...`), or of TCP once
    /// [`listen`](Self::listen) was called.
    pub fn bootstrap(&self) -> String {
        let tcp = self.inner.tcp.lock().unwrap_or_else(|p| p.into_inner());
        (0..self.inner.config.brokers)
            .map(|b| match tcp.range((b, Security::Plaintext)..=(b, Security::SaslSsl)).next() {
                Some((_, a)) => a.to_string(),
                None => format!("broker-{b}:{MEMORY_PORT}"),
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Opens an in-memory connection to the broker at `addr` (`broker-N:9092`): the client's
    /// end of a pipe whose other end the broker serves, through the in-memory network's faults
    /// if any are set ([`set_faults`](Self::set_faults)). Refused while the broker is down.
    pub async fn connect(&self, addr: &str) -> io::Result<DuplexStream> {
        let broker = parse_memory_addr(addr).ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no broker at {addr}")))?;
        let stopped = {
            let state = self.inner.state();
            match state.brokers.get(&broker) {
                Some(b) if b.up => b.stopped.subscribe(),
                Some(_) => return Err(io::Error::new(io::ErrorKind::ConnectionRefused, format!("broker {broker} is down"))),
                None => return Err(io::Error::new(io::ErrorKind::NotFound, format!("no broker at {addr}"))),
            }
        };
        let connection = self.inner.next_connection();
        let (client, server) = network::open(&self.inner, connection);
        tokio::spawn(crate::server::serve(self.inner.clone(), broker, connection, Listener::Memory, server, stopped, Peer::new(MEMORY_HOST.into(), None)));
        Ok(client)
    }

    /// A function from a broker address to an in-memory connection ([`connect`](Self::connect)),
    /// for a client's transport (kwire-client's `Connector::new(cluster.connector())`).
    pub fn connector(&self) -> impl Fn(&str) -> Connecting + Send + Sync + Clone + 'static {
        let cluster = self.clone();
        move |addr: &str| {
            let cluster = cluster.clone();
            let addr = addr.to_owned();
            Box::pin(async move { cluster.connect(&addr).await })
        }
    }

    /// Listens on TCP as well: broker `N` on `addr`'s port plus `N` (every broker on a free
    /// port when it is 0). Metadata answers on these connections give the TCP addresses.
    /// SASL_PLAINTEXT when the cluster has SASL users, else PLAINTEXT; over TLS (SASL_SSL, SSL)
    /// when it has a certificate ([`ClusterConfig::tls`]). Returns each broker's address.
    pub async fn listen(&self, addr: SocketAddr) -> io::Result<Vec<SocketAddr>> {
        let c = &self.inner.config;
        let security = match (c.tls.is_some(), c.has_sasl()) {
            (false, false) => Security::Plaintext,
            (false, true) => Security::SaslPlaintext,
            (true, false) => Security::Ssl,
            (true, true) => Security::SaslSsl,
        };
        self.listen_with(addr, security).await
    }

    /// Listens on TCP with `security` (a broker may have one listener of each: PLAINTEXT
    /// beside SASL_PLAINTEXT, as Kafka's `listeners` list them); otherwise as [`listen`](Self::listen).
    /// SSL and SASL_SSL need [`ClusterConfig::tls`] (an `InvalidInput` error without it, or
    /// when its certificate or key does not load).
    pub async fn listen_with(&self, addr: SocketAddr, security: Security) -> io::Result<Vec<SocketAddr>> {
        let tls = match security {
            Security::Plaintext | Security::SaslPlaintext => None,
            Security::Ssl | Security::SaslSsl => match &self.inner.config.tls {
                Some(identity) => Some(identity.acceptor()?),
                None => return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("a {security:?} listener needs a certificate (ClusterConfig::tls)"))),
            },
        };
        let mut out = Vec::new();
        for broker in 0..self.inner.config.brokers {
            let mut at = addr;
            if addr.port() != 0 {
                at.set_port(addr.port() + u16::try_from(broker).unwrap_or(0));
            }
            let listener = tokio::net::TcpListener::bind(at).await?;
            let local = listener.local_addr()?;
            self.inner.tcp.lock().unwrap_or_else(|p| p.into_inner()).insert((broker, security), local);
            out.push(local);
            tokio::spawn(crate::server::accept(self.inner.clone(), broker, Listener::Tcp(security), listener, tls.clone()));
        }
        Ok(out)
    }

    /// Creates a topic (as CreateTopics would): `replicas` replicas per partition, at most one
    /// per broker.
    pub fn create_topic(&self, name: &str, partitions: i32, replicas: i16) -> Result<Uuid, ControlError> {
        if !crate::topics::valid_name(name) {
            return Err(ControlError::Kafka(ErrorCode::INVALID_TOPIC_EXCEPTION, format!("{name} is not a valid topic name")));
        }
        if partitions < 1 {
            return Err(ControlError::Kafka(ErrorCode::INVALID_PARTITIONS, "Number of partitions must be larger than 0.".into()));
        }
        let mut state = self.inner.state();
        if replicas < 1 || i32::from(replicas) > state.brokers.len() as i32 {
            return Err(ControlError::Kafka(
                ErrorCode::INVALID_REPLICATION_FACTOR,
                format!("Replication factor: {replicas} larger than available brokers: {}.", state.brokers.len()),
            ));
        }
        if state.topics.contains_key(name) {
            return Err(ControlError::Kafka(ErrorCode::TOPIC_ALREADY_EXISTS, format!("Topic '{name}' already exists.")));
        }
        Ok(state.create_topic(name, partitions, replicas, BTreeMap::new()).id)
    }

    /// Sets a topic config (`message.timestamp.type`, `max.message.bytes`, ...).
    pub fn set_topic_config(&self, topic: &str, name: &str, value: &str) -> Result<(), ControlError> {
        crate::topics::check_config(name, Some(value)).map_err(|(c, m)| ControlError::Kafka(c, m))?;
        let mut state = self.inner.state();
        let t = state.topics.get_mut(topic).ok_or_else(|| ControlError::UnknownPartition(topic.to_owned()))?;
        t.configs.insert(name.to_owned(), value.to_owned());
        Ok(())
    }

    /// Every record of a partition's log, from its log start, with its batch's producer
    /// fields (transaction markers left out): what a read-uncommitted consumer could read.
    pub fn records(&self, topic: &str, partition: i32) -> Result<Vec<LoggedRecord>, ControlError> {
        let state = self.inner.state();
        let p = state.topics.get(topic).and_then(|t| t.partition(partition)).ok_or_else(|| ControlError::UnknownPartition(format!("{topic}-{partition}")))?;
        let start = p.log.log_start();
        let mut out = Vec::new();
        for stored in p.log.batches() {
            for batch in Batches::new(stored.bytes.clone()).flatten() {
                let Batch::V2(b) = &batch else {
                    for r in batch.records().unwrap_or_default() {
                        out.push(LoggedRecord { record: r, producer_id: -1, producer_epoch: -1, base_sequence: -1, transactional: false });
                    }
                    continue;
                };
                if b.is_control() {
                    continue;
                }
                for r in b.records().into_iter().flatten().flatten() {
                    if r.offset >= start {
                        out.push(LoggedRecord {
                            record: r,
                            producer_id: b.producer_id(),
                            producer_epoch: b.producer_epoch(),
                            base_sequence: b.base_sequence(),
                            transactional: b.is_transactional(),
                        });
                    }
                }
            }
        }
        Ok(out)
    }

    /// The records a read-committed consumer reads from a partition: up to the last stable
    /// offset, without those of aborted transactions.
    pub fn committed_records(&self, topic: &str, partition: i32) -> Result<Vec<LoggedRecord>, ControlError> {
        let all = self.records(topic, partition)?;
        let state = self.inner.state();
        let p = state.topics.get(topic).and_then(|t| t.partition(partition)).ok_or_else(|| ControlError::UnknownPartition(format!("{topic}-{partition}")))?;
        let stable = p.log.last_stable();
        let aborted = p.log.aborted();
        Ok(all
            .into_iter()
            .filter(|r| r.record.offset < stable)
            .filter(|r| {
                !(r.transactional && aborted.iter().any(|a| a.producer_id == r.producer_id && (a.first_offset..=a.last_offset).contains(&r.record.offset)))
            })
            .collect())
    }

    /// The offset `group` has committed for a partition, if any (transactional commits count
    /// once their transaction committed).
    pub fn committed_offset(&self, group: &str, topic: &str, partition: i32) -> Option<i64> {
        self.inner.state().groups.committed(group, topic, partition)
    }

    /// Sets a group config (Kafka's dynamic group configs, as IncrementalAlterConfigs on a
    /// `GROUP` resource would): `share.record.lock.duration.ms`, `share.delivery.count.limit`,
    /// `share.auto.offset.reset` (`latest` or `earliest`), `share.isolation.level`
    /// (`read_uncommitted` or `read_committed`), `share.session.timeout.ms`,
    /// `share.heartbeat.interval.ms`, `consumer.session.timeout.ms`,
    /// `consumer.heartbeat.interval.ms`.
    pub fn set_group_config(&self, group: &str, name: &str, value: &str) -> Result<(), ControlError> {
        crate::groups::check_group_config(name, value).map_err(|m| ControlError::Kafka(ErrorCode::INVALID_CONFIG, m))?;
        self.inner.state().groups.configs.entry(group.to_owned()).or_default().insert(name.to_owned(), value.to_owned());
        Ok(())
    }

    /// The raw batches of a partition's log (transaction markers included), as a Fetch
    /// returns them.
    pub fn batches(&self, topic: &str, partition: i32) -> Result<Vec<Bytes>, ControlError> {
        let state = self.inner.state();
        let p = state.topics.get(topic).and_then(|t| t.partition(partition)).ok_or_else(|| ControlError::UnknownPartition(format!("{topic}-{partition}")))?;
        Ok(p.log.batches().iter().map(|b| b.bytes.clone()).collect())
    }

    /// A partition's (log start, last stable offset, high watermark).
    pub fn offsets(&self, topic: &str, partition: i32) -> Result<(i64, i64, i64), ControlError> {
        let state = self.inner.state();
        let p = state.topics.get(topic).and_then(|t| t.partition(partition)).ok_or_else(|| ControlError::UnknownPartition(format!("{topic}-{partition}")))?;
        Ok((p.log.log_start(), p.log.last_stable(), p.log.high_watermark()))
    }

    /// A partition's leader (-1: none) and leader epoch.
    pub fn leader(&self, topic: &str, partition: i32) -> Result<(i32, i32), ControlError> {
        let state = self.inner.state();
        let p = state.topics.get(topic).and_then(|t| t.partition(partition)).ok_or_else(|| ControlError::UnknownPartition(format!("{topic}-{partition}")))?;
        Ok((p.leader, p.leader_epoch))
    }

    /// Stops a broker: its connections close, new ones are refused, and its partitions move to
    /// other replicas that are up (leader epochs bumped), or have no leader.
    pub fn stop_broker(&self, broker: i32) -> Result<(), ControlError> {
        let mut state = self.inner.state();
        let b = state.brokers.get_mut(&broker).ok_or(ControlError::UnknownBroker(broker))?;
        b.up = false;
        b.stopped.send_replace(true);
        state.reelect();
        drop(state);
        self.inner.wake();
        Ok(())
    }

    /// Starts a stopped broker again; partitions without a leader elect one.
    pub fn start_broker(&self, broker: i32) -> Result<(), ControlError> {
        let mut state = self.inner.state();
        let b = state.brokers.get_mut(&broker).ok_or(ControlError::UnknownBroker(broker))?;
        b.up = true;
        b.stopped.send_replace(false);
        state.reelect();
        drop(state);
        self.inner.wake();
        Ok(())
    }

    /// Moves a partition's leadership to `to` (one of its replicas, up), under a new leader
    /// epoch.
    pub fn move_leader(&self, topic: &str, partition: i32, to: i32) -> Result<(), ControlError> {
        let mut state = self.inner.state();
        if !state.up(to) {
            return Err(ControlError::UnknownBroker(to));
        }
        let p = state
            .topics
            .get_mut(topic)
            .and_then(|t| t.partition_mut(partition))
            .ok_or_else(|| ControlError::UnknownPartition(format!("{topic}-{partition}")))?;
        if !p.replicas.contains(&to) {
            // A reassignment: the new leader joins the replicas first.
            p.replicas.insert(0, to);
        } else {
            p.replicas.retain(|r| *r != to);
            p.replicas.insert(0, to);
        }
        p.set_leader(to);
        drop(state);
        self.inner.wake();
        Ok(())
    }

    /// Bumps a partition's leader epoch, its leader unchanged (as a controller does when the
    /// ISR changes).
    pub fn bump_leader_epoch(&self, topic: &str, partition: i32) -> Result<i32, ControlError> {
        let mut state = self.inner.state();
        let p = state
            .topics
            .get_mut(topic)
            .and_then(|t| t.partition_mut(partition))
            .ok_or_else(|| ControlError::UnknownPartition(format!("{topic}-{partition}")))?;
        let leader = p.leader;
        p.set_leader(leader);
        Ok(p.leader_epoch)
    }

    /// Moves the coordinator of a group (`transactional == false`) or transactional id to
    /// `broker`.
    pub fn move_coordinator(&self, key: &str, transactional: bool, broker: i32) -> Result<(), ControlError> {
        let mut state = self.inner.state();
        if !state.brokers.contains_key(&broker) {
            return Err(ControlError::UnknownBroker(broker));
        }
        state.coordinators.insert((i8::from(transactional), key.to_owned()), broker);
        Ok(())
    }

    /// Cuts off every client with this client id: its connections close, and new ones are
    /// closed at their first request, until [`restore_client`](Self::restore_client).
    pub fn cut_client(&self, client_id: &str) {
        self.inner.cut.lock().unwrap_or_else(|p| p.into_inner()).push(client_id.to_owned());
        self.inner.cut_changed.send_modify(|n| *n += 1);
    }

    /// Throttles a client: every response to `client_id` that has a `throttle_time_ms` carries
    /// at least `throttle`, and its connection is not read for that long after (as a broker
    /// whose quota the client exceeded), until [`clear_throttles`](Self::clear_throttles).
    pub fn throttle_client(&self, client_id: &str, throttle: Duration) {
        self.inner.throttling().imposed.push((crate::throttle::Target::Client(client_id.to_owned()), throttle));
    }

    /// Throttles every client of a broker as [`throttle_client`](Self::throttle_client) does one.
    pub fn throttle_broker(&self, broker: i32, throttle: Duration) -> Result<(), ControlError> {
        if !self.inner.state().brokers.contains_key(&broker) {
            return Err(ControlError::UnknownBroker(broker));
        }
        self.inner.throttling().imposed.push((crate::throttle::Target::Broker(broker), throttle));
        Ok(())
    }

    /// Removes the throttles of [`throttle_client`](Self::throttle_client) and
    /// [`throttle_broker`](Self::throttle_broker) (quotas stay).
    pub fn clear_throttles(&self) {
        self.inner.throttling().imposed.clear();
    }

    /// Sets (`Some`) or removes (`None`) a client quota, as AlterClientQuotas would: `entity`
    /// names `user` and/or `client-id` (`None`: the default), `key` is `producer_byte_rate`,
    /// `consumer_byte_rate`, `request_percentage` or `controller_mutation_rate`. The byte rates
    /// throttle Produce and Fetch on each broker (see the crate's README).
    pub fn set_quota(&self, entity: &[(&str, Option<&str>)], key: &str, value: Option<f64>) -> Result<(), ControlError> {
        let entity: crate::quotas::Entity = entity.iter().map(|(t, n)| ((*t).to_owned(), n.map(str::to_owned))).collect();
        let invalid = |m: String| ControlError::Kafka(ErrorCode::INVALID_REQUEST, m);
        crate::quotas::check_entity(&entity).map_err(invalid)?;
        if let Some(v) = value {
            crate::quotas::check_value(&entity, key, v).map_err(invalid)?;
        }
        self.inner.state().quotas.set(&entity, key, value);
        Ok(())
    }

    /// Compacts every partition of a `cleanup.policy=compact` topic now, as Kafka's log cleaner
    /// would (everything below the last stable offset is cleanable): the latest record of each
    /// key stays at its offset, tombstones, keyless records and aborted transactions' records
    /// go. Returns the records removed; INVALID_CONFIG for a topic that is not compacted.
    pub fn compact(&self, topic: &str) -> Result<usize, ControlError> {
        let mut state = self.inner.state();
        let t = state.topics.get_mut(topic).ok_or_else(|| ControlError::UnknownPartition(topic.to_owned()))?;
        let policy = t.configs.get("cleanup.policy").map_or("delete", String::as_str);
        if !policy.split(',').any(|p| p.trim() == "compact") {
            return Err(ControlError::Kafka(ErrorCode::INVALID_CONFIG, format!("{topic} has cleanup.policy={policy}: nothing to compact")));
        }
        Ok(t.partitions.iter_mut().map(|p| p.log.compact()).sum())
    }

    /// Holds transaction markers: an EndTxn is answered (the transaction prepares to commit or
    /// abort) but its markers are not written, so the partitions' last stable offsets stay at
    /// the transaction's first record and read_committed consumers wait, and the producer's next
    /// transaction gets CONCURRENT_TRANSACTIONS, as with a coordinator whose markers are slow;
    /// until [`release_markers`](Self::release_markers).
    pub fn hold_markers(&self) {
        self.inner.state().txns.hold_markers = true;
    }

    /// Writes the markers held since [`hold_markers`](Self::hold_markers) and writes new ones at
    /// once again.
    pub fn release_markers(&self) {
        let now = self.inner.now_ms();
        let mut state = self.inner.state();
        state.txns.hold_markers = false;
        crate::handlers::end_timed_out(&mut state, now);
        drop(state);
        self.inner.wake();
    }

    /// Lets a cut client connect again.
    pub fn restore_client(&self, client_id: &str) {
        self.inner.cut.lock().unwrap_or_else(|p| p.into_inner()).retain(|c| c != client_id);
    }

    /// Installs a hook; the first installed that matches a request acts on it.
    pub fn hook(&self, hook: Hook) -> HookId {
        self.inner.hooks().add(hook)
    }

    /// Removes a hook; whether it was still installed.
    pub fn unhook(&self, id: HookId) -> bool {
        self.inner.hooks().remove(id)
    }

    /// Removes every hook.
    pub fn unhook_all(&self) {
        self.inner.hooks().clear();
    }

    /// The last requests the brokers took (up to [`ClusterConfig::journal_capacity`]).
    pub fn journal(&self) -> Vec<Entry> {
        self.inner.journal().entries()
    }

    /// Sets (or with `None` clears) the faults of the in-memory network: connections opened
    /// from now on meet them.
    pub fn set_faults(&self, faults: Option<FaultConfig>) {
        self.inner.network.set(faults);
    }

    /// The faults the in-memory network has struck so far.
    pub fn fault_counts(&self) -> crate::network::FaultCounts {
        self.inner.network.counts()
    }

    /// The cluster's clock, in ms since the epoch.
    pub fn now_ms(&self) -> i64 {
        self.inner.now_ms()
    }
}

/// `broker-N:PORT` (or `broker-N`) to `N`.
fn parse_memory_addr(addr: &str) -> Option<i32> {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    host.strip_prefix("broker-")?.parse().ok()
}
