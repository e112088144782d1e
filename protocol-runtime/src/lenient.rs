//! Lenient decoding, for dissectors that must show what real peers send even where the spec
//! forbids it. Inside [`decode_leniently`], a null where the version allows none reads as an
//! empty string or array, and a known tag at a version below its `taggedVersions` is kept as an
//! unknown tagged field; each such place is recorded as a [`Leniency`] instead of failing. Every
//! other error stays an error, and outside the scope decoding is strict.

use std::cell::RefCell;

/// What was accepted against the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeniencyKind {
    /// A null string where the version's field is not nullable: read as `""`.
    NullString,
    /// A null array where the version's field is not nullable: read as empty.
    NullArray,
    /// A known tag in a version its field does not exist in: kept as an unknown tagged field.
    TagNotValidForVersion {
        /// The tag.
        tag: u32,
    },
    /// Bytes left after a body that should have filled its frame (recorded by the caller).
    TrailingBytes {
        /// How many.
        left: usize,
    },
}

impl std::fmt::Display for LeniencyKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LeniencyKind::NullString => f.write_str("null string in a version where the field is not nullable"),
            LeniencyKind::NullArray => f.write_str("null array in a version where the field is not nullable"),
            LeniencyKind::TagNotValidForVersion { tag } => write!(f, "tag {tag} in a version without its field, kept as unknown"),
            LeniencyKind::TrailingBytes { left } => write!(f, "{left} trailing bytes after the body"),
        }
    }
}

/// One place where a lenient decode accepted what the spec forbids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leniency {
    /// What was accepted.
    pub kind: LeniencyKind,
    /// Bytes of the input left at that place: the offset is the input's length minus this.
    pub remaining: usize,
}

thread_local! {
    static NOTES: RefCell<Option<Vec<Leniency>>> = const { RefCell::new(None) };
}

/// Restores the enclosing scope's state even if decoding unwinds.
struct Scope(Option<Vec<Leniency>>);

impl Drop for Scope {
    fn drop(&mut self) {
        let outer = self.0.take();
        NOTES.with(|n| *n.borrow_mut() = outer);
    }
}

/// Runs `decode` leniently on this thread and returns its result with every place it accepted
/// against the spec, in input order.
pub fn decode_leniently<R>(decode: impl FnOnce() -> R) -> (R, Vec<Leniency>) {
    let scope = Scope(NOTES.with(|n| n.borrow_mut().replace(Vec::new())));
    let r = decode();
    let notes = NOTES.with(|n| n.borrow_mut().take()).unwrap_or_default();
    drop(scope);
    (r, notes)
}

/// In a lenient scope, records `kind` at `remaining` and returns true (the caller accepts the
/// input); outside one, returns false (the caller fails).
#[doc(hidden)]
#[cold]
pub fn tolerate(kind: LeniencyKind, remaining: usize) -> bool {
    NOTES.with(|n| match n.borrow_mut().as_mut() {
        Some(notes) => {
            notes.push(Leniency { kind, remaining });
            true
        }
        None => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_record_and_nest() {
        assert!(!tolerate(LeniencyKind::NullString, 3), "strict outside a scope");
        let ((), outer) = decode_leniently(|| {
            assert!(tolerate(LeniencyKind::NullString, 5));
            let ((), inner) = decode_leniently(|| assert!(tolerate(LeniencyKind::NullArray, 2)));
            assert_eq!(inner, [Leniency { kind: LeniencyKind::NullArray, remaining: 2 }]);
        });
        assert_eq!(outer, [Leniency { kind: LeniencyKind::NullString, remaining: 5 }]);
        assert!(!tolerate(LeniencyKind::NullString, 3), "strict again after the scope");
        let r = std::panic::catch_unwind(|| decode_leniently(|| panic!("boom")));
        assert!(r.is_err());
        assert!(!tolerate(LeniencyKind::NullString, 3), "strict again after a panic");
    }
}
