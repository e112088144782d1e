//! TLS on either side of the proxy, with rustls on ring: towards clients the proxy terminates
//! TLS with its own certificate ([`ServerTls`]; client certificates required when a CA is
//! given), so that it reads the frames; towards the brokers it speaks TLS itself
//! ([`UpstreamTls`]: their CA, optionally its own client certificate). Without [`ServerTls`] a
//! client's TLS is relayed unread, as before.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_rustls::rustls::{self, pki_types};
use tokio_rustls::{TlsAcceptor, TlsConnector};

use crate::ProxyError;

/// The proxy's TLS towards clients: its own certificate and key, and with `client_ca`, the CA
/// whose certificates clients must present.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerTls {
    /// The proxy's certificate chain and private key.
    pub identity: Identity,
    /// The CA whose client certificates are required (`None`: none asked for).
    pub client_ca: Option<PathBuf>,
}

/// A certificate chain (leaf first) with its private key, as files.
#[derive(Clone, PartialEq, Eq)]
pub enum Identity {
    /// PEM files: the chain, and the key (PKCS#8, RSA or EC).
    Pem {
        /// The certificate chain, leaf first.
        cert: PathBuf,
        /// Its private key.
        key: PathBuf,
    },
    /// A PKCS#12 keystore (`.p12`, as keytool and `openssl pkcs12 -export` write them) holding
    /// the key and its chain.
    Pkcs12 {
        /// The keystore.
        path: PathBuf,
        /// Its password.
        password: String,
    },
}

/// The password stays out of logs and errors.
impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Identity::Pem { cert, key } => f.debug_struct("Pem").field("cert", cert).field("key", key).finish(),
            Identity::Pkcs12 { path, .. } => f.debug_struct("Pkcs12").field("path", path).field("password", &"(withheld)").finish(),
        }
    }
}

type Chain = (Vec<pki_types::CertificateDer<'static>>, pki_types::PrivateKeyDer<'static>);

impl Identity {
    fn load(&self) -> Result<Chain, ProxyError> {
        match self {
            Identity::Pem { cert, key } => Ok((certificates("the certificate", cert)?, private_key(key)?)),
            Identity::Pkcs12 { path, password } => {
                let data = read("the PKCS#12 keystore", path)?;
                let what = format!("the PKCS#12 keystore {}", path.display());
                let store = p12_keystore::KeyStore::from_pkcs12(&data, password, p12_keystore::Pkcs12ImportPolicy::Strict).map_err(|e| {
                    let why = match e {
                        p12_keystore::error::Error::MacError(_) => "wrong password (the integrity check failed)".to_owned(),
                        other => other.to_string(),
                    };
                    ProxyError::Config(format!("{what}: {why}"))
                })?;
                let (_, entry) = store.private_key_chain().ok_or_else(|| ProxyError::Config(format!("{what}: no private key entry with its certificate")))?;
                let chain = entry.certs().iter().map(|c| pki_types::CertificateDer::from(c.as_der().to_vec())).collect();
                let key = pki_types::PrivateKeyDer::Pkcs8(pki_types::PrivatePkcs8KeyDer::from(entry.key().as_der().to_vec()));
                Ok((chain, key))
            }
        }
    }
}

/// TLS towards the brokers: the CA their certificates are checked against (PEM), and the
/// proxy's client certificate and key if the brokers ask for one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamTls {
    /// The CA the brokers' certificates are checked against.
    pub ca: PathBuf,
    /// The proxy's client certificate chain and key, for brokers that require one.
    pub cert: Option<(PathBuf, PathBuf)>,
}

fn read(what: &str, path: &Path) -> Result<Vec<u8>, ProxyError> {
    std::fs::read(path).map_err(|e| ProxyError::io(format!("reading {what} {}", path.display()), e))
}

fn certificates(what: &str, path: &Path) -> Result<Vec<pki_types::CertificateDer<'static>>, ProxyError> {
    let pem = read(what, path)?;
    let certs = rustls_pemfile::certs(&mut &pem[..]).collect::<Result<Vec<_>, _>>().map_err(|e| ProxyError::io(format!("{what} {}", path.display()), e))?;
    if certs.is_empty() {
        return Err(ProxyError::Config(format!("{what} {}: no PEM CERTIFICATE in it", path.display())));
    }
    Ok(certs)
}

fn private_key(path: &Path) -> Result<pki_types::PrivateKeyDer<'static>, ProxyError> {
    let pem = read("the private key", path)?;
    rustls_pemfile::private_key(&mut &pem[..])
        .map_err(|e| ProxyError::io(format!("the private key {}", path.display()), e))?
        .ok_or_else(|| ProxyError::Config(format!("the private key {}: no PEM private key in it", path.display())))
}

fn roots(what: &str, path: &Path) -> Result<rustls::RootCertStore, ProxyError> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in certificates(what, path)? {
        roots.add(cert).map_err(|e| ProxyError::Config(format!("{what} {}: {e}", path.display())))?;
    }
    Ok(roots)
}

/// ring explicitly: the process default is ambiguous when another crate enables aws-lc-rs.
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn tls_error(e: rustls::Error) -> ProxyError {
    ProxyError::Config(format!("TLS: {e}"))
}

impl ServerTls {
    /// The acceptor each client connection's handshake goes through; fails on unreadable or
    /// unusable files, so a proxy does not start with them.
    pub(crate) fn acceptor(&self) -> Result<TlsAcceptor, ProxyError> {
        let builder = rustls::ServerConfig::builder_with_provider(provider()).with_safe_default_protocol_versions().map_err(tls_error)?;
        let builder = match &self.client_ca {
            None => builder.with_no_client_auth(),
            Some(ca) => {
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots("the client CA", ca)?), provider())
                    .build()
                    .map_err(|e| ProxyError::Config(format!("the client CA {}: {e}", ca.display())))?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let (chain, key) = self.identity.load()?;
        let config = builder.with_single_cert(chain, key).map_err(tls_error)?;
        Ok(TlsAcceptor::from(Arc::new(config)))
    }
}

impl UpstreamTls {
    /// The connector every broker connection goes through.
    pub(crate) fn connector(&self) -> Result<TlsConnector, ProxyError> {
        let builder = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(tls_error)?
            .with_root_certificates(roots("the brokers' CA", &self.ca)?);
        let config = match &self.cert {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => builder.with_client_auth_cert(certificates("the client certificate", cert)?, private_key(key)?).map_err(tls_error)?,
        };
        Ok(TlsConnector::from(Arc::new(config)))
    }
}

/// The name a broker's certificate must hold: the host of `host:port` (an IP address or a DNS
/// name).
pub(crate) fn server_name(addr: &str) -> Result<pki_types::ServerName<'static>, ProxyError> {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h).trim_start_matches('[').trim_end_matches(']');
    pki_types::ServerName::try_from(host.to_owned()).map_err(|e| ProxyError::Config(format!("{addr}: not a TLS server name: {e}")))
}
