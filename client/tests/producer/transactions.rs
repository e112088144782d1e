//! Transactions (KIP-98, KIP-447, KIP-890) against a real broker: what Kafka's Java consumer
//! reads with isolation.level=read_committed is exactly the committed transactions' records;
//! a second producer with the transactional id fences the first; the coordinator aborts a
//! transaction left open past its timeout; offsets sent to a transaction are committed with
//! it only; Kafka 3.9 runs V1 (AddPartitionsToTxn, AddOffsetsToTxn) and 4.x V2 (neither, an
//! epoch bump per EndTxn).

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::{java, read_committed, unique, Broker};
use kwire::ErrorCode;
use kwire_client::{
    Admin, Client, Consumer, ConsumerConfig, ConsumerGroupMetadata, Error, GroupError, IsolationLevel, NewTopic, OffsetAndMetadata, OffsetReset, Producer,
    ProducerConfig, ProducerRecord, TopicPartition, TransactionError, TransactionState,
};

fn transactional(client: &Client, id: &str) -> Producer {
    let config = ProducerConfig { transactional_id: Some(id.to_owned()), linger: Duration::from_millis(2), ..Default::default() };
    Producer::new(client.clone(), config).unwrap()
}

/// Sends `values` to `topic` (keyed, so they spread over its partitions) and waits for them.
async fn send_all(p: &Producer, topic: &str, values: &[String]) {
    let mut ds = Vec::new();
    for v in values {
        ds.push(p.send(ProducerRecord::new(topic, v.clone()).key(v.clone())).await.unwrap());
    }
    for d in ds {
        d.await.unwrap();
    }
}

fn values(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i:03}")).collect()
}

/// Whether the broker runs Transactions V2: Kafka 4 does (its `transaction.version` is 2 by
/// default), 3.9 does not.
fn expects_v2(b: &Broker) -> bool {
    !b.version().starts_with("3.")
}

