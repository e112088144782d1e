#!/usr/bin/env python3
"""Prints the ratio table of BENCHMARKS.md from the last `cargo bench --bench codec` run.

Reads criterion's `target/criterion/**/new/{benchmark,estimates}.json` for the W1-W5 groups and
prints, per workload and operation, both crates' medians and kafka-protocol / kwire.
Usage: python3 benches/ratios.py [target/criterion]
"""

import json
import pathlib
import sys



def criterion_medians(root):
    """{(group, op): {crate: median ns}} from criterion's files under root ("-" for crate-less ids)."""
    medians = {}
    for bench in pathlib.Path(root).glob("*/*/new/benchmark.json"):
        meta = json.loads(bench.read_text())
        group, function = meta["group_id"], meta["function_id"]
        if not group.startswith("W") or function is None:
            continue
        ns = json.loads((bench.parent / "estimates.json").read_text())["median"]["point_estimate"]
        op, _, crate = function.partition("/")
        medians.setdefault((group, op), {})[crate or "-"] = ns
    return medians

def fmt(ns):
    if ns is None:
        return "–"
    for unit, scale in (("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def order(key):
    group, op = key
    ops = ["encode", "encode_sized", "encode_vectored", "memcpy", "decode", "decode_vec"]
    return (group.split()[0].lower(), ops.index(op) if op in ops else 99)


if __name__ == "__main__":
    medians = criterion_medians(sys.argv[1] if len(sys.argv) > 1 else "target/criterion")
    print("| workload | operation | kwire | kafka-protocol | kafka-protocol / kwire |")
    print("|---|---|---:|---:|---:|")
    for group, op in sorted(medians, key=order):
        m = medians[(group, op)]
        ours, theirs = m.get("kwire"), m.get("kafka-protocol")
        ratio = f"**{theirs / ours:.2f}x**" if ours and theirs else "–"
        if op == "memcpy":
            ours = m.get("-")
        print(f"| {group} | {op} | {fmt(ours)} | {fmt(theirs)} | {ratio} |")
