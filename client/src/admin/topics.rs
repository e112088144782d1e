//! Topics and partitions: create, delete, list, describe, more partitions.

use std::collections::BTreeMap;

use kwire::messages::{
    create_partitions_request::{CreatePartitionsAssignment, CreatePartitionsTopic},
    create_topics_request::CreatableReplicaAssignment,
    create_topics_request::{CreatableTopic, CreatableTopicConfig},
    delete_topics_request::DeleteTopicState,
    describe_topic_partitions_request::{Cursor, TopicRequest},
    CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest, DescribeTopicPartitionsRequest, MetadataRequest,
};
use kwire::{ApiKey, ErrorCode, Uuid};
use tracing::Instrument;

use super::{bs, Admin};
use crate::cluster::{PartitionInfo, TopicInfo};
use crate::error::{Error, Result, Unexpected};
use crate::future::ClientFuture;
use crate::route::Route;

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
    /// Replicas by partition, chosen by hand (`kafka-topics.sh --replica-assignment`); when
    /// set, `partitions` and `replication_factor` must be -1 (the broker's rule).
    pub assignments: BTreeMap<i32, Vec<i32>>,
}

impl NewTopic {
    /// A topic with `partitions` partitions and the default replication factor.
    pub fn new(name: impl Into<String>, partitions: i32) -> NewTopic {
        NewTopic { name: name.into(), partitions, replication_factor: -1, configs: BTreeMap::new(), assignments: BTreeMap::new() }
    }

    /// Sets the replication factor.
    pub fn replication_factor(mut self, rf: i16) -> NewTopic {
        self.replication_factor = rf;
        self
    }

    /// A topic whose partitions are on these replicas (the first of each list is the
    /// preferred leader), as `kafka-topics.sh --replica-assignment`.
    ///
    /// ```
    /// let t = kwire_client::NewTopic::with_assignments("orders", [(0, vec![1, 2]), (1, vec![2, 3])]);
    /// assert_eq!((t.partitions, t.replication_factor), (-1, -1));
    /// ```
    pub fn with_assignments(name: impl Into<String>, assignments: impl IntoIterator<Item = (i32, Vec<i32>)>) -> NewTopic {
        NewTopic { assignments: assignments.into_iter().collect(), ..NewTopic::new(name, -1) }
    }

    /// Sets a topic config.
    pub fn config(mut self, key: impl Into<String>, value: impl Into<String>) -> NewTopic {
        self.configs.insert(key.into(), value.into());
        self
    }
}

/// More partitions for a topic ([`Admin::create_partitions_with`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPartitions {
    /// The topic.
    pub topic: String,
    /// The partition count wanted.
    pub total: i32,
    /// The new partitions' replicas, one list per new partition in order (the first of each
    /// the preferred leader); `None`: the broker chooses.
    pub assignments: Option<Vec<Vec<i32>>>,
}

