//! Why a proxy could not start, or why it closed a connection.

use kwire::ApiKey;

/// Why a proxy could not start, or why it closed a connection.
#[derive(Debug)]
#[non_exhaustive]
pub enum ProxyError {
    /// The configuration cannot be served (an upstream that is not `host:port`).
    Config(String),
    /// A socket or file operation failed.
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
    /// A frame whose size prefix is negative or over [`Config::max_frame`](crate::Config::max_frame),
    /// or a rewritten frame over an int32.
    Frame(kwire::codec::CodecError),
    /// A request header that does not parse.
    Header(kwire::codec::CodecError),
    /// A body the proxy had to decode that does not.
    Decode {
        /// Request or response.
        what: &'static str,
        /// The api.
        api: ApiKey,
        /// Its version.
        version: i16,
        /// The error.
        source: kwire::DecodeError,
    },
    /// A rewritten message that does not encode.
    Encode(kwire::EncodeError),
    /// The proxy's own answer (KIP-511) that does not encode.
    Answer(kwire::codec::CodecError),
    /// A response to no request in flight.
    UnexpectedResponse(i32),
    /// A response frame too short for its header.
    ShortResponse(usize),
    /// More requests in flight than the proxy tracks ([`MAX_IN_FLIGHT`](crate::MAX_IN_FLIGHT)).
    TooManyInFlight,
    /// More brokers than [`Config::max_listeners`](crate::Config::max_listeners).
    TooManyBrokers(usize),
}

impl ProxyError {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> ProxyError {
        ProxyError::Io { context: context.into(), source }
    }
}

impl std::fmt::Display for ProxyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProxyError::Config(e) => write!(f, "{e}"),
            ProxyError::Io { context, source } => write!(f, "{context}: {source}"),
            ProxyError::Frame(e) => write!(f, "frame: {e}"),
            ProxyError::Header(e) => write!(f, "request header: {e}"),
            ProxyError::Decode { what, api, version, source } => write!(f, "{what} {api:?} v{version}: {source}"),
            ProxyError::Encode(e) => write!(f, "re-encoding: {e}"),
            ProxyError::Answer(e) => write!(f, "answering an ApiVersions request: {e}"),
            ProxyError::UnexpectedResponse(c) => write!(f, "a response with correlation id {c} to no request in flight"),
            ProxyError::ShortResponse(n) => write!(f, "a response frame of {n} bytes has no room for its header"),
            ProxyError::TooManyInFlight => write!(f, "more than {} requests in flight", crate::MAX_IN_FLIGHT),
            ProxyError::TooManyBrokers(n) => write!(f, "more than {n} brokers to stand in for (--max-listeners)"),
        }
    }
}

impl std::error::Error for ProxyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ProxyError::Io { source, .. } => Some(source),
            ProxyError::Frame(e) | ProxyError::Header(e) | ProxyError::Answer(e) => Some(e),
            ProxyError::Decode { source, .. } => Some(source),
            ProxyError::Encode(e) => Some(e),
            _ => None,
        }
    }
}
