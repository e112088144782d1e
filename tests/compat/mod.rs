//! Differential tests against the `kafka-protocol` crate; see `tests/compat/MATRIX.md`.
// Tables of tuples, read where they are built.
#![allow(clippy::type_complexity)]

pub mod built;
pub mod exceptions;
pub mod forward;
pub mod matrix;
mod targeted;
