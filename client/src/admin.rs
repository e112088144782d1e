//! Admin operations with typed results: topics and partitions, cluster, configs, SCRAM users.

use std::collections::BTreeMap;
use std::time::Duration;

use kwire::messages::{
    alter_user_scram_credentials_request::{ScramCredentialDeletion, ScramCredentialUpsertion},
    create_partitions_request::CreatePartitionsTopic,
    create_topics_request::{CreatableTopic, CreatableTopicConfig},
    delete_topics_request::DeleteTopicState,
    describe_configs_request::DescribeConfigsResource,
    incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig},
    *,
};
use kwire::{ApiKey, ByteString, Bytes, ResponseKind, Uuid};
use tracing::Instrument;

use crate::cluster::{BrokerInfo, Client, TopicInfo};
use crate::error::{Error, Result};
use crate::sasl::{random_bytes, ScramMechanism};

/// A topic to create.
#[derive(Debug, Clone)]
pub struct NewTopic {
    /// The name.
    pub name: String,
    /// Partitions (-1: the broker's default).
    pub partitions: i32,
    /// Replication factor (-1: the broker's default).
    pub replication_factor: i16,
    /// Topic configs.
    pub configs: BTreeMap<String, String>,
}

impl NewTopic {
    /// A topic with `partitions` partitions and the default replication factor.
    pub fn new(name: impl Into<String>, partitions: i32) -> NewTopic {
        NewTopic { name: name.into(), partitions, replication_factor: -1, configs: BTreeMap::new() }
    }

    /// Sets the replication factor.
    pub fn replication_factor(mut self, rf: i16) -> NewTopic {
        self.replication_factor = rf;
        self
    }

    /// Sets a topic config.
    pub fn config(mut self, key: impl Into<String>, value: impl Into<String>) -> NewTopic {
        self.configs.insert(key.into(), value.into());
        self
    }
}

/// A created topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedTopic {
    /// The name.
    pub name: String,
    /// Its id (zero before CreateTopics v7).
    pub id: Uuid,
    /// Partitions.
    pub partitions: i32,
    /// Replication factor.
    pub replication_factor: i16,
}

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

/// What a config resource is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigResource {
    /// A topic's configs.
    Topic,
    /// A broker's configs (name: the node id).
    Broker,
}

impl ConfigResource {
    fn code(self) -> i8 {
        match self {
            ConfigResource::Topic => 2,
            ConfigResource::Broker => 4,
        }
    }
}

/// One config entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigEntry {
    /// The name.
    pub name: String,
    /// The value (`None` when sensitive or unset).
    pub value: Option<String>,
    /// Whether it is read-only.
    pub read_only: bool,
    /// Whether it is sensitive.
    pub sensitive: bool,
    /// Kafka's config source (1 dynamic topic, 5 default, ...).
    pub source: i8,
}

/// A change to a config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigOp {
    /// Set the value.
    Set(String),
    /// Remove the override (back to the default).
    Delete,
}

/// A SCRAM credential change.
#[derive(Debug, Clone)]
pub enum ScramChange {
    /// Create or replace the credential: the salted password is computed here with a random
    /// salt, the password does not leave the client.
    Upsert {
        /// The user.
        user: String,
        /// The mechanism.
        mechanism: ScramMechanism,
        /// The password.
        password: String,
        /// PBKDF2 iterations (Kafka accepts 4096 to 16384).
        iterations: u32,
    },
    /// Delete the credential.
    Delete {
        /// The user.
        user: String,
        /// The mechanism.
        mechanism: ScramMechanism,
    },
}

/// Admin operations on a [`Client`]'s cluster.
#[derive(Clone)]
pub struct Admin {
    client: Client,
    /// How long the broker may take on topic operations.
    pub operation_timeout: Duration,
}

fn bs(s: &str) -> ByteString {
    ByteString::from(s.to_owned())
}

