//! Fault injection, for tests of clients under a faulty network. With
//! [`Config::faults`](crate::Config::faults) set, the frames of each connection the proxy
//! serves are counted in windows (of [`FaultConfig::after`] plus one frames, or bytes, both
//! ways together); in each window, with the chance [`FaultConfig::percent`], one fault strikes
//! at a point drawn within it, in one direction (requests to the broker, or responses to the
//! client). What strikes where is drawn by a seeded generator from the seed, the connection's
//! number and the window's ([`FaultConfig::plan`]): the same seed gives the same faults, whatever
//! the timing. A connection the faults spare, or only delay, meets new ones in its next window.
//!
//! - [`FaultKind::Drop`]: the connection is closed (FIN both ways) in place of forwarding a frame.
//! - [`FaultKind::Delay`]: from that point to the window's end, every frame in its direction is
//!   held for a delay before it is forwarded; the connection lives on.
//! - [`FaultKind::Stall`]: from that point nothing is forwarded either way, but both sockets
//!   stay open (a half-open peer, as a client sees it) for [`FaultConfig::stall`], then close.
//! - [`FaultKind::Reset`]: part of a frame is forwarded, then both sockets are closed with an
//!   RST (`SO_LINGER` 0).
//! - [`FaultKind::Truncate`]: part of a frame is forwarded, then both sockets are closed (FIN).
//! - [`FaultKind::Late`]: from that point to the window's end, every frame in its direction is
//!   held for [`FaultConfig::late`] (longer than a client waits for an answer), then forwarded,
//!   whether its sender is still there or not: the broker handles requests their client has
//!   given up on, after the newer ones the client sent on another connection.
//!
//! ```
//! use std::time::Duration;
//! use kwire_proxy::{Config, FaultConfig, FaultKind};
//!
//! let faults = FaultConfig::new(7)
//!     .percent(40)
//!     .kinds(&[(FaultKind::Reset, 2), (FaultKind::Stall, 1), (FaultKind::Truncate, 1)])
//!     .after_frames(30)
//!     .stall(Duration::from_secs(5));
//! // Connection 3's first window is the same on every run with seed 7.
//! assert_eq!(faults.plan(3, 0), faults.plan(3, 0));
//! let config = Config::new("127.0.0.1:9092").faults(faults);
//! # let _ = config;
//! ```

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// What a fault does to its connection (see the [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum FaultKind {
    /// Closed at a frame boundary.
    Drop,
    /// Frames held before they are forwarded.
    Delay,
    /// Nothing forwarded, sockets kept open.
    Stall,
    /// Part of a frame, then an RST.
    Reset,
    /// Part of a frame, then a FIN.
    Truncate,
    /// Frames held past the client's patience, then delivered anyway.
    Late,
}

impl FaultKind {
    /// Every kind.
    pub const ALL: [FaultKind; 6] = [FaultKind::Drop, FaultKind::Delay, FaultKind::Stall, FaultKind::Reset, FaultKind::Truncate, FaultKind::Late];

    fn index(self) -> usize {
        match self {
            FaultKind::Drop => 0,
            FaultKind::Delay => 1,
            FaultKind::Stall => 2,
            FaultKind::Reset => 3,
            FaultKind::Truncate => 4,
            FaultKind::Late => 5,
        }
    }
}

/// Which way a fault strikes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Frames from the client to the broker.
    Requests,
    /// Frames from the broker to the client.
    Responses,
}

/// Frames or bytes, both ways together: in [`FaultConfig`] the last point of a window (windows
/// are one longer), in a [`Plan`] where in its window the fault strikes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    /// On the first frame of the fault's direction after this many frames of the window.
    Frames(u64),
    /// On the first frame of the fault's direction that takes the window's bytes (size
    /// prefixes included) past this many; a cut frame ([`FaultKind::Reset`],
    /// [`FaultKind::Truncate`]) is cut at that byte if it can be.
    Bytes(u64),
}

impl After {
    fn count(self) -> u64 {
        match self {
            After::Frames(n) | After::Bytes(n) => n,
        }
    }
}

