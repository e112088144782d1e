//! Handlers for everything but consumer groups and SASL: one function per api, from the decoded
//! request to the response body.

use std::time::Duration;

use kwire::messages::{
    api_versions_response::ApiVersion, create_topics_response::CreatableTopicResult, fetch_response,
    list_offsets_response, metadata_response, offset_for_leader_epoch_response, produce_response, *,
};
use kwire::{smallvec, ApiKey, ByteString, Bytes, BytesMut, ResponseKind, SmallVec, VersionRange};
use tokio::time::Instant;

use crate::broker::{errors, Broker, CLUSTER_ID, LEADER_EPOCH, NODE_ID};
use crate::storage::valid_topic_name;

/// Every api the broker implements, with the versions it implements. What is advertised is
/// this intersected with what the build's specs define (and call stable).
const IMPLEMENTED: &[(ApiKey, i16, i16)] = &[
    // Records are stored and served as produced, never converted between formats: a client
    // fetching at v0-3 gets whatever format the producers wrote (as Kafka does when down-
    // conversion is off). librdkafka enables compression only if Produce and Fetch v2 are offered.
    (ApiKey::Produce, 0, 11),
    (ApiKey::Fetch, 0, 17),
    // v0 (a list of offsets per partition) is gone from Kafka 4.0's specs.
    (ApiKey::ListOffsets, 1, 9),
    (ApiKey::Metadata, 0, 12),
    (ApiKey::OffsetCommit, 0, 9),
    (ApiKey::OffsetFetch, 0, 9),
    (ApiKey::FindCoordinator, 0, 6),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::SyncGroup, 0, 5),
    // After a v0 handshake the SASL tokens travel as bare size-prefixed frames.
    (ApiKey::SaslHandshake, 0, 1),
    (ApiKey::ApiVersions, 0, 3),
    (ApiKey::CreateTopics, 0, 7),
    (ApiKey::InitProducerId, 0, 5),
    (ApiKey::OffsetForLeaderEpoch, 2, 4),
    (ApiKey::SaslAuthenticate, 0, 2),
];

/// The versions of `api` the broker serves, if any.
pub fn supported(api: ApiKey) -> Option<VersionRange> {
    let (_, lo, hi) = IMPLEMENTED.iter().find(|(k, _, _)| *k == api)?;
    let range = VersionRange::new(*lo, *hi).intersect(&api.stable_versions());
    (!range.is_empty()).then_some(range)
}

fn s(v: &str) -> ByteString {
    ByteString::from(v.to_owned())
}

pub fn api_versions(error_code: i16) -> ApiVersionsResponse {
    let api_keys = IMPLEMENTED
        .iter()
        .filter_map(|(k, _, _)| {
            let r = supported(*k)?;
            Some(ApiVersion { api_key: k.key(), min_version: r.lo, max_version: r.hi, ..Default::default() })
        })
        .collect();
    ApiVersionsResponse { error_code, api_keys, ..Default::default() }
}

