//! Prints every api key this build was generated for: the main job of kwire in one table.
//!
//! `cargo run --example apis`

use kwire::ApiKey;

fn main() {
    println!("specs: {}", kwire::SPEC_DIR);
    println!("{:>4}  {:<34} {:>8}  {:>8}  {:>10}  listeners", "key", "name", "versions", "flexible", "deprecated");
    for key in ApiKey::ALL {
        let info = key.info();
        let unstable = if info.latest_version_unstable { "*" } else { "" };
        println!(
            "{:>4}  {:<34} {:>8}  {:>8}  {:>10}  {}",
            info.key,
            info.name,
            format!("{}{unstable}", info.valid),
            info.flexible.to_string(),
            info.deprecated.to_string(),
            info.listeners.join(",")
        );
    }
    let versions: usize = ApiKey::ALL.iter().map(|k| k.info().valid.iter().count()).sum();
    println!("{} api keys, {versions} request versions (* = newest version unstable)", ApiKey::ALL.len());
}
