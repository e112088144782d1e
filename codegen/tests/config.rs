//! `Config`: the settings a third-party build script gives the generator, checked on the small
//! snapshot fixture (api key 1000 and its response).

use std::path::{Path, PathBuf};

use kwire_build::{Config, Error, Gate, GeneratedFile, Include, INDEX_FILE};

fn fixture() -> Vec<PathBuf> {
    vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/snapshot")]
}

fn file<'f>(files: &'f [GeneratedFile], name: &str) -> &'f str {
    &files.iter().find(|f| f.name == name).unwrap_or_else(|| panic!("no {name}")).content
}

#[test]
fn defaults_are_kwires_own() {
    let with_config = Config::new().generate(&fixture()).unwrap();
    let plain = kwire_build::generate(&fixture()[0]).unwrap();
    assert_eq!(with_config.len(), plain.len());
    for (a, b) in with_config.iter().zip(&plain) {
        assert_eq!((&a.name, &a.content), (&b.name, &b.content));
    }
    let index = file(&with_config, INDEX_FILE);
    assert!(index.contains("use ::kwire_runtime as rt;"));
    assert!(index.contains(r#"include!(concat!(env!("OUT_DIR"), "/snapshot_request.rs"));"#));
    assert!(index.contains(r#"#[cfg_attr(not(feature = "precompiled"), inline)]"#));
    assert!(index.contains(r#"#[cfg(all(feature = "sample", feature = "serde"))]"#));
    let request = file(&with_config, "snapshot_request.rs");
    assert!(request.contains("#[cfg(feature = \"views\")]\n#[derive(Debug, Clone, Copy)]\npub struct SnapshotRequestView<'a>"));
}

#[test]
fn runtime_path_features_derives_and_includes_are_settings() {
    let files = Config::new()
        .runtime_crate("::my_crate::rt")
        .sample(Gate::Never)
        .json(Gate::Always)
        .precompiled(Gate::Feature("compiled-here".into()))
        .views(Gate::Always)
        .derive("Eq")
        .derive("::core::hash::Hash")
        .include(Include::Relative)
        .generate(&fixture())
        .unwrap();
    let index = file(&files, INDEX_FILE);
    assert!(index.contains("use ::my_crate::rt as rt;"));
    assert!(index.contains(r#"include!("snapshot_request.rs");"#));
    assert!(index.contains(r#"#[cfg_attr(not(feature = "compiled-here"), inline)]"#));
    assert!(!index.contains("visit_messages"), "no sample visitor without samples");
    assert!(index.contains("pub fn from_json("), "JSON dispatch compiled always");
    let request = file(&files, "snapshot_request.rs");
    assert!(request.contains("use ::my_crate::rt as rt;"));
    assert!(request.contains("#[derive(Debug, Clone, PartialEq, Eq, ::core::hash::Hash)]"));
    assert!(!request.contains("rt::sample::Sample"));
    assert!(!request.contains("feature ="), "no feature gates left:\n{request}");
    assert!(request.contains("impl rt::json::VersionedJson for SnapshotRequest"));
    assert!(request.contains("type Response = super::snapshot_response::SnapshotResponse;"));
    assert!(request.contains("impl rt::view::Viewed for SnapshotRequest {"));
    let without = Config::new().views(Gate::Never).generate(&fixture()).unwrap();
    assert!(!file(&without, "snapshot_request.rs").contains("View"), "no views when they are never compiled");
}

#[test]
fn api_keys_select_what_is_generated() {
    let none = Config::new().api_keys([]).generate(&fixture()).unwrap();
    let names: Vec<&str> = none.iter().map(|f| f.name.as_str()).collect();
    assert!(!names.contains(&"snapshot_request.rs") && !names.contains(&"snapshot_response.rs"), "{names:?}");
    assert!(!file(&none, INDEX_FILE).contains("SnapshotRequest"));
    let one = Config::new().api_keys([1000]).generate(&fixture()).unwrap();
    assert!(one.iter().any(|f| f.name == "snapshot_response.rs"));
    assert!(file(&one, INDEX_FILE).contains("Snapshot(SnapshotRequest)"));
}

#[test]
fn unusable_settings_are_errors() {
    let err = Config::new().runtime_crate("not a path").generate(&fixture()).unwrap_err();
    assert!(matches!(err, Error::Config(_)), "{err}");
    assert!(err.to_string().contains("runtime crate \"not a path\""), "{err}");
    let err = Config::new().derive("Eq + Hash").generate(&fixture()).unwrap_err();
    assert!(err.to_string().contains("derive"), "{err}");
    let err = Config::new().json(Gate::Feature(String::new())).generate(&fixture()).unwrap_err();
    assert!(err.to_string().contains("feature name"), "{err}");
}
