//! Java's `ConsumerRebalanceListener`: what a subscribed consumer's application hears of
//! partitions revoked, assigned and lost.

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;

use super::Consumer;
use crate::error::Result;
use crate::topic_partition::TopicPartition;

/// What [`RebalanceListener`] callbacks return: an error is returned by the `poll` (or
/// `close`) that ran the callback, once the rebalance step is done (as Java throws it).
pub type ListenerFuture<'a> = Pin<Box<dyn Future<Output = Result<()>> + Send + 'a>>;

/// Java's `ConsumerRebalanceListener`, for both group protocols. Called from within `poll`
/// (and `close`/`unsubscribe`); the callbacks may commit through `consumer`, not poll.
pub trait RebalanceListener: Send {
    /// `partitions` are about to go to another member: they are still assigned, so their
    /// positions can be committed now. Automatic commits have already been made.
    fn on_partitions_revoked<'a>(&'a mut self, consumer: &'a mut Consumer, partitions: &'a BTreeSet<TopicPartition>) -> ListenerFuture<'a> {
        let _ = (consumer, partitions);
        Box::pin(async { Ok(()) })
    }

    /// `partitions` were added to the assignment (classic: after every rebalance, maybe none).
    fn on_partitions_assigned<'a>(&'a mut self, consumer: &'a mut Consumer, partitions: &'a BTreeSet<TopicPartition>) -> ListenerFuture<'a> {
        let _ = (consumer, partitions);
        Box::pin(async { Ok(()) })
    }

    /// The group took `partitions` away already (this member was fenced or forgotten): other
    /// members may own them, so committing is pointless. By default, as Java's, the same as
    /// revoked.
    fn on_partitions_lost<'a>(&'a mut self, consumer: &'a mut Consumer, partitions: &'a BTreeSet<TopicPartition>) -> ListenerFuture<'a> {
        self.on_partitions_revoked(consumer, partitions)
    }
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Callback {
    Revoked,
    Assigned,
    Lost,
}
