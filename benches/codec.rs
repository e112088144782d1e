//! Workloads W1-W5 of `../shared/bench/WORKLOADS.md`, kwire and kafka-protocol 0.18.0 in
//! the same criterion groups, so one run gives comparable medians (BENCHMARKS.md).
//!
//! ```sh
//! cargo bench --bench codec -- --warm-up-time 1 --measurement-time 3
//! python3 benches/ratios.py   # the ratio table from target/criterion
//! ```
//!
//! Every frame is checked against the listed length and FNV-1a 64 digest before anything is
//! timed. Per workload: `encode` into a reused buffer, `encode_sized` (exact size, one allocation,
//! encode, drop), `decode` from `Bytes` including dropping the result; W2/W3 add `memcpy` (the
//! same number of bytes copied into a pre-faulted buffer) and `encode_vectored` (kwire's
//! frame as `Bytes` chunks with the records uncopied, see `workloads/vectored.rs`).

#[path = "workloads/mod.rs"]
mod workloads;

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use criterion::measurement::WallTime;
use criterion::{black_box, BenchmarkGroup, Criterion, Throughput};
use kafka_protocol::protocol::{Decodable, Encodable};
use kwire::codec::Vectored;
use kwire::runtime::records::{Batch, Batches};
use kwire::Message;
use workloads::{check, kp, kw, Data, Spec};

const KW: &str = "kwire";
const KP: &str = "kafka-protocol";

fn group<'a>(c: &'a mut Criterion, spec: &Spec) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(format!("{} {}", spec.id, spec.name));
    g.throughput(Throughput::Bytes(spec.len as u64));
    g
}

