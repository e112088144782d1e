#!/usr/bin/env bash
# Instructions per operation for every benchmark operation of both crates, under
# `valgrind --tool=callgrind` (repeatable where wall-clock medians are not).
#
#   benches/callgrind.sh              # every operation
#   benches/callgrind.sh W1/decode    # operations whose id starts with W1/decode
#
# Each operation runs N+1 times and once (examples/bench_counts.rs `run`); the difference of the
# two totals divided by N is the cost of one operation, with setup (building the workload data)
# cancelled out. Needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind not found" >&2; exit 1; }
N=${N:-10}
cargo build --release --example bench_counts --quiet
bin=target/release/examples/bench_counts
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

total() { # op iterations -> instructions collected
    valgrind --tool=callgrind --callgrind-out-file="$out/cg" "$bin" run "$1" "$2" 2>&1 \
        | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

printf '%-34s %14s\n' operation instructions/op
for op in $("$bin" list); do
    [[ $op == ${1:-}* ]] || continue
    one=$(total "$op" 1)
    many=$(total "$op" $((N + 1)))
    printf '%-34s %14d\n' "$op" $(((many - one) / N))
done
