//! Differential tests against the `kafka-protocol` crate; see `tests/compat/MATRIX.md`.

pub mod built;
pub mod exceptions;
pub mod forward;
pub mod matrix;
mod targeted;
