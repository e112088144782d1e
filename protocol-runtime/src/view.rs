//! Borrowed views: every message read in place from a frame's bytes, without allocating.
//!
//! Each generated message `Xxx` has a view `XxxView<'a>` with the same fields: fixed-width
//! values read out, strings as `&'a str`, bytes and records as `&'a [u8]`, nested structs as
//! their views, and arrays as an [`ArrayView`] that reads its elements as it is iterated.
//! `XxxView::decode(&mut slice, version)` checks the whole value once (every length, every
//! string's UTF-8, every nested element, the tagged sections) and fails exactly where
//! `Xxx::decode` would, with the same error; after that, reading fields and iterating arrays
//! cannot fail and allocates nothing. `into_owned()` turns a view into the owned message.
//!
//! What each step costs: the check walks every byte once and builds no element views; iterating
//! an array reads each element as it comes, and an element that holds arrays of structs skips
//! over them (their lengths and counts only) to find where it ends, so each nesting level adds
//! one light pass over what it holds, not a second check.
//!
//! Views are strict: a lenient scope ([`crate::lenient`]) does not apply to them. Their checks
//! bound no allocation, so the allocation budget of [`crate::limits`] does not apply either; the
//! limits on counts and lengths (arrays, tagged sections, strings) do, so that a view refuses
//! what the owned decode (and Kafka's own decoder) refuses.
//!
//! The functions outside [`View`], [`ArrayView`], [`TaggedView`] and [`IntoOwned`] are called by
//! generated code and are not public API.

use std::fmt;
use std::marker::PhantomData;

use crate::error::{DecodeError, DecodeErrorKind};
use crate::tagged::UnknownTaggedFields;
use crate::version::VersionRange;

/// A value that can be read in place from the front of a byte slice.
pub trait View<'a>: Sized {
    /// Bytes one value takes on the wire, for fixed-width types: their arrays are checked in
    /// one step.
    const FIXED_SIZE: Option<usize> = None;

    /// Reads one value from the front of `buf`, advancing it past the value, and checks all of
    /// it. `compact` is the length-prefix form of strings, bytes and arrays (flexible versions);
    /// fixed-width values and structs ignore it.
    fn decode_view(buf: &mut &'a [u8], version: i16, compact: bool) -> Result<Self, DecodeError>;

    /// Checks one value at the front of `buf` as [`decode_view`](View::decode_view) does, and
    /// advances past it, without building the view: what an array's elements get when the
    /// array's view is decoded.
    #[inline(always)]
    fn check_view(buf: &mut &'a [u8], version: i16, compact: bool) -> Result<(), DecodeError> {
        Self::decode_view(buf, version, compact).map(drop)
    }

    /// Reads one value that [`decode_view`](View::decode_view) has already checked (an array's
    /// element as the array is iterated): nested arrays of structs are skipped over, not
    /// checked again. On bytes that were not checked it still never panics; it may accept
    /// what `decode_view` refuses.
    #[inline(always)]
    fn decode_trusted(buf: &mut &'a [u8], version: i16, compact: bool) -> Result<Self, DecodeError> {
        Self::decode_view(buf, version, compact)
    }

    /// Advances past one already-checked value, reading only its lengths and counts.
    #[inline(always)]
    fn skip_view(buf: &mut &'a [u8], version: i16, compact: bool) -> Result<(), DecodeError> {
        Self::check_view(buf, version, compact)
    }
}

#[doc(hidden)] // generated code calls it; not public API
/// How a view's decode body reads its arrays and nested structs: [`Checked`] (decoding a
/// frame: everything checked) or [`Trusted`] (an element of a checked array, as it is iterated).
pub trait Mode {
    /// True when the bytes were checked already.
    const TRUSTED: bool;

