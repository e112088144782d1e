//! Version ranges as the specs write them (`"3+"`, `"0-7"`, `"2"`, `"none"`).

use std::fmt;

/// A closed range `lo..=hi`; empty when `lo > hi`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct VersionRange {
    /// Lowest version.
    pub lo: i16,
    /// Highest version (`i16::MAX` for an open-ended `N+` before clamping).
    pub hi: i16,
}

impl VersionRange {
    /// The empty range.
    pub const NONE: VersionRange = VersionRange { lo: 0, hi: -1 };

    /// `lo..=hi`.
    pub const fn new(lo: i16, hi: i16) -> Self {
        VersionRange { lo, hi }
    }

    /// Parses Kafka's notation. Returns `None` for text that is not a version range.
    pub fn parse(text: &str) -> Option<Self> {
        let t = text.trim();
        if t == "none" {
            return Some(Self::NONE);
        }
        if let Some(lo) = t.strip_suffix('+') {
            let lo: i16 = lo.trim().parse().ok()?;
            return (lo >= 0).then_some(VersionRange { lo, hi: i16::MAX });
        }
        if let Some((lo, hi)) = t.split_once('-') {
            let lo: i16 = lo.trim().parse().ok()?;
            let hi: i16 = hi.trim().parse().ok()?;
            return (lo >= 0 && lo <= hi).then_some(VersionRange { lo, hi });
        }
        let v: i16 = t.parse().ok()?;
        (v >= 0).then_some(VersionRange { lo: v, hi: v })
    }

    /// True when empty.
    pub const fn is_empty(&self) -> bool {
        self.lo > self.hi
    }

    /// True when `hi` is open-ended (`N+`).
    pub const fn is_open_ended(&self) -> bool {
        self.hi == i16::MAX
    }

    /// True when `v` is inside.
    pub const fn contains(&self, v: i16) -> bool {
        self.lo <= v && v <= self.hi
    }

    /// True when every version of `other` is inside `self` (the empty range is inside all).
    pub const fn contains_range(&self, other: &VersionRange) -> bool {
        other.is_empty() || (self.lo <= other.lo && other.hi <= self.hi)
    }

    /// Versions in both.
    pub fn intersect(&self, other: &VersionRange) -> VersionRange {
        let r = VersionRange { lo: self.lo.max(other.lo), hi: self.hi.min(other.hi) };
        if r.is_empty() {
            Self::NONE
        } else {
            r
        }
    }

    /// Versions in `self` but not in `other`, when that is one range; when `other` splits `self`
    /// in two, the hull (`self`) is returned, which is always safe for narrowing.
    pub fn subtract(&self, other: &VersionRange) -> VersionRange {
        let o = self.intersect(other);
        if o.is_empty() {
            *self
        } else if o == *self {
            Self::NONE
        } else if o.lo == self.lo {
            VersionRange { lo: o.hi + 1, hi: self.hi }
        } else if o.hi == self.hi {
            VersionRange { lo: self.lo, hi: o.lo - 1 }
        } else {
            *self
        }
    }

    /// The smallest range holding both.
    pub fn hull(&self, other: &VersionRange) -> VersionRange {
        if self.is_empty() {
            *other
        } else if other.is_empty() {
            *self
        } else {
            VersionRange { lo: self.lo.min(other.lo), hi: self.hi.max(other.hi) }
        }
    }

    /// The versions in the range, lowest first (none when empty).
    pub fn iter(&self) -> std::ops::RangeInclusive<i16> {
        self.lo..=self.hi
    }

    /// Clamps an open end to `max`.
    pub fn clamp_hi(&self, max: i16) -> VersionRange {
        VersionRange { lo: self.lo, hi: self.hi.min(max) }.normalized()
    }

    fn normalized(self) -> Self {
        if self.is_empty() {
            Self::NONE
        } else {
            self
        }
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
        } else if self.hi == i16::MAX {
            write!(f, "{}+", self.lo)
        } else if self.lo == self.hi {
            write!(f, "{}", self.lo)
        } else {
            write!(f, "{}-{}", self.lo, self.hi)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> VersionRange {
        VersionRange::parse(s).unwrap()
    }

    #[test]
    fn parses_kafka_notation() {
        assert_eq!(r("3+"), VersionRange::new(3, i16::MAX));
        assert_eq!(r("0-7"), VersionRange::new(0, 7));
        assert_eq!(r("2"), VersionRange::new(2, 2));
        assert!(r("none").is_empty());
        for bad in ["", "x", "-1", "5-3", "1+2", "3 +x"] {
            assert_eq!(VersionRange::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn set_operations() {
        let table = [
            ("0-10", "3+", "3-10", "0-2"),
            ("0-10", "0-4", "0-4", "5-10"),
            ("0-10", "3-4", "3-4", "0-10"),
            ("0-10", "11+", "none", "0-10"),
            ("2-5", "0+", "2-5", "none"),
        ];
        for (a, b, inter, sub) in table {
            assert_eq!(r(a).intersect(&r(b)), r(inter), "{a} & {b}");
            assert_eq!(r(a).subtract(&r(b)), r(sub), "{a} - {b}");
        }
        assert_eq!(r("3+").clamp_hi(9), r("3-9"));
        assert!(r("10+").clamp_hi(9).is_empty());
        assert!(r("0-9").contains_range(&r("none")));
        assert_eq!(r("1-2").hull(&r("5-6")), r("1-6"));
    }
}
