//! KIP-368 re-authentication against the real broker: a SASL listener added at run time
//! (dynamic broker config) with `connections.max.reauth.ms`, since the broker script sets none.

use crate::common;

use std::time::Duration;

use common::Broker;
use kwire_client::{Admin, ConfigOp, ConfigResource, ConnectOptions, Connection, Sasl};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_reauthenticated_on_a_real_broker() {
    let Some(b) = Broker::from_env("sessions_are_reauthenticated_on_a_real_broker") else { return };
    let admin = Admin::new(b.client().await);
    let configs =
        admin.describe_configs(ConfigResource::Broker, "1", Some(&["listeners", "advertised.listeners", "listener.security.protocol.map"])).await.unwrap();
    let get = |k: &str| configs.iter().find(|c| c.name == k).and_then(|c| c.value.clone()).unwrap();
    // Once per broker: a second run finds the listener there.
    let listeners = get("listeners");
    if let Some(existing) = listeners.split(',').find_map(|l| l.strip_prefix("REAUTH://")) {
        return check(existing).await;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let changes = [
        ("listener.name.reauth.sasl.enabled.mechanisms", ConfigOp::Set("PLAIN".into())),
        (
            "listener.name.reauth.plain.sasl.jaas.config",
            ConfigOp::Set("org.apache.kafka.common.security.plain.PlainLoginModule required user_admin=\"admin-secret\";".into()),
        ),
        ("listener.name.reauth.connections.max.reauth.ms", ConfigOp::Set("1500".into())),
        ("listener.security.protocol.map", ConfigOp::Set(format!("{},REAUTH:SASL_PLAINTEXT", get("listener.security.protocol.map")))),
        ("listeners", ConfigOp::Set(format!("{},REAUTH://127.0.0.1:{port}", get("listeners")))),
    ];
    let changes: Vec<(&str, ConfigOp)> = changes.iter().map(|(k, v)| (*k, v.clone())).collect();
    admin.alter_configs(ConfigResource::Broker, "1", &changes).await.expect("a listener added at run time");
    check(&format!("127.0.0.1:{port}")).await;
}

async fn check(addr: &str) {
    let mut conn = None;
    for _ in 0..50 {
        // Bounded: the listener opens a moment after the config change.
        match Connection::connect(addr, &ConnectOptions { sasl: Some(Sasl::plain("admin", "admin-secret")), ..Default::default() }).await {
            Ok(c) => {
                conn = Some(c);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
    let conn = conn.expect("the new listener");
    assert_eq!(conn.session_lifetime(), Some(Duration::from_millis(1500)), "the broker sets the session lifetime");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let mut n = 0;
    while tokio::time::Instant::now() < deadline {
        conn.request(kwire::messages::MetadataRequest::default()).await.unwrap();
        n += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The broker closes a connection whose session expired: every request succeeding across
    // three lifetimes, and the count, show the re-authentications happened.
    println!("{n} requests over 5 s of 1.5 s sessions, {} authentications", conn.authentications());
    assert!(conn.authentications() >= 3, "{} authentications", conn.authentications());
    assert!(!conn.is_closed());
}
