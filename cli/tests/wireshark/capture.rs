//! A capture written by hand: one TCP conversation on loopback holding a sample request and
//! response of every api key and version of this build, pipelined two at a time, frames split
//! over segments (some inside the size prefix) and several frames to a segment.

use std::collections::BTreeMap;
use std::path::Path;

use kwire::messages::{visit_messages, SaslAuthenticateRequest};
use kwire::runtime::sample::{MessageVisitor, Sample, SampleRng};
use kwire::{ApiKey, Message};

/// One Kafka message of the conversation, framed (size prefix, header, body).
pub struct Framed {
    pub response: bool,
    pub bytes: Vec<u8>,
}

/// The seed of a sample: one per api key, version and direction, so a test can rebuild it.
fn seed(key: i16, version: i16, response: bool) -> u64 {
    (key as u64) << 20 | (version as u64) << 4 | u64::from(response)
}

#[derive(Default)]
struct Bodies(BTreeMap<(i16, i16), [Option<Vec<u8>>; 2]>);

impl MessageVisitor for Bodies {
    fn visit<M: Message + Sample>(&mut self) {
        let (name, response) = match (M::NAME.strip_suffix("Request"), M::NAME.strip_suffix("Response")) {
            (Some(n), _) => (n, false),
            (_, Some(n)) => (n, true),
            _ => return,
        };
        let Some(api) = ApiKey::ALL.iter().find(|a| a.name() == name) else { return };
        for version in M::VERSIONS.lo..=M::VERSIONS.hi {
            let body = M::sample(version, &mut SampleRng::new(seed(api.key(), version, response)))
                .to_bytes(version)
                .unwrap_or_else(|e| panic!("{} v{version}: {e}", M::NAME));
            self.0.entry((api.key(), version)).or_default()[usize::from(response)] = Some(body.to_vec());
        }
    }
}

/// The auth bytes of the SaslAuthenticate request at its newest version, as in the capture.
pub fn sasl_auth_bytes() -> Vec<u8> {
    let v = SaslAuthenticateRequest::VERSIONS.hi;
    SaslAuthenticateRequest::sample(v, &mut SampleRng::new(seed(ApiKey::SaslAuthenticate.key(), v, false))).auth_bytes.to_vec()
}

fn header(api: ApiKey, version: i16, correlation_id: i32, response: bool) -> Vec<u8> {
    let mut h = Vec::new();
    if response {
        h.extend_from_slice(&correlation_id.to_be_bytes());
        if kwire::header::response_header_version(api, version) >= 1 {
            h.push(0); // no tagged fields
        }
        return h;
    }
    h.extend_from_slice(&api.key().to_be_bytes());
    h.extend_from_slice(&version.to_be_bytes());
    h.extend_from_slice(&correlation_id.to_be_bytes());
    let hv = kwire::header::request_header_version(api.key(), version);
    if hv >= 1 {
        let client = b"kwire-wireshark-test";
        h.extend_from_slice(&(client.len() as i16).to_be_bytes());
        h.extend_from_slice(client);
    }
    if hv >= 2 {
        h.push(0);
    }
    h
}

/// Every api key and version, request then response, correlation ids from 1.
pub fn every_api_and_version() -> Vec<Framed> {
    let mut bodies = Bodies::default();
    visit_messages(&mut bodies);
    let mut out = Vec::new();
    let mut correlation_id = 0;
    for ((key, version), [request, response]) in bodies.0 {
        let (Some(request), Some(response)) = (request, response) else { panic!("api {key} v{version} lacks a request or a response") };
        let api = ApiKey::from_i16(key).unwrap();
        correlation_id += 1;
        for (is_response, body) in [(false, request), (true, response)] {
            let mut bytes = header(api, version, correlation_id, is_response);
            bytes.extend_from_slice(&body);
            let mut framed = (bytes.len() as i32).to_be_bytes().to_vec();
            framed.extend_from_slice(&bytes);
            out.push(Framed { response: is_response, bytes: framed });
        }
    }
    out
}

/// Writes the conversation as a classic pcap (Ethernet, IPv4, TCP on 127.0.0.1): a handshake,
/// then requests two at a time in the client's segments and their responses in the server's.
pub fn write_pcap(path: &Path, server_port: u16, messages: &[Framed]) {
    let mut w = Writer { out: Vec::new(), seq: [1000, 5000], time: 0, ports: [40_000, server_port] };
    w.out.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    w.out.extend_from_slice(&2u16.to_le_bytes());
    w.out.extend_from_slice(&4u16.to_le_bytes());
    w.out.extend_from_slice(&[0; 8]);
    w.out.extend_from_slice(&262_144u32.to_le_bytes());
    w.out.extend_from_slice(&1u32.to_le_bytes()); // Ethernet
    w.segment(0, 0x02, &[]);
    w.seq[0] += 1;
    w.segment(1, 0x12, &[]);
    w.seq[1] += 1;
    w.segment(0, 0x10, &[]);
    let requests: Vec<&Framed> = messages.iter().filter(|m| !m.response).collect();
    let responses: Vec<&Framed> = messages.iter().filter(|m| m.response).collect();
    let mut n = 0usize;
    for (reqs, resps) in requests.chunks(2).zip(responses.chunks(2)) {
        for (side, group) in [(0, reqs), (1, resps)] {
            let stream: Vec<u8> = group.iter().flat_map(|m| m.bytes.iter().copied()).collect();
            // Cut points vary: inside the size prefix, a few bytes in, or at most 1,400 bytes.
            let mut at = 0;
            while at < stream.len() {
                n += 1;
                let len = match n % 5 {
                    0 => 2,
                    1 => 7,
                    _ => 1400,
                }
                .min(stream.len() - at);
                w.segment(side, 0x18, &stream[at..at + len]);
                at += len;
            }
        }
    }
    std::fs::write(path, w.out).unwrap();
}

struct Writer {
    out: Vec<u8>,
    seq: [u32; 2],
    time: u32,
    ports: [u16; 2],
}

impl Writer {
    /// One TCP segment from `side` (0 the client, 1 the server).
    fn segment(&mut self, side: usize, flags: u8, payload: &[u8]) {
        let mut ip = vec![0x45, 0];
        ip.extend_from_slice(&((20 + 20 + payload.len()) as u16).to_be_bytes());
        ip.extend_from_slice(&[0, 0, 0x40, 0, 64, 6, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1]);
        let sum = ip.chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], c[1]]))).sum::<u32>();
        let sum = !(((sum & 0xffff) + (sum >> 16)) as u16);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        let mut tcp = Vec::new();
        tcp.extend_from_slice(&self.ports[side].to_be_bytes());
        tcp.extend_from_slice(&self.ports[1 - side].to_be_bytes());
        tcp.extend_from_slice(&self.seq[side].to_be_bytes());
        tcp.extend_from_slice(&if flags == 0x02 { 0 } else { self.seq[1 - side] }.to_be_bytes());
        tcp.extend_from_slice(&[0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
        let mut frame = vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x08, 0];
        frame.extend_from_slice(&ip);
        frame.extend_from_slice(&tcp);
        frame.extend_from_slice(payload);
        self.time += 1;
        self.out.extend_from_slice(&(self.time / 1000).to_le_bytes());
        self.out.extend_from_slice(&((self.time % 1000) * 1000).to_le_bytes());
        self.out.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        self.out.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        self.out.extend_from_slice(&frame);
        self.seq[side] = self.seq[side].wrapping_add(payload.len() as u32);
    }
}
