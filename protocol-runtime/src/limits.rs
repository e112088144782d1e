//! Decode limits: bounds on what hostile input can make a decoder do, beyond the structural
//! check that every length and count fits in the bytes that remain.
//!
//! [`DecodeLimits`] holds the bounds. Its [`Default`] is safe for a broker or proxy reading from
//! anyone and still accepts any message Kafka itself would send. The limits in force are kept
//! per thread: [`DecodeLimits::DEFAULT`] unless a caller runs its decoding inside
//! [`decode_with_limits`] or [`DecodeLimits::scope`]. This keeps the public
//! `Decode::decode(buf, version)` signature (and the generated code) free of an extra parameter,
//! while the runtime's length, array, string and tagged-field readers each consult the limits with
//! one thread-local load and one compare.
//!
//! ```
//! use kwire_runtime::limits::{decode_with_limits, DecodeLimits};
//! use kwire_runtime::{array, Bytes, DecodeErrorKind};
//!
//! // An array of 3 int32s is fine by default, but not when arrays may hold at most 2 elements.
//! let wire = Bytes::from_static(&[0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3]);
//! let read = |mut b: Bytes| array::read_array(&mut b, false, kwire_runtime::primitive::read_i32);
//! assert_eq!(read(wire.clone())?, [1, 2, 3]);
//! let strict = DecodeLimits { max_array_len: 2, ..DecodeLimits::default() };
//! let err = decode_with_limits(&strict, || read(wire)).unwrap_err();
//! assert!(matches!(err.kind(), DecodeErrorKind::LimitExceeded { .. }));
//! # Ok::<(), kwire_runtime::DecodeError>(())
//! ```

use std::cell::Cell;

pub use crate::error::Limit;
use crate::error::{DecodeError, DecodeErrorKind};

/// Bounds applied while decoding. Every field is an inclusive maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeLimits {
    /// Largest frame (the size after the int32 size prefix) the connection codec's frame
    /// decoder accepts when made with these limits in force. Default: 100 MiB, Kafka's
    /// `socket.request.max.bytes`.
    pub max_frame_size: usize,
    /// Most elements one array may claim. Default: 1,000,000, as Kafka 4.4's generated decoders
    /// (`MessageUtil.MAX_ARRAY_LENGTH`).
    pub max_array_len: usize,
    /// Most fields one tagged-field section may claim. Default: 10,000, as Kafka 4.4's generated
    /// decoders (`MessageUtil.MAX_TAGGED_FIELD_COUNT`).
    pub max_tagged_fields: usize,
    /// Longest string, in bytes. Default (and ceiling): 32767, Kafka's limit; a larger value is
    /// treated as 32767.
    pub max_string_len: usize,
    /// Longest bytes field, records fields included. Default: 100 MiB.
    pub max_bytes_len: usize,
    /// Most bytes the decoded arrays of one top-level message may hold, counted as claimed
    /// elements times their in-memory size before each array is allocated. Strings, bytes and
    /// records are slices of the input and cost nothing here. Default: 64 MiB.
    pub max_message_alloc: usize,
    /// Largest size one compressed record batch may inflate to; the default
    /// [`DecodeOptions`](crate::records::DecodeOptions) of the records module takes it from the
    /// limits in force. Default: 64 MiB.
    pub max_decompressed_size: usize,
}

/// Kafka's maximum string length in bytes (also [`string::MAX_STRING_LEN`](crate::string::MAX_STRING_LEN)).
pub const MAX_STRING_LEN: usize = 0x7fff;

/// Default bound on the decompressed size of one batch: 64 MiB.
pub const DEFAULT_MAX_DECOMPRESSED_SIZE: usize = 64 << 20;

// The limits are the bottom layer of decoding: they import only the error types, and the
// modules they bound (strings, records) take their defaults from here.
impl DecodeLimits {
    /// The defaults, usable in `const` context.
    pub const DEFAULT: DecodeLimits = DecodeLimits {
        max_frame_size: 100 << 20,
        max_array_len: 1_000_000,
        max_tagged_fields: 10_000,
        max_string_len: MAX_STRING_LEN,
        max_bytes_len: 100 << 20,
        max_message_alloc: 64 << 20,
        max_decompressed_size: DEFAULT_MAX_DECOMPRESSED_SIZE,
    };

