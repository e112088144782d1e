//! Skipping a test that needs a tool this machine lacks, never silently: shared by the test
//! crates of the workspace (each includes this file with `#[path]`).

#![allow(dead_code)] // each test crate uses what it needs of this file

use std::io::Write;
use std::process::{Command, Stdio};

/// Records that `test` did not run and why: on stderr, and as a line in the file that
/// `KWIRE_SKIP_LOG` names (scripts/test.sh sets it and lists every line at the end of the run).
/// With `KWIRE_REQUIRE_CLIENTS` set (CI) a skip is a failure instead.
pub fn skipped(test: &str, why: &str) {
    assert!(std::env::var_os("KWIRE_REQUIRE_CLIENTS").is_none(), "{test}: {why}");
    eprintln!("skipping {test}: {why}");
    if let Some(path) = std::env::var_os("KWIRE_SKIP_LOG") {
        if let Ok(mut log) = std::fs::OpenOptions::new().append(true).create(true).open(path) {
            let _ = writeln!(log, "{test}: {why}");
        }
    }
}

/// Whether `program probe...` fails to run or fails; if so the test is [`skipped`] with a
/// reason naming the probe and scripts/setup.sh, which installs the tools the tests use.
pub fn missing_tool(test: &str, program: &str, probe: &[&str]) -> bool {
    let ok = Command::new(program).args(probe).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    if !ok {
        skipped(test, &format!("`{program} {}` fails (scripts/setup.sh installs it)", probe.join(" ")));
    }
    !ok
}
