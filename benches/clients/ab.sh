#!/usr/bin/env bash
# Two builds of the kwire benchmark program side by side (BENCHMARKS.md, "Clients side by
# side", third run): the same topic, runs interleaved (which goes first alternates), each run's
# count and digest checked, CPU (user + system) and minor page faults from /usr/bin/time, and
# the run's own seconds (its timed phase).
#
#   benches/clients/ab.sh A B ROLE SIZE CODEC COUNT [ROUNDS [RATE]]
#   e.g. ab.sh /tmp/kwire.before benches/clients/target/release/kwire consume 100 lz4 1000000 5
#   RATE: produce at that many records/s (0, the default: as fast as it goes).
#
# A and B are copies of benches/clients/target/release/kwire built from two commits. Uses the
# broker of scripts/kafka.sh (4.4.0 unless KWIRE_BENCH_KAFKA), which must be running. Prints one
# line per run and the medians.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
a=${1:?build A} b=${2:?build B} role=${3:?produce or consume} size=${4:?} codec=${5:?} count=${6:?}
rounds=${7:-5} rate=${8:-0}
env=$root/target/kafka/${KWIRE_BENCH_KAFKA:-4.4.0}/env
[ -f "$env" ] || { echo "ab.sh: no broker ($env); scripts/kafka.sh start 4.4.0" >&2; exit 1; }
bootstrap=$(sed -n 's/^BOOTSTRAP=//p' "$env")
stamp=$(date +%s)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

topic() { # name: a 6-partition topic, replication 1
  "$a" create "$bootstrap" "$1" 6 1 >/dev/null
}
run() { # label binary args...: one timed run, its line printed
  local label=$1 bin=$2; shift 2
  /usr/bin/time -o "$out/time" -f "%U %S %R" "$bin" "$@" >"$out/stdout"
  local result; result=$(grep '^RESULT' "$out/stdout")
  local count digest; count=$(sed 's/.* count=\([0-9]*\).*/\1/' <<<"$result"); digest=$(sed 's/.* digest=\([0-9a-f]*\).*/\1/' <<<"$result")
  [ "$count" = "$want_count" ] || { echo "ab.sh: $label read or wrote $count records, not $want_count" >&2; exit 1; }
  if [ -z "${want_digest:-}" ]; then want_digest=$digest; fi
  [ "$digest" = "$want_digest" ] || { echo "ab.sh: $label digest $digest, not $want_digest" >&2; exit 1; }
  read -r user sys faults <"$out/time"
  local cpu; cpu=$(python3 -c "print(round(($user + $sys) * 1000))")
  local secs; secs=$(sed 's/.* secs=\([0-9.]*\).*/\1/' <<<"$result")
  echo "$label cpu_ms=$cpu faults=$faults secs=$secs"
  echo "$label $cpu $faults $secs" >>"$out/all"
}

want_count=$count want_digest=
if [ "$role" = consume ]; then
  data=ab-$size-$codec-$stamp
  topic "$data"
  "$a" produce "$bootstrap" "$data" "$count" "$size" "$codec" all 0 >/dev/null
fi
for r in $(seq "$rounds"); do
  order=(A B); [ $((r % 2)) = 0 ] && order=(B A)
  for label in "${order[@]}"; do
    bin=$a; [ "$label" = B ] && bin=$b
    if [ "$role" = consume ]; then
      run "$label" "$bin" consume "$bootstrap" "$data" "$count" "$size" 6
    else
      t=ab-p-$size-$codec-$label-$r-$stamp
      topic "$t"
      # A topic just created may take a moment to reach the broker's metadata.
      sleep 2
      run "$label" "$bin" produce "$bootstrap" "$t" "$count" "$size" "$codec" all "$rate"
      "$a" delete "$bootstrap" "$t" >/dev/null
    fi
  done
done
[ "$role" = consume ] && "$a" delete "$bootstrap" "$data" >/dev/null
python3 - "$out/all" "$role $size $codec" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for label in ("A", "B"):
    cpu = [int(r[1]) for r in rows if r[0] == label]
    faults = [int(r[2]) for r in rows if r[0] == label]
    secs = [float(r[3]) for r in rows if r[0] == label]
    print(f"{sys.argv[2]} {label}: CPU ms median {statistics.median(cpu):.0f} ({min(cpu)}-{max(cpu)}), "
          f"wall s median {statistics.median(secs):.3f} ({min(secs):.3f}-{max(secs):.3f}), "
          f"page faults median {statistics.median(faults):.0f}")
EOF
