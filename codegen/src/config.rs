//! [`Config`]: what to generate and how the generated code refers to its surroundings, in the
//! manner of prost-build's `Config`, so that any crate's build script can run the generator.
//!
//! ```no_run
//! // build.rs of a crate that depends on kwire-runtime and needs two apis.
//! let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").unwrap());
//! kwire_build::Config::new()
//!     .api_keys([3, 18]) // Metadata, ApiVersions (and the headers and data specs)
//!     .sample(kwire_build::Gate::Never)
//!     .json(kwire_build::Gate::Never)
//!     .derive("Eq")
//!     .generate_dir(&["specs/kafka-3.9.0".into()], &out)?;
//! // src/lib.rs: include!(concat!(env!("OUT_DIR"), "/messages.rs"));
//! # Ok::<(), kwire_build::Error>(())
//! ```

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use proc_macro2::TokenStream;
use quote::quote;

use crate::emit::GeneratedFile;
use crate::error::Error;

/// When a group of generated items is compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// Behind `#[cfg(feature = "...")]` of the crate that includes the code.
    Feature(String),
    /// Always.
    Always,
    /// Not generated.
    Never,
}

/// How the index file reaches the per-spec files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Include {
    /// `include!(concat!(env!("OUT_DIR"), "/x.rs"))`: for output written to `OUT_DIR`.
    OutDir,
    /// `include!("x.rs")`: relative to the index file, wherever the files are.
    Relative,
}

/// The generator's settings. [`Config::new`] gives what kwire itself uses.
#[derive(Debug, Clone)]
pub struct Config {
    runtime: String,
    api_keys: Option<BTreeSet<i16>>,
    sample: Gate,
    json: Gate,
    precompiled: Gate,
    views: Gate,
    derives: Vec<String>,
    include: Include,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            runtime: "::kwire_runtime".into(),
            api_keys: None,
            sample: Gate::Feature("sample".into()),
            json: Gate::Feature("serde".into()),
            precompiled: Gate::Feature("precompiled".into()),
            views: Gate::Feature("views".into()),
            derives: Vec::new(),
            include: Include::OutDir,
        }
    }
}

impl Config {
    /// kwire's own settings: runtime `::kwire_runtime`, every api, `Sample` impls behind
    /// feature `sample`, JSON behind `serde`, dispatch compiled in the including crate unless
    /// feature `precompiled`, views behind `views`, files included from `OUT_DIR`.
    pub fn new() -> Config {
        Config::default()
    }

    /// The path of the runtime crate in the including crate (`::kwire_runtime`, or a
    /// re-export such as `::my_crate::rt`).
    pub fn runtime_crate(&mut self, path: &str) -> &mut Self {
        self.runtime = path.to_string();
        self
    }

    /// Generates only these api keys' requests and responses (with every header and data spec);
    /// unset, every api. Other apis are left out of the dispatch enums and `ApiKey` too, which
    /// saves compile time in a crate that speaks a few apis.
    pub fn api_keys(&mut self, keys: impl IntoIterator<Item = i16>) -> &mut Self {
        self.api_keys = Some(keys.into_iter().collect());
        self
    }

    /// When the `rt::sample::Sample` impls (test values) are compiled.
    pub fn sample(&mut self, gate: Gate) -> &mut Self {
        self.sample = gate;
        self
    }

    /// When the JSON impls are compiled (they need the runtime's `serde` feature).
    pub fn json(&mut self, gate: Gate) -> &mut Self {
        self.json = gate;
        self
    }

    /// When the dispatch enums' `decode` / `encoded_len` are compiled in the generated crate
    /// rather than inlined into callers.
    pub fn precompiled(&mut self, gate: Gate) -> &mut Self {
        self.precompiled = gate;
        self
    }

    /// When the borrowed views (`XxxView<'a>`, read in place without allocating) are compiled.
    pub fn views(&mut self, gate: Gate) -> &mut Self {
        self.views = gate;
        self
    }

