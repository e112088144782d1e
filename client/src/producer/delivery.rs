//! How a record's outcome reaches its sender: the [`Delivery`] `send` hands back, resolved
//! through the one [`Completion`] its batch shares (no channel per record), or the callback
//! given to `send_with`, kept by the batch's [`Completer`] and called with the batch's outcome.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use tracing::warn;

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
        crate::sync::lock(&self.state)
    }
}

/// A record's callback, as given to `send_with`.
pub(crate) type Callback = Box<dyn FnOnce(Result<RecordMetadata>) + Send>;

/// The batch's handle on its completion (or on its range of it, after a split): completes it
/// once; dropped without that (the producer's state dropped with the sender's tasks, as when
/// the runtime shuts down), it fails the records, as a dropped channel would, and calls their
/// callbacks then: nothing else is left to.
pub(crate) struct Completer {
    done: Option<Arc<Completion>>,
    /// The original indexes this completer answers for, `start..end`.
    start: u32,
    end: u32,
    /// The callbacks of its records sent with `send_with`: (original index, timestamp,
    /// callback), in index order.
    callbacks: Vec<(u32, i64, Callback)>,
}

impl Completer {
    /// A completion for a new batch of `topic`'s `partition`.
    pub(crate) fn new(topic: Arc<str>, partition: i32) -> Completer {
        let state = Mutex::new(CompletionState { open: 1, ..Default::default() });
        Completer { done: Some(Arc::new(Completion { topic, partition, state })), start: 0, end: u32::MAX, callbacks: Vec::new() }
    }

    /// How the batch's record at `index` (its offset delta) reports its outcome: a
    /// [`Delivery`] without a callback; with one, the callback, called when the batch completes.
    pub(crate) fn report(&mut self, index: u32, timestamp: i64, callback: Option<Callback>) -> Option<Delivery> {
        match callback {
            None => Some(self.delivery(index, timestamp)),
            Some(f) => {
                self.callbacks.push((self.start.saturating_add(index), timestamp, f));
                None
            }
        }
    }

    /// The delivery of the batch's record at `index` (its offset delta).
    fn delivery(&self, index: u32, timestamp: i64) -> Delivery {
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
        let callbacks = self.callbacks.split_off(self.callbacks.partition_point(|c| c.0 < at));
        let tail = Completer { done: self.done.clone(), start: at, end: self.end, callbacks };
        self.end = at;
        tail
    }

    /// Resolves the deliveries of this completer's records (those of the whole batch resolve
    /// once every part of it is complete); hands back its records' callbacks with the outcome,
    /// for the sender to call once the producer's lock is released.
    #[must_use]
    pub(crate) fn complete(mut self, outcome: Outcome) -> Option<Fired> {
        self.finish(outcome)
    }

    fn finish(&mut self, outcome: Outcome) -> Option<Fired> {
        let done = self.done.take()?;
        let fired = (!self.callbacks.is_empty()).then(|| Fired {
            topic: done.topic.clone(),
            partition: done.partition,
            start: self.start,
            outcome: outcome.clone(),
            callbacks: std::mem::take(&mut self.callbacks),
        });
        let wakers = {
            let mut state = done.lock();
            state.outcomes.push((self.start, self.end, outcome));
            state.open = state.open.saturating_sub(1);
            if state.open > 0 {
                Vec::new()
            } else {
                std::mem::take(&mut state.wakers)
            }
        };
        for w in wakers {
            w.wake();
        }
        fired
    }
}

impl Drop for Completer {
    fn drop(&mut self) {
        if let Some(fired) = self.finish(Err(Error::Producer(ProducerError::Dropped))) {
            fired.call();
        }
    }
}

/// A completed batch's (or part's) callbacks with its outcome, not called yet.
pub(crate) struct Fired {
    topic: Arc<str>,
    partition: i32,
    start: u32,
    outcome: Outcome,
    callbacks: Vec<(u32, i64, Callback)>,
}

impl Fired {
    /// Calls each callback with its record's metadata or the batch's error, in record order.
    /// A callback that panics is logged and the others still called (as Java's producer logs
    /// an exception thrown by a callback).
    pub(crate) fn call(self) {
        let Fired { topic, partition, start, outcome, callbacks } = self;
        for (index, timestamp, f) in callbacks {
            let result = metadata(&topic, partition, start, &outcome, index, timestamp);
            if catch_unwind(AssertUnwindSafe(move || f(result))).is_err() {
                warn!(%topic, partition, "a send_with callback panicked");
            }
        }
    }
}

/// A record's metadata from its batch part's outcome (`start`: the part's first original
/// index; `index`: the record's).
fn metadata(topic: &Arc<str>, partition: i32, start: u32, outcome: &Outcome, index: u32, timestamp: i64) -> Result<RecordMetadata> {
    let (base, append) = match outcome {
        Ok(Some(offsets)) => *offsets,
        Ok(None) => (-1, -1),
        Err(e) => return Err(e.clone()),
    };
    let offset = if base >= 0 { base.saturating_add(i64::from(index.saturating_sub(start))) } else { -1 };
    let timestamp = if append >= 0 { append } else { timestamp };
    Ok(RecordMetadata { topic: topic.clone(), partition, offset, timestamp })
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
        Poll::Ready(match state.outcomes.iter().find(|(start, end, _)| (*start..*end).contains(&index)) {
            Some((start, _, outcome)) => metadata(&this.done.topic, this.done.partition, *start, outcome, index, this.timestamp),
            None => Err(Error::Producer(ProducerError::Dropped)),
        })
    }
}
