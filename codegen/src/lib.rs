//! kwire-build: reads Apache Kafka's JSON message specs and generates Rust types with
//! versioned encode/decode for every api, built on `kwire-runtime`.
//!
//! Three stages, each its own module: [`spec`] mirrors the JSON files, [`model`] lowers them into
//! a validated model (checking the invariants Kafka's own generator checks), and [`emit`] turns
//! the model into formatted Rust files.
//!
//! ```no_run
//! let files = kwire_build::generate_dir("specs/kafka-3.9.0".as_ref(), "out".as_ref())?;
//! # Ok::<(), kwire_build::Error>(())
//! ```
//!
//! The generated index (`messages.rs`) `include!`s the other files (from `OUT_DIR` by default),
//! so the output is meant for a build script; the crate that includes it must depend on
//! `kwire-runtime`. A [`Config`] sets the runtime crate's path, which api keys to generate,
//! the feature gates of the sample and JSON impls, extra derives and how files are included.
#![warn(missing_docs)]

pub mod config;
pub mod emit;
pub mod error;
pub mod merge;
pub mod model;
pub mod plan;
pub mod spec;
pub mod version;
pub mod wire;

use std::path::{Path, PathBuf};

pub use config::{Config, Gate, Include};
pub use emit::{GeneratedFile, INDEX_FILE};
pub use error::Error;
pub use model::Model;

/// Parses and validates every spec in `dir`.
pub fn load_model(dir: &Path) -> Result<Model, Error> {
    load_merged_model(&[dir.to_path_buf()])
}

/// Parses several releases' spec directories (oldest first), merges them into one spec set
/// (see [`merge`]) and validates the result.
pub fn load_merged_model(dirs: &[PathBuf]) -> Result<Model, Error> {
    let sets = dirs.iter().map(|d| spec::load_dir(d)).collect::<Result<Vec<_>, _>>()?;
    let releases: Vec<model::Release> =
        dirs.iter().zip(&sets).map(|(d, set)| model::Release::of(&spec::release_name(d), set)).collect();
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
