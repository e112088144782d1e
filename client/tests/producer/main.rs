//! The producer against a real broker (`KWIRE_BROKER`): partitioning, codecs, acks and
//! idempotence (`basics`), murmur2 against Kafka's own `Utils` (`partitioner`), records read
//! back by Java's consumer (`java_reads`), and transactions (`transactions`).
//!
//!   cargo test --workspace --test producer [transactions::]

#[path = "../common/mod.rs"]
mod common;

mod basics;
mod java_reads;
mod partitioner;
mod transactions;
