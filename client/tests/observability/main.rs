//! What the client reports, against a real broker (`KWIRE_BROKER`): its metrics under Java's
//! names, scraped from the Prometheus exporter (`metrics`), and KIP-714 telemetry pushed to the
//! broker (`telemetry`).
//!
//!   cargo test --workspace --test observability

#[path = "../common/mod.rs"]
mod common;

mod metrics;
#[cfg(feature = "telemetry")]
mod telemetry;
