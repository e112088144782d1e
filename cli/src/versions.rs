//! `kwire versions`: a broker's ApiVersions next to this build's range and the version the
//! client would use, per api, marking the apis where they cannot agree (the answer to
//! "unexpected API version" errors), and with `--client` next to what another client's
//! release sends (see [`crate::clients`] for where those tables come from).

use std::io::Write;

use kwire::messages::ApiVersionsRequest;
use kwire::runtime::json::serde_json::{json, Value};
use kwire::{ApiKey, ByteString, ResponseKind, VersionRange};
use kwire_client::Client;

use crate::clients;
use crate::error::CliError;
use crate::format::{print_json, Table};

/// One api's row.
struct Row {
    key: i16,
    name: String,
    broker: Option<VersionRange>,
    build: Option<VersionRange>,
    uses: Result<i16, String>,
    /// The `--client` release's range.
    client: Option<VersionRange>,
}

impl Row {
    /// Why the broker and this build cannot agree, if they cannot.
    fn problem(&self) -> Option<&'static str> {
        match (self.broker, self.build) {
            (Some(_), None) => Some("unknown to this build"),
            (None, Some(_)) => None,
            (Some(b), Some(o)) if b.intersect(&o).is_empty() => Some("no common version"),
            _ => None,
        }
    }

    /// Why the `--client` release and the broker (or, without one, this build) cannot agree.
    fn client_problem(&self, with_broker: bool) -> Option<&'static str> {
        let other = if with_broker { self.broker } else { self.build };
        match (self.client, other) {
            (Some(_), None) if with_broker => Some("the broker does not serve what the client sends"),
            (Some(_), None) => Some("unknown to this build"),
            (Some(c), Some(o)) if c.intersect(&o).is_empty() => Some("client and broker share no version"),
            _ => None,
        }
    }

    /// The version the `--client` release would use with the broker.
    fn client_uses(&self) -> Option<i16> {
        let both = self.client?.intersect(&self.broker?);
        (!both.is_empty()).then_some(both.hi)
    }
}

/// `--client NAME`: the release's table, or a usage error listing the known ones.
pub fn client_table(name: &str) -> Result<(String, clients::Rows), CliError> {
    clients::find(name)
        .map(|(family, release, rows)| (format!("{family}-{release}"), rows))
        .ok_or_else(|| CliError::Usage(format!("--client {name:?}: unknown; known: {}", clients::names().join(", "))))
}

/// `kwire versions --client NAME` without a broker: the release next to this build.
pub fn run_offline(client: &str, as_json: bool, out: &mut impl Write) -> Result<(), CliError> {
    let (release, table) = client_table(client)?;
    let rows: Vec<Row> = ApiKey::ALL
        .iter()
        .map(|k| Row {
            key: k.key(),
            name: k.name().to_owned(),
            broker: None,
            build: Some(k.info().valid).filter(|v| !v.is_empty()),
            uses: Err("-".into()),
            client: clients::range(table, k.key()),
        })
        .chain(table.iter().filter(|(k, _, _)| ApiKey::from_i16(*k).is_none()).map(|(k, lo, hi)| Row {
            key: *k,
            name: format!("(api {k})"),
            broker: None,
            build: None,
            uses: Err("-".into()),
            client: Some(VersionRange::new(*lo, *hi)),
        }))
        .filter(|r| r.client.is_some())
        .collect();
    if as_json {
        let list: Vec<Value> = rows
            .iter()
            .map(|row| {
                json!({"apiKey": row.key, "name": row.name,
                       "client": row.client.map(|b| json!({"min": b.lo, "max": b.hi})),
                       "build": row.build.map(|b| json!({"min": b.lo, "max": b.hi})),
                       "problem": row.client_problem(false)})
            })
            .collect();
        return print_json(out, &json!({"client": release, "apis": list}));
    }
    let mut t = Table::new(&["KEY", "NAME", &release.to_uppercase(), "KWIRE", ""]);
    for row in &rows {
        t.row(vec![
            row.key.to_string(),
            row.name.clone(),
            range_text(row.client),
            range_text(row.build),
            row.client_problem(false).map_or_else(String::new, |p| format!("! {p}")),
        ]);
    }
    writeln!(out, "{release} (no broker given: this build's versions only)").map_err(CliError::io)?;
    t.write(out)
}

fn range_text(r: Option<VersionRange>) -> String {
    r.map_or_else(|| "-".into(), |r| r.to_string())
}

