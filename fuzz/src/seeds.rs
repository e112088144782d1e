//! Seed inputs for every fuzz target, built from the schema-driven sample values (every request
//! and response at every version) and from record batches of every codec, in the input format
//! each target in `targets.rs` expects. Generated rather than committed, so the corpus follows
//! the specs the crate is built from.

use kwire::header;
use kwire::messages::{visit_messages, RequestHeader, ResponseHeader};
use kwire::runtime::records::{Compression, LegacyBuilder, Record, RecordBatchBuilder};
use kwire::runtime::sample::{MessageVisitor, Sample, SampleRng};
use kwire::{ApiKey, Bytes, Encode, Message};

use super::targets::selector;

/// One seed: the target it is for, a file name, the input.
pub type Seed = (&'static str, String, Vec<u8>);

struct Collect(Vec<Seed>);

impl MessageVisitor for Collect {
    fn visit<M: Message + Sample>(&mut self) {
        let (api, request) = match (M::NAME.strip_suffix("Request"), M::NAME.strip_suffix("Response")) {
            (Some(api), _) => (api, true),
            (_, Some(api)) => (api, false),
            _ => return,
        };
        let Some(key) = ApiKey::ALL.iter().copied().find(|k| k.name() == api) else { return };
        for version in M::VERSIONS.lo..=M::VERSIONS.hi {
            let value = M::sample(version, &mut SampleRng::new(u64::from(version as u16) + 1));
            let Ok(body) = value.to_bytes(version) else { continue };
            let name = format!("{}-v{version}", M::NAME);
            let sel = selector(key, version);
            let with_sel = |prefix: &[u8]| [prefix, &sel, &body].concat();
            let (target, dir) = if request { ("decode_request", 0u8) } else { ("decode_response", 1u8) };
            self.0.push((target, name.clone(), with_sel(&[])));
            self.0.push(("roundtrip", name.clone(), with_sel(&[dir])));
            self.0.push(("views", name.clone(), with_sel(&[dir])));
            if request {
                // Fed in two parts, cut 5 bytes in: the size prefix and one header byte first.
                self.0.push(("decode_frame", name, [&[5u8][..], &request_frame(key, version, &body)].concat()));
            } else {
                self.0.push(("decode_response_frame", name, [&sel[..], &response_frame(key, version, &body)].concat()));
            }
        }
    }
}

/// A size-prefixed request frame: header at the version Kafka uses, then the body.
fn request_frame(key: ApiKey, version: i16, body: &[u8]) -> Vec<u8> {
    let header =
        RequestHeader { request_api_key: key.key(), request_api_version: version, correlation_id: 7, client_id: Some("fuzz".into()), ..Default::default() };
    size_prefixed(&header, header::request_header_version(key.key(), version), body)
}

/// A size-prefixed response frame answering correlation id 1 (what `decode_response_frame`
/// has in flight).
fn response_frame(key: ApiKey, version: i16, body: &[u8]) -> Vec<u8> {
    let header = ResponseHeader { correlation_id: 1, ..Default::default() };
    size_prefixed(&header, header::response_header_version(key, version), body)
}

fn size_prefixed(header: &impl Encode, header_version: i16, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let size = header.encoded_len(header_version) + body.len();
    out.extend_from_slice(&(size as i32).to_be_bytes());
    if header.encode(&mut out, header_version).is_err() {
        return Vec::new();
    }
    out.extend_from_slice(body);
    out
}

fn records() -> Vec<Record> {
    (0..3)
        .map(|i| {
            Record::new(i, 1_700_000_000_000 + i, (i != 1).then(|| Bytes::from(format!("key-{i}"))), Some(Bytes::from(format!("value {i} ").repeat(3))))
                .with_header("h", Some(Bytes::from_static(b"v")))
        })
        .collect()
}

fn record_seeds(out: &mut Vec<Seed>) {
    for codec in Compression::ALL.into_iter().filter(|c| c.is_enabled()) {
        let mut v2 = RecordBatchBuilder::new().compression(codec).base_offset(100).producer(5, 1, 0);
        for r in records() {
            let _ = v2.append(r);
        }
        if let Ok(batch) = v2.build() {
            // Two batches, and the same with CRC checks on (flag bit 1) and a cut-short tail.
            let two = [&batch[..], &batch[..]].concat();
            out.push(("decode_records", format!("v2-{codec}"), [&[0u8][..], &two].concat()));
            out.push(("decode_records", format!("v2-{codec}-crc"), [&[1u8][..], &batch].concat()));
            out.push(("decode_records", format!("v2-{codec}-partial"), [&[0u8][..], &two[..two.len() - 5]].concat()));
        }
        for magic in [0, 1] {
            if codec == Compression::Zstd {
                continue;
            }
            let mut legacy = LegacyBuilder::new(magic).compression(codec);
            for r in records() {
                let _ = legacy.append(r);
            }
            if let Ok(set) = legacy.build() {
                out.push(("decode_records", format!("magic{magic}-{codec}"), [&[1u8][..], &set].concat()));
            }
        }
    }
}

/// Every seed of every target.
pub fn seeds() -> Vec<Seed> {
    let mut c = Collect(Vec::new());
    visit_messages(&mut c);
    record_seeds(&mut c.0);
    c.0
}
