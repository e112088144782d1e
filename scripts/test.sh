#!/usr/bin/env bash
# Runs every test: the whole workspace against the default spec set (Kafka 3.9.0), then the
# generated crate again against the Kafka trunk snapshot and against both releases merged, as
# CI does.
set -euo pipefail
cd "$(dirname "$0")/.."

shared=../shared/message-specs
cargo test --workspace
echo "== the connection codec and dispatch with --features precompiled"
cargo test -p kafka-wire --features precompiled --lib --test broker_codec --test tooling

if [ -d "$shared/kafka-trunk-2025-02-14" ]; then
  echo "== again with KAFKA_WIRE_SPECS=$shared/kafka-trunk-2025-02-14"
  KAFKA_WIRE_SPECS="$shared/kafka-trunk-2025-02-14" cargo test -p kafka-wire
  echo "== again with both releases merged: KAFKA_WIRE_SPECS=3.9.0:trunk"
  KAFKA_WIRE_SPECS="$shared/kafka-3.9.0:$shared/kafka-trunk-2025-02-14" cargo test -p kafka-wire
fi
