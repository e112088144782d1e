//! Several Kafka releases' spec sets merged into one, so a single build can speak every
//! version any of them defines: versions a newer release removed stay decodable while its new
//! apis and versions are available.
//!
//! Releases are given oldest first. Each version of a message is defined by the newest release
//! that has it; a merged field's version ranges are rebuilt version by version from those
//! definitions. When the result cannot be expressed as Kafka's ranges, or a field's type or tag
//! differs between releases, the merge fails with the field's path instead of guessing.

use std::collections::BTreeMap;

use crate::error::Error;
use crate::spec::{FieldSpec, MessageSpec, StructSpec};
use crate::version::VersionRange;

/// Merges spec sets given oldest release first.
pub fn merge_releases(sets: Vec<Vec<(String, MessageSpec)>>) -> Result<Vec<(String, MessageSpec)>, Error> {
    let mut sets = sets.into_iter();
    let mut merged = sets.next().unwrap_or_default();
    for newer in sets {
        merged = merge_two(merged, newer)?;
    }
    Ok(merged)
}

/// What makes two releases' specs the same message: the api key and direction for requests and
/// responses, so an api renamed between releases (Kafka 4.1 renamed api 74
/// ListClientMetricsResources to ListConfigResources) merges under the newer name; the name
/// for headers and data messages.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Identity {
    Api(i16, String),
    Named(String),
}

fn identity(spec: &MessageSpec) -> Identity {
    match spec.api_key {
        Some(key) => Identity::Api(key, spec.kind.clone()),
        None => Identity::Named(spec.name.clone()),
    }
}

/// Api keys whose request marks its newest version unstable. Only requests say it, and the
/// response of that version is just as unstable (Kafka's `ApiKeys` reads it off the request).
fn unstable_apis(set: &[(String, MessageSpec)]) -> BTreeMap<i16, bool> {
    set.iter().filter(|(_, s)| s.kind == "request").filter_map(|(_, s)| Some((s.api_key?, s.latest_version_unstable.unwrap_or(false)))).collect()
}

fn merge_two(older: Vec<(String, MessageSpec)>, newer: Vec<(String, MessageSpec)>) -> Result<Vec<(String, MessageSpec)>, Error> {
    let old_unstable = unstable_apis(&older);
    let mut by_name: BTreeMap<Identity, (String, MessageSpec)> = older.into_iter().map(|(file, spec)| (identity(&spec), (file, spec))).collect();
    for (file, new) in newer {
        let merged = match by_name.remove(&identity(&new)) {
            Some((_, old)) => {
                let unstable = old.api_key.and_then(|k| old_unstable.get(&k).copied()).unwrap_or(false);
                merge_message(&file, &old, &new, unstable)?
            }
            None => new,
        };
        by_name.insert(identity(&merged), (file, merged));
    }
    let mut out: Vec<_> = by_name.into_values().collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Which release defines each version.
struct Sources {
    old: VersionRange,
    new: VersionRange,
    merged: VersionRange,
    /// The older release's newest version when it was marked unstable: no compatibility was
    /// promised for it, so the newer release's definition replaces it without a conflict.
    old_unstable: Option<i16>,
}

impl Sources {
    fn is_new(&self, v: i16) -> bool {
        self.new.contains(v)
    }

    /// Versions both releases define with a compatibility promise: they must agree there.
    fn shared(&self) -> impl Iterator<Item = i16> + '_ {
        self.old.intersect(&self.new).iter().filter(move |v| Some(*v) != self.old_unstable)
    }
}

fn range(file: &str, path: &str, text: Option<&str>) -> Result<VersionRange, Error> {
    match text {
        None => Ok(VersionRange::NONE),
        Some(t) => VersionRange::parse(t).ok_or_else(|| Error::invalid(file, path, format!("invalid version range \"{t}\""))),
    }
}

