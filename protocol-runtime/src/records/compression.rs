//! Compression codecs, each behind its cargo feature.
//!
//! - gzip: [`flate2`], multi-member streams accepted.
//! - snappy: [`snap`]. Kafka's Java client writes the xerial framing (`0x82 "SNAPPY" 0x00`,
//!   int32 version, int32 minimum compatible version, then blocks of an int32 big-endian length
//!   and a raw snappy block); librdkafka and others may write one raw snappy block. Reading peeks
//!   at the magic to tell them apart; writing uses the xerial framing, which every client reads.
//! - lz4: [`lz4_flex`] frame format with independent 64 KiB blocks, as Kafka writes it. Kafka
//!   0.8-0.9 computed the frame header checksum over the magic number too; for magic 0 messages
//!   that checksum is accepted on read and written on write, as Kafka does.
//! - zstd: [`zstd`].
//!
//! Inflating stops with an error once the output would pass the caller's limit.

use bytes::{BufMut, Bytes};

use crate::error::{DecodeError, EncodeError, RecordsEncodeError, RecordsError};

use super::{encode_invalid, invalid, Compression};

#[cfg(any(feature = "gzip", feature = "lz4", feature = "zstd"))]
use std::io::Read;

/// Xerial snappy stream header: magic, version 1, minimum compatible version 1.
#[cfg(feature = "snappy")]
const XERIAL_HEADER: [u8; 16] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1];
#[cfg(feature = "snappy")]
const XERIAL_MAGIC_LEN: usize = 8;
/// Block size of the xerial framing the Java client uses.
#[cfg(feature = "snappy")]
const XERIAL_BLOCK: usize = 32 * 1024;

#[cold]
fn disabled(c: Compression, remaining: usize) -> DecodeError {
    invalid(RecordsError::CodecDisabled(c.name()), remaining)
}

#[cold]
fn too_big(value: usize, limit: usize, remaining: usize) -> DecodeError {
    // Reported as the decode limit it is: `value` is the size seen, or limit + 1 when inflating
    // stopped at the limit.
    crate::limits::exceeded(crate::limits::Limit::DecompressedSize, value, limit, remaining)
}

#[cold]
#[allow(dead_code)]
fn corrupt(c: Compression, e: impl std::fmt::Display, remaining: usize) -> DecodeError {
    invalid(RecordsError::Decompress { codec: c.name(), reason: e.to_string() }, remaining)
}

/// Reads `reader` to the end into a buffer, failing once it passes `limit` bytes.
#[cfg(any(feature = "gzip", feature = "lz4", feature = "zstd"))]
///
/// The buffer reserves `hint` up front but is filled (zeroed, then read into) 64 KiB at a time, so
/// only the pages the output uses are touched: `read_to_end` would zero the whole reservation
/// first, and every page of a fresh multi-megabyte allocation touched is a page fault (the
/// consumer's benchmark: 75 % of its faults were here).
fn read_bounded<R: Read>(c: Compression, reader: R, hint: usize, limit: usize, input_len: usize) -> Result<Bytes, DecodeError> {
    let mut out = Vec::with_capacity(hint.min(limit));
    let len = read_into(c, reader, &mut out, limit, input_len)?;
    out.truncate(len);
    Ok(Bytes::from(out))
}