pub fn metadata(broker: &Broker, req: &MetadataRequest, version: i16) -> MetadataResponse {
    let addr = broker.config.advertised;
    let brokers = vec![metadata_response::MetadataResponseBroker {
        node_id: NODE_ID,
        host: s(&addr.ip().to_string()),
        port: i32::from(addr.port()),
        rack: None,
        ..Default::default()
    }];
    let mut topics = broker.topics();
    // v0 asks for every topic with an empty list, later versions with null.
    let names: Vec<(Option<String>, kwire::Uuid)> = match &req.topics {
        None => topics.by_name.iter().map(|(n, t)| (Some(n.clone()), t.id)).collect(),
        Some(list) if list.is_empty() && version == 0 => {
            topics.by_name.iter().map(|(n, t)| (Some(n.clone()), t.id)).collect()
        }
        Some(list) => list.iter().map(|t| (t.name.as_deref().map(str::to_owned), t.topic_id)).collect(),
    };
    let auto_create = broker.config.auto_create_topics && (version < 4 || req.allow_auto_topic_creation);
    let mut out = Vec::new();
    for (name, id) in names {
        let name = match name {
            Some(n) => n,
            None => match topics.by_id(id) {
                Some((n, _)) => n.clone(),
                None => {
                    out.push(metadata_response::MetadataResponseTopic {
                        error_code: errors::UNKNOWN_TOPIC_ID,
                        name: None,
                        topic_id: id,
                        ..Default::default()
                    });
                    continue;
                }
            },
        };
        if !valid_topic_name(&name) {
            out.push(metadata_response::MetadataResponseTopic {
                error_code: errors::INVALID_TOPIC_EXCEPTION,
                name: Some(s(&name)),
                ..Default::default()
            });
            continue;
        }
        if !topics.by_name.contains_key(&name) && auto_create {
            topics.create(&name, broker.config.default_partitions);
        }
        let Some(topic) = topics.by_name.get(&name) else {
            out.push(metadata_response::MetadataResponseTopic {
                error_code: errors::UNKNOWN_TOPIC_OR_PARTITION,
                name: Some(s(&name)),
                ..Default::default()
            });
            continue;
        };
        let partitions = (0..topic.partitions.len() as i32)
            .map(|i| metadata_response::MetadataResponsePartition {
                error_code: errors::NONE,
                partition_index: i,
                leader_id: NODE_ID,
                leader_epoch: if version >= 7 { LEADER_EPOCH } else { -1 },
                replica_nodes: smallvec![NODE_ID],
                isr_nodes: smallvec![NODE_ID],
                offline_replicas: SmallVec::new(),
                ..Default::default()
            })
            .collect();
        out.push(metadata_response::MetadataResponseTopic {
            error_code: errors::NONE,
            name: Some(s(&name)),
            topic_id: if version >= 10 { topic.id } else { kwire::Uuid::ZERO },
            is_internal: false,
            partitions,
            ..Default::default()
        });
    }
    MetadataResponse {
        brokers,
        cluster_id: (version >= 2).then(|| s(CLUSTER_ID)),
        controller_id: if version >= 1 { NODE_ID } else { -1 },
        topics: out,
        ..Default::default()
    }
}

pub fn create_topics(broker: &Broker, req: &CreateTopicsRequest, version: i16) -> CreateTopicsResponse {
    let mut topics = broker.topics();
    let mut results = Vec::new();
    for t in &req.topics {
        let partitions = if t.num_partitions == -1 { broker.config.default_partitions } else { t.num_partitions };
        let error = if !valid_topic_name(&t.name) {
            errors::INVALID_TOPIC_EXCEPTION
        } else if topics.by_name.contains_key(&*t.name) {
            errors::TOPIC_ALREADY_EXISTS
        } else if partitions <= 0 || partitions > 10_000 || !t.assignments.is_empty() {
            errors::INVALID_PARTITIONS
        } else if t.replication_factor != -1 && t.replication_factor != 1 {
            errors::INVALID_REPLICATION_FACTOR
        } else {
            errors::NONE
        };
        let mut result = CreatableTopicResult { name: t.name.clone(), error_code: error, ..Default::default() };
        if error == errors::NONE {
            let id = if req.validate_only { kwire::Uuid::ZERO } else { topics.create(&t.name, partitions).id };
            if version >= 5 {
                result.num_partitions = partitions;
                result.replication_factor = 1;
                result.configs = Some(vec![]);
            }
            if version >= 7 {
                result.topic_id = id;
            }
        } else if version >= 1 {
            result.error_message = Some(s(&format!("{} failed with error {error}", t.name)));
        }
        results.push(result);
    }
    CreateTopicsResponse { topics: results, ..Default::default() }
}

