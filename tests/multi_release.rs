//! One build from several releases' specs (the default: Kafka 3.9.0 and 4.4.0 merged):
//! versions Kafka 4.x removed stay decodable next to apis and versions that only the newer
//! release has. Built only for a merged spec set.
#![cfg(kafka_specs_merged)]

use kwire::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kwire::messages::{ProduceRequest, StreamsGroupHeartbeatRequest};
use kwire::{ApiKey, Bytes, Decode, Message, RequestKind};

#[test]
fn removed_old_versions_and_new_apis_in_one_build() {
    // Produce v0-2 were removed in Kafka 4.0; v12 is new there.
    assert_eq!(ProduceRequest::VERSIONS.lo, 0);
    const { assert!(ProduceRequest::VERSIONS.hi >= 12) };

    // Produce v0, by hand: acks, timeout, one topic with one partition and 3 record bytes.
    let v0 = [
        0x00, 0x01, // acks 1
        0x00, 0x00, 0x03, 0xe8, // timeout 1000
        0x00, 0x00, 0x00, 0x01, // 1 topic
        0x00, 0x01, b't', // "t"
        0x00, 0x00, 0x00, 0x01, // 1 partition
        0x00, 0x00, 0x00, 0x02, // index 2
        0x00, 0x00, 0x00, 0x03, 0xaa, 0xbb, 0xcc, // records
    ];
    let decoded = RequestKind::decode(&mut Bytes::copy_from_slice(&v0), 0, 0).expect("Produce v0 decodes");
    let RequestKind::Produce(produce) = decoded else { panic!("not a produce request") };
    assert_eq!(produce.acks, 1);
    assert_eq!(
        produce.topic_data,
        vec![TopicProduceData {
            name: "t".into(),
            partition_data: vec![PartitionProduceData { index: 2, records: Some(Bytes::from_static(&[0xaa, 0xbb, 0xcc])), ..Default::default() }],
            ..Default::default()
        }]
    );
    assert_eq!(produce.to_bytes(0).unwrap().as_ref(), &v0[..]);

    // A new api from the newer release, through the same dispatch.
    let key = ApiKey::StreamsGroupHeartbeat;
    let request = StreamsGroupHeartbeatRequest { group_id: "g".into(), member_epoch: 3, ..Default::default() };
    let bytes = request.to_bytes(0).unwrap();
    let back = StreamsGroupHeartbeatRequest::decode(&mut bytes.clone(), 0).unwrap();
    assert_eq!(back, request);
    assert!(matches!(RequestKind::decode(&mut bytes.clone(), key.key(), 0), Ok(RequestKind::StreamsGroupHeartbeat(_))));
}

#[test]
fn every_version_says_which_release_defines_it() {
    let releases: Vec<&str> = ApiKey::Produce.info().releases.iter().map(|r| r.release).collect();
    let (oldest, newest) = (releases[0], releases[releases.len() - 1]);
    assert!(releases.len() >= 2, "{releases:?}");
    // Produce v0 exists only in the older release: a 4.x broker refuses it.
    let v0 = ApiKey::Produce.info().origin(0).unwrap();
    assert_eq!((v0.release, v0.in_newest_release, v0.unstable), (oldest, false, false));
    // The newest Produce version comes from the newest release.
    let hi = ApiKey::Produce.info().valid.hi;
    let top = ApiKey::Produce.info().origin(hi).unwrap();
    assert_eq!((top.release, top.in_newest_release), (newest, true));
    assert_eq!(ApiKey::Produce.info().origin(hi + 1), None);
    // ZooKeeper-era apis: every version from the older release only.
    let lai = ApiKey::LeaderAndIsr.info();
    assert!(lai.valid.iter().all(|v| lai.origin(v).is_some_and(|o| o.release == oldest && !o.in_newest_release)));
    // An unstable newest version says so; the versions below it do not.
    for key in ApiKey::ALL {
        let info = key.info();
        if info.latest_version_unstable {
            assert!(info.origin(info.valid.hi).unwrap().unstable, "{key:?}");
            if info.valid.hi > info.valid.lo {
                assert!(!info.origin(info.valid.hi - 1).unwrap().unstable, "{key:?}");
            }
        }
    }
}
