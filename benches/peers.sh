#!/usr/bin/env bash
# Every peer on the same frames, in one session, and one table (BENCHMARKS.md, "Every peer, one run"):
#   criterion  kwire and kafka-protocol 0.18 (benches/codec.rs); krabka-protocol 0.8.0 (benches/krabka,
#              its own crate: its manifest asks for rustc 1.98.1, it builds with --ignore-rust-version)
#   JMH        Apache Kafka's generated classes from kafka-clients, benches/java
#   go test    franz-go's kmsg, benches/go
# The frames come from `bench_counts dump`; the Java and Go sides check length, digest and that
# their own re-encode equals each frame before timing. Builds run under nice; the timed runs do not.
#
#   benches/peers.sh                 # everything: about 10 minutes after the builds (a first build: +15)
#   SKIP=criterion benches/peers.sh  # reuse target/criterion from an earlier run (also: krabka, java, go)
# Needs cargo, Java 17+ with Maven, Go 1.26+ (kmsg v1.15 asks for it), and their registries for the first build.
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/peers
mkdir -p "$out"
skip=" ${SKIP:-} "
stamp() { echo "== $* ($(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg))"; }
start=$SECONDS
uptime >"$out/uptime-before.txt"

stamp "builds"
nice -n 10 cargo build --release --example bench_counts --quiet
[[ $skip == *" criterion "* ]] || nice -n 10 cargo bench --bench codec --no-run --quiet
krabka=(cargo bench --ignore-rust-version --manifest-path benches/krabka/Cargo.toml --bench krabka)
[[ $skip == *" krabka "* ]] || CARGO_TARGET_DIR=target/krabka nice -n 10 "${krabka[@]}" --no-run --quiet
[[ $skip == *" java "* ]] || nice -n 10 mvn -q -B -f benches/java/pom.xml package 2>&1 | sed 's/\x1b\[[0-9;]*m//g'
[[ $skip == *" go "* ]] || (cd benches/go && nice -n 10 go test -c -o ../../$out/peers-go.test . )

stamp "frames and allocation counts"
target/release/examples/bench_counts dump "$out/frames"
target/release/examples/bench_counts >"$out/counts.txt"

if [[ $skip != *" criterion "* ]]; then
  stamp "criterion (kwire, kafka-protocol)"
  cargo bench --bench codec -- --warm-up-time 1 --measurement-time 3 >"$out/criterion.txt" 2>&1
fi

if [[ $skip != *" krabka "* ]]; then
  stamp "criterion (krabka-protocol), into the same target/criterion"
  KWIRE_FRAMES=$PWD/$out/frames CRITERION_HOME=$PWD/target/criterion CARGO_TARGET_DIR=target/krabka \
    "${krabka[@]}" >"$out/krabka.txt" 2>&1
fi

if [[ $skip != *" java "* ]]; then
  stamp "JMH (kafka-clients)"
  cp="benches/java/target/classes:$(cat benches/java/target/classpath.txt)"
  KWIRE_FRAMES=$out/frames java -cp "$cp" peers.Check
  # -prof gc: bytes allocated per operation (gc.alloc.rate.norm), next to Go's allocs/op.
  KWIRE_FRAMES=$out/frames java -cp "$cp" org.openjdk.jmh.Main peers.PeersBench \
    -prof gc -rf json -rff "$out/jmh.json" >"$out/jmh.txt" 2>&1
fi

if [[ $skip != *" go "* ]]; then
  stamp "go test -bench (franz-go kmsg)"
  # The test binary runs in benches/go's directory terms: give it the frames' absolute path.
  (cd benches/go && KWIRE_FRAMES=$PWD/../../$out/frames ../../$out/peers-go.test \
    -test.run '^TestFrames$' -test.bench . -test.benchmem -test.count 3) >"$out/go.txt"
fi

uptime >"$out/uptime-after.txt"
stamp "done in $((SECONDS - start)) s; load before: $(sed 's/.*load average: //' "$out/uptime-before.txt")"
python3 benches/peers.py target | tee "$out/table.md"
