//! Direction (b): values built with kafka-protocol's own types (its `Default` plus field
//! assignments, with per-version conditions from the specs), encoded by kafka-protocol,
//! decoded and re-encoded by kwire. Every field present at a version gets a non-default
//! value; flexible versions also carry unknown tagged fields (kafka-protocol keeps them in a
//! `BTreeMap`, so they are written in tag order, as Kafka does).

use std::collections::BTreeMap;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::forward::first_difference;
use super::matrix::{Kind, Outcome, Row};

fn s(x: &'static str) -> StrBytes {
    StrBytes::from_static_str(x)
}

fn b(x: &'static [u8]) -> Bytes {
    Bytes::from_static(x)
}

/// Two unknown tagged fields with high tags (no spec uses them) when `v` is flexible.
fn tags(v: i16, flexible_from: i16) -> BTreeMap<i32, Bytes> {
    let mut t = BTreeMap::new();
    if v >= flexible_from {
        t.insert(90, b(b"\x01\x02"));
        t.insert(1000, b(b""));
    }
    t
}

/// A non-nil uuid for kafka-protocol's `Uuid` fields (the `uuid` crate is not a direct
/// dependency, so it is parsed into whatever type the field has).
fn uuid<T: std::str::FromStr>() -> T
where
    T::Err: std::fmt::Debug,
{
    "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0".parse().expect("valid uuid")
}

/// Builds `$t` from its `Default`, assigning the listed fields.
macro_rules! make {
    ($t:ty { $($f:ident : $e:expr),* $(,)? }) => {{
        #[allow(unused_mut)]
        let mut x = <$t>::default();
        $(x.$f = $e;)*
        x
    }};
}

fn api_versions_request(v: i16) -> RequestKind {
    let mut m = make!(ApiVersionsRequest { unknown_tagged_fields: tags(v, 3) });
    if v >= 3 {
        m.client_software_name = s("kafka-protocol");
        m.client_software_version = s("0.18.0");
    }
    m.into()
}

fn api_versions_response(v: i16) -> ResponseKind {
    let key =
        |k: i16, lo: i16, hi: i16| make!(api_versions_response::ApiVersion { api_key: k, min_version: lo, max_version: hi, unknown_tagged_fields: tags(v, 3) });
    let mut m = make!(ApiVersionsResponse { error_code: 35, api_keys: vec![key(0, 3, 11), key(18, 0, 4)], unknown_tagged_fields: tags(v, 3) });
    if v >= 1 {
        m.throttle_time_ms = 17;
    }
    if v >= 3 {
        m.supported_features = vec![make!(api_versions_response::SupportedFeatureKey { name: s("metadata.version"), min_version: 1, max_version: 21 })];
        m.finalized_features_epoch = 42;
        m.finalized_features =
            vec![make!(api_versions_response::FinalizedFeatureKey { name: s("metadata.version"), max_version_level: 21, min_version_level: 1 })];
        m.zk_migration_ready = true;
    }
    m.into()
}

fn metadata_request(v: i16) -> RequestKind {
    let topic = |n: &'static str| {
        let mut t = make!(metadata_request::MetadataRequestTopic { name: Some(s(n).into()), unknown_tagged_fields: tags(v, 9) });
        if v >= 10 {
            t.topic_id = uuid();
        }
        t
    };
    // Null topics ("all topics") from v1, an explicit list otherwise.
    let topics = if v >= 1 && v % 3 == 0 { None } else { Some(vec![topic("orders"), topic("payments")]) };
    let mut m = make!(MetadataRequest { topics: topics, unknown_tagged_fields: tags(v, 9) });
    if v >= 4 {
        m.allow_auto_topic_creation = false;
    }
    if (8..=10).contains(&v) {
        m.include_cluster_authorized_operations = true;
    }
    if v >= 8 {
        m.include_topic_authorized_operations = true;
    }
    m.into()
}

