//! Request and response headers: the one rule for which header version a frame uses, and
//! reading a request header without knowing the api (the api key, version, correlation id and
//! client id sit at the same place in every request header version that carries them, so they
//! can be read even for api keys and versions newer than this build).

use bytes::{Buf, Bytes};

use crate::messages::RequestHeader;
use crate::{ApiKey, Decode, DecodeError, DecodeErrorKind};

/// The start of a request header, read without decoding the rest of the frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHeaderPeek<'a> {
    /// The api key (maybe unknown to this build).
    pub api_key: i16,
    /// The api version.
    pub api_version: i16,
    /// The correlation id.
    pub correlation_id: i32,
    /// The client id; `None` when null or when the header version has none (v0).
    pub client_id: Option<&'a str>,
}

impl RequestHeaderPeek<'_> {
    /// The api key, when this build knows it.
    pub fn known_api_key(&self) -> Option<ApiKey> {
        ApiKey::from_i16(self.api_key)
    }
}

/// The request header version of a request of `api_key` at `version`, as a broker reads it:
/// what the spec says ([`ApiKey::request_header_version`]) for versions this build knows; for a
/// newer version of an api that is flexible at its newest known version, v2 (Kafka's
/// `flexibleVersions` are open-ended, so it is flexible too: that is how a broker reads the
/// header of an ApiVersions request it does not support, to answer it); v1 for an api key this
/// build does not know (its api key, version, correlation id and client id read the same).
pub fn request_header_version(api_key: i16, version: i16) -> i16 {
    let Some(api) = ApiKey::from_i16(api_key) else { return 1 };
    let info = api.info();
    if version > info.valid.hi && !info.flexible.is_empty() && info.flexible.hi == info.valid.hi {
        2
    } else {
        api.request_header_version(version)
    }
}

/// The response header version of a response of `api` at `version`, as the spec says.
pub fn response_header_version(api: ApiKey, version: i16) -> i16 {
    api.response_header_version(version)
}

fn short(needed: usize, available: usize) -> DecodeError {
    DecodeError::new(DecodeErrorKind::UnexpectedEnd { needed, available }, available).in_message("RequestHeader", -1, available)
}

/// The api key, api version and correlation id: the first eight bytes of every request header
/// (of a frame after its size prefix); `None` when fewer have arrived.
pub fn peek_request_start(body: &[u8]) -> Option<(i16, i16, i32)> {
    let [k0, k1, v0, v1, c0, c1, c2, c3] = *body.first_chunk::<8>()?;
    Some((i16::from_be_bytes([k0, k1]), i16::from_be_bytes([v0, v1]), i32::from_be_bytes([c0, c1, c2, c3])))
}

/// The correlation id: the first four bytes of every response header (of a frame after its
/// size prefix); `None` when fewer have arrived.
pub fn peek_response_correlation_id(body: &[u8]) -> Option<i32> {
    body.first_chunk::<4>().map(|c| i32::from_be_bytes(*c))
}

/// Reads the start of a request (the bytes after the size prefix). Works for any api key:
/// the client id is a classic nullable string in header versions 1 and 2 alike; only
/// ControlledShutdown v0 uses header v0, which has none.
pub fn peek_request_header(body: &[u8]) -> Result<RequestHeaderPeek<'_>, DecodeError> {
    let (api_key, api_version, correlation_id) = peek_request_start(body).ok_or_else(|| short(8, body.len()))?;
    let header_version = request_header_version(api_key, api_version);
    let client_id = if header_version == 0 {
        None
    } else {
        let rest = body.get(8..).unwrap_or_default();
        let len = rest.get(..2).map(|b| i16::from_be_bytes([b[0], b[1]])).ok_or_else(|| short(10, body.len()))?;
        if len < 0 {
            None
        } else {
            let raw = rest.get(2..2 + len as usize).ok_or_else(|| short(10 + len as usize, body.len()))?;
            let s = std::str::from_utf8(raw).map_err(|_| {
                DecodeError::new(DecodeErrorKind::InvalidUtf8, rest.len() - 2).field("ClientId").in_message("RequestHeader", header_version, body.len())
            })?;
            Some(s)
        }
    };
    Ok(RequestHeaderPeek { api_key, api_version, correlation_id, client_id })
}

/// Decodes a whole request header from `buf` (the bytes after the size prefix), at the version
/// [`request_header_version`] gives for the api key and version it starts with (also for
/// versions newer than this build). An api key this build does not know is an error. Returns
/// the header and its version; `buf` is left at the start of the body.
pub fn decode_request_header(buf: &mut Bytes) -> Result<(RequestHeader, i16), DecodeError> {
    let peek = peek_request_header(buf.chunk())?;
    if peek.known_api_key().is_none() {
        let left = buf.remaining();
        return Err(DecodeError::new(DecodeErrorKind::UnknownApiKey(peek.api_key), left).in_message("RequestHeader", -1, left));
    }
    read_request_header(buf)
}

/// Like [`decode_request_header`], also for api keys this build does not know (read at v1), as
/// a broker reads a request it must still answer.
pub(crate) fn read_request_header(buf: &mut Bytes) -> Result<(RequestHeader, i16), DecodeError> {
    let (key, version) = match buf.chunk().first_chunk::<4>() {
        Some([k0, k1, v0, v1]) => (i16::from_be_bytes([*k0, *k1]), i16::from_be_bytes([*v0, *v1])),
        // Too short for a header: let the header decoder say what is missing.
        None => (-1, -1),
    };
    let header_version = request_header_version(key, version);
    Ok((RequestHeader::decode(buf, header_version)?, header_version))
}
