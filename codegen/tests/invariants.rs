//! Generator invariant tests, in the manner of Kafka's `MessageDataGeneratorTest`: small bad specs,
//! written for the purpose into a fresh directory per test, must each fail with the exact error
//! (`File.json: Path.To.Field: message`). Good specs with Kafka's quirks (comments, string tags,
//! trailing junk, repeated keys) must load, and so must both real spec sets.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use kwire_build::generate;
use kwire_build::internal::load_model;
use kwire_build::internal::model::{DefaultValue, FieldType, Model};

/// A fresh directory under cargo's test scratch space holding `files` (name, text).
fn spec_dir(files: &[(&str, &str)]) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("invariants-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the spec dir");
    for (name, text) in files {
        std::fs::write(dir.join(name), text).expect("write a spec");
    }
    dir
}

fn load(files: &[(&str, &str)]) -> Model {
    load_model(&spec_dir(files)).unwrap_or_else(|e| panic!("expected the specs to load, got: {e}"))
}

fn load_err(files: &[(&str, &str)]) -> String {
    match load_model(&spec_dir(files)) {
        Ok(_) => panic!("expected an error, but the specs loaded"),
        Err(e) => e.to_string(),
    }
}

/// `Foo.json`: a data spec, valid versions 0-3, flexible from 2, with these fields.
fn data(fields: &str) -> String {
    data_with(fields, "")
}

/// Like [`data`], with more top-level keys (`extra` starts with a comma).
fn data_with(fields: &str, extra: &str) -> String {
    format!(r#"{{"type": "data", "name": "Foo", "validVersions": "0-3", "flexibleVersions": "2+", "fields": [{fields}]{extra}}}"#)
}

fn data_err(fields: &str) -> String {
    load_err(&[("Foo.json", &data(fields))])
}

fn assert_data_err(fields: &str, expected: &str) {
    assert_eq!(data_err(fields), expected, "fields: {fields}");
}

/// A request or response spec with one int32 field.
fn api(kind: &str, name: &str, key: i16, versions: &str, extra: &str) -> String {
    format!(
        r#"{{"type": "{kind}", "name": "{name}", "apiKey": {key}, "validVersions": "{versions}", "flexibleVersions": "none"{extra},
           "fields": [{{"name": "A", "type": "int32", "versions": "0+"}}]}}"#
    )
}

// ---- tags ----

#[test]
fn negative_tag() {
    assert_data_err(r#"{"name": "A", "type": "int32", "versions": "2+", "tag": -1, "taggedVersions": "2+"}"#, "Foo.json: A: invalid tag -1");
}

#[test]
fn tag_that_is_not_a_number() {
    assert_data_err(r#"{"name": "A", "type": "int32", "versions": "2+", "tag": "x", "taggedVersions": "2+"}"#, r#"Foo.json: A: invalid tag "x""#);
}

#[test]
fn duplicate_tag() {
    assert_data_err(
        r#"{"name": "A", "type": "int32", "versions": "2+", "tag": 0, "taggedVersions": "2+"},
           {"name": "B", "type": "int32", "versions": "2+", "tag": 0, "taggedVersions": "2+"}"#,
        "Foo.json: B: duplicate tag 0",
    );
}

#[test]
fn duplicate_tag_in_a_nested_struct_names_the_path() {
    assert_data_err(
        r#"{"name": "Items", "type": "[]Item", "versions": "0+", "fields": [
             {"name": "A", "type": "int32", "versions": "2+", "tag": 0, "taggedVersions": "2+"},
             {"name": "B", "type": "int32", "versions": "2+", "tag": 0, "taggedVersions": "2+"}]}"#,
        "Foo.json: Items[].B: duplicate tag 0",
    );
}

#[test]
fn tags_not_contiguous_from_zero() {
    assert_data_err(
        r#"{"name": "A", "type": "int32", "versions": "2+", "tag": 0, "taggedVersions": "2+"},
           {"name": "B", "type": "int32", "versions": "2+", "tag": 2, "taggedVersions": "2+"}"#,
        "Foo.json: B: tag 2 leaves a gap: tags must be contiguous from 0",
    );
    assert_data_err(
        r#"{"name": "A", "type": "int32", "versions": "2+", "tag": 1, "taggedVersions": "2+"}"#,
        "Foo.json: A: tag 1 leaves a gap: tags must be contiguous from 0",
    );
}

