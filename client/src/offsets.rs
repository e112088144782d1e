//! Offsets as the logs and the groups hold them, one implementation for the consumer and the
//! admin client: ListOffsets at each partition's leader, and a group's committed offsets
//! (OffsetFetch, OffsetCommit) at its coordinator, across every version's layout (one group at
//! the top level up to OffsetFetch v7, a list of groups from v8, topic ids from v10).

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use kwire::messages::{
    list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic},
    offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic},
    offset_fetch_request::{OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics},
    ListOffsetsRequest, OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest,
};
use kwire::{ApiKey, ByteString, ErrorCode, Uuid};
use tracing::{debug, warn};

use crate::cluster::{Client, ClusterMetadata};
use crate::coordinator::Coordinator;
use crate::error::{Error, GroupError, Resource, Result};
use crate::retry::{Backoff, Retry};
use crate::route::{Limits, Route};
use crate::topic_partition::TopicPartition;

/// Attempts of a ListOffsets round while leaders move.
const LIST_ATTEMPTS: u32 = 10;

/// Attempts of an OffsetFetch while the coordinator moves or the offsets are unstable.
const FETCH_ATTEMPTS: u32 = 30;

/// Which offset of a partition to look up (Java's `OffsetSpec`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetSpec {
    /// The log start offset.
    Earliest,
    /// The log end offset (the last stable offset under read_committed).
    Latest,
    /// The first offset whose timestamp is at least this (ms).
    Timestamp(i64),
    /// The offset of the record with the largest timestamp (ListOffsets v7+, KIP-734).
    MaxTimestamp,
}

impl OffsetSpec {
    /// The timestamp field ListOffsets carries for this spec.
    pub(crate) fn wire(self) -> i64 {
        match self {
            OffsetSpec::Earliest => -2,
            OffsetSpec::Latest => -1,
            OffsetSpec::MaxTimestamp => -3,
            OffsetSpec::Timestamp(t) => t,
        }
    }
}

/// What ListOffsets found for one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListedOffset {
    /// The offset.
    pub offset: i64,
    /// The record's timestamp, for timestamp lookups (-1 otherwise).
    pub timestamp: i64,
    /// The leader epoch of that offset, when the broker gives it.
    pub leader_epoch: Option<i32>,
}

/// A committed offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetAndMetadata {
    /// The next offset to read.
    pub offset: i64,
    /// The leader epoch of the last record read, if known.
    pub leader_epoch: Option<i32>,
    /// Free-form metadata.
    pub metadata: Option<String>,
}

impl OffsetAndMetadata {
    /// An offset without epoch or metadata.
    pub fn new(offset: i64) -> OffsetAndMetadata {
        OffsetAndMetadata { offset, leader_epoch: None, metadata: None }
    }
}

/// Topic names by id, to read responses that name topics by id.
pub(crate) fn topic_ids(m: &ClusterMetadata) -> HashMap<Uuid, String> {
    m.topics.values().map(|t| (t.id, t.name.clone())).collect()
}

