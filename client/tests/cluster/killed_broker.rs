//! On the 3-node cluster (`KWIRE_CLUSTER`, as `tests/cluster/routing.rs`): an idempotent producer
//! with acks=all keeps sending while the leader of a partition is killed with SIGKILL, is started
//! again while records are still going out, and then the partition's new leader is killed and
//! restarted at once, mid-batch. Afterwards every record was acknowledged (nothing failed: each
//! failure would have had to be a real one, and none is), each is in its partition exactly once,
//! at the offset its acknowledgement gave, and in the order it was sent.
//!
//! Killing brokers would disturb the other cluster tests running beside it: the `cluster`
//! binary runs one test at a time (`--test-threads 1`).

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use kwire_client::{Admin, Client, ClientConfig, NewTopic, Producer, ProducerConfig, ProducerRecord};

const PARTITIONS: i32 = 3;
const RECORDS: usize = 24_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaders_killed_and_restarted_under_an_idempotent_producer() {
    let Some(env) = common::cluster_env() else { return };
    let version = env["KAFKA_VERSION"].clone();
    let client = Client::connect(ClientConfig::new(&env["BOOTSTRAP"])).await.unwrap();
    let admin = Admin::new(client.clone());
    let name = common::unique("kw-killed");
    admin.create_topic(NewTopic::new(&name, PARTITIONS).replication_factor(3)).await.unwrap();
    common::eventually("the topic in metadata", || async { client.topic(&name).await.is_ok() }).await;
    let first_leader = client.topic(&name).await.unwrap().partitions.iter().find(|p| p.index == 0).unwrap().leader;

    let config = ProducerConfig { delivery_timeout: Duration::from_secs(120), linger: Duration::from_millis(2), ..ProducerConfig::default() };
    assert!(config.idempotence, "idempotent by default");
    let producer = Producer::new(client.clone(), config).unwrap();
    let mut deliveries = Vec::with_capacity(RECORDS);
    let mut restarts = Vec::new();
    for i in 0..RECORDS {
        if i == RECORDS / 4 {
            // SIGKILL: no clean shutdown, the partition's leadership moves by the controller's
            // timeout, batches in flight to it are lost on the wire.
            let pid = &env[&format!("NODE{first_leader}_PID")];
            let status = std::process::Command::new("kill").args(["-KILL", pid]).status().unwrap();
            assert!(status.success(), "kill node {first_leader}");
            println!("record {i}: node {first_leader} (leader of partition 0) killed");
        }
        if i == RECORDS / 2 {
            println!("record {i}: node {first_leader} starting again");
            restarts.push(common::restart_node(&version, first_leader));
        }
        if i == 3 * RECORDS / 4 {
            // The first restart has to be over: the next kill may hit the same node.
            for mut r in restarts.drain(..) {
                let status = tokio::time::timeout(Duration::from_secs(180), r.wait()).await.expect("restart within 180 s").unwrap();
                assert!(status.success(), "kafka.sh restart-node failed");
            }
            let now = Client::connect(ClientConfig::new(&env["BOOTSTRAP"])).await.unwrap();
            let leader = now.fetch_topic_metadata(&[&name]).await.unwrap().topics[name.as_str()].partitions.iter().find(|p| p.index == 0).unwrap().leader;
            println!("record {i}: node {leader} (leader of partition 0 now) killed and restarted mid-batch");
            restarts.push(common::restart_node(&version, leader));
        }
        let partition = (i % PARTITIONS as usize) as i32;
        let record = ProducerRecord::new(&name, format!("{i:08}")).partition(partition);
        deliveries.push((i, producer.send(record).await.expect("send")));
        if i % 500 == 0 {
            // Keep the sends spread over the restarts rather than all queued before them.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    producer.flush().await.unwrap();
    let mut acked: BTreeMap<(i32, i64), usize> = BTreeMap::new();
    for (i, d) in deliveries {
        let m = d.await.unwrap_or_else(|e| panic!("record {i} failed: {e}"));
        assert_eq!(m.partition, (i % PARTITIONS as usize) as i32);
        assert!(acked.insert((m.partition, m.offset), i).is_none(), "two records acknowledged at {}@{}", m.partition, m.offset);
    }
    for mut r in restarts {
        let status = tokio::time::timeout(Duration::from_secs(180), r.wait()).await.expect("restart within 180 s").unwrap();
        assert!(status.success(), "kafka.sh restart-node failed");
    }
    let stats = producer.stats();
    producer.close().await.unwrap();

    // Read every partition back through a fresh client (leaders moved).
    let reader = Client::connect(ClientConfig::new(&env["BOOTSTRAP"])).await.unwrap();
    reader.fetch_topic_metadata(&[&name]).await.unwrap();
    let per_partition = RECORDS / PARTITIONS as usize;
    for p in 0..PARTITIONS {
        let back = common::fetch_all(&reader, &name, p, per_partition).await;
        let values: Vec<usize> = back.iter().map(|f| std::str::from_utf8(f.record.value.as_deref().unwrap()).unwrap().parse().unwrap()).collect();
        let expected: Vec<usize> = (0..RECORDS).filter(|i| i % PARTITIONS as usize == p as usize).collect();
        assert_eq!(values.len(), expected.len(), "partition {p}: every record once (no loss, no duplicate)");
        assert_eq!(values, expected, "partition {p}: in the order sent");
        for f in &back {
            let value: usize = std::str::from_utf8(f.record.value.as_deref().unwrap()).unwrap().parse().unwrap();
            assert_eq!(acked.get(&(p, f.record.offset)), Some(&value), "partition {p} offset {}: the acknowledged record", f.record.offset);
        }
    }
    println!("{RECORDS} records, each once and in order after two kills and restarts; {stats:?}");
}
