//! Reading request headers without knowing the api: the api key, version, correlation id and
//! client id sit at the same place in every request header version that carries them, so they
//! can be read even for api keys newer than this build.

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

fn short(needed: usize, available: usize) -> DecodeError {
    DecodeError::new(DecodeErrorKind::UnexpectedEnd { needed, available }, available)
        .in_message("RequestHeader", -1, available)
}

/// Reads the start of a request (the bytes after the size prefix). Works for any api key:
/// the client id is a classic nullable string in header versions 1 and 2 alike; only
/// ControlledShutdown v0 uses header v0, which has none.
pub fn peek_request_header(body: &[u8]) -> Result<RequestHeaderPeek<'_>, DecodeError> {
    let fixed: &[u8; 8] = body.get(..8).and_then(|b| b.try_into().ok()).ok_or_else(|| short(8, body.len()))?;
    let api_key = i16::from_be_bytes([fixed[0], fixed[1]]);
    let api_version = i16::from_be_bytes([fixed[2], fixed[3]]);
    let correlation_id = i32::from_be_bytes([fixed[4], fixed[5], fixed[6], fixed[7]]);
    let header_version = ApiKey::from_i16(api_key).map_or(1, |k| k.request_header_version(api_version));
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
                DecodeError::new(DecodeErrorKind::InvalidUtf8, rest.len() - 2)
                    .field("ClientId")
                    .in_message("RequestHeader", header_version, body.len())
            })?;
            Some(s)
        }
    };
    Ok(RequestHeaderPeek { api_key, api_version, correlation_id, client_id })
}

/// Decodes a whole request header from `buf` (the bytes after the size prefix), choosing the
/// header version from the api key and version it starts with. Returns the header and its
/// version; `buf` is left at the start of the body.
pub fn decode_request_header(buf: &mut Bytes) -> Result<(RequestHeader, i16), DecodeError> {
    let peek = peek_request_header(buf.chunk())?;
    let Some(api) = peek.known_api_key() else {
        let left = buf.remaining();
        return Err(DecodeError::new(DecodeErrorKind::UnknownApiKey(peek.api_key), left).in_message("RequestHeader", -1, left));
    };
    let version = api.request_header_version(peek.api_version);
    Ok((RequestHeader::decode(buf, version)?, version))
}
