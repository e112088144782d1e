//! Transactions on the 3-node cluster (`KWIRE_CLUSTER`, as `tests/cluster/killed_broker.rs`):
//!
//! - `examples/exactly_once.rs` copies 100,000 records, produced while it runs, from an input
//!   topic to an output topic while the leader of an output partition and then the broker of
//!   the transaction coordinator are killed (SIGKILL) and started again. Kafka's Java consumer
//!   with read_committed then reads every input record exactly once in the output, and the
//!   group's committed offsets are the input's ends (committed in the same transactions).
//! - The protocol follows the cluster's `transaction.version`: with the feature set to 1 the
//!   producer runs Transactions V1 (AddPartitionsToTxn, AddOffsetsToTxn, no epoch bump per
//!   EndTxn, the requests at their last versions before KIP-890's) and its committed records
//!   and offsets are read exactly, the example pipeline included; back at 2, V2 (KIP-890).
//!
//! One test running both in turn (the kills at the cluster's default level, 2; then the
//! levels): killed brokers and a changed feature level would disturb anything running beside
//! them.

use crate::common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::{read_committed, unique, Broker};
use kwire::messages::FindCoordinatorRequest;
use kwire::ByteString;
use kwire_client::{Admin, Client, ClientConfig, Consumer, ConsumerConfig, NewTopic, Producer, ProducerConfig, ProducerRecord, TopicPartition};
use tokio::io::AsyncBufReadExt;

const RECORDS: usize = 100_000;

/// The cluster as a `Broker` (for the Java helpers: PLAINTEXT is the bootstrap list).
fn cluster() -> Option<Broker> {
    let mut vars = common::cluster_env()?;
    let bootstrap = vars["BOOTSTRAP"].clone();
    vars.insert("PLAINTEXT".into(), bootstrap);
    Some(Broker { vars, env_file: std::env::var("KWIRE_CLUSTER").unwrap_or_default().into() })
}

async fn finished(mut child: tokio::process::Child, what: &str) {
    let status = tokio::time::timeout(Duration::from_secs(180), child.wait()).await.unwrap_or_else(|_| panic!("{what} within 180 s")).unwrap();
    assert!(status.success(), "{what}: kafka.sh restart-node failed");
}

/// The node of the transaction coordinator of `id` (FindCoordinator, key type 1).
async fn transaction_coordinator(client: &Client, id: &str) -> i32 {
    // One key up to v3, a list of them from v4.
    let build = |v: i16| {
        let mut r = FindCoordinatorRequest { key_type: 1, ..Default::default() };
        if v >= 4 {
            r.coordinator_keys = vec![ByteString::from(id.to_owned())];
        } else {
            r.key = ByteString::from(id.to_owned());
        }
        r
    };
    let r = client.send_versioned(kwire_client::Route::Any, build).await.unwrap();
    r.coordinators.first().map_or(r.node_id, |c| c.node_id)
}

/// `target/<profile>/examples/exactly_once` (built by `cargo test -p kwire-client`).
fn exactly_once_example() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let path = exe.parent().and_then(|d| d.parent()).expect("target/<profile>").join("examples/exactly_once");
    assert!(path.exists(), "{} is missing: `cargo test -p kwire-client` builds it", path.display());
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_under_killed_brokers_and_both_protocols() {
    let Some(b) = cluster() else { return };
    if !b.var("KAFKA_VERSION").starts_with("3.") {
        // The cluster's default, whatever an earlier run left.
        let admin = Admin::new(Client::connect(ClientConfig::new(b.var("BOOTSTRAP"))).await.unwrap());
        for r in admin.update_features(&[("transaction.version", 2, false)]).await.unwrap() {
            r.unwrap();
        }
        finalized_everywhere(&b, 2).await;
    }
    exactly_once_while_an_output_leader_and_the_transaction_coordinator_are_killed(&b).await;
    the_transaction_protocol_follows_the_clusters_transaction_version(&b).await;
}

