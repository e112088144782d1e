#!/usr/bin/env bash
# Captures real Kafka client traffic on loopback: tcpdump records port PORT while a librdkafka
# producer (cli/tests/pcap/client.py) talks to the broker already listening there.
# Usage: make_capture.sh OUT.pcap PORT   (needs root for the capture, tcpdump, python3 with
# confluent-kafka; cli/tests/pcap_interop.rs runs it against a tiny broker it starts itself).
set -euo pipefail
out=$1
port=$2
here=$(cd "$(dirname "$0")" && pwd)

log=$(mktemp)
tcpdump -i lo -U -n -s 0 -w "$out" "tcp port $port" 2>"$log" &
dump=$!
# Wait until tcpdump is capturing before the client connects.
for _ in $(seq 100); do
  grep -q "listening on" "$log" && break
  sleep 0.1
done
status=0
timeout 60 python3 "$here/client.py" "$port" || status=$?
sleep 0.5
kill -INT "$dump"
wait "$dump" || true
cat "$log" >&2
rm -f "$log"
exit "$status"
