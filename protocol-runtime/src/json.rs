//! JSON in the shape of Apache Kafka's generated `XxxJsonConverter` classes (what Kafka's request
//! logging prints), behind the `serde` feature.
//!
//! A message converts at a version: only the fields present at that version appear, named as in
//! the spec with the first letter lower-cased; int64 are JSON numbers; uuids are Kafka's string
//! form (URL-safe base64 without padding, 22 characters); bytes are standard base64 with padding
//! (Jackson's `BinaryNode`); tagged fields appear only when not default. Two deliberate
//! differences keep a JSON round trip lossless:
//!
//! - `records` fields are the base64 of their bytes. Kafka's converter writes an empty binary
//!   (or, when logging requests, only `xxxSizeInBytes`), which cannot be read back.
//! - Unknown tagged fields, which Kafka's converter drops, are kept as
//!   `"_unknownTaggedFields": [{"tag": 7, "data": "base64"}]` when there are any.
//!
//! Reading is strict like Kafka's: a missing field that is mandatory at the version, a field the
//! version does not have, a key that is no field at all, a wrong JSON type or an out-of-range
//! number is an error naming the field path.

use std::fmt;

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use bytes::Bytes;
use bytestring::ByteString;
pub use serde_json;
pub use serde_json::{Map, Value};

use crate::message::Message;
use crate::tagged::UnknownTaggedFields;
use crate::uuid::Uuid;

/// The key under which unknown tagged fields are kept.
pub const UNKNOWN_TAGGED_FIELDS: &str = "_unknownTaggedFields";

/// A value with a JSON form at a protocol version: every generated message and struct, and the
/// field types they hold.
pub trait VersionedJson: Sized {
    /// The JSON form of `self` at `version`. Fails when the value cannot be expressed at that
    /// version (a non-default value in a field the version lacks, null where not nullable).
    fn to_json(&self, version: i16) -> Result<Value, JsonError>;

    /// Reads the JSON form at `version`.
    fn from_json(value: &Value, version: i16) -> Result<Self, JsonError>;
}

/// One step of a JSON path: a key or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonPathSegment {
    /// An object key (`partitionIndex`).
    Key(&'static str),
    /// An array element.
    Index(usize),
}

/// What went wrong converting to or from JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum JsonErrorKind {
    /// A field mandatory at this version is missing.
    MissingField,
    /// The version does not have this field (reading), or a non-default value is in a
    /// non-ignorable field the version lacks (writing).
    FieldNotInVersion,
    /// An object key that names no field.
    UnknownField(String),
    /// The JSON value has the wrong type.
    WrongType {
        /// What was expected (`a string`).
        expected: &'static str,
        /// What was found (`number`).
        found: &'static str,
    },
    /// A number does not fit the field's type.
    OutOfRange(String),
    /// A string is not valid base64 or not a valid uuid.
    InvalidEncoding(String),
    /// Null where the version does not allow it.
    NullNotAllowed,
    /// The message does not exist at this version.
    UnsupportedVersion(i16),
    /// The api key is not known to this build.
    UnknownApiKey(i16),
}

impl fmt::Display for JsonErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use JsonErrorKind::*;
        match self {
            MissingField => f.write_str("field is mandatory in this version but missing"),
            FieldNotInVersion => f.write_str("field is not present in this version"),
            UnknownField(k) => write!(f, "unknown field \"{k}\""),
            WrongType { expected, found } => write!(f, "expected {expected}, got {found}"),
            OutOfRange(m) => f.write_str(m),
            InvalidEncoding(m) => f.write_str(m),
            NullNotAllowed => f.write_str("null is not allowed in this version"),
            UnsupportedVersion(v) => write!(f, "version {v} is not supported"),
            UnknownApiKey(k) => write!(f, "unknown api key {k}"),
        }
    }
}

/// A JSON conversion failure: what failed, in which message and version, at which path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonError {
    kind: JsonErrorKind,
    message: Option<(&'static str, i16)>,
    /// Innermost first, as the error unwinds.
    path: Vec<JsonPathSegment>,
}

