//! The cluster's clock-driven work: group sessions and rebalance deadlines, share acquisition
//! locks, transaction
//! timeouts, markers that could not be written before. One task, ticking on tokio's clock
//! (paused or not), until the cluster is dropped.

use std::sync::Weak;
use std::time::Duration;

use crate::cluster::Inner;

/// How often the timers look.
const TICK: Duration = Duration::from_millis(100);

pub(crate) async fn run(inner: Weak<Inner>) {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(inner) = inner.upgrade() else { return };
        let now = inner.now_ms();
        {
            let mut state = inner.state();
            let topics = crate::groups::topics_view(&state.topics);
            crate::groups::tick(&mut state.groups, &topics);
            crate::handlers::end_timed_out(&mut state, now);
        }
        inner.wake();
    }
}
