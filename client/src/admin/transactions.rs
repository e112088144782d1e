//! Transactions, for operators (`kafka-transactions.sh`): list and describe them at their
//! coordinators, describe a partition's active producers, fence a transactional id, and abort
//! a hanging transaction at the partition's leader.

use std::collections::BTreeMap;

use kwire::messages::{
    describe_producers_request::TopicRequest,
    write_txn_markers_request::{WritableTxnMarker, WritableTxnMarkerTopic},
    DescribeProducersRequest, DescribeTransactionsRequest, InitProducerIdRequest, ListTransactionsRequest, WriteTxnMarkersRequest,
};
use kwire::{ApiKey, ErrorCode};

use super::{bs, result_for, Admin, BACKOFF};
use crate::coordinator::Coordinator;
use crate::error::{Error, Resource, Result};
use crate::future::ClientFuture;
use crate::route::CoordinatorKind;
use crate::route::Route;
use crate::topic_partition::TopicPartition;

/// A transaction as ListTransactions reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionListing {
    /// The transactional id.
    pub transactional_id: String,
    /// Its producer id.
    pub producer_id: i64,
    /// Its state (`Empty`, `Ongoing`, `PrepareCommit`, `CompleteAbort`, ...).
    pub state: String,
    /// The broker coordinating it.
    pub coordinator: i32,
}

/// A transaction as its coordinator describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionDescription {
    /// Its state.
    pub state: String,
    /// The producer id.
    pub producer_id: i64,
    /// The producer epoch.
    pub producer_epoch: i16,
    /// The transaction timeout (ms).
    pub timeout_ms: i32,
    /// When the ongoing transaction started (ms since the epoch), if one is.
    pub start_time_ms: Option<i64>,
    /// The partitions in the ongoing transaction.
    pub partitions: Vec<TopicPartition>,
}

/// A producer with state at a partition (DescribeProducers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActiveProducer {
    /// The producer id.
    pub producer_id: i64,
    /// Its epoch.
    pub producer_epoch: i32,
    /// The last sequence number it wrote.
    pub last_sequence: i32,
    /// The timestamp of its last write.
    pub last_timestamp: i64,
    /// The coordinator epoch of its last transaction marker (-1 none).
    pub coordinator_epoch: i32,
    /// Where its open transaction starts, if it has one.
    pub current_transaction_start_offset: Option<i64>,
}

/// Which transactions to list (Java's `ListTransactionsOptions`); the default lists all.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TransactionFilter {
    /// Only in these states.
    pub states: Vec<String>,
    /// Only of these producer ids.
    pub producer_ids: Vec<i64>,
    /// Only those running longer than this (ms; ListTransactions v1+).
    pub min_duration_ms: Option<i64>,
}

impl Admin {
    /// Every transaction of every broker (ListTransactions to each), sorted by id.
    pub fn list_transactions<'a>(&'a self, filter: &'a TransactionFilter) -> ClientFuture<'a, Result<Vec<TransactionListing>>> {
        ClientFuture::boxed(self.list_transactions_boxed(filter))
    }

    async fn list_transactions_boxed(&self, filter: &TransactionFilter) -> Result<Vec<TransactionListing>> {
        let brokers: Vec<i32> = self.client.refresh_metadata().await?.brokers.keys().copied().collect();
        let mut out = Vec::new();
        for broker in brokers {
            let request = ListTransactionsRequest {
                state_filters: filter.states.iter().map(|s| bs(s)).collect(),
                producer_id_filters: filter.producer_ids.iter().copied().collect(),
                duration_filter: filter.min_duration_ms.unwrap_or(-1),
                ..Default::default()
            };
            let r = &self.client.send(Route::Node(broker), request).await?;
            Error::check(r.error_code, None, || format!("ListTransactions at broker {broker}"))?;
            out.extend(r.transaction_states.iter().map(|t| TransactionListing {
                transactional_id: t.transactional_id.to_string(),
                producer_id: t.producer_id,
                state: t.transaction_state.to_string(),
                coordinator: broker,
            }));
        }
        out.sort_by(|a, b| a.transactional_id.cmp(&b.transactional_id));
        Ok(out)
    }

