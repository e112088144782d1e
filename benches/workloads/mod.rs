//! The benchmark workloads W1-W5 of `../shared/bench/WORKLOADS.md`, built for kwire and for
//! the `kafka-protocol` crate from the same SplitMix64 data, with the FNV-1a 64 digests their
//! frames must have. Shared by `benches/codec.rs`, `tests/workloads.rs` and
//! `examples/bench_counts.rs` (each includes it with `#[path]`), so all three measure and check
//! the same values.
#![allow(dead_code)]

use bytes::Bytes;

/// One workload: which frame, at which version, and the digest its frame must have.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// Id as in WORKLOADS.md (`W1`, `W4a`, ...).
    pub id: &'static str,
    /// What it is, for group names.
    pub name: &'static str,
    /// The message version (unused for W5).
    pub version: i16,
    /// Frame length in bytes.
    pub len: usize,
    /// FNV-1a 64 of the frame.
    pub fnv1a64: u64,
}

pub const W1: Spec = Spec { id: "W1", name: "MetadataResponse v12", version: 12, len: 456_160, fnv1a64: 0xe9b80e55ae2f48e0 };
pub const W2: Spec = Spec { id: "W2", name: "ProduceRequest v9", version: 9, len: 1_639_339, fnv1a64: 0x77a546b9c2d579a0 };
pub const W3: Spec = Spec { id: "W3", name: "FetchResponse v12", version: 12, len: 6_557_642, fnv1a64: 0x4f882f929bc6e0c7 };
pub const W4A: Spec = Spec { id: "W4a", name: "ApiVersionsRequest v3", version: 3, len: 26, fnv1a64: 0xe29dcd9f20225244 };
pub const W4B: Spec = Spec { id: "W4b", name: "ApiVersionsResponse v3", version: 3, len: 428, fnv1a64: 0xdbbd8f41a26a08a4 };
pub const W5: Spec = Spec { id: "W5", name: "RecordBatch v2", version: 2, len: 138_933, fnv1a64: 0x5545403253dc18a5 };

/// Every workload, in table order.
pub const ALL: [Spec; 6] = [W1, W2, W3, W4A, W4B, W5];

/// FNV-1a 64 over the whole frame.
pub fn fnv1a64(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf29ce484222325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100000001b3))
}

/// Fails unless `frame` has the length and digest `spec` lists.
pub fn check(spec: &Spec, crate_name: &str, frame: &[u8]) -> Result<(), String> {
    let digest = fnv1a64(frame);
    if frame.len() != spec.len || digest != spec.fnv1a64 {
        return Err(format!(
            "{} ({}) from {crate_name}: {} bytes with fnv1a64 {digest:016x}, expected {} bytes with {:016x}",
            spec.id,
            spec.name,
            frame.len(),
            spec.len,
            spec.fnv1a64
        ));
    }
    Ok(())
}

/// SplitMix64, one generator per workload.
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// `r()`: the next draw.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E3779B97F4A7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
        z ^ (z >> 31)
    }

    /// `bytes(n)`: successive draws little-endian, the last one cut short.
    pub fn bytes(&mut self, n: usize) -> Bytes {
        let mut out = Vec::with_capacity(n + 8);
        while out.len() < n {
            out.extend_from_slice(&self.next_u64().to_le_bytes());
        }
        out.truncate(n);
        Bytes::from(out)
    }

    /// `uuid()`: the first draw is the most significant half.
    pub fn uuid(&mut self) -> (u64, u64) {
        (self.next_u64(), self.next_u64())
    }
}

/// The random parts of each workload, drawn once in the order WORKLOADS.md gives, so both crates
/// get identical values (and share the records `Bytes`).
pub struct Data {
    /// W1: per topic its uuid and per partition its leader epoch.
    pub w1_topics: Vec<((u64, u64), Vec<i32>)>,
    /// W2: records per (topic, partition), topic-major.
    pub w2_records: Vec<Bytes>,
    /// W3: (high watermark, records) per (topic, partition), topic-major.
    pub w3_partitions: Vec<(i64, Bytes)>,
    /// W5: the value of each record.
    pub w5_values: Vec<Bytes>,
}

impl Data {
    pub fn new() -> Self {
        let mut r = SplitMix64::new(1);
        let w1_topics = (0..1000)
            .map(|_| {
                let id = r.uuid();
                let epochs = (0..10).map(|_| (r.next_u64() % 1000) as i32).collect();
                (id, epochs)
            })
            .collect();
        let mut r = SplitMix64::new(2);
        let w2_records = (0..100).map(|_| r.bytes(16384)).collect();
        let mut r = SplitMix64::new(3);
        let w3_partitions = (0..100)
            .map(|_| {
                let hw = (r.next_u64() % 1_000_000_000) as i64;
                (hw, r.bytes(65536))
            })
            .collect();
        let mut r = SplitMix64::new(5);
        let w5_values = (0..1000).map(|_| r.bytes(100)).collect();
        Data { w1_topics, w2_records, w3_partitions, w5_values }
    }
}

