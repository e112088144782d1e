//! Fixed-width values: int8 to int64, uint16, float64 and bool, all big-endian.

use bytes::{Buf, BufMut, Bytes};

use crate::error::{DecodeError, DecodeErrorKind};

/// Fails unless `n` bytes remain.
#[inline(always)]
pub fn ensure(buf: &Bytes, n: usize) -> Result<(), DecodeError> {
    if buf.remaining() < n {
        return Err(unexpected_end(buf, n));
    }
    Ok(())
}

#[cold]
fn unexpected_end(buf: &Bytes, needed: usize) -> DecodeError {
    let available = buf.remaining();
    DecodeError::new(DecodeErrorKind::UnexpectedEnd { needed, available }, available)
}

macro_rules! fixed {
    ($($read:ident, $write:ident, $ty:ty, $get:ident, $put:ident;)*) => {$(
        #[doc = concat!("Reads a big-endian `", stringify!($ty), "`.")]
        #[inline]
        pub fn $read(buf: &mut Bytes) -> Result<$ty, DecodeError> {
            const N: usize = std::mem::size_of::<$ty>();
            // One bounds check: `Bytes::chunk` is all that remains.
            match buf.chunk().first_chunk::<N>() {
                Some(b) => {
                    let v = <$ty>::from_be_bytes(*b);
                    buf.advance(N);
                    Ok(v)
                }
                None => Err(unexpected_end(buf, N)),
            }
        }

        #[doc = concat!("Writes a big-endian `", stringify!($ty), "`.")]
        #[inline]
        pub fn $write<B: BufMut>(buf: &mut B, v: $ty) {
            buf.$put(v)
        }
    )*};
}

fixed! {
    read_i8, write_i8, i8, get_i8, put_i8;
    read_i16, write_i16, i16, get_i16, put_i16;
    read_u16, write_u16, u16, get_u16, put_u16;
    read_i32, write_i32, i32, get_i32, put_i32;
    read_u32, write_u32, u32, get_u32, put_u32;
    read_i64, write_i64, i64, get_i64, put_i64;
    read_f64, write_f64, f64, get_f64, put_f64;
}

/// A fixed-width value: arrays of it are bounds-checked once and read in bulk
/// ([`read_fixed_array`](crate::array::read_fixed_array)) instead of element by element.
pub trait FixedWidth: Copy + Default {
    /// Bytes one value takes on the wire.
    const SIZE: usize;
    /// Reads one value.
    fn read(buf: &mut Bytes) -> Result<Self, DecodeError>;
    /// Converts the values in `src` into `out`, one per [`SIZE`](Self::SIZE) bytes, as many as
    /// both hold.
    fn read_all(src: &[u8], out: &mut [Self]);
}

macro_rules! fixed_width {
    ($($ty:ty, $read:ident;)*) => {$(
        impl FixedWidth for $ty {
            const SIZE: usize = std::mem::size_of::<$ty>();

            #[inline]
            fn read(buf: &mut Bytes) -> Result<Self, DecodeError> {
                $read(buf)
            }

            #[inline]
            fn read_all(src: &[u8], out: &mut [Self]) {
                const N: usize = std::mem::size_of::<$ty>();
                // chunks_exact yields N-byte slices only, so the conversion never fails.
                for (v, c) in out.iter_mut().zip(src.chunks_exact(N)) {
                    *v = <[u8; N]>::try_from(c).map_or(<$ty>::default(), <$ty>::from_be_bytes);
                }
            }
        }
    )*};
}

fixed_width! {
    i8, read_i8;
    i16, read_i16;
    u16, read_u16;
    i32, read_i32;
    u32, read_u32;
    i64, read_i64;
    f64, read_f64;
}

impl FixedWidth for bool {
    const SIZE: usize = 1;

    #[inline]
    fn read(buf: &mut Bytes) -> Result<Self, DecodeError> {
        read_bool(buf)
    }

    #[inline]
    fn read_all(src: &[u8], out: &mut [Self]) {
        for (v, b) in out.iter_mut().zip(src) {
            *v = *b != 0;
        }
    }
}

/// Reads a bool: one byte, any non-zero value is true (as Kafka reads it).
#[inline]
pub fn read_bool(buf: &mut Bytes) -> Result<bool, DecodeError> {
    Ok(read_i8(buf)? != 0)
}

/// Writes a bool as one byte, 0 or 1.
#[inline]
pub fn write_bool<B: BufMut>(buf: &mut B, v: bool) {
    buf.put_u8(u8::from(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_big_endian_and_reports_short_input() {
        let mut b = Bytes::from_static(&[0x01, 0x02, 0x03, 0x04, 0xff]);
        assert_eq!(read_i32(&mut b).unwrap(), 0x0102_0304);
        let err = read_i16(&mut b).unwrap_err();
        assert_eq!(err.kind(), &DecodeErrorKind::UnexpectedEnd { needed: 2, available: 1 });
        assert_eq!(read_i8(&mut b).unwrap(), -1);
    }

    #[test]
    fn bool_reads_nonzero_as_true() {
        let mut b = Bytes::from_static(&[0, 1, 7]);
        assert!(!read_bool(&mut b).unwrap());
        assert!(read_bool(&mut b).unwrap());
        assert!(read_bool(&mut b).unwrap());
    }
}
