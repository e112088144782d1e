#!/usr/bin/env bash
# The conformance sweep (tests/broker_real.rs) against real Apache Kafka brokers, one version at
# a time: start it with scripts/kafka.sh, run the sweep with the build whose specs match, stop
# it, print its table. The last lines, one per version:
#   broker sweep: <passed> of <exercised> api versions pass against Apache Kafka <version>
#
#   scripts/broker-sweep.sh [VERSION...]        (default: 3.9.2 4.4.0)
#
# The default build (Kafka 3.9.0 and 4.4.0 merged, in target/) speaks both lines, so one build
# sweeps both, and every version it knows that a broker does not advertise is checked to be
# refused. KWIRE_SWEEP_SPECS_3 / KWIRE_SWEEP_SPECS_4 sweep a line with other specs
# instead (each in target/sweep-<line>); with those set, KWIRE_SWEEP_CROSS=1 also checks
# the refusals with the other line's build. Unless set to 0: KWIRE_SWEEP_CLUSTER starts a
# 3-node cluster of the version for tests/broker_real.rs's three_node_cluster;
# KWIRE_SWEEP_PCAP captures Kafka's Java clients (the broker's and 2.8.2's), kcat and kafka-python against the broker and checks
# `kwire pcap` against tshark (cli/tests/pcap_interop.rs; needs root, tcpdump, tshark).
# Broker logs stay in target/kafka/<version>/ when something fails.
#
#   scripts/broker-sweep.sh --fake [RELEASE...]  (or KWIRE_SWEEP_FAKE=1; default: 3.9 4.0 4.4)
#
# sweeps kwire-fake instead: its binary imitating each release, set up as scripts/kafka.sh sets up
# a broker (PLAINTEXT and SASL_PLAINTEXT listeners, PLAIN users admin and alice, SCRAM user alice,
# the ACL authorizer with ANONYMOUS and admin as super users, a delegation token secret). The
# last lines, one per release:
#   broker sweep: <passed> of <exercised> api versions pass against kwire-fake <release>
# Its tables are target/broker-sweep/kwire-fake-<release>.txt, its logs beside them.
set -euo pipefail
cd "$(dirname "$0")/.."
fake=${KWIRE_SWEEP_FAKE:-0}
if [ "${1-}" = --fake ]; then fake=1; shift; fi

# fake_sweep RELEASE...: per release, starts kwire-fake imitating it (scripts/lib/fake.sh),
# runs the sweep against it and stops it.
fake_sweep() {
  # 2.8 by hand: a ZooKeeper-era broker advertises the inter-broker apis (LeaderAndIsr,
  # UpdateMetadata, ...) this client-side sweep has no request for.
  [ $# -gt 0 ] || set -- 3.9 4.0 4.4
  mkdir -p target/broker-sweep
  # The workspace build's binaries (nothing to build after `cargo test --workspace`; a narrower
  # cargo selection would compile kwire again): the sweep, and kwire-fake, which the workspace
  # builds for its own tests.
  . scripts/lib/testbins.sh
  test_bins_build target/broker-sweep/fake-build.log || { tail -40 target/broker-sweep/fake-build.log >&2; exit 1; }
  . scripts/lib/fake.sh
  trap fake_stop EXIT
  local summary=() status=0
  for release in "$@"; do
    local dir=target/kwire-fake/$release
    if ! fake_start "$release" "$dir"; then
      summary+=("broker sweep: kwire-fake $release did not start (see $dir)")
      status=1
      continue
    fi
    local log=target/broker-sweep/kwire-fake-$release.log
    if ! KWIRE_BROKER="$PWD/$dir/env" KWIRE_REQUIRE_BROKER=1 test_bin_exec kwire:broker_real --nocapture >"$log" 2>&1; then
      status=1
      grep -A30 "panicked" "$log" | head -40 || true
    fi
    fake_stop
    local table=target/broker-sweep/kwire-fake-$release.txt
    if [ -f "$table" ]; then
      echo "== kwire-fake $release"
      sed '$d' "$table"
      summary+=("$(tail -n1 "$table")")
    else
      tail -30 "$log"
      summary+=("broker sweep: no table for kwire-fake $release (see $log)")
    fi
  done
  printf '%s\n' "${summary[@]}"
  exit $status
}
if [ "$fake" = 1 ]; then fake_sweep "$@"; fi

[ $# -gt 0 ] || set -- 3.9.2 4.4.0

specs_for() {
  case $1 in
    3.*) echo "${KWIRE_SWEEP_SPECS_3-}" ;;
    *) echo "${KWIRE_SWEEP_SPECS_4-}" ;;
  esac
}
line_of() { case $1 in 3.*) echo 3 ;; *) echo 4 ;; esac; }
target_for() {
  if [ -n "$(specs_for "$1")" ]; then echo "target/sweep-$(line_of "$1")"; else echo "${CARGO_TARGET_DIR:-target}"; fi
}
other_line() { case $1 in 3.*) echo 4.0.0 ;; *) echo 3.0.0 ;; esac; }

# sweep VERSION SPEC_VERSION [refusals]: the test binary built for SPEC_VERSION's line.
# run_test NAME ARGS...: the root crate's test binary NAME (cli's for pcap_interop) with ARGS: with
# the default specs the binary of the workspace build (scripts/lib/testbins.sh), else cargo's
# build for the specs of the line.
run_test() {
  local name=$1 package=kwire
  shift
  [ "$name" != pcap_interop ] || package=kwire-cli
  if [ -n "${KWIRE_SPECS-}" ]; then
    nice -n 10 cargo test -p "$package" --test "$name" -- "$@"
  else
    test_bin_exec "$package:$name" "$@"
  fi
}

