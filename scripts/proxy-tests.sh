#!/usr/bin/env bash
# The proxy (the kwire-proxy crate, proxy/) against real Apache Kafka with real clients: Java's
# producer, consumer and admin client, kcat and kafka-python through the proxy, tenant
# prefixing, a load test and hostile connections (proxy/tests/proxy_real.rs, which runs the
# kwire-proxy binary cargo builds with it) on one broker, then the
# Java workload through the proxy to a 3-node cluster. Also the walker and codec tests proxies
# rely on (tests/endpoints.rs, tests/proxy.rs, codegen/tests/endpoint_coverage.rs) and the
# proxy's own unit tests and fault injector (proxy/src, proxy/tests/fault_injection.rs), which
# need no broker.
# The last line sums every run:
#   proxy: <passed> passed, <failed> failed
#
#   scripts/proxy-tests.sh [--no-cluster] [VERSION]   (default: 4.4.0)
#
# KWIRE_PROXY_LOAD_REQUESTS: the load test's requests on each side, direct and through the
# proxy (default 100000: 500 per connection over 200 connections, enough to show the proxy's
# memory stays flat; more only lengthens the run).
#
# Logs: target/proxy-tests/*.log; broker logs stay in target/kafka/<version>/.
set -euo pipefail
cd "$(dirname "$0")/.."
cluster=1
if [ "${1-}" = --no-cluster ]; then cluster=0; shift; fi
version=${1:-4.4.0}
start=$SECONDS
mkdir -p target/proxy-tests

prefix=proxy-tests limit=600 logs=target/proxy-tests
. scripts/lib/counted.sh
echo "proxy-tests: building" >&2
if ! test_bins_build target/proxy-tests/build.log; then
  tail -40 target/proxy-tests/build.log >&2
  echo "proxy: 0 passed, 1 failed"
  exit 1
fi
export KWIRE_PROXY_LOAD_REQUESTS=${KWIRE_PROXY_LOAD_REQUESTS:-100000}

# run NAME LOG ENV... -- SPEC... [-- ARGS...]: `counted`, then the figures the tests print (latency,
# memory, frames checked), without the test names.
run() {
  counted "$@"
  grep -E '(load|hostile|tenant|through the proxy)[^:]*: ' "$2" | sed -E 's/^test [a-z_]+ \.\.\. //' >&2 || true
}

run "walkers and codec" target/proxy-tests/offline.log -- kwire:endpoints kwire:proxy
run "walkers over every spec set" target/proxy-tests/codegen.log -- kwire-build:endpoint_coverage
run "the proxy's unit tests and fault injector" target/proxy-tests/unit.log -- \
  kwire-proxy:kwire_proxy kwire-proxy:kwire-proxy kwire-proxy:fault_injection

t0=$SECONDS
if broker "$version"; then
  run "Kafka $version" target/proxy-tests/$version.log \
    KWIRE_PROXY_BROKER="$PWD/target/kafka/$version/env" KWIRE_REQUIRE_PROXY=1 -- \
    kwire-proxy:proxy_real -- --nocapture --test-threads 1 --skip three_brokers
  scripts/kafka.sh stop "$version" >/dev/null 2>&1 || true
fi
running=""
echo "proxy-tests: Kafka $version took $((SECONDS - t0))s" >&2
if [ "$cluster" = 1 ]; then
  t0=$SECONDS
  if broker "$version" --nodes 3; then
    run "Kafka $version, 3 nodes" target/proxy-tests/$version-cluster.log \
      KWIRE_PROXY_CLUSTER="$PWD/target/kafka/$version-cluster/env" KWIRE_REQUIRE_PROXY=1 -- \
      kwire-proxy:proxy_real -- --nocapture three_brokers
    scripts/kafka.sh stop "$version" --nodes 3 >/dev/null 2>&1 || true
  fi
  running=""
  echo "proxy-tests: Kafka $version, 3 nodes took $((SECONDS - t0))s" >&2
fi
echo "proxy-tests: $((SECONDS - start))s in all" >&2
echo "proxy: $passed passed, $failed failed"
exit $status
