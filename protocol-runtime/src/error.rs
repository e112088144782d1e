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

/// Which bound of [`DecodeLimits`](crate::limits::DecodeLimits) was exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Limit {
    /// [`DecodeLimits::max_array_len`](crate::limits::DecodeLimits::max_array_len).
    ArrayLen,
    /// [`DecodeLimits::max_tagged_fields`](crate::limits::DecodeLimits::max_tagged_fields).
    TaggedFields,
    /// [`DecodeLimits::max_string_len`](crate::limits::DecodeLimits::max_string_len).
    StringLen,
    /// [`DecodeLimits::max_bytes_len`](crate::limits::DecodeLimits::max_bytes_len).
    BytesLen,
    /// [`DecodeLimits::max_message_alloc`](crate::limits::DecodeLimits::max_message_alloc).
    MessageAlloc,
    /// [`DecodeLimits::max_decompressed_size`](crate::limits::DecodeLimits::max_decompressed_size).
    DecompressedSize,
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Limit::ArrayLen => "max_array_len",
            Limit::TaggedFields => "max_tagged_fields",
            Limit::StringLen => "max_string_len",
            Limit::BytesLen => "max_bytes_len",
            Limit::MessageAlloc => "max_message_alloc",
            Limit::DecompressedSize => "max_decompressed_size",
        })
    }
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
    /// A records field is malformed: a batch, record, legacy message or control record.
    Records(RecordsError),
    /// A length, count or size fits in the input but is over a bound of the
    /// [`DecodeLimits`](crate::limits::DecodeLimits) in force.
    LimitExceeded {
        /// Which bound.
        limit: Limit,
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
            LengthExceedsRemaining { length, remaining } => write!(f, "length {length} exceeds the {remaining} bytes remaining"),
            StringTooLong(n) => write!(f, "string length {n} exceeds the maximum of 32767"),
            InvalidUtf8 => f.write_str("string is not valid UTF-8"),
            VarintTooLong => f.write_str("varint is too long"),
            UnexpectedNull => f.write_str("null value for a field that is not nullable in this version"),
            TagNotValidForVersion { tag, version } => {
                write!(f, "tag {tag} is not valid for version {version}")
            }
            TaggedFieldSizeMismatch { tag, declared, consumed } => write!(f, "tagged field {tag} declared {declared} bytes but its value used {consumed}"),
            UnsupportedVersion { version } => write!(f, "version {version} is not supported"),
            UnknownApiKey(k) => write!(f, "unknown api key {k}"),
            TrailingBytes { left } => write!(f, "{left} bytes left after the value"),
            Records(e) => fmt::Display::fmt(e, f),
            LimitExceeded { limit, value, max } => write!(f, "{value} exceeds the decode limit {limit} = {max}"),
        }
    }
}

