//! TLS listeners (Kafka's SSL and SASL_SSL): a certificate chain and private key in PEM, served
//! with rustls on ring, the workspace's TLS stack. By default no client certificate is asked for
//! (`ssl.client.auth=none`, Kafka's default) and an SSL connection's principal is
//! `User:ANONYMOUS`; with [`TlsIdentity::require_client_certificates`] every client must present
//! one its CA signed (`ssl.client.auth=required`), and an SSL connection's principal is the
//! certificate's subject, as Kafka's default principal builder names it.

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
    /// The CAs whose client certificates are required (`None`: none asked for).
    client_ca_pem: Option<Vec<u8>>,
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
        TlsIdentity { chain_pem: chain_pem.into(), key_pem: key_pem.into(), client_ca_pem: None }
    }

    /// Requires every client to present a certificate that a CA of `ca_pem` (PEM `CERTIFICATE`
    /// blocks) signed, refusing the handshake otherwise (`ssl.client.auth=required` with that
    /// truststore). An SSL connection's principal is then the certificate's subject as Java's
    /// `X500Principal.getName()` writes it (RFC 2253, Kafka's default principal builder):
    /// `User:CN=alice,OU=eng,O=acme`; on SASL_SSL the SASL identity still names it.
    pub fn require_client_certificates(mut self, ca_pem: impl Into<Vec<u8>>) -> TlsIdentity {
        self.client_ca_pem = Some(ca_pem.into());
        self
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
        let builder =
            rustls::ServerConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions().map_err(|e| invalid(e.to_string()))?;
        let builder = match &self.client_ca_pem {
            None => builder.with_no_client_auth(),
            Some(pem) => {
                let mut roots = rustls::RootCertStore::empty();
                for cert in rustls_pemfile::certs(&mut &pem[..]) {
                    let cert = cert.map_err(|e| invalid(format!("the client certificates' CA: {e}")))?;
                    roots.add(cert).map_err(|e| invalid(format!("the client certificates' CA: {e}")))?;
                }
                if roots.is_empty() {
                    return Err(invalid("the client certificates' CA has no PEM CERTIFICATE".into()));
                }
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                    .build()
                    .map_err(|e| invalid(format!("the client certificates' CA: {e}")))?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let config = builder.with_single_cert(chain, key).map_err(|e| invalid(format!("the TLS certificate and key: {e}")))?;
        Ok(TlsAcceptor::from(Arc::new(config)))
    }
}

/// The principal a client certificate names (`User:` and its subject in RFC 2253 form, as
/// Kafka's default principal builder with `ssl.principal.mapping.rules=DEFAULT`), or `None`
/// without a certificate the fake can read.
pub(crate) fn principal(certificates: Option<&[rustls::pki_types::CertificateDer<'_>]>) -> Option<String> {
    let leaf = certificates?.first()?;
    let (_, cert) = x509_parser::parse_x509_certificate(leaf).ok()?;
    Some(format!("User:{}", rfc2253(cert.subject())))
}

/// A name as Java's `X500Principal.getName()` writes it: the last RDN first, RDNs joined by
/// ',', a multi-valued RDN's attributes by '+'; the attributes RFC 2253 has keywords for by
/// keyword and string value (escaped), any other by its OID and the hex of its DER encoding.
fn rfc2253(name: &x509_parser::x509::X509Name<'_>) -> String {
    use x509_parser::der_parser::asn1_rs::ToDer;
    let rdns: Vec<String> = name
        .iter()
        .map(|rdn| {
            let attributes: Vec<String> = rdn
                .iter()
                .map(|atv| {
                    let oid = atv.attr_type().to_id_string();
                    let keyword = match oid.as_str() {
                        "2.5.4.3" => Some("CN"),
                        "2.5.4.6" => Some("C"),
                        "2.5.4.7" => Some("L"),
                        "2.5.4.8" => Some("ST"),
                        "2.5.4.9" => Some("STREET"),
                        "2.5.4.10" => Some("O"),
                        "2.5.4.11" => Some("OU"),
                        "0.9.2342.19200300.100.1.1" => Some("UID"),
                        "0.9.2342.19200300.100.1.25" => Some("DC"),
                        _ => None,
                    };
                    match (keyword, atv.as_str()) {
                        (Some(keyword), Ok(value)) => format!("{keyword}={}", escape(value)),
                        _ => {
                            let der = atv.attr_value().to_der_vec().unwrap_or_default();
                            let hex: String = der.iter().map(|b| format!("{b:02x}")).collect();
                            format!("{}=#{hex}", keyword.map_or(oid.clone(), str::to_owned))
                        }
                    }
                })
                .collect();
            attributes.join("+")
        })
        .collect();
    rdns.into_iter().rev().collect::<Vec<_>>().join(",")
}

/// RFC 2253's escaping of a string value: `,+"\<>;` always, `#` and space at the start, space
/// at the end.
fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let last = value.chars().count().saturating_sub(1);
    for (i, c) in value.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';') || (i == 0 && matches!(c, '#' | ' ')) || (i == last && c == ' ');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn values_are_escaped_as_rfc_2253_says() {
        assert_eq!(escape("alice"), "alice");
        assert_eq!(escape("Smith, John"), "Smith\\, John");
        assert_eq!(escape("a+b;c<d>e\"f\\"), "a\\+b\\;c\\<d\\>e\\\"f\\\\");
        assert_eq!(escape("#x "), "\\#x\\ ");
        assert_eq!(escape(" x"), "\\ x");
    }
}