    /// Reads a value.
    #[inline(always)]
    fn read<'a, T: View<'a>>(buf: &mut &'a [u8], version: i16, compact: bool) -> Result<T, DecodeError> {
        if Self::TRUSTED {
            T::decode_trusted(buf, version, compact)
        } else {
            T::decode_view(buf, version, compact)
        }
    }

    /// Reads an array that may be null.
    #[inline(always)]
    fn nullable_array<'a, T: View<'a>>(buf: &mut &'a [u8], version: i16, compact: bool) -> Result<Option<ArrayView<'a, T>>, DecodeError> {
        if Self::TRUSTED {
            array::<T, true>(buf, version, compact)
        } else {
            array::<T, false>(buf, version, compact)
        }
    }

    /// Reads a struct that may be null: an int8 marker (negative for null), then the struct.
    #[inline(always)]
    fn nullable_struct<'a, T: View<'a>>(buf: &mut &'a [u8], version: i16) -> Result<Option<T>, DecodeError> {
        if read_i8(buf)? < 0 {
            Ok(None)
        } else {
            Self::read(buf, version, false).map(Some)
        }
    }
}

#[doc(hidden)] // generated code calls it; not public API
/// Decoding a frame: every value checked.
#[derive(Debug)]
pub enum Checked {}

impl Mode for Checked {
    const TRUSTED: bool = false;
}

#[doc(hidden)] // generated code calls it; not public API
/// Reading what was checked: nested arrays skipped over.
#[derive(Debug)]
pub enum Trusted {}

impl Mode for Trusted {
    const TRUSTED: bool = true;
}

/// A view of a top-level message.
pub trait MessageView<'a>: View<'a> + IntoOwned + Copy + fmt::Debug + Default {
    /// The message's name (`MetadataResponse`).
    const NAME: &'static str;
    /// The versions it has.
    const VERSIONS: VersionRange;

    /// Reads the message, version `version`, from the front of `buf` (advanced past it). Errors
    /// name the message, version, field path and offset, as the owned message's decode does.
    #[inline]
    fn decode(buf: &mut &'a [u8], version: i16) -> Result<Self, DecodeError> {
        let total = buf.len();
        if !Self::VERSIONS.contains(version) {
            return Err(DecodeError::new(DecodeErrorKind::UnsupportedVersion { version }, total).in_message(Self::NAME, version, total));
        }
        Self::decode_view(buf, version, false).map_err(|e| e.in_message(Self::NAME, version, total))
    }
}

/// An owned message whose view is [`View`](Viewed::View): for code generic over messages.
pub trait Viewed: crate::Message {
    /// The message's view.
    type View<'a>: MessageView<'a, Owned = Self>;
}

/// Turns a view into owned data (copying strings and bytes).
pub trait IntoOwned {
    /// The owned form.
    type Owned;
    /// Copies the value out of the frame.
    fn into_owned(self) -> Self::Owned;
}

// ---------------------------------------------------------------------------------------------
// Fixed-width values.

#[inline(always)]
fn take_array<'a, const N: usize>(buf: &mut &'a [u8]) -> Result<&'a [u8; N], DecodeError> {
    match buf.split_first_chunk::<N>() {
        Some((head, rest)) => {
            *buf = rest;
            Ok(head)
        }
        None => Err(crate::varint::truncated(buf, N)),
    }
}

macro_rules! fixed_view {
    ($($ty:ty, $from:expr;)*) => {$(
        impl<'a> View<'a> for $ty {
            const FIXED_SIZE: Option<usize> = Some(std::mem::size_of::<$ty>());

            #[inline(always)]
            fn decode_view(buf: &mut &'a [u8], _version: i16, _compact: bool) -> Result<Self, DecodeError> {
                take_array::<{ std::mem::size_of::<$ty>() }>(buf).map(|b| $from(*b))
            }

            #[inline(always)]
            fn skip_view(buf: &mut &'a [u8], _version: i16, _compact: bool) -> Result<(), DecodeError> {
                take(buf, std::mem::size_of::<$ty>()).map(drop)
            }
        }

        impl IntoOwned for $ty {
            type Owned = $ty;
            #[inline(always)]
            fn into_owned(self) -> $ty {
                self
            }
        }
    )*};
}

