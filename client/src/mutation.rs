//! The producer's safety rules a test can switch off, on its own thread only, to show that the
//! deterministic simulation catches the harm (`client/tests/simulation.rs`'s mutation check).
//! Nothing but that check calls [`break_rule`]; the producer only reads the switch when a batch
//! is about to be failed by the rule.

use std::cell::Cell;

thread_local! {
    static RESEND_UNCERTAIN: Cell<bool> = const { Cell::new(false) };
}

/// A safety rule of the producer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rule {
    /// A batch that may have been written is never sent again under new sequence numbers (it
    /// fails with its outcome unknown instead). Broken, it is resent under the new epoch, as
    /// Java's producer resends it.
    KeepUncertainSequences,
}

/// Switches `rule` off (`broken`) or back on, for the producer tasks that run on this thread
/// (a current-thread runtime's).
pub fn break_rule(rule: Rule, broken: bool) {
    match rule {
        Rule::KeepUncertainSequences => RESEND_UNCERTAIN.with(|c| c.set(broken)),
    }
}

/// Whether rule [`Rule::KeepUncertainSequences`] is broken on this thread.
pub(crate) fn resend_uncertain() -> bool {
    RESEND_UNCERTAIN.with(Cell::get)
}