/// The one range that holds exactly the versions where `holds(v)` is true, among the versions
/// where `cares(v)`; `None` when no single range does.
fn exact_range(all: VersionRange, cares: impl Fn(i16) -> bool, holds: impl Fn(i16) -> bool) -> Option<VersionRange> {
    let mut hull = VersionRange::NONE;
    for v in all.iter() {
        if cares(v) && holds(v) {
            hull = hull.hull(&VersionRange::new(v, v));
        }
    }
    let exact = all.iter().all(|v| !cares(v) || holds(v) == hull.contains(v));
    exact.then_some(hull)
}

fn text(r: VersionRange, max: i16) -> String {
    if r.is_empty() {
        "none".into()
    } else if r.hi == max {
        format!("{}+", r.lo)
    } else {
        format!("{}-{}", r.lo, r.hi)
    }
}

/// One release's version ranges of a field (all empty where it lacks the field).
#[derive(Clone, Copy)]
struct Ranges {
    /// `versions` (a tagged-only field's `taggedVersions`).
    versions: VersionRange,
    nullable: VersionRange,
    tagged: VersionRange,
    /// The field's own `flexibleVersions`.
    flexible: VersionRange,
}

impl Ranges {
    const NONE: Ranges = Ranges { versions: VersionRange::NONE, nullable: VersionRange::NONE, tagged: VersionRange::NONE, flexible: VersionRange::NONE };
}

/// `old_unstable`: the older release's newest version of this api (request and response) is
/// unstable.
fn merge_message(file: &str, old: &MessageSpec, new: &MessageSpec, old_unstable: bool) -> Result<MessageSpec, Error> {
    let conflict = |msg: String| Error::invalid(file, "", format!("cannot merge releases: {msg}"));
    if old.kind != new.kind || old.api_key != new.api_key {
        return Err(conflict(format!("type or api key differs ({} {:?} vs {} {:?})", old.kind, old.api_key, new.kind, new.api_key)));
    }
    let old_valid = range(file, "", Some(&old.valid_versions))?;
    let new_valid = range(file, "", Some(&new.valid_versions))?;
    if new_valid.is_empty() {
        return Ok(old.clone());
    }
    if old_valid.is_empty() {
        return Ok(new.clone());
    }
    let merged = old_valid.hull(&new_valid);
    if let Some(v) = merged.iter().find(|v| !old_valid.contains(*v) && !new_valid.contains(*v)) {
        return Err(conflict(format!("version {v} is in neither release")));
    }
    let old_unstable = old_unstable.then_some(old_valid.hi);
    let src = Sources { old: old_valid, new: new_valid, merged, old_unstable };
    let max = merged.hi;

    let flexible_of = |s: &MessageSpec| range(file, "", s.flexible_versions.as_deref());
    let (old_flex, new_flex) = (flexible_of(old)?, flexible_of(new)?);
    let flexible = exact_range(merged, |_| true, |v| if src.is_new(v) { new_flex.contains(v) } else { old_flex.contains(v) })
        .ok_or_else(|| conflict("flexible versions cannot be combined".into()))?;
    let (old_dep, new_dep) = (range(file, "", old.deprecated_versions.as_deref())?, range(file, "", new.deprecated_versions.as_deref())?);
    let deprecated = exact_range(merged, |_| true, |v| if src.is_new(v) { new_dep.contains(v) } else { old_dep.contains(v) }).unwrap_or(new_dep);
    let mut listeners = new.listeners.clone();
    if let (Some(l), Some(old_l)) = (listeners.as_mut(), &old.listeners) {
        for x in old_l {
            if !l.contains(x) {
                l.push(x.clone());
            }
        }
    }
    let fields = merge_fields(file, "", &old.fields, &new.fields, &src, max, &|_| true)?;
    let mut common_structs = Vec::new();
    for s in &new.common_structs {
        let o = old.common_structs.iter().find(|o| o.name == s.name);
        // A common struct only the newer release has (one moved out of a field) is not compared.
        let both = |_| o.is_some();
        let fields = merge_fields(file, &s.name, o.map_or(&[][..], |o| &o.fields), &s.fields, &src, max, &both)?;
        common_structs.push(StructSpec { fields, ..s.clone() });
    }
    for o in &old.common_structs {
        if !new.common_structs.iter().any(|s| s.name == o.name) {
            let fields = merge_fields(file, &o.name, &o.fields, &[], &src, max, &|_| false)?;
            common_structs.push(StructSpec { fields, ..o.clone() });
        }
    }
    Ok(MessageSpec {
        valid_versions: format!("{}-{}", merged.lo, merged.hi),
        flexible_versions: Some(text(flexible, max)),
        deprecated_versions: (!deprecated.is_empty()).then(|| text(deprecated, max)),
        header_versions: new.header_versions.clone().or_else(|| old.header_versions.clone()),
        latest_version_unstable: if merged.hi == new_valid.hi { new.latest_version_unstable } else { old.latest_version_unstable },
        listeners,
        fields,
        common_structs,
        ..new.clone()
    })
}

