//! One valid request per api, for any version, and what the answer must carry.
// Records are nullable in Kafka 3.9.0's specs and not in 4.x's: `Option::from` builds on either.
#![allow(clippy::useless_conversion)]
// Messages gain fields in newer specs: `..Default::default()` keeps these literals building on every spec set.
#![allow(clippy::needless_update)]

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kwire::messages::*;
use kwire::runtime::json::serde_json::{self, json};
use kwire::runtime::records::{decode_all, Compression, DecodeOptions, Record, RecordBatchBuilder};
use kwire::{ApiKey, ByteString, Bytes, Decode, RequestKind, ResponseKind, Uuid};

use super::{errors, expect, patch, retry, uuid_json, Conn, Outcome, Row, Sweep, COORDINATOR_TRANSIENT, R};
use crate::as_resp;

/// The topic most apis work on: 3 partitions, records in each.
pub const TOPIC: &str = "sweep";
const CFG_TOPIC: &str = "sweep-cfg";
const DR_TOPIC: &str = "sweep-delete-records";
const MARKER_TOPIC: &str = "sweep-markers";
/// A simple (member-less) group with committed offsets: OffsetFetch, DescribeGroups.
const OFFSETS_GROUP: &str = "sweep-offsets";
const COMMITTED: i64 = 7;
/// A transactional id initialised in setup: DescribeTransactions, FindCoordinator.
const WARM_TXN: &str = "sweep-warm";

/// CONCURRENT_TRANSACTIONS: the previous transaction of that id is still completing.
const CONCURRENT_TRANSACTIONS: i16 = 51;

#[derive(Debug, Default)]
pub struct State {
    pub topic_id: Uuid,
    /// Every topic this run saw in Metadata, by name (Produce v13 names topics by id).
    pub topic_ids: std::collections::HashMap<String, Uuid>,
    pub cluster_id: String,
    pub log_dir: String,
    pub metadata_level: i16,
    /// The id of the broker the sweep talks to (its own configs are described).
    pub broker_id: i32,
    /// A per-run suffix so names never collide with an earlier run on the same broker.
    pub run: String,
}

/// From v3 the broker checks the client software name and version (KIP-511): never empty.
pub fn api_versions_request() -> ApiVersionsRequest {
    ApiVersionsRequest { client_software_name: bs("kwire-sweep"), client_software_version: bs("0.1.0"), ..Default::default() }
}

pub fn bs(s: impl Into<String>) -> ByteString {
    ByteString::from(s.into())
}

pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// The newest version both sides support (for helper requests around the one under test).
pub fn newest_version(s: &Sweep, api: ApiKey) -> i16 {
    newest(s, api)
}

/// Produces `n` uncompressed records to `topic`/`partition` at the newest Produce version.
pub fn produce_records(s: &mut Sweep, topic: &str, partition: i32, n: usize) -> R<()> {
    let pv = newest(s, ApiKey::Produce);
    let req = produce_request(s, pv, topic, partition, batch(Compression::None, n)?, -1)?;
    expect(&s.conn.call(pv, req)?, &[])
}

pub fn newest(s: &Sweep, api: ApiKey) -> i16 {
    s.common().into_iter().find(|(a, _)| *a == api).map(|(_, r)| r.hi).unwrap_or_else(|| api.stable_versions().hi)
}

pub fn batch(compression: Compression, n: usize) -> R<Bytes> {
    let mut b = RecordBatchBuilder::new().compression(compression);
    let ts = now_ms();
    for i in 0..n {
        b.append(Record::new(i as i64, ts, Some(Bytes::from(format!("k{i}"))), Some(Bytes::from(format!("value {i} {compression}")))))
            .map_err(|e| e.to_string())?;
    }
    b.build().map_err(|e| e.to_string())
}

pub fn produce_request(s: &Sweep, v: i16, topic: &str, partition: i32, records: Bytes, acks: i16) -> R<ProduceRequest> {
    use produce_request::*;
    let req = ProduceRequest {
        acks,
        timeout_ms: 30_000,
        topic_data: vec![TopicProduceData {
            name: if v < 13 { bs(topic) } else { ByteString::new() },
            partition_data: vec![PartitionProduceData { index: partition, records: records.into(), ..Default::default() }],
            ..Default::default()
        }],
        ..Default::default()
    };
    // v13 names topics by id (Kafka 4.x specs only).
    let id = s.state.topic_ids.get(topic).copied().unwrap_or(Uuid::ZERO);
    patch(req, v, json!({"topicData": [{"topicId": uuid_json(id)}]}))
}

pub fn create_topics(s: &mut Sweep, topics: &[(&str, i32)]) -> R<ResponseKind> {
    use create_topics_request::*;
    let v = newest(s, ApiKey::CreateTopics);
    let req = CreateTopicsRequest {
        topics: topics.iter().map(|(name, n)| CreatableTopic { name: bs(*name), num_partitions: *n, replication_factor: 1, ..Default::default() }).collect(),
        timeout_ms: 30_000,
        ..Default::default()
    };
    s.conn.call(v, req)
}

pub fn metadata(s: &mut Sweep, v: i16, topics: &[&str]) -> R<MetadataResponse> {
    use metadata_request::*;
    let req = MetadataRequest {
        topics: Some(topics.iter().map(|t| MetadataRequestTopic { name: Some(bs(*t)), ..Default::default() }).collect()),
        ..Default::default()
    };
    Ok(as_resp!(s.conn.call(v, req)?, Metadata))
}

