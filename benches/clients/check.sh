#!/usr/bin/env bash
# The client benchmark's checks for CI: every client (kwire-client, confluent-kafka, rdkafka,
# franz-go, Java) produces and consumes once per configuration (100 B none and lz4, 1 KiB zstd;
# acks=all, idempotent), and every count and digest must agree with the fixed reader's and the
# expected ones; nothing is timed. Exits non-zero on any disagreement, failure or timeout.
set -euo pipefail
exec timeout 3600 "$(dirname "$0")/run.sh" --check "$@"
