//! Client quotas (KIP-546), as `kafka-configs.sh --entity-type users/clients/ips` handles
//! them: DescribeClientQuotas and AlterClientQuotas.

use std::collections::BTreeMap;

use kwire::messages::{
    alter_client_quotas_request::{EntityData, EntryData, OpData},
    describe_client_quotas_request::ComponentData,
    AlterClientQuotasRequest, DescribeClientQuotasRequest,
};
use kwire::ApiKey;

use super::{bs, Admin};
use crate::error::{Error, Result};
use crate::future::ClientFuture;
use crate::route::Route;

/// What a quota applies to: entity types (`user`, `client-id`, `ip`) with a name each, or
/// `None` for the type's default entity; e.g. `[("user", Some("alice")), ("client-id",
/// None)]`. Kept sorted by type, as the broker compares them.
pub type QuotaEntity = BTreeMap<String, Option<String>>;

/// Which quotas to describe: per entity type, a name, the default, or any (Java's
/// `ClientQuotaFilter`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QuotaFilter {
    /// `(entity type, match)`: `Some(Some(name))` that name, `Some(None)` the default
    /// entity, `None` any entity of the type.
    pub components: Vec<(String, Option<Option<String>>)>,
    /// Only entities with no other types than those named.
    pub strict: bool,
}

/// Changes to one entity's quotas: per key (`producer_byte_rate`, `consumer_byte_rate`,
/// `request_percentage`, `controller_mutation_rate`, `connection_creation_rate`), a value or
/// `None` to remove it.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaAlteration {
    /// The entity.
    pub entity: QuotaEntity,
    /// The changes.
    pub ops: Vec<(String, Option<f64>)>,
}

impl Admin {
    /// The quotas of the entities `filter` matches.
    #[allow(clippy::type_complexity)] // the body's own result type, in a future
    pub fn describe_client_quotas<'a>(&'a self, filter: &'a QuotaFilter) -> ClientFuture<'a, Result<Vec<(QuotaEntity, BTreeMap<String, f64>)>>> {
        ClientFuture::boxed(self.describe_client_quotas_boxed(filter))
    }

    async fn describe_client_quotas_boxed(&self, filter: &QuotaFilter) -> Result<Vec<(QuotaEntity, BTreeMap<String, f64>)>> {
        let request = DescribeClientQuotasRequest {
            components: filter
                .components
                .iter()
                .map(|(entity_type, m)| ComponentData {
                    entity_type: bs(entity_type),
                    match_type: match m {
                        Some(Some(_)) => 0,
                        Some(None) => 1,
                        None => 2,
                    },
                    r#match: m.as_ref().and_then(|n| n.as_deref()).map(bs),
                    ..Default::default()
                })
                .collect(),
            strict: filter.strict,
            ..Default::default()
        };
        let response = self.client.send(Route::Any, request).await?;
        let r = &response;
        Error::check(r.error_code, r.error_message.as_deref(), || "describe client quotas".into())?;
        Ok(r.entries
            .iter()
            .flatten()
            .map(|e| {
                let entity = e.entity.iter().map(|d| (d.entity_type.to_string(), d.entity_name.as_deref().map(str::to_owned))).collect();
                let values = e.values.iter().map(|v| (v.key.to_string(), v.value)).collect();
                (entity, values)
            })
            .collect())
    }

    /// Changes quotas (AlterClientQuotas); one result per alteration, in order.
    pub fn alter_client_quotas<'a>(&'a self, alterations: &'a [QuotaAlteration]) -> ClientFuture<'a, Result<Vec<Result<()>>>> {
        ClientFuture::boxed(self.alter_client_quotas_boxed(alterations))
    }

    async fn alter_client_quotas_boxed(&self, alterations: &[QuotaAlteration]) -> Result<Vec<Result<()>>> {
        let request = AlterClientQuotasRequest {
            entries: alterations
                .iter()
                .map(|a| EntryData {
                    entity: entity_data(&a.entity),
                    ops: a
                        .ops
                        .iter()
                        .map(|(key, value)| OpData { key: bs(key), value: value.unwrap_or(0.0), remove: value.is_none(), ..Default::default() })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            validate_only: false,
            ..Default::default()
        };
        let response = self.send_controller_retrying(request).await?;
        let r = &response;
        Ok(alterations
            .iter()
            .map(|a| {
                let same = |e: &&kwire::messages::alter_client_quotas_response::EntryData| {
                    let entity: QuotaEntity = e.entity.iter().map(|d| (d.entity_type.to_string(), d.entity_name.as_deref().map(str::to_owned))).collect();
                    entity == a.entity
                };
                let e = r.entries.iter().find(same).ok_or_else(|| Error::missing(ApiKey::AlterClientQuotas, format_args!("{:?}", a.entity)))?;
                Error::check(e.error_code, e.error_message.as_deref(), || format!("alter quotas of {:?}", a.entity))
            })
            .collect())
    }
}

fn entity_data(entity: &QuotaEntity) -> Vec<EntityData> {
    entity.iter().map(|(t, n)| EntityData { entity_type: bs(t), entity_name: n.as_deref().map(bs), ..Default::default() }).collect()
}
