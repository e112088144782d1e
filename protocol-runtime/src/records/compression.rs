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

use bytes::Bytes;

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
    const STEP: usize = 64 << 10;
    let mut out = Vec::with_capacity(hint.min(limit));
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
    out.truncate(len);
    if out.len() > limit {
        return Err(too_big(out.len(), limit, input_len));
    }
    Ok(Bytes::from(out))
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

/// Compresses `data` with `codec`, appending to `out`. `magic` selects the lz4 variant (0 writes
/// Kafka's old frame header checksum).
// Encode side: sizes of in-memory data, not of input.
#[allow(clippy::arithmetic_side_effects)]
pub fn compress(codec: Compression, data: &[u8], out: &mut Vec<u8>, magic: i8) -> Result<(), EncodeError> {
    let _ = magic;
    match codec {
        Compression::None => {
            out.extend_from_slice(data);
            Ok(())
        }
        #[cfg(feature = "gzip")]
        Compression::Gzip => {
            use std::io::Write;
            let mut enc = flate2::write::GzEncoder::new(out, flate2::Compression::default());
            enc.write_all(data).and_then(|_| enc.try_finish()).map_err(|e| compress_failed(Compression::Gzip, e))
        }
        #[cfg(feature = "snappy")]
        Compression::Snappy => {
            out.extend_from_slice(&XERIAL_HEADER);
            let mut enc = snap::raw::Encoder::new();
            for chunk in data.chunks(XERIAL_BLOCK) {
                let at = out.len();
                out.extend_from_slice(&[0; 4]);
                out.resize(at + 4 + snap::raw::max_compress_len(chunk.len()), 0);
                let dst = out.get_mut(at + 4..).unwrap_or_default();
                let n = enc.compress(chunk, dst).map_err(|e| compress_failed(Compression::Snappy, e))?;
                out.truncate(at + 4 + n);
                if let Some(len) = out.get_mut(at..at + 4) {
                    len.copy_from_slice(&(n as u32).to_be_bytes());
                }
            }
            Ok(())
        }
        #[cfg(feature = "lz4")]
        Compression::Lz4 => {
            use lz4_flex::frame::{BlockMode, BlockSize, FrameEncoder, FrameInfo};
            use std::io::Write;
            let start = out.len();
            let info = FrameInfo::new().block_size(BlockSize::Max64KB).block_mode(BlockMode::Independent);
            let mut enc = FrameEncoder::with_frame_info(info, &mut *out);
            enc.write_all(data).map_err(|e| compress_failed(Compression::Lz4, e))?;
            enc.finish().map_err(|e| compress_failed(Compression::Lz4, e))?;
            if magic == 0 {
                lz4_write_legacy_checksum(out.get_mut(start..).unwrap_or_default());
            }
            Ok(())
        }
        #[cfg(feature = "zstd")]
        Compression::Zstd => {
            let compressed = zstd::bulk::compress(data, 3).map_err(|e| compress_failed(Compression::Zstd, e))?;
            out.extend_from_slice(&compressed);
            Ok(())
        }
        #[allow(unreachable_patterns)]
        c => Err(encode_invalid(RecordsEncodeError::CodecDisabled(c.name()))),
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

/// Length of an lz4 frame descriptor (FLG..before HC) given its FLG byte.
#[cfg(feature = "lz4")]
fn lz4_descriptor_len(data: &[u8]) -> Option<usize> {
    const MAGIC: [u8; 4] = [0x04, 0x22, 0x4d, 0x18];
    if data.get(..4)? != MAGIC {
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

#[cfg(test)]
mod tests {
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

#[cold]
#[allow(dead_code)] // unused when every codec feature is off
fn compress_failed(c: Compression, e: impl std::fmt::Display) -> EncodeError {
    encode_invalid(RecordsEncodeError::CompressFailed { codec: c.name(), reason: e.to_string() })
}
