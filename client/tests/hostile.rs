//! A hostile broker: 10,000 requests answered with seeded, deterministic mutations of valid
//! responses (truncated frames, bit flips, inflated length prefixes, wrong correlation ids,
//! huge claimed array counts, garbage bodies) while clients (three at once) refresh metadata,
//! produce and fetch in a loop. The client never panics, every failure is an `Error` (counted
//! by kind and printed), and the memory it holds stays bounded: this binary counts every
//! allocation (a counting global allocator) and asserts the peak.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use kwire::codec::{OutboundResponse, ServerCodec};
use kwire::messages::fetch_response::PartitionData;
use kwire::messages::list_offsets_response::{ListOffsetsPartitionResponse, ListOffsetsTopicResponse};
use kwire::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kwire::messages::*;
use kwire::{ApiKey, Bytes, BytesMut, RequestKind, ResponseKind, Uuid};
use kwire_client::{Acks, Client, ClientConfig, Consumer, ConsumerConfig, Error, Producer, ProducerConfig, ProducerRecord, TopicPartition};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio_util::codec::Framed;

use common::Rng;

/// Counts the bytes allocated now and at most.
struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(n: usize) {
    let now = CURRENT.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(now, Ordering::Relaxed);
    // KWIRE_HOSTILE_BACKTRACES=1: where each allocation over 8 MiB comes from.
    if n > 8 << 20 && std::env::var_os("KWIRE_HOSTILE_BACKTRACES").is_some() {
        thread_local!(static IN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) });
        if !IN.with(|i| i.replace(true)) {
            eprintln!("BIG ALLOC {n}: {}", std::backtrace::Backtrace::force_capture());
            IN.with(|i| i.set(false));
        }
    }
}

// SAFETY: every call is passed to the system allocator as it came; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                CURRENT.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The test's random numbers: seeded, the same sequence every run.
trait Below {
    fn below_usize(&mut self, n: usize) -> usize;
}

impl Below for Rng {
    fn below_usize(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }
}

const REQUESTS: usize = 10_000;
const SEED: u64 = 0x6b77_6972_6523;
const TOPIC_ID: Uuid = Uuid::from_u64_pair(0x1234_5678_9abc_def0, 0x1234_5678_9abc_def0);

/// What the hostile broker did.
#[derive(Default)]
struct Tally {
    answered: AtomicUsize,
    connections: AtomicU64,
    mutations: Mutex<BTreeMap<&'static str, usize>>,
    /// The records of the last Produce request: what Fetch answers with.
    records: Mutex<Option<Bytes>>,
}

