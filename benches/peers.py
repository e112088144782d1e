#!/usr/bin/env python3
"""Prints the one table of BENCHMARKS.md's "Every peer, one run", from the files benches/peers.sh leaves.

Per workload and operation: kwire's median, and each peer's time divided by kwire's
(above 1: kwire is faster), then allocations per operation where they are known.

  criterion   target/criterion/**/new/{benchmark,estimates}.json   median (kwire, kafka-protocol: benches/codec.rs;
              krabka-protocol: benches/krabka, same group names)
  JMH         target/peers/jmh.json                                median of the measurement iterations; gc.alloc.rate.norm
  go test     target/peers/go.txt (-benchmem -count N)              median of the N runs; allocs/op
  allocations target/peers/counts.txt (bench_counts)                kwire's and kafka-protocol's allocs/op

Usage: python3 benches/peers.py [target]      (--absolute: peers' own times instead of ratios)
"""

import json
import pathlib
import re
import statistics
import sys

args = [a for a in sys.argv[1:] if not a.startswith("--")]
absolute = "--absolute" in sys.argv
target = pathlib.Path(args[0] if args else "target")
peers_dir = target / "peers"

RUST = ["kwire", "kafka-protocol", "krabka-protocol"]
PEERS = ["kafka-protocol", "krabka-protocol", "Java", "franz-go"]
times = {}  # (workload, op) -> {implementation: ns}
allocs = {}  # (workload, op) -> {implementation: str}


def put(table, workload, op, who, value):
    table.setdefault((workload, op), {})[who] = value


sys.path.insert(0, str(pathlib.Path(__file__).parent))
from ratios import criterion_medians  # noqa: E402

for (group, op), crates in criterion_medians(target / "criterion").items():
    for who, ns in crates.items():
        put(times, group.split()[0], op, "kwire" if who == "-" else who, ns)

jmh = peers_dir / "jmh.json"
if jmh.exists():
    for run in json.loads(jmh.read_text()):
        workload, _, op = run["benchmark"].rsplit(".", 1)[1].partition("_")
        scores = [s for fork in run["primaryMetric"]["rawData"] for s in fork]
        put(times, workload, op, "Java", statistics.median(scores))
        gc = run.get("secondaryMetrics", {}).get("gc.alloc.rate.norm")
        if gc:
            put(allocs, workload, op, "Java", f"{gc['score']:,.0f} B")

go = peers_dir / "go.txt"
if go.exists():
    runs = {}
    for line in go.read_text().splitlines():
        m = re.match(r"BenchmarkPeers/(\w+)/(\w+)-\d+\s+\d+\s+([\d.]+) ns/op.*?(?:(\d+) allocs/op)?$", line)
        if m:
            runs.setdefault((m[1], m[2]), []).append((float(m[3]), m[4]))
    for (workload, op), rs in runs.items():
        put(times, workload, op, "franz-go", statistics.median(r[0] for r in rs))
        if rs[0][1] is not None:
            put(allocs, workload, op, "franz-go", f"{int(rs[0][1]):,}")

counts = peers_dir / "counts.txt"
if counts.exists():
    for line in counts.read_text().splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 2 and parts[0].count("/") == 2:
            workload, op, who = parts[0].split("/")
            put(allocs, workload, op, who if who != "-" else "kwire", f"{int(parts[1]):,}")

# Peer operations kwire has no exact twin of, compared with the nearest one.
NEAREST = {"decode_unsafe": "decode", "decode_borrow": "decode"}
ORDER = ["encode", "encode_size", "encode_sized", "encode_vectored", "memcpy", "decode", "view", "decode_borrow", "decode_unsafe", "decode_vec"]
WORKLOADS = ["W1", "W2", "W3", "W4a", "W4b", "W5"]


def fmt(ns):
    for unit, scale in (("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


present = [p for p in PEERS if any(p in m for m in times.values())]
head = ["workload", "op", "kwire"] + [f"{p} ÷ kw" if not absolute else p for p in present]
head.append("allocs/op: " + " / ".join(["kw"] + [p for p in ["kafka-protocol", "franz-go"] if p in present]))
if "Java" in present:
    head.append("Java B/op")
print("| " + " | ".join(head) + " |")
print("|" + "---|" * 2 + "---:|" * (len(head) - 2))
keys = sorted(times, key=lambda k: (WORKLOADS.index(k[0]) if k[0] in WORKLOADS else 99, ORDER.index(k[1]) if k[1] in ORDER else 99))
for workload, op in keys:
    m = times[(workload, op)]
    ours = m.get("kwire")
    base = ours if ours is not None else times.get((workload, NEAREST.get(op, op)), {}).get("kwire")
    row = [workload, op if ours is not None or op not in NEAREST else f"{op} (vs kw {NEAREST[op]})", fmt(ours) if ours is not None else "–"]
    for p in present:
        t = m.get(p)
        # The view is compared with each peer's fullest borrowed-or-owned decode of the frame.
        if op == "view" and t is None:
            t = times.get((workload, "decode_borrow"), {}).get(p) or times.get((workload, "decode"), {}).get(p)
        if t is None:
            row.append("")
        elif absolute or base is None:
            row.append(fmt(t) if absolute else f"({fmt(t)})")
        else:
            row.append(f"{t / base:.2f}x")
    a = allocs.get((workload, op), {})
    cells = [a.get("kwire", "")] + [a.get(p, "") for p in ["kafka-protocol", "franz-go"] if p in present]
    row.append(" / ".join(c or "–" for c in cells) if any(cells) else "")
    if "Java" in present:
        row.append(a.get("Java", ""))
    print("| " + " | ".join(row) + " |")
