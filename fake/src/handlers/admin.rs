//! Topics and configs: CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs,
//! AlterConfigs and IncrementalAlterConfigs, with Kafka's validation and error codes.

use std::collections::BTreeMap;

use kwire::messages::{
    alter_configs_response,
    create_partitions_response::CreatePartitionsTopicResult,
    create_topics_response::{CreatableTopicConfigs, CreatableTopicResult},
    delete_topics_response::DeletableTopicResult,
    describe_configs_response::{DescribeConfigsResourceResult, DescribeConfigsResult},
    incremental_alter_configs_response, AlterConfigsRequest, AlterConfigsResponse, CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest,
    CreateTopicsResponse, DeleteTopicsRequest, DeleteTopicsResponse, DescribeConfigsRequest, DescribeConfigsResponse, IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse, ListConfigResourcesRequest, ListConfigResourcesResponse,
};
use kwire::{ErrorCode, Uuid};

use super::{s, Ctx};
use crate::acl::{op, resource, CLUSTER_NAME};
use crate::quotas::Quotas;
use crate::throttle::{MutationQuota, Throttling, Who};
use crate::topics::{check_config, valid_name, Partition, DEFAULTS};

/// Config resource types (`ConfigResource.Type`).
const TOPIC: i8 = 2;
const BROKER: i8 = 4;
const GROUP: i8 = 32;

/// Config sources (`DescribeConfigsResponse.ConfigSource`).
const DYNAMIC_TOPIC_CONFIG: i8 = 1;
const DEFAULT_CONFIG: i8 = 5;
const GROUP_CONFIG: i8 = 8;

/// The most partitions a topic may have here.
const MAX_PARTITIONS: i32 = 100_000;

