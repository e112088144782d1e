//! The client's error type: every failure is one [`Error`], retriable or not.

use std::fmt;
use std::time::Duration;

use kwire::codec::CodecError;
use kwire::negotiate::NegotiationError;
use kwire::{ApiKey, ErrorCode};

/// A result with the client's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

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
    },
    /// The TLS handshake failed: an untrusted certificate, a name mismatch, ...
    Tls {
        /// The broker's address.
        addr: String,
        /// rustls's reason.
        message: String,
    },
    /// A frame from the broker could not be read (a bad size, header or body): that
    /// connection is closed, others are not affected.
    Protocol {
        /// The broker's address.
        addr: String,
        /// The codec's reason.
        message: String,
    },
    /// The broker answered with something that does not fit the request (another api, a
    /// missing partition, ...).
    UnexpectedResponse(String),
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
    /// Metadata does not know the topic or partition.
    UnknownTopicOrPartition(String),
    /// Metadata names a broker (as a leader, say) that it does not list.
    UnknownBroker(i32),
    /// The producer's buffer is full, it is closed, or the record could not be delivered in
    /// the delivery timeout.
    Producer(String),
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
    NoOffset(String),
    /// The consumer cannot go on: not subscribed, fenced by another static member, a group
    /// error that retrying does not fix, ...
    Consumer(String),
}

impl Error {
    /// Whether retrying the operation may succeed: broker error codes marked retriable,
    /// timeouts, transport failures and disconnections.
    pub fn is_retriable(&self) -> bool {
        match self {
            Error::Io { .. } | Error::Timeout { .. } | Error::Disconnected(_) => true,
            Error::Broker { code, .. } => code.is_retriable(),
            Error::UnknownTopicOrPartition(_) | Error::UnknownBroker(_) => true,
            _ => false,
        }
    }

    /// The broker's error code, for [`Error::Broker`].
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Error::Broker { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// An error for a non-zero code, `Ok` for zero.
    pub fn check(code: i16, message: Option<&str>, context: impl FnOnce() -> String) -> Result<()> {
        if code == 0 {
            return Ok(());
        }
        Err(Error::Broker { code: ErrorCode(code), message: message.map(str::to_owned), context: context() })
    }

    pub(crate) fn codec(addr: &str, e: CodecError) -> Error {
        match e {
            // A TLS alert after the handshake (TLS 1.3 servers refuse client certificates then).
            CodecError::Io(e) if e.get_ref().is_some_and(|inner| inner.is::<tokio_rustls::rustls::Error>()) => {
                Error::Tls { addr: addr.to_owned(), message: e.to_string() }
            }
            CodecError::Io(e) => Error::Io { addr: addr.to_owned(), message: e.to_string() },
            e => Error::Protocol { addr: addr.to_owned(), message: e.to_string() },
        }
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
            Error::Io { addr, message } => write!(f, "connection to {addr} failed: {message}"),
            Error::Tls { addr, message } => write!(f, "TLS with {addr} failed: {message}"),
            Error::Protocol { addr, message } => write!(f, "bad data from {addr}: {message}"),
            Error::UnexpectedResponse(m) => write!(f, "unexpected response: {m}"),
            Error::Timeout { api, after } => write!(f, "no {} response within {after:?}", api.name()),
            Error::UnsupportedVersion { api, reason } => write!(f, "{} unusable: {reason}", api.name()),
            Error::Authentication { mechanism, message } => write!(f, "SASL/{mechanism} authentication failed: {message}"),
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
            Error::UnknownTopicOrPartition(m) => write!(f, "unknown topic or partition: {m}"),
            Error::UnknownBroker(id) => write!(f, "metadata lists no broker with node id {id}"),
            Error::Producer(m) => write!(f, "producer: {m}"),
            Error::OffsetOutOfRange { partition, offset } => {
                write!(f, "offset {offset} is out of range for {partition} and the reset policy is none")
            }
            Error::LogTruncation { partition, position, end_offset } => write!(
                f,
                "{partition} was truncated to {end_offset} below the position {position} after a leader change, and the reset policy is none"
            ),
            Error::NoOffset(p) => write!(f, "{p} has no committed offset and the reset policy is none"),
            Error::Consumer(m) => write!(f, "consumer: {m}"),
        }
    }
}

impl std::error::Error for Error {}
