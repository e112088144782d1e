//! Positions: from the committed offset or the reset policy when unknown, and validated
//! after a leader change (OffsetForLeaderEpoch; the fetcher moves a position back past a
//! truncated log).

use std::collections::BTreeMap;

use kwire::messages::{
    offset_for_leader_epoch_request::{OffsetForLeaderPartition, OffsetForLeaderTopic},
    OffsetForLeaderEpochRequest,
};
use kwire::{ByteString, ErrorCode};
use tracing::{debug, info, warn};

use super::{Consumer, OffsetReset, OffsetSpec};
use crate::error::{Error, Result};
use crate::route::Route;
use crate::topic_partition::TopicPartition;

impl Consumer {
    /// Positions for partitions that have none: the committed offset (with a group id and no
    /// explicit reset), else the reset policy.
    pub(super) async fn resolve_positions(&mut self) -> Result<()> {
        let missing: Vec<TopicPartition> = self.subscription.partitions.iter().filter(|(_, s)| s.position.is_none()).map(|(tp, _)| tp.clone()).collect();
        if missing.is_empty() {
            return Ok(());
        }
        let mut need_reset: Vec<(TopicPartition, OffsetReset)> = Vec::new();
        let from_committed: Vec<TopicPartition> =
            missing.iter().filter(|tp| self.subscription.partitions.get(*tp).is_some_and(|s| s.reset.is_none())).cloned().collect();
        let committed = if self.config.group_id.is_some() && !from_committed.is_empty() { self.committed(&from_committed).await? } else { BTreeMap::new() };
        for tp in &missing {
            let Some(st) = self.subscription.partitions.get_mut(tp) else { continue };
            match (st.reset, committed.get(tp)) {
                (None, Some(c)) => {
                    debug!(partition = %tp, offset = c.offset, "position from the committed offset");
                    st.position = Some(c.offset);
                    st.epoch = c.leader_epoch;
                }
                (Some(r), _) => need_reset.push((tp.clone(), r)),
                (None, None) => need_reset.push((tp.clone(), self.config.auto_offset_reset)),
            }
        }
        if let Some((tp, _)) = need_reset.iter().find(|(_, r)| *r == OffsetReset::None) {
            return Err(Error::NoOffset(tp.clone()));
        }
        if need_reset.is_empty() {
            return Ok(());
        }
        let specs: Vec<(TopicPartition, OffsetSpec)> =
            need_reset.into_iter().map(|(tp, r)| (tp, if r == OffsetReset::Earliest { OffsetSpec::Earliest } else { OffsetSpec::Latest })).collect();
        let found = self.list_offsets(&specs).await?;
        for (tp, spec) in specs {
            if let (Some(st), Some(o)) = (self.subscription.partitions.get_mut(&tp), found.get(&tp)) {
                info!(partition = %tp, offset = o.0, ?spec, "position reset");
                st.position = Some(o.0);
                st.epoch = None;
                st.reset = None;
            }
        }
        Ok(())
    }

    /// After a leader change: asks the new leader where the epoch of the last record read
    /// ends (OffsetForLeaderEpoch); a log truncated below the position moves the position
    /// back to the end of that epoch (or fails, with reset policy none).
    pub(super) async fn validate_positions(&mut self) -> Result<()> {
        let metadata = self.client.metadata();
        let mut by_leader: BTreeMap<i32, Vec<(TopicPartition, i32, i32)>> = BTreeMap::new();
        let mut refresh = false;
        for (tp, st) in self.subscription.partitions.iter_mut() {
            if !st.needs_validation {
                continue;
            }
            let Some(epoch) = st.epoch else {
                st.needs_validation = false; // nothing read yet: nothing to validate
                continue;
            };
            match metadata.topics.get(&tp.topic).and_then(|t| t.partitions.iter().find(|p| p.index == tp.partition)) {
                Some(p) if p.leader >= 0 => by_leader.entry(p.leader).or_default().push((tp.clone(), p.leader_epoch, epoch)),
                _ => refresh = true,
            }
        }
        for (leader, parts) in by_leader {
            let mut topics: BTreeMap<&str, Vec<OffsetForLeaderPartition>> = BTreeMap::new();
            for (tp, current, epoch) in &parts {
                topics.entry(tp.topic.as_str()).or_default().push(OffsetForLeaderPartition {
                    partition: tp.partition,
                    current_leader_epoch: *current,
                    leader_epoch: *epoch,
                    ..Default::default()
                });
            }
            let request = OffsetForLeaderEpochRequest {
                replica_id: -1,
                topics: topics
                    .into_iter()
                    .map(|(t, partitions)| OffsetForLeaderTopic { topic: ByteString::from(t.to_owned()), partitions, ..Default::default() })
                    .collect(),
                ..Default::default()
            };
            let response = match self.client.send(Route::Node(leader), request).await {
                Ok(r) => r,
                Err(e) if e.is_retriable() => {
                    warn!(leader, error = %e, "OffsetForLeaderEpoch failed");
                    refresh = true;
                    continue;
                }
                Err(e) => return Err(e),
            };
            for t in &response.topics {
                for p in &t.partitions {
                    let tp = TopicPartition::new(t.topic.to_string(), p.partition);
                    let Some((_, current, _)) = parts.iter().find(|(x, _, _)| *x == tp) else { continue };
                    if !ErrorCode(p.error_code).is_ok() {
                        debug!(partition = %tp, code = ?ErrorCode(p.error_code).name(), "OffsetForLeaderEpoch: retrying after a metadata refresh");
                        refresh = true;
                        continue;
                    }
                    let current = *current;
                    if p.end_offset < 0 {
                        // The leader knows nothing of that epoch: start over by the reset policy.
                        self.fetcher.truncated(self.config.auto_offset_reset, &mut self.subscription, &tp, None)?;
                    } else {
                        self.fetcher.truncated(self.config.auto_offset_reset, &mut self.subscription, &tp, Some((p.leader_epoch, p.end_offset)))?;
                    }
                    self.fetcher.stats.validations += 1;
                    if let Some(st) = self.subscription.partitions.get_mut(&tp) {
                        st.needs_validation = false;
                        st.validated_epoch = current;
                    }
                }
            }
        }
        if refresh {
            tokio::time::sleep(self.config.retry_backoff).await;
            self.client.refresh_metadata().await?;
        }
        Ok(())
    }
}
