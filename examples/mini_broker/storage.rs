//! Topics, partitions and their in-memory logs of record batches.

use std::collections::BTreeMap;

use kafka_wire::runtime::records::{Batch, Batches, RecordBatch};
use kafka_wire::{Bytes, BytesMut, Uuid};

use crate::broker::{errors, random_uuid};

/// One appended batch, stored as the producer sent it with its base offset rewritten.
pub struct StoredBatch {
    pub base_offset: i64,
    pub last_offset: i64,
    pub max_timestamp: i64,
    pub bytes: Bytes,
}

#[derive(Default)]
pub struct Partition {
    pub batches: Vec<StoredBatch>,
    /// The next offset to assign: the high watermark (every append is committed at once).
    pub next_offset: i64,
}

impl Partition {
    pub fn high_watermark(&self) -> i64 {
        self.next_offset
    }

    /// The stored batches from the one holding `offset`, up to `max_bytes` (but always the
    /// first, as Kafka does, so that a consumer can make progress past a large batch).
    pub fn read(&self, offset: i64, max_bytes: usize) -> Vec<Bytes> {
        let start = self.batches.partition_point(|b| b.last_offset < offset);
        let mut out = Vec::new();
        let mut size = 0;
        for batch in self.batches.get(start..).unwrap_or_default() {
            if !out.is_empty() && size + batch.bytes.len() > max_bytes {
                break;
            }
            size += batch.bytes.len();
            out.push(batch.bytes.clone());
        }
        out
    }

    /// Checks every batch of a produce request's records (all must be complete magic 2 batches
    /// with good CRCs) and appends them, returning the first assigned offset.
    pub fn append(&mut self, records: Bytes) -> Result<i64, i16> {
        let mut parsed: Vec<RecordBatch> = Vec::new();
        for batch in Batches::new(records) {
            match batch {
                Ok(Batch::V2(b)) => parsed.push(b),
                Ok(Batch::Legacy(_)) => return Err(errors::UNSUPPORTED_FOR_MESSAGE_FORMAT),
                Ok(Batch::Partial(_)) | Err(_) => return Err(errors::CORRUPT_MESSAGE),
            }
        }
        if parsed.is_empty() {
            return Err(errors::CORRUPT_MESSAGE);
        }
        let first = self.next_offset;
        for batch in parsed {
            let base_offset = self.next_offset;
            // The CRC covers the bytes from the attributes on, not the base offset, so the batch
            // stays valid with its first eight bytes replaced.
            let mut bytes = BytesMut::from(&batch.as_bytes()[..]);
            bytes[..8].copy_from_slice(&base_offset.to_be_bytes());
            let last_offset = base_offset + i64::from(batch.last_offset_delta());
            self.batches.push(StoredBatch {
                base_offset,
                last_offset,
                max_timestamp: batch.max_timestamp(),
                bytes: bytes.freeze(),
            });
            self.next_offset = last_offset + 1;
        }
        Ok(first)
    }

    /// The offset and timestamp of the first record with a timestamp at or after `timestamp`,
    /// or of the record with the largest timestamp when `timestamp` is `None`.
    pub fn offset_for_timestamp(&self, timestamp: Option<i64>) -> Option<(i64, i64)> {
        let mut best: Option<(i64, i64)> = None;
        for stored in &self.batches {
            if matches!(timestamp, Some(t) if stored.max_timestamp < t) {
                continue;
            }
            let Some(Ok(Batch::V2(batch))) = Batches::new(stored.bytes.clone()).next() else {
                continue;
            };
            let Ok(records) = batch.records() else { continue };
            for record in records.flatten() {
                match timestamp {
                    Some(t) if record.timestamp >= t => return Some((record.offset, record.timestamp)),
                    Some(_) => {}
                    None if best.map_or(true, |(_, ts)| record.timestamp > ts) => {
                        best = Some((record.offset, record.timestamp))
                    }
                    None => {}
                }
            }
        }
        best
    }
}

pub struct Topic {
    pub id: Uuid,
    pub partitions: Vec<Partition>,
}

#[derive(Default)]
pub struct Topics {
    pub by_name: BTreeMap<String, Topic>,
}

impl Topics {
    pub fn create(&mut self, name: &str, partitions: i32) -> &Topic {
        self.by_name.entry(name.to_owned()).or_insert_with(|| Topic {
            id: random_uuid(),
            partitions: (0..partitions).map(|_| Partition::default()).collect(),
        })
    }

    pub fn by_id(&self, id: Uuid) -> Option<(&String, &Topic)> {
        self.by_name.iter().find(|(_, t)| t.id == id)
    }

    pub fn partition_mut(&mut self, topic: &str, partition: i32) -> Option<&mut Partition> {
        let index = usize::try_from(partition).ok()?;
        self.by_name.get_mut(topic)?.partitions.get_mut(index)
    }
}

/// Kafka's rule for topic names: 1 to 249 characters of `[a-zA-Z0-9._-]`, not `.` or `..`.
pub fn valid_topic_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 249
        && name != "."
        && name != ".."
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}
