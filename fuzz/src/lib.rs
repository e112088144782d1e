//! Fuzz targets for kwire's decoders: what each target does is in `targets.rs` (shared with
//! the root crate's `tests/fuzz_corpus.rs`, which replays the seeds on stable Rust), the seed
//! corpus in `seeds.rs`.

pub mod seeds;
pub mod targets;

pub use targets::*;