/// The fatal error a call fails with, with its broker code.
fn fatal_code(e: &Error) -> Option<ErrorCode> {
    match e {
        Error::Transaction(TransactionError::Fatal(cause)) => cause.code(),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committed_transactions_are_read_exactly_and_aborted_ones_never() {
    let Some(b) = Broker::from_env("committed_transactions_are_read_exactly_and_aborted_ones_never") else { return };
    common::init_tracing();
    let started = Instant::now();
    let client = b.client().await;
    let topic = unique("kw-txn");
    Admin::new(client.clone()).create_topic(NewTopic::new(&topic, 3)).await.unwrap();
    let p = transactional(&client, &unique("kw-txn-id"));
    p.init_transactions().await.unwrap();
    let v2 = p.stats().transactions_v2;
    assert_eq!(v2, expects_v2(&b), "Kafka {}: Transactions V2 {v2}", b.version());

    p.begin_transaction().await.unwrap();
    send_all(&p, &topic, &values("a", 30)).await;
    p.commit_transaction().await.unwrap();

    p.begin_transaction().await.unwrap();
    // Written (flushed) before the abort: the abort markers, not a failed send, hide them.
    send_all(&p, &topic, &values("b", 20)).await;
    p.abort_transaction().await.unwrap();

    p.begin_transaction().await.unwrap();
    send_all(&p, &topic, &values("c", 25)).await;
    p.commit_transaction().await.unwrap();

    // A transaction with nothing in it ends without EndTxn.
    p.begin_transaction().await.unwrap();
    p.commit_transaction().await.unwrap();
    assert_eq!(p.transaction_state(), Some(TransactionState::Ready));

    let stats = p.stats();
    assert_eq!(stats.end_txn, 3, "{stats:?}");
    if v2 {
        // KIP-890: the leaders add the partitions, every EndTxn bumps the epoch.
        assert_eq!(stats.add_partitions_to_txn, 0, "{stats:?}");
        assert_eq!(stats.epoch_bumps, 3, "{stats:?}");
    } else {
        // One AddPartitionsToTxn or more per transaction; the abort of a transaction whose
        // records were all written needs no epoch bump.
        assert!(stats.add_partitions_to_txn >= 3, "{stats:?}");
        assert_eq!(stats.epoch_bumps, 0, "{stats:?}");
    }
    p.close().await.unwrap();

    let read = read_committed(&b, &[(&topic, 3)]).await;
    let mut expected = values("a", 30);
    expected.extend(values("c", 25));
    expected.sort();
    assert_eq!(read[&topic], expected, "read_committed: the two committed transactions, whole, and nothing of the aborted one");
    println!(
        "Kafka {} (transactions {}): Java read {} committed records, none of 20 aborted; {:?}; {:.1}s",
        b.version(),
        if v2 { "V2" } else { "V1" },
        expected.len(),
        stats,
        started.elapsed().as_secs_f64()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_producer_with_the_id_fences_the_first() {
    let Some(b) = Broker::from_env("a_second_producer_with_the_id_fences_the_first") else { return };
    common::init_tracing();
    let started = Instant::now();
    let client = b.client().await;
    let topic = unique("kw-txn-fence");
    Admin::new(client.clone()).create_topic(NewTopic::new(&topic, 2)).await.unwrap();
    let id = unique("kw-txn-fence-id");
    let first = transactional(&client, &id);
    first.init_transactions().await.unwrap();
    first.begin_transaction().await.unwrap();
    let before: Vec<String> = values("zombie-before", 10);
    for v in &before {
        first.send(ProducerRecord::new(&topic, v.clone()).partition(0)).await.unwrap();
    }
    first.flush().await.unwrap();

    // The second instance: InitProducerId bumps the epoch and aborts the first's transaction.
    let second = transactional(&client, &id);
    second.init_transactions().await.unwrap();

    // The zombie goes on: a record to its partition and one to a new partition fail.
    let late = [
        first.send(ProducerRecord::new(&topic, "zombie-after-0").partition(0)).await.unwrap(),
        first.send(ProducerRecord::new(&topic, "zombie-after-1").partition(1)).await.unwrap(),
    ];
    for d in late {
        let e = d.await.unwrap_err();
        println!("the zombie's record after the fence: {e}");
    }
    // Its next transactional call fails; at the latest the abort it must then make learns that
    // it was fenced (EndTxn: PRODUCER_FENCED), which is fatal.
    let e = match first.commit_transaction().await {
        Err(e @ Error::Transaction(TransactionError::Fatal(_))) => e,
        Err(Error::Transaction(TransactionError::Abortable(cause))) => {
            println!("commit after the fence: abortable ({cause})");
            first.abort_transaction().await.unwrap_err()
        }
        other => panic!("commit after the fence: {other:?}"),
    };
    let code = fatal_code(&e);
    assert!(matches!(code, Some(ErrorCode::PRODUCER_FENCED | ErrorCode::INVALID_PRODUCER_EPOCH)), "fenced: {e:?}");
    assert_eq!(first.transaction_state(), Some(TransactionState::FatalError));
    // Every later call fails with the same error.
    assert_eq!(fatal_code(&first.begin_transaction().await.unwrap_err()), code);
    assert_eq!(fatal_code(&first.abort_transaction().await.unwrap_err()), code);
    assert_eq!(first.send(ProducerRecord::new(&topic, "x")).await.err().as_ref().and_then(fatal_code), code);
    assert_eq!(fatal_code(&first.flush().await.unwrap_err()), code);

    second.begin_transaction().await.unwrap();
    send_all(&second, &topic, &values("second", 5)).await;
    second.commit_transaction().await.unwrap();
    second.close().await.unwrap();

    let read = read_committed(&b, &[(&topic, 2)]).await;
    assert_eq!(read[&topic], values("second", 5), "only the second producer's committed records");
    println!("Kafka {}: fenced with {code:?}; {:.1}s", b.version(), started.elapsed().as_secs_f64());
}

/// The transaction's state as its coordinator describes it (DescribeTransactions).
async fn coordinator_state(client: &Client, id: &str) -> String {
    let request = kwire::messages::DescribeTransactionsRequest { transactional_ids: vec![id.to_owned().into()], ..Default::default() };
    let r = client.send(kwire_client::Route::Any, request).await.unwrap();
    r.transaction_states.first().map(|s| s.transaction_state.to_string()).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_left_open_past_its_timeout_is_aborted() {
    let Some(b) = Broker::from_env("a_transaction_left_open_past_its_timeout_is_aborted") else { return };
    common::init_tracing();
    let started = Instant::now();
    let client = b.client().await;
    let topic = unique("kw-txn-timeout");
    Admin::new(client.clone()).create_topic(NewTopic::new(&topic, 1)).await.unwrap();
    let id = unique("kw-txn-timeout-id");
    let config = ProducerConfig { transactional_id: Some(id.clone()), transaction_timeout: Duration::from_millis(1500), ..Default::default() };
    let p = Producer::new(client.clone(), config).unwrap();
    p.init_transactions().await.unwrap();
    p.begin_transaction().await.unwrap();
    send_all(&p, &topic, &values("late", 5)).await;
    assert_eq!(coordinator_state(&client, &id).await, "Ongoing");
    // The coordinator aborts it once the timeout is up (it checks every 500 ms here, every
    // 10 s by default).
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let s = coordinator_state(&client, &id).await;
        if s == "CompleteAbort" {
            break;
        }
        assert!(Instant::now() < deadline, "the coordinator did not abort the transaction (state {s})");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let waited = started.elapsed();
    // The producer's next call reports it: its epoch is behind the coordinator's.
    let e = p.commit_transaction().await.unwrap_err();
    println!("commit after the timeout: {e}");
    let code = e.code();
    assert!(
        matches!(e, Error::Transaction(TransactionError::Fatal(_) | TransactionError::Abortable(_)))
            && matches!(code, Some(ErrorCode::PRODUCER_FENCED | ErrorCode::INVALID_PRODUCER_EPOCH | ErrorCode::INVALID_TXN_STATE)),
        "{e:?}"
    );
    assert!(p.send(ProducerRecord::new(&topic, "x")).await.is_err(), "no more records in the timed-out transaction");
    p.close().await.unwrap();

    // A new instance with the id goes on.
    let again = transactional(&client, &id);
    again.init_transactions().await.unwrap();
    again.begin_transaction().await.unwrap();
    send_all(&again, &topic, &values("after", 3)).await;
    again.commit_transaction().await.unwrap();
    again.close().await.unwrap();
    let read = read_committed(&b, &[(&topic, 1)]).await;
    assert_eq!(read[&topic], values("after", 3), "nothing of the timed-out transaction");
    println!("Kafka {}: aborted by the coordinator after {:.1}s; {:.1}s in all", b.version(), waited.as_secs_f64(), started.elapsed().as_secs_f64());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_sent_to_a_transaction_are_committed_with_it_only() {
    let Some(b) = Broker::from_env("offsets_sent_to_a_transaction_are_committed_with_it_only") else { return };
    common::init_tracing();
    let started = Instant::now();
    let client = b.client().await;
    let input = unique("kw-txn-in");
    let output = unique("kw-txn-out");
    let admin = Admin::new(client.clone());
    admin.create_topic(NewTopic::new(&input, 1)).await.unwrap();
    admin.create_topic(NewTopic::new(&output, 1)).await.unwrap();
    let plain = Producer::new(client.clone(), ProducerConfig::default()).unwrap();
    send_all(&plain, &input, &values("in", 10)).await;
    plain.close().await.unwrap();

    let group = unique("kw-txn-group");
    let config = ConsumerConfig {
        enable_auto_commit: false,
        auto_offset_reset: OffsetReset::Earliest,
        isolation_level: IsolationLevel::ReadCommitted,
        ..ConsumerConfig::group(&group)
    };
    let mut consumer = Consumer::new(client.clone(), config).unwrap();
    consumer.subscribe(&[&input]).unwrap();
    let mut read = 0;
    let deadline = Instant::now() + Duration::from_secs(30);
    while read < 10 {
        assert!(Instant::now() < deadline, "read {read} of 10 input records");
        read += consumer.poll(Duration::from_millis(500)).await.unwrap().len();
    }
    let gm = consumer.group_metadata().unwrap();
    assert!(gm.generation_id > 0 && !gm.member_id.is_empty(), "a member of a generation: {gm:?}");
    let tp = TopicPartition::new(&input, 0);
    let offsets = |o: i64| BTreeMap::from([(tp.clone(), OffsetAndMetadata::new(o))]);

    let p = transactional(&client, &unique("kw-txn-offsets-id"));
    p.init_transactions().await.unwrap();
    // Aborted: the offsets are not committed.
    p.begin_transaction().await.unwrap();
    send_all(&p, &output, &values("out-a", 5)).await;
    p.send_offsets_to_transaction(&offsets(5), &gm).await.unwrap();
    p.abort_transaction().await.unwrap();
    assert_eq!(consumer.committed(std::slice::from_ref(&tp)).await.unwrap().get(&tp), None, "no offset after the abort");

    // KIP-447: offsets of a member of another generation are refused; the transaction aborts.
    p.begin_transaction().await.unwrap();
    let zombie = ConsumerGroupMetadata { generation_id: gm.generation_id + 7, ..gm.clone() };
    match p.send_offsets_to_transaction(&offsets(7), &zombie).await {
        Err(Error::Transaction(TransactionError::Abortable(cause))) => {
            assert!(matches!(*cause, Error::Group(GroupError::StaleGeneration { .. } | GroupError::UnknownMember { .. })), "{cause:?}")
        }
        other => panic!("a stale generation's offsets: {other:?}"),
    }
    assert_eq!(p.transaction_state(), Some(TransactionState::AbortableError));
    p.abort_transaction().await.unwrap();
    assert_eq!(consumer.committed(std::slice::from_ref(&tp)).await.unwrap().get(&tp), None, "no offset after the second abort");

    // Committed: the offsets are, with the records.
    p.begin_transaction().await.unwrap();
    send_all(&p, &output, &values("out-c", 5)).await;
    p.send_offsets_to_transaction(&offsets(10), &gm).await.unwrap();
    p.commit_transaction().await.unwrap();
    let committed = consumer.committed(std::slice::from_ref(&tp)).await.unwrap();
    assert_eq!(committed.get(&tp).map(|o| o.offset), Some(10), "the offset committed with the transaction");

    let stats = p.stats();
    if expects_v2(&b) {
        assert_eq!(stats.add_offsets_to_txn, 0, "V2: the group coordinator adds the offsets: {stats:?}");
    } else {
        assert_eq!(stats.add_offsets_to_txn, 3, "V1: AddOffsetsToTxn per send_offsets_to_transaction: {stats:?}");
    }
    p.close().await.unwrap();
    consumer.close().await.unwrap();
    let read = read_committed(&b, &[(&output, 1)]).await;
    assert_eq!(read[&output], values("out-c", 5), "only the committed transaction's output");
    println!("Kafka {}: offsets committed with the transaction only; {:?}; {:.1}s", b.version(), stats, started.elapsed().as_secs_f64());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_in_the_wrong_state_are_refused_with_typed_errors() {
    let Some(b) = Broker::from_env("calls_in_the_wrong_state_are_refused_with_typed_errors") else { return };
    let client = b.client().await;
    let topic = unique("kw-txn-state");
    Admin::new(client.clone()).create_topic(NewTopic::new(&topic, 1)).await.unwrap();
    let plain = Producer::new(client.clone(), ProducerConfig::default()).unwrap();
    assert!(matches!(plain.begin_transaction().await, Err(Error::Transaction(TransactionError::NotTransactional { .. }))));
    assert_eq!(plain.transaction_state(), None);
    let p = transactional(&client, &unique("kw-txn-state-id"));
    let not_init = |r: Result<_, Error>| matches!(r, Err(Error::Transaction(TransactionError::NotInitialized { .. })));
    assert!(not_init(p.send(ProducerRecord::new(&topic, "x")).await.map(|_| ())));
    assert!(not_init(p.begin_transaction().await));
    p.init_transactions().await.unwrap();
    assert!(matches!(p.init_transactions().await, Err(Error::Transaction(TransactionError::InvalidState { state: TransactionState::Ready, .. }))));
    let no_txn = |r: Result<_, Error>| matches!(r, Err(Error::Transaction(TransactionError::NoTransaction { .. })));
    assert!(no_txn(p.send(ProducerRecord::new(&topic, "x")).await.map(|_| ())), "send outside a transaction");
    assert!(no_txn(p.commit_transaction().await));
    p.begin_transaction().await.unwrap();
    assert!(matches!(p.begin_transaction().await, Err(Error::Transaction(TransactionError::InvalidState { state: TransactionState::InTransaction, .. }))));
    p.send(ProducerRecord::new(&topic, "x")).await.unwrap().await.unwrap();
    p.commit_transaction().await.unwrap();
    assert!(no_txn(p.commit_transaction().await), "commit twice");
    assert!(no_txn(p.abort_transaction().await));
    p.close().await.unwrap();
    plain.close().await.unwrap();
}

/// `target/<profile>/examples/exactly_once` (built by `cargo test -p kwire-client`).
fn exactly_once_example() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let path = exe.parent().and_then(|d| d.parent()).expect("target/<profile>").join("examples/exactly_once");
    assert!(path.exists(), "{} is missing: `cargo test -p kwire-client` (or `cargo build --examples`) builds it", path.display());
    path
}

/// Runs the example; with `kill_after_commits`, SIGKILLs it once it has printed that many
/// committed transactions (its next one is then likely open). Returns its output.
async fn run_example(args: &[&str], kill_after_commits: Option<usize>) -> String {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(exactly_once_example())
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("the example starts");
    let mut lines = tokio::io::BufReader::new(child.stdout.take().expect("its stdout")).lines();
    let mut out = String::new();
    let mut commits = 0;
    let read = async {
        while let Some(line) = lines.next_line().await.expect("its output") {
            out.push_str(&line);
            out.push('\n');
            commits += usize::from(line.starts_with("committed"));
            if kill_after_commits == Some(commits) {
                child.kill().await.expect("SIGKILL");
                return None;
            }
        }
        Some(child.wait().await.expect("it exits"))
    };
    let status = tokio::time::timeout(Duration::from_secs(90), read).await.expect("the example within 90 s");
    if let Some(status) = status {
        assert!(status.success(), "the example failed: {status}\n{out}");
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_exactly_once_example_killed_twice_copies_every_record_once() {
    let Some(b) = Broker::from_env("the_exactly_once_example_killed_twice_copies_every_record_once") else { return };
    let started = Instant::now();
    let client = b.client().await;
    let (input, output) = (unique("kw-eos-in"), unique("kw-eos-out"));
    let admin = Admin::new(client.clone());
    admin.create_topic(NewTopic::new(&input, 2)).await.unwrap();
    admin.create_topic(NewTopic::new(&output, 2)).await.unwrap();
    let plain = Producer::new(client.clone(), ProducerConfig::default()).unwrap();
    let inputs = values("eos", 100_000);
    send_all(&plain, &input, &inputs).await;
    plain.close().await.unwrap();

    let (group, id) = (unique("kw-eos-group"), unique("kw-eos-id"));
    let args = ["--bootstrap", b.var("PLAINTEXT"), "--input", &input, "--output", &output, "--group", &group, "--transactional-id", &id, "--idle", "3"];
    for run in 1..=2 {
        let out = run_example(&args, Some(1)).await;
        println!("run {run}, killed after its first commit:\n{out}");
    }
    let out = run_example(&args, None).await;
    println!("last run:\n{out}");
    assert!(out.contains("done:"), "{out}");

    let read = read_committed(&b, &[(&output, 2)]).await;
    let mut expected = inputs.clone();
    expected.sort();
    let got = &read[&output];
    let distinct: BTreeSet<&String> = got.iter().collect();
    assert_eq!(distinct.len(), got.len(), "no input record twice in the output");
    assert_eq!(got, &expected, "every input record exactly once");
    // The offsets were committed with the output: the group is at the input's end.
    let mut check = Consumer::new(client.clone(), ConsumerConfig::group(&group)).unwrap();
    let tps: Vec<TopicPartition> = (0..2).map(|p| TopicPartition::new(&input, p)).collect();
    let committed = check.committed(&tps).await.unwrap();
    let ends = check.end_offsets(&tps).await.unwrap();
    for tp in &tps {
        assert_eq!(committed.get(tp).map(|o| o.offset), ends.get(tp).copied(), "{tp}");
    }
    println!("Kafka {}: {} records copied exactly once across 2 SIGKILLs; {:.1}s", b.version(), got.len(), started.elapsed().as_secs_f64());
}

/// Kafka's Java transactional producer: `rounds` times a committed transaction of 10 records
/// and an aborted one of 5 (written, then aborted), over 2 partitions.
const JAVA_TRANSACTIONS: &str = r#"
import java.util.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.serialization.StringSerializer;

public class JavaTransactions {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("transactional.id", args[2]);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        String topic = args[1];
        try (KafkaProducer<String, String> k = new KafkaProducer<>(p)) {
            k.initTransactions();
            for (int r = 0; r < Integer.parseInt(args[3]); r++) {
                k.beginTransaction();
                for (int i = 0; i < 10; i++) k.send(new ProducerRecord<>(topic, i % 2, "k", String.format("java-c-%d-%03d", r, i))).get();
                k.commitTransaction();
                k.beginTransaction();
                for (int i = 0; i < 5; i++) k.send(new ProducerRecord<>(topic, i % 2, "k", String.format("java-a-%d-%03d", r, i))).get();
                k.abortTransaction();
            }
        }
        System.out.println("OK");
    }
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn javas_transactions_and_ours_interleave_on_one_topic() {
    let Some(b) = Broker::from_env("javas_transactions_and_ours_interleave_on_one_topic") else { return };
    let started = Instant::now();
    let client = b.client().await;
    let topic = unique("kw-txn-mixed");
    Admin::new(client.clone()).create_topic(NewTopic::new(&topic, 2)).await.unwrap();
    let java_run = {
        let (b, topic) = (Broker::from_env("java").unwrap(), topic.clone());
        tokio::spawn(async move {
            let dir = std::env::temp_dir().join(unique("kw-txn-java"));
            std::fs::create_dir_all(&dir).unwrap();
            let id = unique("kw-txn-java-id");
            let out = java(&b, &dir, "JavaTransactions.java", JAVA_TRANSACTIONS, &[b.var("PLAINTEXT"), &topic, &id, "5"], Duration::from_secs(90)).await;
            let _ = std::fs::remove_dir_all(&dir);
            out
        })
    };
    // Ours: the same pattern, round after round while Java's run (at least 3 rounds).
    let p = transactional(&client, &unique("kw-txn-ours-id"));
    p.init_transactions().await.unwrap();
    let mut expected: Vec<String> = (0..5).flat_map(|r| values(&format!("java-c-{r}"), 10)).collect();
    let mut rounds = 0;
    let deadline = Instant::now() + Duration::from_secs(90);
    while rounds < 3 || !java_run.is_finished() {
        assert!(Instant::now() < deadline, "Java's producer did not finish");
        p.begin_transaction().await.unwrap();
        let committed = values(&format!("rust-c-{rounds}"), 10);
        send_all(&p, &topic, &committed).await;
        p.commit_transaction().await.unwrap();
        expected.extend(committed);
        p.begin_transaction().await.unwrap();
        send_all(&p, &topic, &values(&format!("rust-a-{rounds}"), 5)).await;
        p.abort_transaction().await.unwrap();
        rounds += 1;
        // Leave the machine to Java's JVM now and then: rounds enough, not as many as possible.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    p.close().await.unwrap();
    assert_eq!(java_run.await.unwrap().trim(), "OK");
    expected.sort();
    let read = read_committed(&b, &[(&topic, 2)]).await;
    assert_eq!(read[&topic], expected, "each side's committed records, none of either side's aborted ones");
    println!(
        "Kafka {}: Java's 5 and our {rounds} rounds interleaved; {} committed records read; {:.1}s",
        b.version(),
        expected.len(),
        started.elapsed().as_secs_f64()
    );
}
