//! Broker-wide configuration and state.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;

use kwire::Uuid;
use tokio::sync::Notify;

use crate::groups::Groups;
use crate::storage::Topics;

/// What the broker was started with.
#[derive(Debug, Clone)]
pub struct Config {
    /// The address clients are told to connect to (the bound address).
    pub advertised: SocketAddr,
    /// SASL/PLAIN credentials; `None` means no authentication (a PLAINTEXT listener).
    pub sasl_plain: Option<(String, String)>,
    /// Partitions of an auto-created topic, and of a CreateTopics entry asking for the default.
    pub default_partitions: i32,
    /// Whether Metadata (and nothing else, as in Kafka) creates topics it is asked about.
    pub auto_create_topics: bool,
    /// Log one line per request.
    pub verbose: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            advertised: SocketAddr::from(([127, 0, 0, 1], 9092)),
            sasl_plain: None,
            default_partitions: 1,
            auto_create_topics: true,
            verbose: false,
        }
    }
}

/// The node id of this broker, its controller id and the leader of every partition.
pub const NODE_ID: i32 = 0;
/// The cluster id reported in Metadata.
pub const CLUSTER_ID: &str = "kwire-mini-broker";
/// The leader epoch of every partition: leadership never moves.
pub const LEADER_EPOCH: i32 = 0;

/// Shared state: topics and their logs, consumer groups, producer ids.
pub struct Broker {
    pub config: Config,
    pub topics: Mutex<Topics>,
    /// Woken on every append, for Fetch requests waiting for `min_bytes`.
    pub appended: Notify,
    pub groups: Mutex<Groups>,
    next_producer_id: AtomicI64,
}

impl Broker {
    pub fn new(config: Config) -> Broker {
        Broker {
            config,
            topics: Mutex::new(Topics::default()),
            appended: Notify::new(),
            groups: Mutex::new(Groups::default()),
            next_producer_id: AtomicI64::new(1000),
        }
    }

    pub fn next_producer_id(&self) -> i64 {
        self.next_producer_id.fetch_add(1, Ordering::Relaxed)
    }

    pub fn topics(&self) -> std::sync::MutexGuard<'_, Topics> {
        // A poisoned lock means a handler panicked mid-update; the example stops serving then.
        self.topics.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn groups(&self) -> std::sync::MutexGuard<'_, Groups> {
        self.groups.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A random, non-zero topic id.
pub fn random_uuid() -> Uuid {
    let word = || RandomState::new().build_hasher().finish();
    Uuid::from_u64_pair(word() | 1, word())
}

/// Kafka error codes the broker uses.
pub mod errors {
    pub const NONE: i16 = 0;
    pub const OFFSET_OUT_OF_RANGE: i16 = 1;
    pub const CORRUPT_MESSAGE: i16 = 2;
    pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
    pub const INVALID_TOPIC_EXCEPTION: i16 = 17;
    pub const INVALID_REQUIRED_ACKS: i16 = 21;
    pub const ILLEGAL_GENERATION: i16 = 22;
    pub const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
    pub const UNKNOWN_MEMBER_ID: i16 = 25;
    pub const REBALANCE_IN_PROGRESS: i16 = 27;
    pub const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
    pub const ILLEGAL_SASL_STATE: i16 = 34;
    pub const UNSUPPORTED_VERSION: i16 = 35;
    pub const TOPIC_ALREADY_EXISTS: i16 = 36;
    pub const INVALID_PARTITIONS: i16 = 37;
    pub const INVALID_REPLICATION_FACTOR: i16 = 38;
    pub const SASL_AUTHENTICATION_FAILED: i16 = 58;
    pub const UNKNOWN_TOPIC_ID: i16 = 100;
}
