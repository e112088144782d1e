//! What every client program of the benchmark shares (the Go and Java programs hold the same
//! code, line for line where it matters): the payloads from a fixed seed, the digest, the CPU
//! counters and the one result line the driver (bench.py) parses.
//!
//! Payloads: a pool of about 1 MiB of random letters, digits, `-` and `_` (a fixed-seed xorshift,
//! so lz4 and zstd save little, as with ProducerPerformance's random payloads), cut into
//! `slots = max(1, 2^20 / size)` values of `size` bytes; record i carries slot i mod slots. A
//! batch (64 KiB) never holds the same value twice, and a producer need not keep COUNT values
//! in memory.
//!
//! Digest: the wrapping sum over the records of a 64-bit hash of each value (FNV-1a over
//! little-endian 8-byte words, then the murmur3 finaliser), so it does not depend on the order
//! the records were acknowledged or read in, and a lost or duplicated record changes it.

#![allow(dead_code)] // each binary uses a different part

use std::time::Instant;

pub const POOL_BYTES: usize = 1 << 20;

pub struct Pool {
    pub size: usize,
    pub slots: usize,
    pub bytes: Vec<u8>,
    /// The hash of every slot's value, so a producer adds an acknowledged record's hash
    /// without reading its bytes again.
    pub hashes: Vec<u64>,
}

impl Pool {
    pub fn new(size: usize) -> Pool {
        const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let slots = (POOL_BYTES / size).max(1);
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let bytes: Vec<u8> = (0..slots * size)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                ALPHABET[(x >> 58) as usize]
            })
            .collect();
        let hashes = (0..slots).map(|s| hash(&bytes[s * size..(s + 1) * size])).collect();
        Pool { size, slots, bytes, hashes }
    }

    /// Record i's value.
    pub fn value(&self, i: u64) -> &[u8] {
        let s = (i % self.slots as u64) as usize;
        &self.bytes[s * self.size..(s + 1) * self.size]
    }

    pub fn range(&self, i: u64) -> std::ops::Range<usize> {
        let s = (i % self.slots as u64) as usize;
        s * self.size..(s + 1) * self.size
    }

    pub fn hash_of(&self, i: u64) -> u64 {
        self.hashes[(i % self.slots as u64) as usize]
    }

    /// The digest of records 0..count.
    pub fn expected(&self, count: u64) -> u64 {
        let all = self.hashes.iter().fold(0u64, |a, h| a.wrapping_add(*h));
        let full = count / self.slots as u64;
        let rest = (count % self.slots as u64) as usize;
        self.hashes[..rest].iter().fold(all.wrapping_mul(full), |a, h| a.wrapping_add(*h))
    }
}

pub fn hash(v: &[u8]) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01B3;
    let mut h: u64 = 0xCBF2_9CE4_8422_2325 ^ v.len() as u64;
    let mut words = v.chunks_exact(8);
    for w in &mut words {
        h = (h ^ u64::from_le_bytes(w.try_into().unwrap())).wrapping_mul(PRIME);
    }
    for b in words.remainder() {
        h = (h ^ *b as u64).wrapping_mul(PRIME);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h ^= h >> 33;
    h = h.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    h ^ (h >> 33)
}

/// user + system CPU seconds of a process from /proc/PID/stat (fields 14 and 15, in ticks of
/// 1/100 s, Linux's USER_HZ).
pub fn cpu_of(pid: &str) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return f64::NAN };
    // The command name may hold spaces; the fields after it start past its `)`.
    let Some(at) = stat.rfind(')') else { return f64::NAN };
    let fields: Vec<&str> = stat[at + 2..].split(' ').collect();
    let ticks = |n: usize| fields.get(n).and_then(|f| f.parse::<f64>().ok()).unwrap_or(f64::NAN);
    (ticks(11) + ticks(12)) / 100.0
}

