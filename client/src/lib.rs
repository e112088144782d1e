//! kwire-client: an async Apache Kafka client on tokio, built on kwire's generated
//! message types and its connection codec.
//!
//! - [`Connection`]: one broker, TCP or TLS (rustls), SASL PLAIN / SCRAM-SHA-256 / SCRAM-SHA-512 /
//!   OAUTHBEARER (an application's [`TokenProvider`], or OIDC client credentials with the `oidc`
//!   feature) with re-authentication (KIP-368), ApiVersions negotiation, pipelined requests with
//!   per-request timeouts.
//! - [`Client`]: the cluster: bootstrap, metadata cache, connection per broker with reconnect
//!   backoff, routing to leaders and the controller.
//! - [`Admin`]: topics, partitions and records; configs; consumer groups and their offsets;
//!   ACLs; client quotas; SCRAM users; brokers, features, the KRaft quorum, log directories,
//!   reassignments and leader elections.
//! - [`Producer`]: Java's partitioner, batching, compression, acks, idempotence, retries;
//!   transactions (`init_transactions`, `begin_transaction`, `send_offsets_to_transaction`,
//!   `commit_transaction`, `abort_transaction`; V1 and KIP-890's V2) for exactly-once pipelines.
//! - [`Consumer`]: manual assignment or consumer groups (classic and KIP-848), incremental
//!   fetch sessions, read_committed, leader epochs, offsets and commits, streams.
//! - [`ShareConsumer`]: share groups (KIP-932): records delivered to one member at a time,
//!   acknowledged one by one (accept, release, reject, renew), with delivery counts.
//!
//! Every failure is an [`Error`], with [`Error::is_retriable`]; the producer's, the
//! consumer's, the group's and the transactions' own failures are [`ProducerError`],
//! [`ConsumerError`], [`GroupError`] and [`TransactionError`] kinds to match on.
//!
//! The types are at the crate root; two modules are public because their functions are the
//! API: [`assignor`] (Java's range, round-robin, sticky and cooperative-sticky assignors) and [`partitioner`]
//! (Java's murmur2 partitioning).
#![warn(missing_docs)]

mod admin;
pub mod assignor;
mod cluster;
mod conn;
mod consumer;
mod coordinator;
mod error;
mod future;
mod group;
pub mod metrics;
#[doc(hidden)]
pub mod mutation;
mod offsets;
#[cfg(feature = "oidc")]
mod oidc;
pub mod partitioner;
mod producer;
mod random;
mod request;
mod retry;
mod route;
mod sasl;
mod share;
mod sync;
#[cfg(feature = "telemetry")]
mod telemetry;
#[cfg(feature = "tls")]
mod tls;
mod topic_partition;

pub use admin::{
    AclBinding, AclBindingFilter, AclOperation, AclPermission, ActiveProducer, Admin, ClusterDescription, ConfigEntry, ConfigOp, ConfigResource, ConfigSynonym,
    CreatedTopic, DelegationToken, DeletedRecords, FeatureLevel, Features, GroupDescription, GroupFilter, GroupListing, LogDir, LogDirReplica,
    MemberDescription, NewPartitions, NewTopic, PagedPartition, PagedTopic, PartitionLag, PatternType, QuorumDescription, QuorumReplica, QuotaAlteration,
    QuotaEntity, QuotaFilter, Reassignment, ReplicaLogDirInfo, ResourceType, ScramChange, ScramCredential, ShareGroupDescription, ShareOffset,
    StreamsGroupDescription, StreamsMember, Subtopology, TopicCursor, TopicPartitionsPage, TransactionDescription, TransactionFilter, TransactionListing,
};
pub use assignor::Assignor;
pub use cluster::{BrokerInfo, Client, ClientConfig, ClusterMetadata, PartitionInfo, TopicInfo};
pub use conn::{ApiVersionsSeen, ConnectOptions, Connection, Connector, Transport, Versions};
pub use consumer::{
    Consumer, ConsumerConfig, ConsumerGroupMetadata, ConsumerRecord, FetchStats, IsolationLevel, ListenerFuture, OffsetReset, RebalanceListener,
};
pub use error::{ConsumerError, Error, GroupError, OAuthError, ProducerError, Resource, Result, ShareError, TransactionError, TransactionState, Unexpected};
pub use future::ClientFuture;
pub use group::GroupProtocol;
pub use offsets::{ListedOffset, OffsetAndMetadata, OffsetSpec};
#[cfg(feature = "oidc")]
pub use oidc::{AssertionAlgorithm, JwtAssertion, OidcConfig, OidcProvider};
pub use producer::{Acks, Delivery, IntoTopic, Producer, ProducerConfig, ProducerRecord, ProducerStats, RecordMetadata};
pub use route::Route;
pub use sasl::{OAuthBearer, OAuthBearerToken, RefreshPolicy, Sasl, ScramMechanism, TokenFuture, TokenProvider};
pub use share::{AcknowledgeType, AcknowledgementCommit, AcknowledgementMode, ShareConsumer, ShareConsumerConfig, ShareRecord};
#[cfg(feature = "tls")]
pub use tls::{ClientIdentity, Roots, TlsConfig};
pub use topic_partition::TopicPartition;

/// The README's examples, compiled as doctests so they keep up with the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
