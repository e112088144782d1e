//! `kwire apis`: the api key table.

use std::io::Write;

use kwire::runtime::json::serde_json::{json, Value};
use kwire::{ApiInfo, ApiKey, VersionOrigin, VersionRange};

use crate::error::CliError;

/// Runs of consecutive versions with the same origin: (versions, origin).
fn origins(info: &ApiInfo) -> Vec<(VersionRange, VersionOrigin)> {
    let mut runs: Vec<(VersionRange, VersionOrigin)> = Vec::new();
    for v in info.valid.lo..=info.valid.hi {
        let Some(origin) = info.origin(v) else { continue };
        match runs.last_mut() {
            Some((r, o)) if *o == origin && r.hi + 1 == v => r.hi = v,
            _ => runs.push((VersionRange::new(v, v), origin)),
        }
    }
    runs
}

/// The JSON form of every api key. `origins` says which release defines each run of versions,
/// whether the newest release of the build still has them, and whether they are unstable.
pub fn table() -> Value {
    let rows: Vec<Value> = ApiKey::ALL
        .iter()
        .map(|k| {
            let info = k.info();
            let (min, max) = if info.valid.is_empty() { (None, None) } else { (Some(info.valid.lo), Some(info.valid.hi)) };
            let flexible_from = (!info.flexible.is_empty()).then_some(info.flexible.lo);
            let origins: Vec<Value> = origins(info)
                .iter()
                .map(|(r, o)| {
                    json!({"minVersion": r.lo, "maxVersion": r.hi, "release": o.release,
                           "inNewestRelease": o.in_newest_release, "unstable": o.unstable})
                })
                .collect();
            json!({"apiKey": k.key(), "name": k.name(), "minVersion": min, "maxVersion": max, "flexibleFrom": flexible_from,
                   "origins": origins})
        })
        .collect();
    Value::Array(rows)
}

/// `0-2 kafka-3.9.0 (not in kafka-4.4.0), 3-12 kafka-4.4.0, 13 kafka-4.4.0 unstable`; empty for a
/// single release whose versions are all stable (nothing to tell).
fn origin_text(info: &ApiInfo) -> String {
    let newest = info.releases.last().map_or("", |r| r.release);
    let runs = origins(info);
    if info.releases.len() < 2 && runs.iter().all(|(_, o)| !o.unstable) {
        return String::new();
    }
    let parts: Vec<String> = runs
        .iter()
        .map(|(r, o)| {
            let mut t = format!("{r} {}", o.release);
            if !o.in_newest_release {
                t.push_str(&format!(" (not in {newest})"));
            }
            if o.unstable {
                t.push_str(" unstable");
            }
            t
        })
        .collect();
    parts.join(", ")
}

/// Prints the table, as text or JSON.
pub fn run(out: &mut impl Write, as_json: bool) -> Result<(), CliError> {
    if as_json {
        return writeln!(out, "{}", table()).map_err(CliError::io);
    }
    let w = |r: Result<(), std::io::Error>| r.map_err(CliError::io);
    w(writeln!(out, "{:>4}  {:<36} {:<10} {:<9} {:<11} {:<32} origin", "key", "name", "versions", "flexible", "deprecated", "listeners"))?;
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
            "{:>4}  {:<36} {:<10} {:<9} {:<11} {:<32} {}",
            k.key(),
            k.name(),
            versions,
            flexible,
            deprecated,
            info.listeners.join(","),
            origin_text(info)
        ))?;
    }
    Ok(())
}
