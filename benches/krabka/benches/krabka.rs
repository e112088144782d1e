//! krabka-protocol 0.8.0 on the frames `bench_counts dump` writes (target/peers/frames, or
//! $KWIRE_FRAMES), with criterion group and function names as in benches/codec.rs so that
//! benches/peers.py reads them next to kwire's. Run with `CRITERION_HOME` at the main
//! target/criterion (benches/peers.sh does). Each frame's length and digest are checked, and so
//! is krabka's re-encode of what it decoded, before anything is timed.
//!
//! Per message: `decode` (owned types, from `Bytes`), `decode_borrow` (its borrowed types, from
//! `&[u8]`), `encode` (reused buffer), `encode_sized` (`encoded_len`, one allocation, encode).
//! W5: `decode` is the borrowed batch (CRC checked) and its lazy record iterator, every record's
//! fields touched; `decode_vec` the owned batch with its `Vec<Record>`; `encode`/`encode_sized`
//! the owned batch.

use std::path::PathBuf;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use criterion::{black_box, Criterion, Throughput};
use krabka_protocol::records::{RecordBatch, RecordBatchBorrowed};
use krabka_protocol::{owned, borrowed, Decode, DecodeBorrow, Encode};

const KR: &str = "krabka-protocol";

fn fnv1a64(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf29ce484222325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100000001b3))
}

/// The frame of workload `id`, after its length and digest are checked.
fn load(id: &str, len: usize, digest: u64) -> Bytes {
    let dir = std::env::var_os("KWIRE_FRAMES").map(PathBuf::from).unwrap_or_else(|| "../../target/peers/frames".into());
    let path = dir.join(format!("{id}.bin"));
    let frame = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e} (run bench_counts dump first)", path.display()));
    assert!(frame.len() == len && fnv1a64(&frame) == digest, "{id}: {} bytes, fnv1a64 {:016x}", frame.len(), fnv1a64(&frame));
    Bytes::from(frame)
}

/// One message workload: checks krabka's round trip is byte-identical, then times it.
/// `borrow` decodes with the borrowed type (a closure: its type's lifetime is the frame's).
fn message<O, F>(c: &mut Criterion, group: &str, id: &str, len: usize, digest: u64, v: i16, borrow: F)
where
    O: for<'de> Decode<'de> + Encode,
    F: Fn(&[u8], i16),
{
    let frame = load(id, len, digest);
    // krabka parses the records inside Produce and Fetch; W2/W3's records are random bytes
    // (WORKLOADS.md), which it rejects: that workload is skipped, with its error.
    let ours = match O::decode(&mut frame.clone(), v) {
        Ok(m) => m,
        Err(e) => {
            println!("{id}: skipped, krabka-protocol does not decode the frame: {e}");
            return;
        }
    };
    let mut out = BytesMut::new();
    ours.encode(&mut out, v).unwrap();
    if out[..] != frame[..] {
        let at = out.iter().zip(frame.iter()).position(|(a, b)| a != b).unwrap_or(out.len().min(len));
        println!("{id}: skipped, krabka-protocol's re-encode differs from the frame: {} bytes (frame {len}), first difference at byte {at}", out.len());
        return;
    }
    assert_eq!(ours.encoded_len(v), len, "{id}: encoded_len");
    borrow(&frame, v);

    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Bytes(len as u64));
    let mut buf = BytesMut::with_capacity(len);
    g.bench_function(format!("encode/{KR}"), |b| {
        b.iter(|| {
            buf.clear();
            ours.encode(&mut buf, v).unwrap();
        })
    });
    g.bench_function(format!("encode_sized/{KR}"), |b| {
        b.iter(|| {
            let mut out = BytesMut::with_capacity(ours.encoded_len(v));
            ours.encode(&mut out, v).unwrap();
            out
        })
    });
    g.bench_function(format!("decode/{KR}"), |b| b.iter(|| O::decode(&mut frame.clone(), v).unwrap()));
    g.bench_function(format!("decode_borrow/{KR}"), |b| b.iter(|| borrow(&frame, v)));
    g.finish();
}

fn records(c: &mut Criterion) {
    let frame = load("W5", 138_933, 0x5545403253dc18a5);
    let batch = RecordBatch::decode_batch(&mut frame.clone()).expect("W5: krabka decode_batch");
    assert_eq!(batch.records.len(), 1000);
    let mut out = BytesMut::new();
    batch.encode_batch(&mut out).unwrap();
    assert!(out[..] == frame[..], "W5: krabka's re-encode differs from the frame");
    assert_eq!(batch.encoded_batch_len(), frame.len());

    let mut g = c.benchmark_group("W5 RecordBatch v2");
    g.throughput(Throughput::Bytes(frame.len() as u64));
    let mut buf = BytesMut::with_capacity(frame.len());
    g.bench_function(format!("encode/{KR}"), |b| {
        b.iter(|| {
            buf.clear();
            batch.encode_batch(&mut buf).unwrap();
        })
    });
    g.bench_function(format!("encode_sized/{KR}"), |b| {
        b.iter(|| {
            let mut out = BytesMut::with_capacity(batch.encoded_batch_len());
            batch.encode_batch(&mut out).unwrap();
            out
        })
    });
    g.bench_function(format!("decode/{KR}"), |b| {
        b.iter(|| {
            let batch = RecordBatchBorrowed::decode_borrow(&mut &frame[..], 2).unwrap();
            let (base_offset, base_ts) = (batch.header().base_offset.get(), batch.header().base_timestamp.get());
            for r in batch.iter() {
                let r = r.unwrap();
                black_box((base_offset + i64::from(r.offset_delta), base_ts + r.timestamp_delta, r.key, r.value, &r.headers));
            }
        })
    });
    g.bench_function(format!("decode_vec/{KR}"), |b| b.iter(|| RecordBatch::decode_batch(&mut frame.clone()).unwrap()));
    g.finish();
}

fn main() {
    let mut c = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    message::<owned::metadata_response::MetadataResponse, _>(
        &mut c, "W1 MetadataResponse v12", "W1", 456_160, 0xe9b80e55ae2f48e0, 12, |f, v| {
            black_box(borrowed::metadata_response::MetadataResponse::decode_borrow(&mut &f[..], v).unwrap());
        });
    message::<owned::produce_request::ProduceRequest, _>(
        &mut c, "W2 ProduceRequest v9", "W2", 1_639_339, 0x77a546b9c2d579a0, 9, |f, v| {
            black_box(borrowed::produce_request::ProduceRequest::decode_borrow(&mut &f[..], v).unwrap());
        });
    message::<owned::fetch_response::FetchResponse, _>(
        &mut c, "W3 FetchResponse v12", "W3", 6_557_642, 0x4f882f929bc6e0c7, 12, |f, v| {
            black_box(borrowed::fetch_response::FetchResponse::decode_borrow(&mut &f[..], v).unwrap());
        });
    message::<owned::api_versions_request::ApiVersionsRequest, _>(
        &mut c, "W4a ApiVersionsRequest v3", "W4a", 26, 0xe29dcd9f20225244, 3, |f, v| {
            black_box(borrowed::api_versions_request::ApiVersionsRequest::decode_borrow(&mut &f[..], v).unwrap());
        });
    message::<owned::api_versions_response::ApiVersionsResponse, _>(
        &mut c, "W4b ApiVersionsResponse v3", "W4b", 428, 0xdbbd8f41a26a08a4, 3, |f, v| {
            black_box(borrowed::api_versions_response::ApiVersionsResponse::decode_borrow(&mut &f[..], v).unwrap());
        });
    records(&mut c);
    c.final_summary();
}
