//! A 3-node cluster (`scripts/kafka.sh start VERSION --nodes 3`): what one node cannot show.
//! Leaders spread over the brokers, each partition's leader takes produce and fetch and the
//! others answer NOT_LEADER_OR_FOLLOWER, the group coordinator is one broker and the others
//! answer NOT_COORDINATOR, and a replica reordering plus ElectLeaders moves a leader.
// Records are nullable in Kafka 3.9.0's specs and not in 4.x's: `Option::from` builds on either.
#![allow(clippy::useless_conversion)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kwire::messages::*;
use kwire::runtime::records::{decode_all, Compression, DecodeOptions};
use kwire::{ApiKey, ByteString, Bytes};

use super::apis::{batch, bs, newest, produce_request, wait_for_leaders};
use super::{expect, retry, Conn, Sweep, COORDINATOR_TRANSIENT, R};
use crate::as_resp;

pub fn run(s: &mut Sweep) -> R<Vec<String>> {
    let mut notes = Vec::new();
    let run = format!("{:x}", super::apis::now_ms() % 0xff_ffff);
    let topic = format!("cluster-{run}");
    let mv = newest(s, ApiKey::Metadata);
    let cv = newest(s, ApiKey::CreateTopics);
    let create = CreateTopicsRequest {
        topics: vec![create_topics_request::CreatableTopic { name: bs(&topic), num_partitions: 6, replication_factor: 3, ..Default::default() }],
        timeout_ms: 30_000,
        ..Default::default()
    };
    expect(&s.conn.call(cv, create)?, &[])?;
    let m = wait_for_leaders(s, &topic, 6)?;
    let brokers: BTreeMap<i32, String> = m.brokers.iter().map(|b| (b.node_id, format!("{}:{}", b.host, b.port))).collect();
    if brokers.len() != 3 {
        return Err(format!("{} brokers in Metadata", brokers.len()));
    }
    let t = &m.topics[0];
    let leaders: BTreeMap<i32, i32> = t.partitions.iter().map(|p| (p.partition_index, p.leader_id)).collect();
    let distinct: std::collections::BTreeSet<i32> = leaders.values().copied().collect();
    if distinct.len() < 2 || t.partitions.iter().any(|p| p.replica_nodes.len() != 3) {
        return Err(format!("leaders {leaders:?}"));
    }
    notes.push(format!("6 partitions, replication 3, leaders on brokers {distinct:?}"));

    let mut conns: BTreeMap<i32, Conn> = BTreeMap::new();
    for (id, addr) in &brokers {
        conns.insert(*id, Conn::connect(addr)?);
    }
    let pv = newest(s, ApiKey::Produce);
    let fv = newest(s, ApiKey::Fetch);
    for (&partition, &leader) in &leaders {
        let follower = *brokers.keys().find(|b| **b != leader).ok_or("no follower")?;
        let req = produce_request(s, pv, &topic, partition, batch(Compression::Lz4, 4)?, -1)?;
        let c = conns.get_mut(&follower).ok_or("no connection")?;
        // UNKNOWN_TOPIC_OR_PARTITION until the topic reaches that broker's metadata (bounded).
        expect(&retry(&[3], || c.call(pv, req.clone()))?, &[6])?;
        let c = conns.get_mut(&leader).ok_or("no connection")?;
        // NOT_LEADER_OR_FOLLOWER while the new leader is still starting (bounded).
        expect(&retry(&[3, 6], || c.call(pv, req.clone()))?, &[])?;
        let fetch = FetchRequest {
            max_wait_ms: 100,
            min_bytes: 1,
            max_bytes: 1 << 20,
            topics: vec![fetch_request::FetchTopic {
                topic: if fv < 13 { bs(&topic) } else { ByteString::new() },
                topic_id: if fv >= 13 { t.topic_id } else { kwire::Uuid::ZERO },
                partitions: vec![fetch_request::FetchPartition { partition, fetch_offset: 0, partition_max_bytes: 1 << 20, ..Default::default() }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let r = c.call(fv, fetch)?;
        expect(&r, &[])?;
        let r = as_resp!(r, Fetch);
        let records = Option::<Bytes>::from(r.responses[0].partitions[0].records.clone()).unwrap_or_default();
        let (decoded, _) = decode_all(records, &DecodeOptions::default()).map_err(|e| e.to_string())?;
        if decoded.len() != 4 {
            return Err(format!("partition {partition}: fetched {} of 4 from leader {leader}", decoded.len()));
        }
    }
    notes.push("each partition: produce and fetch at its leader; a follower NOT_LEADER_OR_FOLLOWER".into());

    // The group coordinator is one broker; an offset commit sent to another is NOT_COORDINATOR.
    let group = format!("cluster-group-{run}");
    let fcv = newest(s, ApiKey::FindCoordinator);
    let find = FindCoordinatorRequest {
        key: if fcv < 4 { bs(&group) } else { ByteString::new() },
        coordinator_keys: if fcv >= 4 { vec![bs(&group)] } else { Vec::new() },
        ..Default::default()
    };
    let r = retry(COORDINATOR_TRANSIENT, || s.conn.call(fcv, find.clone()))?;
    expect(&r, &[])?;
    let r = as_resp!(r, FindCoordinator);
    let coordinator = if fcv < 4 { r.node_id } else { r.coordinators[0].node_id };
    let other = *brokers.keys().find(|b| **b != coordinator).ok_or("no other broker")?;
    let ocv = newest(s, ApiKey::OffsetCommit);
    // The sweep's connection, pointed at each broker in turn.
    let main = std::mem::replace(&mut s.conn, conns.remove(&other).ok_or("no connection")?);
    let wrong = s.conn.call(ocv, commit_request(&group, &topic, ocv, t.topic_id)?)?;
    s.conn = conns.remove(&coordinator).ok_or("no connection")?;
    let right = retry(COORDINATOR_TRANSIENT, || s.conn.call(ocv, commit_request(&group, &topic, ocv, t.topic_id)?))?;
    s.conn = main;
    expect(&wrong, &[16])?;
    expect(&right, &[])?;
    notes.push(format!("coordinator broker {coordinator} commits; broker {other} NOT_COORDINATOR"));

    // Reorder partition 0's replicas so another broker is preferred, then elect it.
    let p0 = t.partitions.iter().find(|p| p.partition_index == 0).ok_or("no partition 0")?;
    let old_leader = p0.leader_id;
    let mut replicas: Vec<i32> = p0.replica_nodes.iter().copied().collect();
    replicas.rotate_left(1);
    let new_preferred = replicas[0];
    let av = newest(s, ApiKey::AlterPartitionReassignments);
    let alter = AlterPartitionReassignmentsRequest {
        timeout_ms: 30_000,
        topics: vec![alter_partition_reassignments_request::ReassignableTopic {
            name: bs(&topic),
            partitions: vec![alter_partition_reassignments_request::ReassignablePartition {
                partition_index: 0,
                replicas: Some(replicas.iter().copied().collect()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    expect(&s.conn.call(av, alter)?, &[])?;
    let ev = newest(s, ApiKey::ElectLeaders);
    let elect = ElectLeadersRequest {
        election_type: 0,
        topic_partitions: Some(vec![elect_leaders_request::TopicPartitions { topic: bs(&topic), partitions: [0].into_iter().collect(), ..Default::default() }]),
        timeout_ms: 30_000,
        ..Default::default()
    };
    // Bounded: the reassignment reaches the brokers through the metadata log first.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = s.conn.call(ev, elect.clone())?;
        let m = super::apis::metadata(s, mv, &[&topic])?;
        let leader = m.topics[0].partitions.iter().find(|p| p.partition_index == 0).map(|p| p.leader_id).unwrap_or(-1);
        if leader == new_preferred {
            // NONE when this request moved it, ELECTION_NOT_NEEDED once it had moved.
            let errs = super::errors(&r);
            if !(errs.is_empty() || errs == [84].into_iter().collect()) {
                return Err(format!("ElectLeaders: {errs:?}"));
            }
            break;
        }
        if Instant::now() > deadline {
            return Err(format!("partition 0 still led by {leader}, preferred {new_preferred}"));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    notes.push(format!("partition 0: replicas reordered, ElectLeaders moved the leader {old_leader} -> {new_preferred}"));
    Ok(notes)
}

fn commit_request(group: &str, topic: &str, v: i16, topic_id: kwire::Uuid) -> R<OffsetCommitRequest> {
    use kwire::runtime::json::serde_json::json;
    use offset_commit_request::*;
    let req = OffsetCommitRequest {
        group_id: bs(group),
        generation_id_or_member_epoch: -1,
        topics: vec![OffsetCommitRequestTopic {
            name: if v < 10 { bs(topic) } else { ByteString::new() },
            partitions: vec![OffsetCommitRequestPartition { partition_index: 0, committed_offset: 1, ..Default::default() }],
            ..Default::default()
        }],
        ..Default::default()
    };
    super::patch(req, v, json!({"topics": [{"topicId": super::uuid_json(topic_id)}]}))
}
