//! Golden bytes written by hand from Kafka's documented formats
//! (https://kafka.apache.org/documentation/#recordbatch and #messageset), plus truncated tails,
//! CRC mismatches, control batches and the decompression limit.

use kwire_runtime::records::{
    decode_all, Batch, Batches, Compression, ControlRecord, ControlRecordType, DecodeOptions, Header, LegacyBuilder, Record, RecordBatchBuilder, TimestampType,
};
use kwire_runtime::{Bytes, DecodeErrorKind, RecordsError};

fn b(s: &'static str) -> Option<Bytes> {
    Some(Bytes::from_static(s.as_bytes()))
}

/// Two records at offsets 5 and 6; the second has a null key, an empty value and two headers
/// named "h" (one null). CRC-32C 0xda85589f of bytes 21.. computed independently (bitwise
/// reference CRC-32C in Python) and accepted by kafka-python's DefaultRecordBatch.
const GOLDEN_V2: &str = concat!(
    "0000000000000005", // baseOffset 5
    "0000004c",         // batchLength 76
    "ffffffff",         // partitionLeaderEpoch -1
    "02",               // magic 2
    "da85589f",         // crc
    "0000",             // attributes: no compression, create time
    "00000001",         // lastOffsetDelta 1
    "00000000000003e8", // baseTimestamp 1000
    "00000000000003ed", // maxTimestamp 1005
    "ffffffffffffffff", // producerId -1
    "ffff",             // producerEpoch -1
    "ffffffff",         // baseSequence -1
    "00000002",         // records count 2
    // record 0: length 12, attributes 0, timestampDelta 0, offsetDelta 0, key "k", value "v",
    // 1 header "h" = "x" (varints zigzag: 1 -> 02, 12 -> 18)
    "18",
    "00",
    "00",
    "00",
    "026b",
    "0276",
    "02",
    "0268",
    "0278",
    // record 1: length 13, attributes 0, timestampDelta 5 (0a), offsetDelta 1 (02), key null
    // (-1 -> 01), value empty (00), 2 headers: "h" = null, "h" = "y"
    "1a",
    "00",
    "0a",
    "02",
    "01",
    "00",
    "04",
    "026801",
    "02680279",
);

fn golden_v2_records() -> Vec<Record> {
    vec![Record::new(5, 1000, b("k"), b("v")).with_header("h", b("x")), Record::new(6, 1005, None, b("")).with_header("h", None).with_header("h", b("y"))]
}

#[test]
fn golden_v2_batch_decodes_and_encodes() {
    let bytes = Bytes::from(hex::decode(GOLDEN_V2).unwrap());
    let mut batches = Batches::new(bytes.clone());
    let Some(Ok(Batch::V2(batch))) = batches.next() else { panic!("expected a v2 batch") };
    assert!(batches.next().is_none());
    assert_eq!(batch.base_offset(), 5);
    assert_eq!(batch.batch_length(), 76);
    assert_eq!(batch.partition_leader_epoch(), -1);
    assert_eq!(batch.crc(), 0xda85_589f);
    assert_eq!(batch.compression(), Compression::None);
    assert_eq!(batch.timestamp_type(), TimestampType::CreateTime);
    assert!(!batch.is_transactional() && !batch.is_control() && !batch.has_delete_horizon());
    assert_eq!(batch.last_offset(), 6);
    assert_eq!((batch.base_timestamp(), batch.max_timestamp()), (1000, 1005));
    assert_eq!((batch.producer_id(), batch.producer_epoch(), batch.base_sequence()), (-1, -1, -1));
    assert_eq!(batch.record_count(), 2);
    let records: Vec<Record> = batch.records().unwrap().collect::<Result<_, _>>().unwrap();
    assert_eq!(records, golden_v2_records());
    let hs: Vec<Header> = records[1].headers.to_vec();
    assert_eq!(hs, vec![Header::new("h", None), Header::new("h", b("y"))]);
    assert_eq!(records[1].headers.get_all("h").count(), 2);

    // Zero-copy: the value is a slice of the input.
    let v = records[0].value.as_ref().unwrap();
    let input_range = bytes.as_ptr() as usize..bytes.as_ptr() as usize + bytes.len();
    assert!(input_range.contains(&(v.as_ptr() as usize)));

    // The builder writes the same bytes.
    let mut builder = RecordBatchBuilder::new();
    for r in golden_v2_records() {
        builder.append(r).unwrap();
    }
    assert_eq!(hex::encode(builder.build().unwrap()), GOLDEN_V2);
}

