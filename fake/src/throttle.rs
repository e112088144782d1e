//! Quotas enforced with throttle times, as Kafka's `ClientQuotaManager` does it: each broker
//! measures a produce or fetch byte rate, and the share of a request handler's time
//! (`request_percentage`, `ClientRequestQuotaManager`), per quota entity over 11 samples of 1 s
//! (`quota.window.num`, `quota.window.size.seconds`), and a rate over the quota answers with
//! `throttle_time_ms` = (rate - quota) / quota × the measured window, rounded; the broker then
//! stops reading the connection for that long (KIP-219). Partition mutations (KIP-599:
//! `controller_mutation_rate`) draw on a token bucket instead, cluster-wide, and versions that can
//! say so refuse a topic once it is empty (THROTTLING_QUOTA_EXCEEDED). Besides, a test may impose
//! a throttle on a client or a broker ([`Cluster::throttle_client`](crate::Cluster::throttle_client)).

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use kwire::{ApiKey, ResponseKind};

use crate::quotas::{Entity, Quotas};

/// Samples of a rate (`quota.window.num`).
const SAMPLES: usize = 11;
/// One sample's span in ms (`quota.window.size.seconds`).
const WINDOW_MS: i64 = 1000;

/// One sample of a rate: when its window started, and what it recorded.
#[derive(Debug, Clone, Copy)]
struct Sample {
    start_ms: i64,
    value: f64,
}

/// Kafka's `Rate` over a `SampledStat`: a sum of samples over the time they cover.
#[derive(Debug, Default)]
struct Rate {
    samples: Vec<Sample>,
    current: usize,
}

impl Rate {
    fn record(&mut self, value: f64, now: i64) {
        if self.samples.is_empty() {
            self.samples.push(Sample { start_ms: now, value: 0.0 });
        }
        if now - self.samples[self.current].start_ms >= WINDOW_MS {
            // The next sample, reused once there are SAMPLES.
            self.current = (self.current + 1) % SAMPLES;
            let fresh = Sample { start_ms: now, value: 0.0 };
            match self.samples.get_mut(self.current) {
                Some(s) => *s = fresh,
                None => self.samples.push(fresh),
            }
        }
        self.samples[self.current].value += value;
    }

    /// The rate per second at `now`, and the window it is measured over (ms).
    fn measure(&mut self, now: i64) -> (f64, i64) {
        // Samples older than the whole window are reset (`purgeObsoleteSamples`).
        let expire = SAMPLES as i64 * WINDOW_MS;
        for s in &mut self.samples {
            if now - s.start_ms > expire {
                *s = Sample { start_ms: now, value: 0.0 };
            }
        }
        let total: f64 = self.samples.iter().map(|s| s.value).sum();
        let oldest = self.samples.iter().map(|s| s.start_ms).min().unwrap_or(now);
        // `Rate.windowSize`: at least SAMPLES - 1 full windows.
        let mut elapsed = now - oldest;
        let full = elapsed / WINDOW_MS;
        let min_full = SAMPLES as i64 - 1;
        if full < min_full {
            elapsed += (min_full - full) * WINDOW_MS;
        }
        (total / (elapsed as f64 / 1000.0), elapsed)
    }
}

/// Which quota a request counts against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Produce,
    Fetch,
    /// Request handler time, in percent of one thread.
    Request,
}

impl Kind {
    fn key(self) -> &'static str {
        match self {
            Kind::Produce => "producer_byte_rate",
            Kind::Fetch => "consumer_byte_rate",
            Kind::Request => "request_percentage",
        }
    }
}

/// Kafka's `TokenBucket`: credits the quota refills per second, up to a burst of a whole window's
/// worth (samples × window × quota); a recording may take them below zero.
#[derive(Debug, Default)]
struct TokenBucket {
    tokens: f64,
    last_ms: i64,
}

impl TokenBucket {
    fn refill(&mut self, quota: f64, now: i64) -> f64 {
        let burst = SAMPLES as f64 * (WINDOW_MS as f64 / 1000.0) * quota;
        self.tokens = (self.tokens + quota * (now - self.last_ms) as f64 / 1000.0).min(burst);
        self.last_ms = now;
        burst
    }

    fn record(&mut self, quota: f64, value: f64, now: i64) {
        let burst = self.refill(quota, now);
        self.tokens = (self.tokens - value).min(burst);
    }

    fn measure(&mut self, quota: f64, now: i64) -> f64 {
        self.refill(quota, now);
        self.tokens
    }
}

/// `ControllerMutationQuotaManager.throttleTimeMs`: how long the bucket takes to climb back to
/// zero.
fn refill_ms(tokens: f64, quota: f64) -> i32 {
    if quota <= 0.0 {
        return i32::MAX;
    }
    (-tokens / quota * 1000.0).round().min(f64::from(i32::MAX)) as i32
}