/// Appends every partition's batches; `None` for `acks = 0`, which gets no response.
pub fn produce(broker: &Broker, req: &ProduceRequest) -> Option<ProduceResponse> {
    if !matches!(req.acks, 0 | 1 | -1) {
        let responses = req
            .topic_data
            .iter()
            .map(|t| produce_response::TopicProduceResponse {
                name: t.name.clone(),
                partition_responses: t
                    .partition_data
                    .iter()
                    .map(|p| produce_response::PartitionProduceResponse {
                        index: p.index,
                        error_code: errors::INVALID_REQUIRED_ACKS,
                        base_offset: -1,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        return Some(ProduceResponse { responses, ..Default::default() });
    }
    let mut responses = Vec::new();
    {
        let mut topics = broker.topics();
        for t in &req.topic_data {
            let mut partition_responses = Vec::new();
            for p in &t.partition_data {
                let result = match topics.partition_mut(&t.name, p.index) {
                    None => Err(errors::UNKNOWN_TOPIC_OR_PARTITION),
                    Some(partition) => partition.append(Option::<Bytes>::from(p.records.clone()).unwrap_or_default()),
                };
                partition_responses.push(produce_response::PartitionProduceResponse {
                    index: p.index,
                    error_code: result.err().unwrap_or(errors::NONE),
                    base_offset: result.unwrap_or(-1),
                    log_append_time_ms: -1,
                    log_start_offset: 0,
                    ..Default::default()
                });
            }
            responses.push(produce_response::TopicProduceResponse {
                name: t.name.clone(),
                partition_responses,
                ..Default::default()
            });
        }
    }
    broker.appended.notify_waiters();
    (req.acks != 0).then(|| ProduceResponse { responses, ..Default::default() })
}

/// Longest a Fetch may wait, whatever it asks for.
const MAX_FETCH_WAIT: Duration = Duration::from_secs(30);

/// Answers once `min_bytes` are available or `max_wait_ms` has passed.
pub async fn fetch(broker: &Broker, req: &FetchRequest, version: i16) -> FetchResponse {
    let wait = Duration::from_millis(u64::try_from(req.max_wait_ms).unwrap_or(0)).min(MAX_FETCH_WAIT);
    let deadline = Instant::now() + wait;
    let min_bytes = usize::try_from(req.min_bytes).unwrap_or(0);
    // Bounded by the deadline: each round waits for an append or the deadline.
    loop {
        // Registered before reading, so an append between the read and the wait is not missed.
        let appended = broker.appended.notified();
        tokio::pin!(appended);
        appended.as_mut().enable();
        let (response, size, any_error) = fetch_once(broker, req, version);
        if size >= min_bytes || any_error || Instant::now() >= deadline {
            return response;
        }
        if tokio::time::timeout_at(deadline, appended).await.is_err() {
            return fetch_once(broker, req, version).0;
        }
    }
}

fn fetch_once(broker: &Broker, req: &FetchRequest, version: i16) -> (FetchResponse, usize, bool) {
    let topics = broker.topics();
    let mut budget = usize::try_from(req.max_bytes).unwrap_or(0);
    let mut total = 0;
    let mut any_error = false;
    let mut responses = Vec::new();
    for t in &req.topics {
        let topic = if version >= 13 {
            topics.by_id(t.topic_id).map(|(_, topic)| topic)
        } else {
            topics.by_name.get(&*t.topic)
        };
        let mut partitions = Vec::new();
        for p in &t.partitions {
            let mut data = fetch_response::PartitionData {
                partition_index: p.partition,
                high_watermark: -1,
                last_stable_offset: -1,
                log_start_offset: -1,
                records: Bytes::new().into(),
                ..Default::default()
            };
            let partition = topic.and_then(|topic| topic.partitions.get(usize::try_from(p.partition).ok()?));
            match partition {
                None => {
                    data.error_code =
                        if version >= 13 && topic.is_none() { errors::UNKNOWN_TOPIC_ID } else { errors::UNKNOWN_TOPIC_OR_PARTITION };
                    any_error = true;
                }
                Some(partition) => {
                    let hw = partition.high_watermark();
                    data.high_watermark = hw;
                    data.last_stable_offset = hw;
                    data.log_start_offset = 0;
                    if p.fetch_offset < 0 || p.fetch_offset > hw {
                        data.error_code = errors::OFFSET_OUT_OF_RANGE;
                        any_error = true;
                    } else {
                        let limit = usize::try_from(p.partition_max_bytes).unwrap_or(0).min(budget);
                        let batches = partition.read(p.fetch_offset, limit);
                        let size: usize = batches.iter().map(Bytes::len).sum();
                        let mut records = BytesMut::with_capacity(size);
                        for b in &batches {
                            records.extend_from_slice(b);
                        }
                        budget = budget.saturating_sub(size);
                        total += size;
                        data.records = records.freeze().into();
                    }
                }
            }
            partitions.push(data);
        }
        responses.push(fetch_response::FetchableTopicResponse {
            topic: if version >= 13 { ByteString::new() } else { t.topic.clone() },
            topic_id: if version >= 13 { t.topic_id } else { kwire::Uuid::ZERO },
            partitions,
            ..Default::default()
        });
    }
    // No fetch sessions: session id 0 tells the client to send full requests.
    (FetchResponse { error_code: errors::NONE, session_id: 0, responses, ..Default::default() }, total, any_error)
}

pub fn list_offsets(broker: &Broker, req: &ListOffsetsRequest, version: i16) -> ListOffsetsResponse {
    let topics = broker.topics();
    let responses = req
        .topics
        .iter()
        .map(|t| list_offsets_response::ListOffsetsTopicResponse {
            name: t.name.clone(),
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let mut out = list_offsets_response::ListOffsetsPartitionResponse {
                        partition_index: p.partition_index,
                        timestamp: -1,
                        offset: -1,
                        ..Default::default()
                    };
                    let partition = topics
                        .by_name
                        .get(&*t.name)
                        .and_then(|topic| topic.partitions.get(usize::try_from(p.partition_index).ok()?));
                    let Some(partition) = partition else {
                        out.error_code = errors::UNKNOWN_TOPIC_OR_PARTITION;
                        return out;
                    };
                    let (offset, timestamp) = match p.timestamp {
                        -1 => (partition.high_watermark(), -1),
                        // Earliest, earliest-local (v8) and earliest tiered (v9): the log never shrinks.
                        -2 | -4 | -5 => (0, -1),
                        -3 => partition.offset_for_timestamp(None).unwrap_or((-1, -1)),
                        t if t >= 0 => partition.offset_for_timestamp(Some(t)).unwrap_or((-1, -1)),
                        _ => (-1, -1),
                    };
                    out.offset = offset;
                    out.timestamp = timestamp;
                    if version >= 4 {
                        out.leader_epoch = LEADER_EPOCH;
                    }
                    out
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    ListOffsetsResponse { topics: responses, ..Default::default() }
}

pub fn find_coordinator(broker: &Broker, req: &FindCoordinatorRequest, version: i16) -> FindCoordinatorResponse {
    let addr = broker.config.advertised;
    let host = s(&addr.ip().to_string());
    let port = i32::from(addr.port());
    if version >= 4 {
        let coordinators = req
            .coordinator_keys
            .iter()
            .map(|key| find_coordinator_response::Coordinator {
                key: key.clone(),
                node_id: NODE_ID,
                host: host.clone(),
                port,
                error_code: errors::NONE,
                error_message: None,
                ..Default::default()
            })
            .collect();
        FindCoordinatorResponse { coordinators, ..Default::default() }
    } else {
        FindCoordinatorResponse { error_code: errors::NONE, error_message: None, node_id: NODE_ID, host, port, ..Default::default() }
    }
}

pub fn init_producer_id(broker: &Broker) -> InitProducerIdResponse {
    InitProducerIdResponse { error_code: errors::NONE, producer_id: broker.next_producer_id(), producer_epoch: 0, ..Default::default() }
}

/// Every partition has had one leader epoch since offset 0, so its end is the log end.
pub fn offset_for_leader_epoch(broker: &Broker, req: &OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse {
    let topics = broker.topics();
    let results = req
        .topics
        .iter()
        .map(|t| offset_for_leader_epoch_response::OffsetForLeaderTopicResult {
            topic: t.topic.clone(),
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let partition = topics
                        .by_name
                        .get(&*t.topic)
                        .and_then(|topic| topic.partitions.get(usize::try_from(p.partition).ok()?));
                    match partition {
                        Some(partition) => offset_for_leader_epoch_response::EpochEndOffset {
                            error_code: errors::NONE,
                            partition: p.partition,
                            leader_epoch: LEADER_EPOCH,
                            end_offset: partition.high_watermark(),
                            ..Default::default()
                        },
                        None => offset_for_leader_epoch_response::EpochEndOffset {
                            error_code: errors::UNKNOWN_TOPIC_OR_PARTITION,
                            partition: p.partition,
                            leader_epoch: -1,
                            end_offset: -1,
                            ..Default::default()
                        },
                    }
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    OffsetForLeaderEpochResponse { topics: results, ..Default::default() }
}

/// The response Kafka's `getErrorResponse` gives for apis whose response has a top-level error
/// code: that code and defaults elsewhere. `None` for apis without one.
pub fn error_response(api: ApiKey, error_code: i16) -> Option<ResponseKind> {
    macro_rules! top_level {
        ($($api:ident => $ty:ident),* $(,)?) => {
            match api {
                $(ApiKey::$api => Some(ResponseKind::from($ty { error_code, ..Default::default() })),)*
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
    )
}
