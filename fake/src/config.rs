//! What a cluster is started with.

use std::time::Duration;

use crate::oauth::OAuthBearerConfig;
use crate::tls::TlsIdentity;
use crate::versions::Release;

/// A fake cluster's settings, with Kafka's defaults where Kafka has one.
///
/// ```
/// use kwire_fake::{ClusterConfig, Release};
///
/// let config = ClusterConfig::default().brokers(3).release(Release::V4_4).seed(7).sasl_plain("alice", "s3cret");
/// assert_eq!(config.brokers, 3);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClusterConfig {
    /// Brokers, numbered from 0 (1).
    pub brokers: i32,
    /// The release whose api versions the brokers advertise (4.4).
    pub release: Release,
    /// The seed of every random choice the cluster makes (topic ids, member ids, the faults of
    /// its in-memory network): the same seed, the same choices.
    pub seed: u64,
    /// SASL/PLAIN users; without any, listeners need no authentication.
    pub sasl_plain: Vec<(String, String)>,
    /// SCRAM users: a SCRAM-SHA-256 and a SCRAM-SHA-512 credential each, as `kafka-storage
    /// format --add-scram` makes them (4096 iterations).
    pub sasl_scram: Vec<(String, String)>,
    /// SASL/OAUTHBEARER with unsecured JWS tokens (Kafka's default validator: `alg` "none",
    /// the `sub` claim the principal, `exp` checked); `None`: not offered.
    pub oauthbearer: Option<OAuthBearerConfig>,
    /// The certificate and key of TLS listeners (SSL, SASL_SSL); without it only PLAINTEXT and
    /// SASL_PLAINTEXT listeners can start.
    pub tls: Option<TlsIdentity>,
    /// Brokers' racks (`broker.rack`): broker N is in `racks[N % len]`; none when empty.
    pub racks: Vec<String>,
    /// Whether leaders choose a preferred read replica for consumers that send their rack
    /// (`replica.selector.class=RackAwareReplicaSelector`, KIP-392; false: Kafka's default,
    /// always the leader).
    pub rack_aware_replica_selector: bool,
    /// Whether an ACL authorizer (Kafka's `StandardAuthorizer`) checks every request against
    /// the ACLs, [`super_users`](Self::super_users) aside (false: no authorizer, and the ACL apis
    /// answer SECURITY_DISABLED).
    pub acl_authorizer: bool,
    /// Principals every operation is allowed to with the authorizer (`super.users`: `User:admin`).
    pub super_users: Vec<String>,
    /// Delegation tokens' HMAC key (`delegation.token.secret.key`); without it the token apis
    /// answer DELEGATION_TOKEN_AUTH_DISABLED.
    pub delegation_token_secret: Option<String>,
    /// Partitions of a topic created without a count (`num.partitions`, 1).
    pub default_partitions: i32,
    /// Replicas of a topic created without a factor (`default.replication.factor`: 1, at most
    /// the number of brokers).
    pub default_replication: i16,
    /// Whether Metadata requests create the topics they name (`auto.create.topics.enable`,
    /// true).
    pub auto_create_topics: bool,
    /// Partitions of `__consumer_offsets` (`offsets.topic.num.partitions`, 50): which broker
    /// coordinates a group.
    pub offsets_partitions: i32,
    /// Partitions of `__transaction_state` (`transaction.state.log.num.partitions`, 50).
    pub transaction_partitions: i32,
    /// The longest transaction timeout a producer may ask for
    /// (`transaction.max.timeout.ms`, 15 minutes).
    pub max_transaction_timeout: Duration,
    /// Whether a transactional batch is refused unless its partition is in the producer's
    /// ongoing transaction (KIP-890 part 1, `transaction.partition.verification.enable`,
    /// true); from Produce v12 the leader adds the partition itself (transactions V2).
    pub transaction_verification: bool,
    /// The wall-clock time the cluster's clock starts at, in ms since the epoch: the clock
    /// then moves with tokio's (so a run on the paused clock is the same every time). `None`:
    /// the system clock at start.
    pub clock_start_ms: Option<i64>,
    /// The longest time a request waits in the broker (a Fetch for `min_bytes`, a JoinGroup
    /// for the group), whatever it asks for (30 s).
    pub max_wait: Duration,
    /// How long the first rebalance of an empty classic group waits for more members
    /// (`group.initial.rebalance.delay.ms`, 3 s).
    pub group_initial_rebalance_delay: Duration,
    /// Requests kept in the journal ([`Cluster::journal`](crate::Cluster::journal), 10,000).
    pub journal_capacity: usize,
    /// Writes a line per request to stderr (`request api=Produce key=0 version=11
    /// client_id="..." broker=0`): what the binary's `--verbose` does.
    pub log_requests: bool,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            brokers: 1,
            release: Release::V4_4,
            seed: 0,
            sasl_plain: Vec::new(),
            sasl_scram: Vec::new(),
            oauthbearer: None,
            tls: None,
            racks: Vec::new(),
            rack_aware_replica_selector: false,
            acl_authorizer: false,
            super_users: Vec::new(),
            delegation_token_secret: None,
            default_partitions: 1,
            default_replication: 1,
            auto_create_topics: true,
            offsets_partitions: 50,
            transaction_partitions: 50,
            max_transaction_timeout: Duration::from_secs(900),
            transaction_verification: true,
            clock_start_ms: None,
            max_wait: Duration::from_secs(30),
            group_initial_rebalance_delay: crate::groups::defaults::INITIAL_REBALANCE_DELAY,
            journal_capacity: 10_000,
            log_requests: false,
        }
    }
}

