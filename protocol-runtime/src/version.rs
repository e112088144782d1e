//! Closed version ranges, as used for valid, flexible, nullable and tagged versions.

use std::fmt;

/// A closed range of versions `lo..=hi`; empty when `lo > hi` (Kafka's `"none"`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct VersionRange {
    /// Lowest version in the range.
    pub lo: i16,
    /// Highest version in the range.
    pub hi: i16,
}

impl VersionRange {
    /// The empty range.
    pub const NONE: VersionRange = VersionRange { lo: 0, hi: -1 };

    /// `lo..=hi`.
    pub const fn new(lo: i16, hi: i16) -> Self {
        VersionRange { lo, hi }
    }

    /// True when the range holds no version.
    pub const fn is_empty(&self) -> bool {
        self.lo > self.hi
    }

    /// True when `v` is in the range.
    #[inline]
    pub const fn contains(&self, v: i16) -> bool {
        self.lo <= v && v <= self.hi
    }

    /// The versions in both ranges.
    pub const fn intersect(&self, other: &VersionRange) -> VersionRange {
        let lo = if self.lo > other.lo { self.lo } else { other.lo };
        let hi = if self.hi < other.hi { self.hi } else { other.hi };
        if lo > hi {
            VersionRange::NONE
        } else {
            VersionRange { lo, hi }
        }
    }

    /// Iterates over the versions in the range.
    pub fn iter(&self) -> impl Iterator<Item = i16> {
        self.lo..=self.hi
    }
}

impl fmt::Debug for VersionRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for VersionRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            f.write_str("none")
        } else if self.lo == self.hi {
            write!(f, "{}", self.lo)
        } else {
            write!(f, "{}-{}", self.lo, self.hi)
        }
    }
}
