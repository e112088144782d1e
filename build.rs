//! Generates the Kafka message types from a directory of Kafka's JSON message specs.
//!
//! Where the specs come from, first match wins:
//! 1. `KAFKA_WIRE_SPECS`: any directory of Kafka JSON specs;
//! 2. `message-specs/` in this package, if it holds `*.json` files;
//! 3. `../shared/message-specs/kafka-3.9.0` next to the workspace.

use std::path::{Path, PathBuf};

fn has_json(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(Result::ok).any(|e| e.path().extension().is_some_and(|x| x == "json")))
        .unwrap_or(false)
}

fn spec_dir(root: &Path) -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("KAFKA_WIRE_SPECS") {
        let dir = PathBuf::from(dir);
        let dir = if dir.is_relative() { root.join(dir) } else { dir };
        return if has_json(&dir) {
            Ok(dir)
        } else {
            Err(format!("KAFKA_WIRE_SPECS={} holds no *.json spec files", dir.display()))
        };
    }
    let local = root.join("message-specs");
    if has_json(&local) {
        return Ok(local);
    }
    let shared = root.join("../shared/message-specs/kafka-3.9.0");
    if has_json(&shared) {
        return Ok(shared);
    }
    Err(format!(
        "no Kafka message specs found. Point KAFKA_WIRE_SPECS at a directory of Kafka's JSON specs \
         (clients/src/main/resources/common/message in an Apache Kafka source tree), e.g.\n  \
         KAFKA_WIRE_SPECS=/path/to/kafka/clients/src/main/resources/common/message cargo build\n\
         (looked in {} and {})",
        local.display(),
        shared.display()
    ))
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=KAFKA_WIRE_SPECS");
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    // Watch the local folder too, so adding specs there switches to them.
    println!("cargo:rerun-if-changed={}", root.join("message-specs").display());
    let dir = match spec_dir(&root) {
        Ok(dir) => dir,
        Err(msg) => {
            eprintln!("error: {msg}");
            std::process::exit(1);
        }
    };
    println!("cargo:rerun-if-changed={}", dir.display());
    // Tests written against one release's exact field set (the hand-written golden frames)
    // compile only when building from that release's specs.
    println!("cargo::rustc-check-cfg=cfg(kafka_specs_3_9_0)");
    if dir.canonicalize().ok().and_then(|d| d.file_name().map(|n| n == "kafka-3.9.0")).unwrap_or(false) {
        println!("cargo:rustc-cfg=kafka_specs_3_9_0");
    }
    println!("cargo:rustc-env=KAFKA_WIRE_SPEC_DIR={}", dir.display());
    if let Err(e) = kafka_wire_codegen::generate_dir(&dir, &out) {
        eprintln!("error: cannot generate Kafka messages from {}:\n  {e}", dir.display());
        std::process::exit(1);
    }
}
