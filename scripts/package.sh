#!/usr/bin/env bash
# Packages kwire for crates.io (`cargo package`) with the default releases' spec files
# (and their LICENSE and NOTICE) bundled under message-specs/ at packaging time, never
# committed; then builds a throwaway downstream crate against the packaged .crate files, in a
# scratch directory with no ../shared beside it, offline, and runs it: it encodes and decodes a
# message and checks the api table.
set -euo pipefail
cd "$(dirname "$0")/.."
shared=../shared/message-specs
releases=(kafka-3.9.0 kafka-4.4.0)

bundled=(LICENSE NOTICE "${releases[@]}")
cleanup() { for b in "${bundled[@]}"; do rm -rf "message-specs/$b"; done; }
trap cleanup EXIT
for b in "${bundled[@]}"; do cp -r "$shared/$b" message-specs/; done
cargo package --workspace --exclude kwire-cli --allow-dirty --no-verify 2>&1 | grep -v '^warning: ignoring' || true
version=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"]=="kwire"))')
listed=$(tar -tzf "target/package/kwire-$version.crate")
for b in "${bundled[@]}"; do
  grep -q "^kwire-$version/message-specs/$b" <<<"$listed" || { echo "the package lacks message-specs/$b" >&2; exit 1; }
done

scratch=$(mktemp -d)
trap 'cleanup; rm -rf "$scratch"' EXIT
mkdir -p "$scratch/crates" "$scratch/downstream/src"
for c in kwire-runtime kwire-build kwire; do
  tar -xzf "target/package/$c-$version.crate" -C "$scratch/crates"
done
cat > "$scratch/downstream/Cargo.toml" <<TOML
[package]
name = "downstream"
version = "0.0.0"
edition = "2021"

[dependencies]
kwire = { version = "$version", features = ["serde"] }

# The packaged crates stand in for crates.io.
[patch.crates-io]
kwire = { path = "../crates/kwire-$version" }
kwire-runtime = { path = "../crates/kwire-runtime-$version" }
kwire-build = { path = "../crates/kwire-build-$version" }
TOML
cat > "$scratch/downstream/src/main.rs" <<'RS'
use kwire::messages::metadata_request::MetadataRequestTopic;
use kwire::messages::{ApiKey, MetadataRequest};
use kwire::runtime::json::VersionedJson;
use kwire::{Bytes, Decode, Message};

fn main() {
    let request = MetadataRequest {
        topics: Some(vec![MetadataRequestTopic { name: Some("orders".into()), ..Default::default() }]),
        ..Default::default()
    };
    let bytes = request.to_bytes(12).expect("encode");
    let back = MetadataRequest::decode(&mut Bytes::clone(&bytes), 12).expect("decode");
    assert_eq!(back, request);
    let json = back.to_json(12).expect("json");
    assert_eq!(json["topics"][0]["name"], "orders");
    let versions: usize = ApiKey::ALL.iter().map(|k| k.info().valid.iter().count()).sum();
    assert_eq!((ApiKey::ALL.len(), versions), (95, 368), "the bundled default releases");
    println!("downstream: {} bytes, {json}, {} api keys, {versions} request versions", bytes.len(), ApiKey::ALL.len());
}
RS
echo "== building a downstream crate against the packages in $scratch (offline, no ../shared)"
(cd "$scratch/downstream" && env -u KWIRE_SPECS CARGO_TARGET_DIR="$scratch/target" cargo run --offline -q)
