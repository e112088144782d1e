#!/usr/bin/env bash
# What a user's build pays (issue 27): the release build, from an empty target directory, of
# the same downstream binary (the client benchmark's program: produce and consume) on each Rust
# client. Each client's binary goes into a throwaway crate of its own, in a temporary
# directory, that depends on that client alone (plus tokio, bytes and the benchmark's small
# helpers), with the versions of benches/clients/Cargo.lock; sources are fetched first, so
# only compiling is timed.
#
#   benches/clients/build-times.sh [kwire|confluent|rdkafka ...]    (all three by default)
#   benches/clients/build-times.sh --protocol [ROUNDS]
#
# Prints one line per client: wall seconds, user and system CPU seconds, and the binary's size.
# Builds run one after another with `nice`, CARGO_INCREMENTAL=0 and the machine's cores.
#
# --protocol: the protocol crate alone, kwire (default features) against kafka-protocol 0.18.0
# (default features), each in a throwaway crate whose dependencies are built first; then ROUNDS
# (default 3) times, alternating, `cargo clean --release -p CRATE` and a timed release build
# (that crate, its build script included, and a trivial main). Prints every round and the
# medians.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ "${1:-}" = --protocol ]; then
  rounds=${2:-3}
  for crate in kwire kafka-protocol; do
    dir=$work/$crate
    mkdir -p "$dir/src"
    if [ "$crate" = kwire ]; then
      dep="kwire = { path = \"$root\" }"
      echo 'fn main() { println!("{}", kwire::ApiKey::Fetch.name()); }' > "$dir/src/main.rs"
    else
      dep='kafka-protocol = "=0.18.0"'
      echo 'fn main() { println!("{:?}", kafka_protocol::messages::ApiKey::Fetch); }' > "$dir/src/main.rs"
    fi
    printf '[package]\nname = "downstream"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n\n[workspace]\n\n[dependencies]\n%s\n' "$dep" > "$dir/Cargo.toml"
    (cd "$dir" && CARGO_TARGET_DIR=$dir/target CARGO_INCREMENTAL=0 timeout 3600 nice -n 10 cargo build --release -q)
  done
  for round in $(seq "$rounds"); do
    for crate in kwire kafka-protocol; do
      dir=$work/$crate
      (cd "$dir" && CARGO_TARGET_DIR=$dir/target cargo clean --release -q -p "$crate")
      start=$(date +%s.%N)
      (cd "$dir" && CARGO_TARGET_DIR=$dir/target CARGO_INCREMENTAL=0 timeout 3600 nice -n 10 cargo build --release -q)
      end=$(date +%s.%N)
      awk -v c="$crate" -v r="$round" -v s="$start" -v e="$end" 'BEGIN { printf "round %d  %-15s %6.1f s\n", r, c, e - s }' | tee -a "$work/rounds"
    done
  done
  for crate in kwire kafka-protocol; do
    awk -v c="$crate" '$3 == c { print $4 }' "$work/rounds" | sort -n | awk -v c="$crate" '{ v[NR] = $1 } END {
      printf "median %-15s %6.1f s (min %.1f, max %.1f, %d rounds)\n", c, (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[1], v[NR], NR }'
  done
  exit 0
fi

clients=("$@")
[ ${#clients[@]} -eq 0 ] && clients=(kwire confluent rdkafka)

shared='tokio = { version = "1", features = ["rt", "rt-multi-thread", "macros", "time", "sync"] }
hdrhistogram = { version = "7", default-features = false }
bytes = "1"
futures-util = { version = "0.3", default-features = false, features = ["std", "async-await-macro"] }'

for client in "${clients[@]}"; do
  case $client in
    kwire) deps="kwire = { path = \"$root\", features = [\"tokio\"] }
kwire-client = { path = \"$root/client\", default-features = false }" ;;
    confluent) deps='confluent-kafka = { version = "=1.0.0", default-features = false, features = ["lz4", "zstd"] }' ;;
    rdkafka) deps='rdkafka = { version = "0.39", features = ["cmake-build", "zstd"] }' ;;
    *) echo "build-times.sh: unknown client $client" >&2; exit 2 ;;
  esac
  dir=$work/$client
  mkdir -p "$dir"
  cat > "$dir/Cargo.toml" <<EOF
[package]
name = "downstream-$client"
version = "0.0.0"
edition = "2021"
publish = false

[workspace]

[[bin]]
name = "$client"
path = "$here/src/bin/$client.rs"

[dependencies]
$deps
$shared
EOF
  # The benchmark's lock file pins the same versions (cargo drops what this crate does not use).
  sed "s/^name = \"kwire-bench-clients\"/name = \"downstream-$client\"/" "$here/Cargo.lock" > "$dir/Cargo.lock"
  (cd "$dir" && cargo fetch -q)
  start=$(date +%s.%N)
  (cd "$dir" && CARGO_TARGET_DIR=$dir/target CARGO_INCREMENTAL=0 /usr/bin/time -f '%U %S' -o "$dir/cpu" \
    timeout 7200 nice -n 10 cargo build --release -q)
  end=$(date +%s.%N)
  read -r user sys < "$dir/cpu"
  size=$(stat -c %s "$dir/target/release/$client")
  awk -v c="$client" -v s="$start" -v e="$end" -v u="$user" -v y="$sys" -v b="$size" 'BEGIN {
    printf "%-10s wall %7.1f s  cpu %7.1f s (user %.1f, sys %.1f)  binary %.1f MiB\n", c, e - s, u + y, u, y, b / 1048576 }'
done
