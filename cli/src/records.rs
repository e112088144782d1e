//! Records blobs (record batches, legacy message sets) as JSON: whole, with keys and values in
//! base64, for `kwire records`; and readable, for `kwire tap --records` and `kwire pcap
//! --records` ([`expand`]): keys, values and headers as text where they are text, the Schema
//! Registry's framing recognised, control batches named, a bounded amount per frame.

use std::io::{BufRead, Write};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use kwire::runtime::json::serde_json::{json, Map, Value};
use kwire::runtime::records::{Batch, Batches, ControlRecordKey, DecodeOptions, Record};
use kwire::{ApiKey, Bytes};

use crate::error::{CliError, InputError};
use crate::input;

fn b64(b: Option<&Bytes>) -> Value {
    b.map_or(Value::Null, |b| Value::String(STANDARD.encode(b)))
}

fn record_json(r: &Record) -> Value {
    let headers: Vec<Value> = r.headers.iter().map(|h| json!({"key": h.key.to_string(), "value": b64(h.value.as_ref())})).collect();
    json!({
        "offset": r.offset,
        "timestamp": r.timestamp,
        "key": b64(r.key.as_ref()),
        "value": b64(r.value.as_ref()),
        "headers": headers,
    })
}

/// The JSON of every batch in `bytes`; offsets are absolute for every magic.
pub fn decode(bytes: Vec<u8>) -> Result<Value, CliError> {
    Ok(to_json(Bytes::from(bytes))?)
}

/// A batch's header fields.
fn batch_header(batch: &Batch) -> Map<String, Value> {
    let mut o = Map::new();
    match batch {
        Batch::Partial(p) => {
            o.insert("partial".into(), json!(true));
            o.insert("baseOffset".into(), json!(p.base_offset));
            o.insert("declaredSize".into(), json!(p.declared_size));
            o.insert("bytes".into(), json!(p.bytes.len()));
        }
        Batch::V2(b) => {
            o.insert("magic".into(), json!(2));
            o.insert("baseOffset".into(), json!(b.base_offset()));
            o.insert("compression".into(), json!(b.compression().name()));
            o.insert("producerId".into(), json!(b.producer_id()));
            o.insert("transactional".into(), json!(b.is_transactional()));
            o.insert("control".into(), json!(b.is_control()));
        }
        Batch::Legacy(m) => {
            o.insert("magic".into(), json!(m.magic()));
            o.insert("baseOffset".into(), json!(m.offset()));
            o.insert("compression".into(), json!(m.compression().name()));
        }
    }
    o
}

fn to_json(bytes: Bytes) -> Result<Value, InputError> {
    let mut batches = Vec::new();
    for (i, batch) in Batches::new(bytes).enumerate() {
        let batch = batch.map_err(|source| InputError::Batch { index: i, source })?;
        let mut o = batch_header(&batch);
        if !batch.is_partial() {
            let records = batch.records().map_err(|source| InputError::Batch { index: i, source })?;
            if let (Batch::Legacy(_), Some(first)) = (&batch, records.first()) {
                // A legacy wrapper's own offset is its last inner offset; report the first.
                o.insert("baseOffset".into(), json!(first.offset));
            }
            o.insert("records".into(), Value::Array(records.iter().map(record_json).collect()));
        }
        batches.push(Value::Object(o));
    }
    Ok(json!({"batches": batches}))
}

/// `records --jsonl`: lines {"hex"}.
pub fn jsonl(input: impl BufRead, out: &mut impl Write) -> Result<(), CliError> {
    input::jsonl(input, out, "json", |line| {
        let bytes = input::parse_hex(input::str_field(line, "hex")?)?;
        decode(bytes)
    })
}

// ---------------------------------------------------------------------------------------------
// Readable records, for the tap and pcap (`--records`).

/// The most of a key, value or header value shown; the rest is cut and its length said.
const MAX_SHOWN_BYTES: usize = 1024;
/// The most one batch may inflate to when shown (a zip bomb shows as an error).
const MAX_INFLATED: usize = 16 << 20;
/// The most headers of one record shown; the rest are counted.
const MAX_SHOWN_HEADERS: usize = 32;

