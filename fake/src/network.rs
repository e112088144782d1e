//! The in-memory network between clients and brokers: a pipe per connection, and, when faults
//! are set, a pump between its two ends that strikes whole frames as a seeded plan says: delays
//! (so that one connection's requests reach the broker after another's), drops, stalls,
//! frames cut short, and a request let through whose response is lost. A request read off the
//! client's pipe before the client gave up is still delivered (late), as a kernel would.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream, ReadHalf, WriteHalf};
use tokio::sync::watch;

use crate::cluster::Inner;

/// A pipe's buffer: a frame of up to this much passes in one write.
const PIPE: usize = 1 << 20;
/// A frame larger than this ends the connection (a broker's `socket.request.max.bytes`).
const MAX_FRAME: usize = 100 << 20;

/// What a fault does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum FaultKind {
    /// The connection closes in place of the frame.
    Drop,
    /// The frame and the rest of its window in that direction are held for a delay each.
    Delay,
    /// Nothing passes either way for the stall time, then the connection closes.
    Stall,
    /// Part of the frame passes, then the connection closes.
    Cut,
    /// The request passes (and is applied); its response is lost and the connection closes.
    LoseResponse,
    /// The frame and the rest of its window in that direction are held for
    /// [`FaultConfig::late`] (past a client's request timeout), then delivered, whether their
    /// sender is still there or not.
    Late,
}

/// Which frames a fault strikes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// From client to broker.
    Requests,
    /// From broker to client.
    Responses,
}

/// The in-memory network's faults: in each window of `window` frames (both ways together) of a
/// connection, with the chance `percent`, one fault strikes at a frame drawn within it. What
/// strikes where comes from the seed, the connection's number and the window's.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FaultConfig {
    /// The seed of the plan.
    pub seed: u64,
    /// The chance of a fault per window, in percent (default 20).
    pub percent: u32,
    /// The kinds to choose from, with weights (default every kind, weight 1).
    pub kinds: Vec<(FaultKind, u32)>,
    /// Frames per window (default 10).
    pub window: u64,
    /// The longest delay (default 200 ms).
    pub max_delay: Duration,
    /// How long a stall lasts (default 5 s).
    pub stall: Duration,
    /// How long [`FaultKind::Late`] holds a frame (default 3 s).
    pub late: Duration,
}

impl FaultConfig {
    /// The defaults, with `seed`.
    pub fn new(seed: u64) -> FaultConfig {
        FaultConfig {
            seed,
            percent: 20,
            kinds: [FaultKind::Drop, FaultKind::Delay, FaultKind::Stall, FaultKind::Cut, FaultKind::LoseResponse, FaultKind::Late]
                .iter()
                .map(|k| (*k, 1))
                .collect(),
            window: 10,
            max_delay: Duration::from_millis(200),
            stall: Duration::from_secs(5),
            late: Duration::from_secs(3),
        }
    }

    /// Sets [`percent`](Self::percent).
    pub fn percent(mut self, percent: u32) -> Self {
        self.percent = percent.min(100);
        self
    }

    /// Sets [`kinds`](Self::kinds).
    pub fn kinds(mut self, kinds: &[(FaultKind, u32)]) -> Self {
        self.kinds = kinds.to_vec();
        self
    }

    /// Sets [`window`](Self::window).
    pub fn window(mut self, frames: u64) -> Self {
        self.window = frames.max(1);
        self
    }

    /// Sets [`max_delay`](Self::max_delay).
    pub fn max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }

    /// Sets [`late`](Self::late).
    pub fn late(mut self, late: Duration) -> Self {
        self.late = late;
        self
    }

    /// Sets [`stall`](Self::stall).
    pub fn stall(mut self, stall: Duration) -> Self {
        self.stall = stall;
        self
    }

    /// The fault of window `window` of connection `connection`, if one strikes.
    pub fn plan(&self, connection: u64, window: u64) -> Option<Plan> {
        let mut rng =
            fastrand::Rng::with_seed(self.seed ^ connection.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ window.wrapping_mul(0xc2b2_ae3d_27d4_eb4f).rotate_left(17));
        if rng.u32(..100) >= self.percent {
            return None;
        }
        let total: u32 = self.kinds.iter().map(|(_, w)| *w).sum();
        if total == 0 {
            return None;
        }
        let mut pick = rng.u32(..total);
        let kind = self.kinds.iter().find(|(_, w)| {
            let hit = pick < *w;
            pick = pick.saturating_sub(*w);
            hit
        })?;
        let direction = if kind.0 == FaultKind::LoseResponse || rng.bool() { Direction::Requests } else { Direction::Responses };
        let most = u64::try_from(self.max_delay.as_micros()).unwrap_or(u64::MAX);
        Some(Plan { kind: kind.0, direction, at: rng.u64(..self.window.max(1)), delay: Duration::from_micros(rng.u64(..=most)), cut: rng.u64(..) })
    }
}

