//! `kwire`: Kafka messages, record batches and packet captures as JSON; and a Kafka client for
//! the shell (produce, consume, topics, groups, configs, acls, versions, check), as kcat and
//! Kafka's own tools, and a decoding proxy (tap).
//!
//! Exit codes: 0 success; 1 failure (bad input, the message on stderr names the field and
//! offset; a broker's refusal; records not acknowledged; a failed `check` step); 2 usage or
//! connection settings; 3 the cluster could not be reached or authenticated to.
#![warn(missing_docs)]
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

mod acls;
mod apis;
mod check;
mod clients;
mod configs;
mod connect;
mod consume;
mod error;
mod format;
mod groups;
mod html;
mod input;
mod message;
mod pcap;
mod produce;
mod records;
mod secrets;
mod talkers;
mod tap;
mod topics;
mod versions;
mod wireshark;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory, Parser, Subcommand};

use crate::error::CliError;

/// Kafka from the shell (produce, consume, topics, groups, configs, acls, versions, check, with
/// Kafka's connection settings), a proxy that prints the traffic through it (tap), and Kafka
/// wire protocol messages, record batches and captures as JSON, in the shape of Apache Kafka's
/// own JSON converters.
#[derive(Parser)]
#[command(name = "kwire", version, about)]
struct Cli {
    /// Decode leniently, as a dissector: accept what the spec forbids but real peers send (a
    /// null where the version allows none, a tag of another version, trailing bytes after a
    /// body) and list each place under "_lenient" in the body's JSON. Strict by default.
    #[arg(long, global = true)]
    lenient: bool,
    #[command(flatten)]
    connect: connect::ConnectArgs,
    #[command(subcommand)]
    command: Command,
}

const PRODUCE_EXAMPLES: &str = "Examples:
  seq 3 | kwire -b localhost:9092 produce -t orders
  kwire -b localhost:9092 produce -t orders -K : -H source=batch -z zstd -v <<< 'key1:value1'
  kwire --command-config client.properties produce -t orders -f records.txt --transactional-id loader";
const CONSUME_EXAMPLES: &str = "Examples:
  kwire -b localhost:9092 consume -t orders -o beginning -e
  kwire -b localhost:9092 consume -t orders -o -10 -f '%p/%o %k=%s %h\\n'
  kwire -b localhost:9092 consume -t orders -G billing -c 100 --json
  kwire -b localhost:9092 consume -t orders -o s@1700000000000 --isolation read_committed -e";
const TOPICS_EXAMPLES: &str = "Examples:
  kwire -b localhost:9092 topics list
  kwire -b localhost:9092 topics describe orders --json
  kwire -b localhost:9092 topics create orders --partitions 6 --replication-factor 3 --config retention.ms=86400000
  kwire -b localhost:9092 topics delete orders";
const GROUPS_EXAMPLES: &str = "Examples:
  kwire -b localhost:9092 groups list
  kwire -b localhost:9092 groups describe billing
  kwire -b localhost:9092 groups reset-offsets billing --topic orders --to-datetime 2024-05-01T00:00:00Z --dry-run
  kwire -b localhost:9092 groups reset-offsets billing --all-topics --shift-by -100 --execute
  kwire -b localhost:9092 groups delete billing";
const CONFIGS_EXAMPLES: &str = "Examples:
  kwire -b localhost:9092 configs describe --topic orders
  kwire -b localhost:9092 configs describe --broker 1 --all --json
  kwire -b localhost:9092 configs alter --topic orders --add-config retention.ms=3600000,cleanup.policy=compact,delete
  kwire -b localhost:9092 configs alter --topic orders --delete-config retention.ms";
const ACLS_EXAMPLES: &str = "Examples:
  kwire -b localhost:9092 acls list
  kwire -b localhost:9092 acls list --topic orders --pattern-type match --json
  kwire -b localhost:9092 acls create --topic orders --principal User:alice --operation read --operation describe
  kwire -b localhost:9092 acls create --group billing- --pattern-type prefixed --principal User:alice --operation read
  kwire -b localhost:9092 acls delete --topic orders --principal User:alice";