/// Replaces the records blobs (base64 strings) of a Produce request's or a Fetch or ShareFetch
/// response's body by their batches, readable; `budget` is how many more records the frame may
/// show (those past it are counted as `omittedRecords`). Records the secrets rule withheld are
/// no longer strings and stay withheld. Bad bytes become an `error` in the batch, never a panic.
pub fn expand(api_key: i16, request: bool, body: &mut Value, budget: &mut usize) {
    let (topics, partitions) = match (ApiKey::from_i16(api_key), request) {
        (Some(ApiKey::Produce), true) => ("topicData", "partitionData"),
        (Some(ApiKey::Fetch | ApiKey::ShareFetch), false) => ("responses", "partitions"),
        _ => return,
    };
    let Some(topics) = body.get_mut(topics).and_then(Value::as_array_mut) else { return };
    for t in topics {
        let Some(parts) = t.get_mut(partitions).and_then(Value::as_array_mut) else { continue };
        for p in parts {
            let Some(records) = p.get_mut("records") else { continue };
            let Some(bytes) = records.as_str().and_then(|s| STANDARD.decode(s).ok()) else { continue };
            *records = readable_batches(Bytes::from(bytes), budget);
        }
    }
}

/// `{"batches": [...]}` with each record readable.
fn readable_batches(bytes: Bytes, budget: &mut usize) -> Value {
    let options = DecodeOptions { max_decompressed_size: MAX_INFLATED, ..DecodeOptions::default() };
    let mut batches = Vec::new();
    for batch in Batches::new(bytes.clone()) {
        let batch = match batch {
            Ok(b) => b,
            Err(e) => {
                // The rest cannot be framed: the blob's bytes, to see why (at most 1 KiB).
                batches.push(json!({"error": e.to_string(), "bytes": plain(&bytes)}));
                break;
            }
        };
        let mut o = batch_header(&batch);
        if let Batch::Partial(p) = &batch {
            // A fetch's cut last batch, or bytes that are no batch at all: shown (at most 1 KiB).
            o.insert("raw".into(), plain(&p.bytes));
            batches.push(Value::Object(o));
            continue;
        }
        let control = matches!(&batch, Batch::V2(b) if b.is_control());
        match batch.records_with(&options) {
            Err(e) => {
                o.insert("error".into(), json!(e.to_string()));
            }
            Ok(records) => {
                let shown = records.len().min(*budget);
                *budget -= shown;
                let list: Vec<Value> = records.iter().take(shown).map(|r| if control { control_json(r) } else { readable_record(r) }).collect();
                o.insert("records".into(), Value::Array(list));
                if shown < records.len() {
                    o.insert("omittedRecords".into(), json!(records.len() - shown));
                }
            }
        }
        batches.push(Value::Object(o));
    }
    json!({"batches": batches})
}

/// A control record: its offset and what it marks (COMMIT, ABORT, ...).
fn control_json(r: &Record) -> Value {
    let marker = match r.key.as_ref().map(ControlRecordKey::decode) {
        Some(Ok(k)) => format!("{:?}", k.kind).to_uppercase(),
        _ => "UNKNOWN".to_owned(),
    };
    json!({"offset": r.offset, "timestamp": r.timestamp, "marker": marker})
}

fn readable_record(r: &Record) -> Value {
    let headers: Vec<Value> = r
        .headers
        .iter()
        .take(MAX_SHOWN_HEADERS)
        .map(|h| {
            let value = match h.value.as_deref() {
                // Confluent's schema ids in headers: a version byte 1 and a 16-byte GUID.
                Some([1, guid @ ..]) if guid.len() == 16 && h.key.ends_with("_schema_id") => {
                    json!({"schemaGuid": guid_text(guid)})
                }
                v => v.map_or(Value::Null, readable),
            };
            json!({"key": h.key.to_string(), "value": value})
        })
        .collect();
    let mut o = json!({
        "offset": r.offset,
        "timestamp": r.timestamp,
        "key": r.key.as_deref().map_or(Value::Null, readable),
        "value": r.value.as_deref().map_or(Value::Null, readable),
        "headers": headers,
    });
    if let (Some(more), Some(o)) = (r.headers.len().checked_sub(MAX_SHOWN_HEADERS).filter(|n| *n > 0), o.as_object_mut()) {
        o.insert("omittedHeaders".into(), json!(more));
    }
    o
}