sweep() {
  local version=$1 line=$2 only=${3:-} specs suffix=""
  [ -n "$only" ] && suffix=-$only
  specs=$(specs_for "$line")
  (
    if [ -n "$specs" ]; then export KWIRE_SPECS=$specs; fi
    export CARGO_TARGET_DIR
    CARGO_TARGET_DIR=$(target_for "$line")
    if [ "$only" = pcap ]; then
      # An old release's Java clients too (2.8.2, from Maven Central; resolved once, cached).
      scripts/kafka.sh classpath 2.8.2 >/dev/null &&
        KWIRE_OLD_JAVA_LIB="$PWD/target/kafka/cache/2.8.2/lib" KWIRE_BROKER="$PWD/target/kafka/$version/env" KWIRE_REQUIRE_BROKER=1 \
          run_test pcap_interop against_real_kafka --nocapture >"target/broker-sweep/$version$suffix.log" 2>&1
    elif [ "$only" = cluster ]; then
      KWIRE_CLUSTER="$PWD/target/kafka/$version-cluster/env" KWIRE_REQUIRE_CLUSTER=1 \
        run_test broker_real three_node_cluster --nocapture >"target/broker-sweep/$version$suffix.log" 2>&1
    else
      KWIRE_BROKER="$PWD/target/kafka/$version/env" KWIRE_REQUIRE_BROKER=1 KWIRE_SWEEP_ONLY=$only \
        run_test broker_real --nocapture >"target/broker-sweep/$version$suffix.log" 2>&1
    fi
  )
}

mkdir -p target/broker-sweep
. scripts/lib/testbins.sh
if [ -z "${KWIRE_SWEEP_SPECS_3-}" ] || [ -z "${KWIRE_SWEEP_SPECS_4-}" ]; then
  test_bins_build target/broker-sweep/build.log || { tail -40 target/broker-sweep/build.log >&2; exit 1; }
fi
summary=()
status=0
running=""
trap '[ -n "$running" ] && scripts/kafka.sh stop $running >/dev/null 2>&1' EXIT
for version in "$@"; do
  t0=$SECONDS
  # A fresh broker each time, not one left running by hand with other state.
  scripts/kafka.sh stop "$version" >/dev/null 2>&1 || true
  if ! scripts/kafka.sh start "$version" >"target/broker-sweep/$version.start.log" 2>&1; then
    cat "target/broker-sweep/$version.start.log" >&2
    summary+=("broker sweep: Apache Kafka $version did not start (logs in target/kafka/$version)")
    status=1
    continue
  fi
  running=$version
  t1=$SECONDS
  rm -f "target/broker-sweep/$version.txt" "target/broker-sweep/$version-refusals.txt"
  ok=1
  sweep "$version" "$version" || ok=0
  t2=$SECONDS
  pcap="skipped (KWIRE_SWEEP_PCAP=0)"
  if [ "${KWIRE_SWEEP_PCAP:-1}" = 1 ]; then
    if sweep "$version" "$version" pcap; then
      pcap="Java clients (and 2.8.2's), kcat and kafka-python: kwire pcap agrees with tshark and with its Wireshark dissector"
    else
      ok=0
      pcap="FAILED: $(grep -A3 -E "panicked|^error" "target/broker-sweep/$version-pcap.log" | head -6)"
    fi
  fi
  t2p=$SECONDS
  if [ "${KWIRE_SWEEP_CROSS:-0}" = 1 ]; then
    sweep "$version" "$(other_line "$version")" refusals || ok=0
  fi
  scripts/kafka.sh stop "$version" >/dev/null 2>&1
  running=""
  t3=$SECONDS
  cluster="skipped (KWIRE_SWEEP_CLUSTER=0)"
  if [ "${KWIRE_SWEEP_CLUSTER:-1}" = 1 ]; then
    if scripts/kafka.sh start "$version" --nodes 3 >"target/broker-sweep/$version-cluster.start.log" 2>&1; then
      running="$version --nodes 3"
      if sweep "$version" "$version" cluster; then
        cluster=$(grep -o "3-node Kafka.*" "target/broker-sweep/$version-cluster.log" | head -1)
      else
        ok=0
        cluster="FAILED: $(grep -A3 panicked "target/broker-sweep/$version-cluster.log" | head -4)"
      fi
      scripts/kafka.sh stop "$version" --nodes 3 >/dev/null 2>&1
      running=""
    else
      ok=0
      cluster="FAILED to start (logs in target/kafka/$version-cluster): $(tail -5 "target/broker-sweep/$version-cluster.start.log")"
    fi
  fi
  echo "== Apache Kafka $version: broker up in $((t1 - t0)) s, sweep (with its build) $((t2 - t1)) s, pcap $((t2p - t2)) s, refusals $((t3 - t2p)) s, 3-node cluster $((SECONDS - t3)) s, all $((SECONDS - t0)) s"
  if [ -f "target/broker-sweep/$version.txt" ]; then
    sed '$d' "target/broker-sweep/$version.txt"
    line=$(tail -n1 "target/broker-sweep/$version.txt")
  else
    tail -30 "target/broker-sweep/$version.log"
    line="broker sweep: no table for Apache Kafka $version (see target/broker-sweep/$version.log)"
  fi
  if [ -f "target/broker-sweep/$version-refusals.txt" ]; then
    echo "-- refusals, with the build from the other release's specs:"
    cat "target/broker-sweep/$version-refusals.txt"
  fi
  echo "-- pcap: $pcap"
  echo "-- 3 nodes: $cluster"
  if [ $ok = 0 ]; then
    status=1
    grep -A30 "panicked" "target/broker-sweep/$version.log" | head -40 || true
    echo "(broker logs kept in target/kafka/$version)"
  fi
  summary+=("$line")
done
printf '%s\n' "${summary[@]}"
exit $status