/// Magic 1 message at offset 7: timestamp 1000, null key, value "hello". CRC-32 0x942da341 of
/// bytes 16.. (computed with zlib's crc32).
const GOLDEN_V1: &str = concat!(
    "0000000000000007", // offset 7
    "0000001b",         // message size 27
    "942da341",         // crc
    "01",               // magic 1
    "00",               // attributes
    "00000000000003e8", // timestamp 1000
    "ffffffff",         // key null
    "00000005",
    "68656c6c6f", // value "hello"
);

/// Magic 0 message at offset 3: key "k", value "v". CRC-32 0x1fecd70a.
const GOLDEN_V0: &str = concat!(
    "0000000000000003", // offset 3
    "00000010",         // message size 16
    "1fecd70a",         // crc
    "00",               // magic 0
    "00",               // attributes
    "00000001",
    "6b", // key "k"
    "00000001",
    "76", // value "v"
);

#[test]
fn golden_legacy_messages_decode_and_encode() {
    let set = Bytes::from(hex::decode(format!("{GOLDEN_V1}{GOLDEN_V0}")).unwrap());
    let batches: Vec<Batch> = Batches::new(set).collect::<Result<_, _>>().unwrap();
    assert_eq!(batches.len(), 2);
    let Batch::Legacy(m1) = &batches[0] else { panic!() };
    assert_eq!((m1.magic(), m1.offset(), m1.crc(), m1.timestamp()), (1, 7, 0x942d_a341, Some(1000)));
    assert_eq!(batches[0].records().unwrap(), vec![Record::new(7, 1000, None, b("hello"))]);
    let Batch::Legacy(m0) = &batches[1] else { panic!() };
    assert_eq!((m0.magic(), m0.offset(), m0.timestamp()), (0, 3, None));
    assert_eq!(batches[1].records().unwrap(), vec![Record::new(3, -1, b("k"), b("v"))]);

    let mut v1 = LegacyBuilder::new(1);
    v1.append(Record::new(7, 1000, None, b("hello"))).unwrap();
    assert_eq!(hex::encode(v1.build().unwrap()), GOLDEN_V1);
    let mut v0 = LegacyBuilder::new(0);
    v0.append(Record::new(3, 1234, b("k"), b("v"))).unwrap();
    assert_eq!(hex::encode(v0.build().unwrap()), GOLDEN_V0);
}

#[test]
fn crc_mismatch_is_a_clear_error() {
    let mut raw = hex::decode(GOLDEN_V2).unwrap();
    let last = raw.len() - 1;
    raw[last] ^= 0x01;
    let err = Batches::new(Bytes::from(raw.clone())).next().unwrap().unwrap_err();
    let text = err.to_string();
    assert!(text.contains("CRC-32C") && text.contains("corrupt"), "{text}");
    // Opting out of the check lets the batch through.
    let opts = DecodeOptions { verify_crc: false, ..DecodeOptions::default() };
    assert!(Batches::with_options(Bytes::from(raw), opts).next().unwrap().is_ok());

    let mut raw = hex::decode(GOLDEN_V1).unwrap();
    raw[20] ^= 0xff;
    let err = Batches::new(Bytes::from(raw)).next().unwrap().unwrap_err();
    assert!(err.to_string().contains("CRC-32"), "{err}");
}

