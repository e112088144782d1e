//! Topics and partitions: create, delete, list, describe, more partitions.

use std::collections::BTreeMap;

use kwire::messages::{
    create_partitions_request::CreatePartitionsTopic,
    create_topics_request::{CreatableTopic, CreatableTopicConfig},
    delete_topics_request::DeleteTopicState,
    CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest, MetadataRequest,
};
use kwire::{ApiKey, ResponseKind, Uuid};
use tracing::Instrument;

use super::{bs, unexpected, Admin};
use crate::cluster::TopicInfo;
use crate::error::{Error, Result};

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

impl Admin {
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

}
