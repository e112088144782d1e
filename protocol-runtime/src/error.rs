//! Typed decode and encode errors.
//!
//! A decode error starts as a small [`DecodeErrorKind`] at the primitive that failed and collects
//! context as it unwinds: the field path (innermost segment pushed first), the message name and
//! the byte offset. Errors are boxed so that `Result<T, DecodeError>` stays one word wide on the
//! hot path.

use std::fmt;

/// One step of a field path: a field name or an array index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathSegment {
    /// A field, by its spec name (`Topics`).
    Field(&'static str),
    /// An element of an array, by index.
    Index(usize),
}

fn fmt_path(path: &[PathSegment], f: &mut fmt::Formatter<'_>) -> fmt::Result {
    // Segments are pushed innermost first, as the error unwinds.
    let mut first = true;
    for seg in path.iter().rev() {
        match seg {
            PathSegment::Field(name) => {
                if !first {
                    f.write_str(".")?;
                }
                f.write_str(name)?;
            }
            PathSegment::Index(i) => write!(f, "[{i}]")?,
        }
        first = false;
    }
    Ok(())
}

/// What went wrong while decoding, without the context of where.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeErrorKind {
    /// The input ended before a value was complete.
    UnexpectedEnd {
        /// Bytes the value needed.
        needed: usize,
        /// Bytes that were left.
        available: usize,
    },
    /// A length or count prefix was negative (and not the null marker, or null is not allowed).
    NegativeLength(i64),
    /// A length or count prefix claims more than the bytes that remain.
    LengthExceedsRemaining {
        /// The claimed length (bytes, or elements for arrays).
        length: u64,
        /// Bytes remaining in the input.
        remaining: usize,
    },
    /// A string is longer than Kafka allows (32767 bytes).
    StringTooLong(usize),
    /// A string is not valid UTF-8.
    InvalidUtf8,
    /// A varint ran past its maximum width or overflowed its type.
    VarintTooLong,
    /// Null was read in a version in which the field is not nullable.
    UnexpectedNull,
    /// A known tag arrived in a version in which that tagged field does not exist.
    TagNotValidForVersion {
        /// The tag.
        tag: u32,
        /// The version being decoded.
        version: i16,
    },
    /// A tagged field's declared size does not match what its value used.
    TaggedFieldSizeMismatch {
        /// The tag.
        tag: u32,
        /// The size written before the value.
        declared: usize,
        /// The bytes the value used.
        consumed: usize,
    },
    /// The message does not exist at this version.
    UnsupportedVersion {
        /// The version asked for.
        version: i16,
    },
    /// The api key is not known to this build.
    UnknownApiKey(i16),
    /// Bytes were left after a value that should have filled its input.
    TrailingBytes {
        /// How many.
        left: usize,
    },
    /// A value is structurally invalid (records framing, checksums, limits).
    Invalid(String),
    /// A length, count or size fits in the input but is over a bound of the
    /// [`DecodeLimits`](crate::limits::DecodeLimits) in force.
    LimitExceeded {
        /// Which bound.
        limit: crate::limits::Limit,
        /// The value seen (for the allocation budget: the bytes it would have reached).
        value: u64,
        /// The bound.
        max: u64,
    },
}