fn metadata_response(v: i16) -> ResponseKind {
    let mut broker = make!(metadata_response::MetadataResponseBroker { node_id: 3.into(), host: s("broker-3"), port: 9093, unknown_tagged_fields: tags(v, 9) });
    if v >= 1 {
        broker.rack = if v % 2 == 0 { Some(s("rack-a")) } else { None };
    }
    let mut partition = make!(metadata_response::MetadataResponsePartition {
        error_code: 9,
        partition_index: 2,
        leader_id: 3.into(),
        replica_nodes: vec![3.into(), 4.into()],
        isr_nodes: vec![3.into()],
        unknown_tagged_fields: tags(v, 9),
    });
    if v >= 5 {
        partition.offline_replicas = vec![4.into()];
    }
    if v >= 7 {
        partition.leader_epoch = 12;
    }
    let mut topic = make!(metadata_response::MetadataResponseTopic {
        error_code: 3,
        name: Some(s("orders").into()),
        partitions: vec![partition],
        unknown_tagged_fields: tags(v, 9)
    });
    if v >= 1 {
        topic.is_internal = true;
    }
    if v >= 8 {
        topic.topic_authorized_operations = 0x0ff8;
    }
    if v >= 10 {
        topic.topic_id = uuid();
    }
    let mut m = make!(MetadataResponse { brokers: vec![broker], topics: vec![topic], unknown_tagged_fields: tags(v, 9) });
    if v >= 1 {
        m.controller_id = 3.into();
    }
    if v >= 2 {
        m.cluster_id = Some(s("cluster-x"));
    }
    if v >= 3 {
        m.throttle_time_ms = 5;
    }
    if (8..=10).contains(&v) {
        m.cluster_authorized_operations = 0x0ff8;
    }
    if v >= 13 {
        m.error_code = 31;
    }
    m.into()
}

fn produce_request(v: i16) -> RequestKind {
    let partition = make!(produce_request::PartitionProduceData { index: 1, records: Some(b(b"opaque record bytes")), unknown_tagged_fields: tags(v, 9) });
    let empty = make!(produce_request::PartitionProduceData { index: 2, records: None });
    let mut topic = make!(produce_request::TopicProduceData { partition_data: vec![partition, empty], unknown_tagged_fields: tags(v, 9) });
    if v <= 12 {
        topic.name = s("orders").into();
    } else {
        topic.topic_id = uuid();
    }
    let txn = if v % 2 == 0 { Some(s("txn-1").into()) } else { None };
    make!(ProduceRequest { transactional_id: txn, acks: -1, timeout_ms: 30_000, topic_data: vec![topic], unknown_tagged_fields: tags(v, 9) }).into()
}

fn produce_response(v: i16) -> ResponseKind {
    let mut p = make!(produce_response::PartitionProduceResponse {
        index: 1,
        error_code: 6,
        base_offset: 1234,
        log_append_time_ms: 1_700_000_000_000,
        unknown_tagged_fields: tags(v, 9)
    });
    if v >= 5 {
        p.log_start_offset = 77;
    }
    if v >= 8 {
        p.record_errors = vec![make!(produce_response::BatchIndexAndErrorMessage { batch_index: 3, batch_index_error_message: Some(s("bad record")) })];
        p.error_message = Some(s("partial failure"));
    }
    if v >= 10 {
        p.current_leader = make!(produce_response::LeaderIdAndEpoch { leader_id: 4.into(), leader_epoch: 9 });
    }
    let mut t = make!(produce_response::TopicProduceResponse { partition_responses: vec![p], unknown_tagged_fields: tags(v, 9) });
    if v <= 12 {
        t.name = s("orders").into();
    } else {
        t.topic_id = uuid();
    }
    let mut m = make!(ProduceResponse { responses: vec![t], unknown_tagged_fields: tags(v, 9) });
    if v >= 1 {
        m.throttle_time_ms = 8;
    }
    if v >= 10 {
        m.node_endpoints = vec![make!(produce_response::NodeEndpoint { node_id: 4.into(), host: s("broker-4"), port: 9094, rack: Some(s("rack-b")) })];
    }
    m.into()
}

