#!/usr/bin/env bash
# Installs what the tests need beyond cargo, and only what is missing (a second run does
# nothing): scripts/test.sh calls it first, so one command runs every test on a fresh machine.
#
#   Debian packages: kcat (librdkafka) for the kwire-fake and proxy tests; tcpdump and tshark for
#     the capture tests; a JDK 17, Maven and openssl for the Java oracle and the real Kafka
#     brokers (their jars come from Maven Central at test time); Chromium, which opens the
#     tap's --html page headless.
#   Python packages: kafka-python and confluent-kafka (librdkafka) as independent clients, with
#     the codecs kafka-python needs.
#   Go (the benchmark peers' frame checks) is not installed here: Debian's is too old for
#     benches/go/go.mod; /usr/local/go/bin is used where present.
#
# Needs root for apt-get (CI and a fresh machine run as root). Without root it installs nothing
# and says what is missing; the tests that need it then skip, and scripts/test.sh lists them
# at the end (with KWIRE_REQUIRE_CLIENTS set, as in CI, they fail instead).
set -euo pipefail

pip_packages=(kafka-python==3.0.12 python-snappy==0.7.3 lz4==4.4.5 zstandard==0.25.0 xxhash==4.1.0 confluent-kafka==2.16.1)
python_probe="import kafka, confluent_kafka, snappy, lz4, zstandard, xxhash"

# command package: the Debian package that brings each command.
wanted=(python3:python3 kcat:kcat tcpdump:tcpdump tshark:tshark java:openjdk-17-jdk-headless
  javac:openjdk-17-jdk-headless mvn:maven openssl:openssl chromium:chromium)
apt=()
for pair in "${wanted[@]}"; do
  command -v "${pair%%:*}" >/dev/null || apt+=("${pair#*:}")
done
if ! python3 -m pip --version >/dev/null 2>&1; then apt+=(python3-pip); fi
# The client benchmark's checks build librdkafka (rdkafka's cmake-build), whose CMake build
# includes <curl/curl.h> even with curl off.
command -v cmake >/dev/null || apt+=(cmake)
[ -n "$(find /usr/include -maxdepth 3 -path '*/curl/curl.h' -print -quit 2>/dev/null)" ] || apt+=(libcurl4-openssl-dev)
mapfile -t apt < <(printf '%s\n' "${apt[@]}" | sort -u | sed '/^$/d')

root=0
[ "$(id -u)" = 0 ] && root=1
if [ ${#apt[@]} -gt 0 ]; then
  if [ $root = 1 ] && command -v apt-get >/dev/null; then
    echo "setup: apt-get install ${apt[*]}"
    export DEBIAN_FRONTEND=noninteractive # wireshark-common's setuid question
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends ca-certificates "${apt[@]}" >/dev/null
  else
    echo "setup: missing Debian packages (not root, nothing installed): ${apt[*]}"
  fi
fi

if ! python3 -c "$python_probe" >/dev/null 2>&1; then
  echo "setup: pip install ${pip_packages[*]}"
  python3 -m pip install --quiet --disable-pip-version-check "${pip_packages[@]}" 2>/dev/null \
    || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages "${pip_packages[@]}" \
    || echo "setup: pip could not install the Python packages; their tests will say so"
fi
