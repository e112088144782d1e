//! JKS and JCEKS stores, as keytool makes them: no well-kept crate reads Java's own formats,
//! so a keystore or truststore in one is refused before connecting, with the keytool command
//! that converts it to PKCS#12 (which the client reads). No broker needed: keytool (Java 17+)
//! on PATH, else the test says so and passes.

use std::path::Path;
use std::process::Command;

use kwire_client::{ClientIdentity, ConnectOptions, Connection, Error, Roots, TlsConfig};

fn keytool(dir: &Path, args: &[&str]) -> bool {
    match Command::new("keytool").args(args).current_dir(dir).output() {
        Ok(out) => {
            assert!(out.status.success(), "keytool {args:?}: {}", String::from_utf8_lossy(&out.stderr));
            true
        }
        Err(e) => {
            println!("no keytool ({e}): skipped");
            false
        }
    }
}

async fn refusal(tls: TlsConfig) -> String {
    // A listener that never answers: the store is read (and refused) before the handshake.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let options = ConnectOptions { tls: Some(tls), ..Default::default() };
    match Connection::connect(&addr, &options).await {
        Err(Error::Config(m)) => m,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn java_keystores_are_refused_with_the_conversion_command() {
    let dir = std::env::temp_dir().join(format!("kw-jks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (format, file) in [("JKS", "client.jks"), ("JCEKS", "client.jceks")] {
        let made = keytool(
            &dir,
            &[
                "-genkeypair",
                "-alias",
                "client",
                "-keyalg",
                "RSA",
                "-keysize",
                "2048",
                "-dname",
                "CN=kwire-jks",
                "-validity",
                "2",
                "-keystore",
                file,
                "-storetype",
                format,
                "-storepass",
                "storepw",
                "-keypass",
                "storepw",
            ],
        );
        if !made {
            return;
        }
        let path = dir.join(file);
        let magic = std::fs::read(&path).unwrap();
        assert_eq!(&magic[..4], if format == "JKS" { &[0xFE, 0xED, 0xFE, 0xED] } else { &[0xCE, 0xCE, 0xCE, 0xCE] }, "keytool wrote {format}");

        let as_keystore = TlsConfig::new(Roots::System).identity(ClientIdentity::Pkcs12File { path: path.clone(), password: "storepw".into() });
        let m = refusal(as_keystore).await;
        let command =
            format!("keytool -importkeystore -srckeystore {p} -srcstoretype {format} -destkeystore {p}.p12 -deststoretype PKCS12", p = path.display());
        assert!(m.contains(&format!("a {format} keystore")) && m.contains(&command), "{m}");

        let as_truststore = TlsConfig::new(Roots::Pkcs12File { path: path.clone(), password: "storepw".into() });
        let m = refusal(as_truststore).await;
        assert!(m.starts_with("PKCS#12 truststore") && m.contains(&command), "{m}");

        // The command given converts it: the result is read (and has no trusted entry, this
        // being a keystore, which the truststore check then says).
        assert!(keytool(
            &dir,
            &[
                "-importkeystore",
                "-srckeystore",
                file,
                "-srcstoretype",
                format,
                "-srcstorepass",
                "storepw",
                "-destkeystore",
                &format!("{file}.p12"),
                "-deststoretype",
                "PKCS12",
                "-deststorepass",
                "storepw",
                "-noprompt",
            ]
        ));
        let converted = TlsConfig::new(Roots::Pkcs12File { path: dir.join(format!("{file}.p12")), password: "storepw".into() });
        let m = refusal(converted).await;
        assert!(m.contains("no trusted certificate entry"), "{m}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