/// One window's fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// What it does.
    pub kind: FaultKind,
    /// Which frames.
    pub direction: Direction,
    /// Its frame within the window (counting both directions).
    pub at: u64,
    /// The delay of [`FaultKind::Delay`].
    pub delay: Duration,
    /// Where a cut frame is cut (reduced to the frame's size).
    cut: u64,
}

/// The faults struck so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FaultCounts {
    /// Connections opened while faults were set.
    pub connections: u64,
    /// Connections closed in place of a frame.
    pub drop: u64,
    /// Windows delayed.
    pub delay: u64,
    /// Connections stalled.
    pub stall: u64,
    /// Frames cut short.
    pub cut: u64,
    /// Responses lost after their request was applied.
    pub lose_response: u64,
    /// Windows delivered late.
    pub late: u64,
}

impl FaultCounts {
    /// Every fault struck.
    pub fn total(&self) -> u64 {
        self.drop + self.delay + self.stall + self.cut + self.lose_response + self.late
    }
}

/// The network's settings and tallies.
pub(crate) struct Network {
    faults: Mutex<Option<FaultConfig>>,
    counts: Mutex<FaultCounts>,
    /// Bumped whenever the faults are set: a connection strikes no new fault once the faults it
    /// was opened with are replaced (a healed network heals its open connections too).
    generation: AtomicU64,
}

impl Network {
    pub(crate) fn new(_seed: u64) -> Network {
        Network { faults: Mutex::new(None), counts: Mutex::new(FaultCounts::default()), generation: AtomicU64::new(0) }
    }

