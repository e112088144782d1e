//! Stage 1: the spec files as they are written, mirrored with serde.
//!
//! Kafka's spec files are JSON with `//` line comments, which are stripped (outside strings)
//! before parsing. Anything after the top-level object is ignored, as the released generators
//! (Jackson reading one value) ignore it. Unknown keys are errors, as they are for Jackson, so a
//! typo in a spec cannot silently drop a field property.
//!
//! Values are read with the coercions Jackson applies by default in Kafka's `ObjectMapper`
//! ([`jackson`]): a string property may be written as a number or boolean (`"versions": 3`), a
//! number or boolean property as a string (`"apiKey": "3"`, `"ignorable": "true"`), a list as a
//! single value (`ACCEPT_SINGLE_VALUE_AS_ARRAY`: `"listeners": "broker"`), and any property as
//! `null` (absent).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::Error;

/// One spec file: a request, response, header or data message.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MessageSpec {
    /// `request`, `response`, `header`, `data`, ...
    #[serde(rename = "type", deserialize_with = "jackson::string")]
    pub kind: String,
    /// Message name, e.g. `FetchRequest`.
    #[serde(deserialize_with = "jackson::string")]
    pub name: String,
    /// The api key, for requests and responses.
    #[serde(default, deserialize_with = "jackson::opt_i16")]
    pub api_key: Option<i16>,
    /// Valid versions, e.g. `0-16` or `none`.
    #[serde(deserialize_with = "jackson::string")]
    pub valid_versions: String,
    /// Flexible versions, e.g. `12+` or `none`.
    #[serde(default, deserialize_with = "jackson::opt_string")]
    pub flexible_versions: Option<String>,
    /// Deprecated versions.
    #[serde(default, deserialize_with = "jackson::opt_string")]
    pub deprecated_versions: Option<String>,
    /// Whether the highest valid version is still unstable.
    #[serde(default, deserialize_with = "jackson::opt_bool")]
    pub latest_version_unstable: Option<bool>,
    /// Listeners that accept this api.
    #[serde(default, deserialize_with = "jackson::opt_list")]
    pub listeners: Option<Vec<String>>,
    /// Header versions by version range (`{"0-1": "1", "2+": "2"}`), Kafka's `headerVersions`
    /// (after 4.3): when present they decide the header versions instead of the flexible rule.
    #[serde(default, deserialize_with = "jackson::opt_string_map")]
    pub header_versions: Option<BTreeMap<String, String>>,
    /// Top-level fields.
    #[serde(default, deserialize_with = "jackson::list")]
    pub fields: Vec<FieldSpec>,
    /// Structs shared by several fields.
    #[serde(default, deserialize_with = "jackson::list")]
    pub common_structs: Vec<StructSpec>,
}

/// A struct in `commonStructs`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StructSpec {
    /// Struct name.
    #[serde(deserialize_with = "jackson::string")]
    pub name: String,
    /// Versions of the struct.
    #[serde(deserialize_with = "jackson::string")]
    pub versions: String,
    /// Deprecated versions (Kafka's `StructSpec` reads the key; nothing uses it yet).
    #[serde(default, deserialize_with = "jackson::opt_string")]
    pub deprecated_versions: Option<String>,
    /// Its fields.
    #[serde(default, deserialize_with = "jackson::list")]
    pub fields: Vec<FieldSpec>,
}

/// A field.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FieldSpec {
    /// Field name (PascalCase).
    #[serde(deserialize_with = "jackson::string")]
    pub name: String,
    /// Type: a primitive, `[]T`, or a struct name.
    #[serde(rename = "type", deserialize_with = "jackson::string")]
    pub ty: String,
    /// Versions in which the field exists.
    #[serde(default, deserialize_with = "jackson::opt_string")]
    pub versions: Option<String>,
    /// Versions in which it may be null.
    #[serde(default, deserialize_with = "jackson::opt_string")]
    pub nullable_versions: Option<String>,
    /// Versions in which it is a tagged field.
    #[serde(default, deserialize_with = "jackson::opt_string")]
    pub tagged_versions: Option<String>,
    /// Its tag (a number, or a number written as a string).
    pub tag: Option<serde_json::Value>,
    /// Default value (a string, number or bool).
    pub default: Option<serde_json::Value>,
    /// Whether writing it in a version that lacks it is silently ignored.
    #[serde(default, deserialize_with = "jackson::opt_bool")]
    pub ignorable: Option<bool>,
    /// Whether this field is the key of its array's elements.
    #[serde(default, deserialize_with = "jackson::opt_bool")]
    pub map_key: Option<bool>,
    /// What kind of entity the field names (`topicName`, `brokerId`, ...).
    #[serde(default, deserialize_with = "jackson::opt_string")]
    pub entity_type: Option<String>,
    /// Field-level flexible versions override (strings and bytes only).
    #[serde(default, deserialize_with = "jackson::opt_string")]
    pub flexible_versions: Option<String>,
    /// Whether a bytes field is read without copying (always true here).
    #[serde(default, deserialize_with = "jackson::opt_bool")]
    pub zero_copy: Option<bool>,
    /// Documentation.
    #[serde(default, deserialize_with = "jackson::opt_string")]
    pub about: Option<String>,
    /// Fields of a struct or struct-array type defined inline.
    #[serde(default, deserialize_with = "jackson::opt_list")]
    pub fields: Option<Vec<FieldSpec>>,
}

