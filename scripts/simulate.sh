#!/usr/bin/env bash
# The deterministic simulation (client/tests/simulation.rs) over a range of seeds, on every
# core: the range is split into one slice per core, each slice run by its own process through
# every seed (KWIRE_SIM_KEEP_GOING), and the failing seeds listed at the end, each with the
# command that replays it. Optimised build (`--release`), so a million seeds is an overnight run.
#
#   scripts/simulate.sh [FIRST..END] [TEST_FILTER]      (default 0..100000, every scenario)
set -uo pipefail
cd "$(dirname "$0")/.."
range=${1:-0..100000} filter=${2:-}
first=${range%..*} end=${range#*..}
jobs=$(nproc 2>/dev/null || echo 2)
logs=target/simulate
mkdir -p "$logs"
echo "simulate: building (release)" >&2
cargo test --release -q -p kwire-client --test simulation --no-run 2>"$logs/build.log" || { tail -30 "$logs/build.log" >&2; exit 1; }
start=$SECONDS
pids=()
step=$(((end - first + jobs - 1) / jobs))
for ((j = 0; j < jobs; j++)); do
  a=$((first + j * step)) b=$((first + (j + 1) * step))
  [ $b -gt "$end" ] && b=$end
  [ $a -ge $b ] && continue
  KWIRE_SIM_SEEDS=$a..$b KWIRE_SIM_KEEP_GOING=1 cargo test --release -q -p kwire-client --test simulation -- --nocapture --test-threads 1 $filter >"$logs/slice-$j.log" 2>&1 &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
grep -h "seeds in" "$logs"/slice-*.log
failed=$(grep -h "seed [0-9]* failed" "$logs"/slice-*.log)
if [ -n "$failed" ]; then
  echo "$failed"
  echo "replay one: KWIRE_SIM_SEED=N RUST_LOG=kwire_client::producer=trace cargo test -p kwire-client --test simulation NAME -- --nocapture"
fi
echo "simulate: seeds $range in $((SECONDS - start)) s on $jobs processes"
exit $rc