/// Which faults to inject, how often and when.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FaultConfig {
    /// The generator's seed.
    pub seed: u64,
    /// The chance, in percent, that a fault strikes in a window (default 50).
    pub percent: u32,
    /// The kinds to choose from, each with a weight (default: every kind, weight 1).
    pub kinds: Vec<(FaultKind, u32)>,
    /// The directions to choose from (default both).
    pub directions: Vec<Direction>,
    /// The last frame or byte of a window, counted from 0 (default 20 frames: windows of 21).
    pub after: After,
    /// The longest delay of [`FaultKind::Delay`] (default 200 ms); each delayed window draws
    /// its own up to it.
    pub max_delay: Duration,
    /// How long a stalled connection is held open (default 30 s).
    pub stall: Duration,
    /// How long [`FaultKind::Late`] holds each frame (default 5 s).
    pub late: Duration,
}

impl FaultConfig {
    /// The defaults, with `seed`.
    pub fn new(seed: u64) -> FaultConfig {
        FaultConfig {
            seed,
            percent: 50,
            kinds: FaultKind::ALL.iter().map(|k| (*k, 1)).collect(),
            directions: vec![Direction::Requests, Direction::Responses],
            after: After::Frames(20),
            max_delay: Duration::from_millis(200),
            stall: Duration::from_secs(30),
            late: Duration::from_secs(5),
        }
    }

    /// Sets [`FaultConfig::percent`] (at most 100).
    pub fn percent(mut self, percent: u32) -> FaultConfig {
        self.percent = percent.min(100);
        self
    }

    /// Sets [`FaultConfig::kinds`].
    pub fn kinds(mut self, kinds: &[(FaultKind, u32)]) -> FaultConfig {
        self.kinds = kinds.to_vec();
        self
    }

    /// Sets [`FaultConfig::directions`].
    pub fn directions(mut self, directions: &[Direction]) -> FaultConfig {
        self.directions = directions.to_vec();
        self
    }

    /// Windows of `n + 1` frames.
    pub fn after_frames(mut self, n: u64) -> FaultConfig {
        self.after = After::Frames(n);
        self
    }

    /// Windows of `n + 1` bytes.
    pub fn after_bytes(mut self, n: u64) -> FaultConfig {
        self.after = After::Bytes(n);
        self
    }

    /// Sets [`FaultConfig::max_delay`].
    pub fn max_delay(mut self, delay: Duration) -> FaultConfig {
        self.max_delay = delay;
        self
    }

    /// Sets [`FaultConfig::stall`].
    pub fn stall(mut self, stall: Duration) -> FaultConfig {
        self.stall = stall;
        self
    }

    /// Sets [`FaultConfig::late`].
    pub fn late(mut self, late: Duration) -> FaultConfig {
        self.late = late;
        self
    }

    /// The fault planned for window `window` (from 0) of connection `connection` (numbered
    /// from 0 in the order the proxy accepted them), or `None` if it is spared.
    pub fn plan(&self, connection: u64, window: u64) -> Option<Plan> {
        let mut rng = Rng::new(self.seed ^ splitmix(connection) ^ splitmix(window.wrapping_add(0x5157_0000_0000)));
        if rng.below(100) >= u64::from(self.percent) {
            return None;
        }
        let total: u64 = self.kinds.iter().map(|(_, w)| u64::from(*w)).sum();
        let mut pick = rng.below(total);
        let kind = self.kinds.iter().find(|(_, w)| {
            let hit = pick < u64::from(*w);
            pick = pick.saturating_sub(u64::from(*w));
            hit
        })?;
        let direction = *self.directions.get(usize::try_from(rng.below(self.directions.len() as u64)).ok()?)?;
        let after = match self.after {
            After::Frames(n) => After::Frames(rng.below(n.saturating_add(1))),
            After::Bytes(n) => After::Bytes(rng.below(n.saturating_add(1))),
        };
        let most = u64::try_from(self.max_delay.as_micros()).unwrap_or(u64::MAX);
        let delay = Duration::from_micros(rng.below(most.saturating_add(1)));
        Some(Plan { kind: kind.0, direction, after, delay, cut: rng.next() })
    }
}

/// One window's fault: what, which way, where in the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// What it does.
    pub kind: FaultKind,
    /// Which way it strikes.
    pub direction: Direction,
    /// Where in its window.
    pub after: After,
    /// How long each frame is held ([`FaultKind::Delay`]).
    pub delay: Duration,
    /// Where a frame is cut when the trigger counts frames: a draw reduced to the frame's size.
    cut: u64,
}

