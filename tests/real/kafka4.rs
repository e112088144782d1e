//! Apis only Kafka 4.x advertises (share groups, KIP-932; streams groups, KIP-1071). Their types
//! exist only in builds from Kafka 4 specs, so requests are built from Kafka's JSON form and
//! answers read through it: this file compiles against the 3.9 specs too.

use std::time::{Duration, Instant};

use kwire::runtime::json::serde_json::{json, Value};
use kwire::runtime::records::{decode_all, DecodeOptions};
use kwire::{ApiKey, Bytes, RequestKind, ResponseKind};

use super::apis::{newest_version as newest, produce_records, TOPIC};
use super::{expect, retry, uuid_json, Sweep, COORDINATOR_TRANSIENT, R};

fn request(api: ApiKey, v: i16, value: Value) -> R<RequestKind> {
    RequestKind::from_json(api.key(), v, &value).map_err(|e| format!("{} v{v} request JSON: {e}", api.name()))
}

fn json_of(r: &ResponseKind, v: i16) -> R<Value> {
    r.to_json(v).map_err(|e| e.to_string())
}

fn call(s: &mut Sweep, api: ApiKey, v: i16, value: Value) -> R<(ResponseKind, Value)> {
    let req = request(api, v, value)?;
    let r = retry(COORDINATOR_TRANSIENT, || s.conn.call(v, req.clone()))?;
    let j = json_of(&r, v)?;
    Ok((r, j))
}

/// A member id of the client's making (22 characters, like Kafka's `Uuid.randomUuid()` strings).
fn member_id(tag: &str, run: &str) -> String {
    format!("{:x<22}", format!("{tag}{run}")).chars().take(22).collect()
}

pub fn exercise(s: &mut Sweep, api: ApiKey, v: i16) -> Option<R<String>> {
    let run = s.state.run.clone();
    let out = match api.key() {
        76 => share_member(s, &format!("sg-{v}-{run}"), v, false),
        77 => share_member(s, &format!("sgd-{v}-{run}"), newest(s, api), true).map(|n| format!("{n}; described at v{v}")),
        78 => share_consume(s, &format!("sf-{v}-{run}"), v, newest(s, ApiKey::from_i16(79)?)).map(|(n, _)| n),
        79 => share_consume(s, &format!("sa-{v}-{run}"), newest(s, ApiKey::from_i16(78)?), v).map(|(n, _)| n),
        83..=87 => share_state(s, api, v),
        88 => streams_member(s, &format!("st-{v}-{run}"), v, Streams::Join),
        89 => {
            let hv = newest(s, ApiKey::from_i16(88)?);
            streams_member(s, &format!("std-{v}-{run}"), hv, Streams::Describe(v)).map(|n| format!("{n}; described at v{v}"))
        }
        93 => {
            let hv = newest(s, ApiKey::from_i16(88)?);
            streams_member(s, &format!("stt-{v}-{run}"), hv, Streams::PushTopology(v))
        }
        90..=92 => share_offsets(s, api, v),
        _ => return None,
    };
    Some(out)
}

fn heartbeat(s: &mut Sweep, v: i16, group: &str, member: &str, epoch: i32, topics: Option<&[&str]>) -> R<(ResponseKind, Value)> {
    let api = ApiKey::from_i16(76).ok_or("no ShareGroupHeartbeat")?;
    call(
        s,
        api,
        v,
        json!({
            "groupId": group, "memberId": member, "memberEpoch": epoch, "rackId": null,
            "subscribedTopicNames": topics,
        }),
    )
}

