//! Configs of topics, brokers, broker loggers, client-metrics subscriptions and groups:
//! DescribeConfigs and IncrementalAlterConfigs.

use kwire::messages::{
    describe_configs_request::DescribeConfigsResource,
    incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig},
    DescribeConfigsRequest, IncrementalAlterConfigsRequest,
};
use kwire::{ApiKey, ResponseKind};

use super::{bs, unexpected, Admin};
use crate::error::{Error, Result};

/// What a config resource is (Java's `ConfigResource.Type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigResource {
    /// A topic's configs.
    Topic,
    /// A broker's configs (name: the node id; an empty name for the cluster-wide default).
    Broker,
    /// A broker's log levels (name: the node id).
    BrokerLogger,
    /// A client-metrics subscription (KIP-714; name: the subscription).
    ClientMetrics,
    /// A consumer or share group's configs (KIP-848, KIP-932; name: the group id).
    Group,
}

impl ConfigResource {
    fn code(self) -> i8 {
        match self {
            ConfigResource::Topic => 2,
            ConfigResource::Broker => 4,
            ConfigResource::BrokerLogger => 8,
            ConfigResource::ClientMetrics => 16,
            ConfigResource::Group => 32,
        }
    }
}

/// One config entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigEntry {
    /// The name.
    pub name: String,
    /// The value (`None` when sensitive or unset).
    pub value: Option<String>,
    /// Whether it is read-only.
    pub read_only: bool,
    /// Whether it is sensitive.
    pub sensitive: bool,
    /// Kafka's config source (1 dynamic topic, 5 default, ...).
    pub source: i8,
}

/// A change to a config (IncrementalAlterConfigs' operations).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigOp {
    /// Set the value.
    Set(String),
    /// Remove the override (back to the default).
    Delete,
    /// Add these items to a list-valued config (e.g. `cleanup.policy`).
    Append(String),
    /// Remove these items from a list-valued config.
    Subtract(String),
}

impl Admin {
    /// Describes a resource's configs (all of them, or the named keys).
    pub async fn describe_configs(&self, resource: ConfigResource, name: &str, keys: Option<&[&str]>) -> Result<Vec<ConfigEntry>> {
        let request = DescribeConfigsRequest {
            resources: vec![DescribeConfigsResource {
                resource_type: resource.code(),
                resource_name: bs(name),
                configuration_keys: keys.map(|k| k.iter().map(|k| bs(k)).collect()),
                ..Default::default()
            }],
            ..Default::default()
        };
        let response = self.config_call(resource, name, request.into()).await?;
        let ResponseKind::DescribeConfigs(r) = response else { return Err(unexpected(ApiKey::DescribeConfigs, &response)) };
        let res = r.results.first().ok_or_else(|| Error::UnexpectedResponse("DescribeConfigs response has no result".into()))?;
        Error::check(res.error_code, res.error_message.as_deref(), || format!("describe configs of {name}"))?;
        Ok(res
            .configs
            .iter()
            .map(|c| ConfigEntry {
                name: c.name.to_string(),
                value: c.value.as_ref().map(|v| v.to_string()),
                read_only: c.read_only,
                sensitive: c.is_sensitive,
                source: c.config_source,
            })
            .collect())
    }

    /// Changes a resource's configs (IncrementalAlterConfigs).
    pub async fn alter_configs(&self, resource: ConfigResource, name: &str, changes: &[(&str, ConfigOp)]) -> Result<()> {
        let request = IncrementalAlterConfigsRequest {
            resources: vec![AlterConfigsResource {
                resource_type: resource.code(),
                resource_name: bs(name),
                configs: changes
                    .iter()
                    .map(|(k, op)| match op {
                        ConfigOp::Set(v) => AlterableConfig { name: bs(k), config_operation: 0, value: Some(bs(v)), ..Default::default() },
                        ConfigOp::Delete => AlterableConfig { name: bs(k), config_operation: 1, value: None, ..Default::default() },
                        ConfigOp::Append(v) => AlterableConfig { name: bs(k), config_operation: 2, value: Some(bs(v)), ..Default::default() },
                        ConfigOp::Subtract(v) => AlterableConfig { name: bs(k), config_operation: 3, value: Some(bs(v)), ..Default::default() },
                    })
                    .collect(),
                ..Default::default()
            }],
            validate_only: false,
            ..Default::default()
        };
        let response = self.config_call(resource, name, request.into()).await?;
        let ResponseKind::IncrementalAlterConfigs(r) = response else {
            return Err(unexpected(ApiKey::IncrementalAlterConfigs, &response));
        };
        let res = r.responses.first().ok_or_else(|| Error::UnexpectedResponse("IncrementalAlterConfigs response has no result".into()))?;
        Error::check(res.error_code, res.error_message.as_deref(), || format!("alter configs of {name}"))
    }

    /// Broker configs go to that broker; topic configs to any.
    async fn config_call(&self, resource: ConfigResource, name: &str, body: kwire::RequestKind) -> Result<ResponseKind> {
        match (resource, name.parse::<i32>()) {
            (ConfigResource::Broker | ConfigResource::BrokerLogger, Ok(node)) => {
                let api = body.api_key();
                self.client.call_node(node, body).await?.ok_or_else(|| Error::UnexpectedResponse(format!("no {} response", api.name())))
            }
            _ => self.client.call_any(body).await,
        }
    }

}
