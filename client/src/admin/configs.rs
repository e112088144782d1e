//! Configs of topics, brokers, broker loggers, client-metrics subscriptions and groups:
//! DescribeConfigs and IncrementalAlterConfigs.

use kwire::messages::{
    describe_configs_request::DescribeConfigsResource,
    incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig},
    DescribeConfigsRequest, IncrementalAlterConfigsRequest, ListConfigResourcesRequest,
};
use kwire::{ApiKey, ApiRequest};

use super::{bs, Admin};
use crate::error::{Error, Result};
use crate::future::ClientFuture;
use crate::route::Route;

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

    fn from_code(code: i8) -> Option<ConfigResource> {
        Some(match code {
            2 => ConfigResource::Topic,
            4 => ConfigResource::Broker,
            8 => ConfigResource::BrokerLogger,
            16 => ConfigResource::ClientMetrics,
            32 => ConfigResource::Group,
            _ => return None,
        })
    }
}

/// Another source of a config's value, in precedence order after the one in effect
/// (DescribeConfigs with synonyms): a broker config's static value and default under a topic
/// config, say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigSynonym {
    /// The name there (`log.retention.ms` for a topic's `retention.ms`).
    pub name: String,
    /// The value there (`None` when sensitive).
    pub value: Option<String>,
    /// Kafka's config source code (as [`ConfigEntry::source`]).
    pub source: i8,
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
    /// Where else the value is set, in precedence order (the one in effect first; empty
    /// unless described with synonyms).
    pub synonyms: Vec<ConfigSynonym>,
    /// The config's type (Java's `ConfigEntry.ConfigType`: 1 boolean, 2 string, 3 int,
    /// 4 short, 5 long, 6 double, 7 list, 8 class, 9 password; 0 unknown, as before
    /// DescribeConfigs v3).
    pub config_type: i8,
    /// Its documentation (only when described with documentation, DescribeConfigs v3+).
    pub documentation: Option<String>,
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
    pub fn describe_configs<'a>(&'a self, resource: ConfigResource, name: &'a str, keys: Option<&'a [&'a str]>) -> ClientFuture<'a, Result<Vec<ConfigEntry>>> {
        ClientFuture::boxed(self.describe_configs_boxed(resource, name, keys))
    }

    async fn describe_configs_boxed(&self, resource: ConfigResource, name: &str, keys: Option<&[&str]>) -> Result<Vec<ConfigEntry>> {
        self.describe_configs_with(resource, name, keys, false, false).await
    }

    /// Describes a resource's configs with, as asked, each one's synonyms (where else it is
    /// set: Java's `includeSynonyms`) and its documentation (`includeDocumentation`; brokers
    /// before DescribeConfigs v3 send none).
    ///
    /// ```no_run
    /// # async fn run(admin: kwire_client::Admin) -> kwire_client::Result<()> {
    /// use kwire_client::ConfigResource;
    ///
    /// let e = admin.describe_configs_with(ConfigResource::Topic, "orders", Some(&["retention.ms"]), true, true).await?;
    /// for s in &e[0].synonyms {
    ///     println!("{} = {:?} (source {})", s.name, s.value, s.source);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn describe_configs_with<'a>(
        &'a self,
        resource: ConfigResource,
        name: &'a str,
        keys: Option<&'a [&'a str]>,
        synonyms: bool,
        documentation: bool,
    ) -> ClientFuture<'a, Result<Vec<ConfigEntry>>> {
        ClientFuture::boxed(self.describe_configs_with_boxed(resource, name, keys, synonyms, documentation))
    }

    async fn describe_configs_with_boxed(
        &self,
        resource: ConfigResource,
        name: &str,
        keys: Option<&[&str]>,
        synonyms: bool,
        documentation: bool,
    ) -> Result<Vec<ConfigEntry>> {
        let request = DescribeConfigsRequest {
            resources: vec![DescribeConfigsResource {
                resource_type: resource.code(),
                resource_name: bs(name),
                configuration_keys: keys.map(|k| k.iter().map(|k| bs(k)).collect()),
                ..Default::default()
            }],
            include_synonyms: synonyms,
            include_documentation: documentation,
            ..Default::default()
        };
        let r = self.config_call(resource, name, request).await?;
        let res = r.results.first().ok_or_else(|| Error::missing(ApiKey::DescribeConfigs, name))?;
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
                synonyms: c
                    .synonyms
                    .iter()
                    .map(|s| ConfigSynonym { name: s.name.to_string(), value: s.value.as_ref().map(|v| v.to_string()), source: s.source })
                    .collect(),
                config_type: c.config_type,
                documentation: c.documentation.as_ref().map(|d| d.to_string()),
            })
            .collect())
    }

    /// The config resources that exist, of these types (every type when empty), as Java's
    /// `listConfigResources` (ListConfigResources v1, Kafka 4.1+). Before 4.1 the api is
    /// ListClientMetricsResources (v0, Kafka 3.7+), which lists client-metrics
    /// subscriptions only: asking such a broker for other types is an
    /// [`Error::UnsupportedVersion`]. Types this client does not know are left out.
    pub fn list_config_resources<'a>(&'a self, types: &'a [ConfigResource]) -> ClientFuture<'a, Result<Vec<(ConfigResource, String)>>> {
        ClientFuture::boxed(self.list_config_resources_boxed(types))
    }

    async fn list_config_resources_boxed(&self, types: &[ConfigResource]) -> Result<Vec<(ConfigResource, String)>> {
        let only_client_metrics = !types.is_empty() && types.iter().all(|t| *t == ConfigResource::ClientMetrics);
        // An atomic, not a Cell: the future is Send.
        let refused = std::sync::atomic::AtomicBool::new(false);
        let build = |v: i16| {
            if v == 0 && !only_client_metrics {
                refused.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            // v0 has no types: it lists client-metrics resources.
            let resource_types = if v == 0 { Default::default() } else { types.iter().map(|t| t.code()).collect() };
            ListConfigResourcesRequest { resource_types, ..Default::default() }
        };
        // One broker's answer: every broker sees the same metadata.
        let response = self.client.send_versioned(Route::Any, build).await?;
        if refused.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(Error::UnsupportedVersion {
                api: ApiKey::ListConfigResources,
                reason: "the broker has ListClientMetricsResources (v0) only, which lists client-metrics resources alone".into(),
            });
        }
        let r = &response;
        Error::check(r.error_code, None, || "list config resources".into())?;
        let mut out: Vec<(ConfigResource, String)> =
            r.config_resources.iter().filter_map(|c| Some((ConfigResource::from_code(c.resource_type)?, c.resource_name.to_string()))).collect();
        out.sort_by(|a, b| (a.0.code(), &a.1).cmp(&(b.0.code(), &b.1)));
        Ok(out)
    }

    /// The client-metrics subscriptions (KIP-714), as Java's `listClientMetricsResources`:
    /// [`list_config_resources`](Admin::list_config_resources) of that type, on any broker
    /// from 3.7.
    pub fn list_client_metrics_resources(&self) -> ClientFuture<'_, Result<Vec<String>>> {
        ClientFuture::boxed(self.list_client_metrics_resources_boxed())
    }

    async fn list_client_metrics_resources_boxed(&self) -> Result<Vec<String>> {
        Ok(self.list_config_resources(&[ConfigResource::ClientMetrics]).await?.into_iter().map(|(_, n)| n).collect())
    }

    /// Changes a resource's configs (IncrementalAlterConfigs).
    pub fn alter_configs<'a>(&'a self, resource: ConfigResource, name: &'a str, changes: &'a [(&'a str, ConfigOp)]) -> ClientFuture<'a, Result<()>> {
        ClientFuture::boxed(self.alter_configs_boxed(resource, name, changes))
    }

    async fn alter_configs_boxed(&self, resource: ConfigResource, name: &str, changes: &[(&str, ConfigOp)]) -> Result<()> {
        self.alter_configs_with(resource, name, changes, false).await
    }

    /// Checks that the broker would make these changes, making none (Java's
    /// `AlterConfigsOptions.validateOnly`): `Ok` or the error the change would give.
    pub fn validate_alter_configs<'a>(&'a self, resource: ConfigResource, name: &'a str, changes: &'a [(&'a str, ConfigOp)]) -> ClientFuture<'a, Result<()>> {
        ClientFuture::boxed(self.validate_alter_configs_boxed(resource, name, changes))
    }

    async fn validate_alter_configs_boxed(&self, resource: ConfigResource, name: &str, changes: &[(&str, ConfigOp)]) -> Result<()> {
        self.alter_configs_with(resource, name, changes, true).await
    }

    async fn alter_configs_with(&self, resource: ConfigResource, name: &str, changes: &[(&str, ConfigOp)], validate_only: bool) -> Result<()> {
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
            validate_only,
            ..Default::default()
        };
        let r = self.config_call(resource, name, request).await?;
        let res = r.responses.first().ok_or_else(|| Error::missing(ApiKey::IncrementalAlterConfigs, name))?;
        Error::check(res.error_code, res.error_message.as_deref(), || format!("alter configs of {name}"))
    }

    /// Broker configs go to that broker; topic configs to any.
    async fn config_call<R: ApiRequest + Clone>(&self, resource: ConfigResource, name: &str, request: R) -> Result<R::Response> {
        let route = match (resource, name.parse::<i32>()) {
            (ConfigResource::Broker | ConfigResource::BrokerLogger, Ok(node)) => Route::Node(node),
            _ => Route::Any,
        };
        self.client.send(route, request).await
    }
}
