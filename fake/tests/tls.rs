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
/// (`broker.pem`, `broker.key`), and another CA (`stranger.pem`), in a new directory; `None`
/// (skipped) without openssl.
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
    Some(dir)
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
