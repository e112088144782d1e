//! The api versions kwire-fake advertises as each release (`--as-version`), checked against
//! that release's own kafka-clients jar from Maven Central: tests/clients/ApiRanges.java prints
//! what the release's `ApiKeys` give a broker listener (ZooKeeper for 2.8, KRaft after), and
//! the fake's ApiVersions answer must list exactly those apis and ranges. 2.8 and 4.0 come from
//! tables in the fake (the build has not their specs); 3.9 and 4.4 from the build's specs.

#[path = "support/bare.rs"]
mod bare;
#[path = "clients/harness.rs"]
mod harness;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use bare::Bare;
use harness::{missing_tool, run_with_timeout, skipped};
use kwire::messages::ApiVersionsRequest;
use kwire::{ApiKey, ResponseKind};
use kwire_fake::{Cluster, ClusterConfig, Release};

/// kafka-clients `version`'s jar, fetched by Maven into a directory of its own.
fn clients_jar(test: &str, version: &str) -> Option<PathBuf> {
    if missing_tool(test, "java", &["-version"]) || missing_tool(test, "mvn", &["-v"]) {
        return None;
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("kafka-clients-{version}"));
    let jar = dir.join(format!("kafka-clients-{version}.jar"));
    if !jar.exists() {
        let artifact = format!("-Dartifact=org.apache.kafka:kafka-clients:{version}");
        let out = run_with_timeout(
            Command::new("mvn").args(["-q", "-B", "dependency:copy", &artifact, &format!("-DoutputDirectory={}", dir.display())]),
            None,
            Duration::from_secs(600),
        );
        if !out.status.success() || !jar.exists() {
            skipped(test, &format!("kafka-clients {version} could not be fetched: {}", String::from_utf8_lossy(&out.stdout)));
            return None;
        }
    }
    Some(jar)
}

/// What the jar's `ApiKeys` give the listener: key -> (oldest, newest).
fn java_ranges(jar: &PathBuf, listener: &str) -> BTreeMap<i16, (i16, i16)> {
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/ApiRanges.java");
    let out = run_with_timeout(Command::new("java").arg("-cp").arg(jar).arg(source).arg(listener), None, Duration::from_secs(300));
    assert!(out.status.success(), "ApiRanges.java: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let n: Vec<i16> = l.split_whitespace().map(|x| x.parse().expect("a number")).collect();
            (n[0], (n[1], n[2]))
        })
        .collect()
}

/// The fake's ApiVersions answer as `release`: key -> (oldest, newest).
fn advertised(release: Release) -> BTreeMap<i16, (i16, i16)> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap();
    runtime.block_on(async {
        let cluster = Cluster::start(ClusterConfig::default().release(release));
        let mut bare = Bare::new(cluster.connect("broker-0:9092").await.unwrap(), "api-ranges");
        let Some(ResponseKind::ApiVersions(r)) = bare.call(ApiKey::ApiVersions, 3, ApiVersionsRequest::default().into()).await else {
            panic!("no ApiVersions answer")
        };
        assert_eq!(r.error_code, 0);
        r.api_keys.iter().map(|k| (k.api_key, (k.min_version, k.max_version))).collect()
    })
}

fn check(test: &str, release: Release, jar_version: &str, listener: &str) {
    let Some(jar) = clients_jar(test, jar_version) else { return };
    let java = java_ranges(&jar, listener);
    assert!(java.len() > 40, "{java:?}");
    let fake = advertised(release);
    let name = |k: &i16| ApiKey::from_i16(*k).map_or_else(|| k.to_string(), |a| a.name().to_owned());
    let diff: Vec<String> = java
        .keys()
        .chain(fake.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .filter(|k| java.get(k) != fake.get(k))
        .map(|k| format!("{}: Kafka {jar_version} {:?}, the fake {:?}", name(k), java.get(k), fake.get(k)))
        .collect();
    assert!(diff.is_empty(), "the fake as {release} against kafka-clients {jar_version} ({listener}):\n{}", diff.join("\n"));
}

#[test]
fn as_2_8_advertises_what_kafka_2_8_brokers_do() {
    check("api_ranges_2_8", Release::V2_8, "2.8.2", "ZK_BROKER");
}

#[test]
fn as_4_0_advertises_what_kafka_4_0_brokers_do() {
    check("api_ranges_4_0", Release::V4_0, "4.0.0", "BROKER");
}

#[test]
fn as_3_9_advertises_what_kafka_3_9_brokers_do() {
    check("api_ranges_3_9", Release::V3_9, "3.9.2", "BROKER");
}

#[test]
fn as_4_4_advertises_what_kafka_4_4_brokers_do() {
    check("api_ranges_4_4", Release::V4_4, "4.4.0", "BROKER");
}
