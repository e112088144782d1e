//! The broker side: requests in, responses out.

use bytes::{Bytes, BytesMut};

use super::frame::{begin_frame, FrameDecoder};
use super::CodecError;
use super::Selection;
use crate::messages::{RequestHeader, ResponseHeader};
use crate::{ApiKey, Encode, RequestKind, ResponseKind, VersionRange};

/// One request as read off the wire: its header, decoded, and its body, not yet decoded.
///
/// The header is read at the version [`request_header_version`](crate::header::request_header_version)
/// gives for its api key and version (v1 for an api key this build does not know), so a request
/// of an unknown api or version still yields its correlation id and can be answered.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestFrame {
    /// The request header.
    pub header: RequestHeader,
    /// The version the header was read at.
    pub header_version: i16,
    /// The body: a slice of the frame, after the header.
    pub body: Bytes,
}

impl RequestFrame {
    /// Reads the header of a frame (without its size prefix); the rest is the body.
    pub fn parse(mut frame: Bytes) -> Result<RequestFrame, CodecError> {
        let (header, header_version) = crate::header::read_request_header(&mut frame).map_err(CodecError::Header)?;
        Ok(RequestFrame { header, header_version, body: frame })
    }

    /// The api, or [`CodecError::UnknownApiKey`].
    pub fn api_key(&self) -> Result<ApiKey, CodecError> {
        ApiKey::from_i16(self.header.request_api_key).ok_or(CodecError::UnknownApiKey(self.header.request_api_key))
    }

    /// The request's api version.
    pub fn version(&self) -> i16 {
        self.header.request_api_version
    }

    /// The request's correlation id.
    pub fn correlation_id(&self) -> i32 {
        self.header.correlation_id
    }

    /// The client id, if the client sent one.
    pub fn client_id(&self) -> Option<&str> {
        self.header.client_id.as_deref()
    }

    /// Whether the broker answers this request: all are answered except Produce with
    /// `acks = 0` (as [`OutboundRequest::expects_response`](super::OutboundRequest::expects_response)
    /// on the sending side). The acks are read from the body's start, after the transactional id
    /// of v3 and later, without decoding the rest; a body too short to tell is taken to be
    /// answered, so that a proxy waits for a response rather than drop one.
    pub fn expects_response(&self) -> bool {
        self.header.request_api_key != ApiKey::Produce.key() || produce_acks(self.version(), &self.body) != Some(0)
    }

    /// Decodes the body only when `selection` asks for its api and version; otherwise `None`,
    /// and the frame passes on as the bytes that came (a proxy forwards `body` untouched,
    /// unparsed beyond the header). Errors as [`decode_body`](Self::decode_body).
    #[cfg_attr(not(feature = "precompiled"), inline)]
    pub fn decode_selected(&self, selection: &Selection) -> Result<Option<RequestKind>, CodecError> {
        if !selection.wants(self.header.request_api_key, self.version()) {
            return Ok(None);
        }
        self.decode_body().map(Some)
    }

    /// The KIP-511 answer when this is an ApiVersions request of a version this build does not
    /// support: UNSUPPORTED_VERSION at v0 with the ApiVersions versions `supported` (what this
    /// side serves; a subset of the build's), built without decoding the body. `None` for
    /// anything else.
    pub fn unsupported_api_versions(&self, supported: VersionRange) -> Option<OutboundResponse> {
        let wanted = self.header.request_api_key == ApiKey::ApiVersions.key() && !supported.contains(self.version());
        wanted.then(|| OutboundResponse {
            correlation_id: self.correlation_id(),
            api_key: ApiKey::ApiVersions,
            version: 0,
            body: crate::negotiate::unsupported_api_versions(supported).into(),
        })
    }

    /// Decodes the body: [`CodecError::UnknownApiKey`] or [`CodecError::UnsupportedVersion`]
    /// when this build cannot, [`CodecError::Body`] when the bytes are malformed.
    // Inline here and below: these reach every message through the dispatch enums, which are
    // compiled in the crate that calls them, not all of them in this one (unless `precompiled`).
    #[cfg_attr(not(feature = "precompiled"), inline)]
    pub fn decode_body(&self) -> Result<RequestKind, CodecError> {
        let api_key = self.api_key()?;
        let version = self.version();
        if !api_key.info().valid.contains(version) {
            return Err(CodecError::UnsupportedVersion { api_key, version });
        }
        RequestKind::decode(&mut self.body.clone(), api_key.key(), version).map_err(|source| CodecError::Body { api_key, version, source })
    }
}

/// A response to send: the body, the api and version it is encoded at, and the correlation id
/// of the request it answers.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboundResponse {
    /// The correlation id of the request.
    pub correlation_id: i32,
    /// The api (must be the body's).
    pub api_key: ApiKey,
    /// The version to encode the body at, normally the request's.
    pub version: i16,
    /// The body.
    pub body: ResponseKind,
}

