//! Memory for batches, kept per thread and reused: batches built by a producer and lz4 frames
//! inflated by a consumer are appended straight into a chunk of a small pool kept per thread
//! ([`write_into`]); other inflated batches are written into a scratch buffer kept per thread
//! and copied into a chunk ([`write_out`]: their decoders write into initialised memory, which
//! the scratch is, once zeroed). Either way a batch is handed out as a [`Bytes`] slice of its
//! chunk (records are slices of an inflated batch in turn).
//!
//! Why: a client writes batch after batch, and lets each go soon (a consumer drops a poll's
//! records before its next poll; a producer drops a batch once acknowledged). In fresh memory
//! every batch was a new allocation that glibc handed back to the OS once dropped and then
//! faulted in again page by page: a 100 B-record lz4 consumer took 47 k page faults and a
//! 1 KiB-record lz4 producer 62 k (8 k and 4.6 k with the pool). A chunk whose slices have all
//! been dropped is taken back without allocating ([`BytesMut::try_reclaim`]); one still held
//! is left alone and a new chunk is made, so nothing handed out is ever written again.
//!
//! Held per thread when idle, by default: the scratch (at most 8 MiB) and up to 8 chunks of
//! [`CHUNK`] (2 MiB); the program sets how much with [`set_memory_policy`] (none at all with
//! [`MemoryPolicy::MINIMAL`]), and a thread lets go of what it holds with
//! [`release_thread_memory`]. A record kept keeps its whole chunk alive, as a record of an
//! uncompressed batch keeps its whole fetch response alive.

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::{Bytes, BytesMut};

/// Size of one chunk of the pool; a batch larger than this gets an allocation of its own.
pub(super) const CHUNK: usize = 2 << 20;

/// How much memory the record codec keeps between batches to reuse: what a producer building
/// batch after batch, or a consumer inflating them, would otherwise allocate and fault in
/// again each time. Process-wide, set with [`set_memory_policy`]; the default suits a client
/// (a 100 B-record lz4 consumer takes 8 k page faults with it, 47 k without); a broker, a
/// proxy or a program with many threads that each touch a batch now and then may want less.
///
/// ```
/// use kwire_runtime::records::{memory_policy, release_thread_memory, set_memory_policy, MemoryPolicy};
///
/// // Nothing kept between batches: each gets memory of its own, freed with it.
/// set_memory_policy(MemoryPolicy::MINIMAL);
/// assert_eq!(memory_policy(), MemoryPolicy::MINIMAL);
/// // Or bounded: two chunks per thread, scratch buffers up to 1 MiB.
/// set_memory_policy(MemoryPolicy { pool_chunks: 2, keep_scratch: 1 << 20, ..MemoryPolicy::DEFAULT });
/// // A thread done with batches for a while lets go of what it holds.
/// release_thread_memory();
/// # set_memory_policy(MemoryPolicy::DEFAULT);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryPolicy {
    /// Chunks of 2 MiB each thread keeps to build and inflate batches into (0: none;
    /// every batch is an allocation of its own).
    pub pool_chunks: usize,
    /// The largest scratch buffer (records before compression, an inflated batch before it is
    /// copied out, a zstd decompression context) a thread keeps between batches, in bytes; a
    /// larger one, grown for a huge batch, is freed after it (0: none kept).
    pub keep_scratch: usize,
    /// zstd compression contexts (a few hundred KiB each, at level 3) the process keeps for
    /// its threads to take in turn (0: one made and freed per batch).
    pub zstd_compressors: usize,
}

impl MemoryPolicy {
    /// Up to 8 chunks (16 MiB) and an 8 MiB scratch per thread that builds or inflates
    /// batches, 4 zstd contexts per process.
    pub const DEFAULT: MemoryPolicy = MemoryPolicy { pool_chunks: 8, keep_scratch: 8 << 20, zstd_compressors: 4 };
    /// Nothing kept: every batch's memory is its own, freed when it is dropped.
    pub const MINIMAL: MemoryPolicy = MemoryPolicy { pool_chunks: 0, keep_scratch: 0, zstd_compressors: 0 };
}

impl Default for MemoryPolicy {
    fn default() -> MemoryPolicy {
        MemoryPolicy::DEFAULT
    }
}