/// Checks both crates' frames, then benches encode, encode_sized and decode for both.
fn message<A, B>(g: &mut BenchmarkGroup<'_, WallTime>, spec: &Spec, ours: &A, theirs: &B) -> Bytes
where
    A: Message,
    B: Encodable + Decodable,
{
    let v = spec.version;
    let frame = ours.to_bytes(v).expect("kwire encodes the workload");
    check(spec, KW, &frame).unwrap();
    let mut kp_frame = BytesMut::new();
    theirs.encode(&mut kp_frame, v).expect("kafka-protocol encodes the workload");
    check(spec, KP, &kp_frame).unwrap();

    let mut buf = BytesMut::with_capacity(spec.len);
    g.bench_function(format!("encode/{KW}"), |b| {
        b.iter(|| {
            buf.clear();
            ours.encode(&mut buf, v).unwrap();
        })
    });
    g.bench_function(format!("encode/{KP}"), |b| {
        b.iter(|| {
            buf.clear();
            theirs.encode(&mut buf, v).unwrap();
        })
    });
    g.bench_function(format!("encode_sized/{KW}"), |b| {
        b.iter(|| {
            let mut out = BytesMut::with_capacity(ours.encoded_len(v));
            ours.encode(&mut out, v).unwrap();
            out
        })
    });
    g.bench_function(format!("encode_sized/{KP}"), |b| {
        b.iter(|| {
            let mut out = BytesMut::with_capacity(theirs.compute_size(v).unwrap());
            theirs.encode(&mut out, v).unwrap();
            out
        })
    });
    g.bench_function(format!("decode/{KW}"), |b| b.iter(|| A::decode(&mut frame.clone(), v).unwrap()));
    g.bench_function(format!("decode/{KP}"), |b| b.iter(|| B::decode(&mut frame.clone(), v).unwrap()));
    frame
}

/// The physical reference for W1/W2/W3: the frame's bytes copied into a pre-faulted buffer.
fn memcpy(g: &mut BenchmarkGroup<'_, WallTime>, frame: &Bytes) {
    let src = frame.to_vec();
    let mut dst = vec![0xa5u8; src.len()];
    g.bench_function("memcpy", |b| {
        b.iter(|| {
            dst.copy_from_slice(black_box(&src));
            black_box(&mut dst);
        })
    });
}

/// kwire's frame as chunks, records uncopied; checked against the frame first.
fn vectored<A: Message>(g: &mut BenchmarkGroup<'_, WallTime>, spec: &Spec, ours: &A, shared: fn(&A) -> Vec<Bytes>, frame: &Bytes) {
    let v = spec.version;
    let head = 4096;
    let mut out = Vectored::new(shared(ours), head);
    ours.encode(&mut out, v).unwrap();
    assert_eq!(out.shared_count(), shared(ours).len(), "{}: every records field passed through", spec.id);
    assert_eq!(out.finish().concat(), frame.as_ref(), "{}: vectored frame", spec.id);
    g.bench_function(format!("encode_vectored/{KW}"), |b| {
        b.iter(|| {
            let mut out = Vectored::new(shared(ours), head);
            ours.encode(&mut out, v).unwrap();
            out.finish()
        })
    });
}

fn messages(c: &mut Criterion, d: &Data) {
    let spec = &workloads::W1;
    let mut g = group(c, spec);
    let frame = message(&mut g, spec, &kw::w1(d), &kp::w1(d));
    // The borrowed view, read in full, against the physical floor.
    g.bench_function(format!("view/{KW}"), |b| b.iter(|| kw::w1_view_read(black_box(&frame))));
    memcpy(&mut g, &frame);
    drop(g);

    let spec = &workloads::W2;
    let mut g = group(c, spec);
    let ours = kw::w2(d);
    let frame = message(&mut g, spec, &ours, &kp::w2(d));
    memcpy(&mut g, &frame);
    vectored(&mut g, spec, &ours, kw::w2_shared, &frame);
    g.finish();

    let spec = &workloads::W3;
    let mut g = group(c, spec);
    let ours = kw::w3(d);
    let frame = message(&mut g, spec, &ours, &kp::w3(d));
    memcpy(&mut g, &frame);
    vectored(&mut g, spec, &ours, kw::w3_shared, &frame);
    g.finish();

    let spec = &workloads::W4A;
    message(&mut group(c, spec), spec, &kw::w4a(), &kp::w4a());
    let spec = &workloads::W4B;
    message(&mut group(c, spec), spec, &kw::w4b(), &kp::w4b());
}

/// W5: kwire's `RecordBatchBuilder` and lazy `Batches`/`RecordIter` against
/// kafka-protocol's `RecordBatchEncoder`/`RecordBatchDecoder`.
fn records(c: &mut Criterion, d: &Data) {
    let spec = &workloads::W5;
    let builder = kw::w5(d);
    let theirs = kp::w5(d);
    let frame = builder.build().unwrap();
    check(spec, KW, &frame).unwrap();
    let mut kp_frame = BytesMut::new();
    kafka_protocol::records::RecordBatchEncoder::encode(&mut kp_frame, &theirs, &kp::W5_OPTIONS).unwrap();
    check(spec, KP, &kp_frame).unwrap();

    let mut g = group(c, spec);
    let mut out = Vec::with_capacity(spec.len);
    g.bench_function(format!("encode/{KW}"), |b| {
        b.iter(|| {
            out.clear();
            builder.build_into(&mut out).unwrap();
        })
    });
    let mut buf = BytesMut::with_capacity(spec.len);
    g.bench_function(format!("encode/{KP}"), |b| {
        b.iter(|| {
            buf.clear();
            kafka_protocol::records::RecordBatchEncoder::encode(&mut buf, &theirs, &kp::W5_OPTIONS).unwrap();
        })
    });
    // `build` sizes the batch, then allocates once. kafka-protocol cannot size a batch; it is
    // given the exact size for free, which favours it.
    g.bench_function(format!("encode_sized/{KW}"), |b| b.iter(|| builder.build().unwrap()));
    g.bench_function(format!("encode_sized/{KP}"), |b| {
        b.iter(|| {
            let mut out = BytesMut::with_capacity(spec.len);
            kafka_protocol::records::RecordBatchEncoder::encode(&mut out, &theirs, &kp::W5_OPTIONS).unwrap();
            out
        })
    });
    // Every record decoded (offsets, timestamps, key, value, headers checked), none collected.
    g.bench_function(format!("decode/{KW}"), |b| {
        b.iter(|| {
            for batch in Batches::new(frame.clone()) {
                if let Batch::V2(batch) = batch.unwrap() {
                    for r in batch.records().unwrap() {
                        black_box(r.unwrap());
                    }
                }
            }
        })
    });
    // The same, collected into a `Vec<Record>` as kafka-protocol returns them.
    g.bench_function(format!("decode_vec/{KW}"), |b| b.iter(|| Batches::new(frame.clone()).map(|b| b.unwrap().records().unwrap()).collect::<Vec<_>>()));
    g.bench_function(format!("decode/{KP}"), |b| b.iter(|| kafka_protocol::records::RecordBatchDecoder::decode(&mut frame.clone()).unwrap()));
    g.finish();
}

fn main() {
    let d = Data::new();
    let mut c = Criterion::default().sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3)).configure_from_args();
    messages(&mut c, &d);
    records(&mut c, &d);
    c.final_summary();
}
