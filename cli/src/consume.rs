//! `kwire consume`: records of a topic from an offset, a timestamp or a group's committed
//! positions, as kcat prints them (`-f`), as JSON lines, or value per line.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use clap::Args;
use kwire_client::{Client, Consumer, ConsumerConfig, IsolationLevel, OffsetAndMetadata, OffsetReset, OffsetSpec, TopicPartition};

use crate::error::CliError;
use crate::format::{print_json, record_json, Format};

/// `kwire consume`'s arguments.
#[derive(Args, Debug)]
pub struct ConsumeArgs {
    /// The topic.
    #[arg(short = 't', long)]
    pub topic: String,
    /// Where to start: beginning, end, stored (a group's commits), N (an offset), -N (N
    /// before the end), s@MS (the first record at or after a timestamp in ms). With -G:
    /// beginning or end, where partitions without commits start.
    #[arg(short = 'o', long, value_parser = StartAt::parse, allow_hyphen_values = true, value_name = "OFFSET")]
    pub offset: Option<StartAt>,
    /// Only these partitions (repeatable); all of the topic's by default. Not with -G.
    #[arg(short = 'p', long = "partition")]
    pub partitions: Vec<i32>,
    /// Consume as a member of this consumer group (partitions assigned by the group; the
    /// offsets of the records printed are committed after each batch and on the way out).
    #[arg(short = 'G', long = "group", value_name = "GROUP")]
    pub group: Option<String>,
    /// Stop after this many records.
    #[arg(short = 'c', long)]
    pub count: Option<u64>,
    /// Stop at the end: once every partition is read up to the end it had when it was assigned.
    #[arg(short = 'e', long = "exit")]
    pub exit_at_end: bool,
    /// read_uncommitted (default) or read_committed (only committed transactions' records).
    #[arg(long, default_value = "read_uncommitted", value_parser = parse_isolation)]
    pub isolation: IsolationLevel,
    /// Output format with kcat's directives: %s value, %S value length, %k key, %K key length,
    /// %t topic, %p partition, %o offset, %T timestamp, %h headers, %% percent; \n \t escapes.
    #[arg(short = 'f', long = "format", conflicts_with = "json", value_name = "FORMAT")]
    pub format: Option<String>,
    /// The delimiter after each record for the default output (escapes allowed).
    #[arg(short = 'D', long, default_value = "\\n", value_name = "DELIM")]
    pub delimiter: String,
    /// Print the key, this delimiter, then the value (default output only).
    #[arg(short = 'K', long = "key-delimiter", value_name = "DELIM")]
    pub key_delimiter: Option<String>,
    /// One JSON object per record: topic, partition, offset, timestamp, timestampType, key,
    /// value, headers (strings when UTF-8, else {"base64": ...}).
    #[arg(long)]
    pub json: bool,
}

fn parse_isolation(v: &str) -> Result<IsolationLevel, String> {
    match v {
        "read_uncommitted" => Ok(IsolationLevel::ReadUncommitted),
        "read_committed" => Ok(IsolationLevel::ReadCommitted),
        _ => Err(format!("{v:?} is not read_uncommitted or read_committed")),
    }
}

/// Where consumption starts (`-o`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartAt {
    /// The log start.
    Beginning,
    /// The log end.
    End,
    /// The group's committed offsets.
    Stored,
    /// An absolute offset.
    Offset(i64),
    /// This many records before the end.
    FromEnd(i64),
    /// The first offset whose timestamp is at least this (ms).
    Timestamp(i64),
}

impl StartAt {
    /// Parses kcat's `-o` values.
    pub fn parse(v: &str) -> Result<StartAt, String> {
        let bad = || format!("{v:?} is not beginning, end, stored, N, -N or s@TIMESTAMP_MS");
        Ok(match v {
            "beginning" => StartAt::Beginning,
            "end" => StartAt::End,
            "stored" => StartAt::Stored,
            _ => {
                if let Some(ts) = v.strip_prefix("s@") {
                    StartAt::Timestamp(ts.parse().map_err(|_| bad())?)
                } else if let Some(n) = v.strip_prefix('-').filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())) {
                    StartAt::FromEnd(n.parse().map_err(|_| bad())?)
                } else if v.starts_with('-') {
                    return Err(bad());
                } else {
                    StartAt::Offset(v.parse().map_err(|_| bad())?)
                }
            }
        })
    }
}

/// The output: a format, or JSON lines.
enum Output {
    Format(Format),
    Json,
}

impl Output {
    fn of(args: &ConsumeArgs) -> Result<Output, CliError> {
        Ok(if args.json {
            Output::Json
        } else if let Some(f) = &args.format {
            Output::Format(Format::parse(f)?)
        } else {
            Output::Format(Format::default_for(&args.delimiter, args.key_delimiter.as_deref()))
        })
    }
}

