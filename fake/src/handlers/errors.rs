//! Error responses as Kafka's `AbstractRequest.getErrorResponse` builds them: the code in the
//! top-level error field where the response has one, else in every topic, partition or
//! resource the request named; and the error codes of a response, for the journal.

use kwire::messages::*;
use kwire::{ErrorCode, RequestKind, ResponseKind, Visit};

use super::s;

/// The error codes of a response (those that are not NONE), in wire order.
pub(crate) fn codes(response: &ResponseKind) -> Vec<ErrorCode> {
    response.errors().into_iter().map(|(_, c)| c).collect()
}

/// Flips a bit of every record batch's CRC in a Fetch response (a hook's [`CorruptCrc`]).
///
/// [`CorruptCrc`]: crate::Action::CorruptCrc
pub(crate) fn corrupt_records(response: &mut ResponseKind) {
    let ResponseKind::Fetch(r) = response else { return };
    for t in &mut r.responses {
        for p in &mut t.partitions {
            let Some(records) = p.records.take() else { continue };
            let mut bytes = kwire::BytesMut::from(&records[..]);
            let mut at = 0;
            while at + 61 <= bytes.len() {
                let len = i32::from_be_bytes([bytes[at + 8], bytes[at + 9], bytes[at + 10], bytes[at + 11]]);
                let Ok(len) = usize::try_from(len) else { break };
                bytes[at + 17] ^= 0x01;
                at += 12 + len;
            }
            p.records = Some(bytes.freeze());
        }
    }
}

