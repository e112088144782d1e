//! Share groups (KIP-932, Kafka 4.x), as `kafka-share-groups.sh` handles them: describe
//! (ShareGroupDescribe) and their start offsets (DescribeShareGroupOffsets,
//! AlterShareGroupOffsets, DeleteShareGroupOffsets), each at the group's coordinator. Listing
//! is [`Admin::list_groups_filtered`] with the `share` type.

use std::collections::BTreeMap;

use kwire::messages::{
    alter_share_group_offsets_request::{AlterShareGroupOffsetsRequestPartition, AlterShareGroupOffsetsRequestTopic},
    delete_share_group_offsets_request::DeleteShareGroupOffsetsRequestTopic,
    describe_share_group_offsets_request::{DescribeShareGroupOffsetsRequestGroup, DescribeShareGroupOffsetsRequestTopic},
    AlterShareGroupOffsetsRequest, DeleteShareGroupOffsetsRequest, DescribeShareGroupOffsetsRequest, ShareGroupDescribeRequest,
};
use kwire::ApiKey;

use super::{bs, result_for, Admin, MemberDescription};
use crate::error::{Error, Resource, Result};
use crate::future::ClientFuture;
use crate::topic_partition::TopicPartition;

/// A share group, as its coordinator describes it (`kafka-share-groups.sh --describe`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareGroupDescription {
    /// The group id.
    pub group_id: String,
    /// The state (`Empty`, `Stable`, `Dead`, ...).
    pub state: String,
    /// The group epoch.
    pub group_epoch: i32,
    /// The assignment epoch.
    pub assignment_epoch: i32,
    /// The server-side assignor (`simple`).
    pub assignor: String,
    /// The members, with the partitions each is assigned.
    pub members: Vec<MemberDescription>,
    /// The broker coordinating it.
    pub coordinator: i32,
}

/// A share group's position in one partition (DescribeShareGroupOffsets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareOffset {
    /// The share-partition start offset: records before it are delivered and done.
    pub start_offset: i64,
    /// The leader epoch it was recorded at (-1 unknown).
    pub leader_epoch: i32,
    /// How many records from the start offset are not yet acknowledged (v1+, Kafka 4.2+;
    /// `None` from brokers that do not say).
    pub lag: Option<i64>,
}

