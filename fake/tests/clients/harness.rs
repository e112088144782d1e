//! Starts the `kwire-fake` binary (cargo builds it for this package's tests) on a free port,
//! reads its request log (`--verbose`), and stops it with SIGTERM when dropped.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Generous: the machine may be loaded.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

/// `target/<profile>/examples/<name>` (an example of the kwire crate, which `cargo test
/// --workspace` builds), next to the test binary's `deps` directory; `None` when it was not
/// built.
pub fn example_binary(name: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().expect("test binary path");
    let profile_dir = exe.parent().and_then(Path::parent).expect("target/<profile>");
    Some(profile_dir.join("examples").join(name)).filter(|p| p.exists())
}

#[path = "../../../tests/support/skip.rs"]
mod skip;
#[allow(unused_imports)] // not every test crate that includes the harness needs it
pub use skip::{missing_tool, skipped};

pub struct Broker {
    child: Child,
    pub addr: String,
    pub log_path: PathBuf,
}

impl Broker {
    pub fn start(args: &[&str]) -> Broker {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("broker-logs");
        std::fs::create_dir_all(&dir).expect("log dir");
        let log_path = dir.join(format!("broker-{}-{}.log", std::process::id(), unique()));
        let log = std::fs::File::create(&log_path).expect("log file");
        let mut child = Command::new(env!("CARGO_BIN_EXE_kwire-fake"))
            .args(["--listen", "127.0.0.1:0", "--verbose"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("spawn kwire-fake");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let mut broker = Broker { child, addr: String::new(), log_path };
        let line = rx.recv_timeout(START_TIMEOUT).unwrap_or_default();
        let Some(addrs) = line.trim().strip_prefix("listening on ") else {
            panic!("kwire-fake did not start: {line:?}\n{}", broker.log());
        };
        broker.addr = addrs.to_owned();
        broker
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// (api name -> versions) of every request whose client id starts with `client_prefix`.
    pub fn versions_used(&self, client_prefix: &str) -> BTreeMap<String, BTreeSet<i16>> {
        let mut out: BTreeMap<String, BTreeSet<i16>> = BTreeMap::new();
        for line in self.log().lines() {
            let Some(rest) = line.strip_prefix("request ") else { continue };
            let field = |name: &str| rest.split(' ').find_map(|f| f.strip_prefix(name)).map(|v| v.trim_matches('"').to_owned());
            let (Some(api), Some(version), Some(client)) = (field("api="), field("version="), field("client_id=")) else {
                continue;
            };
            if client.starts_with(client_prefix) {
                if let Ok(v) = version.parse() {
                    out.entry(api).or_default().insert(v);
                }
            }
        }
        out
    }

    /// Stops the broker with SIGTERM and returns its exit status (`None` if it had to be killed).
    pub fn stop(mut self) -> Option<ExitStatus> {
        self.terminate()
    }

    fn terminate(&mut self) -> Option<ExitStatus> {
        if let Ok(Some(status)) = self.child.try_wait() {
            return Some(status);
        }
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        None
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.terminate();
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// Runs a command to completion with a time limit, killing it past the limit.
pub fn run_with_timeout(cmd: &mut Command, stdin: Option<Vec<u8>>, timeout: Duration) -> std::process::Output {
    use std::io::Write;
    let mut child = cmd
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().expect("stdin");
        std::thread::spawn(move || {
            let _ = pipe.write_all(&input);
        });
    }
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(timeout) {
        Ok(output) => output.expect("wait for child"),
        Err(_) => {
            let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
            let output = rx.recv_timeout(Duration::from_secs(10));
            panic!(
                "{cmd:?} did not finish within {timeout:?}; stderr: {}",
                output.ok().and_then(|o| o.ok()).map(|o| String::from_utf8_lossy(&o.stderr).into_owned()).unwrap_or_default()
            );
        }
    }
}

/// Writes what a real client used to `target/tmp/broker-versions/<test>.txt` and prints it.
pub fn record_versions(test: &str, versions: &BTreeMap<String, BTreeSet<i16>>) {
    let text: String = versions.iter().map(|(api, vs)| format!("{api} {}\n", vs.iter().map(i16::to_string).collect::<Vec<_>>().join(","))).collect();
    println!("api versions used by {test}:\n{text}");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("broker-versions");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join(format!("{test}.txt")), text);
}

/// The compression codecs of the batches a plain Fetch (v11, from offset 0) returns for
/// partition 0 of `topic`, read with kwire's own codec over a blocking socket.
pub fn stored_codecs(addr: &str, topic: &str) -> BTreeSet<String> {
    use kwire::codec::{ClientCodec, OutboundRequest};
    use kwire::messages::fetch_request::{FetchPartition, FetchTopic};
    use kwire::messages::FetchRequest;
    use kwire::runtime::records::Batches;
    use kwire::{ApiKey, ByteString, BytesMut, ResponseKind};
    use std::io::{Read, Write};

    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    let mut codec = ClientCodec::new();
    let request = FetchRequest {
        replica_id: -1,
        max_wait_ms: 0,
        max_bytes: 1 << 30,
        topics: vec![FetchTopic {
            topic: ByteString::from(topic.to_owned()),
            partitions: vec![FetchPartition { partition: 0, fetch_offset: 0, partition_max_bytes: 1 << 30, ..Default::default() }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut buf = BytesMut::new();
    codec.encode_request(OutboundRequest::new(ApiKey::Fetch, 11, 1, request.into()), &mut buf).expect("encode");
    stream.write_all(&buf).expect("send");
    buf.clear();
    let mut chunk = vec![0u8; 64 * 1024];
    // Bounded by the read timeout and the frame size limit.
    let response = loop {
        if let Some(frame) = codec.decode_response(&mut buf).expect("decode") {
            break frame;
        }
        let n = stream.read(&mut chunk).expect("read");
        assert!(n > 0, "broker closed the connection");
        buf.extend_from_slice(&chunk[..n]);
    };
    let ResponseKind::Fetch(fetch) = response.body else { panic!("not a Fetch response") };
    // `records` is nullable in the 3.9 specs, not in later ones: `From` covers both.
    #[allow(clippy::useless_conversion)]
    let records = Option::<kwire::Bytes>::from(fetch.responses[0].partitions[0].records.clone()).unwrap_or_default();
    Batches::new(records).map(|b| b.expect("batch").compression().map(|c| c.name().to_owned()).unwrap_or_default()).collect()
}
