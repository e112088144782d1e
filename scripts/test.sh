#!/usr/bin/env bash
# Every test, as CI runs them, on a fresh machine as on a developer's:
#  0. scripts/setup.sh installs what is missing (Debian and Python packages);
#  1. the whole workspace on the default spec set (Kafka 3.9.0 and 4.4.0 merged), and the
#     precompiled feature;
#  2. Apache Kafka's own generated Java classes as the oracle for the default build, against
#     kafka-clients 3.9.2 and 4.4.0 (scripts/java-oracle.sh);
#  3. real Apache Kafka brokers, 3.9 and 4.x, swept api by api (scripts/broker-sweep.sh), the
#     client crate against them (scripts/client-tests.sh), also through the fault-injecting
#     proxy, and the kwire-proxy crate between real clients and them (scripts/proxy-tests.sh);
#  4. the benchmark peers (Kafka's Java classes, franz-go's kmsg) agreeing with kwire's
#     benchmark frames byte for byte (benches/peers-check.sh; needs Go); the client benchmark's
#     checks: kwire-client, confluent-kafka, rdkafka, franz-go and Java each produce and consume
#     against a real broker, every count and digest the same (benches/clients/check.sh);
#  5. the generated crate on Kafka 3.9.0 alone and 4.4.0 alone, each with the oracle of its own
#     kafka-clients (every stage before this one uses the default build; each spec set is then
#     compiled once, in the same target directory, so the dependencies are not built again);
#  6. every Kafka release's specs from 2.4.0 on (scripts/releases.sh);
#  7. the packaged crates built downstream, offline (scripts/package.sh), the docs of every
#     crate without a warning, `cargo fmt --check` and clippy on every target with warnings
#     denied.
# Every stage runs even when an earlier one failed; a table of each stage's seconds and outcome
# closes the run, then the tests that could not run and why, and `stages: N passed, M failed`.
# A tool that cannot be had makes its tests skip with a reason (listed at the end), unless
# KWIRE_REQUIRE_CLIENTS is set (CI sets it), which makes it a failure.
set -uo pipefail
cd "$(dirname "$0")/.."

shared=../shared/message-specs
# CI's build settings (no debug info, no incremental state), also when run by hand: the scripts
# below build the workspace's test binaries with them (scripts/lib/testbins.sh), and a build
# with other settings would be a second one beside it.
export CARGO_PROFILE_DEV_DEBUG=${CARGO_PROFILE_DEV_DEBUG:-0} CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
[ -d /usr/local/go/bin ] && export PATH="/usr/local/go/bin:$PATH"
mkdir -p target
# Tests that skip for a missing tool append "test: reason" here (see tests/support/skip.rs).
export KWIRE_SKIP_LOG=$PWD/target/skipped.txt
: >"$KWIRE_SKIP_LOG"

names=() secs=() results=()
# stage NAME COMMAND...: runs one stage, timed, and records its outcome.
stage() {
  local name=$1 t=$SECONDS rc=0
  shift
  echo
  echo "== $name ($(date -u +%H:%M:%S))"
  "$@" || rc=$?
  names+=("$name") secs+=($((SECONDS - t)))
  if [ $rc = 0 ]; then results+=(ok); else results+=("FAILED (exit $rc)"); fi
  echo "== $name: $((SECONDS - t)) s"
}
# skip NAME REASON: a stage that cannot run here.
skip() {
  if [ -n "${KWIRE_REQUIRE_CLIENTS:-}" ]; then
    names+=("$1") secs+=(0) results+=("FAILED (missing: $2)")
  else
    names+=("$1") secs+=(0) results+=("skipped")
    echo "$1: $2" >>"$KWIRE_SKIP_LOG"
  fi
}
have() { command -v "$1" >/dev/null; }

# One single-spec-set stage: the generated crate's tests that walk every message it was built
# with, and the Java oracle, both with the same KWIRE_SPECS and target directory, so the set is
# compiled once (a subshell: the settings stay in it). The kwire-fake, kcat and kafka-python,
# allocation, fuzz-corpus and kafka-protocol tests ran on the default build; they test the
# runtime and the codec, not which specs were generated.
single_release() (
  local release=$1 clients=$2 rc=0
  export KWIRE_SPECS=$shared/kafka-$release
  # Not the borrowed views' differential check (a minute here; views are an opt-in feature
  # checked on the default build, every version from v0).
  local walks=(roundtrip json errors endpoints golden tooling version_prefixed java_oracle)
  # --workspace: a narrower selection (-p kwire) resolves the dependencies' features anew, and
  # compiled tokio, clap, serde and the rest a second time.
  nice cargo test --workspace "${walks[@]/#/--test=}" || rc=1
  if have java && have mvn; then
    KWIRE_JAVA_VERSIONS="$clients=$KWIRE_SPECS" KWIRE_JAVA_TARGET_DIR=target scripts/java-oracle.sh || rc=1
  fi
  exit $rc
)