impl NewPartitions {
    /// `topic` raised to `total` partitions, placed by the broker.
    pub fn increase_to(topic: impl Into<String>, total: i32) -> NewPartitions {
        NewPartitions { topic: topic.into(), total, assignments: None }
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
    pub fn create_topics<'a>(&'a self, topics: &'a [NewTopic]) -> ClientFuture<'a, Result<Vec<Result<CreatedTopic>>>> {
        ClientFuture::boxed(self.create_topics_boxed(topics))
    }

    async fn create_topics_boxed(&self, topics: &[NewTopic]) -> Result<Vec<Result<CreatedTopic>>> {
        self.create_topics_with(topics, false).await
    }

    /// Checks that the broker would create these topics, creating none (Java's
    /// `CreateTopicsOptions.validateOnly`): one result per topic, in order, with the
    /// partitions and replication factor it would have, or the error creating it would give.
    pub fn validate_create_topics<'a>(&'a self, topics: &'a [NewTopic]) -> ClientFuture<'a, Result<Vec<Result<CreatedTopic>>>> {
        ClientFuture::boxed(self.validate_create_topics_boxed(topics))
    }

    async fn validate_create_topics_boxed(&self, topics: &[NewTopic]) -> Result<Vec<Result<CreatedTopic>>> {
        self.create_topics_with(topics, true).await
    }

    async fn create_topics_with(&self, topics: &[NewTopic], validate_only: bool) -> Result<Vec<Result<CreatedTopic>>> {
        let request = CreateTopicsRequest {
            topics: topics
                .iter()
                .map(|t| CreatableTopic {
                    name: bs(&t.name),
                    num_partitions: t.partitions,
                    replication_factor: t.replication_factor,
                    configs: t.configs.iter().map(|(k, v)| CreatableTopicConfig { name: bs(k), value: Some(bs(v)), ..Default::default() }).collect(),
                    assignments: t
                        .assignments
                        .iter()
                        .map(|(p, replicas)| CreatableReplicaAssignment {
                            partition_index: *p,
                            broker_ids: replicas.iter().copied().collect(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            timeout_ms: self.timeout_ms(),
            validate_only,
            ..Default::default()
        };
        let span = tracing::info_span!("kafka.admin.create_topics", n = topics.len(), validate_only);
        let response = self.send_controller_retrying(request).instrument(span).await?;
        let r = response;
        let results = topics
            .iter()
            .map(|t| {
                let r = r.topics.iter().find(|x| x.name == t.name[..]).ok_or_else(|| Error::missing(ApiKey::CreateTopics, &t.name))?;
                Error::check(r.error_code, r.error_message.as_deref(), || format!("create topic {}", t.name))?;
                Ok(CreatedTopic { name: t.name.clone(), id: r.topic_id, partitions: r.num_partitions, replication_factor: r.replication_factor })
            })
            .collect();
        // New topics: the next lookups should see them.
        if !validate_only {
            let _ = self.client.refresh_metadata().await;
        }
        Ok(results)
    }

    /// Creates one topic.
    pub fn create_topic(&self, topic: NewTopic) -> ClientFuture<'_, Result<CreatedTopic>> {
        ClientFuture::boxed(async move {
            let name = topic.name.clone();
            self.create_topics(std::slice::from_ref(&topic)).await?.pop().unwrap_or_else(|| Err(Error::missing(ApiKey::CreateTopics, name)))
        })
    }

    /// Deletes topics by name; one result per topic.
    pub fn delete_topics<'a>(&'a self, names: &'a [&'a str]) -> ClientFuture<'a, Result<Vec<Result<()>>>> {
        ClientFuture::boxed(self.delete_topics_boxed(names))
    }

    async fn delete_topics_boxed(&self, names: &[&str]) -> Result<Vec<Result<()>>> {
        let request = DeleteTopicsRequest {
            topics: names.iter().map(|n| DeleteTopicState { name: Some(bs(n)), topic_id: Uuid::ZERO, ..Default::default() }).collect(),
            topic_names: names.iter().map(|n| bs(n)).collect(),
            timeout_ms: self.timeout_ms(),
            ..Default::default()
        };
        let span = tracing::info_span!("kafka.admin.delete_topics", n = names.len());
        let response = self.send_controller_retrying(request).instrument(span).await?;
        let r = response;
        let results = names
            .iter()
            .map(|n| {
                let r = r.responses.iter().find(|x| x.name.as_deref() == Some(*n)).ok_or_else(|| Error::missing(ApiKey::DeleteTopics, n))?;
                Error::check(r.error_code, r.error_message.as_deref(), || format!("delete topic {n}"))
            })
            .collect();
        let _ = self.client.refresh_metadata().await;
        Ok(results)
    }

    /// Raises the partition count of topics to the given totals.
    pub fn create_partitions<'a>(&'a self, totals: &'a [(&'a str, i32)]) -> ClientFuture<'a, Result<Vec<Result<()>>>> {
        ClientFuture::boxed(self.create_partitions_boxed(totals))
    }

    async fn create_partitions_boxed(&self, totals: &[(&str, i32)]) -> Result<Vec<Result<()>>> {
        let new: Vec<NewPartitions> = totals.iter().map(|(t, n)| NewPartitions::increase_to(*t, *n)).collect();
        self.create_partitions_with(&new, false).await
    }

    /// Raises partition counts, the new partitions on replicas chosen by hand where
    /// [`NewPartitions::assignments`] says (Java's `NewPartitions.increaseTo(n, assignments)`),
    /// or only checks that the broker would (`validate_only`, Java's
    /// `CreatePartitionsOptions.validateOnly`). One result per topic, in order.
    ///
    /// ```no_run
    /// # async fn run(admin: kwire_client::Admin) -> kwire_client::Result<()> {
    /// use kwire_client::NewPartitions;
    ///
    /// // Partitions 6 and 7 of orders: on brokers 1 and 2, and 2 and 3.
    /// let more = NewPartitions { assignments: Some(vec![vec![1, 2], vec![2, 3]]), ..NewPartitions::increase_to("orders", 8) };
    /// admin.create_partitions_with(&[more], false).await?.remove(0)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn create_partitions_with<'a>(&'a self, new: &'a [NewPartitions], validate_only: bool) -> ClientFuture<'a, Result<Vec<Result<()>>>> {
        ClientFuture::boxed(self.create_partitions_with_boxed(new, validate_only))
    }

    async fn create_partitions_with_boxed(&self, new: &[NewPartitions], validate_only: bool) -> Result<Vec<Result<()>>> {
        let request = CreatePartitionsRequest {
            topics: new
                .iter()
                .map(|p| CreatePartitionsTopic {
                    name: bs(&p.topic),
                    count: p.total,
                    assignments: p.assignments.as_ref().map(|a| {
                        a.iter().map(|replicas| CreatePartitionsAssignment { broker_ids: replicas.iter().copied().collect(), ..Default::default() }).collect()
                    }),
                    ..Default::default()
                })
                .collect(),
            timeout_ms: self.timeout_ms(),
            validate_only,
            ..Default::default()
        };
        let response = self.send_controller_retrying(request).await?;
        let r = response;
        let results = new
            .iter()
            .map(|p| {
                let n = &p.topic;
                let r = r.results.iter().find(|x| x.name == n[..]).ok_or_else(|| Error::missing(ApiKey::CreatePartitions, n))?;
                Error::check(r.error_code, r.error_message.as_deref(), || format!("create partitions of {n}"))
            })
            .collect();
        if !validate_only {
            let _ = self.client.refresh_metadata().await;
        }
        Ok(results)
    }

    /// Every topic's name (internal ones too when `internal`).
    pub fn list_topics(&self, internal: bool) -> ClientFuture<'_, Result<Vec<String>>> {
        ClientFuture::boxed(self.list_topics_boxed(internal))
    }

    async fn list_topics_boxed(&self, internal: bool) -> Result<Vec<String>> {
        let m = self.client.refresh_metadata().await?;
        Ok(m.topics.values().filter(|t| internal || !t.internal).map(|t| t.name.clone()).collect())
    }

    /// Describes topics: partitions, leaders, replicas. A topic the broker does not know is
    /// an UNKNOWN_TOPIC_OR_PARTITION error in its slot.
    pub fn describe_topics<'a>(&'a self, names: &'a [&'a str]) -> ClientFuture<'a, Result<Vec<Result<TopicInfo>>>> {
        ClientFuture::boxed(self.describe_topics_boxed(names))
    }

    async fn describe_topics_boxed(&self, names: &[&str]) -> Result<Vec<Result<TopicInfo>>> {
        let request = MetadataRequest {
            topics: Some(names.iter().map(|n| kwire::messages::metadata_request::MetadataRequestTopic { name: Some(bs(n)), ..Default::default() }).collect()),
            allow_auto_topic_creation: false,
            ..Default::default()
        };
        let response = self.client.send(Route::Any, request).await?;
        let r = response;
        Ok(names
            .iter()
            .map(|n| {
                let t = r.topics.iter().find(|t| t.name.as_deref() == Some(*n)).ok_or_else(|| Error::missing(ApiKey::Metadata, n))?;
                Error::check(t.error_code, None, || format!("describe topic {n}"))?;
                let partitions = crate::cluster::partitions_of(&t.partitions);
                Ok(TopicInfo { name: n.to_string(), id: t.topic_id, internal: t.is_internal, partitions })
            })
            .collect())
    }

    /// Deletes topics by id (DeleteTopics v6+, Kafka 2.8+), as Java's
    /// `deleteTopics(TopicCollection.ofTopicIds(..))`; one result per id, in order. An id the
    /// cluster does not know is an `UNKNOWN_TOPIC_ID` error in its slot.
    pub fn delete_topics_by_id<'a>(&'a self, ids: &'a [Uuid]) -> ClientFuture<'a, Result<Vec<Result<()>>>> {
        ClientFuture::boxed(self.delete_topics_by_id_boxed(ids))
    }

    async fn delete_topics_by_id_boxed(&self, ids: &[Uuid]) -> Result<Vec<Result<()>>> {
        let timeout_ms = self.timeout_ms();
        let build = |_| DeleteTopicsRequest {
            topics: ids.iter().map(|id| DeleteTopicState { name: None, topic_id: *id, ..Default::default() }).collect(),
            timeout_ms,
            ..Default::default()
        };
        // Ids need v6: refuse before sending rather than let an older encoder drop them.
        let v = if self.client.metadata().controller_id >= 0 { self.client.version_at::<DeleteTopicsRequest>(Route::Controller).await? } else { 6 };
        if v < 6 {
            return Err(Error::UnsupportedVersion { api: ApiKey::DeleteTopics, reason: format!("deleting by id needs DeleteTopics v6, the broker has v{v}") });
        }
        let span = tracing::info_span!("kafka.admin.delete_topics_by_id", n = ids.len());
        let response = self.send_controller(build, |_| 0).instrument(span).await?;
        let r = response;
        let results = ids
            .iter()
            .map(|id| {
                let r = r
                    .responses
                    .iter()
                    .find(|x| x.topic_id == *id)
                    .ok_or_else(|| Error::missing(ApiKey::DeleteTopics, format_args!("topic id {}", kafka_uuid(id))))?;
                // The broker names the topic only to a principal that may describe it: else
                // the id, as Kafka writes ids.
                let name = r.name.as_deref().map_or_else(|| kafka_uuid(id), str::to_owned);
                Error::check(r.error_code, r.error_message.as_deref(), || format!("delete topic {name} (id {})", kafka_uuid(id)))
                    .map_err(|e| e.about(crate::error::Resource::Topic(name)))
            })
            .collect();
        let _ = self.client.refresh_metadata().await;
        Ok(results)
    }

    /// One page of DescribeTopicPartitions (KIP-966, Kafka 3.8+): the named topics (every
    /// topic when `names` is empty), in name order, from `cursor` on, at most
    /// `partition_limit` partitions (the broker caps it, 2000 by default). The page's
    /// [`next`](TopicPartitionsPage::next) is where the following page starts; a topic may
    /// continue on the next page. [`describe_topics_paged`](Admin::describe_topics_paged)
    /// follows the cursor to the end.
    pub fn describe_topic_partitions<'a>(
        &'a self,
        names: &'a [&'a str],
        cursor: Option<&'a TopicCursor>,
        partition_limit: i32,
    ) -> ClientFuture<'a, Result<TopicPartitionsPage>> {
        ClientFuture::boxed(self.describe_topic_partitions_boxed(names, cursor, partition_limit))
    }

    async fn describe_topic_partitions_boxed(&self, names: &[&str], cursor: Option<&TopicCursor>, partition_limit: i32) -> Result<TopicPartitionsPage> {
        let request = DescribeTopicPartitionsRequest {
            topics: names.iter().map(|n| TopicRequest { name: bs(n), ..Default::default() }).collect(),
            response_partition_limit: partition_limit,
            cursor: cursor.map(|c| Cursor { topic_name: bs(&c.topic), partition_index: c.partition, ..Default::default() }),
            ..Default::default()
        };
        let response = self.client.send(Route::Any, request).await?;
        let r = response;
        let topics = r
            .topics
            .iter()
            .map(|t| {
                let name = t.name.as_deref().unwrap_or_default().to_owned();
                Error::check(t.error_code, None, || format!("describe partitions of topic {name}"))
                    .map_err(|e| e.about(crate::error::Resource::Topic(name.clone())))?;
                let mut partitions: Vec<PagedPartition> = t
                    .partitions
                    .iter()
                    .map(|p| PagedPartition {
                        info: PartitionInfo {
                            index: p.partition_index,
                            leader: p.leader_id,
                            leader_epoch: p.leader_epoch,
                            replicas: p.replica_nodes.to_vec(),
                            isr: p.isr_nodes.to_vec(),
                            error: ErrorCode(p.error_code),
                        },
                        eligible_leader_replicas: p.eligible_leader_replicas.as_ref().map(|r| r.to_vec()),
                        last_known_elr: p.last_known_elr.as_ref().map(|r| r.to_vec()),
                        offline_replicas: p.offline_replicas.to_vec(),
                    })
                    .collect();
                partitions.sort_by_key(|p| p.info.index);
                Ok(PagedTopic { name, id: t.topic_id, internal: t.is_internal, partitions })
            })
            .collect();
        let next = r.next_cursor.as_ref().map(|c| TopicCursor { topic: c.topic_name.to_string(), partition: c.partition_index });
        Ok(TopicPartitionsPage { topics, next })
    }

    /// Describes topics through DescribeTopicPartitions pages of at most `partition_limit`
    /// partitions until the last (Java's `describeTopics` on a 3.8+ broker), a topic split
    /// over pages put back together; in name order, every topic when `names` is empty.
    ///
    /// ```no_run
    /// # async fn run(admin: kwire_client::Admin) -> kwire_client::Result<()> {
    /// for t in admin.describe_topics_paged(&[], 1000).await? {
    ///     let t = t?;
    ///     println!("{} {} partitions", t.name, t.partitions.len());
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn describe_topics_paged<'a>(&'a self, names: &'a [&'a str], partition_limit: i32) -> ClientFuture<'a, Result<Vec<Result<PagedTopic>>>> {
        ClientFuture::boxed(self.describe_topics_paged_boxed(names, partition_limit))
    }

    async fn describe_topics_paged_boxed(&self, names: &[&str], partition_limit: i32) -> Result<Vec<Result<PagedTopic>>> {
        let mut out: Vec<Result<PagedTopic>> = Vec::new();
        let mut cursor = None;
        loop {
            let page = self.describe_topic_partitions(names, cursor.as_ref(), partition_limit).await?;
            for t in page.topics {
                match (out.last_mut(), t) {
                    (Some(Ok(prev)), Ok(t)) if prev.name == t.name => prev.partitions.extend(t.partitions),
                    (_, t) => out.push(t),
                }
            }
            match page.next {
                // Cursors go forward (topics in name order, then partitions); one that does not
                // would page forever: a broker bug, said so.
                Some(next) if cursor.as_ref().is_some_and(|c| (&next.topic, next.partition) <= (&c.topic, c.partition)) => {
                    return Err(Error::unexpected(ApiKey::DescribeTopicPartitions, Unexpected::CursorStuck));
                }
                Some(next) => cursor = Some(next),
                None => return Ok(out),
            }
        }
    }
}