/// Merges two releases' field lists: the newer release's order, with fields only the older
/// release has placed after the field that precedes them there.
fn merge_fields(
    file: &str,
    path: &str,
    old: &[FieldSpec],
    new: &[FieldSpec],
    src: &Sources,
    max: i16,
    both: &dyn Fn(i16) -> bool,
) -> Result<Vec<FieldSpec>, Error> {
    // A field renamed between releases (Kafka 4 renamed VoteRequest's CandidateEpoch to
    // ReplicaEpoch, Kafka 2.5 FetchRequest's MaxWait to MaxWaitMs) is the same wire field: pair
    // an old-only field with a new-only one of the same type and tag, present in the same shared
    // versions (Kafka 3.5 bounded AddPartitionsToTxn's TransactionalId to 0-3 as
    // V3AndBelowTransactionalId), that sits at the same wire position (among the untagged fields
    // present) at the first version both define.
    let in_new = |name: &str| new.iter().any(|f| f.name == name);
    let in_old = |name: &str| old.iter().any(|f| f.name == name);
    let parse = |t: Option<&String>| t.and_then(|t| VersionRange::parse(t)).unwrap_or(VersionRange::NONE);
    let on_wire =
        |f: &FieldSpec, v: i16| parse(f.versions.as_ref().or(f.tagged_versions.as_ref())).contains(v) && !parse(f.tagged_versions.as_ref()).contains(v);
    let slot = |fields: &[FieldSpec], i: usize, v: i16| -> Option<usize> {
        let before = fields.get(..i)?;
        on_wire(fields.get(i)?, v).then(|| before.iter().filter(|b| on_wire(b, v)).count())
    };
    let renamed_to = |i: usize, o: &FieldSpec| {
        let ov = parse(o.versions.as_ref().or(o.tagged_versions.as_ref()));
        let v = src.shared().find(|v| ov.contains(*v))?;
        new.iter().enumerate().find_map(|(j, n)| {
            let nv = parse(n.versions.as_ref().or(n.tagged_versions.as_ref()));
            let same_versions = src.shared().all(|v| ov.contains(v) == nv.contains(v));
            let same = !in_old(&n.name) && same_type(&n.ty, &o.ty) && same_versions && n.tag == o.tag;
            let placed = o.tagged_versions.is_some() || slot(new, j, v).is_some_and(|s| Some(s) == slot(old, i, v));
            (same && placed).then_some(n)
        })
    };
    let mut order: Vec<&str> = new.iter().map(|f| f.name.as_str()).collect();
    for (i, f) in old.iter().enumerate() {
        if in_new(&f.name) || renamed_to(i, f).is_some() {
            continue;
        }
        let after = old.get(..i).and_then(|before| before.iter().rev().find_map(|p| order.iter().position(|n| *n == p.name)));
        let at = after.map_or(0, |p| p + 1);
        order.insert(at, &f.name);
    }
    order
        .iter()
        .map(|name| {
            let n = new.iter().find(|f| f.name == *name);
            let o = old
                .iter()
                .find(|f| f.name == *name)
                .or_else(|| old.iter().enumerate().find(|(i, o)| !in_new(&o.name) && renamed_to(*i, o).is_some_and(|n| n.name == *name)).map(|(_, o)| o));
            let fpath = if path.is_empty() { name.to_string() } else { format!("{path}.{name}") };
            merge_field(file, &fpath, o, n, src, max, both)
        })
        .collect()
}

