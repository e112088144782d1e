#!/usr/bin/env bash
# The peers' correctness on the benchmark frames, without timing anything (cheap enough for CI):
# kwire dumps W1-W5, then franz-go's kmsg (go test) and kafka-clients (peers.Check, no JMH)
# each check length and FNV-1a 64 digest and that their re-encode equals every frame byte for byte.
# Uses the dev build of bench_counts that `cargo test --workspace` built (found in its artifact
# list, scripts/lib/testbins.sh) when KWIRE_WORKSPACE_BINS is set (scripts/test.sh, after that
# build): `cargo run --example` selects differently and compiled kwire again. Otherwise `cargo
# run` builds it.
set -euo pipefail
cd "$(dirname "$0")/.."
frames=$PWD/target/peers/frames
. scripts/lib/testbins.sh
counts=
if [ -n "${KWIRE_WORKSPACE_BINS:-}" ] && test_bins_build target/peers-build.log; then
  counts=$(test_bin kwire:example/bench_counts || true)
fi
if [ -n "$counts" ]; then
  "$counts" dump "$frames" >/dev/null
else
  cargo run -q --example bench_counts -- dump "$frames" >/dev/null
fi
(cd benches/go && KWIRE_FRAMES=$frames go test -count=1 -run '^TestFrames$' .)
mvn -q -B -f benches/java/pom.xml package 2>&1 | sed 's/\x1b\[[0-9;]*m//g'
# SLF4J's "no binding" notice on stderr is expected.
KWIRE_FRAMES=$frames java -cp "benches/java/target/classes:$(cat benches/java/target/classpath.txt)" peers.Check 2>/dev/null
