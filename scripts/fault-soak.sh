#!/usr/bin/env bash
# The faulty-network test (client/tests/fault_network.rs) over many seeds against real brokers:
# kwire's idempotent producer and Java's, the same faults and settings, side by side, each run
# audited by Java's consumer reading the log back. Prints one row per seed, version and client,
# then a table per version and client (the README's reliability section holds one):
#
#   scripts/fault-soak.sh [--seeds FIRST..END] [--versions "3.9.2 4.4.0"] [--no-java] [--cluster RUNS] [--out FILE]
#
# Defaults: seeds 1..21, both versions, Java beside kwire. --cluster RUNS also runs the 3-node
# test that kills and restarts leaders under an idempotent producer
# (client/tests/cluster/killed_broker.rs) RUNS times on each version. Rows go to FILE
# (target/fault-soak/results.tsv): client, version, seed, sent, acked, failed, in_log,
# duplicated, lost, moved, out_of_order, produced_s, recovered_s,
# faults. A run is never retried: a failing seed is a bug report (replay it with
# KWIRE_FAULT_SEED=N and RUST_LOG=kwire_client::producer=trace).
#
# A seed whose faults missed the run (fewer than 5 struck; the test says so) is counted apart, as
# uninformative, not as a guarantee broken. Exits 1 if any
# run duplicated, lost, moved or reordered an acknowledged record, or failed otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."

seeds=1..21 versions="3.9.2 4.4.0" java=1 cluster=0 out=target/fault-soak/results.tsv
while [ $# -gt 0 ]; do
  case $1 in
    --seeds) seeds=${2:?}; shift 2 ;;
    --versions) versions=${2:?}; shift 2 ;;
    --no-java) java=0; shift ;;
    --cluster) cluster=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    *) echo "usage: $0 [--seeds FIRST..END] [--versions \"3.9.2 4.4.0\"] [--no-java] [--cluster RUNS] [--out FILE]" >&2; exit 2 ;;
  esac
done
first=${seeds%..*} end=${seeds#*..}
logs=$(dirname "$out")
mkdir -p "$logs"
. scripts/lib/testbins.sh

echo "fault-soak: building" >&2
test_bins_build "$logs/build.log" || { tail -30 "$logs/build.log" >&2; exit 1; }
bin=$(test_bin kwire-client:fault_network) || { echo "no fault_network test binary" >&2; exit 1; }
killed=$(test_bin kwire-client:cluster) || killed=

printf 'client\tversion\tseed\tsent\tacked\tfailed\tin_log\tduplicated\tlost\tmoved\tout_of_order\tproduced_s\trecovered_s\tfaults\n' >"$out"
bad=0 uninformative=0

# run CLIENT VERSION SEED TEST [HARNESS ARGS]: one run, its row appended; the log kept if it failed.
run() {
  local client=$1 version=$2 seed=$3 test=$4
  shift 4
  local log=$logs/$client-$version-$seed.log t=$SECONDS rc=0
  (cd client && KWIRE_BROKER="$PWD/../target/kafka/$version/env" KWIRE_REQUIRE_BROKER=1 KWIRE_FAULT_SEED=$seed \
    timeout 900 "$bin" --exact "$test" --nocapture --test-threads 1 "$@") >"$log" 2>&1 || rc=$?
  local row
  row=$(grep -o 'soak: .*' "$log" | head -1)
  if [ -n "$row" ]; then
    # key=value pairs to the table's columns.
    printf '%s\t%s\t%s\n' "$client" "$version" "$(sed -E 's/soak: //; s/[a-z_]+=//g; s/ /\t/g' <<<"$row" | cut -f2-)" >>"$out"
  fi
  if [ $rc = 0 ] && grep -q '^uninformative:' "$log"; then
    uninformative=$((uninformative + 1))
    echo "  $client $version seed $seed: too few faults struck, uninformative ($((SECONDS - t)) s)"
    rm -f "$log"
  elif [ $rc = 0 ]; then
    echo "  $client $version seed $seed: ok ($((SECONDS - t)) s) ${row#soak: }"
    rm -f "$log"
  elif grep -q 'the network was faulty enough' "$log"; then
    uninformative=$((uninformative + 1))
    echo "  $client $version seed $seed: too few faults struck, uninformative ($((SECONDS - t)) s)"
  else
    bad=$((bad + 1))
    echo "  $client $version seed $seed: FAILED (exit $rc, $((SECONDS - t)) s): $(grep -m1 -E 'panicked|records written twice|missing|out of send order' "$log"); log $log"
  fi
}

for version in $versions; do
  scripts/kafka.sh start "$version" >"$logs/kafka-$version.log" 2>&1 || { echo "Kafka $version did not start" >&2; bad=$((bad + 1)); continue; }
  echo "Kafka $version: seeds $first..$end" >&2
  for ((seed = first; seed < end; seed++)); do
    run kwire "$version" "$seed" an_idempotent_producer_through_a_faulty_network_loses_and_duplicates_nothing
    [ $java = 1 ] && run java "$version" "$seed" java_producer_through_the_same_faulty_network --ignored
  done
  scripts/kafka.sh stop "$version" >/dev/null 2>&1 || true
  if [ "$cluster" -gt 0 ] && [ -n "$killed" ]; then
    if scripts/kafka.sh start "$version" --nodes 3 >"$logs/kafka-$version-cluster.log" 2>&1; then
      for ((i = 0; i < cluster; i++)); do
        t=$SECONDS
        if (cd client && KWIRE_CLUSTER="$PWD/../target/kafka/$version-cluster/env" KWIRE_REQUIRE_CLUSTER=1 timeout 900 "$killed" killed_broker:: --nocapture --test-threads 1) >"$logs/killed-$version-$i.log" 2>&1; then
          echo "  killed leaders, Kafka $version 3 nodes, run $i: ok ($((SECONDS - t)) s) $(grep -m1 -o '[0-9]* records, each once.*' "$logs/killed-$version-$i.log")"
        else
          bad=$((bad + 1))
          echo "  killed leaders, Kafka $version 3 nodes, run $i: FAILED; log $logs/killed-$version-$i.log"
        fi
      done
      scripts/kafka.sh stop "$version" --nodes 3 >/dev/null 2>&1 || true
    else
      echo "Kafka $version's 3-node cluster did not start" >&2
      bad=$((bad + 1))
    fi
  fi
done

echo
echo "== per version and client (seeds with enough faults)"
python3 - "$out" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
groups = {}
for r in rows:
    if int(r["faults"]) < 5:
        continue
    groups.setdefault((r["version"], r["client"]), []).append(r)
print("| version | client | seeds | sent | acknowledged | failed | duplicated | lost | moved or reordered | recovery s (median, max) |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
for (version, client), rs in sorted(groups.items()):
    s = lambda k: sum(int(r[k]) for r in rs)
    rec = [float(r["recovered_s"]) for r in rs if r["recovered_s"]]
    recovery = f"{statistics.median(rec):.2f}, {max(rec):.2f}" if rec else "-"
    print(f"| {version} | {client} | {len(rs)} | {s('sent')} | {s('acked')} | {s('failed')} | {s('duplicated')} | {s('lost')} | {s('moved') + s('out_of_order')} | {recovery} |")
PY
echo "fault-soak: $bad failed, $uninformative uninformative; rows in $out"
[ $bad = 0 ]
