#!/usr/bin/env python3
"""Markdown tables of the client benchmark's runs (bench.py --out FILE), one row per client and
configuration: medians over the rounds, with the min-max spread of records/s.

  python3 benches/clients/table.py results.jsonl [more.jsonl ...]

Columns: records/s and MB/s (of values) over the client's own send/receive phase; CPU s per
million records, the client's over that phase (user + system, /proc/self/stat) and the whole
process's (/usr/bin/time: start-up, JIT and close included); the broker's CPU over the phase
per million records; peak RSS; the 1-minute load average when the runs started. Fixed-rate
produce rows give the p50/p99/p999 latency (us) from each record's due time to its
acknowledgement instead of the CPU of the process.

Below each table, the rows where kwire-client misses a target of issue 27: not ahead of the
best peer in records/s, or above 2/3 of the lowest CPU per record among the peers.
"""

import json
import statistics
import sys
from collections import defaultdict

ORDER = ["kwire", "confluent", "rdkafka", "kgo", "java"]
NAMES = {"kwire": "kwire-client", "confluent": "confluent-kafka 1.0.0", "rdkafka": "rdkafka 0.39 (librdkafka 2.12.1)", "kgo": "franz-go 1.22.3", "java": "Java kafka-clients 4.4.0"}


def med(xs):
    return statistics.median(xs)


def size_name(s):
    return f"{s // 1024} KiB" if s >= 1024 else f"{s} B"


def main():
    runs = []
    for path in sys.argv[1:]:
        with open(path) as f:
            runs += [json.loads(line) for line in f if line.strip()]
    groups = defaultdict(lambda: defaultdict(list))
    failed = defaultdict(list)
    # Which runtime the kwire program ran on, per configuration (bench.py records it).
    threads = {}
    for r in runs:
        if r["client"] == "kwire":
            threads[(r["nodes"], r["role"], r["rate"], r["acks"], r["size"], r["compression"])] = r.get("kwire_threads", 1)
    for r in runs:
        key = (r["nodes"], r["role"], r["rate"], r["acks"], r["size"], r["compression"])
        if "failed" in r:
            # bench.py --keep-going: a run that failed its check or did not finish.
            failed[key].append(r)
        else:
            groups[key][r["client"]].append(r)
    for key in sorted(groups, key=lambda k: (k[0], k[1] != "produce", k[2], k[3] != "all", k[4], ["lz4", "none", "zstd"].index(k[5]))):
        nodes, role, rate, acks, size, comp = key
        by = groups[key]
        acks_name = "acks=all, idempotent" if acks == "all" else "acks=1"
        title = f"{role}, {size_name(size)} records, {comp}"
        if role == "produce":
            title += f", {acks_name}"
        if rate:
            title += f", at {rate:,} records/s"
        title += f", {nodes} node{'s' if nodes > 1 else ''}"
        if threads.get(key, 1) > 1:
            title += f", kwire-client on {threads[key]} workers"
        n = by[next(iter(by))][0]["expected_count"]
        rounds = max(len(v) for v in by.values())
        print(f"#### {title} ({n:,} records a run, {rounds} rounds)\n")
        if rate:
            print("| client | records/s | p50 us | p99 us | p999 us | CPU s / M records | broker CPU s / M | peak RSS MiB | load |")
            print("|---|---|---|---|---|---|---|---|---|")
        else:
            print("| client | records/s (min-max) | MB/s | CPU s / M records (phase) | process CPU s / M | broker CPU s / M | peak RSS MiB | load |")
            print("|---|---|---|---|---|---|---|---|")
        stats = {}
        for c in ORDER:
            if c not in by:
                continue
            rs = by[c]
            rps = [r["count"] / r["secs"] for r in rs]
            s = dict(
                rps=med(rps), lo=min(rps), hi=max(rps),
                mbs=med([r["bytes"] / r["secs"] / 1e6 for r in rs]),
                cpu=med([r["cpu"] / r["count"] * 1e6 for r in rs]),
                proc=med([r["proc_cpu"] / r["count"] * 1e6 for r in rs]),
                broker=med([r["broker_cpu"] / r["count"] * 1e6 for r in rs]),
                rss=med([r["rss_kb"] / 1024 for r in rs]),
                load=f"{min(r['load1'] for r in rs):.1f}-{max(r['load1'] for r in rs):.1f}",
            )
            stats[c] = s
            if rate:
                lat = [med([r[k] for r in rs]) for k in ("p50_us", "p99_us", "p999_us")]
                print(f"| {NAMES[c]} | {s['rps']:,.0f} | {lat[0]:,.0f} | {lat[1]:,.0f} | {lat[2]:,.0f} | {s['cpu']:.2f} | {s['broker']:.2f} | {s['rss']:.0f} | {s['load']} |")
            else:
                print(f"| {NAMES[c]} | {s['rps']:,.0f} ({s['lo']:,.0f}-{s['hi']:,.0f}) | {s['mbs']:.1f} | {s['cpu']:.2f} | {s['proc']:.2f} | {s['broker']:.2f} | {s['rss']:.0f} | {s['load']} |")
        print()
        for r in failed[key]:
            print(f"- Failed: {NAMES[r['client']]}, round {r['round']}: {r['failed'].splitlines()[0][:300]}")
        peers = {c: s for c, s in stats.items() if c != "kwire"}
        if "kwire" in stats and peers:
            k = stats["kwire"]
            fast = max(peers, key=lambda c: peers[c]["rps"])
            lean = min(peers, key=lambda c: peers[c]["cpu"])
            notes = []
            if not rate and k["rps"] <= peers[fast]["rps"]:
                notes.append(f"records/s: kwire-client {k['rps']:,.0f}, not ahead of {NAMES[fast]} ({peers[fast]['rps']:,.0f}, {k['rps'] / peers[fast]['rps']:.2f}x)")
            if k["cpu"] > peers[lean]["cpu"] * 2 / 3:
                notes.append(f"CPU: kwire-client {k['cpu']:.2f} s per M records, {k['cpu'] / peers[lean]['cpu']:.2f}x {NAMES[lean]}'s {peers[lean]['cpu']:.2f}, the target being at most {peers[lean]['cpu'] * 2 / 3:.2f} (2/3)")
            for note in notes:
                print(f"- Miss: {note}.")
            if not notes:
                print("- kwire-client meets both targets on this row.")
            print()


if __name__ == "__main__":
    main()
