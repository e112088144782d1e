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

/// One batch's outcome, shared by its records' [`Delivery`]s (each knows its index). A batch
/// split for being too large (MESSAGE_TOO_LARGE) completes in parts: each part's outcome covers
/// its range of the original indexes, and the deliveries resolve once every part has one.
struct Completion {
    topic: Arc<str>,
    partition: i32,
    state: Mutex<CompletionState>,
}

#[derive(Default)]
struct CompletionState {
    /// Each completed part's outcome: (first index, end index, outcome); one entry covering
    /// every index for a batch that was never split.
    outcomes: Vec<(u32, u32, Outcome)>,
    /// Completers not yet completed (1, plus 1 per split).
    open: usize,
    wakers: Vec<Waker>,
}

impl Completion {
    fn lock(&self) -> MutexGuard<'_, CompletionState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The batch's handle on its completion (or on its range of it, after a split): completes it
/// once; dropped without that (the sender gone), it fails the records, as a dropped channel
/// would.
pub(crate) struct Completer {
    done: Option<Arc<Completion>>,
    /// The original indexes this completer answers for, `start..end`.
    start: u32,
    end: u32,
}

impl Completer {
    /// A completion for a new batch of `topic`'s `partition`.
    pub(crate) fn new(topic: Arc<str>, partition: i32) -> Completer {
        let state = Mutex::new(CompletionState { open: 1, ..Default::default() });
        Completer { done: Some(Arc::new(Completion { topic, partition, state })), start: 0, end: u32::MAX }
    }

    /// The delivery of the batch's record at `index` (its offset delta).
    pub(crate) fn delivery(&self, index: u32, timestamp: i64) -> Delivery {
        let done = self.done.clone().unwrap_or_else(|| Arc::new(Completion { topic: "".into(), partition: -1, state: Mutex::default() }));
        Delivery { done, index: self.start.saturating_add(index), timestamp, slot: None }
    }

    /// The index in the original batch of this completer's first record.
    pub(crate) fn first_index(&self) -> u32 {
        self.start
    }

    /// Splits off the records from offset delta `at` on: this completer keeps those before,
    /// the one returned answers for the rest (its offset deltas start at 0 again).
    pub(crate) fn split_off(&mut self, at: u32) -> Completer {
        let at = self.start.saturating_add(at).min(self.end);
        if let Some(done) = &self.done {
            done.lock().open += 1;
        }
        let tail = Completer { done: self.done.clone(), start: at, end: self.end };
        self.end = at;
        tail
    }

    /// Resolves the deliveries of this completer's records; those of the whole batch resolve
    /// once every part of it is complete.
    pub(crate) fn complete(mut self, outcome: Outcome) {
        self.finish(outcome);
    }

    fn finish(&mut self, outcome: Outcome) {
        let Some(done) = self.done.take() else { return };
        let wakers = {
            let mut state = done.lock();
            state.outcomes.push((self.start, self.end, outcome));
            state.open = state.open.saturating_sub(1);
            if state.open > 0 {
                return;
            }
            std::mem::take(&mut state.wakers)
        };
        for w in wakers {
            w.wake();
        }
    }
}

impl Drop for Completer {
    fn drop(&mut self) {
        self.finish(Err(Error::Producer(ProducerError::Dropped)));
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
        if state.open > 0 {
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
        // The part holding this record (the whole batch unless it was split).
        let index = this.index;
        let part = state.outcomes.iter().find(|(start, end, _)| (*start..*end).contains(&index));
        let (start, (base, append)) = match part {
            Some((start, _, Ok(Some(offsets)))) => (*start, *offsets),
            Some((start, _, Ok(None))) => (*start, (-1, -1)),
            Some((_, _, Err(e))) => return Poll::Ready(Err(e.clone())),
            None => return Poll::Ready(Err(Error::Producer(ProducerError::Dropped))),
        };
        drop(state);
        let offset = if base >= 0 { base.saturating_add(i64::from(index.saturating_sub(start))) } else { -1 };
        let timestamp = if append >= 0 { append } else { this.timestamp };
        Poll::Ready(Ok(RecordMetadata { topic: this.done.topic.clone(), partition: this.done.partition, offset, timestamp }))
    }
}
