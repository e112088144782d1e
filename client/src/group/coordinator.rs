//! A coordinator (the broker FindCoordinator names for a group or a transactional id): one
//! lookup and one cache, shared by the consumer's offset requests, its JoinGroup/SyncGroup and
//! its heartbeat task, or by a transactional producer's requests. A request that finds the
//! coordinator gone forgets it; the next one looks it up again.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use kwire::messages::FindCoordinatorRequest;
use kwire::{ApiKey, ByteString, ErrorCode, RequestKind, ResponseKind};
use tracing::debug;

use crate::cluster::Client;
use crate::error::{Error, GroupError, Resource, Result};
use crate::retry::{Backoff, Retry};

/// How many attempts a coordinator request gets while the coordinator moves or loads.
const ATTEMPTS: u32 = 30;

/// What a coordinator coordinates (FindCoordinator's key type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CoordinatorKind {
    /// A consumer group (key type 0).
    Group,
    /// A transactional id (key type 1).
    Transaction,
}

impl CoordinatorKind {
    fn key_type(self) -> i8 {
        match self {
            CoordinatorKind::Group => 0,
            CoordinatorKind::Transaction => 1,
        }
    }

    fn name(self) -> &'static str {
        match self {
            CoordinatorKind::Group => "group",
            CoordinatorKind::Transaction => "transactional id",
        }
    }

    fn resource(self, key: &str) -> Resource {
        match self {
            CoordinatorKind::Group => Resource::Group(key.to_owned()),
            CoordinatorKind::Transaction => Resource::TransactionalId(key.to_owned()),
        }
    }
}

/// A group's or a transactional id's coordinator. Cheap to clone: clones share the cached
/// address.
#[derive(Clone)]
pub(crate) struct Coordinator {
    client: Client,
    kind: CoordinatorKind,
    group: Arc<str>,
    backoff: Duration,
    addr: Arc<Mutex<Option<String>>>,
}

/// Whether `code` says to ask the coordinator again later or find it again.
pub(crate) fn coordinator_moved(code: ErrorCode) -> bool {
    matches!(code, ErrorCode::COORDINATOR_LOAD_IN_PROGRESS | ErrorCode::COORDINATOR_NOT_AVAILABLE | ErrorCode::NOT_COORDINATOR)
}

impl Coordinator {
    /// The coordinator of `group`, looked up on first use; `backoff` between attempts.
    pub(crate) fn new(client: Client, group: &str, backoff: Duration) -> Coordinator {
        Coordinator::of(client, CoordinatorKind::Group, group, backoff)
    }

    /// The coordinator of `key` (a group or a transactional id), looked up on first use.
    pub(crate) fn of(client: Client, kind: CoordinatorKind, key: &str, backoff: Duration) -> Coordinator {
        Coordinator { client, kind, group: Arc::from(key), backoff, addr: Arc::new(Mutex::new(None)) }
    }

    /// The key of the pooled connection to the coordinator at `addr`.
    fn connection_key(&self, addr: &str) -> String {
        format!("{} coordinator {addr}", self.kind.name())
    }

    /// The ApiVersions answer of the coordinator's connection (connecting if needed).
    pub(crate) async fn versions(&self) -> Result<Arc<crate::conn::Versions>> {
        let addr = self.address().await?;
        self.client.connection_keyed(&self.connection_key(&addr), &addr).await?.versions()
    }

    /// The client requests go through.
    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    fn cached(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        crate::sync::lock(&self.addr)
    }

    /// Forgets the coordinator (it moved, or its connection failed).
    pub(crate) fn forget(&self) {
        *self.cached() = None;
    }

    /// The coordinator's address if it has been looked up.
    pub(crate) fn address_cached(&self) -> Option<String> {
        self.cached().clone()
    }

    /// The coordinator's address: the cached one, else one FindCoordinator.
    async fn address(&self) -> Result<String> {
        if let Some(a) = self.cached().clone() {
            return Ok(a);
        }
        let addr = self.find().await?;
        *self.cached() = Some(addr.clone());
        Ok(addr)
    }