/// One request's partition-mutation quota (Kafka's `ControllerMutationQuota`): strict from the
/// versions that can answer THROTTLING_QUOTA_EXCEEDED (a topic is refused while the bucket is
/// below zero), permissive before (every topic goes, and the response is throttled).
#[derive(Debug)]
pub(crate) struct MutationQuota {
    strict: bool,
    /// The last throttle a recording decided (`lastThrottleTimeMs`).
    throttle_ms: i32,
}

impl MutationQuota {
    pub(crate) fn new(version: i16, strict_since: i16) -> MutationQuota {
        MutationQuota { strict: version >= strict_since, throttle_ms: 0 }
    }

    /// The throttle time the response carries.
    pub(crate) fn throttle_ms(&self) -> i32 {
        self.throttle_ms
    }
}

/// Measures the time a request's handler spends being polled: the thread time Kafka's request
/// quota counts, without the waits (a fetch's max wait, a join's rebalance) in between.
pub(crate) struct Busy<F> {
    inner: Pin<Box<F>>,
    busy: Duration,
}

impl<F: Future> Busy<F> {
    pub(crate) fn new(inner: F) -> Busy<F> {
        Busy { inner: Box::pin(inner), busy: Duration::ZERO }
    }
}

impl<F: Future> Future for Busy<F> {
    type Output = (F::Output, Duration);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let started = Instant::now();
        let polled = self.inner.as_mut().poll(cx);
        self.busy += started.elapsed();
        polled.map(|out| (out, self.busy))
    }
}

/// Apis only brokers send (`ApiKeys.clusterAction`): exempt from the request quota.
fn cluster_action(api: ApiKey) -> bool {
    matches!(
        api,
        ApiKey::WriteTxnMarkers
            | ApiKey::InitializeShareGroupState
            | ApiKey::ReadShareGroupState
            | ApiKey::WriteShareGroupState
            | ApiKey::DeleteShareGroupState
            | ApiKey::ReadShareGroupStateSummary
    )
}

/// Whom a test's throttle applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    Client(String),
    Broker(i32),
}

/// A rate sensor: (broker, kind, user tag, client-id tag).
type SensorKey = (i32, Kind, String, String);

/// The brokers' rate sensors and the throttles a test imposed.
#[derive(Debug, Default)]
pub(crate) struct Throttling {
    /// (broker, kind, user tag, client-id tag): the tags are the names of the types of the
    /// quota entity that matched, empty for types it has not (Kafka's quota metric tags).
    sensors: BTreeMap<SensorKey, Rate>,
    /// (user tag, client-id tag): the controller's partition-mutation buckets.
    mutations: BTreeMap<(String, String), TokenBucket>,
    pub(crate) imposed: Vec<(Target, Duration)>,
}

/// The quota of `key` for this user and client id, as Kafka's default quota callback finds it
/// (the most specific of user and client id, user, default user and client id, ..., default
/// client id), with the sensor's tags.
fn quota(quotas: &Quotas, user: &str, client_id: &str, key: &str) -> Option<(f64, String, String)> {
    // Per entity type: absent (None), the default (Some(None)) or a name.
    type Level<'a> = (Option<Option<&'a str>>, Option<Option<&'a str>>);
    let levels: [Level<'_>; 8] = [
        (Some(Some(user)), Some(Some(client_id))),
        (Some(Some(user)), Some(None)),
        (Some(Some(user)), None),
        (Some(None), Some(Some(client_id))),
        (Some(None), Some(None)),
        (Some(None), None),
        (None, Some(Some(client_id))),
        (None, Some(None)),
    ];
    levels.into_iter().find_map(|(u, c)| {
        let mut entity = Entity::new();
        if let Some(u) = u {
            entity.insert("user".into(), u.map(str::to_owned));
        }
        if let Some(c) = c {
            entity.insert("client-id".into(), c.map(str::to_owned));
        }
        let value = *quotas.values.get(&entity)?.get(key)?;
        Some((value, if u.is_some() { user.to_owned() } else { String::new() }, if c.is_some() { client_id.to_owned() } else { String::new() }))
    })
}

/// The most a Fetch may return under the client's fetch quota: the quota's bytes over a full
/// window (Kafka's `maxValueInQuotaWindow`, which caps the request's `max_bytes`), so that a
/// consumer moves on instead of being answered empty for ever.
pub(crate) fn fetch_cap(quotas: &Quotas, principal: &str, client_id: &str) -> Option<i32> {
    let (bound, _, _) = quota(quotas, user_of(principal), client_id, Kind::Fetch.key())?;
    let window_s = (SAMPLES as f64 - 1.0) * WINDOW_MS as f64 / 1000.0;
    Some((bound * window_s).min(f64::from(i32::MAX)) as i32)
}

