//! kwire: the Apache Kafka wire protocol, generated from Kafka's own message specs.
//!
//! Every api key and every valid version, requests and responses, headers and data structs:
//! each message is a plain struct with the union of its fields across versions, and encodes or
//! decodes at any valid version exactly as Apache Kafka's generated Java code does.
//!
//! ```
//! use kwire::messages::{MetadataRequest, metadata_request::MetadataRequestTopic};
//! use kwire::{Decode, Encode, Message};
//!
//! let request = MetadataRequest {
//!     topics: Some(vec![MetadataRequestTopic { name: Some("orders".into()), ..Default::default() }]),
//!     ..Default::default()
//! };
//! let bytes = request.to_bytes(12)?;
//! let back = MetadataRequest::decode(&mut bytes.clone(), 12)?;
//! assert_eq!(back, request);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

pub use kwire_runtime as runtime;
pub use kwire_runtime::{
    ApiInfo, ByteString, Bytes, BytesMut, Decode, DecodeError, DecodeErrorKind, Encode, EncodeError, EncodeErrorKind, Message, RawTaggedField, ReleaseVersions,
    Request, UnknownTaggedFields, Uuid, VersionOrigin, VersionRange,
};
// Arrays of fixed-width values are `SmallVec`s (16 bytes of elements inline).
pub use kwire_runtime::{smallvec, SmallVec};

/// Every generated message, one module per spec, plus the [`ApiKey`] table
/// and the [`RequestKind`] / [`ResponseKind`]
/// dispatch enums.
#[allow(clippy::all, missing_docs)]
pub mod messages {
    include!(concat!(env!("OUT_DIR"), "/messages.rs"));
}

/// JSON in the shape of Kafka's generated JSON converters (feature `serde`).
#[cfg(feature = "serde")]
pub use kwire_runtime::json::{JsonError, VersionedJson};
pub use messages::{ApiKey, ApiRequest, RequestKind, ResponseKind};

pub mod header;
pub mod negotiate;
pub mod records;
pub mod wireshark;

/// Borrowed views (`XxxView<'a>` beside every message): read in place, without allocating.
pub use kwire_runtime::view::{ArrayView, IntoOwned, MessageView, TaggedView, View, Viewed};
pub use kwire_runtime::visit::{Endpoint, EndpointMut, EntityField, EntityMut, EntityType, EntityValue, Keyed, KeyedSlice, PortMut, Visit};
pub use kwire_runtime::ErrorCode;

pub mod codec;

/// The directory of Kafka specs this build was generated from.
pub const SPEC_DIR: &str = env!("KWIRE_SPEC_DIR");

/// The README's Rust examples, compiled and run as doctests so they keep up with the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
