#!/usr/bin/env bash
# The producer and consumer benchmarks of two builds of kwire-client, interleaved round by
# round against the same broker: is a change slower? Each build is a directory holding
# `produce_bench` and `consume_bench` (target/release/examples of a checkout, built with
# `cargo build --release -p kwire-client --example produce_bench --example consume_bench`).
#
#   benches/client-ab.sh BOOTSTRAP A_DIR B_DIR [ROUNDS]     (default 5 rounds)
#
# Per round and build: the producer writes 1,000,000 records of 100 bytes (acks=all,
# idempotent, linger 5 ms, 64 KiB batches, lz4) into topic ab-produce; the consumer reads
# 1,000,000 records of topic ab-consume (written once, before the rounds, by A's producer with
# --round-robin). Which build goes first alternates by round. Prints one line per run (the
# program's own report, then wall, user, system seconds and peak RSS of the process) and the
# medians of each build.
set -euo pipefail
[ $# -ge 3 ] || { sed -n 2,14p "$0" >&2; exit 2; }
bootstrap=$1 a=$2 b=$3 rounds=${4:-5}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

timed() { # LOG COMMAND...: the command's output, then "time WALL USER SYS MAXRSS_KB"
  local log=$1
  shift
  timeout 300 /usr/bin/time -f 'time %e %U %S %M' "$@" >>"$log" 2>&1
}

timed "$out/setup" "$a/produce_bench" "$bootstrap" ab-consume 1000000 --round-robin
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) = 1 ]; then order="a b"; else order="b a"; fi
  for which in $order; do
    dir=$a
    [ "$which" = b ] && dir=$b
    timed "$out/produce-$which" "$dir/produce_bench" "$bootstrap" ab-produce 1000000
    timed "$out/consume-$which" "$dir/consume_bench" consume "$bootstrap" ab-consume 1000000
  done
  echo "round $r done ($(cut -d' ' -f1-3 /proc/loadavg) load)" >&2
done

python3 - "$out" <<'PY'
import os, re, statistics, sys
out = sys.argv[1]
for role in ("produce", "consume"):
    for which in ("a", "b"):
        text = open(os.path.join(out, f"{role}-{which}")).read()
        times = [tuple(map(float, m.groups())) for m in re.finditer(r"^time (\S+) (\S+) (\S+) (\S+)$", text, re.M)]
        rates = [float(m.group(1).replace(",", "")) for m in re.finditer(r"([\d.,]+) records/s", text)]
        def med(xs):
            return f"{statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})" if xs else "-"
        print(f"{role} {which}: records/s {med(rates)}; wall s {med([t[0] for t in times])}; "
              f"CPU s {med([t[1] + t[2] for t in times])}; peak RSS MiB {med([t[3] / 1024 for t in times])}; runs {len(times)}")
PY
