#!/usr/bin/env bash
# kafka-wire-client's tests (client/tests/, unit tests, broker doubles) against real Apache
# Kafka brokers, one version at a time: build first, start the broker with scripts/kafka.sh,
# run `cargo test -p kafka-wire-client` with KAFKA_WIRE_BROKER set and KAFKA_WIRE_REQUIRE_BROKER=1
# (so nothing skips), stop it. The last line sums every run:
#   client: <passed> passed, <failed> failed
#
#   scripts/client-tests.sh [VERSION...]      (default: 4.4.0; e.g. scripts/client-tests.sh 4.4.0 3.9.2)
#
# Logs: target/client-tests/<version>.log; broker logs stay in target/kafka/<version>/.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- 4.4.0
start=$SECONDS
mkdir -p target/client-tests
running=""
trap '[ -n "$running" ] && scripts/kafka.sh stop "$running" >/dev/null 2>&1' EXIT

echo "client-tests: building" >&2
nice -n 10 cargo test -p kafka-wire-client --no-run >target/client-tests/build.log 2>&1 || {
  tail -40 target/client-tests/build.log >&2
  echo "client: 0 passed, 1 failed"
  exit 1
}

passed=0 failed=0 status=0
for version in "$@"; do
  t0=$SECONDS
  running=$version
  if ! scripts/kafka.sh start "$version" >"target/client-tests/$version-broker.log" 2>&1; then
    tail -20 "target/client-tests/$version-broker.log" >&2
    echo "client-tests: Kafka $version did not start" >&2
    failed=$((failed + 1)) status=1 running=""
    continue
  fi
  log=target/client-tests/$version.log
  set +e
  KAFKA_WIRE_BROKER="$PWD/target/kafka/$version/env" KAFKA_WIRE_REQUIRE_BROKER=1 \
    timeout 900 nice -n 10 cargo test -p kafka-wire-client -- --nocapture >"$log" 2>&1
  rc=$?
  set -e
  scripts/kafka.sh stop "$version" >/dev/null 2>&1 || true
  running=""
  read -r p f < <(awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } } END { print p + 0, f + 0 }' "$log")
  p=${p:-0} f=${f:-0}
  if [ "$rc" != 0 ] && [ "$f" = 0 ]; then f=1; fi # a build or harness failure
  [ "$rc" = 0 ] || { status=1; grep -E -A15 '^failures:|panicked' "$log" | head -60 >&2; }
  echo "client-tests: Kafka $version: $p passed, $f failed in $((SECONDS - t0))s (log $log)" >&2
  passed=$((passed + p)) failed=$((failed + f))
done
echo "client-tests: $((SECONDS - start))s in all" >&2
echo "client: $passed passed, $failed failed"
exit $status
