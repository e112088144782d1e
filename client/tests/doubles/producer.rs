//! Producer retries, metadata refreshes and the delivery timeout, against a broker double on
//! kwire's ServerCodec whose Produce answers are scripted.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kwire::messages::{
    produce_response::{PartitionProduceResponse, TopicProduceResponse},
    *,
};
use kwire::records::Compression;
use kwire::{ApiKey, RequestKind, ResponseKind};
use kwire_client::{Client, ClientConfig, Error, Producer, ProducerConfig, ProducerError, ProducerRecord};

#[derive(Default)]
struct Script {
    /// Produce requests to fail before succeeding.
    failures: usize,
    /// The error code they fail with.
    error: i16,
    /// Answer with this base offset (42 unless set).
    base_offset: Option<i64>,
    /// Answer for partition 9 instead of 0.
    wrong_partition: bool,
    produces: AtomicUsize,
    metadata: AtomicUsize,
    sequences: std::sync::Mutex<Vec<(i64, i32)>>,
    /// Check sequences as a broker does: write a batch only if it starts at the next
    /// sequence (its offset is then its sequence), refuse a later one with
    /// OUT_OF_ORDER_SEQUENCE_NUMBER.
    check_sequences: bool,
    /// Hold the answer to Produce request number N (from 0) this long (the producer sends
    /// more meanwhile), then fail it with `error`.
    hold_and_fail: Option<(usize, Duration)>,
    next_sequence: std::sync::Mutex<i32>,
    out_of_order: AtomicUsize,
    /// Answers to Produce requests by number (from 0): error code and log start offset;
    /// requests past the list succeed.
    answers: Vec<(i16, i64)>,
    /// Every batch's producer id, epoch and base sequence, in arrival order.
    batches: std::sync::Mutex<Vec<(i64, i16, i32)>>,
    /// Every InitProducerId's producer id and epoch fields.
    inits: std::sync::Mutex<Vec<(i64, i16)>>,
    /// The epoch the first InitProducerId answers with (later ones: 0); ids count up from 7.
    first_epoch: i16,
    /// Every batch's codec and its records' values, in arrival order.
    contents: std::sync::Mutex<Vec<(Compression, Vec<Vec<u8>>)>>,
}

async fn broker(script: Arc<Script>) -> String {
    common::serve(move |port, request| {
        let body: ResponseKind = match request {
            RequestKind::ApiVersions(_) => common::api_versions(&[ApiKey::ApiVersions, ApiKey::Metadata, ApiKey::Produce, ApiKey::InitProducerId]).into(),
            RequestKind::Metadata(_) => {
                script.metadata.fetch_add(1, Ordering::SeqCst);
                common::one_partition_metadata(port).into()
            }
            RequestKind::InitProducerId(r) => {
                let mut inits = script.inits.lock().unwrap();
                inits.push((r.producer_id, r.producer_epoch));
                let n = inits.len() as i64 - 1;
                let producer_epoch = if n == 0 { script.first_epoch } else { 0 };
                InitProducerIdResponse { producer_id: 7 + n, producer_epoch, ..Default::default() }.into()
            }
            RequestKind::Produce(p) => {
                let n = script.produces.fetch_add(1, Ordering::SeqCst);
                let held = script.hold_and_fail.is_some_and(|(at, _)| at == n);
                if let (true, Some((_, d))) = (held, script.hold_and_fail) {
                    // Off the worker (the one test holding runs on a multi-thread runtime): a
                    // plain sleep kept the worker for the whole hold, with any task tokio had
                    // just put in its LIFO slot, which the other worker cannot steal. One CI
                    // run sent nothing behind the held batch during the hold; whether that slot
                    // was why, 24 runs under load did not show.
                    tokio::task::block_in_place(|| std::thread::sleep(d));
                }
                use kwire::records::{Batch, RecordsField};
                let mut batch = None;
                for b in p.topic_data[0].partition_data[0].records.batches() {
                    if let Ok(Batch::V2(b)) = b {
                        script.sequences.lock().unwrap().push((b.producer_id(), b.base_sequence()));
                        script.batches.lock().unwrap().push((b.producer_id(), b.producer_epoch(), b.base_sequence()));
                        batch = Some((b.base_sequence(), b.last_offset_delta() + 1));
                        let values = b.records().unwrap().map(|r| r.unwrap().value.map(|v| v.to_vec()).unwrap_or_default()).collect();
                        script.contents.lock().unwrap().push((b.compression(), values));
                    }
                }
                let mut error_code = if n < script.failures || held { script.error } else { 0 };
                let (scripted, log_start_offset) = script.answers.get(n).copied().unwrap_or((0, 0));
                if error_code == 0 {
                    error_code = scripted;
                }
                let mut base_offset = script.base_offset.unwrap_or(42);
                if let (true, 0, Some((sequence, count))) = (script.check_sequences, error_code, batch) {
                    let mut next = script.next_sequence.lock().unwrap();
                    base_offset = i64::from(sequence);
                    if sequence == *next {
                        *next += count;
                    } else if sequence < *next {
                        error_code = 46; // DUPLICATE_SEQUENCE_NUMBER
                    } else {
                        script.out_of_order.fetch_add(1, Ordering::SeqCst);
                        error_code = 45; // OUT_OF_ORDER_SEQUENCE_NUMBER
                    }
                }
                ProduceResponse {
                    responses: vec![TopicProduceResponse {
                        name: "t".into(),
                        partition_responses: vec![PartitionProduceResponse {
                            index: if script.wrong_partition { 9 } else { 0 },
                            error_code,
                            base_offset,
                            log_append_time_ms: -1,
                            log_start_offset,
                            ..Default::default()
                        }],
                        ..Default::default()
                    }],
                    ..Default::default()
                }
                .into()
            }
            _ => return None,
        };
        Some(body)
    })
    .await
}

