//! kwire-fake: an in-process Kafka cluster for any client's tests.
//!
//! Brokers that speak every api version of a chosen Kafka release (kwire's generated types and
//! connection codec), with Kafka's semantics where Kafka defines them: idempotent and
//! transactional produce decided by each partition's producer state, fetch with isolation
//! levels and leader epochs, consumer groups, the transaction coordinator. Clients reach it over
//! TCP ([`Cluster::listen`]) or, in Rust, over an in-memory pipe ([`Cluster::connector`]) that
//! needs no port and runs on tokio's paused clock. A test controls it: hooks per api
//! ([`Hook`]: errors, delays, lost responses, disconnects), brokers stopped and started,
//! leaders and coordinators moved, a faulty in-memory network ([`FaultConfig`]), and a
//! journal of every request ([`Cluster::journal`]).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
//! use kwire::ApiKey;
//! use kwire_fake::{Action, Cluster, ClusterConfig, Hook};
//!
//! let cluster = Cluster::start(ClusterConfig::default().brokers(3).seed(1));
//! cluster.create_topic("orders", 3, 3).unwrap();
//! // The next Produce is written, and its response lost: the client cannot know.
//! cluster.hook(Hook::on(ApiKey::Produce).once().action(Action::DropResponse));
//! // A client connects with `cluster.connector()` (kwire-client: `ClientConfig::connector`)
//! // or to `cluster.listen(..)`'s addresses, then the test reads the log back:
//! assert!(cluster.records("orders", 0).unwrap().is_empty());
//! # }
//! ```
#![warn(missing_docs)]

mod acl;
mod cluster;
mod config;
mod control;
mod fetch_sessions;
mod groups;
mod handlers;
mod log;
mod network;
mod oauth;
mod quotas;
mod scram;
mod server;
mod share_state;
mod telemetry;
mod throttle;
mod timers;
mod tls;
mod tokens;
mod topics;
mod txn;
mod versions;

pub use cluster::{Cluster, Connecting, ControlError, LoggedRecord, Security, MEMORY_PORT};
pub use config::ClusterConfig;
pub use control::{Action, Entry, Hook, HookId, Responder, Seen};
pub use network::{Direction, FaultConfig, FaultCounts, FaultKind, Plan};
pub use oauth::OAuthBearerConfig;
pub use tls::TlsIdentity;
pub use versions::Release;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