/// What is wrong with a records field (`records` of Produce and Fetch, magic 0, 1 and 2).
///
/// Codecs are named by Kafka's name (`gzip`, `lz4`), so this module needs nothing from the
/// records module and every module can use it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecordsError {
    /// An entry's size prefix is negative.
    NegativeEntrySize {
        /// The entry's base offset.
        base_offset: i64,
        /// The size read.
        size: i32,
    },
    /// An entry's size leaves no room for its magic byte.
    EntryTooSmallForMagic(usize),
    /// An entry's magic byte is not 0, 1 or 2.
    UnknownMagic(i8),
    /// A batch is shorter than the 61-byte batch header.
    BatchTooSmall {
        /// Bytes of the batch.
        len: usize,
        /// The header size.
        header: usize,
    },
    /// A batch's length field disagrees with the bytes it spans.
    BatchLengthMismatch {
        /// The length field.
        length: i32,
        /// Bytes of the batch.
        len: usize,
    },
    /// A batch's magic is not 2.
    BatchMagic(i8),
    /// A batch's CRC-32C does not match its bytes.
    BatchCrc {
        /// The batch's base offset.
        base_offset: i64,
        /// The CRC in the header.
        stored: u32,
        /// The CRC of the bytes.
        computed: u32,
    },
    /// The attributes name a codec Kafka does not define.
    UnknownCodec {
        /// The codec bits.
        codec: u8,
        /// In a legacy message's attributes (else a batch's).
        legacy: bool,
    },
    /// A record or header count is negative.
    NegativeCount {
        /// `record` or `header`.
        what: &'static str,
        /// The count read.
        count: i64,
    },
    /// A batch claims more records than its bytes can hold.
    RecordCountExceeds {
        /// The record count.
        count: usize,
        /// Bytes of records.
        len: usize,
    },
    /// Control records were asked of a batch that is not a control batch.
    NotControlBatch,
    /// Bytes follow the last record a batch counts.
    TrailingAfterRecords(usize),
    /// A record's length is negative.
    NegativeRecordLength(i32),
    /// A record's bytes go on after its headers.
    TrailingInRecord(usize),
    /// A record claims more headers than its bytes can hold.
    HeaderCountExceeds {
        /// The header count.
        count: usize,
        /// Bytes remaining.
        remaining: usize,
    },
    /// A header key's length is negative.
    NegativeHeaderKeyLength(i32),
    /// A header key is not UTF-8.
    HeaderKeyUtf8,
    /// The batch uses a codec this build was compiled without.
    CodecDisabled(&'static str),
    /// Compressed data does not inflate.
    Decompress {
        /// The codec.
        codec: &'static str,
        /// The codec library's message.
        reason: String,
    },
    /// A control record's key version is not 0.
    ControlKeyVersion(i16),
    /// An end-transaction marker's version is not 0.
    EndTxnMarkerVersion(i16),
    /// A control record has a null key.
    ControlNullKey,
    /// A commit or abort marker has a null value.
    EndTxnMarkerNullValue,
    /// A legacy message is shorter than the smallest message.
    MessageTooSmall {
        /// Bytes of the message.
        len: usize,
        /// Its magic (0 or 1), once read.
        magic: Option<i8>,
    },
    /// A legacy message's size field disagrees with its bytes.
    MessageSizeMismatch {
        /// The size field.
        size: i32,
        /// Bytes of the message.
        len: usize,
    },
    /// A legacy message's magic is not 0 or 1.
    MessageMagic(i8),
    /// A legacy message's CRC-32 does not match its bytes.
    MessageCrc {
        /// The message's offset.
        offset: i64,
        /// The CRC in the message.
        stored: u32,
        /// The CRC of the bytes.
        computed: u32,
    },
    /// A legacy message is compressed with zstd, which needs magic 2.
    ZstdInLegacy,
    /// Bytes follow a legacy message's value.
    TrailingInMessage(usize),
    /// A compressed legacy message has a null value.
    CompressedNullValue,
    /// The inner message set of a compressed message ends inside a message header.
    TruncatedInnerMessage,
    /// An inner message's size runs past the inner message set.
    InnerMessageSizeExceeds {
        /// The size field.
        size: i32,
        /// Bytes remaining.
        remaining: usize,
    },
    /// A compressed message holds another compressed message.
    NestedCompression,
}

impl fmt::Display for RecordsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use RecordsError::*;
        match self {
            NegativeEntrySize { base_offset, size } => {
                write!(f, "record batch at offset {base_offset} has negative size {size}")
            }
            EntryTooSmallForMagic(size) => write!(f, "record batch size {size} is too small to hold a magic byte"),
            UnknownMagic(m) => write!(f, "unknown record batch magic {m}"),
            BatchTooSmall { len, header } => {
                write!(f, "record batch of {len} bytes is smaller than the {header}-byte header")
            }
            BatchLengthMismatch { length, len } => {
                write!(f, "record batch length {length} does not match its {len} bytes")
            }
            BatchMagic(m) => write!(f, "record batch magic {m} is not 2"),
            BatchCrc { base_offset, stored, computed } => {
                write!(f, "record batch at offset {base_offset} is corrupt: stored CRC-32C {stored:#010x}, computed {computed:#010x}")
            }
            UnknownCodec { codec, legacy } => {
                let place = if *legacy { "message" } else { "record batch" };
                write!(f, "unknown compression codec {codec} in {place} attributes")
            }
            NegativeCount { what, count } => write!(f, "invalid negative {what} count {count}"),
            RecordCountExceeds { count, len } => write!(f, "record count {count} cannot fit in {len} bytes of records"),
            NotControlBatch => f.write_str("record batch is not a control batch"),
            TrailingAfterRecords(n) => write!(f, "{n} bytes follow the last record of the batch"),
            NegativeRecordLength(n) => write!(f, "invalid negative record length {n}"),
            TrailingInRecord(n) => write!(f, "record has {n} bytes beyond its headers"),
            HeaderCountExceeds { count, remaining } => {
                write!(f, "header count {count} exceeds the {remaining} bytes remaining")
            }
            NegativeHeaderKeyLength(n) => write!(f, "invalid negative header key length {n}"),
            HeaderKeyUtf8 => f.write_str("header key is not valid UTF-8"),
            CodecDisabled(c) => write!(f, "compression codec {c} is not enabled in this build (cargo feature \"{c}\")"),
            Decompress { codec, reason } => write!(f, "invalid {codec} data: {reason}"),
            ControlKeyVersion(v) => write!(f, "invalid control record key version {v}"),
            EndTxnMarkerVersion(v) => write!(f, "invalid end transaction marker version {v}"),
            ControlNullKey => f.write_str("control record has a null key"),
            EndTxnMarkerNullValue => f.write_str("end transaction marker has a null value"),
            MessageTooSmall { len, magic: Some(m) } => write!(f, "magic {m} message of {len} bytes is too small"),
            MessageTooSmall { len, magic: None } => {
                write!(f, "message of {len} bytes is smaller than the smallest message")
            }
            MessageSizeMismatch { size, len } => write!(f, "message size {size} does not match its {len} bytes"),
            MessageMagic(m) => write!(f, "message magic {m} is not 0 or 1"),
            MessageCrc { offset, stored, computed } => {
                write!(f, "message at offset {offset} is corrupt: stored CRC-32 {stored:#010x}, computed {computed:#010x}")
            }
            ZstdInLegacy => f.write_str("zstd is not allowed in magic 0 and 1 messages"),
            TrailingInMessage(n) => write!(f, "{n} bytes follow the message's value"),
            CompressedNullValue => f.write_str("compressed message has a null value"),
            TruncatedInnerMessage => f.write_str("truncated message inside a compressed message"),
            InnerMessageSizeExceeds { size, remaining } => {
                write!(f, "inner message size {size} exceeds the {remaining} bytes remaining")
            }
            NestedCompression => f.write_str("nested compressed messages are not allowed"),
        }
    }
}

