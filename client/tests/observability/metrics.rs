//! The client's metrics as an exporter serves them: `examples/metrics.rs` (the Prometheus
//! exporter's HTTP listener, a producer, a consumer group member) against the real broker,
//! scraped over HTTP. Every metric name is Java's (see `kwire_client::metrics`), and the values
//! add up to what the example did: its records sent, read, and committed once.

use crate::common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use kwire_client::metrics::{connection, consumer, producer};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

fn example() -> PathBuf {
    // target/<profile>/deps/<this test> -> target/<profile>/examples/metrics (cargo test builds it).
    let exe = std::env::current_exe().expect("test binary path");
    let path = exe.parent().and_then(|d| d.parent()).expect("target/<profile>").join("examples/metrics");
    assert!(path.exists(), "{} is missing: `cargo test -p kwire-client` builds it", path.display());
    path
}

/// The Prometheus name of a metric: what the exporter writes for `kafka.producer.x-y`.
fn prometheus(name: &str) -> String {
    name.replace(['.', '-'], "_")
}

/// `name{labels} value` lines of the exposition format, by `name{labels}`.
fn parse(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let (key, value) = l.rsplit_once(' ')?;
            Some((key.to_owned(), value.parse().ok()?))
        })
        .collect()
}

async fn scrape(addr: &str) -> String {
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("the metrics endpoint");
    s.write_all(format!("GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes()).await.unwrap();
    let mut response = String::new();
    s.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    assert!(head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_under_javas_names_on_a_prometheus_endpoint() {
    let Some(b) = common::Broker::from_env("metrics_under_javas_names_on_a_prometheus_endpoint") else { return };
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let listen = format!("127.0.0.1:{port}");
    let topic = common::unique("kw-metrics");
    let count = 3000usize;
    let mut child = tokio::process::Command::new(example())
        .args(["--bootstrap", b.var("PLAINTEXT"), "--listen", &listen, "--topic", &topic, "--count", &count.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the example runs");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let ready = tokio::time::timeout(Duration::from_secs(90), lines.next_line()).await.expect("the example within 90 s").unwrap();
    assert_eq!(ready.as_deref(), Some(format!("serving http://{listen}/metrics").as_str()), "the example failed");

    let text = scrape(&listen).await;
    let m = parse(&text);
    let id = "{client_id=\"metrics-example\"}";
    let get = |name: &str, suffix: &str| -> f64 {
        let key = format!("{}{suffix}{id}", prometheus(name));
        *m.get(&key).unwrap_or_else(|| panic!("no {key} in\n{text}"))
    };
    let n = count as f64;

    // The producer: each record sent once, plus once per retry; none failed.
    let retries = get(producer::RECORD_RETRY_TOTAL, "");
    assert_eq!(get(producer::RECORD_SEND_TOTAL, ""), n + retries);
    assert_eq!(get(producer::RECORD_ERROR_TOTAL, ""), 0.0);
    assert_eq!(get(producer::RECORDS_PER_REQUEST, "_sum"), n + retries, "records per request add up to the records sent");
    let requests = get(producer::REQUEST_TOTAL, "");
    assert_eq!(get(producer::RECORDS_PER_REQUEST, "_count"), requests);
    let latencies = get(producer::REQUEST_LATENCY, "_count");
    assert!(latencies >= 1.0 && latencies <= requests, "{latencies} latencies of {requests} requests");
    assert!(get(producer::REQUEST_LATENCY, "_sum") > 0.0);
    assert!(get(producer::BATCH_SIZE, "_count") >= requests);
    assert!(get(producer::BATCH_SIZE, "_sum") > n * 10.0, "batches hold at least the values");
    assert!(get(producer::COMPRESSION_RATE, "_count") >= 1.0);
    assert!(get(producer::RECORD_QUEUE_TIME, "_count") >= 1.0);
    assert_eq!(get(producer::PRODUCE_THROTTLE_TIME, "_sum"), 0.0);
    assert_eq!(get(producer::BUFFER_TOTAL_BYTES, ""), f64::from(32u32 << 20));
    assert_eq!(get(producer::BUFFER_AVAILABLE_BYTES, ""), f64::from(32u32 << 20), "every record acknowledged: all memory free");

    // The consumer: every record once, its key and value bytes, one commit, no lag left.
    assert_eq!(get(consumer::RECORDS_CONSUMED_TOTAL, ""), n);
    assert_eq!(get(consumer::BYTES_CONSUMED_TOTAL, ""), n * ("key-000000".len() + "value-000000".len()) as f64);
    let fetches = get(consumer::FETCH_TOTAL, "");
    let fetch_latencies = get(consumer::FETCH_LATENCY, "_count");
    assert!(fetch_latencies >= 1.0 && fetch_latencies <= fetches, "{fetch_latencies} latencies of {fetches} fetches");
    assert_eq!(get(consumer::RECORDS_PER_REQUEST, "_sum"), n, "records fetched");
    assert!(get(consumer::FETCH_SIZE, "_sum") > n * 22.0, "fetched batches hold at least the keys and values");
    assert_eq!(get(consumer::RECORDS_LAG_MAX, ""), 0.0);
    assert_eq!(get(consumer::COMMIT_TOTAL, ""), 1.0);
    assert_eq!(get(consumer::COMMIT_LATENCY, "_count"), 1.0);
    assert!(get(consumer::REBALANCE_TOTAL, "") >= 1.0);
    assert_eq!(get(consumer::ASSIGNED_PARTITIONS, ""), 3.0);
    assert_eq!(get(consumer::FETCH_THROTTLE_TIME, "_sum"), 0.0);

    // The connections: some open, none authenticated (PLAINTEXT), a response to each request
    // but those still waiting (the consumer's long-polling fetch).
    let open = get(connection::CONNECTION_COUNT, "");
    assert!(open >= 2.0, "the producer's and the consumer's connections: {open}");
    assert!(get(connection::CONNECTION_CREATION_TOTAL, "") >= open);
    let (sent, answered) = (get(connection::REQUEST_TOTAL, ""), get(connection::RESPONSE_TOTAL, ""));
    assert!(answered <= sent && sent >= requests + fetches, "{sent} requests, {answered} responses");
    assert_eq!(get(connection::SUCCESSFUL_AUTHENTICATION_TOTAL, ""), 0.0);

    drop(child.stdin.take()); // the example closes its consumer and exits
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait()).await.expect("exits").unwrap();
    assert!(status.success(), "{status}");
}
