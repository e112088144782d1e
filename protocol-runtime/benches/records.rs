//! Encoding and decoding one batch of 1000 records with 100-byte values (and 8-byte keys, one
//! header), uncompressed and per codec, next to the `kafka-protocol` crate's records module in
//! the same groups.
//!
//! `cargo bench -p kwire-runtime --bench records`
//!
//! Decode ids: `kwire` materialises every record into a `Vec<Record>` (as kafka-protocol
//! does); `kwire-lazy` walks the records without collecting them.

use bytes::{Bytes, BytesMut};
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records as kp;
use kwire_runtime::records::{Batch, Batches, Compression, Record, RecordBatchBuilder};

const N: usize = 1000;

fn value(i: usize) -> Vec<u8> {
    // Somewhat compressible, not constant.
    (0..100).map(|j| b"abcdefghijklmnopqrstuvwxyz0123456789"[(i * 7 + j) % 36]).collect()
}

fn ours() -> Vec<Record> {
    (0..N)
        .map(|i| {
            Record::new(i as i64, 1_700_000_000_000 + i as i64, Some(Bytes::from(format!("key{i:05}"))), Some(Bytes::from(value(i))))
                .with_header("trace", Some(Bytes::from_static(b"0123456789abcdef")))
        })
        .collect()
}

fn theirs() -> Vec<kp::Record> {
    (0..N)
        .map(|i| {
            let mut headers = kafka_protocol::indexmap::IndexMap::new();
            headers.insert(StrBytes::from_static_str("trace"), Some(Bytes::from_static(b"0123456789abcdef")));
            kp::Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: -1,
                producer_id: -1,
                producer_epoch: -1,
                timestamp_type: kp::TimestampType::Creation,
                offset: i as i64,
                sequence: -1,
                timestamp: 1_700_000_000_000 + i as i64,
                key: Some(Bytes::from(format!("key{i:05}"))),
                value: Some(Bytes::from(value(i))),
                headers,
            }
        })
        .collect()
}

fn kp_codec(c: Compression) -> kp::Compression {
    match c {
        Compression::None => kp::Compression::None,
        Compression::Gzip => kp::Compression::Gzip,
        Compression::Snappy => kp::Compression::Snappy,
        Compression::Lz4 => kp::Compression::Lz4,
        Compression::Zstd => kp::Compression::Zstd,
    }
}

fn bench(c: &mut Criterion) {
    let our_records = ours();
    let their_records = theirs();
    for codec in Compression::ALL {
        let builder = RecordBatchBuilder::new().compression(codec);
        let mut encoded = Vec::new();
        builder.build_from(&our_records, &mut encoded).unwrap();
        let encoded = Bytes::from(encoded);
        let opts = kp::RecordEncodeOptions { version: 2, compression: kp_codec(codec) };

        let mut g = c.benchmark_group(format!("records/encode/{codec}"));
        g.throughput(Throughput::Elements(N as u64));
        g.bench_function(BenchmarkId::new("kwire", codec), |b| {
            let mut out = Vec::with_capacity(encoded.len() * 2);
            b.iter(|| {
                out.clear();
                builder.build_from(black_box(&our_records), &mut out).unwrap();
                black_box(out.len())
            })
        });
        g.bench_function(BenchmarkId::new("kafka-protocol", codec), |b| {
            let mut out = BytesMut::with_capacity(encoded.len() * 2);
            b.iter(|| {
                out.clear();
                kp::RecordBatchEncoder::encode(&mut out, black_box(&their_records), &opts).unwrap();
                black_box(out.len())
            })
        });
        g.finish();

        // kafka-protocol must read what we wrote, and we what it wrote.
        let mut theirs_encoded = BytesMut::new();
        kp::RecordBatchEncoder::encode(&mut theirs_encoded, &their_records, &opts).unwrap();
        let theirs_encoded = theirs_encoded.freeze();
        assert_eq!(kp::RecordBatchDecoder::decode(&mut encoded.clone()).unwrap().records.len(), N);
        assert_eq!(kwire_runtime::records::decode_all(theirs_encoded, &Default::default()).unwrap().0.len(), N);

        let mut g = c.benchmark_group(format!("records/decode/{codec}"));
        g.throughput(Throughput::Elements(N as u64));
        g.bench_function(BenchmarkId::new("kwire", codec), |b| {
            b.iter(|| {
                let mut all = Vec::with_capacity(N);
                for batch in Batches::new(black_box(encoded.clone())) {
                    let Batch::V2(batch) = batch.unwrap() else { unreachable!() };
                    for r in batch.records().unwrap() {
                        all.push(r.unwrap());
                    }
                }
                black_box(all.len())
            })
        });
        g.bench_function(BenchmarkId::new("kwire-lazy", codec), |b| {
            b.iter(|| {
                let mut n = 0usize;
                for batch in Batches::new(black_box(encoded.clone())) {
                    let Batch::V2(batch) = batch.unwrap() else { unreachable!() };
                    for r in batch.records().unwrap() {
                        n += r.unwrap().value.map_or(0, |v| v.len());
                    }
                }
                black_box(n)
            })
        });
        g.bench_function(BenchmarkId::new("kafka-protocol", codec), |b| {
            b.iter(|| {
                let mut buf = black_box(encoded.clone());
                let set = kp::RecordBatchDecoder::decode(&mut buf).unwrap();
                black_box(set.records.len())
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