#[test]
fn truncated_tail_is_reported_as_partial() {
    let full = hex::decode(GOLDEN_V2).unwrap();
    let mut two = full.clone();
    two.extend_from_slice(&full);
    for cut in 1..full.len() {
        let input = Bytes::from(two[..full.len() + cut].to_vec());
        let items: Vec<_> = Batches::new(input).collect();
        assert_eq!(items.len(), 2, "cut {cut}");
        assert!(matches!(&items[0], Ok(Batch::V2(_))));
        let Ok(Batch::Partial(p)) = &items[1] else { panic!("cut {cut}: {:?}", items[1]) };
        assert_eq!(p.bytes.len(), cut);
        assert_eq!(p.base_offset, (cut >= 8).then_some(5));
        assert_eq!(p.declared_size, (cut >= 12).then_some(76));
        let (records, partial) = decode_all(Bytes::from(two[..full.len() + cut].to_vec()), &DecodeOptions::default()).unwrap();
        assert_eq!(records.len(), 2);
        assert!(partial.is_some());
    }
}

#[test]
fn control_batches_are_typed() {
    let bytes = RecordBatchBuilder::end_txn_marker(42, 1_700_000_000_000, 9, 3, true, 17).unwrap();
    let Some(Ok(Batch::V2(batch))) = Batches::new(bytes).next() else { panic!() };
    assert!(batch.is_control() && batch.is_transactional());
    assert_eq!((batch.producer_id(), batch.producer_epoch()), (9, 3));
    let control = batch.control_records().unwrap();
    assert_eq!(control.len(), 1);
    let ControlRecord::Commit(m) = control[0] else { panic!("{control:?}") };
    assert_eq!((m.version, m.coordinator_epoch), (0, 17));
    // Key bytes: version 0, type 1 (commit); value: version 0, epoch 17.
    let r = batch.records().unwrap().next().unwrap().unwrap();
    assert_eq!(&r.key.unwrap()[..], &[0, 0, 0, 1]);
    assert_eq!(&r.value.unwrap()[..], &[0, 0, 0, 0, 0, 17]);

    let abort = RecordBatchBuilder::end_txn_marker(1, 0, 9, 3, false, 2).unwrap();
    let Some(Ok(Batch::V2(batch))) = Batches::new(abort).next() else { panic!() };
    assert!(matches!(batch.control_records().unwrap()[..], [ControlRecord::Abort(_)]));
    assert_eq!(ControlRecordType::from_id(0), ControlRecordType::Abort);
}

#[test]
fn batch_attributes_round_trip() {
    let mut builder = RecordBatchBuilder::new()
        .base_offset(100)
        .timestamp_type(TimestampType::LogAppendTime)
        .producer(77, 2, 500)
        .transactional(true)
        .partition_leader_epoch(4)
        .delete_horizon(9_999);
    builder.append(Record::new(101, 5, None, b("a"))).unwrap();
    builder.append(Record::new(103, 7, None, b("b"))).unwrap();
    let Some(Ok(Batch::V2(batch))) = Batches::new(builder.build().unwrap()).next() else { panic!() };
    assert_eq!(batch.timestamp_type(), TimestampType::LogAppendTime);
    assert_eq!(batch.delete_horizon(), Some(9_999));
    assert_eq!((batch.base_offset(), batch.last_offset_delta(), batch.partition_leader_epoch()), (100, 3, 4));
    assert_eq!((batch.producer_id(), batch.producer_epoch(), batch.base_sequence()), (77, 2, 500));
    assert!(batch.is_transactional());
    let rs: Vec<Record> = batch.records().unwrap().collect::<Result<_, _>>().unwrap();
    // Log-append time: every record carries the batch's max timestamp.
    assert_eq!(rs.iter().map(|r| (r.offset, r.timestamp)).collect::<Vec<_>>(), vec![(101, 7), (103, 7)]);
}

