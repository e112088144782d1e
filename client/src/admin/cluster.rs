//! The cluster: brokers and controller, features, the KRaft quorum, log directories,
//! partition reassignments, leader elections.

use std::collections::BTreeMap;

use kwire::messages::{
    add_raft_voter_request,
    alter_partition_reassignments_request::{ReassignablePartition, ReassignableTopic},
    alter_replica_log_dirs_request::{AlterReplicaLogDir, AlterReplicaLogDirTopic},
    describe_quorum_request, describe_quorum_response, elect_leaders_request,
    list_partition_reassignments_request::ListPartitionReassignmentsTopics,
    update_features_request::FeatureUpdateKey,
    AddRaftVoterRequest, AlterPartitionReassignmentsRequest, AlterReplicaLogDirsRequest, ApiVersionsRequest, DescribeClusterRequest, DescribeLogDirsRequest,
    DescribeQuorumRequest, ElectLeadersRequest, ListPartitionReassignmentsRequest, RemoveRaftVoterRequest, UnregisterBrokerRequest,
    UnregisterControllerRequest, UpdateFeaturesRequest,
};
use kwire::{ApiKey, ErrorCode, Uuid};

use super::{bs, Admin};
use crate::cluster::BrokerInfo;
use crate::error::{Error, Result};
use crate::future::ClientFuture;
use crate::route::Route;
use crate::topic_partition::TopicPartition;

/// The cluster as DescribeCluster (or Metadata) sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterDescription {
    /// The cluster id.
    pub cluster_id: String,
    /// The controller (a broker in KRaft).
    pub controller_id: i32,
    /// The brokers.
    pub brokers: Vec<BrokerInfo>,
}

impl Admin {
    /// The cluster id, controller and brokers (DescribeCluster where the broker has it, else
    /// Metadata).
    pub fn describe_cluster(&self) -> ClientFuture<'_, Result<ClusterDescription>> {
        ClientFuture::boxed(self.describe_cluster_boxed())
    }

    async fn describe_cluster_boxed(&self) -> Result<ClusterDescription> {
        let m = self.client.metadata();
        let any = m.brokers.values().next().map(BrokerInfo::addr).or_else(|| self.client.config().bootstrap.first().cloned()).unwrap_or_default();
        let conn = self.client.connection(&any).await?;
        if conn.version(ApiKey::DescribeCluster).is_err() {
            let m = self.client.refresh_metadata().await?;
            return Ok(ClusterDescription {
                cluster_id: m.cluster_id.clone().unwrap_or_default(),
                controller_id: m.controller_id,
                brokers: m.brokers.values().cloned().collect(),
            });
        }
        let response = conn.send(DescribeClusterRequest { endpoint_type: 1, ..Default::default() }).await?;
        let r = response;
        Error::check(r.error_code, r.error_message.as_deref(), || "describe cluster".into())?;
        Ok(ClusterDescription {
            cluster_id: r.cluster_id.to_string(),
            controller_id: r.controller_id,
            brokers: r
                .brokers
                .iter()
                .map(|b| BrokerInfo { id: b.broker_id, host: b.host.to_string(), port: b.port, rack: b.rack.as_ref().map(|r| r.to_string()) })
                .collect(),
        })
    }
}

/// A feature's levels (KIP-584): what the broker supports and what the cluster finalized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FeatureLevel {
    /// The lowest level the broker supports.
    pub min_supported: i16,
    /// The highest level the broker supports.
    pub max_supported: i16,
    /// The cluster's finalized level (`None`: not finalized, i.e. level 0).
    pub finalized: Option<i16>,
}

/// The cluster's features, as ApiVersions (v3+) reports them (`kafka-features.sh describe`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Features {
    /// By feature name (`metadata.version`, `transaction.version`, `group.version`, ...).
    pub features: BTreeMap<String, FeatureLevel>,
    /// The epoch of the finalized levels (-1 when unknown).
    pub finalized_epoch: i64,
}

