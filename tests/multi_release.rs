//! One build from several releases' specs (`KAFKA_WIRE_SPECS=kafka-3.9.0:kafka-trunk-...`):
//! versions Kafka 4.x removed stay decodable next to apis and versions that only the newer
//! release has. Built only for such a merged spec set (CI builds one).
#![cfg(kafka_specs_merged)]

use kafka_wire::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_wire::messages::{ProduceRequest, StreamsGroupHeartbeatRequest};
use kafka_wire::{ApiKey, Bytes, Decode, Message, RequestKind};

#[test]
fn removed_old_versions_and_new_apis_in_one_build() {
    // Produce v0-2 were removed in Kafka 4.0; v12 is new there.
    assert_eq!(ProduceRequest::VERSIONS.lo, 0);
    assert!(ProduceRequest::VERSIONS.hi >= 12);

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
    let decoded = RequestKind::decode(0, 0, &mut Bytes::copy_from_slice(&v0)).expect("Produce v0 decodes");
    let RequestKind::Produce(produce) = decoded else { panic!("not a produce request") };
    assert_eq!(produce.acks, 1);
    assert_eq!(
        produce.topic_data,
        vec![TopicProduceData {
            name: "t".into(),
            partition_data: vec![PartitionProduceData {
                index: 2,
                records: Some(Bytes::from_static(&[0xaa, 0xbb, 0xcc])),
                ..Default::default()
            }],
            ..Default::default()
        }]
    );
    assert_eq!(produce.to_bytes(0).unwrap().as_ref(), &v0[..]);

    // A new api from the trunk snapshot, through the same dispatch.
    let key = ApiKey::StreamsGroupHeartbeat;
    let request = StreamsGroupHeartbeatRequest { group_id: "g".into(), member_epoch: 3, ..Default::default() };
    let bytes = request.to_bytes(0).unwrap();
    let back = StreamsGroupHeartbeatRequest::decode(&mut bytes.clone(), 0).unwrap();
    assert_eq!(back, request);
    assert!(matches!(RequestKind::decode(key.key(), 0, &mut bytes.clone()), Ok(RequestKind::StreamsGroupHeartbeat(_))));
}
