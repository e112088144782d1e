//! An idempotent producer on a connection that re-authenticates (KIP-368) while Produce
//! requests are in flight, against a broker double with 400 ms SASL sessions: the
//! re-authentication waits for the in-flight responses, and the producer's sender for the
//! broker keeps taking them in while its next request waits for the re-authentication.

use crate::common;

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kwire::messages::{
    produce_response::{PartitionProduceResponse, TopicProduceResponse},
    *,
};
use kwire::{ApiKey, RequestKind, ResponseKind};
use kwire_client::{Client, ClientConfig, Producer, ProducerConfig, ProducerRecord, Sasl};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn produce_goes_on_across_reauthentications() {
    let handshakes = Arc::new(AtomicUsize::new(0));
    let offset = Arc::new(AtomicI64::new(0));
    let (h, o) = (handshakes.clone(), offset.clone());
    let addr = common::serve(move |port, request| {
        let body: ResponseKind = match request {
            RequestKind::ApiVersions(_) => {
                let apis = [ApiKey::ApiVersions, ApiKey::Metadata, ApiKey::Produce, ApiKey::InitProducerId, ApiKey::SaslHandshake, ApiKey::SaslAuthenticate];
                common::api_versions(&apis).into()
            }
            RequestKind::SaslHandshake(_) => {
                h.fetch_add(1, Ordering::SeqCst);
                SaslHandshakeResponse { mechanisms: vec!["PLAIN".into()], ..Default::default() }.into()
            }
            RequestKind::SaslAuthenticate(_) => SaslAuthenticateResponse { session_lifetime_ms: 400, ..Default::default() }.into(),
            RequestKind::Metadata(_) => common::one_partition_metadata(port).into(),
            RequestKind::InitProducerId(_) => InitProducerIdResponse { producer_id: 7, ..Default::default() }.into(),
            RequestKind::Produce(p) => {
                // Slow enough that requests are in flight when the session runs out.
                std::thread::sleep(Duration::from_millis(5));
                use kwire::records::{Batch, RecordsField};
                let records: i64 = p.topic_data[0].partition_data[0]
                    .records
                    .batches()
                    .filter_map(|b| match b {
                        Ok(Batch::V2(b)) => Some(i64::from(b.last_offset_delta()) + 1),
                        _ => None,
                    })
                    .sum();
                let base_offset = o.fetch_add(records, Ordering::SeqCst);
                ProduceResponse {
                    responses: vec![TopicProduceResponse {
                        name: "t".into(),
                        partition_responses: vec![PartitionProduceResponse { index: 0, base_offset, ..Default::default() }],
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
    .await;
    let client = Client::connect(ClientConfig::new(&addr).sasl(Sasl::plain("u", "p"))).await.unwrap();
    let producer = Producer::new(client, ProducerConfig { linger: Duration::ZERO, ..Default::default() }).unwrap();
    let mut deliveries = Vec::new();
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_millis(1500) {
        deliveries.push(producer.send(ProducerRecord::new("t", "v")).await.unwrap());
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    tokio::time::timeout(Duration::from_secs(10), producer.flush()).await.expect("no deadlock with the re-authentication").unwrap();
    let mut offsets = Vec::new();
    for d in deliveries {
        offsets.push(d.await.unwrap().offset);
    }
    let n = offsets.len() as i64;
    assert_eq!(offsets, (0..n).collect::<Vec<_>>(), "every record once, in order");
    assert!(handshakes.load(Ordering::SeqCst) >= 3, "re-authenticated: {} handshakes", handshakes.load(Ordering::SeqCst));
    println!("{n} records across {} authentications", handshakes.load(Ordering::SeqCst));
    producer.close().await.unwrap();
}
