//! murmur2 and the keyed partition against Kafka's own `Utils` from the kafka-clients jar,
//! computed at test time by a single-file Java program (skips with a reason without a JDK or
//! the jar, fails then under KWIRE_REQUIRE_BROKER=1).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use kwire_client::partitioner::{murmur2, partition_for_key};

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

/// The kafka-clients jar and slf4j-api (Utils logs through it).
pub fn java_classpath() -> Option<String> {
    let m2 = PathBuf::from(std::env::var("HOME").ok()?).join(".m2/repository");
    let version = std::env::var("KWIRE_CLIENTS_VERSION").unwrap_or_else(|_| "4.4.0".into());
    let clients = m2.join(format!("org/apache/kafka/kafka-clients/{version}/kafka-clients-{version}.jar"));
    let slf4j_dir = m2.join("org/slf4j/slf4j-api");
    let mut slf4j: Vec<PathBuf> = std::fs::read_dir(&slf4j_dir).ok()?.flatten().map(|e| e.path()).collect();
    slf4j.sort();
    let slf4j = slf4j.iter().rev().find_map(|d| {
        let v = d.file_name()?.to_str()?.to_owned();
        let jar = d.join(format!("slf4j-api-{v}.jar"));
        jar.exists().then_some(jar)
    })?;
    clients.exists().then(|| format!("{}:{}", clients.display(), slf4j.display()))
}

fn skip(reason: &str) {
    let required = std::env::var_os("KWIRE_REQUIRE_BROKER").is_some_and(|v| v == "1");
    assert!(!required, "KWIRE_REQUIRE_BROKER=1: {reason}");
    eprintln!("skipping murmur2_matches_kafka_utils: {reason}");
}

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
    let Some(cp) = java_classpath() else { return skip("no kafka-clients 4.4.0 / slf4j-api jar in ~/.m2") };
    let dir = std::env::temp_dir().join(format!("kw-murmur-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("Murmur.java");
    std::fs::write(&src, JAVA).unwrap();
    let child = Command::new("java").arg("-cp").arg(&cp).arg(&src).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn();
    let Ok(mut child) = child else { return skip("no java on PATH") };
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
