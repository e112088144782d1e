#!/usr/bin/env bash
# Packages every crate of the workspace for crates.io (`cargo package`, in dependency order:
# kwire-runtime, kwire-build, kwire, kwire-client, kwire-fake, kwire-proxy, kwire-cli), kwire with the
# default releases' spec files (and their LICENSE and NOTICE) bundled under message-specs/ at
# packaging time, never committed. Then, in a scratch directory with no ../shared beside it,
# offline, with the packaged .crate files standing in for crates.io: builds and runs a downstream
# crate on kwire, kwire-client and kwire-proxy (it encodes and decodes a message, checks the api
# table and the client's partitioner and configs, starts a proxy and finds its listener), and
# builds the packaged kwire-cli and kwire-proxy binaries and runs `kwire apis` and
# `kwire-proxy --help`.
set -euo pipefail
cd "$(dirname "$0")/.."
shared=../shared/message-specs
releases=(kafka-3.9.0 kafka-4.4.0)

bundled=(LICENSE NOTICE "${releases[@]}")
cleanup() { for b in "${bundled[@]}"; do rm -rf "message-specs/$b"; done; }
trap cleanup EXIT
for b in "${bundled[@]}"; do cp -r "$shared/$b" message-specs/; done
crates=(kwire-runtime kwire-build kwire kwire-client kwire-fake kwire-proxy kwire-cli)
# --no-verify: the downstream builds below verify the packages, offline and in one target.
cargo package --workspace --allow-dirty --no-verify 2>&1 | grep -v '^warning: ignoring' || true
version=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"]=="kwire"))')
listed=$(tar -tzf "target/package/kwire-$version.crate")
for b in "${bundled[@]}"; do
  grep -q "^kwire-$version/message-specs/$b" <<<"$listed" || { echo "the package lacks message-specs/$b" >&2; exit 1; }
done

scratch=$(mktemp -d)
trap 'cleanup; rm -rf "$scratch"' EXIT
mkdir -p "$scratch/crates" "$scratch/downstream/src"
for c in "${crates[@]}"; do
  tar -xzf "target/package/$c-$version.crate" -C "$scratch/crates"
done
# One workspace for the downstream crate and the packaged binaries (one build of kwire for all),
# with the packaged crates standing in for crates.io.
{
  echo "[workspace]"
  echo "members = [\"downstream\", \"crates/kwire-cli-$version\", \"crates/kwire-proxy-$version\"]"
  echo "resolver = \"2\""
  echo "[patch.crates-io]"
  for c in "${crates[@]}"; do echo "$c = { path = \"crates/$c-$version\" }"; done
} >"$scratch/Cargo.toml"
cat > "$scratch/downstream/Cargo.toml" <<TOML
[package]
name = "downstream"
version = "0.0.0"
edition = "2021"

[dependencies]
kwire = { version = "$version", features = ["serde"] }
kwire-client = "$version"
kwire-proxy = "$version"
tokio = { version = "1", features = ["rt"] }
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

    // The client crate: its configs and Java's keyed partitioner.
    let producer = kwire_client::ProducerConfig::default();
    assert!(producer.idempotence, "Java's default: idempotent");
    let _client = kwire_client::ClientConfig::new("127.0.0.1:9092");
    let p = kwire_client::partitioner::partition_for_key(b"orders-1", 6);
    assert!((0..6).contains(&p));
    assert_eq!(p, kwire_client::partitioner::partition_for_key(b"orders-1", 6));
    println!("downstream: kwire-client, key orders-1 -> partition {p} of 6");

    // The proxy crate: a proxy started in-process lists its bootstrap listener.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    rt.block_on(async {
        let proxy = kwire_proxy::Proxy::start(kwire_proxy::Config::new("127.0.0.1:9")).await.expect("a proxy");
        assert_eq!(proxy.listeners(), vec![(proxy.bootstrap(), "127.0.0.1:9".to_string())]);
        println!("downstream: kwire-proxy listening on {}", proxy.bootstrap());
    });
}
RS
echo "== building a downstream crate and the packaged kwire-cli and kwire-proxy in $scratch (offline, no ../shared)"
(cd "$scratch" && env -u KWIRE_SPECS -u CARGO_TARGET_DIR cargo build --offline -q -p downstream -p kwire-cli -p kwire-proxy)
"$scratch/target/debug/downstream"
usage=$("$scratch/target/debug/kwire-proxy" --help)
grep -q -- '--upstream HOST:PORT' <<<"$usage" || { echo "kwire-proxy --help printed: $usage" >&2; exit 1; }
echo "kwire-proxy --help: $(head -1 <<<"$usage")"
"$scratch/target/debug/kwire" apis --json | python3 -c 'import json,sys; t=json.load(sys.stdin); assert len(t)==95, len(t); print("kwire apis:", len(t), "api keys")'

