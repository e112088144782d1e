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
                    partition_responses: t.partition_data.iter().map(|p| produce_response::PartitionProduceResponse { index: p.index, error_code: c, base_offset: -1, log_append_time_ms: -1, log_start_offset: -1, ..Default::default() }).collect(),
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
                        .map(|p| fetch_response::PartitionData { partition_index: p.partition, error_code: c, high_watermark: -1, last_stable_offset: -1, log_start_offset: -1, preferred_read_replica: -1, records: Some(Default::default()), ..Default::default() })
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
                    partitions: t.partitions.iter().map(|p| list_offsets_response::ListOffsetsPartitionResponse { partition_index: p.partition_index, error_code: c, timestamp: -1, offset: -1, leader_epoch: -1, ..Default::default() }).collect(),
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
                .map(|t| metadata_response::MetadataResponseTopic { error_code: c, name: t.name.clone(), topic_id: t.topic_id, topic_authorized_operations: i32::MIN, ..Default::default() })
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
                    partitions: t.partitions.iter().map(|p| offset_commit_response::OffsetCommitResponsePartition { partition_index: p.partition_index, error_code: c, ..Default::default() }).collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::OffsetFetch(r) => OffsetFetchResponse {
            error_code: c,
            groups: r.groups.iter().map(|g| offset_fetch_response::OffsetFetchResponseGroup { group_id: g.group_id.clone(), error_code: c, ..Default::default() }).collect(),
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
                    partitions: t.partitions.iter().map(|p| txn_offset_commit_response::TxnOffsetCommitResponsePartition { partition_index: p.partition_index, error_code: c, ..Default::default() }).collect(),
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
                        results_by_partition: t.partitions.iter().map(|p| add_partitions_to_txn_response::AddPartitionsToTxnPartitionResult { partition_index: *p, partition_error_code: c, ..Default::default() }).collect(),
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
            topics: r.topics.iter().map(|t| create_topics_response::CreatableTopicResult { name: t.name.clone(), error_code: c, error_message: message.clone(), num_partitions: -1, replication_factor: -1, ..Default::default() }).collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::DeleteTopics(r) => DeleteTopicsResponse {
            responses: if version >= 6 {
                r.topics.iter().map(|t| delete_topics_response::DeletableTopicResult { name: t.name.clone(), topic_id: t.topic_id, error_code: c, error_message: message.clone(), ..Default::default() }).collect()
            } else {
                r.topic_names.iter().map(|n| delete_topics_response::DeletableTopicResult { name: Some(n.clone()), error_code: c, ..Default::default() }).collect()
            },
            ..Default::default()
        }
        .into(),
        RequestKind::CreatePartitions(r) => CreatePartitionsResponse {
            results: r.topics.iter().map(|t| create_partitions_response::CreatePartitionsTopicResult { name: t.name.clone(), error_code: c, error_message: message.clone(), ..Default::default() }).collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::DeleteRecords(r) => DeleteRecordsResponse {
            topics: r
                .topics
                .iter()
                .map(|t| delete_records_response::DeleteRecordsTopicResult {
                    name: t.name.clone(),
                    partitions: t.partitions.iter().map(|p| delete_records_response::DeleteRecordsPartitionResult { partition_index: p.partition_index, low_watermark: -1, error_code: c, ..Default::default() }).collect(),
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
                    partitions: t.partitions.iter().map(|p| offset_for_leader_epoch_response::EpochEndOffset { error_code: c, partition: p.partition, leader_epoch: -1, end_offset: -1, ..Default::default() }).collect(),
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
                .map(|res| describe_configs_response::DescribeConfigsResult { error_code: c, error_message: message.clone(), resource_type: res.resource_type, resource_name: res.resource_name.clone(), ..Default::default() })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::IncrementalAlterConfigs(r) => IncrementalAlterConfigsResponse {
            responses: r
                .resources
                .iter()
                .map(|res| incremental_alter_configs_response::AlterConfigsResourceResponse { error_code: c, error_message: message.clone(), resource_type: res.resource_type, resource_name: res.resource_name.clone(), ..Default::default() })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::AlterConfigs(r) => AlterConfigsResponse {
            responses: r
                .resources
                .iter()
                .map(|res| alter_configs_response::AlterConfigsResourceResponse { error_code: c, error_message: message.clone(), resource_type: res.resource_type, resource_name: res.resource_name.clone(), ..Default::default() })
                .collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::DescribeGroups(r) => DescribeGroupsResponse {
            groups: r.groups.iter().map(|g| describe_groups_response::DescribedGroup { error_code: c, group_id: g.clone(), authorized_operations: i32::MIN, ..Default::default() }).collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::DeleteGroups(r) => DeleteGroupsResponse {
            results: r.groups_names.iter().map(|g| delete_groups_response::DeletableGroupResult { group_id: g.clone(), error_code: c, ..Default::default() }).collect(),
            ..Default::default()
        }
        .into(),
        RequestKind::DescribeProducers(r) => DescribeProducersResponse {
            topics: r
                .topics
                .iter()
                .map(|t| describe_producers_response::TopicResponse {
                    name: t.name.clone(),
                    partitions: t.partition_indexes.iter().map(|p| describe_producers_response::PartitionResponse { partition_index: *p, error_code: c, error_message: message.clone(), ..Default::default() }).collect(),
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
    )
}
