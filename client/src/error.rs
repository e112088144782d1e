//! The client's error type: every failure is one [`Error`], retriable or not.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use kwire::codec::CodecError;
use kwire::negotiate::NegotiationError;
use kwire::{ApiKey, ErrorCode};

use crate::topic_partition::TopicPartition;

/// A result with the client's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The error beneath an [`Error`] (an I/O, TLS or decoding error), shared so that errors can be
/// cloned; [`std::error::Error::source`] returns it, and it can be downcast to its type
/// (`std::io::Error`, `rustls::Error` inside an I/O error, `kwire::DecodeError`, ...).
pub type Cause = Arc<dyn std::error::Error + Send + Sync>;

/// How a broker's answer does not fit its request ([`Error::UnexpectedResponse`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unexpected {
    /// The answer is another api's.
    OtherApi(ApiKey),
    /// No answer came where one is due (only a Produce with acks=0 goes unanswered).
    NoResponse,
    /// The answer has no result for something the request named: a topic, a partition, a
    /// user, ... (named here).
    Missing(String),
    /// The answer has a different number of results than the request had items.
    Count {
        /// The request's items.
        sent: usize,
        /// The answer's results.
        received: usize,
    },
    /// A paging cursor that did not move forward (the same page would come again).
    CursorStuck,
}

impl fmt::Display for Unexpected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unexpected::OtherApi(api) => write!(f, "a {} response came instead", api.name()),
            Unexpected::NoResponse => f.write_str("none came"),
            Unexpected::Missing(what) => write!(f, "no result for {what}"),
            Unexpected::Count { sent, received } => write!(f, "{received} results for {sent} items"),
            Unexpected::CursorStuck => f.write_str("its cursor did not move forward"),
        }
    }
}

impl Error {
    /// An answer of `api` that does not fit its request.
    pub(crate) fn unexpected(api: ApiKey, problem: Unexpected) -> Error {
        Error::UnexpectedResponse { api, problem }
    }

    /// An answer of `api` with no result for `what`.
    pub(crate) fn missing(api: ApiKey, what: impl fmt::Display) -> Error {
        Error::UnexpectedResponse { api, problem: Unexpected::Missing(what.to_string()) }
    }
}

/// Why a client operation failed.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Error {
    /// Connecting to or talking with a broker failed at the transport (refused, reset, closed).
    Io {
        /// The broker's address.
        addr: String,
        /// What happened.
        message: String,
        /// The I/O error, when one said it ([`source`](std::error::Error::source)).
        cause: Option<Cause>,
    },
    /// The TLS handshake failed: an untrusted certificate, a name mismatch, ...
    Tls {
        /// The broker's address.
        addr: String,
        /// rustls's reason.
        message: String,
        /// The error (an I/O error carrying rustls's, or a timeout's), when there was one.
        cause: Option<Cause>,
    },
    /// A frame from the broker could not be read (a bad size, header or body): that
    /// connection is closed, others are not affected.
    Protocol {
        /// The broker's address.
        addr: String,
        /// The codec's reason.
        message: String,
        /// The codec's or decoder's error.
        cause: Option<Cause>,
    },
    /// The broker answered with something that does not fit the request (another api, a
    /// missing partition, ...).
    UnexpectedResponse {
        /// The api of the request.
        api: ApiKey,
        /// What does not fit.
        problem: Unexpected,
    },
    /// No response within the request timeout.
    Timeout {
        /// The api of the request.
        api: ApiKey,
        /// The timeout.
        after: Duration,
    },
    /// The broker does not support a version of `api` this client can use (too old or too
    /// new), or refused the version asked for.
    UnsupportedVersion {
        /// The api.
        api: ApiKey,
        /// Why.
        reason: String,
    },
    /// SASL authentication failed (bad credentials, unsupported mechanism, a server
    /// signature that does not verify).
    Authentication {
        /// The mechanism.
        mechanism: String,
        /// Why.
        message: String,
    },
    /// SASL/OAUTHBEARER failed: the broker refused the token, or no token could be had (see
    /// [`OAuthError`]).
    OAuth(OAuthError),
    /// The broker answered with an error code.
    Broker {
        /// The code.
        code: ErrorCode,
        /// The broker's message, if any.
        message: Option<String>,
        /// What was being done (api, topic, partition, ...).
        context: String,
    },
    /// The connection was closed while the request was waiting.
    Disconnected(String),
    /// A configuration value is not usable.
    Config(String),
    /// Metadata does not know the topic, or the partition, or its leader.
    UnknownTopicOrPartition {
        /// The topic.
        topic: String,
        /// The partition, where one was asked for.
        partition: Option<i32>,
        /// What was missing: `no known leader`, `the topic has 3 partitions`, ...
        reason: String,
    },
    /// Metadata names a broker (as a leader, say) that it does not list.
    UnknownBroker(i32),
    /// The principal may not do this to `resource` (a `*_AUTHORIZATION_FAILED` code).
    Authorization {
        /// What was refused.
        resource: Resource,
        /// The broker's code (`TOPIC_AUTHORIZATION_FAILED`, ...).
        code: ErrorCode,
        /// The broker's message, if any.
        message: Option<String>,
        /// What was being done.
        context: String,
    },
    /// The producer refused or failed a record: see [`ProducerError`].
    Producer(ProducerError),
    /// A fetch position is out of the partition's range and the reset policy is `None`.
    OffsetOutOfRange {
        /// `topic-partition`.
        partition: String,
        /// The position fetched from.
        offset: i64,
    },
    /// The log was truncated below the consumer's position after a leader change (found by
    /// OffsetForLeaderEpoch or a fetch's diverging epoch) and the reset policy is `None`.
    LogTruncation {
        /// `topic-partition`.
        partition: String,
        /// The consumer's position.
        position: i64,
        /// Where the new leader's log ends for the consumer's last epoch.
        end_offset: i64,
    },
    /// A partition has no committed offset and the reset policy is `None`.
    NoOffset(TopicPartition),
    /// The consumer refused a call or could not read a partition: see [`ConsumerError`].
    Consumer(ConsumerError),
    /// Group membership or a group's offsets failed: see [`GroupError`].
    Group(GroupError),
    /// A transactional producer refused a call or its transaction failed: see
    /// [`TransactionError`].
    Transaction(TransactionError),
    /// The share consumer refused a call: see [`ShareError`].
    Share(ShareError),
}

