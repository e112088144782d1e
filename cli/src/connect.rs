//! Connection settings as Kafka users already write them, turned into one [`ClientConfig`]:
//! `-b/--bootstrap`, a Java properties file (`--command-config`, as Kafka's own tools take it)
//! and kcat's `-X key=value` with librdkafka's names.
//!
//! Both sources go through one table of names ([`Setting::parse`]): Java's and librdkafka's names
//! for the same setting are two rows of it, so a properties file may use librdkafka's names and
//! `-X` Java's. An unknown name is an error naming it; so is a value the setting cannot take.
//! The properties file is read first, then each `-X` in order, then `-b`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use kwire_client::{ClientConfig, ClientIdentity, Roots, Sasl, TlsConfig};

use crate::error::{CliError, SettingsError};

/// The connection options every broker subcommand takes.
#[derive(Args, Debug, Default, Clone)]
pub struct ConnectArgs {
    /// Bootstrap brokers, `HOST:PORT[,HOST:PORT...]` (also `bootstrap.servers` in the settings).
    #[arg(short = 'b', long = "bootstrap", global = true, value_name = "HOST:PORT")]
    pub bootstrap: Option<String>,
    /// A Java properties file of client settings, as Kafka's tools take it
    /// (`security.protocol`, `sasl.mechanism`, `sasl.jaas.config`, `ssl.truststore.*`, ...).
    #[arg(long = "command-config", global = true, value_name = "FILE")]
    pub command_config: Option<PathBuf>,
    /// A setting with librdkafka's (or Java's) name, as kcat takes it; repeatable, applied after
    /// the properties file (`-X security.protocol=SASL_SSL -X sasl.username=alice`).
    #[arg(short = 'X', global = true, value_name = "KEY=VALUE")]
    pub settings: Vec<String>,
}

/// `security.protocol`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// TCP, no authentication.
    #[default]
    Plaintext,
    /// TLS.
    Ssl,
    /// SASL over TCP.
    SaslPlaintext,
    /// SASL over TLS.
    SaslSsl,
}

impl Protocol {
    fn parse(v: &str) -> Option<Protocol> {
        match v.to_ascii_uppercase().as_str() {
            "PLAINTEXT" => Some(Protocol::Plaintext),
            "SSL" => Some(Protocol::Ssl),
            "SASL_PLAINTEXT" => Some(Protocol::SaslPlaintext),
            "SASL_SSL" => Some(Protocol::SaslSsl),
            _ => None,
        }
    }

    fn tls(self) -> bool {
        matches!(self, Protocol::Ssl | Protocol::SaslSsl)
    }

    fn sasl(self) -> bool {
        matches!(self, Protocol::SaslPlaintext | Protocol::SaslSsl)
    }
}

/// A store's type (`ssl.truststore.type`, `ssl.keystore.type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreType {
    /// PKCS#12.
    Pkcs12,
    /// PEM.
    Pem,
}

/// Every setting, from whichever source and name it came.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// `bootstrap.servers`.
    pub bootstrap: Option<String>,
    /// `client.id`.
    pub client_id: Option<String>,
    /// `request.timeout.ms`.
    pub request_timeout: Option<Duration>,
    /// `security.protocol`.
    pub protocol: Protocol,
    /// `sasl.mechanism(s)`, upper case.
    pub mechanism: Option<String>,
    /// `sasl.username` or the JAAS config's `username`.
    pub username: Option<String>,
    /// `sasl.password` or the JAAS config's `password`.
    pub password: Option<String>,
    /// `ssl.truststore.location` / `ssl.ca.location`.
    pub truststore: Option<PathBuf>,
    /// `ssl.truststore.password`.
    pub truststore_password: Option<String>,
    /// `ssl.truststore.type` (by the file's name when unset).
    pub truststore_type: Option<StoreType>,
    /// `ssl.truststore.certificates` / `ssl.ca.pem`: PEM text.
    pub ca_pem: Option<String>,
    /// `ssl.keystore.location` (librdkafka's: a PKCS#12 file).
    pub keystore: Option<PathBuf>,
    /// `ssl.keystore.password`.
    pub keystore_password: Option<String>,
    /// `ssl.keystore.type`.
    pub keystore_type: Option<StoreType>,
    /// `ssl.certificate.location`: a PEM chain.
    pub certificate: Option<PathBuf>,
    /// `ssl.key.location`: a PEM key.
    pub key: Option<PathBuf>,
    /// `ssl.keystore.certificate.chain` / `ssl.certificate.pem`.
    pub certificate_pem: Option<String>,
    /// `ssl.keystore.key` / `ssl.key.pem`.
    pub key_pem: Option<String>,
    /// `ssl.key.password`.
    pub key_password: Option<String>,
    /// `ssl.sni.host`: the name to verify the broker's certificate against and send as SNI.
    pub server_name: Option<String>,
    /// The mechanism the JAAS config's login module implies, when `sasl.mechanism` is unset.
    pub jaas_mechanism: Option<&'static str>,
}