/// A GUID as its canonical text (8-4-4-4-12 hex digits).
fn guid_text(guid: &[u8]) -> String {
    let hex: String = guid.iter().map(|b| format!("{b:02x}")).collect();
    [0..8, 8..12, 12..16, 16..20, 20..32].into_iter().filter_map(|r| hex.get(r)).collect::<Vec<_>>().join("-")
}

/// Bytes for a reader: the Schema Registry's wire format (magic byte 0 and a 4-byte schema
/// id) named, text as a string, anything else in base64; at most [`MAX_SHOWN_BYTES`].
fn readable(b: &[u8]) -> Value {
    match b {
        [0, a, b2, c, d, payload @ ..] => json!({"schemaId": u32::from_be_bytes([*a, *b2, *c, *d]), "payload": plain(payload)}),
        _ => plain(b),
    }
}

fn plain(b: &[u8]) -> Value {
    let shown = b.get(..MAX_SHOWN_BYTES).unwrap_or(b);
    let cut = shown.len() < b.len();
    // Text: UTF-8 (a character split by the cut aside) without control characters but tabs and
    // line ends.
    let text = match std::str::from_utf8(shown) {
        Ok(s) => Some(s),
        Err(e) if cut && e.error_len().is_none() => shown.get(..e.valid_up_to()).and_then(|p| std::str::from_utf8(p).ok()),
        Err(_) => None,
    };
    match text.filter(|s| !s.chars().any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))) {
        Some(s) if !cut => Value::String(s.to_owned()),
        Some(s) => json!({"text": s, "length": b.len(), "truncated": true}),
        None if !cut => json!({"base64": STANDARD.encode(shown)}),
        None => json!({"base64": STANDARD.encode(shown), "length": b.len(), "truncated": true}),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod readable_tests {
    use kwire::runtime::records::{Compression, RecordBatchBuilder};

    use super::*;

    fn batch(records: &[Record], compression: Compression) -> Bytes {
        let mut b = RecordBatchBuilder::new().compression(compression);
        for r in records {
            b.append(r.clone()).unwrap();
        }
        b.build().unwrap()
    }

    fn produce_body(blob: &Bytes) -> Value {
        json!({"topicData": [{"name": "orders", "partitionData": [{"index": 0, "records": STANDARD.encode(blob)}]}]})
    }

    #[test]
    fn records_show_as_text_base64_or_schema_registry_frames() {
        let mut avro = vec![0, 0, 0, 0, 42];
        avro.extend_from_slice(&[0x02, 0xff, 0x80]);
        let mut guid = vec![1];
        guid.extend_from_slice(&[7; 16]);
        let records = [
            Record::new(0, 1_700_000_000_000, Some(Bytes::from_static(b"k1")), Some(Bytes::from_static(b"hello")))
                .with_header("trace", Some(Bytes::from_static(b"abc"))),
            Record::new(1, 1_700_000_000_001, None, Some(Bytes::from(avro))).with_header("__value_schema_id", Some(Bytes::from(guid))),
            Record::new(2, 1_700_000_000_002, None, Some(Bytes::from(vec![b'x'; 3000]))),
            Record::new(3, 1_700_000_000_003, None, Some(Bytes::from_static(&[0xc3, 0x28, 0x01]))),
        ];
        for compression in [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd] {
            let mut body = produce_body(&batch(&records, compression));
            let mut budget = 100;
            expand(ApiKey::Produce.key(), true, &mut body, &mut budget);
            let b = &body["topicData"][0]["partitionData"][0]["records"]["batches"][0];
            assert_eq!(b["compression"], json!(compression.name()), "{body}");
            let r = &b["records"];
            assert_eq!(r[0]["key"], json!("k1"));
            assert_eq!(r[0]["value"], json!("hello"));
            assert_eq!(r[0]["headers"][0], json!({"key": "trace", "value": "abc"}));
            assert_eq!(r[1]["value"], json!({"schemaId": 42, "payload": {"base64": "Av+A"}}));
            assert_eq!(r[1]["headers"][0]["value"]["schemaGuid"], json!("07070707-0707-0707-0707-070707070707"));
            assert_eq!(r[2]["value"]["length"], json!(3000));
            assert_eq!(r[2]["value"]["text"].as_str().map(str::len), Some(MAX_SHOWN_BYTES));
            assert_eq!(r[3]["value"], json!({"base64": "wygB"}));
            assert_eq!(budget, 96);
        }
    }

    #[test]
    fn a_frame_shows_at_most_its_budget_and_control_batches_by_name() {
        let records: Vec<Record> = (0..10).map(|i| Record::new(i, 0, None, Some(Bytes::from(format!("v{i}"))))).collect();
        let mut body = produce_body(&batch(&records, Compression::None));
        let mut budget = 3;
        expand(ApiKey::Produce.key(), true, &mut body, &mut budget);
        let b = &body["topicData"][0]["partitionData"][0]["records"]["batches"][0];
        assert_eq!(b["records"].as_array().map(Vec::len), Some(3));
        // A record with many headers shows the first 32.
        let many = (0..40).fold(Record::new(0, 0, None, None), |r, i| r.with_header(format!("h{i}"), None));
        let mut many_body = produce_body(&batch(&[many], Compression::None));
        expand(ApiKey::Produce.key(), true, &mut many_body, &mut 10);
        let r = &many_body["topicData"][0]["partitionData"][0]["records"]["batches"][0]["records"][0];
        assert_eq!((r["headers"].as_array().map(Vec::len), r["omittedHeaders"].as_u64()), (Some(32), Some(8)));
        assert_eq!(b["omittedRecords"], json!(7));
        assert_eq!(budget, 0);

        use kwire::runtime::records::{ControlRecordType, EndTxnMarker};
        let key = ControlRecordKey { version: 0, kind: ControlRecordType::Commit }.encode();
        let value = EndTxnMarker { version: 0, coordinator_epoch: 3 }.encode();
        let mut b = RecordBatchBuilder::new().compression(Compression::None).producer(1000, 0, -1).transactional(true).control(true);
        b.append(Record::new(5, 0, Some(key), Some(value))).unwrap();
        let marker = b.build().unwrap();
        let mut fetch = json!({"responses": [{"topic": "t", "partitions": [{"partitionIndex": 0, "records": STANDARD.encode(&marker)}]}]});
        let mut budget = 10;
        expand(ApiKey::Fetch.key(), false, &mut fetch, &mut budget);
        let b = &fetch["responses"][0]["partitions"][0]["records"]["batches"][0];
        assert_eq!((b["control"].clone(), b["records"][0]["marker"].clone()), (json!(true), json!("COMMIT")));
    }

    #[test]
    fn bad_bytes_become_errors() {
        let good = batch(&[Record::new(0, 0, None, Some(Bytes::from_static(b"v")))], Compression::None);
        let mut corrupt = good.to_vec();
        let last = corrupt.len() - 1;
        corrupt[last] ^= 0xff;
        for blob in [corrupt, vec![0xff; 70], good[..30].to_vec(), Vec::new()] {
            let mut body = produce_body(&Bytes::from(blob));
            expand(ApiKey::Produce.key(), true, &mut body, &mut 10);
            assert!(body["topicData"][0]["partitionData"][0]["records"]["batches"].is_array(), "{body}");
        }
        // A withheld blob (the secrets rule's object) is left as it is.
        let mut body = json!({"topicData": [{"partitionData": [{"records": {"withheld": true}}]}]});
        expand(ApiKey::Produce.key(), true, &mut body, &mut 10);
        assert_eq!(body["topicData"][0]["partitionData"][0]["records"], json!({"withheld": true}));
    }
}