impl Default for Data {
    fn default() -> Self {
        Self::new()
    }
}

fn topic_name(t: usize) -> String {
    format!("topic-{t:04}")
}

/// Leader and replicas of W1's partition `p` of topic `t`.
fn w1_replicas(t: usize, p: usize) -> (i32, [i32; 3]) {
    let l = ((t + p) % 3) as i32;
    (l, [l, (l + 1) % 3, (l + 2) % 3])
}

const W5_BASE_TIMESTAMP: i64 = 1_700_000_000_000;

fn w5_key(i: usize) -> Bytes {
    Bytes::from(format!("key-{i:06}"))
}

/// The workloads as kwire values.
pub mod kw {
    use super::*;
    use kwire::messages::api_versions_response::ApiVersion;
    use kwire::messages::fetch_response::{FetchableTopicResponse, PartitionData};
    use kwire::messages::metadata_response::{MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic};
    use kwire::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kwire::messages::{ApiVersionsRequest, ApiVersionsResponse, FetchResponse, MetadataResponse, ProduceRequest};
    use kwire::runtime::records::{Record, RecordBatchBuilder};
    use kwire::Uuid;

    /// W1 read in full through its borrowed view: every field of every broker, topic and
    /// partition, folded into a checksum so nothing is optimised away. No allocation.
    pub fn w1_view_read(frame: &[u8]) -> u64 {
        use kwire::messages::metadata_response::MetadataResponseView;
        let mut buf = frame;
        let m = MetadataResponseView::decode(&mut buf, super::W1.version).expect("W1 decodes");
        let len = |s: Option<&str>| s.map_or(0, str::len) as u64;
        let mut sum = m.throttle_time_ms as u64 ^ m.controller_id as u64 ^ len(m.cluster_id);
        for b in m.brokers {
            sum = sum.wrapping_add(b.node_id as u64 + b.host.len() as u64 + b.port as u64 + len(b.rack));
        }
        for t in m.topics {
            let (hi, lo) = t.topic_id.as_u64_pair();
            sum = sum.wrapping_add(t.error_code as u64 + len(t.name) + (hi ^ lo) + t.is_internal as u64);
            sum ^= t.topic_authorized_operations as u64;
            for p in t.partitions {
                sum = sum.wrapping_add(p.error_code as u64 + p.partition_index as u64 + p.leader_id as u64 + p.leader_epoch as u64);
                for r in p.replica_nodes.iter().chain(p.isr_nodes).chain(p.offline_replicas) {
                    sum = sum.wrapping_add(r as u64);
                }
            }
        }
        sum
    }

