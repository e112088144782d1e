//! `kafka-wire apis`: the api key table.

use std::io::Write;

use kafka_wire::runtime::json::serde_json::{json, Value};
use kafka_wire::ApiKey;

use crate::error::CliError;

/// The JSON form of every api key.
pub fn table() -> Value {
    let rows: Vec<Value> = ApiKey::ALL
        .iter()
        .map(|k| {
            let info = k.info();
            let (min, max) = if info.valid.is_empty() { (None, None) } else { (Some(info.valid.lo), Some(info.valid.hi)) };
            let flexible_from = (!info.flexible.is_empty()).then_some(info.flexible.lo);
            json!({"apiKey": k.key(), "name": k.name(), "minVersion": min, "maxVersion": max, "flexibleFrom": flexible_from})
        })
        .collect();
    Value::Array(rows)
}

/// Prints the table, as text or JSON.
pub fn run(out: &mut impl Write, as_json: bool) -> Result<(), CliError> {
    if as_json {
        return writeln!(out, "{}", table()).map_err(CliError::io);
    }
    let w = |r: Result<(), std::io::Error>| r.map_err(CliError::io);
    w(writeln!(out, "{:>4}  {:<36} {:<10} {:<9} {:<11} listeners", "key", "name", "versions", "flexible", "deprecated"))?;
    for k in ApiKey::ALL {
        let info = k.info();
        let mut versions = info.valid.to_string();
        if info.latest_version_unstable {
            versions.push('*');
        }
        let flexible = if info.flexible.is_empty() { "-".to_string() } else { format!("{}+", info.flexible.lo) };
        let deprecated = if info.deprecated.is_empty() { "-".to_string() } else { info.deprecated.to_string() };
        w(writeln!(
            out,
            "{:>4}  {:<36} {:<10} {:<9} {:<11} {}",
            k.key(),
            k.name(),
            versions,
            flexible,
            deprecated,
            info.listeners.join(",")
        ))?;
    }
    Ok(())
}