/// Reads all of `reader` into `out` from its start, failing past `limit`; returns the length
/// read. `out` is grown (zeroed) 64 KiB at a time and never shrunk, so a buffer used again
/// is not zeroed again.
#[cfg(any(feature = "gzip", feature = "lz4", feature = "zstd"))]
fn read_into<R: Read>(c: Compression, reader: R, out: &mut Vec<u8>, limit: usize, input_len: usize) -> Result<usize, DecodeError> {
    const STEP: usize = 64 << 10;
    let mut bounded = reader.take((limit as u64).saturating_add(1));
    let mut len = 0;
    loop {
        if out.len() == len {
            out.resize(len.saturating_add(STEP), 0);
        }
        let spare = out.get_mut(len..).unwrap_or_default();
        match bounded.read(spare) {
            Ok(0) => break,
            Ok(n) => len = len.saturating_add(n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(corrupt(c, e, input_len)),
        }
    }
    if len > limit {
        return Err(too_big(len, limit, input_len));
    }
    Ok(len)
}

/// Inflates `data` compressed with `codec`, failing past `limit` bytes of output. `magic` selects
/// the lz4 variant (0 tolerates Kafka's old frame header checksum).
pub fn decompress(codec: Compression, data: &[u8], limit: usize, magic: i8) -> Result<Bytes, DecodeError> {
    let _ = magic;
    let hint = data.len().saturating_mul(4);
    let _ = hint;
    match codec {
        Compression::None => {
            if data.len() > limit {
                return Err(too_big(data.len(), limit, data.len()));
            }
            Ok(Bytes::copy_from_slice(data))
        }
        #[cfg(feature = "gzip")]
        Compression::Gzip => read_bounded(codec, flate2::read::MultiGzDecoder::new(data), hint, limit, data.len()),
        #[cfg(feature = "snappy")]
        Compression::Snappy => snappy_decompress(data, limit),
        #[cfg(feature = "lz4")]
        Compression::Lz4 => {
            let fixed;
            let input = if magic == 0 {
                fixed = lz4_fix_legacy_checksum(data);
                fixed.as_deref().unwrap_or(data)
            } else {
                data
            };
            read_bounded(codec, lz4_flex::frame::FrameDecoder::new(input), hint, limit, data.len())
        }
        #[cfg(feature = "zstd")]
        Compression::Zstd => {
            let decoder = zstd::stream::read::Decoder::new(data).map_err(|e| corrupt(codec, e, data.len()))?;
            read_bounded(codec, decoder, hint, limit, data.len())
        }
        #[allow(unreachable_patterns)]
        c => Err(disabled(c, data.len())),
    }
}

/// Like [`decompress`] for data held in [`Bytes`], into the batch pool (`records::pool`): lz4
/// frames as Kafka's clients write them are read block by block (a frame of one stored block
/// is a slice of `data`), zstd frames through one decompression context kept per thread.
/// A decoder or context per batch allocated and zeroed fresh memory each time: the consumer's
/// benchmark had half its page faults there.
pub(crate) fn decompress_bytes(codec: Compression, data: &Bytes, limit: usize) -> Result<Bytes, DecodeError> {
    #[cfg(feature = "lz4")]
    if codec == Compression::Lz4 {
        return lz4_reuse::decompress(data, limit);
    }
    #[cfg(feature = "zstd")]
    if codec == Compression::Zstd {
        return zstd_reuse::decompress(data, limit);
    }
    decompress(codec, data, limit, 2)
}

#[cfg(feature = "lz4")]
mod lz4_reuse {
    use bytes::{BufMut, Bytes, BytesMut};
    use lz4_flex::frame::FrameDecoder;

    use super::super::pool;
    use super::{read_bounded, Compression, DecodeError, LZ4_MAGIC as MAGIC};

    /// The frame descriptor Kafka writes: FLG (version 01, independent blocks, no checksums
    /// or content size) and BD (64 KiB blocks); the header checksum follows.
    const DESCRIPTOR: [u8; 2] = [0x60, 0x40];
    const BLOCK: usize = 64 << 10;
    /// A block's size word with this bit set: the block is stored uncompressed.
    const UNCOMPRESSED: u32 = 1 << 31;

    /// Compresses `data` as one frame of independent 64 KiB blocks (what lz4_flex's
    /// `FrameEncoder` and Kafka's `KafkaLZ4BlockOutputStream` write), appended to `out`. Each
    /// block is compressed from `data` into the thread's scratch buffer (`pool::with_scratch`:
    /// zeroed once and kept, as the block compressor writes into initialised memory; zeroing
    /// room in the output instead was a memset of 64 KiB per block) and appended from there
    /// (or from `data`, stored, when it does not shrink): the frame encoder copied the input
    /// into its own buffer and each compressed block out of another.
    pub(super) fn compress(data: &[u8], out: &mut impl BufMut) -> Result<(), lz4_flex::block::CompressError> {
        pool::with_scratch(|block_out| compress_with(data, out, block_out))
    }

    fn compress_with(data: &[u8], out: &mut impl BufMut, block_out: &mut Vec<u8>) -> Result<(), lz4_flex::block::CompressError> {
        // The header alone: no room for size words, each goes with its block.
        begin_in_place(out, 0);
        make_block_room(block_out);
        for block in data.chunks(BLOCK) {
            match shrink(block, block_out)? {
                Some(compressed) => {
                    let n = compressed.len();
                    out.put_u32_le(n as u32);
                    out.put_slice(compressed);
                }
                None => {
                    out.put_u32_le(block.len() as u32 | UNCOMPRESSED);
                    out.put_slice(block);
                }
            }
        }
        // The end mark.
        out.put_u32_le(0);
        Ok(())
    }

    /// Sizes the scratch for the largest compressed block (zeroed once, then kept: the block
    /// compressor writes into initialised memory).
    fn make_block_room(block_out: &mut Vec<u8>) {
        let room = lz4_flex::block::get_maximum_output_size(BLOCK);
        if block_out.len() < room {
            block_out.resize(room, 0);
        }
    }

    /// `block` compressed into `block_out`, or `None` when that does not shrink it: such a
    /// block is stored as it is (as the frame encoder does).
    fn shrink<'a>(block: &[u8], block_out: &'a mut [u8]) -> Result<Option<&'a [u8]>, lz4_flex::block::CompressError> {
        let n = lz4_flex::block::compress_into(block, block_out)?;
        Ok(block_out.get(..n).filter(|_| n < block.len()))
    }

    /// The first part of a frame written in place: the header, then room for the size word of
    /// each block of `len` bytes; the data goes straight after it (a producer writes its
    /// records there), then [`frame_in_place`] makes a frame of it where it lies.
    pub(super) fn begin_in_place(out: &mut impl BufMut, len: usize) {
        out.put_slice(&MAGIC);
        out.put_slice(&DESCRIPTOR);
        out.put_u8(super::lz4_hc(&DESCRIPTOR));
        out.put_bytes(0, len.div_ceil(BLOCK).saturating_mul(4));
    }

    /// When [`frame_in_place`] left the data as one stored block where it was written (it did
    /// not shrink), moves it down over the frame's header to `frame` and returns where it then
    /// ends; `None` when the frame holds anything else.
    // Offsets within `buf`, each checked against its length by the slicing `get`s.
    #[allow(clippy::arithmetic_side_effects)]
    pub(super) fn unframe_stored(buf: &mut [u8], frame: usize, data: usize, end: usize) -> Option<usize> {
        let len = end.checked_sub(data)?;
        let word = (len as u32 | UNCOMPRESSED).to_le_bytes();
        let one_stored_block = data == frame + 7 + 4 && len <= BLOCK && end <= buf.len() && buf.get(frame + 7..data) == Some(&word[..]);
        if !one_stored_block {
            return None;
        }
        buf.copy_within(data..end, frame);
        Some(frame + len)
    }

    /// Frames the data `buf[data..]`, written after [`begin_in_place`]'s header (at `frame`)
    /// and room: what [`compress`] writes for that data, block by block in order, each block
    /// compressed through the thread's scratch buffer or, when it does not shrink, stored
    /// where it is (moved only if an earlier block shrank). Returns where the frame ends
    /// before its end mark: the caller cuts the buffer there and appends the mark.
    ///
    /// Writing never overtakes reading: block k is read before its output goes at or before
    /// `frame + 7 + k * (BLOCK + 4)`, and block k + 1 starts at least 4 bytes of room later
    /// than any block k's output can end, while there are size words' room for every block.
    // Offsets within `buf`, each checked against its length by the slicing `get`s.
    #[allow(clippy::arithmetic_side_effects)]
    pub(super) fn frame_in_place(buf: &mut [u8], frame: usize, data: usize) -> Result<usize, lz4_flex::block::CompressError> {
        use lz4_flex::block::CompressError::OutputTooSmall;
        let len = buf.len().checked_sub(data).ok_or(OutputTooSmall)?;
        // Room for every block's size word (a caller's bug otherwise, not the data's).
        if len.div_ceil(BLOCK) > data.checked_sub(frame + 7).map_or(0, |r| r / 4) {
            return Err(OutputTooSmall);
        }
        pool::with_scratch(|block_out| {
            make_block_room(block_out);
            let mut at = frame + 7;
            for from in (data..buf.len()).step_by(BLOCK) {
                let to = (from + BLOCK).min(buf.len());
                let (word, written) = match shrink(buf.get(from..to).unwrap_or_default(), block_out)? {
                    Some(compressed) => {
                        let n = compressed.len();
                        buf.get_mut(at + 4..at + 4 + n).ok_or(OutputTooSmall)?.copy_from_slice(compressed);
                        (n as u32, n)
                    }
                    None => {
                        if at + 4 != from {
                            buf.copy_within(from..to, at + 4);
                        }
                        ((to - from) as u32 | UNCOMPRESSED, to - from)
                    }
                };
                buf.get_mut(at..at + 4).ok_or(OutputTooSmall)?.copy_from_slice(&word.to_le_bytes());
                at += 4 + written;
            }
            Ok(at)
        })
    }

    /// The most [`compress`] appends for `len` bytes: the header, each block stored with its
    /// size word, the end mark.
    pub(super) fn bound(len: usize) -> usize {
        7usize.saturating_add(len).saturating_add(len.div_ceil(BLOCK).saturating_add(1).saturating_mul(4))
    }

    /// Where a frame's blocks are, for a frame [`read_frame`] takes: one frame of independent
    /// blocks without block checksums or a dictionary, each block no larger than the frame's
    /// maximum, ended by its end mark (and content checksum) with nothing after. Kafka's
    /// clients, librdkafka and lz4_flex write such frames; `None` for anything else.
    struct Layout {
        /// Offset of the first block's size word.
        blocks: usize,
        block_max: usize,
        /// At most the inflated size: stored blocks' sizes plus `block_max` per compressed one.
        bound: usize,
        content_size: Option<u64>,
        checksum: Option<u32>,
        /// The frame's only block when it is stored uncompressed: the output is this slice of
        /// the input.
        stored: Option<(usize, usize)>,
    }

    fn word(data: &[u8], at: usize) -> Option<u32> {
        data.get(at..at.checked_add(4)?)?.try_into().ok().map(u32::from_le_bytes)
    }

    fn layout(data: &[u8]) -> Option<Layout> {
        if data.get(..4)? != MAGIC {
            return None;
        }
        let (flg, bd) = (*data.get(4)?, *data.get(5)?);
        // Version 01, independent blocks; no block checksums, no dictionary, reserved bits 0.
        if flg & 0b1111_0011 != 0b0110_0000 || bd & 0b1000_1111 != 0 {
            return None;
        }
        let block_max: usize = match bd >> 4 {
            4 => 64 << 10,
            5 => 256 << 10,
            6 => 1 << 20,
            7 => 4 << 20,
            _ => return None,
        };
        let content_size = match flg & 0x08 {
            0 => None,
            _ => Some(u64::from_le_bytes(data.get(6..14)?.try_into().ok()?)),
        };
        // The header checksum follows the descriptor (FLG, BD, the content size if any).
        let hc = super::lz4_descriptor_len(data)?.checked_add(4)?;
        if *data.get(hc)? != super::lz4_hc(data.get(4..hc)?) {
            return None;
        }
        let blocks = hc.checked_add(1)?;
        let mut at = blocks;
        let (mut bound, mut count, mut stored) = (0usize, 0usize, None);
        loop {
            let size = word(data, at)?;
            at = at.checked_add(4)?;
            if size == 0 {
                break;
            }
            let len = (size & !UNCOMPRESSED) as usize;
            let end = at.checked_add(len)?;
            if len == 0 || len > block_max || end > data.len() {
                return None;
            }
            let raw = size & UNCOMPRESSED != 0;
            bound = bound.checked_add(if raw { len } else { block_max })?;
            stored = raw.then_some((at, end));
            count = count.saturating_add(1);
            at = end;
        }
        let checksum = if flg & 0x04 != 0 {
            let sum = word(data, at)?;
            at = at.checked_add(4)?;
            Some(sum)
        } else {
            None
        };
        (at == data.len()).then_some(Layout { blocks, block_max, bound, content_size, checksum, stored: stored.filter(|_| count == 1) })
    }

    /// Appends the frame's blocks to `out`: a stored block is copied from the input, a
    /// compressed one inflated into `block` (zeroed once, kept) and copied from there. `None`
    /// on a bad block or past `limit`.
    fn inflate(data: &[u8], layout: &Layout, limit: usize, out: &mut BytesMut, block: &mut Vec<u8>) -> Option<()> {
        let mut at = layout.blocks;
        loop {
            let size = word(data, at)?;
            at = at.checked_add(4)?;
            if size == 0 {
                return Some(());
            }
            let end = at.checked_add((size & !UNCOMPRESSED) as usize)?;
            let body = data.get(at..end)?;
            at = end;
            let inflated = if size & UNCOMPRESSED != 0 {
                body
            } else {
                if block.len() < layout.block_max {
                    block.resize(layout.block_max, 0);
                }
                let n = lz4_flex::block::decompress_into(body, block.get_mut(..layout.block_max)?).ok()?;
                block.get(..n)?
            };
            if out.len().checked_add(inflated.len())? > limit {
                return None;
            }
            out.put_slice(inflated);
        }
    }

    /// The checks the frame's header asks for, on the whole output.
    fn checked(layout: &Layout, out: &[u8]) -> Option<()> {
        let size_ok = layout.content_size.is_none_or(|n| n == out.len() as u64);
        let sum_ok = layout.checksum.is_none_or(|sum| sum == twox_hash::XxHash32::oneshot(0, out));
        (size_ok && sum_ok).then_some(())
    }

    /// A well-formed frame inflated (see [`Layout`]); `None` for anything else, bad or past
    /// `limit`, which lz4_flex's frame decoder then reads (and reports).
    pub(super) fn read_frame(data: &Bytes, limit: usize) -> Option<Bytes> {
        let layout = layout(data)?;
        if let Some((start, end)) = layout.stored {
            // Incompressible data: the frame holds it as it is, and it is handed out uncopied,
            // as an uncompressed batch's records are slices of the response.
            let out = data.slice(start..end);
            return (out.len() <= limit).then_some(()).and_then(|()| checked(&layout, &out)).map(|()| out);
        }
        pool::write_into(layout.bound.min(limit), |out| {
            pool::with_scratch(|block| inflate(data, &layout, limit, out, block)).and_then(|()| checked(&layout, out)).ok_or(())
        })
        .ok()
    }

    /// Inflates one frame: the frames Kafka's clients write are read here, block by block
    /// into the pool (lz4_flex's frame decoder inflated each block into its own buffer and
    /// copied it out, and the result was copied again into the pool: a fifth of a 16 KiB lz4
    /// consumer's CPU); any other frame, and any error, by lz4_flex's frame decoder.
    pub(super) fn decompress(data: &Bytes, limit: usize) -> Result<Bytes, DecodeError> {
        match read_frame(data, limit) {
            Some(out) => Ok(out),
            None => read_bounded(Compression::Lz4, FrameDecoder::new(&data[..]), data.len().saturating_mul(4), limit, data.len()),
        }
    }
}

