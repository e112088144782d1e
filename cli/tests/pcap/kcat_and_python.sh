#!/usr/bin/env bash
# The session cli/tests/pcap_interop.rs captures for kcat and kafka-python against a real broker:
# kafka-python's admin creates the topic, its producer writes (gzip) and its consumer reads in a
# classic group and commits; kcat produces (snappy) and consumes to the end.
# Usage: kcat_and_python.sh BOOTSTRAP TOPIC
set -euo pipefail
bootstrap=$1
topic=$2
python3 - "$bootstrap" "$topic" <<'PY'
import sys
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

bootstrap, topic = sys.argv[1], sys.argv[2]
admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kafka-python-admin")
admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])
admin.close()
producer = KafkaProducer(bootstrap_servers=bootstrap, compression_type="gzip", acks="all")
for i in range(20):
    producer.send(topic, key=b"k%d" % i, value=b"kafka-python %d" % i, headers=[("h", b"x")])
producer.flush()
producer.close()
consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=topic + "-group",
                         auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=15000)
seen = 0
for _ in consumer:
    seen += 1
    if seen == 20:
        break
consumer.commit()
consumer.close()
assert seen == 20, f"kafka-python read {seen} of 20 records"
PY
printf 'a:kcat one\nb:kcat two\nc:kcat three\n' | kcat -b "$bootstrap" -t "$topic" -P -K: -z snappy
count=$(kcat -b "$bootstrap" -t "$topic" -C -e -q -o beginning | wc -l)
[ "$count" -eq 23 ] || { echo "kcat read $count of 23 records" >&2; exit 1; }