#[test]
fn tag_without_tagged_versions() {
    assert_data_err(r#"{"name": "A", "type": "int32", "versions": "0+", "tag": 0}"#, "Foo.json: A: tag 0 is given but taggedVersions is not");
}

#[test]
fn tagged_versions_without_tag() {
    assert_data_err(r#"{"name": "A", "type": "int32", "versions": "0+", "taggedVersions": "2+"}"#, "Foo.json: A: taggedVersions is given but tag is not");
}

#[test]
fn tagged_versions_not_open_ended() {
    assert_data_err(
        r#"{"name": "A", "type": "int32", "versions": "0+", "tag": 0, "taggedVersions": "2-3"}"#,
        "Foo.json: A: taggedVersions 2-3 must be open-ended (N+)",
    );
}

#[test]
fn tagged_versions_not_inside_versions() {
    assert_data_err(
        r#"{"name": "A", "type": "int32", "versions": "0-2", "tag": 0, "taggedVersions": "2+"}"#,
        "Foo.json: A: taggedVersions 2+ are not inside versions 0-2",
    );
}

#[test]
fn tagged_versions_not_inside_flexible_versions() {
    assert_data_err(
        r#"{"name": "A", "type": "int32", "versions": "0+", "tag": 0, "taggedVersions": "1+"}"#,
        "Foo.json: A: taggedVersions 1+ are not inside the flexible versions 2+",
    );
}

#[test]
fn tagged_field_nullable_in_only_some_tagged_versions() {
    assert_data_err(
        r#"{"name": "A", "type": "string", "versions": "0+", "tag": 0, "taggedVersions": "2+", "nullableVersions": "3+"}"#,
        "Foo.json: A: nullableVersions 3+ and taggedVersions 2+: either every tagged version is nullable or none is",
    );
}

#[test]
fn tagged_map_key() {
    assert_data_err(
        r#"{"name": "Items", "type": "[]Item", "versions": "0+", "fields": [
             {"name": "A", "type": "int32", "versions": "2+", "tag": 0, "taggedVersions": "2+", "mapKey": true}]}"#,
        "Foo.json: Items[].A: a tagged field cannot be a mapKey",
    );
}

// ---- nullability, flexibleVersions override, zeroCopy, mapKey, entityType ----

