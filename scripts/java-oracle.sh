#!/usr/bin/env bash
# Apache Kafka's own generated Java classes as the oracle (issue 12; tests/java/README.md).
#
# For each kafka-clients version: builds tests/java against it (Maven Central), has Java write its
# vectors into target/java-oracle/<version>/, then runs tests/java_oracle.rs on them with kwire
# generated from the matching specs (the Rust test has Java check kwire's output in turn).
# Prints each run's matrix summary and, last, one line per run:
#   java oracle: <agree> of <cells> cells agree (kafka-clients <version>)
#   java oracle: <agree> of <cells> cells agree (kafka-clients <version>, merged 3.9.0+4.4.0 build)
#
# KWIRE_JAVA_VERSIONS: space-separated <kafka-clients version>=<specs>, where <specs> is a
#   spec directory, "jar" for the specs inside that kafka-clients jar, "default" for kwire's
#   default build (KWIRE_SPECS unset: kafka-3.9.0 and kafka-4.4.0 merged), or several spec
#   directories joined by ":" (oldest first) for a merged build of those.
# KWIRE_UPDATE_MATRIX=1: rewrite tests/java/MATRIX-kafka-clients-<version>.md (a merged
#   build's: MATRIX-kafka-clients-<version>-merged.md).
# KWIRE_JAVA_TARGET_DIR: one cargo target directory for every spec set (CI: `target`, where
#   the dependencies are already built; only kwire is rebuilt per spec set). By default each
#   spec set has its own (target/oracle-<specs>), so switching between them rebuilds nothing.
# KWIRE_WORKSPACE_BINS=1 (CI, after `cargo test --workspace` in `target`): the default
#   build's oracle runs the workspace's own test binary (scripts/lib/testbins.sh) instead of a
#   `cargo test --test java_oracle`, whose narrower selection compiled kwire again.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
versions=${KWIRE_JAVA_VERSIONS:-"3.9.2=../shared/message-specs/kafka-3.9.0 4.4.0=../shared/message-specs/kafka-4.4.0 3.9.2=default 4.4.0=default"}
seeds=${KWIRE_JAVA_SEEDS:-4}

for tool in java mvn cargo; do
  command -v "$tool" >/dev/null || { echo "java-oracle: $tool is not installed" >&2; exit 1; }
done

lines=()
status=0
for entry in $versions; do
  version=${entry%%=*}
  specs=${entry#*=}
  case $specs in
    default | *:*) out=$root/target/java-oracle/$version-merged; label="$version, merged build ($specs)" ;;
    *) out=$root/target/java-oracle/$version; label=$version ;;
  esac
  mkdir -p "$out"
  echo "== kafka-clients $label"
  t0=$SECONDS
  # Debian's Maven prints colour resets even with -q -B; errors still show.
  mvn -q -B -f tests/java/pom.xml -Dkafka.version="$version" package 2>&1 | sed 's/\x1b\[[0-9;]*m//g'
  deps=$(cat "tests/java/target/$version/classpath.txt")
  cp="$root/tests/java/target/$version/classes:$deps"
  jar=$(tr ':' '\n' <<<"$deps" | grep "/kafka-clients-$version.jar$")
  # The jar's own specs: the explanations check against them, and "jar" builds kwire from them.
  rm -rf "$out/specs"
  mkdir -p "$out/specs"
  (cd "$out/specs" && jar xf "$jar" common/message && mv common/message/*.json . && rm -r common)
  if [ "$specs" = jar ]; then
    specs=$out/specs
    target=target/oracle-$version
  elif [ "$specs" = default ]; then
    # KWIRE_SPECS unset: the default merged build, whatever it is made of.
    target=target/oracle-merged
  elif [[ $specs == *:* ]]; then
    target=target/oracle-merged-$(tr ':' '\n' <<<"$specs" | xargs -n1 basename | sed 's/^kafka-//' | paste -sd+)
  else
    target=target/oracle-$(basename "$specs" | sed 's/^kafka-//')
  fi
  target=${KWIRE_JAVA_TARGET_DIR:-$target}
  echo "   maven build: $((SECONDS - t0)) s"
  t0=$SECONDS
  # SLF4J's "no binding" notice on stderr is expected.
  java -cp "$cp" oracle.Oracle gen "$out" "$seeds" 2>"$out/java-gen.stderr"
  echo "   java gen: $((SECONDS - t0)) s"
  t0=$SECONDS
  if [ "$specs" = default ]; then
    spec_env=(-u KWIRE_SPECS)
  else
    spec_env=("KWIRE_SPECS=$specs")
  fi
  set +e
  if [ "$specs" = default ] && [ -n "${KWIRE_WORKSPACE_BINS:-}" ] && [ "$target" = target ]; then
    . scripts/lib/testbins.sh
    test_bins_build "$out/build.log" && oracle_bin=$(test_bin kwire:java_oracle) &&
      env "${spec_env[@]}" KWIRE_JAVA_ORACLE=$out KWIRE_JAVA_CP=$cp nice -n 10 "$oracle_bin" --nocapture >"$out/test.log" 2>&1
  else
    env "${spec_env[@]}" KWIRE_JAVA_ORACLE=$out KWIRE_JAVA_CP=$cp CARGO_TARGET_DIR=$target \
      nice -n 10 cargo test -q --workspace --test java_oracle -- --nocapture >"$out/test.log" 2>&1
  fi
  rc=$?
  set -e
  echo "   cargo test (build and run): $((SECONDS - t0)) s"
  sed -n '/^| column |/,/^$/p' "$out/MATRIX.md" 2>/dev/null || true
  grep -E '^\| .*\*\*DIFFER' "$out/MATRIX.md" 2>/dev/null | head -50 || true
  grep '^kwire only: ' "$out/test.log" | sed 's/^/   /' || true
  if [ $rc -ne 0 ]; then
    status=1
    grep -E 'cells disagree|no longer holds|is not this run|panicked|^error' -A3 "$out/test.log" | head -40 || true
    lines+=("java oracle: FAILED (kafka-clients $label; see $out/test.log and $out/MATRIX.md)")
  else
    lines+=("$(grep '^java oracle: ' "$out/test.log" | tail -1)")
  fi
done
printf '%s\n' "${lines[@]}"
exit $status
