//! murmur2 and the keyed partition against Kafka's own `Utils` from the kafka-clients jar,
//! computed at test time by a single-file Java program (skips with a reason without a JDK or
//! the jar, fails then under KWIRE_REQUIRE_BROKER=1).

use std::io::Write;
use std::process::{Command, Stdio};

use kwire_client::partitioner::{murmur2, partition_for_key};

use crate::common::java::{classpath as java_classpath, skip};

const JAVA: &str = r#"
import org.apache.kafka.common.utils.Utils;
import java.io.*;
public class Murmur {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            byte[] key = new byte[line.length() / 2];
            for (int i = 0; i < key.length; i++) key[i] = (byte) Integer.parseInt(line.substring(2 * i, 2 * i + 2), 16);
            int h = Utils.murmur2(key);
            System.out.println(h + " " + (Utils.toPositive(h) % 7) + " " + (Utils.toPositive(h) % 3));
        }
    }
}
"#;

fn keys() -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = ["", "a", "hello", "ab", "abc", "abcd", "abcde", "kwire", "\u{00e9}t\u{00e9}", "key-with-some-length-to-it"]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
    keys.extend((0..200).map(|i| format!("key-{i}").into_bytes()));
    keys.push((0..=255u8).collect());
    keys.push(vec![0xff; 13]);
    keys
}

#[test]
fn murmur2_matches_kafka_utils() {
    const TEST: &str = "murmur2_matches_kafka_utils";
    let Some(cp) = java_classpath() else { return skip(TEST, "no kafka-clients 4.4.0 / slf4j-api jar in ~/.m2") };
    let dir = std::env::temp_dir().join(format!("kw-murmur-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("Murmur.java");
    std::fs::write(&src, JAVA).unwrap();
    let child = Command::new("java").arg("-cp").arg(&cp).arg(&src).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn();
    let Ok(mut child) = child else { return skip(TEST, "no java on PATH") };
    let keys = keys();
    {
        let mut stdin = child.stdin.take().unwrap();
        for k in &keys {
            let hex: String = k.iter().map(|b| format!("{b:02x}")).collect();
            writeln!(stdin, "{hex}").unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "java failed: {}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<String> = String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), keys.len());
    for (k, line) in keys.iter().zip(&lines) {
        let ours = format!("{} {} {}", murmur2(k), partition_for_key(k, 7), partition_for_key(k, 3));
        assert_eq!(&ours, line, "key {:?}", String::from_utf8_lossy(k));
    }
    println!("murmur2: {} keys agree with Kafka's Utils (\"\" = {}, \"a\" = {}, \"hello\" = {})", keys.len(), lines[0], lines[1], lines[2]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Java's `BuiltInPartitioner.updatePartitionLoadStats` on lines of `all;partition:queue,...`,
/// printing its cumulative frequency table and partitions (or `none`), read by reflection.
const LOAD_JAVA: &str = r#"
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import java.io.*;
import java.lang.reflect.*;
public class Load {
    static Object field(Object o, String name) throws Exception {
        Field f = o.getClass().getDeclaredField(name);
        f.setAccessible(true);
        return f.get(o);
    }
    public static void main(String[] args) throws Exception {
        Class<?> logContext = Class.forName(args[0]);
        Object log = logContext.getConstructor().newInstance();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] parts = line.split(";", -1);
            int all = Integer.parseInt(parts[0]);
            String[] queues = parts[1].isEmpty() ? new String[0] : parts[1].split(",");
            int[] sizes = new int[all];
            int[] ids = new int[all];
            for (int i = 0; i < queues.length; i++) {
                String[] pq = queues[i].split(":");
                ids[i] = Integer.parseInt(pq[0]);
                sizes[i] = Integer.parseInt(pq[1]);
            }
            BuiltInPartitioner p = (BuiltInPartitioner) BuiltInPartitioner.class
                .getConstructor(logContext, String.class, int.class, boolean.class, String.class)
                .newInstance(log, "t", 16384, false, null);
            p.updatePartitionLoadStats(sizes, ids, new String[all], queues.length);
            Object holder = field(p, "partitionLoadStatsHolder");
            if (holder == null) { System.out.println("none"); continue; }
            Object stats = field(holder, "total");
            int length = (Integer) field(stats, "length");
            int[] cft = (int[]) field(stats, "cumulativeFrequencyTable");
            int[] pids = (int[]) field(stats, "partitionIds");
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < length; i++) sb.append(i == 0 ? "" : ",").append(pids[i]).append(":").append(cft[i]);
            System.out.println(sb);
        }
    }
}
"#;

/// Adaptive partitioning's statistics (KIP-794) against Java's `BuiltInPartitioner` itself:
/// random queue lengths over 1 to 8 partitions, some without a leader.
#[test]
fn load_stats_match_javas_built_in_partitioner() {
    const TEST: &str = "load_stats_match_javas_built_in_partitioner";
    use kwire_client::partitioner::LoadStats;
    let Some(cp) = java_classpath() else { return skip(TEST, "no kafka-clients 4.4.0 / slf4j-api jar in ~/.m2") };
    let dir = std::env::temp_dir().join(format!("kw-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("Load.java");
    std::fs::write(&src, LOAD_JAVA).unwrap();
    // Kafka 4's signatures (the rack-aware constructor and load statistics, LogContext in an
    // internals package).
    let log_context = "org.apache.kafka.common.utils.internals.LogContext";
    let child = Command::new("java").arg("-cp").arg(&cp).arg(&src).arg(log_context).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn();
    let Ok(mut child) = child else { return skip(TEST, "no java on PATH") };
    // A small deterministic generator: the same cases every run.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let mut cases: Vec<(usize, Vec<(i32, usize)>)> =
        vec![(3, vec![(0, 0), (1, 3), (2, 1)]), (3, vec![(0, 2), (1, 2), (2, 2)]), (3, vec![(0, 2), (2, 2)]), (1, vec![(0, 4)]), (4, vec![])];
    for _ in 0..300 {
        let all = 1 + next(8) as usize;
        let mut queues = Vec::new();
        for p in 0..all as i32 {
            if next(5) != 0 {
                queues.push((p, next(4) as usize * next(3) as usize));
            }
        }
        cases.push((all, queues));
    }
    {
        let mut stdin = child.stdin.take().unwrap();
        for (all, queues) in &cases {
            let q: Vec<String> = queues.iter().map(|(p, n)| format!("{p}:{n}")).collect();
            writeln!(stdin, "{all};{}", q.join(",")).unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "java failed: {}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<String> = String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), cases.len());
    let mut weighted = 0;
    for ((all, queues), java) in cases.iter().zip(&lines) {
        let ours = match LoadStats::new(queues, *all) {
            None => "none".to_owned(),
            Some(load) => {
                weighted += 1;
                let ids = queues.iter().map(|(p, _)| *p);
                ids.zip(load.cumulative()).map(|(p, c)| format!("{p}:{c}")).collect::<Vec<_>>().join(",")
            }
        };
        assert_eq!(&ours, java, "{all} partitions, queues {queues:?}");
    }
    assert!(weighted > 100 && weighted < cases.len(), "both kinds of case: {weighted} weighted of {}", cases.len());
    println!("load stats: {} cases agree with Java's BuiltInPartitioner ({weighted} weighted)", cases.len());
    let _ = std::fs::remove_dir_all(&dir);
}
