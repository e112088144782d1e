//! Admin operations with typed results, as Java's `Admin` has them: topics, partitions and
//! records; configs; consumer groups and their offsets; ACLs; client quotas; SCRAM users; the
//! cluster (brokers, features, the KRaft quorum, log directories, reassignments, leader
//! elections); transactions (list, describe, fence, abort a hanging one); delegation tokens.
//!
//! One file per kind of resource; every operation goes where Kafka routes it (the controller,
//! a partition's leader, a group's coordinator, every broker for listings).

mod acls;
mod cluster;
mod configs;
mod groups;
mod quotas;
mod records;
mod share_groups;
mod streams_groups;
mod tokens;
mod topics;
mod transactions;
mod users;

use std::time::Duration;

use kwire::{ApiKey, ByteString, ErrorCode, RequestKind, ResponseKind};

use crate::cluster::Client;
use crate::error::Error;

pub use acls::{AclBinding, AclBindingFilter, AclOperation, AclPermission, PatternType, ResourceType};
pub use cluster::{ClusterDescription, FeatureLevel, Features, LogDir, LogDirReplica, QuorumDescription, QuorumReplica, Reassignment, ReplicaLogDirInfo};
pub use configs::{ConfigEntry, ConfigOp, ConfigResource, ConfigSynonym};
pub use groups::{GroupDescription, GroupFilter, GroupListing, MemberDescription, PartitionLag};
pub use quotas::{QuotaAlteration, QuotaEntity, QuotaFilter};
pub use records::DeletedRecords;
pub use share_groups::{ShareGroupDescription, ShareOffset};
pub use streams_groups::{StreamsGroupDescription, StreamsMember, Subtopology};
pub use tokens::DelegationToken;
pub use topics::{CreatedTopic, NewPartitions, NewTopic, PagedPartition, PagedTopic, TopicCursor, TopicPartitionsPage};
pub use transactions::{ActiveProducer, TransactionDescription, TransactionFilter, TransactionListing};
pub use users::{ScramChange, ScramCredential};

/// Admin operations on a [`Client`]'s cluster.
///
/// ```no_run
/// # async fn run() -> kwire_client::Result<()> {
/// use kwire_client::{Admin, Client, ClientConfig, NewTopic};
///
/// let admin = Admin::new(Client::connect(ClientConfig::new("localhost:9092")).await?);
/// admin.create_topic(NewTopic::new("orders", 6).replication_factor(3)).await?;
/// for group in admin.list_groups().await? {
///     println!("{} {}", group.group_id, group.state);
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Admin {
    client: Client,
    /// How long the broker may take on topic operations.
    pub operation_timeout: Duration,
}

/// Backoff between attempts while leaders or coordinators move.
const BACKOFF: Duration = Duration::from_millis(100);

/// Attempts at a controller-bound request while the controller moves.
const CONTROLLER_ATTEMPTS: u32 = 10;

fn bs(s: &str) -> ByteString {
    ByteString::from(s.to_owned())
}

fn unexpected(api: ApiKey, got: &ResponseKind) -> Error {
    Error::UnexpectedResponse(format!("{:?} response to {}", got.api_key(), api.name()))
}

/// NOT_CONTROLLER's code when a controller-bound response carries it, at the top or for any
/// item, else 0: the node was no longer the controller. It answers so for the whole request
/// (it handles or forwards a request as one), so the whole request goes again.
fn not_controller(r: &ResponseKind) -> i16 {
    let nc = ErrorCode::NOT_CONTROLLER.0;
    fn any(mut codes: impl Iterator<Item = i16>) -> bool {
        codes.any(|c| c == ErrorCode::NOT_CONTROLLER.0)
    }
    let found = match r {
        ResponseKind::CreateTopics(r) => any(r.topics.iter().map(|t| t.error_code)),
        ResponseKind::DeleteTopics(r) => any(r.responses.iter().map(|t| t.error_code)),
        ResponseKind::CreatePartitions(r) => any(r.results.iter().map(|t| t.error_code)),
        ResponseKind::AlterPartitionReassignments(r) => r.error_code == nc,
        ResponseKind::ListPartitionReassignments(r) => r.error_code == nc,
        ResponseKind::ElectLeaders(r) => r.error_code == nc,
        ResponseKind::CreateAcls(r) => any(r.results.iter().map(|x| x.error_code)),
        ResponseKind::DeleteAcls(r) => any(r.filter_results.iter().map(|x| x.error_code)),
        ResponseKind::AlterClientQuotas(r) => any(r.entries.iter().map(|x| x.error_code)),
        ResponseKind::AlterUserScramCredentials(r) => any(r.results.iter().map(|x| x.error_code)),
        _ => false,
    };
    if found {
        nc
    } else {
        0
    }
}

/// The result in `results` that `matches`, or an error naming what is missing.
fn result_for<'a, T>(results: &'a [T], api: ApiKey, what: &str, matches: impl Fn(&T) -> bool) -> crate::Result<&'a T> {
    results.iter().find(|r| matches(r)).ok_or_else(|| Error::UnexpectedResponse(format!("{} response has no result for {what}", api.name())))
}

impl Admin {
    /// Admin operations through `client`.
    pub fn new(client: Client) -> Admin {
        Admin { client, operation_timeout: Duration::from_secs(30) }
    }

    /// The client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// `build(version)` to the controller Metadata names, at the version its connection uses
    /// for `api`. On NOT_CONTROLLER (`code_of` reads it from the response) or a lost
    /// connection, fresh metadata and again, as Java's admin client does for
    /// controller-bound requests.
    async fn call_controller_versioned(
        &self,
        api: ApiKey,
        build: impl Fn(i16) -> RequestKind,
        code_of: impl Fn(&ResponseKind) -> i16,
    ) -> crate::Result<ResponseKind> {
        let mut last = None;
        let mut retry = crate::retry::Retry::new(crate::retry::Backoff::constant(BACKOFF), CONTROLLER_ATTEMPTS);
        while retry.next().await {
            let mut controller = self.client.metadata().controller_id;
            if controller < 0 || last.is_some() {
                controller = self.client.refresh_metadata().await?.controller_id;
            }
            let attempt = async {
                if controller < 0 {
                    return self.client.call_any_versioned(api, &build).await;
                }
                let version = self.client.node_version(controller, api).await?;
                self.client.call_node(controller, build(version)).await?.ok_or_else(|| Error::UnexpectedResponse(format!("no response to {}", api.name())))
            };
            match attempt.await {
                Ok(r) if ErrorCode(code_of(&r)) == ErrorCode::NOT_CONTROLLER => {
                    last = Some(Error::broker(ErrorCode::NOT_CONTROLLER, None, format!("{} at node {controller}", api.name())))
                }
                Ok(r) => return Ok(r),
                Err(e) if e.is_retriable() => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| Error::UnexpectedResponse(format!("no attempt at {}", api.name()))))
    }

    /// `body` to the controller, again on NOT_CONTROLLER anywhere in the answer (see
    /// [`not_controller`]).
    async fn call_controller_retrying(&self, body: impl Into<RequestKind>) -> crate::Result<ResponseKind> {
        let body = body.into();
        self.call_controller_versioned(body.api_key(), |_| body.clone(), not_controller).await
    }

    fn timeout_ms(&self) -> i32 {
        self.operation_timeout.as_millis().min(i32::MAX as u128) as i32
    }
}
