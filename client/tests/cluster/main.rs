//! Against a 3-node cluster (`scripts/kafka.sh start VERSION --nodes 3`, its env file in
//! `KWIRE_CLUSTER`; each test skips without it, and fails then under `KWIRE_REQUIRE_CLUSTER=1`):
//! routing to leaders and a moved leader (`routing`), the consumer following one (`consumer`),
//! fetching from the rack's follower (`rack`), an idempotent producer under killed leaders
//! (`killed_broker`), exactly-once under a killed coordinator (`transactions`).
//!
//! The tests kill and restart brokers the others are using: run them one at a time.
//!
//!   cargo test --workspace --test cluster -- --test-threads 1 [killed_broker::]

#[path = "../common/mod.rs"]
mod common;

mod consumer;
mod killed_broker;
mod rack;
mod routing;
mod transactions;
