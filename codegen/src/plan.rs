//! The per-field plan: every version check a field's code needs, resolved once when lowering
//! (after each struct's reachable versions are known), so the decode, encode, size, sample and
//! JSON emitters read the same decisions instead of recomputing them.
//!
//! A [`Check`] is Kafka's `VersionConditional` outcome: given the versions a property holds in
//! and the versions still possible at that point of the generated code, nothing to test, one
//! comparison, or a range test. Each nested decision (present -> tagged -> nullable -> compact)
//! is taken within the range the outer one leaves, so checks already implied are not emitted.

use crate::model::{Field, Struct};
use crate::version::VersionRange;

/// Whether `version` (known to lie in the possible versions) is in a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// For every possible version.
    Always,
    /// For no possible version.
    Never,
    /// `version <= hi`.
    AtMost(i16),
    /// `version >= lo`.
    AtLeast(i16),
    /// `version == v`.
    Exactly(i16),
    /// `(lo..=hi).contains(&version)`.
    Within(i16, i16),
}

impl Check {
    /// Tests membership of `range`, knowing the version lies in `possible`.
    pub fn new(range: VersionRange, possible: VersionRange) -> Check {
        let r = range.intersect(&possible);
        if r.is_empty() {
            return Check::Never;
        }
        match (r.lo <= possible.lo, r.hi >= possible.hi) {
            (true, true) => Check::Always,
            (true, false) => Check::AtMost(r.hi),
            (false, true) => Check::AtLeast(r.lo),
            (false, false) if r.lo == r.hi => Check::Exactly(r.lo),
            (false, false) => Check::Within(r.lo, r.hi),
        }
    }
}

/// Whether a length prefix is compact, within the versions of one branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compact {
    /// A constant (`true` / `false`).
    Const(bool),
    /// Compact exactly where the struct is flexible: the body's `flexible` local.
    Flexible,
    /// Compact where this check holds (a field overriding `flexibleVersions`).
    Check(Check),
}

/// How a field's value is coded within one branch (in place, or as a tagged field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    /// A field whose Rust type is not an `Option`.
    Plain(Compact),
    /// An `Option` field that is nullable in every version of the branch.
    Nullable(Compact),
    /// An `Option` field that is not nullable in any version of the branch (`None` is an error).
    NotNull(Compact),
    /// An `Option` field nullable where `check` holds.
    Split {
        /// Nullable versions.
        check: Check,
        /// Compactness where nullable.
        nullable: Compact,
        /// Compactness where not.
        not_null: Compact,
    },
}

/// The tagged side of a field whose struct can reach one of its tagged versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tagged {
    /// The tag.
    pub tag: u32,
    /// Tagged versions, within the struct's flexible versions (where tagged sections exist).
    pub check: Check,
    /// The value, within the tagged flexible versions.
    pub value: Value,
}

/// Every decision the emitters take for one field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldPlan {
    /// The field exists (within the struct's reachable versions).
    pub present: Check,
    /// Nullable, within the present versions (JSON and samples).
    pub present_nullable: Check,
    /// Tagged, within the present versions (JSON writes tagged fields only when not default).
    pub present_tagged: Check,
    /// Written in place (within the reachable versions).
    pub regular: Check,
    /// Tagged, within the reachable versions: where it is not regular, the field exists only
    /// where this holds (a non-default value elsewhere is an encode error).
    pub tagged_in_reach: Check,
    /// The value where it is written in place.
    pub regular_value: Value,
    /// The tagged side, if reachable.
    pub tagged: Option<Tagged>,
}

impl Default for FieldPlan {
    fn default() -> Self {
        let never = Value::Plain(Compact::Const(false));
        FieldPlan {
            present: Check::Never,
            present_nullable: Check::Never,
            present_tagged: Check::Never,
            regular: Check::Never,
            tagged_in_reach: Check::Never,
            regular_value: never,
            tagged: None,
        }
    }
}

impl Default for StructPlan {
    fn default() -> Self {
        StructPlan { flexible: Check::Never, tagged: Vec::new() }
    }
}

/// Decisions for a whole struct.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StructPlan {
    /// Flexible, within the reachable versions (the `flexible` local, the tagged section);
    /// `Never` when the struct has no tagged section.
    pub flexible: Check,
    /// Indices of the fields with a reachable tagged side, by tag.
    pub tagged: Vec<usize>,
}

impl Check {
    /// As a constant, when the check decides nothing at run time.
    pub fn constant(self) -> Option<bool> {
        match self {
            Check::Always => Some(true),
            Check::Never => Some(false),
            Check::AtMost(_) | Check::AtLeast(_) | Check::Exactly(_) | Check::Within(..) => None,
        }
    }
}

/// Fills in the plans of a struct's fields and of the struct (its `reach` and `flexible` known).
pub fn plan_struct(s: &mut Struct) {
    let (reach, flexible) = (s.reach, s.flexible);
    for f in &mut s.fields {
        f.plan = plan_field(f, reach, flexible);
    }
    let mut tagged: Vec<usize> = (0..s.fields.len()).filter(|&i| s.fields.get(i).is_some_and(|f| f.plan.tagged.is_some())).collect();
    tagged.sort_by_key(|&i| s.fields.get(i).and_then(|f| f.tag));
    s.plan = StructPlan { flexible: Check::new(flexible, reach), tagged };
}

fn plan_field(f: &Field, reach: VersionRange, flexible: VersionRange) -> FieldPlan {
    let present = f.versions.intersect(&reach);
    let tagged = (f.tag.is_some() && !f.tagged.intersect(&reach).is_empty()).then(|| {
        let within = f.tagged.intersect(&flexible);
        Tagged { tag: f.tag.unwrap_or_default(), check: Check::new(f.tagged, flexible), value: value(f, within, reach, flexible) }
    });
    FieldPlan {
        present: Check::new(f.versions, reach),
        present_nullable: Check::new(f.nullable, present),
        present_tagged: Check::new(f.tagged, present),
        regular: Check::new(f.regular, reach),
        tagged_in_reach: Check::new(f.tagged, reach),
        regular_value: value(f, f.regular.intersect(&reach), reach, flexible),
        tagged,
    }
}

fn value(f: &Field, p: VersionRange, reach: VersionRange, flexible: VersionRange) -> Value {
    if !f.is_option() {
        return Value::Plain(compact(f, p, reach, flexible));
    }
    match Check::new(f.nullable, p) {
        Check::Always => Value::Nullable(compact(f, p, reach, flexible)),
        Check::Never => Value::NotNull(compact(f, p, reach, flexible)),
        check => Value::Split {
            check,
            nullable: compact(f, p.intersect(&f.nullable), reach, flexible),
            not_null: compact(f, p.subtract(&f.nullable), reach, flexible),
        },
    }
}

/// Within `p`, compact versions equal the struct's flexible versions unless the field overrides
/// them (RequestHeader.ClientId).
fn compact(f: &Field, p: VersionRange, reach: VersionRange, flexible: VersionRange) -> Compact {
    match Check::new(f.compact, p) {
        Check::Always => Compact::Const(true),
        Check::Never => Compact::Const(false),
        _ if f.compact.intersect(&reach) == flexible => Compact::Flexible,
        check => Compact::Check(check),
    }
}
