//! The codec's error type.

use std::fmt;

use crate::{ApiKey, DecodeError, EncodeError};

/// Why a frame could not be read or written.
#[derive(Debug)]
#[non_exhaustive]
pub enum CodecError {
    /// A frame's size prefix exceeds the configured maximum; nothing was buffered for it.
    FrameTooLarge {
        /// The declared size.
        size: usize,
        /// The configured maximum.
        max: usize,
    },
    /// A frame's size prefix is negative.
    NegativeFrameSize(i32),
    /// The api key is not one this build knows.
    UnknownApiKey(i16),
    /// The api exists but this build has no such version of it.
    UnsupportedVersion {
        /// The api.
        api_key: ApiKey,
        /// The version asked for.
        version: i16,
    },
    /// A request or response header could not be decoded.
    Header(DecodeError),
    /// A request or response body could not be decoded.
    Body {
        /// The api.
        api_key: ApiKey,
        /// The version it was decoded at.
        version: i16,
        /// What went wrong.
        source: DecodeError,
    },
    /// A header or body could not be encoded.
    Encode(EncodeError),
    /// The frame would exceed the maximum size the peer accepts (or an int32).
    EncodedFrameTooLarge {
        /// The size the frame would have.
        size: usize,
        /// The maximum.
        max: usize,
    },
    /// The body passed with a header belongs to another api.
    ApiKeyMismatch {
        /// The api named by the header.
        header: ApiKey,
        /// The api of the body.
        body: ApiKey,
    },
    /// A response arrived with a correlation id no request in flight has.
    UnknownCorrelationId(i32),
    /// A request was sent with a correlation id that is already waiting for a response.
    DuplicateCorrelationId(i32),
    /// An I/O error from the transport (only produced through the tokio-util impls).
    Io(std::io::Error),
}

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CodecError::FrameTooLarge { size, max } => {
                write!(f, "frame of {size} bytes exceeds the maximum frame size of {max}")
            }
            CodecError::NegativeFrameSize(size) => write!(f, "negative frame size {size}"),
            CodecError::UnknownApiKey(key) => write!(f, "unknown api key {key}"),
            CodecError::UnsupportedVersion { api_key, version } => {
                write!(f, "{} (key {}) has no version {version}", api_key.name(), api_key.key())
            }
            CodecError::Header(e) => write!(f, "bad header: {e}"),
            CodecError::Body { api_key, version, source } => {
                write!(f, "bad {} v{version} body: {source}", api_key.name())
            }
            CodecError::Encode(e) => write!(f, "encoding failed: {e}"),
            CodecError::EncodedFrameTooLarge { size, max } => {
                write!(f, "encoded frame of {size} bytes exceeds the maximum of {max}")
            }
            CodecError::ApiKeyMismatch { header, body } => {
                write!(f, "header names {} but the body is a {} body", header.name(), body.name())
            }
            CodecError::UnknownCorrelationId(id) => write!(f, "response with unknown correlation id {id}"),
            CodecError::DuplicateCorrelationId(id) => {
                write!(f, "correlation id {id} is already waiting for a response")
            }
            CodecError::Io(e) => write!(f, "i/o error: {e}"),
        }
    }
}

impl std::error::Error for CodecError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CodecError::Header(e) => Some(e),
            CodecError::Body { source, .. } => Some(source),
            CodecError::Encode(e) => Some(e),
            CodecError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<std::io::Error> for CodecError {
    fn from(e: std::io::Error) -> Self {
        CodecError::Io(e)
    }
}

impl From<EncodeError> for CodecError {
    fn from(e: EncodeError) -> Self {
        CodecError::Encode(e)
    }
}
