//! kwire-build: reads Apache Kafka's JSON message specs and generates Rust types with
//! versioned encode/decode for every api, for a build script, as prost-build does for protobuf.
//! The generated code depends on `kwire-runtime`.
//!
//! A build script generates into `OUT_DIR` with a [`Config`]:
//!
//! ```no_run
//! // build.rs
//! fn main() -> Result<(), kwire_build::Error> {
//!     let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").unwrap());
//!     kwire_build::Config::new()
//!         .api_keys([0, 1, 3, 18]) // Produce, Fetch, Metadata, ApiVersions
//!         .generate_dir(&["specs/kafka-4.4.0".into()], &out)?;
//!     Ok(())
//! }
//! ```
//!
//! and the crate includes the index, which `include!`s the other files:
//!
//! ```ignore
//! pub mod messages {
//!     include!(concat!(env!("OUT_DIR"), "/messages.rs"));
//! }
//! ```
//!
//! Several releases' spec directories (oldest first) merge into one set of types whose version
//! ranges are the union; a kafka-clients jar, or a folder holding one, stands for a directory
//! ([`find_source`]). [`Config`] also sets the runtime crate's path, the feature gates of the
//! sample, JSON, view and precompiled code, extra derives and how files are included. Every
//! failure is an [`Error`] naming the spec file and what is wrong.
#![warn(missing_docs)]

mod config;
mod emit;
mod error;
mod merge;
mod model;
mod plan;
mod spec;
mod version;
mod wire;

use std::path::{Path, PathBuf};

pub use config::{Config, Gate, Include};
pub use emit::{GeneratedFile, DISSECTOR_FILE, INDEX_FILE};
pub use error::Error;
pub use spec::{find_source, release_name, SpecSource};

use model::Model;

/// Not public API: the stages' internals, for this crate's own tests and the project's tools.
/// They change in any release without notice.
#[doc(hidden)]
pub mod internal {
    pub use crate::{load_merged_model, load_model};
    pub mod emit {
        pub use crate::emit::*;
    }
    pub mod merge {
        pub use crate::merge::*;
    }
    pub mod model {
        pub use crate::model::*;
    }
    pub mod plan {
        pub use crate::plan::*;
    }
    pub mod spec {
        pub use crate::spec::*;
    }
    pub mod version {
        pub use crate::version::*;
    }
    pub mod wire {
        pub use crate::wire::*;
    }
}

/// Parses and validates every spec in `dir`.
#[doc(hidden)]
pub fn load_model(dir: &Path) -> Result<Model, Error> {
    load_merged_model(&[dir.to_path_buf()])
}

/// Parses several releases' spec directories (oldest first), merges them into one spec set
/// (see `merge`) and validates the result.
#[doc(hidden)]
pub fn load_merged_model(dirs: &[PathBuf]) -> Result<Model, Error> {
    let sets = dirs.iter().map(|d| spec::load_dir(d)).collect::<Result<Vec<_>, _>>()?;
    let releases: Vec<model::Release> = dirs.iter().zip(&sets).map(|(d, set)| model::Release::of(&spec::release_name(d), set)).collect();
    model::lower_releases(&merge::merge_releases(sets)?, &releases)
}

/// Generates the code for the specs in `spec_dir` without writing it.
pub fn generate(spec_dir: &Path) -> Result<Vec<GeneratedFile>, Error> {
    emit::generate(&load_model(spec_dir)?)
}

/// Generates the code for several releases' spec directories, oldest first, merged into one
/// set of types whose version ranges are the union.
pub fn generate_merged(dirs: &[PathBuf]) -> Result<Vec<GeneratedFile>, Error> {
    emit::generate(&load_merged_model(dirs)?)
}

/// Generates the code for the specs in `spec_dir` into `out_dir`, writing only files whose
/// content changed (so that dependent builds are not invalidated needlessly). Returns the
/// paths of all generated files; the index is [`INDEX_FILE`].
pub fn generate_dir(spec_dir: &Path, out_dir: &Path) -> Result<Vec<PathBuf>, Error> {
    write_files(generate(spec_dir)?, out_dir)
}

/// Like [`generate_dir`] for several releases' spec directories, oldest first.
pub fn generate_merged_dir(dirs: &[PathBuf], out_dir: &Path) -> Result<Vec<PathBuf>, Error> {
    write_files(generate_merged(dirs)?, out_dir)
}

pub(crate) fn write_files(files: Vec<GeneratedFile>, out_dir: &Path) -> Result<Vec<PathBuf>, Error> {
    std::fs::create_dir_all(out_dir).map_err(|source| Error::Io { path: out_dir.to_path_buf(), source })?;
    let mut paths = Vec::with_capacity(files.len());
    for f in files {
        let path = out_dir.join(&f.name);
        let unchanged = std::fs::read_to_string(&path).is_ok_and(|old| old == f.content);
        if !unchanged {
            std::fs::write(&path, &f.content).map_err(|source| Error::Io { path: path.clone(), source })?;
        }
        paths.push(path);
    }
    Ok(paths)
}
