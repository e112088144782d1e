//! The share consumer against a broker double on kwire's ServerCodec, for what a real broker
//! does not show: the requests on the wire (share session epochs; acknowledgements batched
//! with a type per offset where they differ, gaps for an acquired control batch, releases for
//! acquired offsets past the data and for a partition never assigned; the session closed at -1
//! and the group left at -1) and answers no broker should give (a session lost, an acquired
//! range to the end of the offset space, an unknown topic id, a corrupt batch), none of which
//! panics.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use kwire::messages::{
    api_versions_response::ApiVersion,
    find_coordinator_response::Coordinator,
    share_acknowledge_response::{PartitionData as AckPartition, ShareAcknowledgeTopicResponse},
    share_fetch_response::{AcquiredRecords, PartitionData, ShareFetchableTopicResponse},
    share_group_heartbeat_response::{Assignment, TopicPartitions},
    *,
};
use kwire::records::{Record, RecordBatchBuilder};
use kwire::{ApiKey, Bytes, RequestKind, ResponseKind, Uuid, VersionRange};
use kwire_client::{AcknowledgeType, AcknowledgementCommit, Client, ClientConfig, Error, ShareConsumer, ShareConsumerConfig};

const TOPIC: Uuid = Uuid([7; 16]);
const STRANGER: Uuid = Uuid([9; 16]);

/// An acknowledgement batch as sent: topic id, partition, first, last, types.
type AckBatch = (Uuid, i32, i64, i64, Vec<i8>);

/// What the double saw: (api, session epoch, acknowledgements), and the heartbeats' epochs.
#[derive(Default)]
struct Seen {
    requests: Vec<(ApiKey, i32, Vec<AckBatch>)>,
    heartbeats: Vec<i32>,
    fetches: usize,
    /// The partitions each ShareFetch names.
    named: Vec<Vec<(Uuid, i32)>>,
    metadata: usize,
}

fn records(base: i64, n: i64) -> Vec<u8> {
    let mut b = RecordBatchBuilder::new().base_offset(base);
    for o in base..base + n {
        b.append(Record::new(o, 0, None, Some(Bytes::from(format!("v{o}"))))).unwrap();
    }
    b.build().unwrap().to_vec()
}

fn partition(index: i32, data: Option<Vec<u8>>, acquired: &[(i64, i64, i16)]) -> PartitionData {
    PartitionData {
        partition_index: index,
        // Not nullable from v1.
        records: Some(data.map(Bytes::from).unwrap_or_default()),
        acquired_records: acquired
            .iter()
            .map(|&(first_offset, last_offset, delivery_count)| AcquiredRecords { first_offset, last_offset, delivery_count, ..Default::default() })
            .collect(),
        ..Default::default()
    }
}