/// The settings this tool knows, under each name it accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Setting {
    Bootstrap,
    ClientId,
    RequestTimeoutMs,
    SecurityProtocol,
    SaslMechanism,
    SaslJaasConfig,
    SaslUsername,
    SaslPassword,
    TruststoreLocation,
    TruststorePassword,
    TruststoreType,
    TruststoreCertificates,
    CaLocation,
    KeystoreLocation,
    KeystorePassword,
    KeystoreType,
    KeystoreKey,
    KeystoreChain,
    CertificateLocation,
    KeyLocation,
    KeyPassword,
    EndpointIdentification,
    CertificateVerification,
    SniHost,
}

impl Setting {
    /// Java's and librdkafka's names.
    fn parse(name: &str) -> Option<Setting> {
        Some(match name {
            "bootstrap.servers" | "metadata.broker.list" => Setting::Bootstrap,
            "client.id" => Setting::ClientId,
            "request.timeout.ms" | "socket.timeout.ms" => Setting::RequestTimeoutMs,
            "security.protocol" => Setting::SecurityProtocol,
            "sasl.mechanism" | "sasl.mechanisms" => Setting::SaslMechanism,
            "sasl.jaas.config" => Setting::SaslJaasConfig,
            "sasl.username" => Setting::SaslUsername,
            "sasl.password" => Setting::SaslPassword,
            "ssl.truststore.location" => Setting::TruststoreLocation,
            "ssl.truststore.password" => Setting::TruststorePassword,
            "ssl.truststore.type" => Setting::TruststoreType,
            "ssl.truststore.certificates" | "ssl.ca.pem" => Setting::TruststoreCertificates,
            "ssl.ca.location" => Setting::CaLocation,
            "ssl.keystore.location" => Setting::KeystoreLocation,
            "ssl.keystore.password" => Setting::KeystorePassword,
            "ssl.keystore.type" => Setting::KeystoreType,
            "ssl.keystore.key" | "ssl.key.pem" => Setting::KeystoreKey,
            "ssl.keystore.certificate.chain" | "ssl.certificate.pem" => Setting::KeystoreChain,
            "ssl.certificate.location" => Setting::CertificateLocation,
            "ssl.key.location" => Setting::KeyLocation,
            "ssl.key.password" => Setting::KeyPassword,
            "ssl.endpoint.identification.algorithm" => Setting::EndpointIdentification,
            "enable.ssl.certificate.verification" => Setting::CertificateVerification,
            "ssl.sni.host" => Setting::SniHost,
            _ => return None,
        })
    }
}

impl Settings {
    /// Reads `--command-config`, then `-X`, then `-b`.
    pub fn from_args(args: &ConnectArgs) -> Result<Settings, CliError> {
        let mut settings = Settings::default();
        if let Some(path) = &args.command_config {
            let text = std::fs::read_to_string(path).map_err(|e| SettingsError {
                origin: path.display().to_string(),
                key: String::new(),
                problem: format!("cannot read: {e}"),
            })?;
            for (line, key, value) in parse_properties(&text) {
                settings.set(&format!("{}:{line}", path.display()), &key, &value)?;
            }
        }
        for pair in &args.settings {
            let Some((key, value)) = pair.split_once('=') else {
                return Err(SettingsError { origin: "-X".into(), key: pair.clone(), problem: "expected KEY=VALUE".into() }.into());
            };
            settings.set("-X", key.trim(), value)?;
        }
        if let Some(b) = &args.bootstrap {
            settings.bootstrap = Some(b.clone());
        }
        Ok(settings)
    }

