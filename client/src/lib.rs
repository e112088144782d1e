//! kwire-client: an async Apache Kafka client on tokio, built on kwire's generated
//! message types and its connection codec.
//!
//! - [`Connection`]: one broker, TCP or TLS (rustls), SASL PLAIN / SCRAM-SHA-256 / SCRAM-SHA-512
//!   with re-authentication (KIP-368), ApiVersions negotiation, pipelined requests with
//!   per-request timeouts.
//! - [`Client`]: the cluster: bootstrap, metadata cache, connection per broker with reconnect
//!   backoff, routing to leaders and the controller.
//! - [`Admin`]: topics, partitions, cluster, configs, SCRAM users.
//! - [`Producer`]: Java's partitioner, batching, compression, acks, idempotence, retries.
//! - [`Consumer`]: manual assignment or consumer groups (classic and KIP-848), incremental
//!   fetch sessions, read_committed, leader epochs, offsets and commits, streams.
//!
//! Every failure is an [`Error`], with [`Error::is_retriable`].
#![warn(missing_docs)]

pub mod admin;
pub mod assignor;
pub mod cluster;
pub mod conn;
pub mod consumer;
pub mod error;
pub mod group;
pub mod partitioner;
pub mod producer;
mod retry;
pub mod sasl;
pub mod tls;
mod topic_partition;

pub use admin::{Admin, ConfigOp, ConfigResource, NewTopic, ScramChange};
pub use assignor::{cooperative_sticky_assign, Assignor, Member};
pub use cluster::{Client, ClientConfig, ClusterMetadata};
pub use conn::{ConnectOptions, Connection};
pub use consumer::{
    Consumer, ConsumerConfig, ConsumerRecord, FetchStats, IsolationLevel, ListenerFuture, OffsetAndMetadata, OffsetReset, OffsetSpec,
    RebalanceListener,
};
pub use error::{ConsumerError, Error, GroupError, ProducerError, Resource, Result};
pub use group::GroupProtocol;
pub use topic_partition::TopicPartition;
pub use producer::{
    Acks, Delivery, Producer, ProducerConfig, ProducerRecord, ProducerStats, RecordMetadata,
};
pub use sasl::{Sasl, ScramMechanism};
pub use tls::TlsConfig;

/// The README's examples, compiled as doctests so they keep up with the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
