//! The consumer's offsets: ListOffsets (earliest, latest, by timestamp), and the group's
//! committed offsets (OffsetFetch, OffsetCommit, automatic commits), on the shared
//! implementations in [`crate::offsets`].

use std::collections::BTreeMap;
use tokio::time::Instant;

use tracing::warn;

use super::{Consumer, OffsetAndMetadata, OffsetSpec};
use crate::coordinator::Coordinator;
use crate::error::{Error, GroupError, Result};
use crate::future::ClientFuture;
use crate::offsets::Committer;
use crate::offsets::ListedOffset;
use crate::topic_partition::TopicPartition;

impl Consumer {
    /// Offsets by [`OffsetSpec`] (ListOffsets at each leader): `(offset, leader epoch)`;
    /// partitions with no such offset (a timestamp past the last record) are left out.
    #[allow(clippy::type_complexity)] // the body's own result type, in a future
    pub fn list_offsets<'a>(&'a self, specs: &'a [(TopicPartition, OffsetSpec)]) -> ClientFuture<'a, Result<BTreeMap<TopicPartition, (i64, Option<i32>)>>> {
        ClientFuture::boxed(self.list_offsets_boxed(specs))
    }

    async fn list_offsets_boxed(&self, specs: &[(TopicPartition, OffsetSpec)]) -> Result<BTreeMap<TopicPartition, (i64, Option<i32>)>> {
        let found = crate::offsets::list_offsets(&self.client, specs, self.config.isolation_level.wire(), self.config.retry_backoff).await?;
        Ok(found.into_iter().map(|(tp, o)| (tp, (o.offset, o.leader_epoch))).collect())
    }
    /// The log start offsets.
    pub fn beginning_offsets<'a>(&'a self, tps: &'a [TopicPartition]) -> ClientFuture<'a, Result<BTreeMap<TopicPartition, i64>>> {
        ClientFuture::boxed(self.beginning_offsets_boxed(tps))
    }

    async fn beginning_offsets_boxed(&self, tps: &[TopicPartition]) -> Result<BTreeMap<TopicPartition, i64>> {
        self.offsets_of(tps, OffsetSpec::Earliest).await
    }

    /// The log end offsets (last stable offsets under read_committed).
    pub fn end_offsets<'a>(&'a self, tps: &'a [TopicPartition]) -> ClientFuture<'a, Result<BTreeMap<TopicPartition, i64>>> {
        ClientFuture::boxed(self.end_offsets_boxed(tps))
    }

    async fn end_offsets_boxed(&self, tps: &[TopicPartition]) -> Result<BTreeMap<TopicPartition, i64>> {
        self.offsets_of(tps, OffsetSpec::Latest).await
    }

    /// For each partition, the first offset whose timestamp is at least the one given (ms),
    /// with that record's timestamp and leader epoch (Java's `offsetsForTimes`); `None` for a
    /// partition with no such record (every timestamp is earlier).
    ///
    /// ```no_run
    /// # async fn f(consumer: &mut kwire_client::Consumer) -> kwire_client::Result<()> {
    /// use std::collections::BTreeMap;
    /// use kwire_client::TopicPartition;
    /// let an_hour_ago = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64 - 3_600_000;
    /// let tp = TopicPartition::new("events", 0);
    /// let found = consumer.offsets_for_times(&BTreeMap::from([(tp.clone(), an_hour_ago)])).await?;
    /// if let Some(Some(at)) = found.get(&tp) {
    ///     consumer.seek(&tp, at.offset)?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn offsets_for_times<'a>(
        &'a self,
        times: &'a BTreeMap<TopicPartition, i64>,
    ) -> ClientFuture<'a, Result<BTreeMap<TopicPartition, Option<ListedOffset>>>> {
        ClientFuture::boxed(self.offsets_for_times_boxed(times))
    }

    async fn offsets_for_times_boxed(&self, times: &BTreeMap<TopicPartition, i64>) -> Result<BTreeMap<TopicPartition, Option<ListedOffset>>> {
        if let Some((tp, t)) = times.iter().find(|(_, t)| **t < 0) {
            return Err(Error::Config(format!("offsets_for_times: a negative timestamp ({t}) for {tp}")));
        }
        let specs: Vec<_> = times.iter().map(|(tp, t)| (tp.clone(), OffsetSpec::Timestamp(*t))).collect();
        let mut found = crate::offsets::list_offsets(&self.client, &specs, self.config.isolation_level.wire(), self.config.retry_backoff).await?;
        Ok(times.keys().map(|tp| (tp.clone(), found.remove(tp))).collect())
    }

    /// How many records an assigned partition's position is behind its end (the high
    /// watermark, or the last stable offset under read_committed), as the last fetch response
    /// gave it (Java's `currentLag`); `None` before the partition was fetched from, or when it
    /// is not assigned. No request is sent.
    pub fn current_lag(&self, tp: &TopicPartition) -> Option<i64> {
        self.subscription.partitions.get(tp).and_then(super::subscription::Subscription::lag)
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
    pub fn committed<'a>(&'a mut self, tps: &'a [TopicPartition]) -> ClientFuture<'a, Result<BTreeMap<TopicPartition, OffsetAndMetadata>>> {
        ClientFuture::boxed(self.committed_boxed(tps))
    }

    async fn committed_boxed(&mut self, tps: &[TopicPartition]) -> Result<BTreeMap<TopicPartition, OffsetAndMetadata>> {
        let group = self.group_id()?.to_owned();
        let coordinator = self.coordinator()?.clone();
        crate::offsets::committed(&coordinator, &group, Some(tps), self.config.group_instance_id.as_deref(), self.config.retry_backoff).await
    }

    /// Commits the positions of every assigned partition (what `poll` has returned).
    pub fn commit(&mut self) -> ClientFuture<'_, Result<()>> {
        ClientFuture::boxed(self.commit_boxed())
    }

    async fn commit_boxed(&mut self) -> Result<()> {
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
    pub fn commit_offsets<'a>(&'a mut self, offsets: &'a BTreeMap<TopicPartition, OffsetAndMetadata>) -> ClientFuture<'a, Result<()>> {
        ClientFuture::boxed(self.commit_offsets_boxed(offsets))
    }

    async fn commit_offsets_boxed(&mut self, offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>) -> Result<()> {
        if offsets.is_empty() {
            return Ok(());
        }
        let group = self.group_id()?.to_owned();
        let (generation, member_id) = self.group.as_ref().map_or((-1, String::new()), |g| g.commit_identity());
        let who = Committer { generation, member_id, instance_id: self.config.group_instance_id.clone() };
        let started = Instant::now();
        let r = crate::offsets::commit(self.coordinator()?, &group, &who, offsets).await;
        self.fetcher.metrics.commits.increment(1);
        if r.is_ok() {
            self.fetcher.metrics.commit_latency.record(crate::metrics::millis(started.elapsed()));
        }
        // The generation moved on: rejoin before the next poll returns records.
        if let Err(Error::Group(GroupError::RebalanceInProgress { .. } | GroupError::UnknownMember { .. } | GroupError::StaleGeneration { .. })) = &r {
            if let (Some(g), Some(code)) = (&self.group, r.as_ref().err().and_then(Error::code)) {
                g.request_rejoin(code);
            }
        }
        r
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
