//! Record batches inside generated `records` fields (Produce, Fetch, ...).
//!
//! Generated messages keep a `records` field as the raw `Bytes` of the wire (zero-copy, exact
//! on re-encode); [`RecordsField`] reads them as batches with the runtime's records codec.

pub use kwire_runtime::records::*;

use bytes::Bytes;

/// Reading a generated `records` field (`Bytes`, or `Option<Bytes>` where nullable) as batches.
pub trait RecordsField {
    /// The batches, lazily: headers first, records on demand; a truncated last batch (as a
    /// Fetch response may end with) comes out as [`Batch::Partial`], not as an error.
    fn batches(&self) -> Batches {
        self.batches_with(DecodeOptions::default())
    }

    /// The batches, with decode options (decompression limit, CRC checks).
    fn batches_with(&self, options: DecodeOptions) -> Batches;
}

impl RecordsField for Bytes {
    fn batches_with(&self, options: DecodeOptions) -> Batches {
        Batches::with_options(self.clone(), options)
    }
}

impl RecordsField for Option<Bytes> {
    fn batches_with(&self, options: DecodeOptions) -> Batches {
        Batches::with_options(self.clone().unwrap_or_default(), options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_produce_request_records_field_reads_as_batches() {
        use crate::messages::produce_request::{PartitionProduceData, TopicProduceData};
        use crate::messages::ProduceRequest;
        use crate::{Decode, Message};

        let mut builder = RecordBatchBuilder::new();
        builder.append(Record::new(0, 5, None, Some(Bytes::from_static(b"v")))).expect("appends");
        let batch = builder.build().expect("a batch");
        let request = ProduceRequest {
            topic_data: vec![TopicProduceData {
                name: "t".into(),
                partition_data: vec![PartitionProduceData { index: 0, records: Some(batch), ..Default::default() }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let version = ProduceRequest::VERSIONS.hi;
        let wire = request.to_bytes(version).expect("encodes");
        let back = ProduceRequest::decode(&mut wire.clone(), version).expect("decodes");
        let batches: Vec<_> = back.topic_data[0].partition_data[0].records.batches().collect::<Result<_, _>>().expect("batches");
        assert_eq!(batches.len(), 1);
        let records = batches[0].records().expect("records");
        assert_eq!(records[0].value.as_deref(), Some(&b"v"[..]));
    }
}
