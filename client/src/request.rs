//! The typed request layer: every request the client makes goes through here. A request is a
//! body of any api ([`ApiRequest`]: the generated `*Request` types), a [`Route`] naming the
//! broker that must answer it, and comes back as that api's response type; versions are
//! negotiated per connection, a pooled connection found closed is replaced once, and a
//! coordinator that fails is forgotten so the next request looks it up again.
//!
//! ```no_run
//! # async fn demo(client: kwire_client::Client) -> kwire_client::Result<()> {
//! use kwire::messages::DescribeClusterRequest;
//! use kwire_client::Route;
//!
//! let cluster = client.send(Route::Any, DescribeClusterRequest::default()).await?;
//! println!("cluster {} has {} brokers", cluster.cluster_id, cluster.brokers.len());
//! # Ok(()) }
//! ```

use kwire::ApiRequest;
use tracing::debug;

use crate::cluster::Client;
use crate::conn::{typed, Connection};
use crate::error::{Error, Result};
use crate::route::{CoordinatorKind, Limits, Route};

impl Client {
    /// Sends `request` to the broker `route` names, at the version its connection negotiated,
    /// and returns the response. A Produce with acks=0 has none: it fails with
    /// [`Unexpected::NoResponse`](crate::error::Unexpected::NoResponse) (the
    /// [`Producer`](crate::Producer) is the way to send those).
    ///
    /// ```no_run
    /// # async fn demo(client: kwire_client::Client) -> kwire_client::Result<()> {
    /// use kwire::messages::{list_offsets_request::*, ListOffsetsRequest};
    /// use kwire::ByteString;
    /// use kwire_client::Route;
    ///
    /// let partition = ListOffsetsPartition { partition_index: 0, timestamp: -1, ..Default::default() };
    /// let topic = ListOffsetsTopic { name: ByteString::from_static("events"), partitions: vec![partition], ..Default::default() };
    /// let request = ListOffsetsRequest { replica_id: -1, topics: vec![topic], ..Default::default() };
    /// let response = client.send(Route::Leader("events", 0), request).await?;
    /// println!("end offset {}", response.topics[0].partitions[0].offset);
    /// # Ok(()) }
    /// ```
    pub async fn send<R: ApiRequest + Clone>(&self, route: Route<'_>, request: R) -> Result<R::Response> {
        self.send_limited(route, Limits::default(), |_| request.clone()).await
    }

    /// Like [`send`](Client::send) for a request whose fields depend on the version: `build`
    /// gets the version the broker's connection uses for the api.
    pub async fn send_versioned<R: ApiRequest>(&self, route: Route<'_>, build: impl Fn(i16) -> R) -> Result<R::Response> {
        self.send_limited(route, Limits::default(), build).await
    }

    /// [`send_versioned`](Client::send_versioned) within `limits`.
    pub(crate) async fn send_limited<R: ApiRequest>(&self, route: Route<'_>, limits: Limits, build: impl Fn(i16) -> R) -> Result<R::Response> {
        match self.target(route).await? {
            Target::Any => self.send_any(limits, &build).await,
            Target::Broker(addr) => self.send_at(&addr, &addr, limits, &build).await,
            Target::Coordinator(kind, key) => self.send_coordinator(kind, key, limits, &build).await,
        }
    }