/// The user a principal names (`User:alice` -> alice): a quota entity's user.
fn user_of(principal: &str) -> &str {
    principal.split_once(':').map_or(principal, |(_, n)| n)
}

/// Whose request: the broker it came to, its principal and client id.
#[derive(Clone, Copy)]
pub(crate) struct Who<'a> {
    pub(crate) broker: i32,
    pub(crate) principal: &'a str,
    pub(crate) client_id: &'a str,
}

/// What a request's quota check decided.
pub(crate) struct Decision {
    /// The throttle time the response carries, in ms.
    pub(crate) throttle_ms: i32,
    /// A Fetch over its quota: answered empty, as Kafka's `getThrottledResponse`.
    pub(crate) empty_fetch: bool,
}

impl Throttling {
    /// Records `partitions` created or deleted by one topic of a CreateTopics, CreatePartitions
    /// or DeleteTopics against the principal's `controller_mutation_rate`; false when a strict
    /// `quota` refuses the topic (THROTTLING_QUOTA_EXCEEDED).
    pub(crate) fn mutate(&mut self, quotas: &Quotas, who: &Who<'_>, quota: &mut MutationQuota, partitions: usize, now: i64) -> bool {
        let Some((bound, user_tag, client_tag)) = self::quota(quotas, user_of(who.principal), who.client_id, "controller_mutation_rate") else {
            return true;
        };
        let bucket = self.mutations.entry((user_tag, client_tag)).or_default();
        if quota.strict {
            // Checked before recording: the topic that empties the bucket still goes.
            let tokens = bucket.measure(bound, now);
            if tokens < 0.0 {
                quota.throttle_ms = refill_ms(tokens, bound);
                return false;
            }
            bucket.record(bound, partitions as f64, now);
        } else {
            bucket.record(bound, partitions as f64, now);
            let tokens = bucket.measure(bound, now);
            if tokens < 0.0 {
                quota.throttle_ms = refill_ms(tokens, bound);
            }
        }
        true
    }

    /// Records `bytes` (a Produce's request, a Fetch's response) and `busy` (the handler's
    /// time) against the quotas on `broker`, and decides the throttle: the largest of the
    /// quotas' and one a test imposed.
    pub(crate) fn decide(&mut self, quotas: &Quotas, who: &Who<'_>, api: ApiKey, bytes: usize, busy: Duration, now: i64) -> Decision {
        let Who { broker, principal, client_id } = *who;
        let imposed = self
            .imposed
            .iter()
            .filter(|(t, _)| match t {
                Target::Client(c) => c == client_id,
                Target::Broker(b) => *b == broker,
            })
            .map(|(_, d)| d.as_millis().min(i32::MAX as u128) as i32)
            .max()
            .unwrap_or(0);
        let user = user_of(principal);
        // Request time as Kafka records it: percent-seconds of one thread (`nanosToPercentage`).
        let request_ms = if cluster_action(api) {
            0
        } else {
            let percent_seconds = busy.as_nanos() as f64 * 100.0 / 1e9;
            self.record(quotas, (broker, Kind::Request, user, client_id), percent_seconds, now).map_or(0, |(ms, _)| ms)
        };
        let bytes_kind = match api {
            ApiKey::Produce => Some(Kind::Produce),
            ApiKey::Fetch => Some(Kind::Fetch),
            _ => None,
        };
        let bytes_ms = bytes_kind.and_then(|k| self.record(quotas, (broker, k, user, client_id), bytes as f64, now));
        let bytes_ms = match bytes_ms {
            Some((ms, rate)) if ms > 0 || request_ms > 0 => {
                if api == ApiKey::Fetch {
                    // A throttled fetch is answered empty: what was recorded comes off again.
                    if let Some(rate) = self.sensors.get_mut(&rate) {
                        rate.record(-(bytes as f64), now);
                    }
                }
                ms
            }
            Some((ms, _)) => ms,
            None => 0,
        };
        let quota_ms = bytes_ms.max(request_ms);
        Decision { throttle_ms: quota_ms.max(imposed), empty_fetch: api == ApiKey::Fetch && quota_ms > 0 }
    }

    /// Records `value` on the sensor of the quota `kind` finds for this user and client id (none
    /// without a quota): the throttle it decides (`ClientQuotaManager.throttleTime`; a zero quota
    /// throttles as long as can be), and the sensor's key.
    fn record(&mut self, quotas: &Quotas, (broker, kind, user, client_id): (i32, Kind, &str, &str), value: f64, now: i64) -> Option<(i32, SensorKey)> {
        let (bound, user_tag, client_tag) = quota(quotas, user, client_id, kind.key())?;
        let key = (broker, kind, user_tag, client_tag);
        let rate = self.sensors.entry(key.clone()).or_default();
        rate.record(value, now);
        let (measured, window_ms) = rate.measure(now);
        if measured <= bound {
            return Some((0, key));
        }
        let ms = if bound > 0.0 { ((measured - bound) / bound * window_ms as f64).round() } else { f64::from(i32::MAX) };
        Some((ms.min(f64::from(i32::MAX)) as i32, key))
    }
}