    /// Applies one setting.
    pub fn set(&mut self, origin: &str, key: &str, value: &str) -> Result<(), SettingsError> {
        let err = |problem: String| SettingsError { origin: origin.to_owned(), key: key.to_owned(), problem };
        let Some(k) = Setting::parse(key) else {
            return Err(err("unknown setting".into()));
        };
        let value = value.trim();
        let text = || Some(value.to_owned());
        let path = || Some(PathBuf::from(value));
        match k {
            Setting::Bootstrap => self.bootstrap = text(),
            Setting::ClientId => self.client_id = text(),
            Setting::RequestTimeoutMs => {
                let ms: u64 = value.parse().map_err(|_| err(format!("not a number of milliseconds: {value:?}")))?;
                self.request_timeout = Some(Duration::from_millis(ms));
            }
            Setting::SecurityProtocol => {
                self.protocol = Protocol::parse(value).ok_or_else(|| err(format!("{value:?} is not PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL")))?;
            }
            Setting::SaslMechanism => {
                let m = value.to_ascii_uppercase();
                if !matches!(m.as_str(), "PLAIN" | "SCRAM-SHA-256" | "SCRAM-SHA-512") {
                    return Err(err(format!("{value:?} is not supported (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)")));
                }
                self.mechanism = Some(m);
            }
            Setting::SaslJaasConfig => {
                let jaas = parse_jaas(value).map_err(err)?;
                self.jaas_mechanism = jaas.mechanism;
                self.username = Some(jaas.username);
                self.password = Some(jaas.password);
            }
            Setting::SaslUsername => self.username = text(),
            Setting::SaslPassword => self.password = text(),
            Setting::TruststoreLocation | Setting::CaLocation => {
                self.truststore = path();
                if k == Setting::CaLocation {
                    self.truststore_type = Some(StoreType::Pem);
                }
            }
            Setting::TruststorePassword => self.truststore_password = text(),
            Setting::TruststoreType => self.truststore_type = Some(store_type(value).map_err(err)?),
            Setting::TruststoreCertificates => self.ca_pem = text(),
            Setting::KeystoreLocation => self.keystore = path(),
            Setting::KeystorePassword => self.keystore_password = text(),
            Setting::KeystoreType => self.keystore_type = Some(store_type(value).map_err(err)?),
            Setting::KeystoreKey => self.key_pem = text(),
            Setting::KeystoreChain => self.certificate_pem = text(),
            Setting::CertificateLocation => self.certificate = path(),
            Setting::KeyLocation => self.key = path(),
            Setting::KeyPassword => self.key_password = text(),
            Setting::EndpointIdentification => {
                if !value.eq_ignore_ascii_case("https") {
                    return Err(err("host name verification cannot be turned off; set ssl.sni.host to the name the certificate carries".into()));
                }
            }
            Setting::CertificateVerification => {
                if !value.eq_ignore_ascii_case("true") {
                    return Err(err("certificate verification cannot be turned off; trust the broker's CA with ssl.ca.location".into()));
                }
            }
            Setting::SniHost => self.server_name = text(),
        }
        Ok(())
    }

    /// The client's configuration, or what is missing or contradictory.
    pub fn client_config(&self) -> Result<ClientConfig, CliError> {
        let bootstrap = self
            .bootstrap
            .as_deref()
            .filter(|b| !b.trim().is_empty())
            .ok_or_else(|| CliError::Usage("no bootstrap brokers: give -b HOST:PORT (or bootstrap.servers in --command-config)".into()))?;
        let mut config = ClientConfig::new(bootstrap).client_id(self.client_id.clone().unwrap_or_else(|| "kwire".into()));
        if let Some(t) = self.request_timeout {
            config = config.request_timeout(t);
        }
        if let Some(tls) = self.tls()? {
            config = config.tls(tls);
        }
        if let Some(sasl) = self.sasl()? {
            config = config.sasl(sasl);
        }
        Ok(config)
    }

    fn problem(key: &str, problem: impl Into<String>) -> CliError {
        CliError::Settings(SettingsError { origin: "settings".into(), key: key.into(), problem: problem.into() })
    }

