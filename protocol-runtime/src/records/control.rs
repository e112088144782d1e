//! Control records: the records of a control batch (attribute bit 5), such as the commit and
//! abort markers a transaction coordinator writes.
//!
//! ```text
//! key:   version: int16 (0), type: int16 (0 = abort, 1 = commit, 2.. = KRaft records)
//! value (abort/commit): version: int16 (0), coordinatorEpoch: int32
//! ```

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::{DecodeError, RecordsError};
use crate::primitive::{read_i16, read_i32};

use super::invalid;
use super::record::Record;

/// The type of a control record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ControlRecordType {
    /// Transaction abort marker (0).
    Abort,
    /// Transaction commit marker (1).
    Commit,
    /// Leader change (2, KRaft).
    LeaderChange,
    /// Snapshot header (3, KRaft).
    SnapshotHeader,
    /// Snapshot footer (4, KRaft).
    SnapshotFooter,
    /// KRaft version (5).
    KRaftVersion,
    /// KRaft voters (6).
    KRaftVoters,
    /// A type this crate does not know.
    Unknown(i16),
}

impl ControlRecordType {
    /// The wire id.
    pub fn id(self) -> i16 {
        match self {
            ControlRecordType::Abort => 0,
            ControlRecordType::Commit => 1,
            ControlRecordType::LeaderChange => 2,
            ControlRecordType::SnapshotHeader => 3,
            ControlRecordType::SnapshotFooter => 4,
            ControlRecordType::KRaftVersion => 5,
            ControlRecordType::KRaftVoters => 6,
            ControlRecordType::Unknown(id) => id,
        }
    }

    /// The type with this wire id.
    pub fn from_id(id: i16) -> Self {
        match id {
            0 => ControlRecordType::Abort,
            1 => ControlRecordType::Commit,
            2 => ControlRecordType::LeaderChange,
            3 => ControlRecordType::SnapshotHeader,
            4 => ControlRecordType::SnapshotFooter,
            5 => ControlRecordType::KRaftVersion,
            6 => ControlRecordType::KRaftVoters,
            id => ControlRecordType::Unknown(id),
        }
    }
}

/// The key of a control record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ControlRecordKey {
    /// Key schema version (0).
    pub version: i16,
    /// The record type.
    pub kind: ControlRecordType,
}

impl ControlRecordKey {
    /// Reads a control record key. Extra bytes after the type (newer versions) are ignored, as
    /// Kafka does.
    pub fn decode(key: &Bytes) -> Result<Self, DecodeError> {
        let mut b = key.clone();
        let version = read_i16(&mut b)?;
        if version < 0 {
            return Err(invalid(RecordsError::ControlKeyVersion(version), b.len()));
        }
        let kind = ControlRecordType::from_id(read_i16(&mut b)?);
        Ok(ControlRecordKey { version, kind })
    }

    /// The key's wire form.
    pub fn encode(&self) -> Bytes {
        let mut b = BytesMut::with_capacity(4);
        b.put_i16(self.version);
        b.put_i16(self.kind.id());
        b.freeze()
    }
}

/// The value of a commit or abort marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EndTxnMarker {
    /// Value schema version (0).
    pub version: i16,
    /// The epoch of the transaction coordinator that wrote the marker.
    pub coordinator_epoch: i32,
}

impl EndTxnMarker {
    /// Reads a marker value. Extra bytes after the epoch (newer versions) are ignored.
    pub fn decode(value: &Bytes) -> Result<Self, DecodeError> {
        let mut b = value.clone();
        let version = read_i16(&mut b)?;
        if version < 0 {
            return Err(invalid(RecordsError::EndTxnMarkerVersion(version), b.len()));
        }
        let coordinator_epoch = read_i32(&mut b)?;
        Ok(EndTxnMarker { version, coordinator_epoch })
    }

    /// The value's wire form.
    pub fn encode(&self) -> Bytes {
        let mut b = BytesMut::with_capacity(6);
        b.put_i16(self.version);
        b.put_i32(self.coordinator_epoch);
        b.freeze()
    }
}

/// A typed control record.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ControlRecord {
    /// A transaction commit marker.
    Commit(EndTxnMarker),
    /// A transaction abort marker.
    Abort(EndTxnMarker),
    /// Another control record (KRaft), with its raw value.
    Other {
        /// The key.
        key: ControlRecordKey,
        /// The raw value.
        value: Option<Bytes>,
    },
}

impl ControlRecord {
    /// Types a record of a control batch.
    pub fn parse(record: &Record) -> Result<Self, DecodeError> {
        let Some(key) = &record.key else {
            return Err(invalid(RecordsError::ControlNullKey, 0));
        };
        let key = ControlRecordKey::decode(key)?;
        match key.kind {
            ControlRecordType::Commit | ControlRecordType::Abort => {
                let Some(value) = &record.value else {
                    return Err(invalid(RecordsError::EndTxnMarkerNullValue, 0));
                };
                let marker = EndTxnMarker::decode(value)?;
                Ok(if key.kind == ControlRecordType::Commit { ControlRecord::Commit(marker) } else { ControlRecord::Abort(marker) })
            }
            _ => Ok(ControlRecord::Other { key, value: record.value.clone() }),
        }
    }

    /// The record's key and value in wire form.
    pub fn to_key_value(&self) -> (Bytes, Option<Bytes>) {
        match self {
            ControlRecord::Commit(m) => (ControlRecordKey { version: 0, kind: ControlRecordType::Commit }.encode(), Some(m.encode())),
            ControlRecord::Abort(m) => (ControlRecordKey { version: 0, kind: ControlRecordType::Abort }.encode(), Some(m.encode())),
            ControlRecord::Other { key, value } => (key.encode(), value.clone()),
        }
    }
}
