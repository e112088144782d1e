//! Stage 1: the spec files as they are written, mirrored with serde.
//!
//! Kafka's spec files are JSON with `//` line comments, which are stripped (outside strings)
//! before parsing. Anything after the top-level object is ignored, as Kafka's own generator
//! (Jackson reading one value) ignores it. Unknown keys are errors, so a typo in a spec cannot
//! silently drop a field property.

use std::path::Path;

use serde::Deserialize;

use crate::error::Error;

/// One spec file: a request, response, header or data message.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MessageSpec {
    /// `request`, `response`, `header`, `data`, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// Message name, e.g. `FetchRequest`.
    pub name: String,
    /// The api key, for requests and responses.
    pub api_key: Option<i16>,
    /// Valid versions, e.g. `0-16` or `none`.
    pub valid_versions: String,
    /// Flexible versions, e.g. `12+` or `none`.
    pub flexible_versions: Option<String>,
    /// Deprecated versions.
    pub deprecated_versions: Option<String>,
    /// Whether the highest valid version is still unstable.
    pub latest_version_unstable: Option<bool>,
    /// Listeners that accept this api.
    pub listeners: Option<Vec<String>>,
    /// Top-level fields.
    #[serde(default)]
    pub fields: Vec<FieldSpec>,
    /// Structs shared by several fields.
    #[serde(default)]
    pub common_structs: Vec<StructSpec>,
}

/// A struct in `commonStructs`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StructSpec {
    /// Struct name.
    pub name: String,
    /// Versions of the struct.
    pub versions: String,
    /// Deprecated versions (Kafka's `StructSpec` reads the key; nothing uses it yet).
    pub deprecated_versions: Option<String>,
    /// Its fields.
    #[serde(default)]
    pub fields: Vec<FieldSpec>,
}

/// A field.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FieldSpec {
    /// Field name (PascalCase).
    pub name: String,
    /// Type: a primitive, `[]T`, or a struct name.
    #[serde(rename = "type")]
    pub ty: String,
    /// Versions in which the field exists.
    pub versions: Option<String>,
    /// Versions in which it may be null.
    pub nullable_versions: Option<String>,
    /// Versions in which it is a tagged field.
    pub tagged_versions: Option<String>,
    /// Its tag (a number, or a number written as a string).
    pub tag: Option<serde_json::Value>,
    /// Default value (a string, number or bool).
    pub default: Option<serde_json::Value>,
    /// Whether writing it in a version that lacks it is silently ignored.
    pub ignorable: Option<bool>,
    /// Whether this field is the key of its array's elements.
    pub map_key: Option<bool>,
    /// What kind of entity the field names (`topicName`, `brokerId`, ...).
    pub entity_type: Option<String>,
    /// Field-level flexible versions override (strings and bytes only).
    pub flexible_versions: Option<String>,
    /// Whether a bytes field is read without copying (always true here).
    pub zero_copy: Option<bool>,
    /// Documentation.
    pub about: Option<String>,
    /// Fields of a struct or struct-array type defined inline.
    pub fields: Option<Vec<FieldSpec>>,
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

/// Reads every `*.json` file of a directory, sorted by file name.
pub fn load_dir(dir: &Path) -> Result<Vec<(String, MessageSpec)>, Error> {
    let io = |source| Error::Io { path: dir.to_path_buf(), source };
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(io)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(Error::NoSpecs(format!("no *.json spec files in {}", dir.display())));
    }
    files
        .iter()
        .map(|path| {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let text = std::fs::read_to_string(path).map_err(|source| Error::Io { path: path.clone(), source })?;
            parse(&name, &text).map(|spec| (name, spec))
        })
        .collect()
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
        let spec = parse(
            "X.json",
            r#"{"type": "data", "name": "X", "validVersions": "0", "flexibleVersions": "none", "fields": []} trailing ]"#,
        )
        .unwrap();
        assert_eq!(spec.name, "X");
    }

    #[test]
    fn repeated_keys_keep_the_last_value() {
        let spec = parse("X.json", r#"{"type": "data", "name": "X", "validVersions": "0", "validVersions": "0-1"}"#).unwrap();
        assert_eq!(spec.valid_versions, "0-1");
    }

    #[test]
    fn unknown_keys_are_errors() {
        let err = parse("X.json", r#"{"type": "data", "name": "X", "validVersions": "0", "bogus": 1}"#).unwrap_err();
        assert!(err.to_string().contains("bogus"), "{err}");
    }
}
