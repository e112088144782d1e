//! kwire-client against in-process broker doubles on kwire's `ServerCodec`: what a real broker
//! will not do on demand (scripted answers, hostile frames, lost sessions, truncated logs). No
//! broker needed; one test binary for all of them.
//!
//!   cargo test -p kwire-client --test doubles [producer::]

#[path = "../common/mod.rs"]
mod common;

mod admin;
mod connection;
mod consumer;
mod faults;
mod pause;
mod producer;
mod reauth;
mod share;