    fn tls(&self) -> Result<Option<TlsConfig>, CliError> {
        let tls_settings = self.truststore.is_some() || self.ca_pem.is_some() || self.keystore.is_some() || self.certificate.is_some();
        if !self.protocol.tls() {
            if tls_settings {
                return Err(Self::problem("security.protocol", "TLS files are set but the protocol is not SSL or SASL_SSL"));
            }
            return Ok(None);
        }
        let roots = match (&self.truststore, &self.ca_pem) {
            (Some(_), Some(_)) => {
                return Err(Self::problem("ssl.truststore.certificates", "set together with a truststore file; give one"));
            }
            (None, Some(pem)) => Roots::Pem(pem.clone().into_bytes()),
            (None, None) => Roots::System,
            (Some(path), None) => match self.truststore_type.unwrap_or_else(|| guess_type(path)) {
                StoreType::Pem => Roots::PemFile(path.clone()),
                StoreType::Pkcs12 => Roots::Pkcs12File { path: path.clone(), password: self.truststore_password.clone().unwrap_or_default() },
            },
        };
        let mut tls = TlsConfig::new(roots);
        if let Some(identity) = self.identity()? {
            tls = tls.identity(identity);
        }
        if let Some(name) = &self.server_name {
            tls = tls.server_name(name.clone());
        }
        Ok(Some(tls))
    }

    fn identity(&self) -> Result<Option<ClientIdentity>, CliError> {
        if let (Some(chain), Some(key)) = (&self.certificate_pem, &self.key_pem) {
            return Ok(Some(ClientIdentity::Pem { chain: chain.clone().into_bytes(), key: key.clone().into_bytes(), key_password: self.key_password.clone() }));
        }
        if self.certificate_pem.is_some() != self.key_pem.is_some() {
            return Err(Self::problem("ssl.keystore.key", "a PEM certificate chain and key go together; one is missing"));
        }
        if let Some(path) = &self.keystore {
            return Ok(Some(match self.keystore_type.unwrap_or_else(|| guess_type(path)) {
                StoreType::Pkcs12 => ClientIdentity::Pkcs12File { path: path.clone(), password: self.keystore_password.clone().unwrap_or_default() },
                // Java's PEM keystore: the key and its chain in one file.
                StoreType::Pem => ClientIdentity::PemFiles { chain: path.clone(), key: path.clone(), key_password: self.key_password.clone() },
            }));
        }
        match (&self.certificate, &self.key) {
            (Some(chain), Some(key)) => Ok(Some(ClientIdentity::PemFiles { chain: chain.clone(), key: key.clone(), key_password: self.key_password.clone() })),
            (None, None) => Ok(None),
            (Some(_), None) => Err(Self::problem("ssl.key.location", "ssl.certificate.location is set but not the key")),
            (None, Some(_)) => Err(Self::problem("ssl.certificate.location", "ssl.key.location is set but not the certificate")),
        }
    }

    fn sasl(&self) -> Result<Option<Sasl>, CliError> {
        if !self.protocol.sasl() {
            if self.username.is_some() {
                return Err(Self::problem("security.protocol", "SASL credentials are set but the protocol is not SASL_PLAINTEXT or SASL_SSL"));
            }
            return Ok(None);
        }
        let (Some(user), Some(password)) = (&self.username, &self.password) else {
            return Err(Self::problem(
                "sasl.username",
                "the protocol is SASL but no credentials are set (sasl.jaas.config, or sasl.username and sasl.password)",
            ));
        };
        Ok(Some(match self.mechanism.as_deref().or(self.jaas_mechanism).unwrap_or("PLAIN") {
            "SCRAM-SHA-256" => Sasl::scram_sha256(user, password),
            "SCRAM-SHA-512" => Sasl::scram_sha512(user, password),
            _ => Sasl::plain(user, password),
        }))
    }
}

fn store_type(v: &str) -> Result<StoreType, String> {
    match v.to_ascii_uppercase().as_str() {
        "PKCS12" => Ok(StoreType::Pkcs12),
        "PEM" => Ok(StoreType::Pem),
        "JKS" => Err("JKS is not supported: convert it with `keytool -importkeystore -deststoretype PKCS12`".into()),
        _ => Err(format!("{v:?} is not PKCS12 or PEM")),
    }
}

/// A store's type by its file name: `.pem`, `.crt`, `.cer` are PEM, the rest PKCS#12.
fn guess_type(path: &Path) -> StoreType {
    match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("pem" | "crt" | "cer" | "key") => StoreType::Pem,
        _ => StoreType::Pkcs12,
    }
}

