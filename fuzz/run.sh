#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 60), one after another, and prints execs and
# crashes per target. Seeds the corpus from the schema-driven samples first (make-seeds).
# Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`). Not part of CI: the
# root crate's tests/fuzz_corpus.rs replays the same seeds and every saved crash on stable.
#   fuzz/run.sh 600            # ten minutes per target
#   JOBS=2 fuzz/run.sh 600     # two targets at a time
#   TARGETS="roundtrip" fuzz/run.sh 60
#   NO_BUILD=1 fuzz/run.sh 60  # reuse the last `cargo fuzz build`
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-60}
jobs=${JOBS:-1}
targets=${TARGETS:-$(cd fuzz_targets && ls *.rs | sed "s/\.rs$//")}
: "${KWIRE_SPECS:=$(cd .. && pwd)/../shared/message-specs/kafka-3.9.0}"
export KWIRE_SPECS

[ -n "${NO_BUILD:-}" ] || cargo +nightly fuzz build
# `fuzz build` builds every bin of the crate, make-seeds included; the targets are then run
# directly, as `cargo fuzz run` would after building.
bin=target/"$(rustc +nightly -vV | sed -n 's/^host: //p')"/release
"$bin/make-seeds" corpus
mkdir -p logs

run() {
  local t=$1
  mkdir -p "corpus/$t" "artifacts/$t"
  # -rss_limit_mb: a decode that needs more than 2 GiB is a finding; -timeout: so is one second.
  "$bin/$t" "corpus/$t" -artifact_prefix="artifacts/$t/" -max_total_time="$seconds" -rss_limit_mb=2048 \
    -timeout=10 -max_len=65536 -print_final_stats=1 >"logs/$t.log" 2>&1 || true
}

pids=()
for t in $targets; do
  run "$t" &
  pids+=($!)
  if [ "${#pids[@]}" -ge "$jobs" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
wait

status=0
printf '%-18s %12s %10s %8s\n' target execs exec/s crashes
for t in $targets; do
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "logs/$t.log" | grep -o '[0-9]*$' || echo '?')
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "logs/$t.log" | grep -o '[0-9]*$' || echo '?')
  crashes=$(find "artifacts/$t" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  printf '%-18s %12s %10s %8s\n' "$t" "${execs:-?}" "${rate:-?}" "$crashes"
  if [ "$crashes" -gt 0 ]; then status=1; fi
done
exit $status