/// Where a transactional producer is (Java's `TransactionManager` states).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransactionState {
    /// `init_transactions` has not completed.
    Uninitialized,
    /// `init_transactions` is running.
    Initializing,
    /// Between transactions.
    Ready,
    /// A transaction is open.
    InTransaction,
    /// `commit_transaction` is running (or failed retriably: call it again).
    Committing,
    /// `abort_transaction` is running (or failed retriably: call it again).
    Aborting,
    /// The transaction failed: abort it, then go on.
    AbortableError,
    /// The producer cannot go on: close it.
    FatalError,
}

/// Why a transactional producer refused a call, or why its transaction failed.
///
/// [`Abortable`](TransactionError::Abortable) means the transaction cannot commit: call
/// `abort_transaction` and go on with a new one. [`Fatal`](TransactionError::Fatal) means the
/// producer is done (fenced by a newer instance with its transactional id, not authorized,
/// ...): every later call fails with it; close the producer. The others are calls made in the
/// wrong state, as Java's producer refuses them (its `IllegalStateException`).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum TransactionError {
    /// A transactional method on a producer without a `transactional_id`.
    NotTransactional {
        /// The method.
        operation: &'static str,
    },
    /// The call needs `init_transactions` to have completed.
    NotInitialized {
        /// The method.
        operation: &'static str,
    },
    /// The call needs an open transaction (`send`, `commit_transaction` twice, ...).
    NoTransaction {
        /// The method.
        operation: &'static str,
    },
    /// The call is not allowed while a transaction is open or ending (`begin_transaction`
    /// twice, `init_transactions` again, ...).
    InvalidState {
        /// The method.
        operation: &'static str,
        /// The state it was called in.
        state: TransactionState,
    },
    /// The transaction failed (a record was not written, offsets were refused, the producer's
    /// epoch was bumped by a transaction timeout, ...): abort it, then go on.
    Abortable(Box<Error>),
    /// The producer cannot go on (PRODUCER_FENCED, TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    /// an error the protocol has no recovery for): every later call fails with this.
    Fatal(Box<Error>),
    /// The record's transaction was aborted before the record was sent.
    Aborted,
}

impl TransactionError {
    /// The error behind an abortable or fatal one.
    pub fn cause(&self) -> Option<&Error> {
        match self {
            TransactionError::Abortable(e) | TransactionError::Fatal(e) => Some(e),
            _ => None,
        }
    }

    /// Whether the producer cannot go on.
    pub fn is_fatal(&self) -> bool {
        matches!(self, TransactionError::Fatal(_))
    }
}

impl fmt::Display for TransactionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransactionError::NotTransactional { operation } => write!(f, "{operation}: the producer has no transactional_id"),
            TransactionError::NotInitialized { operation } => write!(f, "{operation}: call init_transactions first"),
            TransactionError::NoTransaction { operation } => write!(f, "{operation}: no transaction is open (call begin_transaction)"),
            TransactionError::InvalidState { operation, state } => write!(f, "{operation} is not allowed in state {state:?}"),
            TransactionError::Abortable(e) => write!(f, "the transaction must be aborted: {e}"),
            TransactionError::Fatal(e) => write!(f, "the producer cannot go on: {e}"),
            TransactionError::Aborted => f.write_str("the transaction was aborted before the record was sent"),
        }
    }
}