const TAP_EXAMPLES: &str = "Examples:
  kwire -b localhost:9092 tap --port 19092                 # then point clients at localhost:19092
  kwire -b localhost:9092 tap --port 19092 --json > frames.jsonl
  kwire -b kafka1:9092 tap --listen 0.0.0.0 --advertise tap-host --port 19092 --duration 60s

One line per request and its response, e.g.
  c3 Produce v11 corr=7 topic=orders p0: 42 records 4.1 KB -> offset 1700, 1.3 ms
and per-api counts and latencies on Ctrl-C, SIGTERM, --count or --duration.";
const WIRESHARK_EXAMPLES: &str = "Examples:
  kwire wireshark --port 9092 --port 9093 > kafka_kwire.lua
  tshark -X lua_script:kafka_kwire.lua -Y kwire -r capture.pcap
  tshark -X lua_script:kafka_kwire.lua -r capture.pcap -Y 'kwire.error_code != 0' -O kwire
  cp kafka_kwire.lua ~/.local/lib/wireshark/plugins/     # Wireshark loads it at start

Protocol `kwire`; header fields kwire.header.*, body fields kwire.<snake_case name>, record
batches kwire.batch.*; malformed frames carry the expert info kwire.malformed.";
const COMPLETIONS_EXAMPLES: &str = "Examples:
  kwire completions bash > /etc/bash_completion.d/kwire
  kwire completions zsh > \"${fpath[1]}/_kwire\"
  kwire completions fish > ~/.config/fish/completions/kwire.fish";
const VERSIONS_EXAMPLES: &str = "Examples:
  kwire -b localhost:9092 versions
  kwire -b localhost:9092 versions --broker 2 --all --json
  kwire -b localhost:9092 versions --client java-3.6          # what Java 3.6 clients send, marked where the broker cannot take it
  kwire versions --client librdkafka-2.0                      # without a broker: next to this build";
const CHECK_EXAMPLES: &str = "Examples:
  kwire -b kafka.example.com:9093 --command-config client.properties check
  kwire -b localhost:9092 -X security.protocol=SASL_PLAINTEXT -X sasl.mechanisms=SCRAM-SHA-512 \\
        -X sasl.username=alice -X sasl.password=secret check";

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
    /// Prints a Wireshark dissector (Lua) for every api key and version of this build.
    #[command(after_help = WIRESHARK_EXAMPLES)]
    Wireshark(WiresharkArgs),
    /// Writes records from stdin or a file to a topic, one per line (or per -D delimiter).
    #[command(after_help = PRODUCE_EXAMPLES)]
    Produce(produce::ProduceArgs),
    /// Reads records of a topic and prints them (value per line, kcat formats, or JSON).
    #[command(after_help = CONSUME_EXAMPLES)]
    Consume(consume::ConsumeArgs),
    /// Lists, describes, creates and deletes topics.
    #[command(subcommand, after_help = TOPICS_EXAMPLES)]
    Topics(topics::TopicsCommand),
    /// Lists and describes consumer groups (with lag), resets and deletes their offsets.
    #[command(subcommand, after_help = GROUPS_EXAMPLES)]
    Groups(groups::GroupsCommand),
    /// Describes and alters topic, broker and group configs.
    #[command(subcommand, after_help = CONFIGS_EXAMPLES)]
    Configs(configs::ConfigsCommand),
    /// Lists, creates and deletes ACLs.
    #[command(subcommand, after_help = ACLS_EXAMPLES)]
    Acls(acls::AclsCommand),
    /// A proxy in front of a broker that prints every request and response decoded, and
    /// per-api counts and latencies when it stops.
    #[command(after_help = TAP_EXAMPLES)]
    Tap(tap::TapArgs),
    /// A broker's api versions next to this build's, marking apis without a common version.
    #[command(after_help = VERSIONS_EXAMPLES)]
    Versions {
        /// Ask this broker (node id) instead of the first one metadata lists.
        #[arg(long)]
        broker: Option<i32>,
        /// Apis this build knows that the broker does not list too.
        #[arg(long)]
        all: bool,
        /// Also what this client release sends (java-3.6, java-3.9, java-4.0, java-4.4,
        /// librdkafka-2.0, librdkafka-2.12); without -b, next to this build only.
        #[arg(long, value_name = "RELEASE")]
        client: Option<String>,
        /// One JSON object: {broker, apis: [{apiKey, name, broker, build, uses, problem}]}.
        #[arg(long)]
        json: bool,
    },
    /// Prints a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(after_help = COMPLETIONS_EXAMPLES)]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Connects step by step (DNS, TCP, TLS, ApiVersions, SASL, Metadata, each broker) and
    /// names the likely cause of what fails.
    #[command(after_help = CHECK_EXAMPLES)]
    Check {
        /// One JSON object per step: step, target, ok, detail, likelyCause, ms.
        #[arg(long)]
        json: bool,
    },
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
    #[command(flatten)]
    secrets: ShowSecrets,
}

