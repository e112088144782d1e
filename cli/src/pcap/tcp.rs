//! Reassembly of one direction of a TCP connection: segments in, in-order bytes out.
//!
//! Retransmitted and overlapping segments are trimmed to the bytes not yet delivered;
//! out-of-order segments wait until the hole before them is filled. A hole that is never filled
//! (a packet the capture missed) is skipped once too much data waits behind it, or at the end of
//! the capture, and reported as a [`Chunk::Gap`] so the framer can resynchronise.

use std::collections::BTreeMap;

/// In-order output of a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chunk {
    /// The next bytes of the stream.
    Data(Vec<u8>),
    /// This many bytes are missing from the capture.
    Gap(u64),
}

/// How much out-of-order data may wait behind a hole before the hole is given up on.
const MAX_PENDING: usize = 16 << 20;

/// One direction of a TCP connection.
#[derive(Debug, Default)]
pub struct HalfStream {
    /// Sequence number of the next byte to deliver, once known.
    next_seq: Option<u32>,
    /// Stream offset of that byte (64-bit, so sequence wrap-around does not matter).
    next_off: u64,
    /// Segments ahead of `next_off`, by stream offset.
    pending: BTreeMap<u64, Vec<u8>>,
    pending_bytes: usize,
    /// Whether the stream was seen from its SYN, so its first byte starts a frame.
    pub from_syn: bool,
}

impl HalfStream {
    /// Whether a SYN with this sequence number starts a new connection on a stream already in use.
    pub fn is_new_connection(&self, seq: u32) -> bool {
        self.next_seq.is_some_and(|n| n != seq.wrapping_add(1))
    }

    /// Feeds one segment; appends what is now deliverable to `out`.
    pub fn push(&mut self, seq: u32, syn: bool, payload: &[u8], out: &mut Vec<Chunk>) {
        if syn {
            if self.next_seq.is_none() {
                self.next_seq = Some(seq.wrapping_add(1));
                self.from_syn = true;
            }
            // Data on a SYN is rare (TCP fast open); it follows the SYN's sequence number.
            if payload.is_empty() {
                return;
            }
            return self.push(seq.wrapping_add(1), false, payload, out);
        }
        if payload.is_empty() {
            return;
        }
        let next_seq = *self.next_seq.get_or_insert(seq);
        // Signed distance from the next expected byte: negative for retransmitted data.
        let delta = i64::from(seq.wrapping_sub(next_seq) as i32);
        let off = self.next_off as i64 + delta;
        let (off, data) = if off < 0 {
            // Bytes from before the capture's view of the stream started.
            match payload.get((-off) as usize..) {
                Some(rest) if !rest.is_empty() => (0, rest),
                _ => return,
            }
        } else {
            (off, payload)
        };
        let off = off as u64;
        let keep = self.pending.get(&off).is_none_or(|old| old.len() < data.len());
        if keep {
            if let Some(old) = self.pending.insert(off, data.to_vec()) {
                self.pending_bytes -= old.len();
            }
            self.pending_bytes += data.len();
        }
        self.drain(out);
        while self.pending_bytes > MAX_PENDING {
            self.skip_hole(out);
        }
    }

    /// At the end of the capture: skips every remaining hole and delivers what waits behind it.
    pub fn flush(&mut self, out: &mut Vec<Chunk>) {
        while !self.pending.is_empty() {
            self.skip_hole(out);
        }
    }

    fn skip_hole(&mut self, out: &mut Vec<Chunk>) {
        if let Some((&first, _)) = self.pending.first_key_value() {
            if first > self.next_off {
                let missing = first - self.next_off;
                out.push(Chunk::Gap(missing));
                self.advance(missing);
            }
            self.drain(out);
        }
    }

    fn advance(&mut self, n: u64) {
        self.next_off += n;
        self.next_seq = self.next_seq.map(|s| s.wrapping_add(n as u32));
    }

    fn drain(&mut self, out: &mut Vec<Chunk>) {
        while let Some(entry) = self.pending.first_entry() {
            let off = *entry.key();
            if off > self.next_off {
                break;
            }
            let data = entry.remove();
            self.pending_bytes -= data.len();
            let skip = (self.next_off - off) as usize;
            if let Some(fresh) = data.get(skip..).filter(|d| !d.is_empty()) {
                self.advance(fresh.len() as u64);
                out.push(Chunk::Data(fresh.to_vec()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(out: &[Chunk]) -> Vec<u8> {
        out.iter().flat_map(|c| if let Chunk::Data(d) = c { d.clone() } else { Vec::new() }).collect()
    }

    #[test]
    fn reorders_trims_retransmits_and_wraps() {
        let mut s = HalfStream::default();
        let mut out = Vec::new();
        let base = u32::MAX - 3; // the sequence wraps inside the stream
        s.push(base, true, b"", &mut out);
        s.push(base.wrapping_add(5), false, b"efgh", &mut out); // ahead of a hole
        assert!(out.is_empty());
        s.push(base.wrapping_add(1), false, b"abcd", &mut out);
        s.push(base.wrapping_add(3), false, b"cdef", &mut out); // overlapping retransmit
        s.push(base.wrapping_add(9), false, b"ij", &mut out);
        assert_eq!(data(&out), b"abcdefghij");
        assert!(s.from_syn);
    }

    #[test]
    fn skips_a_hole_at_the_end() {
        let mut s = HalfStream::default();
        let mut out = Vec::new();
        s.push(100, false, b"abc", &mut out); // mid-stream start
        s.push(110, false, b"xyz", &mut out);
        s.flush(&mut out);
        assert_eq!(out, vec![Chunk::Data(b"abc".to_vec()), Chunk::Gap(7), Chunk::Data(b"xyz".to_vec())]);
        assert!(!s.from_syn);
    }
}