/// One replica of the KRaft metadata quorum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumReplica {
    /// The node id.
    pub replica_id: i32,
    /// Its log end offset.
    pub log_end_offset: i64,
    /// When it last fetched (ms since the epoch; -1 unknown).
    pub last_fetch_timestamp: i64,
    /// When it was last caught up (ms since the epoch; -1 unknown).
    pub last_caught_up_timestamp: i64,
}

/// The KRaft metadata quorum (`kafka-metadata-quorum.sh describe`; DescribeQuorum).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumDescription {
    /// The active controller.
    pub leader_id: i32,
    /// Its epoch.
    pub leader_epoch: i32,
    /// The quorum's high watermark.
    pub high_watermark: i64,
    /// The voters.
    pub voters: Vec<QuorumReplica>,
    /// The observers (brokers).
    pub observers: Vec<QuorumReplica>,
}

/// One replica in a log directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogDirReplica {
    /// The partition.
    pub partition: TopicPartition,
    /// Its size on disk in bytes.
    pub size: i64,
    /// How far it is behind the leader (or the current replica, for a future one).
    pub offset_lag: i64,
    /// Whether it is a future replica being moved into this directory.
    pub is_future: bool,
}

/// A broker's log directory (`kafka-log-dirs.sh`; DescribeLogDirs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogDir {
    /// The broker.
    pub broker: i32,
    /// The directory.
    pub path: String,
    /// Its replicas.
    pub replicas: Vec<LogDirReplica>,
    /// The volume's size in bytes (-1 unknown).
    pub total_bytes: i64,
    /// The volume's usable bytes (-1 unknown).
    pub usable_bytes: i64,
}

/// Where one replica is ([`Admin::describe_replica_log_dirs`]; Java's `ReplicaLogDirInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReplicaLogDirInfo {
    /// The directory holding it (`None`: the broker does not hold it).
    pub current_dir: Option<String>,
    /// Its offset lag there (0 for a leader).
    pub current_offset_lag: i64,
    /// The directory it is moving to, while an AlterReplicaLogDirs move runs.
    pub future_dir: Option<String>,
    /// How far the future replica is behind the current one.
    pub future_offset_lag: i64,
}

/// A partition being reassigned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reassignment {
    /// The replicas now.
    pub replicas: Vec<i32>,
    /// Those being added.
    pub adding: Vec<i32>,
    /// Those being removed.
    pub removing: Vec<i32>,
}