static POOL_CHUNKS: AtomicUsize = AtomicUsize::new(MemoryPolicy::DEFAULT.pool_chunks);
static KEEP_SCRATCH: AtomicUsize = AtomicUsize::new(MemoryPolicy::DEFAULT.keep_scratch);
static ZSTD_COMPRESSORS: AtomicUsize = AtomicUsize::new(MemoryPolicy::DEFAULT.zstd_compressors);

/// Sets how much memory the record codec keeps between batches, for every thread from its next
/// batch on (what a thread holds beyond the new bounds goes as it next builds or inflates one,
/// or at once with [`release_thread_memory`]).
pub fn set_memory_policy(policy: MemoryPolicy) {
    POOL_CHUNKS.store(policy.pool_chunks, Ordering::Relaxed);
    KEEP_SCRATCH.store(policy.keep_scratch, Ordering::Relaxed);
    ZSTD_COMPRESSORS.store(policy.zstd_compressors, Ordering::Relaxed);
}

/// The policy in force.
pub fn memory_policy() -> MemoryPolicy {
    MemoryPolicy {
        pool_chunks: POOL_CHUNKS.load(Ordering::Relaxed),
        keep_scratch: KEEP_SCRATCH.load(Ordering::Relaxed),
        zstd_compressors: ZSTD_COMPRESSORS.load(Ordering::Relaxed),
    }
}

/// The largest scratch buffer a thread keeps ([`MemoryPolicy::keep_scratch`]).
pub(super) fn keep_scratch() -> usize {
    KEEP_SCRATCH.load(Ordering::Relaxed)
}

/// zstd compression contexts the process keeps ([`MemoryPolicy::zstd_compressors`]).
#[cfg(feature = "zstd")]
pub(super) fn zstd_compressors() -> usize {
    ZSTD_COMPRESSORS.load(Ordering::Relaxed)
}

/// Frees what this thread keeps for reuse: its chunks (those still held by batches live on in
/// them), its scratch buffers and its zstd decompression context. The next batch the thread
/// builds or inflates starts afresh.
pub fn release_thread_memory() {
    let _ = POOL.try_with(|p| p.try_borrow_mut().map(|mut p| *p = Pool::default()));
    let _ = SCRATCH.try_with(|s| s.try_borrow_mut().map(|mut s| *s = Vec::new()));
    super::builder::release_thread_memory();
    #[cfg(feature = "zstd")]
    super::compression::release_thread_memory();
}

#[derive(Default)]
struct Pool {
    chunks: Vec<BytesMut>,
    /// The chunk written last; tried first.
    current: usize,
}

impl Pool {
    /// A chunk with room for `len` more bytes: the current one, or one whose slices have all
    /// been dropped, or a new one (replacing the current one when the pool is full; the
    /// replaced chunk lives on in the slices that hold it).
    fn room(&mut self, len: usize) -> Option<&mut BytesMut> {
        let limit = POOL_CHUNKS.load(Ordering::Relaxed);
        if self.chunks.len() > limit {
            // The policy was lowered: the chunks beyond it go (held ones live on in their slices).
            self.chunks.truncate(limit);
            self.current = 0;
        }
        if len > CHUNK || limit == 0 {
            return None;
        }
        let fits = |c: &BytesMut| c.capacity().saturating_sub(c.len()) >= len;
        if !self.chunks.get(self.current).is_some_and(fits) {
            let n = self.chunks.len();
            // Every chunk starts empty (each batch is split off whole), so reclaiming its whole
            // allocation succeeds exactly when no slice of it is left.
            // The chunks after the current one first, the current one last.
            let after = self.current.saturating_add(1).min(n);
            let free = (after..n).chain(0..after).find(|&i| {
                self.chunks.get_mut(i).is_some_and(|c| {
                    let whole = c.capacity().saturating_add(1);
                    c.try_reclaim(whole) || fits(c)
                })
            });
            self.current = match free {
                Some(i) => i,
                None if n < limit => {
                    self.chunks.push(BytesMut::with_capacity(CHUNK));
                    n
                }
                None => {
                    let slot = self.chunks.get_mut(self.current)?;
                    *slot = BytesMut::with_capacity(CHUNK);
                    self.current
                }
            };
        }
        self.chunks.get_mut(self.current).filter(|c| fits(c))
    }
}