/// What the injector has done: connections seen, and faults struck by kind (a planned fault
/// strikes only if its connection gets that far; a delay counts once per window).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultCounts {
    /// Connections served while injection was on.
    pub connections: u64,
    /// Connections closed in place of a frame.
    pub drop: u64,
    /// Windows whose frames were delayed.
    pub delay: u64,
    /// Connections stalled.
    pub stall: u64,
    /// Connections reset mid-frame.
    pub reset: u64,
    /// Connections cut short mid-frame.
    pub truncate: u64,
    /// Windows whose frames were delivered late.
    pub late: u64,
}

impl FaultCounts {
    /// Faults struck, of every kind.
    pub fn total(&self) -> u64 {
        self.drop + self.delay + self.stall + self.reset + self.truncate + self.late
    }

    /// Faults of `kind` struck.
    pub fn of(&self, kind: FaultKind) -> u64 {
        match kind {
            FaultKind::Drop => self.drop,
            FaultKind::Delay => self.delay,
            FaultKind::Stall => self.stall,
            FaultKind::Reset => self.reset,
            FaultKind::Truncate => self.truncate,
            FaultKind::Late => self.late,
        }
    }
}

/// The proxy's injector: the configuration, the on/off switch and the counts.
pub(crate) struct Injector {
    config: FaultConfig,
    enabled: AtomicBool,
    connections: AtomicU64,
    struck: [AtomicU64; 6],
}

impl Injector {
    pub fn new(config: FaultConfig) -> Injector {
        Injector { config, enabled: AtomicBool::new(true), connections: AtomicU64::new(0), struck: Default::default() }
    }

    pub fn set_enabled(&self, enabled: bool) {
        self.enabled.store(enabled, Ordering::SeqCst);
    }

    pub fn counts(&self) -> FaultCounts {
        let n = |k: FaultKind| self.struck.get(k.index()).map_or(0, |c| c.load(Ordering::SeqCst));
        FaultCounts {
            connections: self.connections.load(Ordering::SeqCst),
            drop: n(FaultKind::Drop),
            delay: n(FaultKind::Delay),
            stall: n(FaultKind::Stall),
            reset: n(FaultKind::Reset),
            truncate: n(FaultKind::Truncate),
            late: n(FaultKind::Late),
        }
    }
}

/// What to do with a frame about to be forwarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// Forward it.
    Forward,
    /// Forward it after this long.
    Delay(Duration),
    /// Forward it after this long, even if its sender has gone.
    Late(Duration),
    /// Close the connection instead.
    Close,
    /// Forward its first `len` bytes (size prefix included), then close, with an RST if `reset`.
    Cut { len: usize, reset: bool },
    /// Forward nothing more either way; close after this long.
    Stall(Duration),
    /// Forward nothing more (the other direction stalled the connection).
    Hold,
}

/// One connection's faults and how far it has got.
pub(crate) struct ConnFaults<'a> {
    injector: Option<&'a Injector>,
    id: u64,
    state: Mutex<Window>,
}

/// Where a connection is in its current window.
#[derive(Debug)]
struct Window {
    number: u64,
    plan: Option<Plan>,
    /// Frames or bytes so far in the window, both ways.
    used: u64,
    struck: bool,
    stalled: bool,
}