    /// One FindCoordinator (one key up to v3, a list of them from v4).
    async fn find(&self) -> Result<String> {
        let group = &*self.group;
        let kind = self.kind;
        let build = |v: i16| {
            let mut r = FindCoordinatorRequest { key_type: kind.key_type(), ..Default::default() };
            if v >= 4 {
                r.coordinator_keys = vec![ByteString::from(group.to_owned())];
            } else {
                r.key = ByteString::from(group.to_owned());
            }
            RequestKind::from(r)
        };
        let response = match self.client.call_any_versioned(ApiKey::FindCoordinator, build).await? {
            ResponseKind::FindCoordinator(r) => r,
            other => return Err(Error::UnexpectedResponse(format!("{:?} to FindCoordinator", other.api_key()))),
        };
        // v4+ answers in `coordinators`, earlier versions at the top level.
        let (code, message, host, port) = match response.coordinators.first() {
            Some(c) => (c.error_code, c.error_message.as_deref().map(str::to_owned), c.host.to_string(), c.port),
            None => (response.error_code, response.error_message.as_deref().map(str::to_owned), response.host.to_string(), response.port),
        };
        if !ErrorCode(code).is_ok() {
            let context = format!("FindCoordinator for {} {group}", kind.name());
            return Err(Error::broker(ErrorCode(code), message, context).about(kind.resource(group)));
        }
        let addr = if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") };
        debug!(key = group, kind = kind.name(), coordinator = %addr, "found the coordinator");
        Ok(addr)
    }

    /// One attempt: `build(version)` to the coordinator (looked up if unknown), waiting at
    /// most `timeout` (the request timeout when `None`). A retriable failure forgets the
    /// coordinator. The coordinator gets a connection of its own, as Java's consumer gives it:
    /// fetches to the same broker do not wait behind a JoinGroup, nor heartbeats behind a
    /// long poll.
    pub(crate) async fn try_call(&self, api: ApiKey, build: impl Fn(i16) -> RequestKind, timeout: Option<Duration>) -> Result<ResponseKind> {
        self.try_call_at_most(api, build, timeout, i16::MAX).await
    }

    /// [`try_call`](Coordinator::try_call) at version `max` at most.
    pub(crate) async fn try_call_at_most(&self, api: ApiKey, build: impl Fn(i16) -> RequestKind, timeout: Option<Duration>, max: i16) -> Result<ResponseKind> {
        let addr = self.address().await?;
        let key = self.connection_key(&addr);
        let r = self.client.call_keyed_at_most(&key, &addr, api, build, timeout, max).await;
        if r.as_ref().is_err_and(Error::is_retriable) {
            self.forget();
        }
        r
    }

    /// For a response's coordinator error: forgets the coordinator unless it is only loading
    /// (the same one, later) and returns the error to retry on; `None` for other codes.
    pub(crate) fn moved(&self, api: ApiKey, code: ErrorCode) -> Option<Error> {
        if !coordinator_moved(code) {
            return None;
        }
        if code != ErrorCode::COORDINATOR_LOAD_IN_PROGRESS {
            self.forget();
        }
        Some(Error::broker(code, None, format!("{} for {} {}", api.name(), self.kind.name(), self.group)))
    }

    /// `build(version)` to the coordinator, trying again (with backoff) while it moves or
    /// loads: `code_of` reads the response's coordinator error, if any.
    pub(crate) async fn call(
        &self,
        api: ApiKey,
        build: impl Fn(i16) -> RequestKind,
        code_of: impl Fn(&ResponseKind) -> i16,
        timeout: Option<Duration>,
    ) -> Result<ResponseKind> {
        let mut last = None;
        let mut retry = Retry::new(Backoff::constant(self.backoff), ATTEMPTS);
        while retry.next().await {
            match self.try_call(api, &build, timeout).await {
                Ok(r) => match self.moved(api, ErrorCode(code_of(&r))) {
                    Some(e) => last = Some(e),
                    None => return Ok(r),
                },
                Err(e) if e.is_retriable() => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| Error::Group(GroupError::CoordinatorNotAvailable { group: self.group.to_string() })))
    }
}
