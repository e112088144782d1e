//! kwire-client against kwire-fake's in-process cluster: groups of every protocol on its
//! coordinators, and how the client asks for topics and versions. No broker needed.
//!
//!   cargo test -p kwire-client --test fake [groups::]

mod groups;
mod requests;