/// `--records`, for the commands that print captured traffic.
#[derive(Args, Clone, Copy, Debug)]
pub struct ShowRecords {
    /// Shows the records of Produce requests and Fetch responses: offsets, timestamps, keys,
    /// values and headers (text where they are UTF-8 text, else base64; the Schema Registry's
    /// framing named; at most 1 KiB of each), control batches by marker, at most N records per
    /// frame (100 with --records alone).
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "100")]
    pub records: Option<usize>,
}

/// `--report` and `--target`, for the commands that print captured traffic.
#[derive(Args, Clone, Debug)]
pub struct ShowReport {
    /// Ends with what each client would meet on `--target`'s brokers: api versions removed
    /// there (KIP-896's in 4.0), deprecated ones, the classic group protocol, Transactions V1,
    /// and the oldest client releases known to send what it serves.
    #[arg(long)]
    pub report: bool,
    /// The release of the upgrade `--report` looks at (default 4.0; implies --report).
    #[arg(long, value_name = "RELEASE")]
    pub target: Option<String>,
    /// Also writes a self-contained page to FILE (no network needed to view it): the timeline
    /// of responses per connection, latency histograms per api, clients with their bytes,
    /// errors and throttles, and the --report findings.
    #[arg(long, value_name = "FILE")]
    pub html: Option<std::path::PathBuf>,
}

impl ShowReport {
    /// The target release, when a report is asked for.
    pub fn target(&self) -> Result<Option<talkers::Target>, CliError> {
        if !self.report && self.target.is_none() {
            return Ok(None);
        }
        talkers::Target::parse(self.target.as_deref().unwrap_or("4.0")).map(Some)
    }
}

/// `--show-secrets`, for every command that prints decoded frames.
#[derive(Args, Clone, Copy, Debug)]
pub struct ShowSecrets {
    /// Print secrets as they are on the wire. By default they are withheld: SASL auth bytes
    /// (replaced by their length, the mechanism and the user name), OAuth tokens, SCRAM
    /// proofs, salts and credentials, delegation-token HMACs, password-like config values
    /// (names containing password, secret, passphrase or jaas.config, ending in .key, or marked
    /// sensitive), Envelope payloads and the KRaft metadata log.
    #[arg(long)]
    pub show_secrets: bool,
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
    #[command(flatten)]
    records: ShowRecords,
    #[command(flatten)]
    report: ShowReport,
    #[command(flatten)]
    secrets: ShowSecrets,
}

