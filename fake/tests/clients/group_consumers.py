"""kafka-python against kwire-fake: a topic with two partitions, two consumers in one
group (one partition each), committed offsets, and a third consumer that resumes from them.

Usage: group_consumers.py BOOTSTRAP. Exits non-zero with a message on any failure; every wait
is bounded in time."""
import sys
import threading
import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

BOOTSTRAP = sys.argv[1]
TOPIC = "group-topic"
GROUP = "group-one"
COUNT = 2000
DEADLINE = 180  # seconds, for each phase


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def consumer():
    return KafkaConsumer(
        TOPIC,
        bootstrap_servers=BOOTSTRAP,
        group_id=GROUP,
        client_id="kafka-python-group",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        heartbeat_interval_ms=300,
        session_timeout_ms=10000,
        # kafka-python sends this as the rebalance timeout: the time the group waits for a late
        # member to rejoin. Short, so that a rebalance round missed under load costs 15 s, not 60.
        max_poll_interval_ms=15000,
    )


admin = KafkaAdminClient(bootstrap_servers=BOOTSTRAP, client_id="kafka-python-admin")
admin.create_topics([NewTopic(TOPIC, num_partitions=2, replication_factor=1)])
admin.close()

consumers = [consumer(), consumer()]
received = [[], []]
stop = threading.Event()
assigned = [threading.Event(), threading.Event()]
errors = []


def run(i):
    c = consumers[i]
    try:
        start = time.time()
        while not stop.is_set() and time.time() - start < 2 * DEADLINE:
            batch = c.poll(timeout_ms=200)
            if len(c.assignment()) == 1:
                assigned[i].set()
            for tp, msgs in batch.items():
                for m in msgs:
                    received[i].append((tp.partition, m.offset, m.key, m.value))
            if batch:
                c.commit()
    except Exception as e:  # reported by the main thread
        errors.append(repr(e))


threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
for t in threads:
    t.start()
# Both members must hold one partition each before anything is produced, so that each
# consumes exactly its own partition.
start = time.time()
while not all(a.is_set() for a in assigned):
    if time.time() - start > DEADLINE or errors:
        stop.set()
        fail("consumers did not get one partition each: %s %s" % ([c.assignment() for c in consumers], errors))
    time.sleep(0.1)

producer = KafkaProducer(bootstrap_servers=BOOTSTRAP, client_id="kafka-python-producer", acks="all", linger_ms=5)
sent = {}
for i in range(COUNT):
    key = b"key-%d" % i
    value = b"value-%d" % i
    md = producer.send(TOPIC, key=key, value=value).get(timeout=60)
    sent[(md.partition, md.offset)] = (key, value)
producer.flush()
producer.close()

start = time.time()
while sum(len(r) for r in received) < COUNT and time.time() - start < DEADLINE and not errors:
    time.sleep(0.1)
stop.set()
for t in threads:
    t.join(timeout=60)
if errors:
    fail("consumer error: %s" % errors)

got = {}
for i in range(2):
    partitions = {p for (p, _, _, _) in received[i]}
    if len(partitions) != 1:
        fail("consumer %d read partitions %s" % (i, sorted(partitions)))
    for (p, off, k, v) in received[i]:
        if (p, off) in got:
            fail("offset %d of partition %d consumed twice" % (off, p))
        got[(p, off)] = (k, v)
if got != sent:
    fail("consumed %d messages, produced %d; equal: %s" % (len(got), len(sent), got == sent))
print("two consumers read %d and %d messages" % (len(received[0]), len(received[1])), flush=True)

ends = {}
for c in consumers:
    for tp in c.assignment():
        ends[tp] = c.position(tp)
    c.close()

# A new member of the same group resumes from the committed offsets.
admin_view = KafkaConsumer(bootstrap_servers=BOOTSTRAP, group_id=GROUP, client_id="kafka-python-check", enable_auto_commit=False)
for p in range(2):
    tp = TopicPartition(TOPIC, p)
    committed = admin_view.committed(tp)
    high = sum(1 for (pp, _) in sent if pp == p)
    if committed != high:
        fail("partition %d: committed offset %s, expected %d" % (p, committed, high))
admin_view.close()

producer = KafkaProducer(bootstrap_servers=BOOTSTRAP, client_id="kafka-python-producer", acks=1)
for i in range(10):
    producer.send(TOPIC, key=b"late-%d" % i, value=b"late-%d" % i).get(timeout=60)
producer.close()
late = consumer()
seen = []
start = time.time()
while len(seen) < 10 and time.time() - start < DEADLINE:
    for tp, msgs in late.poll(timeout_ms=200).items():
        seen.extend(m.value for m in msgs)
late.commit()
late.close()
if sorted(seen) != sorted(b"late-%d" % i for i in range(10)):
    fail("resumed consumer read %s" % seen)
print("OK", flush=True)