/// A topic id as Kafka prints it (`Uuid.toString`: URL-safe base64 without padding).
fn kafka_uuid(id: &Uuid) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id.as_bytes())
}

/// Where a DescribeTopicPartitions page starts: a topic and its first partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicCursor {
    /// The topic.
    pub topic: String,
    /// The first partition of it.
    pub partition: i32,
}

/// One partition as DescribeTopicPartitions describes it, with its KIP-966 eligible leaders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PagedPartition {
    /// Leader, epoch, replicas, ISR.
    pub info: PartitionInfo,
    /// The eligible leader replicas (KIP-966; `None` when ELR is off).
    pub eligible_leader_replicas: Option<Vec<i32>>,
    /// The last known ELR (`None` when ELR is off).
    pub last_known_elr: Option<Vec<i32>>,
    /// The offline replicas.
    pub offline_replicas: Vec<i32>,
}

/// A topic as DescribeTopicPartitions describes it (its partitions on this page).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PagedTopic {
    /// The name.
    pub name: String,
    /// The id.
    pub id: Uuid,
    /// Whether it is internal.
    pub internal: bool,
    /// Its partitions, by index.
    pub partitions: Vec<PagedPartition>,
}

/// One page of [`Admin::describe_topic_partitions`].
#[derive(Debug, Clone)]
pub struct TopicPartitionsPage {
    /// The topics on this page, in name order; a topic the broker does not know (or may not
    /// describe) is an error in its slot.
    pub topics: Vec<Result<PagedTopic>>,
    /// Where the next page starts; `None` on the last page.
    pub next: Option<TopicCursor>,
}
