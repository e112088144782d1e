#!/usr/bin/env bash
# The peers' correctness on the benchmark frames, without timing anything (cheap enough for CI):
# kwire dumps W1-W5, then franz-go's kmsg (go test) and kafka-clients (peers.Check, no JMH)
# each check length and FNV-1a 64 digest and that their re-encode equals every frame byte for byte.
# Uses the dev build of bench_counts, which `cargo test --workspace` has already built.
set -euo pipefail
cd "$(dirname "$0")/.."
frames=$PWD/target/peers/frames
cargo run -q --example bench_counts -- dump "$frames" >/dev/null
(cd benches/go && KWIRE_FRAMES=$frames go test -count=1 -run '^TestFrames$' .)
mvn -q -B -f benches/java/pom.xml package 2>&1 | sed 's/\x1b\[[0-9;]*m//g'
# SLF4J's "no binding" notice on stderr is expected.
KWIRE_FRAMES=$frames java -cp "benches/java/target/classes:$(cat benches/java/target/classpath.txt)" peers.Check 2>/dev/null
