//! Topics and their partitions: replicas, leaders, leader epochs, configs, logs.

use std::collections::BTreeMap;

use kwire::{ErrorCode, Uuid};

use crate::log::{AppendRules, PartitionLog};

/// One partition: where it lives and its log (every replica holds the same log: replication is
/// instant and lossless).
#[derive(Debug)]
pub(crate) struct Partition {
    pub(crate) replicas: Vec<i32>,
    /// -1 while no replica's broker is up.
    pub(crate) leader: i32,
    pub(crate) leader_epoch: i32,
    pub(crate) log: PartitionLog,
}

impl Partition {
    /// The in-sync replicas: those whose brokers are up.
    pub(crate) fn isr(&self, up: &dyn Fn(i32) -> bool) -> Vec<i32> {
        self.replicas.iter().copied().filter(|b| up(*b)).collect()
    }

    /// The first replica whose broker is up leads, with a new epoch when that changes.
    pub(crate) fn elect(&mut self, up: &dyn Fn(i32) -> bool) {
        let leader = self.replicas.iter().copied().find(|b| up(*b)).unwrap_or(-1);
        if leader != self.leader {
            self.set_leader(leader);
        }
    }

    /// Makes `leader` the leader (or none, -1) under the next leader epoch.
    pub(crate) fn set_leader(&mut self, leader: i32) {
        self.leader = leader;
        self.leader_epoch += 1;
        if leader >= 0 {
            self.log.begin_epoch(self.leader_epoch);
        }
    }
}

/// A topic.
#[derive(Debug)]
pub(crate) struct Topic {
    pub(crate) id: Uuid,
    pub(crate) partitions: Vec<Partition>,
    /// Configs set on the topic (the others have the broker's defaults, [`DEFAULTS`]).
    pub(crate) configs: BTreeMap<String, String>,
}

/// Topic configs and their defaults, as a 4.x broker describes them (the ones the fake's
/// appends and fetches obey first).
pub(crate) const DEFAULTS: &[(&str, &str)] = &[
    ("cleanup.policy", "delete"),
    ("compression.type", "producer"),
    ("delete.retention.ms", "86400000"),
    ("file.delete.delay.ms", "60000"),
    ("flush.messages", "9223372036854775807"),
    ("flush.ms", "9223372036854775807"),
    ("follower.replication.throttled.replicas", ""),
    ("index.interval.bytes", "4096"),
    ("leader.replication.throttled.replicas", ""),
    ("local.retention.bytes", "-2"),
    ("local.retention.ms", "-2"),
    ("max.compaction.lag.ms", "9223372036854775807"),
    ("max.message.bytes", "1048588"),
    ("message.timestamp.after.max.ms", "3600000"),
    ("message.timestamp.before.max.ms", "9223372036854775807"),
    ("message.timestamp.type", "CreateTime"),
    ("min.cleanable.dirty.ratio", "0.5"),
    ("min.compaction.lag.ms", "0"),
    ("min.insync.replicas", "1"),
    ("preallocate", "false"),
    ("remote.storage.enable", "false"),
    ("retention.bytes", "-1"),
    ("retention.ms", "604800000"),
    ("segment.bytes", "1073741824"),
    ("segment.index.bytes", "10485760"),
    ("segment.jitter.ms", "0"),
    ("segment.ms", "604800000"),
    ("unclean.leader.election.enable", "false"),
];

impl Topic {
    /// A config's value: set on the topic, else the default.
    pub(crate) fn config(&self, name: &str) -> Option<&str> {
        self.configs.get(name).map(String::as_str).or_else(|| DEFAULTS.iter().find(|(n, _)| *n == name).map(|(_, v)| *v))
    }

    /// What appends to this topic obey.
    pub(crate) fn append_rules(&self, produce_version: i16) -> AppendRules {
        AppendRules {
            max_batch_bytes: self.config("max.message.bytes").and_then(|v| v.parse().ok()).unwrap_or(1_048_588),
            log_append_time: self.config("message.timestamp.type") == Some("LogAppendTime"),
            produce_version,
        }
    }

    /// `min.insync.replicas`.
    pub(crate) fn min_isr(&self) -> usize {
        self.config("min.insync.replicas").and_then(|v| v.parse().ok()).unwrap_or(1)
    }

    pub(crate) fn partition(&self, index: i32) -> Option<&Partition> {
        self.partitions.get(usize::try_from(index).ok()?)
    }

    pub(crate) fn partition_mut(&mut self, index: i32) -> Option<&mut Partition> {
        self.partitions.get_mut(usize::try_from(index).ok()?)
    }
}

/// Kafka's rule for topic names: 1 to 249 characters of `[a-zA-Z0-9._-]`, not `.` or `..`.
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 249 && name != "." && name != ".." && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Checks a config Kafka would check on a topic: the name must be a topic config, the value
/// of its type.
pub(crate) fn check_config(name: &str, value: Option<&str>) -> Result<(), (ErrorCode, String)> {
    if !DEFAULTS.iter().any(|(n, _)| *n == name) {
        return Err((ErrorCode::INVALID_CONFIG, format!("Unknown topic config name: {name}")));
    }
    let Some(value) = value else { return Ok(()) };
    let numeric = !matches!(
        name,
        "cleanup.policy"
            | "compression.type"
            | "message.timestamp.type"
            | "preallocate"
            | "remote.storage.enable"
            | "unclean.leader.election.enable"
            | "follower.replication.throttled.replicas"
            | "leader.replication.throttled.replicas"
            | "min.cleanable.dirty.ratio"
    );
    let ok = match name {
        "cleanup.policy" => value.split(',').all(|p| matches!(p.trim(), "delete" | "compact")),
        "compression.type" => matches!(value, "producer" | "uncompressed" | "gzip" | "snappy" | "lz4" | "zstd"),
        "message.timestamp.type" => matches!(value, "CreateTime" | "LogAppendTime"),
        "preallocate" | "remote.storage.enable" | "unclean.leader.election.enable" => matches!(value, "true" | "false"),
        "min.cleanable.dirty.ratio" => value.parse::<f64>().is_ok_and(|v| (0.0..=1.0).contains(&v)),
        "min.insync.replicas" => value.parse::<i32>().is_ok_and(|v| v >= 1),
        _ if numeric => value.parse::<i64>().is_ok(),
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err((ErrorCode::INVALID_CONFIG, format!("Invalid value {value} for configuration {name}")))
    }
}