#[derive(Args)]
struct WiresharkArgs {
    /// TCP ports of Kafka listeners (repeatable). Default 9092.
    #[arg(long = "port")]
    ports: Vec<u16>,
    /// Show SASL payloads, token HMACs, SCRAM salts and secret config values, which the
    /// dissector otherwise withholds (its "Show secrets" preference starts on).
    #[arg(long)]
    show_secrets: bool,
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

/// The commands that talk to a cluster, on a tokio runtime.
async fn run_kafka(settings: connect::Settings, command: Command, out: &mut impl Write) -> Result<(), CliError> {
    let config = settings.client_config()?;
    if let Command::Check { json } = command {
        return check::run(config, json, out).await;
    }
    if let Command::Consume(a) = &command {
        consume::validate(a)?;
    }
    let client = kwire_client::Client::connect(config).await.map_err(|e| CliError::kafka("connecting to the cluster", e))?;
    let admin = || kwire_client::Admin::new(client.clone());
    match command {
        Command::Produce(a) => produce::run(client.clone(), a, out).await,
        Command::Consume(a) => consume::run(client.clone(), a, out).await,
        Command::Topics(c) => topics::run(&admin(), c, out).await,
        Command::Groups(c) => groups::run(&admin(), c, out).await,
        Command::Configs(c) => configs::run(&admin(), c, out).await,
        Command::Acls(c) => acls::run(&admin(), c, out).await,
        Command::Versions { broker, all, client: release, json } => versions::run(&client, broker, all, release.as_deref(), json, out).await,
        _ => Ok(()),
    }
}

/// `kwire tap`: the proxy needs the broker's address, and for a TLS listener the CA to check
/// it against (`--upstream-ca`).
fn run_tap(connect: &connect::ConnectArgs, args: tap::TapArgs) -> Result<(), CliError> {
    let settings = connect::Settings::from_args(connect)?;
    if matches!(settings.protocol, connect::Protocol::Ssl | connect::Protocol::SaslSsl) && args.upstream_ca.is_none() {
        return Err(CliError::Usage(
            "tap: the listener speaks TLS: give --upstream-ca (the brokers' CA), and --tls-cert and --tls-key for the tap's own side".into(),
        ));
    }
    let upstream = settings.bootstrap.ok_or_else(|| CliError::Usage("tap: which broker? give -b HOST:PORT".into()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(CliError::Io)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let result = runtime.block_on(tap::run(upstream, args, &mut out));
    let flushed = out.flush().map_err(CliError::io);
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    result.and(flushed)
}

fn run(cli: Cli) -> Result<(), CliError> {
    if let Command::Versions { client: Some(release), json, .. } = &cli.command {
        if connect::Settings::from_args(&cli.connect)?.bootstrap.is_none() {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            versions::run_offline(release, *json, &mut out)?;
            return out.flush().map_err(CliError::io);
        }
    }
    let cli = match cli.command {
        Command::Tap(args) => {
            if cli.lenient {
                message::set_lenient();
            }
            return run_tap(&cli.connect, args);
        }
        command => Cli { command, ..cli },
    };
    if matches!(
        cli.command,
        Command::Produce(_)
            | Command::Consume(_)
            | Command::Topics(_)
            | Command::Groups(_)
            | Command::Configs(_)
            | Command::Acls(_)
            | Command::Versions { .. }
            | Command::Check { .. }
    ) {
        let settings = connect::Settings::from_args(&cli.connect)?;
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(CliError::Io)?;
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::new(stdout.lock());
        let result = runtime.block_on(run_kafka(settings, cli.command, &mut out));
        let flushed = out.flush().map_err(CliError::io);
        // Background tasks (connections, heartbeats) must not hold the exit.
        runtime.shutdown_timeout(std::time::Duration::from_millis(200));
        return result.and(flushed);
    }
    if cli.lenient {
        message::set_lenient();
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match cli.command {
        Command::Produce(_)
        | Command::Consume(_)
        | Command::Topics(_)
        | Command::Groups(_)
        | Command::Configs(_)
        | Command::Acls(_)
        | Command::Tap(_)
        | Command::Versions { .. }
        | Command::Check { .. } => {}
        Command::Apis { json } => apis::run(&mut out, json)?,
        Command::Completions { shell } => clap_complete::generate(shell, &mut Cli::command(), "kwire", &mut out),
        Command::Decode(a) => {
            let mut secrets = secrets::Secrets::new(a.secrets.show_secrets);
            if a.jsonl {
                message::decode_jsonl(std::io::stdin().lock(), &mut out, &mut secrets)?;
            } else {
                let bytes = input::bytes(a.hex.as_deref())?;
                let json = if a.frame {
                    message::decode_frame(&bytes, a.direction, a.api_key, a.api_version, &mut secrets)?
                } else {
                    let (key, version, request) = message::body_args(a.api_key, a.api_version, a.direction)?;
                    message::decode_body(key, version, request, &bytes, &mut secrets)?
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
            let shown = pcap::Shown {
                secrets: secrets::Secrets::new(a.secrets.show_secrets),
                records: a.records.records,
                report: a.report.target()?,
                html: a.report.html.clone(),
            };
            pcap::run(&a.file, &ports, shown, &mut out)?;
        }
        Command::Wireshark(a) => {
            let ports = if a.ports.is_empty() { vec![9092] } else { a.ports };
            out.write_all(wireshark::dissector(&ports, a.show_secrets).as_bytes()).map_err(CliError::io)?;
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
