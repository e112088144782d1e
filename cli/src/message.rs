//! `kwire decode` and `encode`: message bodies and frames to and from JSON.

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use kwire::codec::decode_response_body;
use kwire::header;
use kwire::messages::ResponseHeader;
use kwire::runtime::json::serde_json::{json, Value};
use kwire::runtime::lenient::{decode_leniently, Leniency, LeniencyKind};
use kwire::{ApiKey, Bytes, Decode, RequestKind, ResponseKind, VersionedJson};

use crate::error::{CliError, InputError};
use crate::input;
use crate::secrets::Secrets;
use crate::Direction;

/// The api key, version and direction a body command needs.
pub fn body_args(key: Option<i16>, version: Option<i16>, dir: Direction) -> Result<(i16, i16, bool), CliError> {
    let key = key.ok_or_else(|| CliError::Usage("--api-key is required".into()))?;
    let version = version.ok_or_else(|| CliError::Usage("--api-version is required".into()))?;
    if !dir.request && !dir.response {
        return Err(CliError::Usage("one of --request or --response is required".into()));
    }
    Ok((key, version, dir.request))
}

fn known(key: i16) -> Result<ApiKey, InputError> {
    ApiKey::from_i16(key).ok_or(InputError::UnknownApiKey(key))
}

/// `--lenient`: decode what real peers send against the spec, and mark where (one mode for the
/// whole process, set once by `main`).
static LENIENT: AtomicBool = AtomicBool::new(false);

/// Makes every decode of this process lenient (`--lenient`).
pub fn set_lenient() {
    LENIENT.store(true, Ordering::Relaxed);
}

/// Decodes a body that must use every byte of `buf`. Leniently (`--lenient`), what the spec
/// forbids but peers send is accepted and listed under `"_lenient"`: `[{"offset", "what"}]`.
fn body_json(key: i16, version: i16, request: bool, mut buf: Bytes) -> Result<Value, InputError> {
    let total = buf.len();
    let decode = |buf: &mut Bytes| -> Result<Result<Value, _>, InputError> {
        Ok(if request { RequestKind::decode(buf, key, version)?.to_json(version) } else { ResponseKind::decode(buf, key, version)?.to_json(version) })
    };
    if !LENIENT.load(Ordering::Relaxed) {
        let json = decode(&mut buf)?;
        if !buf.is_empty() {
            return Err(InputError::TrailingBytes { left: buf.len(), offset: total - buf.len() });
        }
        return Ok(json?);
    }
    let (json, mut notes) = decode_leniently(|| decode(&mut buf));
    let mut json = json??;
    if !buf.is_empty() {
        notes.push(Leniency { kind: LeniencyKind::TrailingBytes { left: buf.len() }, remaining: buf.len() });
    }
    if let (Value::Object(obj), false) = (&mut json, notes.is_empty()) {
        let marks = notes.iter().map(|n| json!({"offset": total.saturating_sub(n.remaining), "what": n.kind.to_string()}));
        obj.insert("_lenient".into(), Value::Array(marks.collect()));
    }
    Ok(json)
}

/// Decodes a message body to JSON, secrets withheld unless `secrets` shows them.
pub fn decode_body(key: i16, version: i16, request: bool, bytes: &[u8], secrets: &mut Secrets) -> Result<Value, CliError> {
    let mut json = body_json(key, version, request, Bytes::copy_from_slice(bytes))?;
    secrets.apply(0, key, request, &mut json);
    Ok(json)
}

/// A request payload (a frame without its size): header and body JSON.
pub fn request_json(payload: &[u8]) -> Result<(Value, Value), InputError> {
    let (key, _, _) = header::peek_request_start(payload).ok_or(InputError::ShortRequest(payload.len()))?;
    known(key)?;
    let mut buf = Bytes::copy_from_slice(payload);
    let (header, hv) = header::decode_request_header(&mut buf)?;
    let version = header.request_api_version;
    let header = header.to_json(hv)?;
    let offset = payload.len() - buf.len();
    let body = body_json(key, version, true, buf).map_err(|e| InputError::Body { header_len: offset, source: Box::new(e) })?;
    Ok((header, body))
}

