//! The consumer's side of group membership (Java's `ConsumerCoordinator` callbacks): before a
//! classic rejoin it commits and revokes (eager) or keeps what it owns (cooperative), after it
//! takes the new assignment; under KIP-848 it reconciles the broker's target assignment. The
//! [`RebalanceListener`] hears of each change; its error is returned by the `poll` that ran it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

use kwire::{ErrorCode, Uuid};
use tracing::{debug, info, warn};

use super::listener::{Callback, RebalanceListener};
use super::{Consumer, ConsumerGroupMetadata, OffsetAndMetadata};
use crate::error::{ConsumerError, Error, Result};
use crate::future::ClientFuture;
use crate::group::{Group, GroupConfig, GroupProtocol, TopicPattern};
use crate::topic_partition::TopicPartition;

impl Consumer {
    /// Subscribes to `topics` as a member of the configured group (joining at the next poll).
    pub fn subscribe(&mut self, topics: &[&str]) -> Result<()> {
        self.join(topics, None)
    }

    /// Subscribes to every topic whose whole name matches the regular expression `pattern`,
    /// as a member of the configured group (joining at the next poll): topics created later
    /// that match join the subscription, deleted ones leave it. Internal topics never match.
    ///
    /// Under the classic protocol this consumer matches the names (as Java's
    /// `subscribe(Pattern)`), against metadata refreshed every `metadata_max_age` of the
    /// client's config; members rejoin when what matches changes. Under KIP-848 (`group_protocol:
    /// Consumer`) the group coordinator matches it (Java's `subscribe(SubscriptionPattern)`;
    /// RE2/J syntax; Kafka 4.0 or later, else an `UnsupportedVersion` error from `poll`).
    ///
    /// ```no_run
    /// # async fn f(client: kwire_client::Client) -> kwire_client::Result<()> {
    /// use kwire_client::{Consumer, ConsumerConfig};
    /// let mut consumer = Consumer::new(client, ConsumerConfig::group("audit"))?;
    /// consumer.subscribe_pattern("orders-.*")?;
    /// let records = consumer.poll(std::time::Duration::from_secs(1)).await?;
    /// # Ok(()) }
    /// ```
    pub fn subscribe_pattern(&mut self, pattern: &str) -> Result<()> {
        self.join(&[], Some(TopicPattern::new(pattern)?))
    }

    /// Subscribes as [`subscribe_pattern`](Consumer::subscribe_pattern) does, with `listener`
    /// told of every partition revoked, assigned and lost.
    pub fn subscribe_pattern_with_listener(&mut self, pattern: &str, listener: impl RebalanceListener + 'static) -> Result<()> {
        self.subscribe_pattern(pattern)?;
        self.listener = Some(Mutex::new(Box::new(listener)));
        Ok(())
    }

    fn join(&mut self, topics: &[&str], pattern: Option<TopicPattern>) -> Result<()> {
        let (Some(group_id), Some(coordinator)) = (self.config.group_id.clone(), self.coordinator.clone()) else {
            return Err(Error::Config("subscribing needs a group_id".into()));
        };
        if self.group.is_some() {
            return Err(Error::Consumer(ConsumerError::AlreadySubscribed));
        }
        let config = GroupConfig {
            group_id,
            instance_id: self.config.group_instance_id.clone(),
            protocol: self.config.group_protocol,
            assignors: self.config.assignors.clone(),
            session_timeout: self.config.session_timeout,
            heartbeat_interval: self.config.heartbeat_interval,
            max_poll_interval: self.config.max_poll_interval,
            retry_backoff: self.config.retry_backoff,
            request_timeout: self.client.config().connection.request_timeout,
            rack: self.config.client_rack.clone(),
        };
        let group = Group::new(config, coordinator, topics, pattern)?;
        self.create_unknown(topics);
        self.set_assignment(&BTreeSet::new());
        self.group = Some(group);
        self.listener_error = None;
        Ok(())
    }

    /// Subscribed topics not in the metadata are asked for with `allow_auto_topic_creation`
    /// (`allow.auto.create.topics`), in the background: once the broker has created them, the
    /// group's assignment takes them in as it does any new partitions.
    fn create_unknown(&self, topics: &[&str]) {
        let metadata = self.client.metadata();
        let unknown: Vec<String> = topics.iter().filter(|t| !metadata.topics.contains_key(**t)).map(|t| t.to_string()).collect();
        if !self.config.allow_auto_create_topics || unknown.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let client = self.client.clone();
        runtime.spawn(async move {
            for topic in &unknown {
                if let Err(e) = client.topic_with(topic, true).await {
                    tracing::debug!(topic, error = %e, "subscribed topic not created");
                }
            }
        });
    }