fn config() -> ProducerConfig {
    ProducerConfig { retry_backoff: Duration::from_millis(20), retry_backoff_max: Duration::from_millis(50), linger: Duration::ZERO, ..Default::default() }
}

#[tokio::test]
async fn retriable_errors_are_retried_with_the_same_sequence_and_fresh_metadata() {
    let script = Arc::new(Script { failures: 3, error: 6, ..Default::default() }); // NOT_LEADER_OR_FOLLOWER
    let addr = broker(script.clone()).await;
    let client = Client::connect(ClientConfig::new(&addr)).await.unwrap();
    let producer = Producer::new(client, config()).unwrap();
    let m = producer.send(ProducerRecord::new("t", "v")).await.unwrap().await.unwrap();
    assert_eq!((m.partition, m.offset), (0, 42));
    assert_eq!(script.produces.load(Ordering::SeqCst), 4);
    assert!(script.metadata.load(Ordering::SeqCst) >= 4, "metadata refreshed after each NOT_LEADER_OR_FOLLOWER");
    assert_eq!(*script.sequences.lock().unwrap(), vec![(7, 0); 4], "every attempt carries producer id 7, sequence 0");
    let m = producer.send(ProducerRecord::new("t", "w")).await.unwrap().await.unwrap();
    assert_eq!(m.offset, 42);
    assert_eq!(script.sequences.lock().unwrap().last(), Some(&(7, 1)), "the next batch has the next sequence");
    producer.close().await.unwrap();
}

#[tokio::test]
async fn records_fail_after_the_delivery_timeout() {
    let script = Arc::new(Script { failures: usize::MAX, error: 6, ..Default::default() });
    let addr = broker(script.clone()).await;
    let client = Client::connect(ClientConfig::new(&addr)).await.unwrap();
    let producer = Producer::new(client, ProducerConfig { delivery_timeout: Duration::from_millis(600), ..config() }).unwrap();
    let start = std::time::Instant::now();
    let err = producer.send(ProducerRecord::new("t", "v")).await.unwrap().await.unwrap_err();
    println!("delivery timeout: {err}");
    assert!(start.elapsed() >= Duration::from_millis(550) && start.elapsed() < Duration::from_secs(5));
    let m = err.to_string();
    assert!(
        matches!(&err, Error::Producer(ProducerError::DeliveryTimeout { .. })) && m.contains("delivery timeout") && m.contains("NOT_LEADER_OR_FOLLOWER"),
        "{err:?}"
    );
    assert!(script.produces.load(Ordering::SeqCst) > 3, "retried until then");
    producer.close().await.unwrap();
}

#[tokio::test]
async fn non_retriable_errors_fail_at_once() {
    let script = Arc::new(Script { failures: 1, error: 10, ..Default::default() }); // MESSAGE_TOO_LARGE
    let addr = broker(script.clone()).await;
    let client = Client::connect(ClientConfig::new(&addr)).await.unwrap();
    let producer = Producer::new(client, config()).unwrap();
    let err = producer.send(ProducerRecord::new("t", "v")).await.unwrap().await.unwrap_err();
    assert_eq!(err.code().and_then(|c| c.name()), Some("MESSAGE_TOO_LARGE"), "{err}");
    assert!(!err.is_retriable());
    assert_eq!(script.produces.load(Ordering::SeqCst), 1);
    producer.close().await.unwrap();
}

