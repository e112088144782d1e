//! The brokers' request handlers: one module per area, each a function from the decoded
//! request to its response, as Kafka's `KafkaApis` dispatches them.

mod acls;
pub(crate) mod admin;
mod authorize;
pub(crate) mod errors;
mod fetch;
mod groups;
mod log_dirs;
mod metadata;
mod offsets;
mod produce;
mod quorum;
mod quotas;
mod reassignments;
mod scram;
mod share;
mod share_offsets;
mod share_state;
mod streams;
mod telemetry;
mod tokens;
mod txn;

use std::sync::Arc;

use kwire::{ErrorCode, RequestKind, ResponseKind};

use crate::cluster::{Inner, Listener};

pub(crate) use txn::end_timed_out;

/// Who asked, where: what a handler needs besides the request.
pub(crate) struct Ctx<'a> {
    pub(crate) inner: &'a Arc<Inner>,
    /// The broker the connection is to.
    pub(crate) broker: i32,
    pub(crate) version: i16,
    pub(crate) listener: Listener,
    pub(crate) client_id: &'a str,
    /// The client's address, as an ACL's host names it.
    pub(crate) host: &'a str,
    /// The authenticated principal (`User:ANONYMOUS` without SASL).
    pub(crate) principal: &'a str,
    /// Authenticated with a delegation token.
    pub(crate) token_auth: bool,
}

impl Ctx<'_> {
    /// Whether the authorizer lets this connection's principal do `operation` on a resource
    /// (always without an authorizer, and for super users). Takes the state's lock.
    pub(crate) fn authorized(&self, operation: i8, resource_type: i8, name: &str) -> bool {
        if self.unrestricted() {
            return true;
        }
        self.inner.state().acls.allows(self.principal, self.host, operation, resource_type, name)
    }

    /// [`authorized`](Self::authorized) with the state already locked.
    pub(crate) fn authorized_in(&self, state: &crate::cluster::State, operation: i8, resource_type: i8, name: &str) -> bool {
        self.unrestricted() || state.acls.allows(self.principal, self.host, operation, resource_type, name)
    }

    /// TOPIC_AUTHORIZATION_FAILED unless this principal may do `operation` on topic `name`, with
    /// the state already locked.
    pub(crate) fn topic_access(&self, state: &crate::cluster::State, operation: i8, name: &str) -> Result<(), ErrorCode> {
        if self.authorized_in(state, operation, crate::acl::resource::TOPIC, name) {
            Ok(())
        } else {
            Err(ErrorCode::TOPIC_AUTHORIZATION_FAILED)
        }
    }

    /// Whether some resource of the type may get the operation (Kafka's
    /// `authorizeByResourceType`), with the state already locked.
    pub(crate) fn authorized_any_in(&self, state: &crate::cluster::State, operation: i8, resource_type: i8) -> bool {
        self.unrestricted() || state.acls.allows_any(self.principal, self.host, operation, resource_type)
    }

    /// No authorizer, or a super user.
    pub(crate) fn unrestricted(&self) -> bool {
        let c = &self.inner.config;
        !c.acl_authorizer || c.super_users.iter().any(|u| u == self.principal)
    }
}

/// What to do after a request.
pub(crate) enum Reply {
    Send(ResponseKind),
    /// Produce with acks = 0: no response.
    Nothing,
    /// Send, then close (a failed authentication).
    SendAndClose(ResponseKind),
    /// Close without a response.
    #[allow(dead_code)]
    Close,
}