fixed_view! {
    i8, i8::from_be_bytes;
    i16, i16::from_be_bytes;
    u16, u16::from_be_bytes;
    i32, i32::from_be_bytes;
    i64, i64::from_be_bytes;
    f64, f64::from_be_bytes;
    // Any non-zero byte reads as true, as in the owned decode.
    bool, |b: [u8; 1]| b != [0];
    crate::Uuid, crate::Uuid;
}

/// Reads an int8, for nullable struct markers.
#[inline(always)]
fn read_i8(buf: &mut &[u8]) -> Result<i8, DecodeError> {
    i8::decode_view(buf, 0, false)
}

// ---------------------------------------------------------------------------------------------
// Length prefixes (the same rules as [`crate::length`]).

#[cold]
fn exceeds(buf: &[u8], length: u64) -> DecodeError {
    let remaining = buf.len();
    DecodeError::new(DecodeErrorKind::LengthExceedsRemaining { length, remaining }, remaining)
}

#[inline(always)]
fn checked(buf: &[u8], n: u64) -> Result<Option<usize>, DecodeError> {
    if n > buf.len() as u64 {
        return Err(exceeds(buf, n));
    }
    Ok(Some(n as usize))
}

#[inline(always)]
fn compact_len(buf: &mut &[u8]) -> Result<Option<usize>, DecodeError> {
    match crate::varint::read_uleb_slice(buf, 32)? {
        0 => Ok(None),
        n => checked(buf, n.saturating_sub(1)),
    }
}

/// A string-style prefix: int16 or compact; `None` is null (any negative classic length).
#[inline(always)]
fn len16(buf: &mut &[u8], compact: bool) -> Result<Option<usize>, DecodeError> {
    if compact {
        return compact_len(buf);
    }
    match i16::decode_view(buf, 0, false)? {
        n if n < 0 => Ok(None),
        n => checked(buf, n as u64),
    }
}

/// A bytes/array-style prefix: int32 or compact; `None` is null. An array's count is checked
/// against the bytes that remain, as every element takes at least one byte.
#[inline(always)]
fn len32(buf: &mut &[u8], compact: bool) -> Result<Option<usize>, DecodeError> {
    if compact {
        return compact_len(buf);
    }
    match i32::decode_view(buf, 0, false)? {
        n if n < 0 => Ok(None),
        n => checked(buf, n as u64),
    }
}

/// Splits `n` checked bytes off the front.
#[inline(always)]
fn take<'a>(buf: &mut &'a [u8], n: usize) -> Result<&'a [u8], DecodeError> {
    match buf.split_at_checked(n) {
        Some((head, rest)) => {
            *buf = rest;
            Ok(head)
        }
        None => Err(exceeds(buf, n as u64)),
    }
}

#[cold]
fn null(buf: &[u8]) -> DecodeError {
    DecodeError::new(DecodeErrorKind::UnexpectedNull, buf.len())
}

// ---------------------------------------------------------------------------------------------
// Strings and bytes.

#[doc(hidden)] // generated code calls it; not public API
/// Reads a string that may be null.
#[inline(always)]
pub fn nullable_str<'a>(buf: &mut &'a [u8], compact: bool) -> Result<Option<&'a str>, DecodeError> {
    let Some(n) = len16(buf, compact)? else {
        return Ok(None);
    };
    let remaining = buf.len();
    crate::limits::check_string_len(n, remaining)?;
    let raw = take(buf, n)?;
    // Reported at the string's start, as the owned decode does.
    std::str::from_utf8(raw).map(Some).map_err(|_| DecodeError::new(DecodeErrorKind::InvalidUtf8, remaining))
}