/// Why SASL/OAUTHBEARER authentication failed: the broker refused the token, the token could
/// not be had (the token endpoint refused, could not be reached, answered nonsense; an
/// application's provider failed), or it cannot be sent.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum OAuthError {
    /// The broker refused the token (RFC 7628's error reply). Kafka's OIDC validator says only
    /// `invalid_token` whether the token expired, is signed by a key its JWKS lacks, or names
    /// another audience or issuer; its log has the detail.
    Refused {
        /// The reply's `status`, such as `invalid_token`.
        status: String,
        /// The scope the broker wants, if it said.
        scope: Option<String>,
        /// Where the broker's OpenID configuration is, if it said.
        openid_configuration: Option<String>,
        /// The broker's message ending the exchange, if any.
        message: Option<String>,
    },
    /// The token cannot be sent as it is: not a JWT where one is needed, characters a bearer
    /// token may not have, an extension Kafka does not allow.
    InvalidToken(String),
    /// The token endpoint answered with an HTTP error (a 4xx at once, a 5xx after retries),
    /// with the OAuth error it gave (RFC 6749 section 5.2) if any.
    TokenEndpoint {
        /// The endpoint.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The OAuth `error` code, such as `invalid_client`.
        error: Option<String>,
        /// The `error_description`, or the start of the body when it is not OAuth JSON.
        description: Option<String>,
    },
    /// The token endpoint could not be reached (after retries).
    Transport {
        /// The endpoint.
        url: String,
        /// Why.
        message: String,
    },
    /// The token endpoint's answer is not a usable token response.
    BadResponse {
        /// The endpoint.
        url: String,
        /// What is wrong.
        message: String,
    },
    /// A setting is not usable (a token endpoint that is not an http(s) URL, say).
    Config(String),
    /// An application's [`TokenProvider`](crate::TokenProvider) failed.
    Provider(Arc<dyn std::error::Error + Send + Sync>),
}

impl OAuthError {
    /// An application provider's failure.
    pub fn provider(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> OAuthError {
        OAuthError::Provider(Arc::from(error.into()))
    }

    /// Whether trying again later may succeed: the endpoint unreachable or failing on its side
    /// (5xx, 408, 429).
    pub fn is_retriable(&self) -> bool {
        match self {
            OAuthError::Transport { .. } => true,
            OAuthError::TokenEndpoint { status, .. } => *status >= 500 || *status == 408 || *status == 429,
            _ => false,
        }
    }
}

impl fmt::Display for OAuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OAuthError::Refused { status, scope, openid_configuration, message } => {
                write!(f, "the broker refused the token: {status}")?;
                if let Some(s) = scope {
                    write!(f, " (scope {s})")?;
                }
                if let Some(c) = openid_configuration {
                    write!(f, " (OpenID configuration {c})")?;
                }
                if let Some(m) = message.as_deref().filter(|m| !m.contains(status.as_str())) {
                    write!(f, ": {m}")?;
                }
                f.write_str(" (expired, signed by a key the broker's JWKS lacks, or for another audience or issuer: the broker's log says which)")
            }
            OAuthError::InvalidToken(m) => write!(f, "unusable token: {m}"),
            OAuthError::TokenEndpoint { url, status, error, description } => {
                write!(f, "the token endpoint {url} refused: HTTP {status}")?;
                if let Some(e) = error {
                    write!(f, " {e}")?;
                }
                if let Some(d) = description {
                    write!(f, ": {d}")?;
                }
                Ok(())
            }
            OAuthError::Transport { url, message } => write!(f, "the token endpoint {url} could not be reached: {message}"),
            OAuthError::BadResponse { url, message } => write!(f, "the token endpoint {url} answered no usable token: {message}"),
            OAuthError::Config(m) => write!(f, "configuration: {m}"),
            OAuthError::Provider(e) => write!(f, "the token provider failed: {e}"),
        }
    }
}

impl std::error::Error for OAuthError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OAuthError::Provider(e) => Some(&**e),
            _ => None,
        }
    }
}

/// What an [`Error::Authorization`] was about.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Resource {
    /// A topic.
    Topic(String),
    /// A consumer group.
    Group(String),
    /// A transactional id.
    TransactionalId(String),
    /// The cluster (idempotent writes, admin operations).
    Cluster,
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Resource::Topic(t) => write!(f, "topic {t}"),
            Resource::Group(g) => write!(f, "group {g}"),
            Resource::TransactionalId(t) => write!(f, "transactional id {t}"),
            Resource::Cluster => f.write_str("the cluster"),
        }
    }
}

/// Why the producer refused or failed a record.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ProducerError {
    /// The producer is closed (or closing): it takes no more records.
    Closed,
    /// The producer was dropped before the record's batch was answered.
    Dropped,
    /// The record is larger than `max_request_size` or `buffer_memory`.
    RecordTooLarge {
        /// The most the record takes in a batch of its own, in bytes (Java's
        /// `estimateSizeInBytesUpperBound`).
        size: usize,
        /// `max_request_size`.
        max_request_size: usize,
        /// `buffer_memory`.
        buffer_memory: usize,
    },
    /// No buffer memory came free within `max_block`.
    BufferFull {
        /// `max_block`.
        max_block: Duration,
    },
    /// The record was not acknowledged within `delivery_timeout`.
    DeliveryTimeout {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// How many records of the batch failed.
        records: usize,
        /// `delivery_timeout`.
        timeout: Duration,
        /// The last error of a failed attempt, if one was made.
        last_error: Option<Box<Error>>,
    },
    /// Another producer with the same id and a newer epoch wrote to the partition
    /// (`PRODUCER_FENCED`, `INVALID_PRODUCER_EPOCH`).
    Fenced {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The broker's code.
        code: ErrorCode,
        /// The broker's message, if any.
        message: Option<String>,
    },
    /// The records may or may not have been written, and could not be sent again without the
    /// risk of writing them twice: an attempt of their batch ended without the broker's answer
    /// (a lost connection, a timeout, a broker that appended but could not replicate in time),
    /// then the partition's sequences had to start over under a new producer epoch. A copy of
    /// the batch still on its way to the broker, or already in its log, would be written again
    /// under new sequence numbers.
    OutcomeUnknown {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// How many records of the batch failed.
        records: usize,
        /// The error of the attempt whose outcome is unknown.
        last_error: Option<Box<Error>>,
    },
    /// The batch could not be encoded.
    Encoding {
        /// The topic.
        topic: String,
        /// The partition.
        partition: i32,
        /// The encoder's reason.
        reason: String,
    },
}

