//! Property tests: random record sets round-trip through every codec and both batch formats,
//! and hostile input never panics.

use kwire_runtime::records::{Batch, Batches, Compression, DecodeOptions, Header, LegacyBuilder, Record, RecordBatchBuilder};
use kwire_runtime::Bytes;
use proptest::prelude::*;

fn opt_bytes(max: usize) -> impl Strategy<Value = Option<Bytes>> {
    proptest::option::weighted(0.8, proptest::collection::vec(any::<u8>(), 0..max).prop_map(Bytes::from))
}

fn header() -> impl Strategy<Value = Header> {
    // Few distinct keys, so duplicates are common.
    (prop_oneof![Just("a".to_string()), Just("b".to_string()), "[a-zé]{0,6}"], opt_bytes(20)).prop_map(|(k, v)| Header::new(k, v))
}

/// Records with increasing offsets (gaps allowed) and arbitrary timestamps around a base.
fn records(with_headers: bool) -> impl Strategy<Value = Vec<Record>> {
    let max_headers = if with_headers { 4 } else { 0 };
    (
        0i64..1 << 40,
        proptest::collection::vec((1i64..5, -100_000i64..100_000, opt_bytes(40), opt_bytes(300), proptest::collection::vec(header(), 0..=max_headers)), 1..40),
    )
        .prop_map(|(base, rs)| {
            let mut offset = base;
            rs.into_iter()
                .map(|(gap, ts, k, v, hs)| {
                    offset += gap;
                    let mut r = Record::new(offset, 1_600_000_000_000 + ts, k, v);
                    r.headers = hs.into();
                    r
                })
                .collect()
        })
}

fn enabled_codecs() -> impl Iterator<Item = Compression> {
    Compression::ALL.into_iter().filter(|c| c.is_enabled())
}

fn decode_everything(bytes: Bytes) -> Vec<Record> {
    let mut out = Vec::new();
    for batch in Batches::new(bytes) {
        let batch = batch.unwrap();
        assert!(!batch.is_partial());
        out.extend(batch.records().unwrap());
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn v2_round_trips_through_every_codec(rs in records(true)) {
        for c in enabled_codecs() {
            let mut b = RecordBatchBuilder::new().compression(c);
            for r in &rs {
                b.append(r.clone()).unwrap();
            }
            let bytes = b.build().unwrap();
            // What compression is measured against: the batch less its header, uncompressed.
            if c == Compression::None {
                prop_assert_eq!(RecordBatchBuilder::new().uncompressed_size(&rs).unwrap(), bytes.len() - 61);
            }
            let Some(Ok(Batch::V2(batch))) = Batches::new(bytes.clone()).next() else { panic!("{c}") };
            prop_assert_eq!(batch.compression(), c);
            prop_assert_eq!(batch.record_count() as usize, rs.len());
            prop_assert_eq!(batch.base_offset(), rs[0].offset);
            prop_assert_eq!(batch.last_offset(), rs.last().unwrap().offset);
            prop_assert_eq!(batch.base_timestamp(), rs[0].timestamp);
            prop_assert_eq!(batch.max_timestamp(), rs.iter().map(|r| r.timestamp).max().unwrap());
            prop_assert_eq!(&decode_everything(bytes), &rs);
        }
    }

    #[test]
    fn legacy_round_trips_through_every_codec(rs in records(false), magic in 0i8..=1) {
        for c in enabled_codecs().filter(|c| *c != Compression::Zstd) {
            let mut b = LegacyBuilder::new(magic).compression(c);
            for r in &rs {
                b.append(r.clone()).unwrap();
            }
            let bytes = b.build().unwrap();
            let expected: Vec<Record> = rs
                .iter()
                .cloned()
                .map(|mut r| {
                    if magic == 0 {
                        r.timestamp = -1;
                    }
                    r
                })
                .collect();
            prop_assert_eq!(&decode_everything(bytes), &expected, "magic {} {}", magic, c);
        }
    }

    #[test]
    fn several_batches_and_any_cut_never_panic(rs in records(true), cut in any::<prop::sample::Index>()) {
        let mut all = Vec::new();
        for (i, c) in enabled_codecs().enumerate() {
            let mut b = RecordBatchBuilder::new().compression(c);
            for r in &rs {
                let mut r = r.clone();
                r.offset += (i as i64) << 20;
                b.append(r).unwrap();
            }
            b.build_into(&mut all).unwrap();
        }
        let n = cut.index(all.len() + 1);
        let items: Vec<_> = Batches::new(Bytes::from(all[..n].to_vec())).collect();
        // Every item but a partial tail is a complete, valid batch.
        for (i, item) in items.iter().enumerate() {
            match item {
                Ok(Batch::Partial(_)) => prop_assert_eq!(i, items.len() - 1),
                Ok(b) => prop_assert_eq!(b.records().unwrap().len(), rs.len()),
                Err(e) => panic!("{e}"),
            }
        }
    }

    #[test]
    fn mutated_batches_never_panic(rs in records(true), flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8), legacy in any::<bool>(), codec in 0usize..5) {
        let c = Compression::ALL[codec];
        prop_assume!(c.is_enabled() && !(legacy && c == Compression::Zstd));
        let mut bytes = if legacy {
            let mut b = LegacyBuilder::new(1).compression(c);
            for r in &rs { b.append(Record { headers: Default::default(), ..r.clone() }).unwrap(); }
            b.build().unwrap().to_vec()
        } else {
            let mut b = RecordBatchBuilder::new().compression(c);
            for r in &rs { b.append(r.clone()).unwrap(); }
            b.build().unwrap().to_vec()
        };
        for (i, v) in flips {
            let n = bytes.len();
            bytes[i.index(n)] = v;
        }
        let opts = DecodeOptions { verify_crc: false, max_decompressed_size: 1 << 20 };
        for b in Batches::with_options(Bytes::from(bytes), opts).flatten() {
            let _ = b.records_with(&opts);
        }
    }

    #[test]
    fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..400), magic in 0u8..3) {
        let mut data = data;
        if data.len() > 16 {
            data[16] = magic;
        }
        let opts = DecodeOptions { verify_crc: false, max_decompressed_size: 1 << 20 };
        for b in Batches::with_options(Bytes::from(data), opts).flatten() {
            let _ = b.records_with(&opts);
        }
    }
}

