"""A real Kafka client (librdkafka, through the confluent-kafka wheel) producing a few records
to two topics on the broker at 127.0.0.1:PORT, so its traffic can be captured."""
import sys

from confluent_kafka import Producer

port = int(sys.argv[1])
producer = Producer({
    "bootstrap.servers": f"127.0.0.1:{port}",
    "broker.address.family": "v4",
    "linger.ms": 0,
    "acks": "all",
    "enable.idempotence": False,
    "compression.type": "none",
})
failures = []
for topic in ("orders", "payments", "orders"):
    producer.produce(topic, key=b"key", value=f"value for {topic}".encode(),
                     on_delivery=lambda err, msg: err and failures.append(err))
    producer.flush(10)
producer.list_topics("orders", timeout=10)
if producer.flush(10) != 0 or failures:
    sys.exit(f"delivery failed: {failures}")
