//! `kwire versions`: a broker's ApiVersions next to this build's range and the version the
//! client would use, per api, marking the apis where they cannot agree (the answer to
//! "unexpected API version" errors).

use std::io::Write;

use kwire::messages::ApiVersionsRequest;
use kwire::runtime::json::serde_json::{json, Value};
use kwire::{ApiKey, ByteString, ResponseKind, VersionRange};
use kwire_client::Client;

use crate::error::CliError;
use crate::format::{print_json, Table};

/// One api's row.
struct Row {
    key: i16,
    name: String,
    broker: Option<VersionRange>,
    build: Option<VersionRange>,
    uses: Result<i16, String>,
}

impl Row {
    /// Why the two cannot agree, if they cannot.
    fn problem(&self) -> Option<&'static str> {
        match (self.broker, self.build) {
            (Some(_), None) => Some("unknown to this build"),
            (None, Some(_)) => None,
            (Some(b), Some(o)) if b.intersect(&o).is_empty() => Some("no common version"),
            _ => None,
        }
    }
}

fn range_text(r: Option<VersionRange>) -> String {
    r.map_or_else(|| "-".into(), |r| r.to_string())
}

/// Runs `kwire versions` against `broker` (a node id) or the first bootstrap broker that
/// answers.
pub async fn run(client: &Client, broker: Option<i32>, all: bool, as_json: bool, out: &mut impl Write) -> Result<(), CliError> {
    let addr = match broker {
        Some(id) => client.node_addr(id).await.map_err(|e| CliError::kafka(format!("finding broker {id}"), e))?,
        None => {
            let m = client.metadata();
            let first = m.brokers.values().next().map(|b| b.addr());
            first.ok_or_else(|| CliError::Incomplete("the cluster's metadata lists no broker".into()))?
        }
    };
    let conn = client.connection(&addr).await.map_err(|e| CliError::kafka(format!("connecting to {addr}"), e))?;
    let request = ApiVersionsRequest {
        client_software_name: ByteString::from_static("kwire"),
        client_software_version: ByteString::from_static(env!("CARGO_PKG_VERSION")),
        ..Default::default()
    };
    let response = conn.request(request).await.map_err(|e| CliError::kafka(format!("ApiVersions to {addr}"), e))?;
    let ResponseKind::ApiVersions(r) = response else {
        return Err(CliError::Incomplete(format!("{addr} answered ApiVersions with {:?}", response.api_key())));
    };
    let mut keys: Vec<i16> = r.api_keys.iter().map(|k| k.api_key).chain(ApiKey::ALL.iter().map(|k| k.key())).collect();
    keys.sort_unstable();
    keys.dedup();
    let rows: Vec<Row> = keys
        .into_iter()
        .map(|key| {
            let ours = ApiKey::ALL.iter().find(|k| k.key() == key).copied();
            let broker = r.api_keys.iter().find(|k| k.api_key == key).map(|k| VersionRange::new(k.min_version, k.max_version));
            let build = ours.map(|k| k.info().valid).filter(|v| !v.is_empty());
            let uses = match ours {
                Some(k) if broker.is_some() => conn.version(k).map_err(|e| e.to_string()),
                _ => Err("-".into()),
            };
            Row { key, name: ours.map_or_else(|| format!("(api {key})"), |k| k.name().to_owned()), broker, build, uses }
        })
        .filter(|row| all || row.broker.is_some())
        .collect();

    if as_json {
        let list: Vec<Value> = rows
            .iter()
            .map(|row| {
                json!({"apiKey": row.key, "name": row.name,
                       "broker": row.broker.map(|b| json!({"min": b.lo, "max": b.hi})),
                       "build": row.build.map(|b| json!({"min": b.lo, "max": b.hi})),
                       "uses": row.uses.as_ref().ok(), "problem": row.problem()})
            })
            .collect();
        return print_json(out, &json!({"broker": addr, "apis": list}));
    }
    let mut t = Table::new(&["KEY", "NAME", "BROKER", "KWIRE", "USES", ""]);
    for row in &rows {
        t.row(vec![
            row.key.to_string(),
            row.name.clone(),
            range_text(row.broker),
            range_text(row.build),
            row.uses.as_ref().map_or_else(|_| "-".into(), |v| v.to_string()),
            row.problem().map_or_else(String::new, |p| format!("! {p}")),
        ]);
    }
    writeln!(out, "broker {addr}").map_err(CliError::io)?;
    t.write(out)?;
    let problems = rows.iter().filter(|r| r.problem().is_some()).count();
    if problems > 0 {
        writeln!(out, "{problems} api(s) without a common version").map_err(CliError::io)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(broker: Option<(i16, i16)>, build: Option<(i16, i16)>) -> Row {
        let r = |(lo, hi)| VersionRange::new(lo, hi);
        Row { key: 0, name: "Produce".into(), broker: broker.map(r), build: build.map(r), uses: Err("-".into()) }
    }

    #[test]
    fn disagreements_are_marked() {
        assert_eq!(row(Some((3, 11)), Some((0, 13))).problem(), None);
        assert_eq!(row(Some((0, 2)), Some((3, 13))).problem(), Some("no common version"));
        assert_eq!(row(Some((0, 2)), None).problem(), Some("unknown to this build"));
        assert_eq!(row(None, Some((0, 13))).problem(), None);
    }
}
