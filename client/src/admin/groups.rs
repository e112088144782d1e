//! Consumer groups, as `kafka-consumer-groups.sh` handles them: list (every broker coordinates
//! some), describe (ConsumerGroupDescribe for KIP-848 groups, DescribeGroups for classic
//! ones), delete, and their committed offsets (list, alter, delete).

use std::collections::{BTreeMap, BTreeSet};

use kwire::messages::{
    leave_group_request::MemberIdentity,
    offset_delete_request::{OffsetDeleteRequestPartition, OffsetDeleteRequestTopic},
    ConsumerGroupDescribeRequest, ConsumerProtocolAssignment, ConsumerProtocolSubscription, DeleteGroupsRequest, DescribeGroupsRequest, LeaveGroupRequest,
    ListGroupsRequest, OffsetDeleteRequest,
};
use kwire::{ApiKey, ApiRequest, ErrorCode, Message};

use super::{bs, result_for, Admin, BACKOFF};
use crate::cluster::BrokerInfo;
use crate::coordinator::Coordinator;
use crate::error::{Error, Resource, Result};
use crate::future::ClientFuture;
use crate::offsets::{self, Committer, OffsetAndMetadata};
use crate::route::Route;
use crate::topic_partition::TopicPartition;

/// A group as ListGroups reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupListing {
    /// The group id.
    pub group_id: String,
    /// The protocol type: `consumer` for consumer groups, empty for a group that only
    /// commits offsets, `connect` and others for other users of the classic protocol.
    pub protocol_type: String,
    /// The state (`Stable`, `Empty`, `PreparingRebalance`, `Dead`, ...; ListGroups v4+).
    pub state: String,
    /// The type: `classic`, `consumer`, `share`, `streams` (ListGroups v5+; empty before).
    pub group_type: String,
    /// The broker coordinating it.
    pub coordinator: i32,
}

/// Which groups [`Admin::list_groups_filtered`] lists: any state and any type when empty.
/// States and types are Kafka's names, matched without regard to case (`Stable`, `Empty`;
/// `classic`, `consumer`, `share`, `streams`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupFilter {
    /// The states to list.
    pub states: Vec<String>,
    /// The types to list.
    pub types: Vec<String>,
}

impl GroupFilter {
    /// Groups in these states.
    pub fn states(states: &[&str]) -> GroupFilter {
        GroupFilter { states: states.iter().map(|s| s.to_string()).collect(), types: Vec::new() }
    }

    /// Groups of these types.
    pub fn types(types: &[&str]) -> GroupFilter {
        GroupFilter { states: Vec::new(), types: types.iter().map(|s| s.to_string()).collect() }
    }
}

/// A consumer group's lag in one partition (`kafka-consumer-groups.sh --describe`'s LAG).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionLag {
    /// The group's committed offset.
    pub committed: i64,
    /// The partition's log end offset (the last stable offset for `read_committed`).
    pub log_end: i64,
    /// `log_end - committed`, never below 0.
    pub lag: i64,
}

/// A group member, as the coordinator describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberDescription {
    /// The member id.
    pub member_id: String,
    /// The static member's instance id.
    pub instance_id: Option<String>,
    /// The client id it connected with.
    pub client_id: String,
    /// The host it connected from.
    pub client_host: String,
    /// Its partitions (for consumer groups).
    pub assignment: Vec<TopicPartition>,
    /// Its rack (`client.rack`): from the KIP-848 description, or a classic consumer group
    /// member's subscription (v3+).
    pub rack: Option<String>,
}

/// A group, as the coordinator describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDescription {
    /// The group id.
    pub group_id: String,
    /// `classic` (DescribeGroups) or `consumer` (KIP-848, ConsumerGroupDescribe).
    pub group_type: String,
    /// The protocol type (`consumer` for classic consumer groups; empty for KIP-848 ones).
    pub protocol_type: String,
    /// The state (`Stable`, `Empty`, ...).
    pub state: String,
    /// The assignor: the classic group's protocol (`range`, `cooperative-sticky`, ...) or the
    /// KIP-848 group's server-side assignor (`uniform`, `range`).
    pub assignor: String,
    /// The members.
    pub members: Vec<MemberDescription>,
    /// The group epoch (KIP-848 groups; -1 for classic ones).
    pub epoch: i32,
    /// The broker coordinating it.
    pub coordinator: i32,
}

impl Admin {
    pub(super) fn coordinator(&self, group: &str) -> Coordinator {
        Coordinator::new(self.client.clone(), group, BACKOFF)
    }