    /// No bound beyond the structural ones (lengths within the input, strings within Kafka's
    /// 32767 bytes). For trusted input only.
    pub const UNLIMITED: DecodeLimits = DecodeLimits {
        max_frame_size: usize::MAX,
        max_array_len: usize::MAX,
        max_tagged_fields: usize::MAX,
        max_string_len: MAX_STRING_LEN,
        max_bytes_len: usize::MAX,
        max_message_alloc: usize::MAX,
        max_decompressed_size: usize::MAX,
    };

    /// Runs `f` with these limits in force on this thread, then restores the previous ones (also
    /// if `f` panics).
    pub fn scope<R>(&self, f: impl FnOnce() -> R) -> R {
        decode_with_limits(self, f)
    }
}

impl Default for DecodeLimits {
    fn default() -> Self {
        DecodeLimits::DEFAULT
    }
}

/// The error for a value over a limit, raised with `remaining` bytes left.
#[cold]
pub fn exceeded(limit: Limit, value: usize, max: usize, remaining: usize) -> DecodeError {
    DecodeError::new(DecodeErrorKind::LimitExceeded { limit, value: value as u64, max: max as u64 }, remaining)
}

thread_local! {
    /// The limits in force on this thread.
    static LIMITS: Cell<DecodeLimits> = const { Cell::new(DecodeLimits::DEFAULT) };
    /// Bytes the arrays of the message being decoded may still claim.
    static ALLOC_LEFT: Cell<usize> = const { Cell::new(DecodeLimits::DEFAULT.max_message_alloc) };
}

/// Runs `f` with `limits` in force for every decode on this thread, then restores the limits
/// that were in force before (also if `f` panics). Scopes nest; the innermost wins.
pub fn decode_with_limits<R>(limits: &DecodeLimits, f: impl FnOnce() -> R) -> R {
    struct Restore(DecodeLimits);
    impl Drop for Restore {
        fn drop(&mut self) {
            LIMITS.with(|l| l.set(self.0));
        }
    }
    let previous = LIMITS.with(|l| l.replace(*limits));
    // Dropped in reverse order: the budget, then the limits.
    let _restore = Restore(previous);
    let _budget = RestoreBudget::replace(limits.max_message_alloc);
    f()
}

/// Gives `ALLOC_LEFT` back the value it had when dropped, also when the decode panics.
struct RestoreBudget(usize);

impl RestoreBudget {
    #[inline]
    fn replace(budget: usize) -> RestoreBudget {
        RestoreBudget(ALLOC_LEFT.with(|a| a.replace(budget)))
    }
}

impl Drop for RestoreBudget {
    #[inline]
    fn drop(&mut self) {
        ALLOC_LEFT.with(|a| a.set(self.0));
    }
}

/// The limits in force on this thread.
#[inline]
pub fn current() -> DecodeLimits {
    LIMITS.with(Cell::get)
}

#[doc(hidden)] // generated code calls it; not public API
/// Runs the decoding of one top-level message with a fresh allocation budget, then gives the
/// enclosing message (if any) its budget back, also if `f` panics. Used by [`decode_message`](crate::message::decode_message).
#[inline]
pub fn with_message_budget<R>(f: impl FnOnce() -> R) -> R {
    let _outer = RestoreBudget::replace(LIMITS.with(|l| l.get().max_message_alloc));
    f()
}

#[doc(hidden)] // generated code calls it; not public API
/// Checks an array of `n` elements of `elem_size` bytes each against the element limit and the
/// message's allocation budget, and charges the budget.
#[inline]
pub fn charge_array(n: usize, elem_size: usize, remaining: usize) -> Result<(), DecodeError> {
    check_array_len(n, remaining)?;
    charge(n.saturating_mul(elem_size), remaining)
}

#[doc(hidden)] // generated code calls it; not public API
/// Checks a tagged-field section of `n` fields of `elem_size` bytes each (kept if unknown)
/// against the tagged-field limit and the message's allocation budget, and charges the budget.
#[inline]
pub fn charge_tagged(n: usize, elem_size: usize, remaining: usize) -> Result<(), DecodeError> {
    check_tagged_count(n, remaining)?;
    charge(n.saturating_mul(elem_size), remaining)
}

#[doc(hidden)] // generated code calls it; not public API
/// Checks an array's element count against [`DecodeLimits::max_array_len`] (the views, which
/// allocate nothing, check only this).
#[inline]
pub fn check_array_len(n: usize, remaining: usize) -> Result<(), DecodeError> {
    check_count(n, Limit::ArrayLen, LIMITS.with(|l| l.get().max_array_len), remaining)
}

