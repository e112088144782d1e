//! What each fuzz target does with its input. Shared by the cargo-fuzz targets (fuzz/fuzz_targets)
//! and by the root crate's `tests/fuzz_corpus.rs`, which replays the seeds and every saved crash
//! through the same functions on stable Rust.
//!
//! Every function must return normally for any input: a panic is a bug, either a decoder that
//! panics on hostile bytes or a broken invariant asserted here.

use kwire::codec::{ClientCodec, RequestFrame, ServerCodec};
use kwire::runtime::limits::DecodeLimits;
use kwire::runtime::records::{Batch, Batches, DecodeOptions};
use kwire::{ApiKey, Bytes, BytesMut, RequestKind, ResponseKind};

/// Limits for the targets: the defaults, but with frames and inflated batches small enough that a
/// decompression bomb costs milliseconds, not seconds.
pub const LIMITS: DecodeLimits = DecodeLimits { max_frame_size: 1 << 20, max_decompressed_size: 1 << 20, ..DecodeLimits::DEFAULT };

/// Picks an api key and version from the first two bytes: the first selects a key of
/// [`ApiKey::ALL`]; the second a valid version when below 0x80, else any version (to reach the
/// unsupported-version paths). Returns the rest as the body.
pub fn select(data: &[u8]) -> Option<(ApiKey, i16, &[u8])> {
    let ([k, v], rest) = data.split_first_chunk::<2>()?;
    let key = *ApiKey::ALL.get(usize::from(*k) % ApiKey::ALL.len())?;
    let valid = key.info().valid;
    let version = if *v < 0x80 && !valid.is_empty() {
        let span = i32::from(valid.hi) - i32::from(valid.lo) + 1;
        i16::try_from(i32::from(valid.lo) + i32::from(*v) % span).ok()?
    } else {
        i16::from(*v as i8)
    };
    Some((key, version, rest))
}

/// The two bytes that make [`select`] pick `key` at `version` (a valid version).
pub fn selector(key: ApiKey, version: i16) -> [u8; 2] {
    let index = ApiKey::ALL.iter().position(|k| *k == key).unwrap_or(0);
    [index as u8, (version - key.info().valid.lo) as u8]
}

/// Decodes any request body by (api key, version).
pub fn decode_request(data: &[u8]) {
    let Some((key, version, body)) = select(data) else { return };
    LIMITS.scope(|| {
        let _ = RequestKind::decode(&mut Bytes::copy_from_slice(body), key.key(), version);
    });
}

/// Decodes any response body by (api key, version).
pub fn decode_response(data: &[u8]) {
    let Some((key, version, body)) = select(data) else { return };
    LIMITS.scope(|| {
        let _ = ResponseKind::decode(&mut Bytes::copy_from_slice(body), key.key(), version);
    });
}

/// Reads the input as a broker reads a socket, through the production path: the connection
/// codec's frame splitter and header reader (`ServerCodec`, `RequestFrame::parse`), then each
/// body. The input is fed in two parts (split where its first byte says) so partial frames are
/// exercised too.
pub fn decode_frame(data: &[u8]) {
    let Some((cut, data)) = data.split_first() else { return };
    let (first, second) = data.split_at(usize::from(*cut).min(data.len()));
    LIMITS.scope(|| {
        let mut codec = ServerCodec::new();
        let mut buf = BytesMut::from(first);
        for more in [second, &[][..]] {
            loop {
                match codec.decode_request(&mut buf) {
                    Ok(Some(frame)) => check_request_frame(&frame),
                    Ok(None) => break,
                    // A framing or header error ends the connection.
                    Err(_) => return,
                }
            }
            buf.extend_from_slice(more);
        }
    });
}

/// One request frame read by the codec: the header must say what its first bytes say, and the
/// body decodes (or fails) without panicking.
fn check_request_frame(frame: &RequestFrame) {
    let _ = frame.decode_body();
}

/// Reads the input as a client reads responses through `ClientCodec`: the first two bytes pick
/// the api and version of a request in flight (see [`select`]) with correlation id 1; the rest
/// is the broker's byte stream.
pub fn decode_response_frame(data: &[u8]) {
    let Some((key, version, stream)) = select(data) else { return };
    LIMITS.scope(|| {
        let mut codec = ClientCodec::new();
        if codec.expect_response(1, key, version).is_err() {
            return;
        }
        let mut buf = BytesMut::from(stream);
        while let Ok(Some(response)) = codec.decode_response(&mut buf) {
            std::hint::black_box(response);
        }
    });
}

