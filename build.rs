//! Generates the Kafka message types from a directory of Kafka's JSON message specs.
//!
//! Where the specs come from, first match wins:
//! 1. `KWIRE_SPECS`: any directory of Kafka JSON specs, or several releases' directories
//!    separated by `:` (oldest first), merged into one set of types; a kafka-clients jar (which
//!    carries its release's specs) or a Kafka distribution's `libs/` folder stands for a directory;
//! 2. `message-specs/` in this package, if it holds `*.json` files;
//! 3. `kafka-3.9.0` and `kafka-4.4.0`, merged: every version from v0 (3.9.0 is the last release
//!    with all of them) to the newest; from `message-specs/` where the published package bundles
//!    them, else from `../shared/message-specs/` next to the workspace.

use std::path::{Path, PathBuf};

/// The default spec sets, oldest first.
const DEFAULT_RELEASES: [&str; 2] = ["kafka-3.9.0", "kafka-4.4.0"];

/// A directory of spec files, a kafka-clients jar, or a folder holding one (a distribution's `libs/`).
fn has_json(path: &Path) -> bool {
    kwire_build::find_source(path).is_some()
}

fn spec_dirs(root: &Path) -> Result<Vec<PathBuf>, String> {
    if let Some(dirs) = std::env::var_os("KWIRE_SPECS") {
        let dirs: Vec<PathBuf> = std::env::split_paths(&dirs).map(|d| if d.is_relative() { root.join(d) } else { d }).collect();
        if let Some(bad) = dirs.iter().find(|d| !has_json(d)) {
            return Err(format!("KWIRE_SPECS: {} holds no *.json spec files and is no kafka-clients jar", bad.display()));
        }
        return if dirs.is_empty() { Err("KWIRE_SPECS is empty".into()) } else { Ok(dirs) };
    }
    let local = root.join("message-specs");
    if has_json(&local) {
        return Ok(vec![local]);
    }
    // The default releases: bundled in the published package (scripts/package.sh puts them in
    // message-specs/), else beside the checkout.
    let shared = root.join("../shared/message-specs");
    for base in [&local, &shared] {
        let default: Vec<PathBuf> = DEFAULT_RELEASES.iter().map(|r| base.join(r)).collect();
        if default.iter().all(|d| has_json(d)) {
            return Ok(default);
        }
    }
    Err(format!(
        "no Kafka message specs found. Point KWIRE_SPECS at a directory of Kafka's JSON specs \
         (clients/src/main/resources/common/message in an Apache Kafka source tree), e.g.\n  \
         KWIRE_SPECS=/path/to/kafka/clients/src/main/resources/common/message cargo build\n\
         (looked in {} and in {} for {})",
        local.display(),
        shared.display(),
        DEFAULT_RELEASES.join(" and ")
    ))
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=KWIRE_SPECS");
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    // Watch the local folder too, so adding specs there switches to them.
    println!("cargo:rerun-if-changed={}", root.join("message-specs").display());
    let dirs = match spec_dirs(&root) {
        Ok(dirs) => dirs,
        Err(msg) => {
            eprintln!("error: {msg}");
            std::process::exit(1);
        }
    };
    for dir in &dirs {
        println!("cargo:rerun-if-changed={}", dir.display());
    }
    let shown = std::env::join_paths(&dirs).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    // Tests written against one release's exact field set (the hand-written golden frames)
    // compile only when building from that release's specs.
    println!("cargo::rustc-check-cfg=cfg(kafka_specs_with_3_9_0)");
    println!("cargo::rustc-check-cfg=cfg(kafka_specs_merged)");
    // Kafka 3.9.0 is the oldest release here: a build that holds it has every version the golden
    // frames were written against (newer releases only add fields in versions of their own).
    let is_3_9_0 = |d: &PathBuf| d.canonicalize().ok().is_some_and(|d| d.file_name().is_some_and(|n| n == "kafka-3.9.0"));
    if dirs.first().is_some_and(is_3_9_0) {
        println!("cargo:rustc-cfg=kafka_specs_with_3_9_0");
    }
    if dirs.len() > 1 {
        println!("cargo:rustc-cfg=kafka_specs_merged");
    }
    println!("cargo:rustc-env=KWIRE_SPEC_DIR={shown}");
    // kwire's own settings: `::kwire_runtime`, every api, features `sample`, `serde`
    // and `precompiled`, files included from OUT_DIR.
    let result = kwire_build::Config::new().generate_dir(&dirs, &out);
    if let Err(e) = result {
        eprintln!("error: cannot generate Kafka messages from {shown}:\n  {e}");
        std::process::exit(1);
    }
}
