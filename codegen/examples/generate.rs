//! Generates the Rust code for Kafka's message specs, as kwire's build script does, and lists
//! what came out: every api key with its versions and the release each comes from.
//!
//! ```sh
//! cargo run -p kwire-build --example generate                     # Kafka 3.9.0 and 4.4.0 merged
//! cargo run -p kwire-build --example generate -- SPECS_DIR_OR_JAR...  # other releases, oldest first
//! ```
//!
//! The files go to `target/kwire-generated/`: one per message, the index `messages.rs`, and
//! the Wireshark dissector `kwire.lua`.

use std::path::{Path, PathBuf};

use kwire_build::internal::load_merged_model;
use kwire_build::{Config, Error};

fn main() -> Result<(), Error> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = manifest.parent().unwrap_or(manifest);
    let mut dirs: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if dirs.is_empty() {
        let shared = root.join("../shared/message-specs");
        dirs = vec![shared.join("kafka-3.9.0"), shared.join("kafka-4.4.0")];
    }
    let out = root.join("target/kwire-generated");
    let started = std::time::Instant::now();
    let files = Config::new().generate_dir(&dirs, &out)?;
    let rust: Vec<_> = files.iter().filter(|f| f.extension().is_some_and(|e| e == "rs")).collect();
    let lines: usize = rust.iter().filter_map(|f| std::fs::read_to_string(f).ok()).map(|t| t.lines().count()).sum();
    let elapsed = started.elapsed();

    let model = load_merged_model(&dirs)?;
    println!("{:>4}  {:<38} {:<9} {:<9} from", "key", "api", "versions", "flexible");
    let (mut keys, mut versions) = (0, 0);
    for api in model.apis.iter().filter(|a| !a.valid.is_empty()) {
        keys += 1;
        versions += api.valid.iter().count();
        // Which release each version comes from: the newest release that has it.
        let mut from: Vec<String> = Vec::new();
        for release in api.releases.iter().rev() {
            let own = release.valid.iter().filter(|v| !from_any(api, release, *v)).count();
            if own > 0 {
                from.push(format!("{} ({own})", release.release));
            }
        }
        from.reverse();
        let flexible = if api.flexible.is_empty() { "-".to_string() } else { format!("{}+", api.flexible.lo) };
        println!("{:>4}  {:<38} {:<9} {:<9} {}", api.key, api.name, api.valid.to_string(), flexible, from.join(", "));
    }
    println!(
        "\n{keys} api keys, {versions} request versions (and their responses), {} messages: {} files, {lines} lines of Rust, and a Wireshark dissector, in {} ({:.1} s)",
        model.messages.len(),
        rust.len(),
        out.display(),
        elapsed.as_secs_f64()
    );
    Ok(())
}

/// Whether a newer release than `release` also has version `v` of `api` (the build takes each
/// version from the newest release that defines it).
fn from_any(api: &kwire_build::internal::model::Api, release: &kwire_build::internal::model::ReleaseApi, v: i16) -> bool {
    let newer = api.releases.iter().skip_while(|r| r.release != release.release).skip(1);
    newer.into_iter().any(|r| r.valid.contains(v))
}
