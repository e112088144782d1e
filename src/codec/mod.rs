//! A connection codec: size-prefixed frames with request and response headers.
//!
//! Every Kafka frame is an int32 size followed by that many bytes: a request header and body
//! (client to broker) or a response header and body (broker to client). The header version
//! depends on the api and its version ([`ApiKey::request_header_version`](crate::ApiKey::request_header_version),
//! [`ApiKey::response_header_version`](crate::ApiKey::response_header_version)) and a response does not say which request it answers
//! except by correlation id, so each side of a connection needs a little state:
//!
//! - [`ServerCodec`] (broker side) reads [`RequestFrame`]s: the header, the api key and version
//!   and the body as `Bytes`, decoded into a [`RequestKind`](crate::RequestKind) on demand; it
//!   writes [`OutboundResponse`]s with the header version their api and version call for.
//! - [`ClientCodec`] (client side) writes [`OutboundRequest`]s and remembers each correlation id's api
//!   key and version, so that it can decode the matching [`ResponseFrame`].
//!
//! Both are sans-io: they read from and write to a `BytesMut`. They are built from the pieces
//! every other reader of Kafka frames here uses too (the CLI's capture reader, kwire-fake,
//! the fuzz targets): [`FrameDecoder`] splits frames, [`crate::header`] holds the one rule for
//! header versions, [`InFlight`] tracks correlation ids and [`decode_response_body`] decodes a
//! response body with the ApiVersions fallback of KIP-511. With the `tokio` feature they also
//! implement tokio-util's `Decoder` and `Encoder`, for use with `Framed`. Every frame is checked
//! against a maximum size ([`DEFAULT_MAX_FRAME_SIZE`] unless configured) before anything is
//! buffered for it, and every failure is a [`CodecError`].
//!
//! ```
//! use kwire::codec::{ClientCodec, OutboundRequest, ServerCodec, OutboundResponse};
//! use kwire::messages::{ApiVersionsRequest, ApiVersionsResponse};
//! use kwire::{ApiKey, BytesMut, ResponseKind};
//!
//! let (mut client, mut server) = (ClientCodec::new(), ServerCodec::new());
//! let mut wire = BytesMut::new();
//! let request = OutboundRequest::new(ApiKey::ApiVersions, 3, 1, ApiVersionsRequest::default().into());
//! client.encode_request(request, &mut wire)?;
//!
//! let frame = server.decode_request(&mut wire)?.expect("a whole frame");
//! assert_eq!((frame.api_key()?, frame.version(), frame.correlation_id()), (ApiKey::ApiVersions, 3, 1));
//! let response = OutboundResponse::new(&frame, ApiVersionsResponse::default().into())?;
//! server.encode_response(response, &mut wire)?;
//!
//! let response = client.decode_response(&mut wire)?.expect("a whole frame");
//! assert!(matches!(response.body, ResponseKind::ApiVersions(_)));
//! # Ok::<(), kwire::codec::CodecError>(())
//! ```

mod client;
mod error;
mod frame;
mod in_flight;
mod selection;
mod server;
#[cfg(feature = "tokio")]
mod tokio;
mod vectored;

pub use client::{decode_response_body, ClientCodec, OutboundRequest, ResponseFrame, SelectedResponse};
pub use error::CodecError;
pub use frame::{FrameDecoder, DEFAULT_MAX_FRAME_SIZE};
pub use in_flight::InFlight;
pub use selection::Selection;
pub use server::{OutboundResponse, RequestFrame, ServerCodec};
pub use vectored::Vectored;
