//! The `kwire` binary against a real broker (`KWIRE_BROKER=<env file of scripts/kafka.sh>`;
//! skipped when unset, a failure under `KWIRE_REQUIRE_BROKER=1`), checked against kcat and
//! Kafka's own tools on the same broker: records produced by one read identically by the
//! other (keys, values, headers, partitions, offsets), `groups describe` and `reset-offsets`
//! against ConsumerGroupCommand, `topics describe` against TopicCommand, and `versions` and
//! `check` with right and wrong settings (a wrong password, a CA that did not sign the broker,
//! a closed port), each failure named.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

#[path = "../../tests/support/skip.rs"]
mod skip;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use kwire::runtime::json::serde_json::{self, Value};

struct Broker {
    vars: BTreeMap<String, String>,
}

impl Broker {
    fn from_env(test: &str) -> Option<Broker> {
        let required = std::env::var_os("KWIRE_REQUIRE_BROKER").is_some_and(|v| v == "1");
        let Some(spec) = std::env::var("KWIRE_BROKER").ok().filter(|s| !s.is_empty()) else {
            assert!(!required, "KWIRE_REQUIRE_BROKER=1 but KWIRE_BROKER is unset");
            eprintln!("skipping {test}: KWIRE_BROKER is unset (scripts/client-tests.sh sets it)");
            return None;
        };
        let text = std::fs::read_to_string(&spec).unwrap_or_else(|e| panic!("KWIRE_BROKER={spec}: {e}"));
        let vars = text.lines().filter_map(|l| l.split_once('=')).map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned())).collect();
        Some(Broker { vars })
    }

    fn var(&self, key: &str) -> &str {
        self.vars.get(key).unwrap_or_else(|| panic!("KWIRE_BROKER's file has no {key}"))
    }

    /// `kwire -b PLAINTEXT ARGS`.
    fn kwire(&self, args: &[&str], stdin: &[u8]) -> Output {
        let mut all = vec!["-b", self.var("PLAINTEXT")];
        all.extend_from_slice(args);
        run(env!("CARGO_BIN_EXE_kwire"), &all, stdin)
    }

    /// `kwire ...`, which must succeed; its stdout.
    fn kwire_ok(&self, args: &[&str], stdin: &[u8]) -> String {
        ok(self.kwire(args, stdin), &format!("kwire {args:?}"))
    }

    fn kcat(&self, args: &[&str], stdin: &[u8]) -> String {
        let mut all = vec!["-b", self.var("PLAINTEXT")];
        all.extend_from_slice(args);
        ok(run("kcat", &all, stdin), &format!("kcat {args:?}"))
    }

    /// One of Kafka's command-line tools from the broker's jars and kafka-tools
    /// (`KAFKA_TOOLS`): the first of `classes` (its main class in each release) that exists.
    fn kafka_tool(&self, classes: &[&str], args: &[&str]) -> String {
        let cp = format!("{}/*:{}/*", self.var("KAFKA_LIB"), self.var("KAFKA_TOOLS"));
        for class in classes {
            let mut all = vec!["-cp", cp.as_str(), "-Dlog4j2.level=error", class];
            all.extend_from_slice(args);
            let out = run("java", &all, b"");
            if String::from_utf8_lossy(&out.stderr).contains("Could not find or load main class") {
                continue;
            }
            // Some tools (ConsumerGroupCommand among them) report a failure, a timed-out
            // admin call for one, on stderr and still exit 0.
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!stderr.lines().any(|l| l.starts_with("Error:")), "{class} {args:?}: {stderr}");
            return ok(out, &format!("{class} {args:?}"));
        }
        panic!("none of {classes:?} in the broker's jars or kafka-tools")
    }

    /// ConsumerGroupCommand on this broker with `args`. Its admin calls get 60 s: its default
    /// of 5 s ran out on a loaded 2-core machine, several JVMs starting at once.
    fn group_command(&self, args: &[&str]) -> String {
        let mut all = vec!["--bootstrap-server", self.var("PLAINTEXT"), "--timeout", "60000"];
        all.extend_from_slice(args);
        self.kafka_tool(GROUP_COMMAND, &all)
    }

    fn topic(&self, prefix: &str, partitions: u32) -> String {
        let name = unique(prefix);
        let p = partitions.to_string();
        self.kwire_ok(&["topics", "create", &name, "--partitions", &p, "--replication-factor", "1"], b"");
        name
    }
}

fn run(program: &str, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn ok(out: Output, what: &str) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{what} failed ({:?}): {stderr}\nstdout: {}", out.status, String::from_utf8_lossy(&out.stdout));
    assert!(!stderr.contains("panicked"), "{what}: {stderr}");
    String::from_utf8(out.stdout).unwrap()
}

fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{prefix}-{}-{}", std::process::id(), nanos % 1_000_000_000)
}

