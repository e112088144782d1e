//! `kwire produce`: records from stdin or a file, one per line or per delimiter, with keys,
//! headers, a partition, compression, acks, idempotence and optionally a transaction around the
//! whole input.

use std::collections::VecDeque;
use std::io::{BufRead, Write};
use std::path::PathBuf;

use clap::Args;
use kwire::runtime::records::Compression;
use kwire::Bytes;
use kwire_client::{Acks, Client, Delivery, Producer, ProducerConfig, ProducerRecord};

use crate::error::CliError;
use crate::format::unescape;

/// Deliveries awaited before more records are read: bounds memory on long inputs.
const MAX_PENDING: usize = 10_000;

/// `kwire produce`'s arguments.
#[derive(Args, Debug)]
pub struct ProduceArgs {
    /// The topic.
    #[arg(short = 't', long)]
    pub topic: String,
    /// Read the records from this file instead of stdin.
    #[arg(short = 'f', long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// The delimiter between records (escapes: \n \t \r \0 \xHH).
    #[arg(short = 'D', long, default_value = "\\n", value_name = "DELIM")]
    pub delimiter: String,
    /// Split each record into key and value at the first occurrence of this delimiter; a
    /// record without it has no key.
    #[arg(short = 'K', long = "key-delimiter", value_name = "DELIM")]
    pub key_delimiter: Option<String>,
    /// A header on every record, `KEY=VALUE` (a bare `KEY` is a null value); repeatable.
    #[arg(short = 'H', long = "header", value_name = "KEY=VALUE")]
    pub headers: Vec<String>,
    /// Write every record to this partition (by default the key's partition, as Java's
    /// partitioner, or a sticky one for records without keys).
    #[arg(short = 'p', long)]
    pub partition: Option<i32>,
    /// Compression: none, gzip, snappy, lz4, zstd.
    #[arg(short = 'z', long, default_value = "none", value_parser = parse_compression)]
    pub compression: Compression,
    /// Send a batch uncompressed when the codec does not make it smaller (as kcat does, by
    /// librdkafka; Java's producer always compresses).
    #[arg(long)]
    pub compress_only_if_smaller: bool,
    /// Acknowledgements: 0, 1 or all (-1).
    #[arg(long, default_value = "all", value_parser = parse_acks)]
    pub acks: Acks,
    /// Turn idempotence off (it is on unless --acks is 0 or 1).
    #[arg(long)]
    pub no_idempotence: bool,
    /// Write the whole input in one transaction with this transactional id: committed when
    /// every record is acknowledged, aborted otherwise.
    #[arg(long, value_name = "ID")]
    pub transactional_id: Option<String>,
    /// Print each record's topic, partition and offset (tab-separated) once acknowledged.
    #[arg(short = 'v', long)]
    pub verbose: bool,
}

fn parse_compression(v: &str) -> Result<Compression, String> {
    Ok(match v.to_ascii_lowercase().as_str() {
        "none" => Compression::None,
        "gzip" => Compression::Gzip,
        "snappy" => Compression::Snappy,
        "lz4" => Compression::Lz4,
        "zstd" => Compression::Zstd,
        _ => return Err(format!("{v:?} is not none, gzip, snappy, lz4 or zstd")),
    })
}

fn parse_acks(v: &str) -> Result<Acks, String> {
    Ok(match v.to_ascii_lowercase().as_str() {
        "0" => Acks::None,
        "1" => Acks::Leader,
        "all" | "-1" => Acks::All,
        _ => return Err(format!("{v:?} is not 0, 1 or all")),
    })
}

/// Splits input into records at a delimiter, streaming for a one-byte delimiter.
pub struct Records<R> {
    input: R,
    delimiter: Vec<u8>,
    /// For a longer delimiter: the whole input, and where the next record starts.
    buffered: Option<(Vec<u8>, usize)>,
}

impl<R: BufRead> Records<R> {
    /// Records of `input` separated by `delimiter` (already unescaped, not empty).
    pub fn new(input: R, delimiter: Vec<u8>) -> Records<R> {
        Records { input, delimiter, buffered: None }
    }

