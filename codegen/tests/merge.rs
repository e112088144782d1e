//! Merging several releases' spec sets (oldest first) into one model.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use kwire_build::internal::load_merged_model;
use kwire_build::internal::model::{FieldType, Model};
use kwire_build::internal::version::VersionRange;

fn dir(files: &[(&str, String)]) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("merge-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    dir
}

fn pair(valid: &str, fields: &str) -> Vec<(&'static str, String)> {
    let spec = |kind: &str, name: &str, fields: &str| {
        format!(r#"{{"apiKey": 50, "type": "{kind}", "name": "{name}", "validVersions": "{valid}", "flexibleVersions": "2+", "fields": [{fields}]}}"#)
    };
    vec![("ThingRequest.json", spec("request", "ThingRequest", fields)), ("ThingResponse.json", spec("response", "ThingResponse", ""))]
}

fn merged(old: &[(&str, String)], new: &[(&str, String)]) -> Result<Model, String> {
    load_merged_model(&[dir(old), dir(new)]).map_err(|e| e.to_string())
}

fn field<'m>(m: &'m Model, name: &str) -> &'m kwire_build::internal::model::Field {
    let msg = m.messages.iter().find(|m| m.name == "ThingRequest").unwrap();
    msg.structs[0].fields.iter().find(|f| f.name == name).unwrap()
}

