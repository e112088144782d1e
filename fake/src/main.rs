//! `kwire-fake`: a fake Kafka cluster on TCP, for any client.
//!
//! ```sh
//! kwire-fake --listen 127.0.0.1:9092 --brokers 3 --as-version 4.4 [--sasl-plain USER:PASS] [--partitions N] [--no-auto-create] [--seed N] [--verbose]
//! ```
//!
//! Prints `listening on ADDR,ADDR,...` (the bootstrap list) once bound, and stops on SIGINT or
//! SIGTERM. Nothing is persisted. With `--sasl-listen`, it prints `sasl_plaintext on ADDR,...`
//! first: those listeners authenticate, `--listen`'s do not (as a broker with PLAINTEXT and
//! SASL_PLAINTEXT listeners).

use std::net::SocketAddr;
use std::process::ExitCode;

use kwire_fake::{Cluster, ClusterConfig, OAuthBearerConfig, Release, Security, TlsIdentity};

const USAGE: &str = "usage: kwire-fake --listen HOST:PORT [--sasl-listen HOST:PORT] [--brokers N] [--as-version 2.8|3.9|4.0|4.4]
       [--sasl-plain USER:PASS]... [--sasl-scram USER:PASS]... [--sasl-oauthbearer] [--acl-authorizer] [--super-user PRINCIPAL]...
       [--delegation-token-secret KEY] [--tls-cert PEM --tls-key PEM] [--partitions N] [--no-auto-create] [--seed N] [--verbose]
       [--tls-client-ca PEM] [--rack RACK]... [--rack-aware-replica-selector] [--group-initial-rebalance-delay-ms MS]

Broker N listens on PORT+N (every broker on a free port with PORT 0). Without --sasl-listen, the
--listen listeners authenticate when SASL users are given; with it, only its listeners do.
--sasl-scram makes SCRAM-SHA-256 and -512 credentials; --sasl-oauthbearer takes unsecured JWS tokens
(alg none, the sub claim the principal, exp checked), as Kafka's default OAUTHBEARER validator. --acl-authorizer turns ACLs on
(StandardAuthorizer; super users, e.g. User:admin, may do anything). --verbose writes a line per
request to stderr. With --tls-cert and --tls-key (a PEM certificate chain and its key), every
listener is TLS: SSL, or SASL_SSL where it authenticates; --tls-client-ca requires every client to
present a certificate a CA of that PEM file signed (ssl.client.auth=required), and its subject
names an SSL connection's principal (User:CN=alice,OU=eng,O=acme). --rack puts broker N in the (N mod count)th
rack given (broker.rack); --rack-aware-replica-selector makes leaders name a replica in a
consumer's rack as its preferred read replica (KIP-392's RackAwareReplicaSelector).
--group-initial-rebalance-delay-ms is how long a new classic group's first rebalance waits for
more members (group.initial.rebalance.delay.ms; 3000 as Kafka's default).";

struct Args {
    listen: SocketAddr,
    sasl_listen: Option<SocketAddr>,
    config: ClusterConfig,
}

fn parse_args() -> Result<Args, String> {
    let mut listen = None;
    let mut sasl_listen = None;
    let mut authorizer = false;
    let mut super_users: Vec<String> = Vec::new();
    let (mut tls_cert, mut tls_key, mut tls_client_ca) = (None, None, None);
    let mut config = ClusterConfig::default();
    let mut racks: Vec<String> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--listen" => {
                let v = value("--listen")?;
                listen = Some(v.parse::<SocketAddr>().map_err(|e| format!("--listen {v}: {e}"))?);
            }
            "--sasl-listen" => {
                let v = value("--sasl-listen")?;
                sasl_listen = Some(v.parse::<SocketAddr>().map_err(|e| format!("--sasl-listen {v}: {e}"))?);
            }
            "--sasl-scram" => {
                let v = value("--sasl-scram")?;
                let (user, pass) = v.split_once(':').ok_or("--sasl-scram takes USER:PASS")?;
                config = config.sasl_scram(user, pass);
            }
            "--sasl-oauthbearer" => config = config.sasl_oauthbearer(OAuthBearerConfig::default()),
            "--acl-authorizer" => authorizer = true,
            "--tls-cert" => tls_cert = Some(value("--tls-cert")?),
            "--tls-key" => tls_key = Some(value("--tls-key")?),
            "--tls-client-ca" => tls_client_ca = Some(value("--tls-client-ca")?),
            "--super-user" => super_users.push(value("--super-user")?),
            "--delegation-token-secret" => {
                let v = value("--delegation-token-secret")?;
                config = config.delegation_token_secret(&v);
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
            "--group-initial-rebalance-delay-ms" => {
                let v = value("--group-initial-rebalance-delay-ms")?;
                let ms: u64 = v.parse().map_err(|_| format!("--group-initial-rebalance-delay-ms {v}: not a number of milliseconds"))?;
                config = config.group_initial_rebalance_delay(std::time::Duration::from_millis(ms));
            }
            "--rack" => racks.push(value("--rack")?),
            "--rack-aware-replica-selector" => config = config.rack_aware_replica_selector(),
            "--verbose" => config = config.log_requests(true),
            "--help" | "-h" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    if !racks.is_empty() {
        config = config.racks(&racks);
    }
    if authorizer {
        config = config.acl_authorizer(&super_users);
    } else if !super_users.is_empty() {
        return Err("--super-user needs --acl-authorizer".into());
    }
    match (tls_cert, tls_key) {
        (Some(cert), Some(key)) => {
            let mut identity = TlsIdentity::from_files(cert.as_ref(), key.as_ref()).map_err(|e| format!("--tls-cert/--tls-key: {e}"))?;
            if let Some(ca) = tls_client_ca {
                identity = identity.require_client_certificates(std::fs::read(&ca).map_err(|e| format!("--tls-client-ca {ca}: {e}"))?);
            }
            config = config.tls(identity);
        }
        (None, None) if tls_client_ca.is_some() => return Err("--tls-client-ca needs --tls-cert and --tls-key".into()),
        (None, None) => {}
        _ => return Err("--tls-cert and --tls-key go together".into()),
    }
    if sasl_listen.is_some() && !config.has_sasl() {
        return Err("--sasl-listen needs a --sasl-plain or --sasl-scram user, or --sasl-oauthbearer".into());
    }
    Ok(Args { listen: listen.ok_or(USAGE)?, sasl_listen, config })
}

fn main() -> ExitCode {
    let Args { listen, sasl_listen, config } = match parse_args() {
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
        let addrs = match sasl_listen {
            Some(sasl) => {
                let tls = cluster.config().tls.is_some();
                let (authenticated, plain) = if tls { (Security::SaslSsl, Security::Ssl) } else { (Security::SaslPlaintext, Security::Plaintext) };
                let sasl_addrs = cluster.listen_with(sasl, authenticated).await?;
                let name = if tls { "sasl_ssl" } else { "sasl_plaintext" };
                println!("{name} on {}", sasl_addrs.iter().map(ToString::to_string).collect::<Vec<_>>().join(","));
                cluster.listen_with(listen, plain).await?
            }
            None => cluster.listen(listen).await?,
        };
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
