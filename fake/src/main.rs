//! `kwire-fake`: a fake Kafka cluster on TCP, for any client.
//!
//! ```sh
//! kwire-fake --listen 127.0.0.1:9092 --brokers 3 --as-version 4.4 [--sasl-plain USER:PASS] [--partitions N] [--no-auto-create] [--seed N] [--verbose]
//! ```
//!
//! Prints `listening on ADDR,ADDR,...` (the bootstrap list) once bound, and stops on SIGINT or
//! SIGTERM. Nothing is persisted.

use std::net::SocketAddr;
use std::process::ExitCode;

use kwire_fake::{Cluster, ClusterConfig, Release};

const USAGE: &str = "usage: kwire-fake --listen HOST:PORT [--brokers N] [--as-version 3.9|4.4] [--sasl-plain USER:PASS] [--partitions N] [--no-auto-create] [--seed N] [--verbose]

Broker N listens on PORT+N (every broker on a free port with PORT 0). --verbose writes a line per
request to stderr.";

fn parse_args() -> Result<(SocketAddr, ClusterConfig), String> {
    let mut listen = None;
    let mut config = ClusterConfig::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--listen" => {
                let v = value("--listen")?;
                listen = Some(v.parse::<SocketAddr>().map_err(|e| format!("--listen {v}: {e}"))?);
            }
            "--brokers" => {
                let v = value("--brokers")?;
                config = config.brokers(v.parse().ok().filter(|n| *n > 0).ok_or(format!("--brokers {v}: not a positive number"))?);
            }
            "--as-version" => {
                let v = value("--as-version")?;
                config = config.release(v.parse::<Release>()?);
            }
            "--sasl-plain" => {
                let v = value("--sasl-plain")?;
                let (user, pass) = v.split_once(':').ok_or("--sasl-plain takes USER:PASS")?;
                config = config.sasl_plain(user, pass);
            }
            "--partitions" => {
                let v = value("--partitions")?;
                config = config.default_partitions(v.parse().ok().filter(|n| *n > 0).ok_or(format!("--partitions {v}: not a positive number"))?);
            }
            "--seed" => {
                let v = value("--seed")?;
                config = config.seed(v.parse().map_err(|_| format!("--seed {v}: not a number"))?);
            }
            "--no-auto-create" => config = config.auto_create_topics(false),
            "--verbose" => config = config.log_requests(true),
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
            eprintln!("kwire-fake: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        let cluster = Cluster::start(config);
        let addrs = cluster.listen(listen).await?;
        // The harness waits for this line to learn the ports.
        println!("listening on {}", addrs.iter().map(ToString::to_string).collect::<Vec<_>>().join(","));
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        eprintln!("kwire-fake: shutting down");
        Ok::<(), std::io::Error>(())
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kwire-fake: {e}");
            ExitCode::FAILURE
        }
    }
}
