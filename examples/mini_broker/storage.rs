//! Topics, partitions and their in-memory logs of record batches.

use std::collections::BTreeMap;

use kwire::runtime::records::{Batch, Batches, Compression, MAGIC_OFFSET};
use kwire::{Bytes, BytesMut, Uuid};

use crate::broker::{errors, random_uuid};

/// One appended batch, stored as the producer sent it with its base offset rewritten.
pub struct StoredBatch {
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

    /// Checks every entry of a produce request's records (complete, good CRCs) and appends
    /// them, returning the first assigned offset. Entries are stored as sent, with their offset
    /// fields rewritten: a v2 batch's base offset, a legacy message's offset (a compressed
    /// legacy wrapper's is its last inner message's). Checksums do not cover these fields.
    /// Nothing is converted between formats: a Fetch returns entries as they were produced.
    pub fn append(&mut self, records: Bytes) -> Result<i64, i16> {
        let mut parsed: Vec<(Bytes, i64, i64)> = Vec::new(); // (entry, offset delta of last record, max timestamp)
        for batch in Batches::new(records) {
            match batch {
                Ok(Batch::V2(b)) => parsed.push((b.as_bytes().clone(), i64::from(b.last_offset_delta()), b.max_timestamp())),
                Ok(Batch::Legacy(m)) => {
                    let count = if m.compression() == Compression::None {
                        1
                    } else {
                        m.records().map_err(|_| errors::CORRUPT_MESSAGE)?.len() as i64
                    };
                    if count == 0 {
                        return Err(errors::CORRUPT_MESSAGE);
                    }
                    parsed.push((m.as_bytes().clone(), count - 1, m.timestamp().unwrap_or(-1)));
                }
                Ok(Batch::Partial(_)) | Err(_) => return Err(errors::CORRUPT_MESSAGE),
            }
        }
        if parsed.is_empty() {
            return Err(errors::CORRUPT_MESSAGE);
        }
        let first = self.next_offset;
        for (raw, last_delta, max_timestamp) in parsed {
            let is_v2 = raw.get(MAGIC_OFFSET) == Some(&2);
            let base_offset = self.next_offset;
            let last_offset = base_offset + last_delta;
            let mut bytes = BytesMut::from(&raw[..]);
            let offset_field = if is_v2 { base_offset } else { last_offset };
            bytes[..8].copy_from_slice(&offset_field.to_be_bytes());
            self.batches.push(StoredBatch { last_offset, max_timestamp, bytes: bytes.freeze() });
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
            let Some(Ok(batch)) = Batches::new(stored.bytes.clone()).next() else {
                continue;
            };
            let Ok(records) = batch.records() else { continue };
            for record in records {
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
