# librdkafka through confluent_kafka: the payload file's lines as unkeyed records; with
# `--transactions N`, in transactions of N records (a fresh transactional.id), each committed
# before the next begins.
#   python3 produce_bench_librdkafka.py BOOTSTRAP TOPIC FILE [--transactions N]
import os, sys, time
from confluent_kafka import Producer, version, libversion
bootstrap, topic, path = sys.argv[1:4]
per_txn = int(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[4] == '--transactions' else None
values = open(path, 'rb').read().split(b'\n')[:-1]
config = {'bootstrap.servers': bootstrap, 'acks': 'all', 'enable.idempotence': True,
          'linger.ms': 5, 'batch.size': 65536, 'compression.codec': 'lz4',
          'queue.buffering.max.messages': 1000000}
if per_txn:
    config['transactional.id'] = f'produce-bench-librdkafka-{os.getpid()}'
p = Producer(config)
if per_txn:
    p.init_transactions()
failed = 0
def cb(err, msg):
    global failed
    if err is not None:
        failed += 1
start = time.time()
for i, v in enumerate(values):
    if per_txn and i % per_txn == 0:
        if i > 0:
            p.commit_transaction()
        p.begin_transaction()
    while True:
        try:
            p.produce(topic, v, on_delivery=cb)
            break
        except BufferError:
            p.poll(0.01)
    p.poll(0)
if per_txn:
    p.commit_transaction()
p.flush()
secs = time.time() - start
n = len(values)
print(f"confluent_kafka {version()[0] if isinstance(version(), tuple) else version()} librdkafka {libversion()[0]}: {n} records{f' in transactions of {per_txn}' if per_txn else ''} in {secs:.2f} s: {n/secs:.0f} records/s, {n*100/1e6/secs:.1f} MB/s, {failed} failed")