/// Waits (bounded) until every partition of `topic` has a leader.
pub fn wait_for_leaders(s: &mut Sweep, topic: &str, partitions: usize) -> R<MetadataResponse> {
    let v = newest(s, ApiKey::Metadata);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let m = metadata(s, v, &[topic])?;
        let ok = m.topics.iter().any(|t| t.error_code == 0 && t.partitions.len() == partitions && t.partitions.iter().all(|p| p.leader_id >= 0));
        if ok {
            for t in &m.topics {
                s.state.topic_ids.insert(t.name.as_deref().unwrap_or("").to_owned(), t.topic_id);
            }
            return Ok(m);
        }
        if Instant::now() > deadline {
            return Err(format!("{topic}: no leaders after 30 s: {:?}", m.topics));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub fn commit_offset(s: &mut Sweep, v: i16, group: &str, offset: i64) -> R<ResponseKind> {
    use offset_commit_request::*;
    let req = OffsetCommitRequest {
        group_id: bs(group),
        generation_id_or_member_epoch: -1,
        member_id: ByteString::new(),
        topics: vec![OffsetCommitRequestTopic {
            name: bs(TOPIC),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: offset,
                committed_metadata: Some(bs("sweep")),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let req = patch(req, v, json!({"topics": [{"topicId": uuid_json(s.state.topic_id)}]}))?;
    let req = if v >= 10 { patch(req, v, json!({"topics": [{"name": ""}]}))? } else { req };
    retry(COORDINATOR_TRANSIENT, || s.conn.call(v, req.clone()))
}

pub fn setup(s: &mut Sweep) -> R<()> {
    s.state.run = format!("{:x}", now_ms() % 0xff_ffff);
    let r = create_topics(s, &[(TOPIC, 3), (CFG_TOPIC, 1), (DR_TOPIC, 1), (MARKER_TOPIC, 1)])?;
    // TOPIC_ALREADY_EXISTS on a broker an earlier run used.
    if !errors(&r).iter().all(|e| *e == 36) {
        return Err(format!("create topics: {:?}", errors(&r)));
    }
    let m = wait_for_leaders(s, TOPIC, 3)?;
    for t in [CFG_TOPIC, DR_TOPIC, MARKER_TOPIC] {
        wait_for_leaders(s, t, 1)?;
    }
    s.state.topic_id = m.topics[0].topic_id;
    let here = m.brokers.iter().find(|b| format!("{}:{}", b.host, b.port) == s.broker.plaintext).or(m.brokers.first());
    s.state.broker_id = here.map_or(1, |b| b.node_id);
    s.state.cluster_id = m.cluster_id.as_deref().unwrap_or("").to_owned();
    let pv = newest(s, ApiKey::Produce);
    for p in 0..3 {
        let req = produce_request(s, pv, TOPIC, p, batch(Compression::None, 5)?, -1)?;
        // NOT_LEADER_OR_FOLLOWER while a new partition's leader is still starting.
        expect(&retry(&[6], || s.conn.call(pv, req.clone()))?, &[])?;
    }
    let req = produce_request(s, pv, DR_TOPIC, 0, batch(Compression::None, 5)?, -1)?;
    expect(&retry(&[6], || s.conn.call(pv, req.clone()))?, &[])?;
    // FindCoordinator creates __consumer_offsets and __transaction_state, as clients do first.
    let fv = newest(s, ApiKey::FindCoordinator);
    for (key_type, key) in [(0i8, OFFSETS_GROUP), (1, WARM_TXN)] {
        let req = FindCoordinatorRequest {
            key: if fv < 4 { bs(key) } else { ByteString::new() },
            key_type,
            coordinator_keys: if fv >= 4 { vec![bs(key)] } else { Vec::new() },
            ..Default::default()
        };
        expect(&retry(COORDINATOR_TRANSIENT, || s.conn.call(fv, req.clone()))?, &[])?;
    }
    let cv = newest(s, ApiKey::OffsetCommit);
    expect(&commit_offset(s, cv, OFFSETS_GROUP, COMMITTED)?, &[])?;
    let iv = newest(s, ApiKey::InitProducerId);
    let init = InitProducerIdRequest { transactional_id: Some(bs(WARM_TXN)), transaction_timeout_ms: 60_000, ..Default::default() };
    expect(&retry(&[14, 15, 16, CONCURRENT_TRANSACTIONS], || s.conn.call(iv, init.clone()))?, &[])?;
    let dv = newest(s, ApiKey::DescribeLogDirs);
    let r = as_resp!(s.conn.call(dv, DescribeLogDirsRequest { topics: None, ..Default::default() })?, DescribeLogDirs);
    s.state.log_dir = r.results.first().map(|d| d.log_dir.to_string()).unwrap_or_default();
    let av = newest(s, ApiKey::ApiVersions);
    let r = as_resp!(s.conn.call(av, api_versions_request())?, ApiVersions);
    s.state.metadata_level = r.finalized_features.iter().find(|f| &*f.name == "metadata.version").map(|f| f.max_version_level).unwrap_or(0);
    Ok(())
}

/// Sends the api's request at `v` and checks the answer; the note goes in the table.
pub fn exercise(s: &mut Sweep, api: ApiKey, v: i16) -> R<String> {
    let run = s.state.run.clone();
    match api {
        // Kafka 4 removed Produce v0-2 (KIP-896) but still lists them in ApiVersions: a request
        // at those versions closes the connection, like any unsupported version.
        ApiKey::Produce if v < 3 && s.broker.major() >= 4 => {
            let req = produce_request(s, v, TOPIC, 0, batch(Compression::None, 1)?, -1)?;
            let result = s.conn.call(v, req);
            s.conn = Conn::connect(&s.broker.plaintext)?;
            match result {
                Err(e) if e.contains("closed") => Ok("advertised, but removed in Kafka 4: connection closed".into()),
                Err(e) => Err(e),
                Ok(r) => Err(format!("answered {:?}", errors(&r))),
            }
        }
        ApiKey::Produce => {
            let mut offsets = Vec::new();
            for c in [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd] {
                let req = produce_request(s, v, TOPIC, 0, batch(c, 3)?, -1)?;
                let r = s.conn.call(v, req)?;
                // zstd needs Produce v7+ (KIP-110): v3-6 get UNSUPPORTED_COMPRESSION_TYPE. Kafka
                // checks batches only from v3 (magic 2 required there), so v0-2 take it.
                if c == Compression::Zstd && (3..7).contains(&v) {
                    expect(&r, &[76])?;
                    continue;
                }
                expect(&r, &[])?;
                let r = as_resp!(r, Produce);
                offsets.push(r.responses[0].partition_responses[0].base_offset);
            }
            if !offsets.windows(2).all(|w| w[1] == w[0] + 3) {
                return Err(format!("base offsets {offsets:?} are not 3 apart"));
            }
            // Read the batches back as the broker stores them: every codec decodes, every value.
            let values = fetch_values(s, TOPIC, 0, offsets[0])?;
            let codecs: Vec<String> = ["none", "gzip", "snappy", "lz4", "zstd"].iter().take(offsets.len()).map(|c| c.to_string()).collect();
            for (i, c) in codecs.iter().enumerate() {
                for r in 0..3 {
                    let want = format!("value {r} {c}");
                    if values.get(i * 3 + r).map(String::as_str) != Some(want.as_str()) {
                        return Err(format!("fetched back {:?}, wanted {want:?} at {}", values.get(i * 3 + r), i * 3 + r));
                    }
                }
            }
            // acks=0: no answer; the next request's answer proves the broker took it in order.
            let req = produce_request(s, v, TOPIC, 0, batch(Compression::None, 1)?, 0)?;
            if s.conn.send(v, req.into())?.is_some() {
                return Err("a response to acks=0".into());
            }
            expect(&s.conn.call(newest(s, ApiKey::ApiVersions), api_versions_request())?, &[])?;
            let zstd = if offsets.len() == 5 { "zstd" } else { "zstd refused (before v7)" };
            Ok(format!("none, gzip, snappy, lz4, {zstd}: fetched back; acks=0 too; offsets {offsets:?}"))
        }
        ApiKey::Fetch => fetch(s, v),
        ApiKey::ListOffsets => {
            use list_offsets_request::*;
            let mut found = Vec::new();
            for ts in [-2i64, -1] {
                let req = ListOffsetsRequest {
                    replica_id: -1,
                    topics: vec![ListOffsetsTopic {
                        name: bs(TOPIC),
                        partitions: vec![ListOffsetsPartition { partition_index: 1, timestamp: ts, ..Default::default() }],
                        ..Default::default()
                    }],
                    ..Default::default()
                };
                let r = s.conn.call(v, req)?;
                expect(&r, &[])?;
                // v0 answers a list of offsets, a field Kafka 4's specs dropped: read it as JSON.
                let json = r.to_json(v).map_err(|e| e.to_string())?;
                let p = &json["topics"][0]["partitions"][0];
                let offset = if v == 0 { &p["oldStyleOffsets"][0] } else { &p["offset"] };
                found.push(offset.as_i64().unwrap_or(-1));
            }
            if found[0] != 0 || found[1] < 5 {
                return Err(format!("earliest/latest {found:?}"));
            }
            Ok(format!("earliest {} latest {}", found[0], found[1]))
        }
        ApiKey::Metadata => {
            let m = metadata(s, v, &[TOPIC])?;
            expect(&ResponseKind::Metadata(m.clone()), &[])?;
            let t = m.topics.iter().find(|t| t.name.as_deref() == Some(TOPIC)).ok_or("topic missing")?;
            if t.partitions.len() != 3 || m.brokers.is_empty() {
                return Err(format!("{} partitions, {} brokers", t.partitions.len(), m.brokers.len()));
            }
            Ok(format!("{} brokers, 3 partitions", m.brokers.len()))
        }
        // v0 kept offsets in ZooKeeper: a KRaft broker advertises it and answers UNSUPPORTED_VERSION.
        ApiKey::OffsetCommit if v == 0 => {
            expect(&commit_offset(s, v, &format!("oc-0-{run}"), 3)?, &[35])?;
            Ok("KRaft: v0 (ZooKeeper offsets) UNSUPPORTED_VERSION".into())
        }
        ApiKey::OffsetFetch if v == 0 => {
            let req = offset_fetch_request_v0();
            expect(&retry(COORDINATOR_TRANSIENT, || s.conn.call(0, req.clone()))?, &[35])?;
            Ok("KRaft: v0 (ZooKeeper offsets) UNSUPPORTED_VERSION".into())
        }
        ApiKey::OffsetCommit => {
            let group = format!("oc-{v}-{run}");
            expect(&commit_offset(s, v, &group, 3)?, &[])?;
            let got = fetch_committed(s, newest(s, ApiKey::OffsetFetch), &group)?;
            if got != 3 {
                return Err(format!("committed 3, fetched {got}"));
            }
            Ok("committed 3, read back".into())
        }
        ApiKey::OffsetFetch => {
            let got = fetch_committed(s, v, OFFSETS_GROUP)?;
            if got != COMMITTED {
                return Err(format!("fetched {got}, committed {COMMITTED}"));
            }
            Ok(format!("offset {COMMITTED}"))
        }
        ApiKey::FindCoordinator => {
            let mut notes = Vec::new();
            for (key_type, key) in [(0i8, OFFSETS_GROUP), (1, WARM_TXN)] {
                if key_type == 1 && v == 0 {
                    continue;
                }
                let req = FindCoordinatorRequest {
                    key: if v < 4 { bs(key) } else { ByteString::new() },
                    key_type,
                    coordinator_keys: if v >= 4 { vec![bs(key)] } else { Vec::new() },
                    ..Default::default()
                };
                let r = retry(COORDINATOR_TRANSIENT, || s.conn.call(v, req.clone()))?;
                expect(&r, &[])?;
                let r = as_resp!(r, FindCoordinator);
                let node = if v < 4 { r.node_id } else { r.coordinators.first().map(|c| c.node_id).unwrap_or(-1) };
                if node < 0 {
                    return Err(format!("no coordinator for {key}"));
                }
                notes.push(format!("type {key_type} -> node {node}"));
            }
            Ok(notes.join(", "))
        }
        ApiKey::JoinGroup => classic_group(s, &format!("join-{v}-{run}"), [v, -1, -1, -1]),
        ApiKey::SyncGroup => classic_group(s, &format!("sync-{v}-{run}"), [-1, v, -1, -1]),
        ApiKey::Heartbeat => classic_group(s, &format!("hb-{v}-{run}"), [-1, -1, v, -1]),
        ApiKey::LeaveGroup => classic_group(s, &format!("leave-{v}-{run}"), [-1, -1, -1, v]),
        ApiKey::DescribeGroups => {
            let req = DescribeGroupsRequest { groups: vec![bs(OFFSETS_GROUP)], include_authorized_operations: v >= 3, ..Default::default() };
            let r = retry(COORDINATOR_TRANSIENT, || s.conn.call(v, req.clone()))?;
            expect(&r, &[])?;
            let r = as_resp!(r, DescribeGroups);
            let state = r.groups[0].group_state.to_string();
            if state != "Empty" {
                return Err(format!("group state {state}"));
            }
            Ok("simple group, Empty".into())
        }
        ApiKey::ListGroups => {
            let r = s.conn.call(v, ListGroupsRequest::default())?;
            expect(&r, &[])?;
            let r = as_resp!(r, ListGroups);
            if !r.groups.iter().any(|g| &*g.group_id == OFFSETS_GROUP) {
                return Err(format!("{OFFSETS_GROUP} not listed"));
            }
            Ok(format!("{} groups", r.groups.len()))
        }
        ApiKey::SaslHandshake => sasl_handshake(s, v),
        ApiKey::ApiVersions => {
            let req = ApiVersionsRequest {
                client_software_name: if v >= 3 { bs("kwire-sweep") } else { ByteString::new() },
                client_software_version: if v >= 3 { bs("0.1.0") } else { ByteString::new() },
                ..Default::default()
            };
            let r = s.conn.call(v, req)?;
            expect(&r, &[])?;
            let r = as_resp!(r, ApiVersions);
            if r.api_keys != s.advertised.api_keys {
                return Err("a different api list than at v-newest".into());
            }
            Ok(format!("{} apis", r.api_keys.len()))
        }
        ApiKey::CreateTopics => {
            use create_topics_request::*;
            let name = format!("ct-{v}-{run}");
            let req = CreateTopicsRequest {
                topics: vec![
                    CreatableTopic { name: bs(&name), num_partitions: 2, replication_factor: 1, ..Default::default() },
                    CreatableTopic { name: bs(TOPIC), num_partitions: 1, replication_factor: 1, ..Default::default() },
                ],
                timeout_ms: 30_000,
                ..Default::default()
            };
            // The second topic exists: TOPIC_ALREADY_EXISTS for it alone.
            expect(&s.conn.call(v, req)?, &[36])?;
            wait_for_leaders(s, &name, 2)?;
            Ok("created; existing topic TOPIC_ALREADY_EXISTS".into())
        }
        ApiKey::DeleteTopics => {
            use delete_topics_request::*;
            let name = format!("dt-{v}-{run}");
            expect(&create_topics(s, &[(&name, 1)])?, &[])?;
            let req = DeleteTopicsRequest {
                topic_names: if v < 6 { vec![bs(&name)] } else { Vec::new() },
                topics: if v >= 6 { vec![DeleteTopicState { name: Some(bs(&name)), ..Default::default() }] } else { Vec::new() },
                timeout_ms: 30_000,
                ..Default::default()
            };
            expect(&s.conn.call(v, req)?, &[])?;
            // UNKNOWN_TOPIC_OR_PARTITION once the deletion reached the broker (bounded wait).
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                let m = metadata(s, newest(s, ApiKey::Metadata), &[&name])?;
                if m.topics.iter().all(|t| t.error_code == 3) || Instant::now() > deadline {
                    expect(&ResponseKind::Metadata(m), &[3])?;
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            Ok("deleted".into())
        }
        ApiKey::DeleteRecords => {
            use delete_records_request::*;
            let req = DeleteRecordsRequest {
                topics: vec![DeleteRecordsTopic {
                    name: bs(DR_TOPIC),
                    partitions: vec![DeleteRecordsPartition { partition_index: 0, offset: -1, ..Default::default() }],
                    ..Default::default()
                }],
                timeout_ms: 30_000,
                ..Default::default()
            };
            let r = s.conn.call(v, req)?;
            expect(&r, &[])?;
            let r = as_resp!(r, DeleteRecords);
            Ok(format!("low watermark {}", r.topics[0].partitions[0].low_watermark))
        }
        ApiKey::InitProducerId => {
            let req = InitProducerIdRequest { transactional_id: None, transaction_timeout_ms: 60_000, ..Default::default() };
            let r = s.conn.call(v, req)?;
            expect(&r, &[])?;
            let pid = as_resp!(r, InitProducerId).producer_id;
            let note = txn(s, &format!("ip-{v}-{run}"), [v, -1, -1, -1, -1])?;
            Ok(format!("idempotent pid {pid}; {note}"))
        }
        ApiKey::OffsetForLeaderEpoch => {
            use offset_for_leader_epoch_request::*;
            let req = OffsetForLeaderEpochRequest {
                replica_id: if v >= 3 { -1 } else { -2 },
                topics: vec![OffsetForLeaderTopic {
                    topic: bs(TOPIC),
                    partitions: vec![OffsetForLeaderPartition { partition: 0, current_leader_epoch: -1, leader_epoch: 0, ..Default::default() }],
                    ..Default::default()
                }],
                ..Default::default()
            };
            let r = s.conn.call(v, req)?;
            expect(&r, &[])?;
            let r = as_resp!(r, OffsetForLeaderEpoch);
            let end = r.topics[0].partitions[0].end_offset;
            if end < 5 {
                return Err(format!("end offset {end}"));
            }
            Ok(format!("epoch 0 ends at {end}"))
        }
        ApiKey::AddPartitionsToTxn => txn(s, &format!("ap-{v}-{run}"), [-1, v, -1, -1, -1]),
        ApiKey::AddOffsetsToTxn => txn(s, &format!("ao-{v}-{run}"), [-1, -1, v, -1, -1]),
        ApiKey::TxnOffsetCommit => txn(s, &format!("toc-{v}-{run}"), [-1, -1, -1, v, -1]),
        ApiKey::EndTxn => txn(s, &format!("end-{v}-{run}"), [-1, -1, -1, -1, v]),
        ApiKey::WriteTxnMarkers => {
            use write_txn_markers_request::*;
            // An open transaction on MARKER_TOPIC; the marker aborts it on the partition as its
            // coordinator would, then the client's EndTxn(abort) completes it.
            let id = format!("wtm-{v}-{run}");
            let (pid, epoch) = begin_txn(s, &id, MARKER_TOPIC, newest(s, ApiKey::InitProducerId), newest(s, ApiKey::AddPartitionsToTxn))?;
            let req = WriteTxnMarkersRequest {
                markers: vec![WritableTxnMarker {
                    producer_id: pid,
                    producer_epoch: epoch,
                    transaction_result: false,
                    topics: vec![WritableTxnMarkerTopic { name: bs(MARKER_TOPIC), partition_indexes: [0].into_iter().collect(), ..Default::default() }],
                    coordinator_epoch: 0,
                    ..Default::default()
                }],
                ..Default::default()
            };
            // Inter-broker, allowed to ANONYMOUS here because it is a super user.
            expect(&s.conn.call(v, req)?, &[])?;
            let end = EndTxnRequest { transactional_id: bs(&id), producer_id: pid, producer_epoch: epoch, committed: false, ..Default::default() };
            let ev = newest(s, ApiKey::EndTxn);
            expect(&retry(&[CONCURRENT_TRANSACTIONS], || s.conn.call(ev, end.clone()))?, &[])?;
            Ok(format!("abort marker for pid {pid}, then EndTxn(abort)"))
        }
        ApiKey::DescribeAcls | ApiKey::CreateAcls | ApiKey::DeleteAcls => acls(s, api, v),
        ApiKey::DescribeConfigs => {
            use describe_configs_request::*;
            let req = DescribeConfigsRequest {
                resources: vec![
                    DescribeConfigsResource { resource_type: 2, resource_name: bs(TOPIC), configuration_keys: None, ..Default::default() },
                    DescribeConfigsResource {
                        resource_type: 4,
                        resource_name: bs(s.state.broker_id.to_string()),
                        configuration_keys: Some(vec![bs("log.retention.hours")]),
                        ..Default::default()
                    },
                ],
                ..Default::default()
            };
            let r = s.conn.call(v, req)?;
            expect(&r, &[])?;
            let r = as_resp!(r, DescribeConfigs);
            let n = r.results[0].configs.len();
            if n < 10 || r.results[1].configs.len() != 1 {
                return Err(format!("{n} topic configs, {} broker configs", r.results[1].configs.len()));
            }
            Ok(format!("{n} topic configs"))
        }
        ApiKey::AlterConfigs => {
            use alter_configs_request::*;
            let req = AlterConfigsRequest {
                resources: vec![AlterConfigsResource {
                    resource_type: 2,
                    resource_name: bs(CFG_TOPIC),
                    configs: vec![AlterableConfig { name: bs("retention.ms"), value: Some(bs(format!("{}", 86_400_000 + v as i64))), ..Default::default() }],
                    ..Default::default()
                }],
                ..Default::default()
            };
            expect(&s.conn.call(v, req)?, &[])?;
            check_config(s, "retention.ms", &format!("{}", 86_400_000 + v as i64))
        }
        ApiKey::IncrementalAlterConfigs => {
            use incremental_alter_configs_request::*;
            let value = format!("{}", 1_073_741_824 + v as i64);
            let req = IncrementalAlterConfigsRequest {
                resources: vec![AlterConfigsResource {
                    resource_type: 2,
                    resource_name: bs(CFG_TOPIC),
                    configs: vec![AlterableConfig { name: bs("retention.bytes"), config_operation: 0, value: Some(bs(&value)), ..Default::default() }],
                    ..Default::default()
                }],
                ..Default::default()
            };
            expect(&s.conn.call(v, req)?, &[])?;
            check_config(s, "retention.bytes", &value)
        }
        ApiKey::AlterReplicaLogDirs => {
            use alter_replica_log_dirs_request::*;
            let req = AlterReplicaLogDirsRequest {
                dirs: vec![AlterReplicaLogDir {
                    path: bs("/nonexistent/kwire-sweep"),
                    topics: vec![AlterReplicaLogDirTopic { name: bs(TOPIC), partitions: [0].into_iter().collect(), ..Default::default() }],
                    ..Default::default()
                }],
                ..Default::default()
            };
            // One log dir on this broker: moving to another is LOG_DIR_NOT_FOUND.
            expect(&s.conn.call(v, req)?, &[57])?;
            Ok("LOG_DIR_NOT_FOUND for a dir the broker lacks".into())
        }
        ApiKey::DescribeLogDirs => {
            let r = s.conn.call(v, DescribeLogDirsRequest { topics: None, ..Default::default() })?;
            expect(&r, &[])?;
            let r = as_resp!(r, DescribeLogDirs);
            let d = r.results.first().ok_or("no log dirs")?;
            if !d.topics.iter().any(|t| &*t.name == TOPIC) {
                return Err(format!("{TOPIC} not in {}", d.log_dir));
            }
            Ok(format!("{} dir(s)", r.results.len()))
        }
        ApiKey::SaslAuthenticate => sasl_authenticate(s, v),
        ApiKey::CreatePartitions => {
            use create_partitions_request::*;
            let name = format!("cp-{v}-{run}");
            expect(&create_topics(s, &[(&name, 1)])?, &[])?;
            wait_for_leaders(s, &name, 1)?;
            let req = CreatePartitionsRequest {
                topics: vec![CreatePartitionsTopic { name: bs(&name), count: 3, assignments: None, ..Default::default() }],
                timeout_ms: 30_000,
                ..Default::default()
            };
            expect(&s.conn.call(v, req)?, &[])?;
            wait_for_leaders(s, &name, 3)?;
            Ok("1 -> 3 partitions".into())
        }
        ApiKey::CreateDelegationToken | ApiKey::RenewDelegationToken | ApiKey::ExpireDelegationToken | ApiKey::DescribeDelegationToken => {
            delegation_tokens(s, api, v)
        }
        ApiKey::DeleteGroups => {
            let group = format!("dg-{v}-{run}");
            expect(&commit_offset(s, newest(s, ApiKey::OffsetCommit), &group, 1)?, &[])?;
            let req = DeleteGroupsRequest { groups_names: vec![bs(&group)], ..Default::default() };
            expect(&retry(COORDINATOR_TRANSIENT, || s.conn.call(v, req.clone()))?, &[])?;
            Ok("deleted".into())
        }
        ApiKey::ElectLeaders => {
            use elect_leaders_request::*;
            let req = ElectLeadersRequest {
                election_type: 0,
                topic_partitions: Some(vec![TopicPartitions { topic: bs(TOPIC), partitions: [0, 1, 2].into_iter().collect(), ..Default::default() }]),
                timeout_ms: 30_000,
                ..Default::default()
            };
            // The preferred leader already leads every partition.
            expect(&s.conn.call(v, req)?, &[84])?;
            Ok("ELECTION_NOT_NEEDED per partition".into())
        }
        ApiKey::AlterPartitionReassignments => {
            use alter_partition_reassignments_request::*;
            let req = AlterPartitionReassignmentsRequest {
                timeout_ms: 30_000,
                topics: vec![ReassignableTopic {
                    name: bs(TOPIC),
                    partitions: vec![ReassignablePartition { partition_index: 0, replicas: None, ..Default::default() }],
                    ..Default::default()
                }],
                ..Default::default()
            };
            // Cancelling a reassignment that is not there.
            expect(&s.conn.call(v, req)?, &[85])?;
            Ok("cancel: NO_REASSIGNMENT_IN_PROGRESS".into())
        }
        ApiKey::ListPartitionReassignments => {
            let r = s.conn.call(v, ListPartitionReassignmentsRequest { timeout_ms: 30_000, topics: None, ..Default::default() })?;
            expect(&r, &[])?;
            Ok("none in progress".into())
        }
        ApiKey::OffsetDelete => {
            use offset_delete_request::*;
            let group = format!("od-{v}-{run}");
            expect(&commit_offset(s, newest(s, ApiKey::OffsetCommit), &group, 2)?, &[])?;
            let req = OffsetDeleteRequest {
                group_id: bs(&group),
                topics: vec![OffsetDeleteRequestTopic {
                    name: bs(TOPIC),
                    partitions: vec![OffsetDeleteRequestPartition { partition_index: 0, ..Default::default() }],
                    ..Default::default()
                }],
                ..Default::default()
            };
            expect(&retry(COORDINATOR_TRANSIENT, || s.conn.call(v, req.clone()))?, &[])?;
            if fetch_committed(s, newest(s, ApiKey::OffsetFetch), &group)? != -1 {
                return Err("offset still there".into());
            }
            Ok("deleted".into())
        }
        ApiKey::DescribeClientQuotas => {
            let r = s.conn.call(v, DescribeClientQuotasRequest { components: Vec::new(), strict: false, ..Default::default() })?;
            expect(&r, &[])?;
            Ok("described".into())
        }
        ApiKey::AlterClientQuotas => {
            use alter_client_quotas_request::*;
            let req = AlterClientQuotasRequest {
                entries: vec![EntryData {
                    entity: vec![EntityData { entity_type: bs("user"), entity_name: Some(bs(format!("quota-{v}"))), ..Default::default() }],
                    ops: vec![OpData { key: bs("producer_byte_rate"), value: 1_048_576.0, remove: false, ..Default::default() }],
                    ..Default::default()
                }],
                validate_only: false,
                ..Default::default()
            };
            expect(&s.conn.call(v, req)?, &[])?;
            Ok("set producer_byte_rate".into())
        }
        ApiKey::DescribeUserScramCredentials => {
            use describe_user_scram_credentials_request::*;
            let req = DescribeUserScramCredentialsRequest { users: Some(vec![UserName { name: bs("alice"), ..Default::default() }]), ..Default::default() };
            let r = s.conn.call(v, req)?;
            expect(&r, &[])?;
            let r = as_resp!(r, DescribeUserScramCredentials);
            let n = r.results[0].credential_infos.len();
            if n != 2 {
                return Err(format!("alice has {n} SCRAM credentials, 2 made at format time"));
            }
            Ok("alice: SCRAM-SHA-256 and -512".into())
        }
        ApiKey::AlterUserScramCredentials => {
            use alter_user_scram_credentials_request::*;
            let req = AlterUserScramCredentialsRequest {
                upsertions: vec![ScramCredentialUpsertion {
                    name: bs(format!("carol-{v}")),
                    mechanism: 1,
                    iterations: 4096,
                    salt: Bytes::from_static(b"0123456789abcdef"),
                    salted_password: Bytes::from(vec![7u8; 32]),
                    ..Default::default()
                }],
                ..Default::default()
            };
            expect(&s.conn.call(v, req)?, &[])?;
            Ok("upserted".into())
        }
        ApiKey::DescribeQuorum => {
            use describe_quorum_request::*;
            let req = DescribeQuorumRequest {
                topics: vec![TopicData {
                    topic_name: bs("__cluster_metadata"),
                    partitions: vec![PartitionData { partition_index: 0, ..Default::default() }],
                    ..Default::default()
                }],
                ..Default::default()
            };
            let r = s.conn.call(v, req)?;
            expect(&r, &[])?;
            let r = as_resp!(r, DescribeQuorum);
            Ok(format!("leader {}", r.topics[0].partitions[0].leader_id))
        }
        ApiKey::UpdateFeatures => {
            use update_features_request::*;
            let level = s.state.metadata_level;
            let req = UpdateFeaturesRequest {
                timeout_ms: 30_000,
                feature_updates: vec![FeatureUpdateKey {
                    feature: bs("metadata.version"),
                    max_version_level: level,
                    // UPGRADE (v1+; the default, so v0 needs nothing): to the level it has.
                    upgrade_type: 1,
                    ..Default::default()
                }],
                validate_only: v >= 1,
                ..Default::default()
            };
            expect(&s.conn.call(v, req)?, &[])?;
            Ok(format!("metadata.version {level} (no change)"))
        }
        ApiKey::DescribeCluster => {
            let req = DescribeClusterRequest { include_cluster_authorized_operations: true, endpoint_type: 1, ..Default::default() };
            let r = s.conn.call(v, req)?;
            expect(&r, &[])?;
            let r = as_resp!(r, DescribeCluster);
            if *r.cluster_id != s.state.cluster_id || r.brokers.is_empty() {
                return Err(format!("cluster {} with {} brokers", r.cluster_id, r.brokers.len()));
            }
            Ok(format!("{} broker(s)", r.brokers.len()))
        }
        ApiKey::DescribeProducers => {
            use describe_producers_request::*;
            let req = DescribeProducersRequest {
                topics: vec![TopicRequest { name: bs(TOPIC), partition_indexes: [1].into_iter().collect(), ..Default::default() }],
                ..Default::default()
            };
            let r = s.conn.call(v, req)?;
            expect(&r, &[])?;
            let r = as_resp!(r, DescribeProducers);
            let n = r.topics[0].partitions[0].active_producers.len();
            if n == 0 {
                return Err("no active producers on the partition the transactions wrote".into());
            }
            Ok(format!("{n} producers"))
        }
        ApiKey::UnregisterBroker => {
            let r = s.conn.call(v, UnregisterBrokerRequest { broker_id: 99, ..Default::default() })?;
            expect(&r, &[102])?;
            Ok("BROKER_ID_NOT_REGISTERED for broker 99".into())
        }
        ApiKey::DescribeTransactions => {
            let req = DescribeTransactionsRequest { transactional_ids: vec![bs(WARM_TXN), bs("no-such-txn")], ..Default::default() };
            let r = s.conn.call(v, req)?;
            expect(&r, &[105])?;
            Ok("known id described; unknown TRANSACTIONAL_ID_NOT_FOUND".into())
        }
        ApiKey::ListTransactions => {
            let r = s.conn.call(v, ListTransactionsRequest::default())?;
            expect(&r, &[])?;
            let r = as_resp!(r, ListTransactions);
            if !r.transaction_states.iter().any(|t| &*t.transactional_id == WARM_TXN) {
                return Err(format!("{WARM_TXN} not listed"));
            }
            Ok(format!("{} transactions", r.transaction_states.len()))
        }
        ApiKey::ConsumerGroupHeartbeat => consumer_group(s, &format!("cg-{v}-{run}"), v, false),
        ApiKey::ConsumerGroupDescribe => {
            let hv = newest(s, ApiKey::ConsumerGroupHeartbeat);
            consumer_group(s, &format!("cgd-{v}-{run}"), hv, true).map(|n| format!("{n}; described at v{v}"))
        }
        ApiKey::DescribeTopicPartitions => {
            use describe_topic_partitions_request::*;
            let req = DescribeTopicPartitionsRequest {
                topics: vec![TopicRequest { name: bs(TOPIC), ..Default::default() }],
                response_partition_limit: 2000,
                ..Default::default()
            };
            let r = s.conn.call(v, req)?;
            expect(&r, &[])?;
            let r = as_resp!(r, DescribeTopicPartitions);
            if r.topics[0].partitions.len() != 3 {
                return Err(format!("{} partitions", r.topics[0].partitions.len()));
            }
            Ok("3 partitions".into())
        }
        // KIP-714: the test brokers advertise it because scripts/kafka.sh gives them a telemetry
        // receiver. No client-metrics subscription matches the sweep's client: an instance id
        // and a subscription id, no metrics asked for.
        ApiKey::GetTelemetrySubscriptions => {
            let r = s.conn.call(v, GetTelemetrySubscriptionsRequest::default())?;
            expect(&r, &[])?;
            let r = as_resp!(r, GetTelemetrySubscriptions);
            if r.client_instance_id == Uuid::ZERO {
                return Err("no client instance id given".into());
            }
            Ok(format!("instance id given, {} metrics asked for", r.requested_metrics.len()))
        }
        // A terminating push of no metrics, with the ids a GetTelemetrySubscriptions gave.
        ApiKey::PushTelemetry => {
            let g = s.conn.call(newest(s, ApiKey::GetTelemetrySubscriptions), GetTelemetrySubscriptionsRequest::default())?;
            let g = as_resp!(g, GetTelemetrySubscriptions);
            let req =
                PushTelemetryRequest { client_instance_id: g.client_instance_id, subscription_id: g.subscription_id, terminating: true, ..Default::default() };
            let r = s.conn.call(v, req)?;
            expect(&r, &[])?;
            Ok("terminating push taken".into())
        }
        _ => by_json(s, api, v),
    }
}

/// Apis whose types differ between spec sets (renamed, or only in Kafka 4.x): requests built
/// from Kafka's JSON form, so this file compiles against either.
fn by_json(s: &mut Sweep, api: ApiKey, v: i16) -> R<String> {
    let key = api.key();
    let j = |value: serde_json::Value| RequestKind::from_json(key, v, &value).map_err(|e| format!("request JSON: {e}"));
    match key {
        // ListClientMetricsResources (3.x) / ListConfigResources (4.x).
        74 => {
            let req = if v >= 1 { j(json!({"resourceTypes": []}))? } else { j(json!({}))? };
            expect(&s.conn.call(v, req)?, &[])?;
            Ok("listed".into())
        }
        // AddRaftVoter, RemoveRaftVoter: the quorum is static (controller.quorum.voters), so
        // kraft.version is 0 and the controller refuses membership changes.
        80 => {
            let mut body = json!({
                "clusterId": s.state.cluster_id, "timeoutMs": 30000, "voterId": 2,
                "voterDirectoryId": uuid_json(Uuid::from_u64_pair(1, 2)),
                "listeners": [{"name": "CONTROLLER", "host": "127.0.0.1", "port": 1}]
            });
            if v >= 1 {
                body["ackWhenCommitted"] = json!(true);
            }
            let req = j(body)?;
            let r = s.conn.call(v, req)?;
            expect(&r, &[35])?;
            Ok("static quorum: UNSUPPORTED_VERSION".into())
        }
        81 => {
            let req = j(json!({"clusterId": s.state.cluster_id, "voterId": 2, "voterDirectoryId": uuid_json(Uuid::from_u64_pair(1, 2))}))?;
            let r = s.conn.call(v, req)?;
            expect(&r, &[35])?;
            Ok("static quorum: UNSUPPORTED_VERSION".into())
        }
        // UnregisterController (Kafka 4.4): a controller id the quorum has never had (the one
        // real controller is also this broker, not to be unregistered mid-sweep); the broker
        // forwards it to the controller, which refuses it by name.
        94 => {
            let req = j(json!({"controllerId": 9999}))?;
            let r = s.conn.call(v, req)?;
            expect(&r, &[136])?;
            Ok("unknown controller id: CONTROLLER_ID_NOT_REGISTERED".into())
        }
        _ => super::kafka4::exercise(s, api, v).unwrap_or_else(|| Err(format!("no request builder for {} in this sweep", api.name()))),
    }
}

fn offset_fetch_request_v0() -> OffsetFetchRequest {
    use offset_fetch_request::*;
    OffsetFetchRequest {
        group_id: bs(OFFSETS_GROUP),
        topics: Some(vec![OffsetFetchRequestTopic { name: bs(TOPIC), partition_indexes: [0].into_iter().collect(), ..Default::default() }]),
        ..Default::default()
    }
}

fn fetch_committed(s: &mut Sweep, v: i16, group: &str) -> R<i64> {
    use offset_fetch_request::*;
    let req = if v < 8 {
        OffsetFetchRequest {
            group_id: bs(group),
            topics: Some(vec![OffsetFetchRequestTopic { name: bs(TOPIC), partition_indexes: [0].into_iter().collect(), ..Default::default() }]),
            ..Default::default()
        }
    } else {
        let req = OffsetFetchRequest {
            groups: vec![OffsetFetchRequestGroup {
                group_id: bs(group),
                topics: Some(vec![OffsetFetchRequestTopics {
                    name: if v < 10 { bs(TOPIC) } else { ByteString::new() },
                    partition_indexes: [0].into_iter().collect(),
                    ..Default::default()
                }]),
                ..Default::default()
            }],
            ..Default::default()
        };
        patch(req, v, json!({"groups": [{"topics": [{"topicId": uuid_json(s.state.topic_id)}]}]}))?
    };
    let r = retry(COORDINATOR_TRANSIENT, || s.conn.call(v, req.clone()))?;
    expect(&r, &[])?;
    let r = as_resp!(r, OffsetFetch);
    Ok(if v < 8 { r.topics[0].partitions[0].committed_offset } else { r.groups[0].topics[0].partitions[0].committed_offset })
}

fn check_config(s: &mut Sweep, name: &str, value: &str) -> R<String> {
    use describe_configs_request::*;
    let req = DescribeConfigsRequest {
        resources: vec![DescribeConfigsResource {
            resource_type: 2,
            resource_name: bs(CFG_TOPIC),
            configuration_keys: Some(vec![bs(name)]),
            ..Default::default()
        }],
        ..Default::default()
    };
    let v = newest(s, ApiKey::DescribeConfigs);
    // Config changes reach the broker through the metadata log: bounded wait.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = as_resp!(s.conn.call(v, req.clone())?, DescribeConfigs);
        let got = r.results[0].configs.first().and_then(|c| c.value.as_deref().map(str::to_owned));
        if got.as_deref() == Some(value) {
            return Ok(format!("{name}={value} read back"));
        }
        if Instant::now() > deadline {
            return Err(format!("{name} is {got:?}, set {value}"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn fetch(s: &mut Sweep, v: i16) -> R<String> {
    use fetch_request::*;
    let req = FetchRequest {
        max_wait_ms: 100,
        min_bytes: 1,
        max_bytes: 1 << 20,
        session_id: 0,
        session_epoch: if v >= 7 { 0 } else { -1 },
        topics: vec![FetchTopic {
            topic: if v < 13 { bs(TOPIC) } else { ByteString::new() },
            topic_id: if v >= 13 { s.state.topic_id } else { Uuid::ZERO },
            partitions: vec![FetchPartition { partition: 2, fetch_offset: 0, partition_max_bytes: 1 << 20, ..Default::default() }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = s.conn.call(v, req)?;
    expect(&r, &[])?;
    let r = as_resp!(r, Fetch);
    let p = &r.responses[0].partitions[0];
    let records = Option::<Bytes>::from(p.records.clone()).unwrap_or_default();
    let (decoded, _) = decode_all(records, &DecodeOptions::default()).map_err(|e| format!("records: {e}"))?;
    if decoded.len() < 5 || decoded[0].key.as_deref() != Some(&b"k0"[..]) {
        return Err(format!("{} records fetched, 5 produced", decoded.len()));
    }
    let mut note = format!("{} records", decoded.len());
    if v >= 7 {
        // Incremental fetch in the session the full fetch opened: nothing new, no error.
        if r.session_id == 0 {
            return Err("no fetch session".into());
        }
        let req = FetchRequest { max_wait_ms: 10, min_bytes: 0, max_bytes: 1 << 20, session_id: r.session_id, session_epoch: 1, ..Default::default() };
        let r2 = s.conn.call(v, req)?;
        expect(&r2, &[])?;
        let r2 = as_resp!(r2, Fetch);
        if r2.session_id != r.session_id {
            return Err(format!("session {} became {}", r.session_id, r2.session_id));
        }
        note += &format!(", session {} incremental", r.session_id);
    }
    Ok(note)
}

/// The values of `topic`/`partition` from `offset` on, read at the newest Fetch version.
fn fetch_values(s: &mut Sweep, topic: &str, partition: i32, offset: i64) -> R<Vec<String>> {
    use fetch_request::*;
    let v = newest(s, ApiKey::Fetch);
    let id = s.state.topic_ids.get(topic).copied().unwrap_or(Uuid::ZERO);
    let req = FetchRequest {
        max_wait_ms: 100,
        min_bytes: 1,
        max_bytes: 1 << 20,
        topics: vec![FetchTopic {
            topic: if v < 13 { bs(topic) } else { ByteString::new() },
            topic_id: if v >= 13 { id } else { Uuid::ZERO },
            partitions: vec![FetchPartition { partition, fetch_offset: offset, partition_max_bytes: 1 << 20, ..Default::default() }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = s.conn.call(v, req)?;
    expect(&r, &[])?;
    let r = as_resp!(r, Fetch);
    let records = Option::<Bytes>::from(r.responses[0].partitions[0].records.clone()).unwrap_or_default();
    let (decoded, _) = decode_all(records, &DecodeOptions::default()).map_err(|e| format!("records: {e}"))?;
    Ok(decoded.into_iter().filter(|r| r.offset >= offset).map(|r| String::from_utf8_lossy(&r.value.unwrap_or_default()).into_owned()).collect())
}

fn subscription() -> Bytes {
    // ConsumerProtocolSubscription v0: version, topics [TOPIC], null user data.
    let mut b = vec![0, 0, 0, 0, 0, 1, 0, TOPIC.len() as u8];
    b.extend_from_slice(TOPIC.as_bytes());
    b.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]);
    Bytes::from(b)
}

fn assignment() -> Bytes {
    // ConsumerProtocolAssignment v0: version, [TOPIC: [0, 1, 2]], null user data.
    let mut b = vec![0, 0, 0, 0, 0, 1, 0, TOPIC.len() as u8];
    b.extend_from_slice(TOPIC.as_bytes());
    b.extend_from_slice(&[0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0xff, 0xff, 0xff, 0xff]);
    Bytes::from(b)
}

/// A classic group's whole life, one member: JoinGroup (twice from v4: MEMBER_ID_REQUIRED
/// first), SyncGroup, Heartbeat, LeaveGroup; versions [join, sync, heartbeat, leave], -1 for
/// the newest.
fn classic_group(s: &mut Sweep, group: &str, versions: [i16; 4]) -> R<String> {
    use join_group_request::*;
    let pick = |v: i16, api| if v < 0 { newest(s, api) } else { v };
    let (jv, sv, hv, lv) = (
        pick(versions[0], ApiKey::JoinGroup),
        pick(versions[1], ApiKey::SyncGroup),
        pick(versions[2], ApiKey::Heartbeat),
        pick(versions[3], ApiKey::LeaveGroup),
    );
    let mut join = JoinGroupRequest {
        group_id: bs(group),
        session_timeout_ms: 30_000,
        rebalance_timeout_ms: if jv >= 1 { 30_000 } else { -1 },
        member_id: ByteString::new(),
        protocol_type: bs("consumer"),
        protocols: vec![JoinGroupRequestProtocol { name: bs("range"), metadata: subscription(), ..Default::default() }],
        ..Default::default()
    };
    let mut r = retry(COORDINATOR_TRANSIENT, || s.conn.call(jv, join.clone()))?;
    if jv >= 4 {
        // KIP-394: a new member first gets MEMBER_ID_REQUIRED and its id.
        expect(&r, &[79])?;
        join.member_id = as_resp!(r, JoinGroup).member_id;
        r = s.conn.call(jv, join.clone())?;
    }
    expect(&r, &[])?;
    let joined = as_resp!(r, JoinGroup);
    if joined.leader != joined.member_id || joined.generation_id < 1 || joined.members.len() != 1 {
        return Err(format!("leader {} member {} generation {}", joined.leader, joined.member_id, joined.generation_id));
    }
    let member = joined.member_id.clone();
    let sync = SyncGroupRequest {
        group_id: bs(group),
        generation_id: joined.generation_id,
        member_id: member.clone(),
        protocol_type: (sv >= 5).then(|| bs("consumer")),
        protocol_name: (sv >= 5).then(|| bs("range")),
        assignments: vec![sync_group_request::SyncGroupRequestAssignment { member_id: member.clone(), assignment: assignment(), ..Default::default() }],
        ..Default::default()
    };
    let r = s.conn.call(sv, sync)?;
    expect(&r, &[])?;
    if as_resp!(r, SyncGroup).assignment != assignment() {
        return Err("SyncGroup returned another assignment".into());
    }
    let hb = HeartbeatRequest { group_id: bs(group), generation_id: joined.generation_id, member_id: member.clone(), ..Default::default() };
    expect(&s.conn.call(hv, hb)?, &[])?;
    let leave = LeaveGroupRequest {
        group_id: bs(group),
        member_id: if lv < 3 { member.clone() } else { ByteString::new() },
        members: if lv >= 3 {
            vec![leave_group_request::MemberIdentity { member_id: member.clone(), reason: (lv >= 5).then(|| bs("sweep done")), ..Default::default() }]
        } else {
            Vec::new()
        },
        ..Default::default()
    };
    expect(&s.conn.call(lv, leave)?, &[])?;
    Ok(format!("join v{jv} sync v{sv} heartbeat v{hv} leave v{lv}, generation {}", joined.generation_id))
}

/// A transaction: InitProducerId, AddPartitionsToTxn, a transactional Produce, AddOffsetsToTxn,
/// TxnOffsetCommit, EndTxn (commit); versions [init, add partitions, add offsets, txn offset
/// commit, end], -1 for the newest.
fn txn(s: &mut Sweep, id: &str, versions: [i16; 5]) -> R<String> {
    let pick = |v: i16, api| if v < 0 { newest(s, api) } else { v };
    let iv = pick(versions[0], ApiKey::InitProducerId);
    let av = pick(versions[1], ApiKey::AddPartitionsToTxn);
    let ov = pick(versions[2], ApiKey::AddOffsetsToTxn);
    let tv = pick(versions[3], ApiKey::TxnOffsetCommit);
    let ev = pick(versions[4], ApiKey::EndTxn);
    let group = format!("{id}-group");
    let (pid, epoch) = begin_txn(s, id, TOPIC, iv, av)?;
    let add_offsets = AddOffsetsToTxnRequest { transactional_id: bs(id), producer_id: pid, producer_epoch: epoch, group_id: bs(&group), ..Default::default() };
    expect(&retry(&[CONCURRENT_TRANSACTIONS], || s.conn.call(ov, add_offsets.clone()))?, &[])?;
    use txn_offset_commit_request::*;
    let commit = TxnOffsetCommitRequest {
        transactional_id: bs(id),
        group_id: bs(&group),
        producer_id: pid,
        producer_epoch: epoch,
        // GenerationId (GenerationIdOrMemberEpoch since 4.4) at its default, -1: no group member.
        member_id: ByteString::new(),
        topics: vec![TxnOffsetCommitRequestTopic {
            name: bs(TOPIC),
            partitions: vec![TxnOffsetCommitRequestPartition { partition_index: 1, committed_offset: 1, committed_leader_epoch: -1, ..Default::default() }],
            ..Default::default()
        }],
        ..Default::default()
    };
    // v6 (Kafka 4.4) names topics by id.
    let commit = patch(commit, tv, json!({"topics": [{"topicId": uuid_json(s.state.topic_id)}]}))?;
    expect(&retry(COORDINATOR_TRANSIENT, || s.conn.call(tv, commit.clone()))?, &[])?;
    let end = EndTxnRequest { transactional_id: bs(id), producer_id: pid, producer_epoch: epoch, committed: true, ..Default::default() };
    expect(&retry(&[CONCURRENT_TRANSACTIONS], || s.conn.call(ev, end.clone()))?, &[])?;
    Ok(format!("init v{iv} add-partitions v{av} add-offsets v{ov} txn-commit v{tv} end v{ev}, pid {pid}"))
}

/// InitProducerId for `id`, AddPartitionsToTxn for `topic` partition 0 or 1, and one
/// transactional batch there: the transaction is open.
fn begin_txn(s: &mut Sweep, id: &str, topic: &str, iv: i16, av: i16) -> R<(i64, i16)> {
    let partition = if topic == TOPIC { 1 } else { 0 };
    let init = InitProducerIdRequest { transactional_id: Some(bs(id)), transaction_timeout_ms: 60_000, ..Default::default() };
    let r = retry(&[14, 15, 16, CONCURRENT_TRANSACTIONS], || s.conn.call(iv, init.clone()))?;
    expect(&r, &[])?;
    let r = as_resp!(r, InitProducerId);
    let (pid, epoch) = (r.producer_id, r.producer_epoch);
    use add_partitions_to_txn_request::*;
    let topics = vec![AddPartitionsToTxnTopic { name: bs(topic), partitions: [partition].into_iter().collect(), ..Default::default() }];
    let add = if av < 4 {
        AddPartitionsToTxnRequest {
            v3_and_below_transactional_id: bs(id),
            v3_and_below_producer_id: pid,
            v3_and_below_producer_epoch: epoch,
            v3_and_below_topics: topics,
            ..Default::default()
        }
    } else {
        // v4+ is the broker-to-coordinator batch form (CLUSTER_ACTION; ANONYMOUS is a super user).
        AddPartitionsToTxnRequest {
            transactions: vec![AddPartitionsToTxnTransaction {
                transactional_id: bs(id),
                producer_id: pid,
                producer_epoch: epoch,
                verify_only: false,
                topics,
                ..Default::default()
            }],
            ..Default::default()
        }
    };
    expect(&retry(&[CONCURRENT_TRANSACTIONS], || s.conn.call(av, add.clone()))?, &[])?;
    let pv = newest(s, ApiKey::Produce);
    let mut b = RecordBatchBuilder::new().producer(pid, epoch, 0).transactional(true);
    b.append(Record::new(0, now_ms(), Some(Bytes::from_static(b"txn")), Some(Bytes::from(id.to_owned())))).map_err(|e| e.to_string())?;
    let mut req = produce_request(s, pv, topic, partition, b.build().map_err(|e| e.to_string())?, -1)?;
    req.transactional_id = Some(bs(id));
    expect(&s.conn.call(pv, req)?, &[])?;
    Ok((pid, epoch))
}

fn acls(s: &mut Sweep, api: ApiKey, v: i16) -> R<String> {
    use create_acls_request::*;
    let resource = format!("acl-{}-{v}-{}", api.key(), s.state.run);
    let principal = "User:bob";
    let cv = if api == ApiKey::CreateAcls { v } else { newest(s, ApiKey::CreateAcls) };
    let create = CreateAclsRequest {
        creations: vec![AclCreation {
            resource_type: 2,
            resource_name: bs(&resource),
            resource_pattern_type: 3,
            principal: bs(principal),
            host: bs("*"),
            operation: 3,
            permission_type: 3,
            ..Default::default()
        }],
        ..Default::default()
    };
    expect(&s.conn.call(cv, create)?, &[])?;
    // ACLs reach the broker's authorizer through the metadata log: bounded wait until visible.
    let dv = if api == ApiKey::DescribeAcls { v } else { newest(s, ApiKey::DescribeAcls) };
    let describe = DescribeAclsRequest {
        resource_type_filter: 2,
        resource_name_filter: Some(bs(&resource)),
        pattern_type_filter: 3,
        principal_filter: None,
        host_filter: None,
        operation: 1,
        permission_type: 1,
        ..Default::default()
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = s.conn.call(dv, describe.clone())?;
        expect(&r, &[])?;
        if as_resp!(r, DescribeAcls).resources.len() == 1 {
            break;
        }
        if Instant::now() > deadline {
            return Err("created ACL not described".into());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let delv = if api == ApiKey::DeleteAcls { v } else { newest(s, ApiKey::DeleteAcls) };
    use delete_acls_request::*;
    let delete = DeleteAclsRequest {
        filters: vec![DeleteAclsFilter {
            resource_type_filter: 2,
            resource_name_filter: Some(bs(&resource)),
            pattern_type_filter: 3,
            principal_filter: Some(bs(principal)),
            host_filter: None,
            operation: 1,
            permission_type: 1,
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = s.conn.call(delv, delete)?;
    expect(&r, &[])?;
    let n = as_resp!(r, DeleteAcls).filter_results[0].matching_acls.len();
    if n != 1 {
        return Err(format!("delete matched {n} ACLs"));
    }
    Ok(format!("create v{cv} describe v{dv} delete v{delv}"))
}

fn sasl_addr(s: &Sweep) -> R<String> {
    s.broker.sasl.clone().ok_or_else(|| "the broker env has no SASL_PLAINTEXT listener".to_owned())
}

fn handshake(conn: &mut Conn, v: i16, mechanism: &str) -> R<SaslHandshakeResponse> {
    Ok(as_resp!(conn.call(v, SaslHandshakeRequest { mechanism: bs(mechanism), ..Default::default() })?, SaslHandshake))
}

fn sasl_handshake(s: &mut Sweep, v: i16) -> R<String> {
    let addr = sasl_addr(s)?;
    let mut conn = Conn::connect(&addr)?;
    let r = handshake(&mut conn, v, "PLAIN")?;
    expect(&ResponseKind::SaslHandshake(r.clone()), &[])?;
    let mechs: Vec<&str> = r.mechanisms.iter().map(|m| &**m).collect();
    for m in ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] {
        if !mechs.contains(&m) {
            return Err(format!("{m} not offered: {mechs:?}"));
        }
    }
    let mut conn = Conn::connect(&addr)?;
    let r = handshake(&mut conn, v, "GSSAPI")?;
    expect(&ResponseKind::SaslHandshake(r), &[33])?;
    Ok(format!("offers {mechs:?}; GSSAPI UNSUPPORTED_SASL_MECHANISM"))
}

fn authenticate(conn: &mut Conn, v: i16, token: Bytes) -> R<SaslAuthenticateResponse> {
    Ok(as_resp!(conn.call(v, SaslAuthenticateRequest { auth_bytes: token, ..Default::default() })?, SaslAuthenticate))
}

/// Metadata of TOPIC alone: what alice, who has no ACLs, is refused.
fn topic_metadata_request() -> MetadataRequest {
    MetadataRequest { topics: Some(vec![metadata_request::MetadataRequestTopic { name: Some(bs(TOPIC)), ..Default::default() }]), ..Default::default() }
}

fn sasl_authenticate(s: &mut Sweep, v: i16) -> R<String> {
    let addr = sasl_addr(s)?;
    let hv = newest(s, ApiKey::SaslHandshake);
    let mut notes = Vec::new();
    // PLAIN as alice, then the authorizer: alice has no ACLs, so her Metadata is refused.
    let mut conn = Conn::connect(&addr)?;
    expect(&ResponseKind::SaslHandshake(handshake(&mut conn, hv, "PLAIN")?), &[])?;
    let r = authenticate(&mut conn, v, Bytes::from_static(b"\0alice\0alice-secret"))?;
    expect(&ResponseKind::SaslAuthenticate(r), &[])?;
    let mv = newest(s, ApiKey::Metadata);
    let m = conn.call(mv, topic_metadata_request())?;
    expect(&m, &[29])?;
    notes.push("PLAIN ok, alice TOPIC_AUTHORIZATION_FAILED");
    // A wrong password.
    let mut conn = Conn::connect(&addr)?;
    handshake(&mut conn, hv, "PLAIN")?;
    let r = authenticate(&mut conn, v, Bytes::from_static(b"\0alice\0wrong"))?;
    expect(&ResponseKind::SaslAuthenticate(r), &[58])?;
    notes.push("bad password SASL_AUTHENTICATION_FAILED");
    // SCRAM: the users made at format time answer the client-first message; a bad proof fails.
    for mech in ["SCRAM-SHA-256", "SCRAM-SHA-512"] {
        let mut conn = Conn::connect(&addr)?;
        expect(&ResponseKind::SaslHandshake(handshake(&mut conn, hv, mech)?), &[])?;
        let nonce = "kwiresweepnonce";
        let r = authenticate(&mut conn, v, Bytes::from(format!("n,,n=alice,r={nonce}")))?;
        expect(&ResponseKind::SaslAuthenticate(r.clone()), &[])?;
        let server_first = String::from_utf8_lossy(&r.auth_bytes).into_owned();
        let Some(combined) = server_first.strip_prefix("r=").and_then(|x| x.split(',').next()) else {
            return Err(format!("{mech} server-first {server_first:?}"));
        };
        if !combined.starts_with(nonce) || !server_first.contains(",s=") || !server_first.contains(",i=") {
            return Err(format!("{mech} server-first {server_first:?}"));
        }
        // A proof of the right length (the hash's) that is wrong.
        let proof = if mech.ends_with("256") { format!("{}=", "A".repeat(43)) } else { format!("{}==", "A".repeat(86)) };
        let final_msg = format!("c=biws,r={combined},p={proof}");
        let r = authenticate(&mut conn, v, Bytes::from(final_msg))?;
        expect(&ResponseKind::SaslAuthenticate(r), &[58])?;
    }
    notes.push("SCRAM-SHA-256/512 server-first ok, bad proof SASL_AUTHENTICATION_FAILED");
    // A whole SCRAM-SHA-256 exchange as alice (made at format time), the server's signature
    // checked; then the authorizer refuses her too.
    let mut conn = Conn::connect(&addr)?;
    expect(&ResponseKind::SaslHandshake(handshake(&mut conn, hv, "SCRAM-SHA-256")?), &[])?;
    let mut scram = super::scram::Scram::new("alice", "alice-secret", "kwirescramnonce");
    let r = authenticate(&mut conn, v, Bytes::from(scram.first()))?;
    expect(&ResponseKind::SaslAuthenticate(r.clone()), &[])?;
    let client_final = scram.finish(&String::from_utf8_lossy(&r.auth_bytes))?;
    let r = authenticate(&mut conn, v, Bytes::from(client_final))?;
    expect(&ResponseKind::SaslAuthenticate(r.clone()), &[])?;
    if !scram.verify(&String::from_utf8_lossy(&r.auth_bytes)) {
        return Err(format!("server-final {:?} does not verify", String::from_utf8_lossy(&r.auth_bytes)));
    }
    let m = conn.call(mv, topic_metadata_request())?;
    expect(&m, &[29])?;
    notes.push("SCRAM-SHA-256 as alice ok (server signature verified), TOPIC_AUTHORIZATION_FAILED");
    Ok(notes.join("; "))
}

fn admin_sasl(s: &mut Sweep) -> R<Conn> {
    let addr = sasl_addr(s)?;
    let mut conn = Conn::connect(&addr)?;
    let hv = newest(s, ApiKey::SaslHandshake);
    expect(&ResponseKind::SaslHandshake(handshake(&mut conn, hv, "PLAIN")?), &[])?;
    let av = newest(s, ApiKey::SaslAuthenticate);
    expect(&ResponseKind::SaslAuthenticate(authenticate(&mut conn, av, Bytes::from_static(b"\0admin\0admin-secret"))?), &[])?;
    Ok(conn)
}

/// Delegation tokens need a SASL-authenticated connection (admin, over PLAIN).
fn delegation_tokens(s: &mut Sweep, api: ApiKey, v: i16) -> R<String> {
    let mut conn = admin_sasl(s)?;
    let pick = |a: ApiKey| if a == api { v } else { newest(s, a) };
    let cv = pick(ApiKey::CreateDelegationToken);
    let req = CreateDelegationTokenRequest {
        renewers: vec![create_delegation_token_request::CreatableRenewers { principal_type: bs("User"), principal_name: bs("admin"), ..Default::default() }],
        max_lifetime_ms: -1,
        ..Default::default()
    };
    let r = conn.call(cv, req)?;
    expect(&r, &[])?;
    let token = as_resp!(r, CreateDelegationToken);
    if token.hmac.is_empty() || token.token_id.is_empty() {
        return Err("empty token".into());
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let dv = pick(ApiKey::DescribeDelegationToken);
    loop {
        let r = conn.call(dv, DescribeDelegationTokenRequest { owners: None, ..Default::default() })?;
        expect(&r, &[])?;
        if as_resp!(r, DescribeDelegationToken).tokens.iter().any(|t| t.token_id == token.token_id) {
            break;
        }
        if Instant::now() > deadline {
            return Err("created token not described".into());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let rv = pick(ApiKey::RenewDelegationToken);
    let r = conn.call(rv, RenewDelegationTokenRequest { hmac: token.hmac.clone(), renew_period_ms: 3_600_000, ..Default::default() })?;
    expect(&r, &[])?;
    let ev = pick(ApiKey::ExpireDelegationToken);
    let r = conn.call(ev, ExpireDelegationTokenRequest { hmac: token.hmac.clone(), expiry_time_period_ms: -1, ..Default::default() })?;
    expect(&r, &[])?;
    Ok(format!("create v{cv} describe v{dv} renew v{rv} expire v{ev}"))
}

/// KIP-848: join (epoch 0), heartbeat at the new epoch until assigned, optionally describe, leave.
fn consumer_group(s: &mut Sweep, group: &str, v: i16, describe: bool) -> R<String> {
    // From v1 the member makes its own id (KIP-1082); v0 lets the coordinator pick it.
    let member_id = if v >= 1 { format!("{:0>22}", s.state.run) } else { String::new() };
    let join = ConsumerGroupHeartbeatRequest {
        group_id: bs(group),
        member_id: bs(&member_id),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(vec![bs(TOPIC)]),
        topic_partitions: Some(Vec::new()),
        ..Default::default()
    };
    let r = retry(COORDINATOR_TRANSIENT, || s.conn.call(v, join.clone()))?;
    expect(&r, &[])?;
    let r = as_resp!(r, ConsumerGroupHeartbeat);
    let member = r.member_id.clone().ok_or("no member id")?;
    let mut epoch = r.member_epoch;
    if epoch < 1 {
        return Err(format!("member epoch {epoch}"));
    }
    let hb = ConsumerGroupHeartbeatRequest { group_id: bs(group), member_id: member.clone(), member_epoch: epoch, ..Default::default() };
    let r = s.conn.call(v, hb)?;
    expect(&r, &[])?;
    epoch = as_resp!(r, ConsumerGroupHeartbeat).member_epoch;
    let mut note = format!("member epoch {epoch}");
    if describe {
        let dv = newest(s, ApiKey::ConsumerGroupDescribe);
        let r = s.conn.call(dv, ConsumerGroupDescribeRequest { group_ids: vec![bs(group)], ..Default::default() })?;
        expect(&r, &[])?;
        let r = as_resp!(r, ConsumerGroupDescribe);
        let members = r.groups[0].members.len();
        if members != 1 {
            return Err(format!("{members} members described"));
        }
        note += ", 1 member described";
    }
    let leave = ConsumerGroupHeartbeatRequest { group_id: bs(group), member_id: member, member_epoch: -1, ..Default::default() };
    expect(&s.conn.call(v, leave)?, &[])?;
    Ok(note + ", left")
}

/// Versions kwire knows that the broker does not advertise: ApiVersions above the broker's
/// range is answered at v0 with UNSUPPORTED_VERSION and the broker's ranges (KIP-511); any other
/// api at an unadvertised version makes the broker close the connection.
pub fn refused_versions(s: &mut Sweep) {
    let theirs = s.advertised.api_keys.iter().find(|k| k.api_key == 18).map(|k| k.max_version).unwrap_or(0);
    let v = theirs + 1;
    let outcome = (|| -> R<String> {
        // The codec does not encode versions this build does not know: a hand-built frame,
        // with the header version kwire predicts for it.
        let hv = kwire::header::request_header_version(ApiKey::ApiVersions.key(), v);
        let header = RequestHeader { request_api_key: 18, request_api_version: v, correlation_id: 99, client_id: Some(bs("sweep")), ..Default::default() };
        let mut body = kwire::BytesMut::new();
        kwire::Encode::encode(&header, &mut body, hv).map_err(|e| e.to_string())?;
        let known = ApiKey::ApiVersions.stable_versions().hi.min(theirs);
        kwire::Encode::encode(&ApiVersionsRequest::default(), &mut body, known).map_err(|e| e.to_string())?;
        let mut frame = (body.len() as i32).to_be_bytes().to_vec();
        frame.extend_from_slice(&body);
        let mut conn = Conn::connect(&s.broker.plaintext)?;
        let raw = conn.raw(&frame)?;
        let mut buf = Bytes::from(raw);
        let h = ResponseHeader::decode(&mut buf, 0).map_err(|e| e.to_string())?;
        let r = ApiVersionsResponse::decode(&mut buf, 0).map_err(|e| e.to_string())?;
        if h.correlation_id != 99 || r.error_code != 35 || r.api_keys.is_empty() {
            return Err(format!("correlation {} error {} with {} apis", h.correlation_id, r.error_code, r.api_keys.len()));
        }
        Ok("refused: UNSUPPORTED_VERSION at v0 with the broker's ranges".into())
    })();
    s.rows.push(Row { api: ApiKey::ApiVersions, version: v, outcome: to_outcome(outcome), ms: 0 });
    // Versions this build knows on either side of the broker's range (one each): Kafka parses
    // the header, finds the version unsupported and closes the connection without an answer.
    for k in s.advertised.api_keys.clone() {
        let Some(api) = ApiKey::from_i16(k.api_key) else { continue };
        if api == ApiKey::ApiVersions {
            continue;
        }
        let ours = api.stable_versions();
        let below = (k.min_version > ours.lo).then(|| k.min_version - 1);
        let above = (ours.hi > k.max_version).then(|| k.max_version + 1);
        for v in [below, above].into_iter().flatten() {
            let t = std::time::Instant::now();
            let outcome = refused(s, api, v);
            s.rows.push(Row { api, version: v, outcome: to_outcome(outcome), ms: t.elapsed().as_millis() });
        }
    }
}

fn refused(s: &Sweep, api: ApiKey, v: i16) -> R<String> {
    let header = RequestHeader { request_api_key: api.key(), request_api_version: v, correlation_id: 7, client_id: Some(bs("sweep")), ..Default::default() };
    let mut body = kwire::BytesMut::new();
    kwire::Encode::encode(&header, &mut body, api.request_header_version(v)).map_err(|e| e.to_string())?;
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    let mut conn = Conn::connect(&s.broker.plaintext)?;
    match conn.raw(&frame) {
        Ok(answer) => Err(format!("v{v} is not advertised, yet the broker answered {} bytes", answer.len())),
        Err(e) if e.contains("closed") || e.contains("reset") => Ok(format!("refused: not advertised, connection closed ({e})")),
        Err(e) => Err(format!("v{v}: {e}")),
    }
}

fn to_outcome(r: R<String>) -> Outcome {
    match r {
        Ok(n) => Outcome::Pass(n),
        Err(e) => Outcome::Fail(e),
    }
}
