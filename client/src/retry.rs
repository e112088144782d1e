//! The one retry and backoff policy: [`Backoff`] says how long to wait before an attempt,
//! [`Retry`] counts attempts and waits between them. Every retry loop of the client is one
//! `while retry.next().await` over one of these, never a loop inside another's attempt.

use std::time::Duration;

use crate::random::Random;

/// Waits between attempts: `initial`, doubling per attempt up to `max`, with ±20% jitter
/// (Java's `ExponentialBackoff` as `retry.backoff.ms` / `retry.backoff.max.ms` use it), or
/// exactly `initial` every time when constant.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    initial: Duration,
    max: Duration,
    jitter: Option<Random>,
}

impl Backoff {
    /// Exponential from `initial` to `max`, jittered by `random`.
    pub(crate) fn exponential(initial: Duration, max: Duration, random: Random) -> Backoff {
        Backoff { initial, max, jitter: Some(random) }
    }

    /// `every` before each attempt after the first.
    pub(crate) fn constant(every: Duration) -> Backoff {
        Backoff { initial: every, max: every, jitter: None }
    }

    /// The wait after `failures` failed attempts (1 for the first retry).
    pub(crate) fn delay(&self, failures: u32) -> Duration {
        let d = self.unjittered(failures);
        match &self.jitter {
            Some(random) => d.mul_f64(0.8 + 0.4 * random.unit()),
            None => d,
        }
    }

    /// The least [`delay`](Backoff::delay) can be after `failures` failed attempts: the
    /// jitter's floor.
    pub(crate) fn floor(&self, failures: u32) -> Duration {
        let d = self.unjittered(failures);
        if self.jitter.is_some() {
            d.mul_f64(0.8)
        } else {
            d
        }
    }

    fn unjittered(&self, failures: u32) -> Duration {
        self.initial.saturating_mul(1u32 << failures.min(16).saturating_sub(1)).min(self.max)
    }
}

/// A bounded run of attempts: [`next`](Retry::next) before each one, which waits the backoff
/// before every attempt but the first and says when none is left.
#[derive(Debug, Clone)]
pub(crate) struct Retry {
    backoff: Backoff,
    max_attempts: u32,
    attempts: u32,
    /// The next attempt goes without waiting.
    now: bool,
}

impl Retry {
    /// At most `max_attempts` attempts with `backoff` between them.
    pub(crate) fn new(backoff: Backoff, max_attempts: u32) -> Retry {
        Retry { backoff, max_attempts, attempts: 0, now: false }
    }

    /// Whether another attempt may go, after waiting its backoff.
    pub(crate) async fn next(&mut self) -> bool {
        if self.attempts >= self.max_attempts {
            return false;
        }
        if self.attempts > 0 && !std::mem::take(&mut self.now) {
            tokio::time::sleep(self.backoff.delay(self.attempts)).await;
        }
        self.attempts += 1;
        true
    }

    /// The next attempt goes at once (the broker said what to change: a new member id, a
    /// new generation), still counted.
    pub(crate) fn without_backoff(&mut self) {
        self.now = true;
    }

    /// The attempts started so far.
    pub(crate) fn attempts(&self) -> u32 {
        self.attempts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_doubles_up_to_the_max_within_the_jitter() {
        let b = Backoff::exponential(Duration::from_millis(100), Duration::from_secs(1), Random::new(None, "test"));
        for (failures, base) in [(1, 100), (2, 200), (3, 400), (4, 800), (5, 1000), (40, 1000)] {
            let d = b.delay(failures).as_millis() as u64;
            assert!(d >= base * 8 / 10 && d <= base * 12 / 10, "{failures}: {d}");
        }
    }

    #[tokio::test]
    async fn retry_waits_between_attempts_and_stops_at_the_limit() {
        let mut r = Retry::new(Backoff::constant(Duration::from_millis(10)), 3);
        let start = tokio::time::Instant::now();
        assert!(r.next().await);
        assert!(start.elapsed() < Duration::from_millis(10), "no wait before the first");
        assert!(r.next().await && r.next().await);
        assert!(start.elapsed() >= Duration::from_millis(20));
        assert!(!r.next().await);
        assert_eq!(r.attempts(), 3);
    }
}
