//! A single-node, in-memory Kafka broker built only on kwire's generated types and its
//! connection codec, for testing real clients against kwire.
//!
//! ```sh
//! cargo run --release --example mini_broker -- --listen 127.0.0.1:9092 [--sasl-plain USER:PASS] [--verbose]
//! ```
//!
//! Prints `listening on HOST:PORT` once bound (port 0 picks a free one), logs one line per
//! request with `--verbose`, and stops on SIGINT or SIGTERM. Nothing is persisted.

mod broker;
mod connection;
mod groups;
mod handlers;
mod storage;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::task::JoinSet;

use broker::{Broker, Config};

const USAGE: &str = "usage: mini_broker --listen HOST:PORT [--sasl-plain USER:PASS] [--partitions N] [--no-auto-create] [--verbose]";

fn parse_args() -> Result<(SocketAddr, Config), String> {
    let mut listen = None;
    let mut config = Config::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--listen" => {
                let v = value("--listen")?;
                listen = Some(v.parse::<SocketAddr>().map_err(|e| format!("--listen {v}: {e}"))?);
            }
            "--sasl-plain" => {
                let v = value("--sasl-plain")?;
                let (user, pass) = v.split_once(':').ok_or("--sasl-plain takes USER:PASS")?;
                config.sasl_plain = Some((user.to_owned(), pass.to_owned()));
            }
            "--partitions" => {
                let v = value("--partitions")?;
                config.default_partitions = v.parse().ok().filter(|n| *n > 0).ok_or(format!("--partitions {v}: not a positive number"))?;
            }
            "--no-auto-create" => config.auto_create_topics = false,
            "--verbose" => config.verbose = true,
            "--help" | "-h" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    Ok((listen.ok_or(USAGE)?, config))
}

fn main() -> ExitCode {
    let (listen, config) = match parse_args() {
        Ok(v) => v,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(listen, config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mini_broker: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(listen: SocketAddr, mut config: Config) -> std::io::Result<()> {
    let listener = TcpListener::bind(listen).await?;
    let local = listener.local_addr()?;
    config.advertised = local;
    let broker = Arc::new(Broker::new(config));
    // The test harness waits for this line to learn the port.
    println!("listening on {local}");
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut connections = JoinSet::new();
    let ticker = tokio::spawn(groups::run_timers(broker.clone()));
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    connections.spawn(connection::serve(broker.clone(), stream, peer));
                }
                Err(e) => eprintln!("accept failed: {e}"),
            },
            // Reap finished connections so the set does not grow without bound.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            _ = tokio::signal::ctrl_c() => break,
            _ = sigterm.recv() => break,
        }
    }
    eprintln!("shutting down");
    ticker.abort();
    connections.shutdown().await;
    Ok(())
}