fn fetch_request(v: i16) -> RequestKind {
    let mut p = make!(fetch_request::FetchPartition { partition: 2, fetch_offset: 500, partition_max_bytes: 1 << 20, unknown_tagged_fields: tags(v, 12) });
    if v >= 5 {
        p.log_start_offset = 10;
    }
    if v >= 9 {
        p.current_leader_epoch = 7;
    }
    if v >= 12 {
        p.last_fetched_epoch = 6;
    }
    if v >= 17 {
        p.replica_directory_id = uuid();
    }
    let mut t = make!(fetch_request::FetchTopic { partitions: vec![p], unknown_tagged_fields: tags(v, 12) });
    if v <= 12 {
        t.topic = s("orders").into();
    } else {
        t.topic_id = uuid();
    }
    let mut m = make!(FetchRequest { max_wait_ms: 500, min_bytes: 1, topics: vec![t], unknown_tagged_fields: tags(v, 12) });
    if v <= 14 {
        m.replica_id = (-1).into();
    }
    if v >= 3 {
        m.max_bytes = 52_428_800;
    }
    if v >= 4 {
        m.isolation_level = 1;
    }
    if v >= 7 {
        m.session_id = 99;
        m.session_epoch = 3;
        let mut f = make!(fetch_request::ForgottenTopic { partitions: vec![0, 1], unknown_tagged_fields: tags(v, 12) });
        if v <= 12 {
            f.topic = s("old").into();
        } else {
            f.topic_id = uuid();
        }
        m.forgotten_topics_data = vec![f];
    }
    if v >= 11 {
        m.rack_id = s("rack-a");
    }
    if v >= 12 {
        m.cluster_id = Some(s("cluster-x"));
    }
    if v >= 15 {
        m.replica_state = make!(fetch_request::ReplicaState { replica_id: 5.into(), replica_epoch: 11 });
    }
    m.into()
}

fn fetch_response(v: i16) -> ResponseKind {
    let mut p = make!(fetch_response::PartitionData {
        partition_index: 2,
        error_code: 1,
        high_watermark: 900,
        records: Some(b(b"opaque record bytes")),
        unknown_tagged_fields: tags(v, 12),
    });
    if v >= 4 {
        p.last_stable_offset = 880;
        p.aborted_transactions =
            if v % 2 == 0 { None } else { Some(vec![make!(fetch_response::AbortedTransaction { producer_id: 42.into(), first_offset: 870 })]) };
    }
    if v >= 5 {
        p.log_start_offset = 10;
    }
    if v >= 11 {
        p.preferred_read_replica = 4.into();
    }
    if v >= 12 {
        p.diverging_epoch = make!(fetch_response::EpochEndOffset { epoch: 5, end_offset: 850 });
        p.current_leader = make!(fetch_response::LeaderIdAndEpoch { leader_id: 4.into(), leader_epoch: 6 });
        p.snapshot_id = make!(fetch_response::SnapshotId { end_offset: 800, epoch: 4 });
    }
    let mut t = make!(fetch_response::FetchableTopicResponse { partitions: vec![p], unknown_tagged_fields: tags(v, 12) });
    if v <= 12 {
        t.topic = s("orders").into();
    } else {
        t.topic_id = uuid();
    }
    let mut m = make!(FetchResponse { responses: vec![t], unknown_tagged_fields: tags(v, 12) });
    if v >= 1 {
        m.throttle_time_ms = 3;
    }
    if v >= 7 {
        m.error_code = 70;
        m.session_id = 99;
    }
    if v >= 16 {
        m.node_endpoints = vec![make!(fetch_response::NodeEndpoint { node_id: 4.into(), host: s("broker-4"), port: 9094, rack: None })];
    }
    m.into()
}

fn find_coordinator_request(v: i16) -> RequestKind {
    let mut m = make!(FindCoordinatorRequest { unknown_tagged_fields: tags(v, 3) });
    if v <= 3 {
        m.key = s("group-a");
    } else {
        m.coordinator_keys = vec![s("group-a"), s("group-b")];
    }
    if v >= 1 {
        m.key_type = 1;
    }
    m.into()
}

