//! What a test does to the cluster's requests: hooks per api (observe, answer with an error,
//! delay, apply and lose the response, disconnect, corrupt a batch), and the journal of every
//! request for assertions afterwards.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use kwire::{ApiKey, ErrorCode, RequestKind, ResponseKind};

/// What a hook does to a request it matches.
#[derive(Clone)]
#[non_exhaustive]
pub enum Action {
    /// Nothing (the hook only counts or observes).
    Pass,
    /// Answers with Kafka's error response for the api with this code, without applying the
    /// request (every partition, topic or group in it gets the code).
    Error(ErrorCode),
    /// Holds the request this long, then handles it.
    Delay(Duration),
    /// Applies the request, then closes the connection without answering: the client cannot
    /// know the outcome (a produce that was written, say).
    DropResponse,
    /// Closes the connection before the request is applied.
    Disconnect,
    /// Applies the request and answers, with the CRC of each record batch in the response
    /// flipped (a Fetch the client must refuse).
    CorruptCrc,
    /// Answers with the response this function returns (or handles the request as usual when
    /// it returns `None`), without applying the request.
    Respond(Responder),
}

/// A test's own answer to a request ([`Action::Respond`]).
pub type Responder = Arc<dyn Fn(&RequestKind) -> Option<ResponseKind> + Send + Sync>;

impl fmt::Debug for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Pass => f.write_str("Pass"),
            Action::Error(code) => write!(f, "Error({})", code.name().unwrap_or("?")),
            Action::Delay(d) => write!(f, "Delay({d:?})"),
            Action::DropResponse => f.write_str("DropResponse"),
            Action::Disconnect => f.write_str("Disconnect"),
            Action::CorruptCrc => f.write_str("CorruptCrc"),
            Action::Respond(_) => f.write_str("Respond(..)"),
        }
    }
}

/// A request a hook sees: which broker and connection it came on, and the request.
#[derive(Debug)]
pub struct Seen<'a> {
    /// The broker's node id.
    pub broker: i32,
    /// The connection (numbered from 0 in the order the cluster accepted them).
    pub connection: u64,
    /// The client id of the request header.
    pub client_id: &'a str,
    /// The api version.
    pub version: i16,
    /// The request.
    pub request: &'a RequestKind,
}

type Filter = Arc<dyn Fn(&Seen<'_>) -> bool + Send + Sync>;

/// A rule for requests of one api (or every api): what to do with the ones it matches, and
/// how many times.
///
/// ```
/// use kwire::{ApiKey, ErrorCode};
/// use kwire_fake::{Action, Hook};
///
/// // The next two Produce requests to broker 1 are refused as if it were not the leader.
/// let hook = Hook::on(ApiKey::Produce).broker(1).times(2).action(Action::Error(ErrorCode::NOT_LEADER_OR_FOLLOWER));
/// # let _ = hook;
/// ```
#[derive(Clone)]
pub struct Hook {
    pub(crate) api: Option<ApiKey>,
    pub(crate) broker: Option<i32>,
    pub(crate) filter: Option<Filter>,
    pub(crate) remaining: Option<usize>,
    pub(crate) action: Action,
}

impl fmt::Debug for Hook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hook").field("api", &self.api).field("broker", &self.broker).field("remaining", &self.remaining).field("action", &self.action).finish()
    }
}

impl Hook {
    /// A hook for requests of `api`, passing them until given an action, for as long as it
    /// is installed.
    pub fn on(api: ApiKey) -> Hook {
        Hook { api: Some(api), broker: None, filter: None, remaining: None, action: Action::Pass }
    }

    /// A hook for requests of every api.
    pub fn any() -> Hook {
        Hook { api: None, broker: None, filter: None, remaining: None, action: Action::Pass }
    }

    /// Only requests to this broker.
    pub fn broker(mut self, broker: i32) -> Hook {
        self.broker = Some(broker);
        self
    }

