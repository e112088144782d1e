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

use std::fmt;
use std::time::Duration;

use kwire::messages as m;
use kwire::{ApiKey, ApiRequest, ByteString, ErrorCode};

use crate::cluster::Client;
use crate::error::{Error, Unexpected};
use crate::route::Route;

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

/// A controller-bound answer that may say the node was no longer the controller: NOT_CONTROLLER
/// at the top or for any item. The node answers so for the whole request (it handles or
/// forwards a request as one), so the whole request goes again.
trait ControllerAnswer {
    /// Whether the answer carries NOT_CONTROLLER anywhere.
    fn not_controller(&self) -> bool;
}

/// NOT_CONTROLLER's code.
fn is_nc(code: i16) -> bool {
    code == ErrorCode::NOT_CONTROLLER.0
}

macro_rules! controller_answer {
    ($($t:ty => |$r:ident| $e:expr;)*) => {$(
        impl ControllerAnswer for $t {
            fn not_controller(&self) -> bool {
                let $r = self;
                $e
            }
        }
    )*};
}

controller_answer! {
    m::CreateTopicsResponse => |r| r.topics.iter().any(|t| is_nc(t.error_code));
    m::DeleteTopicsResponse => |r| r.responses.iter().any(|t| is_nc(t.error_code));
    m::CreatePartitionsResponse => |r| r.results.iter().any(|t| is_nc(t.error_code));
    m::AlterPartitionReassignmentsResponse => |r| is_nc(r.error_code);
    m::ListPartitionReassignmentsResponse => |r| is_nc(r.error_code);
    m::ElectLeadersResponse => |r| is_nc(r.error_code);
    m::CreateAclsResponse => |r| r.results.iter().any(|x| is_nc(x.error_code));
    m::DeleteAclsResponse => |r| r.filter_results.iter().any(|x| is_nc(x.error_code));
    m::AlterClientQuotasResponse => |r| r.entries.iter().any(|x| is_nc(x.error_code));
    m::AlterUserScramCredentialsResponse => |r| r.results.iter().any(|x| is_nc(x.error_code));
}

/// The result in `results` that `matches`, or an error naming what is missing.
fn result_for<T>(results: &[T], api: ApiKey, what: impl fmt::Display, matches: impl Fn(&T) -> bool) -> crate::Result<&T> {
    results.iter().find(|r| matches(r)).ok_or_else(|| Error::missing(api, what))
}

/// `results` when there is one per item sent, else the error saying how many came.
fn one_each<T>(api: ApiKey, results: &[T], sent: usize) -> crate::Result<&[T]> {
    if results.len() == sent {
        Ok(results)
    } else {
        Err(Error::unexpected(api, Unexpected::Count { sent, received: results.len() }))
    }
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
    /// for the api. On NOT_CONTROLLER (`code_of` reads it from the response) or a lost
    /// connection, fresh metadata and again, as Java's admin client does for
    /// controller-bound requests.
    async fn send_controller<R: ApiRequest>(&self, build: impl Fn(i16) -> R, code_of: impl Fn(&R::Response) -> i16) -> crate::Result<R::Response> {
        let mut last = None;
        let mut retry = crate::retry::Retry::new(crate::retry::Backoff::constant(BACKOFF), CONTROLLER_ATTEMPTS);
        while retry.next().await {
            if self.client.metadata().controller_id < 0 || last.is_some() {
                self.client.refresh_metadata().await?;
            }
            let controller = self.client.metadata().controller_id;
            match self.client.send_versioned(Route::Controller, &build).await {
                Ok(r) if ErrorCode(code_of(&r)) == ErrorCode::NOT_CONTROLLER => {
                    last = Some(Error::broker(ErrorCode::NOT_CONTROLLER, None, format!("{} at node {controller}", R::API.name())))
                }
                Ok(r) => return Ok(r),
                Err(e) if e.is_retriable() => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| Error::unexpected(R::API, Unexpected::NoResponse)))
    }

    /// `request` to the controller, again on NOT_CONTROLLER anywhere in the answer (see
    /// [`ControllerAnswer`]).
    async fn send_controller_retrying<R>(&self, request: R) -> crate::Result<R::Response>
    where
        R: ApiRequest + Clone,
        R::Response: ControllerAnswer,
    {
        self.send_controller(|_| request.clone(), |r| if r.not_controller() { ErrorCode::NOT_CONTROLLER.0 } else { 0 }).await
    }

    fn timeout_ms(&self) -> i32 {
        self.operation_timeout.as_millis().min(i32::MAX as u128) as i32
    }
}