fn find_coordinator_response(v: i16) -> ResponseKind {
    let mut m = make!(FindCoordinatorResponse { unknown_tagged_fields: tags(v, 3) });
    if v >= 1 {
        m.throttle_time_ms = 4;
    }
    if v <= 3 {
        m.error_code = 15;
        m.node_id = 3.into();
        m.host = s("broker-3");
        m.port = 9093;
        if v >= 1 {
            m.error_message = Some(s("not available"));
        }
    } else {
        m.coordinators = vec![make!(find_coordinator_response::Coordinator {
            key: s("group-a"),
            node_id: 3.into(),
            host: s("broker-3"),
            port: 9093,
            error_code: 15,
            error_message: None,
            unknown_tagged_fields: tags(v, 3),
        })];
    }
    m.into()
}

fn join_group_request(v: i16) -> RequestKind {
    let protocol = make!(join_group_request::JoinGroupRequestProtocol { name: s("range"), metadata: b(b"\x00\x01sub"), unknown_tagged_fields: tags(v, 6) });
    let mut m = make!(JoinGroupRequest {
        group_id: s("group-a").into(),
        session_timeout_ms: 45_000,
        member_id: s("member-1"),
        protocol_type: s("consumer"),
        protocols: vec![protocol],
        unknown_tagged_fields: tags(v, 6),
    });
    if v >= 1 {
        m.rebalance_timeout_ms = 300_000;
    }
    if v >= 5 {
        m.group_instance_id = Some(s("instance-1"));
    }
    if v >= 8 {
        m.reason = Some(s("rejoin"));
    }
    m.into()
}

fn join_group_response(v: i16) -> ResponseKind {
    let mut member = make!(join_group_response::JoinGroupResponseMember { member_id: s("member-1"), metadata: b(b"meta"), unknown_tagged_fields: tags(v, 6) });
    if v >= 5 {
        member.group_instance_id = Some(s("instance-1"));
    }
    let mut m = make!(JoinGroupResponse {
        error_code: 27,
        generation_id: 5,
        protocol_name: Some(s("range")),
        leader: s("member-1"),
        member_id: s("member-1"),
        members: vec![member],
        unknown_tagged_fields: tags(v, 6),
    });
    if v >= 2 {
        m.throttle_time_ms = 9;
    }
    if v >= 7 {
        m.protocol_type = Some(s("consumer"));
    }
    if v >= 9 {
        m.skip_assignment = true;
    }
    m.into()
}

fn sync_group_request(v: i16) -> RequestKind {
    let a = make!(sync_group_request::SyncGroupRequestAssignment { member_id: s("member-1"), assignment: b(b"assign"), unknown_tagged_fields: tags(v, 4) });
    let mut m = make!(SyncGroupRequest {
        group_id: s("group-a").into(),
        generation_id: 5,
        member_id: s("member-1"),
        assignments: vec![a],
        unknown_tagged_fields: tags(v, 4)
    });
    if v >= 3 {
        m.group_instance_id = Some(s("instance-1"));
    }
    if v >= 5 {
        m.protocol_type = Some(s("consumer"));
        m.protocol_name = Some(s("range"));
    }
    m.into()
}

fn sync_group_response(v: i16) -> ResponseKind {
    let mut m = make!(SyncGroupResponse { error_code: 25, assignment: b(b"assign"), unknown_tagged_fields: tags(v, 4) });
    if v >= 1 {
        m.throttle_time_ms = 2;
    }
    if v >= 5 {
        m.protocol_type = Some(s("consumer"));
        m.protocol_name = None;
    }
    m.into()
}

fn heartbeat_request(v: i16) -> RequestKind {
    let mut m = make!(HeartbeatRequest { group_id: s("group-a").into(), generation_id: 5, member_id: s("member-1"), unknown_tagged_fields: tags(v, 4) });
    if v >= 3 {
        m.group_instance_id = Some(s("instance-1"));
    }
    m.into()
}

