//! `pause` / `resume` per partition, against a broker double on kwire's ServerCodec: a paused
//! partition is left out of Fetch requests and none of its records are returned; once resumed
//! it is read from where it stood.

use crate::common;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kwire::messages::fetch_response::PartitionData;
use kwire::records::{Record, RecordBatchBuilder};
use kwire::{ApiKey, Bytes, RequestKind, Uuid};
use kwire_client::{Client, ClientConfig, Consumer, ConsumerConfig, ConsumerError, Error, TopicPartition};

const TOPIC_ID: Uuid = Uuid::from_u64_pair(3, 3);

/// Partitions 0 and 1 of `t`, three records each (offsets 0-2); logs the partitions of each
/// Fetch request.
async fn broker(fetched: Arc<Mutex<Vec<BTreeSet<i32>>>>) -> String {
    common::serve(move |port, request| {
        Some(match request {
            RequestKind::ApiVersions(_) => common::api_versions(&[ApiKey::ApiVersions, ApiKey::Metadata, ApiKey::Fetch]).into(),
            RequestKind::Metadata(_) => common::topic_metadata(port, TOPIC_ID, 2).into(),
            RequestKind::Fetch(f) => {
                fetched.lock().unwrap().push(f.topics.iter().flat_map(|t| t.partitions.iter().map(|p| p.partition)).collect());
                common::fetch_answer(&f, |p| {
                    let records = (p.fetch_offset == 0).then(|| {
                        let mut b = RecordBatchBuilder::new().base_offset(0);
                        for o in 0..3 {
                            b.append(Record::new(o, 0, None, Some(Bytes::from(format!("p{}-{o}", p.partition))))).unwrap();
                        }
                        b.build().unwrap()
                    });
                    PartitionData { partition_index: p.partition, high_watermark: 3, records, ..Default::default() }
                })
                .into()
            }
            _ => return None,
        })
    })
    .await
}

/// Polls until `n` records came or 2 s passed: (partition, offset) of each.
async fn read(consumer: &mut Consumer, n: usize) -> Vec<(i32, i64)> {
    let start = Instant::now();
    let mut out = Vec::new();
    while out.len() < n && start.elapsed() < Duration::from_secs(2) {
        out.extend(consumer.poll(Duration::from_millis(50)).await.unwrap().iter().map(|r| (r.partition, r.offset)));
    }
    out
}

#[tokio::test]
async fn a_paused_partition_is_not_fetched_until_resumed() {
    let fetched = Arc::new(Mutex::new(Vec::new()));
    let addr = broker(fetched.clone()).await;
    let client = Client::connect(ClientConfig::new(&addr)).await.unwrap();
    let (p0, p1) = (TopicPartition::new("t", 0), TopicPartition::new("t", 1));
    let mut consumer = Consumer::new(client, ConsumerConfig { fetch_max_wait: Duration::from_millis(10), ..Default::default() }).unwrap();
    consumer.assign([p0.clone(), p1.clone()]).unwrap();
    consumer.seek(&p0, 0).unwrap();
    consumer.seek(&p1, 0).unwrap();

    let err = consumer.pause(&[TopicPartition::new("t", 9)]).unwrap_err();
    assert!(matches!(err, Error::Consumer(ConsumerError::NotAssigned(_))), "{err:?}");
    consumer.pause(std::slice::from_ref(&p1)).unwrap();
    assert_eq!(consumer.paused(), BTreeSet::from([p1.clone()]));

    // Only partition 0's records, and partition 1 never asked for.
    let records = read(&mut consumer, 6).await;
    assert_eq!(records, [(0, 0), (0, 1), (0, 2)]);
    assert!(fetched.lock().unwrap().iter().all(|f| !f.contains(&1)), "{:?}", fetched.lock().unwrap());
    assert_eq!(consumer.position(&p1).await.unwrap(), 0, "a paused partition stays where it was");

    consumer.resume(std::slice::from_ref(&p1)).unwrap();
    assert!(consumer.paused().is_empty());
    assert_eq!(read(&mut consumer, 3).await, [(1, 0), (1, 1), (1, 2)]);
    assert!(fetched.lock().unwrap().iter().any(|f| f.contains(&1)));
}
