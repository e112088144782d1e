//! Interop with independent implementations, through the scripts in `tests/interop/records/`:
//!
//! - batches written by kafka-python (magic 0, 1 and 2, every codec the format allows) and by
//!   librdkafka (magic 2, every codec) decode to exactly the records that were produced;
//! - batches written by this crate (every magic and codec) are read back by kafka-python.
//!
//! The vectors are generated at test time; nothing third-party is committed. The tests need
//! Python 3 with the packages listed in `tests/interop/records/README.md`; without them (or with
//! `KWIRE_SKIP_INTEROP=1`) they skip with a notice, unless `KWIRE_REQUIRE_CLIENTS` is set. `KWIRE_PYTHON` names the
//! interpreter (default `python3`).

use std::path::PathBuf;
use std::process::Command;

use kwire_runtime::records::{Batch, Batches, Compression, Header, LegacyBuilder, Record, RecordBatchBuilder};
use kwire_runtime::Bytes;

#[path = "../../tests/support/skip.rs"]
mod skip;

fn interop_missing(test: &str) -> bool {
    if std::env::var("KWIRE_SKIP_INTEROP").as_deref() == Ok("1") {
        println!("NOTICE: {test} skipped (KWIRE_SKIP_INTEROP=1)");
        return true;
    }
    // A newcomer's machine may lack the Python packages: say what to install, unless CI
    // (KWIRE_REQUIRE_CLIENTS) requires them.
    let probe = "import kafka, confluent_kafka, snappy, lz4, zstandard, xxhash";
    let py = std::env::var("KWIRE_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let ok = Command::new(&py).args(["-c", probe]).output().is_ok_and(|o| o.status.success());
    if !ok {
        skip::skipped(test, &format!("`{py} -c \"{probe}\"` fails (scripts/setup.sh installs the packages)"));
    }
    !ok
}

fn script_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/interop/records")
}

