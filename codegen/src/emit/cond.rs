//! Version conditionals, in the manner of Kafka's `VersionConditional`: given the versions a
//! property holds in and the versions still possible at this point of the generated code, emit
//! nothing, one comparison, or a range check.

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use crate::version::VersionRange;

/// The outcome of testing `version` against a range where only `possible` versions can occur.
pub enum Cond {
    /// True for every possible version.
    Always,
    /// False for every possible version.
    Never,
    /// Depends on the version: this boolean expression decides.
    Expr(TokenStream),
}

fn lit(v: i16) -> Literal {
    Literal::i16_unsuffixed(v)
}

/// Tests `version` (an `i16` in scope) for membership of `range`, knowing it lies in `possible`.
pub fn cond(range: VersionRange, possible: VersionRange) -> Cond {
    let r = range.intersect(&possible);
    if r.is_empty() {
        return Cond::Never;
    }
    let lo_ok = r.lo <= possible.lo;
    let hi_ok = r.hi >= possible.hi;
    let (lo, hi) = (lit(r.lo), lit(r.hi));
    match (lo_ok, hi_ok) {
        (true, true) => Cond::Always,
        (true, false) => Cond::Expr(quote!(version <= #hi)),
        (false, true) => Cond::Expr(quote!(version >= #lo)),
        (false, false) if r.lo == r.hi => Cond::Expr(quote!(version == #lo)),
        (false, false) => Cond::Expr(quote!((#lo..=#hi).contains(&version))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(range: &str, possible: &str) -> String {
        let r = VersionRange::parse(range).unwrap().clamp_hi(20);
        let p = VersionRange::parse(possible).unwrap();
        match cond(r, p) {
            Cond::Always => "always".into(),
            Cond::Never => "never".into(),
            Cond::Expr(t) => t.to_string(),
        }
    }

    #[test]
    fn table() {
        assert_eq!(show("0+", "0-12"), "always");
        assert_eq!(show("3+", "0-12"), "version >= 3");
        assert_eq!(show("0-4", "0-12"), "version <= 4");
        assert_eq!(show("3-4", "0-12"), "(3 ..= 4) . contains (& version)");
        assert_eq!(show("5", "0-12"), "version == 5");
        assert_eq!(show("3+", "5-12"), "always");
        assert_eq!(show("13+", "0-12"), "never");
        assert_eq!(show("none", "0-12"), "never");
    }
}