fn unexpected(api: ApiKey, got: &ResponseKind) -> Error {
    Error::UnexpectedResponse(format!("{:?} response to {}", got.api_key(), api.name()))
}

impl Admin {
    /// Admin operations through `client`.
    pub fn new(client: Client) -> Admin {
        Admin { client, operation_timeout: Duration::from_secs(30) }
    }

    /// The client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    fn timeout_ms(&self) -> i32 {
        self.operation_timeout.as_millis().min(i32::MAX as u128) as i32
    }

    /// Creates topics; one result per topic, in order.
    pub async fn create_topics(&self, topics: &[NewTopic]) -> Result<Vec<Result<CreatedTopic>>> {
        let request = CreateTopicsRequest {
            topics: topics
                .iter()
                .map(|t| CreatableTopic {
                    name: bs(&t.name),
                    num_partitions: t.partitions,
                    replication_factor: t.replication_factor,
                    configs: t
                        .configs
                        .iter()
                        .map(|(k, v)| CreatableTopicConfig { name: bs(k), value: Some(bs(v)), ..Default::default() })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            timeout_ms: self.timeout_ms(),
            validate_only: false,
            ..Default::default()
        };
        let span = tracing::info_span!("kafka.admin.create_topics", n = topics.len());
        let response = self.client.call_controller(request).instrument(span).await?;
        let ResponseKind::CreateTopics(r) = response else { return Err(unexpected(ApiKey::CreateTopics, &response)) };
        let results = topics
            .iter()
            .map(|t| {
                let r = r.topics.iter().find(|x| x.name == t.name[..]).ok_or_else(|| {
                    Error::UnexpectedResponse(format!("CreateTopics response has no result for {}", t.name))
                })?;
                Error::check(r.error_code, r.error_message.as_deref(), || format!("create topic {}", t.name))?;
                Ok(CreatedTopic { name: t.name.clone(), id: r.topic_id, partitions: r.num_partitions, replication_factor: r.replication_factor })
            })
            .collect();
        // New topics: the next lookups should see them.
        let _ = self.client.refresh_metadata().await;
        Ok(results)
    }

    /// Creates one topic.
    pub async fn create_topic(&self, topic: NewTopic) -> Result<CreatedTopic> {
        self.create_topics(std::slice::from_ref(&topic)).await?.pop().unwrap_or_else(|| Err(Error::UnexpectedResponse("no result".into())))
    }

    /// Deletes topics by name; one result per topic.
    pub async fn delete_topics(&self, names: &[&str]) -> Result<Vec<Result<()>>> {
        let request = DeleteTopicsRequest {
            topics: names.iter().map(|n| DeleteTopicState { name: Some(bs(n)), topic_id: Uuid::ZERO, ..Default::default() }).collect(),
            topic_names: names.iter().map(|n| bs(n)).collect(),
            timeout_ms: self.timeout_ms(),
            ..Default::default()
        };
        let span = tracing::info_span!("kafka.admin.delete_topics", n = names.len());
        let response = self.client.call_controller(request).instrument(span).await?;
        let ResponseKind::DeleteTopics(r) = response else { return Err(unexpected(ApiKey::DeleteTopics, &response)) };
        let results = names
            .iter()
            .map(|n| {
                let r = r.responses.iter().find(|x| x.name.as_deref() == Some(*n)).ok_or_else(|| {
                    Error::UnexpectedResponse(format!("DeleteTopics response has no result for {n}"))
                })?;
                Error::check(r.error_code, r.error_message.as_deref(), || format!("delete topic {n}"))
            })
            .collect();
        let _ = self.client.refresh_metadata().await;
        Ok(results)
    }

    /// Raises the partition count of topics to the given totals.
    pub async fn create_partitions(&self, totals: &[(&str, i32)]) -> Result<Vec<Result<()>>> {
        let request = CreatePartitionsRequest {
            topics: totals.iter().map(|(n, c)| CreatePartitionsTopic { name: bs(n), count: *c, assignments: None, ..Default::default() }).collect(),
            timeout_ms: self.timeout_ms(),
            validate_only: false,
            ..Default::default()
        };
        let response = self.client.call_controller(request).await?;
        let ResponseKind::CreatePartitions(r) = response else { return Err(unexpected(ApiKey::CreatePartitions, &response)) };
        let results = totals
            .iter()
            .map(|(n, _)| {
                let r = r.results.iter().find(|x| x.name == n[..]).ok_or_else(|| {
                    Error::UnexpectedResponse(format!("CreatePartitions response has no result for {n}"))
                })?;
                Error::check(r.error_code, r.error_message.as_deref(), || format!("create partitions of {n}"))
            })
            .collect();
        let _ = self.client.refresh_metadata().await;
        Ok(results)
    }

    /// Every topic's name (internal ones too when `internal`).
    pub async fn list_topics(&self, internal: bool) -> Result<Vec<String>> {
        let m = self.client.refresh_metadata().await?;
        Ok(m.topics.values().filter(|t| internal || !t.internal).map(|t| t.name.clone()).collect())
    }

    /// Describes topics: partitions, leaders, replicas. A topic the broker does not know is
    /// an UNKNOWN_TOPIC_OR_PARTITION error in its slot.
    pub async fn describe_topics(&self, names: &[&str]) -> Result<Vec<Result<TopicInfo>>> {
        let request = MetadataRequest {
            topics: Some(
                names
                    .iter()
                    .map(|n| kwire::messages::metadata_request::MetadataRequestTopic { name: Some(bs(n)), ..Default::default() })
                    .collect(),
            ),
            allow_auto_topic_creation: false,
            ..Default::default()
        };
        let response = self.client.call_any(request).await?;
        let ResponseKind::Metadata(r) = response else { return Err(unexpected(ApiKey::Metadata, &response)) };
        Ok(names
            .iter()
            .map(|n| {
                let t = r.topics.iter().find(|t| t.name.as_deref() == Some(*n)).ok_or_else(|| {
                    Error::UnexpectedResponse(format!("Metadata response has no entry for {n}"))
                })?;
                Error::check(t.error_code, None, || format!("describe topic {n}"))?;
                let partitions = crate::cluster::partitions_of(&t.partitions);
                Ok(TopicInfo { name: n.to_string(), id: t.topic_id, internal: t.is_internal, partitions })
            })
            .collect())
    }

    /// The cluster id, controller and brokers (DescribeCluster where the broker has it, else
    /// Metadata).
    pub async fn describe_cluster(&self) -> Result<ClusterDescription> {
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
        let response = conn.request(DescribeClusterRequest { endpoint_type: 1, ..Default::default() }).await?;
        let ResponseKind::DescribeCluster(r) = response else { return Err(unexpected(ApiKey::DescribeCluster, &response)) };
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

    /// Describes a resource's configs (all of them, or the named keys).
    pub async fn describe_configs(&self, resource: ConfigResource, name: &str, keys: Option<&[&str]>) -> Result<Vec<ConfigEntry>> {
        let request = DescribeConfigsRequest {
            resources: vec![DescribeConfigsResource {
                resource_type: resource.code(),
                resource_name: bs(name),
                configuration_keys: keys.map(|k| k.iter().map(|k| bs(k)).collect()),
                ..Default::default()
            }],
            ..Default::default()
        };
        let response = self.config_call(resource, name, request.into()).await?;
        let ResponseKind::DescribeConfigs(r) = response else { return Err(unexpected(ApiKey::DescribeConfigs, &response)) };
        let res = r.results.first().ok_or_else(|| Error::UnexpectedResponse("DescribeConfigs response has no result".into()))?;
        Error::check(res.error_code, res.error_message.as_deref(), || format!("describe configs of {name}"))?;
        Ok(res
            .configs
            .iter()
            .map(|c| ConfigEntry {
                name: c.name.to_string(),
                value: c.value.as_ref().map(|v| v.to_string()),
                read_only: c.read_only,
                sensitive: c.is_sensitive,
                source: c.config_source,
            })
            .collect())
    }

    /// Changes a resource's configs (IncrementalAlterConfigs).
    pub async fn alter_configs(&self, resource: ConfigResource, name: &str, changes: &[(&str, ConfigOp)]) -> Result<()> {
        let request = IncrementalAlterConfigsRequest {
            resources: vec![AlterConfigsResource {
                resource_type: resource.code(),
                resource_name: bs(name),
                configs: changes
                    .iter()
                    .map(|(k, op)| match op {
                        ConfigOp::Set(v) => AlterableConfig { name: bs(k), config_operation: 0, value: Some(bs(v)), ..Default::default() },
                        ConfigOp::Delete => AlterableConfig { name: bs(k), config_operation: 1, value: None, ..Default::default() },
                    })
                    .collect(),
                ..Default::default()
            }],
            validate_only: false,
            ..Default::default()
        };
        let response = self.config_call(resource, name, request.into()).await?;
        let ResponseKind::IncrementalAlterConfigs(r) = response else {
            return Err(unexpected(ApiKey::IncrementalAlterConfigs, &response));
        };
        let res = r.responses.first().ok_or_else(|| Error::UnexpectedResponse("IncrementalAlterConfigs response has no result".into()))?;
        Error::check(res.error_code, res.error_message.as_deref(), || format!("alter configs of {name}"))
    }

    /// Broker configs go to that broker; topic configs to any.
    async fn config_call(&self, resource: ConfigResource, name: &str, body: kwire::RequestKind) -> Result<ResponseKind> {
        match (resource, name.parse::<i32>()) {
            (ConfigResource::Broker, Ok(node)) => {
                let api = body.api_key();
                self.client.call_node(node, body).await?.ok_or_else(|| Error::UnexpectedResponse(format!("no {} response", api.name())))
            }
            _ => self.client.call_any(body).await,
        }
    }

    /// Creates, replaces or deletes SCRAM credentials (AlterUserScramCredentials); one result
    /// per change.
    pub async fn alter_scram_credentials(&self, changes: &[ScramChange]) -> Result<Vec<Result<()>>> {
        let mut request = AlterUserScramCredentialsRequest::default();
        for change in changes {
            match change {
                ScramChange::Upsert { user, mechanism, password, iterations } => {
                    let salt = random_bytes(32).map_err(Error::Config)?;
                    let salted = mechanism.salted_password(password, &salt, *iterations);
                    request.upsertions.push(ScramCredentialUpsertion {
                        name: bs(user),
                        mechanism: mechanism.kafka_type(),
                        iterations: (*iterations).min(i32::MAX as u32) as i32,
                        salt: Bytes::from(salt),
                        salted_password: Bytes::from(salted),
                        ..Default::default()
                    });
                }
                ScramChange::Delete { user, mechanism } => request.deletions.push(ScramCredentialDeletion {
                    name: bs(user),
                    mechanism: mechanism.kafka_type(),
                    ..Default::default()
                }),
            }
        }
        let response = self.client.call_controller(request).await?;
        let ResponseKind::AlterUserScramCredentials(r) = response else {
            return Err(unexpected(ApiKey::AlterUserScramCredentials, &response));
        };
        // The broker answers one result per user.
        Ok(changes
            .iter()
            .map(|c| {
                let user = match c {
                    ScramChange::Upsert { user, .. } | ScramChange::Delete { user, .. } => user,
                };
                let r = r.results.iter().find(|x| x.user == user[..]).ok_or_else(|| {
                    Error::UnexpectedResponse(format!("AlterUserScramCredentials response has no result for {user}"))
                })?;
                Error::check(r.error_code, r.error_message.as_deref(), || format!("alter SCRAM credentials of {user}"))
            })
            .collect())
    }
}