impl<'a> View<'a> for &'a str {
    #[inline(always)]
    fn decode_view(buf: &mut &'a [u8], _version: i16, compact: bool) -> Result<Self, DecodeError> {
        nullable_str(buf, compact)?.ok_or_else(|| null(buf))
    }

    #[inline(always)]
    fn skip_view(buf: &mut &'a [u8], _version: i16, compact: bool) -> Result<(), DecodeError> {
        skip_nullable_str(buf, compact)
    }
}

#[doc(hidden)] // generated code calls it; not public API
/// Skips `n` bytes of checked fixed-width fields.
#[inline(always)]
pub fn skip_bytes(buf: &mut &[u8], n: usize) -> Result<(), DecodeError> {
    take(buf, n).map(drop)
}

#[doc(hidden)] // generated code calls it; not public API
/// Skips a checked string that may be null.
#[inline(always)]
pub fn skip_nullable_str(buf: &mut &[u8], compact: bool) -> Result<(), DecodeError> {
    let n = len16(buf, compact)?;
    skip_len(buf, n)
}

#[doc(hidden)] // generated code calls it; not public API
/// Skips checked bytes (or records) that may be null.
#[inline(always)]
pub fn skip_nullable_bytes(buf: &mut &[u8], compact: bool) -> Result<(), DecodeError> {
    let n = len32(buf, compact)?;
    skip_len(buf, n)
}

/// Advances past `n` bytes, or none for null.
#[inline(always)]
fn skip_len(buf: &mut &[u8], n: Option<usize>) -> Result<(), DecodeError> {
    match n {
        Some(n) => take(buf, n).map(drop),
        None => Ok(()),
    }
}

impl IntoOwned for &str {
    type Owned = bytestring::ByteString;
    fn into_owned(self) -> bytestring::ByteString {
        bytestring::ByteString::from(self)
    }
}

#[doc(hidden)] // generated code calls it; not public API
/// Reads bytes (or records) that may be null.
#[inline]
pub fn nullable_bytes<'a>(buf: &mut &'a [u8], compact: bool) -> Result<Option<&'a [u8]>, DecodeError> {
    match len32(buf, compact)? {
        Some(n) => take(buf, n).map(Some),
        None => Ok(None),
    }
}

impl<'a> View<'a> for &'a [u8] {
    #[inline]
    fn decode_view(buf: &mut &'a [u8], _version: i16, compact: bool) -> Result<Self, DecodeError> {
        nullable_bytes(buf, compact)?.ok_or_else(|| null(buf))
    }

    #[inline(always)]
    fn skip_view(buf: &mut &'a [u8], _version: i16, compact: bool) -> Result<(), DecodeError> {
        skip_nullable_bytes(buf, compact)
    }
}

impl IntoOwned for &[u8] {
    type Owned = bytes::Bytes;
    fn into_owned(self) -> bytes::Bytes {
        bytes::Bytes::copy_from_slice(self)
    }
}

impl<T: IntoOwned> IntoOwned for Option<T> {
    type Owned = Option<T::Owned>;
    #[inline]
    fn into_owned(self) -> Option<T::Owned> {
        self.map(T::into_owned)
    }
}

// ---------------------------------------------------------------------------------------------
// Structs.

#[doc(hidden)] // generated code calls it; not public API
/// Skips a checked struct that may be null.
#[inline]
pub fn skip_nullable_struct<'a, T: View<'a>>(buf: &mut &'a [u8], version: i16) -> Result<(), DecodeError> {
    if read_i8(buf)? < 0 {
        Ok(())
    } else {
        T::skip_view(buf, version, false)
    }
}

// ---------------------------------------------------------------------------------------------
// Arrays.

/// An array read in place: its elements are checked when the view is decoded and read again,
/// one by one, as it is iterated.
pub struct ArrayView<'a, T> {
    /// The elements' bytes (after the count).
    data: &'a [u8],
    len: u32,
    version: i16,
    compact: bool,
    elem: PhantomData<fn() -> T>,
}