#[cfg(feature = "zstd")]
pub(super) use self::zstd_reuse::release_thread_memory;

/// zstd with one compression context (level 3, as Kafka's default) and one decompression
/// context kept per thread: a context made per batch allocated and initialised its tables (and,
/// to decompress, its window) each time; with 16 KiB records, three to a batch, that was half
/// the consumer's CPU.
#[cfg(feature = "zstd")]
mod zstd_reuse {
    use std::cell::RefCell;
    use std::sync::Mutex;

    use bytes::{BufMut, Bytes};
    use zstd::zstd_safe::{DCtx, ResetDirective};

    use super::super::pool;
    use super::{corrupt, read_into, Compression, DecodeError};

    /// Compression contexts with their output buffers, shared by the process's threads: a
    /// producer on a multi-thread runtime builds its batches on whichever worker runs its
    /// sender, and a context per thread was as many sets of match tables (hundreds of KiB
    /// at level 3) going cold in turn. The one used last is taken first.
    static COMPRESSORS: Mutex<Vec<(zstd::bulk::Compressor<'static>, Vec<u8>)>> = Mutex::new(Vec::new());

    thread_local! {
        /// Batches are inflated into the thread's scratch buffer and copied out into the pool
        /// (`records::pool`): into fresh memory of four times the input, a consumer of 100 B records
        /// took 4x the page faults.
        static DECOMPRESSOR: RefCell<Option<DCtx<'static>>> = const { RefCell::new(None) };
    }

    /// Frees this thread's decompression context.
    pub(in super::super) fn release_thread_memory() {
        let _ = DECOMPRESSOR.try_with(|d| d.try_borrow_mut().map(|mut d| *d = None));
    }

    pub(super) fn decompress(data: &Bytes, limit: usize) -> Result<Bytes, DecodeError> {
        DECOMPRESSOR.with(|cell| {
            let Ok(mut slot) = cell.try_borrow_mut() else {
                return super::decompress(Compression::Zstd, data, limit, 2);
            };
            let mut ctx = match slot.take() {
                Some(kept) => kept,
                None => match DCtx::try_create() {
                    Some(ctx) => ctx,
                    None => return Err(corrupt(Compression::Zstd, "no memory for a zstd context", data.len())),
                },
            };
            // Whatever the last frame left (an error mid-frame), this one starts afresh.
            let _ = ctx.reset(ResetDirective::SessionOnly);
            let result =
                pool::write_out(|out| read_into(Compression::Zstd, zstd::stream::read::Decoder::with_context(&data[..], &mut ctx), out, limit, data.len()));
            // A context whose window grew past the policy's bound (a frame written at a high
            // level, or a hostile one) is not kept: the memory a thread holds stays small.
            if ctx.sizeof() <= pool::keep_scratch() {
                *slot = Some(ctx);
            }
            result
        })
    }

    pub(super) fn compress(data: &[u8], out: &mut impl BufMut) -> std::io::Result<()> {
        let kept = COMPRESSORS.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let (mut compressor, mut scratch) = match kept {
            Some(kept) => kept,
            None => (zstd::bulk::Compressor::new(3)?, Vec::new()),
        };
        scratch.clear();
        scratch.reserve(zstd::zstd_safe::compress_bound(data.len()));
        // An error leaves the context to be dropped, not kept.
        compressor.compress_to_buffer(data, &mut scratch)?;
        out.put_slice(&scratch);
        // A batch far larger than usual leaves no lasting buffer behind.
        if scratch.capacity() > pool::keep_scratch() {
            scratch = Vec::new();
        }
        let mut kept = COMPRESSORS.lock().unwrap_or_else(|p| p.into_inner());
        // As many as threads compressed at once, at most the policy's few.
        let limit = pool::zstd_compressors();
        kept.truncate(limit);
        if kept.len() < limit {
            kept.push((compressor, scratch));
        }
        Ok(())
    }
}

/// Compresses `data` with `codec`, appending to `out`. `magic` selects the lz4 variant (0 writes
/// Kafka's old frame header checksum).
pub fn compress(codec: Compression, data: &[u8], out: &mut Vec<u8>, magic: i8) -> Result<(), EncodeError> {
    compress_to(codec, data, out, magic)
}

/// [`compress`] into any buffer: a producer's batch goes straight into the pool's memory.
// Encode side: sizes of in-memory data, not of input.
#[allow(clippy::arithmetic_side_effects)]
pub(super) fn compress_to<B: BufMut + AsMut<[u8]>>(codec: Compression, data: &[u8], out: &mut B, magic: i8) -> Result<(), EncodeError> {
    let _ = magic;
    match codec {
        Compression::None => {
            out.put_slice(data);
            Ok(())
        }
        #[cfg(feature = "gzip")]
        Compression::Gzip => {
            use std::io::Write;
            let mut enc = flate2::write::GzEncoder::new(out.writer(), flate2::Compression::default());
            enc.write_all(data).and_then(|_| enc.try_finish()).map_err(|e| compress_failed(Compression::Gzip, e))
        }
        #[cfg(feature = "snappy")]
        Compression::Snappy => {
            out.put_slice(&XERIAL_HEADER);
            let mut enc = snap::raw::Encoder::new();
            let mut block = vec![0; snap::raw::max_compress_len(XERIAL_BLOCK.min(data.len()))];
            for chunk in data.chunks(XERIAL_BLOCK) {
                let n = enc.compress(chunk, &mut block).map_err(|e| compress_failed(Compression::Snappy, e))?;
                out.put_u32(n as u32);
                out.put_slice(block.get(..n).unwrap_or_default());
            }
            Ok(())
        }
        #[cfg(feature = "lz4")]
        Compression::Lz4 => {
            let start = out.as_mut().len();
            lz4_reuse::compress(data, out).map_err(|e| compress_failed(Compression::Lz4, e))?;
            if magic == 0 {
                lz4_write_legacy_checksum(out.as_mut().get_mut(start..).unwrap_or_default());
            }
            Ok(())
        }
        #[cfg(feature = "zstd")]
        Compression::Zstd => zstd_reuse::compress(data, out).map_err(|e| compress_failed(Compression::Zstd, e)),
        #[allow(unreachable_patterns)]
        c => Err(encode_invalid(RecordsEncodeError::CodecDisabled(c.name()))),
    }
}

/// The start of an lz4 frame whose data (`len` bytes) is then written straight after it, and
/// framed where it lies by [`lz4_frame_in_place`].
#[cfg(feature = "lz4")]
pub(super) fn lz4_begin_in_place(out: &mut impl BufMut, len: usize) {
    lz4_reuse::begin_in_place(out, len);
}

/// Frames `buf[data..]` as lz4 where it lies (the frame begun at `frame` by
/// [`lz4_begin_in_place`]): the bytes [`compress_to`] writes for that data, up to the returned
/// offset, where the end mark goes.
#[cfg(feature = "lz4")]
pub(super) fn lz4_frame_in_place(buf: &mut [u8], frame: usize, data: usize) -> Result<usize, EncodeError> {
    lz4_reuse::frame_in_place(buf, frame, data).map_err(|e| compress_failed(Compression::Lz4, e))
}

/// The data of an lz4 frame written in place that stayed one stored block, moved down to
/// `frame` (where the frame began): its new end, or `None` when the frame is not that.
#[cfg(feature = "lz4")]
pub(super) fn lz4_unframe_stored(buf: &mut [u8], frame: usize, data: usize, end: usize) -> Option<usize> {
    lz4_reuse::unframe_stored(buf, frame, data, end)
}

/// The most [`compress_to`] appends for `len` bytes, where that is cheap to know (none, lz4,
/// zstd); gzip and snappy are given a margin, and a buffer that proves too small grows.
pub(super) fn compress_bound(codec: Compression, len: usize) -> usize {
    match codec {
        Compression::None => len,
        #[cfg(feature = "lz4")]
        Compression::Lz4 => lz4_reuse::bound(len),
        #[cfg(feature = "zstd")]
        Compression::Zstd => zstd::zstd_safe::compress_bound(len),
        _ => len.saturating_add(len / 8).saturating_add(64),
    }
}

#[cfg(feature = "snappy")]
fn snappy_decompress(data: &[u8], limit: usize) -> Result<Bytes, DecodeError> {
    let c = Compression::Snappy;
    let mut dec = snap::raw::Decoder::new();
    let is_xerial = data.get(..XERIAL_MAGIC_LEN) == XERIAL_HEADER.get(..XERIAL_MAGIC_LEN);
    if !is_xerial {
        let n = snap::raw::decompress_len(data).map_err(|e| corrupt(c, e, data.len()))?;
        if n > limit {
            return Err(too_big(n, limit, data.len()));
        }
        return dec.decompress_vec(data).map(Bytes::from).map_err(|e| corrupt(c, e, data.len()));
    }
    // Skip magic, version and compatible version.
    let mut rest = data.get(XERIAL_HEADER.len()..).ok_or_else(|| corrupt(c, "truncated xerial header", data.len()))?;
    let mut out = Vec::new();
    while !rest.is_empty() {
        let (len, tail) = rest.split_first_chunk::<4>().ok_or_else(|| corrupt(c, "truncated xerial block length", rest.len()))?;
        let len = u32::from_be_bytes(*len) as usize;
        let block = tail.get(..len).ok_or_else(|| corrupt(c, "xerial block length exceeds the data", rest.len()))?;
        let n = snap::raw::decompress_len(block).map_err(|e| corrupt(c, e, rest.len()))?;
        if n > limit.saturating_sub(out.len()) {
            return Err(too_big(out.len().saturating_add(n), limit, rest.len()));
        }
        let at = out.len();
        // n <= limit - out.len() was checked above.
        out.resize(at.saturating_add(n), 0);
        let dst = out.get_mut(at..).unwrap_or_default();
        let written = dec.decompress(block, dst).map_err(|e| corrupt(c, e, rest.len()))?;
        out.truncate(at.saturating_add(written));
        rest = tail.get(len..).unwrap_or_default();
    }
    Ok(Bytes::from(out))
}

/// The lz4 frame magic number, little-endian.
#[cfg(feature = "lz4")]
const LZ4_MAGIC: [u8; 4] = [0x04, 0x22, 0x4d, 0x18];

/// Length of an lz4 frame descriptor (FLG..before HC) given its FLG byte.
#[cfg(feature = "lz4")]
fn lz4_descriptor_len(data: &[u8]) -> Option<usize> {
    if data.get(..4)? != LZ4_MAGIC {
        return None;
    }
    let flg = *data.get(4)?;
    let mut len: usize = 2;
    if flg & 0x08 != 0 {
        len = len.saturating_add(8);
    }
    if flg & 0x01 != 0 {
        len = len.saturating_add(4);
    }
    (data.len() > len.saturating_add(4)).then_some(len)
}

#[cfg(feature = "lz4")]
fn lz4_hc(bytes: &[u8]) -> u8 {
    (twox_hash::XxHash32::oneshot(0, bytes) >> 8) as u8
}

/// If the frame carries Kafka's old header checksum (computed over the magic number too),
/// returns a copy with the correct one.
#[cfg(feature = "lz4")]
fn lz4_fix_legacy_checksum(data: &[u8]) -> Option<Vec<u8>> {
    let d = lz4_descriptor_len(data)?;
    // d is at most 14 (lz4_descriptor_len).
    let end = d.saturating_add(4);
    let stored = *data.get(end)?;
    let correct = lz4_hc(data.get(4..end)?);
    if stored == correct || stored != lz4_hc(data.get(..end)?) {
        return None;
    }
    let mut fixed = data.to_vec();
    *fixed.get_mut(end)? = correct;
    Some(fixed)
}

/// Rewrites a frame's header checksum the way Kafka 0.8-0.9 computed it, for magic 0.
#[cfg(feature = "lz4")]
fn lz4_write_legacy_checksum(frame: &mut [u8]) {
    let Some(d) = lz4_descriptor_len(frame) else { return };
    let end = d.saturating_add(4);
    let hc = frame.get(..end).map(lz4_hc);
    if let (Some(hc), Some(slot)) = (hc, frame.get_mut(end)) {
        *slot = hc;
    }
}

#[cold]
#[allow(dead_code)] // unused when every codec feature is off
fn compress_failed(c: Compression, e: impl std::fmt::Display) -> EncodeError {
    encode_invalid(RecordsEncodeError::CompressFailed { codec: c.name(), reason: e.to_string() })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    #[test]
    fn every_enabled_codec_round_trips() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        for c in Compression::ALL {
            for magic in [0, 1, 2] {
                let mut out = Vec::new();
                compress(c, &data, &mut out, magic).unwrap();
                let back = decompress(c, &out, data.len(), magic).unwrap();
                assert_eq!(&back[..], &data[..], "{c} magic {magic}");
                assert!(decompress(c, &out, data.len() - 1, magic).is_err(), "{c} limit");
            }
        }
    }