/// Joins a share group (epoch 0), heartbeats until TOPIC's partitions are assigned (bounded),
/// optionally describes it, and leaves (epoch -1) unless `stay`.
fn share_join(s: &mut Sweep, group: &str, v: i16) -> R<(String, i32)> {
    let member = member_id("m", &s.state.run);
    let (r, j) = heartbeat(s, v, group, &member, 0, Some(&[TOPIC]))?;
    expect(&r, &[])?;
    let mut epoch = j["memberEpoch"].as_i64().unwrap_or(0) as i32;
    if epoch < 1 {
        return Err(format!("member epoch {epoch}"));
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (r, j) = heartbeat(s, v, group, &member, epoch, None)?;
        expect(&r, &[])?;
        epoch = j["memberEpoch"].as_i64().unwrap_or(0) as i32;
        let assigned = j["assignment"]["topicPartitions"].as_array().map(|a| !a.is_empty()).unwrap_or(false);
        if assigned {
            return Ok((member, epoch));
        }
        if Instant::now() > deadline {
            return Err(format!("no assignment in 20 s: {j}"));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn share_leave(s: &mut Sweep, v: i16, group: &str, member: &str) -> R<()> {
    let (r, _) = heartbeat(s, v, group, member, -1, None)?;
    expect(&r, &[])
}

fn share_member(s: &mut Sweep, group: &str, v: i16, describe: bool) -> R<String> {
    let (member, epoch) = share_join(s, group, v)?;
    let mut note = format!("joined, assigned at epoch {epoch}");
    if describe {
        let api = ApiKey::from_i16(77).ok_or("no ShareGroupDescribe")?;
        let dv = newest(s, api);
        let (r, j) = call(s, api, dv, json!({"groupIds": [group], "includeAuthorizedOperations": false}))?;
        expect(&r, &[])?;
        let members = j["groups"][0]["members"].as_array().map(Vec::len).unwrap_or(0);
        if members != 1 {
            return Err(format!("{members} members described"));
        }
        note += ", 1 member described";
    }
    share_leave(s, v, group, &member)?;
    Ok(note + ", left")
}

/// `value` with `key` set when the version has the field (`present`), else without it.
fn field(mut value: Value, present: bool, key: &str, field: Value) -> Value {
    if present {
        value[key] = field;
    }
    value
}

fn share_fetch_body(v: i16, group: &str, member: &str, epoch: i32, topic_id: Value, acks: Value) -> Value {
    let body = json!({
        "groupId": group, "memberId": member, "shareSessionEpoch": epoch,
        "maxWaitMs": 500, "minBytes": 1, "maxBytes": 1048576, "maxRecords": 100, "batchSize": 100,
        "topics": [{"topicId": topic_id, "partitions": [{"partitionIndex": 0, "acknowledgementBatches": acks}]}],
        "forgottenTopicsData": []
    });
    // v2 (KIP-1206, KIP-1222): acquire mode and renew acknowledgements.
    let body = field(body, v >= 2, "shareAcquireMode", json!(0));
    field(body, v >= 2, "isRenewAck", json!(false))
}

/// A share group consumes: join, ShareFetch (the first initialises the share-partition at the
/// latest offset), produce, ShareFetch until records are acquired, ShareAcknowledge (accept)
/// them, leave. Returns the note and the group.
fn share_consume(s: &mut Sweep, group: &str, fv: i16, av: i16) -> R<(String, String)> {
    let fetch_api = ApiKey::from_i16(78).ok_or("no ShareFetch")?;
    let ack_api = ApiKey::from_i16(79).ok_or("no ShareAcknowledge")?;
    let hv = newest(s, ApiKey::from_i16(76).ok_or("no ShareGroupHeartbeat")?);
    let (member, _) = share_join(s, group, hv)?;
    let id = uuid_json(s.state.topic_id);
    let mut epoch = 0;
    let (r, _) = call(s, fetch_api, fv, share_fetch_body(fv, group, &member, epoch, id.clone(), json!([])))?;
    expect(&r, &[])?;
    produce_records(s, TOPIC, 0, 4)?;
    let deadline = Instant::now() + Duration::from_secs(20);
    let (first, last, n) = loop {
        epoch += 1;
        let (r, j) = call(s, fetch_api, fv, share_fetch_body(fv, group, &member, epoch, id.clone(), json!([])))?;
        expect(&r, &[])?;
        let p = &j["responses"][0]["partitions"][0];
        if let Some(acq) = p["acquiredRecords"].as_array().filter(|a| !a.is_empty()) {
            let first = acq[0]["firstOffset"].as_i64().unwrap_or(-1);
            let last = acq[acq.len() - 1]["lastOffset"].as_i64().unwrap_or(-1);
            let records = p["records"].as_str().unwrap_or("");
            let bytes = kwire::runtime::json::VersionedJson::from_json(&Value::String(records.into()), fv).unwrap_or_else(|_| Bytes::new());
            let (decoded, _) = decode_all(bytes, &DecodeOptions::default()).map_err(|e| format!("records: {e}"))?;
            break (first, last, decoded.len());
        }
        if Instant::now() > deadline {
            return Err(format!("nothing acquired in 20 s: {j}"));
        }
    };
    if n == 0 || last < first {
        return Err(format!("acquired {first}..={last} with {n} records"));
    }
    epoch += 1;
    let ack = json!({
        "groupId": group, "memberId": member, "shareSessionEpoch": epoch,
        "topics": [{"topicId": id, "partitions": [{"partitionIndex": 0, "acknowledgementBatches": [
            {"firstOffset": first, "lastOffset": last, "acknowledgeTypes": [1]}
        ]}]}]
    });
    let (r, _) = call(s, ack_api, av, field(ack, av >= 2, "isRenewAck", json!(false)))?;
    expect(&r, &[])?;
    share_leave(s, hv, group, &member)?;
    Ok((format!("fetch v{fv} acquired {first}..={last} ({n} records), acknowledge v{av} accepted"), group.to_owned()))
}

/// DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets on a share group
/// that consumed and is empty again (altering and deleting need an empty group).
fn share_offsets(s: &mut Sweep, api: ApiKey, v: i16) -> R<String> {
    let run = s.state.run.clone();
    let group = format!("so-{}-{v}-{run}", api.key());
    let (fv, av) = (newest(s, ApiKey::from_i16(78).ok_or("no ShareFetch")?), newest(s, ApiKey::from_i16(79).ok_or("no ShareAcknowledge")?));
    share_consume(s, &group, fv, av)?;
    match api.key() {
        90 => {
            let (r, j) = call(s, api, v, json!({"groups": [{"groupId": group, "topics": [{"topicName": TOPIC, "partitions": [0]}]}]}))?;
            expect(&r, &[])?;
            let start = j["groups"][0]["topics"][0]["partitions"][0]["startOffset"].as_i64().unwrap_or(-1);
            if start < 0 {
                return Err(format!("start offset {start}: {j}"));
            }
            Ok(format!("start offset {start}"))
        }
        91 => {
            let (r, _) = call(s, api, v, json!({"groupId": group, "topics": [{"topicName": TOPIC, "partitions": [{"partitionIndex": 0, "startOffset": 0}]}]}))?;
            expect(&r, &[])?;
            Ok("start offset set to 0".into())
        }
        _ => {
            let (r, _) = call(s, api, v, json!({"groupId": group, "topics": [{"topicName": TOPIC}]}))?;
            expect(&r, &[])?;
            Ok("deleted".into())
        }
    }
}

/// The share coordinator's state apis (broker to share coordinator; CLUSTER_ACTION, which
/// ANONYMOUS has as a super user here): initialise a group's state, then read, write,
/// summarise or delete it.
fn share_state(s: &mut Sweep, api: ApiKey, v: i16) -> R<String> {
    let group = format!("ss-{}-{v}-{}", api.key(), s.state.run);
    let id = uuid_json(s.state.topic_id);
    let init_api = ApiKey::from_i16(83).ok_or("no InitializeShareGroupState")?;
    let iv = if api == init_api { v } else { newest(s, init_api) };
    // FindCoordinator key type 2 (share) creates __share_group_state, as the broker does.
    let fc = newest(s, ApiKey::FindCoordinator);
    let key = format!("{group}:{}:0", id.as_str().unwrap_or(""));
    let req = RequestKind::from_json(10, fc, &json!({"keyType": 2, "coordinatorKeys": [key]})).map_err(|e| e.to_string())?;
    expect(&retry(COORDINATOR_TRANSIENT, || s.conn.call(fc, req.clone()))?, &[])?;
    let (r, _) =
        call(s, init_api, iv, json!({"groupId": group, "topics": [{"topicId": id, "partitions": [{"partition": 0, "stateEpoch": 1, "startOffset": 0}]}]}))?;
    expect(&r, &[])?;
    let note = match api.key() {
        83 => "initialised".to_owned(),
        84 | 87 => {
            let (r, j) = call(s, api, v, json!({"groupId": group, "topics": [{"topicId": id, "partitions": [{"partition": 0, "leaderEpoch": 0}]}]}))?;
            expect(&r, &[])?;
            let p = &j["results"][0]["partitions"][0];
            if p["stateEpoch"].as_i64() != Some(1) || p["startOffset"].as_i64() != Some(0) {
                return Err(format!("state read back: {p}"));
            }
            "state epoch 1, start offset 0 read back".to_owned()
        }
        85 => {
            let partition = json!({
                "partition": 0, "stateEpoch": 1, "leaderEpoch": 0, "startOffset": 2,
                "stateBatches": [{"firstOffset": 2, "lastOffset": 3, "deliveryState": 0, "deliveryCount": 1}]
            });
            let partition = field(partition, v >= 1, "deliveryCompleteCount", json!(0));
            let (r, _) = call(s, api, v, json!({"groupId": group, "topics": [{"topicId": id, "partitions": [partition]}]}))?;
            expect(&r, &[])?;
            "written".to_owned()
        }
        _ => {
            let (r, _) = call(s, api, v, json!({"groupId": group, "topics": [{"topicId": id, "partitions": [{"partition": 0}]}]}))?;
            expect(&r, &[])?;
            "deleted".to_owned()
        }
    };
    Ok(format!("initialise v{iv}; {note}"))
}

/// What a streams member does between joining and leaving.
enum Streams {
    Join,
    /// StreamsGroupDescribe at this version (v1 asks for the topology description too).
    Describe(i16),
    /// StreamsGroupTopologyDescriptionUpdate at this version (Kafka 4.4): the member pushes its
    /// topology's description.
    PushTopology(i16),
}

/// KIP-1071: a streams member joins with a one-subtopology topology reading TOPIC, optionally
/// is described or pushes its topology's description, and leaves.
fn streams_member(s: &mut Sweep, group: &str, v: i16, step: Streams) -> R<String> {
    let api = ApiKey::from_i16(88).ok_or("no StreamsGroupHeartbeat")?;
    let member = member_id("s", &s.state.run);
    let (r, j) = call(
        s,
        api,
        v,
        json!({
            "groupId": group, "memberId": member, "memberEpoch": 0, "endpointInformationEpoch": 0,
            "instanceId": null, "rackId": null, "rebalanceTimeoutMs": 30000,
            "topology": {"epoch": 0, "subtopologies": [{
                "subtopologyId": "0", "sourceTopics": [TOPIC], "sourceTopicRegex": [], "stateChangelogTopics": [],
                "repartitionSinkTopics": [], "repartitionSourceTopics": [], "copartitionGroups": []
            }]},
            "activeTasks": [], "standbyTasks": [], "warmupTasks": [], "processId": "sweep-process",
            "userEndpoint": null, "clientTags": [], "taskOffsets": [], "taskEndOffsets": [], "shutdownApplication": false
        }),
    )?;
    expect(&r, &[])?;
    let epoch = j["memberEpoch"].as_i64().unwrap_or(0);
    if epoch < 1 {
        return Err(format!("member epoch {epoch}: {j}"));
    }
    let mut note = format!("joined at epoch {epoch}");
    match step {
        Streams::Join => {}
        Streams::Describe(dv) => {
            let dapi = ApiKey::from_i16(89).ok_or("no StreamsGroupDescribe")?;
            let mut body = json!({"groupIds": [group], "includeAuthorizedOperations": false});
            if dv >= 1 {
                body["includeTopologyDescription"] = json!(true);
            }
            let (r, j) = call(s, dapi, dv, body)?;
            expect(&r, &[])?;
            let members = j["groups"][0]["members"].as_array().map(Vec::len).unwrap_or(0);
            if members != 1 {
                return Err(format!("{members} members described"));
            }
            note += ", 1 member described";
        }
        Streams::PushTopology(tv) => {
            let tapi = ApiKey::from_i16(93).ok_or("no StreamsGroupTopologyDescriptionUpdate")?;
            let node = |name: &str, kind: i8, topics: &[&str], successors: &[&str]| json!({"name": name, "nodeType": kind, "sourceTopics": topics, "sinkTopic": null, "stores": [], "successors": successors});
            let (r, _) = call(
                s,
                tapi,
                tv,
                json!({
                    "groupId": group, "memberId": member, "topologyEpoch": 0,
                    "topologyDescription": {"subtopologies": [{"subtopologyId": "0", "nodes": [
                        node("KSTREAM-SOURCE-0000000000", 1, &[TOPIC], &["KSTREAM-PEEK-0000000001"]),
                        node("KSTREAM-PEEK-0000000001", 2, &[], &[]),
                    ]}], "globalStores": []}
                }),
            )?;
            // Kafka 4.4 keeps pushed descriptions only through a plugin
            // (group.streams.topology.description.plugin, unset here): the broker decodes the
            // request, checks the member and refuses the push, saying so.
            expect(&r, &[35])?;
            let said = json_of(&r, tv)?["errorMessage"].as_str().unwrap_or_default().to_owned();
            if !said.contains("plugin") {
                return Err(format!("UNSUPPORTED_VERSION without the plugin reason: {said:?}"));
            }
            note += &format!(", topology description at v{tv} refused: no plugin configured");
        }
    }
    let (r, _) = call(
        s,
        api,
        v,
        json!({
            "groupId": group, "memberId": member, "memberEpoch": -1, "endpointInformationEpoch": 0,
            "instanceId": null, "rackId": null, "rebalanceTimeoutMs": -1, "topology": null,
            "activeTasks": null, "standbyTasks": null, "warmupTasks": null, "processId": null,
            "userEndpoint": null, "clientTags": null, "taskOffsets": null, "taskEndOffsets": null, "shutdownApplication": false
        }),
    )?;
    expect(&r, &[])?;
    Ok(note + ", left")
}