thread_local! {
    static POOL: RefCell<Pool> = RefCell::new(Pool::default());
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Copies `data` into the pool and returns it as a slice of a chunk.
pub(super) fn copy_out(data: &[u8]) -> Bytes {
    POOL.with(|cell| {
        let Ok(mut pool) = cell.try_borrow_mut() else {
            return Bytes::copy_from_slice(data);
        };
        match pool.room(data.len()) {
            Some(chunk) => {
                chunk.extend_from_slice(data);
                chunk.split().freeze()
            }
            None => Bytes::copy_from_slice(data),
        }
    })
}

/// Runs `f` on the thread's scratch buffer, as the last call left it (its length is memory
/// already zeroed, which `f` may overwrite instead of growing it again); a fresh buffer if the
/// scratch is in use. A scratch grown past [`MemoryPolicy::keep_scratch`] is not kept.
pub(super) fn with_scratch<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    SCRATCH.with(|cell| {
        let Ok(mut scratch) = cell.try_borrow_mut() else {
            return f(&mut Vec::new());
        };
        let result = f(&mut scratch);
        if scratch.capacity() > keep_scratch() {
            *scratch = Vec::new();
        }
        result
    })
}

/// Runs `write` on the thread's scratch buffer and copies the first bytes of it, as many as
/// `write` returns, out into the pool.
pub(super) fn write_out<E>(write: impl FnOnce(&mut Vec<u8>) -> Result<usize, E>) -> Result<Bytes, E> {
    with_scratch(|scratch| write(scratch).map(|len| copy_out(scratch.get(..len).unwrap_or_default())))
}

