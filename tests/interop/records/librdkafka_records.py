#!/usr/bin/env python3
"""Record batches written by librdkafka (through PyPI confluent-kafka), one topic per codec.

    librdkafka_records.py write    print vectors in vectors.py format

There is no broker: librdkafka's built-in mock cluster (`test.mock.num.brokers`) receives the
Produce requests and keeps the record batches exactly as librdkafka wrote them. A minimal Fetch v4
request sent over a plain socket reads them back raw, and they are printed with the records
that were produced. Offsets are the ones the mock broker assigned (from 0 per topic partition).
Needs: pip install confluent-kafka
"""
import io
import os
import socket
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vectors  # noqa: E402

from confluent_kafka import Producer  # noqa: E402


def kstr(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("connection closed")
        buf += chunk
    return buf


def fetch_all(host, port, topic, partition=0):
    """Every batch of the partition: the mock broker answers a Fetch with the one batch that
    holds the offset asked for, so fetch from the offset after each batch until none is left."""
    out, offset = b"", 0
    while True:
        data = fetch_raw(host, port, topic, partition, offset)
        if not data:
            return out
        out += data
        pos, start = 0, offset
        while pos + 12 <= len(data):
            base, length = struct.unpack_from(">qi", data, pos)
            (last_delta,) = struct.unpack_from(">i", data, pos + 23)
            offset = max(offset, base + last_delta + 1)
            pos += 12 + length
        if offset == start:
            return out  # no whole batch in the answer: nothing more to read


def fetch_raw(host, port, topic, partition=0, offset=0):
    """Fetch v4 from `offset`; returns the partition's raw records bytes."""
    body = struct.pack(">iiiib", -1, 100, 1, 64 << 20, 0)  # replica, max wait, min bytes, max bytes, isolation
    body += struct.pack(">i", 1) + kstr(topic) + struct.pack(">i", 1)
    body += struct.pack(">iqi", partition, offset, 64 << 20)
    header = struct.pack(">hhi", 1, 4, 7) + kstr("kwire-interop")
    req = header + body
    with socket.create_connection((host, port), timeout=10) as s:
        s.sendall(struct.pack(">i", len(req)) + req)
        size = struct.unpack(">i", recv_exact(s, 4))[0]
        resp = recv_exact(s, size)
    pos = 0

    def take(fmt):
        nonlocal pos
        vals = struct.unpack_from(fmt, resp, pos)
        pos += struct.calcsize(fmt)
        return vals

    corr, _throttle, ntopics = take(">iii")
    assert corr == 7 and ntopics == 1, (corr, ntopics)
    (tlen,) = take(">h")
    pos += tlen
    (nparts,) = take(">i")
    assert nparts == 1
    _p, err, _hw, _lso, naborted = take(">ihqqi")
    if err != 0:
        raise RuntimeError("fetch error %d" % err)
    pos += max(naborted, 0) * 16
    (rlen,) = take(">i")
    return resp[pos:pos + rlen]


def write():
    out = io.StringIO()
    recs = vectors.sample_records(with_headers=True)
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        topic = "interop-" + codec
        p = Producer({
            "test.mock.num.brokers": 1,
            "compression.type": codec,
            # Long enough that a slow (loaded) machine still queues every record before the
            # batch goes out: one batch per codec. flush() sends at once, whatever linger.ms says.
            "linger.ms": 10000,
            "batch.num.messages": 100000,
            "enable.idempotence": False,
            "acks": "all",
        })
        errors = []

        def cb(err, msg):
            if err is not None:
                errors.append(err)

        for (_o, ts, key, value, headers) in recs:
            p.produce(topic, value=value, key=key, headers=headers or None, timestamp=ts, partition=0, on_delivery=cb)
        if p.flush(30) != 0 or errors:
            raise RuntimeError("produce failed: %r" % errors[:3])
        brokers = p.list_topics(timeout=10).brokers
        b = next(iter(brokers.values()))
        data = fetch_all(b.host, b.port, topic)
        vectors.write_case(out, "librdkafka-v2-" + codec, 2, codec, data, recs)
    sys.stdout.write(out.getvalue())


if __name__ == "__main__":
    if sys.argv[1:2] == ["write"]:
        write()
    else:
        sys.exit(__doc__)
