//! DescribeLogDirs and AlterReplicaLogDirs: each broker has one log directory (a single-dir
//! broker's `log.dirs`), holding the replicas it has; moving a replica to any other directory
//! is LOG_DIR_NOT_FOUND, as on a broker without it.

use kwire::messages::{
    alter_replica_log_dirs_response, describe_log_dirs_response, AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse, DescribeLogDirsRequest,
    DescribeLogDirsResponse,
};
use kwire::ErrorCode;

use super::{s, Ctx};
use crate::acl::{op, resource, CLUSTER_NAME};

/// The size the directory's disk reports (v4+ `TotalBytes`): 1 TiB.
const DISK_BYTES: i64 = 1 << 40;

/// Broker `id`'s log directory.
pub(crate) fn log_dir(id: i32) -> String {
    format!("/var/lib/kwire-fake/broker-{id}")
}

pub(super) fn describe(ctx: &Ctx<'_>, req: &DescribeLogDirsRequest) -> DescribeLogDirsResponse {
    use describe_log_dirs_response::*;
    if !ctx.authorized(op::DESCRIBE, resource::CLUSTER, CLUSTER_NAME) {
        // v3+ answers in the top-level code; before, with no directories.
        let code = if ctx.version >= 3 { ErrorCode::CLUSTER_AUTHORIZATION_FAILED.0 } else { 0 };
        return DescribeLogDirsResponse { error_code: code, ..Default::default() };
    }
    let state = ctx.inner.state();
    let mut used = 0i64;
    let mut topics = Vec::new();
    for (name, topic) in &state.topics {
        let wanted: Option<Vec<i32>> = match &req.topics {
            None => None,
            Some(list) => match list.iter().find(|t| *t.topic == **name) {
                Some(t) => Some(t.partitions.iter().copied().collect()),
                None => continue,
            },
        };
        let partitions: Vec<DescribeLogDirsPartition> = topic
            .partitions
            .iter()
            .enumerate()
            .filter(|(i, p)| p.replicas.contains(&ctx.broker) && wanted.as_ref().is_none_or(|w| w.contains(&(*i as i32))))
            .map(|(i, p)| {
                let size: i64 = p.log.batches().iter().map(|b| b.bytes.len() as i64).sum();
                used += size;
                DescribeLogDirsPartition { partition_index: i as i32, partition_size: size, offset_lag: 0, is_future_key: false, ..Default::default() }
            })
            .collect();
        if !partitions.is_empty() {
            topics.push(DescribeLogDirsTopic { name: s(name), partitions, ..Default::default() });
        }
    }
    // Disk sizes are v4+.
    let v4 = ctx.version >= 4;
    let dir = DescribeLogDirsResult {
        error_code: 0,
        log_dir: s(&log_dir(ctx.broker)),
        topics,
        total_bytes: if v4 { DISK_BYTES } else { -1 },
        usable_bytes: if v4 { DISK_BYTES - used } else { -1 },
        ..Default::default()
    };
    DescribeLogDirsResponse { results: vec![dir], ..Default::default() }
}

pub(super) fn alter(ctx: &Ctx<'_>, req: &AlterReplicaLogDirsRequest) -> AlterReplicaLogDirsResponse {
    use alter_replica_log_dirs_response::*;
    let allowed = ctx.authorized(op::ALTER, resource::CLUSTER, CLUSTER_NAME);
    let state = ctx.inner.state();
    let here = log_dir(ctx.broker);
    let mut results: Vec<AlterReplicaLogDirTopicResult> = Vec::new();
    for dir in &req.dirs {
        for t in &dir.topics {
            let partitions = t.partitions.iter().map(|p| {
                let replica = state.topics.get(&*t.name).and_then(|topic| topic.partition(*p)).is_some_and(|part| part.replicas.contains(&ctx.broker));
                let code = if !allowed {
                    ErrorCode::CLUSTER_AUTHORIZATION_FAILED
                } else if *dir.path != here {
                    ErrorCode::LOG_DIR_NOT_FOUND
                } else if !replica {
                    ErrorCode::REPLICA_NOT_AVAILABLE
                } else {
                    // Already there.
                    ErrorCode::NONE
                };
                AlterReplicaLogDirPartitionResult { partition_index: *p, error_code: code.0, ..Default::default() }
            });
            match results.iter_mut().find(|r| r.topic_name == t.name) {
                Some(r) => r.partitions.extend(partitions),
                None => results.push(AlterReplicaLogDirTopicResult { topic_name: t.name.clone(), partitions: partitions.collect(), ..Default::default() }),
            }
        }
    }
    AlterReplicaLogDirsResponse { results, ..Default::default() }
}
