//! The admin client against a broker double: a controller-bound request answered with
//! NOT_CONTROLLER goes again after fresh metadata (Java's rule), up to a bound; an item's
//! other errors stay in its slot. No broker needed.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use kwire::messages::{create_topics_response::CreatableTopicResult, CreateTopicsResponse};
use kwire::{ApiKey, ErrorCode, RequestKind, ResponseKind};
use kwire_client::{Admin, Client, ClientConfig, NewTopic};

/// A double whose CreateTopics answers NOT_CONTROLLER for `a` the first `refusals` times;
/// counts CreateTopics and Metadata requests.
async fn double(refusals: usize) -> (String, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let (creates, metadata) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (c, m) = (creates.clone(), metadata.clone());
    let addr = common::serve(move |port, request| match request {
        RequestKind::ApiVersions(_) => Some(common::api_versions(&[ApiKey::ApiVersions, ApiKey::Metadata, ApiKey::CreateTopics]).into()),
        RequestKind::Metadata(_) => {
            m.fetch_add(1, Ordering::SeqCst);
            Some(common::one_partition_metadata(port).into())
        }
        RequestKind::CreateTopics(r) => {
            let n = c.fetch_add(1, Ordering::SeqCst);
            let topics = r
                .topics
                .iter()
                .map(|t| {
                    let code = match &t.name[..] {
                        "a" if n < refusals => ErrorCode::NOT_CONTROLLER,
                        "bad" => ErrorCode::INVALID_REPLICATION_FACTOR,
                        _ => ErrorCode::NONE,
                    };
                    CreatableTopicResult {
                        name: t.name.clone(),
                        error_code: code.0,
                        num_partitions: t.num_partitions,
                        replication_factor: 1,
                        ..Default::default()
                    }
                })
                .collect();
            Some(ResponseKind::from(CreateTopicsResponse { topics, ..Default::default() }))
        }
        _ => None,
    })
    .await;
    (addr, creates, metadata)
}

#[tokio::test]
async fn not_controller_is_retried_after_fresh_metadata() {
    let (addr, creates, metadata) = double(2).await;
    let admin = Admin::new(Client::connect(ClientConfig::new(&addr)).await.unwrap());
    let before = metadata.load(Ordering::SeqCst);
    let r = admin.create_topics(&[NewTopic::new("a", 3), NewTopic::new("bad", 1)]).await.unwrap();
    assert_eq!(r[0].as_ref().map(|t| t.partitions).ok(), Some(3), "{r:?}");
    // Another item's own error is its answer, not a reason to send again.
    assert_eq!(r[1].as_ref().unwrap_err().code(), Some(ErrorCode::INVALID_REPLICATION_FACTOR));
    assert_eq!(creates.load(Ordering::SeqCst), 3, "two NOT_CONTROLLER answers, then the third attempt");
    assert!(metadata.load(Ordering::SeqCst) >= before + 2, "metadata refreshed before each retry");
}

#[tokio::test]
async fn not_controller_without_end_is_a_retriable_error() {
    let (addr, creates, _) = double(usize::MAX).await;
    let admin = Admin::new(Client::connect(ClientConfig::new(&addr)).await.unwrap());
    let e = admin.create_topics(&[NewTopic::new("a", 1)]).await.unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::NOT_CONTROLLER), "{e:?}");
    assert!(e.is_retriable());
    assert_eq!(creates.load(Ordering::SeqCst), 10, "bounded attempts");
}

/// DescribeTopicPartitions pages: a cursor that does not go forward (a broker bug) ends the
/// paging with an error instead of asking for the same page for ever.
#[tokio::test]
async fn a_cursor_that_does_not_move_ends_the_paging() {
    use kwire::messages::{
        describe_topic_partitions_response::{Cursor, DescribeTopicPartitionsResponsePartition, DescribeTopicPartitionsResponseTopic},
        DescribeTopicPartitionsResponse,
    };
    let pages = Arc::new(AtomicUsize::new(0));
    let p = pages.clone();
    let addr = common::serve(move |port, request| match request {
        RequestKind::ApiVersions(_) => Some(common::api_versions(&[ApiKey::ApiVersions, ApiKey::Metadata, ApiKey::DescribeTopicPartitions]).into()),
        RequestKind::Metadata(_) => Some(common::one_partition_metadata(port).into()),
        RequestKind::DescribeTopicPartitions(_) => {
            p.fetch_add(1, Ordering::SeqCst);
            Some(ResponseKind::from(DescribeTopicPartitionsResponse {
                topics: vec![DescribeTopicPartitionsResponseTopic {
                    name: Some("t".into()),
                    partitions: vec![DescribeTopicPartitionsResponsePartition { partition_index: 0, leader_id: 1, ..Default::default() }],
                    ..Default::default()
                }],
                next_cursor: Some(Cursor { topic_name: "t".into(), partition_index: 1, ..Default::default() }),
                ..Default::default()
            }))
        }
        _ => None,
    })
    .await;
    let admin = Admin::new(Client::connect(ClientConfig::new(&addr)).await.unwrap());
    let e = admin.describe_topics_paged(&["t"], 1).await.unwrap_err();
    assert!(matches!(&e, kwire_client::Error::UnexpectedResponse { problem: kwire_client::Unexpected::CursorStuck, .. }), "{e:?}");
    assert_eq!(pages.load(Ordering::SeqCst), 2);
}
