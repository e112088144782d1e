//! Schema-driven round trips over every message and every valid version.
//!
//! For each (message, version) and several seeds: a value with a non-default value in every
//! field present at that version, plus unknown tagged fields where the version is flexible,
//! must encode to exactly `encoded_len` bytes, decode back to an equal value consuming every
//! byte, and re-encode to the same bytes. Every strict prefix of the encoding must fail to
//! decode with an error (never a panic).

use kwire::messages::visit_messages;
use kwire::runtime::sample::{MessageVisitor, Sample, SampleRng};
use kwire::{Bytes, Message};

struct RoundTrip {
    seeds: std::ops::Range<u64>,
    check_prefixes: bool,
    versions: usize,
    messages: usize,
    failures: Vec<String>,
}

impl RoundTrip {
    fn check<M: Message + Sample>(&mut self, version: i16, seed: u64) -> Result<(), String> {
        let value = M::sample(version, &mut SampleRng::new(seed));
        let bytes = value.to_bytes(version).map_err(|e| format!("encode: {e}"))?;
        if bytes.len() != value.encoded_len(version) {
            return Err(format!("encoded_len {} but wrote {}", value.encoded_len(version), bytes.len()));
        }
        let mut input = bytes.clone();
        let back = M::decode(&mut input, version).map_err(|e| format!("decode: {e}"))?;
        if !input.is_empty() {
            return Err(format!("{} bytes left after decode", input.len()));
        }
        if back != value {
            return Err(format!("decoded value differs:\n  wrote {value:?}\n  read  {back:?}"));
        }
        let again = back.to_bytes(version).map_err(|e| format!("re-encode: {e}"))?;
        if again != bytes {
            return Err("re-encoding gave different bytes".into());
        }
        if self.check_prefixes {
            for cut in 0..bytes.len() {
                let mut prefix: Bytes = bytes.slice(..cut);
                if M::decode(&mut prefix, version).is_ok() {
                    return Err(format!("the {cut}-byte prefix of {} bytes decoded", bytes.len()));
                }
            }
        }
        Ok(())
    }
}

impl MessageVisitor for RoundTrip {
    fn visit<M: Message + Sample>(&mut self) {
        self.messages += 1;
        for version in M::VERSIONS.iter() {
            self.versions += 1;
            for seed in self.seeds.clone() {
                if let Err(e) = self.check::<M>(version, seed) {
                    self.failures.push(format!("{} v{version} seed {seed}: {e}", M::NAME));
                    break;
                }
            }
        }
    }
}

fn run(seeds: std::ops::Range<u64>, check_prefixes: bool) -> RoundTrip {
    let mut rt = RoundTrip { seeds, check_prefixes, versions: 0, messages: 0, failures: Vec::new() };
    visit_messages(&mut rt);
    rt
}

#[test]
fn every_message_and_version_round_trips() {
    let rt = run(0..8, false);
    assert!(rt.failures.is_empty(), "{} failures:\n{}", rt.failures.len(), rt.failures.join("\n"));
    // The default spec set (Kafka 3.9.0) has 88 api keys; every one has a request and a response.
    if kwire::SPEC_DIR.ends_with("kafka-3.9.0") {
        assert_eq!(kwire::ApiKey::ALL.len(), 88);
        let requests: usize = kwire::ApiKey::ALL.iter().map(|k| k.info().valid.iter().count()).sum();
        assert_eq!(requests, 323, "request versions");
    }
    println!("{} messages, {} (message, version) pairs", rt.messages, rt.versions);
}

#[test]
fn every_strict_prefix_fails_to_decode() {
    let rt = run(100..102, true);
    assert!(rt.failures.is_empty(), "{} failures:\n{}", rt.failures.len(), rt.failures.join("\n"));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
    #[test]
    fn random_seeds_round_trip(seed in proptest::prelude::any::<u64>()) {
        let rt = run(seed..seed + 1, false);
        proptest::prop_assert!(rt.failures.is_empty(), "{}", rt.failures.join("\n"));
    }
}
