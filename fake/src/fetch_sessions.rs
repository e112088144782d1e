//! Fetch sessions (KIP-227, Kafka's `FetchSessionCache`): per broker, the partitions a client
//! fetches and what it was last told of each, so that incremental requests name only what
//! changed and their answers carry only partitions with news.

use std::collections::BTreeMap;

use kwire::messages::fetch_request::FetchPartition;
use kwire::Uuid;

/// The most sessions a broker keeps (`max.incremental.fetch.session.cache.slots`).
pub(crate) const MAX_SESSIONS: usize = 1000;

/// A partition of a session: the fetch as last asked, and the (high watermark, last stable
/// offset, log start) last answered.
#[derive(Debug, Clone)]
pub(crate) struct SessionPartition {
    pub(crate) fetch: FetchPartition,
    pub(crate) last_sent: Option<(i64, i64, i64)>,
}

/// A session: the epoch its next request must carry, its partitions by (topic, id, index).
#[derive(Debug, Clone, Default)]
pub(crate) struct Session {
    pub(crate) epoch: i32,
    pub(crate) partitions: BTreeMap<(String, Uuid, i32), SessionPartition>,
    /// When it was made (for eviction, oldest first).
    pub(crate) created: u64,
}

#[derive(Debug, Default)]
pub(crate) struct FetchSessions {
    pub(crate) by_id: BTreeMap<(i32, i32), Session>,
    pub(crate) made: u64,
}

impl FetchSessions {
    /// A new session on `broker` with a fresh id (from a counter, scrambled, so that sessions
    /// take nothing from the cluster's generator and leave its other choices as they were);
    /// the oldest goes when the cache is full.
    pub(crate) fn create(&mut self, broker: i32) -> i32 {
        if self.by_id.len() >= MAX_SESSIONS {
            if let Some(oldest) = self.by_id.iter().min_by_key(|(_, s)| s.created).map(|(k, _)| *k) {
                self.by_id.remove(&oldest);
            }
        }
        let id = loop {
            self.made += 1;
            let id = (self.made.wrapping_mul(2_654_435_761) & 0x7fff_ffff) as i32;
            if id != 0 && !self.by_id.contains_key(&(broker, id)) {
                break id;
            }
        };
        self.by_id.insert((broker, id), Session { epoch: 1, partitions: BTreeMap::new(), created: self.made });
        id
    }
}