/// Handles one request (SASL aside: the connection does that).
pub(crate) async fn handle(ctx: &Ctx<'_>, request: RequestKind) -> Reply {
    let send = |r: ResponseKind| Reply::Send(r);
    if let Some(code) = authorize::refusal(ctx, &request) {
        return errors_or_close(&request, ctx.version, code);
    }
    match request {
        RequestKind::ApiVersions(_) => send(metadata::api_versions(ctx).into()),
        RequestKind::Metadata(r) => send(metadata::metadata(ctx, &r).into()),
        RequestKind::DescribeCluster(r) => send(metadata::describe_cluster(ctx, &r).into()),
        RequestKind::FindCoordinator(r) => send(metadata::find_coordinator(ctx, &r).into()),
        RequestKind::Produce(r) => match produce::produce(ctx, &r) {
            Some(response) => send(response.into()),
            None => Reply::Nothing,
        },
        RequestKind::Fetch(r) => send(fetch::fetch(ctx, &r).await.into()),
        RequestKind::ListOffsets(r) => send(offsets::list_offsets(ctx, &r).into()),
        RequestKind::OffsetForLeaderEpoch(r) => send(offsets::offset_for_leader_epoch(ctx, &r).into()),
        RequestKind::DeleteRecords(r) => send(offsets::delete_records(ctx, &r).into()),
        RequestKind::CreateTopics(r) => send(admin::create_topics(ctx, &r).into()),
        RequestKind::DeleteTopics(r) => send(admin::delete_topics(ctx, &r).into()),
        RequestKind::CreatePartitions(r) => send(admin::create_partitions(ctx, &r).into()),
        RequestKind::DescribeConfigs(r) => send(admin::describe_configs(ctx, &r).into()),
        RequestKind::IncrementalAlterConfigs(r) => send(admin::incremental_alter_configs(ctx, &r).into()),
        RequestKind::AlterConfigs(r) => send(admin::alter_configs(ctx, &r).into()),
        RequestKind::InitProducerId(r) => send(txn::init_producer_id(ctx, &r).into()),
        RequestKind::AddPartitionsToTxn(r) => send(txn::add_partitions(ctx, &r).into()),
        RequestKind::AddOffsetsToTxn(r) => send(txn::add_offsets(ctx, &r).into()),
        RequestKind::EndTxn(r) => send(txn::end_txn(ctx, &r).into()),
        RequestKind::TxnOffsetCommit(r) => send(txn::txn_offset_commit(ctx, &r).into()),
        RequestKind::DescribeProducers(r) => send(txn::describe_producers(ctx, &r).into()),
        RequestKind::DescribeTransactions(r) => send(txn::describe_transactions(ctx, &r).into()),
        RequestKind::ListTransactions(r) => send(txn::list_transactions(ctx, &r).into()),
        RequestKind::JoinGroup(r) => send(groups::join_group(ctx, &r).await.into()),
        RequestKind::SyncGroup(r) => send(groups::sync_group(ctx, &r).await.into()),
        RequestKind::Heartbeat(r) => send(groups::heartbeat(ctx, &r).into()),
        RequestKind::LeaveGroup(r) => send(groups::leave_group(ctx, &r).into()),
        // v0 kept offsets in ZooKeeper: a KRaft broker advertises it and refuses it.
        RequestKind::OffsetCommit(r) if ctx.version == 0 => errors_or_close(&RequestKind::OffsetCommit(r), 0, ErrorCode::UNSUPPORTED_VERSION),
        RequestKind::OffsetFetch(r) if ctx.version == 0 => errors_or_close(&RequestKind::OffsetFetch(r), 0, ErrorCode::UNSUPPORTED_VERSION),
        RequestKind::OffsetCommit(r) => send(groups::offset_commit(ctx, &r).into()),
        RequestKind::OffsetFetch(r) => send(groups::offset_fetch(ctx, &r).into()),
        RequestKind::OffsetDelete(r) => send(groups::offset_delete(ctx, &r).into()),
        RequestKind::ListGroups(r) => send(groups::list_groups(ctx, &r).into()),
        RequestKind::DescribeGroups(r) => send(groups::describe_groups(ctx, &r).into()),
        RequestKind::DeleteGroups(r) => send(groups::delete_groups(ctx, &r).into()),
        RequestKind::ConsumerGroupHeartbeat(r) => send(groups::consumer_group_heartbeat(ctx, &r).into()),
        RequestKind::ConsumerGroupDescribe(r) => send(groups::consumer_group_describe(ctx, &r).into()),
        RequestKind::ShareGroupHeartbeat(r) => send(groups::share_group_heartbeat(ctx, &r).into()),
        RequestKind::ShareGroupDescribe(r) => send(groups::share_group_describe(ctx, &r).into()),
        RequestKind::ShareFetch(r) => send(share::share_fetch(ctx, &r).await.into()),
        RequestKind::ShareAcknowledge(r) => send(share::share_acknowledge(ctx, &r).into()),
        RequestKind::GetTelemetrySubscriptions(r) => send(telemetry::get_subscriptions(ctx, &r).into()),
        RequestKind::PushTelemetry(r) => send(telemetry::push(ctx, &r).into()),
        RequestKind::ListConfigResources(r) => send(admin::list_config_resources(ctx, &r).into()),
        RequestKind::DescribeTopicPartitions(r) => send(metadata::describe_topic_partitions(ctx, &r).into()),
        RequestKind::DescribeLogDirs(r) => send(log_dirs::describe(ctx, &r).into()),
        RequestKind::AlterReplicaLogDirs(r) => send(log_dirs::alter(ctx, &r).into()),
        RequestKind::AlterPartitionReassignments(r) => send(reassignments::alter(ctx, &r).into()),
        RequestKind::ListPartitionReassignments(r) => send(reassignments::list(ctx, &r).into()),
        RequestKind::ElectLeaders(r) => send(reassignments::elect_leaders(ctx, &r).into()),
        RequestKind::DescribeQuorum(r) => send(quorum::describe_quorum(ctx, &r).into()),
        RequestKind::UpdateFeatures(r) => send(quorum::update_features(ctx, &r).into()),
        RequestKind::AddRaftVoter(_) => send(quorum::add_raft_voter(ctx).into()),
        RequestKind::RemoveRaftVoter(_) => send(quorum::remove_raft_voter(ctx).into()),
        RequestKind::UnregisterBroker(r) => send(quorum::unregister_broker(ctx, &r).into()),
        RequestKind::UnregisterController(r) => send(quorum::unregister_controller(ctx, &r).into()),
        RequestKind::StreamsGroupHeartbeat(r) => send(streams::heartbeat(ctx, &r).into()),
        RequestKind::StreamsGroupDescribe(r) => send(streams::describe(ctx, &r).into()),
        RequestKind::StreamsGroupTopologyDescriptionUpdate(r) => send(streams::topology_description_update(ctx, &r).into()),
        RequestKind::WriteTxnMarkers(r) => send(txn::write_txn_markers(ctx, &r).into()),
        RequestKind::CreateAcls(r) => send(acls::create_acls(ctx, &r).into()),
        RequestKind::DescribeAcls(r) => send(acls::describe_acls(ctx, &r).into()),
        RequestKind::DeleteAcls(r) => send(acls::delete_acls(ctx, &r).into()),
        RequestKind::DescribeUserScramCredentials(r) => send(scram::describe(ctx, &r).into()),
        RequestKind::AlterUserScramCredentials(r) => send(scram::alter(ctx, &r).into()),
        RequestKind::DescribeClientQuotas(r) => send(quotas::describe(ctx, &r).into()),
        RequestKind::AlterClientQuotas(r) => send(quotas::alter(ctx, &r).into()),
        RequestKind::CreateDelegationToken(r) => send(tokens::create(ctx, &r).into()),
        RequestKind::RenewDelegationToken(r) => send(tokens::renew(ctx, &r).into()),
        RequestKind::ExpireDelegationToken(r) => send(tokens::expire(ctx, &r).into()),
        RequestKind::DescribeDelegationToken(r) => send(tokens::describe(ctx, &r).into()),
        RequestKind::DescribeShareGroupOffsets(r) => send(share_offsets::describe(ctx, &r).into()),
        RequestKind::AlterShareGroupOffsets(r) => send(share_offsets::alter(ctx, &r).into()),
        RequestKind::DeleteShareGroupOffsets(r) => send(share_offsets::delete(ctx, &r).into()),
        RequestKind::InitializeShareGroupState(r) => send(share_state::initialize(ctx, &r).into()),
        RequestKind::ReadShareGroupState(r) => send(share_state::read(ctx, &r).into()),
        RequestKind::WriteShareGroupState(r) => send(share_state::write(ctx, &r).into()),
        RequestKind::DeleteShareGroupState(r) => send(share_state::delete(ctx, &r).into()),
        RequestKind::ReadShareGroupStateSummary(r) => send(share_state::summary(ctx, &r).into()),
        // Served nowhere in this fake yet: Kafka's answer to a version it does not serve.
        other => {
            let version = ctx.version;
            errors_or_close(&other, version, ErrorCode::UNSUPPORTED_VERSION)
        }
    }
}

/// The api's error response with `code`, or a close when it has none.
fn errors_or_close(request: &RequestKind, version: i16, code: ErrorCode) -> Reply {
    match errors::response(request, version, code) {
        Some(body) => Reply::Send(body),
        None => Reply::Close,
    }
}

/// A `ByteString` of a `&str`.
pub(crate) fn s(v: &str) -> kwire::ByteString {
    kwire::ByteString::from(v.to_owned())
}