/// A response payload of `key` at `version`: header and body JSON (an ApiVersions error
/// response at v0 is read as the codec reads it, see [`decode_response_body`]).
pub fn response_json(payload: &[u8], key: i16, version: i16) -> Result<(Value, Value), InputError> {
    let api = known(key)?;
    let hv = header::response_header_version(api, version);
    let mut buf = Bytes::copy_from_slice(payload);
    let header = ResponseHeader::decode(&mut buf, hv)?;
    let header = header.to_json(hv)?;
    let offset = payload.len() - buf.len();
    let (_, body) = decode_response_body(api, version, &buf, |version, body| body_json(key, version, false, body.clone()))
        .map_err(|(_, e)| InputError::Body { header_len: offset, source: Box::new(e) })?;
    Ok((header, body))
}

/// Splits a size-prefixed frame into its payload, checking the size.
pub fn frame_payload(frame: &[u8]) -> Result<&[u8], CliError> {
    let size: [u8; 4] = frame.get(..4).and_then(|b| b.try_into().ok()).ok_or(InputError::FrameTooShort(frame.len()))?;
    let size = i32::from_be_bytes(size);
    let payload = frame.get(4..).unwrap_or_default();
    if size < 0 || size as usize != payload.len() {
        return Err(InputError::FrameSize { size, payload: payload.len() }.into());
    }
    Ok(payload)
}

/// Decodes a whole frame: a request is self-describing; a response needs the api key and
/// version. Secrets are withheld unless `secrets` shows them.
pub fn decode_frame(frame: &[u8], dir: Direction, key: Option<i16>, version: Option<i16>, secrets: &mut Secrets) -> Result<Value, CliError> {
    let payload = frame_payload(frame)?;
    let (key, (head, mut body)) = if dir.response {
        let (key, version, _) = body_args(key, version, dir)?;
        (key, response_json(payload, key, version)?)
    } else {
        (header::peek_request_start(payload).map_or(-1, |(key, _, _)| key), request_json(payload)?)
    };
    secrets.apply(0, key, !dir.response, &mut body);
    Ok(json!({"header": head, "body": body}))
}

fn kind(line: &Value) -> Result<bool, CliError> {
    match input::str_field(line, "kind")? {
        "request" => Ok(true),
        "response" => Ok(false),
        other => Err(InputError::Kind(other.to_string()).into()),
    }
}

/// `decode --jsonl`: the lines are one connection's frames (a SaslHandshake line names the
/// mechanism of the SaslAuthenticate lines after it).
pub fn decode_jsonl(input: impl BufRead, out: &mut impl Write, secrets: &mut Secrets) -> Result<(), CliError> {
    input::jsonl(input, out, "json", |line| {
        let key = input::int_field(line, "apiKey")?;
        let version = input::int_field(line, "apiVersion")?;
        let request = kind(line)?;
        let bytes = input::parse_hex(input::str_field(line, "hex")?)?;
        decode_body(key, version, request, &bytes, secrets)
    })
}

/// Encodes a JSON body.
pub fn encode_body(key: i16, version: i16, request: bool, json: &Value) -> Result<Vec<u8>, CliError> {
    let mut out = Vec::new();
    let r = if request {
        let body = RequestKind::from_json(key, version, json).map_err(InputError::JsonForm)?;
        body.encode(&mut out, version)
    } else {
        let body = ResponseKind::from_json(key, version, json).map_err(InputError::JsonForm)?;
        body.encode(&mut out, version)
    };
    r.map_err(InputError::Encode)?;
    Ok(out)
}

/// `encode --jsonl`.
pub fn encode_jsonl(input: impl BufRead, out: &mut impl Write) -> Result<(), CliError> {
    input::jsonl(input, out, "hex", |line| {
        let key = input::int_field(line, "apiKey")?;
        let version = input::int_field(line, "apiVersion")?;
        let request = kind(line)?;
        let body = line.get("json").ok_or(InputError::Missing("json"))?;
        Ok(Value::String(hex::encode(encode_body(key, version, request, body)?)))
    })
}