/// Checks what can be checked before connecting: the format string.
pub fn validate(args: &ConsumeArgs) -> Result<(), CliError> {
    Output::of(args).map(drop)
}

/// Runs `kwire consume`.
pub async fn run(client: Client, args: ConsumeArgs, out: &mut impl Write) -> Result<(), CliError> {
    let output = Output::of(&args)?;
    let start = args.offset.unwrap_or(if args.group.is_some() { StartAt::Stored } else { StartAt::Beginning });
    let topic = args.topic.as_str();
    let mut consumer = match &args.group {
        Some(group) => {
            if !args.partitions.is_empty() {
                return Err(CliError::Usage("-p cannot be used with -G: the group assigns the partitions".into()));
            }
            let reset = match start {
                StartAt::Beginning => OffsetReset::Earliest,
                StartAt::End | StartAt::Stored => OffsetReset::Latest,
                _ => return Err(CliError::Usage("with -G, -o is beginning or end: where partitions without committed offsets start".into())),
            };
            // Commits are made here, of what was printed (not of what a poll returned beyond -c).
            let config =
                ConsumerConfig { auto_offset_reset: reset, isolation_level: args.isolation, enable_auto_commit: false, ..ConsumerConfig::group(group) };
            let mut c = Consumer::new(client, config).map_err(|e| CliError::kafka("starting the consumer", e))?;
            c.subscribe(&[topic]).map_err(|e| CliError::kafka(format!("subscribing to {topic}"), e))?;
            c
        }
        None => {
            if start == StartAt::Stored {
                return Err(CliError::Usage("-o stored needs a group: -G GROUP".into()));
            }
            let info = client.topic(topic).await.map_err(|e| CliError::kafka(format!("looking up topic {topic}"), e))?;
            let all: BTreeSet<i32> = info.partitions.iter().map(|p| p.index).collect();
            let chosen: Vec<i32> = if args.partitions.is_empty() { all.iter().copied().collect() } else { args.partitions.clone() };
            if let Some(p) = chosen.iter().find(|p| !all.contains(p)) {
                return Err(CliError::Usage(format!("topic {topic} has no partition {p} (it has {})", all.len())));
            }
            let tps: Vec<TopicPartition> = chosen.iter().map(|&p| TopicPartition::new(topic, p)).collect();
            let config = ConsumerConfig { auto_offset_reset: OffsetReset::Earliest, isolation_level: args.isolation, ..ConsumerConfig::default() };
            let mut c = Consumer::new(client, config).map_err(|e| CliError::kafka("starting the consumer", e))?;
            c.assign(tps.clone()).map_err(|e| CliError::kafka("assigning partitions", e))?;
            seek(&mut c, &tps, start).await?;
            c
        }
    };

    let mut printed: u64 = 0;
    let mut ends: BTreeMap<TopicPartition, i64> = BTreeMap::new();
    // The next offset after each partition's last printed record, to commit.
    let mut done: BTreeMap<TopicPartition, OffsetAndMetadata> = BTreeMap::new();
    let grouped = args.group.is_some();
    let limit = args.count.unwrap_or(u64::MAX);
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    let mut progress = Progress::new();
    'outer: while printed < limit {
        progress.tick(&consumer, printed);
        let records = tokio::select! {
            r = consumer.poll(Duration::from_millis(500)) => r.map_err(|e| CliError::kafka(format!("consuming {topic}"), e))?,
            _ = &mut interrupted => break,
        };
        for r in &records {
            match &output {
                Output::Json => print_json(out, &record_json(r))?,
                Output::Format(f) => f.write(out, r).map_err(CliError::io)?,
            }
            printed += 1;
            if grouped {
                done.insert(TopicPartition::new(topic, r.partition), OffsetAndMetadata::new(r.offset + 1));
            }
            if printed >= limit {
                break 'outer;
            }
        }
        out.flush().map_err(CliError::io)?;
        if grouped && !done.is_empty() {
            consumer.commit_offsets(&done).await.map_err(|e| CliError::kafka("committing the group's offsets", e))?;
            done.clear();
        }
        if args.exit_at_end && at_end(&mut consumer, &mut ends).await? {
            break;
        }
    }
    out.flush().map_err(CliError::io)?;
    progress.clear();
    if grouped && !done.is_empty() {
        consumer.commit_offsets(&done).await.map_err(|e| CliError::kafka("committing the group's offsets", e))?;
    }
    consumer.close().await.map_err(|e| CliError::kafka("closing the consumer", e))
}

/// The progress line on stderr: records so far, records/s and lag, redrawn at most once a
/// second. Only when stderr is a terminal and the records go elsewhere (a file, a pipe), so
/// that it never lands among them.
struct Progress {
    enabled: bool,
    started: Instant,
    last: Instant,
    last_printed: u64,
    drawn: bool,
}