/// Why the consumer refused a call or could not read a partition.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ConsumerError {
    /// The call needs the partition to be assigned (`seek`, `position`).
    NotAssigned(TopicPartition),
    /// `subscribe` while already subscribed.
    AlreadySubscribed,
    /// `assign` while subscribed to a group.
    SubscribedToGroup,
    /// The partition holds magic 0/1 messages, which this consumer does not read.
    LegacyRecords(TopicPartition),
}

/// Why group membership or a group's offsets failed.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum GroupError {
    /// The group is rebalancing (`REBALANCE_IN_PROGRESS`): poll to rejoin, then retry.
    RebalanceInProgress {
        /// The group.
        group: String,
    },
    /// The group does not know this member (`UNKNOWN_MEMBER_ID`): its session expired.
    UnknownMember {
        /// The group.
        group: String,
    },
    /// The group moved on to another generation or member epoch (`ILLEGAL_GENERATION`,
    /// `FENCED_MEMBER_EPOCH`, `STALE_MEMBER_EPOCH`).
    StaleGeneration {
        /// The group.
        group: String,
        /// The broker's code.
        code: ErrorCode,
    },
    /// Another consumer uses this member's group instance id (`FENCED_INSTANCE_ID`).
    FencedInstance {
        /// The group.
        group: String,
        /// The group instance id.
        instance_id: Option<String>,
    },
    /// No coordinator was found or answered within the attempts allowed.
    CoordinatorNotAvailable {
        /// The group.
        group: String,
    },
    /// JoinGroup and SyncGroup did not result in a generation within the attempts allowed.
    NoGeneration {
        /// The group.
        group: String,
        /// The attempts made.
        attempts: u32,
    },
    /// The committed offsets stayed unstable (a transaction is committing them).
    UnstableOffsets {
        /// The group.
        group: String,
    },
    /// The group chose an assignor this client lacks.
    UnknownAssignor {
        /// The assignor's name.
        name: String,
    },
    /// The assignor could not compute an assignment from the members' subscriptions.
    Assignment(String),
    /// The consumer protocol data (a subscription, an assignment) could not be encoded.
    Encoding(String),
    /// No random bytes for a member id.
    NoRandomness(String),
}

impl GroupError {
    /// The group error for a membership code, if it is one.
    pub(crate) fn from_code(code: ErrorCode, group: &str, instance_id: Option<&str>) -> Option<GroupError> {
        let group = group.to_owned();
        Some(match code {
            ErrorCode::REBALANCE_IN_PROGRESS => GroupError::RebalanceInProgress { group },
            ErrorCode::UNKNOWN_MEMBER_ID => GroupError::UnknownMember { group },
            ErrorCode::ILLEGAL_GENERATION | ErrorCode::FENCED_MEMBER_EPOCH | ErrorCode::STALE_MEMBER_EPOCH => GroupError::StaleGeneration { group, code },
            ErrorCode::FENCED_INSTANCE_ID => GroupError::FencedInstance { group, instance_id: instance_id.map(str::to_owned) },
            _ => return None,
        })
    }

    /// The broker's code this error stands for, if any.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            GroupError::RebalanceInProgress { .. } => Some(ErrorCode::REBALANCE_IN_PROGRESS),
            GroupError::UnknownMember { .. } => Some(ErrorCode::UNKNOWN_MEMBER_ID),
            GroupError::StaleGeneration { code, .. } => Some(*code),
            GroupError::FencedInstance { .. } => Some(ErrorCode::FENCED_INSTANCE_ID),
            GroupError::UnstableOffsets { .. } => Some(ErrorCode::UNSTABLE_OFFSET_COMMIT),
            _ => None,
        }
    }

    fn is_retriable(&self) -> bool {
        match self {
            GroupError::CoordinatorNotAvailable { .. } | GroupError::NoGeneration { .. } | GroupError::UnstableOffsets { .. } => true,
            other => other.code().is_some_and(ErrorCode::is_retriable),
        }
    }
}