impl<'a> ConnFaults<'a> {
    /// The faults of connection `id` (none if the injector is off as it opens).
    pub fn new(injector: Option<&'a Injector>, id: u64) -> ConnFaults<'a> {
        let injector = injector.filter(|i| i.enabled.load(Ordering::SeqCst));
        if let Some(i) = injector {
            i.connections.fetch_add(1, Ordering::SeqCst);
        }
        let plan = injector.and_then(|i| i.config.plan(id, 0));
        ConnFaults { injector, id, state: Mutex::new(Window { number: 0, plan, used: 0, struck: false, stalled: false }) }
    }

    /// What to do with a frame of `len` bytes (size prefix included) about to go `direction`,
    /// and the fault's kind if one strikes now.
    pub fn before(&self, direction: Direction, len: usize) -> (Action, Option<FaultKind>) {
        let Some(injector) = self.injector else { return (Action::Forward, None) };
        let mut w = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if w.stalled {
            return (Action::Hold, None);
        }
        let len64 = len as u64;
        let used_before = w.used;
        w.used = used_before.saturating_add(match injector.config.after {
            After::Frames(_) => 1,
            After::Bytes(_) => len64,
        });
        // A plan drawn while enabled does not strike once the switch is off: disabling stops
        // every fault not yet struck, not only the ones of later windows.
        if w.plan.is_some_and(|_| !w.struck) && !injector.enabled.load(Ordering::SeqCst) {
            w.plan = None;
        }
        let outcome = match w.plan {
            Some(plan) if plan.direction == direction => {
                if w.struck {
                    // Only a delay lets its connection go on after it struck.
                    let action = match plan.kind {
                        FaultKind::Delay => Action::Delay(plan.delay),
                        FaultKind::Late => Action::Late(injector.config.late),
                        _ => Action::Hold,
                    };
                    (action, None)
                } else if w.used > plan.after.count() {
                    w.struck = true;
                    (self.strike(injector, &mut w, plan, used_before, len64), Some(plan.kind))
                } else {
                    (Action::Forward, None)
                }
            }
            _ => (Action::Forward, None),
        };
        if w.used > injector.config.after.count() && !w.stalled {
            // The next window, and its own draw.
            let number = w.number.saturating_add(1);
            let plan = if injector.enabled.load(Ordering::SeqCst) { injector.config.plan(self.id, number) } else { None };
            *w = Window { number, plan, used: 0, struck: false, stalled: false };
        }
        outcome
    }

    fn strike(&self, injector: &Injector, w: &mut Window, plan: Plan, used_before: u64, len: u64) -> Action {
        if let Some(count) = injector.struck.get(plan.kind.index()) {
            count.fetch_add(1, Ordering::SeqCst);
        }
        // Where a cut frame is cut: 1 to len - 1 bytes are forwarded.
        let most = len.saturating_sub(1).max(1);
        let cut = match plan.after {
            After::Frames(_) => plan.cut % most + 1,
            After::Bytes(at) => at.saturating_sub(used_before).clamp(1, most),
        };
        let cut = usize::try_from(cut).unwrap_or(1);
        match plan.kind {
            FaultKind::Drop => Action::Close,
            FaultKind::Delay => Action::Delay(plan.delay),
            FaultKind::Stall => {
                w.stalled = true;
                Action::Stall(injector.config.stall)
            }
            FaultKind::Reset => Action::Cut { len: cut, reset: true },
            FaultKind::Truncate => Action::Cut { len: cut, reset: false },
            FaultKind::Late => Action::Late(injector.config.late),
        }
    }
}

/// splitmix64's finaliser: spreads consecutive connection numbers over the seed space.
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// xorshift64*: small, seeded, reproducible.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(splitmix(seed) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Below `n` (0 when `n` is 0).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_are_reproducible_and_cover_every_kind() {
        let config = FaultConfig::new(42).percent(60);
        let plans: Vec<Option<Plan>> = (0..2000).map(|c| config.plan(c / 10, c % 10)).collect();
        assert_eq!(plans, (0..2000).map(|c| config.plan(c / 10, c % 10)).collect::<Vec<_>>());
        let struck = plans.iter().flatten().count();
        assert!((1000..1400).contains(&struck), "{struck} of 2000 at 60%");
        for kind in FaultKind::ALL {
            assert!(plans.iter().flatten().any(|p| p.kind == kind), "{kind:?} never planned");
        }
        assert!(plans.iter().flatten().all(|p| matches!(p.after, After::Frames(n) if n <= 20) && p.delay <= Duration::from_millis(200)));
        assert_ne!(config.plan(0, 0), config.plan(0, 1), "windows draw apart");
        assert_ne!(plans, (0..2000).map(|c| FaultConfig::new(43).percent(60).plan(c / 10, c % 10)).collect::<Vec<_>>(), "another seed");
        assert!((0..100).all(|c| FaultConfig::new(1).percent(0).plan(c, 0).is_none()));
        let only = FaultConfig::new(1).percent(100).kinds(&[(FaultKind::Stall, 1)]).directions(&[Direction::Requests]);
        assert!((0..100).all(|c| only.plan(c, 3).is_some_and(|p| p.kind == FaultKind::Stall && p.direction == Direction::Requests)));
    }

    fn injector(kind: FaultKind, direction: Direction, after: After) -> Injector {
        let config = FaultConfig { after, ..FaultConfig::new(5).percent(100).kinds(&[(kind, 1)]).directions(&[direction]) };
        Injector::new(config)
    }

    /// A connection whose first window's fault strikes exactly at `at`.
    fn conn(injector: &Injector, at: After) -> ConnFaults<'_> {
        let c = ConnFaults::new(Some(injector), 0);
        if let Some(plan) = c.state.lock().unwrap().plan.as_mut() {
            plan.after = at;
        }
        c
    }

    #[test]
    fn a_fault_strikes_at_its_point_and_only_its_way() {
        use Direction::{Requests, Responses};
        let i = injector(FaultKind::Reset, Responses, After::Frames(9));
        let c = conn(&i, After::Frames(2));
        assert_eq!(c.before(Requests, 100), (Action::Forward, None));
        assert_eq!(c.before(Responses, 100), (Action::Forward, None));
        assert_eq!(c.before(Requests, 100), (Action::Forward, None), "the third frame, but a request");
        let (action, kind) = c.before(Responses, 100);
        assert!(matches!(action, Action::Cut { len: 1..=99, reset: true }), "{action:?}");
        assert_eq!(kind, Some(FaultKind::Reset));
        assert_eq!(i.counts(), FaultCounts { connections: 1, reset: 1, ..Default::default() });

        // By bytes: the frame that crosses byte 150 is cut at it.
        let i = injector(FaultKind::Truncate, Requests, After::Bytes(1000));
        let c = conn(&i, After::Bytes(150));
        assert_eq!(c.before(Requests, 100).0, Action::Forward);
        assert_eq!(c.before(Requests, 100).0, Action::Cut { len: 50, reset: false });

        // A stall holds the other way too.
        let i = injector(FaultKind::Stall, Requests, After::Frames(5));
        let c = conn(&i, After::Frames(0));
        assert!(matches!(c.before(Requests, 10).0, Action::Stall(_)));
        assert_eq!(c.before(Responses, 10).0, Action::Hold);
        assert_eq!(c.before(Requests, 10).0, Action::Hold);
    }

    #[test]
    fn a_fault_planned_but_not_struck_is_dropped_when_switched_off() {
        use Direction::Responses;
        let i = injector(FaultKind::Reset, Responses, After::Frames(9));
        let c = conn(&i, After::Frames(2));
        assert_eq!(c.before(Responses, 100).0, Action::Forward);
        i.set_enabled(false);
        for _ in 0..20 {
            assert_eq!(c.before(Responses, 100), (Action::Forward, None));
        }
        assert_eq!(i.counts(), FaultCounts { connections: 1, ..Default::default() });
    }

    #[test]
    fn a_delay_lasts_to_its_windows_end_and_the_next_window_draws_again() {
        use Direction::{Requests, Responses};
        // Windows of 4 frames; every window delays its responses from its second frame on.
        let i = injector(FaultKind::Delay, Responses, After::Frames(3));
        let c = conn(&i, After::Frames(1));
        let delays: Vec<Action> = (0..8).map(|n| c.before(if n % 2 == 0 { Requests } else { Responses }, 10).0).collect();
        assert_eq!(delays[0], Action::Forward);
        assert!(matches!(delays[1], Action::Delay(_)));
        assert_eq!(delays[2], Action::Forward, "requests are not delayed");
        assert_eq!(delays[3], delays[1], "delayed to the window's end");
        assert_eq!(delays[4], Action::Forward);
        assert!(delays[5..].iter().step_by(2).all(|a| matches!(a, Action::Delay(_) | Action::Forward)));
        assert!(i.counts().delay >= 1);
        // Switched off: no new connection is struck, and open ones are spared from their next window.
        i.set_enabled(false);
        assert!(ConnFaults::new(Some(&i), 1).injector.is_none());
        for n in 0..8 {
            c.before(Requests, 10);
            if n >= 4 {
                assert_eq!(c.before(Responses, 10).0, Action::Forward);
            } else {
                c.before(Responses, 10);
            }
        }
    }
}