    /// The lz4 frames written block by block are what lz4_flex's frame encoder writes.
    #[cfg(feature = "lz4")]
    #[test]
    fn lz4_frames_are_what_the_frame_encoder_writes() {
        use lz4_flex::frame::{BlockMode, BlockSize, FrameEncoder, FrameInfo};
        use std::io::Write;
        let fresh = |data: &[u8]| {
            let info = FrameInfo::new().block_size(BlockSize::Max64KB).block_mode(BlockMode::Independent);
            let mut enc = FrameEncoder::with_frame_info(info, Vec::new());
            enc.write_all(data).unwrap();
            enc.finish().unwrap()
        };
        let text: Vec<u8> = (0..300_000u32).map(|i| b"kafka wire "[(i % 11) as usize] ^ (i / 4099) as u8).collect();
        // Sizes around the 64 KiB block, the empty frame, and small after large (no state left).
        for len in [1000, 0, 65_536, 65_537, 300_000, 5, 0, 131_072, 17] {
            let data = &text[..len];
            let mut out = vec![9, 9];
            compress(Compression::Lz4, data, &mut out, 2).unwrap();
            assert_eq!(&out[..2], &[9, 9]);
            assert_eq!(&out[2..], &fresh(data)[..], "{len} bytes");
            assert_eq!(&decompress(Compression::Lz4, &out[2..], len, 2).unwrap()[..], data);
        }
    }