impl FieldSpec {
    /// The tag as a number, whether the spec wrote `0` or `"0"`; `None` when absent or neither.
    pub fn tag_number(&self) -> Option<i64> {
        match self.tag.as_ref()? {
            serde_json::Value::Number(n) => n.as_i64(),
            serde_json::Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }
}

/// Jackson's default coercions, as Kafka's generator reads the spec files with them.
pub mod jackson {
    use serde::de::{DeserializeOwned, Error as _};
    use serde::{Deserialize, Deserializer};
    use serde_json::Value;
    use std::collections::BTreeMap;

    /// A scalar as the string Jackson makes of it: strings as they are, numbers and booleans
    /// in their JSON text (`3` -> `"3"`). Objects and arrays are refused, as by Jackson.
    fn scalar_text(v: Value) -> Result<Option<String>, String> {
        match v {
            Value::Null => Ok(None),
            Value::String(s) => Ok(Some(s)),
            Value::Number(n) => Ok(Some(n.to_string())),
            Value::Bool(b) => Ok(Some(b.to_string())),
            other => Err(format!("expected a string, found {other}")),
        }
    }

    /// A string property (numbers and booleans coerced).
    pub fn string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        scalar_text(Value::deserialize(d)?).map_err(D::Error::custom)?.ok_or_else(|| D::Error::custom("expected a string, found null"))
    }

    /// An optional string property; `null` is absent.
    pub fn opt_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        scalar_text(Value::deserialize(d)?).map_err(D::Error::custom)
    }

    /// A boolean: `true`, `"true"` (any case, trimmed), or a number (0 is false), as Jackson's
    /// scalar coercion reads one; an empty string or `null` is absent.
    pub fn opt_bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
        match Value::deserialize(d)? {
            Value::Null => Ok(None),
            Value::Bool(b) => Ok(Some(b)),
            Value::Number(n) if n.is_i64() || n.is_u64() => Ok(Some(n.as_i64() != Some(0))),
            Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
                "" => Ok(None),
                "true" => Ok(Some(true)),
                "false" => Ok(Some(false)),
                _ => Err(D::Error::custom(format!("expected a boolean, found \"{s}\""))),
            },
            other => Err(D::Error::custom(format!("expected a boolean, found {other}"))),
        }
    }

    /// An int16: a number, or a number written as a string (trimmed); `null` is absent.
    pub fn opt_i16<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i16>, D::Error> {
        let text = match Value::deserialize(d)? {
            Value::Null => return Ok(None),
            Value::Number(n) => n.to_string(),
            Value::String(s) => s.trim().to_string(),
            other => return Err(D::Error::custom(format!("expected an int16, found {other}"))),
        };
        text.parse().map(Some).map_err(|_| D::Error::custom(format!("expected an int16, found {text}")))
    }

    /// A list, or a single value standing for a list of one; `null` is empty.
    pub fn list<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Vec<T>, D::Error> {
        Ok(opt_list(d)?.unwrap_or_default())
    }

    /// Like [`list`], keeping `null` apart from empty.
    pub fn opt_list<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<Vec<T>>, D::Error> {
        let items = match Value::deserialize(d)? {
            Value::Null => return Ok(None),
            Value::Array(items) => items,
            single => vec![single],
        };
        items.into_iter().map(|v| serde_json::from_value(v).map_err(D::Error::custom)).collect::<Result<_, _>>().map(Some)
    }

    /// A map of strings (values coerced like [`string`]); `null` is absent.
    pub fn opt_string_map<'de, D: Deserializer<'de>>(d: D) -> Result<Option<BTreeMap<String, String>>, D::Error> {
        match Value::deserialize(d)? {
            Value::Null => Ok(None),
            Value::Object(m) => {
                m.into_iter().map(|(k, v)| Ok((k, scalar_text(v).map_err(D::Error::custom)?.unwrap_or_default()))).collect::<Result<_, _>>().map(Some)
            }
            other => Err(D::Error::custom(format!("expected an object, found {other}"))),
        }
    }
}

