#!/usr/bin/env bash
# Runs every test: the whole workspace on the default spec set (Kafka 3.9.0 and 4.3.0 merged),
# the precompiled feature, then the generated crate again on each release alone, as CI does.
set -euo pipefail
cd "$(dirname "$0")/.."

shared=../shared/message-specs
cargo test --workspace
echo "== the connection codec and dispatch with --features precompiled"
cargo test -p kafka-wire --features precompiled --lib --test broker_codec --test tooling

for release in kafka-3.9.0 kafka-4.3.0; do
  echo "== again with KAFKA_WIRE_SPECS=$shared/$release alone"
  KAFKA_WIRE_SPECS="$shared/$release" cargo test -p kafka-wire
done