/// Runs `write` on an empty buffer with room for `bound` bytes, a chunk of the pool when one
/// fits, and hands out what it appended: output appended piece by piece (a batch's header and
/// records, an lz4 frame's blocks) goes straight into the pool, without the scratch's copy.
/// Appending past `bound` is correct but leaves the pool for an allocation of its own; a
/// buffer of its own starts at most a chunk large (`bound` may be a loose upper bound).
pub(super) fn write_into<E>(bound: usize, write: impl FnOnce(&mut BytesMut) -> Result<(), E>) -> Result<Bytes, E> {
    POOL.with(|cell| {
        let mut pool = cell.try_borrow_mut().ok();
        match pool.as_mut().and_then(|p| p.room(bound)) {
            Some(chunk) => match write(chunk) {
                Ok(()) => Ok(chunk.split().freeze()),
                Err(e) => {
                    // The chunk was empty before (each batch is split off whole).
                    chunk.clear();
                    Err(e)
                }
            },
            None => {
                let mut fresh = BytesMut::with_capacity(bound.min(CHUNK));
                write(&mut fresh).map(|()| fresh.freeze())
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use bytes::BufMut;

    use super::*;

    fn filled(len: usize, byte: u8) -> Vec<u8> {
        vec![byte; len]
    }

    /// Held by the tests that look at the pool: one of them changes the process's policy.
    static POLICY: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn policy_unchanged() -> std::sync::MutexGuard<'static, ()> {
        POLICY.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn chunks_held() -> usize {
        POOL.with(|p| p.borrow().chunks.len())
    }

    #[test]
    fn the_policy_bounds_what_a_thread_keeps_and_release_frees_it() {
        let _policy = policy_unchanged();
        // A thread of its own: the pool is per thread.
        std::thread::spawn(|| {
            let kept = copy_out(&filled(1000, 1));
            assert_eq!(chunks_held(), 1);
            set_memory_policy(MemoryPolicy::MINIMAL);
            // Nothing pooled: the thread's chunk goes, the batch gets memory of its own.
            let own = copy_out(&filled(1000, 2));
            assert_eq!(chunks_held(), 0);
            with_scratch(|s| s.resize(4096, 0));
            SCRATCH.with(|s| assert_eq!(s.borrow().capacity(), 0, "no scratch kept"));
            assert!(kept.iter().all(|&b| b == 1) && own.iter().all(|&b| b == 2));
            set_memory_policy(MemoryPolicy { pool_chunks: 2, ..MemoryPolicy::DEFAULT });
            let held: Vec<Bytes> = (0..4).map(|i| copy_out(&filled(CHUNK, i))).collect();
            assert_eq!(chunks_held(), 2);
            with_scratch(|s| s.resize(4096, 0));
            release_thread_memory();
            assert_eq!(chunks_held(), 0);
            SCRATCH.with(|s| assert_eq!(s.borrow().capacity(), 0, "the scratch freed"));
            assert!(held.iter().enumerate().all(|(i, b)| b.iter().all(|&x| x == i as u8)), "held batches untouched");
            set_memory_policy(MemoryPolicy::DEFAULT);
        })
        .join()
        .unwrap();
        assert_eq!(memory_policy(), MemoryPolicy::DEFAULT);
    }

    #[test]
    fn a_dropped_batch_memory_is_used_again() {
        let _policy = policy_unchanged();
        let first = copy_out(&filled(CHUNK, 1));
        let at = first.as_ptr();
        drop(first);
        // The chunk is full; with its only slice dropped it is taken back, not replaced.
        let second = copy_out(&filled(1000, 2));
        assert_eq!(second.as_ptr(), at);
        assert!(second.iter().all(|&b| b == 2));
    }

    #[test]
    fn a_held_batch_is_never_written_again() {
        let _policy = policy_unchanged();
        let held = copy_out(&filled(100_000, 7));
        // Enough batches to go round every chunk of the pool more than once.
        for i in 0..(MemoryPolicy::DEFAULT.pool_chunks * CHUNK / 100_000) * 3 {
            let other = copy_out(&filled(100_000, (i % 5) as u8 + 10));
            assert!(other.iter().all(|&b| b == (i % 5) as u8 + 10));
        }
        assert_eq!(held.len(), 100_000);
        assert!(held.iter().all(|&b| b == 7), "a held batch was overwritten");
    }

    #[test]
    fn a_failed_write_leaves_nothing_behind() {
        let _policy = policy_unchanged();
        let held = write_into(1000, |b| {
            b.put_slice(b"held");
            Ok::<(), ()>(())
        })
        .unwrap();
        let failed = write_into(1000, |b| {
            b.put_slice(b"half a batch");
            Err(())
        });
        assert!(failed.is_err());
        let next = write_into(1000, |b| {
            b.put_slice(b"next");
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!((&held[..], &next[..]), (&b"held"[..], &b"next"[..]));
        // A bound far past a chunk (a loose one) is not allocated up front.
        let small = write_into(usize::MAX, |b| {
            b.put_slice(b"small");
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(&small[..], b"small");
    }

    #[test]
    fn batches_larger_than_a_chunk_get_their_own_memory() {
        let _policy = policy_unchanged();
        let big = copy_out(&filled(CHUNK + 1, 3));
        assert_eq!(big.len(), CHUNK + 1);
        assert!(big.iter().all(|&b| b == 3));
        let small = copy_out(b"abc");
        assert_eq!(&small[..], b"abc");
    }

    #[test]
    fn the_pool_holds_at_most_its_chunks() {
        let _policy = policy_unchanged();
        let chunks = memory_policy().pool_chunks;
        let held: Vec<Bytes> = (0..chunks * 2).map(|i| copy_out(&filled(CHUNK, i as u8))).collect();
        POOL.with(|p| assert!(p.borrow().chunks.len() <= chunks));
        for (i, b) in held.iter().enumerate() {
            assert!(b.iter().all(|&x| x == i as u8));
        }
    }

    /// Batches' values for the lz4 tests: one stored block, stored blocks over several, one
    /// tiny stored block, compressed blocks, stored and compressed mixed. The noise is cut
    /// from one stream, so that no two values repeat each other.
    fn value_shapes() -> Vec<Vec<Bytes>> {
        let stream = Bytes::from(crate::records::compression::tests::incompressible(512 << 10));
        let mut at = 0;
        let mut noise = |n: usize| {
            at += n;
            stream.slice(at - n..at)
        };
        vec![
            (0..3).map(|_| noise(16 << 10)).collect(),
            (0..7).map(|_| noise(16 << 10)).collect(),
            vec![noise(10)],
            (0..500).map(|i| Bytes::from(format!("value {i} ").repeat(20))).collect(),
            (0..6).map(|i| if i % 2 == 0 { Bytes::from("text ".repeat(5000)) } else { noise(30 << 10) }).collect(),
        ]
    }

    /// Built into the pool, batch after batch with the earlier ones held (and the scratch
    /// left longer by a larger batch before), a batch is byte for byte what `build_from`
    /// writes into a fresh buffer, for every codec.
    #[test]
    fn an_lz4_batch_is_its_uncompressed_records_compressed() {
        use crate::records::batch::BATCH_HEADER_SIZE;
        use crate::records::{compress, Compression, Record, RecordBatchBuilder};
        for values in value_shapes() {
            let records: Vec<Record> =
                values.iter().enumerate().map(|(i, v)| Record::new(i as i64, 1_700_000_000_000 + i as i64, None, Some(v.clone()))).collect();
            let plain = RecordBatchBuilder::new().build_from_pooled(&records).unwrap();
            let mut expected = Vec::new();
            compress(Compression::Lz4, &plain[BATCH_HEADER_SIZE..], &mut expected, 2).unwrap();
            for lz4 in [RecordBatchBuilder::new().compression(Compression::Lz4).build_from_pooled(&records).unwrap(), {
                let mut fresh = Vec::new();
                RecordBatchBuilder::new().compression(Compression::Lz4).build_from(&records, &mut fresh).unwrap();
                Bytes::from(fresh)
            }] {
                assert!(lz4[BATCH_HEADER_SIZE..] == expected[..], "{} records of {} bytes", records.len(), values[0].len());
            }
        }
    }

    /// With `compress_only_if_smaller`, for every codec: a batch whose compressed records
    /// would take no fewer bytes is, byte for byte, the batch built without a codec; one that
    /// shrinks is the batch built without the option. Pooled and fresh alike, over one stored
    /// lz4 block (moved down in place), stored blocks over several (written again), compressed
    /// and mixed blocks.
    #[test]
    fn a_batch_that_does_not_shrink_goes_uncompressed_when_asked() {
        use crate::records::{Compression, Record, RecordBatchBuilder};
        let (mut shrank, mut kept) = (0, 0);
        for values in &value_shapes() {
            let records: Vec<Record> =
                values.iter().enumerate().map(|(i, v)| Record::new(i as i64, 1_700_000_000_000 + i as i64, None, Some(v.clone()))).collect();
            let plain = RecordBatchBuilder::new().producer(7, 1, 100).build_from_pooled(&records).unwrap();
            for c in Compression::ALL.into_iter().filter(|&c| c != Compression::None) {
                let builder = RecordBatchBuilder::new().compression(c).producer(7, 1, 100);
                let compressed = builder.build_from_pooled(&records).unwrap();
                let expected = if compressed.len() < plain.len() { &compressed } else { &plain };
                if compressed.len() < plain.len() {
                    shrank += 1;
                } else {
                    kept += 1;
                }
                let asked = builder.clone().compress_only_if_smaller(true);
                let mut fresh = Vec::new();
                asked.build_from(&records, &mut fresh).unwrap();
                let pooled = asked.build_from_pooled(&records).unwrap();
                let what = format!("{c}, {} records of {} bytes", records.len(), values[0].len());
                assert!(fresh[..] == expected[..], "{what}: fresh");
                assert!(pooled[..] == expected[..], "{what}: pooled");
            }
        }
        // Both outcomes were met.
        assert!(shrank > 0 && kept > 0, "{shrank} shrank, {kept} kept");
    }

    #[test]
    fn a_pooled_batch_is_what_a_fresh_buffer_gets() {
        use crate::records::{Compression, Record, RecordBatchBuilder};
        let mut held = Vec::new();
        for c in Compression::ALL {
            for n in [200usize, 3, 50] {
                let records: Vec<Record> = (0..n)
                    .map(|i| Record::new(i as i64, 1_700_000_000_000 + i as i64, None, Some(Bytes::from(format!("value {i} {c}").repeat(i % 7 + 1)))))
                    .collect();
                let builder = RecordBatchBuilder::new().compression(c).producer(7, 1, 100);
                let mut fresh = Vec::new();
                builder.build_from(&records, &mut fresh).unwrap();
                let pooled = builder.build_from_pooled(&records).unwrap();
                assert_eq!(&pooled[..], &fresh[..], "{c}, {n} records");
                held.push((pooled, fresh));
            }
        }
        for (pooled, fresh) in &held {
            assert_eq!(&pooled[..], &fresh[..], "a held batch changed");
        }
    }
}