/// Why records cannot be written.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecordsEncodeError {
    /// Offsets must increase from record to record.
    OffsetNotIncreasing {
        /// The record's offset.
        offset: i64,
        /// The offset before it.
        previous: i64,
    },
    /// A record's offset is more than an int32 delta from the batch's base offset.
    OffsetDeltaOverflow {
        /// The record's offset.
        offset: i64,
        /// The base offset.
        base: i64,
    },
    /// A key or value is longer than an int32 length.
    KeyOrValueTooLong,
    /// A record is longer than an int32 length.
    RecordTooLarge,
    /// A batch is longer than an int32 length (its size, when known).
    BatchTooLarge(Option<usize>),
    /// A batch holds more than i32::MAX records.
    TooManyRecords,
    /// Control records go through the control-batch builder.
    ControlRecordInDataBatch,
    /// Magic 0 and 1 messages have no headers.
    HeadersInLegacy(i8),
    /// The legacy builder's magic is not 0 or 1.
    LegacyMagic(i8),
    /// zstd needs magic 2.
    ZstdNeedsMagic2,
    /// A compressed legacy message set is longer than an int32 length.
    CompressedSetTooLarge,
    /// This build was compiled without the codec.
    CodecDisabled(&'static str),
    /// The codec library failed.
    CompressFailed {
        /// The codec.
        codec: &'static str,
        /// The codec library's message.
        reason: String,
    },
}

impl fmt::Display for RecordsEncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use RecordsEncodeError::*;
        match self {
            OffsetNotIncreasing { offset, previous } => {
                write!(f, "record offset {offset} does not follow the previous offset {previous}")
            }
            OffsetDeltaOverflow { offset, base } => {
                write!(f, "record offset {offset} is not within an int32 delta above the base offset {base}")
            }
            KeyOrValueTooLong => f.write_str("record key or value is longer than an int32 length"),
            RecordTooLarge => f.write_str("record is too large"),
            BatchTooLarge(Some(n)) => write!(f, "record batch of {n} bytes is too large"),
            BatchTooLarge(None) => f.write_str("record batch is too large"),
            TooManyRecords => f.write_str("too many records for one batch"),
            ControlRecordInDataBatch => f.write_str("control records belong in a control batch"),
            HeadersInLegacy(m) => write!(f, "magic {m} messages cannot carry headers"),
            LegacyMagic(m) => write!(f, "legacy magic must be 0 or 1, not {m}"),
            ZstdNeedsMagic2 => f.write_str("zstd needs magic 2"),
            CompressedSetTooLarge => f.write_str("compressed message set is too large"),
            CodecDisabled(c) => write!(f, "compression codec {c} is not enabled in this build (cargo feature \"{c}\")"),
            CompressFailed { codec, reason } => write!(f, "{codec}: {reason}"),
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
        DecodeError(Box::new(DecodeInner { kind, message: None, version: None, path: Vec::new(), remaining, offset: None }))
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
    /// Records cannot be written as they are (offsets, sizes, codecs).
    Records(RecordsEncodeError),
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
            EncodeErrorKind::NonDefaultInVersion => f.write_str("a non-default value cannot be written in a version that lacks this field"),
            EncodeErrorKind::NullInNonNullableVersion => f.write_str("null cannot be written in a version where the field is not nullable"),
            EncodeErrorKind::TaggedFieldsInNonFlexibleVersion => f.write_str("tagged fields are set but the version is not flexible"),
            EncodeErrorKind::TooLong(n) => write!(f, "length {n} is too long to be serialized"),
            EncodeErrorKind::Records(e) => fmt::Display::fmt(e, f),
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
