#!/usr/bin/env bash
# kwire-client's broker tests (client/tests/) against kwire-fake instead of Apache Kafka:
# the fake's binary imitating a release, set up as scripts/kafka.sh sets up a broker
# (scripts/lib/fake.sh), each test binary run once against it. Prints a table, a row per test binary: passed, failed, and the
# failed tests; and writes it to target/client-on-fake/<release>.md. What fails here needs a
# real broker (TLS, OAUTHBEARER, a JVM's logs, three nodes, killed processes, ...) or shows
# where the fake falls short of Kafka.
#
#   scripts/client-on-fake.sh [RELEASE]      (default 4.4; 3.9 too)
#
# Builds the workspace's tests first (nothing to do after `cargo test --workspace`). Not part of
# scripts/test.sh: it is the list of what the client suite needs a real broker for.
set -euo pipefail
cd "$(dirname "$0")/.."
release=${1:-4.4}
case $release in 3.9) jars=3.9.2 ;; 4.4) jars=4.4.0 ;; *) echo "release 3.9 or 4.4" >&2; exit 2 ;; esac
out=target/client-on-fake
# A test that waits for what the fake never does (a JVM's log line, a second node) hangs until
# this; the binary's row says so.
per_binary=${KWIRE_FAKE_PER_BINARY:-300}
mkdir -p "$out"
. scripts/lib/testbins.sh
echo "client-on-fake: building" >&2
test_bins_build "$out/build.log" || { tail -30 "$out/build.log" >&2; exit 1; }
dir=$out/$release
. scripts/lib/fake.sh
trap fake_stop EXIT
fake_start "$release" "$dir" "$jars"

table=$out/$release.md
{
  echo "| test binary | passed | skipped | failed | failed tests |"
  echo "| --- | ---: | ---: | ---: | --- |"
} >"$table"
for t in client/tests/*/main.rs client/tests/*.rs; do
  [ "$t" = "${t%/main.rs}" ] && name=$(basename "$t" .rs) || { t=$(dirname "$t"); name=$(basename "$t"); }
  grep -rlq 'from_env\|KWIRE_REQUIRE_BROKER\|KWIRE_BROKER' "$t" || continue
  bin=$(test_bin "kwire-client:$name") || continue
  log=$dir/$name.log
  results=$PWD/$dir/$name.results
  rm -f "$results"
  (cd client && KWIRE_BROKER="$PWD/../$dir/env" timeout "$per_binary" "$bin" --test-threads 2 --nocapture --logfile "$results" >"../$log" 2>&1) || true
  touch "$results"
  # A test that skips itself (it says "skipping NAME: why") also ends "ok".
  skipped=$({ grep -o 'skipping [a-z0-9_]*:' "$log" || true; } | sort -u | wc -l)
  passed=$(( $(grep -c '^ok ' "$results" || true) - skipped ))
  failed=$(grep -c '^failed ' "$results" || true)
  names=$(sed -n 's/^failed //p' "$results" | paste -sd, - | sed 's/,/, /g')
  grep -q "^test result" "$log" || names="(did not finish within $per_binary s) $names"
  echo "| $name | $passed | $skipped | $failed | $names |" >>"$table"
  echo "client-on-fake: $name: $passed passed, $skipped skipped, $failed failed" >&2
done
cat "$table"