impl Admin {
    /// Describes share groups, one result per id, in order. A group that does not exist (or
    /// is not a share group) is a `GROUP_ID_NOT_FOUND` error in its slot; a broker without
    /// share groups (3.x) an [`Error::UnsupportedVersion`] for the whole call.
    ///
    /// ```no_run
    /// # async fn run(admin: kwire_client::Admin) -> kwire_client::Result<()> {
    /// for d in admin.describe_share_groups(&["billing"]).await? {
    ///     let d = d?;
    ///     println!("{} {} members", d.state, d.members.len());
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn describe_share_groups<'a>(&'a self, groups: &'a [&'a str]) -> ClientFuture<'a, Result<Vec<Result<ShareGroupDescription>>>> {
        ClientFuture::boxed(self.describe_share_groups_boxed(groups))
    }

    async fn describe_share_groups_boxed(&self, groups: &[&str]) -> Result<Vec<Result<ShareGroupDescription>>> {
        let build = |group: &str| ShareGroupDescribeRequest { group_ids: vec![bs(group)], ..Default::default() };
        let code_of = |r: &kwire::messages::ShareGroupDescribeResponse| r.groups.first().map_or(0, |g| g.error_code);
        self.per_group(groups, build, code_of, |group, coordinator, r| {
            let g = result_for(&r.groups, ApiKey::ShareGroupDescribe, group, |g| g.group_id == group)?;
            Error::check(g.error_code, g.error_message.as_deref(), || format!("describe share group {group}"))?;
            Ok(ShareGroupDescription {
                group_id: group.to_owned(),
                state: g.group_state.to_string(),
                group_epoch: g.group_epoch,
                assignment_epoch: g.assignment_epoch,
                assignor: g.assignor_name.to_string(),
                members: g
                    .members
                    .iter()
                    .map(|m| MemberDescription {
                        member_id: m.member_id.to_string(),
                        instance_id: None,
                        client_id: m.client_id.to_string(),
                        client_host: m.client_host.to_string(),
                        assignment: m
                            .assignment
                            .topic_partitions
                            .iter()
                            .flat_map(|t| t.partitions.iter().map(|p| TopicPartition::new(t.topic_name.to_string(), *p)))
                            .collect(),
                        rack: m.rack_id.as_deref().map(str::to_owned),
                    })
                    .collect(),
                coordinator: self.coordinator_node(coordinator),
            })
        })
        .await
    }

    /// A share group's start offsets (Java's `listShareGroupOffsets`): for these partitions,
    /// or every partition the group has state for when `partitions` is `None`. Per partition
    /// the offset or the broker's error for it; a partition the group never read is absent.
    pub fn list_share_group_offsets<'a>(
        &'a self,
        group: &'a str,
        partitions: Option<&'a [TopicPartition]>,
    ) -> ClientFuture<'a, Result<BTreeMap<TopicPartition, Result<ShareOffset>>>> {
        ClientFuture::boxed(self.list_share_group_offsets_boxed(group, partitions))
    }

    async fn list_share_group_offsets_boxed(
        &self,
        group: &str,
        partitions: Option<&[TopicPartition]>,
    ) -> Result<BTreeMap<TopicPartition, Result<ShareOffset>>> {
        let topics = partitions.map(|tps| {
            crate::topic_partition::by_topic(tps.iter())
                .into_iter()
                .map(|(t, ps)| DescribeShareGroupOffsetsRequestTopic { topic_name: bs(t), partitions: ps.into_iter().collect(), ..Default::default() })
                .collect()
        });
        let request = DescribeShareGroupOffsetsRequest {
            groups: vec![DescribeShareGroupOffsetsRequestGroup { group_id: bs(group), topics, ..Default::default() }],
            ..Default::default()
        };
        let coordinator = self.coordinator(group);
        let code_of = |r: &kwire::messages::DescribeShareGroupOffsetsResponse| r.groups.first().map_or(0, |g| g.error_code);
        // The version used: the lag is there from v1 (a v0 answer holds the default).
        // An atomic, not a Cell: the future is Send.
        let version = std::sync::atomic::AtomicI16::new(0);
        let build = |v| {
            version.store(v, std::sync::atomic::Ordering::Relaxed);
            request.clone()
        };
        let response = coordinator.send(build, code_of).await?;
        let r = &response;
        let g = result_for(&r.groups, ApiKey::DescribeShareGroupOffsets, group, |g| g.group_id == group)?;
        Error::check(g.error_code, g.error_message.as_deref(), || format!("list offsets of share group {group}"))
            .map_err(|e| e.about(Resource::Group(group.to_owned())))?;
        let lag_known = version.load(std::sync::atomic::Ordering::Relaxed) >= 1;
        Ok(g.topics
            .iter()
            .flat_map(|t| {
                t.partitions.iter().map(move |p| {
                    let tp = TopicPartition::new(t.topic_name.to_string(), p.partition_index);
                    let offset = Error::check(p.error_code, p.error_message.as_deref(), || format!("share group {group} offset of {tp}")).map(|()| {
                        ShareOffset { start_offset: p.start_offset, leader_epoch: p.leader_epoch, lag: Some(p.lag).filter(|l| lag_known && *l >= 0) }
                    });
                    (tp, offset)
                })
            })
            .collect())
    }

    /// Sets a share group's start offsets (the group must be empty: no members), as
    /// `kafka-share-groups.sh --reset-offsets`; per partition the outcome.
    pub fn alter_share_group_offsets<'a>(
        &'a self,
        group: &'a str,
        offsets: &'a BTreeMap<TopicPartition, i64>,
    ) -> ClientFuture<'a, Result<BTreeMap<TopicPartition, Result<()>>>> {
        ClientFuture::boxed(self.alter_share_group_offsets_boxed(group, offsets))
    }

    async fn alter_share_group_offsets_boxed(&self, group: &str, offsets: &BTreeMap<TopicPartition, i64>) -> Result<BTreeMap<TopicPartition, Result<()>>> {
        let mut topics: BTreeMap<&str, Vec<AlterShareGroupOffsetsRequestPartition>> = BTreeMap::new();
        for (tp, offset) in offsets {
            topics.entry(tp.topic.as_str()).or_default().push(AlterShareGroupOffsetsRequestPartition {
                partition_index: tp.partition,
                start_offset: *offset,
                ..Default::default()
            });
        }
        let request = AlterShareGroupOffsetsRequest {
            group_id: bs(group),
            topics: topics
                .into_iter()
                .map(|(t, partitions)| AlterShareGroupOffsetsRequestTopic { topic_name: bs(t), partitions, ..Default::default() })
                .collect(),
            ..Default::default()
        };
        let code_of = |r: &kwire::messages::AlterShareGroupOffsetsResponse| r.error_code;
        let response = self.coordinator(group).send(|_| request.clone(), code_of).await?;
        let r = &response;
        Error::check(r.error_code, r.error_message.as_deref(), || format!("alter offsets of share group {group}"))
            .map_err(|e| e.about(Resource::Group(group.to_owned())))?;
        Ok(offsets
            .keys()
            .map(|tp| {
                let p = r.responses.iter().filter(|t| t.topic_name == tp.topic[..]).flat_map(|t| &t.partitions).find(|p| p.partition_index == tp.partition);
                let result = match p {
                    Some(p) => Error::check(p.error_code, p.error_message.as_deref(), || format!("alter share group {group} offset of {tp}")),
                    None => Err(Error::missing(ApiKey::AlterShareGroupOffsets, tp)),
                };
                (tp.clone(), result)
            })
            .collect())
    }

    /// Deletes a share group's state for whole topics (the group must be empty), as
    /// `kafka-share-groups.sh --delete-offsets`; per topic the outcome, in order.
    pub fn delete_share_group_offsets<'a>(&'a self, group: &'a str, topics: &'a [&'a str]) -> ClientFuture<'a, Result<Vec<Result<()>>>> {
        ClientFuture::boxed(self.delete_share_group_offsets_boxed(group, topics))
    }

    async fn delete_share_group_offsets_boxed(&self, group: &str, topics: &[&str]) -> Result<Vec<Result<()>>> {
        let request = DeleteShareGroupOffsetsRequest {
            group_id: bs(group),
            topics: topics.iter().map(|t| DeleteShareGroupOffsetsRequestTopic { topic_name: bs(t), ..Default::default() }).collect(),
            ..Default::default()
        };
        let code_of = |r: &kwire::messages::DeleteShareGroupOffsetsResponse| r.error_code;
        let response = self.coordinator(group).send(|_| request.clone(), code_of).await?;
        let r = &response;
        Error::check(r.error_code, r.error_message.as_deref(), || format!("delete offsets of share group {group}"))
            .map_err(|e| e.about(Resource::Group(group.to_owned())))?;
        Ok(topics
            .iter()
            .map(|t| {
                let x = result_for(&r.responses, ApiKey::DeleteShareGroupOffsets, t, |x| x.topic_name == t[..])?;
                Error::check(x.error_code, x.error_message.as_deref(), || format!("delete share group {group} offsets of {t}"))
            })
            .collect())
    }
}
