//! `kwire groups list|describe|reset-offsets|delete`, as `kafka-consumer-groups.sh` does them.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use clap::{ArgGroup, Args, Subcommand};
use kwire::runtime::json::serde_json::json;
use kwire_client::{Admin, GroupDescription, OffsetAndMetadata, OffsetSpec, TopicPartition};

use crate::error::CliError;
use crate::format::{print_json, Table};

/// `kwire groups`.
#[derive(Subcommand, Debug)]
pub enum GroupsCommand {
    /// Lists every group of every broker: id, type, state, protocol type, coordinator.
    List {
        /// One JSON object per group.
        #[arg(long)]
        json: bool,
    },
    /// Per partition: the committed offset, the log end offset, the lag and the member that
    /// has it; then the group's state.
    Describe {
        /// The group.
        group: String,
        /// One JSON object: group, state, type, assignor, partitions [{topic, partition,
        /// committed, logEndOffset, lag, memberId, host, clientId}].
        #[arg(long)]
        json: bool,
    },
    /// Moves the group's committed offsets (the group must have no members to execute).
    ResetOffsets(ResetArgs),
    /// Deletes groups (they must have no members).
    Delete {
        /// The groups.
        #[arg(required = true)]
        groups: Vec<String>,
    },
}

/// `kwire groups reset-offsets`.
#[derive(Args, Debug)]
#[command(group(ArgGroup::new("to").required(true).args(["to_earliest", "to_latest", "to_datetime", "to_offset", "shift_by"])))]
#[command(group(ArgGroup::new("scope").required(true).args(["topics", "all_topics"])))]
pub struct ResetArgs {
    /// The group.
    pub group: String,
    /// A topic (all its partitions) or `TOPIC:P,P,...`; repeatable.
    #[arg(long = "topic", value_name = "TOPIC[:P,P]")]
    pub topics: Vec<String>,
    /// Every topic the group has committed offsets for.
    #[arg(long)]
    pub all_topics: bool,
    /// To the log start.
    #[arg(long)]
    pub to_earliest: bool,
    /// To the log end.
    #[arg(long)]
    pub to_latest: bool,
    /// To the first offset at or after a time: `YYYY-MM-DDTHH:MM:SS[.sss][Z|+HH:MM]` (UTC
    /// when no zone is given) or milliseconds since the epoch.
    #[arg(long, value_parser = parse_datetime, value_name = "TIME")]
    pub to_datetime: Option<i64>,
    /// To this offset (kept within the log).
    #[arg(long, value_name = "OFFSET")]
    pub to_offset: Option<i64>,
    /// By this many records from the committed offset (negative: back; kept within the log).
    #[arg(long, allow_hyphen_values = true, value_name = "N")]
    pub shift_by: Option<i64>,
    /// Print the new offsets only (the default).
    #[arg(long, conflicts_with = "execute")]
    pub dry_run: bool,
    /// Commit the new offsets.
    #[arg(long)]
    pub execute: bool,
    /// One JSON object per partition: topic, partition, offset.
    #[arg(long)]
    pub json: bool,
}

/// Runs `kwire groups ...`.
pub async fn run(admin: &Admin, command: GroupsCommand, out: &mut impl Write) -> Result<(), CliError> {
    match command {
        GroupsCommand::List { json } => {
            let groups = admin.list_groups().await.map_err(|e| CliError::kafka("listing groups", e))?;
            if json {
                for g in &groups {
                    print_json(
                        out,
                        &json!({"group": g.group_id, "type": g.group_type, "state": g.state, "protocolType": g.protocol_type, "coordinator": g.coordinator}),
                    )?;
                }
                return Ok(());
            }
            let mut t = Table::new(&["GROUP", "TYPE", "STATE", "PROTOCOL-TYPE", "COORDINATOR"]);
            for g in groups {
                t.row(vec![g.group_id, g.group_type, g.state, g.protocol_type, g.coordinator.to_string()]);
            }
            t.write(out)
        }
        GroupsCommand::Describe { group, json } => describe(admin, &group, json, out).await,
        GroupsCommand::ResetOffsets(a) => reset(admin, a, out).await,
        GroupsCommand::Delete { groups } => {
            let refs: Vec<&str> = groups.iter().map(String::as_str).collect();
            let results = admin.delete_groups(&refs).await.map_err(|e| CliError::kafka("deleting groups", e))?;
            let mut failed = 0;
            for (g, r) in groups.iter().zip(results) {
                match r {
                    Ok(()) => writeln!(out, "deleted group {g}").map_err(CliError::io)?,
                    Err(e) => {
                        failed += 1;
                        eprintln!("kwire: deleting group {g}: {e}");
                    }
                }
            }
            if failed > 0 {
                return Err(CliError::Incomplete(format!("{failed} of {} group(s) not deleted", groups.len())));
            }
            Ok(())
        }
    }
}

