//! Client quotas (KIP-546, Kafka's `ClientQuotaControlManager` and `ClientQuotasImage`): values
//! per entity (a user, a client id, both, or an IP; each name or the default), and which
//! entities a DescribeClientQuotas filter selects.

use std::collections::BTreeMap;

/// An entity: its types (`user`, `client-id`, `ip`) and names (`None`: the type's default).
pub(crate) type Entity = BTreeMap<String, Option<String>>;

/// Match types of a DescribeClientQuotas component.
pub(crate) const MATCH_EXACT: i8 = 0;
pub(crate) const MATCH_DEFAULT: i8 = 1;
pub(crate) const MATCH_ANY: i8 = 2;

/// The keys each entity type takes, and whether their values are whole numbers.
const USER_KEYS: &[(&str, bool)] =
    &[("producer_byte_rate", true), ("consumer_byte_rate", true), ("request_percentage", false), ("controller_mutation_rate", false)];
const IP_KEYS: &[(&str, bool)] = &[("connection_creation_rate", true)];

#[derive(Debug, Default)]
pub(crate) struct Quotas {
    pub(crate) values: BTreeMap<Entity, BTreeMap<String, f64>>,
}

/// Why an entity cannot have quotas (INVALID_REQUEST), as the controller checks it.
pub(crate) fn check_entity(entity: &Entity) -> Result<(), String> {
    if entity.is_empty() {
        return Err("Invalid empty client quota entity".into());
    }
    for t in entity.keys() {
        if !matches!(t.as_str(), "user" | "client-id" | "ip") {
            return Err(format!("Unhandled client quota entity type: {t}"));
        }
    }
    if entity.contains_key("ip") && entity.len() > 1 {
        return Err("Invalid quota entity combination, IP entity should not be combined with User or ClientId".into());
    }
    if let Some(Some(ip)) = entity.get("ip") {
        if ip.parse::<std::net::IpAddr>().is_err() {
            return Err(format!("{ip} is not a valid IP or resolvable host."));
        }
    }
    Ok(())
}

/// Why a key or value cannot be set on `entity` (INVALID_REQUEST).
pub(crate) fn check_value(entity: &Entity, key: &str, value: f64) -> Result<(), String> {
    let keys = if entity.contains_key("ip") { IP_KEYS } else { USER_KEYS };
    let Some((_, whole)) = keys.iter().find(|(k, _)| *k == key) else {
        return Err(format!("Invalid configuration key {key}"));
    };
    if *whole && value.fract() != 0.0 {
        return Err(format!("Configuration {key} must be a Long value"));
    }
    if value < 0.0 {
        return Err(format!("Invalid value {value} for configuration {key}"));
    }
    Ok(())
}

impl Quotas {
    /// Sets (`Some`) or removes (`None`) a value; an entity left without values goes.
    pub(crate) fn set(&mut self, entity: &Entity, key: &str, value: Option<f64>) {
        match value {
            Some(v) => {
                self.values.entry(entity.clone()).or_default().insert(key.to_owned(), v);
            }
            None => {
                if let Some(values) = self.values.get_mut(entity) {
                    values.remove(key);
                    if values.is_empty() {
                        self.values.remove(entity);
                    }
                }
            }
        }
    }

    /// The entities a filter selects, with their values: every component must match (EXACT
    /// a name, DEFAULT the default, ANY any name of that type), and with `strict` the entity
    /// has no other types.
    pub(crate) fn describe(&self, components: &[(String, i8, Option<String>)], strict: bool) -> Vec<(&Entity, &BTreeMap<String, f64>)> {
        self.values
            .iter()
            .filter(|(entity, _)| {
                components.iter().all(|(t, match_type, name)| match (entity.get(t), *match_type) {
                    (Some(v), MATCH_EXACT) => v.is_some() && v == name,
                    (Some(v), MATCH_DEFAULT) => v.is_none(),
                    (Some(_), MATCH_ANY) => true,
                    _ => false,
                }) && (!strict || entity.len() == components.len())
            })
            .collect()
    }
}