    /// One request per group at its coordinator (retried while the coordinator moves or
    /// loads; `code_of` reads the group's error in the response), each response `read` into
    /// that group's result. A broker without the api fails the whole call.
    pub(super) async fn per_group<R: ApiRequest, T>(
        &self,
        groups: &[&str],
        build: impl Fn(&str) -> R,
        code_of: impl Fn(&R::Response) -> i16,
        read: impl Fn(&str, &Coordinator, &R::Response) -> Result<T>,
    ) -> Result<Vec<Result<T>>> {
        let mut out = Vec::with_capacity(groups.len());
        for group in groups {
            let coordinator = self.coordinator(group);
            let result = match coordinator.send(|_| build(group), &code_of).await {
                Ok(response) => read(group, &coordinator, &response),
                Err(e @ Error::UnsupportedVersion { .. }) => return Err(e),
                Err(e) => Err(e),
            };
            out.push(result.map_err(|e| e.about(Resource::Group(group.to_string()))));
        }
        Ok(out)
    }

    /// The node id of `group`'s coordinator, from the address FindCoordinator gave.
    pub(super) fn coordinator_node(&self, coordinator: &Coordinator) -> i32 {
        let addr = coordinator.address_cached();
        self.client.metadata().brokers.values().find(|b| Some(b.addr()) == addr).map_or(-1, |b| b.id)
    }

