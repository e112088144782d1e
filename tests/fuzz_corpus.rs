//! The fuzz targets' seed corpus and saved crashes, replayed on stable Rust in the normal suite.
//!
//! `fuzz/src/targets.rs` (what each cargo-fuzz target does) and `fuzz/src/seeds.rs` (the seeds,
//! built from the schema-driven samples) are compiled into this test as they are, so CI checks
//! every target over its seeds without nightly or cargo-fuzz: no panic, and for the differential
//! target every seed round-trips. Files under `fuzz/regressions/<target>/` are inputs that once
//! crashed a target.

#[path = "../fuzz/src/seeds.rs"]
mod seeds;
#[allow(dead_code)]
#[path = "../fuzz/src/targets.rs"]
mod targets;

use kwire::codec::{ClientCodec, ServerCodec};
use kwire::{Bytes, BytesMut, RequestKind, ResponseKind};

fn target(name: &str) -> fn(&[u8]) {
    match targets::TARGETS.iter().find(|(n, _)| *n == name) {
        Some((_, f)) => *f,
        None => panic!("no fuzz target {name}"),
    }
}

#[test]
fn every_target_runs_cleanly_over_its_seeds() {
    let seeds = seeds::seeds();
    for (name, _) in targets::TARGETS {
        let n = seeds.iter().filter(|(t, _, _)| *t == name).count();
        assert!(n > 0, "no seeds for {name}");
    }
    for (t, name, data) in &seeds {
        target(t)(data);
        // The message seeds are valid encodings: they must decode, or they seed nothing.
        let decoded = match *t {
            "decode_request" | "decode_response" => {
                let (key, version, body) = targets::select(data).expect("seed selects a message");
                let mut body = Bytes::copy_from_slice(body);
                let ok = if *t == "decode_request" {
                    RequestKind::decode(&mut body, key.key(), version).is_ok()
                } else {
                    ResponseKind::decode(&mut body, key.key(), version).is_ok()
                };
                ok && body.is_empty()
            }
            // Frame seeds must go whole through the production readers.
            "decode_frame" => {
                let mut buf = BytesMut::from(data.get(1..).unwrap_or_default());
                let frame = ServerCodec::new().decode_request(&mut buf);
                matches!(frame, Ok(Some(f)) if f.decode_body().is_ok()) && buf.is_empty()
            }
            "decode_response_frame" => {
                let (key, version, stream) = targets::select(data).expect("seed selects a message");
                let mut codec = ClientCodec::new();
                codec.expect_response(1, key, version).expect("a valid version");
                let mut buf = BytesMut::from(stream);
                matches!(codec.decode_response(&mut buf), Ok(Some(r)) if r.version == version) && buf.is_empty()
            }
            _ => true,
        };
        assert!(decoded, "{t} seed {name} does not decode");
    }
}

#[test]
fn saved_crashes_stay_fixed() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
    let mut replayed = 0;
    for (name, f) in targets::TARGETS {
        let Ok(entries) = std::fs::read_dir(root.join(name)) else { continue };
        for entry in entries {
            let path = entry.expect("read regressions").path();
            f(&std::fs::read(&path).expect("read regression input"));
            replayed += 1;
        }
    }
    println!("replayed {replayed} saved crashes");
}
