//! Where a request goes: a [`Route`] names the broker that must answer it, [`Limits`] bound
//! one request, and a [`CoordinatorKind`] says what a coordinator route coordinates. The
//! vocabulary that the request layer (`request.rs`), the cluster and the coordinators share.

use std::time::Duration;

use crate::error::Resource;

/// Which broker a request goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Route<'a> {
    /// Any broker: the known ones in turn (else the bootstrap addresses), the next one after a
    /// retriable failure.
    Any,
    /// The broker with this node id.
    Node(i32),
    /// The broker at this `host:port`.
    Addr(&'a str),
    /// The leader of a topic's partition, as the metadata names it (refreshed once when it
    /// names none).
    Leader(&'a str, i32),
    /// The controller, as Metadata names it; any broker when it names none (a KRaft cluster
    /// forwards controller requests).
    Controller,
    /// The coordinator of a group (consumer, classic or share), looked up with FindCoordinator
    /// and cached by the client; requests to it go on a connection of their own.
    GroupCoordinator(&'a str),
    /// The coordinator of a transactional id, as for a group.
    TransactionCoordinator(&'a str),
}

/// Limits on one request: a version cap, a timeout of its own.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// The highest version to use (the negotiated one when lower).
    pub(crate) max_version: i16,
    /// How long to wait for the response (`None`: the connection's request timeout).
    pub(crate) timeout: Option<Duration>,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { max_version: i16::MAX, timeout: None }
    }
}

impl Limits {
    /// A wait of `timeout` for the response.
    pub(crate) fn within(timeout: Duration) -> Limits {
        Limits { timeout: Some(timeout), ..Limits::default() }
    }

    /// Versions up to `max`.
    pub(crate) fn at_most(max: i16) -> Limits {
        Limits { max_version: max, ..Limits::default() }
    }
}

/// What a coordinator coordinates (FindCoordinator's key type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CoordinatorKind {
    /// A consumer group (key type 0).
    Group,
    /// A transactional id (key type 1).
    Transaction,
}

impl CoordinatorKind {
    pub(crate) fn key_type(self) -> i8 {
        match self {
            CoordinatorKind::Group => 0,
            CoordinatorKind::Transaction => 1,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            CoordinatorKind::Group => "group",
            CoordinatorKind::Transaction => "transactional id",
        }
    }

    /// The key of the pooled connection to the coordinator at `addr`.
    pub(crate) fn connection_key(self, addr: &str) -> String {
        format!("{} coordinator {addr}", self.name())
    }

    pub(crate) fn resource(self, key: &str) -> Resource {
        match self {
            CoordinatorKind::Group => Resource::Group(key.to_owned()),
            CoordinatorKind::Transaction => Resource::TransactionalId(key.to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_cap_the_version_and_set_the_wait() {
        let l = Limits::at_most(3);
        assert_eq!((l.max_version, l.timeout), (3, None));
        let l = Limits::within(Duration::from_secs(5));
        assert_eq!((l.max_version, l.timeout), (i16::MAX, Some(Duration::from_secs(5))));
    }
}