fn heartbeat_response(v: i16) -> ResponseKind {
    let mut m = make!(HeartbeatResponse { error_code: 27, unknown_tagged_fields: tags(v, 4) });
    if v >= 1 {
        m.throttle_time_ms = 6;
    }
    m.into()
}

fn offset_commit_request(v: i16) -> RequestKind {
    let mut p = make!(offset_commit_request::OffsetCommitRequestPartition {
        partition_index: 1,
        committed_offset: 1234,
        committed_metadata: if v % 2 == 0 { Some(s("meta")) } else { None },
        unknown_tagged_fields: tags(v, 8),
    });
    if v >= 6 {
        p.committed_leader_epoch = 7;
    }
    let t = make!(offset_commit_request::OffsetCommitRequestTopic { name: s("orders").into(), partitions: vec![p], unknown_tagged_fields: tags(v, 8) });
    let mut m = make!(OffsetCommitRequest { group_id: s("group-a").into(), topics: vec![t], unknown_tagged_fields: tags(v, 8) });
    if v >= 1 {
        m.generation_id_or_member_epoch = 5;
        m.member_id = s("member-1");
    }
    if (2..=4).contains(&v) {
        m.retention_time_ms = 86_400_000;
    }
    if v >= 7 {
        m.group_instance_id = Some(s("instance-1"));
    }
    m.into()
}

fn offset_commit_response(v: i16) -> ResponseKind {
    let p = make!(offset_commit_response::OffsetCommitResponsePartition { partition_index: 1, error_code: 22, unknown_tagged_fields: tags(v, 8) });
    let t = make!(offset_commit_response::OffsetCommitResponseTopic { name: s("orders").into(), partitions: vec![p], unknown_tagged_fields: tags(v, 8) });
    let mut m = make!(OffsetCommitResponse { topics: vec![t], unknown_tagged_fields: tags(v, 8) });
    if v >= 3 {
        m.throttle_time_ms = 1;
    }
    m.into()
}

fn offset_fetch_request(v: i16) -> RequestKind {
    let mut m = make!(OffsetFetchRequest { unknown_tagged_fields: tags(v, 6) });
    if v <= 7 {
        m.group_id = s("group-a").into();
        m.topics = if v >= 2 && v % 2 == 0 {
            None
        } else {
            Some(vec![make!(offset_fetch_request::OffsetFetchRequestTopic {
                name: s("orders").into(),
                partition_indexes: vec![0, 1],
                unknown_tagged_fields: tags(v, 6)
            })])
        };
    } else {
        let topics = vec![make!(offset_fetch_request::OffsetFetchRequestTopics {
            name: s("orders").into(),
            partition_indexes: vec![0, 1],
            unknown_tagged_fields: tags(v, 6)
        })];
        let mut g =
            make!(offset_fetch_request::OffsetFetchRequestGroup { group_id: s("group-a").into(), topics: Some(topics), unknown_tagged_fields: tags(v, 6) });
        if v >= 9 {
            g.member_id = Some(s("member-1"));
            g.member_epoch = 4;
        }
        let all = make!(offset_fetch_request::OffsetFetchRequestGroup { group_id: s("group-b").into(), topics: None });
        m.groups = vec![g, all];
    }
    if v >= 7 {
        m.require_stable = true;
    }
    m.into()
}

fn offset_fetch_response(v: i16) -> ResponseKind {
    let mut m = make!(OffsetFetchResponse { unknown_tagged_fields: tags(v, 6) });
    if v >= 3 {
        m.throttle_time_ms = 2;
    }
    if v <= 7 {
        let mut p = make!(offset_fetch_response::OffsetFetchResponsePartition {
            partition_index: 1,
            committed_offset: 1234,
            metadata: Some(s("meta")),
            error_code: 0,
            unknown_tagged_fields: tags(v, 6)
        });
        if v >= 5 {
            p.committed_leader_epoch = 7;
        }
        m.topics =
            vec![make!(offset_fetch_response::OffsetFetchResponseTopic { name: s("orders").into(), partitions: vec![p], unknown_tagged_fields: tags(v, 6) })];
        if v >= 2 {
            m.error_code = 16;
        }
    } else {
        let p = make!(offset_fetch_response::OffsetFetchResponsePartitions {
            partition_index: 1,
            committed_offset: 1234,
            committed_leader_epoch: 7,
            metadata: None,
            error_code: 3,
            unknown_tagged_fields: tags(v, 6),
        });
        let t = make!(offset_fetch_response::OffsetFetchResponseTopics { name: s("orders").into(), partitions: vec![p], unknown_tagged_fields: tags(v, 6) });
        m.groups = vec![make!(offset_fetch_response::OffsetFetchResponseGroup {
            group_id: s("group-a").into(),
            topics: vec![t],
            error_code: 16,
            unknown_tagged_fields: tags(v, 6)
        })];
    }
    m.into()
}

