//! Splitting a reassembled stream into Kafka frames (int32 size, then that many bytes).
//!
//! A stream seen from its SYN starts on a frame boundary. One that starts mid-stream, or that
//! lost bytes to a gap, is resynchronised by scanning for the first offset where a whole frame
//! would be plausible: a sane size followed by a request of a known api key and version that
//! decodes completely, or a response whose correlation id answers a pending request.

use kwire::codec::{FrameDecoder, InFlight};
use kwire::header::peek_request_start;

use crate::message::{request_json, response_json};

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

/// The frame splitter of one direction: the codec's [`FrameDecoder`] (frames up to the maximum
/// size of the limits in force) over a buffer that also resynchronises.
#[derive(Debug, Default)]
pub struct Framer {
    buf: Vec<u8>,
    synced: bool,
    frames: FrameDecoder,
}

enum Candidate {
    Yes,
    No,
    NeedMore,
}

impl Framer {
    /// A framer whose first byte starts a frame (`synced`) or not.
    pub fn new(synced: bool) -> Self {
        Framer { buf: Vec::new(), synced, frames: FrameDecoder::default() }
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
    pub fn push(&mut self, data: &[u8], request: bool, pending: &InFlight, end: bool, out: &mut Vec<Item>) {
        self.buf.extend_from_slice(data);
        let mut start = 0;
        loop {
            let rest = self.buf.get(start..).unwrap_or_default();
            if rest.is_empty() {
                break;
            }
            if !self.synced {
                match resync(&self.frames, rest, request, pending, end) {
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
            match self.frames.split(rest) {
                Ok(Some((frame, used))) => {
                    out.push(Item::Frame(frame.to_vec()));
                    start += used;
                }
                Ok(None) => {
                    if end {
                        out.push(Item::Cut(rest.len()));
                        start = self.buf.len();
                    }
                    break;
                }
                // An impossible size: the stream is not where it seemed; look for a boundary.
                Err(_) => self.synced = false,
            }
        }
        self.buf.drain(..start.min(self.buf.len()));
    }
}

/// The offset of the first plausible frame in `b`, or `None` if none is found yet.
fn resync(frames: &FrameDecoder, b: &[u8], request: bool, pending: &InFlight, end: bool) -> Option<usize> {
    for i in 0..b.len() {
        let rest = b.get(i..).unwrap_or_default();
        match candidate(frames, rest, request, pending) {
            Candidate::Yes => return Some(i),
            Candidate::NeedMore if !end => return None,
            _ => {}
        }
    }
    None
}

fn candidate(frames: &FrameDecoder, b: &[u8], request: bool, pending: &InFlight) -> Candidate {
    let size = match frames.frame_size(b) {
        Ok(None) => return Candidate::NeedMore,
        Ok(Some(size)) if size >= 4 => size,
        _ => return Candidate::No,
    };
    let Some(head) = b.get(4..b.len().min(12)) else { return Candidate::NeedMore };
    if request {
        if head.len() < 8 {
            return Candidate::NeedMore;
        }
        let Some((key, version, _)) = peek_request_start(head) else { return Candidate::No };
        let known = kwire::ApiKey::from_i16(key).is_some_and(|k| k.info().valid.contains(version));
        if !known {
            return Candidate::No;
        }
        match b.get(4..4 + size) {
            Some(frame) if request_json(frame).is_ok() => Candidate::Yes,
            Some(_) => Candidate::No,
            None => Candidate::NeedMore,
        }
    } else {
        let Some(corr) = kwire::header::peek_response_correlation_id(head) else {
            return Candidate::NeedMore;
        };
        let Some((key, version)) = pending.get(corr) else { return Candidate::No };
        match b.get(4..4 + size) {
            Some(frame) if response_json(frame, key.key(), version).is_ok() => Candidate::Yes,
            Some(_) => Candidate::No,
            None => Candidate::NeedMore,
        }
    }
}
