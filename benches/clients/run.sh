#!/usr/bin/env bash
# The client benchmark of issue 27 (BENCHMARKS.md, "Clients side by side"): kwire-client,
# confluent-kafka (Rust), rdkafka (librdkafka, bundled build), franz-go and Java's kafka-clients
# against one local Kafka broker, interleaved round by round, every run's count and digest
# checked (bench.py has the details).
#
#   benches/clients/run.sh [--nodes 3] [bench.py options]   build, start the broker, run
#   benches/clients/run.sh --check                          CI: every client produces and consumes
#                                                           20,000 records a configuration; the
#                                                           digests must agree; nothing timed
#   e.g. run.sh --sizes 100 --compression lz4 --acks all --rounds 5 --out results.jsonl
#        python3 benches/clients/table.py results.jsonl
#
# Builds (release, or debug for --check; nice, CARGO_INCREMENTAL=0) into benches/clients/target. Starts Kafka 4.4.0
# with scripts/kafka.sh if it is not running, and stops it again at the end if it started it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
version=${KWIRE_BENCH_KAFKA:-4.4.0}
export PATH=$PATH:/usr/local/go/bin

nodes=1 args=()
# The checks time nothing: a debug build, a fraction of the release build's minutes.
profile=release
while [ $# -gt 0 ]; do
  case $1 in
    --nodes) nodes=${2:?}; args+=(--nodes "$2"); shift 2 ;;
    --check) profile=debug; args+=("$1"); shift ;;
    *) args+=("$1"); shift ;;
  esac
done
export KWIRE_BENCH_PROFILE=$profile
release=()
[ "$profile" = release ] && release=(--release)

log() { echo "run.sh: $*" >&2; }
# KWIRE_BENCH_TARGET: another build directory (a cold build, timed).
target=${KWIRE_BENCH_TARGET:-$here/target}
export KWIRE_BENCH_TARGET=$target
mkdir -p "$target/java"

SECONDS=0
log "building the Rust clients"
(cd "$here" && CARGO_TARGET_DIR=$target CARGO_INCREMENTAL=0 timeout 3600 nice -n 10 cargo build "${release[@]}" --locked -q)
log "building the franz-go client"
(cd "$here/go" && timeout 900 nice -n 10 go build -o "$target/kgobench" .)
log "compiling the Java client"
"$root/scripts/kafka.sh" classpath "$version"
lib=$root/target/kafka/cache/$version/lib
if [ ! "$target/java/ClientBench.class" -nt "$here/java/ClientBench.java" ]; then
  timeout 300 javac -nowarn -cp "$lib/*" -d "$target/java" "$here/java/ClientBench.java"
fi
log "built in ${SECONDS}s"

node_args=()
[ "$nodes" = 3 ] && node_args=(--nodes 3)
started=0
if ! "$root/scripts/kafka.sh" status "$version" "${node_args[@]}" >/dev/null 2>&1; then
  started=1
fi
# Reuses a running broker; otherwise starts one (bounded by kafka.sh's own timeout).
"$root/scripts/kafka.sh" start "$version" "${node_args[@]}" >/dev/null
if [ "$started" = 1 ]; then
  trap '"$root/scripts/kafka.sh" stop "$version" "${node_args[@]}" >/dev/null 2>&1 || true' EXIT
fi
if [ "$nodes" = 3 ]; then env=$root/target/kafka/$version-cluster/env; else env=$root/target/kafka/$version/env; fi
replication=()
[ "$nodes" = 3 ] && replication=(--replication 3)

python3 "$here/bench.py" --env "$env" "${replication[@]}" "${args[@]}"
log "done in ${SECONDS}s"
