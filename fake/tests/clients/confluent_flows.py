"""confluent-kafka (librdkafka) against kwire-fake: AdminClient creates and describes topics,
an idempotent producer, a transactional producer (two commits around an abort), a
read_committed consumer group that reads the committed records only, exactly once, and
commits its offsets.

Usage: confluent_flows.py BOOTSTRAP. Prints a line per check and "OK" at the end; exits non-zero
with a message on any failure; every wait is bounded in time."""
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

BOOTSTRAP = sys.argv[1]
EVENTS = "ck-events"
TXN = "ck-txn"
DEADLINE = 120  # seconds, for each phase


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def check(ok, msg):
    if not ok:
        fail(msg)


def admin_flow():
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP, "client.id": "confluent-admin"})
    futures = admin.create_topics([NewTopic(EVENTS, num_partitions=3, replication_factor=1), NewTopic(TXN, num_partitions=2, replication_factor=1)])
    for name, f in futures.items():
        f.result(timeout=DEADLINE)
    # Again: TOPIC_ALREADY_EXISTS, as Kafka answers.
    try:
        admin.create_topics([NewTopic(EVENTS, num_partitions=3, replication_factor=1)])[EVENTS].result(timeout=DEADLINE)
        fail("a second CreateTopics succeeded")
    except KafkaException as e:
        check(e.args[0].name() == "TOPIC_ALREADY_EXISTS", "second create: %s" % e)
    metadata = admin.list_topics(timeout=DEADLINE)
    check(len(metadata.topics[EVENTS].partitions) == 3 and len(metadata.topics[TXN].partitions) == 2, "partitions listed: %s" % metadata.topics)
    described = admin.describe_topics(__import__("confluent_kafka").TopicCollection([EVENTS]))[EVENTS].result(timeout=DEADLINE)
    check(len(described.partitions) == 3, "partitions described: %s" % described)
    print("admin: topics created, refused again, listed and described", flush=True)


def delivered(errors):
    def cb(err, msg):
        if err is not None:
            errors.append(err)
    return cb


def idempotent_flow(count):
    errors = []
    p = Producer({"bootstrap.servers": BOOTSTRAP, "client.id": "confluent-idempotent", "enable.idempotence": True, "acks": "all", "linger.ms": 5})
    for i in range(count):
        p.produce(EVENTS, key="k%d" % (i % 97), value="v%d" % i, on_delivery=delivered(errors))
        p.poll(0)
    left = p.flush(DEADLINE)
    check(left == 0 and not errors, "idempotent producer: %d left, errors %s" % (left, errors[:3]))
    print("idempotent producer: %d acknowledged" % count, flush=True)


def transactional_flow():
    p = Producer({"bootstrap.servers": BOOTSTRAP, "client.id": "confluent-transactional", "transactional.id": "confluent-txn", "linger.ms": 5})
    p.init_transactions(DEADLINE)
    p.begin_transaction()
    for i in range(100):
        p.produce(TXN, key="k%d" % i, value="committed-%d" % i)
    p.commit_transaction(DEADLINE)
    p.begin_transaction()
    for i in range(50):
        p.produce(TXN, key="k%d" % i, value="aborted-%d" % i)
    p.flush(DEADLINE)
    p.abort_transaction(DEADLINE)
    p.begin_transaction()
    for i in range(100, 120):
        p.produce(TXN, key="k%d" % i, value="committed-%d" % i)
    p.commit_transaction(DEADLINE)
    print("transactional producer: 2 commits, 1 abort", flush=True)


def consume(group, topic, expected):
    c = Consumer({
        "bootstrap.servers": BOOTSTRAP,
        "client.id": "confluent-consumer",
        "group.id": group,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed",
        "enable.auto.commit": False,
    })
    c.subscribe([topic])
    seen = {}
    deadline = time.time() + DEADLINE
    while len(seen) < expected and time.time() < deadline:
        msg = c.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            fail("consumer error: %s" % msg.error())
        value = msg.value().decode()
        seen[value] = seen.get(value, 0) + 1
    # Anything more would be a record read twice or one that should not be seen.
    end = time.time() + 2
    while time.time() < end:
        msg = c.poll(0.2)
        if msg is not None and not msg.error():
            value = msg.value().decode()
            seen[value] = seen.get(value, 0) + 1
    c.commit(asynchronous=False)
    partitions = [TopicPartition(topic, p) for p in range(len(c.list_topics(topic).topics[topic].partitions))]
    committed = c.committed(partitions, timeout=DEADLINE)
    ends = [c.get_watermark_offsets(tp, timeout=DEADLINE)[1] for tp in partitions]
    c.close()
    return seen, [(tp.offset, end) for tp, end in zip(committed, ends)]


def main():
    admin_flow()
    idempotent_flow(2000)
    transactional_flow()
    events, committed = consume("confluent-group", EVENTS, 2000)
    check(len(events) == 2000 and all(n == 1 for n in events.values()), "read %d records, duplicates %s" % (len(events), [v for v, n in events.items() if n > 1][:3]))
    check(sum(offset for offset, _ in committed) == 2000 and all(o == end for o, end in committed), "committed offsets and ends %s" % committed)
    print("read_committed group: 2000 records once, offsets committed", flush=True)
    txn, committed = consume("confluent-txn-group", TXN, 120)
    check(len(txn) == 120 and all(v.startswith("committed-") and n == 1 for v, n in txn.items()), "transactional records read: %d, %s" % (len(txn), sorted(txn)[:5]))
    # The positions pass the last markers: each partition's end, more than the 170 records.
    check(all(o == end for o, end in committed) and sum(o for o, _ in committed) > 170, "committed offsets and ends after the markers: %s" % committed)
    print("read_committed group: the 120 committed transactional records only", flush=True)
    print("OK", flush=True)


main()