impl JsonError {
    /// An error of `kind` with no context yet.
    #[cold]
    pub fn new(kind: JsonErrorKind) -> Self {
        JsonError { kind, message: None, path: Vec::new() }
    }

    /// What went wrong.
    pub fn kind(&self) -> &JsonErrorKind {
        &self.kind
    }

    /// The path from the message to the failing value (`topics[0].name`).
    pub fn path(&self) -> String {
        let mut out = String::new();
        for seg in self.path.iter().rev() {
            match seg {
                JsonPathSegment::Key(k) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(k);
                }
                JsonPathSegment::Index(i) => out.push_str(&format!("[{i}]")),
            }
        }
        out
    }

    /// Adds the enclosing key.
    #[cold]
    pub fn key(mut self, key: &'static str) -> Self {
        self.path.push(JsonPathSegment::Key(key));
        self
    }

    /// Adds the enclosing array index.
    #[cold]
    pub fn index(mut self, i: usize) -> Self {
        self.path.push(JsonPathSegment::Index(i));
        self
    }

    /// Names the message and version (outermost context).
    #[cold]
    pub fn in_message(mut self, name: &'static str, version: i16) -> Self {
        if self.message.is_none() {
            self.message = Some((name, version));
        }
        self
    }
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((name, version)) = self.message {
            write!(f, "{name} v{version}: ")?;
        }
        let path = self.path();
        if !path.is_empty() {
            write!(f, "{path}: ")?;
        }
        write!(f, "{}", self.kind)
    }
}

impl std::error::Error for JsonError {}

