//! Running a single-file Java program against the kafka-clients jar, for tests that check
//! kwire-client against Java's own classes. Included by path (`#[path]`), also by unit tests
//! in the crate.

use std::path::PathBuf;

/// The kafka-clients jar (`KWIRE_CLIENTS_VERSION`, 4.4.0 by default) and slf4j-api, from the
/// local Maven repository (`scripts/setup.sh` puts them there).
pub fn classpath() -> Option<String> {
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

/// Skips `test` with a printed reason; fails instead under `KWIRE_REQUIRE_BROKER=1` (CI, where
/// the JDK and the jars are installed).
pub fn skip(test: &str, reason: &str) {
    let required = std::env::var_os("KWIRE_REQUIRE_BROKER").is_some_and(|v| v == "1");
    assert!(!required, "KWIRE_REQUIRE_BROKER=1: {test}: {reason}");
    eprintln!("skipping {test}: {reason}");
}
