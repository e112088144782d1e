# librdkafka through confluent_kafka: the payload file's lines as unkeyed records.
import sys, time
from confluent_kafka import Producer, version, libversion
bootstrap, topic, path = sys.argv[1:4]
values = open(path, 'rb').read().split(b'\n')[:-1]
p = Producer({'bootstrap.servers': bootstrap, 'acks': 'all', 'enable.idempotence': True,
              'linger.ms': 5, 'batch.size': 65536, 'compression.codec': 'lz4',
              'queue.buffering.max.messages': 1000000})
failed = 0
def cb(err, msg):
    global failed
    if err is not None:
        failed += 1
start = time.time()
for v in values:
    while True:
        try:
            p.produce(topic, v, on_delivery=cb)
            break
        except BufferError:
            p.poll(0.01)
    p.poll(0)
p.flush()
secs = time.time() - start
n = len(values)
print(f"confluent_kafka {version()[0] if isinstance(version(), tuple) else version()} librdkafka {libversion()[0]}: {n} records in {secs:.2f} s: {n/secs:.0f} records/s, {n*100/1e6/secs:.1f} MB/s, {failed} failed")