/// Adds a key to the error of a result (used by generated code).
pub trait JsonContext<T> {
    /// Names the enclosing key.
    fn key(self, key: &'static str) -> Result<T, JsonError>;
}

impl<T> JsonContext<T> for Result<T, JsonError> {
    #[inline]
    fn key(self, key: &'static str) -> Result<T, JsonError> {
        self.map_err(|e| e.key(key))
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn wrong(expected: &'static str, found: &Value) -> JsonError {
    JsonError::new(JsonErrorKind::WrongType { expected, found: type_name(found) })
}

// ---- helpers for generated code ----

#[doc(hidden)] // generated code calls it; not public API
/// Converts a top-level message: checks the version, then names the message and version in any
/// error.
pub fn message_to_json<T: Message>(version: i16, fields: impl FnOnce() -> Result<Value, JsonError>) -> Result<Value, JsonError> {
    if !T::VERSIONS.contains(version) {
        return Err(unsupported_version(T::NAME, version));
    }
    fields().map_err(|e| e.in_message(T::NAME, version))
}

#[doc(hidden)] // generated code calls it; not public API
/// Reads a top-level message: checks the version, then names the message and version in any
/// error.
pub fn message_from_json<T: Message>(version: i16, fields: impl FnOnce() -> Result<T, JsonError>) -> Result<T, JsonError> {
    if !T::VERSIONS.contains(version) {
        return Err(unsupported_version(T::NAME, version));
    }
    fields().map_err(|e| e.in_message(T::NAME, version))
}

#[doc(hidden)] // generated code calls it; not public API
/// The object a struct is read from.
pub fn object(value: &Value) -> Result<&Map<String, Value>, JsonError> {
    value.as_object().ok_or_else(|| wrong("an object", value))
}

#[doc(hidden)] // generated code calls it; not public API
/// Fails on the first key of `obj` that is not in `known`.
pub fn check_keys(obj: &Map<String, Value>, known: &[&str]) -> Result<(), JsonError> {
    match obj.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(JsonError::new(JsonErrorKind::UnknownField(k.clone()))),
        None => Ok(()),
    }
}

#[doc(hidden)] // generated code calls it; not public API
/// The error for a missing mandatory field.
#[cold]
pub fn missing(key: &'static str) -> JsonError {
    JsonError::new(JsonErrorKind::MissingField).key(key)
}

#[doc(hidden)] // generated code calls it; not public API
/// The error for a field the version lacks.
#[cold]
pub fn not_in_version(key: &'static str) -> JsonError {
    JsonError::new(JsonErrorKind::FieldNotInVersion).key(key)
}

#[doc(hidden)] // generated code calls it; not public API
/// The error for an unsupported version of a message.
#[cold]
pub fn unsupported_version(name: &'static str, version: i16) -> JsonError {
    JsonError::new(JsonErrorKind::UnsupportedVersion(version)).in_message(name, version)
}

#[doc(hidden)] // generated code calls it; not public API
/// The error for an api key this build does not know.
#[cold]
pub fn unknown_api_key(key: i16) -> JsonError {
    JsonError::new(JsonErrorKind::UnknownApiKey(key))
}

#[doc(hidden)] // generated code calls it; not public API
/// Writes the field `key`, naming it in errors.
#[inline]
pub fn field_to_json<T: VersionedJson>(v: &T, key: &'static str, version: i16) -> Result<Value, JsonError> {
    v.to_json(version).key(key)
}

#[doc(hidden)] // generated code calls it; not public API
/// Reads the field `key`, naming it in errors.
#[inline]
pub fn field_from_json<T: VersionedJson>(v: &Value, key: &'static str, version: i16) -> Result<T, JsonError> {
    T::from_json(v, version).key(key)
}

#[doc(hidden)] // generated code calls it; not public API
/// Writes the nullable field `key`: `null` where `nullable`, else an error.
pub fn option_to_json<T: VersionedJson>(v: Option<&T>, nullable: bool, key: &'static str, version: i16) -> Result<Value, JsonError> {
    match v {
        Some(v) => v.to_json(version).key(key),
        None if nullable => Ok(Value::Null),
        None => Err(JsonError::new(JsonErrorKind::NullNotAllowed).key(key)),
    }
}

#[doc(hidden)] // generated code calls it; not public API
/// Reads the nullable field `key`: `null` is `None` where `nullable`, else an error.
pub fn option_from_json<T: VersionedJson>(v: &Value, nullable: bool, key: &'static str, version: i16) -> Result<Option<T>, JsonError> {
    match v {
        Value::Null if nullable => Ok(None),
        Value::Null => Err(JsonError::new(JsonErrorKind::NullNotAllowed).key(key)),
        v => T::from_json(v, version).map(Some).key(key),
    }
}

#[doc(hidden)] // generated code calls it; not public API
/// Writes unknown tagged fields under [`UNKNOWN_TAGGED_FIELDS`] when there are any.
pub fn write_unknown_tagged(obj: &mut Map<String, Value>, fields: &UnknownTaggedFields) {
    if fields.is_empty() {
        return;
    }
    let list = fields
        .iter()
        .map(|f| {
            let mut o = Map::new();
            o.insert("tag".into(), Value::from(f.tag));
            o.insert("data".into(), Value::String(STANDARD.encode(&f.data)));
            Value::Object(o)
        })
        .collect();
    obj.insert(UNKNOWN_TAGGED_FIELDS.into(), Value::Array(list));
}

#[doc(hidden)] // generated code calls it; not public API
/// Reads unknown tagged fields; `flexible` says whether the version has a tagged section.
pub fn read_unknown_tagged(obj: &Map<String, Value>, flexible: bool) -> Result<UnknownTaggedFields, JsonError> {
    let mut out = UnknownTaggedFields::default();
    let Some(list) = obj.get(UNKNOWN_TAGGED_FIELDS) else { return Ok(out) };
    if !flexible {
        return Err(not_in_version(UNKNOWN_TAGGED_FIELDS));
    }
    let read = || -> Result<UnknownTaggedFields, JsonError> {
        let items = list.as_array().ok_or_else(|| wrong("an array", list))?;
        for (i, item) in items.iter().enumerate() {
            let field = || -> Result<(u32, Bytes), JsonError> {
                let o = object(item)?;
                check_keys(o, &["tag", "data"])?;
                let tag = o.get("tag").ok_or_else(|| missing("tag"))?;
                let tag = tag
                    .as_u64()
                    .and_then(|t| u32::try_from(t).ok())
                    .ok_or_else(|| JsonError::new(JsonErrorKind::OutOfRange(format!("tag {tag} is not a u32"))).key("tag"))?;
                let data = o.get("data").ok_or_else(|| missing("data"))?;
                Ok((tag, Bytes::from_json(data, 0).key("data")?))
            };
            let (tag, data) = field().map_err(|e| e.index(i))?;
            out.push(tag, data);
        }
        Ok(out)
    };
    read().key(UNKNOWN_TAGGED_FIELDS)
}

// ---- field types ----

macro_rules! int_json {
    ($($ty:ty),*) => {$(
        impl VersionedJson for $ty {
            fn to_json(&self, _version: i16) -> Result<Value, JsonError> {
                Ok(Value::from(*self))
            }

            fn from_json(value: &Value, _version: i16) -> Result<Self, JsonError> {
                // Kafka's MessageUtil.jsonNodeToInt/Long: integral numbers only, range-checked.
                let n = match value {
                    Value::Number(n) => n,
                    v => return Err(wrong("an integer", v)),
                };
                let v = n
                    .as_i64()
                    .map(i128::from)
                    .or_else(|| n.as_u64().map(i128::from))
                    .ok_or_else(|| wrong("an integer", value))?;
                <$ty>::try_from(v).map_err(|_| {
                    JsonError::new(JsonErrorKind::OutOfRange(format!("{v} does not fit in {}", stringify!($ty))))
                })
            }
        }
    )*};
}

int_json!(i8, i16, u16, i32, i64);

impl VersionedJson for bool {
    fn to_json(&self, _version: i16) -> Result<Value, JsonError> {
        Ok(Value::Bool(*self))
    }

