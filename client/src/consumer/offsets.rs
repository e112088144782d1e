//! Offsets: ListOffsets (earliest, latest, by timestamp), and the group's committed offsets
//! (OffsetFetch, OffsetCommit, automatic commits).

use std::collections::BTreeMap;
use std::time::Instant;

use kwire::messages::{
    list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic},
    offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic},
    offset_fetch_request::{OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics},
    ListOffsetsRequest, OffsetCommitRequest, OffsetFetchRequest,
};
use kwire::{ApiKey, ByteString, ErrorCode, ResponseKind, Uuid};
use tracing::{debug, warn};

use super::fetcher::topic_ids;
use super::{Consumer, OffsetAndMetadata, OffsetSpec};
use crate::cluster::Client;
use crate::error::{Error, GroupError, Resource, Result};
use crate::group::coordinator::Coordinator;
use crate::retry::{Backoff, Retry};
use crate::topic_partition::TopicPartition;

/// Attempts of a ListOffsets round while leaders move.
const LIST_ATTEMPTS: u32 = 10;

/// Attempts of an OffsetFetch while the coordinator moves or the offsets are unstable.
const ATTEMPTS: u32 = 30;

impl Consumer {
    /// Offsets by [`OffsetSpec`] (ListOffsets at each leader): `(offset, leader epoch)`;
    /// partitions with no such offset (a timestamp past the last record) are left out.
    pub async fn list_offsets(&self, specs: &[(TopicPartition, OffsetSpec)]) -> Result<BTreeMap<TopicPartition, (i64, Option<i32>)>> {
        let mut out = BTreeMap::new();
        let mut todo: Vec<(TopicPartition, OffsetSpec)> = specs.to_vec();
        let mut retry = Retry::new(Backoff::constant(self.config.retry_backoff), LIST_ATTEMPTS);
        while !todo.is_empty() && retry.next().await {
            if retry.attempts() > 1 {
                self.client.refresh_metadata().await?;
            }
            let metadata = self.client.metadata();
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
                    isolation_level: self.config.isolation_level.wire(),
                    topics: topics
                        .into_iter()
                        .map(|(t, partitions)| ListOffsetsTopic { name: ByteString::from(t.to_owned()), partitions, ..Default::default() })
                        .collect(),
                    timeout_ms: self.client.config().connection.request_timeout.as_millis().min(i32::MAX as u128) as i32,
                    ..Default::default()
                };
                let response = match self.client.call_node(leader, request).await {
                    Ok(Some(ResponseKind::ListOffsets(r))) => r,
                    Ok(other) => return Err(Error::UnexpectedResponse(format!("{:?} to ListOffsets", other.map(|o| o.api_key())))),
                    Err(e) if e.is_retriable() => {
                        warn!(leader, error = %e, "ListOffsets failed");
                        again.extend(parts.into_iter().map(|(tp, s, _)| (tp, s)));
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                for (tp, spec, _) in parts {
                    let p = response
                        .topics
                        .iter()
                        .filter(|t| t.name == tp.topic[..])
                        .flat_map(|t| &t.partitions)
                        .find(|p| p.partition_index == tp.partition);
                    match p {
                        None => return Err(Error::UnexpectedResponse(format!("ListOffsets response has no {tp}"))),
                        Some(p) if ErrorCode(p.error_code).is_ok() => {
                            if p.offset >= 0 {
                                out.insert(tp, (p.offset, (p.leader_epoch >= 0).then_some(p.leader_epoch)));
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
            return Err(Error::UnknownTopicOrPartition(format!("ListOffsets for {tp}: no leader answered")));
        }
        Ok(out)
    }

    /// The log start offsets.
    pub async fn beginning_offsets(&self, tps: &[TopicPartition]) -> Result<BTreeMap<TopicPartition, i64>> {
        self.offsets_of(tps, OffsetSpec::Earliest).await
    }

    /// The log end offsets (last stable offsets under read_committed).
    pub async fn end_offsets(&self, tps: &[TopicPartition]) -> Result<BTreeMap<TopicPartition, i64>> {
        self.offsets_of(tps, OffsetSpec::Latest).await
    }

    async fn offsets_of(&self, tps: &[TopicPartition], spec: OffsetSpec) -> Result<BTreeMap<TopicPartition, i64>> {
        let specs: Vec<_> = tps.iter().map(|tp| (tp.clone(), spec)).collect();
        Ok(self.list_offsets(&specs).await?.into_iter().map(|(tp, (o, _))| (tp, o)).collect())
    }

    fn group_id(&self) -> Result<&str> {
        self.config.group_id.as_deref().ok_or_else(|| Error::Config("committing offsets needs a group_id".into()))
    }

    /// The group's coordinator (there is one with a group id).
    fn coordinator(&self) -> Result<&Coordinator> {
        self.coordinator.as_ref().ok_or_else(|| Error::Config("committing offsets needs a group_id".into()))
    }

    /// The group's committed offsets for these partitions (OffsetFetch; unknown ones left out).
    pub async fn committed(&mut self, tps: &[TopicPartition]) -> Result<BTreeMap<TopicPartition, OffsetAndMetadata>> {
        let group = self.group_id()?.to_owned();
        // OffsetFetch v10 names topics by id: a topic just subscribed to may not be in the
        // metadata yet (its id would go out as zero and come back UNKNOWN_TOPIC_ID).
        for tp in tps {
            if self.client.metadata().topics.get(tp.topic.as_str()).map_or(true, |i| i.id == Uuid::ZERO) {
                let _ = self.client.topic(&tp.topic).await;
            }
        }
        let metadata = self.client.metadata();
        let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        for tp in tps {
            by_topic.entry(tp.topic.as_str()).or_default().push(tp.partition);
        }
        // Up to v7 one group at the top level; from v8 a list of groups.
        let build = |v: i16| {
            let mut r = OffsetFetchRequest { require_stable: v >= 7, ..Default::default() };
            if v < 8 {
                r.group_id = ByteString::from(group.clone());
                r.topics = Some(
                    by_topic
                        .iter()
                        .map(|(t, ps)| OffsetFetchRequestTopic { name: ByteString::from(t.to_string()), partition_indexes: ps.iter().copied().collect(), ..Default::default() })
                        .collect(),
                );
            } else {
                r.groups = vec![OffsetFetchRequestGroup {
                    group_id: ByteString::from(group.clone()),
                    topics: Some(
                        by_topic
                            .iter()
                            .map(|(t, ps)| OffsetFetchRequestTopics {
                                name: ByteString::from(t.to_string()),
                                topic_id: metadata.topics.get(*t).map_or(Uuid::ZERO, |i| i.id),
                                partition_indexes: ps.iter().copied().collect(),
                                ..Default::default()
                            })
                            .collect(),
                    ),
                    member_id: None,
                    member_epoch: -1,
                    ..Default::default()
                }];
            }
            kwire::RequestKind::from(r)
        };
        let ids = topic_ids(&metadata);
        let coordinator = self.coordinator()?.clone();
        let unstable_error = || Error::Group(GroupError::UnstableOffsets { group: group.clone() });
        let mut last = None;
        // One loop for the coordinator moving and for unstable offsets.
        let mut retry = Retry::new(Backoff::constant(self.config.retry_backoff), ATTEMPTS);
        while retry.next().await {
            let response = match coordinator.try_call(ApiKey::OffsetFetch, build, None).await {
                Ok(ResponseKind::OffsetFetch(r)) => r,
                Ok(other) => return Err(Error::UnexpectedResponse(format!("{:?} to OffsetFetch", other.api_key()))),
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
                return Err(Error::group(code, None, &group, self.config.group_instance_id.as_deref(), format!("OffsetFetch for group {group}")));
            }
            let mut out = BTreeMap::new();
            let mut unstable = false;
            // (topic, partition, offset, epoch, metadata, error) from either layout (v8+ groups, or earlier).
            let mut rows: Vec<(String, i32, i64, i32, Option<String>, i16)> = Vec::new();
            for g in &response.groups {
                for t in &g.topics {
                    let name = if t.topic_id != Uuid::ZERO { ids.get(&t.topic_id).cloned().unwrap_or_default() } else { t.name.to_string() };
                    for p in &t.partitions {
                        rows.push((name.clone(), p.partition_index, p.committed_offset, p.committed_leader_epoch, p.metadata.as_deref().map(str::to_owned), p.error_code));
                    }
                }
            }
            for t in &response.topics {
                for p in &t.partitions {
                    rows.push((t.name.to_string(), p.partition_index, p.committed_offset, p.committed_leader_epoch, p.metadata.as_deref().map(str::to_owned), p.error_code));
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
                    out.insert(
                        TopicPartition::new(topic, partition),
                        OffsetAndMetadata { offset, leader_epoch: (epoch >= 0).then_some(epoch), metadata: meta },
                    );
                }
            }
            if !unstable {
                return Ok(out);
            }
            last = Some(unstable_error());
        }
        Err(last.unwrap_or_else(unstable_error))
    }

    /// Commits the positions of every assigned partition (what `poll` has returned).
    pub async fn commit(&mut self) -> Result<()> {
        let offsets: BTreeMap<TopicPartition, OffsetAndMetadata> = self
            .subscription
            .partitions
            .iter()
            .filter_map(|(tp, s)| s.position.map(|o| (tp.clone(), OffsetAndMetadata { offset: o, leader_epoch: s.epoch, metadata: None })))
            .collect();
        self.commit_offsets(&offsets).await
    }

    /// Commits these offsets for the group (OffsetCommit), as a member of the current
    /// generation when subscribed.
    pub async fn commit_offsets(&mut self, offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>) -> Result<()> {
        if offsets.is_empty() {
            return Ok(());
        }
        let group = self.group_id()?.to_owned();
        let metadata = self.client.metadata();
        let (generation, member_id) = self.group.as_ref().map_or((-1, String::new()), |g| g.commit_identity());
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
        let instance = self.config.group_instance_id.clone().map(ByteString::from);
        let build = |v: i16| {
            kwire::RequestKind::from(OffsetCommitRequest {
            group_id: ByteString::from(group.clone()),
            generation_id_or_member_epoch: generation,
            member_id: ByteString::from(member_id.clone()),
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
        })
        };
        let code_of = |r: &ResponseKind| match r {
            ResponseKind::OffsetCommit(r) => {
                r.topics.iter().flat_map(|t| &t.partitions).map(|p| p.error_code)
                    .find(|c| matches!(ErrorCode(*c), ErrorCode::COORDINATOR_LOAD_IN_PROGRESS | ErrorCode::COORDINATOR_NOT_AVAILABLE | ErrorCode::NOT_COORDINATOR))
                    .unwrap_or(0)
            }
            _ => 0,
        };
        let response = match self.coordinator()?.call(ApiKey::OffsetCommit, build, code_of, None).await? {
            ResponseKind::OffsetCommit(r) => r,
            other => return Err(Error::UnexpectedResponse(format!("{:?} to OffsetCommit", other.api_key()))),
        };
        for t in &response.topics {
            for p in &t.partitions {
                let code = ErrorCode(p.error_code);
                if !code.is_ok() {
                    let e = Error::group(code, None, &group, self.config.group_instance_id.as_deref(), format!("OffsetCommit for group {group}, topic {}", t.name));
                    // The generation moved on: rejoin before the next poll returns records.
                    if matches!(e, Error::Group(GroupError::RebalanceInProgress { .. } | GroupError::UnknownMember { .. } | GroupError::StaleGeneration { .. })) {
                        if let Some(g) = &self.group {
                            g.request_rejoin(code);
                        }
                    }
                    return Err(e.about(Resource::Topic(t.name.to_string())));
                }
            }
        }
        debug!(group, partitions = offsets.len(), "committed");
        Ok(())
    }

    /// With `enable_auto_commit`, commits positions every `auto_commit_interval`. A failure
    /// is logged, not returned (as Java's auto-commit).
    pub(super) async fn maybe_auto_commit(&mut self) {
        if !self.config.enable_auto_commit || self.config.group_id.is_none() || self.last_auto_commit.elapsed() < self.config.auto_commit_interval {
            return;
        }
        self.last_auto_commit = Instant::now();
        if let Err(e) = self.commit().await {
            warn!(error = %e, "automatic commit failed");
        }
    }
}
