//! `kwire`: Kafka messages, record batches and packet captures as JSON.
//!
//! Exit codes: 0 success, 1 bad input (the message on stderr names the field and offset), 2 usage.
#![warn(missing_docs)]
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

mod apis;
mod error;
mod input;
mod message;
mod pcap;
mod records;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::error::CliError;

/// Kafka wire protocol messages, record batches and captures as JSON, in the shape of Apache
/// Kafka's own JSON converters.
#[derive(Parser)]
#[command(name = "kwire", version, about)]
struct Cli {
    /// Decode leniently, as a dissector: accept what the spec forbids but real peers send (a
    /// null where the version allows none, a tag of another version, trailing bytes after a
    /// body) and list each place under "_lenient" in the body's JSON. Strict by default.
    #[arg(long, global = true)]
    lenient: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Lists every api key: name, valid versions, first flexible version, deprecated versions,
    /// listeners.
    Apis {
        /// Prints a JSON array of {apiKey, name, minVersion, maxVersion, flexibleFrom}.
        #[arg(long)]
        json: bool,
    },
    /// Decodes a message body (or with --frame a whole frame) from hex or raw bytes on stdin
    /// and prints its JSON.
    Decode(DecodeArgs),
    /// Encodes a JSON body from stdin; prints hex (or raw bytes with --raw).
    Encode(EncodeArgs),
    /// Reads a pcap or pcapng capture and prints one JSON line per Kafka message.
    Pcap(PcapArgs),
    /// Decodes a records blob (record batches or legacy message sets) and prints its JSON.
    Records(RecordsArgs),
}

/// Which message of the api: the request or the response body.
#[derive(Args, Clone, Copy)]
#[group(multiple = false)]
pub struct Direction {
    /// The bytes are a request.
    #[arg(long)]
    pub request: bool,
    /// The bytes are a response.
    #[arg(long)]
    pub response: bool,
}

#[derive(Args)]
struct DecodeArgs {
    /// Api key: a number or a name (`3`, `Metadata`).
    #[arg(long, value_parser = input::parse_api_key)]
    api_key: Option<i16>,
    /// Api version.
    #[arg(long)]
    api_version: Option<i16>,
    #[command(flatten)]
    direction: Direction,
    /// The bytes as hex (whitespace allowed); raw bytes are read from stdin otherwise.
    #[arg(long)]
    hex: Option<String>,
    /// The input is a whole size-prefixed frame with its header; prints {"header", "body"}.
    #[arg(long, conflicts_with = "jsonl")]
    frame: bool,
    /// Batch mode: lines {"apiKey","apiVersion","kind","hex"} on stdin, one answer line each.
    #[arg(long, conflicts_with = "hex")]
    jsonl: bool,
    /// Pretty-prints the JSON.
    #[arg(long)]
    pretty: bool,
}

#[derive(Args)]
struct EncodeArgs {
    /// Api key: a number or a name.
    #[arg(long, value_parser = input::parse_api_key)]
    api_key: Option<i16>,
    /// Api version.
    #[arg(long)]
    api_version: Option<i16>,
    #[command(flatten)]
    direction: Direction,
    /// Writes raw bytes instead of hex.
    #[arg(long, conflicts_with = "jsonl")]
    raw: bool,
    /// Batch mode: lines {"apiKey","apiVersion","kind","json"} on stdin, one answer line each.
    #[arg(long)]
    jsonl: bool,
}

#[derive(Args)]
struct PcapArgs {
    /// The capture (pcap or pcapng).
    file: PathBuf,
    /// Broker ports (repeatable); traffic to them is requests. Default 9092.
    #[arg(long = "port")]
    ports: Vec<u16>,
}

#[derive(Args)]
struct RecordsArgs {
    /// The records as hex; raw bytes are read from stdin otherwise.
    #[arg(long, conflicts_with = "jsonl")]
    hex: Option<String>,
    /// Batch mode: lines {"hex"} on stdin, one answer line each.
    #[arg(long)]
    jsonl: bool,
    /// Pretty-prints the JSON.
    #[arg(long)]
    pretty: bool,
}

fn run(cli: Cli) -> Result<(), CliError> {
    if cli.lenient {
        message::set_lenient();
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match cli.command {
        Command::Apis { json } => apis::run(&mut out, json)?,
        Command::Decode(a) => {
            if a.jsonl {
                message::decode_jsonl(std::io::stdin().lock(), &mut out)?;
            } else {
                let bytes = input::bytes(a.hex.as_deref())?;
                let json = if a.frame {
                    message::decode_frame(&bytes, a.direction, a.api_key, a.api_version)?
                } else {
                    let (key, version, request) = message::body_args(a.api_key, a.api_version, a.direction)?;
                    message::decode_body(key, version, request, &bytes)?
                };
                input::print_json(&mut out, &json, a.pretty)?;
            }
        }
        Command::Encode(a) => {
            if a.jsonl {
                message::encode_jsonl(std::io::stdin().lock(), &mut out)?;
            } else {
                let (key, version, request) = message::body_args(a.api_key, a.api_version, a.direction)?;
                let json = input::stdin_json()?;
                let bytes = message::encode_body(key, version, request, &json)?;
                if a.raw {
                    out.write_all(&bytes).map_err(CliError::io)?;
                } else {
                    writeln!(out, "{}", hex::encode(&bytes)).map_err(CliError::io)?;
                }
            }
        }
        Command::Pcap(a) => {
            let ports = if a.ports.is_empty() { vec![9092] } else { a.ports };
            pcap::run(&a.file, &ports, &mut out)?;
        }
        Command::Records(a) => {
            if a.jsonl {
                records::jsonl(std::io::stdin().lock(), &mut out)?;
            } else {
                let bytes = input::bytes(a.hex.as_deref())?;
                let json = records::decode(bytes)?;
                input::print_json(&mut out, &json, a.pretty)?;
            }
        }
    }
    out.flush().map_err(CliError::io)
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout with success; usage errors exit 2.
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if !matches!(e, CliError::BrokenPipe) {
                eprintln!("kwire: {e}");
            }
            ExitCode::from(e.exit_code())
        }
    }
}