fn sorted_lines(s: &str) -> Vec<String> {
    let mut v: Vec<String> = s.lines().map(str::to_owned).collect();
    v.sort();
    v
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(unique(name));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn what_kwire_produces_kcat_reads_identically() {
    let Some(b) = Broker::from_env("what_kwire_produces_kcat_reads_identically") else { return };
    let topic = b.topic("cli-produce", 3);
    let input = "k1:v1\nk2:value two\n:empty key\nnokey\nk5:a:b\n";
    let acks = b.kwire_ok(&["produce", "-t", &topic, "-K", ":", "-H", "h1=x", "-H", "h2=y=z", "-z", "lz4", "-v"], input.as_bytes());
    // -v: topic, partition, offset per record, in input order.
    let placed: Vec<(i32, i64)> = acks
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f[0], topic, "{l}");
            (f[1].parse().unwrap(), f[2].parse().unwrap())
        })
        .collect();
    assert_eq!(placed.len(), 5, "{acks}");

    let read = b.kcat(&["-C", "-t", &topic, "-e", "-q", "-f", "%p|%o|%k|%s|%h\\n"], b"");
    let expected: Vec<String> = [("k1", "v1"), ("k2", "value two"), ("", "empty key"), ("", "nokey"), ("k5", "a:b")]
        .iter()
        .zip(&placed)
        .map(|((k, v), (p, o))| format!("{p}|{o}|{k}|{v}|h1=x,h2=y=z"))
        .collect();
    assert_eq!(sorted_lines(&read), {
        let mut e = expected;
        e.sort();
        e
    });
    // A record without the key delimiter has no key at all (kcat's %K: -1), one with an empty
    // key before the delimiter has an empty key (0).
    let lens = b.kcat(&["-C", "-t", &topic, "-e", "-q", "-f", "%K %s\\n"], b"");
    assert!(lens.lines().any(|l| l == "-1 nokey"), "{lens}");
    assert!(lens.lines().any(|l| l == "0 empty key"), "{lens}");

    // A fixed partition, a multi-byte delimiter, a transaction: read_committed sees it whole.
    let out = b.kwire_ok(&["produce", "-t", &topic, "-p", "2", "-D", "||", "--transactional-id", &unique("cli-txn"), "-v"], b"t1||t2||t3");
    assert_eq!(out.lines().filter(|l| l.split('\t').nth(1) == Some("2")).count(), 3, "{out}");
    let read = b.kcat(&["-C", "-t", &topic, "-p", "2", "-e", "-q", "-X", "isolation.level=read_committed", "-f", "%s\\n"], b"");
    let tail: Vec<&str> = read.lines().filter(|l| l.starts_with('t') && l.len() == 2).collect();
    assert_eq!(tail, ["t1", "t2", "t3"], "{read}");

    // Records refused: a partition the topic does not have fails, with a non-zero exit.
    let out = b.kwire(&["produce", "-t", &topic, "-p", "7"], b"x\n");
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("record 1"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn what_kcat_produces_kwire_prints_identically() {
    let Some(b) = Broker::from_env("what_kcat_produces_kwire_prints_identically") else { return };
    let topic = b.topic("cli-consume", 2);
    let input = "a:1\nb:2\nc:3\nd:4\ne:5\nf:6\n";
    b.kcat(&["-P", "-t", &topic, "-K", ":", "-H", "src=kcat", "-H", "n=1"], input.as_bytes());
    // kcat prints, kwire prints: the same lines.
    let fmt = "%t %p %o %T %k=%s (%K/%S) [%h]\\n";
    let theirs = b.kcat(&["-C", "-t", &topic, "-e", "-q", "-f", fmt], b"");
    let ours = b.kwire_ok(&["consume", "-t", &topic, "-o", "beginning", "-e", "-f", fmt], b"");
    assert_eq!(sorted_lines(&ours), sorted_lines(&theirs));
    assert_eq!(ours.lines().count(), 6);
    // The default output: the value per line; with -K, key, delimiter, value.
    let values = b.kwire_ok(&["consume", "-t", &topic, "-e"], b"");
    assert_eq!(sorted_lines(&values), ["1", "2", "3", "4", "5", "6"]);
    let keyed = b.kwire_ok(&["consume", "-t", &topic, "-e", "-K", "="], b"");
    assert_eq!(sorted_lines(&keyed), ["a=1", "b=2", "c=3", "d=4", "e=5", "f=6"]);
    // JSON lines with headers in order.
    let json = b.kwire_ok(&["consume", "-t", &topic, "-e", "--json", "-c", "2"], b"");
    let first: Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
    assert_eq!(first["headers"], serde_json::json!([{"key": "src", "value": "kcat"}, {"key": "n", "value": "1"}]));
    assert_eq!(json.lines().count(), 2);
    // -o -N: the last N of each partition; -o N; -o s@TS after every record: nothing.
    let per_partition: BTreeMap<String, usize> = theirs.lines().fold(BTreeMap::new(), |mut m, l| {
        *m.entry(l.split(' ').nth(1).unwrap().to_owned()).or_default() += 1;
        m
    });
    let last = b.kwire_ok(&["consume", "-t", &topic, "-o", "-1", "-e", "-f", "%p\\n"], b"");
    assert_eq!(last.lines().count(), per_partition.len(), "{last}");
    let from1 = b.kwire_ok(&["consume", "-t", &topic, "-o", "1", "-e"], b"");
    assert_eq!(from1.lines().count(), 6 - per_partition.len());
    let future = b.kwire_ok(&["consume", "-t", &topic, "-o", "s@99999999999999", "-e"], b"");
    assert_eq!(future, "");
}

/// ConsumerGroupCommand's table rows for `group`: (topic, partition) -> the `columns` after
/// the partition. Read as a stream of words, not lines: Kafka 3.9's `--reset-offsets` prints
/// its rows without line breaks.
fn group_rows(text: &str, group: &str, columns: usize) -> BTreeMap<(String, i32), Vec<String>> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut rows = BTreeMap::new();
    for (i, w) in words.iter().enumerate() {
        let (Some(topic), Some(Ok(partition))) = (words.get(i + 1), words.get(i + 2).map(|p| p.parse::<i32>())) else { continue };
        if *w == group && i + 3 + columns <= words.len() {
            rows.insert((topic.to_string(), partition), words[i + 3..i + 3 + columns].iter().map(|c| c.to_string()).collect());
        }
    }
    rows
}

const GROUP_COMMAND: &[&str] = &["org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", "kafka.admin.ConsumerGroupCommand"];
const TOPIC_COMMAND: &[&str] = &["org.apache.kafka.tools.TopicCommand", "kafka.admin.TopicCommand"];
const CONFIG_COMMAND: &[&str] = &["org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand"];

#[test]
fn groups_describe_and_reset_agree_with_consumer_group_command() {
    let Some(b) = Broker::from_env("groups_describe_and_reset_agree_with_consumer_group_command") else { return };
    let topic = b.topic("cli-groups", 2);
    let input: String = (0..20).map(|i| format!("k{i}:v{i}\n")).collect();
    b.kwire_ok(&["produce", "-t", &topic, "-K", ":"], input.as_bytes());
    let group = unique("cli-group");
    // A member reads 7 records and commits on the way out.
    let read = b.kwire_ok(&["consume", "-t", &topic, "-G", &group, "-o", "beginning", "-c", "7"], b"");
    assert_eq!(read.lines().count(), 7);

    let ours: Value = serde_json::from_str(&b.kwire_ok(&["groups", "describe", &group, "--json"], b"")).unwrap();
    let theirs = group_rows(&b.group_command(&["--describe", "--group", &group]), &group, 3);
    assert!(!theirs.is_empty(), "ConsumerGroupCommand lists no partition of {group}");
    let mut committed_total = 0;
    for p in ours["partitions"].as_array().unwrap() {
        let key = (p["topic"].as_str().unwrap().to_owned(), p["partition"].as_i64().unwrap() as i32);
        let cols = theirs.get(&key).unwrap_or_else(|| panic!("{key:?} not in Kafka's table {theirs:?}"));
        let show = |v: &Value| v.as_i64().map_or("-".to_owned(), |n| n.to_string());
        assert_eq!([show(&p["committed"]), show(&p["logEndOffset"]), show(&p["lag"])].as_slice(), &cols[..3], "{key:?}");
        committed_total += p["committed"].as_i64().unwrap_or(0);
    }
    // What was printed was committed, no more (a poll returns more than -c wants).
    assert_eq!(committed_total, 7);
    assert_eq!(ours["partitions"].as_array().unwrap().len(), theirs.len());

    // --shift-by: the same plan as Kafka's dry run (of the committed partitions: both tools
    // refuse to shift one without a commit).
    let ours = b.kwire_ok(&["groups", "reset-offsets", &group, "--all-topics", "--shift-by", "-2", "--dry-run"], b"");
    let theirs = b.group_command(&["--reset-offsets", "--group", &group, "--all-topics", "--shift-by", "-2", "--dry-run"]);
    assert!(!group_rows(&ours, &group, 1).is_empty(), "{ours}");
    assert_eq!(group_rows(&ours, &group, 1), group_rows(&theirs, &group, 1), "ours:\n{ours}\nKafka's:\n{theirs}");
    // --to-earliest --execute, read back by Kafka's tool: every partition at 0, the whole
    // topic lagging.
    b.kwire_ok(&["groups", "reset-offsets", &group, "--topic", &topic, "--to-earliest", "--execute"], b"");
    let after = group_rows(&b.group_command(&["--describe", "--group", &group]), &group, 3);
    let total: i64 = after.values().map(|c| c[2].parse::<i64>().unwrap()).sum();
    assert!(after.values().all(|c| c[0] == "0"), "{after:?}");
    assert_eq!(after.len(), 2, "{after:?}");
    assert_eq!(total, 20);
    // --to-latest by Kafka's tool, read back by ours: no lag.
    b.group_command(&["--reset-offsets", "--group", &group, "--all-topics", "--to-latest", "--execute"]);
    let ours: Value = serde_json::from_str(&b.kwire_ok(&["groups", "describe", &group, "--json"], b"")).unwrap();
    assert!(ours["partitions"].as_array().unwrap().iter().all(|p| p["lag"] == 0), "{ours}");
    // Listed, then deleted.
    assert!(b.kwire_ok(&["groups", "list"], b"").contains(&group));
    b.kwire_ok(&["groups", "delete", &group], b"");
    assert!(!b.kwire_ok(&["groups", "list"], b"").contains(&group));
}