/// Kafka's error response for `request` at `version` with `code`; `None` for an api this
/// cannot answer that way (the connection is closed instead).
pub(crate) fn response(request: &RequestKind, version: i16, code: ErrorCode) -> Option<ResponseKind> {
    let c = code.0;
    let message = code.message().map(s);
    Some(match request {
        RequestKind::Produce(r) => ProduceResponse {
            responses: r
                .topic_data
                .iter()
                .map(|t| produce_response::TopicProduceResponse {
                    name: t.name.clone(),
                    topic_id: t.topic_id,
                    partition_responses: t
                        .partition_data
                        .iter()
                        .map(|p| produce_response::PartitionProduceResponse {
                            index: p.index,
                            error_code: c,
                            base_offset: -1,
                            log_append_time_ms: -1,
                            log_start_offset: -1,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::Fetch(r) => FetchResponse {
            error_code: if version >= 7 { c } else { 0 },
            responses: r
                .topics
                .iter()
                .map(|t| fetch_response::FetchableTopicResponse {
                    topic: t.topic.clone(),
                    topic_id: t.topic_id,
                    partitions: t
                        .partitions
                        .iter()
                        .map(|p| fetch_response::PartitionData {
                            partition_index: p.partition,
                            error_code: c,
                            high_watermark: -1,
                            last_stable_offset: -1,
                            log_start_offset: -1,
                            preferred_read_replica: -1,
                            records: Some(Default::default()),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::ListOffsets(r) => ListOffsetsResponse {
            topics: r
                .topics
                .iter()
                .map(|t| list_offsets_response::ListOffsetsTopicResponse {
                    name: t.name.clone(),
                    partitions: t
                        .partitions
                        .iter()
                        .map(|p| list_offsets_response::ListOffsetsPartitionResponse {
                            partition_index: p.partition_index,
                            error_code: c,
                            timestamp: -1,
                            offset: -1,
                            leader_epoch: -1,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::Metadata(r) => MetadataResponse {
            error_code: c,
            topics: r
                .topics
                .iter()
                .flatten()
                .map(|t| metadata_response::MetadataResponseTopic {
                    error_code: c,
                    name: t.name.clone(),
                    topic_id: t.topic_id,
                    topic_authorized_operations: i32::MIN,
                    ..Default::default()
                })
                .collect(),
            cluster_authorized_operations: i32::MIN,
            controller_id: -1,
            ..Default::default()
        }
        .into(),
        RequestKind::OffsetCommit(r) => OffsetCommitResponse {
            topics: r
                .topics
                .iter()
                .map(|t| offset_commit_response::OffsetCommitResponseTopic {
                    name: t.name.clone(),
                    topic_id: t.topic_id,
                    partitions: t
                        .partitions
                        .iter()
                        .map(|p| offset_commit_response::OffsetCommitResponsePartition {
                            partition_index: p.partition_index,
                            error_code: c,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        // v8+ answers per group; before, per partition (and, from v2, at the top too).
        RequestKind::OffsetFetch(r) if version < 8 => OffsetFetchResponse {
            error_code: if version >= 2 { c } else { 0 },
            topics: r
                .topics
                .iter()
                .flatten()
                .map(|t| offset_fetch_response::OffsetFetchResponseTopic {
                    name: t.name.clone(),
                    partitions: t
                        .partition_indexes
                        .iter()
                        .map(|p| offset_fetch_response::OffsetFetchResponsePartition {
                            partition_index: *p,
                            committed_offset: -1,
                            committed_leader_epoch: -1,
                            error_code: c,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::OffsetFetch(r) => OffsetFetchResponse {
            error_code: c,
            groups: r
                .groups
                .iter()
                .map(|g| offset_fetch_response::OffsetFetchResponseGroup { group_id: g.group_id.clone(), error_code: c, ..Default::default() })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::TxnOffsetCommit(r) => TxnOffsetCommitResponse {
            topics: r
                .topics
                .iter()
                .map(|t| txn_offset_commit_response::TxnOffsetCommitResponseTopic {
                    name: t.name.clone(),
                    topic_id: t.topic_id,
                    partitions: t
                        .partitions
                        .iter()
                        .map(|p| txn_offset_commit_response::TxnOffsetCommitResponsePartition {
                            partition_index: p.partition_index,
                            error_code: c,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::AddPartitionsToTxn(r) => {
            let topics = |ts: &[add_partitions_to_txn_request::AddPartitionsToTxnTopic]| -> Vec<add_partitions_to_txn_response::AddPartitionsToTxnTopicResult> {
                ts.iter()
                    .map(|t| add_partitions_to_txn_response::AddPartitionsToTxnTopicResult {
                        name: t.name.clone(),
                        results_by_partition: t
                            .partitions
                            .iter()
                            .map(|p| add_partitions_to_txn_response::AddPartitionsToTxnPartitionResult {
                                partition_index: *p,
                                partition_error_code: c,
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    })
                    .collect()
            };
            if version <= 3 {
                AddPartitionsToTxnResponse { results_by_topic_v3_and_below: topics(&r.v3_and_below_topics), ..Default::default() }.into()
            } else {
                AddPartitionsToTxnResponse { error_code: c, ..Default::default() }.into()
            }
        }
        RequestKind::CreateTopics(r) => CreateTopicsResponse {
            topics: r
                .topics
                .iter()
                .map(|t| create_topics_response::CreatableTopicResult {
                    name: t.name.clone(),
                    error_code: c,
                    error_message: message.clone(),
                    num_partitions: -1,
                    replication_factor: -1,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::DeleteTopics(r) => DeleteTopicsResponse {
            responses: if version >= 6 {
                r.topics
                    .iter()
                    .map(|t| delete_topics_response::DeletableTopicResult {
                        name: t.name.clone(),
                        topic_id: t.topic_id,
                        error_code: c,
                        error_message: message.clone(),
                        ..Default::default()
                    })
                    .collect()
            } else {
                r.topic_names
                    .iter()
                    .map(|n| delete_topics_response::DeletableTopicResult { name: Some(n.clone()), error_code: c, ..Default::default() })
                    .collect()
            },
            ..Default::default()
        }
        .into(),
        RequestKind::CreatePartitions(r) => CreatePartitionsResponse {
            results: r
                .topics
                .iter()
                .map(|t| create_partitions_response::CreatePartitionsTopicResult {
                    name: t.name.clone(),
                    error_code: c,
                    error_message: message.clone(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::DeleteRecords(r) => DeleteRecordsResponse {
            topics: r
                .topics
                .iter()
                .map(|t| delete_records_response::DeleteRecordsTopicResult {
                    name: t.name.clone(),
                    partitions: t
                        .partitions
                        .iter()
                        .map(|p| delete_records_response::DeleteRecordsPartitionResult {
                            partition_index: p.partition_index,
                            low_watermark: -1,
                            error_code: c,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::OffsetForLeaderEpoch(r) => OffsetForLeaderEpochResponse {
            topics: r
                .topics
                .iter()
                .map(|t| offset_for_leader_epoch_response::OffsetForLeaderTopicResult {
                    topic: t.topic.clone(),
                    partitions: t
                        .partitions
                        .iter()
                        .map(|p| offset_for_leader_epoch_response::EpochEndOffset {
                            error_code: c,
                            partition: p.partition,
                            leader_epoch: -1,
                            end_offset: -1,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::DescribeConfigs(r) => DescribeConfigsResponse {
            results: r
                .resources
                .iter()
                .map(|res| describe_configs_response::DescribeConfigsResult {
                    error_code: c,
                    error_message: message.clone(),
                    resource_type: res.resource_type,
                    resource_name: res.resource_name.clone(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::IncrementalAlterConfigs(r) => IncrementalAlterConfigsResponse {
            responses: r
                .resources
                .iter()
                .map(|res| incremental_alter_configs_response::AlterConfigsResourceResponse {
                    error_code: c,
                    error_message: message.clone(),
                    resource_type: res.resource_type,
                    resource_name: res.resource_name.clone(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::AlterConfigs(r) => AlterConfigsResponse {
            responses: r
                .resources
                .iter()
                .map(|res| alter_configs_response::AlterConfigsResourceResponse {
                    error_code: c,
                    error_message: message.clone(),
                    resource_type: res.resource_type,
                    resource_name: res.resource_name.clone(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::DescribeGroups(r) => DescribeGroupsResponse {
            groups: r
                .groups
                .iter()
                .map(|g| describe_groups_response::DescribedGroup { error_code: c, group_id: g.clone(), authorized_operations: i32::MIN, ..Default::default() })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::DeleteGroups(r) => DeleteGroupsResponse {
            results: r
                .groups_names
                .iter()
                .map(|g| delete_groups_response::DeletableGroupResult { group_id: g.clone(), error_code: c, ..Default::default() })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::DescribeProducers(r) => DescribeProducersResponse {
            topics: r
                .topics
                .iter()
                .map(|t| describe_producers_response::TopicResponse {
                    name: t.name.clone(),
                    partitions: t
                        .partition_indexes
                        .iter()
                        .map(|p| describe_producers_response::PartitionResponse {
                            partition_index: *p,
                            error_code: c,
                            error_message: message.clone(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::WriteTxnMarkers(r) => WriteTxnMarkersResponse {
            markers: r
                .markers
                .iter()
                .map(|m| write_txn_markers_response::WritableTxnMarkerResult {
                    producer_id: m.producer_id,
                    topics: m
                        .topics
                        .iter()
                        .map(|t| write_txn_markers_response::WritableTxnMarkerTopicResult {
                            name: t.name.clone(),
                            partitions: t
                                .partition_indexes
                                .iter()
                                .map(|p| write_txn_markers_response::WritableTxnMarkerPartitionResult {
                                    partition_index: *p,
                                    error_code: c,
                                    ..Default::default()
                                })
                                .collect(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::CreateAcls(r) => CreateAclsResponse {
            results: r
                .creations
                .iter()
                .map(|_| create_acls_response::AclCreationResult { error_code: c, error_message: message.clone(), ..Default::default() })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::DeleteAcls(r) => DeleteAclsResponse {
            filter_results: r
                .filters
                .iter()
                .map(|_| delete_acls_response::DeleteAclsFilterResult { error_code: c, error_message: message.clone(), ..Default::default() })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::AlterReplicaLogDirs(r) => AlterReplicaLogDirsResponse {
            results: r
                .dirs
                .iter()
                .flat_map(|d| d.topics.iter())
                .map(|t| alter_replica_log_dirs_response::AlterReplicaLogDirTopicResult {
                    topic_name: t.name.clone(),
                    partitions: t
                        .partitions
                        .iter()
                        .map(|p| alter_replica_log_dirs_response::AlterReplicaLogDirPartitionResult {
                            partition_index: *p,
                            error_code: c,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        // v3+ has a top-level code; before, a result with it.
        RequestKind::DescribeLogDirs(_) if version < 3 => DescribeLogDirsResponse {
            results: vec![describe_log_dirs_response::DescribeLogDirsResult { error_code: c, ..Default::default() }],
            ..Default::default()
        }
        .into(),
        RequestKind::AlterClientQuotas(r) => AlterClientQuotasResponse {
            entries: r
                .entries
                .iter()
                .map(|e| alter_client_quotas_response::EntryData {
                    error_code: c,
                    error_message: message.clone(),
                    entity: e
                        .entity
                        .iter()
                        .map(|d| alter_client_quotas_response::EntityData {
                            entity_type: d.entity_type.clone(),
                            entity_name: d.entity_name.clone(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::AlterUserScramCredentials(r) => {
            let mut users: Vec<kwire::ByteString> = Vec::new();
            for u in r.deletions.iter().map(|d| &d.name).chain(r.upsertions.iter().map(|u| &u.name)) {
                if !users.contains(u) {
                    users.push(u.clone());
                }
            }
            AlterUserScramCredentialsResponse {
                results: users
                    .into_iter()
                    .map(|user| alter_user_scram_credentials_response::AlterUserScramCredentialsResult {
                        user,
                        error_code: c,
                        error_message: message.clone(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }
            .into()
        }
        RequestKind::DescribeTransactions(r) => DescribeTransactionsResponse {
            transaction_states: r
                .transactional_ids
                .iter()
                .map(|id| describe_transactions_response::TransactionState {
                    error_code: c,
                    transactional_id: id.clone(),
                    producer_id: -1,
                    producer_epoch: -1,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::ConsumerGroupDescribe(r) => ConsumerGroupDescribeResponse {
            groups: r
                .group_ids
                .iter()
                .map(|g| consumer_group_describe_response::DescribedGroup {
                    error_code: c,
                    error_message: message.clone(),
                    group_id: g.clone(),
                    authorized_operations: i32::MIN,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::ShareGroupDescribe(r) => ShareGroupDescribeResponse {
            groups: r
                .group_ids
                .iter()
                .map(|g| share_group_describe_response::DescribedGroup {
                    error_code: c,
                    error_message: message.clone(),
                    group_id: g.clone(),
                    authorized_operations: i32::MIN,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::StreamsGroupDescribe(r) => StreamsGroupDescribeResponse {
            groups: r
                .group_ids
                .iter()
                .map(|g| streams_group_describe_response::DescribedGroup {
                    error_code: c,
                    error_message: message.clone(),
                    group_id: g.clone(),
                    authorized_operations: i32::MIN,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::DescribeTopicPartitions(r) => DescribeTopicPartitionsResponse {
            topics: r
                .topics
                .iter()
                .map(|t| describe_topic_partitions_response::DescribeTopicPartitionsResponseTopic {
                    error_code: c,
                    name: Some(t.name.clone()),
                    topic_authorized_operations: i32::MIN,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::DescribeShareGroupOffsets(r) => DescribeShareGroupOffsetsResponse {
            groups: r
                .groups
                .iter()
                .map(|g| describe_share_group_offsets_response::DescribeShareGroupOffsetsResponseGroup {
                    group_id: g.group_id.clone(),
                    error_code: c,
                    error_message: message.clone(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::InitializeShareGroupState(r) => InitializeShareGroupStateResponse {
            results: r
                .topics
                .iter()
                .map(|t| initialize_share_group_state_response::InitializeStateResult {
                    topic_id: t.topic_id,
                    partitions: t
                        .partitions
                        .iter()
                        .map(|p| initialize_share_group_state_response::PartitionResult {
                            partition: p.partition,
                            error_code: c,
                            error_message: message.clone(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::ReadShareGroupState(r) => ReadShareGroupStateResponse {
            results: r
                .topics
                .iter()
                .map(|t| read_share_group_state_response::ReadStateResult {
                    topic_id: t.topic_id,
                    partitions: t
                        .partitions
                        .iter()
                        .map(|p| read_share_group_state_response::PartitionResult {
                            partition: p.partition,
                            error_code: c,
                            error_message: message.clone(),
                            state_epoch: -1,
                            start_offset: -1,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::WriteShareGroupState(r) => WriteShareGroupStateResponse {
            results: r
                .topics
                .iter()
                .map(|t| write_share_group_state_response::WriteStateResult {
                    topic_id: t.topic_id,
                    partitions: t
                        .partitions
                        .iter()
                        .map(|p| write_share_group_state_response::PartitionResult {
                            partition: p.partition,
                            error_code: c,
                            error_message: message.clone(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::DeleteShareGroupState(r) => DeleteShareGroupStateResponse {
            results: r
                .topics
                .iter()
                .map(|t| delete_share_group_state_response::DeleteStateResult {
                    topic_id: t.topic_id,
                    partitions: t
                        .partitions
                        .iter()
                        .map(|p| delete_share_group_state_response::PartitionResult {
                            partition: p.partition,
                            error_code: c,
                            error_message: message.clone(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::ReadShareGroupStateSummary(r) => ReadShareGroupStateSummaryResponse {
            results: r
                .topics
                .iter()
                .map(|t| read_share_group_state_summary_response::ReadStateSummaryResult {
                    topic_id: t.topic_id,
                    partitions: t
                        .partitions
                        .iter()
                        .map(|p| read_share_group_state_summary_response::PartitionResult {
                            partition: p.partition,
                            error_code: c,
                            error_message: message.clone(),
                            state_epoch: -1,
                            leader_epoch: -1,
                            start_offset: -1,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        // v1+ has a top-level code; v0 answers per partition.
        RequestKind::ElectLeaders(r) if version < 1 => ElectLeadersResponse {
            replica_election_results: r
                .topic_partitions
                .iter()
                .flatten()
                .map(|t| elect_leaders_response::ReplicaElectionResult {
                    topic: t.topic.clone(),
                    partition_result: t
                        .partitions
                        .iter()
                        .map(|p| elect_leaders_response::PartitionResult {
                            partition_id: *p,
                            error_code: c,
                            error_message: message.clone(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        // v4+ answers per key.
        RequestKind::FindCoordinator(r) if version >= 4 => FindCoordinatorResponse {
            coordinators: r
                .coordinator_keys
                .iter()
                .map(|k| find_coordinator_response::Coordinator {
                    key: k.clone(),
                    node_id: -1,
                    port: -1,
                    error_code: c,
                    error_message: message.clone(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        other => return top_level(other.api_key(), c),
    })
}

/// The response of apis with a top-level error code: that code and defaults elsewhere.
fn top_level(api: kwire::ApiKey, error_code: i16) -> Option<ResponseKind> {
    macro_rules! top_level {
        ($($api:ident => $ty:ident),* $(,)?) => {
            match api {
                $(kwire::ApiKey::$api => Some(ResponseKind::from($ty { error_code, ..Default::default() })),)*
                _ => None,
            }
        };
    }
    top_level!(
        AddOffsetsToTxn => AddOffsetsToTxnResponse,
        AllocateProducerIds => AllocateProducerIdsResponse,
        AlterPartitionReassignments => AlterPartitionReassignmentsResponse,
        ApiVersions => ApiVersionsResponse,
        ConsumerGroupHeartbeat => ConsumerGroupHeartbeatResponse,
        CreateDelegationToken => CreateDelegationTokenResponse,
        DescribeAcls => DescribeAclsResponse,
        DescribeClientQuotas => DescribeClientQuotasResponse,
        DescribeCluster => DescribeClusterResponse,
        DescribeDelegationToken => DescribeDelegationTokenResponse,
        DescribeUserScramCredentials => DescribeUserScramCredentialsResponse,
        ElectLeaders => ElectLeadersResponse,
        EndTxn => EndTxnResponse,
        ExpireDelegationToken => ExpireDelegationTokenResponse,
        FindCoordinator => FindCoordinatorResponse,
        GetTelemetrySubscriptions => GetTelemetrySubscriptionsResponse,
        Heartbeat => HeartbeatResponse,
        InitProducerId => InitProducerIdResponse,
        JoinGroup => JoinGroupResponse,
        LeaveGroup => LeaveGroupResponse,
        ListGroups => ListGroupsResponse,
        ListPartitionReassignments => ListPartitionReassignmentsResponse,
        ListTransactions => ListTransactionsResponse,
        OffsetDelete => OffsetDeleteResponse,
        PushTelemetry => PushTelemetryResponse,
        RenewDelegationToken => RenewDelegationTokenResponse,
        SaslAuthenticate => SaslAuthenticateResponse,
        SaslHandshake => SaslHandshakeResponse,
        SyncGroup => SyncGroupResponse,
        UpdateFeatures => UpdateFeaturesResponse,
        ShareGroupHeartbeat => ShareGroupHeartbeatResponse,
        ShareFetch => ShareFetchResponse,
        ShareAcknowledge => ShareAcknowledgeResponse,
        StreamsGroupHeartbeat => StreamsGroupHeartbeatResponse,
        LeaderAndIsr => LeaderAndIsrResponse,
        StopReplica => StopReplicaResponse,
        UpdateMetadata => UpdateMetadataResponse,
        ControlledShutdown => ControlledShutdownResponse,
        DescribeLogDirs => DescribeLogDirsResponse,
        Vote => VoteResponse,
        BeginQuorumEpoch => BeginQuorumEpochResponse,
        EndQuorumEpoch => EndQuorumEpochResponse,
        DescribeQuorum => DescribeQuorumResponse,
        AlterPartition => AlterPartitionResponse,
        Envelope => EnvelopeResponse,
        FetchSnapshot => FetchSnapshotResponse,
        BrokerRegistration => BrokerRegistrationResponse,
        BrokerHeartbeat => BrokerHeartbeatResponse,
        UnregisterBroker => UnregisterBrokerResponse,
        ControllerRegistration => ControllerRegistrationResponse,
        AssignReplicasToDirs => AssignReplicasToDirsResponse,
        ListConfigResources => ListConfigResourcesResponse,
        AddRaftVoter => AddRaftVoterResponse,
        RemoveRaftVoter => RemoveRaftVoterResponse,
        UpdateRaftVoter => UpdateRaftVoterResponse,
        AlterShareGroupOffsets => AlterShareGroupOffsetsResponse,
        DeleteShareGroupOffsets => DeleteShareGroupOffsetsResponse,
        StreamsGroupTopologyDescriptionUpdate => StreamsGroupTopologyDescriptionUpdateResponse,
        UnregisterController => UnregisterControllerResponse,
    )
}

#[cfg(test)]
mod tests {
    use kwire::{ApiKey, BytesMut};

    use super::*;
    use crate::versions::Release;

    /// An empty request of `api`.
    fn empty(api: ApiKey) -> RequestKind {
        match api {
            ApiKey::Produce => RequestKind::Produce(ProduceRequest::default()),
            ApiKey::Fetch => RequestKind::Fetch(FetchRequest::default()),
            ApiKey::ListOffsets => RequestKind::ListOffsets(ListOffsetsRequest::default()),
            ApiKey::Metadata => RequestKind::Metadata(MetadataRequest::default()),
            ApiKey::LeaderAndIsr => RequestKind::LeaderAndIsr(LeaderAndIsrRequest::default()),
            ApiKey::StopReplica => RequestKind::StopReplica(StopReplicaRequest::default()),
            ApiKey::UpdateMetadata => RequestKind::UpdateMetadata(UpdateMetadataRequest::default()),
            ApiKey::ControlledShutdown => RequestKind::ControlledShutdown(ControlledShutdownRequest::default()),
            ApiKey::OffsetCommit => RequestKind::OffsetCommit(OffsetCommitRequest::default()),
            ApiKey::OffsetFetch => RequestKind::OffsetFetch(OffsetFetchRequest::default()),
            ApiKey::FindCoordinator => RequestKind::FindCoordinator(FindCoordinatorRequest::default()),
            ApiKey::JoinGroup => RequestKind::JoinGroup(JoinGroupRequest::default()),
            ApiKey::Heartbeat => RequestKind::Heartbeat(HeartbeatRequest::default()),
            ApiKey::LeaveGroup => RequestKind::LeaveGroup(LeaveGroupRequest::default()),
            ApiKey::SyncGroup => RequestKind::SyncGroup(SyncGroupRequest::default()),
            ApiKey::DescribeGroups => RequestKind::DescribeGroups(DescribeGroupsRequest::default()),
            ApiKey::ListGroups => RequestKind::ListGroups(ListGroupsRequest::default()),
            ApiKey::SaslHandshake => RequestKind::SaslHandshake(SaslHandshakeRequest::default()),
            ApiKey::ApiVersions => RequestKind::ApiVersions(ApiVersionsRequest::default()),
            ApiKey::CreateTopics => RequestKind::CreateTopics(CreateTopicsRequest::default()),
            ApiKey::DeleteTopics => RequestKind::DeleteTopics(DeleteTopicsRequest::default()),
            ApiKey::DeleteRecords => RequestKind::DeleteRecords(DeleteRecordsRequest::default()),
            ApiKey::InitProducerId => RequestKind::InitProducerId(InitProducerIdRequest::default()),
            ApiKey::OffsetForLeaderEpoch => RequestKind::OffsetForLeaderEpoch(OffsetForLeaderEpochRequest::default()),
            ApiKey::AddPartitionsToTxn => RequestKind::AddPartitionsToTxn(AddPartitionsToTxnRequest::default()),
            ApiKey::AddOffsetsToTxn => RequestKind::AddOffsetsToTxn(AddOffsetsToTxnRequest::default()),
            ApiKey::EndTxn => RequestKind::EndTxn(EndTxnRequest::default()),
            ApiKey::WriteTxnMarkers => RequestKind::WriteTxnMarkers(WriteTxnMarkersRequest::default()),
            ApiKey::TxnOffsetCommit => RequestKind::TxnOffsetCommit(TxnOffsetCommitRequest::default()),
            ApiKey::DescribeAcls => RequestKind::DescribeAcls(DescribeAclsRequest::default()),
            ApiKey::CreateAcls => RequestKind::CreateAcls(CreateAclsRequest::default()),
            ApiKey::DeleteAcls => RequestKind::DeleteAcls(DeleteAclsRequest::default()),
            ApiKey::DescribeConfigs => RequestKind::DescribeConfigs(DescribeConfigsRequest::default()),
            ApiKey::AlterConfigs => RequestKind::AlterConfigs(AlterConfigsRequest::default()),
            ApiKey::AlterReplicaLogDirs => RequestKind::AlterReplicaLogDirs(AlterReplicaLogDirsRequest::default()),
            ApiKey::DescribeLogDirs => RequestKind::DescribeLogDirs(DescribeLogDirsRequest::default()),
            ApiKey::SaslAuthenticate => RequestKind::SaslAuthenticate(SaslAuthenticateRequest::default()),
            ApiKey::CreatePartitions => RequestKind::CreatePartitions(CreatePartitionsRequest::default()),
            ApiKey::CreateDelegationToken => RequestKind::CreateDelegationToken(CreateDelegationTokenRequest::default()),
            ApiKey::RenewDelegationToken => RequestKind::RenewDelegationToken(RenewDelegationTokenRequest::default()),
            ApiKey::ExpireDelegationToken => RequestKind::ExpireDelegationToken(ExpireDelegationTokenRequest::default()),
            ApiKey::DescribeDelegationToken => RequestKind::DescribeDelegationToken(DescribeDelegationTokenRequest::default()),
            ApiKey::DeleteGroups => RequestKind::DeleteGroups(DeleteGroupsRequest::default()),
            ApiKey::ElectLeaders => RequestKind::ElectLeaders(ElectLeadersRequest::default()),
            ApiKey::IncrementalAlterConfigs => RequestKind::IncrementalAlterConfigs(IncrementalAlterConfigsRequest::default()),
            ApiKey::AlterPartitionReassignments => RequestKind::AlterPartitionReassignments(AlterPartitionReassignmentsRequest::default()),
            ApiKey::ListPartitionReassignments => RequestKind::ListPartitionReassignments(ListPartitionReassignmentsRequest::default()),
            ApiKey::OffsetDelete => RequestKind::OffsetDelete(OffsetDeleteRequest::default()),
            ApiKey::DescribeClientQuotas => RequestKind::DescribeClientQuotas(DescribeClientQuotasRequest::default()),
            ApiKey::AlterClientQuotas => RequestKind::AlterClientQuotas(AlterClientQuotasRequest::default()),
            ApiKey::DescribeUserScramCredentials => RequestKind::DescribeUserScramCredentials(DescribeUserScramCredentialsRequest::default()),
            ApiKey::AlterUserScramCredentials => RequestKind::AlterUserScramCredentials(AlterUserScramCredentialsRequest::default()),
            ApiKey::Vote => RequestKind::Vote(VoteRequest::default()),
            ApiKey::BeginQuorumEpoch => RequestKind::BeginQuorumEpoch(BeginQuorumEpochRequest::default()),
            ApiKey::EndQuorumEpoch => RequestKind::EndQuorumEpoch(EndQuorumEpochRequest::default()),
            ApiKey::DescribeQuorum => RequestKind::DescribeQuorum(DescribeQuorumRequest::default()),
            ApiKey::AlterPartition => RequestKind::AlterPartition(AlterPartitionRequest::default()),
            ApiKey::UpdateFeatures => RequestKind::UpdateFeatures(UpdateFeaturesRequest::default()),
            ApiKey::Envelope => RequestKind::Envelope(EnvelopeRequest::default()),
            ApiKey::FetchSnapshot => RequestKind::FetchSnapshot(FetchSnapshotRequest::default()),
            ApiKey::DescribeCluster => RequestKind::DescribeCluster(DescribeClusterRequest::default()),
            ApiKey::DescribeProducers => RequestKind::DescribeProducers(DescribeProducersRequest::default()),
            ApiKey::BrokerRegistration => RequestKind::BrokerRegistration(BrokerRegistrationRequest::default()),
            ApiKey::BrokerHeartbeat => RequestKind::BrokerHeartbeat(BrokerHeartbeatRequest::default()),
            ApiKey::UnregisterBroker => RequestKind::UnregisterBroker(UnregisterBrokerRequest::default()),
            ApiKey::DescribeTransactions => RequestKind::DescribeTransactions(DescribeTransactionsRequest::default()),
            ApiKey::ListTransactions => RequestKind::ListTransactions(ListTransactionsRequest::default()),
            ApiKey::AllocateProducerIds => RequestKind::AllocateProducerIds(AllocateProducerIdsRequest::default()),
            ApiKey::ConsumerGroupHeartbeat => RequestKind::ConsumerGroupHeartbeat(ConsumerGroupHeartbeatRequest::default()),
            ApiKey::ConsumerGroupDescribe => RequestKind::ConsumerGroupDescribe(ConsumerGroupDescribeRequest::default()),
            ApiKey::ControllerRegistration => RequestKind::ControllerRegistration(ControllerRegistrationRequest::default()),
            ApiKey::GetTelemetrySubscriptions => RequestKind::GetTelemetrySubscriptions(GetTelemetrySubscriptionsRequest::default()),
            ApiKey::PushTelemetry => RequestKind::PushTelemetry(PushTelemetryRequest::default()),
            ApiKey::AssignReplicasToDirs => RequestKind::AssignReplicasToDirs(AssignReplicasToDirsRequest::default()),
            ApiKey::ListConfigResources => RequestKind::ListConfigResources(ListConfigResourcesRequest::default()),
            ApiKey::DescribeTopicPartitions => RequestKind::DescribeTopicPartitions(DescribeTopicPartitionsRequest::default()),
            ApiKey::ShareGroupHeartbeat => RequestKind::ShareGroupHeartbeat(ShareGroupHeartbeatRequest::default()),
            ApiKey::ShareGroupDescribe => RequestKind::ShareGroupDescribe(ShareGroupDescribeRequest::default()),
            ApiKey::ShareFetch => RequestKind::ShareFetch(ShareFetchRequest::default()),
            ApiKey::ShareAcknowledge => RequestKind::ShareAcknowledge(ShareAcknowledgeRequest::default()),
            ApiKey::AddRaftVoter => RequestKind::AddRaftVoter(AddRaftVoterRequest::default()),
            ApiKey::RemoveRaftVoter => RequestKind::RemoveRaftVoter(RemoveRaftVoterRequest::default()),
            ApiKey::UpdateRaftVoter => RequestKind::UpdateRaftVoter(UpdateRaftVoterRequest::default()),
            ApiKey::InitializeShareGroupState => RequestKind::InitializeShareGroupState(InitializeShareGroupStateRequest::default()),
            ApiKey::ReadShareGroupState => RequestKind::ReadShareGroupState(ReadShareGroupStateRequest::default()),
            ApiKey::WriteShareGroupState => RequestKind::WriteShareGroupState(WriteShareGroupStateRequest::default()),
            ApiKey::DeleteShareGroupState => RequestKind::DeleteShareGroupState(DeleteShareGroupStateRequest::default()),
            ApiKey::ReadShareGroupStateSummary => RequestKind::ReadShareGroupStateSummary(ReadShareGroupStateSummaryRequest::default()),
            ApiKey::StreamsGroupHeartbeat => RequestKind::StreamsGroupHeartbeat(StreamsGroupHeartbeatRequest::default()),
            ApiKey::StreamsGroupDescribe => RequestKind::StreamsGroupDescribe(StreamsGroupDescribeRequest::default()),
            ApiKey::DescribeShareGroupOffsets => RequestKind::DescribeShareGroupOffsets(DescribeShareGroupOffsetsRequest::default()),
            ApiKey::AlterShareGroupOffsets => RequestKind::AlterShareGroupOffsets(AlterShareGroupOffsetsRequest::default()),
            ApiKey::DeleteShareGroupOffsets => RequestKind::DeleteShareGroupOffsets(DeleteShareGroupOffsetsRequest::default()),
            ApiKey::StreamsGroupTopologyDescriptionUpdate => {
                RequestKind::StreamsGroupTopologyDescriptionUpdate(StreamsGroupTopologyDescriptionUpdateRequest::default())
            }
            ApiKey::UnregisterController => RequestKind::UnregisterController(UnregisterControllerRequest::default()),
        }
    }

    /// Every api a release advertises has Kafka's error response at every version it
    /// advertises, and that response encodes at that version.
    #[test]
    fn every_advertised_api_version_has_an_error_response() {
        for release in Release::ALL.into_iter().filter(|r| r.in_build()) {
            for api in ApiKey::ALL.iter().copied() {
                let Some(range) = release.versions(api) else { continue };
                for version in range.lo..=range.hi {
                    let body = response(&empty(api), version, ErrorCode::UNSUPPORTED_VERSION)
                        .unwrap_or_else(|| panic!("Kafka {release}: no error response for {} v{version}", api.name()));
                    let mut out = BytesMut::new();
                    if let Err(e) = body.encode(&mut out, version) {
                        panic!("Kafka {release}: {} v{version}'s error response does not encode: {e}", api.name());
                    }
                }
            }
        }
    }
}