#[tokio::test]
async fn odd_produce_responses_are_errors_or_saturate_not_panics() {
    let script = Arc::new(Script { wrong_partition: true, ..Default::default() });
    let addr = broker(script.clone()).await;
    let producer = Producer::new(Client::connect(ClientConfig::new(&addr)).await.unwrap(), config()).unwrap();
    let err = producer.send(ProducerRecord::new("t", "v")).await.unwrap().await.unwrap_err();
    assert!(matches!(&err, Error::UnexpectedResponse { api: kwire::ApiKey::Produce, problem: kwire_client::Unexpected::Missing(m) } if m == "t-0"), "{err:?}");
    producer.close().await.unwrap();

    let script = Arc::new(Script { base_offset: Some(i64::MAX), ..Default::default() });
    let addr = broker(script.clone()).await;
    let producer =
        Producer::new(Client::connect(ClientConfig::new(&addr)).await.unwrap(), ProducerConfig { linger: Duration::from_millis(50), ..config() }).unwrap();
    let (a, b) = (producer.send(ProducerRecord::new("t", "a")).await.unwrap(), producer.send(ProducerRecord::new("t", "b")).await.unwrap());
    assert_eq!((a.await.unwrap().offset, b.await.unwrap().offset), (i64::MAX, i64::MAX));
    producer.close().await.unwrap();
}

#[tokio::test]
async fn metadata_is_refreshed_periodically() {
    let script = Arc::new(Script::default());
    let addr = broker(script.clone()).await;
    let mut config = ClientConfig::new(&addr);
    config.metadata_max_age = Duration::from_millis(200);
    let client = Client::connect(config).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let n = script.metadata.load(Ordering::SeqCst);
    assert!((4..=8).contains(&n), "{n} Metadata requests in 1.1 s at a 200 ms max age");
    drop(client);
    // The refresh task ends with the client.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = script.metadata.load(Ordering::SeqCst);
    assert!(after <= n + 1, "refreshes went on after the client was dropped: {n} -> {after}");
}

#[tokio::test]
async fn a_dropped_producer_delivers_what_it_queued_then_stops() {
    let script = Arc::new(Script::default());
    let addr = broker(script.clone()).await;
    let client = Client::connect(ClientConfig::new(&addr)).await.unwrap();
    let producer = Producer::new(client, ProducerConfig { linger: Duration::from_millis(100), ..config() }).unwrap();
    let d = producer.send(ProducerRecord::new("t", "v")).await.unwrap();
    drop(producer);
    assert_eq!(d.await.unwrap().offset, 42);
}

