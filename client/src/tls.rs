//! TLS through rustls (ring provider): trusted roots from the system, PEM or a PKCS#12
//! truststore; a client certificate from PEM (the key plain or encrypted PKCS#8) or a PKCS#12
//! keystore; SNI and hostname verification (rustls always verifies the name).
//!
//! Key material is read as Kafka's Java clients hold it (`ssl.truststore.*`,
//! `ssl.keystore.*`, `ssl.key.password`), and every failure names the file and what is wrong
//! with it. The client's own certificate is not checked here beyond its key matching it: the
//! broker is the judge of a client certificate, so X.509 v1 certificates (which rustls's
//! verifier refuses) are presented as Java and librdkafka present them.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use p12_keystore::{KeyStore, KeyStoreEntry, Pkcs12ImportPolicy};
use tokio_rustls::rustls::{
    self,
    client::ResolvesClientCert,
    crypto::CryptoProvider,
    pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName},
    sign::CertifiedKey,
    SignatureScheme,
};

use crate::error::{Error, Result};

/// Where trusted roots come from.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Roots {
    /// The operating system's store (rustls-native-certs).
    System,
    /// PEM certificates from a file (`ssl.truststore.type=PEM`).
    PemFile(PathBuf),
    /// PEM certificates.
    Pem(Vec<u8>),
    /// The trusted certificate entries of a PKCS#12 truststore (`ssl.truststore.type=PKCS12`,
    /// as `keytool -importcert` makes them).
    Pkcs12File {
        /// The file.
        path: PathBuf,
        /// `ssl.truststore.password`.
        password: String,
    },
}

/// The client's certificate chain and private key (for `ssl.client.auth=required` listeners).
#[derive(Clone)]
#[non_exhaustive]
pub enum ClientIdentity {
    /// A PEM certificate chain (the client's certificate first) and a PEM private key: PKCS#8
    /// (`BEGIN PRIVATE KEY`, or `BEGIN ENCRYPTED PRIVATE KEY` with `key_password`), PKCS#1 or
    /// SEC1.
    Pem {
        /// The chain.
        chain: Vec<u8>,
        /// The key.
        key: Vec<u8>,
        /// The key's password, for an encrypted PKCS#8 key (`ssl.key.password`).
        key_password: Option<String>,
    },
    /// The same from files (`ssl.keystore.type=PEM` with the chain and key in files).
    PemFiles {
        /// The chain's file.
        chain: PathBuf,
        /// The key's file.
        key: PathBuf,
        /// The key's password, for an encrypted PKCS#8 key.
        key_password: Option<String>,
    },
    /// The private key entry of a PKCS#12 keystore with its chain (`ssl.keystore.type=PKCS12`,
    /// `ssl.keystore.password`; the first key entry when it has several).
    Pkcs12File {
        /// The file.
        path: PathBuf,
        /// `ssl.keystore.password` (the key is protected by the same password, as keytool and
        /// OpenSSL write it).
        password: String,
    },
}

impl fmt::Debug for ClientIdentity {
    // Keys and passwords stay out of logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientIdentity::Pem { chain, .. } => f.debug_struct("Pem").field("chain_bytes", &chain.len()).finish_non_exhaustive(),
            ClientIdentity::PemFiles { chain, key, .. } => f.debug_struct("PemFiles").field("chain", chain).field("key", key).finish_non_exhaustive(),
            ClientIdentity::Pkcs12File { path, .. } => f.debug_struct("Pkcs12File").field("path", path).finish_non_exhaustive(),
        }
    }
}

/// TLS settings for broker connections.
///
/// ```no_run
/// use kwire_client::{ClientConfig, ClientIdentity, Roots, TlsConfig};
///
/// // As Java's ssl.truststore.* and ssl.keystore.* settings would have it.
/// let tls = TlsConfig::new(Roots::Pkcs12File { path: "truststore.p12".into(), password: "changeit".into() })
///     .identity(ClientIdentity::Pkcs12File { path: "client.p12".into(), password: "secret".into() });
/// let config = ClientConfig::new("broker:9093").tls(tls);
/// ```
#[derive(Debug, Clone)]
pub struct TlsConfig {
    /// Trusted roots.
    pub roots: Roots,
    /// A client certificate and key, if the listener asks for one.
    pub identity: Option<ClientIdentity>,
    /// The name to send as SNI and verify the certificate against; by default the host of
    /// the address connected to (an IP address is checked against the IP SANs).
    pub server_name: Option<String>,
}

impl TlsConfig {
    /// Trust these roots; no client certificate.
    pub fn new(roots: Roots) -> TlsConfig {
        TlsConfig { roots, identity: None, server_name: None }
    }

    /// Trust the operating system's roots.
    pub fn system_roots() -> TlsConfig {
        TlsConfig::new(Roots::System)
    }

