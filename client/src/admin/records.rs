//! Records and offsets of partitions: ListOffsets and DeleteRecords at each leader.

use std::collections::BTreeMap;

use kwire::messages::{
    delete_records_request::{DeleteRecordsPartition, DeleteRecordsTopic},
    DeleteRecordsRequest,
};
use kwire::{ApiKey, ErrorCode};

use super::{bs, Admin};
use crate::error::{Error, Resource, Result};
use crate::future::ClientFuture;
use crate::offsets::{self, ListedOffset, OffsetSpec};
use crate::route::Route;
use crate::topic_partition::TopicPartition;

/// What DeleteRecords left of a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeletedRecords {
    /// The partition's log start offset now.
    pub low_watermark: i64,
}

impl Admin {
    /// Offsets of partitions by [`OffsetSpec`] (ListOffsets at each leader), as Java's
    /// `listOffsets`; `read_committed` answers `Latest` with the last stable offset.
    /// Partitions with no such offset (a timestamp past the last record) are left out.
    pub fn list_offsets<'a>(
        &'a self,
        specs: &'a [(TopicPartition, OffsetSpec)],
        read_committed: bool,
    ) -> ClientFuture<'a, Result<BTreeMap<TopicPartition, ListedOffset>>> {
        ClientFuture::boxed(self.list_offsets_boxed(specs, read_committed))
    }

    async fn list_offsets_boxed(&self, specs: &[(TopicPartition, OffsetSpec)], read_committed: bool) -> Result<BTreeMap<TopicPartition, ListedOffset>> {
        offsets::list_offsets(&self.client, specs, i8::from(read_committed), super::BACKOFF).await
    }

    /// Deletes the records of each partition before the given offset (-1: the high
    /// watermark), as `kafka-delete-records.sh`; one result per partition, in order.
    pub fn delete_records<'a>(&'a self, before: &'a [(TopicPartition, i64)]) -> ClientFuture<'a, Result<Vec<Result<DeletedRecords>>>> {
        ClientFuture::boxed(self.delete_records_boxed(before))
    }

    async fn delete_records_boxed(&self, before: &[(TopicPartition, i64)]) -> Result<Vec<Result<DeletedRecords>>> {
        let metadata = self.client.refresh_metadata().await?;
        let mut results: Vec<Option<Result<DeletedRecords>>> = vec![None; before.len()];
        let mut by_leader: BTreeMap<i32, Vec<usize>> = BTreeMap::new();
        for (i, (tp, _)) in before.iter().enumerate() {
            match metadata.leader(&tp.topic, tp.partition) {
                Some(leader) => by_leader.entry(leader).or_default().push(i),
                None => results[i] = Some(Err(Error::unknown(&tp.topic, Some(tp.partition), "no known leader"))),
            }
        }
        for (leader, indexes) in by_leader {
            let mut topics: BTreeMap<&str, Vec<DeleteRecordsPartition>> = BTreeMap::new();
            for &i in &indexes {
                let (tp, offset) = &before[i];
                topics.entry(tp.topic.as_str()).or_default().push(DeleteRecordsPartition {
                    partition_index: tp.partition,
                    offset: *offset,
                    ..Default::default()
                });
            }
            let request = DeleteRecordsRequest {
                topics: topics.into_iter().map(|(t, partitions)| DeleteRecordsTopic { name: bs(t), partitions, ..Default::default() }).collect(),
                timeout_ms: self.timeout_ms(),
                ..Default::default()
            };
            let response = self.client.send(Route::Node(leader), request).await;
            for &i in &indexes {
                let tp = &before[i].0;
                let result = match &response {
                    Ok(r) => match r.topics.iter().filter(|t| t.name == tp.topic[..]).flat_map(|t| &t.partitions).find(|p| p.partition_index == tp.partition) {
                        Some(p) if ErrorCode(p.error_code).is_ok() => Ok(DeletedRecords { low_watermark: p.low_watermark }),
                        Some(p) => Err(Error::broker(ErrorCode(p.error_code), None, format!("DeleteRecords {tp}")).about(Resource::Topic(tp.topic.clone()))),
                        None => Err(Error::missing(ApiKey::DeleteRecords, tp)),
                    },
                    Err(e) => Err(e.clone()),
                };
                results[i] = Some(result);
            }
        }
        Ok(results.into_iter().zip(before).map(|(r, (tp, _))| r.unwrap_or_else(|| Err(Error::missing(ApiKey::DeleteRecords, tp)))).collect())
    }
}
