//! Data messages carried with an int16 version in front (the consumer protocol's subscription
//! and assignment inside JoinGroup/SyncGroup), checked against bytes written by hand from the
//! specs in the layout of Java's `ConsumerProtocol.serializeSubscription`/`serializeAssignment`.

use kwire::messages::consumer_protocol_assignment::TopicPartition as AssignedTopic;
use kwire::messages::consumer_protocol_subscription::TopicPartition;
use kwire::messages::{ConsumerProtocolAssignment, ConsumerProtocolSubscription};
use kwire::{smallvec, Bytes, DecodeErrorKind, Message};

fn subscription_v3() -> ConsumerProtocolSubscription {
    ConsumerProtocolSubscription {
        topics: vec!["t".into()],
        user_data: Some(Bytes::from_static(&[0xab])),
        owned_partitions: vec![TopicPartition { topic: "t".into(), partitions: smallvec![0, 2] }],
        generation_id: 5,
        rack_id: Some("r".into()),
    }
}

const SUBSCRIPTION_V3: &[u8] = &[
    0x00, 0x03, // version 3
    0x00, 0x00, 0x00, 0x01, 0x00, 0x01, b't', // topics ["t"]
    0x00, 0x00, 0x00, 0x01, 0xab, // user data [ab]
    0x00, 0x00, 0x00, 0x01, 0x00, 0x01, b't', 0x00, 0x00, 0x00, 0x02, 0, 0, 0, 0, 0, 0, 0, 2, // owned t: [0, 2]
    0x00, 0x00, 0x00, 0x05, // generation 5
    0x00, 0x01, b'r', // rack "r"
];

#[test]
fn subscription_golden_bytes_both_ways() {
    let v0 = ConsumerProtocolSubscription { topics: vec!["t1".into()], ..Default::default() };
    let bytes = v0.to_version_prefixed_bytes(0).unwrap();
    assert_eq!(bytes.as_ref(), &[0, 0, 0, 0, 0, 1, 0, 2, b't', b'1', 0xff, 0xff, 0xff, 0xff]);
    assert_eq!(ConsumerProtocolSubscription::from_version_prefixed(&mut bytes.clone()).unwrap(), (0, v0));

    let v3 = subscription_v3();
    assert_eq!(v3.to_version_prefixed_bytes(3).unwrap().as_ref(), SUBSCRIPTION_V3);
    let (version, back) = ConsumerProtocolSubscription::from_version_prefixed(&mut Bytes::from_static(SUBSCRIPTION_V3)).unwrap();
    assert_eq!((version, back), (3, v3));
}

#[test]
fn assignment_golden_bytes_both_ways() {
    let a = ConsumerProtocolAssignment { assigned_partitions: vec![AssignedTopic { topic: "t".into(), partitions: smallvec![1] }], user_data: None };
    let expected: &[u8] = &[0, 1, 0, 0, 0, 1, 0, 1, b't', 0, 0, 0, 1, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff];
    assert_eq!(a.to_version_prefixed_bytes(1).unwrap().as_ref(), expected);
    assert_eq!(ConsumerProtocolAssignment::from_version_prefixed(&mut Bytes::from_static(expected)).unwrap(), (1, a));
}

#[test]
fn a_newer_version_reads_as_the_newest_known_and_bad_input_is_refused() {
    // A member of a newer client: version 9 with one more (unknown) field appended.
    let mut newer = SUBSCRIPTION_V3.to_vec();
    newer[1] = 9;
    newer.extend_from_slice(&[0x00, 0x00, 0x00, 0x07]);
    let (version, back) = ConsumerProtocolSubscription::from_version_prefixed(&mut Bytes::from(newer)).unwrap();
    assert_eq!((version, back), (9, subscription_v3()));

    // At a version this build knows, every byte must be used.
    let mut long = SUBSCRIPTION_V3.to_vec();
    long.push(0);
    let err = ConsumerProtocolSubscription::from_version_prefixed(&mut Bytes::from(long)).unwrap_err();
    assert_eq!(err.kind(), &DecodeErrorKind::TrailingBytes { left: 1 }, "{err}");
    // A negative version, a missing version, a truncated body.
    let err = ConsumerProtocolSubscription::from_version_prefixed(&mut Bytes::from_static(&[0xff, 0xff, 0, 0, 0, 0])).unwrap_err();
    assert_eq!(err.kind(), &DecodeErrorKind::UnsupportedVersion { version: -1 }, "{err}");
    assert!(ConsumerProtocolSubscription::from_version_prefixed(&mut Bytes::from_static(&[0x00])).is_err());
    let err = ConsumerProtocolSubscription::from_version_prefixed(&mut Bytes::from_static(&SUBSCRIPTION_V3[..20])).unwrap_err();
    assert!(err.to_string().contains("ConsumerProtocolSubscription"), "{err}");
}