async fn broker(seen: Arc<Mutex<Seen>>) -> String {
    common::serve(move |port, request| {
        let mut seen = seen.lock().unwrap();
        let body: ResponseKind = match request {
            RequestKind::ApiVersions(_) => {
                let apis = [
                    (ApiKey::ApiVersions, ApiKey::ApiVersions.stable_versions()),
                    (ApiKey::Metadata, ApiKey::Metadata.stable_versions()),
                    (ApiKey::FindCoordinator, ApiKey::FindCoordinator.stable_versions()),
                    (ApiKey::ShareGroupHeartbeat, VersionRange::new(1, 1)),
                    (ApiKey::ShareFetch, VersionRange::new(1, 2)),
                    (ApiKey::ShareAcknowledge, VersionRange::new(1, 2)),
                ];
                let api_keys = apis.iter().map(|(a, v)| ApiVersion { api_key: a.key(), min_version: v.lo, max_version: v.hi, ..Default::default() }).collect();
                ApiVersionsResponse { api_keys, ..Default::default() }.into()
            }
            RequestKind::Metadata(_) => {
                seen.metadata += 1;
                let mut m = common::one_partition_metadata(port);
                m.topics[0].topic_id = TOPIC;
                m.into()
            }
            // v4+: the coordinators list only.
            RequestKind::FindCoordinator(r) => FindCoordinatorResponse {
                coordinators: r
                    .coordinator_keys
                    .iter()
                    .map(|k| Coordinator { key: k.clone(), node_id: 1, host: "127.0.0.1".into(), port: port as i32, ..Default::default() })
                    .collect(),
                ..Default::default()
            }
            .into(),
            RequestKind::ShareGroupHeartbeat(r) => {
                seen.heartbeats.push(r.member_epoch);
                let joining = r.member_epoch == 0;
                ShareGroupHeartbeatResponse {
                    member_id: Some(r.member_id.clone()),
                    member_epoch: if r.member_epoch < 0 { r.member_epoch } else { 1 },
                    heartbeat_interval_ms: 200,
                    assignment: joining.then(|| Assignment {
                        topic_partitions: vec![TopicPartitions { topic_id: TOPIC, partitions: [0].into_iter().collect(), ..Default::default() }],
                        ..Default::default()
                    }),
                    ..Default::default()
                }
                .into()
            }
            RequestKind::ShareFetch(r) => {
                let acks = r
                    .topics
                    .iter()
                    .flat_map(|t| {
                        t.partitions.iter().flat_map(move |p| {
                            p.acknowledgement_batches
                                .iter()
                                .map(move |b| (t.topic_id, p.partition_index, b.first_offset, b.last_offset, b.acknowledge_types.to_vec()))
                        })
                    })
                    .collect();
                seen.requests.push((ApiKey::ShareFetch, r.share_session_epoch, acks));
                seen.named.push(r.topics.iter().flat_map(|t| t.partitions.iter().map(move |p| (t.topic_id, p.partition_index))).collect());
                seen.fetches += 1;
                let mut response = ShareFetchResponse { acquisition_lock_timeout_ms: 30_000, ..Default::default() };
                match seen.fetches {
                    // Records 0-4, a commit marker at 5; acquired 0-7 (6-7 past the data); and
                    // records of a topic this member was never assigned.
                    1 => {
                        let mut data = records(0, 5);
                        data.extend(RecordBatchBuilder::end_txn_marker(5, 0, 3, 0, true, 0).unwrap().to_vec());
                        response.responses = vec![
                            ShareFetchableTopicResponse {
                                topic_id: TOPIC,
                                partitions: vec![partition(0, Some(data), &[(0, 2, 1), (3, 7, 1)])],
                                ..Default::default()
                            },
                            ShareFetchableTopicResponse {
                                topic_id: STRANGER,
                                partitions: vec![partition(0, Some(records(0, 2)), &[(0, 1, 1)])],
                                ..Default::default()
                            },
                        ];
                    }
                    // The session is lost.
                    2 => response.error_code = 123, // INVALID_SHARE_SESSION_EPOCH
                    // A range to the end of the offset space, nothing in it but garbage.
                    3 => {
                        response.responses = vec![ShareFetchableTopicResponse {
                            topic_id: TOPIC,
                            partitions: vec![partition(0, Some(vec![0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 20, 0, 0, 0, 0, 2, 1, 2, 3]), &[(8, i64::MAX, 3)])],
                            ..Default::default()
                        }];
                    }
                    // Records 8-9 again, delivered a fourth time.
                    4 => {
                        response.responses = vec![ShareFetchableTopicResponse {
                            topic_id: TOPIC,
                            partitions: vec![partition(0, Some(records(8, 2)), &[(8, 9, 4)])],
                            ..Default::default()
                        }];
                    }
                    // The leader moved (to itself, epoch 1: a KIP-951 hint, no Metadata).
                    5 => {
                        let mut p = partition(0, None, &[]);
                        p.error_code = 6; // NOT_LEADER_OR_FOLLOWER
                        p.current_leader.leader_id = 1;
                        p.current_leader.leader_epoch = 1;
                        response.responses = vec![ShareFetchableTopicResponse { topic_id: TOPIC, partitions: vec![p], ..Default::default() }];
                        response.node_endpoints =
                            vec![share_fetch_response::NodeEndpoint { node_id: 1, host: "127.0.0.1".into(), port: port as i32, ..Default::default() }];
                    }
                    _ => {}
                }
                response.into()
            }
            RequestKind::ShareAcknowledge(r) => {
                let acks: Vec<AckBatch> = r
                    .topics
                    .iter()
                    .flat_map(|t| {
                        t.partitions.iter().flat_map(move |p| {
                            p.acknowledgement_batches
                                .iter()
                                .map(move |b| (t.topic_id, p.partition_index, b.first_offset, b.last_offset, b.acknowledge_types.to_vec()))
                        })
                    })
                    .collect();
                let responses = r
                    .topics
                    .iter()
                    .map(|t| ShareAcknowledgeTopicResponse {
                        topic_id: t.topic_id,
                        partitions: t.partitions.iter().map(|p| AckPartition { partition_index: p.partition_index, ..Default::default() }).collect(),
                        ..Default::default()
                    })
                    .collect();
                seen.requests.push((ApiKey::ShareAcknowledge, r.share_session_epoch, acks));
                ShareAcknowledgeResponse { responses, ..Default::default() }.into()
            }
            other => {
                eprintln!("the double does not answer {:?}", other.api_key());
                return None;
            }
        };
        Some(body)
    })
    .await
}

