//! kwire-fake's TLS listeners (SSL, SASL_SSL) with kwire-client's TLS, on a CA that openssl
//! makes here for the test: records produced through them, Metadata giving the TLS addresses,
//! clients that do not trust the CA or do not speak TLS refused, SASL over TLS; and the binary's
//! `--tls-cert`/`--tls-key`.

#[path = "clients/harness.rs"]
mod harness;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use harness::{missing_tool, Broker};
use kwire::ApiKey;
use kwire_client::{Admin, Client, ClientConfig, Error, NewTopic, OAuthBearerToken, Producer, ProducerConfig, ProducerRecord, Sasl, TlsConfig};
use kwire_fake::{Cluster, ClusterConfig, Security, TlsIdentity};

/// A CA (`ca.pem`) and a broker certificate it signed for 127.0.0.1 and localhost
/// (`broker.pem`, `broker.key`), client certificates it signed for alice (`alice.pem`,
/// `alice.key`: `/O=acme, Inc./OU=eng/CN=alice`) and mallory (`mallory.pem`, `mallory.key`),
/// and another CA (`stranger.pem`) and a client certificate it signed (`outsider.pem`,
/// `outsider.key`), in a new directory; `None` (skipped) without openssl.
fn certificates(test: &str) -> Option<PathBuf> {
    if missing_tool(test, "openssl", &["version"]) {
        return None;
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("tls-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl").args(args).current_dir(&dir).output().expect("openssl runs");
        assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
    openssl(&[&["req", "-x509"][..], &ec, &["-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=kwire-fake test CA"]].concat());
    openssl(&[&["req"][..], &ec, &["-keyout", "broker.key", "-out", "broker.csr", "-subj", "/CN=localhost"]].concat());
    openssl(&[&["req", "-x509"][..], &ec, &["-keyout", "stranger.key", "-out", "stranger.pem", "-days", "2", "-subj", "/CN=another CA"]].concat());
    std::fs::write(dir.join("ext.cnf"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n").unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "broker.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "broker.pem",
        "-days",
        "2",
        "-extfile",
        "ext.cnf",
    ]);
    // An extension makes them X.509 v3, which webpki requires.
    std::fs::write(dir.join("client.cnf"), "extendedKeyUsage=clientAuth\n").unwrap();
    for (who, subject, ca) in [("alice", "/O=acme, Inc./OU=eng/CN=alice", "ca"), ("mallory", "/CN=mallory", "ca"), ("outsider", "/CN=outsider", "stranger")] {
        openssl(&[&["req"][..], &ec, &["-keyout", &format!("{who}.key"), "-out", &format!("{who}.csr"), "-subj", subject]].concat());
        let (csr, pem, ca_pem, ca_key) = (format!("{who}.csr"), format!("{who}.pem"), format!("{ca}.pem"), format!("{ca}.key"));
        openssl(&["x509", "-req", "-in", &csr, "-CA", &ca_pem, "-CAkey", &ca_key, "-CAcreateserial", "-out", &pem, "-days", "2", "-extfile", "client.cnf"]);
    }
    Some(dir)
}

/// The subject of the certificate in `pem` as Java names it (`X500Principal.getName()`, what
/// Kafka's default principal builder makes an SSL principal of); `None` without Java.
fn java_subject(test: &str, pem: &Path) -> Option<String> {
    if missing_tool(test, "java", &["-version"]) {
        return None;
    }
    let dir = pem.parent().expect("a directory");
    let source = dir.join("Subject.java");
    std::fs::write(
        &source,
        "public class Subject { public static void main(String[] a) throws Exception { \
         try (var in = new java.io.FileInputStream(a[0])) { \
         var c = (java.security.cert.X509Certificate) java.security.cert.CertificateFactory.getInstance(\"X.509\").generateCertificate(in); \
         System.out.println(c.getSubjectX500Principal().getName()); } } }",
    )
    .unwrap();
    let out = Command::new("java").arg(&source).arg(pem).output().expect("java runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    Some(String::from_utf8(out.stdout).unwrap().trim().to_owned())
}

fn identity(dir: &Path) -> TlsIdentity {
    TlsIdentity::from_files(&dir.join("broker.pem"), &dir.join("broker.key")).expect("the PEM files")
}

fn producer(client: Client) -> Producer {
    Producer::new(client, ProducerConfig { enable_metrics_push: false, ..Default::default() }).expect("a producer")
}

fn any_port() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ssl_listener_serves_clients_that_trust_its_ca() {
    let Some(dir) = certificates("ssl_listener") else { return };
    let cluster = Cluster::start(ClusterConfig::default().brokers(2).seed(1).tls(identity(&dir)));
    cluster.create_topic("secure", 2, 2).unwrap();
    let addrs = cluster.listen_with(any_port(), Security::Ssl).await.expect("SSL listeners");
    let bootstrap = addrs[0].to_string();

    let config = ClientConfig::new(&bootstrap).tls(TlsConfig::ca_file(dir.join("ca.pem"))).request_timeout(Duration::from_secs(10));
    let producer = producer(Client::connect(config).await.expect("a TLS connection"));
    for p in 0..2 {
        producer.send(ProducerRecord::new("secure", format!("over tls {p}")).partition(p)).await.unwrap().await.expect("produced");
    }
    for p in 0..2 {
        let values: Vec<_> = cluster.records("secure", p).unwrap().into_iter().map(|r| r.record.value.unwrap()).collect();
        assert_eq!(values, [format!("over tls {p}")]);
    }
    // Both brokers took a Produce: the Metadata answer gave the SSL listeners' addresses.
    let produced_on: std::collections::BTreeSet<_> = cluster.journal().iter().filter(|e| e.api == ApiKey::Produce).map(|e| e.broker).collect();
    assert_eq!(produced_on.len(), 2, "{produced_on:?}");

    // A client that does not trust the CA stops at the handshake; one without TLS gets nothing.
    let before = cluster.journal().len();
    let untrusting = ClientConfig::new(&bootstrap).tls(TlsConfig::ca_file(dir.join("stranger.pem"))).request_timeout(Duration::from_secs(5));
    match Client::connect(untrusting).await {
        Err(Error::Tls { message, .. }) => assert!(message.contains("certificate") || message.contains("UnknownIssuer"), "{message}"),
        other => panic!("{:?}", other.map(|_| ())),
    }
    let plain = ClientConfig::new(&bootstrap).request_timeout(Duration::from_secs(5));
    assert!(Client::connect(plain).await.is_err(), "a plaintext client on the SSL port");
    assert_eq!(cluster.journal().len(), before, "no request got past TLS");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sasl_ssl_authenticates_inside_tls() {
    let Some(dir) = certificates("sasl_ssl") else { return };
    let cluster = Cluster::start(ClusterConfig::default().seed(2).tls(identity(&dir)).sasl_plain("bob", "hunter2"));
    cluster.create_topic("t", 1, 1).unwrap();
    // With SASL users and a certificate, listen() starts SASL_SSL listeners.
    let addrs = cluster.listen(any_port()).await.unwrap();
    let config = |password: &str| {
        ClientConfig::new(&addrs[0].to_string())
            .tls(TlsConfig::ca_file(dir.join("ca.pem")))
            .sasl(Sasl::plain("bob", password))
            .request_timeout(Duration::from_secs(10))
    };
    let producer = producer(Client::connect(config("hunter2")).await.expect("authenticated over TLS"));
    producer.send(ProducerRecord::new("t", "x")).await.unwrap().await.expect("produced");
    assert_eq!(cluster.records("t", 0).unwrap().len(), 1);
    match Client::connect(config("wrong")).await {
        Err(Error::Authentication { message, .. }) => assert!(message.contains("SASL_AUTHENTICATION_FAILED"), "{message}"),
        other => panic!("{:?}", other.map(|_| ())),
    }
}

/// `ssl.client.auth=required`: a client without a certificate, or with one another CA signed,
/// is refused at the handshake; one with a certificate is the principal its subject names,
/// exactly as Java writes it, and the authorizer judges that principal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_certificates_are_required_and_name_the_principal() {
    let test = "client_certificates";
    let Some(dir) = certificates(test) else { return };
    let alice = java_subject(test, &dir.join("alice.pem")).unwrap_or_else(|| "CN=alice,OU=eng,O=acme\\, Inc.".into());
    assert_eq!(alice, "CN=alice,OU=eng,O=acme\\, Inc.");
    let ca = std::fs::read(dir.join("ca.pem")).unwrap();
    let cluster = Cluster::start(ClusterConfig::default().tls(identity(&dir).require_client_certificates(ca)).acl_authorizer(&[format!("User:{alice}")]));
    let addrs = cluster.listen_with(any_port(), Security::Ssl).await.expect("SSL listeners");
    let bootstrap = addrs[0].to_string();
    let as_who = |who: &str| {
        let tls = TlsConfig::ca_file(dir.join("ca.pem"));
        let tls = if who.is_empty() {
            tls
        } else {
            tls.client_cert(std::fs::read(dir.join(format!("{who}.pem"))).unwrap(), std::fs::read(dir.join(format!("{who}.key"))).unwrap())
        };
        ClientConfig::new(&bootstrap).tls(tls).client_id(format!("as-{who}")).request_timeout(Duration::from_secs(5))
    };

    // alice, a super user by her certificate's subject, creates a topic and writes to it.
    let client = Client::connect(as_who("alice")).await.expect("alice's certificate");
    Admin::new(client.clone()).create_topic(NewTopic::new("certified", 1)).await.expect("created by alice");
    producer(client).send(ProducerRecord::new("certified", "from alice")).await.unwrap().await.expect("produced");

    // mallory's certificate is good, but his principal has no ACL: the topic is hidden from him
    // and he may not create one.
    let client = Client::connect(as_who("mallory")).await.expect("mallory's certificate");
    assert!(client.topic("certified").await.is_err(), "mallory sees alice's topic");
    let refused = Admin::new(client).create_topic(NewTopic::new("not-yours", 1)).await.unwrap_err();
    assert!(refused.to_string().contains("AUTHORIZATION_FAILED"), "{refused}");

    // No certificate, or one from another CA: refused before any request.
    let before = cluster.journal().len();
    for who in ["", "outsider"] {
        assert!(Client::connect(as_who(who)).await.is_err(), "{who:?} got through");
    }
    assert_eq!(cluster.journal().len(), before, "no request got past TLS");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_listeners_need_a_certificate_that_loads() {
    let cluster = Cluster::start(ClusterConfig::default());
    let e = cluster.listen_with(any_port(), Security::SaslSsl).await.unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    let cluster = Cluster::start(ClusterConfig::default().tls(TlsIdentity::from_pem("not pem", "nor this")));
    let e = cluster.listen_with(any_port(), Security::Ssl).await.unwrap_err();
    assert!(e.to_string().contains("no PEM CERTIFICATE"), "{e}");
    // The key never shows in a debug print.
    assert!(!format!("{:?}", TlsIdentity::from_pem("chain", "SECRET-KEY")).contains("SECRET"));
}

/// The binary with `--tls-cert`/`--tls-key` and `--sasl-oauthbearer`: SASL_SSL listeners that
/// take unsecured OAUTHBEARER tokens, over real TCP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_serves_sasl_ssl_with_oauthbearer() {
    let Some(dir) = certificates("binary_tls") else { return };
    let (cert, key) = (dir.join("broker.pem"), dir.join("broker.key"));
    let broker = Broker::start(&["--tls-cert", cert.to_str().unwrap(), "--tls-key", key.to_str().unwrap(), "--sasl-oauthbearer"]);
    let sasl = Sasl::oauthbearer(|| async { Ok(OAuthBearerToken::unsecured("carol", Duration::from_secs(3600))) });
    let config =
        ClientConfig::new(&broker.addr).tls(TlsConfig::ca_file(dir.join("ca.pem"))).sasl(sasl).client_id("kwire-tls").request_timeout(Duration::from_secs(10));
    let client = Client::connect(config).await.unwrap_or_else(|e| panic!("{e}\n{}", broker.log()));
    for created in Admin::new(client.clone()).create_topics(&[NewTopic::new("tls-topic", 1)]).await.expect("CreateTopics") {
        created.expect("created");
    }
    let producer = producer(client);
    let written = producer.send(ProducerRecord::new("tls-topic", "hello")).await.unwrap().await.expect("produced");
    assert_eq!(written.offset, 0);
    let versions = broker.versions_used("kwire-tls");
    for api in ["SaslHandshake", "SaslAuthenticate", "CreateTopics", "Metadata", "Produce"] {
        assert!(versions.contains_key(api), "{api}: {versions:?}");
    }
    assert!(!broker.log().contains("closing"), "{}", broker.log());
}
