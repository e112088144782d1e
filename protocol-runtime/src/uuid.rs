//! Kafka's 128-bit UUID (topic ids, directory ids, incarnation ids).

use std::fmt;

use bytes::{Buf, BufMut, Bytes};

use crate::error::DecodeError;
use crate::primitive::ensure;

/// A Kafka UUID: 16 bytes, most significant first on the wire.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Uuid(pub [u8; 16]);

impl Uuid {
    /// The all-zero UUID, Kafka's `Uuid.ZERO_UUID` and the default of uuid fields.
    pub const ZERO: Uuid = Uuid([0; 16]);

    /// Builds a UUID from its most and least significant halves, as Kafka's `Uuid(long, long)`.
    pub const fn from_u64_pair(most: u64, least: u64) -> Self {
        let m = most.to_be_bytes();
        let l = least.to_be_bytes();
        Uuid([m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], l[0], l[1], l[2], l[3], l[4], l[5], l[6], l[7]])
    }

    /// The most and least significant halves.
    pub fn as_u64_pair(&self) -> (u64, u64) {
        let v = u128::from_be_bytes(self.0);
        ((v >> 64) as u64, v as u64)
    }

    /// The raw bytes.
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }
}

impl fmt::Debug for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Uuid({:032x})", u128::from_be_bytes(self.0))
    }
}

/// Reads a UUID.
#[inline]
pub fn read_uuid(buf: &mut Bytes) -> Result<Uuid, DecodeError> {
    ensure(buf, 16)?;
    let mut out = [0u8; 16];
    buf.copy_to_slice(&mut out);
    Ok(Uuid(out))
}

impl crate::primitive::FixedWidth for Uuid {
    const SIZE: usize = 16;

    #[inline]
    fn read(buf: &mut Bytes) -> Result<Self, DecodeError> {
        read_uuid(buf)
    }

    #[inline]
    fn read_all(src: &[u8], out: &mut [Self]) {
        for (v, c) in out.iter_mut().zip(src.chunks_exact(16)) {
            *v = Uuid(<[u8; 16]>::try_from(c).unwrap_or_default());
        }
    }
}

/// Writes a UUID.
#[inline]
pub fn write_uuid<B: BufMut>(buf: &mut B, v: &Uuid) {
    buf.put_slice(&v.0)
}
