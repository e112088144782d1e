//! Size-prefix framing: the one frame splitter of the crate, used by the codecs, the CLI's
//! capture reader, kwire-fake and the fuzz targets.

use bytes::{Buf, BufMut, BytesMut};

use super::CodecError;
use crate::runtime::limits::{self, DecodeLimits};

/// Default largest frame accepted: 100 MiB, Kafka's `socket.request.max.bytes` default
/// ([`DecodeLimits::max_frame_size`] of the default limits).
pub const DEFAULT_MAX_FRAME_SIZE: usize = DecodeLimits::DEFAULT.max_frame_size;

/// How far ahead of the bytes received [`FrameDecoder::decode`] reserves room for a frame.
pub const RESERVE_STEP: usize = 64 * 1024;

/// Splits int32-size-prefixed frames off a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameDecoder {
    max_frame_size: usize,
}

/// The [`DecodeLimits::max_frame_size`] in force where it is made (the default limits unless a
/// [`DecodeLimits::scope`] is active).
impl Default for FrameDecoder {
    fn default() -> Self {
        FrameDecoder { max_frame_size: limits::current().max_frame_size }
    }
}

impl FrameDecoder {
    /// A decoder accepting frames of at most `max_frame_size` bytes (not counting the prefix).
    pub fn new(max_frame_size: usize) -> Self {
        FrameDecoder { max_frame_size }
    }

    /// The largest frame accepted.
    pub fn max_frame_size(&self) -> usize {
        self.max_frame_size
    }

    /// Takes the next whole frame (without its size prefix) off `src`, or returns `None` when
    /// more bytes are needed. A size past the maximum is an error as soon as the prefix has
    /// arrived. The space reserved in `src` grows with the bytes that arrive, at most
    /// 64 KiB ahead of them: a peer that sends a size prefix alone (a 100 MiB claim,
    /// then silence) costs 64 KiB, not what it claims.
    pub fn decode(&self, src: &mut BytesMut) -> Result<Option<BytesMut>, CodecError> {
        let Some(size) = self.frame_size(src)? else {
            return Ok(None);
        };
        let missing = (4 + size).saturating_sub(src.len());
        if missing > 0 {
            src.reserve(missing.min(RESERVE_STEP));
            return Ok(None);
        }
        src.advance(4);
        Ok(Some(src.split_to(size)))
    }

    /// The size of the frame at the start of `src` (after its 4-byte prefix), checked against
    /// the maximum; `None` until the prefix has arrived.
    pub fn frame_size(&self, src: &[u8]) -> Result<Option<usize>, CodecError> {
        let Some(prefix) = src.first_chunk::<4>() else {
            return Ok(None);
        };
        let size = i32::from_be_bytes(*prefix);
        let size = usize::try_from(size).map_err(|_| CodecError::NegativeFrameSize(size))?;
        if size > self.max_frame_size {
            return Err(CodecError::FrameTooLarge { size, max: self.max_frame_size });
        }
        Ok(Some(size))
    }

    /// The next whole frame at the start of `src` (without its prefix) and the bytes it takes
    /// with the prefix, for readers that keep their own buffer; `None` until it has all arrived.
    pub fn split<'a>(&self, src: &'a [u8]) -> Result<Option<(&'a [u8], usize)>, CodecError> {
        let Some(size) = self.frame_size(src)? else {
            return Ok(None);
        };
        Ok(src.get(4..4 + size).map(|frame| (frame, 4 + size)))
    }
}

/// Writes a frame of `len` bytes: checks the size, writes the prefix and reserves room; the
/// caller writes exactly `len` bytes after it.
pub(crate) fn begin_frame(dst: &mut BytesMut, len: usize, max: usize) -> Result<(), CodecError> {
    check_frame_len(len, max)?;
    dst.reserve(4 + len);
    dst.put_i32(len as i32);
    Ok(())
}

/// Fails if a frame of `len` bytes (after the size prefix) is over `max` or `i32::MAX`.
pub(crate) fn check_frame_len(len: usize, max: usize) -> Result<(), CodecError> {
    let max = max.min(i32::MAX as usize);
    if len > max {
        return Err(CodecError::EncodedFrameTooLarge { size: len, max });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_checked_on_their_size_prefix_against_the_limits_in_force() {
        let limits = DecodeLimits { max_frame_size: 8, ..DecodeLimits::DEFAULT };
        limits.scope(|| {
            let frames = FrameDecoder::default();
            let mut buf = BytesMut::from(&[0, 0, 0, 3, 1, 2][..]);
            assert_eq!(frames.decode(&mut buf).unwrap(), None);
            buf.extend_from_slice(&[3, 0, 0]);
            assert_eq!(&frames.decode(&mut buf).unwrap().unwrap()[..], [1, 2, 3]);
            assert_eq!(&buf[..], [0, 0]);
            // Nine bytes claimed: refused before they arrive.
            let mut big = BytesMut::from(&[0, 0, 0, 9][..]);
            assert!(matches!(frames.decode(&mut big), Err(CodecError::FrameTooLarge { size: 9, max: 8 })));
            let mut neg = BytesMut::from(&[0xff, 0xff, 0xff, 0xff][..]);
            assert!(matches!(frames.decode(&mut neg), Err(CodecError::NegativeFrameSize(-1))));
            // The slice form agrees.
            assert_eq!(frames.split(&[0, 0, 0, 2, 7, 8, 9]).unwrap(), Some((&[7u8, 8][..], 6)));
            assert_eq!(frames.split(&[0, 0, 0, 2, 7]).unwrap(), None);
            assert!(frames.split(&[0, 0, 0, 9]).is_err());
        });
        assert_eq!(FrameDecoder::default().max_frame_size(), DEFAULT_MAX_FRAME_SIZE, "the default limits outside");
    }

    #[test]
    fn a_claimed_size_reserves_room_as_the_bytes_arrive() {
        let frames = FrameDecoder::default();
        // 100 MiB claimed (the most the default allows), ten bytes sent.
        let claim = DEFAULT_MAX_FRAME_SIZE;
        let mut buf = BytesMut::from(&(claim as i32).to_be_bytes()[..]);
        buf.extend_from_slice(&[7; 10]);
        assert_eq!(frames.decode(&mut buf).unwrap(), None);
        assert!(buf.capacity() <= 14 + RESERVE_STEP, "reserved {} for 14 bytes received", buf.capacity());
        // The frame still arrives whole, in pieces, and the room grows with it.
        let mut sent = 10;
        while sent < claim {
            let n = (claim - sent).min(1 << 20);
            buf.extend_from_slice(&vec![7; n]);
            sent += n;
            let done = frames.decode(&mut buf).unwrap();
            assert_eq!(done.is_some(), sent == claim);
            if let Some(frame) = done {
                assert_eq!(frame.len(), claim);
            }
        }
    }
}
