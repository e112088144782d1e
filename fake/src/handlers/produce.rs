//! Produce: each partition's batches appended by its leader (acks 0, 1 and all alike:
//! replication is instant), idempotence and transactions decided by the log's producer state.

use std::collections::BTreeMap;

use kwire::messages::{
    produce_response::{LeaderIdAndEpoch, NodeEndpoint, PartitionProduceResponse, TopicProduceResponse},
    ProduceRequest, ProduceResponse,
};
use kwire::{Bytes, ErrorCode, Uuid};

use super::{s, Ctx};
use crate::acl::{op, resource};
use crate::log::TxnCheck;
use crate::txn::Transactions;

/// The transaction coordinator's verdict for a transactional batch: transactions V2 (Produce
/// v12+) add the partition; before that, with verification on, it must already be added.
struct Verify<'a> {
    txns: &'a mut Transactions,
    topic: &'a str,
    partition: i32,
    version: i16,
    verification: bool,
    now_ms: i64,
}

impl TxnCheck for Verify<'_> {
    fn verify(&mut self, producer_id: i64, epoch: i16) -> Result<(), ErrorCode> {
        if self.version >= 12 {
            return self.txns.add_by_leader(producer_id, epoch, self.topic, self.partition, self.now_ms);
        }
        if !self.verification {
            return Ok(());
        }
        self.txns.includes(producer_id, epoch, self.topic, self.partition)
    }
}

/// Appends every partition's batches; `None` for `acks = 0`, which gets no response.
pub(super) fn produce(ctx: &Ctx<'_>, req: &ProduceRequest) -> Option<ProduceResponse> {
    let version = ctx.version;
    let now = ctx.inner.now_ms();
    let mut responses = Vec::new();
    // Leaders of refused partitions, for the response's NodeEndpoints (v10+).
    let mut leaders: BTreeMap<i32, ()> = BTreeMap::new();
    {
        let mut guard = ctx.inner.state();
        let state = &mut *guard;
        let up: BTreeMap<i32, bool> = state.brokers.iter().map(|(id, b)| (*id, b.up)).collect();
        for t in &req.topic_data {
            let name =
                if version >= 13 { state.topics.iter().find(|(_, topic)| topic.id == t.topic_id).map(|(n, _)| n.clone()) } else { Some(t.name.to_string()) };
            let mut partition_responses = Vec::new();
            for p in &t.partition_data {
                let mut out = PartitionProduceResponse { index: p.index, base_offset: -1, log_append_time_ms: -1, log_start_offset: -1, ..Default::default() };
                let unknown = if version >= 13 { ErrorCode::UNKNOWN_TOPIC_ID } else { ErrorCode::UNKNOWN_TOPIC_OR_PARTITION };
                let result = (|| {
                    if !(-1..=1).contains(&req.acks) {
                        return Err((ErrorCode::INVALID_REQUIRED_ACKS, None));
                    }
                    let name = name.as_deref().ok_or((unknown, None))?;
                    if !ctx.authorized_in(state, op::WRITE, resource::TOPIC, name) {
                        return Err((ErrorCode::TOPIC_AUTHORIZATION_FAILED, None));
                    }
                    let topic = state.topics.get_mut(name).ok_or((ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, None))?;
                    let rules = topic.append_rules(version);
                    let min_isr = topic.min_isr();
                    let partition = topic.partition_mut(p.index).ok_or((ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, None))?;
                    if partition.leader != ctx.broker {
                        return Err((ErrorCode::NOT_LEADER_OR_FOLLOWER, Some((partition.leader, partition.leader_epoch))));
                    }
                    let isr = partition.replicas.iter().filter(|b| up.get(b).copied().unwrap_or(false)).count();
                    if req.acks == -1 && isr < min_isr {
                        return Err((ErrorCode::NOT_ENOUGH_REPLICAS, None));
                    }
                    let records: Option<Bytes> = p.records.clone();
                    let records = records.filter(|r| !r.is_empty()).ok_or((ErrorCode::CORRUPT_MESSAGE, None))?;
                    let mut verify = Verify {
                        txns: &mut state.txns,
                        topic: name,
                        partition: p.index,
                        version,
                        verification: ctx.inner.config.transaction_verification,
                        now_ms: now,
                    };
                    let leader_epoch = partition.leader_epoch;
                    let log_start = partition.log.log_start();
                    partition.log.append(records, now, leader_epoch, rules, &mut verify).map(|a| (a, log_start)).map_err(|e| (e.code, None))
                })();
                match result {
                    Ok((appended, log_start)) => {
                        out.base_offset = appended.base_offset;
                        out.log_append_time_ms = appended.log_append_time;
                        out.log_start_offset = log_start;
                    }
                    Err((code, leader)) => {
                        out.error_code = code.0;
                        out.error_message = code.message().map(s);
                        if let (Some((id, epoch)), true) = (leader, version >= 10) {
                            out.current_leader = LeaderIdAndEpoch { leader_id: id, leader_epoch: epoch, ..Default::default() };
                            if id >= 0 {
                                leaders.insert(id, ());
                            }
                        }
                    }
                }
                partition_responses.push(out);
            }
            responses.push(TopicProduceResponse {
                name: if version >= 13 { Default::default() } else { t.name.clone() },
                topic_id: if version >= 13 { t.topic_id } else { Uuid::ZERO },
                partition_responses,
                ..Default::default()
            });
        }
    }
    ctx.inner.appended.notify_waiters();
    if req.acks == 0 {
        return None;
    }
    let node_endpoints = if version >= 10 {
        leaders
            .keys()
            .map(|id| {
                let (host, port) = ctx.inner.address(*id, ctx.listener);
                NodeEndpoint { node_id: *id, host: s(&host), port, rack: None, ..Default::default() }
            })
            .collect()
    } else {
        Vec::new()
    };
    Some(ProduceResponse { responses, node_endpoints, ..Default::default() })
}