#[tokio::test]
async fn an_idle_producer_sends_after_its_linger_not_its_idle_sleep() {
    let script = Arc::new(Script::default());
    let addr = broker(script.clone()).await;
    let client = Client::connect(ClientConfig::new(&addr)).await.unwrap();
    let producer = Producer::new(client, ProducerConfig { linger: Duration::from_millis(5), ..config() }).unwrap();
    producer.send(ProducerRecord::new("t", "first")).await.unwrap().await.unwrap();
    // The sender now sleeps (up to 500 ms) with nothing queued; a new record must wake it.
    tokio::time::sleep(Duration::from_millis(100)).await;
    for _ in 0..5 {
        let t = std::time::Instant::now();
        producer.send(ProducerRecord::new("t", "v")).await.unwrap().await.unwrap();
        assert!(t.elapsed() < Duration::from_millis(250), "delivered {:?} after send with a 5 ms linger", t.elapsed());
    }
    producer.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_in_flight_together_are_resent_in_order_after_a_failure() {
    // The second batch (the first goes alone, until the broker has the producer's state) fails
    // (NOT_LEADER_OR_FOLLOWER) after the producer has sent the next ones behind it; the double
    // refuses those for their sequences, as a broker does. All of them must be written once,
    // in the order sent.
    // Held a second before it fails: time for the batches behind it to go out on a loaded machine
    // (300 ms was not always enough in CI).
    let script = Arc::new(Script { error: 6, check_sequences: true, hold_and_fail: Some((1, Duration::from_millis(1000))), ..Default::default() });
    let addr = broker(script.clone()).await;
    let client = Client::connect(ClientConfig::new(&addr)).await.unwrap();
    // Full batches of 3 records go at once, the last one after the linger.
    let producer = Producer::new(client, ProducerConfig { batch_size: 150, linger: Duration::from_millis(200), ..config() }).unwrap();
    let mut deliveries = Vec::new();
    for i in 0..20 {
        deliveries.push(producer.send(ProducerRecord::new("t", format!("value {i:02} of the test"))).await.unwrap());
    }
    let mut offsets = Vec::new();
    for d in deliveries {
        offsets.push(d.await.unwrap().offset);
    }
    assert_eq!(offsets, (0..20).collect::<Vec<i64>>(), "each record written once, in the order sent");
    let stats = producer.stats();
    assert!(stats.max_in_flight >= 2, "batches of the partition were in flight together: {stats:?}");
    assert!(script.out_of_order.load(Ordering::SeqCst) >= 1, "some were refused behind the failed one: {:?} {stats:?}", script.sequences.lock().unwrap());
    // Refused behind a batch that was not yet written is no gap: resent, no epoch bump.
    assert_eq!(stats.epoch_bumps, 0, "{stats:?}");
    assert!(script.batches.lock().unwrap().iter().all(|&(pid, epoch, _)| (pid, epoch) == (7, 0)), "{:?}", script.batches.lock().unwrap());
    producer.close().await.unwrap();
}

#[tokio::test]
async fn max_in_flight_is_checked() {
    let client = Client::connect(ClientConfig::new(&broker(Arc::new(Script::default())).await)).await.unwrap();
    for bad in [0, 6] {
        let err = Producer::new(client.clone(), ProducerConfig { max_in_flight: bad, ..config() }).err();
        assert!(matches!(err, Some(Error::Config(_))), "{bad}: {err:?}");
    }
}

/// A producer on a double with these Produce answers, linger 0, one record at a time.
async fn scripted(script: Script) -> (Arc<Script>, Producer) {
    scripted_with(script, config()).await
}

/// The same with these settings.
async fn scripted_with(script: Script, config: ProducerConfig) -> (Arc<Script>, Producer) {
    let script = Arc::new(script);
    let addr = broker(script.clone()).await;
    let client = Client::connect(ClientConfig::new(&addr)).await.unwrap();
    (script.clone(), Producer::new(client, config).unwrap())
}

// KIP-360 as Java's idempotent producer does it (TransactionManager.canRetry and
// handleFailedBatch, bumpIdempotentProducerEpoch): the epoch is bumped locally, the same
// producer id with epoch + 1 and the partition's sequences from 0, with no InitProducerId; the
// broker answers a non-transactional InitProducerId with a new id whatever id and epoch it
// carries (see producer.rs's real-broker test), so asking it would lose the id.

#[tokio::test]
async fn an_out_of_order_sequence_after_acknowledged_batches_bumps_the_epoch_and_is_resent() {
    // The second batch (sequence 1) follows the acknowledged one and is refused: a gap the
    // broker will not fill. Java retries it from sequence 0 under the next epoch.
    let (script, producer) = scripted(Script { answers: vec![(0, 0), (45, 0)], ..Default::default() }).await;
    for v in ["a", "b", "c"] {
        producer.send(ProducerRecord::new("t", v)).await.unwrap().await.unwrap();
    }
    assert_eq!(*script.batches.lock().unwrap(), vec![(7, 0, 0), (7, 0, 1), (7, 1, 0), (7, 1, 1)], "resent as (id 7, epoch 1, sequence 0), then on");
    assert_eq!(*script.inits.lock().unwrap(), vec![(-1, -1)], "one InitProducerId, the first");
    assert_eq!(producer.stats().epoch_bumps, 1);
    producer.close().await.unwrap();
}

#[tokio::test]
async fn unknown_producer_id_bumps_the_epoch_once_the_log_start_offset_is_known() {
    // UNKNOWN_PRODUCER_ID without a log start offset (-1: the broker may be moving the
    // partition) is retried as it was; with one, the broker lost the producer's state: bump.
    let (script, producer) = scripted(Script { answers: vec![(0, 0), (59, -1), (59, 0)], ..Default::default() }).await;
    for v in ["a", "b", "c"] {
        let m = producer.send(ProducerRecord::new("t", v)).await.unwrap().await.unwrap();
        assert_eq!(m.offset, 42);
    }
    assert_eq!(*script.batches.lock().unwrap(), vec![(7, 0, 0), (7, 0, 1), (7, 0, 1), (7, 1, 0), (7, 1, 1)]);
    assert_eq!(script.inits.lock().unwrap().len(), 1);
    producer.close().await.unwrap();
}

#[tokio::test]
async fn invalid_producer_epoch_fails_the_batch_and_the_next_one_starts_a_new_epoch() {
    let (script, producer) = scripted(Script { answers: vec![(0, 0), (47, 0)], ..Default::default() }).await;
    producer.send(ProducerRecord::new("t", "a")).await.unwrap().await.unwrap();
    let err = producer.send(ProducerRecord::new("t", "b")).await.unwrap().await.unwrap_err();
    assert_eq!(err.code().and_then(|c| c.name()), Some("INVALID_PRODUCER_EPOCH"), "{err}");
    producer.send(ProducerRecord::new("t", "c")).await.unwrap().await.unwrap();
    assert_eq!(*script.batches.lock().unwrap(), vec![(7, 0, 0), (7, 0, 1), (7, 1, 0)], "the batch after the failed one: epoch 1, sequence 0");
    assert_eq!(script.inits.lock().unwrap().len(), 1);
    producer.close().await.unwrap();
}

#[tokio::test]
async fn a_non_retriable_failure_leaves_no_gap_in_the_sequences() {
    // MESSAGE_TOO_LARGE fails its batch; its sequence (1) is never written, so the later
    // batches would be refused for ever: the epoch is bumped and they start from 0.
    let (script, producer) = scripted(Script { answers: vec![(0, 0), (10, 0)], ..Default::default() }).await;
    producer.send(ProducerRecord::new("t", "a")).await.unwrap().await.unwrap();
    assert!(producer.send(ProducerRecord::new("t", "b")).await.unwrap().await.is_err());
    producer.send(ProducerRecord::new("t", "c")).await.unwrap().await.unwrap();
    assert_eq!(*script.batches.lock().unwrap(), vec![(7, 0, 0), (7, 0, 1), (7, 1, 0)]);
    producer.close().await.unwrap();
}

#[tokio::test]
async fn an_exhausted_epoch_takes_a_new_producer_id() {
    // The first id comes with epoch 32767: a bump cannot go further, so the producer asks for a
    // new id (InitProducerId without one) and starts it at sequence 0.
    let (script, producer) = scripted(Script { answers: vec![(0, 0), (47, 0)], first_epoch: i16::MAX, ..Default::default() }).await;
    producer.send(ProducerRecord::new("t", "a")).await.unwrap().await.unwrap();
    assert!(producer.send(ProducerRecord::new("t", "b")).await.unwrap().await.is_err());
    producer.send(ProducerRecord::new("t", "c")).await.unwrap().await.unwrap();
    assert_eq!(*script.batches.lock().unwrap(), vec![(7, i16::MAX, 0), (7, i16::MAX, 1), (8, 0, 0)]);
    assert_eq!(*script.inits.lock().unwrap(), vec![(-1, -1), (-1, -1)]);
    producer.close().await.unwrap();
}

/// What `send_with` callbacks saw: (record number, offset or error code name).
type Seen = Arc<std::sync::Mutex<Vec<(usize, Result<i64, String>)>>>;

/// A callback noting record `i`'s outcome in `seen`.
fn note(seen: &Seen, i: usize) -> impl FnOnce(kwire_client::Result<kwire_client::RecordMetadata>) + Send + 'static {
    let seen = seen.clone();
    move |r| {
        let r = r.map(|m| m.offset).map_err(|e| e.code().and_then(|c| c.name()).unwrap_or("no code").to_string());
        seen.lock().unwrap().push((i, r));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callbacks_get_each_records_offset_in_order_and_flush_waits_for_them() {
    // Offsets are the batches' sequences (the double writes a batch at its sequence), so record
    // i is at offset i; futures and callbacks mixed in the same batches.
    let config = ProducerConfig { batch_size: 150, linger: Duration::from_millis(50), ..config() };
    let (script, producer) = scripted_with(Script { check_sequences: true, ..Default::default() }, config).await;
    let seen = Seen::default();
    let mut futures = Vec::new();
    for i in 0..40usize {
        let record = ProducerRecord::new("t", format!("value {i:02} of the test"));
        if i % 3 == 0 {
            futures.push((i, producer.send(record).await.unwrap()));
        } else {
            let (p, note) = (producer.clone(), note(&seen, i));
            // Calls into the producer (its lock is free while callbacks run).
            producer
                .send_with(record, move |r| {
                    let _ = p.stats();
                    note(r)
                })
                .await
                .unwrap();
        }
    }
    producer.flush().await.unwrap();
    let seen = seen.lock().unwrap().clone();
    let expected: Vec<(usize, Result<i64, String>)> = (0..40).filter(|i| i % 3 != 0).map(|i| (i, Ok(i as i64))).collect();
    assert_eq!(seen, expected, "every callback called once, with its own offset, in record order, before flush returned");
    for (i, d) in futures {
        assert_eq!(d.await.unwrap().offset, i as i64);
    }
    assert!(script.produces.load(Ordering::SeqCst) >= 10, "several batches");
    producer.close().await.unwrap();
}

/// `compress_only_if_smaller`: a batch lz4 cannot shrink goes uncompressed, one it can goes
/// compressed; without the setting both go compressed, as Java's do.
#[tokio::test]
async fn batches_that_do_not_shrink_go_uncompressed_only_when_asked() {
    // 4 KiB of noise (xorshift) and 4 KiB of one repeated line.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let noise: Vec<u8> = (0..4096)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let text = "the same line again\n".repeat(200).into_bytes();
    for asked in [true, false] {
        let config = ProducerConfig { compression: Compression::Lz4, compress_only_if_smaller: asked, ..config() };
        let (script, producer) = scripted_with(Script::default(), config).await;
        for value in [&noise, &text] {
            producer.send(ProducerRecord::new("t", value.clone())).await.unwrap().await.unwrap();
        }
        producer.close().await.unwrap();
        let contents = script.contents.lock().unwrap().clone();
        let codecs: Vec<Compression> = contents.iter().map(|c| c.0).collect();
        let expected = if asked { [Compression::None, Compression::Lz4] } else { [Compression::Lz4, Compression::Lz4] };
        assert_eq!(codecs, expected, "compress_only_if_smaller: {asked}");
        assert_eq!(contents.iter().map(|c| c.1.clone()).collect::<Vec<_>>(), [vec![noise.clone()], vec![text.clone()]]);
    }
}

#[tokio::test]
async fn each_half_of_a_split_batch_calls_its_own_records_callbacks() {
    // Request 0 (a batch of 6 records, lingered together) is refused as MESSAGE_TOO_LARGE; the
    // halves go again: the first is written at its sequence (offsets 0-2), the second refused
    // with INVALID_TOPIC_EXCEPTION (not retriable), which its records' callbacks get.
    let script = Script { answers: vec![(10, 0), (0, 0), (17, 0)], check_sequences: true, ..Default::default() };
    let (script, producer) = scripted_with(script, ProducerConfig { linger: Duration::from_millis(200), ..config() }).await;
    let seen = Seen::default();
    for i in 0..6 {
        producer.send_with(ProducerRecord::new("t", format!("value {i}")), note(&seen, i)).await.unwrap();
    }
    producer.flush().await.unwrap();
    assert_eq!(producer.stats().batch_splits, 1);
    assert_eq!(script.batches.lock().unwrap().iter().map(|b| b.2).collect::<Vec<_>>(), [0, 0, 3], "the batch, then its halves");
    let mut expected: Vec<(usize, Result<i64, String>)> = (0..3).map(|i| (i, Ok(i as i64))).collect();
    expected.extend((3..6).map(|i| (i, Err("INVALID_TOPIC_EXCEPTION".to_string()))));
    assert_eq!(*seen.lock().unwrap(), expected);
    producer.close().await.unwrap();
}

#[tokio::test]
async fn a_panicking_callback_does_not_stop_the_others() {
    let (_, producer) = scripted_with(Script::default(), ProducerConfig { linger: Duration::from_millis(50), ..config() }).await;
    let seen = Seen::default();
    producer.send_with(ProducerRecord::new("t", "a"), note(&seen, 0)).await.unwrap();
    producer.send_with(ProducerRecord::new("t", "b"), |_| panic!("a callback's panic")).await.unwrap();
    producer.send_with(ProducerRecord::new("t", "c"), note(&seen, 2)).await.unwrap();
    producer.flush().await.unwrap();
    assert_eq!(*seen.lock().unwrap(), vec![(0, Ok(42)), (2, Ok(44))]);
    // The producer goes on.
    assert_eq!(producer.send(ProducerRecord::new("t", "d")).await.unwrap().await.unwrap().offset, 42);
    producer.close().await.unwrap();
}
