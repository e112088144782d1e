//! Connecting to a real broker (`KWIRE_BROKER`): PLAINTEXT, TLS and SASL listeners
//! (`listeners`), OAUTHBEARER against Kafka's OIDC validator (`oauth`), KIP-368
//! re-authentication (`reauth`), keytool's stores refused with the conversion to use
//! (`tls_jks`, no broker), and `examples/client.rs` over TLS and SASL (`example`).
//!
//!   cargo test --workspace --test connect [oauth::]

#[path = "../common/mod.rs"]
mod common;

mod example;
#[cfg(feature = "tls")]
mod listeners;
mod oauth;
mod reauth;
#[cfg(feature = "tls")]
mod tls_jks;