impl fmt::Display for DecodeErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use DecodeErrorKind::*;
        match self {
            UnexpectedEnd { needed, available } => {
                write!(f, "unexpected end of input: needed {needed} bytes, {available} left")
            }
            NegativeLength(n) => write!(f, "invalid negative length {n}"),
            LengthExceedsRemaining { length, remaining } => write!(
                f,
                "length {length} exceeds the {remaining} bytes remaining"
            ),
            StringTooLong(n) => write!(f, "string length {n} exceeds the maximum of 32767"),
            InvalidUtf8 => f.write_str("string is not valid UTF-8"),
            VarintTooLong => f.write_str("varint is too long"),
            UnexpectedNull => f.write_str("null value for a field that is not nullable in this version"),
            TagNotValidForVersion { tag, version } => {
                write!(f, "tag {tag} is not valid for version {version}")
            }
            TaggedFieldSizeMismatch { tag, declared, consumed } => write!(
                f,
                "tagged field {tag} declared {declared} bytes but its value used {consumed}"
            ),
            UnsupportedVersion { version } => write!(f, "version {version} is not supported"),
            UnknownApiKey(k) => write!(f, "unknown api key {k}"),
            TrailingBytes { left } => write!(f, "{left} bytes left after the value"),
            Invalid(msg) => f.write_str(msg),
            LimitExceeded { limit, value, max } => write!(f, "{value} exceeds the decode limit {limit} = {max}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct DecodeInner {
    kind: DecodeErrorKind,
    message: Option<&'static str>,
    version: Option<i16>,
    path: Vec<PathSegment>,
    /// Bytes left in the buffer being read when the error was raised; turned into an offset by
    /// [`DecodeError::in_message`], which knows where the message started.
    remaining: usize,
    offset: Option<usize>,
}

/// A decode failure: what failed ([`DecodeErrorKind`]), in which message, at which field path
/// and at which byte offset from the start of the message.
#[derive(Clone, PartialEq, Eq)]
pub struct DecodeError(Box<DecodeInner>);

impl DecodeError {
    /// An error of `kind`, raised with `remaining` bytes left in the buffer being read.
    #[cold]
    pub fn new(kind: DecodeErrorKind, remaining: usize) -> Self {
        DecodeError(Box::new(DecodeInner {
            kind,
            message: None,
            version: None,
            path: Vec::new(),
            remaining,
            offset: None,
        }))
    }

    /// Pushes a field name onto the path (as the error unwinds, innermost first).
    #[cold]
    pub fn field(mut self, name: &'static str) -> Self {
        self.0.path.push(PathSegment::Field(name));
        self
    }

    /// Pushes an array index onto the path.
    #[cold]
    pub fn index(mut self, index: usize) -> Self {
        self.0.path.push(PathSegment::Index(index));
        self
    }

    /// Accounts for bytes that followed the sub-buffer the error was raised in.
    #[cold]
    pub fn shift(mut self, trailing: usize) -> Self {
        self.0.remaining = self.0.remaining.saturating_add(trailing);
        self
    }

    /// Names the message and version and fixes the offset, given the length of the input the
    /// message was decoded from. The innermost message wins when messages nest.
    #[cold]
    pub fn in_message(mut self, message: &'static str, version: i16, total_len: usize) -> Self {
        if self.0.message.is_none() {
            self.0.message = Some(message);
            self.0.version = Some(version);
            self.0.offset = Some(total_len.saturating_sub(self.0.remaining));
        }
        self
    }

    /// What failed.
    pub fn kind(&self) -> &DecodeErrorKind {
        &self.0.kind
    }

    /// The message being decoded, if known.
    pub fn message(&self) -> Option<&'static str> {
        self.0.message
    }

    /// The version being decoded, once known.
    pub fn version(&self) -> Option<i16> {
        self.0.version
    }

    /// The field path, outermost first.
    pub fn path(&self) -> impl Iterator<Item = &PathSegment> {
        self.0.path.iter().rev()
    }

    /// The field path as text (`Topics[2].Partitions[0].Records`).
    pub fn path_string(&self) -> String {
        struct P<'a>(&'a [PathSegment]);
        impl fmt::Display for P<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt_path(self.0, f)
            }
        }
        P(&self.0.path).to_string()
    }

    /// Byte offset of the failure from the start of the message, once the message is known.
    pub fn offset(&self) -> Option<usize> {
        self.0.offset
    }
}

impl fmt::Debug for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("failed to decode ")?;
        match self.0.message {
            Some(m) => f.write_str(m)?,
            None => f.write_str("value")?,
        }
        if let Some(v) = self.0.version {
            write!(f, " v{v}")?;
        }
        if !self.0.path.is_empty() {
            f.write_str(" field ")?;
            fmt_path(&self.0.path, f)?;
        }
        if let Some(off) = self.0.offset {
            write!(f, " at offset {off}")?;
        }
        write!(f, ": {}", self.0.kind)
    }
}

impl std::error::Error for DecodeError {}