#[tokio::test]
async fn acknowledgements_and_sessions_on_the_wire_and_hostile_answers() {
    common::init_tracing();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let addr = broker(seen.clone()).await;
    let client = Client::connect(ClientConfig::new(&addr)).await.unwrap();
    let config = ShareConsumerConfig { fetch_max_wait: Duration::from_millis(20), retry_backoff: Duration::from_millis(10), ..ShareConsumerConfig::new("g") };
    let mut c = ShareConsumer::new(client, config).unwrap();
    let outcomes: Arc<Mutex<Vec<AcknowledgementCommit>>> = Arc::default();
    let o = outcomes.clone();
    c.set_acknowledgement_commit_callback(move |a| o.lock().unwrap().push(a.clone()));
    c.subscribe(&["t"]).unwrap();

    let first = c.poll(Duration::from_secs(5)).await.unwrap();
    assert_eq!(first.iter().map(|r| (r.offset, r.delivery_count)).collect::<Vec<_>>(), (0..5).map(|o| (o, 1)).collect::<Vec<_>>());
    assert_eq!(first[4].value.as_deref(), Some(&b"v4"[..]));
    assert_eq!(c.acquisition_lock_timeout(), Some(Duration::from_secs(30)));
    // Implicit mode: this poll accepts 0-4, with the gap (5) and the unread 6-7 released, in
    // one batch on the ShareFetch; the stranger's records are released in a ShareAcknowledge.
    // That ShareFetch's session is lost; a new one opens; the next answer is hostile.
    let mut third = Vec::new();
    for _ in 0..20 {
        third = c.poll(Duration::from_millis(200)).await.unwrap();
        if !third.is_empty() {
            break;
        }
    }
    assert_eq!(third.iter().map(|r| (r.offset, r.delivery_count)).collect::<Vec<_>>(), vec![(8, 4), (9, 4)]);
    // Accepted on the next ShareFetch, which finds the leader moved; the one after names the
    // partition again in the session.
    assert!(c.poll(Duration::from_millis(300)).await.unwrap().is_empty());
    c.close().await.unwrap();

    let seen = seen.lock().unwrap();
    assert_eq!(seen.named.get(5), Some(&vec![(TOPIC, 0)]), "the partition named again after NOT_LEADER_OR_FOLLOWER: {:?}", seen.named);
    assert_eq!(seen.metadata, 1, "the leader hint spares a Metadata request");
    let requests: Vec<(ApiKey, i32)> = seen.requests.iter().map(|(a, e, _)| (*a, *e)).collect();
    // Epoch 0 opens; 1 (the stranger's release), 2 (the fetch with acknowledgements) is lost;
    // 0 again, 1, 2 ... and -1 closes.
    assert_eq!(requests[..4], [(ApiKey::ShareFetch, 0), (ApiKey::ShareAcknowledge, 1), (ApiKey::ShareFetch, 2), (ApiKey::ShareFetch, 0)], "{requests:?}");
    assert_eq!(requests.last(), Some(&(ApiKey::ShareAcknowledge, -1)), "{requests:?}");
    assert_eq!(seen.requests[1].2, vec![(STRANGER, 0, 0, 1, vec![2])]);
    assert_eq!(seen.requests[2].2, vec![(TOPIC, 0, 0, 7, vec![1, 1, 1, 1, 1, 0, 2, 2])]);
    // The hostile range: released (as far as this client tracks), in one batch of one type.
    let hostile = seen.requests.iter().find_map(|(_, _, a)| a.iter().find(|x| x.2 == 8 && x.4 == vec![2]).cloned());
    let (_, _, first_offset, last_offset, _) = hostile.expect("the hostile range released");
    assert_eq!((first_offset, last_offset), (8, 8 + (1 << 16) - 1));
    // The fifth ShareFetch accepts 8-9; close has nothing left but to end the session.
    let fifth = seen.requests.iter().filter(|r| r.0 == ApiKey::ShareFetch).nth(4).map(|r| r.2.clone());
    assert_eq!(fifth, Some(vec![(TOPIC, 0, 8, 9, vec![1])]));
    assert_eq!(seen.requests.last().map(|r| r.2.clone()), Some(vec![]));
    assert_eq!(seen.heartbeats.first(), Some(&0));
    assert_eq!(seen.heartbeats.last(), Some(&-1));

    // What the application hears: the lost acknowledgements as failed, the others as taken
    // (gaps are not the application's).
    let outcomes = outcomes.lock().unwrap();
    let lost = outcomes.iter().find(|o| o.partition.topic == "t" && o.offsets() == vec![0, 1, 2, 3, 4, 6, 7]).expect("the lost acknowledgements");
    assert!(matches!(&lost.error, Some(Error::Broker { code, .. }) if code.0 == 123), "{lost:?}");
    assert_eq!(lost.offsets_of(AcknowledgeType::Release), vec![6, 7]);
    let last = outcomes.last().expect("the fifth ShareFetch's");
    assert_eq!((last.offsets(), last.error.is_none()), (vec![8, 9], true), "{last:?}");
}