    /// Trust the CA certificates in a PEM file.
    pub fn ca_file(path: impl Into<PathBuf>) -> TlsConfig {
        TlsConfig::new(Roots::PemFile(path.into()))
    }

    /// Present a client certificate (PEM chain and unencrypted PEM private key).
    pub fn client_cert(self, chain_pem: impl Into<Vec<u8>>, key_pem: impl Into<Vec<u8>>) -> TlsConfig {
        self.identity(ClientIdentity::Pem { chain: chain_pem.into(), key: key_pem.into(), key_password: None })
    }

    /// Present this client certificate.
    pub fn identity(mut self, identity: ClientIdentity) -> TlsConfig {
        self.identity = Some(identity);
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
            Roots::PemFile(path) => add_pem(&mut roots, &read(path, "CA file")?, &format!("CA file {}", path.display()))?,
            Roots::Pem(pem) => add_pem(&mut roots, pem, "CA PEM")?,
            Roots::Pkcs12File { path, password } => add_pkcs12(&mut roots, path, password)?,
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::Config(format!("TLS: {e}")))?
            .with_root_certificates(roots);
        let config = match &self.identity {
            None => builder.with_no_client_auth(),
            Some(identity) => builder.with_client_cert_resolver(Arc::new(Identity(certified_key(identity, &provider)?))),
        };
        Ok(Arc::new(config))
    }

    pub(crate) fn name_for(&self, host: &str) -> Result<ServerName<'static>> {
        let name = self.server_name.as_deref().unwrap_or(host);
        ServerName::try_from(name.to_owned()).map_err(|e| Error::Config(format!("TLS server name {name:?}: {e}")))
    }
}

/// Always the one client certificate. rustls's own resolver (`with_client_auth_cert`) parses
/// the certificate with its verifier first and refuses an X.509 v1 one; the broker, which
/// decides, takes it.
#[derive(Debug)]
struct Identity(Arc<CertifiedKey>);

impl ResolvesClientCert for Identity {
    fn resolve(&self, _root_hint_subjects: &[&[u8]], _sigschemes: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }

    fn has_certs(&self) -> bool {
        true
    }
}

fn read(path: &Path, what: &str) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| Error::Config(format!("{what} {}: {e}", path.display())))
}

fn add_pem(roots: &mut rustls::RootCertStore, pem: &[u8], source: &str) -> Result<()> {
    let mut n = 0;
    for cert in rustls_pemfile::certs(&mut &pem[..]) {
        let cert = cert.map_err(|e| Error::Config(format!("{source}: {e}")))?;
        roots.add(cert).map_err(|e| Error::Config(format!("{source}: {e}")))?;
        n += 1;
    }
    if n == 0 {
        return Err(Error::Config(format!("{source}: no PEM certificate in it")));
    }
    Ok(())
}

/// Reads a PKCS#12 file, naming the file and the likely cause when it cannot.
fn pkcs12(path: &Path, password: &str, what: &str) -> Result<KeyStore> {
    let data = read(path, what)?;
    // Java's own formats by their magic numbers: no well-kept crate reads them, and keytool
    // converts them losslessly.
    let java_format = match data.get(..4) {
        Some([0xFE, 0xED, 0xFE, 0xED]) => Some("JKS"),
        Some([0xCE, 0xCE, 0xCE, 0xCE]) => Some("JCEKS"),
        _ => None,
    };
    if let Some(format) = java_format {
        let p = path.display();
        return Err(Error::Config(format!(
            "{what} {p}: a {format} keystore, which this client does not read; convert it to PKCS#12 with \
             `keytool -importkeystore -srckeystore {p} -srcstoretype {format} -destkeystore {p}.p12 -deststoretype PKCS12`"
        )));
    }
    KeyStore::from_pkcs12(&data, password, Pkcs12ImportPolicy::Strict).map_err(|e| {
        let why = match e {
            p12_keystore::error::Error::MacError(_) => "wrong password (the integrity check failed)".to_owned(),
            p12_keystore::error::Error::DerError(e) => format!("not a PKCS#12 file ({e})"),
            other => other.to_string(),
        };
        Error::Config(format!("{what} {}: {why}", path.display()))
    })
}

fn add_pkcs12(roots: &mut rustls::RootCertStore, path: &Path, password: &str) -> Result<()> {
    let store = pkcs12(path, password, "PKCS#12 truststore")?;
    let mut n = 0;
    for (alias, entry) in store.entries() {
        if let KeyStoreEntry::Certificate(cert) = entry {
            roots
                .add(CertificateDer::from(cert.as_der().to_vec()))
                .map_err(|e| Error::Config(format!("PKCS#12 truststore {}: certificate {alias:?}: {e}", path.display())))?;
            n += 1;
        }
    }
    if n == 0 {
        // As Java: certificates without its trusted-certificate attribute are not trusted.
        return Err(Error::Config(format!(
            "PKCS#12 truststore {}: no trusted certificate entry (make it with `keytool -importcert`, or `openssl pkcs12 -export -nokeys -jdktrust anyExtendedKeyUsage`)",
            path.display()
        )));
    }
    Ok(())
}

