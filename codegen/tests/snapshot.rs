//! Snapshot test of the generated code for a small fixture spec written for the purpose
//! (`tests/fixtures/snapshot/`): a nullable field, a tagged field, a nested array of structs and a
//! common struct. The expected files are in `tests/snapshots/`.
//!
//! The snapshots change only on request: run with `KWIRE_UPDATE_SNAPSHOTS=1` to rewrite them
//! after a deliberate change to the generated code, then review the diff before committing. A
//! missing or different snapshot is a failure otherwise, never rewritten silently.

use std::path::Path;

use kwire_build::internal::emit::module_name;

const UPDATE_VAR: &str = "KWIRE_UPDATE_SNAPSHOTS";

#[test]
fn generated_code_matches_the_snapshots() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let files = kwire_build::generate(&root.join("fixtures/snapshot")).unwrap_or_else(|e| panic!("{e}"));
    let update = std::env::var(UPDATE_VAR).as_deref() == Ok("1");
    let mut failures = Vec::new();
    for message in ["SnapshotRequest", "SnapshotResponse"] {
        let name = format!("{}.rs", module_name(message));
        let Some(file) = files.iter().find(|f| f.name == name) else {
            panic!("no generated file {name}; got {:?}", files.iter().map(|f| &f.name).collect::<Vec<_>>());
        };
        let path = root.join("snapshots").join(&name);
        let expected = std::fs::read_to_string(&path).ok();
        if expected.as_deref() == Some(file.content.as_str()) {
            continue;
        }
        if update {
            std::fs::create_dir_all(root.join("snapshots")).expect("create tests/snapshots");
            std::fs::write(&path, &file.content).expect("write the snapshot");
            println!("updated snapshot {}", path.display());
            continue;
        }
        failures.push(match expected {
            None => format!("{}: no snapshot yet", path.display()),
            Some(expected) => format!("{}: generated code differs\n{}", path.display(), diff(&expected, &file.content)),
        });
    }
    // The dissector's tables (what precedes the hand-written walker).
    let lua = files.iter().find(|f| f.name == kwire_build::DISSECTOR_FILE).expect("the dissector");
    let tables = lua.content.split("-- The walker:").next().unwrap_or_default();
    let path = root.join("snapshots/dissector_tables.lua");
    match std::fs::read_to_string(&path) {
        Ok(expected) if expected == tables => {}
        _ if update => std::fs::write(&path, tables).expect("write the snapshot"),
        Ok(expected) => failures.push(format!("{}: generated tables differ\n{}", path.display(), diff(&expected, tables))),
        Err(_) => failures.push(format!("{}: no snapshot yet", path.display())),
    }
    assert!(failures.is_empty(), "{}\n\nIf the change is intended, rerun with {UPDATE_VAR}=1 and review the snapshot diff.", failures.join("\n\n"));
}

/// A short line diff: the lines between the common prefix and the common suffix, with context.
fn diff(expected: &str, actual: &str) -> String {
    const CONTEXT: usize = 3;
    const MAX_LINES: usize = 60;
    let e: Vec<&str> = expected.lines().collect();
    let a: Vec<&str> = actual.lines().collect();
    let prefix = e.iter().zip(&a).take_while(|(x, y)| x == y).count();
    let suffix = e[prefix..].iter().rev().zip(a[prefix..].iter().rev()).take_while(|(x, y)| x == y).count();
    let start = prefix.saturating_sub(CONTEXT);
    let mut out = vec![format!(
        "@@ expected lines {}-{} ({} total), generated lines {}-{} ({} total) @@",
        prefix + 1,
        e.len() - suffix,
        e.len(),
        prefix + 1,
        a.len() - suffix,
        a.len()
    )];
    out.extend(e[start..prefix].iter().map(|l| format!("  {l}")));
    out.extend(e[prefix..e.len() - suffix].iter().map(|l| format!("- {l}")));
    out.extend(a[prefix..a.len() - suffix].iter().map(|l| format!("+ {l}")));
    out.extend(a[a.len() - suffix..].iter().take(CONTEXT).map(|l| format!("  {l}")));
    if out.len() > MAX_LINES {
        let more = out.len() - MAX_LINES;
        out.truncate(MAX_LINES);
        out.push(format!("... {more} more lines"));
    }
    if e.len() - suffix == prefix && a.len() - suffix == prefix {
        out.push("(the texts differ only in line endings or a trailing newline)".to_string());
    }
    out.join("\n")
}

#[test]
fn diff_shows_the_changed_lines() {
    let d = diff("a\nb\nc\nd\n", "a\nb\nX\nd\n");
    assert_eq!(d, "@@ expected lines 3-3 (4 total), generated lines 3-3 (4 total) @@\n  a\n  b\n- c\n+ X\n  d");
}
