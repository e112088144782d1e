//! Splitting a reassembled stream into Kafka frames (int32 size, then that many bytes).
//!
//! A stream seen from its SYN starts on a frame boundary. One that starts mid-stream, or that
//! lost bytes to a gap, is resynchronised by scanning for the first offset where a whole frame
//! would be plausible: a sane size followed by a request of a known api key and version that
//! decodes completely, or a response whose correlation id answers a pending request.

use std::collections::HashMap;

use crate::message::{peek_request, request_json, response_json};

/// Kafka's default `socket.request.max.bytes`: no frame is larger.
pub const MAX_FRAME: usize = 100 << 20;

/// What a stream yields.
#[derive(Debug)]
pub enum Item {
    /// A whole frame's payload (without the size).
    Frame(Vec<u8>),
    /// Bytes passed over while looking for a frame boundary, and why.
    Skipped(usize, &'static str),
    /// A frame cut by bytes missing from the capture.
    Cut(usize),
}

/// Requests waiting for a response on one connection: correlation id -> (api key, version).
pub type Pending = HashMap<i32, (i16, i16)>;

/// The frame splitter of one direction.
#[derive(Debug, Default)]
pub struct Framer {
    buf: Vec<u8>,
    synced: bool,
}

enum Candidate {
    Yes,
    No,
    NeedMore,
}

impl Framer {
    /// A framer whose first byte starts a frame (`synced`) or not.
    pub fn new(synced: bool) -> Self {
        Framer { buf: Vec::new(), synced }
    }

    /// Bytes are missing before the next data: drops any partial frame and resynchronises.
    pub fn gap(&mut self, out: &mut Vec<Item>) {
        if !self.buf.is_empty() {
            out.push(if self.synced { Item::Cut(self.buf.len()) } else { Item::Skipped(self.buf.len(), "gap in the capture") });
        }
        self.buf.clear();
        self.synced = false;
    }

    /// Adds stream bytes and splits off every whole frame. `request` says which direction;
    /// `pending` is used to recognise responses when resynchronising. `end` is true at the end
    /// of the capture, when nothing more will arrive.
    pub fn push(&mut self, data: &[u8], request: bool, pending: &Pending, end: bool, out: &mut Vec<Item>) {
        self.buf.extend_from_slice(data);
        let mut start = 0;
        loop {
            let rest = self.buf.get(start..).unwrap_or_default();
            if rest.is_empty() {
                break;
            }
            if !self.synced {
                match resync(rest, request, pending, end) {
                    Some(skip) => {
                        if skip > 0 {
                            out.push(Item::Skipped(skip, "not at a frame boundary (mid-stream start or after a gap)"));
                        }
                        start += skip;
                        self.synced = true;
                        continue;
                    }
                    None if end => {
                        out.push(Item::Skipped(rest.len(), "no frame boundary found"));
                        start = self.buf.len();
                        break;
                    }
                    None => break,
                }
            }
            let Some(size) = frame_size(rest) else {
                if end {
                    out.push(Item::Cut(rest.len()));
                    start = self.buf.len();
                }
                break;
            };
            let Some(size) = size.filter(|s| *s <= MAX_FRAME) else {
                // An impossible size: the stream is not where it seemed; look for a boundary.
                self.synced = false;
                continue;
            };
            match rest.get(4..4 + size) {
                Some(frame) => {
                    out.push(Item::Frame(frame.to_vec()));
                    start += 4 + size;
                }
                None => {
                    if end {
                        out.push(Item::Cut(rest.len()));
                        start = self.buf.len();
                    }
                    break;
                }
            }
        }
        self.buf.drain(..start.min(self.buf.len()));
    }
}

/// The size prefix: `None` when fewer than 4 bytes, `Some(None)` when negative.
fn frame_size(b: &[u8]) -> Option<Option<usize>> {
    let size = i32::from_be_bytes(b.get(..4)?.try_into().ok()?);
    Some(usize::try_from(size).ok())
}

/// The offset of the first plausible frame in `b`, or `None` if none is found yet.
fn resync(b: &[u8], request: bool, pending: &Pending, end: bool) -> Option<usize> {
    for i in 0..b.len() {
        let rest = b.get(i..).unwrap_or_default();
        match candidate(rest, request, pending) {
            Candidate::Yes => return Some(i),
            Candidate::NeedMore if !end => return None,
            _ => {}
        }
    }
    None
}

fn candidate(b: &[u8], request: bool, pending: &Pending) -> Candidate {
    let Some(size) = frame_size(b) else { return Candidate::NeedMore };
    let Some(size) = size.filter(|s| (4..=MAX_FRAME).contains(s)) else { return Candidate::No };
    let Some(head) = b.get(4..b.len().min(12)) else { return Candidate::NeedMore };
    if request {
        if head.len() < 8 {
            return Candidate::NeedMore;
        }
        let Some(peek) = peek_request(head) else { return Candidate::No };
        let known = kafka_wire::ApiKey::from_i16(peek.api_key).is_some_and(|k| k.info().valid.contains(peek.api_version));
        if !known {
            return Candidate::No;
        }
        match b.get(4..4 + size) {
            Some(frame) if request_json(frame).is_ok() => Candidate::Yes,
            Some(_) => Candidate::No,
            None => Candidate::NeedMore,
        }
    } else {
        let Some(corr) = head.get(..4).and_then(|c| c.try_into().ok()).map(i32::from_be_bytes) else {
            return Candidate::NeedMore;
        };
        let Some(&(key, version)) = pending.get(&corr) else { return Candidate::No };
        match b.get(4..4 + size) {
            Some(frame) if response_json(frame, key, version).is_ok() => Candidate::Yes,
            Some(_) => Candidate::No,
            None => Candidate::NeedMore,
        }
    }
}