/// A Java properties file as `java.util.Properties.load` reads it: `#` and `!` comments,
/// `key=value`, `key: value` or `key value`, lines continued by a final backslash, escapes
/// (`\t`, `\n`, `\uXXXX`, `\=`, ...). Each entry with the line it starts on (1-based).
pub fn parse_properties(text: &str) -> Vec<(usize, String, String)> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((n, first)) = lines.next() {
        let trimmed = first.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('!') {
            continue;
        }
        // Join continuation lines: an odd number of trailing backslashes.
        let mut logical = String::new();
        let mut current = trimmed.to_owned();
        loop {
            let trailing = current.chars().rev().take_while(|&c| c == '\\').count();
            if trailing % 2 == 1 {
                current.pop();
                logical.push_str(&current);
                match lines.next() {
                    Some((_, next)) => current = next.trim_start().to_owned(),
                    None => break,
                }
            } else {
                logical.push_str(&current);
                break;
            }
        }
        let (key, value) = split_entry(&logical);
        out.push((n + 1, unescape(&key), unescape(&value)));
    }
    out
}

/// Splits at the first unescaped `=`, `:` or whitespace; the separator's surrounding spaces go.
fn split_entry(line: &str) -> (String, String) {
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        if c == '\\' {
            i += 2;
            continue;
        }
        if c == '=' || c == ':' || c.is_whitespace() {
            break;
        }
        i += 1;
    }
    let key: String = chars.iter().take(i).collect();
    let mut rest = chars.iter().skip(i).peekable();
    while rest.peek().is_some_and(|c| c.is_whitespace()) {
        rest.next();
    }
    if rest.peek().is_some_and(|&&c| c == '=' || c == ':') {
        rest.next();
    }
    while rest.peek().is_some_and(|c| c.is_whitespace()) {
        rest.next();
    }
    (key, rest.collect())
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\u{c}'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    Some(ch) => out.push(ch),
                    None => {
                        out.push_str("\\u");
                        out.push_str(&hex);
                    }
                }
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// What a `sasl.jaas.config` says.
#[derive(Debug, PartialEq, Eq)]
pub struct Jaas {
    /// `PLAIN` for PlainLoginModule, `SCRAM-SHA-256` for ScramLoginModule (the hash comes from
    /// `sasl.mechanism`).
    pub mechanism: Option<&'static str>,
    /// `username`.
    pub username: String,
    /// `password`.
    pub password: String,
}

/// Parses `org.apache.kafka.common.security.plain.PlainLoginModule required username="alice"
/// password="alice-secret";` as Kafka's `JaasConfig` does: a login module, a control flag,
/// `name=value` options (values bare or in double or single quotes, with backslash escapes),
/// a final `;`.
pub fn parse_jaas(text: &str) -> Result<Jaas, String> {
    let tokens = jaas_tokens(text)?;
    let mut it = tokens.into_iter();
    let module = match it.next() {
        Some(Tok::Word(w)) => w,
        _ => return Err("sasl.jaas.config must start with a login module class".into()),
    };
    let mechanism = match module.rsplit('.').next().unwrap_or(&module) {
        "PlainLoginModule" => Some("PLAIN"),
        "ScramLoginModule" => Some("SCRAM-SHA-256"),
        other => return Err(format!("login module {other} is not supported (PlainLoginModule, ScramLoginModule)")),
    };
    match it.next() {
        Some(Tok::Word(flag)) if matches!(flag.as_str(), "required" | "requisite" | "sufficient" | "optional") => {}
        _ => return Err(format!("after {module}: expected a control flag (required)")),
    }
    let (mut username, mut password) = (None, None);
    let mut ended = false;
    while let Some(tok) = it.next() {
        let name = match tok {
            Tok::Semi => {
                ended = true;
                break;
            }
            Tok::Word(w) => w,
            Tok::Quoted(q) => return Err(format!("expected an option name, not \"{q}\"")),
            Tok::Eq => return Err("expected an option name, not '='".into()),
        };
        if it.next() != Some(Tok::Eq) {
            return Err(format!("option {name}: expected '='"));
        }
        let value = match it.next() {
            Some(Tok::Word(v) | Tok::Quoted(v)) => v,
            _ => return Err(format!("option {name}: expected a value")),
        };
        match name.as_str() {
            "username" => username = Some(value),
            "password" => password = Some(value),
            other => return Err(format!("option {other} is not supported (username, password)")),
        }
    }
    if !ended {
        return Err("the login module entry must end with ';'".into());
    }
    if let Some(tok) = it.next() {
        return Err(format!("only one login module is supported; found {tok:?} after ';'"));
    }
    Ok(Jaas { mechanism, username: username.ok_or("no username option")?, password: password.ok_or("no password option")? })
}