/// The broker processes' CPU (BENCH_BROKER_PIDS, comma-separated), summed.
pub fn broker_cpu() -> f64 {
    std::env::var("BENCH_BROKER_PIDS").unwrap_or_default().split(',').filter(|p| !p.is_empty()).map(cpu_of).sum()
}

/// The measured phase: wall clock, this process's CPU and the broker's.
pub struct Phase {
    start: Instant,
    cpu: f64,
    broker: f64,
}

impl Phase {
    pub fn start() -> Phase {
        Phase { start: Instant::now(), cpu: cpu_of("self"), broker: broker_cpu() }
    }

    pub fn elapsed_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    /// The result line; `extra` is appended (latency percentiles).
    pub fn report(&self, client: &str, role: &str, count: u64, bytes: u64, digest: u64, extra: &str) {
        let secs = self.start.elapsed().as_secs_f64();
        let cpu = cpu_of("self") - self.cpu;
        let broker = broker_cpu() - self.broker;
        println!("RESULT client={client} role={role} count={count} bytes={bytes} digest={digest:016x} secs={secs:.4} cpu={cpu:.2} broker_cpu={broker:.2}{extra}");
    }
}

/// The arguments every program takes:
///   produce BOOTSTRAP TOPIC COUNT SIZE COMPRESSION ACKS RATE
///   consume BOOTSTRAP TOPIC COUNT SIZE PARTITIONS
/// COMPRESSION none|lz4|zstd; ACKS `all` (idempotent) or `1` (not); RATE records/s, 0 for as
/// fast as it goes.
pub struct Args {
    pub role: String,
    pub bootstrap: String,
    pub topic: String,
    pub count: u64,
    pub size: usize,
    pub compression: String,
    pub acks_all: bool,
    pub rate: u64,
    pub partitions: i32,
}

pub fn args() -> Args {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let usage = || -> ! {
        eprintln!("usage: produce BOOTSTRAP TOPIC COUNT SIZE none|lz4|zstd all|1 RATE | consume BOOTSTRAP TOPIC COUNT SIZE PARTITIONS");
        std::process::exit(2)
    };
    let get = |i: usize| a.get(i).cloned().unwrap_or_else(|| usage());
    let num = |i: usize| get(i).parse::<u64>().unwrap_or_else(|_| usage());
    let role = get(0);
    match role.as_str() {
        "produce" => {
            let acks = get(6);
            if acks != "all" && acks != "1" {
                usage()
            }
            Args { role, bootstrap: get(1), topic: get(2), count: num(3), size: num(4) as usize, compression: get(5), acks_all: acks == "all", rate: num(7), partitions: 0 }
        }
        "consume" => Args { role, bootstrap: get(1), topic: get(2), count: num(3), size: num(4) as usize, compression: String::new(), acks_all: true, rate: 0, partitions: num(5) as i32 },
        _ => usage(),
    }
}

/// Fixed-rate pacing: record i is due `i / rate` seconds after the start. Latency is measured
/// from that due time, so a client that falls behind is charged for it.
pub fn due_ns(i: u64, rate: u64) -> u64 {
    if rate == 0 {
        0
    } else {
        (i as u128 * 1_000_000_000 / rate as u128) as u64
    }
}

/// Latencies in microseconds; p50/p99/p999 as ` p50_us=.. p99_us=.. p999_us=..`.
pub struct Latency(pub hdrhistogram::Histogram<u64>);

impl Latency {
    pub fn new() -> Latency {
        Latency(hdrhistogram::Histogram::new_with_bounds(1, 600_000_000, 3).unwrap())
    }

    pub fn record_ns(&mut self, ns: u64) {
        self.0.saturating_record((ns / 1000).max(1));
    }

    pub fn extra(&self) -> String {
        let q = |p: f64| self.0.value_at_quantile(p);
        format!(" p50_us={} p99_us={} p999_us={}", q(0.5), q(0.99), q(0.999))
    }
}

/// Fails the run loudly: the driver sees the exit status and the message.
pub fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("FAIL: {msg}");
    std::process::exit(1)
}
