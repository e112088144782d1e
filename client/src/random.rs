//! The client's random choices: backoff jitter, the sticky partition of unkeyed records, when
//! to re-authenticate. Each comes from a [`Random`] seeded from the OS, or from
//! [`ConnectOptions::seed`](crate::ConnectOptions::seed) when a test sets one: on tokio's paused
//! clock with an in-memory transport (kwire-fake), the same seed then makes the same choices
//! and a run replays exactly. Secrets (SASL nonces, token ids) never come from here.

use std::sync::{Arc, Mutex};

/// A generator shared by the clones of one component (a producer's batches, a client's
/// connection slots).
#[derive(Clone)]
pub(crate) struct Random(Arc<Mutex<fastrand::Rng>>);

impl std::fmt::Debug for Random {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Random")
    }
}

impl Default for Random {
    /// Seeded from the OS.
    fn default() -> Self {
        Random::new(None, "")
    }
}

impl Random {
    /// From `seed` and the component's name (each component its own sequence, so that one's
    /// draws do not shift another's), or from the OS without a seed.
    pub(crate) fn new(seed: Option<u64>, component: &str) -> Random {
        let rng = match seed {
            // FNV-1a of the name: the same on every build and platform, so a seed printed by
            // one machine replays on another.
            Some(seed) => {
                fastrand::Rng::with_seed(seed ^ component.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)))
            }
            None => fastrand::Rng::new(),
        };
        Random(Arc::new(Mutex::new(rng)))
    }

    fn with<T>(&self, f: impl FnOnce(&mut fastrand::Rng) -> T) -> T {
        // A draw cannot panic: a poisoned lock still holds a usable generator.
        let mut rng = crate::sync::lock(&self.0);
        f(&mut rng)
    }

    /// Uniform in [0, 1).
    pub(crate) fn unit(&self) -> f64 {
        self.with(|r| r.f64())
    }

    /// Fills `bytes` with draws.
    pub(crate) fn fill(&self, bytes: &mut [u8]) {
        self.with(|r| r.fill(bytes))
    }

    /// Uniform in [0, 2^31).
    pub(crate) fn positive(&self) -> u32 {
        self.with(|r| r.u32(..) & 0x7fff_ffff)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_replays_and_components_differ() {
        let draws = |seed, name| {
            let r = Random::new(Some(seed), name);
            (0..8).map(|_| r.positive()).collect::<Vec<_>>()
        };
        assert_eq!(draws(7, "producer"), draws(7, "producer"));
        assert_ne!(draws(7, "producer"), draws(8, "producer"));
        assert_ne!(draws(7, "producer"), draws(7, "cluster"));
        let unseeded = Random::new(None, "producer");
        assert!((0..100).map(|_| unseeded.unit()).all(|u| (0.0..1.0).contains(&u)));
    }
}
