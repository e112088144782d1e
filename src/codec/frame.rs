//! Size-prefix framing.

use bytes::{Buf, BufMut, BytesMut};

use super::CodecError;

/// Default largest frame accepted: 100 MiB, Kafka's `socket.request.max.bytes` default.
pub const DEFAULT_MAX_FRAME_SIZE: usize = 100 * 1024 * 1024;

/// Splits int32-size-prefixed frames off a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameDecoder {
    max_frame_size: usize,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        FrameDecoder { max_frame_size: DEFAULT_MAX_FRAME_SIZE }
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
    /// arrived: the space reserved in `src` is never more than the maximum.
    pub fn decode(&self, src: &mut BytesMut) -> Result<Option<BytesMut>, CodecError> {
        let Some(prefix) = src.get(..4).and_then(|p| <[u8; 4]>::try_from(p).ok()) else {
            return Ok(None);
        };
        let size = i32::from_be_bytes(prefix);
        let size = usize::try_from(size).map_err(|_| CodecError::NegativeFrameSize(size))?;
        if size > self.max_frame_size {
            return Err(CodecError::FrameTooLarge { size, max: self.max_frame_size });
        }
        if src.len() - 4 < size {
            // The size is bounded above, so reserving for the rest of the frame is safe and
            // saves reallocations while it arrives.
            src.reserve(4 + size - src.len());
            return Ok(None);
        }
        src.advance(4);
        Ok(Some(src.split_to(size)))
    }
}

/// Writes a frame of `len` bytes: checks the size, writes the prefix and reserves room; the
/// caller writes exactly `len` bytes after it.
pub(crate) fn begin_frame(dst: &mut BytesMut, len: usize, max: usize) -> Result<(), CodecError> {
    let max = max.min(i32::MAX as usize);
    if len > max {
        return Err(CodecError::EncodedFrameTooLarge { size: len, max });
    }
    dst.reserve(4 + len);
    dst.put_i32(len as i32);
    Ok(())
}