    fn from_json(value: &Value, _version: i16) -> Result<Self, JsonError> {
        value.as_bool().ok_or_else(|| wrong("a boolean", value))
    }
}

impl VersionedJson for f64 {
    /// A JSON number; NaN and the infinities, which JSON lacks, as the strings Jackson would
    /// print for them (`"NaN"`, `"Infinity"`, `"-Infinity"`).
    fn to_json(&self, _version: i16) -> Result<Value, JsonError> {
        Ok(match serde_json::Number::from_f64(*self) {
            Some(n) => Value::Number(n),
            None if self.is_nan() => Value::String("NaN".into()),
            None if *self > 0.0 => Value::String("Infinity".into()),
            None => Value::String("-Infinity".into()),
        })
    }

    fn from_json(value: &Value, _version: i16) -> Result<Self, JsonError> {
        match value {
            Value::Number(n) => n.as_f64().ok_or_else(|| wrong("a number", value)),
            Value::String(s) if s == "NaN" => Ok(f64::NAN),
            Value::String(s) if s == "Infinity" => Ok(f64::INFINITY),
            Value::String(s) if s == "-Infinity" => Ok(f64::NEG_INFINITY),
            v => Err(wrong("a number", v)),
        }
    }
}

impl VersionedJson for ByteString {
    fn to_json(&self, _version: i16) -> Result<Value, JsonError> {
        Ok(Value::String(self.to_string()))
    }

    fn from_json(value: &Value, _version: i16) -> Result<Self, JsonError> {
        value.as_str().map(ByteString::from).ok_or_else(|| wrong("a string", value))
    }
}

impl VersionedJson for Bytes {
    /// Standard base64 with padding, as Jackson writes a `BinaryNode`.
    fn to_json(&self, _version: i16) -> Result<Value, JsonError> {
        Ok(Value::String(STANDARD.encode(self)))
    }

    fn from_json(value: &Value, _version: i16) -> Result<Self, JsonError> {
        let s = value.as_str().ok_or_else(|| wrong("a base64 string", value))?;
        STANDARD.decode(s).map(Bytes::from).map_err(|e| JsonError::new(JsonErrorKind::InvalidEncoding(format!("invalid base64: {e}"))))
    }
}

impl Uuid {
    /// Kafka's string form (`Uuid.toString()`): URL-safe base64 of the 16 bytes, no padding.
    pub fn to_kafka_string(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.0)
    }