    /// The next record, without its delimiter; `None` at the end. Text after the last
    /// delimiter is a record; an input ending with the delimiter has no empty record after it.
    pub fn next_record(&mut self) -> std::io::Result<Option<Vec<u8>>> {
        if let &[d] = self.delimiter.as_slice() {
            let mut buf = Vec::new();
            if self.input.read_until(d, &mut buf)? == 0 {
                return Ok(None);
            }
            if buf.last() == Some(&d) {
                buf.pop();
            }
            return Ok(Some(buf));
        }
        if self.buffered.is_none() {
            let mut all = Vec::new();
            self.input.read_to_end(&mut all)?;
            self.buffered = Some((all, 0));
        }
        let Some((all, pos)) = self.buffered.as_mut() else { return Ok(None) };
        let rest = all.get(*pos..).unwrap_or_default();
        if rest.is_empty() {
            return Ok(None);
        }
        match rest.windows(self.delimiter.len()).position(|w| w == self.delimiter.as_slice()) {
            Some(i) => {
                let record = rest.get(..i).unwrap_or_default().to_vec();
                *pos += i + self.delimiter.len();
                Ok(Some(record))
            }
            None => {
                let record = rest.to_vec();
                *pos = all.len();
                Ok(Some(record))
            }
        }
    }
}

/// Splits at the first `delimiter`: (key, value), or (None, all) when it does not occur.
pub fn split_key(record: &[u8], delimiter: &[u8]) -> (Option<Vec<u8>>, Vec<u8>) {
    if delimiter.is_empty() {
        return (None, record.to_vec());
    }
    match record.windows(delimiter.len()).position(|w| w == delimiter) {
        Some(i) => (Some(record.get(..i).unwrap_or_default().to_vec()), record.get(i + delimiter.len()..).unwrap_or_default().to_vec()),
        None => (None, record.to_vec()),
    }
}

/// `-H KEY=VALUE` (or a bare `KEY`, a null value).
pub fn parse_header(h: &str) -> (String, Option<Bytes>) {
    match h.split_once('=') {
        Some((k, v)) => (k.to_owned(), Some(Bytes::copy_from_slice(v.as_bytes()))),
        None => (h.to_owned(), None),
    }
}

/// Runs `kwire produce`.
pub async fn run(client: Client, args: ProduceArgs, out: &mut impl Write) -> Result<(), CliError> {
    let delimiter = unescape(&args.delimiter);
    if delimiter.is_empty() {
        return Err(CliError::Usage("-D: the delimiter is empty".into()));
    }
    let key_delimiter = args.key_delimiter.as_deref().map(unescape);
    let headers: Vec<(String, Option<Bytes>)> = args.headers.iter().map(|h| parse_header(h)).collect();
    let input: Box<dyn BufRead> = match &args.file {
        Some(path) => Box::new(std::io::BufReader::new(std::fs::File::open(path).map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))?)),
        None => Box::new(std::io::stdin().lock()),
    };
    let mut records = Records::new(input, delimiter);

    let transactional = args.transactional_id.is_some();
    let config = ProducerConfig {
        acks: args.acks,
        idempotence: transactional || (!args.no_idempotence && args.acks == Acks::All),
        compression: args.compression,
        compress_only_if_smaller: args.compress_only_if_smaller,
        transactional_id: args.transactional_id.clone(),
        ..ProducerConfig::default()
    };
    let topic = args.topic.as_str();
    let producer = Producer::new(client, config).map_err(|e| CliError::kafka("starting the producer", e))?;
    if transactional {
        producer.init_transactions().await.map_err(|e| CliError::kafka("initialising transactions", e))?;
        producer.begin_transaction().await.map_err(|e| CliError::kafka("beginning the transaction", e))?;
    }

    let mut tally = Tally::default();
    let mut pending: VecDeque<(usize, Delivery)> = VecDeque::new();
    let mut index = 0;
    let mut send_error = None;
    loop {
        let record = records.next_record().map_err(|e| CliError::Usage(format!("reading the input: {e}")))?;
        let Some(record) = record else { break };
        index += 1;
        let (key, value) = match &key_delimiter {
            Some(d) => split_key(&record, d),
            None => (None, record),
        };
        let mut r = ProducerRecord::new(topic, value);
        if let Some(k) = key {
            r = r.key(k);
        }
        if let Some(p) = args.partition {
            r = r.partition(p);
        }
        for (k, v) in &headers {
            r = r.header(k.clone(), v.clone());
        }
        match producer.send(r).await {
            Ok(d) => pending.push_back((index, d)),
            Err(e) => {
                // The producer refused to take it (closed, fatal): nothing more will go out.
                eprintln!("kwire: record {index}: {e}");
                tally.failed += 1;
                send_error = Some(e);
                break;
            }
        }
        while pending.len() >= MAX_PENDING {
            if let Some((i, d)) = pending.pop_front() {
                tally.settle(i, d.await, topic, args.verbose, out)?;
            }
        }
    }
    while let Some((i, d)) = pending.pop_front() {
        tally.settle(i, d.await, topic, args.verbose, out)?;
    }

    if transactional {
        if tally.failed == 0 && send_error.is_none() {
            producer.commit_transaction().await.map_err(|e| CliError::kafka("committing the transaction", e))?;
        } else {
            producer.abort_transaction().await.map_err(|e| CliError::kafka("aborting the transaction", e))?;
        }
    }
    producer.close().await.map_err(|e| CliError::kafka("closing the producer", e))?;
    out.flush().map_err(CliError::io)?;
    if tally.failed > 0 {
        let what = if transactional { ", the transaction was aborted" } else { "" };
        return Err(CliError::Incomplete(format!("{} of {} record(s) not acknowledged{what}", tally.failed, tally.failed + tally.ok)));
    }
    Ok(())
}