impl ClusterConfig {
    /// Sets [`brokers`](Self::brokers).
    pub fn brokers(mut self, brokers: i32) -> Self {
        self.brokers = brokers.max(1);
        self
    }

    /// Sets [`release`](Self::release).
    pub fn release(mut self, release: Release) -> Self {
        self.release = release;
        self
    }

    /// Sets [`seed`](Self::seed).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Adds a SASL/PLAIN user.
    pub fn sasl_plain(mut self, user: &str, password: &str) -> Self {
        self.sasl_plain.push((user.to_owned(), password.to_owned()));
        self
    }

    /// Adds a SCRAM user (SCRAM-SHA-256 and SCRAM-SHA-512 credentials).
    pub fn sasl_scram(mut self, user: &str, password: &str) -> Self {
        self.sasl_scram.push((user.to_owned(), password.to_owned()));
        self
    }

    /// Offers SASL/OAUTHBEARER, validating tokens as Kafka's unsecured validator does with
    /// these options.
    pub fn sasl_oauthbearer(mut self, config: OAuthBearerConfig) -> Self {
        self.oauthbearer = Some(config);
        self
    }

    /// Puts broker N in rack `racks[N % len]` ([`racks`](Self::racks)).
    pub fn racks<S: AsRef<str>>(mut self, racks: &[S]) -> Self {
        self.racks = racks.iter().map(|r| r.as_ref().to_owned()).collect();
        self
    }

    /// Turns on the rack-aware replica selector ([`rack_aware_replica_selector`](Self::rack_aware_replica_selector)).
    pub fn rack_aware_replica_selector(mut self) -> Self {
        self.rack_aware_replica_selector = true;
        self
    }

    /// Sets [`tls`](Self::tls).
    pub fn tls(mut self, identity: TlsIdentity) -> Self {
        self.tls = Some(identity);
        self
    }

    /// Whether listeners authenticate: any SASL user, or OAUTHBEARER.
    pub fn has_sasl(&self) -> bool {
        !self.sasl_plain.is_empty() || !self.sasl_scram.is_empty() || self.oauthbearer.is_some()
    }

    /// Turns the ACL authorizer on, with these super users (`User:admin`; a bare name is taken
    /// as `User:NAME`).
    pub fn acl_authorizer<S: AsRef<str>>(mut self, super_users: &[S]) -> Self {
        self.acl_authorizer = true;
        self.super_users = super_users.iter().map(|u| if u.as_ref().contains(':') { u.as_ref().to_owned() } else { format!("User:{}", u.as_ref()) }).collect();
        self
    }

    /// Sets [`delegation_token_secret`](Self::delegation_token_secret).
    pub fn delegation_token_secret(mut self, key: &str) -> Self {
        self.delegation_token_secret = Some(key.to_owned());
        self
    }

    /// Sets [`default_partitions`](Self::default_partitions).
    pub fn default_partitions(mut self, partitions: i32) -> Self {
        self.default_partitions = partitions.max(1);
        self
    }

    /// Sets [`default_replication`](Self::default_replication).
    pub fn default_replication(mut self, replicas: i16) -> Self {
        self.default_replication = replicas.max(1);
        self
    }

    /// Sets [`auto_create_topics`](Self::auto_create_topics).
    pub fn auto_create_topics(mut self, yes: bool) -> Self {
        self.auto_create_topics = yes;
        self
    }

    /// Sets [`log_requests`](Self::log_requests).
    pub fn log_requests(mut self, yes: bool) -> Self {
        self.log_requests = yes;
        self
    }

    /// Sets [`group_initial_rebalance_delay`](Self::group_initial_rebalance_delay).
    pub fn group_initial_rebalance_delay(mut self, delay: Duration) -> Self {
        self.group_initial_rebalance_delay = delay;
        self
    }

    /// Sets [`clock_start_ms`](Self::clock_start_ms).
    pub fn clock_start_ms(mut self, ms: i64) -> Self {
        self.clock_start_ms = Some(ms);
        self
    }
}