impl ProducerError {
    /// As Java's: a full buffer and a delivery timeout (its `TimeoutException`) may pass if
    /// the record is sent again; a closed or fenced producer, a record too large or one that
    /// cannot be encoded will not.
    fn is_retriable(&self) -> bool {
        matches!(self, ProducerError::BufferFull { .. } | ProducerError::DeliveryTimeout { .. } | ProducerError::OutcomeUnknown { .. })
    }
}

impl Error {
    /// Whether retrying the operation may succeed: broker error codes marked retriable,
    /// timeouts (a request's, a record's delivery timeout), a full producer buffer, transport
    /// failures and disconnections, a group coordinator not found yet, unstable offsets.
    pub fn is_retriable(&self) -> bool {
        match self {
            Error::Io { .. } | Error::Timeout { .. } | Error::Disconnected(_) => true,
            Error::Broker { code, .. } => code.is_retriable(),
            Error::UnknownTopicOrPartition { .. } | Error::UnknownBroker(_) => true,
            Error::Producer(e) => e.is_retriable(),
            Error::Group(e) => e.is_retriable(),
            Error::OAuth(e) => e.is_retriable(),
            _ => false,
        }
    }

    /// The broker's error code behind this error, if one is.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Error::Broker { code, .. } | Error::Authorization { code, .. } => Some(*code),
            Error::Producer(ProducerError::Fenced { code, .. }) => Some(*code),
            Error::Group(e) => e.code(),
            Error::Transaction(e) => e.cause().and_then(Error::code),
            _ => None,
        }
    }

    /// An error for a non-zero code, `Ok` for zero.
    pub fn check(code: i16, message: Option<&str>, context: impl FnOnce() -> String) -> Result<()> {
        if ErrorCode(code).is_ok() {
            return Ok(());
        }
        Err(Error::broker(ErrorCode(code), message.map(str::to_owned), context()))
    }

    /// The error for a broker's non-zero `code` while doing `context`
    /// (CLUSTER_AUTHORIZATION_FAILED is an [`Error::Authorization`] on the cluster).
    pub(crate) fn broker(code: ErrorCode, message: Option<String>, context: String) -> Error {
        if code == ErrorCode::CLUSTER_AUTHORIZATION_FAILED {
            return Error::Authorization { resource: Resource::Cluster, code, message, context };
        }
        Error::Broker { code, message, context }
    }

    /// This error as one about `resource`: the authorization code for that kind of resource
    /// becomes [`Error::Authorization`] naming it.
    pub(crate) fn about(self, resource: Resource) -> Error {
        let refused = match &resource {
            Resource::Topic(_) => ErrorCode::TOPIC_AUTHORIZATION_FAILED,
            Resource::Group(_) => ErrorCode::GROUP_AUTHORIZATION_FAILED,
            Resource::TransactionalId(_) => ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            Resource::Cluster => ErrorCode::CLUSTER_AUTHORIZATION_FAILED,
        };
        match self {
            Error::Broker { code, message, context } if code == refused => Error::Authorization { resource, code, message, context },
            other => other,
        }
    }

    /// A group's error for `code` (membership codes as [`GroupError`]s, authorization on the
    /// group), or the broker error.
    pub(crate) fn group(code: ErrorCode, message: Option<String>, group: &str, instance_id: Option<&str>, context: String) -> Error {
        match GroupError::from_code(code, group, instance_id) {
            Some(e) => Error::Group(e),
            None => Error::broker(code, message, context).about(Resource::Group(group.to_owned())),
        }
    }

    pub(crate) fn codec(addr: &str, e: CodecError) -> Error {
        match e {
            // A TLS alert after the handshake (TLS 1.3 servers refuse client certificates then).
            #[cfg(feature = "tls")]
            CodecError::Io(e) if e.get_ref().is_some_and(|inner| inner.is::<tokio_rustls::rustls::Error>()) => Error::tls(addr, e),
            CodecError::Io(e) => Error::io(addr, e),
            e => Error::protocol(addr, e.to_string(), e),
        }
    }

    /// Metadata lacks `topic` (`partition`: or that partition of it), for `reason`.
    pub(crate) fn unknown(topic: &str, partition: Option<i32>, reason: impl Into<String>) -> Error {
        Error::UnknownTopicOrPartition { topic: topic.to_owned(), partition, reason: reason.into() }
    }

    /// A transport failure talking with `addr`.
    pub(crate) fn io(addr: &str, e: std::io::Error) -> Error {
        Error::Io { addr: addr.to_owned(), message: e.to_string(), cause: Some(Arc::new(e)) }
    }

    /// A failed TLS handshake (or alert) with `addr`.
    #[cfg(feature = "tls")]
    pub(crate) fn tls(addr: &str, e: std::io::Error) -> Error {
        Error::Tls { addr: addr.to_owned(), message: e.to_string(), cause: Some(Arc::new(e)) }
    }

    /// Bytes from `addr` that do not decode: `message` says which, `e` why.
    pub(crate) fn protocol(addr: &str, message: String, e: impl std::error::Error + Send + Sync + 'static) -> Error {
        Error::Protocol { addr: addr.to_owned(), message, cause: Some(Arc::new(e)) }
    }

    pub(crate) fn negotiation(e: NegotiationError) -> Error {
        let api = match &e {
            NegotiationError::NotAdvertised(api) => *api,
            NegotiationError::NoOverlap { api, .. } => *api,
        };
        Error::UnsupportedVersion { api, reason: e.to_string() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { addr, message, .. } => write!(f, "connection to {addr} failed: {message}"),
            Error::Tls { addr, message, .. } => write!(f, "TLS with {addr} failed: {message}"),
            Error::Protocol { addr, message, .. } => write!(f, "bad data from {addr}: {message}"),
            Error::UnexpectedResponse { api, problem } => write!(f, "unexpected {} response: {problem}", api.name()),
            Error::Timeout { api, after } => write!(f, "no {} response within {after:?}", api.name()),
            Error::UnsupportedVersion { api, reason } => write!(f, "{} unusable: {reason}", api.name()),
            Error::Authentication { mechanism, message } => write!(f, "SASL/{mechanism} authentication failed: {message}"),
            Error::OAuth(e) => write!(f, "SASL/OAUTHBEARER authentication failed: {e}"),
            Error::Broker { code, message, context } => {
                write!(f, "{context}: {}", code.name().unwrap_or("UNKNOWN_SERVER_ERROR"))?;
                if code.name().is_none() {
                    write!(f, " (code {})", code.0)?;
                }
                if let Some(m) = message.as_deref().filter(|m| !m.is_empty()) {
                    write!(f, ": {m}")?;
                }
                Ok(())
            }
            Error::Disconnected(m) => write!(f, "disconnected: {m}"),
            Error::Config(m) => write!(f, "configuration: {m}"),
            Error::UnknownTopicOrPartition { topic, partition: Some(p), reason } => write!(f, "unknown topic or partition {topic}-{p}: {reason}"),
            Error::UnknownTopicOrPartition { topic, partition: None, reason } => write!(f, "unknown topic {topic}: {reason}"),
            Error::UnknownBroker(id) => write!(f, "metadata lists no broker with node id {id}"),
            Error::Authorization { resource, code, message, context } => {
                write!(f, "{context}: not authorized for {resource} ({})", code.name().unwrap_or("AUTHORIZATION_FAILED"))?;
                if let Some(m) = message.as_deref().filter(|m| !m.is_empty()) {
                    write!(f, ": {m}")?;
                }
                Ok(())
            }
            Error::Producer(e) => write!(f, "producer: {e}"),
            Error::OffsetOutOfRange { partition, offset } => {
                write!(f, "offset {offset} is out of range for {partition} and the reset policy is none")
            }
            Error::LogTruncation { partition, position, end_offset } => {
                write!(f, "{partition} was truncated to {end_offset} below the position {position} after a leader change, and the reset policy is none")
            }
            Error::NoOffset(p) => write!(f, "{p} has no committed offset and the reset policy is none"),
            Error::Consumer(e) => write!(f, "consumer: {e}"),
            Error::Group(e) => write!(f, "group: {e}"),
            Error::Transaction(e) => write!(f, "transaction: {e}"),
            Error::Share(e) => write!(f, "share consumer: {e}"),
        }
    }
}