/// Removes `//` comments that are outside string literals, keeping line structure.
pub fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => {
                    if let Some(n) = chars.next() {
                        out.push(n);
                    }
                }
                '"' => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if c == '/' && chars.peek() == Some(&'/') {
            for n in chars.by_ref() {
                if n == '\n' {
                    out.push('\n');
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Parses one spec file's text.
///
/// The text is read as a JSON value first: like Jackson in Kafka's generator, a key given twice
/// keeps its last value (Kafka 3.9's `DescribeTopicPartitionsRequest.json` repeats `versions`).
pub fn parse(file: &str, text: &str) -> Result<MessageSpec, Error> {
    let cleaned = strip_comments(text);
    let json = |source| Error::Json { file: file.to_string(), source };
    let mut values = serde_json::Deserializer::from_str(&cleaned).into_iter::<serde_json::Value>();
    match values.next() {
        Some(Ok(value)) => serde_json::from_value(value).map_err(json),
        Some(Err(source)) => Err(json(source)),
        None => Err(Error::invalid(file, "", "the file holds no JSON object")),
    }
}

/// Where a spec set is: a directory of `*.json` files, a kafka-clients jar (which carries them
/// under `common/message/`), or a folder holding one, such as a Kafka distribution's `libs/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpecSource {
    /// A directory of spec files.
    Dir(PathBuf),
    /// A jar (or zip) whose `common/message/*.json` entries are the spec files.
    Jar(PathBuf),
}

/// Where the spec files under `path` are, or `None` when it holds none.
pub fn find_source(path: &Path) -> Option<SpecSource> {
    let is_jar = |p: &Path| p.is_file() && p.extension().is_some_and(|e| e == "jar" || e == "zip");
    if is_jar(path) {
        return Some(SpecSource::Jar(path.to_path_buf()));
    }
    let entries: Vec<PathBuf> = std::fs::read_dir(path).ok()?.filter_map(Result::ok).map(|e| e.path()).collect();
    if entries.iter().any(|p| p.extension().is_some_and(|e| e == "json")) {
        return Some(SpecSource::Dir(path.to_path_buf()));
    }
    // A distribution's libs/: the kafka-clients jar (not kafka-clients-*-test.jar and the like).
    let mut jars: Vec<&PathBuf> = entries
        .iter()
        .filter(|p| is_jar(p))
        .filter(|p| {
            p.file_stem()
                .and_then(|s| s.to_str())
                .and_then(|s| s.strip_prefix("kafka-clients-"))
                .is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()) && !v.contains("-test"))
        })
        .collect();
    jars.sort();
    jars.first().map(|j| SpecSource::Jar(j.to_path_buf()))
}

/// The name a spec set goes by: its directory's name (`kafka-3.9.0`) or its jar's
/// (`kafka-clients-4.4.0`).
pub fn release_name(path: &Path) -> String {
    let name = |p: &Path, stem: bool| {
        let p = p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        let n = if stem { p.file_stem() } else { p.file_name() };
        n.map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    };
    match find_source(path) {
        Some(SpecSource::Jar(jar)) => name(&jar, true),
        _ => name(path, false),
    }
}

/// Reads every spec file of a spec set (see [`find_source`]), sorted by file name.
pub fn load_dir(path: &Path) -> Result<Vec<(String, MessageSpec)>, Error> {
    let files = match find_source(path) {
        Some(SpecSource::Jar(jar)) => read_jar(&jar)?,
        Some(SpecSource::Dir(dir)) => read_json_files(&dir)?,
        None => Vec::new(),
    };
    if files.is_empty() {
        return Err(Error::NoSpecs(format!("no *.json spec files (nor a kafka-clients jar) in {}", path.display())));
    }
    files.iter().map(|(name, text)| parse(name, text).map(|spec| (name.clone(), spec))).collect()
}

/// (file name, text) of every `*.json` file of a directory, sorted by name.
fn read_json_files(dir: &Path) -> Result<Vec<(String, String)>, Error> {
    let io = |source| Error::Io { path: dir.to_path_buf(), source };
    let mut paths: Vec<_> =
        std::fs::read_dir(dir).map_err(io)?.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "json")).collect();
    paths.sort();
    paths
        .iter()
        .map(|path| {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let text = std::fs::read_to_string(path).map_err(|source| Error::Io { path: path.clone(), source })?;
            Ok((name, text))
        })
        .collect()
}