impl OutboundResponse {
    /// A response to `request` at the request's version.
    pub fn new(request: &RequestFrame, body: ResponseKind) -> Result<OutboundResponse, CodecError> {
        Ok(OutboundResponse { correlation_id: request.correlation_id(), api_key: request.api_key()?, version: request.version(), body })
    }

    /// Encodes the frame (size, header, body) onto `dst`; on error `dst` is left as it was.
    #[cfg_attr(not(feature = "precompiled"), inline)]
    pub fn encode(&self, dst: &mut BytesMut, max_frame_size: usize) -> Result<(), CodecError> {
        let body_api = self.body.api_key();
        if body_api != self.api_key {
            return Err(CodecError::ApiKeyMismatch { header: self.api_key, body: body_api });
        }
        if !self.api_key.info().valid.contains(self.version) {
            return Err(CodecError::UnsupportedVersion { api_key: self.api_key, version: self.version });
        }
        let header_version = crate::header::response_header_version(self.api_key, self.version);
        let header = ResponseHeader { correlation_id: self.correlation_id, ..Default::default() };
        let len = header.encoded_len(header_version) + self.body.encoded_len(self.version);
        let start = dst.len();
        let result = begin_frame(dst, len, max_frame_size)
            .and_then(|()| header.encode(dst, header_version).map_err(CodecError::Encode))
            .and_then(|()| self.body.encode(dst, self.version).map_err(CodecError::Encode));
        if result.is_err() {
            dst.truncate(start);
        }
        result
    }
}

/// The broker side of a connection: decodes [`RequestFrame`]s, encodes [`OutboundResponse`]s.
#[derive(Debug, Clone, Default)]
pub struct ServerCodec {
    frames: FrameDecoder,
}

impl ServerCodec {
    /// A codec accepting requests up to [`DEFAULT_MAX_FRAME_SIZE`](super::DEFAULT_MAX_FRAME_SIZE).
    pub fn new() -> Self {
        Self::default()
    }

    /// A codec accepting requests of at most `max_frame_size` bytes.
    pub fn with_max_frame_size(max_frame_size: usize) -> Self {
        ServerCodec { frames: FrameDecoder::new(max_frame_size) }
    }

    /// Takes the next request off `src`, or `None` if it has not all arrived. Only framing and
    /// header errors are reported here; unknown apis and versions are reported by
    /// [`RequestFrame::api_key`] and [`RequestFrame::decode_body`], so they can be answered.
    pub fn decode_request(&mut self, src: &mut BytesMut) -> Result<Option<RequestFrame>, CodecError> {
        match self.frames.decode(src)? {
            Some(frame) => RequestFrame::parse(frame.freeze()).map(Some),
            None => Ok(None),
        }
    }

    /// Encodes `response` onto `dst`.
    #[cfg_attr(not(feature = "precompiled"), inline)]
    pub fn encode_response(&mut self, response: OutboundResponse, dst: &mut BytesMut) -> Result<(), CodecError> {
        // Responses are not bounded by what we accept; the int32 prefix is the only limit.
        response.encode(dst, i32::MAX as usize)
    }
}

/// The `acks` of a Produce request body at `version`, or `None` when the body is too short.
fn produce_acks(version: i16, body: &Bytes) -> Option<i16> {
    let rest: Bytes = if version < 3 {
        body.clone()
    } else if version < 9 {
        // A nullable string: int16 length, -1 for null.
        let len = i16::from_be_bytes(*body.first_chunk::<2>()?);
        body.get(2usize.saturating_add(usize::try_from(len).unwrap_or(0))..).map(|r| body.slice_ref(r))?
    } else {
        // A compact nullable string: unsigned varint length + 1, 0 for null.
        let mut rest = body.clone();
        let n = kwire_runtime::varint::read_unsigned_varint(&mut rest).ok()?;
        let skip = usize::try_from(n.saturating_sub(1)).ok()?;
        rest.get(skip..).map(|r| rest.slice_ref(r))?
    };
    Some(i16::from_be_bytes(*rest.first_chunk::<2>()?))
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::produce_acks;
    use crate::messages::ProduceRequest;
    use crate::Message;

    #[test]
    fn acks_are_peeked_at_every_produce_version() {
        for version in ProduceRequest::VERSIONS.lo..=ProduceRequest::VERSIONS.hi {
            for transactional_id in [None, Some("txn-7".into())] {
                for acks in [0, 1, -1] {
                    let transactional_id = if version >= 3 { transactional_id.clone() } else { None };
                    let request = ProduceRequest { acks, transactional_id: transactional_id.clone(), timeout_ms: 1500, ..Default::default() };
                    let body = request.to_bytes(version).unwrap();
                    assert_eq!(produce_acks(version, &body), Some(acks), "v{version} {transactional_id:?}");
                }
            }
        }
        // Too short to tell: not taken for acks=0.
        assert_eq!(produce_acks(9, &Bytes::from_static(&[0x05, b'a'])), None);
        assert_eq!(produce_acks(3, &Bytes::from_static(&[0x7f, 0xff])), None);
        assert_eq!(produce_acks(9, &Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff])), None);
    }
}