impl fmt::Display for ProducerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProducerError::Closed => f.write_str("the producer is closed"),
            ProducerError::Dropped => f.write_str("the producer was dropped"),
            ProducerError::RecordTooLarge { size, max_request_size, buffer_memory } => {
                write!(f, "record of up to {size} bytes in a batch exceeds max_request_size ({max_request_size}) or buffer_memory ({buffer_memory})")
            }
            ProducerError::BufferFull { max_block } => write!(f, "buffer memory full for {max_block:?} (max_block)"),
            ProducerError::DeliveryTimeout { topic, partition, records, timeout, last_error } => {
                write!(f, "{records} record(s) for {topic}-{partition} expired after the delivery timeout of {timeout:?}")?;
                if let Some(e) = last_error {
                    write!(f, ": last error {e}")?;
                }
                Ok(())
            }
            ProducerError::Fenced { topic, partition, code, message } => {
                write!(f, "fenced writing to {topic}-{partition}: {}", code.name().unwrap_or("PRODUCER_FENCED"))?;
                if let Some(m) = message.as_deref().filter(|m| !m.is_empty()) {
                    write!(f, ": {m}")?;
                }
                Ok(())
            }
            ProducerError::OutcomeUnknown { topic, partition, records, last_error } => {
                write!(
                    f,
                    "{records} record(s) for {topic}-{partition} may or may not have been written, and cannot be sent again without risking a second copy"
                )?;
                if let Some(e) = last_error {
                    write!(f, ": {e}")?;
                }
                Ok(())
            }
            ProducerError::Encoding { topic, partition, reason } => write!(f, "could not build a batch for {topic}-{partition}: {reason}"),
        }
    }
}

impl fmt::Display for ConsumerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConsumerError::NotAssigned(tp) => write!(f, "{tp} is not assigned"),
            ConsumerError::AlreadySubscribed => f.write_str("already subscribed"),
            ConsumerError::SubscribedToGroup => f.write_str("subscribed to a group: unsubscribe before assigning by hand"),
            ConsumerError::LegacyRecords(tp) => write!(f, "{tp} holds magic 0/1 messages, which this consumer does not read"),
        }
    }
}

