# Sourced by the scripts that run tests against real brokers (client-tests.sh,
# proxy-tests.sh): one way to run test binaries, count their results and start a broker.
# The caller sets `prefix` (for messages), `limit` (seconds a binary may take), `logs` (a
# directory) and may set `jobs` (binaries side by side, 1 by default); the totals are in
# `passed`, `failed` and `status`, and `running` names the broker to stop on exit.
passed=0 failed=0 status=0 running=""
trap '[ -n "$running" ] && scripts/kafka.sh stop $running >/dev/null 2>&1' EXIT
. scripts/lib/testbins.sh

# counted NAME LOG ENV... -- SPEC... [-- ARGS...]: test binaries (testbins.sh), their counts
# added to the totals.
counted() {
  local name=$1 log=$2 rc p f
  shift 2
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  set +e
  (
    for e in "${envs[@]}"; do export "${e?}"; done
    test_bins_run "${jobs:-1}" "$log" "$@"
  )
  rc=$?
  set -e
  read -r p f < <(awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } } END { print p + 0, f + 0 }' "$log")
  if [ "$rc" != 0 ] && [ "$f" = 0 ]; then f=1; fi # a build or harness failure
  [ "$rc" = 0 ] || { status=1; grep -E -A15 '^failures:|panicked' "$log" | head -60 >&2; }
  echo "$prefix: $name: $p passed, $f failed (log $log)" >&2
  passed=$((passed + p)) failed=$((failed + f))
}

# broker VERSION [--nodes 3]: starts it with scripts/kafka.sh or counts a failure.
broker() {
  running="$*"
  local log="$logs/$1${2:+-cluster}-broker.log"
  if ! scripts/kafka.sh start "$@" >"$log" 2>&1; then
    tail -20 "$log" >&2
    echo "$prefix: Kafka $* did not start" >&2
    failed=$((failed + 1)) status=1
    return 1
  fi
}