    /// Every group of every broker (ListGroups to each: each lists the groups it
    /// coordinates), sorted by id.
    pub fn list_groups(&self) -> ClientFuture<'_, Result<Vec<GroupListing>>> {
        ClientFuture::boxed(self.list_groups_boxed())
    }

    async fn list_groups_boxed(&self) -> Result<Vec<GroupListing>> {
        self.list_groups_filtered(&GroupFilter::default()).await
    }

    /// The groups in these states and of these types, as Java's `listGroups` with
    /// `inStates`/`withTypes` (the broker filters: ListGroups v4+ for states, v5+ for types;
    /// an older broker asked to filter is an [`Error::UnsupportedVersion`], as in Java).
    ///
    /// ```no_run
    /// # async fn run(admin: kwire_client::Admin) -> kwire_client::Result<()> {
    /// use kwire_client::GroupFilter;
    ///
    /// let share = admin.list_groups_filtered(&GroupFilter::types(&["share"])).await?;
    /// let empty = admin.list_groups_filtered(&GroupFilter::states(&["Empty"])).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn list_groups_filtered<'a>(&'a self, filter: &'a GroupFilter) -> ClientFuture<'a, Result<Vec<GroupListing>>> {
        ClientFuture::boxed(self.list_groups_filtered_boxed(filter))
    }

    async fn list_groups_filtered_boxed(&self, filter: &GroupFilter) -> Result<Vec<GroupListing>> {
        let brokers: Vec<BrokerInfo> = self.client.refresh_metadata().await?.brokers.values().cloned().collect();
        let mut out = Vec::new();
        for b in brokers {
            let version = self.client.version_at::<ListGroupsRequest>(Route::Node(b.id)).await?;
            let needs = if !filter.types.is_empty() {
                5
            } else if !filter.states.is_empty() {
                4
            } else {
                0
            };
            if version < needs {
                return Err(Error::UnsupportedVersion {
                    api: ApiKey::ListGroups,
                    reason: format!("broker {} has ListGroups v{version}: filtering by {} needs v{needs}", b.id, if needs == 5 { "type" } else { "state" }),
                });
            }
            let request = ListGroupsRequest {
                states_filter: filter.states.iter().map(|s| bs(s)).collect(),
                types_filter: filter.types.iter().map(|s| bs(s)).collect(),
                ..Default::default()
            };
            let r = self.client.send(Route::Node(b.id), request).await?;
            Error::check(r.error_code, None, || format!("ListGroups at broker {}", b.id))?;
            out.extend(r.groups.iter().map(|g| GroupListing {
                group_id: g.group_id.to_string(),
                protocol_type: g.protocol_type.to_string(),
                state: g.group_state.to_string(),
                group_type: g.group_type.to_string(),
                coordinator: b.id,
            }));
        }
        out.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        Ok(out)
    }

    /// Describes groups, one result per id. A KIP-848 consumer group is described by
    /// ConsumerGroupDescribe, a classic one by DescribeGroups (as Java's admin client: the
    /// first, then the second when the group turns out not to be a consumer group). A group
    /// that does not exist is described as `Dead` with no members, as Kafka does.
    pub fn describe_groups<'a>(&'a self, groups: &'a [&'a str]) -> ClientFuture<'a, Result<Vec<Result<GroupDescription>>>> {
        ClientFuture::boxed(self.describe_groups_boxed(groups))
    }

    async fn describe_groups_boxed(&self, groups: &[&str]) -> Result<Vec<Result<GroupDescription>>> {
        let mut out = Vec::with_capacity(groups.len());
        for group in groups {
            out.push(self.describe_group(group).await);
        }
        Ok(out)
    }

    async fn describe_group(&self, group: &str) -> Result<GroupDescription> {
        let coordinator = self.coordinator(group);
        let new_protocol = {
            let build = |_| ConsumerGroupDescribeRequest { group_ids: vec![bs(group)], ..Default::default() };
            let code_of = |r: &kwire::messages::ConsumerGroupDescribeResponse| r.groups.first().map_or(0, |g| g.error_code);
            match coordinator.send(build, code_of).await {
                Ok(r) => Some(r),
                // A broker before KIP-848 (3.x without the new coordinator).
                Err(Error::UnsupportedVersion { .. }) => None,
                Err(e) => return Err(e),
            }
        };
        if let Some(response) = new_protocol {
            let r = &response;
            let g = result_for(&r.groups, ApiKey::ConsumerGroupDescribe, group, |g| g.group_id == group)?;
            let code = ErrorCode(g.error_code);
            // GROUP_ID_NOT_FOUND: no consumer group of that id, perhaps a classic one.
            if code != ErrorCode::GROUP_ID_NOT_FOUND {
                Error::check(g.error_code, g.error_message.as_deref(), || format!("describe group {group}"))
                    .map_err(|e| e.about(Resource::Group(group.to_owned())))?;
                return Ok(GroupDescription {
                    group_id: group.to_owned(),
                    group_type: "consumer".into(),
                    protocol_type: String::new(),
                    state: g.group_state.to_string(),
                    assignor: g.assignor_name.to_string(),
                    members: g
                        .members
                        .iter()
                        .map(|m| MemberDescription {
                            member_id: m.member_id.to_string(),
                            instance_id: m.instance_id.as_deref().map(str::to_owned),
                            client_id: m.client_id.to_string(),
                            client_host: m.client_host.to_string(),
                            rack: m.rack_id.as_deref().map(str::to_owned),
                            assignment: m
                                .assignment
                                .topic_partitions
                                .iter()
                                .flat_map(|t| t.partitions.iter().map(|p| TopicPartition::new(t.topic_name.to_string(), *p)))
                                .collect(),
                        })
                        .collect(),
                    epoch: g.group_epoch,
                    coordinator: self.coordinator_node(&coordinator),
                });
            }
        }
        let build = |_| DescribeGroupsRequest { groups: vec![bs(group)], ..Default::default() };
        let code_of = |r: &kwire::messages::DescribeGroupsResponse| r.groups.first().map_or(0, |g| g.error_code);
        let response = coordinator.send(build, code_of).await?;
        let r = &response;
        let g = result_for(&r.groups, ApiKey::DescribeGroups, group, |g| g.group_id == group)?;
        Error::check(g.error_code, g.error_message.as_deref(), || format!("describe group {group}")).map_err(|e| e.about(Resource::Group(group.to_owned())))?;
        let consumer = g.protocol_type == "consumer";
        Ok(GroupDescription {
            group_id: group.to_owned(),
            group_type: "classic".into(),
            protocol_type: g.protocol_type.to_string(),
            state: g.group_state.to_string(),
            assignor: g.protocol_data.to_string(),
            members: g
                .members
                .iter()
                .map(|m| MemberDescription {
                    member_id: m.member_id.to_string(),
                    instance_id: m.group_instance_id.as_deref().map(str::to_owned),
                    client_id: m.client_id.to_string(),
                    client_host: m.client_host.to_string(),
                    // A consumer group's assignments are ConsumerProtocolAssignments; what
                    // does not read as one (another client's bytes) is left out.
                    assignment: if consumer { assigned_partitions(&m.member_assignment) } else { Vec::new() },
                    rack: if consumer { subscription_rack(&m.member_metadata) } else { None },
                })
                .collect(),
            epoch: -1,
            coordinator: self.coordinator_node(&coordinator),
        })
    }

    /// Deletes groups (they must be empty), one result per id.
    pub fn delete_groups<'a>(&'a self, groups: &'a [&'a str]) -> ClientFuture<'a, Result<Vec<Result<()>>>> {
        ClientFuture::boxed(self.delete_groups_boxed(groups))
    }

    async fn delete_groups_boxed(&self, groups: &[&str]) -> Result<Vec<Result<()>>> {
        let mut out = Vec::with_capacity(groups.len());
        for group in groups {
            let coordinator = self.coordinator(group);
            let build = |_| DeleteGroupsRequest { groups_names: vec![bs(group)], ..Default::default() };
            let code_of = |r: &kwire::messages::DeleteGroupsResponse| r.results.first().map_or(0, |g| g.error_code);
            let result = match coordinator.send(build, code_of).await {
                Ok(r) => result_for(&r.results, ApiKey::DeleteGroups, group, |g| g.group_id == *group)
                    .and_then(|g| Error::check(g.error_code, g.error_message.as_deref(), || format!("delete group {group}")))
                    .map_err(|e| e.about(Resource::Group(group.to_string()))),
                Err(e) => Err(e),
            };
            out.push(result);
        }
        Ok(out)
    }

    /// A consumer group's lag per partition it has committed: its committed offset against
    /// the partition's end (ListOffsets `Latest` at each leader; with `read_committed` the
    /// last stable offset), as Java's `listConsumerGroupOffsets` plus `listOffsets` and
    /// `kafka-consumer-groups.sh --describe`. A partition whose end cannot be read (deleted
    /// since) is left out.
    ///
    /// ```no_run
    /// # async fn run(admin: kwire_client::Admin) -> kwire_client::Result<()> {
    /// for (tp, l) in admin.consumer_group_lag("billing", false).await? {
    ///     println!("{tp}: {} behind", l.lag);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn consumer_group_lag<'a>(&'a self, group: &'a str, read_committed: bool) -> ClientFuture<'a, Result<BTreeMap<TopicPartition, PartitionLag>>> {
        ClientFuture::boxed(self.consumer_group_lag_boxed(group, read_committed))
    }

    async fn consumer_group_lag_boxed(&self, group: &str, read_committed: bool) -> Result<BTreeMap<TopicPartition, PartitionLag>> {
        let committed = self.list_group_offsets(group, None).await?;
        let specs: Vec<(TopicPartition, crate::offsets::OffsetSpec)> = committed.keys().map(|tp| (tp.clone(), crate::offsets::OffsetSpec::Latest)).collect();
        let ends = self.list_offsets(&specs, read_committed).await?;
        Ok(committed
            .into_iter()
            .filter_map(|(tp, c)| {
                let end = ends.get(&tp)?.offset;
                Some((tp, PartitionLag { committed: c.offset, log_end: end, lag: (end - c.offset).max(0) }))
            })
            .collect())
    }

    /// The group's committed offsets: for these partitions, or every partition it has
    /// committed when `partitions` is `None`. Partitions without a committed offset are left
    /// out.
    pub fn list_group_offsets<'a>(
        &'a self,
        group: &'a str,
        partitions: Option<&'a [TopicPartition]>,
    ) -> ClientFuture<'a, Result<BTreeMap<TopicPartition, OffsetAndMetadata>>> {
        ClientFuture::boxed(self.list_group_offsets_boxed(group, partitions))
    }

    async fn list_group_offsets_boxed(&self, group: &str, partitions: Option<&[TopicPartition]>) -> Result<BTreeMap<TopicPartition, OffsetAndMetadata>> {
        offsets::committed(&self.coordinator(group), group, partitions, None, BACKOFF).await
    }

    /// Sets the group's committed offsets (as `kafka-consumer-groups.sh --reset-offsets`
    /// does). The group must have no members: the coordinator refuses a commit from outside
    /// a live generation (UNKNOWN_MEMBER_ID).
    pub fn alter_group_offsets<'a>(&'a self, group: &'a str, offsets: &'a BTreeMap<TopicPartition, OffsetAndMetadata>) -> ClientFuture<'a, Result<()>> {
        ClientFuture::boxed(self.alter_group_offsets_boxed(group, offsets))
    }

    async fn alter_group_offsets_boxed(&self, group: &str, offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>) -> Result<()> {
        // Topic ids for OffsetCommit v10.
        for topic in offsets.keys().map(|tp| tp.topic.as_str()).collect::<BTreeSet<_>>() {
            self.client.topic(topic).await?;
        }
        offsets::commit(&self.coordinator(group), group, &Committer::outsider(), offsets).await
    }

    /// Deletes the group's committed offsets of these partitions (OffsetDelete); the group
    /// must not be subscribed to their topics. One result per partition.
    pub fn delete_group_offsets<'a>(&'a self, group: &'a str, partitions: &'a [TopicPartition]) -> ClientFuture<'a, Result<Vec<Result<()>>>> {
        ClientFuture::boxed(self.delete_group_offsets_boxed(group, partitions))
    }

    async fn delete_group_offsets_boxed(&self, group: &str, partitions: &[TopicPartition]) -> Result<Vec<Result<()>>> {
        let by_topic = crate::topic_partition::by_topic(partitions);
        // Every field is set today; the defaults keep it building against specs that add some.
        #[allow(clippy::needless_update)]
        let request = OffsetDeleteRequest {
            group_id: bs(group),
            topics: by_topic
                .iter()
                .map(|(t, ps)| OffsetDeleteRequestTopic {
                    name: bs(t),
                    partitions: ps.iter().map(|p| OffsetDeleteRequestPartition { partition_index: *p, ..Default::default() }).collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let code_of = |r: &kwire::messages::OffsetDeleteResponse| r.error_code;
        let response = self.coordinator(group).send(|_| request.clone(), code_of).await?;
        let r = &response;
        Error::check(r.error_code, None, || format!("delete offsets of group {group}")).map_err(|e| e.about(Resource::Group(group.to_owned())))?;
        Ok(partitions
            .iter()
            .map(|tp| {
                let p = r.topics.iter().filter(|t| t.name == tp.topic[..]).flat_map(|t| &t.partitions).find(|p| p.partition_index == tp.partition);
                match p {
                    Some(p) => Error::check(p.error_code, None, || format!("delete offset of {tp} for group {group}")),
                    None => Err(Error::missing(ApiKey::OffsetDelete, tp)),
                }
            })
            .collect())
    }

    /// Removes static members (by instance id) from a classic group, as Java's
    /// `removeMembersFromConsumerGroup` (LeaveGroup v3+). One result per instance id.
    pub fn remove_group_members<'a>(&'a self, group: &'a str, instance_ids: &'a [&'a str]) -> ClientFuture<'a, Result<Vec<Result<()>>>> {
        ClientFuture::boxed(self.remove_group_members_boxed(group, instance_ids))
    }

    async fn remove_group_members_boxed(&self, group: &str, instance_ids: &[&str]) -> Result<Vec<Result<()>>> {
        let request = LeaveGroupRequest {
            group_id: bs(group),
            members: instance_ids
                .iter()
                .map(|id| MemberIdentity { member_id: bs(""), group_instance_id: Some(bs(id)), reason: Some(bs("removed by an admin")), ..Default::default() })
                .collect(),
            ..Default::default()
        };
        let code_of = |r: &kwire::messages::LeaveGroupResponse| r.error_code;
        let response = self.coordinator(group).send(|_| request.clone(), code_of).await?;
        let r = &response;
        Error::check(r.error_code, None, || format!("remove members of group {group}")).map_err(|e| e.about(Resource::Group(group.to_owned())))?;
        Ok(instance_ids
            .iter()
            .map(|id| {
                let m = result_for(&r.members, ApiKey::LeaveGroup, id, |m| m.group_instance_id.as_deref() == Some(*id))?;
                Error::check(m.error_code, None, || format!("remove member {id} of group {group}"))
            })
            .collect())
    }
}

/// The partitions in a classic consumer group member's assignment (a version-prefixed
/// ConsumerProtocolAssignment); none when the bytes do not read as one.
/// The rack in a classic consumer group member's `ConsumerProtocolSubscription` (v3+), if any.
fn subscription_rack(raw: &kwire::Bytes) -> Option<String> {
    let (_, s) = ConsumerProtocolSubscription::from_version_prefixed(&mut raw.clone()).ok()?;
    s.rack_id.as_deref().map(str::to_owned)
}

fn assigned_partitions(raw: &kwire::Bytes) -> Vec<TopicPartition> {
    match ConsumerProtocolAssignment::from_version_prefixed(&mut raw.clone()) {
        Ok((_, a)) => a.assigned_partitions.iter().flat_map(|t| t.partitions.iter().map(|p| TopicPartition::new(t.topic.to_string(), *p))).collect(),
        Err(_) => Vec::new(),
    }
}
