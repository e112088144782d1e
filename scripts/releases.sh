#!/usr/bin/env bash
# Every Apache Kafka release from 2.4 on: its kafka-clients jar (which carries the release's
# spec files) from Maven Central; the generator on each jar alone and on the oldest merged with
# each newer one (codegen/tests/releases.rs); then kwire type-checked (cargo check, default
# features) on the newest patch of each minor release, read straight from the jar. The optional
# features' generated code (sample, serde, tokio) is built and tested on the default build,
# whose 3.9.0 specs hold every version from v0 of every field shape, and on 3.9.0 and 4.4.0
# alone; here it was a third of each check.
set -euo pipefail
cd "$(dirname "$0")/.."

releases=(
  2.4.0 2.4.1 2.5.0 2.5.1 2.6.0 2.6.1 2.6.2 2.6.3 2.7.0 2.7.1 2.7.2 2.8.0 2.8.1 2.8.2
  3.0.0 3.0.1 3.0.2 3.1.0 3.1.1 3.1.2 3.2.0 3.2.1 3.2.2 3.2.3 3.3.0 3.3.1 3.3.2 3.4.0 3.4.1
  3.5.0 3.5.1 3.5.2 3.6.0 3.6.1 3.6.2 3.7.0 3.7.1 3.7.2 3.8.0 3.8.1 3.9.0 3.9.1 3.9.2
  4.0.0 4.0.1 4.0.2 4.1.0 4.1.1 4.1.2 4.2.0 4.2.1 4.3.0 4.3.1 4.4.0
)
jars=$PWD/target/kafka-clients
mkdir -p "$jars"
start=$SECONDS
# Straight from Maven Central, several at a time, each checked against the SHA-1 Central publishes
# beside it; Maven itself (one JVM start per jar, 3 s each) is the fallback.
central=https://repo1.maven.org/maven2/org/apache/kafka/kafka-clients
fetch_jar() {
  local v=$1 jar=$jars/kafka-clients-$1.jar sum
  [ -s "$jar" ] && return 0
  # A stalled transfer (under 20 kB/s for 10 s) is abandoned and tried again, rather than
  # waited out: one stall cost a CI run two minutes.
  local get=(curl -fsSL --connect-timeout 10 --speed-limit 20000 --speed-time 10 --retry 3 --retry-all-errors --max-time 120)
  if sum=$("${get[@]}" "$central/$v/kafka-clients-$v.jar.sha1") &&
    "${get[@]}" -o "$jar.part" "$central/$v/kafka-clients-$v.jar" &&
    [ "$(sha1sum "$jar.part" | cut -d' ' -f1)" = "${sum:0:40}" ]; then
    mv "$jar.part" "$jar"
    return 0
  fi
  rm -f "$jar.part"
  mvn -q -B dependency:copy -Dartifact="org.apache.kafka:kafka-clients:$v" -Dtransitive=false \
    -DoutputDirectory="$jars" >/dev/null 2>&1 || { echo "Maven Central did not serve kafka-clients $v" >&2; return 1; }
}
export -f fetch_jar
export jars central
printf '%s\n' "${releases[@]}" | xargs -P 6 -I{} bash -c 'fetch_jar {}' || exit 1
echo "== ${#releases[@]} kafka-clients jars in $jars ($((SECONDS - start)) s)"

start=$SECONDS
# The test binary of the workspace build (a `cargo test -p kwire-build` would compile its own),
# alone: the single-spec-set stages before this one rebuilt kwire in target/ with other specs,
# and a whole workspace build would compile it back.
. scripts/lib/testbins.sh
test_bins_build target/releases-build.log --test releases || { tail -40 target/releases-build.log >&2; exit 1; }
KWIRE_RELEASE_JARS=$jars KWIRE_REQUIRE_RELEASES=1 test_bin_exec kwire-build:releases -q
echo "== generated every release alone and merged with ${releases[0]} ($((SECONDS - start)) s)"

# The newest patch of each minor release: the last of each X.Y in the (sorted) list.
newest=$(printf '%s\n' "${releases[@]}" | awk -F. '{k=$1"."$2; last[k]=$0; if (!(k in seen)) {seen[k]=1; order[n++]=k}} END {for (i=0;i<n;i++) print last[order[i]]}')
# Type-checking is one rustc thread per crate: one lane per core, each with its own target
# directory (a target directory is locked by the build that uses it), the releases dealt out
# in turn.
lanes=$(nproc 2>/dev/null || echo 1)
[ "$lanes" -le 2 ] || lanes=2
check_lane() {
  local lane=$1 i=0 rc=0 v
  for v in $newest; do
    if [ $((i % lanes)) -eq "$lane" ]; then
      KWIRE_SPECS="$jars/kafka-clients-$v.jar" CARGO_TARGET_DIR=target/releases-$lane \
        cargo check -q -p kwire || { echo "== kwire does not type-check on Kafka $v" >&2; rc=1; }
    fi
    i=$((i + 1))
  done
  return $rc
}
start=$SECONDS
pids=()
for lane in $(seq 0 $((lanes - 1))); do
  check_lane "$lane" &
  pids+=($!)
done
rc=0
for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
count=$(echo $newest | wc -w)
echo "== kwire type-checks on $count releases ($(echo $newest | tr ' ' ',')) in $lanes lanes ($((SECONDS - start)) s)"
exit $rc