#[derive(Default)]
struct Tally {
    ok: usize,
    failed: usize,
}

impl Tally {
    fn settle(
        &mut self,
        index: usize,
        result: kwire_client::Result<kwire_client::RecordMetadata>,
        topic: &str,
        verbose: bool,
        out: &mut impl Write,
    ) -> Result<(), CliError> {
        match result {
            Ok(m) => {
                self.ok += 1;
                if verbose {
                    writeln!(out, "{topic}\t{}\t{}", m.partition, m.offset).map_err(CliError::io)?;
                }
            }
            Err(e) => {
                self.failed += 1;
                eprintln!("kwire: record {index}: {e}");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
    use super::*;

    fn all(input: &str, delim: &str) -> Vec<String> {
        let mut r = Records::new(input.as_bytes(), unescape(delim));
        let mut out = Vec::new();
        while let Some(rec) = r.next_record().unwrap() {
            out.push(String::from_utf8(rec).unwrap());
        }
        out
    }

    #[test]
    fn records_by_delimiter() {
        assert_eq!(all("a\nb\n\nc", "\\n"), ["a", "b", "", "c"]);
        assert_eq!(all("a\nb\n", "\\n"), ["a", "b"]);
        assert_eq!(all("a;;b;;", ";;"), ["a", "b"]);
        assert_eq!(all("a;;b;c", ";;"), ["a", "b;c"]);
        assert!(all("", "\\n").is_empty());
    }

    #[test]
    fn keys_and_headers() {
        assert_eq!(split_key(b"k:v:w", b":"), (Some(b"k".to_vec()), b"v:w".to_vec()));
        assert_eq!(split_key(b"novalue", b":"), (None, b"novalue".to_vec()));
        assert_eq!(split_key(b":v", b":"), (Some(vec![]), b"v".to_vec()));
        assert_eq!(parse_header("a=b=c"), ("a".into(), Some(Bytes::from_static(b"b=c"))));
        assert_eq!(parse_header("flag"), ("flag".into(), None));
    }

    #[test]
    fn option_values() {
        assert_eq!(parse_acks("-1"), Ok(Acks::All));
        assert!(parse_acks("2").unwrap_err().contains("not 0, 1 or all"));
        assert_eq!(parse_compression("ZSTD"), Ok(Compression::Zstd));
        assert!(parse_compression("brotli").is_err());
    }
}
