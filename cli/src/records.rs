//! `kwire records`: a records blob (record batches, legacy message sets) as JSON.

use std::io::{BufRead, Write};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use kwire::runtime::json::serde_json::{json, Map, Value};
use kwire::runtime::records::{Batch, Batches, Record};
use kwire::Bytes;

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

fn to_json(bytes: Bytes) -> Result<Value, InputError> {
    let mut batches = Vec::new();
    for (i, batch) in Batches::new(bytes).enumerate() {
        let batch = batch.map_err(|source| InputError::Batch { index: i, source })?;
        let mut o = Map::new();
        match &batch {
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