impl Progress {
    fn new() -> Progress {
        let enabled = std::io::stderr().is_terminal() && !std::io::stdout().is_terminal();
        let now = Instant::now();
        Progress { enabled, started: now, last: now, last_printed: 0, drawn: false }
    }

    /// Redraws the line if a second has passed.
    fn tick(&mut self, consumer: &Consumer, printed: u64) {
        let elapsed = self.last.elapsed();
        if !self.enabled || elapsed < Duration::from_secs(1) {
            return;
        }
        let rate = (printed - self.last_printed) as f64 / elapsed.as_secs_f64();
        // The lag the last fetch responses reported (no request); unknown before the first.
        let lags: Vec<i64> = consumer.assignment().iter().filter_map(|tp| consumer.current_lag(tp)).collect();
        let lag = if lags.is_empty() { "-".to_owned() } else { lags.iter().sum::<i64>().to_string() };
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[K{printed} records in {:.0} s, {rate:.0} records/s, lag {lag}", self.started.elapsed().as_secs_f64());
        let _ = err.flush();
        self.last = Instant::now();
        self.last_printed = printed;
        self.drawn = true;
    }

    /// Erases the line.
    fn clear(&mut self) {
        if self.drawn {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
            self.drawn = false;
        }
    }
}

/// Positions the assigned partitions at `start`.
async fn seek(c: &mut Consumer, tps: &[TopicPartition], start: StartAt) -> Result<(), CliError> {
    let err = |e| CliError::kafka("listing offsets", e);
    match start {
        StartAt::Beginning | StartAt::Stored => c.seek_to_beginning(tps),
        StartAt::End => c.seek_to_end(tps),
        StartAt::Offset(o) => {
            for tp in tps {
                c.seek(tp, o).map_err(|e| CliError::kafka(format!("seeking {tp}"), e))?;
            }
        }
        StartAt::FromEnd(n) => {
            let begin = c.beginning_offsets(tps).await.map_err(err)?;
            let end = c.end_offsets(tps).await.map_err(err)?;
            for tp in tps {
                let (b, e) = (begin.get(tp).copied().unwrap_or(0), end.get(tp).copied().unwrap_or(0));
                c.seek(tp, e.saturating_sub(n).max(b)).map_err(|e| CliError::kafka(format!("seeking {tp}"), e))?;
            }
        }
        StartAt::Timestamp(ts) => {
            let specs: Vec<_> = tps.iter().map(|tp| (tp.clone(), OffsetSpec::Timestamp(ts))).collect();
            let found = c.list_offsets(&specs).await.map_err(err)?;
            for tp in tps {
                match found.get(tp) {
                    Some(&(o, _)) if o >= 0 => c.seek(tp, o).map_err(|e| CliError::kafka(format!("seeking {tp}"), e))?,
                    // No record that late: start at the end.
                    _ => c.seek_to_end(std::slice::from_ref(tp)),
                }
            }
        }
    }
    Ok(())
}

/// Whether every assigned partition's position reached the end it had when first seen.
async fn at_end(c: &mut Consumer, ends: &mut BTreeMap<TopicPartition, i64>) -> Result<bool, CliError> {
    let assigned: Vec<TopicPartition> = c.assignment().into_iter().collect();
    if assigned.is_empty() {
        return Ok(false);
    }
    let unknown: Vec<TopicPartition> = assigned.iter().filter(|tp| !ends.contains_key(*tp)).cloned().collect();
    if !unknown.is_empty() {
        let found = c.end_offsets(&unknown).await.map_err(|e| CliError::kafka("listing end offsets", e))?;
        ends.extend(found);
    }
    for tp in &assigned {
        let end = ends.get(tp).copied().unwrap_or(0);
        let position = c.position(tp).await.map_err(|e| CliError::kafka(format!("the position of {tp}"), e))?;
        if position < end {
            return Ok(false);
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn offsets() {
        assert_eq!(StartAt::parse("beginning"), Ok(StartAt::Beginning));
        assert_eq!(StartAt::parse("end"), Ok(StartAt::End));
        assert_eq!(StartAt::parse("stored"), Ok(StartAt::Stored));
        assert_eq!(StartAt::parse("42"), Ok(StartAt::Offset(42)));
        assert_eq!(StartAt::parse("-10"), Ok(StartAt::FromEnd(10)));
        assert_eq!(StartAt::parse("s@1700000000000"), Ok(StartAt::Timestamp(1_700_000_000_000)));
        for bad in ["", "begin", "s@", "s@x", "--1", "1.5"] {
            assert!(StartAt::parse(bad).unwrap_err().contains("is not beginning"), "{bad}");
        }
        assert!(parse_isolation("committed").is_err());
    }
}