/// (file name, text) of the `common/message/*.json` entries of a jar, sorted by name.
fn read_jar(jar: &Path) -> Result<Vec<(String, String)>, Error> {
    let io = |source| Error::Io { path: jar.to_path_buf(), source };
    let bad = |e: zip::result::ZipError| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e));
    let mut archive = zip::ZipArchive::new(std::fs::File::open(jar).map_err(io)?).map_err(bad)?;
    let mut files = Vec::new();
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(bad)?;
        let Some(name) = entry.name().strip_prefix("common/message/").filter(|n| n.ends_with(".json") && !n.contains('/')) else {
            continue;
        };
        let name = name.to_string();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut entry, &mut text).map_err(io)?;
        files.push((name, text));
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_comments_but_not_inside_strings() {
        let text = "{ // c1\n \"a\": \"x // y\", // c2\n \"b\": \"q\\\"//\" }";
        let s = strip_comments(text);
        assert_eq!(s, "{ \n \"a\": \"x // y\", \n \"b\": \"q\\\"//\" }");
    }

    #[test]
    fn tolerates_trailing_junk() {
        let spec = parse("X.json", r#"{"type": "data", "name": "X", "validVersions": "0", "flexibleVersions": "none", "fields": []} trailing ]"#).unwrap();
        assert_eq!(spec.name, "X");
    }

    #[test]
    fn repeated_keys_keep_the_last_value() {
        let spec = parse("X.json", r#"{"type": "data", "name": "X", "validVersions": "0", "validVersions": "0-1"}"#).unwrap();
        assert_eq!(spec.valid_versions, "0-1");
    }

    /// One fixture per Jackson coercion Kafka's generator applies.
    #[test]
    fn jackson_coercions() {
        let spec = parse(
            "X.json",
            r#"{"type": "request", "name": "XRequest", "apiKey": "50", "validVersions": 3, "flexibleVersions": "0+",
                "latestVersionUnstable": "true", "listeners": "broker",
                "fields": {"name": "A", "type": "int32", "versions": 0, "ignorable": "TRUE", "mapKey": 1,
                           "about": null, "tag": "0", "taggedVersions": "0+", "fields": null}}"#,
        )
        .unwrap();
        assert_eq!(spec.api_key, Some(50), "number written as a string");
        assert_eq!(spec.valid_versions, "3", "string written as a number");
        assert_eq!(spec.latest_version_unstable, Some(true), "boolean written as a string");
        assert_eq!(spec.listeners.as_deref(), Some(&["broker".to_string()][..]), "single value as a list");
        assert_eq!(spec.fields.len(), 1, "single object as a list");
        let f = &spec.fields[0];
        assert_eq!(f.versions.as_deref(), Some("0"));
        assert_eq!(f.ignorable, Some(true), "boolean string, any case");
        assert_eq!(f.map_key, Some(true), "boolean written as a number");
        assert_eq!(f.about, None, "null is absent");
        assert!(f.fields.is_none(), "null list is absent");
        let spec = parse("X.json", r#"{"type": "data", "name": "X", "validVersions": "0", "zeroCopy": 1}"#);
        assert!(spec.is_err(), "unknown keys stay errors");
        for bad in [r#""ignorable": "yes""#, r#""ignorable": [true]"#, r#""versions": {"a": 1}"#] {
            let text = format!(r#"{{"type": "data", "name": "X", "validVersions": "0", "fields": [{{"name": "A", "type": "int8", {bad}}}]}}"#);
            assert!(parse("X.json", &text).is_err(), "{bad} is not coerced by Jackson either");
        }
        let err = parse("X.json", r#"{"type": "request", "name": "X", "apiKey": "x", "validVersions": "0"}"#).unwrap_err();
        assert!(err.to_string().contains("expected an int16"), "{err}");
    }

    #[test]
    fn header_versions_are_read_as_a_map() {
        let spec =
            parse("X.json", r#"{"type": "request", "name": "X", "apiKey": 1, "validVersions": "0-3", "headerVersions": {"0-1": "1", "2+": 2}}"#).unwrap();
        let map = spec.header_versions.unwrap();
        assert_eq!(map.get("0-1").map(String::as_str), Some("1"));
        assert_eq!(map.get("2+").map(String::as_str), Some("2"), "a number coerced to a string");
    }

    #[test]
    fn unknown_keys_are_errors() {
        let err = parse("X.json", r#"{"type": "data", "name": "X", "validVersions": "0", "bogus": 1}"#).unwrap_err();
        assert!(err.to_string().contains("bogus"), "{err}");
    }
}
