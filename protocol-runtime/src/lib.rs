//! Runtime for kwire: the wire primitives, traits and errors the generated Kafka messages
//! are built on. It holds no generated code.
//!
//! Everything decodes from [`bytes::Bytes`] without copying and encodes into any
//! [`bytes::BufMut`]. No input can make a decoder panic or allocate more than the input
//! justifies: every length and count is checked against the bytes remaining first.
#![warn(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing))]
// Lengths and offsets from input must not overflow (saturating or checked ops); the modules that
// only build test data or static tables opt out below.
#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

#[allow(clippy::arithmetic_side_effects)] // not reached by input
pub mod api;
#[doc(hidden)] // generated code calls it; not public API
pub mod array;
#[doc(hidden)]
pub mod encoding;
pub mod error;
#[allow(clippy::arithmetic_side_effects)] // not reached by input
pub mod error_code;
#[cfg(feature = "serde")]
pub mod json;
#[doc(hidden)] // generated code calls it; not public API
pub mod length;
pub mod lenient;
pub mod limits;
pub mod message;
pub mod primitive;
pub mod records;
#[allow(clippy::arithmetic_side_effects)] // not reached by input
pub mod sample;
pub mod string;
pub mod tagged;
pub mod uuid;
pub mod varint;
pub mod version;
pub mod view;
pub mod visit;

/// The `smallvec` crate: generated messages hold arrays of fixed-width values as `SmallVec`s.
pub use ::smallvec;
pub use ::smallvec::{smallvec, SmallVec};
pub use api::{ApiInfo, ReleaseVersions, VersionOrigin};
pub use bytes::{Buf, BufMut, Bytes, BytesMut};
pub use bytestring::ByteString;
pub use error::{DecodeContext, DecodeError, DecodeErrorKind, EncodeContext, EncodeError, EncodeErrorKind, PathSegment, RecordsEncodeError, RecordsError};
pub use error_code::ErrorCode;
pub use limits::{decode_with_limits, DecodeLimits};
pub use message::{Decode, Encode, Message, Request};
pub use tagged::{RawTaggedField, UnknownTaggedFields};
pub use uuid::Uuid;
pub use version::VersionRange;
pub use view::{ArrayView, IntoOwned, MessageView, TaggedView, View, Viewed};
pub use visit::{Endpoint, EndpointMut, EntityType, Keyed, KeyedSlice, PortMut, Visit};