/// ListOffsets for each `(partition, spec)` at the partition's leader (one request per leader
/// and round), trying again with fresh metadata while leaders move. A partition given twice is
/// looked up by its last spec. Partitions with no such offset (a timestamp past the last
/// record) are left out.
pub(crate) async fn list_offsets(
    client: &Client,
    specs: &[(TopicPartition, OffsetSpec)],
    isolation_level: i8,
    backoff: Duration,
) -> Result<BTreeMap<TopicPartition, ListedOffset>> {
    let mut out = BTreeMap::new();
    // One spec per partition (the last given), as a map: the broker refuses a request that
    // names a partition twice (INVALID_REQUEST), and the answer is keyed by partition.
    let unique: BTreeMap<&TopicPartition, OffsetSpec> = specs.iter().map(|(tp, s)| (tp, *s)).collect();
    let mut todo: Vec<(TopicPartition, OffsetSpec)> = unique.into_iter().map(|(tp, s)| (tp.clone(), s)).collect();
    let mut retry = Retry::new(Backoff::constant(backoff), LIST_ATTEMPTS);
    while !todo.is_empty() && retry.next().await {
        if retry.attempts() > 1 {
            client.refresh_metadata().await?;
        }
        let metadata = client.metadata();
        let mut by_leader: BTreeMap<i32, Vec<(TopicPartition, OffsetSpec, i32)>> = BTreeMap::new();
        let mut again = Vec::new();
        for (tp, spec) in todo.drain(..) {
            match metadata.topics.get(&tp.topic).and_then(|t| t.partitions.iter().find(|p| p.index == tp.partition)) {
                Some(p) if p.leader >= 0 => by_leader.entry(p.leader).or_default().push((tp, spec, p.leader_epoch)),
                _ => again.push((tp, spec)),
            }
        }
        for (leader, parts) in by_leader {
            let mut topics: BTreeMap<&str, Vec<ListOffsetsPartition>> = BTreeMap::new();
            for (tp, spec, epoch) in &parts {
                topics.entry(tp.topic.as_str()).or_default().push(ListOffsetsPartition {
                    partition_index: tp.partition,
                    current_leader_epoch: *epoch,
                    timestamp: spec.wire(),
                    max_num_offsets: 1,
                    ..Default::default()
                });
            }
            let request = ListOffsetsRequest {
                replica_id: -1,
                isolation_level,
                topics: topics
                    .into_iter()
                    .map(|(t, partitions)| ListOffsetsTopic { name: ByteString::from(t.to_owned()), partitions, ..Default::default() })
                    .collect(),
                timeout_ms: client.config().connection.request_timeout.as_millis().min(i32::MAX as u128) as i32,
                ..Default::default()
            };
            let response = match client.send(Route::Node(leader), request).await {
                Ok(r) => r,
                Err(e) if e.is_retriable() => {
                    warn!(leader, error = %e, "ListOffsets failed");
                    again.extend(parts.into_iter().map(|(tp, s, _)| (tp, s)));
                    continue;
                }
                Err(e) => return Err(e),
            };
            for (tp, spec, _) in parts {
                let p = response.topics.iter().filter(|t| t.name == tp.topic[..]).flat_map(|t| &t.partitions).find(|p| p.partition_index == tp.partition);
                match p {
                    None => return Err(Error::missing(ApiKey::ListOffsets, &tp)),
                    Some(p) if ErrorCode(p.error_code).is_ok() => {
                        if p.offset >= 0 {
                            let leader_epoch = (p.leader_epoch >= 0).then_some(p.leader_epoch);
                            out.insert(tp, ListedOffset { offset: p.offset, timestamp: p.timestamp, leader_epoch });
                        }
                    }
                    Some(p) => {
                        let code = ErrorCode(p.error_code);
                        if code.is_retriable() || Client::needs_metadata_refresh(code) {
                            again.push((tp, spec));
                        } else {
                            return Err(Error::broker(code, None, format!("ListOffsets {tp}")).about(Resource::Topic(tp.topic.clone())));
                        }
                    }
                }
            }
        }
        todo = again;
    }
    if let Some((tp, _)) = todo.first() {
        return Err(Error::unknown(&tp.topic, Some(tp.partition), "ListOffsets: no leader answered"));
    }
    Ok(out)
}

/// Who commits: a member of the current generation (or epoch, KIP-848), or, with generation
/// -1 and no member id, an admin committing for an empty group.
#[derive(Debug, Clone, Default)]
pub(crate) struct Committer {
    pub(crate) generation: i32,
    pub(crate) member_id: String,
    pub(crate) instance_id: Option<String>,
}

impl Committer {
    /// Not a member: what an admin client commits as.
    pub(crate) fn outsider() -> Committer {
        Committer { generation: -1, member_id: String::new(), instance_id: None }
    }
}