/// A valid batch header with hostile counts and lengths must fail cleanly without allocating
/// what the count claims.
#[test]
fn hostile_counts_and_lengths() {
    let opts = DecodeOptions { verify_crc: false, ..DecodeOptions::default() };
    let mut b = RecordBatchBuilder::new();
    b.append(Record::new(0, 0, Some(Bytes::from_static(b"key")), Some(Bytes::from_static(b"value"))).with_header("h", None)).unwrap();
    let good = b.build().unwrap().to_vec();
    let decode = |raw: Vec<u8>| -> Result<Vec<Record>, String> {
        let mut out = Vec::new();
        for item in Batches::with_options(Bytes::from(raw), opts) {
            let item = item.map_err(|e| e.to_string())?;
            out.extend(item.records_with(&opts).map_err(|e| e.to_string())?);
        }
        Ok(out)
    };
    assert_eq!(decode(good.clone()).unwrap().len(), 1);

    // Record count of i32::MAX and of -1.
    for count in [i32::MAX, -1, 2] {
        let mut raw = good.clone();
        raw[57..61].copy_from_slice(&count.to_be_bytes());
        assert!(decode(raw).is_err(), "count {count}");
    }
    // Record length varint claiming far more than remains (zigzag 0x7fffffff).
    let mut raw = good.clone();
    let rec = 61;
    raw.splice(rec..rec + 1, [0xfe, 0xff, 0xff, 0xff, 0x0f]);
    let n = raw.len() as i32 - 12;
    raw[8..12].copy_from_slice(&n.to_be_bytes());
    assert!(decode(raw).unwrap_err().contains("exceeds"));
    // Key length beyond the record.
    let mut raw = good.clone();
    raw[rec + 4] = 0x7e; // key length 63
    assert!(decode(raw).is_err());
    // Header count huge (varint 0x7fffffff zigzag) inside the record body.
    let mut raw = good.clone();
    let hc = rec + 1 + 3 + 1 + 3 + 1 + 5; // length, attrs/ts/offset, key, value -> header count
    assert_eq!(raw[hc], 0x02);
    raw[hc] = 0x7e;
    assert!(decode(raw).is_err());
    // Batch length longer than the input is a partial tail, not an error; shorter than a header
    // is an error.
    let mut raw = good.clone();
    raw[8..12].copy_from_slice(&i32::MAX.to_be_bytes());
    let items: Vec<_> = Batches::new(Bytes::from(raw)).collect();
    assert!(matches!(items[..], [Ok(Batch::Partial(_))]));
    let mut raw = good.clone();
    raw[8..12].copy_from_slice(&10i32.to_be_bytes());
    assert!(Batches::new(Bytes::from(raw)).next().unwrap().is_err());
    // Legacy message with a key length of i32::MAX.
    let mut l = LegacyBuilder::new(1);
    l.append(Record::new(0, 0, Some(Bytes::from_static(b"k")), None)).unwrap();
    let mut raw = l.build().unwrap().to_vec();
    raw[26..30].copy_from_slice(&i32::MAX.to_be_bytes());
    assert!(decode(raw).is_err());
}

#[test]
fn builder_rejects_bad_input() {
    let mut b = RecordBatchBuilder::new();
    b.append(Record::new(5, 0, None, None)).unwrap();
    assert!(b.append(Record::new(5, 0, None, None)).is_err());
    assert!(b.append(Record::new(5 + (1i64 << 32), 0, None, None)).is_err());
    let mut b = RecordBatchBuilder::new().base_offset(10);
    assert!(b.append(Record::new(9, 0, None, None)).is_err());
    let mut l = LegacyBuilder::new(1);
    assert!(l.append(Record::new(0, 0, None, None).with_header("h", None)).is_err());
    let mut l = LegacyBuilder::new(0).compression(Compression::Zstd);
    l.append(Record::new(0, 0, None, None)).unwrap();
    assert!(l.build().is_err());
    assert!(LegacyBuilder::new(2).build().is_err());
}