fn list_offsets_request(v: i16) -> RequestKind {
    let mut p = make!(list_offsets_request::ListOffsetsPartition { partition_index: 1, timestamp: -2, unknown_tagged_fields: tags(v, 6) });
    if v >= 4 {
        p.current_leader_epoch = 7;
    }
    let t = make!(list_offsets_request::ListOffsetsTopic { name: s("orders").into(), partitions: vec![p], unknown_tagged_fields: tags(v, 6) });
    let mut m = make!(ListOffsetsRequest { replica_id: 5.into(), topics: vec![t], unknown_tagged_fields: tags(v, 6) });
    if v >= 2 {
        m.isolation_level = 1;
    }
    if v >= 10 {
        m.timeout_ms = 1500;
    }
    m.into()
}

fn list_offsets_response(v: i16) -> ResponseKind {
    let mut p = make!(list_offsets_response::ListOffsetsPartitionResponse { partition_index: 1, error_code: 6, unknown_tagged_fields: tags(v, 6) });
    if v >= 1 {
        p.timestamp = 1_700_000_000_000;
        p.offset = 1234;
    }
    if v >= 4 {
        p.leader_epoch = 7;
    }
    let t = make!(list_offsets_response::ListOffsetsTopicResponse { name: s("orders").into(), partitions: vec![p], unknown_tagged_fields: tags(v, 6) });
    let mut m = make!(ListOffsetsResponse { topics: vec![t], unknown_tagged_fields: tags(v, 6) });
    if v >= 2 {
        m.throttle_time_ms = 3;
    }
    m.into()
}

fn create_topics_request(v: i16) -> RequestKind {
    let assignment = make!(create_topics_request::CreatableReplicaAssignment {
        partition_index: 0,
        broker_ids: vec![1.into(), 2.into()],
        unknown_tagged_fields: tags(v, 5)
    });
    let config = make!(create_topics_request::CreatableTopicConfig { name: s("cleanup.policy"), value: Some(s("compact")), unknown_tagged_fields: tags(v, 5) });
    let null_config = make!(create_topics_request::CreatableTopicConfig { name: s("retention.ms"), value: None });
    let topic = make!(create_topics_request::CreatableTopic {
        name: s("orders").into(),
        num_partitions: -1,
        replication_factor: -1,
        assignments: vec![assignment],
        configs: vec![config, null_config],
        unknown_tagged_fields: tags(v, 5),
    });
    let mut m = make!(CreateTopicsRequest { topics: vec![topic], timeout_ms: 30_000, unknown_tagged_fields: tags(v, 5) });
    if v >= 1 {
        m.validate_only = true;
    }
    m.into()
}

fn create_topics_response(v: i16) -> ResponseKind {
    let mut r = make!(create_topics_response::CreatableTopicResult { name: s("orders").into(), error_code: 36, unknown_tagged_fields: tags(v, 5) });
    if v >= 1 {
        r.error_message = Some(s("exists"));
    }
    if v >= 5 {
        r.topic_config_error_code = 29;
        r.num_partitions = 3;
        r.replication_factor = 2;
        r.configs = if v % 2 == 0 {
            None
        } else {
            Some(vec![make!(create_topics_response::CreatableTopicConfigs {
                name: s("cleanup.policy"),
                value: Some(s("compact")),
                read_only: true,
                config_source: 5,
                is_sensitive: true,
                unknown_tagged_fields: tags(v, 5),
            })])
        };
    }
    if v >= 7 {
        r.topic_id = uuid();
    }
    let mut m = make!(CreateTopicsResponse { topics: vec![r], unknown_tagged_fields: tags(v, 5) });
    if v >= 2 {
        m.throttle_time_ms = 4;
    }
    m.into()
}

