//! TLS through rustls (ring provider): a given CA or the system's roots, optional client
//! certificate, SNI and hostname verification (rustls always verifies the name).

use std::path::PathBuf;
use std::sync::Arc;

use tokio_rustls::rustls::{self, pki_types::{CertificateDer, PrivateKeyDer, ServerName}};

use crate::error::{Error, Result};

/// Where trusted roots come from.
#[derive(Debug, Clone)]
pub enum Roots {
    /// The operating system's store (rustls-native-certs).
    System,
    /// PEM certificates from a file.
    PemFile(PathBuf),
    /// PEM certificates.
    Pem(Vec<u8>),
}

/// TLS settings for broker connections.
#[derive(Debug, Clone)]
pub struct TlsConfig {
    /// Trusted roots.
    pub roots: Roots,
    /// A client certificate chain and key, PEM (for `ssl.client.auth=required` listeners).
    pub client_cert: Option<(Vec<u8>, Vec<u8>)>,
    /// The name to send as SNI and verify the certificate against; by default the host of
    /// the address connected to (an IP address is checked against the IP SANs).
    pub server_name: Option<String>,
}

impl TlsConfig {
    /// Trust the operating system's roots.
    pub fn system_roots() -> TlsConfig {
        TlsConfig { roots: Roots::System, client_cert: None, server_name: None }
    }

    /// Trust the CA certificates in a PEM file.
    pub fn ca_file(path: impl Into<PathBuf>) -> TlsConfig {
        TlsConfig { roots: Roots::PemFile(path.into()), client_cert: None, server_name: None }
    }

    /// Present a client certificate (PEM chain and PEM private key).
    pub fn client_cert(mut self, chain_pem: impl Into<Vec<u8>>, key_pem: impl Into<Vec<u8>>) -> TlsConfig {
        self.client_cert = Some((chain_pem.into(), key_pem.into()));
        self
    }

    /// Verify against (and send as SNI) this name instead of the connected host.
    pub fn server_name(mut self, name: impl Into<String>) -> TlsConfig {
        self.server_name = Some(name.into());
        self
    }

    pub(crate) fn build(&self) -> Result<Arc<rustls::ClientConfig>> {
        let mut roots = rustls::RootCertStore::empty();
        match &self.roots {
            Roots::System => {
                let found = rustls_native_certs::load_native_certs();
                for cert in found.certs {
                    // Some system stores carry certificates rustls cannot parse: skip those.
                    let _ = roots.add(cert);
                }
                if roots.is_empty() {
                    return Err(Error::Config(format!("no usable system root certificates ({:?})", found.errors)));
                }
            }
            Roots::PemFile(path) => {
                let pem = std::fs::read(path).map_err(|e| Error::Config(format!("CA file {}: {e}", path.display())))?;
                add_pem(&mut roots, &pem)?;
            }
            Roots::Pem(pem) => add_pem(&mut roots, pem)?,
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::Config(format!("TLS: {e}")))?
            .with_root_certificates(roots);
        let config = match &self.client_cert {
            None => builder.with_no_client_auth(),
            Some((chain, key)) => {
                let chain: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut &chain[..])
                    .collect::<std::result::Result<_, _>>()
                    .map_err(|e| Error::Config(format!("client certificate: {e}")))?;
                let key: PrivateKeyDer<'static> = rustls_pemfile::private_key(&mut &key[..])
                    .map_err(|e| Error::Config(format!("client key: {e}")))?
                    .ok_or_else(|| Error::Config("client key: no private key in the PEM".into()))?;
                builder.with_client_auth_cert(chain, key).map_err(|e| Error::Config(format!("client certificate: {e}")))?
            }
        };
        Ok(Arc::new(config))
    }

    pub(crate) fn name_for(&self, host: &str) -> Result<ServerName<'static>> {
        let name = self.server_name.as_deref().unwrap_or(host);
        ServerName::try_from(name.to_owned()).map_err(|e| Error::Config(format!("TLS server name {name:?}: {e}")))
    }
}

fn add_pem(roots: &mut rustls::RootCertStore, pem: &[u8]) -> Result<()> {
    let mut n = 0;
    for cert in rustls_pemfile::certs(&mut &pem[..]) {
        let cert = cert.map_err(|e| Error::Config(format!("CA certificate: {e}")))?;
        roots.add(cert).map_err(|e| Error::Config(format!("CA certificate: {e}")))?;
        n += 1;
    }
    if n == 0 {
        return Err(Error::Config("no certificate in the CA PEM".into()));
    }
    Ok(())
}