pub(crate) fn create_topics(ctx: &Ctx<'_>, req: &CreateTopicsRequest) -> CreateTopicsResponse {
    let version = ctx.version;
    let mut state = ctx.inner.state();
    let brokers = state.brokers.len() as i32;
    let mut results = Vec::new();
    let mut quota = MutationQuota::new(version, 6);
    for t in &req.topics {
        let partitions = if t.num_partitions == -1 { ctx.inner.config.default_partitions } else { t.num_partitions };
        let replicas = if t.replication_factor == -1 { ctx.inner.config.default_replication.min(brokers as i16) } else { t.replication_factor };
        let mut configs = BTreeMap::new();
        let mut error: Option<(ErrorCode, String)> = None;
        for c in &t.configs {
            if let Err(e) = check_config(&c.name, c.value.as_deref()) {
                error.get_or_insert(e);
            }
            if let Some(v) = &c.value {
                configs.insert(c.name.to_string(), v.to_string());
            }
        }
        // CREATE on the cluster, or on the topic (Kafka's `ControllerApis.createTopics`).
        let may_create = ctx.authorized_in(&state, op::CREATE, resource::CLUSTER, crate::acl::CLUSTER_NAME)
            || ctx.authorized_in(&state, op::CREATE, resource::TOPIC, &t.name);
        let error = if !may_create {
            Some((ErrorCode::TOPIC_AUTHORIZATION_FAILED, "Authorization failed.".into()))
        } else if !valid_name(&t.name) {
            Some((ErrorCode::INVALID_TOPIC_EXCEPTION, format!("Topic name {} is invalid", &*t.name)))
        } else if state.topics.contains_key(&*t.name) {
            Some((ErrorCode::TOPIC_ALREADY_EXISTS, format!("Topic '{}' already exists.", &*t.name)))
        } else if !t.assignments.is_empty() && (t.num_partitions != -1 || t.replication_factor != -1) {
            Some((
                ErrorCode::INVALID_REQUEST,
                "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.".into(),
            ))
        } else if !t.assignments.is_empty() {
            Some((ErrorCode::INVALID_REQUEST, "Replica assignments are not supported by this fake cluster.".into()))
        } else if partitions <= 0 || partitions > MAX_PARTITIONS {
            Some((ErrorCode::INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.".into()))
        } else if replicas <= 0 || i32::from(replicas) > brokers {
            Some((ErrorCode::INVALID_REPLICATION_FACTOR, format!("Unable to replicate the partition {replicas} time(s): The target replication factor of {replicas} cannot be reached because only {brokers} broker(s) are registered.")))
        } else {
            error
        };
        let error = error.or_else(|| (!mutate(ctx, &state, &mut quota, partitions as usize)).then(quota_exceeded));
        let mut result =
            CreatableTopicResult { name: t.name.clone(), topic_config_error_code: 0, num_partitions: -1, replication_factor: -1, ..Default::default() };
        match error {
            Some((code, message)) => {
                result.error_code = code.0;
                if version >= 1 {
                    result.error_message = Some(s(&message));
                }
            }
            None => {
                let id = if req.validate_only { Uuid::ZERO } else { state.create_topic(&t.name, partitions, replicas, configs.clone()).id };
                if version >= 5 {
                    result.num_partitions = partitions;
                    result.replication_factor = replicas;
                    result.configs = Some(
                        DEFAULTS
                            .iter()
                            .map(|(name, default)| {
                                let set = configs.get(*name);
                                CreatableTopicConfigs {
                                    name: s(name),
                                    value: Some(s(set.map_or(*default, String::as_str))),
                                    read_only: false,
                                    config_source: if set.is_some() { DYNAMIC_TOPIC_CONFIG } else { DEFAULT_CONFIG },
                                    is_sensitive: false,
                                    ..Default::default()
                                }
                            })
                            .collect(),
                    );
                }
                if version >= 7 {
                    result.topic_id = id;
                }
            }
        }
        results.push(result);
    }
    drop(state);
    ctx.inner.wake();
    CreateTopicsResponse { topics: results, throttle_time_ms: quota.throttle_ms(), ..Default::default() }
}

pub(crate) fn delete_topics(ctx: &Ctx<'_>, req: &DeleteTopicsRequest) -> DeleteTopicsResponse {
    let mut state = ctx.inner.state();
    // v6+ names topics by name or id; earlier versions by name.
    let asked: Vec<(Option<String>, Uuid)> = if ctx.version >= 6 {
        req.topics.iter().map(|t| (t.name.as_deref().map(str::to_owned), t.topic_id)).collect()
    } else {
        req.topic_names.iter().map(|n| (Some(n.to_string()), Uuid::ZERO)).collect()
    };
    let mut responses = Vec::new();
    let mut quota = MutationQuota::new(ctx.version, 5);
    for (name, id) in asked {
        let found = match &name {
            Some(n) => state.topics.get(n).map(|t| (n.clone(), t.id)),
            None => state.topics.iter().find(|(_, t)| t.id == id).map(|(n, t)| (n.clone(), t.id)),
        };
        let mut out = DeletableTopicResult { name: name.as_deref().map(s), topic_id: id, ..Default::default() };
        // DELETE on the topic; by name, checked before it is known to exist.
        let named = found.as_ref().map(|(n, _)| n.as_str()).or(name.as_deref());
        if named.is_some_and(|n| !ctx.authorized_in(&state, op::DELETE, resource::TOPIC, n)) {
            out.error_code = ErrorCode::TOPIC_AUTHORIZATION_FAILED.0;
            if ctx.version >= 5 {
                out.error_message = ErrorCode::TOPIC_AUTHORIZATION_FAILED.message().map(s);
            }
            responses.push(out);
            continue;
        }
        let partitions = found.as_ref().and_then(|(n, _)| state.topics.get(n)).map_or(0, |t| t.partitions.len());
        if found.is_some() && !mutate(ctx, &state, &mut quota, partitions) {
            let (code, message) = quota_exceeded();
            out.error_code = code.0;
            out.error_message = Some(s(&message));
            responses.push(out);
            continue;
        }
        match found {
            Some((n, topic_id)) => {
                state.topics.remove(&n);
                out.name = Some(s(&n));
                out.topic_id = topic_id;
            }
            None => {
                let code = if name.is_none() { ErrorCode::UNKNOWN_TOPIC_ID } else { ErrorCode::UNKNOWN_TOPIC_OR_PARTITION };
                out.error_code = code.0;
                if ctx.version >= 5 {
                    out.error_message = code.message().map(s);
                }
            }
        }
        responses.push(out);
    }
    drop(state);
    ctx.inner.wake();
    DeleteTopicsResponse { responses, throttle_time_ms: quota.throttle_ms(), ..Default::default() }
}

pub(crate) fn create_partitions(ctx: &Ctx<'_>, req: &CreatePartitionsRequest) -> CreatePartitionsResponse {
    let mut guard = ctx.inner.state();
    let state = &mut *guard;
    let ids: Vec<i32> = state.brokers.keys().copied().collect();
    let up: BTreeMap<i32, bool> = state.brokers.iter().map(|(id, b)| (*id, b.up)).collect();
    let mut throttling = ctx.inner.throttling();
    let mut quota = MutationQuota::new(ctx.version, 3);
    let results = req
        .topics
        .iter()
        .map(|t| {
            let allowed = ctx.authorized_in(state, op::ALTER, resource::TOPIC, &t.name);
            let outcome = match state.topics.get_mut(&*t.name) {
                _ if !allowed => {
                    // Kafka's own words (`ControllerApis.createPartitions`).
                    Err((ErrorCode::TOPIC_AUTHORIZATION_FAILED, "The topic authorization is failed.".to_owned()))
                }
                None => Err((ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, format!("The topic '{}' does not exist.", &*t.name))),
                Some(topic) if t.count <= topic.partitions.len() as i32 => {
                    let now = topic.partitions.len();
                    let message = if t.count as usize == now {
                        format!("Topic already has {now} partitions.")
                    } else {
                        format!("Topic currently has {now} partitions, which is higher than the requested {}.", t.count)
                    };
                    Err((ErrorCode::INVALID_PARTITIONS, message))
                }
                Some(_) if t.count > MAX_PARTITIONS => Err((ErrorCode::INVALID_PARTITIONS, "Too many partitions.".into())),
                Some(_) if t.assignments.is_some() => Err((ErrorCode::INVALID_REQUEST, "Replica assignments are not supported by this fake cluster.".into())),
                Some(topic) if !mutate_in(ctx, &state.quotas, &mut throttling, &mut quota, t.count as usize - topic.partitions.len()) => Err(quota_exceeded()),
                Some(topic) => {
                    if !req.validate_only {
                        let replicas = topic.partitions.first().map_or(1, |p| p.replicas.len());
                        for p in topic.partitions.len()..t.count as usize {
                            let r: Vec<i32> = (0..replicas.min(ids.len())).map(|j| ids[(p + j) % ids.len()]).collect();
                            let mut partition = Partition { replicas: r, leader: -1, leader_epoch: -1, log: Default::default() };
                            partition.elect(&|b| up.get(&b).copied().unwrap_or(false));
                            topic.partitions.push(partition);
                        }
                    }
                    Ok(())
                }
            };
            let (code, message) = match outcome {
                Ok(()) => (ErrorCode::NONE, None),
                Err((code, m)) => (code, Some(s(&m))),
            };
            CreatePartitionsTopicResult { name: t.name.clone(), error_code: code.0, error_message: message, ..Default::default() }
        })
        .collect();
    drop(throttling);
    drop(guard);
    ctx.inner.wake();
    CreatePartitionsResponse { results, throttle_time_ms: quota.throttle_ms(), ..Default::default() }
}

/// A broker's configs as DescribeConfigs shows them: (name, value, read-only), Kafka's
/// defaults and the cluster's settings.
fn broker_configs(ctx: &Ctx<'_>, broker: &str) -> Vec<(&'static str, String, bool)> {
    let c = &ctx.inner.config;
    let mut out = vec![
        ("auto.create.topics.enable", c.auto_create_topics.to_string(), true),
        ("broker.id", broker.to_owned(), true),
        ("compression.type", "producer".to_owned(), false),
        ("default.replication.factor", c.default_replication.to_string(), true),
        ("delete.topic.enable", "true".to_owned(), true),
        ("group.initial.rebalance.delay.ms", c.group_initial_rebalance_delay.as_millis().to_string(), true),
        ("log.cleanup.policy", "delete".to_owned(), false),
        ("log.dirs", super::log_dirs::log_dir(broker.parse().unwrap_or(ctx.broker)), true),
        ("log.retention.bytes", "-1".to_owned(), false),
        ("log.retention.hours", "168".to_owned(), true),
        ("log.retention.ms", "604800000".to_owned(), false),
        ("log.segment.bytes", "1073741824".to_owned(), false),
        ("message.max.bytes", "1048588".to_owned(), false),
        ("min.insync.replicas", "1".to_owned(), false),
        ("node.id", broker.to_owned(), true),
        ("num.partitions", c.default_partitions.to_string(), false),
        ("offsets.topic.num.partitions", c.offsets_partitions.to_string(), true),
        ("process.roles", "broker,controller".to_owned(), true),
        ("transaction.max.timeout.ms", c.max_transaction_timeout.as_millis().to_string(), true),
        ("transaction.partition.verification.enable", c.transaction_verification.to_string(), false),
        ("transaction.state.log.num.partitions", c.transaction_partitions.to_string(), true),
    ];
    out.sort_by_key(|(n, _, _)| *n);
    out
}

/// A config resource's alteration, if this principal may ALTER_CONFIGS on it: the error and
/// message of its result (a refusal has none, as Kafka's `ApiError(error, null)`).
fn altered(ctx: &Ctx<'_>, resource_type: i8, name: &str, alter: impl FnOnce() -> Result<(), (ErrorCode, String)>) -> (ErrorCode, Option<kwire::ByteString>) {
    let access = config_access(ctx, &ctx.inner.state(), op::ALTER_CONFIGS, resource_type, name);
    match access.map(|()| alter()) {
        Err(code) => (code, None),
        Ok(Err((code, message))) => (code, Some(s(&message))),
        Ok(Ok(())) => (ErrorCode::NONE, None),
    }
}

/// THROTTLING_QUOTA_EXCEEDED as the controller words it.
fn quota_exceeded() -> (ErrorCode, String) {
    let code = ErrorCode::THROTTLING_QUOTA_EXCEEDED;
    (code, code.message().unwrap_or_default().to_owned())
}

/// Records `partitions` created or deleted against the principal's partition-mutation quota;
/// false when the quota refuses them.
fn mutate(ctx: &Ctx<'_>, state: &crate::cluster::State, quota: &mut MutationQuota, partitions: usize) -> bool {
    mutate_in(ctx, &state.quotas, &mut ctx.inner.throttling(), quota, partitions)
}

fn mutate_in(ctx: &Ctx<'_>, quotas: &Quotas, throttling: &mut Throttling, quota: &mut MutationQuota, partitions: usize) -> bool {
    let who = Who { broker: ctx.broker, principal: ctx.principal, client_id: ctx.client_id };
    throttling.mutate(quotas, &who, quota, partitions, ctx.inner.now_ms())
}

/// Whether this principal may do `operation` (DESCRIBE_CONFIGS, ALTER_CONFIGS) on a config
/// resource: a topic's or group's own ACLs, the cluster's for brokers, loggers and client
/// metrics; refused with the resource kind's authorization error.
fn config_access(ctx: &Ctx<'_>, state: &crate::cluster::State, operation: i8, resource_type: i8, name: &str) -> Result<(), ErrorCode> {
    let (allowed, code) = match resource_type {
        TOPIC => (ctx.authorized_in(state, operation, resource::TOPIC, name), ErrorCode::TOPIC_AUTHORIZATION_FAILED),
        GROUP => (ctx.authorized_in(state, operation, resource::GROUP, name), ErrorCode::GROUP_AUTHORIZATION_FAILED),
        _ => (ctx.authorized_in(state, operation, resource::CLUSTER, CLUSTER_NAME), ErrorCode::CLUSTER_AUTHORIZATION_FAILED),
    };
    if allowed {
        Ok(())
    } else {
        Err(code)
    }
}

pub(crate) fn describe_configs(ctx: &Ctx<'_>, req: &DescribeConfigsRequest) -> DescribeConfigsResponse {
    let state = ctx.inner.state();
    let results = req
        .resources
        .iter()
        .map(|r| {
            let wanted = |name: &str| r.configuration_keys.as_ref().is_none_or(|keys| keys.iter().any(|k| &**k == name));
            let mut result = DescribeConfigsResult { resource_type: r.resource_type, resource_name: r.resource_name.clone(), ..Default::default() };
            if let Err(code) = config_access(ctx, &state, op::DESCRIBE_CONFIGS, r.resource_type, &r.resource_name) {
                result.error_code = code.0;
                result.error_message = code.message().map(s);
                return result;
            }
            match r.resource_type {
                TOPIC => match state.topics.get(&*r.resource_name) {
                    None => {
                        result.error_code = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0;
                        result.error_message = Some(s(&format!("Topic {} does not exist.", &*r.resource_name)));
                    }
                    Some(topic) => {
                        result.configs = DEFAULTS
                            .iter()
                            .filter(|(n, _)| wanted(n))
                            .map(|(name, default)| {
                                let set = topic.configs.get(*name);
                                // v0 says whether it is the default, v1+ where it comes from.
                                DescribeConfigsResourceResult {
                                    name: s(name),
                                    value: Some(s(set.map_or(*default, String::as_str))),
                                    read_only: false,
                                    is_default: ctx.version == 0 && set.is_none(),
                                    config_source: if ctx.version == 0 {
                                        -1
                                    } else if set.is_some() {
                                        DYNAMIC_TOPIC_CONFIG
                                    } else {
                                        DEFAULT_CONFIG
                                    },
                                    is_sensitive: false,
                                    ..Default::default()
                                }
                            })
                            .collect();
                    }
                },
                BROKER => {
                    let known = r.resource_name.is_empty() || r.resource_name.parse::<i32>().is_ok_and(|b| state.brokers.contains_key(&b));
                    if !known {
                        result.error_code = ErrorCode::INVALID_REQUEST.0;
                        result.error_message = Some(s(&format!("Unexpected broker id, expected one of the cluster's, but received {}", &*r.resource_name)));
                    } else {
                        result.configs = broker_configs(ctx, &r.resource_name)
                            .into_iter()
                            .filter(|(n, _, _)| wanted(n))
                            .map(|(name, value, read_only)| DescribeConfigsResourceResult {
                                name: s(name),
                                value: Some(s(&value)),
                                read_only,
                                is_default: ctx.version == 0,
                                config_source: if ctx.version == 0 { -1 } else { DEFAULT_CONFIG },
                                is_sensitive: false,
                                ..Default::default()
                            })
                            .collect();
                    }
                }
                GROUP => {
                    // Every group config, set or default (a group need not exist, as in Kafka).
                    let set = state.groups.configs.get(&*r.resource_name);
                    result.configs = crate::groups::GROUP_CONFIGS
                        .iter()
                        .filter(|(n, _)| wanted(n))
                        .map(|(name, default)| {
                            let value = set.and_then(|c| c.get(*name)).cloned();
                            DescribeConfigsResourceResult {
                                name: s(name),
                                value: Some(s(value.as_deref().unwrap_or(default))),
                                read_only: false,
                                is_default: ctx.version == 0 && value.is_none(),
                                config_source: if ctx.version == 0 {
                                    -1
                                } else if value.is_some() {
                                    GROUP_CONFIG
                                } else {
                                    DEFAULT_CONFIG
                                },
                                is_sensitive: false,
                                ..Default::default()
                            }
                        })
                        .collect();
                }
                _ => {
                    result.error_code = ErrorCode::INVALID_REQUEST.0;
                    result.error_message = Some(s(&format!("Unsupported resource type {}", r.resource_type)));
                }
            }
            result
        })
        .collect();
    DescribeConfigsResponse { results, ..Default::default() }
}

/// Applies `changes` (name, op, value; ops of IncrementalAlterConfigs: 0 set, 1 delete, 2
/// append, 3 subtract) to a topic's configs, or says why not.
fn alter_topic(ctx: &Ctx<'_>, name: &str, changes: &[(String, i8, Option<String>)], replace: bool, validate_only: bool) -> Result<(), (ErrorCode, String)> {
    let mut state = ctx.inner.state();
    let topic = state.topics.get_mut(name).ok_or((ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, format!("Topic {name} does not exist.")))?;
    let mut configs = if replace { BTreeMap::new() } else { topic.configs.clone() };
    for (key, op, value) in changes {
        check_config(key, value.as_deref())?;
        match op {
            0 => {
                configs.insert(key.clone(), value.clone().unwrap_or_default());
            }
            1 => {
                configs.remove(key);
            }
            2 | 3 if key != "cleanup.policy" && !key.ends_with("throttled.replicas") => {
                return Err((ErrorCode::INVALID_CONFIG, format!("Config value append is not allowed for config key: {key}")));
            }
            2 | 3 => {
                let current = configs.get(key).cloned().or_else(|| DEFAULTS.iter().find(|(n, _)| n == key).map(|(_, v)| v.to_string())).unwrap_or_default();
                let mut items: Vec<String> = current.split(',').map(str::trim).filter(|v| !v.is_empty()).map(str::to_owned).collect();
                for v in value.as_deref().unwrap_or("").split(',').map(str::trim).filter(|v| !v.is_empty()) {
                    if *op == 2 && !items.iter().any(|i| i == v) {
                        items.push(v.to_owned());
                    } else if *op == 3 {
                        items.retain(|i| i != v);
                    }
                }
                configs.insert(key.clone(), items.join(","));
            }
            _ => return Err((ErrorCode::INVALID_REQUEST, format!("Unknown config operation {op}"))),
        }
    }
    if !validate_only {
        topic.configs = configs;
    }
    Ok(())
}

/// Applies `changes` (set or delete; Kafka refuses append and subtract for group configs) to a
/// group's configs, all or none.
fn alter_group(ctx: &Ctx<'_>, group: &str, changes: &[(String, i8, Option<String>)], validate_only: bool) -> Result<(), (ErrorCode, String)> {
    let mut state = ctx.inner.state();
    let mut configs = state.groups.configs.get(group).cloned().unwrap_or_default();
    for (key, op, value) in changes {
        match op {
            0 => {
                let value = value.clone().unwrap_or_default();
                crate::groups::check_group_config(key, &value).map_err(|m| (ErrorCode::INVALID_CONFIG, m))?;
                configs.insert(key.clone(), value);
            }
            1 => {
                crate::groups::check_group_config(key, crate::groups::GROUP_CONFIGS.iter().find(|(n, _)| n == key).map_or("", |(_, d)| d))
                    .map_err(|m| (ErrorCode::INVALID_CONFIG, m))?;
                configs.remove(key);
            }
            2 | 3 => return Err((ErrorCode::INVALID_CONFIG, format!("Config value append is not allowed for config key: {key}"))),
            _ => return Err((ErrorCode::INVALID_REQUEST, format!("Unknown config operation {op}"))),
        }
    }
    if !validate_only {
        state.groups.configs.insert(group.to_owned(), configs);
    }
    Ok(())
}

pub(crate) fn incremental_alter_configs(ctx: &Ctx<'_>, req: &IncrementalAlterConfigsRequest) -> IncrementalAlterConfigsResponse {
    let responses = req
        .resources
        .iter()
        .map(|r| {
            let changes: Vec<(String, i8, Option<String>)> =
                r.configs.iter().map(|c| (c.name.to_string(), c.config_operation, c.value.as_deref().map(str::to_owned))).collect();
            let (code, message) = altered(ctx, r.resource_type, &r.resource_name, || match r.resource_type {
                TOPIC => alter_topic(ctx, &r.resource_name, &changes, false, req.validate_only),
                BROKER => Ok(()),
                GROUP => alter_group(ctx, &r.resource_name, &changes, req.validate_only),
                t => Err((ErrorCode::INVALID_REQUEST, format!("Unsupported resource type {t}"))),
            });
            incremental_alter_configs_response::AlterConfigsResourceResponse {
                error_code: code.0,
                error_message: message,
                resource_type: r.resource_type,
                resource_name: r.resource_name.clone(),
                ..Default::default()
            }
        })
        .collect();
    IncrementalAlterConfigsResponse { responses, ..Default::default() }
}

pub(crate) fn alter_configs(ctx: &Ctx<'_>, req: &AlterConfigsRequest) -> AlterConfigsResponse {
    let responses = req
        .resources
        .iter()
        .map(|r| {
            let changes: Vec<(String, i8, Option<String>)> = r.configs.iter().map(|c| (c.name.to_string(), 0, c.value.as_deref().map(str::to_owned))).collect();
            let (code, message) = altered(ctx, r.resource_type, &r.resource_name, || match r.resource_type {
                TOPIC => alter_topic(ctx, &r.resource_name, &changes, true, req.validate_only),
                BROKER => Ok(()),
                t => Err((ErrorCode::INVALID_REQUEST, format!("Unsupported resource type {t}"))),
            });
            alter_configs_response::AlterConfigsResourceResponse {
                error_code: code.0,
                error_message: message,
                resource_type: r.resource_type,
                resource_name: r.resource_name.clone(),
                ..Default::default()
            }
        })
        .collect();
    AlterConfigsResponse { responses, ..Default::default() }
}

/// ListConfigResources (ListClientMetricsResources at v0, KIP-714 and KIP-1142): the config
/// resources of the asked types (every type for none): topics, brokers and groups by name; no
/// client-metrics subscription is configured. A type it has none of is UNSUPPORTED_VERSION.
pub(crate) fn list_config_resources(ctx: &Ctx<'_>, req: &ListConfigResourcesRequest) -> ListConfigResourcesResponse {
    use kwire::messages::list_config_resources_response::ConfigResource;
    const GROUP: i8 = 32;
    const CLIENT_METRICS: i8 = 16;
    if !ctx.authorized(crate::acl::op::DESCRIBE_CONFIGS, crate::acl::resource::CLUSTER, crate::acl::CLUSTER_NAME) {
        return ListConfigResourcesResponse { error_code: ErrorCode::CLUSTER_AUTHORIZATION_FAILED.0, ..Default::default() };
    }
    let types: Vec<i8> = if ctx.version == 0 {
        vec![CLIENT_METRICS]
    } else if req.resource_types.is_empty() {
        vec![TOPIC, BROKER, CLIENT_METRICS, GROUP]
    } else {
        req.resource_types.iter().copied().collect()
    };
    if types.iter().any(|t| ![TOPIC, BROKER, CLIENT_METRICS, GROUP].contains(t)) {
        return ListConfigResourcesResponse { error_code: ErrorCode::UNSUPPORTED_VERSION.0, ..Default::default() };
    }
    let state = ctx.inner.state();
    let mut config_resources = Vec::new();
    for t in types {
        let names: Vec<String> = match t {
            TOPIC => state.topics.keys().cloned().collect(),
            BROKER => state.brokers.keys().map(|b| b.to_string()).collect(),
            GROUP => state.groups.groups.keys().cloned().collect(),
            _ => Vec::new(),
        };
        config_resources.extend(names.into_iter().map(|n| ConfigResource { resource_name: s(&n), resource_type: t, ..Default::default() }));
    }
    ListConfigResourcesResponse { config_resources, ..Default::default() }
}
