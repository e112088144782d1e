#!/usr/bin/env bash
# Every test, as CI runs them:
#  1. the whole workspace on the default spec set (Kafka 3.9.0 and 4.3.0 merged), the
#     precompiled feature, and the generated crate on each release alone;
#  2. Apache Kafka's own generated Java classes as the oracle (scripts/java-oracle.sh);
#  3. real Apache Kafka brokers, 3.9 and 4.x, swept api by api (scripts/broker-sweep.sh), and
#     the client crate against them (scripts/client-tests.sh), and the proxy example between
#     real clients and them (scripts/proxy-tests.sh);
#  4. every Kafka release's specs from 2.4.0 on (scripts/releases.sh);
#  5. the packaged crate built downstream, offline (scripts/package.sh);
#  6. the benchmark peers (Kafka's Java classes, franz-go's kmsg) agreeing with kwire's
#     benchmark frames byte for byte (benches/peers-check.sh; needs Go too).
# Steps 2-5 need Java 17+, Maven and Maven Central (and root with tcpdump for the broker sweep's
# capture check); without them they are skipped with a line saying what is missing, unless
# KWIRE_REQUIRE_CLIENTS is set (CI sets it), which makes that a failure.
set -euo pipefail
cd "$(dirname "$0")/.."

shared=../shared/message-specs
step() { echo; echo "== $* ($(date -u +%H:%M:%S))"; }
missing() {
  if [ -n "${KWIRE_REQUIRE_CLIENTS:-}" ]; then echo "missing: $1" >&2; exit 1; fi
  echo "skipping: $1"
}
start=$SECONDS

step "the workspace on the default specs"
cargo test --workspace
step "the connection codec and dispatch with --features precompiled"
cargo test -p kwire --features precompiled --lib --test broker_codec --test tooling
for release in kafka-3.9.0 kafka-4.3.0; do
  step "the generated crate with KWIRE_SPECS=$shared/$release alone"
  KWIRE_SPECS="$shared/$release" cargo test -p kwire
done
echo "== cargo tests: $((SECONDS - start)) s"

if command -v java >/dev/null && command -v mvn >/dev/null; then
  t=$SECONDS
  step "Apache Kafka's Java classes as the oracle"
  KWIRE_JAVA_TARGET_DIR=target scripts/java-oracle.sh
  echo "== java oracle: $((SECONDS - t)) s"

  t=$SECONDS
  step "real Apache Kafka brokers"
  if [ "$(id -u)" != 0 ] || ! command -v tcpdump >/dev/null || ! command -v tshark >/dev/null; then
    missing "the broker sweep's capture check needs root, tcpdump and tshark"
    export KWIRE_SWEEP_PCAP=0
  fi
  scripts/broker-sweep.sh
  echo "== broker sweep: $((SECONDS - t)) s"

  t=$SECONDS
  step "kwire-client against real Apache Kafka brokers"
  scripts/client-tests.sh 4.4.0 3.9.2
  echo "== client: $((SECONDS - t)) s"

  t=$SECONDS
  step "the proxy example between real clients and real Apache Kafka brokers"
  scripts/proxy-tests.sh 4.4.0
  echo "== proxy: $((SECONDS - t)) s"

  t=$SECONDS
  step "every Kafka release's specs"
  scripts/releases.sh
  echo "== releases: $((SECONDS - t)) s"
else
  missing "Java 17+ and Maven (the Java oracle, the real brokers, every release's specs)"
fi

t=$SECONDS
step "the packaged crate, built downstream offline"
scripts/package.sh
echo "== package: $((SECONDS - t)) s"

if command -v go >/dev/null && command -v java >/dev/null && command -v mvn >/dev/null; then
  t=$SECONDS
  step "the benchmark peers on kwire's benchmark frames"
  benches/peers-check.sh
  echo "== peers: $((SECONDS - t)) s"
else
  missing "Go, Java 17+ and Maven (the benchmark peers' frame checks)"
fi
echo "== all tests: $((SECONDS - start)) s"