/// Whether the client, not the broker, waits out the throttle at this version (KIP-219: the
/// response goes at once and the broker mutes the connection); before, the broker delays the
/// response. Produce v6 and Fetch v8 are where that changed; other apis are taken as after it.
pub(crate) fn client_throttles(api: ApiKey, version: i16) -> bool {
    match api {
        ApiKey::Produce => version >= 6,
        ApiKey::Fetch => version >= 8,
        _ => true,
    }
}

/// Sets a response's `throttle_time_ms` (ignorable: a version without the field drops it) to
/// `ms` unless it already says longer.
pub(crate) fn set_throttle_time(body: &mut ResponseKind, ms: i32) {
    if let Some(field) = throttle_time(body) {
        *field = (*field).max(ms);
    }
}

/// A response's `throttle_time_ms`, for the apis that have one.
pub(crate) fn throttle_time(body: &mut ResponseKind) -> Option<&mut i32> {
    macro_rules! field {
        ($($api:ident),*) => {
            match body {
                $(ResponseKind::$api(r) => Some(&mut r.throttle_time_ms),)*
                _ => None,
            }
        };
    }
    field!(
        AddOffsetsToTxn,
        AddPartitionsToTxn,
        AlterClientQuotas,
        AlterConfigs,
        AlterPartitionReassignments,
        AlterReplicaLogDirs,
        AlterUserScramCredentials,
        ApiVersions,
        ConsumerGroupDescribe,
        ConsumerGroupHeartbeat,
        CreateAcls,
        CreateDelegationToken,
        CreatePartitions,
        CreateTopics,
        DeleteAcls,
        DeleteGroups,
        DeleteRecords,
        DeleteTopics,
        DescribeAcls,
        DescribeClientQuotas,
        DescribeCluster,
        DescribeConfigs,
        DescribeDelegationToken,
        DescribeGroups,
        DescribeLogDirs,
        DescribeProducers,
        DescribeTopicPartitions,
        DescribeTransactions,
        DescribeUserScramCredentials,
        ElectLeaders,
        EndTxn,
        ExpireDelegationToken,
        Fetch,
        FindCoordinator,
        GetTelemetrySubscriptions,
        Heartbeat,
        IncrementalAlterConfigs,
        InitProducerId,
        JoinGroup,
        LeaveGroup,
        ListGroups,
        ListOffsets,
        ListPartitionReassignments,
        ListTransactions,
        Metadata,
        OffsetCommit,
        OffsetDelete,
        OffsetFetch,
        OffsetForLeaderEpoch,
        Produce,
        PushTelemetry,
        RenewDelegationToken,
        ShareAcknowledge,
        ShareFetch,
        ShareGroupDescribe,
        ShareGroupHeartbeat,
        SyncGroup,
        TxnOffsetCommit
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_burst_is_measured_over_ten_windows() {
        let mut r = Rate::default();
        r.record(2000.0, 0);
        assert_eq!(r.measure(0), (200.0, 10_000));
        // 12 s later the first sample has expired.
        r.record(500.0, 12_000);
        assert_eq!(r.measure(12_000), (50.0, 10_000));
        // Samples a second apart: the window covers them.
        let mut r = Rate::default();
        for t in 0..15 {
            r.record(100.0, t * 1000);
        }
        let (rate, window) = r.measure(14_000);
        assert_eq!(window, 10_000);
        assert!((rate - 110.0).abs() < 1e-9, "{rate}");
    }

    #[test]
    fn the_most_specific_quota_wins() {
        let mut q = Quotas::default();
        let entity = |pairs: &[(&str, Option<&str>)]| -> Entity { pairs.iter().map(|(t, n)| ((*t).to_owned(), n.map(str::to_owned))).collect() };
        q.set(&entity(&[("client-id", None)]), "producer_byte_rate", Some(1.0));
        q.set(&entity(&[("user", Some("alice"))]), "producer_byte_rate", Some(2.0));
        q.set(&entity(&[("user", Some("alice")), ("client-id", Some("c"))]), "producer_byte_rate", Some(3.0));
        assert_eq!(quota(&q, "alice", "c", "producer_byte_rate"), Some((3.0, "alice".into(), "c".into())));
        assert_eq!(quota(&q, "alice", "d", "producer_byte_rate"), Some((2.0, "alice".into(), String::new())));
        assert_eq!(quota(&q, "bob", "d", "producer_byte_rate"), Some((1.0, String::new(), "d".into())));
        assert_eq!(quota(&q, "bob", "d", "consumer_byte_rate"), None);
    }
}