impl<T> Clone for ArrayView<'_, T> {
    #[inline]
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for ArrayView<'_, T> {}

impl<T> Default for ArrayView<'_, T> {
    #[inline]
    fn default() -> Self {
        ArrayView { data: &[], len: 0, version: 0, compact: false, elem: PhantomData }
    }
}

impl<'a, T: View<'a>> ArrayView<'a, T> {
    /// The number of elements.
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// True when the array has no elements.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The elements' bytes on the wire (after the count).
    #[inline]
    pub fn as_bytes(&self) -> &'a [u8] {
        self.data
    }

    /// The elements, in order.
    #[inline]
    pub fn iter(&self) -> ArrayIter<'a, T> {
        ArrayIter { rest: self.data, left: self.len as usize, version: self.version, compact: self.compact, elem: PhantomData }
    }
}

impl<'a, T: View<'a>> View<'a> for ArrayView<'a, T> {
    #[inline(always)]
    fn decode_view(buf: &mut &'a [u8], version: i16, compact: bool) -> Result<Self, DecodeError> {
        nullable_array(buf, version, compact)?.ok_or_else(|| null(buf))
    }

    #[inline(always)]
    fn decode_trusted(buf: &mut &'a [u8], version: i16, compact: bool) -> Result<Self, DecodeError> {
        array::<T, true>(buf, version, compact)?.ok_or_else(|| null(buf))
    }

    #[inline(always)]
    fn skip_view(buf: &mut &'a [u8], version: i16, compact: bool) -> Result<(), DecodeError> {
        skip_nullable_array::<T>(buf, version, compact)
    }
}

#[doc(hidden)] // generated code calls it; not public API
/// Skips a checked array that may be null.
#[inline]
pub fn skip_nullable_array<'a, T: View<'a>>(buf: &mut &'a [u8], version: i16, compact: bool) -> Result<(), DecodeError> {
    array::<T, true>(buf, version, compact).map(drop)
}

#[doc(hidden)] // generated code calls it; not public API
/// Reads an array that may be null, checking every element.
#[inline(always)]
pub fn nullable_array<'a, T: View<'a>>(buf: &mut &'a [u8], version: i16, compact: bool) -> Result<Option<ArrayView<'a, T>>, DecodeError> {
    array::<T, false>(buf, version, compact)
}

/// Reads an array that may be null: checking every element, or (`TRUSTED`, bytes checked
/// already) finding its end by skipping them.
#[inline(always)]
fn array<'a, T: View<'a>, const TRUSTED: bool>(buf: &mut &'a [u8], version: i16, compact: bool) -> Result<Option<ArrayView<'a, T>>, DecodeError> {
    let Some(len) = len32(buf, compact)? else {
        return Ok(None);
    };
    // len32 bounded the count by the bytes left (and so a trusted walk); a check also applies
    // the limit the owned decode does.
    if !TRUSTED {
        crate::limits::check_array_len(len, buf.len())?;
    }
    // Fixed-width elements: one check for all of them, inlined (replica lists). Cut short,
    // a check walks them to name the element that does not fit.
    if let Some(size) = T::FIXED_SIZE {
        let bytes = len.saturating_mul(size);
        if TRUSTED || bytes <= buf.len() {
            let data = take(buf, bytes)?;
            return Ok(Some(ArrayView { data, len: count(len), version, compact, elem: PhantomData }));
        }
    }
    elements::<T, TRUSTED>(buf, len, version, compact).map(Some)
}

/// Walks `len` elements one by one: checking each, or (`TRUSTED`, bytes checked already)
/// skipping it. For a fixed-width array cut short, the check finds the element that does not
/// fit: the error the owned decode gives.
#[inline(never)]
fn elements<'a, T: View<'a>, const TRUSTED: bool>(buf: &mut &'a [u8], len: usize, version: i16, compact: bool) -> Result<ArrayView<'a, T>, DecodeError> {
    let start = *buf;
    for i in 0..len {
        let step = if TRUSTED { T::skip_view(buf, version, compact) } else { T::check_view(buf, version, compact) };
        if let Err(e) = step {
            return Err(e.index(i));
        }
    }
    let used = start.len().saturating_sub(buf.len());
    let data = start.get(..used).unwrap_or_default();
    Ok(ArrayView { data, len: count(len), version, compact, elem: PhantomData })
}

/// An element count, checked against the frame's bytes, as stored: a u32 holds it for any frame
/// Kafka allows (2 GiB at most).
#[inline(always)]
fn count(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}

impl<'a, T: View<'a>> IntoIterator for ArrayView<'a, T> {
    type Item = T;
    type IntoIter = ArrayIter<'a, T>;
    #[inline]
    fn into_iter(self) -> ArrayIter<'a, T> {
        self.iter()
    }
}

impl<'a, T: View<'a>> IntoIterator for &ArrayView<'a, T> {
    type Item = T;
    type IntoIter = ArrayIter<'a, T>;
    #[inline]
    fn into_iter(self) -> ArrayIter<'a, T> {
        self.iter()
    }
}