impl fmt::Display for GroupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GroupError::RebalanceInProgress { group } => write!(f, "group {group} is rebalancing (REBALANCE_IN_PROGRESS)"),
            GroupError::UnknownMember { group } => write!(f, "group {group} does not know this member (UNKNOWN_MEMBER_ID)"),
            GroupError::StaleGeneration { group, code } => {
                write!(f, "group {group} moved past this member's generation ({})", code.name().unwrap_or("ILLEGAL_GENERATION"))
            }
            GroupError::FencedInstance { group, instance_id } => {
                write!(f, "group {group}: another member uses group instance id {instance_id:?} (FENCED_INSTANCE_ID)")
            }
            GroupError::CoordinatorNotAvailable { group } => write!(f, "no coordinator found for group {group}"),
            GroupError::NoGeneration { group, attempts } => write!(f, "group {group}: no generation after {attempts} attempts"),
            GroupError::UnstableOffsets { group } => {
                write!(f, "group {group}: offsets stayed unstable (a transaction is committing them)")
            }
            GroupError::UnknownAssignor { name } => write!(f, "the group chose assignor {name:?}, which this client lacks"),
            GroupError::Assignment(m) => write!(f, "assignment failed: {m}"),
            GroupError::Encoding(m) => write!(f, "encoding the consumer protocol data: {m}"),
            GroupError::NoRandomness(m) => write!(f, "no randomness for a member id: {m}"),
        }
    }
}

/// Why the share consumer (KIP-932) refused a call, as Java's `KafkaShareConsumer` refuses
/// them (its `IllegalStateException`s).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ShareError {
    /// `acknowledge` in implicit acknowledgement mode (every record of a poll is accepted by
    /// the next poll or commit).
    ImplicitMode,
    /// `poll` in explicit acknowledgement mode while records of the last poll are not
    /// acknowledged.
    Unacknowledged {
        /// How many are not.
        records: usize,
    },
    /// `acknowledge` of a record the last poll did not return, or one already acknowledged.
    NotDelivered {
        /// The record's partition.
        partition: TopicPartition,
        /// The record's offset.
        offset: i64,
    },
    /// `poll` before `subscribe`.
    NotSubscribed,
}

