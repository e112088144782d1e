//! Schema-driven sample values for tests: every generated message can build, at a version, a
//! value with a non-default value in every field present at that version (and a few unknown
//! tagged fields where the version is flexible). Generated impls exist only with the root
//! crate's `sample` feature; this module is the small deterministic generator they use.

use bytes::Bytes;
use bytestring::ByteString;

use crate::message::Message;
use crate::tagged::UnknownTaggedFields;
use crate::uuid::Uuid;

/// Builds a sample value of a generated type at a version.
pub trait Sample {
    /// A value with a non-default value in every field present at `version`.
    fn sample(version: i16, rng: &mut SampleRng) -> Self;
}

/// Visits every generated message type (see the generated `visit_messages`).
pub trait MessageVisitor {
    /// Called once per message type.
    fn visit<M: Message + Sample>(&mut self);
}

/// Visits every generated message type with its borrowed view (see the generated
/// `visit_view_messages`).
pub trait ViewMessageVisitor {
    /// Called once per message type.
    fn visit<M: Message + Sample + crate::view::Viewed>(&mut self);
}

/// Visits every generated message type with its JSON form (see the generated
/// `visit_json_messages`): for tests that need a type's JSON without naming it.
#[cfg(feature = "serde")]
pub trait JsonMessageVisitor {
    /// Called once per message type.
    fn visit<M: Message + Sample + crate::json::VersionedJson>(&mut self);
}

/// A small deterministic generator (SplitMix64), so a failing seed reproduces exactly.
#[derive(Debug, Clone)]
pub struct SampleRng(u64);

macro_rules! int_except {
    ($($name:ident: $ty:ty;)*) => {$(
        /// A random value different from `default`.
        pub fn $name(&mut self, default: $ty) -> $ty {
            let v = self.next_u64() as $ty;
            if v == default { v.wrapping_add(1) } else { v }
        }
    )*};
}

impl SampleRng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        SampleRng(seed)
    }

    /// The next raw value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }

    /// True one time in `n`.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.next_u64().is_multiple_of(n)
    }

    int_except! {
        i8_except: i8;
        i16_except: i16;
        u16_except: u16;
        i32_except: i32;
        i64_except: i64;
    }

    /// A finite float different from `default`.
    pub fn f64_except(&mut self, default: f64) -> f64 {
        let v = (self.next_u64() % 1_000_000) as f64 / 8.0 - 50_000.0;
        if v == default {
            v + 1.0
        } else {
            v
        }
    }

    /// A non-zero UUID.
    pub fn uuid(&mut self) -> Uuid {
        let v = (u128::from(self.next_u64()) << 64 | u128::from(self.next_u64())) | 1;
        Uuid(v.to_be_bytes())
    }

    /// A short string different from `default`.
    pub fn string_except(&mut self, default: &str) -> ByteString {
        let n = self.range(1, 12);
        let mut s: String = (0..n).map(|_| char::from(b'a' + (self.next_u64() % 26) as u8)).collect();
        if s == default {
            s.push('x');
        }
        ByteString::from(s)
    }

    /// A short non-empty byte string.
    pub fn bytes(&mut self) -> Bytes {
        let n = self.range(1, 24);
        Bytes::from((0..n).map(|_| self.next_u64() as u8).collect::<Vec<u8>>())
    }

    /// One to three elements, collected into a `Vec` or a `SmallVec`.
    pub fn vec<T, C: FromIterator<T>>(&mut self, mut elem: impl FnMut(&mut Self) -> T) -> C {
        let n = self.range(1, 3);
        (0..n).map(|_| elem(self)).collect()
    }

    /// Zero to two unknown tagged fields with tags from `first_free` up, in order.
    pub fn unknown_tagged_fields(&mut self, first_free: u32) -> UnknownTaggedFields {
        let mut out = UnknownTaggedFields::default();
        let mut tag = first_free;
        for _ in 0..self.range(0, 2) {
            tag += self.range(0, 200) as u32;
            let n = self.range(0, 5);
            out.push(tag, Bytes::from((0..n).map(|_| self.next_u64() as u8).collect::<Vec<u8>>()));
            tag += 1;
        }
        out
    }
}