/// Walks a records field and decodes every record of every batch, whatever its codec. The first
/// byte's low bit turns CRC checks on (off lets the fuzzer reach the codecs and record parsing).
pub fn decode_records(data: &[u8]) {
    let Some((flags, rest)) = data.split_first() else { return };
    let options = DecodeOptions { verify_crc: flags & 1 == 1, ..LIMITS.record_options() };
    for batch in Batches::with_options(Bytes::copy_from_slice(rest), options) {
        let Ok(batch) = batch else { break };
        match &batch {
            Batch::V2(b) => {
                if let Ok(records) = b.records_with(&options) {
                    for record in records {
                        let Ok(record) = record else { break };
                        for header in record.headers.iter() {
                            std::hint::black_box(header);
                        }
                    }
                }
                let _ = b.control_records();
            }
            Batch::Legacy(m) => {
                let _ = m.records_with(&options);
            }
            Batch::Partial(_) => {}
        }
    }
}

macro_rules! differential {
    ($kind:ty, $key:expr, $version:expr, $body:expr) => {{
        let (key, version) = ($key, $version);
        let Ok(first) = <$kind>::decode(&mut Bytes::copy_from_slice($body), key, version) else { return };
        let mut encoded = BytesMut::new();
        if let Err(e) = first.encode(&mut encoded, version) {
            panic!("decoded value does not encode back: {e}\n{first:?}");
        }
        assert_eq!(encoded.len(), first.encoded_len(version), "encoded_len disagrees with encode");
        let mut again = encoded.clone().freeze();
        let second = match <$kind>::decode(&mut again, key, version) {
            Ok(v) => v,
            Err(e) => panic!("re-encoded value does not decode: {e}\n{first:?}"),
        };
        assert!(again.is_empty(), "{} bytes left after decoding a re-encoded value", again.len());
        // NaN float64 fields make a value unequal to itself; the bytes still have to agree.
        #[allow(clippy::eq_op)]
        if first == first {
            assert_eq!(first, second, "decode -> encode -> decode changed the value");
        }
        let mut reencoded = BytesMut::new();
        second.encode(&mut reencoded, version).expect("second encode");
        assert_eq!(encoded, reencoded, "encoding is not stable");
    }};
}

/// Differential check: a body that decodes must encode back (to exactly `encoded_len` bytes),
/// decode again to an equal value using every byte, and re-encode identically. The first byte's
/// low bit picks requests or responses; then [`select`].
pub fn roundtrip(data: &[u8]) {
    let Some((dir, rest)) = data.split_first() else { return };
    let Some((key, version, body)) = select(rest) else { return };
    LIMITS.scope(|| if dir & 1 == 0 { differential!(RequestKind, key.key(), version, body) } else { differential!(ResponseKind, key.key(), version, body) });
}

/// The borrowed views against the owned decode, as `roundtrip` picks the message: the same
/// outcome both ways, the same error (kind, message, field path, offset) or equal values.
pub fn views(data: &[u8]) {
    let Some((dir, rest)) = data.split_first() else { return };
    let Some((key, version, body)) = select(rest) else { return };
    let kind = if dir & 1 == 0 { "Request" } else { "Response" };
    let name = format!("{}{kind}", key.info().name);
    LIMITS.scope(|| kwire::messages::visit_view_messages(&mut SameOutcome { name: &name, version, body }));
}

struct SameOutcome<'a> {
    name: &'a str,
    version: i16,
    body: &'a [u8],
}

impl kwire::runtime::sample::ViewMessageVisitor for SameOutcome<'_> {
    fn visit<M: kwire::Message + kwire::runtime::sample::Sample + kwire::Viewed>(&mut self) {
        use kwire::{IntoOwned, MessageView};
        if M::NAME != self.name {
            return;
        }
        let owned = M::decode(&mut Bytes::copy_from_slice(self.body), self.version);
        let mut slice = self.body;
        let view = <M::View<'_> as MessageView<'_>>::decode(&mut slice, self.version);
        let describe = |e: &kwire::DecodeError| format!("{:?} {:?} {:?} {}", e.kind(), e.message(), e.offset(), e.path_string());
        match (owned, view) {
            (Ok(o), Ok(v)) => {
                let back = v.into_owned();
                // NaN float64 fields make a value unequal to itself; their text still agrees.
                assert!(back == o || format!("{back:?}") == format!("{o:?}"), "view and owned decode differ");
            }
            (Err(a), Err(b)) => assert_eq!(describe(&a), describe(&b), "view and owned decode fail differently"),
            (a, b) => panic!("one decode failed: owned {:?}, view {:?}", a.err(), b.err()),
        }
    }
}

/// Every target by name, as `run.sh` and the corpus test know them.
#[allow(clippy::type_complexity)]
pub const TARGETS: [(&str, fn(&[u8])); 7] = [
    ("decode_request", decode_request),
    ("decode_response", decode_response),
    ("decode_frame", decode_frame),
    ("decode_response_frame", decode_response_frame),
    ("decode_records", decode_records),
    ("roundtrip", roundtrip),
    ("views", views),
];