fn python(args: &[&str]) -> (bool, String, String) {
    let py = std::env::var("KWIRE_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let out = Command::new(&py)
        .args(args)
        .current_dir(script_dir())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {py} (set KWIRE_SKIP_INTEROP=1 to skip interop tests): {e}"));
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

struct Case {
    name: String,
    magic: i8,
    codec: String,
    data: Bytes,
    records: Vec<Record>,
}

fn dec(tok: &str) -> Option<Bytes> {
    if tok == "-" {
        return None;
    }
    let hex = tok.strip_prefix('x').unwrap_or_else(|| panic!("bad token {tok}"));
    Some(Bytes::from(hex::decode(hex).unwrap()))
}

fn enc(b: Option<&[u8]>) -> String {
    b.map_or_else(|| "-".to_string(), |b| format!("x{}", hex::encode(b)))
}

fn parse(text: &str) -> Vec<Case> {
    let mut cases = Vec::new();
    let mut cur: Option<Case> = None;
    for line in text.lines() {
        let tok: Vec<&str> = line.split_whitespace().collect();
        match tok.first().copied() {
            Some("CASE") => {
                cur = Some(Case {
                    name: tok[1].to_string(),
                    magic: tok[2].parse().unwrap(),
                    codec: tok[3].to_string(),
                    data: Bytes::from(hex::decode(tok.get(4).copied().unwrap_or("")).unwrap()),
                    records: Vec::new(),
                })
            }
            Some("REC") => {
                let n: usize = tok[5].parse().unwrap();
                let mut r = Record::new(tok[1].parse().unwrap(), tok[2].parse().unwrap(), dec(tok[3]), dec(tok[4]));
                for i in 0..n {
                    let k = dec(tok[6 + 2 * i]).unwrap();
                    r.headers.push(Header::new(std::str::from_utf8(&k).unwrap(), dec(tok[7 + 2 * i])));
                }
                cur.as_mut().unwrap().records.push(r);
            }
            Some("END") => cases.push(cur.take().unwrap()),
            _ => {}
        }
    }
    cases
}

fn write_case(out: &mut String, name: &str, magic: i8, codec: Compression, data: &[u8], records: &[Record]) {
    out.push_str(&format!("CASE {name} {magic} {codec} {}\n", hex::encode(data)));
    for r in records {
        out.push_str(&format!("REC {} {} {} {} {}", r.offset, r.timestamp, enc(r.key.as_deref()), enc(r.value.as_deref()), r.headers.len()));
        for h in &r.headers {
            out.push_str(&format!(" {} {}", enc(Some(h.key.as_bytes())), enc(h.value.as_deref())));
        }
        out.push('\n');
    }
    out.push_str("END\n");
}

/// Decodes a case's records field and checks every record, the magic and the codec.
fn check_case(case: &Case) {
    let mut got = Vec::new();
    // librdkafka sends a batch uncompressed when compressing does not make it smaller, which a
    // small batch (a loaded machine can split the records into several) may be: its batches are
    // the codec's or uncompressed, and at least one is the codec's.
    let may_skip = case.name.starts_with("librdkafka") && case.codec != "none";
    let mut with_codec = 0;
    for batch in Batches::new(case.data.clone()) {
        let batch = batch.unwrap_or_else(|e| panic!("{}: {e}", case.name));
        assert!(!batch.is_partial(), "{}: unexpected partial batch", case.name);
        assert_eq!(batch.magic(), Some(case.magic), "{}", case.name);
        let codec = batch.compression().unwrap().name();
        with_codec += usize::from(codec == case.codec);
        if case.codec != "mixed" && !(may_skip && codec == "none") {
            assert_eq!(codec, case.codec, "{}", case.name);
        }
        if let Batch::V2(b) = &batch {
            // Header fields agree with the records.
            let rs = batch.records().unwrap();
            assert_eq!(b.record_count() as usize, rs.len(), "{}", case.name);
            if let (Some(first), Some(last)) = (rs.first(), rs.last()) {
                // Compaction may remove records at either end, so only bounds hold in general.
                assert!(b.base_offset() <= first.offset, "{}", case.name);
                assert!(b.last_offset() >= last.offset, "{}", case.name);
                assert_eq!(b.max_timestamp(), rs.iter().map(|r| r.timestamp).max().unwrap(), "{}", case.name);
            }
        }
        got.extend(batch.records().unwrap_or_else(|e| panic!("{}: {e}", case.name)));
    }
    assert_eq!(got.len(), case.records.len(), "{}: record count", case.name);
    if may_skip {
        assert!(with_codec > 0, "{}: no batch is {}", case.name, case.codec);
    }
    for (g, e) in got.iter().zip(&case.records) {
        assert_eq!(g, e, "{}", case.name);
    }
}

fn run_writer(script: &str, test: &str) -> Vec<Case> {
    let (ok, stdout, stderr) = python(&[script, "write"]);
    assert!(ok, "{script} write failed:\n{stderr}");
    let cases = parse(&stdout);
    assert!(!cases.is_empty(), "{test}: no cases from {script}:\n{stderr}");
    cases
}

#[test]
fn kafka_python_batches_decode_exactly() {
    if interop_missing("kafka_python_batches_decode_exactly") {
        return;
    }
    let cases = run_writer("kafka_python_records.py", "kafka-python");
    let mut seen = Vec::new();
    for case in &cases {
        check_case(case);
        seen.push((case.magic, case.codec.clone()));
    }
    // Every codec for magic 2, every legacy codec for magic 0 and 1.
    for magic in 0..=2i8 {
        for c in ["none", "gzip", "snappy", "lz4", "zstd"] {
            if magic < 2 && c == "zstd" {
                continue;
            }
            assert!(seen.contains(&(magic, c.to_string())), "missing kafka-python v{magic} {c}");
        }
    }
    println!("kafka-python: {} cases decoded exactly", cases.len());
}

#[test]
fn librdkafka_batches_decode_exactly() {
    if interop_missing("librdkafka_batches_decode_exactly") {
        return;
    }
    let cases = run_writer("librdkafka_records.py", "librdkafka");
    let codecs: Vec<&str> = cases.iter().map(|c| c.codec.as_str()).collect();
    assert_eq!(codecs, ["none", "gzip", "snappy", "lz4", "zstd"]);
    for case in &cases {
        check_case(case);
    }
    println!("librdkafka: {} cases decoded exactly", cases.len());
}

fn sample(with_headers: bool) -> Vec<Record> {
    (0..50i64)
        .map(|i| {
            let key = (i % 7 != 3).then(|| Bytes::from(format!("key-{i}")));
            let value = match i {
                _ if i % 11 == 5 => None,
                _ if i % 13 == 6 => Some(Bytes::new()),
                _ => Some(Bytes::from(format!("value {i} ").repeat(1 + i as usize % 40))),
            };
            let mut r = Record::new(1000 + i, 1_700_000_000_000 + i * 5 - i % 3, key, value);
            if with_headers {
                if i % 3 == 0 {
                    r = r.with_header("trace", Some(Bytes::from(format!("id-{i}"))));
                }
                if i % 4 == 1 {
                    r = r.with_header("dup", Some(Bytes::from_static(b"one"))).with_header("dup", None);
                }
                if i % 5 == 2 {
                    r = r.with_header("clé-ü", Some(Bytes::from_static(b"\x00\xff")));
                }
            }
            r
        })
        .collect()
}

#[test]
fn our_batches_are_read_by_kafka_python() {
    if interop_missing("our_batches_are_read_by_kafka_python") {
        return;
    }
    let mut text = String::new();
    let mut n = 0;
    for c in Compression::ALL {
        let records = sample(true);
        let mut b = RecordBatchBuilder::new().compression(c).producer(5, 1, 0);
        for r in &records {
            b.append(r.clone()).unwrap();
        }
        write_case(&mut text, &format!("kwire-v2-{c}"), 2, c, &b.build().unwrap(), &records);
        n += 1;
        if c == Compression::Zstd {
            continue;
        }
        for magic in [0i8, 1] {
            let mut records = sample(false);
            let mut l = LegacyBuilder::new(magic).compression(c);
            for r in &records {
                l.append(r.clone()).unwrap();
            }
            if magic == 0 {
                records.iter_mut().for_each(|r| r.timestamp = -1);
            }
            write_case(&mut text, &format!("kwire-v{magic}-{c}"), magic, c, &l.build().unwrap(), &records);
            n += 1;
        }
    }
    let path = std::env::temp_dir().join(format!("kwire-records-{}.txt", std::process::id()));
    std::fs::write(&path, &text).unwrap();
    let (ok, stdout, stderr) = python(&["kafka_python_records.py", "read", path.to_str().unwrap()]);
    let _ = std::fs::remove_file(&path);
    println!("{stdout}");
    assert!(ok, "kafka-python could not read our batches:\n{stdout}\n{stderr}");
    assert!(stdout.contains(&format!("read {n} cases, 0 failed")), "{stdout}");
    // Our own reader agrees with what we told kafka-python to expect.
    for case in parse(&text) {
        check_case(&case);
    }
}
