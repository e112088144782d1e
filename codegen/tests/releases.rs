//! Every Apache Kafka release's spec set generates: the kafka-clients jars in
//! `KWIRE_RELEASE_JARS` (a folder; `scripts/releases.sh` fills it from Maven Central and
//! then builds kwire on the newest patch of each minor release), each distinct spec set alone
//! and the oldest merged with each newer one. Without the variable the test says so and passes, unless
//! `KWIRE_REQUIRE_RELEASES` is set (the script sets it).

use std::path::PathBuf;

use kwire_build::internal::load_model;
use kwire_build::{generate, generate_merged};

/// `kafka-clients-2.4.0.jar` -> (2, 4, 0).
fn version(jar: &std::path::Path) -> Option<(u32, u32, u32)> {
    let v = jar.file_stem()?.to_str()?.strip_prefix("kafka-clients-")?;
    let mut parts = v.split('.').map(|p| p.parse::<u32>().ok());
    Some((parts.next()??, parts.next()??, parts.next()??))
}

/// The jar's `common/message/*.json` entries (what the generator reads), by name.
fn spec_entries(jar: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(jar).expect("the jar opens")).expect("a jar");
    let mut entries = Vec::new();
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).expect("a jar entry");
        if entry.name().starts_with("common/message/") && entry.name().ends_with(".json") {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut entry, &mut bytes).expect("the entry reads");
            entries.push((entry.name().to_owned(), bytes));
        }
    }
    entries.sort();
    entries
}

#[test]
fn every_release_generates_alone_and_merged() {
    let Some(dir) = std::env::var_os("KWIRE_RELEASE_JARS") else {
        assert!(std::env::var_os("KWIRE_REQUIRE_RELEASES").is_none(), "KWIRE_RELEASE_JARS is not set");
        eprintln!("skipping: set KWIRE_RELEASE_JARS to a folder of kafka-clients jars (scripts/releases.sh)");
        return;
    };
    let mut jars: Vec<(PathBuf, (u32, u32, u32))> = std::fs::read_dir(&dir)
        .expect("KWIRE_RELEASE_JARS is a folder")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter_map(|p| version(&p).map(|v| (p, v)))
        .collect();
    jars.sort_by_key(|(_, v)| *v);
    assert!(!jars.is_empty(), "no kafka-clients-X.Y.Z.jar in {dir:?}");
    // Patch releases often carry the same spec files as the one before (28 distinct sets in 54
    // releases from 2.4.0 to 4.4.0): the generator is deterministic, so each set is generated
    // once, from its first release.
    let mut seen = std::collections::HashSet::new();
    let all = jars.len();
    jars.retain(|(jar, _)| seen.insert(spec_entries(jar)));
    eprintln!("{} distinct spec sets in {all} releases", jars.len());
    // Each release is generated on its own: the jars are shared out among the cores.
    let results = on_every_core(&jars, |(jar, v)| {
        load_model(jar)
            .and_then(|m| Ok((m.apis.iter().filter(|a| !a.valid.is_empty()).count(), generate(jar)?.len())))
            .map(|(apis, files)| format!("{v:?}: {apis} api keys, {files} files"))
            .map_err(|e| format!("{}: {e}", jar.display()))
    });
    let failures: Vec<String> = results.iter().filter_map(|r| r.as_ref().err().cloned()).collect();
    results.iter().flatten().for_each(|line| eprintln!("{line}"));
    assert!(failures.is_empty(), "{} of {} releases fail:\n{}", failures.len(), jars.len(), failures.join("\n"));
    // The oldest release merged with each newer one: every version from v0 in one build. (Some
    // neighbouring releases cannot be merged: apis still in development changed their v0
    // without a version bump, such as KRaft's EndQuorumEpoch between 2.7 and 2.8.)
    let (oldest, _) = &jars[0];
    let results = on_every_core(&jars[1..], |(jar, v)| {
        generate_merged(&[oldest.clone(), jar.clone()]).map(drop).map_err(|e| format!("{} + {v:?}: {e}", oldest.display()))
    });
    let failures: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    assert!(failures.is_empty(), "{} merges fail:\n{}", failures.len(), failures.join("\n"));
}

/// `f` on every item, the items shared out among as many threads as there are cores; the
/// results in the items' order.
fn on_every_core<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(items.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut results: Vec<(usize, R)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break mine };
                        mine.push((i, f(item)));
                    }
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().expect("a generator thread panicked")).collect()
    });
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}