    pub(crate) fn set(&self, faults: Option<FaultConfig>) {
        *self.faults.lock().unwrap_or_else(|p| p.into_inner()) = faults;
        self.generation.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn counts(&self) -> FaultCounts {
        *self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn count(&self, f: impl FnOnce(&mut FaultCounts)) {
        f(&mut self.counts.lock().unwrap_or_else(|p| p.into_inner()));
    }
}

/// A new connection's two ends: the client's, and the broker's (with a pump between them when
/// faults are set).
pub(crate) fn open(inner: &Arc<Inner>, connection: u64) -> (DuplexStream, DuplexStream) {
    let faults = inner.network.faults.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let Some(faults) = faults else {
        return tokio::io::duplex(PIPE);
    };
    inner.network.count(|c| c.connections += 1);
    let (client, client_peer) = tokio::io::duplex(PIPE);
    let (broker_peer, broker) = tokio::io::duplex(PIPE);
    let generation = inner.network.generation.load(Ordering::Relaxed);
    let shared = Arc::new(Pump {
        faults,
        generation,
        connection,
        frames: AtomicU64::new(0),
        kill: watch::channel(false).0,
        stalled: watch::channel(false).0,
        lose_next_response: Mutex::new(false),
        inner: Arc::downgrade(inner),
    });
    let (client_read, client_write) = tokio::io::split(client_peer);
    let (broker_read, broker_write) = tokio::io::split(broker_peer);
    tokio::spawn(shared.clone().forward(client_read, broker_write, Direction::Requests));
    tokio::spawn(shared.forward(broker_read, client_write, Direction::Responses));
    (client, broker)
}

/// One connection's pump state, shared by its two directions.
struct Pump {
    faults: FaultConfig,
    /// The network's generation when the connection opened.
    generation: u64,
    connection: u64,
    /// Frames seen, both ways.
    frames: AtomicU64,
    /// Set to close the connection both ways at once.
    kill: watch::Sender<bool>,
    /// Set while the connection is stalled: nothing passes either way.
    stalled: watch::Sender<bool>,
    /// A request was let through whose response is to be lost.
    lose_next_response: Mutex<bool>,
    inner: std::sync::Weak<Inner>,
}

impl Pump {
    fn count(&self, f: impl FnOnce(&mut FaultCounts)) {
        if let Some(inner) = self.inner.upgrade() {
            inner.network.count(f);
        }
    }

    /// Whether the faults this connection opened with are still the network's.
    fn faulty(&self) -> bool {
        self.inner.upgrade().is_some_and(|i| i.network.generation.load(Ordering::Relaxed) == self.generation)
    }

    /// Moves frames one way until either end closes or a fault ends the connection.
    async fn forward(self: Arc<Self>, mut from: ReadHalf<DuplexStream>, mut to: WriteHalf<DuplexStream>, direction: Direction) {
        let mut killed = self.kill.subscribe();
        let mut delay_until_window: Option<(u64, Duration)> = None;
        loop {
            let frame = tokio::select! {
                biased;
                _ = killed.wait_for(|k| *k) => return,
                frame = read_frame(&mut from) => frame,
            };
            let Some(frame) = frame else {
                // The sender closed: what was forwarded stays readable, then the far end ends.
                let _ = to.shutdown().await;
                return;
            };
            let n = self.frames.fetch_add(1, Ordering::Relaxed);
            let window = n / self.faults.window;
            let faulty = self.faulty();
            let plan = self.faults.plan(self.connection, window).filter(|p| faulty && p.direction == direction && p.at == n % self.faults.window);
            if direction == Direction::Responses && faulty {
                let lose = std::mem::take(&mut *self.lose_next_response.lock().unwrap_or_else(|p| p.into_inner()));
                if lose {
                    self.count(|c| c.lose_response += 1);
                    self.kill.send_replace(true);
                    return;
                }
            }
            if let Some((w, d)) = delay_until_window {
                if w == window && faulty {
                    tokio::time::sleep(d).await;
                } else {
                    delay_until_window = None;
                }
            }
            match plan.map(|p| p.kind) {
                Some(FaultKind::Drop) => {
                    self.count(|c| c.drop += 1);
                    self.kill.send_replace(true);
                    return;
                }
                Some(FaultKind::Delay) => {
                    let d = plan.map(|p| p.delay).unwrap_or_default();
                    self.count(|c| c.delay += 1);
                    delay_until_window = Some((window, d));
                    tokio::time::sleep(d).await;
                }
                Some(FaultKind::Late) => {
                    self.count(|c| c.late += 1);
                    delay_until_window = Some((window, self.faults.late));
                    tokio::time::sleep(self.faults.late).await;
                }
                Some(FaultKind::Stall) => {
                    self.count(|c| c.stall += 1);
                    self.stalled.send_replace(true);
                    tokio::time::sleep(self.faults.stall).await;
                    self.kill.send_replace(true);
                    return;
                }
                Some(FaultKind::Cut) => {
                    self.count(|c| c.cut += 1);
                    let keep = plan.map_or(0, |p| (p.cut % frame.len().max(1) as u64) as usize);
                    let _ = to.write_all(&frame[..keep]).await;
                    self.kill.send_replace(true);
                    return;
                }
                Some(FaultKind::LoseResponse) => {
                    *self.lose_next_response.lock().unwrap_or_else(|p| p.into_inner()) = true;
                }
                None => {}
            }
            if *self.stalled.borrow() {
                // Held until the stall ends the connection.
                let _ = killed.wait_for(|k| *k).await;
                return;
            }
            if to.write_all(&frame).await.is_err() {
                self.kill.send_replace(true);
                return;
            }
        }
    }
}

/// One size-prefixed frame (its prefix included), or `None` at the end of the stream or at a
/// frame too large.
async fn read_frame(from: &mut ReadHalf<DuplexStream>) -> Option<Vec<u8>> {
    let mut size = [0u8; 4];
    from.read_exact(&mut size).await.ok()?;
    let len = usize::try_from(i32::from_be_bytes(size)).ok().filter(|l| *l <= MAX_FRAME)?;
    let mut frame = vec![0u8; 4 + len];
    frame[..4].copy_from_slice(&size);
    from.read_exact(&mut frame[4..]).await.ok()?;
    Some(frame)
}