    /// Only requests this function accepts (it may also observe them).
    pub fn when(mut self, filter: impl Fn(&Seen<'_>) -> bool + Send + Sync + 'static) -> Hook {
        self.filter = Some(Arc::new(filter));
        self
    }

    /// The first `n` requests it matches only; then it removes itself.
    pub fn times(mut self, n: usize) -> Hook {
        self.remaining = Some(n);
        self
    }

    /// The next request it matches only.
    pub fn once(self) -> Hook {
        self.times(1)
    }

    /// What to do.
    pub fn action(mut self, action: Action) -> Hook {
        self.action = action;
        self
    }

    fn matches(&self, seen: &Seen<'_>) -> bool {
        self.api.is_none_or(|a| seen.request.api_key() == a) && self.broker.is_none_or(|b| b == seen.broker) && self.filter.as_ref().is_none_or(|f| f(seen))
    }
}

/// A hook's id, to remove it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HookId(u64);

/// The installed hooks, in the order they were added: the first that matches acts.
#[derive(Default)]
pub(crate) struct Hooks {
    next: u64,
    hooks: Vec<(HookId, Hook)>,
}

impl Hooks {
    pub(crate) fn add(&mut self, hook: Hook) -> HookId {
        let id = HookId(self.next);
        self.next += 1;
        self.hooks.push((id, hook));
        id
    }

    pub(crate) fn clear(&mut self) {
        self.hooks.clear();
    }

    pub(crate) fn remove(&mut self, id: HookId) -> bool {
        let before = self.hooks.len();
        self.hooks.retain(|(i, _)| *i != id);
        self.hooks.len() != before
    }

    /// The action of the first hook matching `seen` (counted against its times).
    pub(crate) fn decide(&mut self, seen: &Seen<'_>) -> Option<Action> {
        let at = self.hooks.iter().position(|(_, h)| h.matches(seen))?;
        let (_, hook) = &mut self.hooks[at];
        let action = hook.action.clone();
        if let Some(n) = hook.remaining.as_mut() {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.hooks.remove(at);
            }
        }
        Some(action)
    }
}

/// One request as the journal keeps it.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Its place among every request the cluster took (from 0).
    pub seq: u64,
    /// When it came, on the cluster's clock (ms since the epoch).
    pub at_ms: i64,
    /// The broker it came to.
    pub broker: i32,
    /// Its connection.
    pub connection: u64,
    /// The client id of its header.
    pub client_id: String,
    /// The api.
    pub api: ApiKey,
    /// The api version.
    pub version: i16,
    /// The request.
    pub request: RequestKind,
    /// What a hook did to it, if one matched.
    pub action: Option<String>,
    /// The error codes of the response, in order (empty without a response).
    pub errors: Vec<ErrorCode>,
    /// The throttle time of the response in ms, from a quota or a test's throttle (0: none).
    pub throttle_ms: i32,
}

/// The last requests, up to a capacity.
pub(crate) struct Journal {
    capacity: usize,
    next: u64,
    entries: VecDeque<Entry>,
}

impl Journal {
    pub(crate) fn new(capacity: usize) -> Journal {
        Journal { capacity, next: 0, entries: VecDeque::new() }
    }

    /// Takes an entry in; returns its seq.
    pub(crate) fn push(&mut self, mut entry: Entry) -> u64 {
        entry.seq = self.next;
        self.next += 1;
        if self.capacity > 0 {
            if self.entries.len() == self.capacity {
                self.entries.pop_front();
            }
            self.entries.push_back(entry);
        }
        self.next - 1
    }

    /// Records what a hook did to entry `seq`.
    pub(crate) fn acted(&mut self, seq: u64, action: &Action) {
        if let Some(e) = self.entries.iter_mut().rev().find(|e| e.seq == seq) {
            let name = format!("{action:?}");
            // The variant's name, without its data.
            e.action = Some(name.split('(').next().unwrap_or(&name).to_owned());
        }
    }

    /// Records the response's error codes on entry `seq`.
    pub(crate) fn answered(&mut self, seq: u64, errors: Vec<ErrorCode>) {
        if let Some(e) = self.entries.iter_mut().rev().find(|e| e.seq == seq) {
            e.errors = errors;
        }
    }

    pub(crate) fn throttled(&mut self, seq: u64, ms: i32) {
        if let Some(e) = self.entries.iter_mut().rev().find(|e| e.seq == seq) {
            e.throttle_ms = ms;
        }
    }

    pub(crate) fn entries(&self) -> Vec<Entry> {
        self.entries.iter().cloned().collect()
    }
}
