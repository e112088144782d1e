//! The client side: requests out, responses in, matched by correlation id.

use bytes::{BufMut, Bytes, BytesMut};

use super::frame::{begin_frame, check_frame_len, FrameDecoder};
use super::{CodecError, InFlight, Selection, Vectored};
use crate::messages::{RequestHeader, ResponseHeader};
use crate::{ApiKey, ByteString, Decode, DecodeError, DecodeErrorKind, Encode, RequestKind, ResponseKind};

/// A request to send: its header (api key, version, correlation id, client id) and body.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboundRequest {
    /// The header; its api key must be the body's.
    pub header: RequestHeader,
    /// The body.
    pub body: RequestKind,
}

impl OutboundRequest {
    /// A request of `api_key` at `version` with no client id.
    pub fn new(api_key: ApiKey, version: i16, correlation_id: i32, body: RequestKind) -> OutboundRequest {
        let header = RequestHeader { request_api_key: api_key.key(), request_api_version: version, correlation_id, client_id: None, ..Default::default() };
        OutboundRequest { header, body }
    }

    /// Sets the client id.
    pub fn with_client_id(mut self, client_id: impl Into<ByteString>) -> OutboundRequest {
        self.header.client_id = Some(client_id.into());
        self
    }

    /// Whether the broker answers this request: all do except Produce with `acks = 0`.
    pub fn expects_response(&self) -> bool {
        !matches!(&self.body, RequestKind::Produce(p) if p.acks == 0)
    }
}

/// A response as read off the wire, with the api and version of the request it answers.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseFrame {
    /// The response header.
    pub header: ResponseHeader,
    /// The api of the request.
    pub api_key: ApiKey,
    /// The version the body was decoded at: the request's, except for an ApiVersions error
    /// response, which brokers send at v0.
    pub version: i16,
    /// The body.
    pub body: ResponseKind,
}

/// The client side of a connection: encodes [`OutboundRequest`]s, decodes [`ResponseFrame`]s.
///
/// Remembers the api and version of every request sent that expects a response, until the
/// response arrives, since that is what the response's header version and body depend on.
#[derive(Debug, Clone, Default)]
pub struct ClientCodec {
    frames: FrameDecoder,
    in_flight: InFlight,
}

impl ClientCodec {
    /// A codec accepting responses up to [`DEFAULT_MAX_FRAME_SIZE`](super::DEFAULT_MAX_FRAME_SIZE).
    pub fn new() -> Self {
        Self::default()
    }

    /// A codec accepting responses of at most `max_frame_size` bytes.
    pub fn with_max_frame_size(max_frame_size: usize) -> Self {
        ClientCodec { frames: FrameDecoder::new(max_frame_size), in_flight: InFlight::new() }
    }

    /// Requests sent and not yet answered.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Expects a response to a request that was sent without this codec (a proxy forwarding a
    /// request frame as it came): its correlation id, api and version.
    pub fn expect_response(&mut self, correlation_id: i32, api_key: ApiKey, version: i16) -> Result<(), CodecError> {
        if !api_key.info().valid.contains(version) {
            return Err(CodecError::UnsupportedVersion { api_key, version });
        }
        self.in_flight.insert(correlation_id, api_key, version)
    }

    /// Encodes `request` onto `dst` and, if it expects a response, remembers its correlation id.
    /// On error `dst` is left as it was and nothing is remembered.
    // Inline here and below: these reach every message through the dispatch enums, which are
    // compiled in the crate that calls them, not all of them in this one (unless `precompiled`).
    #[cfg_attr(not(feature = "precompiled"), inline)]
    pub fn encode_request(&mut self, request: OutboundRequest, dst: &mut BytesMut) -> Result<(), CodecError> {
        let (api_key, version, header_version, expects_response) = self.check_request(&request)?;
        let len = request.header.encoded_len(header_version) + request.body.encoded_len(version);
        let start = dst.len();
        let result = begin_frame(dst, len, i32::MAX as usize)
            .and_then(|()| request.header.encode(dst, header_version).map_err(CodecError::Encode))
            .and_then(|()| request.body.encode(dst, version).map_err(CodecError::Encode));
        match result {
            Ok(()) if expects_response => self.in_flight.insert(request.header.correlation_id, api_key, version),
            Ok(()) => Ok(()),
            Err(e) => {
                dst.truncate(start);
                Err(e)
            }
        }
    }

    /// Encodes `request` as chunks for a vectored write (`writev`), size prefix included: the
    /// `Bytes` in `shared` (the request's records, in encode order) are chunks of their own,
    /// not copied; everything else is copied into small chunks between them. The chunks'
    /// concatenation is what [`encode_request`](Self::encode_request) writes. Same checks, and
    /// the correlation id is remembered the same way.
    #[cfg_attr(not(feature = "precompiled"), inline)]
    pub fn encode_request_vectored(&mut self, request: &OutboundRequest, shared: Vec<Bytes>) -> Result<Vec<Bytes>, CodecError> {
        let (api_key, version, header_version, expects_response) = self.check_request(request)?;
        let len = request.header.encoded_len(header_version) + request.body.encoded_len(version);
        check_frame_len(len, i32::MAX as usize)?;
        let mut out = Vectored::new(shared, 1024);
        out.put_i32(len as i32);
        request.header.encode(&mut out, header_version).map_err(CodecError::Encode)?;
        request.body.encode(&mut out, version).map_err(CodecError::Encode)?;
        if expects_response {
            self.in_flight.insert(request.header.correlation_id, api_key, version)?;
        }
        Ok(out.finish())
    }