/// A valid answer to `request`, or `None` for apis this broker does not serve.
fn answer(port: u16, request: RequestKind, tally: &Tally) -> Option<ResponseKind> {
    let apis = [ApiKey::ApiVersions, ApiKey::Metadata, ApiKey::Produce, ApiKey::Fetch, ApiKey::ListOffsets, ApiKey::InitProducerId];
    Some(match request {
        RequestKind::ApiVersions(_) => common::api_versions(&apis).into(),
        RequestKind::Metadata(_) => common::topic_metadata(port, TOPIC_ID, 2).into(),
        RequestKind::InitProducerId(_) => InitProducerIdResponse { producer_id: 7, ..Default::default() }.into(),
        RequestKind::Produce(p) => {
            let records = p.topic_data.iter().flat_map(|t| &t.partition_data).find_map(|d| d.records.clone());
            if let Some(r) = records {
                *tally.records.lock().unwrap() = Some(r);
            }
            ProduceResponse {
                responses: p
                    .topic_data
                    .iter()
                    .map(|t| TopicProduceResponse {
                        name: t.name.clone(),
                        partition_responses: t
                            .partition_data
                            .iter()
                            .map(|d| PartitionProduceResponse { index: d.index, log_append_time_ms: -1, ..Default::default() })
                            .collect(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }
            .into()
        }
        RequestKind::Fetch(f) => {
            let records = tally.records.lock().unwrap().clone();
            common::fetch_answer(&f, |p| PartitionData { partition_index: p.partition, high_watermark: 1000, records: records.clone(), ..Default::default() })
                .into()
        }
        RequestKind::ListOffsets(l) => ListOffsetsResponse {
            topics: l
                .topics
                .iter()
                .map(|t| ListOffsetsTopicResponse {
                    name: t.name.clone(),
                    partitions: t
                        .partitions
                        .iter()
                        .map(|p| ListOffsetsPartitionResponse { partition_index: p.partition_index, offset: 0, ..Default::default() })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into(),
        _ => return None,
    })
}

/// Mutates the encoded frame `out` (length prefix included); returns the mutation's name and
/// whether the connection is closed after it (a frame cut short or longer than what follows
/// is only noticed at the end of the stream).
fn mutate(rng: &mut Rng, out: &mut BytesMut) -> (&'static str, bool) {
    let len = out.len();
    let put_len = |out: &mut BytesMut, n: u32| out[..4].copy_from_slice(&n.to_be_bytes());
    match rng.below_usize(10) {
        0..=3 => ("none", false),
        4 => {
            out.truncate(rng.below_usize(len));
            ("truncated", true)
        }
        5 => {
            for _ in 0..1 + rng.below_usize(8) {
                let bit = 32 + rng.below_usize((len - 4) * 8);
                out[bit / 8] ^= 1 << (bit % 8);
            }
            ("bit flips", false)
        }
        6 => {
            let claimed = match rng.below_usize(3) {
                0 => u32::MAX,
                1 => i32::MAX as u32,
                _ => (len - 4 + 1 + rng.below_usize(64 << 20)) as u32,
            };
            put_len(out, claimed);
            ("inflated length", true)
        }
        7 => {
            let id = rng.next() as u32;
            out[4..8].copy_from_slice(&id.to_be_bytes());
            ("wrong correlation id", false)
        }
        8 => {
            // A count as int32 (classic arrays) or as an unsigned varint (compact ones).
            let huge: &[u8] = if rng.below_usize(2) == 0 { &[0x7f, 0xff, 0xff, 0xff] } else { &[0xff, 0xff, 0xff, 0xff, 0x0f] };
            if len > 8 + huge.len() {
                let at = 8 + rng.below_usize(len - 8 - huge.len());
                out[at..at + huge.len()].copy_from_slice(huge);
            }
            ("huge count", false)
        }
        _ => {
            let keep = 8 + rng.below_usize(len.saturating_sub(8));
            out.truncate(keep);
            for _ in 0..rng.below_usize(256) {
                out.extend_from_slice(&[rng.next() as u8]);
            }
            let n = out.len() - 4;
            put_len(out, n as u32);
            ("garbage body", false)
        }
    }
}

/// The hostile broker: answers like a broker, then mutates the answer (per connection, a
/// sequence seeded by `SEED` and the connection's number).
async fn hostile(tally: Arc<Tally>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let n = tally.connections.fetch_add(1, Ordering::Relaxed);
            let tally = tally.clone();
            tokio::spawn(async move {
                let mut rng = Rng(SEED ^ (n + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                let mut conn = Framed::new(tcp, ServerCodec::new());
                while let Some(Ok(frame)) = conn.next().await {
                    let Ok(request) = frame.decode_body() else { return };
                    let Some(body) = answer(port, request, &tally) else { return };
                    let mut out = BytesMut::new();
                    let Ok(response) = OutboundResponse::new(&frame, body) else { return };
                    if response.encode(&mut out, usize::MAX).is_err() {
                        return;
                    }
                    tally.answered.fetch_add(1, Ordering::Relaxed);
                    let (what, close) = mutate(&mut rng, &mut out);
                    *tally.mutations.lock().unwrap().entry(what).or_default() += 1;
                    if conn.get_mut().write_all(&out).await.is_err() || close {
                        return;
                    }
                }
            });
        }
    });
    format!("127.0.0.1:{port}")
}

/// The error's kind: its variant's name (and the kind inside a producer or consumer error).
fn kind(e: &Error) -> String {
    let debug = format!("{e:?}");
    let end = debug.find(|c: char| !c.is_alphanumeric()).unwrap_or(debug.len());
    let outer = &debug[..end];
    match e {
        Error::Producer(_) | Error::Consumer(_) | Error::Group(_) => {
            let inner = &debug[end + 1..];
            let inner_end = inner.find(|c: char| !c.is_alphanumeric()).unwrap_or(inner.len());
            format!("{outer}::{}", &inner[..inner_end])
        }
        _ => outer.to_owned(),
    }
}

/// What one driver saw: successes, rounds, its slowest round, and its errors by kind.
#[derive(Default)]
struct Seen {
    ok: usize,
    rounds: usize,
    slowest: Duration,
    errors: BTreeMap<String, usize>,
}

impl Seen {
    fn error(&mut self, e: Error) {
        let n = self.errors.entry(kind(&e)).or_default();
        if *n == 0 {
            println!("first {}: {e}", kind(&e));
        }
        *n += 1;
    }
}

/// One driver's rounds until the broker has given `REQUESTS` answers in all: a client (new
/// every 50 rounds, so bootstrap and negotiation are hit too) refreshes metadata, produces a
/// record and polls once per round.
async fn drive(addr: String, tally: Arc<Tally>, start: Instant) -> Seen {
    let mut config = ClientConfig::new(&addr).request_timeout(Duration::from_millis(500));
    config.connection.connect_timeout = Duration::from_millis(500);
    config.reconnect_backoff = Duration::from_millis(1);
    config.reconnect_backoff_max = Duration::from_millis(5);
    config.metadata_refresh_backoff = Duration::from_millis(1);
    let producer_config = ProducerConfig {
        acks: Acks::All,
        linger: Duration::ZERO,
        retries: 2,
        retry_backoff: Duration::from_millis(1),
        retry_backoff_max: Duration::from_millis(5),
        delivery_timeout: Duration::from_secs(2),
        max_block: Duration::from_millis(500),
        ..Default::default()
    };
    let consumer_config = ConsumerConfig { retry_backoff: Duration::from_millis(1), fetch_max_wait: Duration::from_millis(10), ..Default::default() };
    let tp = TopicPartition::new("t", 0);

    let mut seen = Seen::default();
    let mut session: Option<(Client, Producer, Consumer)> = None;
    while tally.answered.load(Ordering::Relaxed) < REQUESTS {
        assert!(start.elapsed() < Duration::from_secs(600), "10,000 answers not within 10 min: {:?}", tally.answered);
        seen.rounds += 1;
        let round = Instant::now();
        let Some((client, producer, consumer)) = session.as_mut() else {
            match Client::connect(config.clone()).await {
                Ok(client) => {
                    let producer = Producer::new(client.clone(), producer_config.clone()).unwrap();
                    let mut consumer = Consumer::new(client.clone(), consumer_config.clone()).unwrap();
                    consumer.assign([tp.clone()]).unwrap();
                    consumer.seek(&tp, 0).unwrap();
                    session = Some((client, producer, consumer));
                }
                Err(e) => seen.error(e),
            }
            continue;
        };
        match client.refresh_metadata().await {
            Ok(_) => seen.ok += 1,
            Err(e) => seen.error(e),
        }
        match producer.send(ProducerRecord::new("t", "value").key("key").partition(0)).await {
            Ok(delivery) => match tokio::time::timeout(Duration::from_secs(10), delivery).await {
                Ok(Ok(_)) => seen.ok += 1,
                Ok(Err(e)) => seen.error(e),
                Err(_) => panic!("a delivery neither succeeded nor failed within 10 s"),
            },
            Err(e) => {
                // A fatal state (a flipped error code can fence the producer): a new one;
                // versions garbled in a mutated ApiVersions answer: a new client.
                let (fatal, versions) = (!e.is_retriable(), matches!(e, Error::UnsupportedVersion { .. }));
                seen.error(e);
                if versions {
                    session = None;
                    continue;
                }
                if fatal {
                    *producer = Producer::new(client.clone(), producer_config.clone()).unwrap();
                }
            }
        }
        match tokio::time::timeout(Duration::from_secs(10), consumer.poll(Duration::from_millis(20))).await {
            Ok(Ok(_)) => seen.ok += 1,
            Ok(Err(e)) => {
                seen.error(e);
                // Whatever the error left behind: read from 0 again.
                let _ = consumer.seek(&tp, 0);
            }
            Err(_) => panic!("a poll did not return within 10 s"),
        }
        seen.slowest = seen.slowest.max(round.elapsed());
        if seen.rounds % 50 == 0 {
            session = None;
        }
    }
    seen
}

/// Clients driven at once. Most of a round is waiting, and how long is chance: a record whose
/// answers were mutated in turn waits out its 2 s delivery timeout, and one client alone took
/// 13-129 s for the 10,000 answers, by how many such waits came one after another; three
/// overlap their waits (4-7 s).
const DRIVERS: usize = 3;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_broker_neither_panics_the_client_nor_grows_its_memory() {
    let panics = Arc::new(AtomicUsize::new(0));
    let counted = panics.clone();
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        counted.fetch_add(1, Ordering::SeqCst);
        default_hook(info);
    }));

    let tally = Arc::new(Tally::default());
    let addr = hostile(tally.clone()).await;
    let start = Instant::now();
    let drivers: Vec<_> = (0..DRIVERS).map(|_| tokio::spawn(drive(addr.clone(), tally.clone(), start))).collect();
    let mut seen = Seen::default();
    for d in drivers {
        let s = d.await.expect("a driver panicked");
        seen.ok += s.ok;
        seen.rounds += s.rounds;
        seen.slowest = seen.slowest.max(s.slowest);
        for (kind, n) in s.errors {
            *seen.errors.entry(kind).or_default() += n;
        }
    }
    let Seen { ok, rounds, slowest, errors } = seen;
    let took = start.elapsed();
    let peak = PEAK.load(Ordering::Relaxed);
    println!(
        "{} answers on {} connections in {took:?}, {rounds} rounds of {DRIVERS} drivers (slowest {slowest:?}), {ok} successes",
        tally.answered.load(Ordering::Relaxed),
        tally.connections.load(Ordering::Relaxed)
    );
    println!("mutations: {:?}", tally.mutations.lock().unwrap());
    println!("errors: {errors:?}");
    println!("peak allocated: {:.1} MiB ({peak} bytes)", peak as f64 / (1 << 20) as f64);
    assert_eq!(panics.load(Ordering::SeqCst), 0, "the client panicked");
    // 5.4 MiB measured (5.2 with one driver); 64.4 MiB when the claimed size of each frame was
    // reserved as soon as its prefix came.
    assert!(peak < 32 << 20, "peak allocated {peak} bytes");
    assert!(ok > 0, "nothing succeeded");
    // The mutations were noticed as such.
    assert!(errors.contains_key("Protocol"), "{errors:?}");
}