fn merge_field(
    file: &str,
    path: &str,
    old: Option<&FieldSpec>,
    new: Option<&FieldSpec>,
    src: &Sources,
    max: i16,
    both: &dyn Fn(i16) -> bool,
) -> Result<FieldSpec, Error> {
    let conflict = |msg: String| Error::invalid(file, path, format!("cannot merge releases: {msg}"));
    let ranges = |f: Option<&FieldSpec>| -> Result<Ranges, Error> {
        let Some(f) = f else { return Ok(Ranges::NONE) };
        Ok(Ranges {
            versions: range(file, path, f.versions.as_deref().or(f.tagged_versions.as_deref()))?,
            nullable: range(file, path, f.nullable_versions.as_deref())?,
            tagged: range(file, path, f.tagged_versions.as_deref())?,
            flexible: range(file, path, f.flexible_versions.as_deref())?,
        })
    };
    let (o, n) = (ranges(old)?, ranges(new)?);
    let shared = |v: i16| src.shared().any(|s| s == v);
    let tagged_at = |r: &Ranges, v: i16| r.versions.contains(v) && r.tagged.contains(v);
    // The release whose definition holds at `v`: the newest that defines the version, or the
    // other one where only it has the field there as a tagged field (tagged fields join existing
    // versions without a version bump: Kafka 2.7 added ApiVersionsResponse v3's SupportedFeatures).
    let side = |v: i16| -> Option<&Ranges> {
        if src.is_new(v) {
            if n.versions.contains(v) {
                Some(&n)
            } else {
                (shared(v) && tagged_at(&o, v)).then_some(&o)
            }
        } else {
            (o.versions.contains(v) && src.old.contains(v)).then_some(&o)
        }
    };
    let present = |v: i16| side(v).is_some();
    // The static shape of a field must agree wherever both releases define it.
    let (Some(base), other) = (match (new, old) {
        (Some(n), o) => (Some(n), o),
        (None, o) => (o, None),
    }) else {
        return Err(conflict("field is in neither release".into()));
    };
    // Where both releases define a version, they must agree on the field's layout there.
    let old_present = |v: i16| o.versions.contains(v);
    let new_present = |v: i16| n.versions.contains(v);
    for v in src.shared().filter(|v| both(*v)) {
        if old_present(v) != new_present(v) {
            if tagged_at(if old_present(v) { &o } else { &n }, v) {
                continue;
            }
            return Err(conflict(format!("present at v{v} in one release only")));
        }
        if !old_present(v) {
            continue;
        }
        if let Some(other) = other {
            if !same_type(&other.ty, &base.ty) || other.tag_number() != base.tag_number() {
                return Err(conflict(format!("type/tag differ: {} {:?} vs {} {:?}", other.ty, other.tag, base.ty, base.tag)));
            }
        }
        // Nullability may widen (see `nullable` below); the rest must match. A field's own
        // flexibleVersions count only where both releases give them.
        if o.tagged.contains(v) != n.tagged.contains(v) {
            return Err(conflict(format!("taggedVersions differ at v{v}")));
        }
        let both_flexible = old.is_some_and(|f| f.flexible_versions.is_some()) && new.is_some_and(|f| f.flexible_versions.is_some());
        if both_flexible && o.flexible.contains(v) != n.flexible.contains(v) {
            return Err(conflict(format!("flexibleVersions differ at v{v}")));
        }
    }
    let prop = |of: fn(&Ranges) -> VersionRange, what: &str| -> Result<VersionRange, Error> {
        exact_range(src.merged, present, |v| side(v).is_some_and(|r| of(r).contains(v)))
            .ok_or_else(|| conflict(format!("{what} cannot be expressed as one range across releases")))
    };
    let versions = exact_range(src.merged, |_| true, present).ok_or_else(|| conflict("versions cannot be expressed as one range across releases".into()))?;
    // Where releases disagree on nullability at a shared version (Kafka 4 made FetchResponse
    // records non-nullable), the merged field is nullable: it reads what either release
    // writes, and non-null values encode the same in both.
    let nullable = exact_range(src.merged, present, |v| match side(v) {
        Some(_) if shared(v) && o.versions.contains(v) && n.versions.contains(v) => o.nullable.contains(v) || n.nullable.contains(v),
        Some(r) => r.nullable.contains(v),
        None => false,
    })
    .ok_or_else(|| conflict("nullableVersions cannot be expressed as one range across releases".into()))?;
    let tagged = prop(|r| r.tagged, "taggedVersions")?;
    let flexible = if base.flexible_versions.is_some() || other.is_some_and(|o| o.flexible_versions.is_some()) {
        Some(text(prop(|r| r.flexible, "flexibleVersions")?, max))
    } else {
        None
    };
    let fields = match (old.and_then(|f| f.fields.as_ref()), new.and_then(|f| f.fields.as_ref())) {
        (None, None) => None,
        // The newer release moved an inline struct into `commonStructs` (Kafka 3.5's
        // AddPartitionsToTxnTopic): its common struct, merged with the spec's others, holds it.
        (Some(_), None) if new.is_some() => None,
        (o, n) => {
            // Inside a struct field, the releases can only disagree where both have the field.
            let inner = |v: i16| both(v) && old_present(v) && new_present(v);
            Some(merge_fields(file, path, o.map_or(&[][..], |v| v), n.map_or(&[][..], |v| v), src, max, &inner)?)
        }
    };
    // Ignorable if either release says so: a release that dropped the versions lacking the field
    // (Kafka 4's RequestHeader v0 has no ClientId) no longer needs to say it.
    let ignorable = (base.ignorable == Some(true) || other.is_some_and(|o| o.ignorable == Some(true))).then_some(true);
    Ok(FieldSpec {
        ignorable: ignorable.or(base.ignorable),
        versions: Some(text(versions, max)),
        nullable_versions: (!nullable.is_empty()).then(|| text(nullable, max)),
        tagged_versions: (!tagged.is_empty()).then(|| text(tagged, max)),
        flexible_versions: flexible,
        fields,
        ..base.clone()
    })
}

