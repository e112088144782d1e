#!/usr/bin/env bash
# kwire-client's tests (client/tests/) and the kwire tool's (cli/tests/) against real Apache Kafka brokers, one version at a
# time: build first, start the broker with scripts/kafka.sh,
# run the client's tests with KWIRE_BROKER set and KWIRE_REQUIRE_BROKER=1
# (so nothing skips), stop it. The last line sums every run:
#   client: <passed> passed, <failed> failed
#
#   scripts/client-tests.sh [--no-cluster] [VERSION...]   (default: 4.4.0; e.g. 4.4.0 3.9.2)
#
# Then, unless --no-cluster, a 3-node cluster of the first version for the `cluster` test
# binary (client/tests/cluster/: leaders on several brokers, a leader moved under the producer
# and under the consumer; leaders killed and restarted under an idempotent producer; fetching
# from the follower in the consumer's rack, KIP-392; exactly-once with an output leader and the
# transaction coordinator killed; the protocol by transaction.version), with KWIRE_CLUSTER set.
#
# Logs: target/client-tests/<version>.log; broker logs stay in target/kafka/<version>/.
set -euo pipefail
cd "$(dirname "$0")/.."
cluster=1
if [ "${1-}" = --no-cluster ]; then cluster=0; shift; fi
[ $# -gt 0 ] || set -- 4.4.0
start=$SECONDS
mkdir -p target/client-tests

prefix=client-tests limit=900 logs=target/client-tests
# Broker tests mostly wait (for sessions, rebalances, faults): three binaries side by side, each
# running three of its tests at a time.
jobs=${KWIRE_TEST_JOBS:-3}
threads=${KWIRE_TEST_THREADS:-3}
test_bins_durations=$logs/durations
# A fresh checkout has no earlier run to order by: the times of one, so that the slowest
# binaries start first and the last to finish are short ones.
[ -s "$test_bins_durations" ] || grep -v '^#' scripts/lib/client-test-seconds >"$test_bins_durations"
. scripts/lib/counted.sh

# The test binaries that talk to a broker: kwire-client's areas (client/tests/<area>/) and
# single files (client/tests/*.rs), and the `kwire` tool's cli/tests/*.rs, that name the
# variables pointing them at one. The others (unit tests, broker doubles, the hostile broker)
# need none and run with the workspace's tests: `cargo test --workspace`.
talks_to_broker='from_env\|KWIRE_CLUSTER\|KWIRE_REQUIRE_BROKER\|KWIRE_BROKER'
all_tests=()
for t in client/tests/*/main.rs client/tests/*.rs; do
  [ "$t" = "${t%/main.rs}" ] && name=$(basename "$t" .rs) || { t=$(dirname "$t"); name=$(basename "$t"); }
  grep -rlq "$talks_to_broker" "$t" && all_tests+=("kwire-client:$name")
done
# (cli/tests/pcap_interop.rs captures traffic as root; scripts/broker-sweep.sh runs it.)
for f in $(grep -l "$talks_to_broker" cli/tests/*.rs); do
  [ "$(basename "$f")" = pcap_interop.rs ] || all_tests+=("kwire-cli:$(basename "$f" .rs)")
done
# Run alone, after the others: the faulty-network test's timing (request timeouts, delivery
# timeouts) is what it exercises, and binaries side by side change it. The 3-node cluster's
# binary has a run of its own below.
alone=(kwire-client:fault_network)
side_by_side=()
for t in "${all_tests[@]}"; do
  [[ " ${alone[*]} kwire-client:cluster " == *" $t "* ]] || side_by_side+=("$t")
done

echo "client-tests: building" >&2
test_bins_build target/client-tests/build.log || {
  tail -40 target/client-tests/build.log >&2
  echo "client: 0 passed, 1 failed"
  exit 1
}

# run NAME LOG ENV... -- [SPEC...]: the client crate's test binaries (all of them by default),
# `harness` passed to the harness.
run() {
  local name=$1 log=$2
  shift 2
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  [ $# -gt 0 ] || set -- "${all_tests[@]}"
  # shellcheck disable=SC2086
  counted "$name" "$log" "${envs[@]}" -- "$@" -- --nocapture ${harness-}
}

for version in "$@"; do
  t0=$SECONDS
  broker "$version" || { running=""; continue; }
  harness="--test-threads $threads" run "Kafka $version" "target/client-tests/$version.log" \
    KWIRE_BROKER="$PWD/target/kafka/$version/env" KWIRE_REQUIRE_BROKER=1 -- "${side_by_side[@]}"
  run "Kafka $version, alone" "target/client-tests/$version-alone.log" \
    KWIRE_BROKER="$PWD/target/kafka/$version/env" KWIRE_REQUIRE_BROKER=1 -- "${alone[@]}"
  # And once more with a seed of the day (each version its own): over the days CI goes through
  # many fault schedules. A failure names its seed; replay it with KWIRE_FAULT_SEED.
  rotating=$(( $(date -u +%s) / 86400 * 2 + ${version%%.*} ))
  echo "client-tests: the faulty network with today's seed $rotating" >&2
  run "Kafka $version, alone, seed $rotating" "target/client-tests/$version-alone-$rotating.log" \
    KWIRE_BROKER="$PWD/target/kafka/$version/env" KWIRE_REQUIRE_BROKER=1 KWIRE_FAULT_SEED=$rotating -- "${alone[@]}"
  scripts/kafka.sh stop "$version" >/dev/null 2>&1 || true
  running=""
  echo "client-tests: Kafka $version took $((SECONDS - t0))s" >&2
done
if [ "$cluster" = 1 ]; then
  t0=$SECONDS
  version=$1
  # One test at a time: killed_broker and rack stop brokers the others are using.
  jobs=1 harness="--test-threads 1"
  if broker "$version" --nodes 3; then
    run "Kafka $version, 3 nodes" "target/client-tests/$version-cluster.log" \
      KWIRE_CLUSTER="$PWD/target/kafka/$version-cluster/env" KWIRE_REQUIRE_CLUSTER=1 -- kwire-client:cluster
    scripts/kafka.sh stop "$version" --nodes 3 >/dev/null 2>&1 || true
  fi
  running=""
  echo "client-tests: Kafka $version, 3 nodes took $((SECONDS - t0))s" >&2
fi
echo "client-tests: $((SECONDS - start))s in all" >&2
echo "client: $passed passed, $failed failed"
exit $status
