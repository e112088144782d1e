//! DescribeClientQuotas and AlterClientQuotas (KIP-546): quota values per user, client id or
//! IP entity, checked and matched as Kafka's controller and metadata image do.

use std::collections::BTreeSet;

use kwire::messages::{
    alter_client_quotas_response, describe_client_quotas_response, AlterClientQuotasRequest, AlterClientQuotasResponse, DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
};
use kwire::ErrorCode;

use super::{s, Ctx};
use crate::acl::{op, resource, CLUSTER_NAME};
use crate::quotas::{check_entity, check_value, Entity, MATCH_ANY, MATCH_DEFAULT, MATCH_EXACT};

pub(super) fn describe(ctx: &Ctx<'_>, req: &DescribeClientQuotasRequest) -> DescribeClientQuotasResponse {
    let refuse =
        |code: ErrorCode, why: String| DescribeClientQuotasResponse { error_code: code.0, error_message: Some(s(&why)), entries: None, ..Default::default() };
    if !ctx.authorized(op::DESCRIBE_CONFIGS, resource::CLUSTER, CLUSTER_NAME) {
        return refuse(ErrorCode::CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.".into());
    }
    let mut types = BTreeSet::new();
    let mut components = Vec::new();
    for c in &req.components {
        if !types.insert(c.entity_type.to_string()) {
            return refuse(ErrorCode::INVALID_REQUEST, format!("Duplicate entity type {} in the filter", c.entity_type));
        }
        match c.match_type {
            MATCH_EXACT if c.r#match.is_none() => return refuse(ErrorCode::INVALID_REQUEST, "An exact match needs a name".into()),
            MATCH_EXACT | MATCH_DEFAULT | MATCH_ANY => {}
            other => return refuse(ErrorCode::INVALID_REQUEST, format!("Unknown match type {other}")),
        }
        components.push((c.entity_type.to_string(), c.match_type, c.r#match.as_deref().map(str::to_owned)));
    }
    if types.contains("ip") && types.len() > 1 {
        return refuse(
            ErrorCode::INVALID_REQUEST,
            "Invalid entity filter component combination, IP filter component should not be used with user or clientId filter component.".into(),
        );
    }
    let state = ctx.inner.state();
    let entries = state
        .quotas
        .describe(&components, req.strict)
        .into_iter()
        .map(|(entity, values)| describe_client_quotas_response::EntryData {
            entity: entity
                .iter()
                .map(|(t, n)| describe_client_quotas_response::EntityData { entity_type: s(t), entity_name: n.as_deref().map(s), ..Default::default() })
                .collect(),
            values: values.iter().map(|(k, v)| describe_client_quotas_response::ValueData { key: s(k), value: *v, ..Default::default() }).collect(),
            ..Default::default()
        })
        .collect();
    DescribeClientQuotasResponse { entries: Some(entries), ..Default::default() }
}

pub(super) fn alter(ctx: &Ctx<'_>, req: &AlterClientQuotasRequest) -> AlterClientQuotasResponse {
    let allowed = ctx.authorized(op::ALTER_CONFIGS, resource::CLUSTER, CLUSTER_NAME);
    let mut state = ctx.inner.state();
    let entries = req
        .entries
        .iter()
        .map(|e| {
            let entity: Entity = e.entity.iter().map(|d| (d.entity_type.to_string(), d.entity_name.as_deref().map(str::to_owned))).collect();
            let checked = if !allowed {
                Err((ErrorCode::CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.".to_owned()))
            } else if entity.len() != e.entity.len() {
                Err((ErrorCode::INVALID_REQUEST, "Duplicate entity type in the entity".to_owned()))
            } else {
                check_entity(&entity).map_err(|w| (ErrorCode::INVALID_REQUEST, w)).and_then(|()| {
                    let mut keys = BTreeSet::new();
                    for o in &e.ops {
                        if !keys.insert(o.key.to_string()) {
                            return Err((ErrorCode::INVALID_REQUEST, format!("Duplicate quota key {}", o.key)));
                        }
                        if !o.remove {
                            check_value(&entity, &o.key, o.value).map_err(|w| (ErrorCode::INVALID_REQUEST, w))?;
                        } else {
                            check_value(&entity, &o.key, 1.0).map_err(|w| (ErrorCode::INVALID_REQUEST, w))?;
                        }
                    }
                    Ok(())
                })
            };
            if checked.is_ok() && !req.validate_only {
                for o in &e.ops {
                    state.quotas.set(&entity, &o.key, (!o.remove).then_some(o.value));
                }
            }
            let (code, why) = match checked {
                Ok(()) => (ErrorCode::NONE, None),
                Err((c, w)) => (c, Some(w)),
            };
            alter_client_quotas_response::EntryData {
                error_code: code.0,
                error_message: why.as_deref().map(s),
                entity: e
                    .entity
                    .iter()
                    .map(|d| alter_client_quotas_response::EntityData {
                        entity_type: d.entity_type.clone(),
                        entity_name: d.entity_name.clone(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }
        })
        .collect();
    AlterClientQuotasResponse { entries, ..Default::default() }
}