/// The group's committed offsets (OffsetFetch at its coordinator): for these partitions, or
/// for every partition the group has committed when `tps` is `None`. Partitions without a
/// committed offset are left out. Asks again while the coordinator moves or a transaction is
/// committing offsets (UNSTABLE_OFFSET_COMMIT); `instance_id` names the member in errors.
pub(crate) async fn committed(
    coordinator: &Coordinator,
    group: &str,
    tps: Option<&[TopicPartition]>,
    instance_id: Option<&str>,
    backoff: Duration,
) -> Result<BTreeMap<TopicPartition, OffsetAndMetadata>> {
    let client = coordinator.client();
    // OffsetFetch v10 names topics by id: a topic just subscribed to may not be in the
    // metadata yet (its id would go out as zero and come back UNKNOWN_TOPIC_ID).
    for tp in tps.unwrap_or_default() {
        if client.metadata().topics.get(tp.topic.as_str()).is_none_or(|i| i.id == Uuid::ZERO) {
            let _ = client.topic(&tp.topic).await;
        }
    }
    let metadata = client.metadata();
    let by_topic = tps.map(crate::topic_partition::by_topic);
    // Up to v7 one group at the top level; from v8 a list of groups. No topics: all of them.
    let build = |v: i16| {
        let mut r = OffsetFetchRequest { require_stable: v >= 7, ..Default::default() };
        if v < 8 {
            r.group_id = ByteString::from(group.to_owned());
            r.topics = by_topic.as_ref().map(|by_topic| {
                by_topic
                    .iter()
                    .map(|(t, ps)| OffsetFetchRequestTopic {
                        name: ByteString::from(t.to_string()),
                        partition_indexes: ps.iter().copied().collect(),
                        ..Default::default()
                    })
                    .collect()
            });
        } else {
            r.groups = vec![OffsetFetchRequestGroup {
                group_id: ByteString::from(group.to_owned()),
                topics: by_topic.as_ref().map(|by_topic| {
                    by_topic
                        .iter()
                        .map(|(t, ps)| OffsetFetchRequestTopics {
                            name: ByteString::from(t.to_string()),
                            topic_id: metadata.topics.get(*t).map_or(Uuid::ZERO, |i| i.id),
                            partition_indexes: ps.iter().copied().collect(),
                            ..Default::default()
                        })
                        .collect()
                }),
                member_id: None,
                member_epoch: -1,
                ..Default::default()
            }];
        }
        r
    };
    let mut ids = topic_ids(&metadata);
    let unstable_error = || Error::Group(GroupError::UnstableOffsets { group: group.to_owned() });
    let mut last = None;
    // One loop for the coordinator moving and for unstable offsets.
    let mut retry = Retry::new(Backoff::constant(backoff), FETCH_ATTEMPTS);
    while retry.next().await {
        let response = match coordinator.try_send(Limits::default(), build).await {
            Ok(r) => r,
            Err(e) if e.is_retriable() => {
                last = Some(e);
                continue;
            }
            Err(e) => return Err(e),
        };
        let code = ErrorCode(response.groups.first().map_or(response.error_code, |g| g.error_code));
        if let Some(e) = coordinator.moved(ApiKey::OffsetFetch, code) {
            last = Some(e);
            continue;
        }
        // A transaction is committing offsets: ask again.
        if code == ErrorCode::UNSTABLE_OFFSET_COMMIT {
            last = Some(unstable_error());
            continue;
        }
        if !code.is_ok() {
            return Err(Error::group(code, None, group, instance_id, format!("OffsetFetch for group {group}")));
        }
        // A topic named by an id the metadata does not have yet (the whole group's offsets
        // were asked for): look the topics up once more.
        let unknown_id =
            |ids: &HashMap<Uuid, String>| response.groups.iter().flat_map(|g| &g.topics).any(|t| t.topic_id != Uuid::ZERO && !ids.contains_key(&t.topic_id));
        if unknown_id(&ids) {
            ids = topic_ids(&*client.refresh_metadata().await?);
        }
        let mut out = BTreeMap::new();
        let mut unstable = false;
        // (topic, partition, offset, epoch, metadata, error) from either layout (v8+ groups, or earlier).
        let mut rows: Vec<(String, i32, i64, i32, Option<String>, i16)> = Vec::new();
        for g in &response.groups {
            for t in &g.topics {
                let name = if t.topic_id != Uuid::ZERO {
                    match ids.get(&t.topic_id) {
                        Some(name) => name.clone(),
                        None => {
                            // Deleted since it was committed: nothing to name it by.
                            debug!(group, topic_id = ?t.topic_id, "committed offsets of a topic the metadata does not have");
                            continue;
                        }
                    }
                } else {
                    t.name.to_string()
                };
                for p in &t.partitions {
                    rows.push((
                        name.clone(),
                        p.partition_index,
                        p.committed_offset,
                        p.committed_leader_epoch,
                        p.metadata.as_deref().map(str::to_owned),
                        p.error_code,
                    ));
                }
            }
        }
        for t in &response.topics {
            for p in &t.partitions {
                rows.push((
                    t.name.to_string(),
                    p.partition_index,
                    p.committed_offset,
                    p.committed_leader_epoch,
                    p.metadata.as_deref().map(str::to_owned),
                    p.error_code,
                ));
            }
        }
        for (topic, partition, offset, epoch, meta, code) in rows {
            // Unstable, or an unknown topic id (v10 asks by topic id, and the metadata had
            // no id for a topic just created): ask again.
            if matches!(ErrorCode(code), ErrorCode::UNSTABLE_OFFSET_COMMIT | ErrorCode::UNKNOWN_TOPIC_ID) {
                unstable = true;
                continue;
            }
            Error::check(code, None, || format!("OffsetFetch {topic}-{partition} for group {group}")).map_err(|e| e.about(Resource::Topic(topic.clone())))?;
            if offset >= 0 {
                out.insert(TopicPartition::new(topic, partition), OffsetAndMetadata { offset, leader_epoch: (epoch >= 0).then_some(epoch), metadata: meta });
            }
        }
        if !unstable {
            return Ok(out);
        }
        last = Some(unstable_error());
    }
    Err(last.unwrap_or_else(unstable_error))
}