    pub fn w1(d: &Data) -> MetadataResponse {
        MetadataResponse {
            throttle_time_ms: 0,
            brokers: (0..3)
                .map(|i| MetadataResponseBroker {
                    node_id: i,
                    host: format!("broker-{i}.kafka.example.com").into(),
                    port: 9092,
                    rack: Some(format!("rack-{i}").into()),
                    ..Default::default()
                })
                .collect(),
            cluster_id: Some("bench-cluster-0001".into()),
            controller_id: 0,
            topics: d
                .w1_topics
                .iter()
                .enumerate()
                .map(|(t, ((hi, lo), epochs))| MetadataResponseTopic {
                    error_code: 0,
                    name: Some(topic_name(t).into()),
                    topic_id: Uuid::from_u64_pair(*hi, *lo),
                    is_internal: false,
                    topic_authorized_operations: i32::MIN,
                    partitions: epochs
                        .iter()
                        .enumerate()
                        .map(|(p, &leader_epoch)| {
                            let (leader_id, replicas) = w1_replicas(t, p);
                            MetadataResponsePartition {
                                error_code: 0,
                                partition_index: p as i32,
                                leader_id,
                                leader_epoch,
                                replica_nodes: kwire::SmallVec::from_slice(&replicas),
                                isr_nodes: kwire::SmallVec::from_slice(&replicas),
                                offline_replicas: kwire::SmallVec::new(),
                                ..Default::default()
                            }
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    pub fn w2(d: &Data) -> ProduceRequest {
        ProduceRequest {
            transactional_id: None,
            acks: -1,
            timeout_ms: 30000,
            topic_data: d
                .w2_records
                .chunks(10)
                .enumerate()
                .map(|(t, records)| TopicProduceData {
                    name: topic_name(t).into(),
                    partition_data: records
                        .iter()
                        .enumerate()
                        .map(|(p, r)| PartitionProduceData { index: p as i32, records: r.clone().into(), ..Default::default() })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    pub fn w3(d: &Data) -> FetchResponse {
        FetchResponse {
            throttle_time_ms: 0,
            error_code: 0,
            session_id: 0,
            responses: d
                .w3_partitions
                .chunks(10)
                .enumerate()
                .map(|(t, parts)| FetchableTopicResponse {
                    topic: topic_name(t).into(),
                    partitions: parts
                        .iter()
                        .enumerate()
                        .map(|(p, (hw, r))| PartitionData {
                            partition_index: p as i32,
                            error_code: 0,
                            high_watermark: *hw,
                            last_stable_offset: *hw,
                            log_start_offset: 0,
                            aborted_transactions: None,
                            preferred_read_replica: -1,
                            records: r.clone().into(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    pub fn w4a() -> ApiVersionsRequest {
        ApiVersionsRequest { client_software_name: "kafka-bench-client".into(), client_software_version: "1.0.0".into(), ..Default::default() }
    }

    pub fn w4b() -> ApiVersionsResponse {
        ApiVersionsResponse {
            error_code: 0,
            api_keys: (0..60).map(|k| ApiVersion { api_key: k, min_version: 0, max_version: k % 17 + 1, ..Default::default() }).collect(),
            throttle_time_ms: 0,
            ..Default::default()
        }
    }

    /// The records `Bytes` of a W2 request, in encode order.
    pub fn w2_shared(m: &ProduceRequest) -> Vec<Bytes> {
        m.topic_data.iter().flat_map(|t| t.partition_data.iter().filter_map(|p| p.records.clone())).collect()
    }

    /// The records `Bytes` of a W3 response, in encode order.
    #[allow(clippy::useless_conversion)]
    pub fn w3_shared(m: &FetchResponse) -> Vec<Bytes> {
        // `Option::from`: records are nullable in the 3.9.0 specs, not in Kafka 4's.
        m.responses.iter().flat_map(|t| t.partitions.iter().filter_map(|p| Option::from(p.records.clone()))).collect()
    }

    pub fn w5_records(d: &Data) -> Vec<Record> {
        d.w5_values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                Record::new(i as i64, W5_BASE_TIMESTAMP + i as i64, Some(w5_key(i)), Some(v.clone()))
                    .with_header("trace-id", Some(Bytes::copy_from_slice(&(i as u64).to_be_bytes())))
            })
            .collect()
    }

    /// W5's batch settings (records appended separately or passed to `build_from`).
    pub fn w5_builder() -> RecordBatchBuilder {
        RecordBatchBuilder::new().partition_leader_epoch(0).producer(-1, -1, -1)
    }

    /// W5's builder with its records appended.
    pub fn w5(d: &Data) -> RecordBatchBuilder {
        let mut b = w5_builder();
        for r in w5_records(d) {
            b.append(r).expect("W5 records are in offset order");
        }
        b
    }
}

/// The workloads as `kafka-protocol` values.
pub mod kp {
    use super::*;
    use kafka_protocol::messages::api_versions_response::ApiVersion;
    use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
    use kafka_protocol::messages::metadata_response::{MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic};
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse, BrokerId, FetchResponse, MetadataResponse, ProduceRequest, TopicName};
    use kafka_protocol::protocol::StrBytes;
    use kafka_protocol::records::{Compression, Record, RecordEncodeOptions, TimestampType};

    fn s(v: String) -> StrBytes {
        StrBytes::from_string(v)
    }

    /// kafka-protocol's `Uuid` (from the `uuid` crate, which is not a direct dependency).
    fn uuid<T: std::str::FromStr>(hi: u64, lo: u64) -> T
    where
        T::Err: std::fmt::Debug,
    {
        format!("{hi:016x}{lo:016x}").parse().expect("32 hex digits are a uuid")
    }

    pub fn w1(d: &Data) -> MetadataResponse {
        let mut m = MetadataResponse::default();
        m.throttle_time_ms = 0;
        m.brokers = (0..3)
            .map(|i| {
                let mut b = MetadataResponseBroker::default();
                b.node_id = BrokerId(i);
                b.host = s(format!("broker-{i}.kafka.example.com"));
                b.port = 9092;
                b.rack = Some(s(format!("rack-{i}")));
                b
            })
            .collect();
        m.cluster_id = Some(StrBytes::from_static_str("bench-cluster-0001"));
        m.controller_id = BrokerId(0);
        m.topics = d
            .w1_topics
            .iter()
            .enumerate()
            .map(|(t, ((hi, lo), epochs))| {
                let mut topic = MetadataResponseTopic::default();
                topic.error_code = 0;
                topic.name = Some(TopicName(s(topic_name(t))));
                topic.topic_id = uuid(*hi, *lo);
                topic.is_internal = false;
                topic.topic_authorized_operations = i32::MIN;
                topic.partitions = epochs
                    .iter()
                    .enumerate()
                    .map(|(p, &leader_epoch)| {
                        let (leader, replicas) = w1_replicas(t, p);
                        let mut part = MetadataResponsePartition::default();
                        part.error_code = 0;
                        part.partition_index = p as i32;
                        part.leader_id = BrokerId(leader);
                        part.leader_epoch = leader_epoch;
                        part.replica_nodes = replicas.iter().map(|&r| BrokerId(r)).collect();
                        part.isr_nodes = replicas.iter().map(|&r| BrokerId(r)).collect();
                        part.offline_replicas = Vec::new();
                        part
                    })
                    .collect();
                topic
            })
            .collect();
        m
    }

    pub fn w2(d: &Data) -> ProduceRequest {
        let mut m = ProduceRequest::default();
        m.transactional_id = None;
        m.acks = -1;
        m.timeout_ms = 30000;
        m.topic_data = d
            .w2_records
            .chunks(10)
            .enumerate()
            .map(|(t, records)| {
                let mut topic = TopicProduceData::default();
                topic.name = TopicName(s(topic_name(t)));
                topic.partition_data = records
                    .iter()
                    .enumerate()
                    .map(|(p, r)| {
                        let mut part = PartitionProduceData::default();
                        part.index = p as i32;
                        part.records = Some(r.clone());
                        part
                    })
                    .collect();
                topic
            })
            .collect();
        m
    }

    pub fn w3(d: &Data) -> FetchResponse {
        let mut m = FetchResponse::default();
        m.throttle_time_ms = 0;
        m.error_code = 0;
        m.session_id = 0;
        m.responses = d
            .w3_partitions
            .chunks(10)
            .enumerate()
            .map(|(t, parts)| {
                let mut topic = FetchableTopicResponse::default();
                topic.topic = TopicName(s(topic_name(t)));
                topic.partitions = parts
                    .iter()
                    .enumerate()
                    .map(|(p, (hw, r))| {
                        let mut part = PartitionData::default();
                        part.partition_index = p as i32;
                        part.error_code = 0;
                        part.high_watermark = *hw;
                        part.last_stable_offset = *hw;
                        part.log_start_offset = 0;
                        part.aborted_transactions = None;
                        part.preferred_read_replica = BrokerId(-1);
                        part.records = Some(r.clone());
                        part
                    })
                    .collect();
                topic
            })
            .collect();
        m
    }

    pub fn w4a() -> ApiVersionsRequest {
        let mut m = ApiVersionsRequest::default();
        m.client_software_name = StrBytes::from_static_str("kafka-bench-client");
        m.client_software_version = StrBytes::from_static_str("1.0.0");
        m
    }

    pub fn w4b() -> ApiVersionsResponse {
        let mut m = ApiVersionsResponse::default();
        m.error_code = 0;
        m.api_keys = (0..60)
            .map(|k| {
                let mut a = ApiVersion::default();
                a.api_key = k;
                a.min_version = 0;
                a.max_version = k % 17 + 1;
                a
            })
            .collect();
        m.throttle_time_ms = 0;
        m
    }

    pub fn w5(d: &Data) -> Vec<Record> {
        d.w5_values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let mut headers = kafka_protocol::indexmap::IndexMap::new();
                headers.insert(StrBytes::from_static_str("trace-id"), Some(Bytes::copy_from_slice(&(i as u64).to_be_bytes())));
                Record {
                    transactional: false,
                    control: false,
                    delete_horizon: false,
                    partition_leader_epoch: 0,
                    producer_id: -1,
                    producer_epoch: -1,
                    timestamp_type: TimestampType::Creation,
                    offset: i as i64,
                    // kafka-protocol starts a new batch unless offset - sequence stays constant;
                    // base sequence -1 then gives every record the sequence its decoder reports.
                    sequence: i as i32 - 1,
                    timestamp: W5_BASE_TIMESTAMP + i as i64,
                    key: Some(w5_key(i)),
                    value: Some(v.clone()),
                    headers,
                }
            })
            .collect()
    }

    pub const W5_OPTIONS: RecordEncodeOptions = RecordEncodeOptions { version: 2, compression: Compression::None };
}