fn init_producer_id_request(v: i16) -> RequestKind {
    let txn = if v % 2 == 0 { Some(s("txn-1").into()) } else { None };
    let mut m = make!(InitProducerIdRequest { transactional_id: txn, transaction_timeout_ms: 60_000, unknown_tagged_fields: tags(v, 2) });
    if v >= 3 {
        m.producer_id = 42.into();
        m.producer_epoch = 3;
    }
    m.into()
}

fn init_producer_id_response(v: i16) -> ResponseKind {
    let mut m =
        make!(InitProducerIdResponse { throttle_time_ms: 1, error_code: 47, producer_id: 42.into(), producer_epoch: 3, unknown_tagged_fields: tags(v, 2) });
    if v >= 6 {
        m.ongoing_txn_producer_id = 41.into();
        m.ongoing_txn_producer_epoch = 2;
    }
    m.into()
}

fn sasl_handshake_request(_v: i16) -> RequestKind {
    make!(SaslHandshakeRequest { mechanism: s("SCRAM-SHA-512") }).into()
}

fn sasl_handshake_response(_v: i16) -> ResponseKind {
    make!(SaslHandshakeResponse { error_code: 33, mechanisms: vec![s("PLAIN"), s("SCRAM-SHA-256")] }).into()
}

fn sasl_authenticate_request(v: i16) -> RequestKind {
    make!(SaslAuthenticateRequest { auth_bytes: b(b"\x00user\x00pass"), unknown_tagged_fields: tags(v, 2) }).into()
}

fn sasl_authenticate_response(v: i16) -> ResponseKind {
    let mut m = make!(SaslAuthenticateResponse {
        error_code: 58,
        error_message: Some(s("bad credentials")),
        auth_bytes: b(b"server-first"),
        unknown_tagged_fields: tags(v, 2)
    });
    if v >= 1 {
        m.session_lifetime_ms = 3_600_000;
    }
    m.into()
}

fn describe_configs_request(v: i16) -> RequestKind {
    let r = make!(describe_configs_request::DescribeConfigsResource {
        resource_type: 2,
        resource_name: s("orders"),
        configuration_keys: if v % 2 == 0 { None } else { Some(vec![s("cleanup.policy")]) },
        unknown_tagged_fields: tags(v, 4),
    });
    let mut m = make!(DescribeConfigsRequest { resources: vec![r], unknown_tagged_fields: tags(v, 4) });
    if v >= 1 {
        m.include_synonyms = true;
    }
    if v >= 3 {
        m.include_documentation = true;
    }
    m.into()
}

fn describe_configs_response(v: i16) -> ResponseKind {
    let mut c = make!(describe_configs_response::DescribeConfigsResourceResult {
        name: s("cleanup.policy"),
        value: Some(s("compact")),
        read_only: true,
        is_sensitive: true,
        unknown_tagged_fields: tags(v, 4),
    });
    if v >= 1 {
        c.config_source = 5;
        c.synonyms = vec![make!(describe_configs_response::DescribeConfigsSynonym {
            name: s("log.cleanup.policy"),
            value: None,
            source: 4,
            unknown_tagged_fields: tags(v, 4)
        })];
    }
    if v >= 3 {
        c.config_type = 2;
        c.documentation = Some(s("doc"));
    }
    let r = make!(describe_configs_response::DescribeConfigsResult {
        error_code: 29,
        error_message: Some(s("denied")),
        resource_type: 2,
        resource_name: s("orders"),
        configs: vec![c],
        unknown_tagged_fields: tags(v, 4),
    });
    make!(DescribeConfigsResponse { throttle_time_ms: 7, results: vec![r], unknown_tagged_fields: tags(v, 4) }).into()
}

