//! Arrays: an int32 count (classic) or unsigned varint count + 1 (compact), then the elements.

use bytes::{BufMut, Bytes};

use crate::error::{DecodeError, DecodeErrorKind, EncodeError};
use crate::length::{len32_size, read_len32, write_len32};
use crate::primitive::FixedWidth;

use smallvec::SmallVec;

/// Reads an array that may be null, decoding each element with `elem`. The count is checked
/// against the bytes remaining before the vector is allocated.
#[inline]
pub fn read_nullable_array<T>(
    buf: &mut Bytes,
    compact: bool,
    mut elem: impl FnMut(&mut Bytes) -> Result<T, DecodeError>,
) -> Result<Option<Vec<T>>, DecodeError> {
    let Some(n) = read_len32(buf, compact)? else {
        return Ok(None);
    };
    let remaining = bytes::Buf::remaining(buf);
    crate::limits::charge_array(n, std::mem::size_of::<T>(), remaining)?;
    let mut out = Vec::with_capacity(prealloc::<T>(n, remaining));
    for i in 0..n {
        if out.len() == out.capacity() {
            grow(&mut out, n, remaining, bytes::Buf::remaining(buf));
        }
        match elem(buf) {
            Ok(v) => out.push(v),
            Err(e) => return Err(e.index(i)),
        }
    }
    Ok(Some(out))
}

/// Makes room in a vector whose claim was not reserved in full. Once some elements have decoded,
/// their average size on the wire tells whether the rest of the claim fits in the input left: if
/// it does, the rest is reserved exactly (no doubling overshoot); if not, the claim is likely a
/// lie and the vector only doubles, as the elements actually arrive.
#[cold]
fn grow<T>(out: &mut Vec<T>, claimed: usize, start: usize, left: usize) {
    let done = out.len();
    let used = start.saturating_sub(left);
    let rest = claimed.saturating_sub(done);
    if done > 0 && rest.saturating_mul(used) <= left.saturating_mul(done) {
        out.reserve_exact(rest);
    } else {
        out.reserve(1);
    }
}

/// Bytes any array may reserve up front, whatever the input.
const PREALLOC_FREE: usize = 4 << 10;

/// Elements to reserve for an array claiming `n` with `remaining` bytes of input left. Every
/// element takes at least a byte, so `n <= remaining`; but an element may be much larger in memory
/// than on the wire, so a claim is only reserved in full up to four bytes of memory per byte of
/// input left (or 4 KiB). Past that the vector grows as elements actually decode, which keeps a
/// lying count from costing more memory than the input that backs it.
#[inline]
fn prealloc<T>(n: usize, remaining: usize) -> usize {
    let size = std::mem::size_of::<T>().max(1);
    let cap = remaining.saturating_mul(4).max(PREALLOC_FREE).checked_div(size).unwrap_or(n);
    n.min(cap)
}

/// A null array where the version allows none: an error, or empty in a lenient decode.
#[cold]
fn null_array(buf: &Bytes) -> Result<(), DecodeError> {
    let remaining = bytes::Buf::remaining(buf);
    if crate::lenient::tolerate(crate::lenient::LeniencyKind::NullArray, remaining) {
        Ok(())
    } else {
        Err(DecodeError::new(DecodeErrorKind::UnexpectedNull, remaining))
    }
}

/// Reads an array that must not be null (a lenient decode reads null as empty).
#[inline]
pub fn read_array<T>(buf: &mut Bytes, compact: bool, elem: impl FnMut(&mut Bytes) -> Result<T, DecodeError>) -> Result<Vec<T>, DecodeError> {
    match read_nullable_array(buf, compact, elem)? {
        Some(v) => Ok(v),
        None => null_array(buf).map(|()| Vec::new()),
    }
}

/// Reads an array of fixed-width values that may be null. Same checks and errors as
/// [`read_nullable_array`], but the whole array is bounds-checked once and read in bulk.
///
/// Generated messages hold such arrays (`[]int32`, `[]int64`, `[]uuid`, ...) as a `SmallVec`
/// with 16 bytes of inline elements (`SmallVec<[i32; 4]>`, `SmallVec<[Uuid; 1]>`): as small as
/// a `Vec`, and the short arrays that fill Metadata-like responses (replica lists) decode
/// without a heap allocation each; longer ones spill to the heap.
#[inline]
pub fn read_nullable_fixed_array<A>(buf: &mut Bytes, compact: bool) -> Result<Option<SmallVec<A>>, DecodeError>
where
    A: smallvec::Array + Default + AsMut<[A::Item]>,
    A::Item: FixedWidth,
{
    let Some(n) = read_len32(buf, compact)? else {
        return Ok(None);
    };
    let remaining = bytes::Buf::remaining(buf);
    crate::limits::charge_array(n, std::mem::size_of::<A::Item>(), remaining)?;
    let size = n.saturating_mul(A::Item::SIZE);
    // `Bytes::chunk` is all that remains. What fits in the input fits in memory too: no element
    // is larger in memory than on the wire.
    let Some(src) = bytes::Buf::chunk(buf).get(..size) else {
        return Err(cut_short::<A::Item>(buf, remaining));
    };
    let out = if n <= A::size() {
        // Short (a replica list): converted straight into the inline buffer, no allocation.
        let mut inline = A::default();
        let dst = inline.as_mut().get_mut(..n).unwrap_or_default();
        A::Item::read_all(src, dst);
        SmallVec::from_buf_and_len(inline, n)
    } else {
        let mut heap = vec![A::Item::default(); n];
        A::Item::read_all(src, &mut heap);
        SmallVec::from_vec(heap)
    };
    bytes::Buf::advance(buf, size);
    Ok(Some(out))
}

