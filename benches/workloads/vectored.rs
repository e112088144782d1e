//! A vectored encode with today's API: a `BufMut` that collects the frame as a list of `Bytes`
//! chunks for `writev`, copying the small fields into header chunks and handing the large
//! records `Bytes` through uncopied.
//!
//! `Encode::encode` hands a bytes field to the buffer as `put_slice(&[u8])`, which loses the
//! `Bytes` it came from. So the collector is told in advance which `Bytes` the message holds (in
//! encode order) and recognises each by address and length when its slice arrives. The clean way
//! (a runtime change, see BENCHMARKS.md) is for the runtime to write bytes fields with
//! `BufMut::put(bytes.clone())`, which a collector can take over zero-copy via
//! `Buf::copy_to_bytes`; every other `BufMut` copies as it does now.

use bytes::buf::UninitSlice;
use bytes::{BufMut, Bytes, BytesMut};

/// Slices shorter than this are always copied: not worth a chunk of their own.
const MIN_SHARED: usize = 1024;

/// Collects an encoded frame as `Bytes` chunks.
pub struct Vectored {
    /// The `Bytes` expected to be written uncopied, in the order the encoder writes them.
    shared: Vec<Bytes>,
    next: usize,
    /// Bytes written since the last shared chunk.
    head: BytesMut,
    chunks: Vec<Bytes>,
}

impl Vectored {
    /// A collector expecting `shared` (in encode order) to pass through uncopied; `head_capacity`
    /// is reserved for the copied bytes.
    pub fn new(shared: Vec<Bytes>, head_capacity: usize) -> Self {
        let chunks = Vec::with_capacity(2 * shared.len() + 1);
        Vectored { shared, next: 0, head: BytesMut::with_capacity(head_capacity), chunks }
    }

    /// The frame as chunks; their concatenation is the encoded frame.
    pub fn finish(mut self) -> Vec<Bytes> {
        if !self.head.is_empty() {
            self.chunks.push(self.head.split().freeze());
        }
        self.chunks
    }

    /// How many of the expected `Bytes` passed through uncopied.
    pub fn shared_count(&self) -> usize {
        self.next
    }
}

// SAFETY: every method delegates to the inner `BytesMut`, which upholds `BufMut`'s contract.
unsafe impl BufMut for Vectored {
    fn remaining_mut(&self) -> usize {
        self.head.remaining_mut()
    }

    unsafe fn advance_mut(&mut self, cnt: usize) {
        // SAFETY: the caller initialised `cnt` bytes of the chunk `chunk_mut` returned.
        unsafe { self.head.advance_mut(cnt) }
    }

    fn chunk_mut(&mut self) -> &mut UninitSlice {
        self.head.chunk_mut()
    }

    fn put_slice(&mut self, src: &[u8]) {
        if src.len() >= MIN_SHARED {
            if let Some(b) = self.shared.get(self.next) {
                if b.as_ptr() == src.as_ptr() && b.len() == src.len() {
                    if !self.head.is_empty() {
                        self.chunks.push(self.head.split().freeze());
                    }
                    self.chunks.push(b.clone());
                    self.next += 1;
                    return;
                }
            }
        }
        self.head.extend_from_slice(src);
    }
}
