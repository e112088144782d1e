//! The consumer and the share consumer against a real broker (`KWIRE_BROKER`): partitions
//! assigned by hand (`assigned`), groups in both protocols (`group`, `rebalance`, `pattern`,
//! `poll_interval`), the assignors against Java's (`assignor`), a Java member in the same group
//! (`java_group`), and share groups (`share`).
//!
//!   cargo test --workspace --test consumer [rebalance::]

#[path = "../common/mod.rs"]
mod common;

mod assigned;
mod assignor;
mod group;
mod java_group;
mod pattern;
mod poll_interval;
mod rebalance;
mod share;