/// Runs `kwire versions` against `broker` (a node id) or the first bootstrap broker that
/// answers.
pub async fn run(client: &Client, broker: Option<i32>, all: bool, release: Option<&str>, as_json: bool, out: &mut impl Write) -> Result<(), CliError> {
    let release = release.map(client_table).transpose()?;
    let table = release.as_ref().map_or(&[][..], |(_, t)| *t);
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
    let mut keys: Vec<i16> = r.api_keys.iter().map(|k| k.api_key).chain(ApiKey::ALL.iter().map(|k| k.key())).chain(table.iter().map(|(k, _, _)| *k)).collect();
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
            let client = clients::range(table, key);
            Row { key, name: ours.map_or_else(|| format!("(api {key})"), |k| k.name().to_owned()), broker, build, uses, client }
        })
        .filter(|row| all || row.broker.is_some() || row.client.is_some())
        .collect();

    if as_json {
        let list: Vec<Value> = rows
            .iter()
            .map(|row| {
                let mut v = json!({"apiKey": row.key, "name": row.name,
                       "broker": row.broker.map(|b| json!({"min": b.lo, "max": b.hi})),
                       "build": row.build.map(|b| json!({"min": b.lo, "max": b.hi})),
                       "uses": row.uses.as_ref().ok(), "problem": row.problem()});
                if let (Some((name, _)), Value::Object(o)) = (&release, &mut v) {
                    o.insert(
                        "client".into(),
                        json!({"release": name, "versions": row.client.map(|b| json!({"min": b.lo, "max": b.hi})),
                        "uses": row.client_uses(), "problem": row.client_problem(true)}),
                    );
                }
                v
            })
            .collect();
        return print_json(out, &json!({"broker": addr, "apis": list}));
    }
    let mut headings = vec!["KEY".to_owned(), "NAME".into(), "BROKER".into(), "KWIRE".into(), "USES".into()];
    if let Some((name, _)) = &release {
        headings.extend([name.to_uppercase(), "IT-USES".into()]);
    }
    headings.push(String::new());
    let mut t = Table::new(&headings.iter().map(String::as_str).collect::<Vec<_>>());
    for row in &rows {
        let mut cells = vec![
            row.key.to_string(),
            row.name.clone(),
            range_text(row.broker),
            range_text(row.build),
            row.uses.as_ref().map_or_else(|_| "-".into(), |v| v.to_string()),
        ];
        let mut problems: Vec<String> = row.problem().map(|p| format!("! {p}")).into_iter().collect();
        if release.is_some() {
            cells.push(range_text(row.client));
            cells.push(row.client_uses().map_or_else(|| "-".into(), |v| v.to_string()));
            if let Some(p) = row.client_problem(true) {
                problems.push(format!("! {p}"));
            }
        }
        cells.push(problems.join("; "));
        t.row(cells);
    }
    writeln!(out, "broker {addr}").map_err(CliError::io)?;
    t.write(out)?;
    if let Some((name, _)) = &release {
        let n = rows.iter().filter(|r| r.client_problem(true).is_some()).count();
        if n > 0 {
            writeln!(out, "{n} api(s) {name} sends that the broker cannot take").map_err(CliError::io)?;
        }
    }
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
        Row { key: 0, name: "Produce".into(), broker: broker.map(r), build: build.map(r), uses: Err("-".into()), client: None }
    }

    #[test]
    fn disagreements_are_marked() {
        assert_eq!(row(Some((3, 11)), Some((0, 13))).problem(), None);
        assert_eq!(row(Some((0, 2)), Some((3, 13))).problem(), Some("no common version"));
        assert_eq!(row(Some((0, 2)), None).problem(), Some("unknown to this build"));
        assert_eq!(row(None, Some((0, 13))).problem(), None);
    }

    #[test]
    fn a_client_the_broker_cannot_serve_is_marked() {
        // Java 4's Produce (3-12) against a broker that stops at v2.
        let mut r = row(Some((0, 2)), Some((0, 13)));
        r.client = Some(VersionRange::new(3, 12));
        assert_eq!(r.client_problem(true), Some("client and broker share no version"));
        assert_eq!(r.client_uses(), None);
        r.broker = Some(VersionRange::new(0, 11));
        assert_eq!((r.client_problem(true), r.client_uses()), (None, Some(11)));
        r.broker = None;
        assert_eq!(r.client_problem(true), Some("the broker does not serve what the client sends"));
    }

    #[test]
    fn releases_are_found_by_minor_or_patch() {
        assert_eq!(crate::clients::find("java-3.6").map(|c| c.1), Some("3.6.2"));
        assert_eq!(crate::clients::find("java-3.6.2").map(|c| c.1), Some("3.6.2"));
        assert_eq!(crate::clients::find("librdkafka-2.0").map(|c| c.1), Some("2.0.2"));
        assert!(crate::clients::find("java-3.60").is_none());
        assert!(crate::clients::find("java").is_none());
    }
}