    /// Where `route` leads now: the one place a route becomes a broker.
    async fn target<'a>(&self, route: Route<'a>) -> Result<Target<'a>> {
        Ok(match route {
            Route::Any => Target::Any,
            Route::Node(node) => Target::Broker(self.node_addr(node).await?),
            Route::Addr(addr) => Target::Broker(addr.to_owned()),
            Route::Leader(topic, partition) => Target::Broker(self.node_addr(self.leader_of(topic, partition).await?).await?),
            Route::Controller => match self.metadata().controller_id {
                id if id < 0 => Target::Any,
                id => Target::Broker(self.node_addr(id).await?),
            },
            Route::GroupCoordinator(key) => Target::Coordinator(CoordinatorKind::Group, key),
            Route::TransactionCoordinator(key) => Target::Coordinator(CoordinatorKind::Transaction, key),
        })
    }

    /// The known brokers in turn (else the bootstrap list) until one answers; a retriable
    /// failure moves on to the next.
    pub(crate) async fn send_any<R: ApiRequest>(&self, limits: Limits, build: &impl Fn(i16) -> R) -> Result<R::Response> {
        let mut addrs: Vec<String> = self.metadata().brokers.values().map(|b| b.addr()).collect();
        if addrs.is_empty() {
            addrs = self.config().bootstrap.clone();
        }
        let mut last = None;
        for addr in addrs {
            match self.send_at(&addr, &addr, limits, build).await {
                Ok(r) => return Ok(r),
                Err(e) if e.is_retriable() => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| Error::Config("no broker known".into())))
    }

    /// One attempt on the coordinator of `key` (looked up if not cached); a retriable failure
    /// forgets it. The coordinator gets a connection of its own, as Java's consumer gives it:
    /// fetches to the same broker do not wait behind a JoinGroup, nor heartbeats behind a long
    /// poll.
    async fn send_coordinator<R: ApiRequest>(&self, kind: CoordinatorKind, key: &str, limits: Limits, build: &impl Fn(i16) -> R) -> Result<R::Response> {
        let addr = self.coordinator_addr(kind, key).await?;
        // No second try on a connection found closed, unlike other routes: a request the
        // coordinator may have taken (a heartbeat that moved the member epoch, a JoinGroup)
        // is the caller's to retry, after it hears of the failure.
        let r = match self.connection_keyed(&kind.connection_key(&addr), &addr).await {
            Ok(conn) => conn.send_limited(limits, build).await,
            Err(e) => Err(e),
        };
        if r.as_ref().is_err_and(Error::is_retriable) {
            self.forget_coordinator(kind, key);
        }
        r
    }

    /// `build(version)` on the connection to `addr` pooled under `key`. A pooled connection
    /// that turns out to be closed (the broker dropped it while idle) is replaced once.
    pub(crate) async fn send_at<R: ApiRequest>(&self, key: &str, addr: &str, limits: Limits, build: &impl Fn(i16) -> R) -> Result<R::Response> {
        let conn = self.connection_keyed(key, addr).await?;
        match conn.send_limited(limits, build).await {
            Err(e @ (Error::Disconnected(_) | Error::Io { .. })) if conn.is_closed() => {
                debug!(addr = %addr, reason = %e, "pooled connection was closed: reconnecting");
                self.connection_keyed(key, addr).await?.send_limited(limits, build).await
            }
            r => r,
        }
    }

    /// The version the broker `route` leads to uses for `R`'s api (connecting if needed; for
    /// any broker, the first known).
    pub(crate) async fn version_at<R: ApiRequest>(&self, route: Route<'_>) -> Result<i16> {
        let conn = match self.target(route).await? {
            Target::Any => {
                let first = self.metadata().brokers.values().next().map(|b| b.addr()).or_else(|| self.config().bootstrap.first().cloned());
                self.connection(&first.ok_or_else(|| Error::Config("no broker known".into()))?).await?
            }
            Target::Broker(addr) => self.connection(&addr).await?,
            Target::Coordinator(kind, key) => self.coordinator_connection(kind, key).await?,
        };
        conn.version(R::API)
    }
}

/// A route resolved against the metadata.
enum Target<'a> {
    /// Any broker.
    Any,
    /// The broker at this address.
    Broker(String),
    /// The coordinator of a key, looked up when sent to.
    Coordinator(CoordinatorKind, &'a str),
}

impl Connection {
    /// Sends `request` at the negotiated version and returns the response.
    pub async fn send<R: ApiRequest + Clone>(&self, request: R) -> Result<R::Response> {
        self.send_limited(Limits::default(), |_| request.clone()).await
    }

    /// Like [`send`](Connection::send) for a request whose fields depend on the version.
    pub async fn send_versioned<R: ApiRequest>(&self, build: impl Fn(i16) -> R) -> Result<R::Response> {
        self.send_limited(Limits::default(), build).await
    }

    /// `build(version)` at the negotiated version or `limits.max_version`, the lower, waiting
    /// up to `limits.timeout`.
    pub(crate) async fn send_limited<R: ApiRequest>(&self, limits: Limits, build: impl Fn(i16) -> R) -> Result<R::Response> {
        let version = self.version(R::API)?.min(limits.max_version);
        typed::<R>(self.exchange(version, build(version).into(), limits.timeout).await?)
    }
}

#[cfg(test)]
mod tests {
    use kwire::messages::{MetadataRequest, MetadataResponse, ProduceRequest, ProduceResponse};
    use kwire::ApiKey;

    use super::*;
    use crate::error::Unexpected;

    #[test]
    fn a_response_comes_back_as_its_apis_type_or_says_what_came() {
        let metadata = MetadataResponse { cluster_id: Some("c".into()), ..Default::default() };
        assert_eq!(typed::<MetadataRequest>(Some(metadata.clone().into())).unwrap(), metadata);
        let e = typed::<MetadataRequest>(Some(ProduceResponse::default().into())).unwrap_err();
        assert!(matches!(&e, Error::UnexpectedResponse { api: ApiKey::Metadata, problem: Unexpected::OtherApi(ApiKey::Produce) }), "{e:?}");
        assert_eq!(e.to_string(), "unexpected Metadata response: a Produce response came instead");
        let e = typed::<ProduceRequest>(None).unwrap_err();
        assert!(matches!(&e, Error::UnexpectedResponse { api: ApiKey::Produce, problem: Unexpected::NoResponse }), "{e:?}");
    }
}