    /// Subscribes as [`subscribe`](Consumer::subscribe) does, with `listener` told of every
    /// partition revoked, assigned and lost.
    pub fn subscribe_with_listener(&mut self, topics: &[&str], listener: impl RebalanceListener + 'static) -> Result<()> {
        self.subscribe(topics)?;
        self.listener = Some(Mutex::new(Box::new(listener)));
        Ok(())
    }

    /// Leaves the group (as `close` does) and drops the assignment.
    pub fn unsubscribe(&mut self) -> ClientFuture<'_, Result<()>> {
        ClientFuture::boxed(self.unsubscribe_boxed())
    }

    async fn unsubscribe_boxed(&mut self) -> Result<()> {
        if self.group.is_some() {
            self.leave_group().await?;
        }
        self.group = None;
        self.listener = None;
        self.set_assignment(&BTreeSet::new());
        Ok(())
    }

    /// The group generation (classic) or member epoch (KIP-848), once joined.
    pub fn group_generation(&self) -> Option<i32> {
        self.group.as_ref()?.generation()
    }

    /// The group, generation and member id to give a transactional producer's
    /// `send_offsets_to_transaction` (Java's `groupMetadata()`): the current ones, so the group
    /// coordinator refuses the offsets if this member has since left the generation.
    pub fn group_metadata(&self) -> Result<ConsumerGroupMetadata> {
        let group_id = self.config.group_id.clone().ok_or_else(|| Error::Config("group_metadata needs a group_id".into()))?;
        let (generation_id, member_id) = self.group.as_ref().map_or((-1, String::new()), |g| g.commit_identity());
        Ok(ConsumerGroupMetadata { group_id, generation_id, member_id, group_instance_id: self.config.group_instance_id.clone() })
    }

    /// The member id in the group, once joined.
    pub fn member_id(&self) -> Option<String> {
        self.group.as_ref().map(Group::member_id).filter(|m| !m.is_empty())
    }

    /// Runs a listener callback (the listener is taken out meanwhile, so it can use the
    /// consumer); its error is kept for `poll`.
    async fn notify(&mut self, callback: Callback, partitions: &BTreeSet<TopicPartition>) {
        let Some(listener) = self.listener.take() else { return };
        let mut listener = listener.into_inner().unwrap_or_else(|p| p.into_inner());
        let r = match callback {
            Callback::Revoked => listener.on_partitions_revoked(self, partitions).await,
            Callback::Assigned => listener.on_partitions_assigned(self, partitions).await,
            Callback::Lost => listener.on_partitions_lost(self, partitions).await,
        };
        self.listener.get_or_insert(Mutex::new(listener));
        if let Err(e) = r {
            warn!(?callback, error = %e, "rebalance listener failed");
            if self.group.is_some() {
                self.listener_error.get_or_insert(e);
            }
        }
    }

    /// Joins, rebalances or reconciles as the heartbeats found necessary.
    pub(super) async fn maintain_group(&mut self) -> Result<()> {
        let Some(g) = self.group.as_mut() else { return Ok(()) };
        g.polled();
        if let Some(e) = g.fatal() {
            return Err(e);
        }
        match g.protocol() {
            GroupProtocol::Classic => {
                g.match_pattern(self.client.config().metadata_max_age).await;
                if g.needs_join() {
                    self.join_classic().await?;
                } else {
                    g.check_snapshot().await;
                }
            }
            GroupProtocol::Consumer => {
                g.heartbeat();
                self.reconcile().await?;
            }
        }
        match self.listener_error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// A classic rejoin: prepare (lose, or commit and maybe revoke), join, take the new
    /// assignment.
    async fn join_classic(&mut self) -> Result<()> {
        let Some(g) = self.group.as_ref() else { return Ok(()) };
        let (lost, cooperative) = (g.lost_generation(), g.cooperative());
        self.prepare_join(lost, cooperative).await;
        let owned = self.assignment();
        let Some(g) = self.group.as_mut() else { return Ok(()) };
        let assigned = g.join(&owned).await?;
        self.assigned(owned, assigned, cooperative).await;
        Ok(())
    }

    /// As Java's `onJoinPrepare`: a member the group forgot (or moved past) has lost its
    /// partitions; otherwise it commits, then (eager) revokes everything or (cooperative)
    /// keeps what it owns until the new assignment says otherwise.
    async fn prepare_join(&mut self, lost: bool, cooperative: bool) {
        if self.subscription.partitions.is_empty() {
            return;
        }
        let group = self.config.group_id.clone().unwrap_or_default();
        let owned = self.assignment();
        if lost {
            warn!(group, partitions = owned.len(), "no longer a member of the generation: partitions lost");
            self.notify(Callback::Lost, &owned).await;
            self.set_assignment(&BTreeSet::new());
            return;
        }
        if self.config.enable_auto_commit {
            if let Err(e) = self.commit().await {
                warn!(group, error = %e, "commit before rebalancing failed");
            }
        }
        if !cooperative {
            info!(group, partitions = owned.len(), "revoking every partition to rejoin");
            self.notify(Callback::Revoked, &owned).await;
            self.set_assignment(&BTreeSet::new());
        }
    }

    /// As Java's `onJoinComplete`: cooperative, gives up what is no longer ours (committing
    /// in the listener, with the new generation), then rejoins so the new owners get it; then
    /// takes the assignment.
    async fn assigned(&mut self, owned: BTreeSet<TopicPartition>, assigned: BTreeSet<TopicPartition>, cooperative: bool) {
        let revoked: BTreeSet<TopicPartition> = owned.difference(&assigned).cloned().collect();
        if cooperative && !revoked.is_empty() {
            info!(revoked = ?revoked.iter().map(ToString::to_string).collect::<Vec<_>>(), "revoking, then rejoining");
            self.notify(Callback::Revoked, &revoked).await;
            if let Some(g) = &self.group {
                g.request_rejoin(ErrorCode::NONE);
            }
        }
        self.set_assignment(&assigned);
        self.fetcher.metrics.rebalances.increment(1);
        let added: BTreeSet<TopicPartition> = assigned.difference(&owned).cloned().collect();
        self.notify(Callback::Assigned, &added).await;
    }

    /// KIP-848: applies the broker's target assignment (partitions lost when fenced).
    async fn reconcile(&mut self) -> Result<()> {
        let Some(g) = &self.group else { return Ok(()) };
        let (fenced, target) = g.take_assignment();
        if fenced && !self.subscription.partitions.is_empty() {
            warn!(partitions = self.subscription.partitions.len(), "fenced by the group: partitions lost, rejoining");
            let lost = self.assignment();
            self.notify(Callback::Lost, &lost).await;
            self.set_assignment(&BTreeSet::new());
        }
        let Some(target) = target else { return Ok(()) };
        let mut metadata = self.client.metadata();
        if target.iter().any(|(id, _)| !metadata.topics.values().any(|t| t.id == *id)) {
            metadata = self.client.refresh_metadata().await?;
        }
        let names: HashMap<Uuid, &str> = metadata.topics.values().map(|t| (t.id, t.name.as_str())).collect();
        let mut wanted = BTreeSet::new();
        for (id, ps) in &target {
            let Some(name) = names.get(id) else {
                // A topic this client cannot see yet: try again at the next poll.
                if let Some(g) = &self.group {
                    g.defer_assignment(target.clone());
                }
                return Ok(());
            };
            wanted.extend(ps.iter().map(|p| TopicPartition::new(*name, *p)));
        }
        let revoked: Vec<TopicPartition> = self.subscription.partitions.keys().filter(|tp| !wanted.contains(*tp)).cloned().collect();
        if !revoked.is_empty() && self.config.enable_auto_commit {
            let offsets: BTreeMap<TopicPartition, OffsetAndMetadata> = revoked
                .iter()
                .filter_map(|tp| {
                    let s = self.subscription.partitions.get(tp)?;
                    s.position.map(|o| (tp.clone(), OffsetAndMetadata { offset: o, leader_epoch: s.epoch, metadata: None }))
                })
                .collect();
            if let Err(e) = self.commit_offsets(&offsets).await {
                warn!(error = %e, "commit of revoked partitions failed");
            }
        }
        let added: BTreeSet<TopicPartition> = wanted.iter().filter(|tp| !self.subscription.partitions.contains_key(*tp)).cloned().collect();
        let changed = !revoked.is_empty() || !added.is_empty();
        if changed {
            self.fetcher.metrics.rebalances.increment(1);
            info!(revoked = revoked.len(), partitions = ?wanted.iter().map(ToString::to_string).collect::<Vec<_>>(), "reconciled the assignment");
        } else {
            debug!("the assignment is unchanged");
        }
        if !revoked.is_empty() {
            self.notify(Callback::Revoked, &revoked.iter().cloned().collect()).await;
        }
        self.set_assignment(&wanted);
        if changed {
            self.notify(Callback::Assigned, &added).await;
        }
        if let Some(g) = &self.group {
            g.reconciled(target);
        }
        Ok(())
    }

    /// As Java's `onLeavePrepare`, the listener hears of the partitions going (lost, if the
    /// group had already dropped this member); then the member leaves.
    pub(super) async fn leave_group(&mut self) -> Result<()> {
        if !self.subscription.partitions.is_empty() {
            let owned = self.assignment();
            let lost = self.group.as_ref().is_some_and(Group::lost);
            self.notify(if lost { Callback::Lost } else { Callback::Revoked }, &owned).await;
        }
        let listener_error = self.listener_error.take();
        if let Some(g) = self.group.as_mut() {
            g.leave().await;
        }
        listener_error.map_or(Ok(()), Err)
    }
}