impl<'a, T: View<'a> + fmt::Debug> fmt::Debug for ArrayView<'a, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Collects into any collection of the owned elements (`Vec`, or the `SmallVec` that owned
/// messages hold fixed-width arrays in).
impl<'a, T: View<'a> + IntoOwned> ArrayView<'a, T> {
    /// The owned elements.
    #[inline]
    pub fn to_owned_collection<C: FromIterator<T::Owned>>(&self) -> C {
        self.iter().map(T::into_owned).collect()
    }
}

/// The iterator of an [`ArrayView`].
pub struct ArrayIter<'a, T> {
    rest: &'a [u8],
    left: usize,
    version: i16,
    compact: bool,
    elem: PhantomData<fn() -> T>,
}

impl<'a, T: View<'a>> Iterator for ArrayIter<'a, T> {
    type Item = T;

    #[inline]
    fn next(&mut self) -> Option<T> {
        if self.left == 0 {
            return None;
        }
        match T::decode_trusted(&mut self.rest, self.version, self.compact) {
            Ok(v) => {
                self.left = self.left.saturating_sub(1);
                Some(v)
            }
            // Not reached: the view checked every element when it was decoded.
            Err(_) => {
                self.left = 0;
                None
            }
        }
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<'a, T: View<'a>> ExactSizeIterator for ArrayIter<'a, T> {}

// ---------------------------------------------------------------------------------------------
// Tagged fields.

/// A struct's tagged-field section, as it is on the wire: every field, known or not.
#[derive(Clone, Copy, Default)]
pub struct TaggedView<'a> {
    /// The fields' bytes (after the count).
    data: &'a [u8],
    len: usize,
}

impl<'a> TaggedView<'a> {
    /// The number of tagged fields (known and unknown).
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the section is empty (or the version has none).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every tagged field, `(tag, value bytes)`, in wire order.
    pub fn iter(&self) -> TaggedIter<'a> {
        TaggedIter { rest: self.data, left: self.len }
    }

    /// The fields whose tags are not in `known`, copied: what the owned message keeps as its
    /// unknown tagged fields.
    pub fn unknown(&self, known: &[u32]) -> UnknownTaggedFields {
        let mut out = UnknownTaggedFields::default();
        for (tag, data) in self.iter().filter(|(tag, _)| !known.contains(tag)) {
            out.push(tag, bytes::Bytes::copy_from_slice(data));
        }
        out
    }
}

impl fmt::Debug for TaggedView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// The iterator of a [`TaggedView`].
#[derive(Debug, Clone)]
pub struct TaggedIter<'a> {
    rest: &'a [u8],
    left: usize,
}

