//! The benchmark workloads (`../shared/bench/WORKLOADS.md`): kwire's frames have the listed
//! lengths and FNV-1a 64 digests, decode back to the values they were built from, and
//! kafka-protocol (which the benches compare against) builds the same frames.

#[path = "../benches/workloads/mod.rs"]
mod workloads;

use kwire::codec::Vectored;
use kwire::runtime::records::{Batch, Batches, Record};
use kwire::{Bytes, BytesMut, Message};
use workloads::{check, kp, kw, Data, Spec};

fn kwire_frame<M: Message>(spec: &Spec, m: &M) -> Bytes {
    let frame = m.to_bytes(spec.version).unwrap_or_else(|e| panic!("{}: {e}", spec.id));
    assert_eq!(m.encoded_len(spec.version), frame.len(), "{}: encoded_len", spec.id);
    check(spec, "kwire", &frame).unwrap();
    let back = M::decode(&mut frame.clone(), spec.version).unwrap_or_else(|e| panic!("{}: {e}", spec.id));
    assert!(back == *m, "{}: decoded value differs from the one encoded", spec.id);
    frame
}

fn kafka_protocol_frame<M: kafka_protocol::protocol::Encodable>(spec: &Spec, m: &M) -> Bytes {
    let mut out = BytesMut::new();
    m.encode(&mut out, spec.version).unwrap();
    check(spec, "kafka-protocol", &out).unwrap();
    out.freeze()
}

/// The vectored encode (`codec::Vectored`) gives the same frame, every records
/// field passed through as its own chunk without a copy.
fn vectored_matches<M: Message>(spec: &Spec, m: &M, shared: Vec<Bytes>, frame: &Bytes) {
    let mut out = Vectored::new(shared.clone(), 64);
    m.encode(&mut out, spec.version).unwrap();
    assert_eq!(out.shared_count(), shared.len(), "{}", spec.id);
    let chunks = out.finish();
    assert_eq!(chunks.concat(), frame.as_ref(), "{}", spec.id);
    for records in &shared {
        assert!(chunks.iter().any(|c| c.as_ptr() == records.as_ptr()), "{}: records copied", spec.id);
    }
}

#[test]
fn message_workloads_have_the_listed_digests() {
    let d = Data::new();
    let a = kwire_frame(&workloads::W1, &kw::w1(&d));
    let b = kafka_protocol_frame(&workloads::W1, &kp::w1(&d));
    assert_eq!(a, b);
    let w2 = kw::w2(&d);
    vectored_matches(&workloads::W2, &w2, kw::w2_shared(&w2), &kwire_frame(&workloads::W2, &w2));
    kafka_protocol_frame(&workloads::W2, &kp::w2(&d));
    let w3 = kw::w3(&d);
    vectored_matches(&workloads::W3, &w3, kw::w3_shared(&w3), &kwire_frame(&workloads::W3, &w3));
    kafka_protocol_frame(&workloads::W3, &kp::w3(&d));
    kwire_frame(&workloads::W4A, &kw::w4a());
    kafka_protocol_frame(&workloads::W4A, &kp::w4a());
    kwire_frame(&workloads::W4B, &kw::w4b());
    kafka_protocol_frame(&workloads::W4B, &kp::w4b());
}

#[test]
fn record_batch_workload_has_the_listed_digest() {
    let d = Data::new();
    let records = kw::w5_records(&d);
    let frame = kw::w5(&d).build().unwrap();
    check(&workloads::W5, "kwire", &frame).unwrap();
    // The same bytes from borrowed records.
    let mut again = Vec::new();
    kw::w5_builder().build_from(&records, &mut again).unwrap();
    assert_eq!(again, frame);
    // Decoded lazily, the records are the ones built.
    let batches: Vec<Batch> = Batches::new(frame).collect::<Result<_, _>>().unwrap();
    let [Batch::V2(batch)] = &batches[..] else { panic!("expected one v2 batch, got {batches:?}") };
    let decoded: Vec<Record> = batch.records().unwrap().collect::<Result<_, _>>().unwrap();
    assert_eq!(decoded, records);

    let mut theirs = BytesMut::new();
    kafka_protocol::records::RecordBatchEncoder::encode(&mut theirs, &kp::w5(&d), &kp::W5_OPTIONS).unwrap();
    check(&workloads::W5, "kafka-protocol", &theirs).unwrap();
}
