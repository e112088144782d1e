#!/usr/bin/env python3
"""Record batches through kafka-python's own record classes (an independent implementation).

    kafka_python_records.py write        print vectors encoded by kafka-python (vectors.py format)
    kafka_python_records.py read FILE    decode FILE's vectors with kafka-python and check them

kafka-python's kafka.record package (MemoryRecordsBuilder, MemoryRecords, legacy and default
records) encodes and decodes magic 0, 1 and 2 with gzip, snappy (xerial framing), lz4 and zstd
without a broker. Needs: pip install kafka-python python-snappy lz4 zstandard
"""
import io
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vectors  # noqa: E402

from kafka.record.memory_records import MemoryRecordsBuilder, MemoryRecords  # noqa: E402


def build(magic, codec, records):
    b = MemoryRecordsBuilder(magic=magic, compression_type=vectors.CODECS[codec], batch_size=1 << 30)
    for (offset, ts, key, value, headers) in records:
        assert b.next_offset() == offset
        meta = b.append(timestamp=ts, key=key, value=value, headers=headers)
        assert meta is not None
    b.close()
    return bytes(b.buffer())


def write():
    out = io.StringIO()
    for magic in (0, 1, 2):
        for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
            if codec == "zstd" and magic < 2:
                continue
            recs = vectors.sample_records(with_headers=(magic == 2))
            data = build(magic, codec, recs)
            if magic == 0:
                recs = [(o, -1, k, v, h) for (o, _, k, v, h) in recs]
            vectors.write_case(out, "kafka-python-v%d-%s" % (magic, codec), magic, codec, data, recs)
    # Several batches in one records field: three v2 batches with different codecs.
    data = b""
    all_recs = []
    for i, codec in enumerate(("gzip", "none", "lz4")):
        recs = [(o + 100 * i, ts, k, v, h) for (o, ts, k, v, h) in vectors.sample_records(True, n=10)]
        b = MemoryRecordsBuilder(magic=2, compression_type=vectors.CODECS[codec], batch_size=1 << 30, offset=100 * i)
        for (o, ts, k, v, h) in recs:
            b.append(timestamp=ts, key=k, value=v, headers=h)
        b.close()
        data += bytes(b.buffer())
        all_recs += recs
    vectors.write_case(out, "kafka-python-v2-three-batches", 2, "mixed", data, all_recs)
    sys.stdout.write(out.getvalue())


def read(path):
    with open(path) as f:
        cases = vectors.read_cases(f.read())
    failures = 0
    for case in cases:
        got = []
        try:
            mr = MemoryRecords(case["data"])
            while True:
                batch = mr.next_batch()
                if batch is None:
                    break
                if hasattr(batch, "validate_crc") and not batch.validate_crc():
                    raise ValueError("CRC check failed")
                for r in batch:
                    if hasattr(r, "validate_crc") and not r.validate_crc():
                        raise ValueError("record CRC check failed")
                    headers = [(k, None if v is None else bytes(v)) for (k, v) in (r.headers or [])]
                    ts = -1 if r.timestamp is None else r.timestamp
                    got.append((r.offset, ts, None if r.key is None else bytes(r.key),
                                None if r.value is None else bytes(r.value), headers))
        except Exception as e:  # report and go on to the next case
            print("FAIL %s: %r" % (case["name"], e))
            failures += 1
            continue
        if got != case["records"]:
            print("FAIL %s: records differ" % case["name"])
            for a, b in zip(got, case["records"]):
                if a != b:
                    print("  got      %r\n  expected %r" % (a, b))
                    break
            print("  counts: got %d expected %d" % (len(got), len(case["records"])))
            failures += 1
        else:
            print("ok %s (%d records)" % (case["name"], len(got)))
    print("kafka-python read %d cases, %d failed" % (len(cases), failures))
    return 1 if failures else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["write"]:
        write()
    elif sys.argv[1:2] == ["read"] and len(sys.argv) == 3:
        sys.exit(read(sys.argv[2]))
    else:
        sys.exit(__doc__)
