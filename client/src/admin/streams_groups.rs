//! Streams groups (KIP-1071, Kafka 4.1+): described at the group's coordinator
//! (StreamsGroupDescribe), as `kafka-streams-groups.sh --describe`. Listing is
//! [`Admin::list_groups_filtered`] with the `streams` type.

use std::collections::BTreeMap;

use kwire::messages::{streams_group_describe_response, StreamsGroupDescribeRequest};
use kwire::ApiKey;

use super::{bs, result_for, Admin};
use crate::error::{Error, Result};
use crate::future::ClientFuture;

/// One subtopology of a streams group's topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subtopology {
    /// Its id.
    pub id: String,
    /// The topics it reads.
    pub source_topics: Vec<String>,
    /// The repartition topics it writes.
    pub repartition_sink_topics: Vec<String>,
}

/// A streams group member (a Kafka Streams client thread), as the coordinator describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamsMember {
    /// The member id.
    pub member_id: String,
    /// Its epoch.
    pub member_epoch: i32,
    /// The static member's instance id.
    pub instance_id: Option<String>,
    /// Its rack.
    pub rack: Option<String>,
    /// The client id it connected with.
    pub client_id: String,
    /// The host it connected from.
    pub client_host: String,
    /// The Kafka Streams process it belongs to.
    pub process_id: String,
    /// The topology epoch it runs.
    pub topology_epoch: i32,
    /// Its active tasks: by subtopology id, the partitions.
    pub active_tasks: BTreeMap<String, Vec<i32>>,
    /// Its standby tasks.
    pub standby_tasks: BTreeMap<String, Vec<i32>>,
    /// Its warm-up tasks.
    pub warmup_tasks: BTreeMap<String, Vec<i32>>,
}

/// A streams group, as its coordinator describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamsGroupDescription {
    /// The group id.
    pub group_id: String,
    /// The state (`Empty`, `NotReady`, `Assigning`, `Reconciling`, `Stable`, `Dead`).
    pub state: String,
    /// The group epoch.
    pub group_epoch: i32,
    /// The assignment epoch.
    pub assignment_epoch: i32,
    /// The topology's epoch (-1 when the group has no topology yet).
    pub topology_epoch: i32,
    /// The topology's subtopologies.
    pub subtopologies: Vec<Subtopology>,
    /// The server-side task assignor (StreamsGroupDescribe v1+, Kafka 4.3+; `None` before).
    pub assignor: Option<String>,
    /// The members.
    pub members: Vec<StreamsMember>,
    /// The broker coordinating it.
    pub coordinator: i32,
}

fn tasks(ts: &[streams_group_describe_response::TaskIds]) -> BTreeMap<String, Vec<i32>> {
    ts.iter().map(|t| (t.subtopology_id.to_string(), t.partitions.to_vec())).collect()
}

impl Admin {
    /// Describes streams groups, one result per id, in order. A group that does not exist
    /// (or is not a streams group) is a `GROUP_ID_NOT_FOUND` error in its slot; a broker
    /// without streams groups (before 4.1) an [`Error::UnsupportedVersion`] for the whole
    /// call.
    pub fn describe_streams_groups<'a>(&'a self, groups: &'a [&'a str]) -> ClientFuture<'a, Result<Vec<Result<StreamsGroupDescription>>>> {
        ClientFuture::boxed(self.describe_streams_groups_boxed(groups))
    }

    async fn describe_streams_groups_boxed(&self, groups: &[&str]) -> Result<Vec<Result<StreamsGroupDescription>>> {
        let build = |group: &str| StreamsGroupDescribeRequest { group_ids: vec![bs(group)], ..Default::default() };
        let code_of = |r: &kwire::messages::StreamsGroupDescribeResponse| r.groups.first().map_or(0, |g| g.error_code);
        self.per_group(groups, build, code_of, |group, coordinator, r| {
            let g = result_for(&r.groups, ApiKey::StreamsGroupDescribe, group, |g| g.group_id == group)?;
            Error::check(g.error_code, g.error_message.as_deref(), || format!("describe streams group {group}"))?;
            let topology = g.topology.as_ref();
            Ok(StreamsGroupDescription {
                group_id: group.to_owned(),
                state: g.group_state.to_string(),
                group_epoch: g.group_epoch,
                assignment_epoch: g.assignment_epoch,
                topology_epoch: topology.map_or(-1, |t| t.epoch),
                subtopologies: topology
                    .and_then(|t| t.subtopologies.as_ref())
                    .map(|ss| {
                        ss.iter()
                            .map(|s| Subtopology {
                                id: s.subtopology_id.to_string(),
                                source_topics: s.source_topics.iter().map(|t| t.to_string()).collect(),
                                repartition_sink_topics: s.repartition_sink_topics.iter().map(|t| t.to_string()).collect(),
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
                assignor: g.assignor_name.as_deref().map(str::to_owned),
                members: g
                    .members
                    .iter()
                    .map(|m| StreamsMember {
                        member_id: m.member_id.to_string(),
                        member_epoch: m.member_epoch,
                        instance_id: m.instance_id.as_deref().map(str::to_owned),
                        rack: m.rack_id.as_deref().map(str::to_owned),
                        client_id: m.client_id.to_string(),
                        client_host: m.client_host.to_string(),
                        process_id: m.process_id.to_string(),
                        topology_epoch: m.topology_epoch,
                        active_tasks: tasks(&m.assignment.active_tasks),
                        standby_tasks: tasks(&m.assignment.standby_tasks),
                        warmup_tasks: tasks(&m.assignment.warmup_tasks),
                    })
                    .collect(),
                coordinator: self.coordinator_node(coordinator),
            })
        })
        .await
    }
}
