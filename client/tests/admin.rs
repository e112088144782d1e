//! Admin operations against the real broker.

mod common;

use common::{unique, Broker};
use kwire_client::ConfigEntry;
use kwire_client::{Admin, Client, ClientConfig, ConfigOp, ConfigResource, Error, NewTopic, Sasl, ScramChange, ScramMechanism};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topics_partitions_configs_cluster() {
    let Some(b) = Broker::from_env("topics_partitions_configs_cluster") else { return };
    let admin = Admin::new(b.client().await);
    let name = unique("kw-admin");

    let created = admin.create_topic(NewTopic::new(&name, 2).replication_factor(1).config("retention.ms", "3600000")).await.unwrap();
    assert_eq!((created.partitions, created.replication_factor), (2, 1));
    assert_ne!(created.id, kwire::Uuid::ZERO, "CreateTopics v7+ returns the topic id");
    // Again: a typed, non-retriable TOPIC_ALREADY_EXISTS.
    let err = admin.create_topic(NewTopic::new(&name, 2)).await.unwrap_err();
    assert_eq!(err.code().and_then(|c| c.name()), Some("TOPIC_ALREADY_EXISTS"), "{err}");
    assert!(!err.is_retriable());

    common::eventually("the new topic listed with 2 partitions", || async {
        admin.list_topics(false).await.unwrap().contains(&name)
            && admin.describe_topics(&[&name]).await.unwrap().remove(0).is_ok_and(|t| t.partitions.len() == 2)
    })
    .await;
    let t = admin.describe_topics(&[&name]).await.unwrap().remove(0).unwrap();
    assert_eq!(t.partitions.len(), 2);
    assert_eq!(t.id, created.id);
    assert!(t.partitions.iter().all(|p| p.leader == 1 && p.replicas == vec![1]));

    admin.create_partitions(&[(&name, 3)]).await.unwrap().remove(0).unwrap();
    common::eventually("3 partitions", || async { admin.describe_topics(&[&name]).await.unwrap().remove(0).unwrap().partitions.len() == 3 }).await;
    let err = admin.create_partitions(&[(&name, 2)]).await.unwrap().remove(0).unwrap_err();
    assert_eq!(err.code().and_then(|c| c.name()), Some("INVALID_PARTITIONS"), "{err}");

    let value = |entries: &[ConfigEntry], key: &str| entries.iter().find(|e| e.name == key).and_then(|e| e.value.clone());
    let configs = admin.describe_configs(ConfigResource::Topic, &name, None).await.unwrap();
    assert_eq!(value(&configs, "retention.ms").as_deref(), Some("3600000"));
    // Changes reach the broker through the metadata log: bounded waits for them to show.
    let settled = |expected: Vec<(&'static str, &'static str)>| {
        let (admin, name) = (admin.clone(), name.clone());
        async move {
            let keys: Vec<&str> = expected.iter().map(|(k, _)| *k).collect();
            for _ in 0..100 {
                let configs = admin.describe_configs(ConfigResource::Topic, &name, Some(&keys)).await.unwrap();
                if expected.iter().all(|(k, v)| value(&configs, k).as_deref() == Some(*v)) {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            panic!("configs of {name} never became {expected:?}");
        }
    };
    admin.alter_configs(ConfigResource::Topic, &name, &[("retention.ms", ConfigOp::Set("7200000".into())), ("cleanup.policy", ConfigOp::Set("compact".into()))]).await.unwrap();
    settled(vec![("retention.ms", "7200000"), ("cleanup.policy", "compact")]).await;
    admin.alter_configs(ConfigResource::Topic, &name, &[("cleanup.policy", ConfigOp::Delete)]).await.unwrap();
    settled(vec![("cleanup.policy", "delete")]).await;
    let broker = admin.describe_configs(ConfigResource::Broker, "1", Some(&["num.partitions"])).await.unwrap();
    assert_eq!(value(&broker, "num.partitions").as_deref(), Some("1"));

    let cluster = admin.describe_cluster().await.unwrap();
    assert_eq!(cluster.brokers.len(), 1);
    assert_eq!(Some(cluster.cluster_id.as_str()), b.vars.get("KAFKA_CLUSTER_ID").map(String::as_str));

    admin.delete_topics(&[&name]).await.unwrap().remove(0).unwrap();
    let err = admin.delete_topics(&[&name]).await.unwrap().remove(0).unwrap_err();
    assert_eq!(err.code().and_then(|c| c.name()), Some("UNKNOWN_TOPIC_OR_PARTITION"), "{err}");
    let err = admin.describe_topics(&["kw-no-such-topic"]).await.unwrap().remove(0).unwrap_err();
    assert_eq!(err.code().and_then(|c| c.name()), Some("UNKNOWN_TOPIC_OR_PARTITION"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn created_scram_users_can_log_in() {
    let Some(b) = Broker::from_env("created_scram_users_can_log_in") else { return };
    let admin = Admin::new(b.client().await);
    let user = unique("kw-user");
    let results = admin
        .alter_scram_credentials(&[
            ScramChange::Upsert { user: user.clone(), mechanism: ScramMechanism::Sha256, password: "pw-256".into(), iterations: 4096 },
        ])
        .await
        .unwrap();
    results.into_iter().for_each(|r| r.unwrap());
    admin
        .alter_scram_credentials(&[ScramChange::Upsert { user: user.clone(), mechanism: ScramMechanism::Sha512, password: "pw-512".into(), iterations: 8192 }])
        .await
        .unwrap()
        .remove(0)
        .unwrap();
    let sasl = b.var("SASL_PLAINTEXT");
    // Credentials propagate through the metadata log: bounded wait.
    let mut last = None;
    for _ in 0..50 {
        match Client::connect(ClientConfig::new(sasl).sasl(Sasl::scram_sha256(&user, "pw-256"))).await {
            Ok(_) => {
                last = None;
                break;
            }
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(last.is_none(), "{last:?}");
    Client::connect(ClientConfig::new(sasl).sasl(Sasl::scram_sha512(&user, "pw-512"))).await.expect("SHA-512 credential");
    let err = Client::connect(ClientConfig::new(sasl).sasl(Sasl::scram_sha512(&user, "pw-256"))).await.err().expect("wrong password");
    assert!(matches!(err, Error::Authentication { .. }), "{err:?}");
    // Iterations out of Kafka's range: a typed broker error.
    let err = admin
        .alter_scram_credentials(&[ScramChange::Upsert { user: user.clone(), mechanism: ScramMechanism::Sha256, password: "x".into(), iterations: 10 }])
        .await
        .unwrap()
        .remove(0)
        .unwrap_err();
    assert_eq!(err.code().and_then(|c| c.name()), Some("UNACCEPTABLE_CREDENTIAL"), "{err}");
    admin.alter_scram_credentials(&[ScramChange::Delete { user: user.clone(), mechanism: ScramMechanism::Sha256 }]).await.unwrap().remove(0).unwrap();
}