async fn exactly_once_while_an_output_leader_and_the_transaction_coordinator_are_killed(b: &Broker) {
    let started = Instant::now();
    let version = b.var("KAFKA_VERSION").to_owned();
    let client = Client::connect(ClientConfig::new(b.var("BOOTSTRAP"))).await.unwrap();
    let admin = Admin::new(client.clone());
    let (input, output) = (unique("kw-eos-in"), unique("kw-eos-out"));
    for t in [&input, &output] {
        admin.create_topic(NewTopic::new(t, 2).replication_factor(3)).await.unwrap();
        common::eventually("the topic in metadata", || async { client.topic(t).await.is_ok() }).await;
    }
    let (group, id) = (unique("kw-eos-group"), unique("kw-eos-id"));

    // The input arrives while the pipeline runs (about 40 s of it), so the kills land mid-copy.
    let feeder = {
        let (client, input) = (client.clone(), input.clone());
        tokio::spawn(async move {
            let producer = Producer::new(client, ProducerConfig { linger: Duration::from_millis(5), ..Default::default() }).unwrap();
            let mut deliveries = Vec::with_capacity(RECORDS);
            for i in 0..RECORDS {
                if i % 250 == 0 {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                let v = format!("eos-{i:06}");
                deliveries.push(producer.send(ProducerRecord::new(input.as_str(), v.clone()).key(v)).await.unwrap());
            }
            for d in deliveries {
                d.await.unwrap();
            }
            producer.close().await.unwrap();
        })
    };

    let args = ["--bootstrap", b.var("BOOTSTRAP"), "--input", &input, "--output", &output, "--group", &group, "--transactional-id", &id, "--idle", "20"];
    let (mut kills, mut runs) = (Vec::new(), 0);
    let mut restarting: Option<tokio::process::Child> = None;
    loop {
        runs += 1;
        assert!(runs <= 4, "the pipeline did not finish in 4 runs");
        let mut child = tokio::process::Command::new(exactly_once_example())
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("the example starts");
        let mut lines = tokio::io::BufReader::new(child.stdout.take().expect("its stdout")).lines();
        let mut commits = 0;
        let mut done = false;
        let read = async {
            while let Some(line) = lines.next_line().await.expect("its output") {
                commits += usize::from(line.starts_with("committed"));
                done |= line.starts_with("done:");
                // The first kill: the leader of output partition 0, after a few transactions.
                if kills.is_empty() && commits == 10 {
                    let leader = client.fetch_topic_metadata(&[&output]).await.unwrap().leader(&output, 0).unwrap();
                    println!("run {runs}, {commits} transactions: killing node {leader} (leader of {output}-0)");
                    kills.push(("output leader", leader));
                    restarting = Some(common::restart_node(&version, leader));
                }
                // The second: the transaction coordinator's broker, once the first is back.
                if kills.len() == 1 && restarting.as_mut().is_some_and(|r| r.try_wait().ok().flatten().is_some()) {
                    let done_restart = restarting.take().unwrap();
                    finished(done_restart, "the output leader's restart").await;
                    let coordinator = transaction_coordinator(&client, &id).await;
                    println!("run {runs}, {commits} transactions: killing node {coordinator} (transaction coordinator)");
                    kills.push(("transaction coordinator", coordinator));
                    restarting = Some(common::restart_node(&version, coordinator));
                }
            }
            child.wait().await.expect("it exits")
        };
        let status = tokio::time::timeout(Duration::from_secs(240), read).await.expect("the example within 240 s");
        println!("run {runs} ended ({status}) after {commits} transactions");
        if status.success() && done && kills.len() == 2 && feeder.is_finished() {
            break;
        }
    }
    if let Some(r) = restarting.take() {
        finished(r, "the last restart").await;
    }
    feeder.await.unwrap();
    assert_eq!(kills.len(), 2, "both brokers were killed mid-copy: {kills:?}");

    let read = read_committed(b, &[(&output, 2)]).await;
    let got = &read[&output];
    let distinct: BTreeSet<&String> = got.iter().collect();
    assert_eq!(distinct.len(), got.len(), "no input record twice in the output");
    let expected: Vec<String> = (0..RECORDS).map(|i| format!("eos-{i:06}")).collect();
    assert_eq!(got.len(), expected.len(), "every input record in the output");
    assert_eq!(got, &expected, "every input record exactly once");
    let mut check = Consumer::new(client.clone(), ConsumerConfig::group(&group)).unwrap();
    let tps: Vec<TopicPartition> = (0..2).map(|p| TopicPartition::new(&input, p)).collect();
    let committed = check.committed(&tps).await.unwrap();
    let ends = check.end_offsets(&tps).await.unwrap();
    for tp in &tps {
        assert_eq!(committed.get(tp).map(|o| o.offset), ends.get(tp).copied(), "{tp}: offsets committed with the output");
    }
    println!(
        "Kafka {version}, 3 nodes: {RECORDS} records copied exactly once in {runs} run(s) across kills of {kills:?}; {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

/// Until every node's ApiVersions gives `transaction.version` at `level` (at most 30 s).
async fn finalized_everywhere(b: &Broker, level: i16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    for node in 1..=3 {
        let addr = b.var(&format!("NODE{node}_PLAINTEXT")).to_owned();
        loop {
            let conn = kwire_client::Connection::connect(&addr, &kwire_client::ConnectOptions::default()).await.unwrap();
            let request = kwire::messages::ApiVersionsRequest {
                client_software_name: ByteString::from_static("kwire-client-tests"),
                client_software_version: ByteString::from_static("0"),
                ..Default::default()
            };
            let r = conn.send(request).await.unwrap();
            assert_eq!(r.error_code, 0, "ApiVersions from node {node}");
            let at = r.finalized_features.iter().find(|f| &f.name[..] == "transaction.version").map(|f| f.max_version_level);
            if at == Some(level) {
                break;
            }
            assert!(Instant::now() < deadline, "node {node}: transaction.version {at:?}, not {level}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// The example pipeline copies 3,000 records at this level: each exactly once in the output.
async fn copy_with_the_example(b: &Broker, client: &Client, level: i16) {
    let admin = Admin::new(client.clone());
    let (input, output) = (unique("kw-eos-v-in"), unique("kw-eos-v-out"));
    for t in [&input, &output] {
        admin.create_topic(NewTopic::new(t, 2).replication_factor(3)).await.unwrap();
    }
    let producer = Producer::new(client.clone(), ProducerConfig::default()).unwrap();
    let inputs: Vec<String> = (0..3000).map(|i| format!("v{level}-eos-{i:04}")).collect();
    let mut ds = Vec::new();
    for v in &inputs {
        ds.push(producer.send(ProducerRecord::new(input.as_str(), v.clone()).key(v.clone())).await.unwrap());
    }
    for d in ds {
        d.await.unwrap();
    }
    producer.close().await.unwrap();
    let (group, id) = (unique("kw-eos-v-group"), unique("kw-eos-v-id"));
    let args = ["--bootstrap", b.var("BOOTSTRAP"), "--input", &input, "--output", &output, "--group", &group, "--transactional-id", &id, "--idle", "3"];
    let out = tokio::time::timeout(Duration::from_secs(90), tokio::process::Command::new(exactly_once_example()).args(args).kill_on_drop(true).output())
        .await
        .expect("the example within 90 s")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "transaction.version {level}: the example failed: {}\n{stdout}{}", out.status, String::from_utf8_lossy(&out.stderr));
    let read = read_committed(b, &[(&output, 2)]).await;
    assert_eq!(read[&output], inputs, "transaction.version {level}: every input record once in the output");
}

async fn the_transaction_protocol_follows_the_clusters_transaction_version(b: &Broker) {
    if b.var("KAFKA_VERSION").starts_with("3.") {
        println!("Kafka 3 has no transaction.version feature: V1 only (tests/producer/transactions.rs)");
        return;
    }
    let admin = Admin::new(Client::connect(ClientConfig::new(b.var("BOOTSTRAP"))).await.unwrap());
    let topic = unique("kw-txn-version");
    admin.create_topic(NewTopic::new(&topic, 2).replication_factor(3)).await.unwrap();

    for (level, v2) in [(1i16, false), (2, true)] {
        for r in admin.update_features(&[("transaction.version", level, level == 1)]).await.unwrap() {
            r.unwrap();
        }
        // Every broker's ApiVersions has to say so; a new client for each round.
        finalized_everywhere(b, level).await;
        let client = Client::connect(ClientConfig::new(b.var("BOOTSTRAP"))).await.unwrap();
        let config = ProducerConfig { transactional_id: Some(unique("kw-txn-version-id")), ..Default::default() };
        let p = Producer::new(client.clone(), config).unwrap();
        p.init_transactions().await.unwrap();
        p.begin_transaction().await.unwrap();
        for i in 0..100 {
            p.send(ProducerRecord::new(topic.as_str(), format!("v{level}-c-{i:03}")).partition(i % 2)).await.unwrap();
        }
        p.commit_transaction().await.unwrap();
        // Written (acknowledged), then aborted: the aborted records are in the log.
        p.begin_transaction().await.unwrap();
        let mut written = Vec::new();
        for i in 0..50 {
            written.push(p.send(ProducerRecord::new(topic.as_str(), format!("v{level}-a-{i:03}")).partition(i % 2)).await.unwrap());
        }
        for d in written {
            d.await.unwrap();
        }
        p.abort_transaction().await.unwrap();
        // And one with a group's offsets (AddOffsetsToTxn under V1), committed.
        let group = unique("kw-txn-version-group");
        p.begin_transaction().await.unwrap();
        p.send(ProducerRecord::new(topic.as_str(), format!("v{level}-o-000")).partition(0)).await.unwrap();
        let offsets = std::collections::BTreeMap::from([(TopicPartition::new(&topic, 0), kwire_client::OffsetAndMetadata::new(7))]);
        p.send_offsets_to_transaction(&offsets, &kwire_client::ConsumerGroupMetadata::new(group.clone())).await.unwrap();
        p.commit_transaction().await.unwrap();
        let stats = p.stats();
        p.close().await.unwrap();
        let mut check = Consumer::new(client.clone(), ConsumerConfig::group(&group)).unwrap();
        let committed = check.committed(&[TopicPartition::new(&topic, 0)]).await.unwrap();
        assert_eq!(committed.values().next().map(|o| o.offset), Some(7), "the offsets committed with the transaction");
        copy_with_the_example(b, &client, level).await;
        assert_eq!(stats.transactions_v2, v2, "transaction.version {level}: {stats:?}");
        if v2 {
            assert_eq!(stats.add_partitions_to_txn, 0, "V2 adds partitions implicitly: {stats:?}");
        } else {
            assert!(stats.add_partitions_to_txn >= 3, "V1 adds the partitions of each transaction: {stats:?}");
            assert_eq!(stats.add_offsets_to_txn, 1, "{stats:?}");
        }
        assert_eq!(stats.end_txn, 3, "{stats:?}");
    }
    let read = read_committed(b, &[(&topic, 2)]).await;
    let mut expected: Vec<String> = [1, 2].iter().flat_map(|l| (0..100).map(move |i| format!("v{l}-c-{i:03}")).chain([format!("v{l}-o-000")])).collect();
    expected.sort();
    assert_eq!(read[&topic], expected, "the committed records of both protocols, the aborted ones never");
}