#[test]
fn decompression_limit_stops_zip_bombs() {
    let big = Bytes::from(vec![0u8; 1 << 20]);
    for c in Compression::ALL.into_iter().filter(|c| *c != Compression::None && c.is_enabled()) {
        let mut b = RecordBatchBuilder::new().compression(c);
        b.append(Record::new(0, 0, None, Some(big.clone()))).unwrap();
        let bytes = b.build().unwrap();
        assert!(bytes.len() < 64 << 10, "{c} compresses zeros");
        let small = DecodeOptions { max_decompressed_size: 256 << 10, ..DecodeOptions::default() };
        let Some(Ok(Batch::V2(batch))) = Batches::with_options(bytes.clone(), small).next() else { panic!() };
        let err = batch.records_with(&small).unwrap_err();
        assert!(err.to_string().contains("limit"), "{c}: {err}");
        // Within the default limit it decodes.
        assert_eq!(batch.records().unwrap().next().unwrap().unwrap().value.unwrap().len(), 1 << 20);

        if c != Compression::Zstd {
            let mut l = LegacyBuilder::new(1).compression(c);
            l.append(Record::new(0, 0, None, Some(big.clone()))).unwrap();
            let Some(Ok(m)) = Batches::new(l.build().unwrap()).next() else { panic!() };
            assert!(m.records_with(&small).unwrap_err().to_string().contains("limit"), "{c} legacy");
        }
    }
}

#[test]
fn compressed_legacy_offsets() {
    // Magic 1 wrapper: inner offsets are relative (0, 1, 2) and the wrapper holds the last
    // absolute offset; magic 0 inner offsets are absolute.
    for magic in [0i8, 1] {
        for c in [Compression::Gzip, Compression::Snappy, Compression::Lz4].into_iter().filter(|c| c.is_enabled()) {
            let mut l = LegacyBuilder::new(magic).compression(c);
            for (i, o) in [20i64, 21, 25].into_iter().enumerate() {
                l.append(Record::new(o, 100 + i as i64, b("k"), b("v"))).unwrap();
            }
            let bytes = l.build().unwrap();
            let batches: Vec<Batch> = Batches::new(bytes).collect::<Result<_, _>>().unwrap();
            assert_eq!(batches.len(), 1);
            let Batch::Legacy(w) = &batches[0] else { panic!() };
            assert_eq!((w.offset(), w.compression()), (25, c));
            let rs = batches[0].records().unwrap();
            let got: Vec<(i64, i64)> = rs.iter().map(|r| (r.offset, r.timestamp)).collect();
            let ts = |t: i64| if magic == 0 { -1 } else { t };
            assert_eq!(got, vec![(20, ts(100)), (21, ts(101)), (25, ts(102))], "magic {magic} {c}");
        }
    }
}

#[test]
fn unknown_magic_and_bad_attributes_are_errors() {
    let mut raw = hex::decode(GOLDEN_V2).unwrap();
    raw[16] = 3;
    let err = Batches::new(Bytes::from(raw)).next().unwrap().unwrap_err();
    assert!(err.to_string().contains("magic 3"), "{err}");
    let mut raw = hex::decode(GOLDEN_V2).unwrap();
    raw[22] = 0x07; // codec 7
    let opts = DecodeOptions { verify_crc: false, ..DecodeOptions::default() };
    let err = Batches::with_options(Bytes::from(raw), opts).next().unwrap().unwrap_err();
    assert!(err.to_string().contains("codec 7"), "{err}");
    let mut raw = hex::decode(GOLDEN_V2).unwrap();
    raw[8..12].copy_from_slice(&(-5i32).to_be_bytes());
    let err = Batches::new(Bytes::from(raw)).next().unwrap().unwrap_err();
    assert!(matches!(err.kind(), DecodeErrorKind::Records(RecordsError::NegativeEntrySize { size: -5, .. })), "{err}");
}