    /// Parses Kafka's string form (`Uuid.fromString`).
    pub fn from_kafka_string(s: &str) -> Result<Uuid, JsonError> {
        let bad = |why: String| JsonError::new(JsonErrorKind::InvalidEncoding(format!("invalid uuid \"{s}\": {why}")));
        let bytes = URL_SAFE_NO_PAD.decode(s).map_err(|e| bad(e.to_string()))?;
        let arr: [u8; 16] = bytes.try_into().map_err(|b: Vec<u8>| bad(format!("{} bytes, not 16", b.len())))?;
        Ok(Uuid(arr))
    }
}

impl VersionedJson for Uuid {
    fn to_json(&self, _version: i16) -> Result<Value, JsonError> {
        Ok(Value::String(self.to_kafka_string()))
    }

    fn from_json(value: &Value, _version: i16) -> Result<Self, JsonError> {
        let s = value.as_str().ok_or_else(|| wrong("a uuid string", value))?;
        Uuid::from_kafka_string(s)
    }
}

fn array_to_json<T: VersionedJson>(items: &[T], version: i16) -> Result<Value, JsonError> {
    items.iter().enumerate().map(|(i, v)| v.to_json(version).map_err(|e| e.index(i))).collect::<Result<Vec<_>, _>>().map(Value::Array)
}

fn array_from_json<T: VersionedJson, C: FromIterator<T>>(value: &Value, version: i16) -> Result<C, JsonError> {
    let items = value.as_array().ok_or_else(|| wrong("an array", value))?;
    items.iter().enumerate().map(|(i, v)| T::from_json(v, version).map_err(|e| e.index(i))).collect()
}

impl<T: VersionedJson> VersionedJson for Vec<T> {
    fn to_json(&self, version: i16) -> Result<Value, JsonError> {
        array_to_json(self, version)
    }

    fn from_json(value: &Value, version: i16) -> Result<Self, JsonError> {
        array_from_json(value, version)
    }
}

impl<A: smallvec::Array> VersionedJson for smallvec::SmallVec<A>
where
    A::Item: VersionedJson,
{
    fn to_json(&self, version: i16) -> Result<Value, JsonError> {
        array_to_json(self, version)
    }

    fn from_json(value: &Value, version: i16) -> Result<Self, JsonError> {
        array_from_json(value, version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_string_form_matches_kafka() {
        // Kafka's UuidTest: new Uuid(0x..., 0x...) prints this 22-character form.
        let u = Uuid::from_u64_pair(0x1234_5678_9abc_def0, 0x0fed_cba9_8765_4321);
        let s = u.to_kafka_string();
        assert_eq!(s, "EjRWeJq83vAP7cuph2VDIQ");
        assert_eq!(Uuid::from_kafka_string(&s).unwrap(), u);
        assert!(Uuid::from_kafka_string("AAAA").is_err());
        assert!(Uuid::from_kafka_string("not base64 at all!!!!!").is_err());
    }

    #[test]
    fn integers_are_range_checked() {
        assert_eq!(i8::from_json(&Value::from(-128), 0).unwrap(), -128);
        let e = i8::from_json(&Value::from(128), 0).unwrap_err();
        assert_eq!(e.to_string(), "128 does not fit in i8");
        assert!(u16::from_json(&Value::from(-1), 0).is_err());
        assert!(i32::from_json(&Value::from(1.5), 0).is_err());
        assert!(i64::from_json(&Value::from("1"), 0).is_err());
        assert_eq!(i64::from_json(&Value::from(i64::MIN), 0).unwrap(), i64::MIN);
    }

    #[test]
    fn bytes_are_standard_padded_base64() {
        let b = Bytes::from_static(&[0xfb, 0xff, 0x00]);
        assert_eq!(b.to_json(0).unwrap(), Value::from("+/8A"));
        assert_eq!(Bytes::from_json(&Value::from("+/8A"), 0).unwrap(), b);
        assert!(Bytes::from_json(&Value::from("-_8A"), 0).is_err());
    }

    #[test]
    fn non_finite_floats_round_trip() {
        for v in [f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(f64::from_json(&v.to_json(0).unwrap(), 0).unwrap(), v);
        }
        assert!(f64::from_json(&f64::NAN.to_json(0).unwrap(), 0).unwrap().is_nan());
    }
}