#[test]
fn versions_removed_in_the_newer_release_stay_with_their_fields() {
    let old = pair("0-3", r#"{"name": "Old", "type": "int32", "versions": "0-1"}, {"name": "Keep", "type": "string", "versions": "0+"}"#);
    let new = pair("2-4", r#"{"name": "Keep", "type": "string", "versions": "0+"}, {"name": "Fresh", "type": "int64", "versions": "4+"}"#);
    let m = merged(&old, &new).unwrap();
    let msg = m.messages.iter().find(|m| m.name == "ThingRequest").unwrap();
    assert_eq!(msg.valid, VersionRange::new(0, 4));
    let names: Vec<_> = msg.structs[0].fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["Old", "Keep", "Fresh"], "wire order of both releases kept");
    assert_eq!(field(&m, "Old").versions, VersionRange::new(0, 1));
    assert_eq!(field(&m, "Keep").versions, VersionRange::new(0, 4));
    assert_eq!(field(&m, "Fresh").versions, VersionRange::new(4, 4));
    assert_eq!(field(&m, "Fresh").ty, FieldType::Fixed(kwire_build::internal::wire::Fixed::Int64));
    assert_eq!(msg.flexible, VersionRange::new(2, 4));
}

#[test]
fn a_field_whose_layout_differs_at_a_shared_version_is_reported() {
    let old = pair("0-3", r#"{"name": "X", "type": "int32", "versions": "0+"}"#);
    let new = pair("0-4", r#"{"name": "X", "type": "int64", "versions": "0+"}"#);
    let err = merged(&old, &new).unwrap_err();
    assert_eq!(err, "ThingRequest.json: X: cannot merge releases: type/tag differ: int32 None vs int64 None");
}

#[test]
fn nullability_that_cannot_be_one_range_is_reported() {
    // Nullable in the old release's v0-1 only, not in the newer release's v2-3.
    let old = pair("0-1", r#"{"name": "S", "type": "string", "versions": "0+", "nullableVersions": "0+"}"#);
    let new = pair("2-3", r#"{"name": "S", "type": "string", "versions": "0+"}"#);
    let m = merged(&old, &new).unwrap();
    assert_eq!(field(&m, "S").nullable, VersionRange::new(0, 1));
    let old = pair("0-1", r#"{"name": "S", "type": "string", "versions": "0+", "nullableVersions": "0"}"#);
    let new = pair("2-3", r#"{"name": "S", "type": "string", "versions": "0+", "nullableVersions": "3+"}"#);
    let err = merged(&old, &new).unwrap_err();
    assert!(err.ends_with("S: cannot merge releases: nullableVersions cannot be expressed as one range across releases"), "{err}");
}

#[test]
fn the_shared_releases_merge() {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/message-specs");
    if !shared.is_dir() {
        panic!("../shared/message-specs is missing");
    }
    let m = load_merged_model(&[shared.join("kafka-3.9.0"), shared.join("kafka-trunk-2025-02-14")]).unwrap();
    let produce = m.apis.iter().find(|a| a.key == 0).unwrap();
    assert_eq!(produce.valid.lo, 0, "Produce v0 (removed in 4.0) kept");
    assert!(produce.valid.hi >= 12, "Produce v12 (new) present");
    assert!(m.apis.iter().any(|a| a.name == "StreamsGroupHeartbeat"));
}

#[test]
fn the_default_releases_merge_into_every_version_of_both() {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/message-specs");
    let m = load_merged_model(&[shared.join("kafka-3.9.0"), shared.join("kafka-4.4.0")]).unwrap_or_else(|e| panic!("{e}"));
    let live: Vec<_> = m.apis.iter().filter(|a| !a.valid.is_empty()).collect();
    let versions: usize = live.iter().map(|a| a.valid.iter().count()).sum();
    eprintln!("{} api keys, {versions} request versions", live.len());
    assert_eq!(live.len(), 95);
    assert_eq!(versions, 368);
}

/// Kafka 2.5 renamed FetchRequest's `MaxWait` to `MaxWaitMs` while adding a tagged field in front:
/// the rename is recognised by wire position, not list position.
#[test]
fn a_renamed_field_is_matched_by_its_wire_position() {
    let old = pair("0-3", r#"{"name": "A", "type": "int32", "versions": "0+"}, {"name": "MaxWait", "type": "int32", "versions": "0+"}"#);
    let new = pair(
        "0-4",
        r#"{"name": "Tagged", "type": "string", "versions": "2+", "taggedVersions": "2+", "tag": 0, "nullableVersions": "2+", "default": "null"},
           {"name": "A", "type": "int32", "versions": "0+"}, {"name": "MaxWaitMs", "type": "int32", "versions": "0+"}"#,
    );
    let m = merged(&old, &new).unwrap();
    let msg = m.messages.iter().find(|m| m.name == "ThingRequest").unwrap();
    let names: Vec<_> = msg.structs[0].fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["Tagged", "A", "MaxWaitMs"], "one field under the newer name");
}

/// A tagged field added to a version both releases have (no version bump needed), and
/// `bytes` becoming `records`, merge; an untagged field added to an existing version does not.
#[test]
fn tagged_fields_join_existing_versions_and_bytes_is_records() {
    let old = pair("0-3", r#"{"name": "R", "type": "bytes", "versions": "0+", "nullableVersions": "0+"}"#);
    let new = pair(
        "0-3",
        r#"{"name": "R", "type": "records", "versions": "0+", "nullableVersions": "0+"},
           {"name": "T", "type": "int32", "versions": "2+", "taggedVersions": "2+", "tag": 0}"#,
    );
    let m = merged(&old, &new).unwrap();
    assert_eq!(field(&m, "T").tagged, VersionRange::new(2, 3));
    assert_eq!(field(&m, "R").ty, FieldType::Records, "the newer type kept");
    let new = pair("0-3", r#"{"name": "R", "type": "bytes", "versions": "0+", "nullableVersions": "0+"}, {"name": "U", "type": "int32", "versions": "2+"}"#);
    let err = merged(&old, &new).unwrap_err();
    assert!(err.ends_with("U: cannot merge releases: present at v2 in one release only"), "{err}");
}

/// Api 74 was renamed between releases: the request and response merge by key under the newer name.
#[test]
fn an_api_renamed_between_releases_merges_by_key() {
    let spec = |kind: &str, name: &str, valid: &str| {
        format!(r#"{{"apiKey": 74, "type": "{kind}", "name": "{name}", "validVersions": "{valid}", "flexibleVersions": "0+", "fields": []}}"#)
    };
    let old = vec![("OldRequest.json", spec("request", "OldRequest", "0")), ("OldResponse.json", spec("response", "OldResponse", "0"))];
    let new = vec![("NewRequest.json", spec("request", "NewRequest", "0-1")), ("NewResponse.json", spec("response", "NewResponse", "0-1"))];
    let m = merged(&old, &new).unwrap();
    let api = m.apis.iter().find(|a| a.key == 74).unwrap();
    assert_eq!((api.name.as_str(), api.valid), ("New", VersionRange::new(0, 1)));
    assert!(!m.messages.iter().any(|m| m.name.starts_with("Old")), "no second type for the old name");
}
