//! Connections against the real broker: PLAINTEXT, TLS, SASL PLAIN, SCRAM, SCRAM over TLS.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::Broker;
use kwire::ApiKey;
use kwire_client::{Client, ClientConfig, ConnectOptions, Connection, Error, Sasl, TlsConfig};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls;

const T: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plaintext_negotiates_and_reads_metadata() {
    let Some(b) = Broker::from_env("plaintext_negotiates_and_reads_metadata") else { return };
    let client = tokio::time::timeout(T, b.client()).await.expect("in time");
    let m = client.metadata();
    assert_eq!(m.brokers.len(), 1, "{m:?}");
    assert!(m.cluster_id.is_some());
    let conn = client.connection(b.var("PLAINTEXT")).await.unwrap();
    let produce = conn.version(ApiKey::Produce).unwrap();
    assert!((3..=13).contains(&produce), "Produce v{produce}");
    assert!(produce >= 13 || !b.version().starts_with('4'), "Kafka 4.4 takes Produce v13 (topic ids): v{produce}");
    assert!(conn.version(ApiKey::Metadata).unwrap() >= 4);
    println!("Kafka {}: Produce v{produce}, Metadata v{}", b.version(), conn.version(ApiKey::Metadata).unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_the_ca_connects() {
    let Some(b) = Broker::from_env("tls_with_the_ca_connects") else { return };
    let config = ClientConfig::new(b.var("SSL")).tls(TlsConfig::ca_file(b.var("SSL_CA")));
    let client = tokio::time::timeout(T, Client::connect(config)).await.expect("in time").expect("TLS connects");
    assert_eq!(client.metadata().brokers.len(), 1);
    // The broker advertises its SSL listener on that listener: metadata routes over TLS too.
    let addr = client.metadata().brokers.values().next().unwrap().addr();
    assert_eq!(addr, b.var("SSL"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_a_wrong_ca_or_name_is_refused_clearly() {
    let Some(b) = Broker::from_env("tls_with_a_wrong_ca_or_name_is_refused_clearly") else { return };
    let dir = std::env::temp_dir().join(common::unique("kw-wrong-ca"));
    std::fs::create_dir_all(&dir).unwrap();
    let ca = dir.join("ca.pem");
    let ok = std::process::Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=not-the-ca"])
        .arg("-keyout")
        .arg(dir.join("ca.key"))
        .arg("-out")
        .arg(&ca)
        .output()
        .expect("openssl runs");
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let options = ConnectOptions { tls: Some(TlsConfig::ca_file(&ca)), ..Default::default() };
    let err = Connection::connect(b.var("SSL"), &options).await.expect_err("a wrong CA must be refused");
    println!("wrong CA: {err}");
    assert!(matches!(&err, Error::Tls { message, .. } if message.contains("UnknownIssuer")), "{err:?}");
    assert!(!err.is_retriable());

    // The right CA, but a name the certificate does not carry: hostname verification.
    let options = ConnectOptions { tls: Some(TlsConfig::ca_file(b.var("SSL_CA")).server_name("kafka.example.com")), ..Default::default() };
    let err = Connection::connect(b.var("SSL"), &options).await.expect_err("a wrong name must be refused");
    println!("wrong name: {err}");
    assert!(matches!(&err, Error::Tls { message, .. } if message.contains("not valid for name")), "{err:?}");
    // And "localhost", which the certificate does carry, as SNI and verified name.
    let options = ConnectOptions { tls: Some(TlsConfig::ca_file(b.var("SSL_CA")).server_name("localhost")), ..Default::default() };
    Connection::connect(b.var("SSL"), &options).await.expect("localhost is in the SANs");
    let _ = std::fs::remove_dir_all(&dir);
}

async fn sasl_connect(addr: &str, sasl: Sasl, tls: Option<TlsConfig>) -> Result<Connection, Error> {
    let options = ConnectOptions { sasl: Some(sasl), tls, ..Default::default() };
    tokio::time::timeout(T, Connection::connect(addr, &options)).await.expect("in time")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sasl_plain_authenticates_and_refuses_a_wrong_password() {
    let Some(b) = Broker::from_env("sasl_plain_authenticates_and_refuses_a_wrong_password") else { return };
    let addr = b.var("SASL_PLAINTEXT");
    let conn = sasl_connect(addr, Sasl::plain("admin", "admin-secret"), None).await.expect("PLAIN admin");
    let r = conn.request(kwire::messages::MetadataRequest::default()).await.expect("Metadata after auth");
    assert!(matches!(r, kwire::ResponseKind::Metadata(_)));
    let err = sasl_connect(addr, Sasl::plain("admin", "wrong"), None).await.expect_err("wrong password");
    println!("PLAIN wrong password: {err}");
    assert!(matches!(&err, Error::Authentication { mechanism, message } if mechanism == "PLAIN" && message.contains("SASL_AUTHENTICATION_FAILED")), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scram_sha256_and_sha512_authenticate_and_refuse_a_wrong_password() {
    let Some(b) = Broker::from_env("scram_sha256_and_sha512_authenticate_and_refuse_a_wrong_password") else { return };
    let addr = b.var("SASL_PLAINTEXT");
    for (ok, bad) in [
        (Sasl::scram_sha256("alice", "alice-secret"), Sasl::scram_sha256("alice", "not-her-secret")),
        (Sasl::scram_sha512("alice", "alice-secret"), Sasl::scram_sha512("alice", "not-her-secret")),
    ] {
        let name = ok.mechanism_name();
        let conn = sasl_connect(addr, ok, None).await.unwrap_or_else(|e| panic!("{name}: {e}"));
        conn.request(kwire::messages::MetadataRequest::default()).await.expect("Metadata after auth");
        let err = sasl_connect(addr, bad, None).await.expect_err("wrong password");
        println!("{name} wrong password: {err}");
        assert!(matches!(&err, Error::Authentication { mechanism, message } if mechanism == name && message.contains("SASL_AUTHENTICATION_FAILED")), "{err:?}");
    }
    // An unknown user is refused the same way.
    let err = sasl_connect(addr, Sasl::scram_sha256("nobody", "x"), None).await.expect_err("unknown user");
    assert!(matches!(err, Error::Authentication { .. }), "{err:?}");
}

/// A TLS-terminating proxy in front of the SASL_PLAINTEXT listener, with the broker's own
/// certificate (the broker script has no SASL_SSL listener): the client runs SCRAM inside TLS.
async fn tls_proxy(b: &Broker) -> String {
    tls_proxy_to(b, b.var("SASL_PLAINTEXT"), false).await.0
}

/// The SNI names the proxy's clients sent, one per connection.
type Snis = Arc<std::sync::Mutex<Vec<Option<String>>>>;

/// The same in front of any listener; with `client_auth`, clients must present a certificate
/// signed by the test CA.
async fn tls_proxy_to(b: &Broker, upstream: &str, client_auth: bool) -> (String, Snis) {
    let dir = b.certs_dir();
    let chain: Vec<_> = rustls_pemfile::certs(&mut &std::fs::read(dir.join("broker.pem")).unwrap()[..]).collect::<Result<_, _>>().unwrap();
    let key = rustls_pemfile::private_key(&mut &std::fs::read(dir.join("broker.key")).unwrap()[..]).unwrap().unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions().unwrap();
    let builder = if client_auth {
        let mut roots = rustls::RootCertStore::empty();
        for c in rustls_pemfile::certs(&mut &std::fs::read(dir.join("ca.pem")).unwrap()[..]) {
            roots.add(c.unwrap()).unwrap();
        }
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider).build().unwrap();
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    let config = builder.with_single_cert(chain, key).unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let upstream = upstream.to_owned();
    let snis = Snis::default();
    let seen = snis.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, upstream, seen) = (acceptor.clone(), upstream.clone(), seen.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                seen.lock().unwrap().push(tls.get_ref().1.server_name().map(str::to_owned));
                let Ok(mut up) = TcpStream::connect(&upstream).await else { return };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut up).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    (addr, snis)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scram_over_tls() {
    let Some(b) = Broker::from_env("scram_over_tls") else { return };
    let proxy = tls_proxy(&b).await;
    let tls = || Some(TlsConfig::ca_file(b.var("SSL_CA")));
    let conn = sasl_connect(&proxy, Sasl::scram_sha512("alice", "alice-secret"), tls()).await.expect("SCRAM-SHA-512 over TLS");
    conn.request(kwire::messages::MetadataRequest::default()).await.expect("Metadata over TLS after SCRAM");
    let err = sasl_connect(&proxy, Sasl::scram_sha256("alice", "wrong"), tls()).await.expect_err("wrong password over TLS");
    assert!(matches!(err, Error::Authentication { .. }), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_requests_share_one_connection() {
    let Some(b) = Broker::from_env("pipelined_requests_share_one_connection") else { return };
    let conn = Connection::connect(b.var("PLAINTEXT"), &ConnectOptions::default()).await.unwrap();
    let calls = (0..50).map(|_| {
        let conn = conn.clone();
        tokio::spawn(async move { conn.request(kwire::messages::MetadataRequest::default()).await })
    });
    for c in calls {
        assert!(matches!(c.await.unwrap().unwrap(), kwire::ResponseKind::Metadata(_)));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_certificates() {
    let Some(b) = Broker::from_env("client_certificates") else { return };
    // A client certificate signed by the test CA, made at test time.
    let certs = b.certs_dir();
    let dir = std::env::temp_dir().join(common::unique("kw-client-cert"));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |args: &[&str]| {
        let out = std::process::Command::new("openssl").args(args).current_dir(&dir).output().expect("openssl runs");
        assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    run(&["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=kwire-client", "-keyout", "client.key", "-out", "client.csr"]);
    let (ca, ca_key) = (certs.join("ca.pem"), certs.join("ca.key"));
    // v3 with extensions: webpki takes no v1 certificates.
    std::fs::write(dir.join("ext.cnf"), "extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n").unwrap();
    run(&[
        "x509",
        "-req",
        "-days",
        "1",
        "-in",
        "client.csr",
        "-CA",
        ca.to_str().unwrap(),
        "-CAkey",
        ca_key.to_str().unwrap(),
        "-CAcreateserial",
        "-CAserial",
        "client.srl",
        "-extfile",
        "ext.cnf",
        "-out",
        "client.pem",
    ]);
    let (chain, key) = (std::fs::read(dir.join("client.pem")).unwrap(), std::fs::read(dir.join("client.key")).unwrap());

    let (proxy, snis) = tls_proxy_to(&b, b.var("PLAINTEXT"), true).await;
    let with_cert = TlsConfig::ca_file(b.var("SSL_CA")).client_cert(chain, key);
    let conn = Connection::connect(&proxy, &ConnectOptions { tls: Some(with_cert), ..Default::default() }).await.expect("mutual TLS");
    conn.request(kwire::messages::MetadataRequest::default()).await.expect("Metadata over mutual TLS");
    // SNI: none for an IP address (RFC 6066), the configured name otherwise.
    let named = TlsConfig::ca_file(b.var("SSL_CA"))
        .client_cert(std::fs::read(dir.join("client.pem")).unwrap(), std::fs::read(dir.join("client.key")).unwrap())
        .server_name("localhost");
    Connection::connect(&proxy, &ConnectOptions { tls: Some(named), ..Default::default() }).await.expect("mutual TLS as localhost");
    assert_eq!(*snis.lock().unwrap(), vec![None, Some("localhost".to_owned())]);
    let without = ConnectOptions { tls: Some(TlsConfig::ca_file(b.var("SSL_CA"))), ..Default::default() };
    let err = Connection::connect(&proxy, &without).await.expect_err("no client certificate");
    println!("no client certificate: {err}");
    assert!(matches!(&err, Error::Tls { message, .. } if message.contains("CertificateRequired")), "{err:?}");
    assert!(!err.is_retriable());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Client key material as Kafka users hold it, presented to the broker's SSL listener (which
/// requests a certificate and makes its subject the principal): an X.509 v1 certificate
/// (rustls's verifier refuses those; the broker takes it), a PKCS#12 keystore from OpenSSL and
/// one from keytool, a keytool truststore, an encrypted PKCS#8 key. That the broker saw the
/// certificate is checked through its authorizer: the certificate's principal may not create
/// a topic until an ACL lets it. Broken material fails before connecting, naming the file and
/// what is wrong.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_material_as_kafka_users_hold_it() {
    use kwire_client::{AclBinding, AclOperation, AclPermission, Admin, ClientIdentity, NewTopic, ResourceType, Roots};

    let Some(b) = Broker::from_env("key_material_as_kafka_users_hold_it") else { return };
    let certs = b.certs_dir();
    let dir = std::env::temp_dir().join(common::unique("kw-key-material"));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |tool: &str, args: &[&str]| {
        let out = std::process::Command::new(tool).args(args).current_dir(&dir).output().unwrap_or_else(|e| panic!("{tool} runs: {e}"));
        assert!(out.status.success(), "{tool} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    let cn = common::unique("kw-v1");
    let (ca, ca_key) = (certs.join("ca.pem"), certs.join("ca.key"));
    run("openssl", &["req", "-newkey", "rsa:2048", "-nodes", "-subj", &format!("/CN={cn}"), "-keyout", "client.key", "-out", "client.csr"]);
    // No -extfile: OpenSSL writes an X.509 v1 certificate.
    run(
        "openssl",
        &[
            "x509",
            "-req",
            "-days",
            "1",
            "-in",
            "client.csr",
            "-CA",
            ca.to_str().unwrap(),
            "-CAkey",
            ca_key.to_str().unwrap(),
            "-CAcreateserial",
            "-CAserial",
            "client.srl",
            "-out",
            "client.pem",
        ],
    );
    let text = std::process::Command::new("openssl").args(["x509", "-in", "client.pem", "-noout", "-text"]).current_dir(&dir).output().unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("Version: 1 (0x0)"), "a v1 certificate");
    run("openssl", &["pkcs8", "-topk8", "-v2", "aes-256-cbc", "-in", "client.key", "-out", "client-enc.key", "-passout", "pass:keypw"]);
    run(
        "openssl",
        &[
            "pkcs12",
            "-export",
            "-in",
            "client.pem",
            "-inkey",
            "client.key",
            "-certfile",
            ca.to_str().unwrap(),
            "-name",
            "client",
            "-passout",
            "pass:storepw",
            "-out",
            "openssl.p12",
        ],
    );
    run(
        "keytool",
        &[
            "-importkeystore",
            "-srckeystore",
            "openssl.p12",
            "-srcstoretype",
            "PKCS12",
            "-srcstorepass",
            "storepw",
            "-destkeystore",
            "keytool.p12",
            "-deststoretype",
            "PKCS12",
            "-deststorepass",
            "storepw2",
            "-noprompt",
        ],
    );
    run(
        "keytool",
        &[
            "-importcert",
            "-noprompt",
            "-alias",
            "ca",
            "-file",
            ca.to_str().unwrap(),
            "-keystore",
            "truststore.p12",
            "-storetype",
            "PKCS12",
            "-storepass",
            "trustpw",
        ],
    );
    run("openssl", &["pkcs12", "-export", "-nokeys", "-in", ca.to_str().unwrap(), "-passout", "pass:x", "-out", "untrusted.p12"]);

    let truststore = Roots::Pkcs12File { path: dir.join("truststore.p12"), password: "trustpw".into() };
    let identities = [
        ("v1 PEM", TlsConfig::ca_file(&ca).client_cert(std::fs::read(dir.join("client.pem")).unwrap(), std::fs::read(dir.join("client.key")).unwrap())),
        (
            "encrypted PKCS#8",
            TlsConfig::ca_file(&ca).identity(ClientIdentity::PemFiles {
                chain: dir.join("client.pem"),
                key: dir.join("client-enc.key"),
                key_password: Some("keypw".into()),
            }),
        ),
        (
            "OpenSSL PKCS#12",
            TlsConfig::new(truststore.clone()).identity(ClientIdentity::Pkcs12File { path: dir.join("openssl.p12"), password: "storepw".into() }),
        ),
        (
            "keytool PKCS#12",
            TlsConfig::new(truststore.clone()).identity(ClientIdentity::Pkcs12File { path: dir.join("keytool.p12"), password: "storepw2".into() }),
        ),
    ];
    let admin = Admin::new(b.client().await);
    for (what, tls) in identities {
        let client = Client::connect(ClientConfig::new(b.var("SSL")).tls(tls)).await.unwrap_or_else(|e| panic!("{what}: {e}"));
        let err = Admin::new(client).create_topic(NewTopic::new(common::unique("kw-denied"), 1)).await.expect_err(what);
        assert!(matches!(err, Error::Authorization { .. }) || err.code().and_then(|c| c.name()) == Some("TOPIC_AUTHORIZATION_FAILED"), "{what}: {err:?}");
    }
    // Let the certificate's principal create topics: it can.
    let acl = AclBinding::new(ResourceType::Cluster, "kafka-cluster", &format!("User:CN={cn}"), AclOperation::Create, AclPermission::Allow);
    admin.create_acls(std::slice::from_ref(&acl)).await.unwrap().remove(0).unwrap();
    let tls = TlsConfig::new(truststore.clone()).identity(ClientIdentity::Pkcs12File { path: dir.join("keytool.p12"), password: "storepw2".into() });
    let as_cert = Admin::new(Client::connect(ClientConfig::new(b.var("SSL")).tls(tls)).await.unwrap());
    common::eventually("the ACL applied", || async { as_cert.create_topic(NewTopic::new(common::unique("kw-allowed"), 1)).await.is_ok() }).await;
    admin.delete_acls(&[kwire_client::AclBindingFilter::exactly(&acl)]).await.unwrap().remove(0).unwrap();

    // Broken material: refused before connecting, with the file and the cause.
    let refused = |tls: TlsConfig| {
        let b = b.var("SSL").to_owned();
        async move { Client::connect(ClientConfig::new(&b).tls(tls)).await.err().map(|e| e.to_string()).unwrap_or_default() }
    };
    let msg = refused(TlsConfig::new(truststore.clone()).identity(ClientIdentity::Pkcs12File { path: dir.join("keytool.p12"), password: "nope".into() })).await;
    assert!(msg.contains("keytool.p12") && msg.contains("wrong password"), "{msg}");
    let msg = refused(TlsConfig::new(Roots::Pkcs12File { path: dir.join("untrusted.p12"), password: "x".into() })).await;
    assert!(msg.contains("untrusted.p12") && msg.contains("no trusted certificate"), "{msg}");
    let msg = refused(TlsConfig::ca_file(&ca).identity(ClientIdentity::PemFiles {
        chain: dir.join("client.pem"),
        key: dir.join("client-enc.key"),
        key_password: None,
    }))
    .await;
    assert!(msg.contains("client-enc.key") && msg.contains("encrypted"), "{msg}");
    let msg = refused(TlsConfig::ca_file(&ca).identity(ClientIdentity::PemFiles {
        chain: dir.join("client.pem"),
        key: dir.join("client-enc.key"),
        key_password: Some("wrong".into()),
    }))
    .await;
    assert!(msg.contains("client-enc.key") && msg.contains("wrong password"), "{msg}");
    let msg =
        refused(TlsConfig::ca_file(&ca).client_cert(std::fs::read(dir.join("client.pem")).unwrap(), std::fs::read(certs.join("broker.key")).unwrap())).await;
    assert!(msg.contains("does not belong to the certificate"), "{msg}");
    let msg = refused(TlsConfig::ca_file(dir.join("missing.pem"))).await;
    assert!(msg.contains("missing.pem"), "{msg}");
    let _ = std::fs::remove_dir_all(&dir);
}
