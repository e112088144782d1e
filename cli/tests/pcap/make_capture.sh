#!/usr/bin/env bash
# Captures real Kafka client traffic on loopback: tcpdump records port PORT while a librdkafka
# producer (cli/tests/pcap/client.py) talks to the broker already listening there.
# Usage: make_capture.sh OUT.pcap PORT [CLIENT COMMAND...]   (needs root for the capture,
# tcpdump, python3 with confluent-kafka; cli/tests/pcap_interop.rs runs it against a tiny broker
# it starts itself). With a client command, that runs instead of the librdkafka producer (the
# Java clients against a real broker).
set -euo pipefail
out=$1
port=$2
here=$(cd "$(dirname "$0")" && pwd)

log=$(mktemp)
# --immediate-mode: without it libpcap fills TPACKET_V3 blocks that are only handed over on a
# block timeout, and on some kernels tcpdump is interrupted with every packet still in the ring
# ("64 packets received by filter, 0 packets captured"). -U writes each packet as it comes.
tcpdump -i lo --immediate-mode -U -n -s 0 -w "$out" "tcp port $port" 2>"$log" &
dump=$!
# Wait until tcpdump is capturing before the client connects.
for _ in $(seq 100); do
  grep -q "listening on" "$log" && break
  sleep 0.1
done
status=0
if [ $# -gt 2 ]; then
  timeout 180 "${@:3}" || status=$?
else
  timeout 60 python3 "$here/client.py" "$port" || status=$?
fi
# Let tcpdump write the last packets (the file grows as it does) before stopping it.
last=-1
for _ in $(seq 30); do
  sleep 0.2
  size=$(stat -c %s "$out" 2>/dev/null || echo 0)
  [ "$size" = "$last" ] && [ "$size" -gt 24 ] && break
  last=$size
done
kill -INT "$dump"
wait "$dump" || true
cat "$log" >&2
rm -f "$log"
exit "$status"