impl<'a> Iterator for TaggedIter<'a> {
    type Item = (u32, &'a [u8]);

    fn next(&mut self) -> Option<(u32, &'a [u8])> {
        if self.left == 0 {
            return None;
        }
        self.left = self.left.saturating_sub(1);
        // Checked when the view was decoded; a failure (not reached) ends the iteration.
        let field = (|| {
            let tag = crate::varint::read_uleb_slice(&mut self.rest, 32).ok()? as u32;
            let size = crate::varint::read_uleb_slice(&mut self.rest, 32).ok()? as usize;
            take(&mut self.rest, size).ok().map(|data| (tag, data))
        })();
        if field.is_none() {
            self.left = 0;
        }
        field
    }
}

#[doc(hidden)] // generated code calls it; not public API
/// Reads a tagged-field section. `known(tag, sub)` reads a known tag from `sub` (exactly its
/// declared bytes) and returns `Ok(true)`, or `Ok(false)` for a tag it does not know.
#[inline]
pub fn read_tagged<'a>(buf: &mut &'a [u8], mut known: impl FnMut(u32, &mut &'a [u8]) -> Result<bool, DecodeError>) -> Result<TaggedView<'a>, DecodeError> {
    let len = crate::varint::read_uleb_slice(buf, 32)? as usize;
    if len == 0 {
        return Ok(TaggedView::default());
    }
    // Each field takes at least two bytes (tag and size).
    if len > buf.len() {
        return Err(exceeds(buf, len as u64));
    }
    crate::limits::check_tagged_count(len, buf.len())?;
    let start = *buf;
    for _ in 0..len {
        let tag = crate::varint::read_uleb_slice(buf, 32)? as u32;
        let size = crate::varint::read_uleb_slice(buf, 32)? as usize;
        let mut sub = take(buf, size)?;
        let after = buf.len();
        if known(tag, &mut sub).map_err(|e| e.shift(after))? && !sub.is_empty() {
            let left = sub.len();
            return Err(DecodeError::new(
                DecodeErrorKind::TaggedFieldSizeMismatch { tag, declared: size, consumed: size.saturating_sub(left) },
                left.saturating_add(after),
            ));
        }
    }
    let used = start.len().saturating_sub(buf.len());
    Ok(TaggedView { data: start.get(..used).unwrap_or_default(), len })
}

#[doc(hidden)] // generated code calls it; not public API
/// Skips a checked tagged-field section.
#[inline]
pub fn skip_tagged(buf: &mut &[u8]) -> Result<(), DecodeError> {
    let len = crate::varint::read_uleb_slice(buf, 32)?;
    for _ in 0..len {
        crate::varint::read_uleb_slice(buf, 32)?;
        let size = crate::varint::read_uleb_slice(buf, 32)?;
        take(buf, usize::try_from(size).unwrap_or(usize::MAX))?;
    }
    Ok(())
}

#[doc(hidden)] // generated code calls it; not public API
/// Reads a known tagged value, reporting a short value as a size mismatch (as
/// [`crate::tagged::read_known`] does).
#[inline]
pub fn read_known<'a, T>(tag: u32, sub: &mut &'a [u8], read: impl FnOnce(&mut &'a [u8]) -> Result<T, DecodeError>) -> Result<T, DecodeError> {
    let declared = sub.len();
    read(sub).map_err(|e| match e.kind() {
        DecodeErrorKind::UnexpectedEnd { .. } => {
            DecodeError::new(DecodeErrorKind::TaggedFieldSizeMismatch { tag, declared, consumed: declared.saturating_add(1) }, 0)
        }
        _ => e,
    })
}

#[doc(hidden)] // generated code calls it; not public API
/// A known tag in a version where its field does not exist.
#[cold]
pub fn tag_not_valid(tag: u32, version: i16, sub: &[u8]) -> DecodeError {
    DecodeError::new(DecodeErrorKind::TagNotValidForVersion { tag, version }, sub.len())
}