async fn describe_one(admin: &Admin, group: &str) -> Result<GroupDescription, CliError> {
    let mut described = admin.describe_groups(&[group]).await.map_err(|e| CliError::kafka(format!("describing group {group}"), e))?;
    match described.pop() {
        Some(d) => d.map_err(|e| CliError::kafka(format!("describing group {group}"), e)),
        None => Err(CliError::Incomplete(format!("describing group {group}: no answer"))),
    }
}

async fn log_offsets(admin: &Admin, tps: &BTreeSet<TopicPartition>, spec: OffsetSpec) -> Result<BTreeMap<TopicPartition, i64>, CliError> {
    if tps.is_empty() {
        return Ok(BTreeMap::new());
    }
    let specs: Vec<_> = tps.iter().map(|tp| (tp.clone(), spec)).collect();
    let found = admin.list_offsets(&specs, false).await.map_err(|e| CliError::kafka("listing offsets", e))?;
    Ok(found.into_iter().filter(|(_, o)| o.offset >= 0).map(|(tp, o)| (tp, o.offset)).collect())
}

async fn describe(admin: &Admin, group: &str, as_json: bool, out: &mut impl Write) -> Result<(), CliError> {
    let d = describe_one(admin, group).await?;
    let committed = admin.list_group_offsets(group, None).await.map_err(|e| CliError::kafka(format!("fetching {group}'s offsets"), e))?;
    let mut owner: BTreeMap<TopicPartition, usize> = BTreeMap::new();
    for (i, m) in d.members.iter().enumerate() {
        for tp in &m.assignment {
            owner.insert(tp.clone(), i);
        }
    }
    let tps: BTreeSet<TopicPartition> = committed.keys().chain(owner.keys()).cloned().collect();
    let ends = log_offsets(admin, &tps, OffsetSpec::Latest).await?;
    let dash = || "-".to_string();
    let mut table = Table::new(&["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]);
    let mut rows = Vec::new();
    for tp in &tps {
        let current = committed.get(tp).map(|o| o.offset);
        let end = ends.get(tp).copied();
        let lag = match (current, end) {
            (Some(c), Some(e)) => Some((e - c).max(0)),
            _ => None,
        };
        let member = owner.get(tp).and_then(|&i| d.members.get(i));
        rows.push(json!({
            "topic": tp.topic, "partition": tp.partition, "committed": current, "logEndOffset": end, "lag": lag,
            "memberId": member.map(|m| m.member_id.clone()), "host": member.map(|m| m.client_host.clone()),
            "clientId": member.map(|m| m.client_id.clone()),
        }));
        table.row(vec![
            group.to_owned(),
            tp.topic.clone(),
            tp.partition.to_string(),
            current.map_or_else(dash, |c| c.to_string()),
            end.map_or_else(dash, |e| e.to_string()),
            lag.map_or_else(dash, |l| l.to_string()),
            member.map_or_else(dash, |m| m.member_id.clone()),
            member.map_or_else(dash, |m| m.client_host.clone()),
            member.map_or_else(dash, |m| m.client_id.clone()),
        ]);
    }
    if as_json {
        return print_json(
            out,
            &json!({"group": group, "state": d.state, "type": d.group_type, "assignor": d.assignor, "coordinator": d.coordinator,
                    "members": d.members.len(), "partitions": rows}),
        );
    }
    table.write(out)?;
    writeln!(out, "\n{group}: state {}, {} member(s), type {}, coordinator {}", d.state, d.members.len(), d.group_type, d.coordinator).map_err(CliError::io)
}

/// The partitions `--topic` names: each of a topic's, or those listed after `:`.
async fn scope(admin: &Admin, a: &ResetArgs, committed: &BTreeMap<TopicPartition, OffsetAndMetadata>) -> Result<BTreeSet<TopicPartition>, CliError> {
    if a.all_topics {
        return Ok(committed.keys().cloned().collect());
    }
    let mut out = BTreeSet::new();
    for t in &a.topics {
        match t.split_once(':') {
            Some((topic, list)) => {
                for p in list.split(',') {
                    let p: i32 = p.trim().parse().map_err(|_| CliError::Usage(format!("--topic {t}: {p:?} is not a partition number")))?;
                    out.insert(TopicPartition::new(topic, p));
                }
            }
            None => {
                let info = admin.client().topic(t).await.map_err(|e| CliError::kafka(format!("looking up topic {t}"), e))?;
                out.extend(info.partitions.iter().map(|p| TopicPartition::new(t.as_str(), p.index)));
            }
        }
    }
    Ok(out)
}

async fn reset(admin: &Admin, a: ResetArgs, out: &mut impl Write) -> Result<(), CliError> {
    let group = a.group.as_str();
    let committed = admin.list_group_offsets(group, None).await.map_err(|e| CliError::kafka(format!("fetching {group}'s offsets"), e))?;
    let tps = scope(admin, &a, &committed).await?;
    let earliest = log_offsets(admin, &tps, OffsetSpec::Earliest).await?;
    let latest = log_offsets(admin, &tps, OffsetSpec::Latest).await?;
    let at_time = match a.to_datetime {
        Some(ts) => log_offsets(admin, &tps, OffsetSpec::Timestamp(ts)).await?,
        None => BTreeMap::new(),
    };
    let mut new = BTreeMap::new();
    for tp in &tps {
        let (lo, hi) = (earliest.get(tp).copied().unwrap_or(0), latest.get(tp).copied().unwrap_or(0));
        let offset = if a.to_earliest {
            lo
        } else if a.to_latest {
            hi
        } else if a.to_datetime.is_some() {
            // No record that late: the log end, as Kafka's tool.
            at_time.get(tp).copied().unwrap_or(hi)
        } else if let Some(o) = a.to_offset {
            within(o, lo, hi)
        } else if let Some(n) = a.shift_by {
            let Some(c) = committed.get(tp) else {
                return Err(CliError::Usage(format!("cannot shift {tp}: the group has no committed offset for it")));
            };
            within(c.offset.saturating_add(n), lo, hi)
        } else {
            return Err(CliError::Usage("give one of --to-earliest, --to-latest, --to-datetime, --to-offset, --shift-by".into()));
        };
        new.insert(tp.clone(), OffsetAndMetadata::new(offset));
    }
    if a.execute {
        let d = describe_one(admin, group).await?;
        if !matches!(d.state.as_str(), "Empty" | "Dead") {
            return Err(CliError::Incomplete(format!(
                "group {group} is {} with {} member(s): offsets can be reset only while it has none",
                d.state,
                d.members.len()
            )));
        }
        admin.alter_group_offsets(group, &new).await.map_err(|e| CliError::kafka(format!("committing {group}'s offsets"), e))?;
    } else if !a.dry_run {
        eprintln!("kwire: nothing committed (a dry run); --execute commits these offsets");
    }
    if a.json {
        for (tp, o) in &new {
            print_json(out, &json!({"topic": tp.topic, "partition": tp.partition, "offset": o.offset}))?;
        }
        return Ok(());
    }
    let mut t = Table::new(&["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]);
    for (tp, o) in &new {
        t.row(vec![group.to_owned(), tp.topic.clone(), tp.partition.to_string(), o.offset.to_string()]);
    }
    t.write(out)
}

/// `offset` kept within the log `[lo, hi]` (`hi` wins should the two cross).
fn within(offset: i64, lo: i64, hi: i64) -> i64 {
    offset.max(lo).min(hi)
}

/// Milliseconds since the epoch of `YYYY-MM-DDTHH:MM[:SS[.sss]][Z|+HH:MM|-HHMM]` (UTC without
/// a zone), or of a plain number of milliseconds.
pub fn parse_datetime(s: &str) -> Result<i64, String> {
    let bad = || format!("{s:?} is not YYYY-MM-DDTHH:MM:SS[.sss][Z|+HH:MM] or milliseconds");
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse().map_err(|_| bad());
    }
    let (date, time) = s.split_once(['T', ' ']).ok_or_else(bad)?;
    let mut d = date.split('-');
    let (Some(y), Some(mo), Some(day), None) = (d.next(), d.next(), d.next(), d.next()) else { return Err(bad()) };
    let num = |v: &str| v.parse::<i64>().map_err(|_| bad());
    let (y, mo, day) = (num(y)?, num(mo)?, num(day)?);
    // The zone: Z, or a sign after the time of day.
    let (clock, offset_min) = if let Some(c) = time.strip_suffix('Z') {
        (c, 0)
    } else if let Some(i) = time.rfind(['+', '-']) {
        let (c, z) = time.split_at(i);
        let sign = if z.starts_with('-') { -1 } else { 1 };
        let digits: String = z.chars().skip(1).filter(char::is_ascii_digit).collect();
        if digits.len() != 4 {
            return Err(bad());
        }
        let (h, m) = digits.split_at(2);
        (c, sign * (num(h)? * 60 + num(m)?))
    } else {
        (time, 0)
    };
    let mut parts = clock.split(':');
    let h = num(parts.next().ok_or_else(bad)?)?;
    let mi = num(parts.next().ok_or_else(bad)?)?;
    let (sec, ms) = match parts.next() {
        None => (0, 0),
        Some(sec) => match sec.split_once('.') {
            None => (num(sec)?, 0),
            Some((s, frac)) => {
                let frac: String = frac.chars().chain("000".chars()).take(3).collect();
                (num(s)?, num(&frac)?)
            }
        },
    };
    if parts.next().is_some() || !(1..=12).contains(&mo) || !(1..=31).contains(&day) || h > 23 || mi > 59 || sec > 60 {
        return Err(bad());
    }
    let days = days_from_civil(y, mo, day);
    Ok(((days * 24 + h) * 60 + mi - offset_min) * 60_000 + sec * 1000 + ms)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = (if y >= 0 { y } else { y - 399 }) / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn datetimes() {
        assert_eq!(parse_datetime("1970-01-01T00:00:00Z"), Ok(0));
        assert_eq!(parse_datetime("2023-11-14T22:13:20.123Z"), Ok(1_700_000_000_123));
        assert_eq!(parse_datetime("2023-11-14T22:13:20.5"), Ok(1_700_000_000_500));
        assert_eq!(parse_datetime("2023-11-15T00:13:20+02:00"), Ok(1_700_000_000_000));
        assert_eq!(parse_datetime("2023-11-14T21:13:20-0100"), Ok(1_700_000_000_000));
        assert_eq!(parse_datetime("2023-11-14T22:13"), Ok(1_699_999_980_000));
        assert_eq!(parse_datetime("1700000000000"), Ok(1_700_000_000_000));
        assert_eq!(parse_datetime("2000-03-01T00:00:00Z"), Ok(951_868_800_000));
        for bad in ["", "2023-13-01T00:00", "2023-11-14", "yesterday", "2023-11-14T25:00", "2023-11-14T10:00+2"] {
            assert!(parse_datetime(bad).is_err(), "{bad}");
        }
    }
}
