#!/usr/bin/env bash
# kafka-wire-client's tests (client/tests/, unit tests, broker doubles) against real Apache
# Kafka brokers, one version at a time: build first, start the broker with scripts/kafka.sh,
# run `cargo test -p kafka-wire-client` with KAFKA_WIRE_BROKER set and KAFKA_WIRE_REQUIRE_BROKER=1
# (so nothing skips), stop it. The last line sums every run:
#   client: <passed> passed, <failed> failed
#
#   scripts/client-tests.sh [--no-cluster] [VERSION...]   (default: 4.4.0; e.g. 4.4.0 3.9.2)
#
# Then, unless --no-cluster, a 3-node cluster of the first version for tests/cluster.rs and
# tests/consumer_cluster.rs (leaders on several brokers, a leader moved under the producer and
# under the consumer), with KAFKA_WIRE_CLUSTER set.
#
# Logs: target/client-tests/<version>.log; broker logs stay in target/kafka/<version>/.
set -euo pipefail
cd "$(dirname "$0")/.."
cluster=1
if [ "${1-}" = --no-cluster ]; then cluster=0; shift; fi
[ $# -gt 0 ] || set -- 4.4.0
start=$SECONDS
mkdir -p target/client-tests
running=""
trap '[ -n "$running" ] && scripts/kafka.sh stop $running >/dev/null 2>&1' EXIT

echo "client-tests: building" >&2
nice -n 10 cargo test -p kafka-wire-client --no-run >target/client-tests/build.log 2>&1 || {
  tail -40 target/client-tests/build.log >&2
  echo "client: 0 passed, 1 failed"
  exit 1
}

passed=0 failed=0 status=0
# run NAME LOG ENV... -- CARGO_ARGS...: one cargo test run, its counts added to the totals.
run() {
  local name=$1 log=$2 rc p f
  shift 2
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  set +e
  env "${envs[@]}" timeout 900 nice -n 10 cargo test -p kafka-wire-client --no-fail-fast "$@" -- --nocapture ${harness-} >"$log" 2>&1
  rc=$?
  set -e
  read -r p f < <(awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } } END { print p + 0, f + 0 }' "$log")
  if [ "$rc" != 0 ] && [ "$f" = 0 ]; then f=1; fi # a build or harness failure
  [ "$rc" = 0 ] || { status=1; grep -E -A15 '^failures:|panicked' "$log" | head -60 >&2; }
  echo "client-tests: $name: $p passed, $f failed (log $log)" >&2
  passed=$((passed + p)) failed=$((failed + f))
}

# broker VERSION [--nodes 3]: starts it (the env file path on stdout) or counts a failure.
broker() {
  running="$*"
  local log="target/client-tests/$1${2:+-cluster}-broker.log"
  if ! scripts/kafka.sh start "$@" >"$log" 2>&1; then
    tail -20 "$log" >&2
    echo "client-tests: Kafka $* did not start" >&2
    failed=$((failed + 1)) status=1
    return 1
  fi
}

for version in "$@"; do
  t0=$SECONDS
  broker "$version" || { running=""; continue; }
  # The cluster tests have a run of their own below.
  harness="--skip three_nodes_routing_and_a_moved_leader --skip a_leader_change_during_consumption_skips_nothing" run "Kafka $version" "target/client-tests/$version.log" \
    KAFKA_WIRE_BROKER="$PWD/target/kafka/$version/env" KAFKA_WIRE_REQUIRE_BROKER=1 --
  scripts/kafka.sh stop "$version" >/dev/null 2>&1 || true
  running=""
  echo "client-tests: Kafka $version took $((SECONDS - t0))s" >&2
done
if [ "$cluster" = 1 ]; then
  t0=$SECONDS
  version=$1
  if broker "$version" --nodes 3; then
    run "Kafka $version, 3 nodes" "target/client-tests/$version-cluster.log" \
      KAFKA_WIRE_CLUSTER="$PWD/target/kafka/$version-cluster/env" KAFKA_WIRE_REQUIRE_CLUSTER=1 -- --test cluster --test consumer_cluster
    scripts/kafka.sh stop "$version" --nodes 3 >/dev/null 2>&1 || true
  fi
  running=""
  echo "client-tests: Kafka $version, 3 nodes took $((SECONDS - t0))s" >&2
fi
echo "client-tests: $((SECONDS - start))s in all" >&2
echo "client: $passed passed, $failed failed"
exit $status
