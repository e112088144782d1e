//! What `send` hands back: a [`Delivery`] per record, resolved through the one
//! [`Completion`] its batch shares, so `send` allocates no channel per record.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use crate::error::{Error, ProducerError, Result};

/// Where a record was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordMetadata {
    /// The topic (the record's own name, shared).
    pub topic: Arc<str>,
    /// The partition.
    pub partition: i32,
    /// The offset (-1 with acks=0).
    pub offset: i64,
    /// The record's timestamp, or the broker's append time for LogAppendTime topics.
    pub timestamp: i64,
}

/// A batch's outcome: the base offset and log append time (-1 unless LogAppendTime) from the
/// broker, `None` with acks=0.
pub(crate) type Outcome = Result<Option<(i64, i64)>>;

/// One batch's outcome, shared by its records' [`Delivery`]s (each knows its index).
struct Completion {
    topic: Arc<str>,
    partition: i32,
    state: Mutex<CompletionState>,
}

#[derive(Default)]
struct CompletionState {
    outcome: Option<Outcome>,
    wakers: Vec<Waker>,
}

impl Completion {
    fn lock(&self) -> MutexGuard<'_, CompletionState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The batch's handle on its completion: completes it once; dropped without that (the sender
/// gone), it fails the records, as a dropped channel would.
pub(crate) struct Completer(Arc<Completion>);

impl Completer {
    /// A completion for a new batch of `topic`'s `partition`.
    pub(crate) fn new(topic: Arc<str>, partition: i32) -> Completer {
        Completer(Arc::new(Completion { topic, partition, state: Mutex::new(CompletionState::default()) }))
    }

    /// The delivery of the batch's record at `index` (its offset delta).
    pub(crate) fn delivery(&self, index: u32, timestamp: i64) -> Delivery {
        Delivery { done: self.0.clone(), index, timestamp, slot: None }
    }

    /// Resolves every delivery of the batch (the first outcome wins).
    pub(crate) fn complete(&self, outcome: Outcome) {
        let wakers = {
            let mut state = self.0.lock();
            if state.outcome.is_some() {
                return;
            }
            state.outcome = Some(outcome);
            std::mem::take(&mut state.wakers)
        };
        for w in wakers {
            w.wake();
        }
    }
}

impl Drop for Completer {
    fn drop(&mut self) {
        self.complete(Err(Error::Producer(ProducerError::Dropped)));
    }
}

/// The outcome of one `send`: resolves when the record is written or has failed.
pub struct Delivery {
    done: Arc<Completion>,
    /// The record's place in its batch (its offset delta).
    index: u32,
    timestamp: i64,
    /// Where this delivery's waker is in the completion's list, once registered.
    slot: Option<usize>,
}

impl Delivery {
    /// The partition the record went to.
    pub(crate) fn partition(&self) -> i32 {
        self.done.partition
    }
}

impl Future for Delivery {
    type Output = Result<RecordMetadata>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let mut state = this.done.lock();
        let (base, append) = match &state.outcome {
            Some(Ok(Some(offsets))) => *offsets,
            Some(Ok(None)) => (-1, -1),
            Some(Err(e)) => return Poll::Ready(Err(e.clone())),
            None => {
                match this.slot.and_then(|i| state.wakers.get_mut(i)) {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    Some(w) => w.clone_from(cx.waker()),
                    None => {
                        this.slot = Some(state.wakers.len());
                        state.wakers.push(cx.waker().clone());
                    }
                }
                return Poll::Pending;
            }
        };
        drop(state);
        let offset = if base >= 0 { base.saturating_add(i64::from(this.index)) } else { -1 };
        let timestamp = if append >= 0 { append } else { this.timestamp };
        Poll::Ready(Ok(RecordMetadata { topic: this.done.topic.clone(), partition: this.done.partition, offset, timestamp }))
    }
}
