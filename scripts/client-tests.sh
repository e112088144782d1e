#!/usr/bin/env bash
# kwire-client's tests (client/tests/, unit tests, broker doubles) against real Apache
# Kafka brokers, one version at a time: build first, start the broker with scripts/kafka.sh,
# run the client's tests with KWIRE_BROKER set and KWIRE_REQUIRE_BROKER=1
# (so nothing skips), stop it. The last line sums every run:
#   client: <passed> passed, <failed> failed
#
#   scripts/client-tests.sh [--no-cluster] [VERSION...]   (default: 4.4.0; e.g. 4.4.0 3.9.2)
#
# Then, unless --no-cluster, a 3-node cluster of the first version for tests/cluster.rs and
# tests/consumer_cluster.rs (leaders on several brokers, a leader moved under the producer and
# under the consumer; leaders killed and restarted under an idempotent producer), with
# KWIRE_CLUSTER set.
#
# Logs: target/client-tests/<version>.log; broker logs stay in target/kafka/<version>/.
set -euo pipefail
cd "$(dirname "$0")/.."
cluster=1
if [ "${1-}" = --no-cluster ]; then cluster=0; shift; fi
[ $# -gt 0 ] || set -- 4.4.0
start=$SECONDS
mkdir -p target/client-tests

# The client's test targets (client/tests/*.rs), selected under --workspace: cargo then resolves
# features as `cargo test --workspace` does, so the generated crate built by that run serves
# these too (`-p kwire-client` alone would give it another feature set and compile it again).
# Its unit tests need no broker and run with the workspace's.
all_tests=()
for f in client/tests/*.rs; do
  name=$(basename "$f" .rs)
  for other in tests cli/tests codegen/tests protocol-runtime/tests proxy/tests; do
    # --workspace --test NAME would run another crate's test of the same name too.
    [ ! -e "$other/$name.rs" ] || { echo "client-tests: $other/$name.rs has a client test's name" >&2; exit 1; }
  done
  all_tests+=(--test "$name")
done

echo "client-tests: building" >&2
nice -n 10 cargo test --workspace "${all_tests[@]}" --example client --example exactly_once --no-run >target/client-tests/build.log 2>&1 || {
  tail -40 target/client-tests/build.log >&2
  echo "client: 0 passed, 1 failed"
  exit 1
}

prefix=client-tests limit=900 logs=target/client-tests
. scripts/lib/counted.sh
# run NAME LOG ENV... -- [--test NAME...]: the client crate's tests (all of them by default),
# `harness` passed to the harness.
run() {
  local name=$1 log=$2
  shift 2
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  [ $# -gt 0 ] || set -- "${all_tests[@]}"
  # shellcheck disable=SC2086
  counted "$name" "$log" "${envs[@]}" -- --workspace --no-fail-fast "$@" -- --nocapture ${harness-}
}

for version in "$@"; do
  t0=$SECONDS
  broker "$version" || { running=""; continue; }
  # The cluster tests have a run of their own below.
  harness="--skip three_nodes_routing_and_a_moved_leader --skip a_leader_change_during_consumption_skips_nothing" run "Kafka $version" "target/client-tests/$version.log" \
    KWIRE_BROKER="$PWD/target/kafka/$version/env" KWIRE_REQUIRE_BROKER=1 --
  scripts/kafka.sh stop "$version" >/dev/null 2>&1 || true
  running=""
  echo "client-tests: Kafka $version took $((SECONDS - t0))s" >&2
done
if [ "$cluster" = 1 ]; then
  t0=$SECONDS
  version=$1
  if broker "$version" --nodes 3; then
    run "Kafka $version, 3 nodes" "target/client-tests/$version-cluster.log" \
      KWIRE_CLUSTER="$PWD/target/kafka/$version-cluster/env" KWIRE_REQUIRE_CLUSTER=1 -- --test cluster --test consumer_cluster --test killed_broker
    scripts/kafka.sh stop "$version" --nodes 3 >/dev/null 2>&1 || true
  fi
  running=""
  echo "client-tests: Kafka $version, 3 nodes took $((SECONDS - t0))s" >&2
fi
echo "client-tests: $((SECONDS - start))s in all" >&2
echo "client: $passed passed, $failed failed"
exit $status