#[doc(hidden)] // generated code calls it; not public API
/// Checks a tagged section's field count against [`DecodeLimits::max_tagged_fields`].
#[inline]
pub fn check_tagged_count(n: usize, remaining: usize) -> Result<(), DecodeError> {
    check_count(n, Limit::TaggedFields, LIMITS.with(|l| l.get().max_tagged_fields), remaining)
}

#[inline]
fn check_count(n: usize, limit: Limit, max: usize, remaining: usize) -> Result<(), DecodeError> {
    if n > max {
        return Err(exceeded(limit, n, max, remaining));
    }
    Ok(())
}

/// Takes `bytes` from the message's allocation budget.
#[inline]
fn charge(bytes: usize, remaining: usize) -> Result<(), DecodeError> {
    ALLOC_LEFT.with(|a| {
        let left = a.get();
        match left.checked_sub(bytes) {
            Some(rest) => {
                a.set(rest);
                Ok(())
            }
            None => Err(over_budget(bytes, remaining)),
        }
    })
}

#[cold]
fn over_budget(bytes: usize, remaining: usize) -> DecodeError {
    let max = LIMITS.with(|l| l.get().max_message_alloc);
    let used = max.saturating_sub(ALLOC_LEFT.with(Cell::get));
    exceeded(Limit::MessageAlloc, used.saturating_add(bytes), max, remaining)
}

#[doc(hidden)] // generated code calls it; not public API
/// Checks a string length against [`DecodeLimits::max_string_len`] (and Kafka's 32767).
#[inline]
pub fn check_string_len(n: usize, remaining: usize) -> Result<(), DecodeError> {
    let max = LIMITS.with(|l| l.get().max_string_len);
    if n > max {
        return Err(string_too_long(n, max, remaining));
    }
    Ok(())
}

#[cold]
fn string_too_long(n: usize, max: usize, remaining: usize) -> DecodeError {
    if n > MAX_STRING_LEN {
        DecodeError::new(DecodeErrorKind::StringTooLong(n), remaining)
    } else {
        exceeded(Limit::StringLen, n, max, remaining)
    }
}

#[doc(hidden)] // generated code calls it; not public API
/// Checks a bytes length against [`DecodeLimits::max_bytes_len`].
#[inline]
pub fn check_bytes_len(n: usize, remaining: usize) -> Result<(), DecodeError> {
    let max = LIMITS.with(|l| l.get().max_bytes_len);
    if n > max {
        return Err(exceeded(Limit::BytesLen, n, max, remaining));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_nest_and_restore() {
        let a = DecodeLimits { max_array_len: 5, ..DecodeLimits::DEFAULT };
        let b = DecodeLimits { max_array_len: 7, ..DecodeLimits::DEFAULT };
        decode_with_limits(&a, || {
            assert_eq!(current().max_array_len, 5);
            b.scope(|| assert_eq!(current().max_array_len, 7));
            assert_eq!(current().max_array_len, 5);
        });
        assert_eq!(current(), DecodeLimits::DEFAULT);
        let caught = std::panic::catch_unwind(|| a.scope(|| panic!("inside")));
        assert!(caught.is_err());
        assert_eq!(current(), DecodeLimits::DEFAULT);
    }

    #[test]
    fn budget_is_per_message_and_charged_before_allocating() {
        let limits = DecodeLimits { max_message_alloc: 100, ..DecodeLimits::DEFAULT };
        limits.scope(|| {
            with_message_budget(|| {
                assert!(charge_array(10, 8, 0).is_ok());
                assert!(charge_array(2, 8, 0).is_ok());
                let err = charge_array(1, 8, 3).unwrap_err();
                assert_eq!(err.kind(), &DecodeErrorKind::LimitExceeded { limit: Limit::MessageAlloc, value: 104, max: 100 });
            });
            // The next message starts with the whole budget.
            with_message_budget(|| assert!(charge_array(12, 8, 0).is_ok()));
        });
    }

    #[test]
    fn budget_restored_when_a_nested_decode_panics() {
        let limits = DecodeLimits { max_message_alloc: 100, ..DecodeLimits::DEFAULT };
        limits.scope(|| {
            with_message_budget(|| {
                assert!(charge_array(5, 8, 0).is_ok());
                let caught = std::panic::catch_unwind(|| {
                    with_message_budget(|| {
                        assert!(charge_array(12, 8, 0).is_ok());
                        panic!("inside a nested message");
                    })
                });
                assert!(caught.is_err());
                // The outer message has 60 bytes left, not the inner one's 4.
                assert!(charge_array(7, 8, 0).is_ok());
                assert!(charge_array(1, 8, 0).is_err());
            });
        });
    }
}