    /// Adds a derive (`Eq`, `Hash`, `serde::Serialize`) to every generated struct, after
    /// `Debug, Clone, PartialEq`.
    pub fn derive(&mut self, path: &str) -> &mut Self {
        self.derives.push(path.to_string());
        self
    }

    /// How the index includes the other files.
    pub fn include(&mut self, include: Include) -> &mut Self {
        self.include = include;
        self
    }

    /// Generates the code for spec directories (several: releases oldest first, merged) without
    /// writing it.
    pub fn generate(&self, dirs: &[PathBuf]) -> Result<Vec<GeneratedFile>, Error> {
        let options = self.options()?;
        let mut model = crate::load_merged_model(dirs)?;
        if let Some(keys) = &self.api_keys {
            model.retain_api_keys(keys);
        }
        crate::emit::generate_with(&model, &options)
    }

    /// Generates into `out_dir`, writing only files whose content changed. Returns the paths of
    /// all generated files; the index is [`INDEX_FILE`](crate::INDEX_FILE).
    pub fn generate_dir(&self, dirs: &[PathBuf], out_dir: &Path) -> Result<Vec<PathBuf>, Error> {
        crate::write_files(self.generate(dirs)?, out_dir)
    }

    /// The settings as tokens, checked (emission never fails on them).
    pub(crate) fn options(&self) -> Result<Options, Error> {
        let path = |what: &str, text: &str| {
            syn::parse_str::<syn::Path>(text).map(|p| quote!(#p).to_string()).map_err(|e| Error::Config(format!("{what} \"{text}\" is not a Rust path: {e}")))
        };
        let runtime = path("runtime crate", &self.runtime)?;
        let derives = self.derives.iter().map(|d| path("derive", d)).collect::<Result<_, _>>()?;
        for gate in [&self.sample, &self.json, &self.precompiled, &self.views] {
            if let Gate::Feature(name) = gate {
                if name.is_empty() || name.contains('"') {
                    return Err(Error::Config(format!("invalid feature name \"{name}\"")));
                }
            }
        }
        Ok(Options {
            runtime,
            sample: self.sample.clone(),
            json: self.json.clone(),
            precompiled: self.precompiled.clone(),
            views: self.views.clone(),
            derives,
            include: self.include,
        })
    }
}

/// A [`Config`] checked for emission (paths that parse; kept as text, since tokens cannot be
/// shared with the threads that format the files).
#[derive(Debug, Clone)]
pub(crate) struct Options {
    runtime: String,
    pub sample: Gate,
    pub json: Gate,
    pub precompiled: Gate,
    pub views: Gate,
    derives: Vec<String>,
    pub include: Include,
}

impl Options {
    /// The runtime crate's path.
    pub fn runtime(&self) -> TokenStream {
        self.runtime.parse().unwrap_or_default()
    }

    /// The extra derives.
    pub fn derives(&self) -> Vec<TokenStream> {
        self.derives.iter().map(|d| d.parse().unwrap_or_default()).collect()
    }

    /// `#[cfg(...)]` for items behind all of `gates`; `None` when one of them is `Never`.
    pub fn cfg(gates: &[&Gate]) -> Option<TokenStream> {
        let mut features = Vec::new();
        for gate in gates {
            match gate {
                Gate::Never => return None,
                Gate::Always => {}
                Gate::Feature(name) => features.push(quote!(feature = #name)),
            }
        }
        Some(match features.as_slice() {
            [] => TokenStream::new(),
            [one] => quote!(#[cfg(#one)]),
            several => quote!(#[cfg(all(#(#several),*))]),
        })
    }

    /// The attribute that inlines a dispatch function unless it is precompiled.
    pub fn inline_unless_precompiled(&self) -> TokenStream {
        match &self.precompiled {
            Gate::Feature(name) => quote!(#[cfg_attr(not(feature = #name), inline)]),
            Gate::Always => TokenStream::new(),
            Gate::Never => quote!(#[inline]),
        }
    }
}
