//! TLS listeners (Kafka's SSL and SASL_SSL): a certificate chain and private key in PEM, served
//! with rustls on ring, the workspace's TLS stack. No client certificates are asked for
//! (`ssl.client.auth=none`, Kafka's default), so an SSL connection's principal is
//! `User:ANONYMOUS`.

use std::io;
use std::path::Path;
use std::sync::Arc;

use tokio_rustls::rustls;
use tokio_rustls::TlsAcceptor;

/// A TLS listener's identity: its certificate chain (leaf first) and private key, PEM.
#[derive(Clone, PartialEq, Eq)]
pub struct TlsIdentity {
    chain_pem: Vec<u8>,
    key_pem: Vec<u8>,
}

impl std::fmt::Debug for TlsIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("TlsIdentity").field("chain_pem", &format_args!("{} bytes", self.chain_pem.len())).finish_non_exhaustive()
    }
}

impl TlsIdentity {
    /// From PEM text: `CERTIFICATE` blocks, and a `PRIVATE KEY` (PKCS#8), `RSA PRIVATE KEY` or
    /// `EC PRIVATE KEY` block. Checked when a listener starts ([`Cluster::listen_with`](crate::Cluster::listen_with)).
    pub fn from_pem(chain_pem: impl Into<Vec<u8>>, key_pem: impl Into<Vec<u8>>) -> TlsIdentity {
        TlsIdentity { chain_pem: chain_pem.into(), key_pem: key_pem.into() }
    }

    /// From PEM files (`ssl.keystore.type=PEM`'s certificate chain and key).
    pub fn from_files(chain: &Path, key: &Path) -> io::Result<TlsIdentity> {
        let read = |p: &Path| std::fs::read(p).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())));
        Ok(TlsIdentity::from_pem(read(chain)?, read(key)?))
    }

    /// The acceptor a listener hands its connections to.
    pub(crate) fn acceptor(&self) -> io::Result<TlsAcceptor> {
        let invalid = |m: String| io::Error::new(io::ErrorKind::InvalidInput, m);
        let chain: Vec<_> =
            rustls_pemfile::certs(&mut &self.chain_pem[..]).collect::<Result<_, _>>().map_err(|e| invalid(format!("the TLS certificate chain: {e}")))?;
        if chain.is_empty() {
            return Err(invalid("the TLS certificate chain has no PEM CERTIFICATE".into()));
        }
        let key = rustls_pemfile::private_key(&mut &self.key_pem[..])
            .map_err(|e| invalid(format!("the TLS private key: {e}")))?
            .ok_or_else(|| invalid("the TLS private key has no PEM private key".into()))?;
        // ring explicitly: the process's default provider is ambiguous when another crate of
        // the build enables aws-lc-rs.
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| invalid(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| invalid(format!("the TLS certificate and key: {e}")))?;
        Ok(TlsAcceptor::from(Arc::new(config)))
    }
}
