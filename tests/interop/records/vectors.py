"""Shared text format for record-batch test vectors exchanged with the Rust tests.

One case per block:

    CASE <name> <magic> <codec> <hex of the records field: one or more batches>
    REC <offset> <timestamp> <key> <value> <header count> [<header key> <header value>]...
    ...
    END

Keys and values are "-" for null or "x" followed by hex ("x" alone is empty). Header keys are
written the same way (as UTF-8 bytes). Timestamps are as produced; magic 0 has none (-1).
"""

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def enc(b):
    return "-" if b is None else "x" + bytes(b).hex()


def dec(tok):
    if tok == "-":
        return None
    assert tok.startswith("x"), tok
    return bytes.fromhex(tok[1:])


def write_case(out, name, magic, codec, data, records):
    out.write("CASE %s %d %s %s\n" % (name, magic, codec, bytes(data).hex()))
    for (offset, ts, key, value, headers) in records:
        parts = ["REC", str(offset), str(ts), enc(key), enc(value), str(len(headers))]
        for hk, hv in headers:
            parts += [enc(hk.encode("utf-8")), enc(hv)]
        out.write(" ".join(parts) + "\n")
    out.write("END\n")


def read_cases(text):
    cases = []
    cur = None
    for line in text.splitlines():
        tok = line.split()
        if not tok:
            continue
        if tok[0] == "CASE":
            cur = {"name": tok[1], "magic": int(tok[2]), "codec": tok[3],
                   "data": bytes.fromhex(tok[4]) if len(tok) > 4 else b"", "records": []}
        elif tok[0] == "REC":
            n = int(tok[5])
            headers = [(dec(tok[6 + 2 * i]).decode("utf-8"), dec(tok[7 + 2 * i])) for i in range(n)]
            cur["records"].append((int(tok[1]), int(tok[2]), dec(tok[3]), dec(tok[4]), headers))
        elif tok[0] == "END":
            cases.append(cur)
            cur = None
    return cases


def sample_records(with_headers, n=60, base_ts=1700000000000):
    """A deterministic record set with nulls, empties, duplicate and non-ASCII header keys and
    values large enough for compression to matter. Offsets start at 0."""
    recs = []
    for i in range(n):
        key = None if i % 7 == 3 else ("key-%d" % i).encode()
        if i % 11 == 5:
            value = None
        elif i % 13 == 6:
            value = b""
        else:
            value = (("value %d " % i) * (1 + i % 40)).encode()
        headers = []
        if with_headers:
            if i % 3 == 0:
                headers.append(("trace", ("id-%d" % i).encode()))
            if i % 4 == 1:
                headers += [("dup", b"one"), ("dup", None), ("dup", b"")]
            if i % 5 == 2:
                headers.append(("clé-ü", b"\x00\xff"))
        recs.append((i, base_ts + i * 3 - (i % 4), key, value, headers))
    return recs
