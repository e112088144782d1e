//! The admin client against a real broker (`KWIRE_BROKER`, see `common`): topics,
//! partitions, configs, ACLs, SCRAM users, the cluster (`basics`), and what Kafka added later:
//! share and streams groups, lag, topics by id and by page, log dirs (`extended`).
//!
//!   cargo test --workspace --test admin [extended::]

#[path = "../common/mod.rs"]
mod common;

mod basics;
mod extended;