/// Adds field context to a decode result; used by generated code.
pub trait DecodeContext<T> {
    /// Pushes `name` onto the error's field path.
    fn field(self, name: &'static str) -> Result<T, DecodeError>;
}

impl<T> DecodeContext<T> for Result<T, DecodeError> {
    #[inline(always)]
    fn field(self, name: &'static str) -> Result<T, DecodeError> {
        match self {
            Ok(v) => Ok(v),
            Err(e) => Err(e.field(name)),
        }
    }
}

/// What went wrong while encoding.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EncodeErrorKind {
    /// The message does not exist at this version.
    UnsupportedVersion,
    /// A field that the version lacks, and that is not ignorable, holds a non-default value.
    NonDefaultInVersion,
    /// A field holds null in a version in which it is not nullable.
    NullInNonNullableVersion,
    /// Unknown tagged fields are set but the version is not flexible.
    TaggedFieldsInNonFlexibleVersion,
    /// A string, bytes or array is longer than its length prefix can express.
    TooLong(usize),
    /// A value cannot be written as it is (records framing, limits).
    Invalid(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct EncodeInner {
    kind: EncodeErrorKind,
    version: Option<i16>,
    message: Option<&'static str>,
    path: Vec<PathSegment>,
}

/// An encode failure: what failed, in which message, at which field and version.
#[derive(Clone, PartialEq, Eq)]
pub struct EncodeError(Box<EncodeInner>);

impl EncodeError {
    /// An error of `kind`; the message and version are added as it unwinds.
    #[cold]
    pub fn new(kind: EncodeErrorKind) -> Self {
        EncodeError(Box::new(EncodeInner { kind, version: None, message: None, path: Vec::new() }))
    }

    /// Pushes a field name onto the path.
    #[cold]
    pub fn field(mut self, name: &'static str) -> Self {
        self.0.path.push(PathSegment::Field(name));
        self
    }

    /// Pushes an array index onto the path.
    #[cold]
    pub fn index(mut self, index: usize) -> Self {
        self.0.path.push(PathSegment::Index(index));
        self
    }

    /// Names the message and version (the innermost message wins).
    #[cold]
    pub fn in_message(mut self, message: &'static str, version: i16) -> Self {
        if self.0.message.is_none() {
            self.0.message = Some(message);
            self.0.version = Some(version);
        }
        self
    }

    /// What failed.
    pub fn kind(&self) -> &EncodeErrorKind {
        &self.0.kind
    }

    /// The version being encoded, once known.
    pub fn version(&self) -> Option<i16> {
        self.0.version
    }

    /// The message being encoded, if known.
    pub fn message(&self) -> Option<&'static str> {
        self.0.message
    }

    /// The field path, outermost first.
    pub fn path(&self) -> impl Iterator<Item = &PathSegment> {
        self.0.path.iter().rev()
    }
}

impl fmt::Debug for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("failed to encode ")?;
        f.write_str(self.0.message.unwrap_or("value"))?;
        if let Some(v) = self.0.version {
            write!(f, " v{v}")?;
        }
        if !self.0.path.is_empty() {
            f.write_str(" field ")?;
            fmt_path(&self.0.path, f)?;
        }
        f.write_str(": ")?;
        match &self.0.kind {
            EncodeErrorKind::UnsupportedVersion => f.write_str("version is not supported"),
            EncodeErrorKind::NonDefaultInVersion => f.write_str(
                "a non-default value cannot be written in a version that lacks this field",
            ),
            EncodeErrorKind::NullInNonNullableVersion => {
                f.write_str("null cannot be written in a version where the field is not nullable")
            }
            EncodeErrorKind::TaggedFieldsInNonFlexibleVersion => {
                f.write_str("tagged fields are set but the version is not flexible")
            }
            EncodeErrorKind::TooLong(n) => write!(f, "length {n} is too long to be serialized"),
            EncodeErrorKind::Invalid(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for EncodeError {}

/// Adds field context to an encode result; used by generated code.
pub trait EncodeContext<T> {
    /// Pushes `name` onto the error's field path.
    fn field(self, name: &'static str) -> Result<T, EncodeError>;
}

impl<T> EncodeContext<T> for Result<T, EncodeError> {
    #[inline(always)]
    fn field(self, name: &'static str) -> Result<T, EncodeError> {
        match self {
            Ok(v) => Ok(v),
            Err(e) => Err(e.field(name)),
        }
    }
}
