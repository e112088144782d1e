//! Version conditionals as tokens: a [`Check`] of the plan becomes nothing, one comparison or a
//! range test of `version` (an `i16` in scope).

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use crate::plan::{Check, Compact};

/// A check as code.
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

/// The code of `check`.
pub fn cond(check: Check) -> Cond {
    match check {
        Check::Always => Cond::Always,
        Check::Never => Cond::Never,
        Check::AtMost(hi) => {
            let hi = lit(hi);
            Cond::Expr(quote!(version <= #hi))
        }
        Check::AtLeast(lo) => {
            let lo = lit(lo);
            Cond::Expr(quote!(version >= #lo))
        }
        Check::Exactly(v) => {
            let v = lit(v);
            Cond::Expr(quote!(version == #v))
        }
        Check::Within(lo, hi) => {
            let (lo, hi) = (lit(lo), lit(hi));
            Cond::Expr(quote!((#lo..=#hi).contains(&version)))
        }
    }
}

/// A `bool` expression of `check`.
pub fn bool_expr(check: Check) -> TokenStream {
    match cond(check) {
        Cond::Always => quote!(true),
        Cond::Never => quote!(false),
        Cond::Expr(c) => c,
    }
}

/// The `compact` argument of a length-prefixed value.
pub fn compact(c: Compact) -> TokenStream {
    match c {
        Compact::Const(b) => quote!(#b),
        Compact::Flexible => quote!(flexible),
        Compact::Check(check) => bool_expr(check),
    }
}

/// `if #c { #then }` where the check decides at run time, `then` where it always holds,
/// nothing where it never does.
pub fn guarded(check: Check, then: TokenStream) -> TokenStream {
    match cond(check) {
        Cond::Always => then,
        Cond::Never => TokenStream::new(),
        Cond::Expr(c) => quote!(if #c { #then }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::VersionRange;

    fn show(range: &str, possible: &str) -> String {
        let r = VersionRange::parse(range).unwrap().clamp_hi(20);
        let p = VersionRange::parse(possible).unwrap();
        match cond(Check::new(r, p)) {
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
