//! `kwire check`: connects with the given settings and reports, step by step, what works and
//! what fails (DNS, TCP, TLS handshake, ApiVersions, SASL, Metadata, every advertised broker),
//! naming the likely cause of each failure.

use std::io::Write;
use std::time::{Duration, Instant};

use kwire::runtime::json::serde_json::json;
use kwire_client::{Client, ClientConfig, ConnectOptions, Connection, Error};

use crate::error::CliError;
use crate::format::print_json;

/// How long each network step may take.
const STEP_TIMEOUT: Duration = Duration::from_secs(10);

/// One step's outcome.
struct Step {
    name: &'static str,
    target: String,
    outcome: Result<String, (String, &'static str)>,
    millis: u128,
}

struct Report<'a, W: Write> {
    out: &'a mut W,
    json: bool,
    failed: usize,
}

impl<W: Write> Report<'_, W> {
    fn step(&mut self, s: Step) -> Result<bool, CliError> {
        let ok = s.outcome.is_ok();
        if !ok {
            self.failed += 1;
        }
        if self.json {
            let (detail, cause) = match &s.outcome {
                Ok(d) => (d.clone(), None),
                Err((d, c)) => (d.clone(), Some(*c)),
            };
            print_json(&mut *self.out, &json!({"step": s.name, "target": s.target, "ok": ok, "detail": detail, "likelyCause": cause, "ms": s.millis}))?;
        } else {
            match &s.outcome {
                Ok(d) => writeln!(self.out, "ok    {:<11} {}: {d} ({} ms)", s.name, s.target, s.millis),
                Err((d, cause)) => writeln!(self.out, "FAIL  {:<11} {}: {d}\n      likely cause: {cause}", s.name, s.target),
            }
            .map_err(CliError::io)?;
        }
        self.out.flush().map_err(CliError::io)?;
        Ok(ok)
    }
}

/// The likely cause of a connection's failure, from the client's error.
fn cause_of(e: &Error, config: &ConnectOptions) -> &'static str {
    match e {
        Error::Tls { message, .. } => {
            if message.contains("UnknownIssuer") || message.contains("unknown issuer") || message.contains("BadSignature") {
                "the broker's certificate is not signed by a CA trusted here: check ssl.truststore.location / ssl.ca.location"
            } else if message.contains("NotValidForName") || message.contains("not valid for name") {
                "the broker's certificate does not name this host: connect by the name it carries, or set ssl.sni.host"
            } else if message.contains("Expired") || message.contains("NotValidYet") {
                "the broker's certificate is expired or not yet valid: check the clocks and the certificate"
            } else if message.contains("CertificateRequired") || message.contains("certificate required") {
                "the listener requires a client certificate: set ssl.keystore.* (or ssl.certificate.location and ssl.key.location)"
            } else if message.contains("timed out") || message.contains("CorruptMessage") || message.contains("InvalidContentType") {
                "this port does not speak TLS: is it a PLAINTEXT or SASL_PLAINTEXT listener?"
            } else {
                "the TLS handshake failed: check the listener's protocol and the certificates"
            }
        }
        Error::Authentication { message, .. } => {
            if message.contains("UNSUPPORTED_SASL_MECHANISM") || (message.contains("mechanism") && message.contains("enabled")) {
                "the listener does not enable this SASL mechanism: check sasl.mechanism against sasl.enabled.mechanisms"
            } else {
                "wrong username or password, or the user has no credentials for this mechanism"
            }
        }
        Error::Config(_) => "a key or certificate file cannot be used: see the message",
        Error::Protocol { message, .. } if config.tls.is_none() && message.contains("exceeds the maximum frame size") => {
            // A TLS alert read as a frame size (0x15030300..).
            "this port answers like a TLS listener: set security.protocol=SSL (or SASL_SSL)"
        }
        Error::Io { message, .. } | Error::Disconnected(message) | Error::Protocol { message, .. } => {
            if config.tls.is_none() && (message.contains("closed") || message.contains("reset") || message.contains("eof")) {
                "the broker closed the connection: the listener may expect TLS (security.protocol=SSL) or SASL"
            } else if message.contains("refused") {
                "nothing listens there: a wrong port, or the broker is down"
            } else if message.contains("timed out") {
                "no answer: a firewall, a wrong address, or the broker is overloaded"
            } else {
                "the connection failed: see the message"
            }
        }
        Error::Timeout { .. } => "no answer in time: a TLS listener spoken to without TLS, a firewall dropping packets, or an overloaded broker",
        Error::UnsupportedVersion { .. } => "the broker is too old or too new for this client",
        Error::Broker { code, .. } if code.name() == Some("SASL_AUTHENTICATION_FAILED") => "wrong username or password",
        Error::Broker { code, .. } if code.name() == Some("ILLEGAL_SASL_STATE") => {
            "the listener expects SASL: set security.protocol=SASL_PLAINTEXT or SASL_SSL with credentials"
        }
        _ => "see the message",
    }
}

