//! What a proxy is told: [`Config`], built in code or from the binary's command line.

use std::path::PathBuf;
use std::sync::Arc;

use crate::fault::FaultConfig;
use crate::tls::{Identity, ServerTls, UpstreamTls};
use crate::trace::Frame;
use crate::Event;

/// The hook that receives the proxy's [`Event`]s.
pub type EventHook = Arc<dyn Fn(&Event) + Send + Sync>;

/// The hook that sees every frame the proxy forwards or answers (see [`Config::on_frame`]).
pub type FrameHook = Arc<dyn Fn(&Frame<'_>) + Send + Sync>;

/// The binary's command line.
pub const USAGE: &str = "\
usage: kwire-proxy --upstream HOST:PORT[,HOST:PORT...] [options]

A Kafka proxy: one local listener per broker, broker endpoints in responses rewritten to the
listeners, everything else passed byte for byte.

options:
  --upstream HOST:PORT    the bootstrap broker(s) (required; the first is the bootstrap listener's)
  --listen HOST           the address listeners bind to (default 127.0.0.1)
  --advertise HOST        the host advertised to clients in place of the brokers' (default: --listen)
  --port N                the bootstrap listener's port (default 0: any free port)
  --tenant PREFIX         prefix the tenant's topic names on the way to the broker, strip them back
  --max-connections N     client connections served at once (default 1024)
  --max-frame BYTES       the largest frame either side may send (default 104857600)
  --max-listeners N       brokers the proxy stands in for (default 64)
  --trace DIR             every frame in both directions, one file per connection (costly);
                          frames that can carry secrets (SASL, delegation tokens, SCRAM
                          credentials, configs) are cut after their header
  --trace-secrets         trace those frames whole, secrets and all
  --tls-cert FILE         terminate clients' TLS with this certificate chain (PEM) ...
  --tls-key FILE          ... and its private key (PEM); the frames are then read (without
                          them a client's TLS is relayed unread)
  --tls-p12 FILE          or the certificate and key in a PKCS#12 keystore ...
  --tls-p12-password-file FILE  ... whose password is this file's first line
  --tls-client-ca FILE    require client certificates this CA (PEM) signed
  --upstream-ca FILE      speak TLS to the brokers, checking them against this CA (PEM)
  --upstream-cert FILE    the proxy's client certificate towards the brokers (PEM) ...
  --upstream-key FILE     ... and its private key
  -h, --help              this text

It prints `proxy: listening LOCAL -> UPSTREAM` for each listener (the first is the bootstrap one;
brokers found in responses get listeners on free ports as they appear).
";

/// What a [`Proxy`](crate::Proxy) does; `Config::new(upstream)` has the binary's defaults, and
/// each field has a builder method of its name.
#[derive(Clone)]
#[non_exhaustive]
pub struct Config {
    /// The bootstrap broker(s): `host:port`, comma-separated; the bootstrap listener stands for
    /// the first.
    pub upstream: String,
    /// The address the listeners bind to (default `127.0.0.1`).
    pub listen: String,
    /// The host advertised to clients in place of the brokers' (default: [`Config::listen`]).
    pub advertise: String,
    /// The bootstrap listener's port (default 0: any free port).
    pub port: u16,
    /// The tenant's topic prefix.
    pub tenant: Option<String>,
    /// Client connections served at once (default 1024); further clients are closed at once.
    pub max_connections: usize,
    /// The largest frame (after its size prefix) either side may send (default 100 MiB).
    pub max_frame: usize,
    /// Brokers (listeners) the proxy stands in for (default 64).
    pub max_listeners: usize,
    /// Where to write frame traces (created if missing): every frame of every connection, as
    /// it was read and as it was written. One file per connection (`conn-ID.trace`), one line
    /// per frame: `DIRECTION API VERSION CORRELATION MODE HEX`, DIRECTION being `c2p` (read from
    /// the client), `p2u` (written to the broker), `u2p` (read from the broker) or `p2c` (written
    /// to the client), MODE `in` for frames read, else `pass`, `rewritten` or `local` (answered
    /// by the proxy), HEX the frame with its size prefix. Frames of the apis that can carry a
    /// secret ([`carries_secrets`](crate::carries_secrets)) are cut after their header (the api
    /// key, version and correlation id of a request, the correlation id of a response; the size
    /// prefix still says how long they were) unless [`Config::trace_secrets`]. Costly: for tests.
    pub trace: Option<PathBuf>,
    /// Trace the frames that can carry secrets whole (default false).
    pub trace_secrets: bool,
    /// Terminate clients' TLS with the proxy's own certificate, and read the frames (default:
    /// a client's TLS is relayed unread).
    pub tls: Option<ServerTls>,
    /// Speak TLS to the brokers (default: plain TCP).
    pub upstream_tls: Option<UpstreamTls>,
    /// Faults to inject (tests only).
    pub faults: Option<FaultConfig>,
    /// Where events go (default: nowhere).
    pub on_event: Option<EventHook>,
    /// Called with every frame as it is forwarded (or answered by the proxy), before it is
    /// written: what was read and what is sent on (the same bytes unless rewritten). Runs on
    /// the connection's task, so it must be quick (e.g. hand the frame to a channel). For
    /// observers such as `kwire tap`; it cannot change the frame.
    pub on_frame: Option<FrameHook>,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("upstream", &self.upstream)
            .field("listen", &self.listen)
            .field("advertise", &self.advertise)
            .field("port", &self.port)
            .field("tenant", &self.tenant)
            .field("max_connections", &self.max_connections)
            .field("max_frame", &self.max_frame)
            .field("max_listeners", &self.max_listeners)
            .field("trace", &self.trace)
            .field("trace_secrets", &self.trace_secrets)
            .field("tls", &self.tls)
            .field("upstream_tls", &self.upstream_tls)
            .field("faults", &self.faults)
            .field("on_event", &self.on_event.as_ref().map(|_| "Fn(&Event)"))
            .field("on_frame", &self.on_frame.as_ref().map(|_| "Fn(&Frame)"))
            .finish()
    }
}

impl Config {
    /// A proxy for the broker(s) at `upstream` (`host:port`, comma-separated), listening on
    /// 127.0.0.1, with the binary's defaults.
    pub fn new(upstream: impl Into<String>) -> Config {
        Config {
            upstream: upstream.into(),
            listen: "127.0.0.1".into(),
            advertise: String::new(),
            port: 0,
            tenant: None,
            max_connections: 1024,
            max_frame: 100 * 1024 * 1024,
            max_listeners: 64,
            trace: None,
            trace_secrets: false,
            tls: None,
            upstream_tls: None,
            faults: None,
            on_event: None,
            on_frame: None,
        }
    }

    /// Parses the binary's command line (without the program name); `Ok(None)` for `--help`.
    pub fn from_args(args: impl IntoIterator<Item = String>) -> Result<Option<Config>, String> {
        let mut config = Config::new("");
        let mut tls_files: (Option<PathBuf>, Option<PathBuf>, Option<PathBuf>) = (None, None, None);
        let mut upstream_files: (Option<PathBuf>, Option<PathBuf>, Option<PathBuf>) = (None, None, None);
        let mut p12: (Option<PathBuf>, Option<PathBuf>) = (None, None);
        let mut args = args.into_iter();
        while let Some(flag) = args.next() {
            let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
            let number = |v: String| v.parse::<usize>().map_err(|e| format!("{flag} {v}: {e}"));
            match flag.as_str() {
                "--upstream" => config.upstream = value()?,
                "--listen" => config.listen = value()?,
                "--advertise" => config.advertise = value()?,
                "--port" => config.port = value()?.parse().map_err(|e| format!("--port: {e}"))?,
                "--tenant" => config.tenant = Some(value()?).filter(|t| !t.is_empty()),
                "--max-connections" => config.max_connections = number(value()?)?,
                "--max-frame" => config.max_frame = number(value()?)?,
                "--max-listeners" => config.max_listeners = number(value()?)?,
                "--trace" => config.trace = Some(value()?.into()),
                "--trace-secrets" => config.trace_secrets = true,
                "--tls-cert" => tls_files.0 = Some(PathBuf::from(value()?)),
                "--tls-key" => tls_files.1 = Some(PathBuf::from(value()?)),
                "--tls-client-ca" => tls_files.2 = Some(PathBuf::from(value()?)),
                "--tls-p12" => p12.0 = Some(PathBuf::from(value()?)),
                "--tls-p12-password-file" => p12.1 = Some(PathBuf::from(value()?)),
                "--upstream-ca" => upstream_files.0 = Some(PathBuf::from(value()?)),
                "--upstream-cert" => upstream_files.1 = Some(PathBuf::from(value()?)),
                "--upstream-key" => upstream_files.2 = Some(PathBuf::from(value()?)),
                "-h" | "--help" => return Ok(None),
                other => return Err(format!("unknown argument {other}")),
            }
        }
        let identity = match (tls_files.0, tls_files.1, p12) {
            (Some(cert), Some(key), (None, None)) => Some(Identity::Pem { cert, key }),
            (None, None, (Some(path), password_file)) => {
                let password = match password_file {
                    Some(file) => read_password(&file)?,
                    None => String::new(),
                };
                Some(Identity::Pkcs12 { path, password })
            }
            (None, None, (None, None)) => None,
            _ => return Err("--tls-cert and --tls-key go together, or --tls-p12 (with --tls-p12-password-file), not both".into()),
        };
        config.tls = match (identity, tls_files.2) {
            (Some(identity), client_ca) => Some(ServerTls { identity, client_ca }),
            (None, None) => None,
            (None, Some(_)) => return Err("--tls-client-ca needs the proxy's own certificate (--tls-cert or --tls-p12)".into()),
        };
        config.upstream_tls = match upstream_files {
            (Some(ca), None, None) => Some(UpstreamTls { ca, cert: None }),
            (Some(ca), Some(cert), Some(key)) => Some(UpstreamTls { ca, cert: Some((cert, key)) }),
            (None, None, None) => None,
            _ => return Err("--upstream-ca is needed for TLS to the brokers, and --upstream-cert and --upstream-key go together".into()),
        };
        if config.upstream.is_empty() {
            return Err("--upstream HOST:PORT is required".into());
        }
        Ok(Some(config))
    }

    /// The host advertised: [`Config::advertise`], or [`Config::listen`] when empty.
    pub(crate) fn advertised(&self) -> &str {
        if self.advertise.is_empty() {
            &self.listen
        } else {
            &self.advertise
        }
    }

    /// Sets [`Config::listen`].
    pub fn listen(mut self, host: impl Into<String>) -> Config {
        self.listen = host.into();
        self
    }

    /// Sets [`Config::advertise`].
    pub fn advertise(mut self, host: impl Into<String>) -> Config {
        self.advertise = host.into();
        self
    }

    /// Sets [`Config::port`].
    pub fn port(mut self, port: u16) -> Config {
        self.port = port;
        self
    }

    /// Sets [`Config::tenant`] (an empty prefix is none).
    pub fn tenant(mut self, prefix: impl Into<String>) -> Config {
        self.tenant = Some(prefix.into()).filter(|t| !t.is_empty());
        self
    }

    /// Sets [`Config::max_connections`].
    pub fn max_connections(mut self, n: usize) -> Config {
        self.max_connections = n;
        self
    }

    /// Sets [`Config::max_frame`].
    pub fn max_frame(mut self, bytes: usize) -> Config {
        self.max_frame = bytes;
        self
    }

    /// Sets [`Config::max_listeners`].
    pub fn max_listeners(mut self, n: usize) -> Config {
        self.max_listeners = n;
        self
    }

    /// Sets [`Config::trace`].
    pub fn trace(mut self, dir: impl Into<PathBuf>) -> Config {
        self.trace = Some(dir.into());
        self
    }

    /// Sets [`Config::trace_secrets`].
    pub fn trace_secrets(mut self, yes: bool) -> Config {
        self.trace_secrets = yes;
        self
    }

    /// Sets [`Config::tls`].
    pub fn tls(mut self, tls: ServerTls) -> Config {
        self.tls = Some(tls);
        self
    }

    /// Sets [`Config::upstream_tls`].
    pub fn upstream_tls(mut self, tls: UpstreamTls) -> Config {
        self.upstream_tls = Some(tls);
        self
    }

    /// Sets [`Config::faults`].
    pub fn faults(mut self, faults: FaultConfig) -> Config {
        self.faults = Some(faults);
        self
    }

    /// Sets [`Config::on_event`].
    pub fn on_event(mut self, hook: impl Fn(&Event) + Send + Sync + 'static) -> Config {
        self.on_event = Some(Arc::new(hook));
        self
    }

    /// Sets [`Config::on_frame`].
    pub fn on_frame(mut self, hook: impl Fn(&Frame<'_>) + Send + Sync + 'static) -> Config {
        self.on_frame = Some(Arc::new(hook));
        self
    }
}

/// A keystore password from a file: its first line (a password on the command line would be
/// in every process listing).
fn read_password(file: &std::path::Path) -> Result<String, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("--tls-p12-password-file {}: {e}", file.display()))?;
    Ok(text.lines().next().unwrap_or_default().to_owned())
}

#[cfg(test)]
mod tests {
    use super::Config;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn the_command_line_sets_every_field() {
        let c = Config::from_args(args(
            "--upstream b:9092 --listen 0.0.0.0 --port 19092 --tenant acme. --max-connections 5 --max-frame 1024 --max-listeners 3 --trace /tmp/t",
        ))
        .unwrap()
        .unwrap();
        assert_eq!((c.upstream.as_str(), c.listen.as_str(), c.advertised(), c.port), ("b:9092", "0.0.0.0", "0.0.0.0", 19092));
        assert_eq!((c.tenant.as_deref(), c.max_connections, c.max_frame, c.max_listeners), (Some("acme."), 5, 1024, 3));
        assert_eq!(c.trace.as_deref(), Some(std::path::Path::new("/tmp/t")));
        assert!(Config::from_args(args("--help")).unwrap().is_none());
        assert!(Config::from_args(args("--port 1")).unwrap_err().contains("--upstream"));
        assert!(Config::from_args(args("--upstream b:1 --max-frame x")).is_err());
        assert!(Config::from_args(args("--upstream b:1 --bogus")).is_err());
        assert!(Config::from_args(args("--upstream")).is_err());
    }

    #[test]
    fn tls_flags_go_together() {
        use super::{Identity, ServerTls, UpstreamTls};
        let c = Config::from_args(args("--upstream b:1 --tls-cert c.pem --tls-key k.pem --upstream-ca ca.pem --trace-secrets")).unwrap().unwrap();
        assert_eq!(c.tls, Some(ServerTls { identity: Identity::Pem { cert: "c.pem".into(), key: "k.pem".into() }, client_ca: None }));
        assert_eq!(c.upstream_tls, Some(UpstreamTls { ca: "ca.pem".into(), cert: None }));
        assert!(c.trace_secrets);
        assert!(Config::from_args(args("--upstream b:1 --tls-cert c.pem")).unwrap_err().contains("--tls-key"));
        assert!(Config::from_args(args("--upstream b:1 --upstream-cert c.pem --upstream-key k.pem")).unwrap_err().contains("--upstream-ca"));
        assert!(Config::from_args(args("--upstream b:1 --tls-cert c.pem --tls-key k.pem --tls-p12 s.p12")).unwrap_err().contains("not both"));
        assert!(Config::from_args(args("--upstream b:1 --tls-client-ca ca.pem")).unwrap_err().contains("--tls-p12"));
    }

    #[test]
    fn a_keystore_password_comes_from_a_file_and_stays_out_of_debug() {
        use super::Identity;
        let file = std::env::temp_dir().join(format!("kwire-proxy-p12-password-{}", std::process::id()));
        std::fs::write(&file, "s3cr3t-pass\nignored\n").unwrap();
        let c = Config::from_args(args(&format!("--upstream b:1 --tls-p12 s.p12 --tls-p12-password-file {}", file.display()))).unwrap().unwrap();
        let identity = c.tls.unwrap().identity;
        assert_eq!(identity, Identity::Pkcs12 { path: "s.p12".into(), password: "s3cr3t-pass".into() });
        assert!(!format!("{identity:?}").contains("s3cr3t"), "{identity:?}");
        let _ = std::fs::remove_file(file);
    }
}