#[test]
fn nullable_on_types_that_cannot_be_null() {
    for ty in ["int32", "int8", "bool", "uuid", "float64"] {
        assert_data_err(
            &format!(r#"{{"name": "A", "type": "{ty}", "versions": "0+", "nullableVersions": "1+"}}"#),
            &format!("Foo.json: A: type {ty} cannot be nullable"),
        );
    }
}

#[test]
fn flexible_versions_override_on_non_string_type() {
    assert_data_err(
        r#"{"name": "A", "type": "int32", "versions": "0+", "flexibleVersions": "none"}"#,
        "Foo.json: A: only string and bytes fields can override flexibleVersions",
    );
    assert_data_err(
        r#"{"name": "A", "type": "[]string", "versions": "0+", "flexibleVersions": "none"}"#,
        "Foo.json: A: only string and bytes fields can override flexibleVersions",
    );
}

#[test]
fn flexible_versions_override_not_open_ended() {
    assert_data_err(
        r#"{"name": "A", "type": "string", "versions": "0+", "flexibleVersions": "1-2"}"#,
        "Foo.json: A: flexibleVersions must be open-ended (N+) or none",
    );
}

#[test]
fn zero_copy_on_non_bytes() {
    assert_data_err(r#"{"name": "A", "type": "string", "versions": "0+", "zeroCopy": true}"#, "Foo.json: A: only bytes fields can be zeroCopy");
}

#[test]
fn map_key_on_top_level_field() {
    assert_data_err(r#"{"name": "A", "type": "int32", "versions": "0+", "mapKey": true}"#, "Foo.json: A: mapKey cannot be set on top-level fields");
}

#[test]
fn map_key_on_an_array() {
    assert_data_err(
        r#"{"name": "Items", "type": "[]Item", "versions": "0+", "fields": [
             {"name": "A", "type": "[]int32", "versions": "0+", "mapKey": true}]}"#,
        "Foo.json: Items[].A: a mapKey cannot be an array or struct",
    );
}

#[test]
fn entity_type_must_be_known() {
    assert_data_err(r#"{"name": "A", "type": "string", "versions": "0+", "entityType": "topicNmae"}"#, r#"Foo.json: A: unknown entityType "topicNmae""#);
}

#[test]
fn entity_type_must_match_the_field_type() {
    assert_data_err(
        r#"{"name": "A", "type": "int32", "versions": "0+", "entityType": "topicName"}"#,
        "Foo.json: A: entityType topicName needs type string (or an array of it)",
    );
    assert_data_err(
        r#"{"name": "A", "type": "[]int64", "versions": "0+", "entityType": "brokerId"}"#,
        "Foo.json: A: entityType brokerId needs type int32 (or an array of it)",
    );
}

// ---- defaults ----

#[test]
fn defaults_that_do_not_parse_for_their_type() {
    let cases = [
        ("int8", r#""128""#, r#"Foo.json: A: invalid default "128" for type int8"#),
        ("int16", r#""-32769""#, r#"Foo.json: A: invalid default "-32769" for type int16"#),
        ("uint16", r#""-1""#, r#"Foo.json: A: invalid default "-1" for type uint16"#),
        ("int32", r#""2147483648""#, r#"Foo.json: A: invalid default "2147483648" for type int32"#),
        ("int32", r#""0x80000000""#, r#"Foo.json: A: invalid default "0x80000000" for type int32"#),
        ("int32", r#""0xZZ""#, r#"Foo.json: A: invalid default "0xZZ" for type int32"#),
        ("int64", r#""ten""#, r#"Foo.json: A: invalid default "ten" for type int64"#),
        ("bool", r#""yes""#, r#"Foo.json: A: invalid default "yes" for type bool"#),
        ("float64", r#""1.5x""#, r#"Foo.json: A: invalid default "1.5x" for type float64"#),
        ("bytes", r#""abc""#, r#"Foo.json: A: invalid default "abc" for type bytes"#),
        ("[]int32", r#""[1]""#, r#"Foo.json: A: invalid default "[1]" for type []int32"#),
        ("int32", "[1]", "Foo.json: A: invalid default [1]"),
    ];
    for (ty, default, expected) in cases {
        assert_data_err(&format!(r#"{{"name": "A", "type": "{ty}", "versions": "0+", "default": {default}}}"#), expected);
    }
}

#[test]
fn null_default_on_a_type_that_cannot_be_null() {
    assert_data_err(r#"{"name": "A", "type": "int32", "versions": "0+", "default": "null"}"#, r#"Foo.json: A: invalid default "null" for type int32"#);
}

#[test]
fn null_default_on_a_non_nullable_field() {
    assert_data_err(
        r#"{"name": "A", "type": "string", "versions": "0+", "default": "null"}"#,
        "Foo.json: A: null cannot be the default: not every version of the field is nullable",
    );
}

#[test]
fn null_default_on_a_field_nullable_in_only_some_versions() {
    // Kafka's testInvalidNullDefaultForPotentiallyNonNullableArray.
    assert_data_err(
        r#"{"name": "A", "type": "[]int32", "versions": "0+", "nullableVersions": "1+", "default": "null"}"#,
        "Foo.json: A: null cannot be the default: not every version of the field is nullable",
    );
}

// ---- structs ----

#[test]
fn inline_struct_defined_twice() {
    assert_data_err(
        r#"{"name": "A", "type": "[]Item", "versions": "0+", "fields": [{"name": "X", "type": "int32", "versions": "0+"}]},
           {"name": "B", "type": "[]Item", "versions": "0+", "fields": [{"name": "Y", "type": "int32", "versions": "0+"}]}"#,
        "Foo.json: B: struct Item is defined more than once",
    );
}

#[test]
fn inline_struct_named_like_the_message() {
    assert_data_err(
        r#"{"name": "A", "type": "[]Item", "versions": "0+", "fields": [
             {"name": "B", "type": "[]Foo", "versions": "0+", "fields": [{"name": "X", "type": "int32", "versions": "0+"}]}]}"#,
        "Foo.json: A[].B: struct Foo is defined more than once",
    );
}

#[test]
fn common_struct_defined_twice() {
    let spec = data_with(
        "",
        r#", "commonStructs": [
             {"name": "Item", "versions": "0+", "fields": [{"name": "X", "type": "int32", "versions": "0+"}]},
             {"name": "Item", "versions": "0+", "fields": [{"name": "Y", "type": "int32", "versions": "0+"}]}]"#,
    );
    assert_eq!(load_err(&[("Foo.json", &spec)]), "Foo.json: Item: struct is defined more than once");
}

#[test]
fn struct_both_inline_and_common() {
    let spec = data_with(
        r#"{"name": "A", "type": "[]Item", "versions": "0+", "fields": [{"name": "X", "type": "int32", "versions": "0+"}]}"#,
        r#", "commonStructs": [{"name": "Item", "versions": "0+", "fields": [{"name": "Y", "type": "int32", "versions": "0+"}]}]"#,
    );
    assert_eq!(load_err(&[("Foo.json", &spec)]), "Foo.json: A: struct Item is defined both inline and in commonStructs");
}

#[test]
fn common_struct_name_not_capitalized() {
    let spec = data_with("", r#", "commonStructs": [{"name": "item", "versions": "0+", "fields": []}]"#);
    assert_eq!(load_err(&[("Foo.json", &spec)]), "Foo.json: item: a struct name must start with an uppercase letter and hold only letters and digits");
}

#[test]
fn unknown_struct_type() {
    assert_data_err(r#"{"name": "A", "type": "[]Missing", "versions": "0+"}"#, "Foo.json: A: struct Missing has no fields and is not in commonStructs");
    assert_data_err(r#"{"name": "A", "type": "Missing", "versions": "0+"}"#, "Foo.json: A: struct Missing has no fields and is not in commonStructs");
}

#[test]
fn fields_on_a_primitive_type() {
    assert_data_err(
        r#"{"name": "A", "type": "[]int32", "versions": "0+", "fields": [{"name": "X", "type": "int32", "versions": "0+"}]}"#,
        "Foo.json: A: type []int32 cannot have fields",
    );
}

#[test]
fn struct_name_that_collides_with_rust() {
    assert_data_err(
        r#"{"name": "A", "type": "[]Option", "versions": "0+", "fields": [{"name": "X", "type": "int32", "versions": "0+"}]}"#,
        "Foo.json: A: struct name Option collides with a Rust name the generated code uses",
    );
}

// ---- types, names, versions ----

#[test]
fn invalid_type_strings() {
    for ty in ["[][]int32", "int33", "[]records", "[]", "lowercase", "Has-Dash", ""] {
        assert_data_err(&format!(r#"{{"name": "A", "type": "{ty}", "versions": "0+"}}"#), &format!(r#"Foo.json: A: invalid type "{ty}""#));
    }
}

#[test]
fn invalid_field_names() {
    for name in ["_bad", "9Lives", "has space", "a-b"] {
        assert_data_err(
            &format!(r#"{{"name": "{name}", "type": "int32", "versions": "0+"}}"#),
            &format!(r#"Foo.json: {name}: invalid field name "{name}": use letters and digits, starting with a letter"#),
        );
    }
    // An empty name leaves the path empty too.
    assert_data_err(r#"{"name": "", "type": "int32", "versions": "0+"}"#, r#"Foo.json: invalid field name "": use letters and digits, starting with a letter"#);
}

#[test]
fn duplicate_field_names() {
    assert_data_err(
        r#"{"name": "A", "type": "int32", "versions": "0+"}, {"name": "A", "type": "int64", "versions": "0+"}"#,
        "Foo.json: A: duplicate field name",
    );
    // Names differing only in case would map to the same Rust field.
    assert_data_err(
        r#"{"name": "TopicId", "type": "int32", "versions": "0+"}, {"name": "TopicID", "type": "int64", "versions": "0+"}"#,
        "Foo.json: TopicID: duplicate field name",
    );
}

#[test]
fn missing_versions() {
    assert_data_err(r#"{"name": "A", "type": "int32"}"#, "Foo.json: A: versions must be given");
}

#[test]
fn invalid_version_range_strings() {
    for (v, expected) in [
        ("1-x", r#"Foo.json: A: invalid versions "1-x""#),
        ("3-1", r#"Foo.json: A: invalid versions "3-1""#),
        ("-1", r#"Foo.json: A: invalid versions "-1""#),
        ("1+2", r#"Foo.json: A: invalid versions "1+2""#),
        ("", r#"Foo.json: A: invalid versions """#),
    ] {
        assert_data_err(&format!(r#"{{"name": "A", "type": "int32", "versions": "{v}"}}"#), expected);
    }
    assert_data_err(r#"{"name": "A", "type": "string", "versions": "0+", "nullableVersions": "x"}"#, r#"Foo.json: A: invalid nullableVersions "x""#);
    let bad_valid = r#"{"type": "data", "name": "Foo", "validVersions": "abc", "flexibleVersions": "none", "fields": []}"#;
    assert_eq!(load_err(&[("Foo.json", bad_valid)]), r#"Foo.json: invalid validVersions "abc""#);
    let open_valid = r#"{"type": "data", "name": "Foo", "validVersions": "0+", "flexibleVersions": "none", "fields": []}"#;
    assert_eq!(load_err(&[("Foo.json", open_valid)]), "Foo.json: validVersions must be a closed range");
    let closed_flexible = r#"{"type": "data", "name": "Foo", "validVersions": "0-3", "flexibleVersions": "0-2", "fields": []}"#;
    assert_eq!(load_err(&[("Foo.json", closed_flexible)]), "Foo.json: flexibleVersions must be open-ended (N+) or none");
}

// ---- messages and api keys ----

#[test]
fn request_without_response() {
    let req = api("request", "FooRequest", 99, "0-1", "");
    assert_eq!(load_err(&[("FooRequest.json", &req)]), "FooRequest.json: no response spec has api key 99");
}

#[test]
fn response_without_request() {
    let resp = api("response", "FooResponse", 99, "0-1", "");
    assert_eq!(load_err(&[("FooResponse.json", &resp)]), "FooResponse.json: no request spec has api key 99");
}

#[test]
fn duplicate_api_key() {
    let a = api("request", "BarRequest", 99, "0-1", "");
    let b = api("request", "FooRequest", 99, "0-1", "");
    assert_eq!(load_err(&[("BarRequest.json", &a), ("FooRequest.json", &b)]), "FooRequest.json: api key 99 is also used by BarRequest.json");
}

#[test]
fn response_versions_differ_from_request() {
    let req = api("request", "FooRequest", 99, "0-1", "");
    let resp = api("response", "FooResponse", 99, "0-2", "");
    assert_eq!(load_err(&[("FooRequest.json", &req), ("FooResponse.json", &resp)]), "FooResponse.json: validVersions 0-2 differ from the request's 0-1");
}

#[test]
fn response_named_unlike_its_request() {
    let req = api("request", "FooRequest", 99, "0-1", "");
    let resp = api("response", "BarResponse", 99, "0-1", "");
    assert_eq!(load_err(&[("BarResponse.json", &resp), ("FooRequest.json", &req)]), "BarResponse.json: the response to FooRequest must be named FooResponse");
}

#[test]
fn unknown_message_type() {
    let spec = r#"{"type": "reqest", "name": "Foo", "validVersions": "0", "flexibleVersions": "none", "fields": []}"#;
    assert_eq!(load_err(&[("Foo.json", spec)]), r#"Foo.json: unknown message type "reqest""#);
}

#[test]
fn request_name_without_request_suffix() {
    let req = api("request", "Foo", 99, "0-1", "");
    assert_eq!(load_err(&[("Foo.json", &req)]), "Foo.json: a request name must end with Request");
    let resp = api("response", "FooResp", 99, "0-1", "");
    assert_eq!(load_err(&[("FooResp.json", &resp)]), "FooResp.json: a response name must end with Response");
}

#[test]
fn request_without_api_key() {
    let spec = r#"{"type": "request", "name": "FooRequest", "validVersions": "0", "flexibleVersions": "none", "fields": []}"#;
    assert_eq!(load_err(&[("FooRequest.json", spec)]), "FooRequest.json: a request or response needs an apiKey");
}

#[test]
fn data_with_api_key() {
    let spec = r#"{"type": "data", "name": "Foo", "apiKey": 3, "validVersions": "0", "flexibleVersions": "none", "fields": []}"#;
    assert_eq!(load_err(&[("Foo.json", spec)]), "Foo.json: a data spec cannot have an apiKey");
}

#[test]
fn latest_version_unstable_on_a_response() {
    let req = api("request", "FooRequest", 99, "0-1", "");
    let resp = api("response", "FooResponse", 99, "0-1", r#", "latestVersionUnstable": true"#);
    assert_eq!(load_err(&[("FooRequest.json", &req), ("FooResponse.json", &resp)]), "FooResponse.json: latestVersionUnstable is only valid for requests");
}

#[test]
fn listeners_on_a_response() {
    let req = api("request", "FooRequest", 99, "0-1", r#", "listeners": ["broker"]"#);
    let resp = api("response", "FooResponse", 99, "0-1", r#", "listeners": ["broker"]"#);
    assert_eq!(load_err(&[("FooRequest.json", &req), ("FooResponse.json", &resp)]), "FooResponse.json: listeners are only valid for requests");
}

#[test]
fn unknown_json_key_is_named() {
    let err = data_err(r#"{"name": "A", "type": "int32", "versoins": "0+"}"#);
    assert!(err.starts_with("Foo.json: unknown field `versoins`, expected one of"), "{err}");
    let top = r#"{"type": "data", "name": "Foo", "validVersion": "0", "flexibleVersions": "none", "fields": []}"#;
    let err = load_err(&[("Foo.json", top)]);
    assert!(err.starts_with("Foo.json: unknown field `validVersion`, expected one of"), "{err}");
}

#[test]
fn not_json() {
    let err = load_err(&[("Foo.json", "// only a comment\n")]);
    assert_eq!(err, "Foo.json: the file holds no JSON object");
}

#[test]
fn empty_directory() {
    let dir = spec_dir(&[]);
    let err = load_model(&dir).map(|_| ()).unwrap_err().to_string();
    assert_eq!(err, format!("no *.json spec files (nor a kafka-clients jar) in {}", dir.display()));
}

// ---- good specs with Kafka's quirks ----

fn only_field(model: &Model) -> &kwire_build::internal::model::Field {
    &model.messages[0].structs[0].fields[0]
}

#[test]
fn comments_are_stripped_outside_strings() {
    let spec = "// Licensed to the Apache Software Foundation.\n{\n  \"type\": \"data\", // the kind\n  \"name\": \"Foo\",\n  \
                \"validVersions\": \"0-3\",\n  \"flexibleVersions\": \"2+\",\n  \"fields\": [\n    // a comment line\n    \
                { \"name\": \"A\", \"type\": \"string\", \"versions\": \"0+\", \"about\": \"see http://kafka // not a comment\" }\n  ]\n}\n";
    let model = load(&[("Foo.json", spec)]);
    assert_eq!(only_field(&model).about, "see http://kafka // not a comment");
}

#[test]
fn tag_given_as_a_string() {
    let model = load(&[("Foo.json", &data(r#"{"name": "A", "type": "int32", "versions": "2+", "tag": "0", "taggedVersions": "2+"}"#))]);
    assert_eq!(only_field(&model).tag, Some(0));
}

#[test]
fn trailing_junk_after_the_object_is_ignored() {
    let spec = data(r#"{"name": "A", "type": "int32", "versions": "0+"}"#) + "\n}\n] junk";
    let model = load(&[("Foo.json", &spec)]);
    assert_eq!(only_field(&model).name, "A");
}

#[test]
fn repeated_keys_keep_the_last_value() {
    let model = load(&[("Foo.json", &data(r#"{"name": "A", "type": "int32", "versions": "0+", "versions": "1+"}"#))]);
    assert_eq!(only_field(&model).versions.to_string(), "1-3");
}

#[test]
fn hex_default() {
    let model = load(&[("Foo.json", &data(r#"{"name": "A", "type": "int32", "versions": "0+", "default": "0x7fffffff"}"#))]);
    assert_eq!(only_field(&model).default, DefaultValue::Int(0x7fff_ffff));
}

#[test]
fn good_defaults() {
    let cases = [
        ("int8", r#""-128""#, DefaultValue::Int(-128)),
        ("uint16", r#""65535""#, DefaultValue::Int(65535)),
        ("int64", "-1", DefaultValue::Int(-1)),
        ("bool", "true", DefaultValue::Bool(true)),
        ("bool", r#""False""#, DefaultValue::Bool(false)),
        ("float64", r#""0.5""#, DefaultValue::Float(0.5)),
        ("string", r#""abc""#, DefaultValue::Str("abc".into())),
        ("bytes", r#""""#, DefaultValue::Natural),
    ];
    for (ty, default, expected) in cases {
        let model = load(&[("Foo.json", &data(&format!(r#"{{"name": "A", "type": "{ty}", "versions": "0+", "default": {default}}}"#)))]);
        assert_eq!(only_field(&model).default, expected, "{ty} {default}");
    }
    let model = load(&[("Foo.json", &data(r#"{"name": "A", "type": "[]int32", "versions": "1+", "nullableVersions": "0+", "default": "null"}"#))]);
    assert_eq!(only_field(&model).default, DefaultValue::Null);
}

#[test]
fn versions_default_to_tagged_versions() {
    // Kafka's FieldSpec lets a tagged-only field leave out `versions`.
    let model = load(&[("Foo.json", &data(r#"{"name": "A", "type": "int32", "tag": 0, "taggedVersions": "3+"}"#))]);
    let f = only_field(&model);
    assert_eq!((f.versions.to_string(), f.tagged.to_string()), ("3".to_string(), "3".to_string()));
    assert!(f.regular.is_empty());
}

#[test]
fn common_struct_and_nested_array_types() {
    let spec = data_with(
        r#"{"name": "Items", "type": "[]Item", "versions": "0+", "fields": [
             {"name": "Leader", "type": "Leader", "versions": "1+"}]}"#,
        r#", "commonStructs": [{"name": "Leader", "versions": "0+", "deprecatedVersions": "0",
             "fields": [{"name": "Id", "type": "int32", "versions": "0+", "entityType": "brokerId"}]}]"#,
    );
    let model = load(&[("Foo.json", &spec)]);
    let names: Vec<_> = model.messages[0].structs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["Foo", "Item", "Leader"]);
    assert_eq!(only_field(&model).ty, FieldType::Array(Box::new(FieldType::Struct("Item".into()))));
}

#[test]
fn removed_api_keeps_its_key_without_types() {
    let req = r#"{"type": "request", "name": "GoneRequest", "apiKey": 99, "validVersions": "none", "fields": []}"#;
    let resp = r#"{"type": "response", "name": "GoneResponse", "apiKey": 99, "validVersions": "none", "fields": []}"#;
    let dir = spec_dir(&[("GoneRequest.json", req), ("GoneResponse.json", resp)]);
    let model = load_model(&dir).unwrap_or_else(|e| panic!("{e}"));
    assert!(model.messages.is_empty());
    let api = model.apis.iter().find(|a| a.key == 99).expect("api key 99 is known");
    assert_eq!((api.name.as_str(), api.request, api.response), ("Gone", None, None));
    assert!(api.valid.is_empty());
    generate(&dir).unwrap_or_else(|e| panic!("{e}"));
}

// ---- the real spec sets ----

/// One of the shared spec sets next to the workspace (`../shared/message-specs/<name>`).
fn real_specs(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/message-specs").join(name);
    assert!(dir.is_dir(), "the real spec set {} is missing: these tests need it", dir.display());
    dir
}

#[test]
fn kafka_3_9_0_loads_and_generates() {
    let dir = real_specs("kafka-3.9.0");
    let model = load_model(&dir).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(model.apis.len(), 88);
    assert!(model.apis.iter().all(|a| a.request.is_some() && a.response.is_some()));
    let files = generate(&dir).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(files.len(), model.messages.len() + 2, "a file per message, the index and the dissector");
}

#[test]
fn kafka_trunk_loads_and_generates() {
    let dir = real_specs("kafka-trunk-2025-02-14");
    let model = load_model(&dir).unwrap_or_else(|e| panic!("{e}"));
    assert!(model.apis.len() >= 88, "{} apis", model.apis.len());
    let files = generate(&dir).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(files.len(), model.messages.len() + 2, "a file per message, the index and the dissector");
}

/// `headerVersions` (Kafka after 4.3), validated as Kafka's `HeaderVersions.parse` does.
#[test]
fn header_versions_are_validated_like_kafka() {
    let with = |map: &str| {
        vec![
            ("ThingRequest.json", api("request", "ThingRequest", 50, "0-3", &format!(r#", "headerVersions": {map}"#))),
            ("ThingResponse.json", api("response", "ThingResponse", 50, "0-3", "")),
        ]
    };
    let err = |map: &str| {
        let files = with(map);
        let files: Vec<(&str, &str)> = files.iter().map(|(n, t)| (*n, t.as_str())).collect();
        load_err(&files)
    };
    let cases = [
        ("{}", "the map is empty"),
        (r#"{"x": "1"}"#, "invalid version range \"x\""),
        (r#"{"0+": "a"}"#, "invalid header version \"a\" for range \"0+\""),
        (r#"{"0+": "-1"}"#, "negative header version \"-1\" for range \"0+\""),
        (r#"{"1+": "1"}"#, "the first range starts at version 1, not 0"),
        (r#"{"0-1": "1", "3+": "2"}"#, "non-contiguous ranges: 0-1 then 3+"),
        (r#"{"0-1": "1", "2-5": "2"}"#, "the last range 2-5 is not open-ended"),
        (r#"{"0-1": "1", "2-3": "2", "4+": "2"}"#, "range 4+ starts above the highest valid version 3"),
    ];
    for (map, message) in cases {
        assert_eq!(err(map), format!("ThingRequest.json: headerVersions: {message}"), "{map}");
    }
    let files = with(r#"{"0-1": "1", "2+": 2}"#);
    let files: Vec<(&str, &str)> = files.iter().map(|(n, t)| (*n, t.as_str())).collect();
    let m = load(&files);
    let thing = m.apis.iter().find(|a| a.key == 50).unwrap();
    let entries: Vec<_> = thing.request_header.iter().map(|h| (h.versions.to_string(), h.header)).collect();
    assert_eq!(entries, [("0-1".to_string(), 1), ("2+".to_string(), 2)]);
    assert!(thing.response_header.is_empty(), "the response keeps the flexible rule");
    // Only requests and responses with valid versions may carry them; ApiVersionsResponse keeps v0.
    let data = data_with("", r#", "headerVersions": {"0+": "1"}"#);
    assert_eq!(load_err(&[("Foo.json", &data)]), "Foo.json: headerVersions are only valid for requests and responses");
    let removed = r#"{"type": "request", "name": "ThingRequest", "apiKey": 50, "validVersions": "none", "headerVersions": {"0+": "1"}}"#;
    let resp = api("response", "ThingResponse", 50, "0-3", "");
    assert_eq!(
        load_err(&[("ThingRequest.json", removed), ("ThingResponse.json", &resp)]),
        "ThingRequest.json: headerVersions must not be given for a message with no valid versions"
    );
    let req = api("request", "ApiVersionsRequest", 18, "0-3", "");
    let resp = api("response", "ApiVersionsResponse", 18, "0-3", r#", "headerVersions": {"0-2": "0", "3+": "1"}"#);
    assert_eq!(
        load_err(&[("ApiVersionsRequest.json", &req), ("ApiVersionsResponse.json", &resp)]),
        "ApiVersionsResponse.json: headerVersions: ApiVersionsResponse must use response header v0 at every version (KIP-511)"
    );
}

/// The generated `ApiKey` header functions follow `headerVersions` where a spec has them.
#[test]
fn header_versions_decide_the_generated_header_rule() {
    let req = api("request", "ThingRequest", 50, "0-3", r#", "headerVersions": {"0-1": "1", "2+": "2"}"#);
    let resp = api("response", "ThingResponse", 50, "0-3", r#", "headerVersions": {"0+": "0"}"#);
    let files = generate(&spec_dir(&[("ThingRequest.json", &req), ("ThingResponse.json", &resp)])).unwrap();
    let index = files.iter().find(|f| f.name == kwire_build::INDEX_FILE).unwrap();
    let code: String = index.content.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(code.contains("ApiKey::Thing if version >= 0 && version <= 1 => 1,"), "{code}");
    assert!(code.contains("ApiKey::Thing if version >= 2 => 2,"), "{code}");
    assert!(code.contains("ApiKey::Thing if version >= 0 => 0,"), "{code}");
}