fn ms(t: Instant) -> u128 {
    t.elapsed().as_millis()
}

/// Runs every step for each bootstrap address; fails if any step failed.
pub async fn run(config: ClientConfig, as_json: bool, out: &mut impl Write) -> Result<(), CliError> {
    let mut report = Report { out, json: as_json, failed: 0 };
    let options = &config.connection;
    let mut any_bootstrap = false;
    for addr in &config.bootstrap {
        // DNS
        let t = Instant::now();
        let resolved = tokio::time::timeout(STEP_TIMEOUT, tokio::net::lookup_host(addr.as_str())).await;
        let ips: Vec<std::net::SocketAddr> = match resolved {
            Ok(Ok(ips)) => ips.collect(),
            Ok(Err(e)) => {
                report.step(Step {
                    name: "DNS",
                    target: addr.clone(),
                    outcome: Err((e.to_string(), "the host name does not resolve: check the name, or the DNS/hosts file")),
                    millis: ms(t),
                })?;
                continue;
            }
            Err(_) => {
                report.step(Step { name: "DNS", target: addr.clone(), outcome: Err(("timed out".into(), "the resolver does not answer")), millis: ms(t) })?;
                continue;
            }
        };
        let listed = ips.iter().map(|ip| ip.ip().to_string()).collect::<Vec<_>>().join(", ");
        let Some(first) = ips.first().copied() else {
            report.step(Step { name: "DNS", target: addr.clone(), outcome: Err(("no address".into(), "the name has no address records")), millis: ms(t) })?;
            continue;
        };
        report.step(Step { name: "DNS", target: addr.clone(), outcome: Ok(listed), millis: ms(t) })?;

        // TCP
        let t = Instant::now();
        let tcp = match tokio::time::timeout(STEP_TIMEOUT, tokio::net::TcpStream::connect(first)).await {
            Ok(Ok(_)) => Ok(format!("connected to {first}")),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                Err((e.to_string(), "nothing listens there: a wrong port, or the broker is down"))
            }
            Ok(Err(e)) => Err((e.to_string(), "the address is unreachable from here: routing or a firewall")),
            Err(_) => Err((format!("no answer within {STEP_TIMEOUT:?}"), "a firewall dropping packets, or a wrong address")),
        };
        if !report.step(Step { name: "TCP", target: addr.clone(), outcome: tcp, millis: ms(t) })? {
            continue;
        }

        // TLS and ApiVersions, without SASL (brokers answer ApiVersions before authentication).
        let t = Instant::now();
        let bare = ConnectOptions { sasl: None, ..options.clone() };
        let conn = match Connection::connect(addr, &bare).await {
            Ok(c) => c,
            Err(e) => {
                let step = if matches!(e, Error::Tls { .. }) || (options.tls.is_some() && matches!(e, Error::Config(_))) { "TLS" } else { "ApiVersions" };
                report.step(Step { name: step, target: addr.clone(), outcome: Err((e.to_string(), cause_of(&e, &bare))), millis: ms(t) })?;
                continue;
            }
        };
        if options.tls.is_some() {
            report.step(Step { name: "TLS", target: addr.clone(), outcome: Ok("handshake done, certificate verified".into()), millis: ms(t) })?;
        }
        let apis = conn.version(kwire::ApiKey::Metadata).map(|v| format!("versions negotiated (Metadata v{v})"));
        let apis = apis.map_err(|e| (e.to_string(), cause_of(&e, &bare)));
        if !report.step(Step { name: "ApiVersions", target: addr.clone(), outcome: apis, millis: ms(t) })? {
            continue;
        }
        drop(conn);

        // SASL
        if let Some(sasl) = &options.sasl {
            let t = Instant::now();
            let outcome = match Connection::connect(addr, options).await {
                Ok(_) => Ok(format!("{} as {}", sasl.mechanism_name(), sasl.username())),
                Err(e) => Err((e.to_string(), cause_of(&e, options))),
            };
            if !report.step(Step { name: "SASL", target: addr.clone(), outcome, millis: ms(t) })? {
                continue;
            }
        }
        any_bootstrap = true;
    }
    if !any_bootstrap {
        return Err(CliError::Incomplete(format!("check: {} step(s) failed; no bootstrap broker usable", report.failed)));
    }

    // Metadata, then every broker it advertises.
    let t = Instant::now();
    let client = match Client::connect(config.clone()).await {
        Ok(c) => c,
        Err(e) => {
            report.step(Step { name: "Metadata", target: config.bootstrap.join(","), outcome: Err((e.to_string(), cause_of(&e, options))), millis: ms(t) })?;
            return Err(CliError::Incomplete(format!("check: {} step(s) failed", report.failed)));
        }
    };
    let m = client.metadata();
    let summary = format!(
        "cluster {}, controller {}, {} broker(s), {} topic(s)",
        m.cluster_id.as_deref().unwrap_or("-"),
        m.controller_id,
        m.brokers.len(),
        m.topics.len()
    );
    report.step(Step { name: "Metadata", target: config.bootstrap.join(","), outcome: Ok(summary), millis: ms(t) })?;
    for b in m.brokers.values() {
        let t = Instant::now();
        let addr = b.addr();
        let outcome = match tokio::time::timeout(STEP_TIMEOUT, Connection::connect(&addr, options)).await {
            Ok(Ok(_)) => Ok(format!("node {} answers", b.id)),
            Ok(Err(e)) => Err((format!("node {}: {e}", b.id), "the advertised listener is not reachable from here: check the broker's advertised.listeners")),
            Err(_) => Err((
                format!("node {}: no answer within {STEP_TIMEOUT:?}", b.id),
                "the advertised listener is not reachable from here: check the broker's advertised.listeners",
            )),
        };
        report.step(Step { name: "Broker", target: addr, outcome, millis: ms(t) })?;
    }
    if report.failed > 0 {
        return Err(CliError::Incomplete(format!("check: {} step(s) failed", report.failed)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_are_named() {
        let plain = ConnectOptions::default();
        let tls = |m: &str| Error::Tls { addr: "b:9093".into(), message: m.into(), cause: None };
        assert!(cause_of(&tls("invalid peer certificate: UnknownIssuer"), &plain).contains("not signed by a CA trusted here"));
        assert!(cause_of(&tls("invalid peer certificate: NotValidForName"), &plain).contains("does not name this host"));
        assert!(cause_of(&tls("handshake timed out"), &plain).contains("does not speak TLS"));
        let auth = Error::Authentication { mechanism: "PLAIN".into(), message: "SASL_AUTHENTICATION_FAILED".into() };
        assert!(cause_of(&auth, &plain).contains("wrong username or password"));
        let refused = Error::Io { addr: "b:1".into(), message: "Connection refused (os error 111)".into(), cause: None };
        assert!(cause_of(&refused, &plain).contains("nothing listens there"));
        let closed = Error::Disconnected("connection to b:9093 is closed".into());
        assert!(cause_of(&closed, &plain).contains("may expect TLS"));
        let alert =
            Error::Protocol { addr: "b:9093".into(), message: "frame of 352518912 bytes exceeds the maximum frame size of 104857600".into(), cause: None };
        assert!(cause_of(&alert, &plain).contains("like a TLS listener"));
    }
}
