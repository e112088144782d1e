//! A coordinator (the broker FindCoordinator names for a group or a transactional id): one
//! lookup and one cache, shared by the consumer's offset requests, its JoinGroup/SyncGroup and
//! its heartbeat task, or by a transactional producer's requests. A request that finds the
//! coordinator gone forgets it; the next one looks it up again.

use std::sync::Arc;
use std::time::Duration;

use kwire::messages::FindCoordinatorRequest;
use kwire::{ApiKey, ApiRequest, ByteString, ErrorCode};
use tracing::debug;

use crate::cluster::Client;
use crate::error::{Error, GroupError, Result};
use crate::retry::{Backoff, Retry};
use crate::route::{CoordinatorKind, Limits, Route};

/// How many attempts a coordinator request gets while the coordinator moves or loads.
const ATTEMPTS: u32 = 30;

/// A group's or a transactional id's coordinator: requests to it, tried again while it moves
/// or loads. Cheap to clone; the address is cached by the client
/// ([`Route::GroupCoordinator`]), so every handle of one key shares it.
#[derive(Clone)]
pub(crate) struct Coordinator {
    client: Client,
    kind: CoordinatorKind,
    key: Arc<str>,
    backoff: Duration,
}

/// Whether `code` says to ask the coordinator again later or find it again.
pub(crate) fn coordinator_moved(code: ErrorCode) -> bool {
    matches!(code, ErrorCode::COORDINATOR_LOAD_IN_PROGRESS | ErrorCode::COORDINATOR_NOT_AVAILABLE | ErrorCode::NOT_COORDINATOR)
}

impl Client {
    /// The address of the coordinator of `key`: the cached one, else one FindCoordinator.
    pub(crate) async fn coordinator_addr(&self, kind: CoordinatorKind, key: &str) -> Result<String> {
        if let Some(a) = self.coordinator_cached(kind, key) {
            return Ok(a);
        }
        let addr = self.find_coordinator(kind, key).await?;
        crate::sync::lock(self.coordinators()).insert((kind.key_type(), key.to_owned()), addr.clone());
        Ok(addr)
    }

    /// The cached address of the coordinator of `key`, if it has been looked up.
    pub(crate) fn coordinator_cached(&self, kind: CoordinatorKind, key: &str) -> Option<String> {
        crate::sync::lock(self.coordinators()).get(&(kind.key_type(), key.to_owned())).cloned()
    }

    /// Forgets the coordinator of `key` (it moved, or its connection failed).
    pub(crate) fn forget_coordinator(&self, kind: CoordinatorKind, key: &str) {
        crate::sync::lock(self.coordinators()).remove(&(kind.key_type(), key.to_owned()));
    }

    /// The connection to the coordinator of `key` (looked up and connected if needed).
    pub(crate) async fn coordinator_connection(&self, kind: CoordinatorKind, key: &str) -> Result<crate::conn::Connection> {
        let addr = self.coordinator_addr(kind, key).await?;
        self.connection_keyed(&kind.connection_key(&addr), &addr).await
    }

    /// One FindCoordinator (one key up to v3, a list of them from v4).
    async fn find_coordinator(&self, kind: CoordinatorKind, key: &str) -> Result<String> {
        let build = |v: i16| {
            let mut r = FindCoordinatorRequest { key_type: kind.key_type(), ..Default::default() };
            if v >= 4 {
                r.coordinator_keys = vec![ByteString::from(key.to_owned())];
            } else {
                r.key = ByteString::from(key.to_owned());
            }
            r
        };
        // Any broker, without the route match (whose coordinator routes lead here).
        let response = self.send_any(Limits::default(), &build).await?;
        // v4+ answers in `coordinators`, earlier versions at the top level.
        let (code, message, host, port) = match response.coordinators.first() {
            Some(c) => (c.error_code, c.error_message.as_deref().map(str::to_owned), c.host.to_string(), c.port),
            None => (response.error_code, response.error_message.as_deref().map(str::to_owned), response.host.to_string(), response.port),
        };
        if !ErrorCode(code).is_ok() {
            let context = format!("FindCoordinator for {} {key}", kind.name());
            return Err(Error::broker(ErrorCode(code), message, context).about(kind.resource(key)));
        }
        let addr = if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") };
        debug!(key, kind = kind.name(), coordinator = %addr, "found the coordinator");
        Ok(addr)
    }
}

impl Coordinator {
    /// The coordinator of `group`; `backoff` between attempts.
    pub(crate) fn new(client: Client, group: &str, backoff: Duration) -> Coordinator {
        Coordinator::of(client, CoordinatorKind::Group, group, backoff)
    }

    /// The coordinator of `key` (a group or a transactional id).
    pub(crate) fn of(client: Client, kind: CoordinatorKind, key: &str, backoff: Duration) -> Coordinator {
        Coordinator { client, kind, key: Arc::from(key), backoff }
    }

    /// The route to it.
    pub(crate) fn route(&self) -> Route<'_> {
        match self.kind {
            CoordinatorKind::Group => Route::GroupCoordinator(&self.key),
            CoordinatorKind::Transaction => Route::TransactionCoordinator(&self.key),
        }
    }

    /// The ApiVersions answer of the coordinator's connection (connecting if needed).
    pub(crate) async fn versions(&self) -> Result<Arc<crate::conn::Versions>> {
        self.client.coordinator_connection(self.kind, &self.key).await?.versions()
    }

    /// The client requests go through.
    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    /// Forgets the coordinator (it moved, or its connection failed).
    pub(crate) fn forget(&self) {
        self.client.forget_coordinator(self.kind, &self.key);
    }

    /// The coordinator's address if it has been looked up.
    pub(crate) fn address_cached(&self) -> Option<String> {
        self.client.coordinator_cached(self.kind, &self.key)
    }

    /// One attempt: `build(version)` to the coordinator (looked up if unknown) within
    /// `limits`. A retriable failure forgets the coordinator.
    pub(crate) async fn try_send<R: ApiRequest>(&self, limits: Limits, build: impl Fn(i16) -> R) -> Result<R::Response> {
        self.client.send_limited(self.route(), limits, build).await
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
        Some(Error::broker(code, None, format!("{} for {} {}", api.name(), self.kind.name(), self.key)))
    }

    /// `build(version)` to the coordinator, trying again (with backoff) while it moves or
    /// loads: `code_of` reads the response's coordinator error, if any.
    pub(crate) async fn send<R: ApiRequest>(&self, build: impl Fn(i16) -> R, code_of: impl Fn(&R::Response) -> i16) -> Result<R::Response> {
        let mut last = None;
        let mut retry = Retry::new(Backoff::constant(self.backoff), ATTEMPTS);
        while retry.next().await {
            match self.try_send(Limits::default(), &build).await {
                Ok(r) => match self.moved(R::API, ErrorCode(code_of(&r))) {
                    Some(e) => last = Some(e),
                    None => return Ok(r),
                },
                Err(e) if e.is_retriable() => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| Error::Group(GroupError::CoordinatorNotAvailable { group: self.key.to_string() })))
    }
}