impl Admin {
    /// The features the broker supports and the cluster's finalized levels.
    pub fn describe_features(&self) -> ClientFuture<'_, Result<Features>> {
        ClientFuture::boxed(self.describe_features_boxed())
    }

    async fn describe_features_boxed(&self) -> Result<Features> {
        let request =
            ApiVersionsRequest { client_software_name: bs("kwire-client"), client_software_version: bs(env!("CARGO_PKG_VERSION")), ..Default::default() };
        let response = self.client.send(Route::Any, request).await?;
        let r = &response;
        Error::check(r.error_code, None, || "ApiVersions".into())?;
        let mut features: BTreeMap<String, FeatureLevel> = BTreeMap::new();
        for f in &r.supported_features {
            let e = features.entry(f.name.to_string()).or_default();
            (e.min_supported, e.max_supported) = (f.min_version, f.max_version);
        }
        for f in &r.finalized_features {
            features.entry(f.name.to_string()).or_default().finalized = Some(f.max_version_level);
        }
        Ok(Features { features, finalized_epoch: r.finalized_features_epoch })
    }

    /// Sets features' finalized levels (UpdateFeatures; `kafka-features.sh upgrade`):
    /// `(feature, level, allow a downgrade)`, where a downgrade is safe (the broker refuses
    /// an unsafe one). One result per feature.
    pub fn update_features<'a>(&'a self, updates: &'a [(&'a str, i16, bool)]) -> ClientFuture<'a, Result<Vec<Result<()>>>> {
        ClientFuture::boxed(self.update_features_boxed(updates))
    }

    async fn update_features_boxed(&self, updates: &[(&str, i16, bool)]) -> Result<Vec<Result<()>>> {
        let timeout_ms = self.timeout_ms();
        // v0 says a downgrade with AllowDowngrade, v1+ with UpgradeType (1 upgrade, 2 safe
        // downgrade) and has no AllowDowngrade; brokers forward it to the active controller.
        let build = |v: i16| UpdateFeaturesRequest {
            timeout_ms,
            feature_updates: updates
                .iter()
                .map(|(name, level, downgrade)| FeatureUpdateKey {
                    feature: bs(name),
                    max_version_level: *level,
                    allow_downgrade: *downgrade && v == 0,
                    upgrade_type: if *downgrade && v >= 1 { 2 } else { 1 },
                    ..Default::default()
                })
                .collect(),
            validate_only: false,
            ..Default::default()
        };
        let response = self.client.send_versioned(Route::Any, build).await?;
        let r = &response;
        Error::check(r.error_code, r.error_message.as_deref(), || "update features".into())?;
        Ok(updates
            .iter()
            .map(|(name, ..)| match r.results.iter().find(|x| x.feature == name[..]) {
                Some(x) => Error::check(x.error_code, x.error_message.as_deref(), || format!("update feature {name}")),
                // From v2 the broker answers with the top-level error only.
                None => Ok(()),
            })
            .collect())
    }

    /// The KRaft metadata quorum: its leader, voters and observers.
    pub fn describe_metadata_quorum(&self) -> ClientFuture<'_, Result<QuorumDescription>> {
        ClientFuture::boxed(self.describe_metadata_quorum_boxed())
    }

    async fn describe_metadata_quorum_boxed(&self) -> Result<QuorumDescription> {
        let request = DescribeQuorumRequest {
            topics: vec![describe_quorum_request::TopicData {
                topic_name: bs("__cluster_metadata"),
                partitions: vec![describe_quorum_request::PartitionData { partition_index: 0, ..Default::default() }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let response = self.client.send(Route::Any, request).await?;
        let r = &response;
        Error::check(r.error_code, r.error_message.as_deref(), || "describe the metadata quorum".into())?;
        let p = r.topics.iter().flat_map(|t| &t.partitions).next().ok_or_else(|| Error::missing(ApiKey::DescribeQuorum, "__cluster_metadata-0"))?;
        Error::check(p.error_code, p.error_message.as_deref(), || "describe the metadata quorum".into())?;
        let replicas = |rs: &[describe_quorum_response::ReplicaState]| {
            rs.iter()
                .map(|s| QuorumReplica {
                    replica_id: s.replica_id,
                    log_end_offset: s.log_end_offset,
                    last_fetch_timestamp: s.last_fetch_timestamp,
                    last_caught_up_timestamp: s.last_caught_up_timestamp,
                })
                .collect()
        };
        Ok(QuorumDescription {
            leader_id: p.leader_id,
            leader_epoch: p.leader_epoch,
            high_watermark: p.high_watermark,
            voters: replicas(&p.current_voters),
            observers: replicas(&p.observers),
        })
    }

    /// The log directories of these brokers (every broker when empty), with every replica
    /// in them.
    pub fn describe_log_dirs<'a>(&'a self, brokers: &'a [i32]) -> ClientFuture<'a, Result<Vec<LogDir>>> {
        ClientFuture::boxed(self.describe_log_dirs_boxed(brokers))
    }

    async fn describe_log_dirs_boxed(&self, brokers: &[i32]) -> Result<Vec<LogDir>> {
        let brokers: Vec<i32> = if brokers.is_empty() { self.client.refresh_metadata().await?.brokers.keys().copied().collect() } else { brokers.to_vec() };
        let mut out = Vec::new();
        for broker in brokers {
            let r = &self.client.send(Route::Node(broker), DescribeLogDirsRequest { topics: None, ..Default::default() }).await?;
            Error::check(r.error_code, None, || format!("describe log dirs of broker {broker}"))?;
            for d in &r.results {
                Error::check(d.error_code, None, || format!("log dir {} of broker {broker}", d.log_dir))?;
                out.push(LogDir {
                    broker,
                    path: d.log_dir.to_string(),
                    replicas: d
                        .topics
                        .iter()
                        .flat_map(|t| {
                            t.partitions.iter().map(|p| LogDirReplica {
                                partition: TopicPartition::new(t.name.to_string(), p.partition_index),
                                size: p.partition_size,
                                offset_lag: p.offset_lag,
                                is_future: p.is_future_key,
                            })
                        })
                        .collect(),
                    total_bytes: d.total_bytes,
                    usable_bytes: d.usable_bytes,
                });
            }
        }
        Ok(out)
    }

    /// Moves partitions to new replica lists, or cancels a move (`None`), as
    /// `kafka-reassign-partitions.sh`; one result per partition, in order.
    pub fn alter_partition_reassignments<'a>(&'a self, moves: &'a [(TopicPartition, Option<Vec<i32>>)]) -> ClientFuture<'a, Result<Vec<Result<()>>>> {
        ClientFuture::boxed(self.alter_partition_reassignments_boxed(moves))
    }

    async fn alter_partition_reassignments_boxed(&self, moves: &[(TopicPartition, Option<Vec<i32>>)]) -> Result<Vec<Result<()>>> {
        let mut topics: BTreeMap<&str, Vec<ReassignablePartition>> = BTreeMap::new();
        for (tp, replicas) in moves {
            topics.entry(tp.topic.as_str()).or_default().push(ReassignablePartition {
                partition_index: tp.partition,
                replicas: replicas.as_ref().map(|r| r.iter().copied().collect()),
                ..Default::default()
            });
        }
        let request = AlterPartitionReassignmentsRequest {
            timeout_ms: self.timeout_ms(),
            allow_replication_factor_change: true,
            topics: topics.into_iter().map(|(t, partitions)| ReassignableTopic { name: bs(t), partitions, ..Default::default() }).collect(),
            ..Default::default()
        };
        let response = self.send_controller_retrying(request).await?;
        let r = &response;
        Error::check(r.error_code, r.error_message.as_deref(), || "alter partition reassignments".into())?;
        Ok(moves
            .iter()
            .map(|(tp, _)| {
                let p = r.responses.iter().filter(|t| t.name == tp.topic[..]).flat_map(|t| &t.partitions).find(|p| p.partition_index == tp.partition);
                match p {
                    Some(p) => Error::check(p.error_code, p.error_message.as_deref(), || format!("reassign {tp}")),
                    None => Err(Error::missing(ApiKey::AlterPartitionReassignments, tp)),
                }
            })
            .collect())
    }

    /// The reassignments in progress (of every partition when `partitions` is `None`).
    pub fn list_partition_reassignments<'a>(
        &'a self,
        partitions: Option<&'a [TopicPartition]>,
    ) -> ClientFuture<'a, Result<BTreeMap<TopicPartition, Reassignment>>> {
        ClientFuture::boxed(self.list_partition_reassignments_boxed(partitions))
    }

    async fn list_partition_reassignments_boxed(&self, partitions: Option<&[TopicPartition]>) -> Result<BTreeMap<TopicPartition, Reassignment>> {
        let topics = partitions.map(|tps| {
            let by_topic = crate::topic_partition::by_topic(tps);
            by_topic
                .into_iter()
                .map(|(t, ps)| ListPartitionReassignmentsTopics { name: bs(t), partition_indexes: ps.into_iter().collect(), ..Default::default() })
                .collect()
        });
        let request = ListPartitionReassignmentsRequest { timeout_ms: self.timeout_ms(), topics, ..Default::default() };
        let response = self.send_controller_retrying(request).await?;
        let r = &response;
        Error::check(r.error_code, r.error_message.as_deref(), || "list partition reassignments".into())?;
        Ok(r.topics
            .iter()
            .flat_map(|t| {
                t.partitions.iter().map(|p| {
                    let reassignment =
                        Reassignment { replicas: p.replicas.to_vec(), adding: p.adding_replicas.to_vec(), removing: p.removing_replicas.to_vec() };
                    (TopicPartition::new(t.name.to_string(), p.partition_index), reassignment)
                })
            })
            .collect())
    }

    /// Elects leaders (ElectLeaders; `kafka-leader-election.sh`): the preferred replica, or
    /// with `unclean` any live replica, for these partitions (every partition when `None`).
    /// Per partition the outcome; ELECTION_NOT_NEEDED counts as done.
    pub fn elect_leaders<'a>(
        &'a self,
        unclean: bool,
        partitions: Option<&'a [TopicPartition]>,
    ) -> ClientFuture<'a, Result<BTreeMap<TopicPartition, Result<()>>>> {
        ClientFuture::boxed(self.elect_leaders_boxed(unclean, partitions))
    }

    async fn elect_leaders_boxed(&self, unclean: bool, partitions: Option<&[TopicPartition]>) -> Result<BTreeMap<TopicPartition, Result<()>>> {
        let topic_partitions = partitions.map(|tps| {
            let by_topic = crate::topic_partition::by_topic(tps);
            by_topic
                .into_iter()
                .map(|(t, ps)| elect_leaders_request::TopicPartitions { topic: bs(t), partitions: ps.into_iter().collect(), ..Default::default() })
                .collect()
        });
        let request = ElectLeadersRequest { election_type: i8::from(unclean), topic_partitions, timeout_ms: self.timeout_ms(), ..Default::default() };
        let response = self.send_controller_retrying(request).await?;
        let r = &response;
        Error::check(r.error_code, None, || "elect leaders".into())?;
        Ok(r.replica_election_results
            .iter()
            .flat_map(|t| {
                t.partition_result.iter().map(|p| {
                    let tp = TopicPartition::new(t.topic.to_string(), p.partition_id);
                    let result = if ErrorCode(p.error_code) == ErrorCode::ELECTION_NOT_NEEDED {
                        Ok(())
                    } else {
                        Error::check(p.error_code, p.error_message.as_deref(), || format!("elect a leader of {tp}"))
                    };
                    (tp, result)
                })
            })
            .collect())
    }

    /// Where each replica `(partition, broker)` is (Java's `describeReplicaLogDirs`): its
    /// log directory and, while it moves, the directory it moves to, with each one's offset
    /// lag. A replica the broker does not hold has neither; a broker that cannot be asked is
    /// an error in its slot. One DescribeLogDirs per broker.
    pub fn describe_replica_log_dirs<'a>(&'a self, replicas: &'a [(TopicPartition, i32)]) -> ClientFuture<'a, Result<Vec<Result<ReplicaLogDirInfo>>>> {
        ClientFuture::boxed(self.describe_replica_log_dirs_boxed(replicas))
    }

    async fn describe_replica_log_dirs_boxed(&self, replicas: &[(TopicPartition, i32)]) -> Result<Vec<Result<ReplicaLogDirInfo>>> {
        let mut by_broker: BTreeMap<i32, Result<Vec<LogDir>>> = BTreeMap::new();
        for (_, broker) in replicas {
            if !by_broker.contains_key(broker) {
                by_broker.insert(*broker, self.describe_log_dirs(&[*broker]).await);
            }
        }
        Ok(replicas
            .iter()
            .map(|(tp, broker)| {
                let dirs = match by_broker.get(broker) {
                    Some(Ok(dirs)) => dirs,
                    Some(Err(e)) => return Err(e.clone()),
                    None => return Err(Error::UnknownBroker(*broker)),
                };
                let mut info = ReplicaLogDirInfo::default();
                for d in dirs {
                    for r in d.replicas.iter().filter(|r| r.partition == *tp) {
                        if r.is_future {
                            (info.future_dir, info.future_offset_lag) = (Some(d.path.clone()), r.offset_lag);
                        } else {
                            (info.current_dir, info.current_offset_lag) = (Some(d.path.clone()), r.offset_lag);
                        }
                    }
                }
                Ok(info)
            })
            .collect())
    }

    /// Moves replicas between a broker's log directories (AlterReplicaLogDirs to each broker;
    /// `kafka-reassign-partitions.sh` with `log_dirs`): `(partition, broker, directory)`, the
    /// directory an absolute path among the broker's `log.dirs`. One result per move, in
    /// order: a directory the broker does not have is `LOG_DIR_NOT_FOUND`, a partition it does
    /// not hold `UNKNOWN_TOPIC_OR_PARTITION`; a replica given twice an [`Error::Config`] in its
    /// second slot. The move itself goes on in the background:
    /// [`describe_log_dirs`](Admin::describe_log_dirs) shows the future replica until done.
    pub fn alter_replica_log_dirs<'a>(&'a self, moves: &'a [(TopicPartition, i32, &'a str)]) -> ClientFuture<'a, Result<Vec<Result<()>>>> {
        ClientFuture::boxed(self.alter_replica_log_dirs_boxed(moves))
    }

    async fn alter_replica_log_dirs_boxed(&self, moves: &[(TopicPartition, i32, &str)]) -> Result<Vec<Result<()>>> {
        let mut results: Vec<Option<Result<()>>> = vec![None; moves.len()];
        let mut by_broker: BTreeMap<i32, Vec<usize>> = BTreeMap::new();
        let mut seen = std::collections::BTreeSet::new();
        for (i, (tp, broker, _)) in moves.iter().enumerate() {
            // A replica goes to one dir: the broker's answer could not tell two moves apart.
            if !seen.insert((tp, *broker)) {
                if let Some(slot) = results.get_mut(i) {
                    *slot = Some(Err(Error::Config(format!("the replica of {tp} on broker {broker} is moved twice in one call"))));
                }
                continue;
            }
            by_broker.entry(*broker).or_default().push(i);
        }
        for (broker, indexes) in by_broker {
            let mut dirs: BTreeMap<&str, BTreeMap<&str, Vec<i32>>> = BTreeMap::new();
            for &i in &indexes {
                if let Some((tp, _, dir)) = moves.get(i) {
                    dirs.entry(dir).or_default().entry(tp.topic.as_str()).or_default().push(tp.partition);
                }
            }
            let request = AlterReplicaLogDirsRequest {
                dirs: dirs
                    .into_iter()
                    .map(|(path, topics)| AlterReplicaLogDir {
                        path: bs(path),
                        topics: topics
                            .into_iter()
                            .map(|(t, partitions)| AlterReplicaLogDirTopic { name: bs(t), partitions: partitions.into(), ..Default::default() })
                            .collect(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            };
            let response = self.client.send(Route::Node(broker), request).await;
            for &i in &indexes {
                let Some((tp, _, _)) = moves.get(i) else { continue };
                let result = match &response {
                    Ok(r) => {
                        match r.results.iter().filter(|t| t.topic_name == tp.topic[..]).flat_map(|t| &t.partitions).find(|p| p.partition_index == tp.partition)
                        {
                            Some(p) => Error::check(p.error_code, None, || format!("move the replica of {tp} on broker {broker}"))
                                .map_err(|e| e.about(crate::error::Resource::Topic(tp.topic.clone()))),
                            None => Err(Error::missing(ApiKey::AlterReplicaLogDirs, tp)),
                        }
                    }
                    Err(e) => Err(e.clone()),
                };
                if let Some(slot) = results.get_mut(i) {
                    *slot = Some(result);
                }
            }
        }
        Ok(results.into_iter().zip(moves).map(|(r, (tp, _, _))| r.unwrap_or_else(|| Err(Error::missing(ApiKey::AlterReplicaLogDirs, tp)))).collect())
    }

    /// Removes a broker's registration from the cluster metadata (UnregisterBroker, KRaft
    /// only; `kafka-cluster.sh unregister`): for a broker decommissioned for good, whose
    /// registration stays until this. A broker that is still running registers again; an id
    /// the cluster does not know is `BROKER_ID_NOT_REGISTERED`.
    pub fn unregister_broker(&self, broker: i32) -> ClientFuture<'_, Result<()>> {
        ClientFuture::boxed(self.unregister_broker_boxed(broker))
    }

    async fn unregister_broker_boxed(&self, broker: i32) -> Result<()> {
        // Any broker forwards it to the active controller (Java sends it to the least loaded).
        let response = self.client.send(Route::Any, UnregisterBrokerRequest { broker_id: broker, ..Default::default() }).await?;
        let r = &response;
        Error::check(r.error_code, r.error_message.as_deref(), || format!("unregister broker {broker}"))
    }

    /// Removes a controller's registration from the cluster metadata (UnregisterController,
    /// Kafka 4.4; Java's `unregisterController`), as [`unregister_broker`](Admin::unregister_broker)
    /// for a broker. Brokers before 4.4 lack the api: [`Error::UnsupportedVersion`].
    pub fn unregister_controller(&self, controller: i32) -> ClientFuture<'_, Result<()>> {
        ClientFuture::boxed(self.unregister_controller_boxed(controller))
    }

    async fn unregister_controller_boxed(&self, controller: i32) -> Result<()> {
        let response = self.client.send(Route::Any, UnregisterControllerRequest { controller_id: controller, ..Default::default() }).await?;
        let r = &response;
        Error::check(r.error_code, r.error_message.as_deref(), || format!("unregister controller {controller}"))
    }

    /// Adds a controller to the KRaft quorum (KIP-853; `kafka-metadata-quorum.sh
    /// add-controller`): the node `voter_id` with its metadata log directory's id, reachable at
    /// `endpoints` (its controller listeners: name, host, port). Only a dynamic quorum
    /// (`kraft.version` 1, formatted with `--standalone` or `--initial-controllers`) changes; a
    /// static one (`controller.quorum.voters`) refuses: an [`Error::Broker`] with
    /// UNSUPPORTED_VERSION, "the kraft.version feature is 0".
    pub fn add_raft_voter<'a>(&'a self, voter_id: i32, directory_id: Uuid, endpoints: &'a [(&'a str, &'a str, u16)]) -> ClientFuture<'a, Result<()>> {
        ClientFuture::boxed(self.add_raft_voter_boxed(voter_id, directory_id, endpoints))
    }

    async fn add_raft_voter_boxed(&self, voter_id: i32, directory_id: Uuid, endpoints: &[(&str, &str, u16)]) -> Result<()> {
        let timeout_ms = self.timeout_ms();
        let build = |_| AddRaftVoterRequest {
            cluster_id: None,
            timeout_ms,
            voter_id,
            voter_directory_id: directory_id,
            listeners: endpoints
                .iter()
                .map(|(name, host, port)| add_raft_voter_request::Listener { name: bs(name), host: bs(host), port: *port, ..Default::default() })
                .collect(),
            ack_when_committed: true,
            ..Default::default()
        };
        // Any broker forwards it to the active controller (Java: the least loaded node).
        let response = self.client.send_versioned(Route::Any, build).await?;
        let r = &response;
        Error::check(r.error_code, r.error_message.as_deref(), || format!("add controller {voter_id} to the quorum"))
    }

    /// Removes a controller from the KRaft quorum (KIP-853; `kafka-metadata-quorum.sh
    /// remove-controller`), named by its id and metadata log directory's id. As
    /// [`add_raft_voter`](Admin::add_raft_voter), a static quorum refuses.
    pub fn remove_raft_voter(&self, voter_id: i32, directory_id: Uuid) -> ClientFuture<'_, Result<()>> {
        ClientFuture::boxed(self.remove_raft_voter_boxed(voter_id, directory_id))
    }

    async fn remove_raft_voter_boxed(&self, voter_id: i32, directory_id: Uuid) -> Result<()> {
        let request = RemoveRaftVoterRequest { cluster_id: None, voter_id, voter_directory_id: directory_id, ..Default::default() };
        let response = self.client.send(Route::Any, request).await?;
        let r = &response;
        Error::check(r.error_code, r.error_message.as_deref(), || format!("remove controller {voter_id} from the quorum"))
    }
}