/// The built apis: key, request builder, response builder.
pub const BUILT: &[(i16, fn(i16) -> RequestKind, fn(i16) -> ResponseKind)] = &[
    (0, produce_request, produce_response),
    (1, fetch_request, fetch_response),
    (2, list_offsets_request, list_offsets_response),
    (3, metadata_request, metadata_response),
    (8, offset_commit_request, offset_commit_response),
    (9, offset_fetch_request, offset_fetch_response),
    (10, find_coordinator_request, find_coordinator_response),
    (11, join_group_request, join_group_response),
    (12, heartbeat_request, heartbeat_response),
    (14, sync_group_request, sync_group_response),
    (17, sasl_handshake_request, sasl_handshake_response),
    (18, api_versions_request, api_versions_response),
    (19, create_topics_request, create_topics_response),
    (22, init_producer_id_request, init_producer_id_response),
    (32, describe_configs_request, describe_configs_response),
    (36, sasl_authenticate_request, sasl_authenticate_response),
];

/// kafka-protocol's encoding of a built value, or why it could not encode (a builder bug:
/// a field set outside its versions).
fn kp_bytes(value: Result<RequestKind, ResponseKind>, version: i16) -> Result<Bytes, String> {
    let mut out = BytesMut::new();
    let r = match &value {
        Ok(req) => req.encode(&mut out, version),
        Err(resp) => resp.encode(&mut out, version),
    };
    r.map_err(|e| format!("kafka-protocol encode failed: {e:#}"))?;
    Ok(out.freeze())
}

/// kwire decodes all of `bytes` and re-encodes; the bytes must come back identical.
fn kw_round_trip(key: i16, request: bool, version: i16, bytes: &Bytes) -> Outcome {
    let mut input = bytes.clone();
    let again = if request {
        kwire::RequestKind::decode(&mut input, key, version).map_err(|e| e.to_string()).and_then(|m| {
            let mut out = BytesMut::new();
            m.encode(&mut out, version).map(|()| out.freeze()).map_err(|e| e.to_string())
        })
    } else {
        kwire::ResponseKind::decode(&mut input, key, version).map_err(|e| e.to_string()).and_then(|m| {
            let mut out = BytesMut::new();
            m.encode(&mut out, version).map(|()| out.freeze()).map_err(|e| e.to_string())
        })
    };
    match again {
        Err(e) => Outcome::Differs { detail: format!("kwire: {e}") },
        Ok(_) if !input.is_empty() => Outcome::Differs { detail: format!("kwire decode left {} bytes unread", input.len()) },
        Ok(ours) if ours == *bytes => Outcome::Agrees { seeds: 1 },
        Ok(ours) => Outcome::Differs { detail: first_difference(bytes, &ours, ("kafka-protocol", "kwire")) },
    }
}

/// One row per (built api, direction, version both crates know). Builder bugs (kafka-protocol
/// refusing to encode what was built) are returned separately: they fail the test.
pub fn run() -> (Vec<Row>, Vec<String>) {
    let mut rows = Vec::new();
    let mut builder_bugs = Vec::new();
    for &(key, build_request, build_response) in BUILT {
        let Some(ours) = kwire::ApiKey::from_i16(key) else { continue };
        let ours_range = ours.info().valid;
        for request in [true, false] {
            let Some((lo, hi)) = super::forward::kp_versions(key, request) else { continue };
            let name = format!("{}{}", ours.name(), if request { "Request" } else { "Response" });
            for version in ours_range.lo.max(lo)..=ours_range.hi.min(hi) {
                let value = if request { Ok(build_request(version)) } else { Err(build_response(version)) };
                match kp_bytes(value, version) {
                    Ok(bytes) => rows.push(Row {
                        kind: Kind::Api { key, request },
                        message: name.clone(),
                        version,
                        outcome: kw_round_trip(key, request, version, &bytes),
                    }),
                    Err(e) => builder_bugs.push(format!("{name} v{version}: {e}")),
                }
            }
        }
    }
    (rows, builder_bugs)
}