/// Whether two releases' field types are the same wire type. Struct names are not on the wire
/// and releases rename them (`[]ClientMetricsResource` became `[]ConfigResource`): two struct
/// types (or arrays of them) match, and their fields are merged and checked one by one. `bytes`
/// and `records` are both a length-prefixed byte string (Kafka 2.4's FetchResponse records were
/// `bytes`); the newer release's type is kept.
fn same_type(a: &str, b: &str) -> bool {
    let is_struct = |t: &str| t.trim_start_matches("[]").starts_with(|c: char| c.is_ascii_uppercase());
    let arrays = |t: &str| t.starts_with("[]");
    let byte_string = |t: &str| t == "bytes" || t == "records";
    a == b || (is_struct(a) && is_struct(b) && arrays(a) == arrays(b)) || (byte_string(a) && byte_string(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_range_handles_dont_care_versions() {
        let all = VersionRange::new(0, 9);
        // Holds on 2..=5, don't care outside 1..=6.
        let r = exact_range(all, |v| (1..=6).contains(&v), |v| (2..=5).contains(&v));
        assert_eq!(r, Some(VersionRange::new(2, 5)));
        // A gap cannot be one range.
        assert_eq!(exact_range(all, |_| true, |v| v == 1 || v == 3), None);
        assert_eq!(text(VersionRange::new(3, 9), 9), "3+");
        assert_eq!(text(VersionRange::new(3, 5), 9), "3-5");
    }
}