    /// Describes transactions at their coordinators, one result per transactional id.
    pub fn describe_transactions<'a>(&'a self, ids: &'a [&'a str]) -> ClientFuture<'a, Result<Vec<Result<TransactionDescription>>>> {
        ClientFuture::boxed(self.describe_transactions_boxed(ids))
    }

    async fn describe_transactions_boxed(&self, ids: &[&str]) -> Result<Vec<Result<TransactionDescription>>> {
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let coordinator = Coordinator::of(self.client.clone(), CoordinatorKind::Transaction, id, BACKOFF);
            let build = |_| DescribeTransactionsRequest { transactional_ids: vec![bs(id)], ..Default::default() };
            let code_of = |r: &kwire::messages::DescribeTransactionsResponse| r.transaction_states.first().map_or(0, |t| t.error_code);
            let result = match coordinator.send(build, code_of).await {
                Ok(r) => result_for(&r.transaction_states, ApiKey::DescribeTransactions, id, |t| t.transactional_id == *id).and_then(|t| {
                    Error::check(t.error_code, None, || format!("describe transaction {id}"))
                        .map_err(|e| e.about(Resource::TransactionalId(id.to_string())))?;
                    Ok(TransactionDescription {
                        state: t.transaction_state.to_string(),
                        producer_id: t.producer_id,
                        producer_epoch: t.producer_epoch,
                        timeout_ms: t.transaction_timeout_ms,
                        start_time_ms: (t.transaction_start_time_ms >= 0).then_some(t.transaction_start_time_ms),
                        partitions: t.topics.iter().flat_map(|tp| tp.partitions.iter().map(|p| TopicPartition::new(tp.topic.to_string(), *p))).collect(),
                    })
                }),
                Err(e) => Err(e),
            };
            out.push(result);
        }
        Ok(out)
    }

    /// The producers with state at each partition (DescribeProducers at its leader).
    pub fn describe_producers<'a>(
        &'a self,
        partitions: &'a [TopicPartition],
    ) -> ClientFuture<'a, Result<BTreeMap<TopicPartition, Result<Vec<ActiveProducer>>>>> {
        ClientFuture::boxed(self.describe_producers_boxed(partitions))
    }

    async fn describe_producers_boxed(&self, partitions: &[TopicPartition]) -> Result<BTreeMap<TopicPartition, Result<Vec<ActiveProducer>>>> {
        let metadata = self.client.refresh_metadata().await?;
        let mut out = BTreeMap::new();
        for tp in partitions {
            let Some(leader) = metadata.leader(&tp.topic, tp.partition) else {
                out.insert(tp.clone(), Err(Error::unknown(&tp.topic, Some(tp.partition), "no known leader")));
                continue;
            };
            let request = DescribeProducersRequest {
                topics: vec![TopicRequest { name: bs(&tp.topic), partition_indexes: [tp.partition].into_iter().collect(), ..Default::default() }],
                ..Default::default()
            };
            let r = self.client.send(Route::Node(leader), request).await?;
            let result = match r.topics.iter().filter(|t| t.name == tp.topic[..]).flat_map(|t| &t.partitions).find(|p| p.partition_index == tp.partition) {
                Some(p) => Error::check(p.error_code, p.error_message.as_deref(), || format!("describe producers of {tp}")).map(|()| {
                    p.active_producers
                        .iter()
                        .map(|s| ActiveProducer {
                            producer_id: s.producer_id,
                            producer_epoch: s.producer_epoch,
                            last_sequence: s.last_sequence,
                            last_timestamp: s.last_timestamp,
                            coordinator_epoch: s.coordinator_epoch,
                            current_transaction_start_offset: (s.current_txn_start_offset >= 0).then_some(s.current_txn_start_offset),
                        })
                        .collect()
                }),
                None => Err(Error::missing(ApiKey::DescribeProducers, tp)),
            };
            out.insert(tp.clone(), result);
        }
        Ok(out)
    }

    /// Fences the producers of these transactional ids, as Java's `fenceProducers`: an
    /// InitProducerId at each id's coordinator bumps its epoch, so the current producer's next
    /// call fails as fenced and its open transaction is aborted. Per id, the new
    /// `(producer id, epoch)`.
    #[allow(clippy::type_complexity)] // the body's own result type, in a future
    pub fn fence_producers<'a>(&'a self, ids: &'a [&'a str]) -> ClientFuture<'a, Result<Vec<Result<(i64, i16)>>>> {
        ClientFuture::boxed(self.fence_producers_boxed(ids))
    }

    async fn fence_producers_boxed(&self, ids: &[&str]) -> Result<Vec<Result<(i64, i16)>>> {
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let coordinator = Coordinator::of(self.client.clone(), CoordinatorKind::Transaction, id, BACKOFF);
            // As Java: the shortest timeout, since this producer id is never used to write.
            let build = |_| InitProducerIdRequest {
                transactional_id: Some(bs(id)),
                transaction_timeout_ms: 1,
                producer_id: -1,
                producer_epoch: -1,
                ..Default::default()
            };
            let code_of = |r: &kwire::messages::InitProducerIdResponse| match ErrorCode(r.error_code) {
                ErrorCode::CONCURRENT_TRANSACTIONS => ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.0,
                _ => r.error_code,
            };
            let result = match coordinator.send(build, code_of).await {
                Ok(r) => Error::check(r.error_code, None, || format!("fence producers of {id}"))
                    .map_err(|e| e.about(Resource::TransactionalId(id.to_string())))
                    .map(|()| (r.producer_id, r.producer_epoch)),
                Err(e) => Err(e),
            };
            out.push(result);
        }
        Ok(out)
    }

    /// Aborts a hanging transaction at one partition, as Java's `abortTransaction`: an abort
    /// marker for `producer` (its id, epoch and coordinator epoch, as
    /// [`describe_producers`](Admin::describe_producers) gives them) written by the
    /// partition's leader (WriteTxnMarkers; needs ClusterAction).
    pub fn abort_transaction<'a>(&'a self, partition: &'a TopicPartition, producer: &'a ActiveProducer) -> ClientFuture<'a, Result<()>> {
        ClientFuture::boxed(self.abort_transaction_boxed(partition, producer))
    }

    async fn abort_transaction_boxed(&self, partition: &TopicPartition, producer: &ActiveProducer) -> Result<()> {
        let metadata = self.client.refresh_metadata().await?;
        let leader = metadata
            .leader(&partition.topic, partition.partition)
            .ok_or_else(|| Error::unknown(&partition.topic, Some(partition.partition), "no known leader"))?;
        let epoch = i16::try_from(producer.producer_epoch).map_err(|_| Error::Config(format!("producer epoch {} out of range", producer.producer_epoch)))?;
        let request = WriteTxnMarkersRequest {
            markers: vec![WritableTxnMarker {
                producer_id: producer.producer_id,
                producer_epoch: epoch,
                transaction_result: false,
                topics: vec![WritableTxnMarkerTopic {
                    name: bs(&partition.topic),
                    partition_indexes: [partition.partition].into_iter().collect(),
                    ..Default::default()
                }],
                coordinator_epoch: producer.coordinator_epoch,
                ..Default::default()
            }],
            ..Default::default()
        };
        let r = self.client.send(Route::Node(leader), request).await?;
        let code = r.markers.iter().flat_map(|m| &m.topics).flat_map(|t| &t.partitions).map(|p| p.error_code).find(|c| *c != 0).unwrap_or(0);
        Error::check(code, None, || format!("abort the transaction of producer {} at {partition}", producer.producer_id))
    }
}