#[derive(Debug, PartialEq, Eq)]
enum Tok {
    Word(String),
    Quoted(String),
    Eq,
    Semi,
}

fn jaas_tokens(text: &str) -> Result<Vec<Tok>, String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '=' => {
                chars.next();
                out.push(Tok::Eq);
            }
            ';' => {
                chars.next();
                out.push(Tok::Semi);
            }
            '"' | '\'' => {
                chars.next();
                let mut s = String::new();
                loop {
                    match chars.next() {
                        None => return Err(format!("unterminated quoted value {c}{s}")),
                        Some('\\') => match chars.next() {
                            Some(e) => s.push(e),
                            None => return Err("a backslash at the end of the value".into()),
                        },
                        Some(q) if q == c => break,
                        Some(other) => s.push(other),
                    }
                }
                out.push(Tok::Quoted(s));
            }
            _ => {
                let mut s = String::new();
                while let Some(&w) = chars.peek() {
                    if w.is_whitespace() || w == '=' || w == ';' || w == '"' || w == '\'' {
                        break;
                    }
                    s.push(w);
                    chars.next();
                }
                out.push(Tok::Word(s));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
    use super::*;

    fn settings(props: &str, x: &[&str]) -> Result<Settings, CliError> {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("kwire-connect-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("client.properties");
        std::fs::write(&file, props).unwrap();
        let args = ConnectArgs { bootstrap: Some("b:9092".into()), command_config: Some(file), settings: x.iter().map(|s| s.to_string()).collect() };
        Settings::from_args(&args)
    }

    #[test]
    fn properties_syntax() {
        let text = "# comment\n! also\n  a=1\nb : 2\nc 3\nd=x\\\n   y\ne=tab\\there\\u0041\nf\\=g=h\nempty=\n";
        let got: Vec<(String, String)> = parse_properties(text).into_iter().map(|(_, k, v)| (k, v)).collect();
        let want = [("a", "1"), ("b", "2"), ("c", "3"), ("d", "xy"), ("e", "tab\thereA"), ("f=g", "h"), ("empty", "")];
        assert_eq!(got, want.map(|(k, v)| (k.to_string(), v.to_string())));
        assert_eq!(parse_properties("x=1\n\ny=2").iter().map(|e| e.0).collect::<Vec<_>>(), [1, 3]);
    }

    #[test]
    fn jaas_plain_and_scram() {
        let j = parse_jaas(r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="a\"b;c";"#).unwrap();
        assert_eq!(j, Jaas { mechanism: Some("PLAIN"), username: "alice".into(), password: "a\"b;c".into() });
        let j = parse_jaas("org.apache.kafka.common.security.scram.ScramLoginModule required\n username='bob' password=secret ;").unwrap();
        assert_eq!(j, Jaas { mechanism: Some("SCRAM-SHA-256"), username: "bob".into(), password: "secret".into() });
    }

    #[test]
    fn jaas_errors_say_what() {
        let e = |t: &str| parse_jaas(t).unwrap_err();
        assert!(e("PlainLoginModule required username=\"a\" password=\"b\"").contains("end with ';'"));
        assert!(e("PlainLoginModule required username=\"a\";").contains("no password"));
        assert!(e("PlainLoginModule required username=\"a").contains("unterminated"));
        assert!(e("x.OAuthBearerLoginModule required;").contains("OAuthBearerLoginModule is not supported"));
        assert!(e("PlainLoginModule required user_x=\"a\" password=\"b\";").contains("option user_x"));
        assert!(e("PlainLoginModule username=\"a\";").contains("control flag"));
    }

    #[test]
    fn java_properties_make_a_scram_ssl_config() {
        let s = settings(
            "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n  username=\"alice\" password=\"alice-secret\";\nssl.truststore.location=/t/ca.p12\nssl.truststore.password=pw\nssl.truststore.type=PKCS12\n",
            &[],
        )
        .unwrap();
        assert_eq!(s.protocol, Protocol::SaslSsl);
        assert_eq!(s.mechanism.as_deref(), Some("SCRAM-SHA-512"));
        assert_eq!((s.username.as_deref(), s.password.as_deref()), (Some("alice"), Some("alice-secret")));
        let c = s.client_config().unwrap();
        let sasl = c.connection.sasl.as_ref().unwrap();
        assert_eq!((sasl.mechanism_name(), sasl.username()), ("SCRAM-SHA-512", "alice"));
        let tls = c.connection.tls.as_ref().unwrap();
        assert!(matches!(&tls.roots, Roots::Pkcs12File { path, password } if path == Path::new("/t/ca.p12") && password == "pw"));
        assert_eq!(c.bootstrap, ["b:9092"]);
    }

    #[test]
    fn librdkafka_names() {
        let s = settings(
            "",
            &[
                "security.protocol=sasl_ssl",
                "sasl.mechanisms=PLAIN",
                "sasl.username=u",
                "sasl.password=p=q",
                "ssl.ca.location=/ca.pem",
                "ssl.certificate.location=/c.pem",
                "ssl.key.location=/k.pem",
                "ssl.key.password=kp",
            ],
        )
        .unwrap();
        let c = s.client_config().unwrap();
        assert_eq!(c.connection.sasl.as_ref().unwrap().mechanism_name(), "PLAIN");
        assert_eq!(s.password.as_deref(), Some("p=q"));
        let tls = c.connection.tls.unwrap();
        assert!(matches!(tls.roots, Roots::PemFile(ref p) if p == Path::new("/ca.pem")));
        assert!(matches!(tls.identity, Some(ClientIdentity::PemFiles { ref chain, ref key, key_password: Some(ref kp) })
            if chain == Path::new("/c.pem") && key == Path::new("/k.pem") && kp == "kp"));
    }

    #[test]
    fn later_sources_win_and_b_wins_last() {
        let s = settings("bootstrap.servers=x:1\nclient.id=a\n", &["client.id=b", "bootstrap.servers=y:2"]).unwrap();
        assert_eq!(s.client_id.as_deref(), Some("b"));
        assert_eq!(s.bootstrap.as_deref(), Some("b:9092"));
    }

    #[test]
    fn unknown_keys_and_bad_values_are_named() {
        let e = settings("acks=all\n", &[]).unwrap_err().to_string();
        assert!(e.ends_with("client.properties:1: acks: unknown setting"), "{e}");
        let e = settings("", &["ssl.truststore.typ=PEM"]).unwrap_err().to_string();
        assert_eq!(e, "-X: ssl.truststore.typ: unknown setting");
        let e = settings("", &["security.protocol=TLS"]).unwrap_err().to_string();
        assert!(e.contains("security.protocol: \"TLS\" is not PLAINTEXT"), "{e}");
        let e = settings("", &["novalue"]).unwrap_err().to_string();
        assert_eq!(e, "-X: novalue: expected KEY=VALUE");
        let e = settings("ssl.truststore.type=JKS\n", &[]).unwrap_err().to_string();
        assert!(e.contains("JKS is not supported"), "{e}");
        let e = settings("", &["sasl.mechanism=GSSAPI"]).unwrap_err().to_string();
        assert!(e.contains("\"GSSAPI\" is not supported"), "{e}");
    }

    #[test]
    fn contradictions_are_refused() {
        let e = settings("", &["sasl.username=u", "sasl.password=p"]).unwrap().client_config().unwrap_err().to_string();
        assert!(e.contains("protocol is not SASL"), "{e}");
        let e = settings("", &["security.protocol=SASL_PLAINTEXT"]).unwrap().client_config().unwrap_err().to_string();
        assert!(e.contains("no credentials"), "{e}");
        let e = settings("", &["ssl.ca.location=/x"]).unwrap().client_config().unwrap_err().to_string();
        assert!(e.contains("not SSL"), "{e}");
        let no_bootstrap = Settings::default().client_config().unwrap_err();
        assert_eq!(no_bootstrap.exit_code(), 2);
    }
}
