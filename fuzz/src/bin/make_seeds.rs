//! Writes the seed corpus: `corpus/<target>/<name>` for every seed of `kwire_fuzz::seeds`.
//! `run.sh` runs this first; the files are not committed.

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let root = std::env::args().nth(1).map(PathBuf::from).unwrap_or_else(|| PathBuf::from("corpus"));
    let seeds = kwire_fuzz::seeds::seeds();
    for (target, name, data) in &seeds {
        let dir = root.join(target);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join(name), data)?;
    }
    println!("wrote {} seeds under {}", seeds.len(), root.display());
    Ok(())
}
