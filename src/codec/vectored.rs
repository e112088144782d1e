//! A vectored encode: a `BufMut` that collects a frame as a list of `Bytes` chunks for `writev`,
//! copying the small fields into header chunks and handing the large records `Bytes` through
//! uncopied ([`ClientCodec::encode_request_vectored`](super::ClientCodec::encode_request_vectored)
//! uses it; so do the benchmarks).
//!
//! `Encode::encode` hands a bytes field to the buffer as `put_slice(&[u8])`, which loses the
//! `Bytes` it came from. So the collector is told in advance which `Bytes` the message holds (in
//! encode order) and recognises each by address and length when its slice arrives.

use bytes::buf::UninitSlice;
use bytes::{BufMut, Bytes, BytesMut};

/// Slices shorter than this are always copied: not worth a chunk of their own.
const MIN_SHARED: usize = 1024;

/// Collects an encoded frame as `Bytes` chunks.
#[derive(Debug)]
pub struct Vectored {
    /// The `Bytes` expected to be written uncopied, in the order the encoder writes them.
    shared: Vec<Bytes>,
    next: usize,
    /// Bytes written since the last shared chunk.
    head: BytesMut,
    chunks: Vec<Bytes>,
}

impl Vectored {
    /// A collector expecting `shared` (in encode order) to pass through uncopied (those of at
    /// least 1 KiB; shorter ones are copied); `head_capacity` is reserved for the copied bytes.
    pub fn new(mut shared: Vec<Bytes>, head_capacity: usize) -> Self {
        // Short ones are copied whatever they are, so they are not waited for.
        shared.retain(|b| b.len() >= MIN_SHARED);
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
                    self.next = self.next.saturating_add(1);
                    return;
                }
            }
        }
        self.head.extend_from_slice(src);
    }
}

#[cfg(test)]
mod tests {
    use bytes::{Bytes, BytesMut};

    use crate::codec::{ClientCodec, OutboundRequest};
    use crate::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use crate::messages::ProduceRequest;
    use crate::{ApiKey, RequestKind};

    #[test]
    fn a_vectored_request_is_the_copied_one_with_its_records_uncopied() {
        let records: Vec<Bytes> = [9000usize, 100, 5000].iter().map(|&n| Bytes::from(vec![n as u8; n])).collect();
        let partitions =
            records.iter().enumerate().map(|(i, r)| PartitionProduceData { index: i as i32, records: Some(r.clone()), ..Default::default() }).collect();
        let body = ProduceRequest {
            acks: -1,
            timeout_ms: 30_000,
            topic_data: vec![TopicProduceData { name: "t".into(), partition_data: partitions, ..Default::default() }],
            ..Default::default()
        };
        // v3 (classic), v9 (flexible), up to v12 (the last with topic names) where the build has it.
        let newest = ApiKey::Produce.info().valid.hi.min(12);
        for version in [3, 9, newest] {
            let request = OutboundRequest::new(ApiKey::Produce, version, 7, RequestKind::Produce(body.clone())).with_client_id("c");
            let mut copied = BytesMut::new();
            ClientCodec::new().encode_request(request.clone(), &mut copied).unwrap();
            let mut codec = ClientCodec::new();
            let chunks = codec.encode_request_vectored(&request, records.clone()).unwrap();
            assert_eq!(chunks.concat(), copied.as_ref(), "v{version}");
            // The two large records pass through as the very same bytes; the small one is copied.
            let shared: Vec<_> = chunks.iter().filter(|c| records.iter().any(|r| r.as_ptr() == c.as_ptr())).collect();
            assert_eq!(shared.len(), 2, "v{version}");
            assert_eq!(codec.in_flight(), 1, "the correlation id is remembered");
            assert!(codec.encode_request_vectored(&request, Vec::new()).is_err(), "a duplicate id is refused");
        }
    }
}