start=$SECONDS
stage "setup (installs what is missing)" scripts/setup.sh
stage "workspace, default specs" cargo test --workspace
# The simulation (left out of `cargo test`): the client and the fake optimised, which only this
# test needs, so the workspace's other test crates compile unoptimised.
stage "simulation, client and fake optimised" cargo test --workspace --test simulation \
  --config 'profile.dev.package.kwire-client.opt-level=1' \
  --config 'profile.dev.package.kwire-fake.opt-level=1'
# The stages that run a test binary or example of the default build take the workspace's own
# (scripts/lib/testbins.sh) rather than a narrower `cargo` selection that compiles kwire again.
export KWIRE_WORKSPACE_BINS=1
# The two test binaries that reach the precompiled dispatch (not the lib's own unit tests, which
# would compile the whole crate a second time, as a test harness, for four tests of the codec's
# framing that the workspace stage ran). --workspace keeps the workspace's feature resolution,
# so that only kwire compiles again.
stage "precompiled feature" \
  cargo test --workspace --features kwire/precompiled --test broker_codec --test tooling

if have java && have mvn; then
  stage "java oracle, default build" env KWIRE_JAVA_VERSIONS="3.9.2=default 4.4.0=default" KWIRE_JAVA_TARGET_DIR=target \
    scripts/java-oracle.sh
  if [ "$(id -u)" != 0 ] || ! have tcpdump || ! have tshark; then
    skip "broker sweep: capture check" "needs root, tcpdump and tshark"
    export KWIRE_SWEEP_PCAP=0
  fi
  stage "broker sweep, 3.9.2 and 4.4.0" scripts/broker-sweep.sh
  stage "client, 4.4.0 and 3.9.2" scripts/client-tests.sh 4.4.0 3.9.2
  stage "proxy, 4.4.0" scripts/proxy-tests.sh 4.4.0
else
  for s in "java oracle" "broker sweep" "client" "proxy"; do skip "$s" "Java 17+ and Maven"; done
fi
# The same sweep against kwire-fake imitating each release: every api version it advertises
# answered as Kafka would (after the real sweep, whose build it reuses).
stage "broker sweep against kwire-fake" scripts/broker-sweep.sh --fake
if have go && have java && have mvn; then
  stage "benchmark peers' frames" benches/peers-check.sh
else
  skip "benchmark peers' frames" "Go, Java 17+ and Maven"
fi
if have go && have java && have mvn && have cmake; then
  stage "client benchmark checks (5 clients)" benches/clients/check.sh
else
  skip "client benchmark checks" "Go, Java 17+, Maven and cmake"
fi
if have java && have mvn; then
  stage "every release's specs" scripts/releases.sh
else
  skip "every release's specs" "Java 17+ and Maven (the kafka-clients jars)"
fi
stage "package, built downstream offline" scripts/package.sh
stage "docs without warnings" env RUSTDOCFLAGS="-D warnings" cargo doc -q --no-deps --workspace
stage "format" cargo fmt --all --check
# After the docs, whose dependency metadata it reuses: only the workspace's crates are linted.
# (`--all-targets` selects the tests `cargo test` runs: the simulation is named.)
stage "clippy, every target" cargo clippy -q --workspace --all-targets --test simulation -- -D warnings
# Last: each rebuilds kwire in target/ with its own specs, which a later stage using the
# default build would compile back.
stage "kafka 3.9.0 alone (+ oracle 3.9.2)" single_release 3.9.0 3.9.2
stage "kafka 4.4.0 alone (+ oracle 4.4.0)" single_release 4.4.0 4.4.0

echo
echo "== stages (seconds)"
failed=0
for i in "${!names[@]}"; do
  printf '%6s s  %-45s %s\n' "${secs[$i]}" "${names[$i]}" "${results[$i]}"
  case ${results[$i]} in FAILED*) failed=$((failed + 1)) ;; esac
done
printf '%6s s  %s\n' $((SECONDS - start)) "all"
if [ -s "$KWIRE_SKIP_LOG" ]; then
  echo
  echo "== did not run here (install what scripts/setup.sh installs, as root):"
  sort -u "$KWIRE_SKIP_LOG" | sed 's/^/  /'
fi
echo "stages: $((${#names[@]} - failed)) passed, $failed failed"
[ $failed = 0 ]