/// The chain and signing key of `identity`, the key checked against the certificate.
fn certified_key(identity: &ClientIdentity, provider: &CryptoProvider) -> Result<Arc<CertifiedKey>> {
    let (chain, key, source) = match identity {
        ClientIdentity::Pem { chain, key, key_password } => {
            (pem_chain(chain, "client certificate PEM")?, pem_key(key, key_password.as_deref(), "client key PEM")?, "client certificate PEM".to_owned())
        }
        ClientIdentity::PemFiles { chain, key, key_password } => {
            let chain_source = format!("client certificate file {}", chain.display());
            let key_source = format!("client key file {}", key.display());
            let chain = pem_chain(&read(chain, "client certificate file")?, &chain_source)?;
            (chain, pem_key(&read(key, "client key file")?, key_password.as_deref(), &key_source)?, chain_source)
        }
        ClientIdentity::Pkcs12File { path, password } => {
            let store = pkcs12(path, password, "PKCS#12 keystore")?;
            let source = format!("PKCS#12 keystore {}", path.display());
            let (_, entry) = store.private_key_chain().ok_or_else(|| Error::Config(format!("{source}: no private key entry with its certificate")))?;
            let chain: Vec<CertificateDer<'static>> = entry.certs().iter().map(|c| CertificateDer::from(c.as_der().to_vec())).collect();
            let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(entry.key().as_der().to_vec()));
            (chain, key, source)
        }
    };
    let Some(end_entity) = chain.first() else {
        return Err(Error::Config(format!("{source}: no certificate")));
    };
    let signing = provider.key_provider.load_private_key(key).map_err(|e| Error::Config(format!("{source}: the private key: {e}")))?;
    // The one check worth making here: a key that does not belong to the certificate would
    // only fail later, at the broker, as a bare handshake failure.
    let cert_spki = x509_parser::parse_x509_certificate(end_entity)
        .map_err(|e| Error::Config(format!("{source}: the certificate does not parse: {e}")))?
        .1
        .public_key()
        .raw
        .to_vec();
    if signing.public_key().is_some_and(|k| k.as_ref() != cert_spki.as_slice()) {
        return Err(Error::Config(format!("{source}: the private key does not belong to the certificate")));
    }
    Ok(Arc::new(CertifiedKey::new(chain, signing)))
}

fn pem_chain(pem: &[u8], source: &str) -> Result<Vec<CertificateDer<'static>>> {
    let chain: Vec<CertificateDer<'static>> =
        rustls_pemfile::certs(&mut &pem[..]).collect::<std::result::Result<_, _>>().map_err(|e| Error::Config(format!("{source}: {e}")))?;
    if chain.is_empty() {
        return Err(Error::Config(format!("{source}: no PEM certificate in it")));
    }
    Ok(chain)
}

/// A PEM private key: an encrypted PKCS#8 one is decrypted with `password`.
pub(crate) fn pem_key(pem: &[u8], password: Option<&str>, source: &str) -> Result<PrivateKeyDer<'static>> {
    let text = std::str::from_utf8(pem).unwrap_or_default();
    if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
        let password = password.ok_or_else(|| Error::Config(format!("{source}: the key is encrypted and no key password is set")))?;
        let (label, doc) = pkcs8::Document::from_pem(text).map_err(|e| Error::Config(format!("{source}: {e}")))?;
        // The first PEM block is the one read: a file with something else before the key is
        // refused, not misread.
        if label != "ENCRYPTED PRIVATE KEY" {
            return Err(Error::Config(format!("{source}: the first PEM block is {label:?}, not the encrypted key; put the key alone in its file")));
        }
        let info = pkcs8::EncryptedPrivateKeyInfoRef::try_from(doc.as_bytes()).map_err(|e| Error::Config(format!("{source}: {e}")))?;
        let plain = info.decrypt(password).map_err(|e| Error::Config(format!("{source}: cannot decrypt the key (wrong password?): {e}")))?;
        return Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(plain.as_bytes().to_vec())));
    }
    if text.contains("-----BEGIN RSA PRIVATE KEY-----") && text.contains("Proc-Type: 4,ENCRYPTED") {
        return Err(Error::Config(format!(
            "{source}: an OpenSSL-encrypted PKCS#1 key, which Kafka does not read either: convert it with `openssl pkcs8 -topk8 -v2 aes-256-cbc`"
        )));
    }
    rustls_pemfile::private_key(&mut &pem[..])
        .map_err(|e| Error::Config(format!("{source}: {e}")))?
        .ok_or_else(|| Error::Config(format!("{source}: no private key in it")))
}