    /// The checks of an outgoing request: a known api matching the body, a version it has, a
    /// correlation id not in flight. Returns the api, version, header version and whether a
    /// response is expected.
    #[inline]
    fn check_request(&self, request: &OutboundRequest) -> Result<(ApiKey, i16, i16, bool), CodecError> {
        let key = request.header.request_api_key;
        let api_key = ApiKey::from_i16(key).ok_or(CodecError::UnknownApiKey(key))?;
        let body_api = request.body.api_key();
        if body_api != api_key {
            return Err(CodecError::ApiKeyMismatch { header: api_key, body: body_api });
        }
        let version = request.header.request_api_version;
        if !api_key.info().valid.contains(version) {
            return Err(CodecError::UnsupportedVersion { api_key, version });
        }
        let expects_response = request.expects_response();
        if expects_response && self.in_flight.contains(request.header.correlation_id) {
            return Err(CodecError::DuplicateCorrelationId(request.header.correlation_id));
        }
        Ok((api_key, version, crate::header::request_header_version(key, version), expects_response))
    }

    /// Takes the next response off `src`, or `None` if it has not all arrived.
    #[cfg_attr(not(feature = "precompiled"), inline)]
    pub fn decode_response(&mut self, src: &mut BytesMut) -> Result<Option<ResponseFrame>, CodecError> {
        let Some((frame, _, api_key, version)) = self.next_response(src)? else {
            return Ok(None);
        };
        Self::decode_frame(frame, api_key, version).map(Some)
    }

    /// Like [`decode_response`](Self::decode_response), but decodes only responses whose api and
    /// version `selection` asks for; the others come back whole as the bytes that arrived,
    /// unparsed beyond the correlation id.
    #[cfg_attr(not(feature = "precompiled"), inline)]
    pub fn decode_response_selected(&mut self, src: &mut BytesMut, selection: &Selection) -> Result<Option<SelectedResponse>, CodecError> {
        let Some((frame, correlation_id, api_key, version)) = self.next_response(src)? else {
            return Ok(None);
        };
        if !selection.wants(api_key.key(), version) {
            return Ok(Some(SelectedResponse::Raw { correlation_id, api_key, version, frame }));
        }
        Self::decode_frame(frame, api_key, version).map(|r| Some(SelectedResponse::Decoded(r)))
    }

    /// The next whole response frame, with the request it answers (forgotten from the in-flight
    /// table).
    fn next_response(&mut self, src: &mut BytesMut) -> Result<Option<(Bytes, i32, ApiKey, i16)>, CodecError> {
        let Some(frame) = self.frames.decode(src)? else {
            return Ok(None);
        };
        let frame = frame.freeze();
        let Some(b) = frame.first_chunk::<4>() else {
            let available = frame.len();
            return Err(CodecError::Header(DecodeError::new(DecodeErrorKind::UnexpectedEnd { needed: 4, available }, available)));
        };
        let correlation_id = i32::from_be_bytes(*b);
        let (api_key, version) = self.in_flight.take(correlation_id).ok_or(CodecError::UnknownCorrelationId(correlation_id))?;
        Ok(Some((frame, correlation_id, api_key, version)))
    }

    #[cfg_attr(not(feature = "precompiled"), inline)]
    fn decode_frame(mut frame: Bytes, api_key: ApiKey, version: i16) -> Result<ResponseFrame, CodecError> {
        let header = ResponseHeader::decode(&mut frame, crate::header::response_header_version(api_key, version)).map_err(CodecError::Header)?;
        let (version, body) = decode_response_body(api_key, version, &frame, |version, buf| ResponseKind::decode(buf, api_key.key(), version))
            .map_err(|(version, source)| CodecError::Body { api_key, version, source })?;
        Ok(ResponseFrame { header, api_key, version, body })
    }
}

/// A response as [`ClientCodec::decode_response_selected`] gives it.
// Not boxed: a proxy takes one per response and moves it on at once; a box would be an
// allocation per decoded response.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum SelectedResponse {
    /// Decoded: its api and version were selected.
    Decoded(ResponseFrame),
    /// Passed through: the whole frame as it came (without its size prefix), with what it
    /// answers.
    Raw {
        /// The correlation id.
        correlation_id: i32,
        /// The api of the request.
        api_key: ApiKey,
        /// The version of the request.
        version: i16,
        /// The frame: response header and body, untouched.
        frame: Bytes,
    },
}

/// Decodes a response body (the frame after its header) with `decode` at the request's
/// version, and returns the version it was read at. A broker that does not support the
/// ApiVersions version asked for answers with an error at v0 (UNSUPPORTED_VERSION and its own
/// range, KIP-511), as Kafka's clients expect: such a body that does not decode at its version
/// is read at v0. When that fails too, the error is the one at the request's version (the
/// fallback was a guess). An error names the version it happened at. `decode` may fail with
/// any error type (the CLI's decodes to JSON).
pub fn decode_response_body<T, E>(api_key: ApiKey, version: i16, body: &Bytes, decode: impl Fn(i16, &mut Bytes) -> Result<T, E>) -> Result<(i16, T), (i16, E)> {
    match decode(version, &mut body.clone()) {
        Ok(decoded) => Ok((version, decoded)),
        Err(e) if api_key == ApiKey::ApiVersions && version != 0 => decode(0, &mut body.clone()).map(|decoded| (0, decoded)).map_err(|_| (version, e)),
        Err(e) => Err((version, e)),
    }
}