impl fmt::Display for ShareError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShareError::ImplicitMode => f.write_str("acknowledge is not allowed in implicit acknowledgement mode"),
            ShareError::Unacknowledged { records } => {
                write!(f, "{records} record(s) of the last poll are not acknowledged (explicit acknowledgement mode)")
            }
            ShareError::NotDelivered { partition, offset } => {
                write!(f, "{partition} offset {offset} was not returned by the last poll, or is already acknowledged")
            }
            ShareError::NotSubscribed => f.write_str("not subscribed: call subscribe first"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { cause, .. } | Error::Tls { cause, .. } | Error::Protocol { cause, .. } => {
                cause.as_deref().map(|e| e as &(dyn std::error::Error + 'static))
            }
            Error::OAuth(e) => Some(e),
            Error::Transaction(TransactionError::Abortable(e) | TransactionError::Fatal(e)) => Some(&**e),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error beneath, as its own type.
    fn cause<T: std::error::Error + 'static>(e: &Error) -> Option<&T> {
        std::error::Error::source(e)?.downcast_ref::<T>()
    }

    #[tokio::test]
    async fn transport_tls_and_decoding_errors_keep_their_causes() {
        // Nothing listens there: the OS's refusal, with its kind.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let options = crate::conn::ConnectOptions::default();
        let e = crate::conn::Connection::connect(&closed.to_string(), &options).await.map(|_| ()).unwrap_err();
        assert!(matches!(e, Error::Io { .. }), "{e:?}");
        assert_eq!(cause::<std::io::Error>(&e).map(std::io::Error::kind), Some(std::io::ErrorKind::ConnectionRefused), "{e:?}");

        // A TLS alert read after the handshake: the I/O error, and rustls's inside it.
        #[cfg(feature = "tls")]
        {
            use tokio_rustls::rustls;
            let alert = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
            let e = Error::codec("b:9093", CodecError::Io(std::io::Error::new(std::io::ErrorKind::InvalidData, alert)));
            assert!(matches!(e, Error::Tls { .. }), "{e:?}");
            let rustls_error = cause::<std::io::Error>(&e).and_then(|io| io.get_ref()).and_then(|inner| inner.downcast_ref::<rustls::Error>());
            assert_eq!(rustls_error, Some(&rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer)));
        }

        // Bytes that do not decode: the codec's error.
        let e = Error::codec("b:9092", CodecError::EncodedFrameTooLarge { size: 10, max: 5 });
        assert!(matches!(e, Error::Protocol { .. }) && cause::<CodecError>(&e).is_some(), "{e:?}");

        // A transaction's failure: the error that caused it.
        let inner = Error::Timeout { api: ApiKey::Produce, after: Duration::from_secs(1) };
        let e = Error::Transaction(TransactionError::Abortable(Box::new(inner)));
        assert!(matches!(cause::<Error>(&e), Some(Error::Timeout { .. })), "{e:?}");
        // Clones share the cause.
        assert!(std::error::Error::source(&e.clone()).is_some());
    }

    #[test]
    fn unknown_partitions_and_missing_offsets_say_which() {
        let e = Error::unknown("orders", Some(3), "no known leader");
        assert!(matches!(&e, Error::UnknownTopicOrPartition { topic, partition: Some(3), .. } if topic == "orders"), "{e:?}");
        assert_eq!(e.to_string(), "unknown topic or partition orders-3: no known leader");
        assert_eq!(Error::unknown("orders", None, "not in the cluster's metadata").to_string(), "unknown topic orders: not in the cluster's metadata");
        let e = Error::NoOffset(TopicPartition::new("orders", 1));
        assert!(matches!(&e, Error::NoOffset(tp) if tp.partition == 1), "{e:?}");
    }

    #[test]
    fn authorization_names_the_resource_its_code_is_about() {
        let e = Error::broker(ErrorCode::TOPIC_AUTHORIZATION_FAILED, None, "produce to t-0".into()).about(Resource::Topic("t".into()));
        assert!(matches!(&e, Error::Authorization { resource: Resource::Topic(t), .. } if t == "t"), "{e:?}");
        assert_eq!(e.code(), Some(ErrorCode::TOPIC_AUTHORIZATION_FAILED));
        assert!(e.to_string().contains("not authorized for topic t"), "{e}");
        // A group code is not about a topic.
        let e = Error::broker(ErrorCode::GROUP_AUTHORIZATION_FAILED, None, "x".into()).about(Resource::Topic("t".into()));
        assert!(matches!(e, Error::Broker { .. }), "{e:?}");
        let e = Error::broker(ErrorCode::CLUSTER_AUTHORIZATION_FAILED, None, "InitProducerId".into());
        assert!(matches!(e, Error::Authorization { resource: Resource::Cluster, .. }), "{e:?}");
        assert!(!e.is_retriable());
    }

    #[test]
    fn group_codes_are_group_errors_that_keep_their_code() {
        for (code, retriable) in [
            (ErrorCode::REBALANCE_IN_PROGRESS, false),
            (ErrorCode::UNKNOWN_MEMBER_ID, false),
            (ErrorCode::ILLEGAL_GENERATION, false),
            (ErrorCode::FENCED_MEMBER_EPOCH, false),
            (ErrorCode::FENCED_INSTANCE_ID, false),
        ] {
            let e = Error::group(code, None, "g", Some("i"), "OffsetCommit".into());
            assert!(matches!(e, Error::Group(_)), "{e:?}");
            assert_eq!((e.code(), e.is_retriable()), (Some(code), retriable), "{e}");
        }
        let e = Error::group(ErrorCode::GROUP_AUTHORIZATION_FAILED, None, "g", None, "JoinGroup g".into());
        assert!(matches!(&e, Error::Authorization { resource: Resource::Group(g), .. } if g == "g"), "{e:?}");
        let e = Error::group(ErrorCode::COORDINATOR_NOT_AVAILABLE, None, "g", None, "x".into());
        assert!(matches!(e, Error::Broker { .. }) && e.is_retriable(), "{e:?}");
    }

    #[test]
    fn kinds_say_whether_a_retry_may_succeed() {
        let timeout = Error::Producer(ProducerError::DeliveryTimeout {
            topic: "t".into(),
            partition: 0,
            records: 2,
            timeout: Duration::from_secs(1),
            last_error: Some(Box::new(Error::broker(ErrorCode::NOT_LEADER_OR_FOLLOWER, None, "produce to t-0".into()))),
        });
        assert!(timeout.is_retriable());
        assert!(
            timeout.to_string().contains("2 record(s) for t-0 expired after the delivery timeout of 1s: last error produce to t-0: NOT_LEADER_OR_FOLLOWER"),
            "{timeout}"
        );
        assert!(Error::Producer(ProducerError::BufferFull { max_block: Duration::from_secs(1) }).is_retriable());
        for e in [ProducerError::Closed, ProducerError::Dropped, ProducerError::RecordTooLarge { size: 9, max_request_size: 1, buffer_memory: 1 }] {
            assert!(!Error::Producer(e).is_retriable());
        }
        let fenced = Error::Producer(ProducerError::Fenced { topic: "t".into(), partition: 1, code: ErrorCode::INVALID_PRODUCER_EPOCH, message: None });
        assert_eq!((fenced.code(), fenced.is_retriable()), (Some(ErrorCode::INVALID_PRODUCER_EPOCH), false));
        assert!(!Error::Consumer(ConsumerError::NotAssigned(TopicPartition::new("t", 0))).is_retriable());
        assert!(Error::Group(GroupError::CoordinatorNotAvailable { group: "g".into() }).is_retriable());
        assert!(Error::Group(GroupError::UnstableOffsets { group: "g".into() }).is_retriable());
        assert!(!Error::Group(GroupError::UnknownAssignor { name: "x".into() }).is_retriable());
    }
}
