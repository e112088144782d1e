//! `--trace DIR`: every frame of every connection, as it was read and as it was written, for
//! the tests to check (no broker address reaches a client; what was not rewritten is the bytes
//! that came). One file per connection, one line per frame:
//! `DIRECTION API VERSION CORRELATION MODE HEX`, DIRECTION being `c2p` (read from the client),
//! `p2u` (written to the broker), `u2p` (read from the broker) or `p2c` (written to the client),
//! MODE `in` for frames read, else `pass`, `rewritten` or `local` (answered by the proxy).

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Where traces go.
pub struct Traces {
    dir: PathBuf,
}

impl Traces {
    /// Traces into `dir`, created if missing.
    pub fn new(dir: PathBuf) -> Traces {
        if let Err(e) = std::fs::create_dir_all(&dir) {
            eprintln!("proxy: --trace {}: {e}", dir.display());
        }
        Traces { dir }
    }

    /// The trace of connection `id`; frames are dropped when the file cannot be made.
    pub fn connection(&self, id: u64) -> Arc<ConnTrace> {
        let path = self.dir.join(format!("conn-{id}.trace"));
        let file = std::fs::File::create(&path)
            .map_err(|e| eprintln!("proxy: trace {}: {e}", path.display()))
            .ok();
        Arc::new(ConnTrace { file: Mutex::new(file) })
    }
}

/// One connection's trace.
pub struct ConnTrace {
    file: Mutex<Option<std::fs::File>>,
}

impl ConnTrace {
    /// Records one frame (size prefix included).
    pub fn frame(&self, direction: &str, api: i16, version: i16, correlation_id: i32, mode: &str, bytes: &[u8]) {
        let line = format!("{direction} {api} {version} {correlation_id} {mode} {}\n", hex::encode(bytes));
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        // One write per line, unbuffered: the tests read traces while the proxy runs.
        if let Some(f) = file.as_mut() {
            if f.write_all(line.as_bytes()).is_err() {
                *file = None;
            }
        }
    }
}