/// The error element-by-element reading gives for an array that the input cuts short: the
/// first element that does not fit, by index.
#[cold]
fn cut_short<T: FixedWidth>(buf: &mut Bytes, remaining: usize) -> DecodeError {
    let whole = remaining.checked_div(T::SIZE).unwrap_or(0);
    bytes::Buf::advance(buf, whole.saturating_mul(T::SIZE).min(remaining));
    match T::read(buf) {
        Err(e) => e.index(whole),
        // Unreachable: fewer than SIZE bytes are left.
        Ok(_) => DecodeError::new(DecodeErrorKind::UnexpectedEnd { needed: T::SIZE, available: 0 }, 0).index(whole),
    }
}

/// Reads an array of fixed-width values that must not be null (see [`read_nullable_fixed_array`]).
#[inline]
pub fn read_fixed_array<A>(buf: &mut Bytes, compact: bool) -> Result<SmallVec<A>, DecodeError>
where
    A: smallvec::Array + Default + AsMut<[A::Item]>,
    A::Item: FixedWidth,
{
    match read_nullable_fixed_array::<A>(buf, compact)? {
        Some(v) => Ok(v),
        None => null_array(buf).map(|()| SmallVec::new()),
    }
}

/// Writes an array (or null), encoding each element with `elem`.
#[inline]
pub fn write_nullable_array<B: BufMut, T>(
    buf: &mut B,
    items: Option<&[T]>,
    compact: bool,
    mut elem: impl FnMut(&mut B, &T) -> Result<(), EncodeError>,
) -> Result<(), EncodeError> {
    write_len32(buf, items.map(<[T]>::len), compact)?;
    for (i, item) in items.unwrap_or_default().iter().enumerate() {
        elem(buf, item).map_err(|e| e.index(i))?;
    }
    Ok(())
}

/// Writes an array.
#[inline]
pub fn write_array<B: BufMut, T>(buf: &mut B, items: &[T], compact: bool, elem: impl FnMut(&mut B, &T) -> Result<(), EncodeError>) -> Result<(), EncodeError> {
    write_nullable_array(buf, Some(items), compact, elem)
}

/// Encoded size of an array whose elements have the sizes `elem` gives.
#[inline]
pub fn array_len<T>(items: &[T], compact: bool, elem: impl Fn(&T) -> usize) -> usize {
    len32_size(Some(items.len()), compact).saturating_add(items.iter().map(elem).fold(0, usize::saturating_add))
}

/// Encoded size of an array or null whose elements have the sizes `elem` gives.
#[inline]
pub fn nullable_array_len<T>(items: Option<&[T]>, compact: bool, elem: impl Fn(&T) -> usize) -> usize {
    match items {
        Some(items) => array_len(items, compact, elem),
        None => len32_size(None, compact),
    }
}

/// Encoded size of an array of fixed-size elements.
#[inline]
pub fn fixed_array_len<T>(items: &[T], compact: bool, elem_size: usize) -> usize {
    len32_size(Some(items.len()), compact).saturating_add(items.len().saturating_mul(elem_size))
}

/// Encoded size of an array or null of fixed-size elements.
#[inline]
pub fn nullable_fixed_array_len<T>(items: Option<&[T]>, compact: bool, elem_size: usize) -> usize {
    let n = items.map(<[T]>::len);
    len32_size(n, compact).saturating_add(n.unwrap_or(0).saturating_mul(elem_size))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::primitive::{read_i32, write_i32};

    #[test]
    fn round_trip_and_index_in_errors() {
        let mut out = Vec::new();
        write_array(&mut out, &[1i32, 2, 3], true, |b, v| {
            write_i32(b, *v);
            Ok(())
        })
        .unwrap();
        assert_eq!(out.len(), fixed_array_len(&[1i32, 2, 3], true, 4));
        let v = read_array(&mut Bytes::from(out.clone()), true, read_i32).unwrap();
        assert_eq!(v, [1, 2, 3]);
        out.truncate(out.len() - 1);
        let err = read_array(&mut Bytes::from(out), true, read_i32).unwrap_err();
        assert_eq!(err.path_string(), "[2]");
    }

    #[test]
    fn fixed_arrays_read_in_bulk_with_the_same_errors() {
        let mut out = Vec::new();
        write_array(&mut out, &[1i32, -2, 3], true, |b, v| {
            write_i32(b, *v);
            Ok(())
        })
        .unwrap();
        let arr = read_fixed_array::<[i32; 4]>(&mut Bytes::from(out.clone()), true).unwrap();
        assert_eq!(&arr[..], [1, -2, 3]);
        assert!(!arr.spilled(), "three int32 are stored inline");
        assert_eq!(read_nullable_fixed_array::<[i32; 4]>(&mut Bytes::from_static(&[0]), true).unwrap(), None);
        for cut in 1..out.len() {
            let bulk = read_fixed_array::<[i32; 4]>(&mut Bytes::copy_from_slice(&out[..cut]), true).unwrap_err();
            let each = read_array(&mut Bytes::copy_from_slice(&out[..cut]), true, read_i32).unwrap_err();
            assert_eq!(bulk, each, "cut at {cut}");
        }
    }

    #[test]
    fn huge_count_fails_before_allocating() {
        let mut b = Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
        let err = read_array(&mut b, false, read_i32).unwrap_err();
        assert!(matches!(err.kind(), DecodeErrorKind::LengthExceedsRemaining { .. }));
    }
}
