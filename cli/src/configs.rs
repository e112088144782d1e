//! `kwire configs describe|alter`, as `kafka-configs.sh` does them, for topics, brokers and
//! groups.

use std::io::Write;

use clap::{ArgGroup, Args, Subcommand};
use kwire::runtime::json::serde_json::json;
use kwire_client::{Admin, ConfigOp, ConfigResource};

use crate::error::CliError;
use crate::format::{print_json, Table};
use crate::topics::key_value;

/// Which resource.
#[derive(Args, Debug)]
#[command(group(ArgGroup::new("resource").required(true).args(["topic", "broker", "broker_defaults", "group"])))]
pub struct Resource {
    /// A topic.
    #[arg(long)]
    pub topic: Option<String>,
    /// A broker, by node id.
    #[arg(long)]
    pub broker: Option<i32>,
    /// The cluster-wide broker defaults.
    #[arg(long)]
    pub broker_defaults: bool,
    /// A consumer group (KIP-848 groups' configs).
    #[arg(long)]
    pub group: Option<String>,
}

impl Resource {
    fn target(&self) -> (ConfigResource, String) {
        if let Some(t) = &self.topic {
            (ConfigResource::Topic, t.clone())
        } else if let Some(b) = self.broker {
            (ConfigResource::Broker, b.to_string())
        } else if let Some(g) = &self.group {
            (ConfigResource::Group, g.clone())
        } else {
            (ConfigResource::Broker, String::new())
        }
    }
}

/// `kwire configs`.
#[derive(Subcommand, Debug)]
pub enum ConfigsCommand {
    /// The configs set on the resource itself, as kafka-configs.sh lists them (every config,
    /// with its source, with --all).
    Describe {
        #[command(flatten)]
        resource: Resource,
        /// Every config, defaults and static ones too.
        #[arg(long)]
        all: bool,
        /// One JSON object per config: name, value, source, readOnly, sensitive.
        #[arg(long)]
        json: bool,
    },
    /// Sets or removes configs (IncrementalAlterConfigs).
    Alter {
        #[command(flatten)]
        resource: Resource,
        /// `KEY=VALUE` to set; repeatable, or comma-separated.
        #[arg(long = "add-config", value_name = "KEY=VALUE[,KEY=VALUE]")]
        add: Vec<String>,
        /// A config to return to its default; repeatable, or comma-separated.
        #[arg(long = "delete-config", value_name = "KEY[,KEY]")]
        delete: Vec<String>,
    },
}

/// `a=1,b=2,c=x,y` as `a=1`, `b=2`, `c=x,y`: a piece without `=` belongs to the value before
/// it (list values such as `cleanup.policy=compact,delete`).
fn split_pairs(s: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for piece in s.split(',') {
        match out.last_mut() {
            Some(last) if !piece.contains('=') => {
                last.push(',');
                last.push_str(piece);
            }
            _ => out.push(piece.to_owned()),
        }
    }
    out.retain(|p| !p.is_empty());
    out
}

/// Kafka's names of config sources.
fn source_name(source: i8) -> &'static str {
    match source {
        1 => "DYNAMIC_TOPIC_CONFIG",
        2 => "DYNAMIC_BROKER_CONFIG",
        3 => "DYNAMIC_DEFAULT_BROKER_CONFIG",
        4 => "STATIC_BROKER_CONFIG",
        5 => "DEFAULT_CONFIG",
        6 => "DYNAMIC_BROKER_LOGGER_CONFIG",
        7 => "CLIENT_METRICS_CONFIG",
        8 => "GROUP_CONFIG",
        _ => "UNKNOWN",
    }
}

/// Whether a config of `kind` comes from the resource's own dynamic setting (what
/// `kafka-configs.sh --describe` lists): a topic's override, a broker's or the cluster-wide
/// broker default, a group's; not an inherited, static or default value.
fn set_on(kind: ConfigResource, name: &str, source: i8) -> bool {
    match kind {
        ConfigResource::Topic => source == 1,
        ConfigResource::Broker if name.is_empty() => source == 3,
        ConfigResource::Broker => source == 2,
        ConfigResource::BrokerLogger => source == 6,
        ConfigResource::ClientMetrics => source == 7,
        ConfigResource::Group => source == 8,
        _ => !matches!(source, 4 | 5),
    }
}

/// Runs `kwire configs ...`.
pub async fn run(admin: &Admin, command: ConfigsCommand, out: &mut impl Write) -> Result<(), CliError> {
    match command {
        ConfigsCommand::Describe { resource, all, json } => {
            let (kind, name) = resource.target();
            let entries =
                admin.describe_configs(kind, &name, None).await.map_err(|e| CliError::kafka(format!("describing the configs of {kind:?} {name:?}"), e))?;
            let mut t = Table::new(&["NAME", "VALUE", "SOURCE"]);
            for e in entries.iter().filter(|e| all || set_on(kind, &name, e.source)) {
                let value = if e.sensitive { None } else { e.value.clone() };
                if json {
                    print_json(
                        out,
                        &json!({"name": e.name, "value": value, "source": source_name(e.source), "readOnly": e.read_only, "sensitive": e.sensitive}),
                    )?;
                } else {
                    let shown = if e.sensitive { "(sensitive)".to_owned() } else { value.unwrap_or_else(|| "null".into()) };
                    t.row(vec![e.name.clone(), shown, source_name(e.source).to_owned()]);
                }
            }
            if !json {
                t.write(out)?;
            }
            Ok(())
        }
        ConfigsCommand::Alter { resource, add, delete } => {
            let (kind, name) = resource.target();
            let mut changes: Vec<(String, ConfigOp)> = Vec::new();
            for pair in add.iter().flat_map(|a| split_pairs(a)) {
                let (k, v) = key_value(&pair, "--add-config")?;
                changes.push((k, ConfigOp::Set(v)));
            }
            for k in delete.iter().flat_map(|d| d.split(',')).map(str::trim).filter(|s| !s.is_empty()) {
                changes.push((k.to_owned(), ConfigOp::Delete));
            }
            if changes.is_empty() {
                return Err(CliError::Usage("nothing to alter: give --add-config or --delete-config".into()));
            }
            let refs: Vec<(&str, ConfigOp)> = changes.iter().map(|(k, op)| (k.as_str(), op.clone())).collect();
            admin.alter_configs(kind, &name, &refs).await.map_err(|e| CliError::kafka(format!("altering the configs of {kind:?} {name:?}"), e))?;
            writeln!(out, "altered {} config(s) of {kind:?} {name:?}", refs.len()).map_err(CliError::io)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_keep_list_values() {
        assert_eq!(split_pairs("a=1,b=2"), ["a=1", "b=2"]);
        assert_eq!(split_pairs("cleanup.policy=compact,delete,retention.ms=5"), ["cleanup.policy=compact,delete", "retention.ms=5"]);
        assert!(split_pairs("").is_empty());
    }
}