/// Commits `offsets` for `group` (OffsetCommit at its coordinator) as `who`, trying again
/// while the coordinator moves. The first partition's error is returned, typed as a group
/// error where it is one.
pub(crate) async fn commit(coordinator: &Coordinator, group: &str, who: &Committer, offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>) -> Result<()> {
    if offsets.is_empty() {
        return Ok(());
    }
    let metadata = coordinator.client().metadata();
    let mut topics: BTreeMap<&str, Vec<OffsetCommitRequestPartition>> = BTreeMap::new();
    for (tp, o) in offsets {
        topics.entry(tp.topic.as_str()).or_default().push(OffsetCommitRequestPartition {
            partition_index: tp.partition,
            committed_offset: o.offset,
            committed_leader_epoch: o.leader_epoch.unwrap_or(-1),
            commit_timestamp: -1,
            committed_metadata: Some(ByteString::from(o.metadata.clone().unwrap_or_default())),
            ..Default::default()
        });
    }
    let instance = who.instance_id.clone().map(ByteString::from);
    let build = |v: i16| OffsetCommitRequest {
        group_id: ByteString::from(group.to_owned()),
        generation_id_or_member_epoch: who.generation,
        member_id: ByteString::from(who.member_id.clone()),
        group_instance_id: if v >= 7 { instance.clone() } else { None },
        retention_time_ms: -1,
        topics: topics
            .iter()
            .map(|(t, partitions)| OffsetCommitRequestTopic {
                name: ByteString::from(t.to_string()),
                topic_id: metadata.topics.get(*t).map_or(Uuid::ZERO, |i| i.id),
                partitions: partitions.clone(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let code_of = |r: &OffsetCommitResponse| {
        r.topics.iter().flat_map(|t| &t.partitions).map(|p| p.error_code).find(|c| crate::coordinator::coordinator_moved(ErrorCode(*c))).unwrap_or(0)
    };
    let response = coordinator.send(build, code_of).await?;
    for t in &response.topics {
        for p in &t.partitions {
            let code = ErrorCode(p.error_code);
            if !code.is_ok() {
                let e = Error::group(code, None, group, who.instance_id.as_deref(), format!("OffsetCommit for group {group}, topic {}", t.name));
                return Err(e.about(Resource::Topic(t.name.to_string())));
            }
        }
    }
    debug!(group, partitions = offsets.len(), "committed");
    Ok(())
}