    /// Bytes with no repeats for a compressor to find (xorshift64).
    #[cfg(feature = "lz4")]
    pub(in crate::records) fn incompressible(n: usize) -> Vec<u8> {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect()
    }

    /// An lz4 frame written in place (the records of a producer's batch) is the frame
    /// `compress` writes for the same data: blocks compressed, stored, stored after compressed
    /// ones (moved), across block boundaries, after bytes already in the buffer.
    #[cfg(feature = "lz4")]
    #[test]
    fn an_lz4_frame_written_in_place_is_the_frame_compress_writes() {
        let text = |n: usize| b"the quick brown fox jumps over the lazy dog ".iter().copied().cycle().take(n).collect::<Vec<u8>>();
        let noise = incompressible;
        let k = 64 << 10;
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("empty", vec![]),
            ("100 B of text", text(100)),
            ("3 x 16 KiB of noise, one stored block", noise(48 << 10)),
            ("64 KiB of noise", noise(k)),
            ("64 KiB + 1 of noise", noise(k + 1)),
            ("200 KiB of noise, every block stored", noise(200 << 10)),
            ("300 KiB of text, every block compressed", text(300 << 10)),
            ("text then noise: stored blocks moved", [text(70 << 10), noise(130 << 10)].concat()),
            ("noise, text, noise", [noise(k), text(k), noise(10 << 10)].concat()),
            ("one byte of noise at the end", [text(k), noise(1)].concat()),
        ];
        for prefix in [0usize, 61] {
            for (name, data) in &cases {
                let mut expected = vec![0xAB; prefix];
                super::compress_to(Compression::Lz4, data, &mut expected, 2).unwrap();
                let mut out = vec![0xAB; prefix];
                super::lz4_begin_in_place(&mut out, data.len());
                let at = out.len();
                out.extend_from_slice(data);
                let end = super::lz4_frame_in_place(&mut out, prefix, at).unwrap();
                out.truncate(end);
                out.put_u32_le(0);
                assert!(out == expected, "{name}, {prefix} bytes before the frame");
            }
        }
        // Less room than blocks: an error, not a frame that overwrote its own input.
        let mut out = Vec::new();
        super::lz4_begin_in_place(&mut out, k);
        let at = out.len();
        out.extend_from_slice(&noise(k + 1));
        assert!(super::lz4_frame_in_place(&mut out, 0, at).is_err());
    }

    /// Frames lz4_flex's frame encoder writes with every option, of data of every kind: the
    /// block-by-block reader takes the ones it is for (independent blocks, no block checksums)
    /// and inflates them as the frame decoder does; the others go to the frame decoder.
    #[cfg(feature = "lz4")]
    #[test]
    fn lz4_frames_of_every_kind_inflate_to_their_data() {
        use lz4_flex::frame::{BlockMode, BlockSize, FrameEncoder, FrameInfo};
        use std::io::Write;
        let noise = incompressible;
        let text = |n: usize| -> Vec<u8> { b"kafka record value ".iter().copied().cycle().take(n).collect() };
        for data in [Vec::new(), b"k".to_vec(), text(1000), noise(1000), text(70_000), noise(70_000), noise(300_000), [text(90_000), noise(90_000)].concat()] {
            for block_size in [BlockSize::Max64KB, BlockSize::Max256KB, BlockSize::Max1MB, BlockSize::Max4MB] {
                for (linked, block_sums, content_sum, content_size) in
                    [(false, false, false, false), (false, false, true, true), (false, true, false, false), (true, false, true, false)]
                {
                    let mut info = FrameInfo::new().block_size(block_size).block_checksums(block_sums).content_checksum(content_sum);
                    info = info.block_mode(if linked { BlockMode::Linked } else { BlockMode::Independent });
                    if content_size {
                        info = info.content_size(Some(data.len() as u64));
                    }
                    let mut enc = FrameEncoder::with_frame_info(info, Vec::new());
                    enc.write_all(&data).unwrap();
                    let frame = Bytes::from(enc.finish().unwrap());
                    let what =
                        format!("{} bytes, {block_size:?}, linked {linked}, block sums {block_sums}, sum {content_sum}, size {content_size}", data.len());
                    assert_eq!(lz4_reuse::read_frame(&frame, 1 << 30).is_some(), !linked && !block_sums, "{what}");
                    assert_eq!(&decompress_bytes(Compression::Lz4, &frame, 1 << 30).unwrap()[..], &data[..], "{what}");
                    if !data.is_empty() {
                        assert!(decompress_bytes(Compression::Lz4, &frame, data.len() - 1).is_err(), "{what}: past the limit");
                        assert_eq!(decompress_bytes(Compression::Lz4, &frame, data.len()).unwrap().len(), data.len(), "{what}: at the limit");
                    }
                }
            }
        }
    }

    /// Incompressible data in one block is stored as it is, and handed out as a slice of the
    /// frame, uncopied.
    #[cfg(feature = "lz4")]
    #[test]
    fn a_stored_lz4_block_is_handed_out_uncopied() {
        let data = incompressible(49_152);
        let mut frame = Vec::new();
        compress(Compression::Lz4, &data, &mut frame, 2).unwrap();
        let frame = Bytes::from(frame);
        let out = decompress_bytes(Compression::Lz4, &frame, 1 << 20).unwrap();
        assert_eq!(&out[..], &data[..]);
        let inside = frame.as_ptr_range();
        assert!(inside.contains(&out.as_ptr()), "the block was copied");
    }

    /// Bad frames, every byte of a good one changed and every cut of it: the block-by-block
    /// reader answers exactly as lz4_flex's frame decoder (the same bytes, or an error), and
    /// good frames read after the bad ones still inflate to their data.
    #[cfg(feature = "lz4")]
    #[test]
    fn damaged_lz4_frames_read_as_the_frame_decoder_reads_them() {
        let reference = |frame: &[u8]| decompress(Compression::Lz4, frame, 1 << 20, 2).ok();
        let text: Vec<u8> = b"kafka record value ".iter().copied().cycle().take(70_000).collect();
        for data in [text, incompressible(3_000), [b"abc".repeat(700), (0..200u8).collect()].concat()] {
            let mut good = Vec::new();
            compress(Compression::Lz4, &data, &mut good, 2).unwrap();
            let mut tried = 0;
            let mut damaged = |frame: Vec<u8>| {
                let frame = Bytes::from(frame);
                let ours = decompress_bytes(Compression::Lz4, &frame, 1 << 20).ok();
                assert_eq!(ours, reference(&frame), "frame {:02x?}", &frame[..frame.len().min(16)]);
                tried += 1;
            };
            for at in 0..good.len() {
                for flip in [0x01u8, 0x80, 0xff] {
                    let mut frame = good.clone();
                    frame[at] ^= flip;
                    damaged(frame);
                }
                damaged(good[..at].to_vec());
            }
            damaged([good.clone(), good.clone()].concat());
            damaged([good.clone(), vec![0]].concat());
            assert!(tried > good.len() * 4);
            assert_eq!(&decompress_bytes(Compression::Lz4, &Bytes::from(good), 1 << 20).unwrap()[..], &data[..]);
        }
    }

    /// The zstd context kept per thread carries nothing from one batch to the next: each frame
    /// is the one a fresh context writes, and appends after what `out` held.
    #[cfg(feature = "zstd")]
    #[test]
    fn the_kept_zstd_context_writes_what_a_fresh_one_does() {
        let inputs: Vec<Vec<u8>> = vec![
            (0..100_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect(),
            b"abc".repeat(1000),
            Vec::new(),
            (0..5_000u32).map(|i| (i % 7) as u8).collect(),
        ];
        for data in inputs.iter().chain(inputs.iter()) {
            let mut out = b"prefix".to_vec();
            compress(Compression::Zstd, data, &mut out, 2).unwrap();
            assert_eq!(&out[..6], b"prefix");
            assert_eq!(out[6..], zstd::bulk::compress(data, 3).unwrap(), "as a fresh context at level 3");
            assert_eq!(&decompress(Compression::Zstd, &out[6..], data.len(), 2).unwrap()[..], &data[..]);
        }
    }

    /// The zstd context kept per thread: frames with and without a content size (Java's
    /// streaming writer leaves it out), after a cut frame, garbage and a frame past the limit,
    /// each decodes to what was compressed.
    #[cfg(feature = "zstd")]
    #[test]
    fn the_kept_zstd_context_survives_bad_frames() {
        let big: Vec<u8> = (0..300_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        let sized = |data: &[u8]| {
            let mut out = Vec::new();
            compress(Compression::Zstd, data, &mut out, 2).unwrap();
            Bytes::from(out)
        };
        let streamed = |data: &[u8]| {
            use std::io::Write;
            let mut e = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
            e.write_all(data).unwrap();
            Bytes::from(e.finish().unwrap())
        };
        let big_frame = streamed(&big);
        let cut = big_frame.slice(..big_frame.len() / 2);
        for round in 0..3u32 {
            let small: Vec<u8> = (0..1000u32).map(|i| (i + round) as u8).collect();
            assert_eq!(&decompress_bytes(Compression::Zstd, &sized(&small), 1 << 20).unwrap()[..], &small[..]);
            assert_eq!(&decompress_bytes(Compression::Zstd, &big_frame, 1 << 20).unwrap()[..], &big[..]);
            assert!(decompress_bytes(Compression::Zstd, &cut, 1 << 20).is_err(), "a cut frame");
            assert_eq!(&decompress_bytes(Compression::Zstd, &streamed(&small), 1 << 20).unwrap()[..], &small[..], "after a cut frame");
            assert!(decompress_bytes(Compression::Zstd, &big_frame, 100_000).is_err(), "past the limit");
            assert_eq!(&decompress_bytes(Compression::Zstd, &sized(&small), 1 << 20).unwrap()[..], &small[..], "after the limit");
            assert!(decompress_bytes(Compression::Zstd, &Bytes::from_static(&[0x28, 0xb5, 0x2f, 0xfd, 0xff, 1, 2, 3]), 1 << 20).is_err());
            assert_eq!(&decompress_bytes(Compression::Zstd, &sized(&big), 1 << 20).unwrap()[..], &big[..], "after garbage");
        }
    }

    #[cfg(feature = "snappy")]
    #[test]
    fn raw_snappy_is_read() {
        let data = b"hello hello hello hello hello".repeat(10);
        let raw = snap::raw::Encoder::new().compress_vec(&data).unwrap();
        assert_eq!(&decompress(Compression::Snappy, &raw, 1 << 20, 2).unwrap()[..], &data[..]);
    }

    #[cfg(feature = "lz4")]
    #[test]
    fn legacy_lz4_checksum_only_for_magic_0() {
        let mut out = Vec::new();
        compress(Compression::Lz4, b"abcabcabc", &mut out, 0).unwrap();
        assert!(decompress(Compression::Lz4, &out, 100, 1).is_err());
        assert_eq!(&decompress(Compression::Lz4, &out, 100, 0).unwrap()[..], b"abcabcabc");
    }
}
