#!/usr/bin/env python3
"""The client benchmark's driver (issue 27), run by run.sh once everything is built.

For each configuration (record size, compression, acks), `--rounds` rounds; round r runs every
client once per role, in an order rotated by r, so no client always runs first or last on the
noisy machine. Every run is checked, nothing is taken on trust:
  produce: COUNT records into a fresh 6-partition topic; the client prints the count and digest
           of what it got acknowledged; the fixed reader (the Java program's `verify`, reading
           the topic to its end offsets) must find the same count and digest, and both must be
           the digest of records 0..COUNT.
  consume: COUNT records from a topic written once per configuration (by the Java producer,
           checked by the reader); the client's count and digest must be the expected ones.
Any mismatch, failure or timeout stops the benchmark with a non-zero status.

Each run appends one JSON line to --out: the client's own figures over its send/receive phase
(seconds, its CPU and the broker's, read from /proc by the client at the phase's ends), and the
process's peak RSS and total CPU from /usr/bin/time. table.py prints the medians.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = os.environ.get("KWIRE_BENCH_TARGET") or os.path.join(HERE, "target")
# release, or debug for the checks (run.sh sets it).
PROFILE = os.environ.get("KWIRE_BENCH_PROFILE") or "release"
CLIENTS = ["kwire", "confluent", "rdkafka", "kgo", "java"]


class Failure(Exception):
    pass


def die(msg):
    raise Failure(msg)


def read_env(path):
    env = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.strip().partition("=")
            if k:
                env[k] = v
    return env


class Bench:
    def __init__(self, opts):
        self.opts = opts
        self.env = read_env(opts.env)
        self.bootstrap = self.env["BOOTSTRAP"]
        pids = [v for k, v in sorted(self.env.items()) if re.fullmatch(r"NODE\d+_PID", k)]
        self.child_env = dict(os.environ, BENCH_BROKER_PIDS=",".join(pids))
        self.java_cp = f"{self.env['KAFKA_LIB']}/*:{TARGET}/java"
        self.stamp = time.strftime("%H%M%S")
        self.out = open(opts.out, "a") if opts.out else None
        self.failures = []

    def attempt(self, what, record, fn):
        """fn(), or with --keep-going a failed client run recorded (and the status kept for
        the end) instead of the benchmark stopped."""
        try:
            return fn()
        except Failure as e:
            if not self.opts.keep_going:
                raise
            print(f"  FAILED {what}: {e}", flush=True)
            self.failures.append(f"{what}: {e}")
            if self.out:
                self.out.write(json.dumps(dict(record, failed=str(e)[:500])) + "\n")
                self.out.flush()
            return None

    def command(self, client, args):
        if client == "kwire":
            return [f"{TARGET}/{PROFILE}/kwire"] + args
        if client in ("confluent", "rdkafka"):
            return [f"{TARGET}/{PROFILE}/{client}"] + args
        if client == "kgo":
            return [f"{TARGET}/kgobench"] + args
        if client == "java":
            # Java's own defaults (G1, its JIT); -Xmx bounds the 16 KiB rows' heap.
            return ["java", "-Xmx2g", "-cp", self.java_cp, "ClientBench"] + args
        die(f"unknown client {client}")

    def run(self, cmd, timeout):
        """Runs cmd under /usr/bin/time; returns (stdout, peak RSS KiB, user+sys s)."""
        tfile = os.path.join(TARGET, "time.out")
        full = ["/usr/bin/time", "-o", tfile, "-f", "%M %U %S"] + cmd
        try:
            p = subprocess.run(full, capture_output=True, text=True, timeout=timeout, env=self.child_env)
        except subprocess.TimeoutExpired:
            die(f"timed out after {timeout} s: {' '.join(cmd)}")
        if p.returncode != 0:
            sys.stderr.write(p.stderr[-4000:])
            die(f"exit status {p.returncode}: {' '.join(cmd)}")
        with open(tfile) as f:
            rss, user, sys_ = f.read().split()[-3:]
        return p.stdout, int(rss), float(user) + float(sys_)

    def helper(self, args, timeout=60):
        out, _, _ = self.run([f"{TARGET}/{PROFILE}/kwire"] + args, timeout)
        return out.strip()

    def create(self, topic):
        self.helper(["create", self.bootstrap, topic, "6", str(self.opts.replication)])

    def delete(self, topics):
        if topics:
            self.helper(["delete", self.bootstrap] + topics)

    def verify(self, topics):
        """The fixed reader: {topic: (count, digest)} of everything each topic holds."""
        out, _, _ = self.run(self.command("java", ["verify", self.bootstrap, "6"] + topics), self.timeout * 2)
        found = re.findall(r"VERIFY topic=(\S+) count=(\d+) bytes=\d+ digest=([0-9a-f]{16})", out)
        if len(found) != len(topics):
            die(f"verify printed {len(found)} results for {len(topics)} topics:\n{out}")
        return {t: (int(c), d) for t, c, d in found}

    def client_run(self, client, args, record):
        load = float(open("/proc/loadavg").read().split()[0])
        out, rss, proc_cpu = self.run(self.command(client, args), self.timeout)
        m = re.search(r"^RESULT (.*)$", out, re.M)
        if not m:
            die(f"{client} printed no RESULT line:\n{out}")
        fields = dict(kv.split("=", 1) for kv in m.group(1).split())
        record.update(fields)
        record.update(client=client, rss_kb=rss, proc_cpu=proc_cpu, load1=load)
        if client == "kwire":
            # The kwire program's runtime: current-thread unless KWIRE_BENCH_THREADS > 1.
            record["kwire_threads"] = max(1, int(os.environ.get("KWIRE_BENCH_THREADS") or 1))
        for k in ("count", "bytes"):
            record[k] = int(record[k])
        for k in ("secs", "cpu", "broker_cpu"):
            record[k] = float(record[k])
        for k in ("p50_us", "p99_us", "p999_us"):
            if k in record:
                record[k] = int(record[k])
        return record

    def save(self, record):
        if self.out:
            self.out.write(json.dumps(record) + "\n")
            self.out.flush()
        r = record
        line = f"  {r['role']:8} {r['client']:9} r{r['round']} {r['count'] / r['secs']:>11,.0f} rec/s  {r['bytes'] / r['secs'] / 1e6:7.1f} MB/s  cpu {r['cpu']:.2f}s  broker {r['broker_cpu']:.2f}s  rss {r['rss_kb'] // 1024} MiB  load {r['load1']}"
        if "p50_us" in r:
            line += f"  p50/p99/p999 {r['p50_us']}/{r['p99_us']}/{r['p999_us']} us"
        print(line, flush=True)

    def config(self, size, compression, acks, count):
        o = self.opts
        self.timeout = o.timeout
        expected = self.helper(["expect", str(count), str(size)])
        name = f"{size}-{compression}-{'idem' if acks == 'all' else 'acks1'}"
        base = dict(size=size, compression=compression, acks=acks, nodes=o.nodes, rate=o.rate, expected_count=count)
        print(f"== {name}: {count} records, expected digest {expected}", flush=True)
        dataset = None
        if "consume" in o.roles:
            # The consumers' data set: written once by the Java producer, checked by the reader.
            dataset = f"bench-c-{name}-{self.stamp}"
            self.create(dataset)
            rec = self.client_run("java", ["produce", self.bootstrap, dataset, str(count), str(size), compression, acks, "0"], {})
            got = self.verify([dataset])[dataset]
            if got != (count, expected) or (rec["count"], rec["digest"]) != (count, expected):
                die(f"data set {dataset}: the reader found {got}, the writer said {(rec['count'], rec['digest'])}, expected {(count, expected)}")
        clients = o.clients
        for r in range(o.rounds):
            order = clients[r % len(clients):] + clients[:r % len(clients)]
            if "produce" in o.roles:
                made = {}
                for client in order:
                    topic = f"bench-p-{name}-{client}-{self.stamp}-r{r}"
                    self.create(topic)
                    meta = dict(base, role="produce", round=r, client=client)

                    def produce():
                        rec = self.client_run(client, ["produce", self.bootstrap, topic, str(count), str(size), compression, acks, str(o.rate)], dict(meta))
                        if (rec["count"], rec["digest"]) != (count, expected):
                            die(f"{client} produce: acknowledged {rec['count']} records, digest {rec['digest']}; expected {count}, {expected}")
                        return rec

                    rec = self.attempt(f"{client} produce r{r}", meta, produce)
                    made[topic] = rec
                # One reader for the round's topics (one JVM start), then they go.
                found = self.verify([t for t, rec in made.items() if rec])
                for topic, rec in made.items():
                    if not rec:
                        continue

                    def check(rec=rec, topic=topic):
                        if found[topic] != (count, expected):
                            die(f"{rec['client']} produce: the reader found {found[topic]} in {topic}, expected {(count, expected)}")
                        return True

                    if not self.attempt(f"{rec['client']} produce r{r} (read back)", rec, check):
                        continue
                    rec["verified"] = True
                    self.save(rec)
                self.delete(list(made))
            if "consume" in o.roles:
                for client in order:
                    meta = dict(base, role="consume", round=r, client=client)

                    def consume():
                        rec = self.client_run(client, ["consume", self.bootstrap, dataset, str(count), str(size), "6"], dict(meta))
                        if (rec["count"], rec["digest"]) != (count, expected):
                            die(f"{client} consume: read {rec['count']} records, digest {rec['digest']}; expected {count}, {expected}")
                        return rec

                    rec = self.attempt(f"{client} consume r{r}", meta, consume)
                    if rec:
                        rec["verified"] = True
                        self.save(rec)
        if dataset:
            self.delete([dataset])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--env", required=True, help="the broker's env file (scripts/kafka.sh start)")
    ap.add_argument("--check", action="store_true", help="CI: small counts, one round, every client, nothing timed")
    ap.add_argument("--sizes", default="100", help="record sizes in bytes, comma-separated")
    ap.add_argument("--compression", default="lz4", help="none,lz4,zstd (comma-separated)")
    ap.add_argument("--acks", default="all", help="all (idempotent) and/or 1, comma-separated")
    ap.add_argument("--roles", default="produce,consume")
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--count", type=int, default=0, help="records per run (default by size: ~1-3 s a run)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--rate", type=int, default=0, help="produce at this many records/s and report latency")
    ap.add_argument("--replication", type=int, default=1)
    ap.add_argument("--nodes", type=int, default=1, help="recorded with the results")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per client run")
    ap.add_argument("--out", help="append one JSON line per run")
    ap.add_argument("--keep-going", action="store_true", help="record a failed client run and go on; exit non-zero at the end")
    o = ap.parse_args()
    o.roles = o.roles.split(",")
    o.clients = o.clients.split(",")
    bad = [c for c in o.clients if c not in CLIENTS]
    if bad:
        die(f"unknown clients {bad}")
    if o.check:
        o.keep_going = False
    b = Bench(o)
    if o.check:
        o.rounds, o.rate, o.timeout = 1, 0, 120
        configs = [(100, "none", "all", 20_000), (100, "lz4", "all", 20_000), (1024, "zstd", "all", 5_000)]
    else:
        default_count = {10: 1_000_000, 100: 1_000_000, 1024: 200_000, 16384: 20_000}
        configs = [
            (int(s), c, a, o.count or default_count.get(int(s), 100_000))
            for a in o.acks.split(",") for s in o.sizes.split(",") for c in o.compression.split(",")
        ]
    try:
        for size, compression, acks, count in configs:
            b.config(size, compression, acks, count)
    except Failure as e:
        print(f"bench.py: FAIL: {e}", file=sys.stderr)
        sys.exit(1)
    if b.failures:
        print("bench.py: FAIL: " + "; ".join(b.failures), file=sys.stderr)
        sys.exit(1)
    print("bench.py: every count and digest agreed", flush=True)


if __name__ == "__main__":
    main()