#[test]
fn topics_and_configs_agree_with_kafkas_tools() {
    let Some(b) = Broker::from_env("topics_and_configs_agree_with_kafkas_tools") else { return };
    let topic = b.topic("cli-topics", 4);
    let boot = b.var("PLAINTEXT").to_owned();
    let ours: Value = serde_json::from_str(&b.kwire_ok(&["topics", "describe", &topic, "--json"], b"")).unwrap();
    let theirs = b.kafka_tool(TOPIC_COMMAND, &["--bootstrap-server", &boot, "--describe", "--topic", &topic]);
    // "Topic: t	Partition: 0	Leader: 1	Replicas: 1	Isr: 1 ..."
    let field = |line: &str, name: &str| -> String {
        let parts: Vec<&str> = line.split('\t').map(str::trim).collect();
        parts.iter().find_map(|p| p.strip_prefix(name)).map(|v| v.trim().to_owned()).unwrap_or_default()
    };
    let theirs: BTreeMap<i64, (String, String, String)> = theirs
        .lines()
        .filter(|l| l.contains("Partition: "))
        .map(|l| (field(l, "Partition:").parse().unwrap(), (field(l, "Leader:"), field(l, "Replicas:"), field(l, "Isr:"))))
        .collect();
    let join = |v: &Value| v.as_array().unwrap().iter().map(|n| n.to_string()).collect::<Vec<_>>().join(",");
    let ours: BTreeMap<i64, (String, String, String)> = ours["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["partition"].as_i64().unwrap(), (p["leader"].to_string(), join(&p["replicas"]), join(&p["isr"]))))
        .collect();
    assert_eq!(ours, theirs);
    assert_eq!(ours.len(), 4);
    assert!(b.kwire_ok(&["topics", "list"], b"").lines().any(|l| l == topic));

    // A config set here is what kafka-configs.sh describes.
    b.kwire_ok(&["configs", "alter", "--topic", &topic, "--add-config", "retention.ms=3600000,cleanup.policy=compact,delete"], b"");
    let theirs = b.kafka_tool(CONFIG_COMMAND, &["--bootstrap-server", &boot, "--describe", "--entity-type", "topics", "--entity-name", &topic]);
    assert!(theirs.contains("retention.ms=3600000"), "{theirs}");
    assert!(theirs.contains("cleanup.policy=compact,delete"), "{theirs}");
    let ours = b.kwire_ok(&["configs", "describe", "--topic", &topic, "--json"], b"");
    let ours: Vec<Value> = ours.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(ours.len(), 2, "{ours:?}");
    b.kwire_ok(&["configs", "alter", "--topic", &topic, "--delete-config", "retention.ms"], b"");
    assert_eq!(b.kwire_ok(&["configs", "describe", "--topic", &topic, "--json"], b"").lines().count(), 1);

    b.kwire_ok(&["topics", "delete", &topic], b"");
    let out = b.kwire(&["topics", "describe", &topic], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("UNKNOWN_TOPIC_OR_PARTITION"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `kwire -b ADDR -X ... check`: exit code and stdout.
fn check(addr: &str, settings: &[&str]) -> (Option<i32>, String) {
    let mut args = vec!["-b", addr];
    for s in settings {
        args.push("-X");
        args.push(s);
    }
    args.push("check");
    let out = run(env!("CARGO_BIN_EXE_kwire"), &args, b"");
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn versions_and_check_name_what_fails() {
    let Some(b) = Broker::from_env("versions_and_check_name_what_fails") else { return };
    let versions = b.kwire_ok(&["versions"], b"");
    let produce = versions.lines().find(|l| l.split_whitespace().nth(1) == Some("Produce")).unwrap_or_else(|| panic!("{versions}"));
    assert!(produce.split_whitespace().nth(2).is_some_and(|r| r.contains('-')), "{produce}");
    let json: Value = serde_json::from_str(&b.kwire_ok(&["versions", "--json"], b"")).unwrap();
    let metadata = json["apis"].as_array().unwrap().iter().find(|a| a["name"] == "Metadata").unwrap();
    assert!(metadata["uses"].as_i64().unwrap() <= metadata["broker"]["max"].as_i64().unwrap());
    assert!(metadata["problem"].is_null());

    let (code, out) = check(b.var("PLAINTEXT"), &[]);
    assert_eq!(code, Some(0), "{out}");
    for step in ["DNS", "TCP", "ApiVersions", "Metadata", "Broker"] {
        assert!(out.lines().any(|l| l.starts_with("ok") && l.contains(step)), "{step}: {out}");
    }

    let sasl = b.var("SASL_PLAINTEXT");
    let (code, out) = check(sasl, &["security.protocol=SASL_PLAINTEXT", "sasl.mechanisms=PLAIN", "sasl.username=alice", "sasl.password=wrong"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("FAIL  SASL"), "{out}");
    assert!(out.contains("wrong username or password"), "{out}");
    // The same user with its password, from a Java properties file with a JAAS config.
    let dir = temp_dir("cli-check");
    let props = dir.join("client.properties");
    std::fs::write(
        &props,
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n    username=\"alice\" password=\"alice-secret\";\n",
    )
    .unwrap();
    let out = run(env!("CARGO_BIN_EXE_kwire"), &["-b", sasl, "--command-config", props.to_str().unwrap(), "check"], b"");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("SCRAM-SHA-512 as alice"), "{stdout}");
    // Any other command with the wrong password: exit 3, the mechanism named.
    let out = run(
        env!("CARGO_BIN_EXE_kwire"),
        &["-b", sasl, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.username=admin", "-X", "sasl.password=nope", "topics", "list"],
        b"",
    );
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("SASL/PLAIN authentication failed"), "{}", String::from_utf8_lossy(&out.stderr));

    // TLS: the broker's CA, then a CA made here that did not sign it.
    let ssl = b.var("SSL");
    let ca = format!("ssl.ca.location={}", b.var("SSL_CA"));
    let (code, out) = check(ssl, &["security.protocol=SSL", &ca]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.lines().any(|l| l.starts_with("ok") && l.contains("TLS")), "{out}");
    let other_ca = dir.join("other-ca.pem");
    let made = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=not-the-broker-ca"])
        .arg("-keyout")
        .arg(dir.join("other-ca.key"))
        .arg("-out")
        .arg(&other_ca)
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let wrong = format!("ssl.ca.location={}", other_ca.display());
    let (code, out) = check(ssl, &["security.protocol=SSL", &wrong]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("FAIL  TLS"), "{out}");
    assert!(out.contains("not signed by a CA trusted here"), "{out}");

    // Without TLS at the TLS listener.
    let (code, out) = check(ssl, &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("FAIL  ApiVersions") && out.contains("like a TLS listener"), "{out}");

    // Nothing listening.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = closed.local_addr().unwrap().to_string();
    drop(closed);
    let (code, out) = check(&addr, &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("FAIL  TCP") && out.contains("nothing listens there"), "{out}");
}

#[test]
fn check_names_an_advertised_listener_that_is_unreachable() {
    let Some(b) = Broker::from_env("check_names_an_advertised_listener_that_is_unreachable") else { return };
    // The proxy answers at its bootstrap listener but advertises the broker under a name that
    // does not resolve, as a broker whose advertised.listeners name an inside-only host.
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let proxy = rt.block_on(kwire_proxy::Proxy::start(kwire_proxy::Config::new(b.var("PLAINTEXT")).advertise("broker.unreachable.invalid"))).unwrap();
    let (code, out) = check(&proxy.bootstrap().to_string(), &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.lines().any(|l| l.starts_with("ok") && l.contains("Metadata")), "{out}");
    assert!(out.contains("FAIL  Broker") && out.contains("broker.unreachable.invalid"), "{out}");
    assert!(out.contains("the advertised listener is not reachable from here"), "{out}");
    drop(proxy);
}

const ACL_COMMAND: &[&str] = &["org.apache.kafka.tools.AclCommand", "kafka.admin.AclCommand"];

/// An ACL as a comparable row: resource type, name, pattern type, principal, host, operation,
/// permission, in Kafka's names.
type AclRow = (String, String, String, String, String, String, String);

/// AclCommand's `--list` output: "Current ACLs for resource `ResourcePattern(resourceType=TOPIC,
/// name=t, patternType=LITERAL)`:" then one "(principal=User:a, host=*, operation=READ,
/// permissionType=ALLOW)" line per ACL.
fn acl_command_rows(text: &str) -> Vec<AclRow> {
    let fields = |inner: &str| -> BTreeMap<String, String> {
        inner.split(", ").filter_map(|kv| kv.split_once('=')).map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned())).collect()
    };
    let mut rows = Vec::new();
    let mut resource = None;
    for line in text.lines() {
        if let Some(rest) = line.split_once("ResourcePattern(").map(|(_, r)| r) {
            let inner = rest.split(")`").next().unwrap();
            resource = Some(fields(inner));
        } else if let (Some(r), Some(inner)) = (&resource, line.trim().strip_prefix("(principal=").map(|_| line.trim())) {
            let e = fields(inner.trim_start_matches('(').trim_end_matches(')'));
            rows.push((
                r["resourceType"].clone(),
                r["name"].clone(),
                r["patternType"].clone(),
                e["principal"].clone(),
                e["host"].clone(),
                e["operation"].clone(),
                e["permissionType"].clone(),
            ));
        }
    }
    rows.sort();
    rows
}

/// `kwire acls ... --json` lines as rows.
fn kwire_acl_rows(text: &str) -> Vec<AclRow> {
    let s = |v: &Value, k: &str| v[k].as_str().unwrap().to_owned();
    let mut rows: Vec<AclRow> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| {
            (s(&v, "resourceType"), s(&v, "resourceName"), s(&v, "patternType"), s(&v, "principal"), s(&v, "host"), s(&v, "operation"), s(&v, "permission"))
        })
        .collect();
    rows.sort();
    rows
}

#[test]
fn acls_agree_with_acl_command() {
    let Some(b) = Broker::from_env("acls_agree_with_acl_command") else { return };
    let boot = b.var("PLAINTEXT").to_owned();
    let (topic, group, txn) = (unique("cli-acl-topic"), unique("cli-acl-group"), unique("cli-acl-txn"));
    let ours_for =
        |rows: Vec<AclRow>| -> Vec<AclRow> { rows.into_iter().filter(|r| [&topic, &group, &txn].iter().any(|n| r.1.starts_with(n.as_str()))).collect() };

    // Created by Kafka's tool, listed by kwire.
    b.kafka_tool(
        ACL_COMMAND,
        &["--bootstrap-server", &boot, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Describe", "--topic", &topic],
    );
    b.kafka_tool(
        ACL_COMMAND,
        &["--bootstrap-server", &boot, "--add", "--deny-principal", "User:bob", "--deny-host", "10.0.0.9", "--operation", "Write", "--topic", &topic],
    );
    // Created by kwire, listed by Kafka's tool.
    let created =
        b.kwire_ok(&["acls", "create", "--group", &group, "--pattern-type", "prefixed", "--principal", "User:alice", "--operation", "read", "--json"], b"");
    assert_eq!(kwire_acl_rows(&created).len(), 1, "{created}");
    b.kwire_ok(
        &[
            "acls",
            "create",
            "--transactional-id",
            &txn,
            "--principal",
            "User:carol",
            "--principal",
            "User:dave",
            "--host",
            "10.0.0.1",
            "--operation",
            "Write",
            "--operation",
            "describe",
            "--permission",
            "deny",
        ],
        b"",
    );

    let expected = |rt: &str, name: &str, pt: &str, who: &str, host: &str, op: &str, perm: &str| -> AclRow {
        (rt.into(), name.into(), pt.into(), who.into(), host.into(), op.into(), perm.into())
    };
    let mut want = vec![
        expected("TOPIC", &topic, "LITERAL", "User:alice", "*", "READ", "ALLOW"),
        expected("TOPIC", &topic, "LITERAL", "User:alice", "*", "DESCRIBE", "ALLOW"),
        expected("TOPIC", &topic, "LITERAL", "User:bob", "10.0.0.9", "WRITE", "DENY"),
        expected("GROUP", &group, "PREFIXED", "User:alice", "*", "READ", "ALLOW"),
    ];
    for who in ["User:carol", "User:dave"] {
        for op in ["WRITE", "DESCRIBE"] {
            want.push(expected("TRANSACTIONAL_ID", &txn, "LITERAL", who, "10.0.0.1", op, "DENY"));
        }
    }
    want.sort();
    let theirs = ours_for(acl_command_rows(&b.kafka_tool(ACL_COMMAND, &["--bootstrap-server", &boot, "--list"])));
    let ours = ours_for(kwire_acl_rows(&b.kwire_ok(&["acls", "list", "--json"], b"")));
    assert_eq!(theirs, want);
    assert_eq!(ours, want);

    // Filters: a resource, and a principal across resources, as AclCommand filters them.
    let theirs = acl_command_rows(&b.kafka_tool(ACL_COMMAND, &["--bootstrap-server", &boot, "--list", "--topic", &topic]));
    assert_eq!(kwire_acl_rows(&b.kwire_ok(&["acls", "list", "--topic", &topic, "--json"], b"")), theirs);
    assert_eq!(theirs.len(), 3);
    let theirs = ours_for(acl_command_rows(&b.kafka_tool(ACL_COMMAND, &["--bootstrap-server", &boot, "--list", "--principal", "User:alice"])));
    assert_eq!(ours_for(kwire_acl_rows(&b.kwire_ok(&["acls", "list", "--principal", "User:alice", "--json"], b""))), theirs);
    assert_eq!(theirs.len(), 3);
    // --pattern-type match: the prefixed ACL applies to a group named after the prefix.
    let matched = kwire_acl_rows(&b.kwire_ok(&["acls", "list", "--group", &format!("{group}-billing"), "--pattern-type", "match", "--json"], b""));
    assert_eq!(ours_for(matched), vec![expected("GROUP", &group, "PREFIXED", "User:alice", "*", "READ", "ALLOW")]);
    // The table.
    let table = b.kwire_ok(&["acls", "list", "--topic", &topic], b"");
    assert!(table.starts_with("RESOURCE-TYPE"), "{table}");
    assert!(table.lines().any(|l| l.contains("User:bob") && l.contains("10.0.0.9") && l.contains("WRITE") && l.contains("DENY")), "{table}");

    // Deleted by kwire: what it prints is what AclCommand no longer lists.
    let deleted = kwire_acl_rows(&b.kwire_ok(&["acls", "delete", "--topic", &topic, "--principal", "User:alice", "--json"], b""));
    assert_eq!(deleted.len(), 2, "{deleted:?}");
    let theirs = acl_command_rows(&b.kafka_tool(ACL_COMMAND, &["--bootstrap-server", &boot, "--list", "--topic", &topic]));
    assert_eq!(theirs, vec![expected("TOPIC", &topic, "LITERAL", "User:bob", "10.0.0.9", "WRITE", "DENY")]);
    // Without a filter, delete refuses (exit 2) rather than delete every ACL.
    assert_eq!(b.kwire(&["acls", "delete"], b"").status.code(), Some(2));
    for args in [vec!["--topic", topic.as_str()], vec!["--group", group.as_str(), "--pattern-type", "prefixed"], vec!["--transactional-id", txn.as_str()]] {
        let mut all = vec!["acls", "delete"];
        all.extend(args);
        b.kwire_ok(&all, b"");
    }
    assert_eq!(ours_for(acl_command_rows(&b.kafka_tool(ACL_COMMAND, &["--bootstrap-server", &boot, "--list"]))), vec![]);
}

const CONSOLE_CONSUMER: &[&str] = &["org.apache.kafka.tools.consumer.ConsoleConsumer", "kafka.tools.ConsoleConsumer"];
const PRODUCER_PERFORMANCE: &[&str] = &["org.apache.kafka.tools.ProducerPerformance"];

/// A running `kwire tap`, its stdout gathered on a thread.
struct Tap {
    child: std::process::Child,
    bootstrap: String,
    stdout: Option<std::thread::JoinHandle<String>>,
}

/// A test that fails midway leaves no tap behind.
impl Drop for Tap {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Tap {
    fn start(b: &Broker, args: &[&str]) -> Tap {
        Tap::start_on(b, b.var("PLAINTEXT"), args)
    }

    /// A tap in front of the broker's listener at `upstream`.
    fn start_on(_b: &Broker, upstream: &str, args: &[&str]) -> Tap {
        use std::io::{BufRead, Read};
        let mut all = vec!["-b", upstream, "tap"];
        all.extend_from_slice(args);
        let mut child =
            Command::new(env!("CARGO_BIN_EXE_kwire")).args(&all).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let mut out = child.stdout.take().unwrap();
        let stdout = std::thread::spawn(move || {
            let mut s = String::new();
            out.read_to_string(&mut s).unwrap();
            s
        });
        // "kwire tap: listening on 127.0.0.1:PORT for HOST:PORT", the bootstrap listener first.
        let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        err.read_line(&mut line).unwrap();
        let bootstrap = line.split("listening on ").nth(1).and_then(|r| r.split(' ').next()).unwrap_or_else(|| panic!("tap said {line:?}")).to_owned();
        // Keep draining stderr so that the tap never blocks on it.
        std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
        Tap { child, bootstrap, stdout: Some(stdout) }
    }

    /// SIGTERM, then what it printed.
    fn stop(mut self) -> String {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "tap exited {status:?}");
        self.stdout.take().unwrap().join().unwrap()
    }
}

#[test]
fn tap_decodes_what_java_clients_send_and_counts_their_records() {
    let Some(b) = Broker::from_env("tap_decodes_what_java_clients_send_and_counts_their_records") else { return };
    let started = std::time::Instant::now();
    let topic = b.topic("cli-tap", 1);
    let tap = Tap::start(&b, &["--json"]);
    let boot = tap.bootstrap.clone();
    // Java's producer through the tap: 300 records of 100 bytes, acks=all; its own count.
    let produced = b.kafka_tool(
        PRODUCER_PERFORMANCE,
        &[
            "--topic",
            &topic,
            "--num-records",
            "300",
            "--record-size",
            "100",
            "--throughput",
            "-1",
            "--producer-props",
            &format!("bootstrap.servers={boot}"),
            "acks=all",
            "linger.ms=5",
        ],
    );
    let sent: u64 =
        produced.lines().last().and_then(|l| l.split(" records sent").next()).and_then(|n| n.trim().parse().ok()).unwrap_or_else(|| panic!("{produced}"));
    assert_eq!(sent, 300, "{produced}");
    // Java's consumer through the tap, from the beginning; what it prints is what it prints
    // reading straight from the broker.
    let consume = |servers: &str| {
        b.kafka_tool(
            CONSOLE_CONSUMER,
            &["--bootstrap-server", servers, "--topic", &topic, "--from-beginning", "--max-messages", "300", "--timeout-ms", "60000"],
        )
    };
    let consumed = consume(&boot);
    let out = tap.stop();
    assert_eq!(consumed.lines().count(), 300);
    assert_eq!(consumed, consume(b.var("PLAINTEXT")));

    let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    let (summary, frames) = lines.split_last().unwrap();
    let summary = &summary["summary"];
    // Every frame decoded: a header and a body, no error.
    for f in frames {
        assert!(f.get("error").is_none() && f["body"].is_object() && f["header"].is_object(), "{f}");
        // Requests pass as they came; only responses that carry broker addresses (or the
        // ApiVersions the proxy mediates) are rewritten.
        if f["forwarded"] != "pass" {
            assert_eq!(f["direction"], "response", "{f}");
            let api = f["apiName"].as_str().unwrap();
            assert!(["Metadata", "FindCoordinator", "ApiVersions", "DescribeCluster"].contains(&api), "{f}");
        }
    }
    assert_eq!(summary["frames"].as_u64().unwrap(), frames.len() as u64);
    assert_eq!(summary["undecodable"], 0);
    // The records the clients report.
    assert_eq!(summary["producedRecords"], 300, "{summary}");
    assert_eq!(summary["fetchedRecords"], 300, "{summary}");
    let api =
        |name: &str| summary["apis"].as_array().unwrap().iter().find(|a| a["apiName"] == name).cloned().unwrap_or_else(|| panic!("no {name} in {summary}"));
    let count = |name: &str, dir: &str| frames.iter().filter(|f| f["apiName"] == name && f["direction"] == dir).count() as u64;
    for name in ["ApiVersions", "Metadata", "Produce", "Fetch", "FindCoordinator"] {
        let a = api(name);
        assert_eq!(a["requests"].as_u64().unwrap(), count(name, "request"), "{name}");
        assert_eq!(a["responses"].as_u64().unwrap(), count(name, "response"), "{name}");
        assert!(a["requests"].as_u64().unwrap() > 0, "{name}");
    }
    // Every produce request answered (acks=all), with a latency.
    assert_eq!(api("Produce")["requests"], api("Produce")["responses"]);
    assert!(api("Produce")["maxMs"].as_f64().unwrap() > 0.0);
    // The records in the produce requests' bodies add up to what the producer sent.
    let in_bodies: usize = frames
        .iter()
        .filter(|f| f["apiName"] == "Produce" && f["direction"] == "request")
        .flat_map(|f| f["body"]["topicData"].as_array().unwrap().clone())
        .flat_map(|t| t["partitionData"].as_array().unwrap().clone())
        .map(|p| {
            let hex = b.kwire_ok(&["records", "--hex", &hex_of_base64(p["records"].as_str().unwrap())], b"");
            let v: Value = serde_json::from_str(&hex).unwrap();
            v["batches"].as_array().unwrap().iter().map(|batch| batch["records"].as_array().unwrap().len()).sum::<usize>()
        })
        .sum();
    assert_eq!(in_bodies, 300);
    b.kwire_ok(&["topics", "delete", &topic], b"");
    eprintln!("tap test: {:?}", started.elapsed());
}

/// `tap --records`: what kcat produces (keys, values, headers; one value binary) shows in the
/// Produce lines and again, read back by kcat, in the Fetch lines; `--records 1` shows one
/// record of a frame and says how many it left out.
#[test]
fn tap_records_shows_keys_values_and_headers() {
    let Some(b) = Broker::from_env("tap_records_shows_keys_values_and_headers") else { return };
    let topic = b.topic("cli-tap-records", 1);
    let tap = Tap::start(&b, &["--records"]);
    let boot = tap.bootstrap.clone();
    let kcat = |args: &[&str], stdin: &[u8]| ok(run("kcat", &[&["-b", boot.as_str()], args].concat(), stdin), &format!("kcat {args:?}"));
    // One produce request (linger), three records: text, a header, bytes that are not UTF-8.
    let input = b"k1:hello\nk2:world\nk3:\xff\xfe\n";
    kcat(&["-P", "-t", &topic, "-K", ":", "-H", "trace=t-1", "-X", "linger.ms=200"], input);
    // Keys only: the third value is not text.
    let read = kcat(&["-C", "-t", &topic, "-o", "beginning", "-c", "3", "-e", "-f", "%k\n"], b"");
    assert_eq!(read.lines().collect::<Vec<_>>(), ["k1", "k2", "k3"]);
    let out = tap.stop();
    for (key, value) in [("k1", "\"hello\""), ("k2", "\"world\""), ("k3", "base64://4=")] {
        let (shown, record) = (format!("  {topic} p0 @"), format!("key=\"{key}\" value={value} headers: trace=\"t-1\""));
        let lines: Vec<&str> = out.lines().filter(|l| l.starts_with(&shown) && l.ends_with(&record)).collect();
        // Once under the Produce line, once under a Fetch line.
        assert!(lines.len() >= 2, "{record}:\n{out}");
    }
    // Counted as without --records.
    assert!(out.contains("records produced 3, fetched 3"), "{out}");

    let tap = Tap::start(&b, &["--records", "1"]);
    let boot = tap.bootstrap.clone();
    ok(run("kcat", &["-b", boot.as_str(), "-C", "-t", &topic, "-o", "beginning", "-c", "3", "-e", "-f", "%k\n"], b""), "kcat");
    let out = tap.stop();
    assert!(out.lines().any(|l| l.trim_start().starts_with(&format!("{topic} p0 ... 2 more record(s) not shown"))), "{out}");
    b.kwire_ok(&["topics", "delete", &topic], b"");
}

/// `tap --report`: each client by the name it gives (ApiVersions v3+) and its client id, what
/// it used; and against 4.0, what it would lose. librdkafka (kcat) speaks what 4.0 serves; made
/// to speak as to a 0.9 broker (no ApiVersions, Produce v1; a 3.x broker still serves that) it
/// is told that 4.0 removed Produce v1 and which releases would do.
#[test]
fn tap_report_names_clients_and_what_an_upgrade_removes() {
    let Some(b) = Broker::from_env("tap_report_names_clients_and_what_an_upgrade_removes") else { return };
    let topic = b.topic("cli-tap-report", 1);
    let tap = Tap::start(&b, &["--report", "--target", "4.0"]);
    let boot = tap.bootstrap.clone();
    let kcat = |args: &[&str]| ok(run("kcat", &[&["-b", boot.as_str(), "-P", "-t", topic.as_str()], args].concat(), b"one\n"), &format!("kcat {args:?}"));
    kcat(&["-X", "client.id=modern-kcat"]);
    let old = b.var("KAFKA_VERSION").starts_with('3');
    if old {
        kcat(&["-X", "client.id=old-kcat", "-X", "api.version.request=false", "-X", "broker.version.fallback=0.9.0"]);
    }
    let out = tap.stop();
    let report = out.split("\nupgrade to Kafka 4.0:\n").nth(1).unwrap_or_else(|| panic!("no report:\n{out}"));
    // kcat's own name and version, and its client id, head its row and its lines.
    let modern = out.lines().find(|l| l.starts_with("librdkafka ") && l.contains(" modern-kcat ")).unwrap_or_else(|| panic!("{out}"));
    let name = modern.split("  ").next().unwrap().to_owned();
    assert!(out.contains(&format!("  {name} (modern-kcat): ApiVersions v3")), "{out}");
    assert!(report.contains(&format!("  {name} (modern-kcat): nothing 4.0 lacks")), "{report}");
    if old {
        assert!(out.lines().any(|l| l.starts_with("(not named)") && l.contains(" old-kcat ")), "{out}");
        assert!(report.contains("  (not named) (old-kcat): Produce v1: removed in 4.0 (it serves v3-v12)"), "{report}");
        assert!(report.contains("  (not named) (old-kcat): upgrade: to java 3.6.2 or librdkafka 2.0.2 or later"), "{report}");
    }
    b.kwire_ok(&["topics", "delete", &topic], b"");
}

/// The tap on TLS both ways: it terminates the clients' TLS with its own certificate (the test
/// broker's, which names 127.0.0.1) and speaks TLS to the broker's SSL listener, checking it
/// against the CA. kcat produces and Java's console consumer reads over TLS through it; the tap
/// reads every frame in between, records included.
#[test]
fn tap_reads_through_tls_both_ways() {
    let Some(b) = Broker::from_env("tap_reads_through_tls_both_ways") else { return };
    let topic = b.topic("cli-tap-tls", 1);
    let ca = b.var("SSL_CA").to_owned();
    let certs = std::path::Path::new(&ca).parent().unwrap().to_owned();
    let (cert, key) = (certs.join("broker.pem"), certs.join("broker.key"));
    let args = ["--records", "--tls-cert", cert.to_str().unwrap(), "--tls-key", key.to_str().unwrap(), "--upstream-ca", &ca];
    let tap = Tap::start_on(&b, b.var("SSL"), &args);
    let boot = tap.bootstrap.clone();
    let tls = ["-X", "security.protocol=SSL", "-X", &format!("ssl.ca.location={ca}")];
    ok(run("kcat", &[&["-b", boot.as_str(), "-P", "-t", topic.as_str()], &tls[..]].concat(), b"over-tls-1\nover-tls-2\n"), "kcat over TLS");
    let props = ["security.protocol=SSL", "ssl.truststore.type=PEM", &format!("ssl.truststore.location={ca}")];
    let mut consumer = vec!["--bootstrap-server", boot.as_str(), "--topic", topic.as_str(), "--from-beginning", "--max-messages", "2", "--timeout-ms", "60000"];
    for p in &props {
        consumer.extend_from_slice(&["--consumer-property", p]);
    }
    let consumed = b.kafka_tool(CONSOLE_CONSUMER, &consumer);
    // (4.x's tool also warns that --consumer-property has a new name.)
    assert_eq!(consumed.lines().filter(|l| !l.contains("deprecated")).collect::<Vec<_>>(), ["over-tls-1", "over-tls-2"], "{consumed}");
    let out = tap.stop();
    for value in ["over-tls-1", "over-tls-2"] {
        // Under kcat's Produce line and Java's Fetch line.
        assert!(out.lines().filter(|l| l.ends_with(&format!("value=\"{value}\""))).count() >= 2, "{value}:\n{out}");
    }
    assert!(out.contains("records produced 2, fetched 2"), "{out}");
    assert!(out.lines().any(|l| l.starts_with("apache-kafka-java ")), "Java's consumer named itself:\n{out}");
    b.kwire_ok(&["topics", "delete", &topic], b"");
}

/// The tap between Kafka's Java producer and consumer and a SASL_SSL listener: TLS terminated
/// towards the clients with the tap's own certificate (from a PKCS#12 keystore) and spoken to the
/// broker, SASL (PLAIN)
/// passed through. Every record arrives, and the password never appears in what the tap prints.
#[test]
fn tap_between_javas_clients_and_a_sasl_ssl_listener() {
    let Some(b) = Broker::from_env("tap_between_javas_clients_and_a_sasl_ssl_listener") else { return };
    let topic = b.topic("cli-tap-sasl-ssl", 1);
    let ca = b.var("SSL_CA").to_owned();
    let certs = std::path::Path::new(&ca).parent().unwrap().to_owned();
    let dir = std::env::temp_dir().join(unique("kw-tap-sasl-ssl"));
    std::fs::create_dir_all(&dir).unwrap();
    // The tap's certificate from a PKCS#12 keystore this time (scripts/kafka.sh's, password kwire).
    let p12 = certs.join("broker.p12");
    let password_file = dir.join("p12-password");
    std::fs::write(&password_file, "kwire\n").unwrap();
    let tap = Tap::start_on(
        &b,
        b.var("SASL_SSL"),
        &["--tls-p12", p12.to_str().unwrap(), "--tls-p12-password-file", password_file.to_str().unwrap(), "--upstream-ca", &ca],
    );
    let boot = tap.bootstrap.clone();
    let config = dir.join("client.properties");
    let password = "admin-secret";
    std::fs::write(
        &config,
        format!(
            "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n\
             sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" password=\"{password}\";\n\
             ssl.truststore.type=PEM\nssl.truststore.location={ca}\n"
        ),
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let produced = b.kafka_tool(
        PRODUCER_PERFORMANCE,
        &["--topic", &topic, "--num-records", "50", "--record-size", "100", "--throughput", "-1", "--producer.config", config]
            .into_iter()
            .chain(["--producer-props", &format!("bootstrap.servers={boot}"), "acks=all"])
            .collect::<Vec<_>>(),
    );
    assert!(produced.lines().any(|l| l.starts_with("50 records sent")), "{produced}");
    // The idle timeout is generous (the tool stops at --max-messages): with several JVMs
    // starting on a loaded 2-core machine, 20 s once passed with no record read.
    let consumed = b.kafka_tool(
        CONSOLE_CONSUMER,
        &["--bootstrap-server", &boot, "--topic", &topic, "--from-beginning", "--max-messages", "50", "--timeout-ms", "60000", "--consumer.config", config],
    );
    let read = consumed.lines().filter(|l| !l.contains("deprecated")).count();
    let out = tap.stop();
    assert_eq!(read, 50, "the console consumer through the tap: {consumed}\nthe tap saw: {out}");
    assert!(out.contains("records produced 50, fetched 50"), "{out}");
    assert!(out.lines().any(|l| l.contains("SaslAuthenticate")), "{out}");
    assert!(!out.contains(password), "the tap printed the password:\n{out}");
    let _ = std::fs::remove_dir_all(&dir);
    b.kwire_ok(&["topics", "delete", &topic], b"");
}

/// `tap --html FILE` opened in a real browser (Chromium, headless): the page's script runs to
/// its end with no console error (a content-security violation or a link out would print one),
/// and draws what the tap's text summary says: one mark per response, and kcat's row with the
/// same requests.
#[test]
fn tap_html_page_renders_in_a_browser() {
    let Some(b) = Broker::from_env("tap_html_page_renders_in_a_browser") else { return };
    if skip::missing_tool("tap_html_page_renders_in_a_browser", "chromium", &["--version"]) {
        return;
    }
    let topic = b.topic("cli-tap-html", 1);
    let dir = std::env::temp_dir().join(unique("kw-tap-html"));
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("report.html");
    let tap = Tap::start(&b, &["--report", "--html", page.to_str().unwrap()]);
    let boot = tap.bootstrap.clone();
    ok(run("kcat", &["-b", boot.as_str(), "-P", "-t", topic.as_str(), "-X", "client.id=html-kcat"], b"a\nb\nc\n"), "kcat -P");
    ok(run("kcat", &["-b", boot.as_str(), "-C", "-t", topic.as_str(), "-o", "beginning", "-c", "3", "-e", "-X", "client.id=html-kcat"], b""), "kcat -C");
    let out = tap.stop();
    // The text summary's row for kcat: its requests.
    let row = out.lines().find(|l| l.starts_with("librdkafka ") && l.contains(" html-kcat ")).unwrap_or_else(|| panic!("{out}"));
    let requests: u64 = row.split_whitespace().nth(5).unwrap().parse().unwrap();
    let responses: u64 = out.lines().filter(|l| l.starts_with("c") && l.contains(" -> ")).count() as u64;

    let profile = dir.join("profile");
    let browser = Command::new("timeout")
        .args(["60", "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking"])
        .args(["--disable-component-update", "--disable-sync", "--enable-logging=stderr", "--v=0"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&browser.stdout);
    let console = String::from_utf8_lossy(&browser.stderr);
    assert!(browser.status.success(), "chromium: {console}");
    assert!(dom.contains("data-rendered=\"yes\""), "the script did not finish:\n{console}");
    let logged: Vec<&str> = console.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(logged.is_empty(), "the page logged: {logged:?}");
    assert!(!console.contains("Refused to"), "{console}");
    let marks = dom.matches("class=\"event\"").count() as u64;
    assert_eq!(marks, responses, "one mark per response");
    assert!(dom.contains(&format!("data-responses=\"{responses}\"")), "{dom}");
    assert!(dom.contains(&format!("<td class=\"n requests\">{requests}</td>")), "kcat's {requests} requests:\n{dom}");
    assert!(dom.contains("Upgrade to Kafka 4.0") && dom.contains("nothing 4.0 lacks"), "{dom}");
    let _ = std::fs::remove_dir_all(&dir);
    b.kwire_ok(&["topics", "delete", &topic], b"");
}

/// The hex of a base64 string (the JSON of a records field), without another dependency.
fn hex_of_base64(s: &str) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut bits = 0u32;
    let mut n = 0;
    let mut out = String::new();
    for c in s.bytes().filter(|c| *c != b'=') {
        bits = (bits << 6) | ALPHABET.iter().position(|a| *a == c).unwrap() as u32;
        n += 6;
        if n >= 8 {
            n -= 8;
            out.push_str(&format!("{:02x}", (bits >> n) & 0xff));
        }
    }
    out
}

#[test]
fn versions_next_to_other_clients_releases() {
    let Some(b) = Broker::from_env("versions_next_to_other_clients_releases") else { return };
    for client in ["java-3.6", "java-4.4", "librdkafka-2.0", "librdkafka-2.12"] {
        let v: Value = serde_json::from_str(&b.kwire_ok(&["versions", "--client", client, "--json"], b"")).unwrap();
        for a in v["apis"].as_array().unwrap() {
            let c = &a["client"];
            let (Some(broker), Some(theirs)) = (a["broker"].as_object(), c["versions"].as_object()) else {
                // What the client sends and the broker does not serve is marked.
                if c["versions"].is_object() {
                    assert_eq!(c["problem"], "the broker does not serve what the client sends", "{a}");
                }
                continue;
            };
            let (blo, bhi, clo, chi) =
                (broker["min"].as_i64().unwrap(), broker["max"].as_i64().unwrap(), theirs["min"].as_i64().unwrap(), theirs["max"].as_i64().unwrap());
            if clo.max(blo) <= chi.min(bhi) {
                assert_eq!(c["uses"].as_i64(), Some(chi.min(bhi)), "{client}: {a}");
                assert!(c["problem"].is_null(), "{a}");
            } else {
                assert!(c["uses"].is_null() && c["problem"] == "client and broker share no version", "{a}");
            }
        }
    }
    // The table: one column per side, the client's release named.
    let table = b.kwire_ok(&["versions", "--client", "librdkafka-2.0"], b"");
    assert!(table.lines().nth(1).unwrap().contains("LIBRDKAFKA-2.0.2"), "{table}");
    assert!(table.lines().any(|l| l.split_whitespace().take(2).eq(["0", "Produce"]) && l.contains("0-7")), "{table}");
}

#[test]
fn consume_draws_progress_only_on_a_terminal() {
    let Some(b) = Broker::from_env("consume_draws_progress_only_on_a_terminal") else { return };
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipping consume_draws_progress_only_on_a_terminal: no script(1) to give it a terminal");
        return;
    }
    let topic = b.topic("cli-progress", 1);
    b.kwire_ok(&["produce", "-t", &topic], b"1\n2\n3\n");
    let records = temp_dir("cli-progress").join("records.txt");
    // stderr on a terminal (script's), the records to a file; following the topic until SIGINT.
    let command = format!("timeout -s INT 3 {} -b {} consume -t {topic} > {}", env!("CARGO_BIN_EXE_kwire"), b.var("PLAINTEXT"), records.display());
    let out = Command::new("script").args(["-qec", &command, "/dev/null"]).output().unwrap();
    let terminal = String::from_utf8_lossy(&out.stdout);
    assert!(terminal.contains("3 records in") && terminal.contains("records/s, lag 0"), "{terminal:?}");
    assert_eq!(std::fs::read_to_string(&records).unwrap(), "1\n2\n3\n");
    // stderr not a terminal: nothing drawn.
    let out = run("timeout", &["-s", "INT", "2", env!("CARGO_BIN_EXE_kwire"), "-b", b.var("PLAINTEXT"), "consume", "-t", &topic], b"");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "1\n2\n3\n");
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    b.kwire_ok(&["topics", "delete", &topic], b"");
}
