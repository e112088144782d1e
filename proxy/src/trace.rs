//! Frame traces, in the format [`Config::trace`](crate::Config::trace) describes.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::{Event, ProxyError};

/// Where traces go.
pub(crate) struct Traces {
    dir: PathBuf,
}

impl Traces {
    /// Traces into `dir`, created if missing.
    pub fn new(dir: PathBuf) -> Result<Traces, ProxyError> {
        std::fs::create_dir_all(&dir).map_err(|e| ProxyError::io(format!("trace directory {}", dir.display()), e))?;
        Ok(Traces { dir })
    }

    /// The trace of connection `id`, or the event saying why there is none.
    pub fn connection(&self, id: u64) -> Result<Arc<ConnTrace>, Event> {
        let path = self.dir.join(format!("conn-{id}.trace"));
        match std::fs::File::create(&path) {
            Ok(file) => Ok(Arc::new(ConnTrace { file: Mutex::new(Some(file)) })),
            Err(error) => Err(Event::TraceFailed { path, error }),
        }
    }
}

/// One connection's trace.
pub(crate) struct ConnTrace {
    file: Mutex<Option<std::fs::File>>,
}

impl ConnTrace {
    /// Records one frame: `payload` is what follows its size prefix.
    pub fn frame(&self, direction: &str, api: i16, version: i16, correlation_id: i32, mode: &str, payload: &[u8]) {
        let prefix = u32::try_from(payload.len()).unwrap_or(u32::MAX).to_be_bytes();
        let line = format!("{direction} {api} {version} {correlation_id} {mode} {}{}\n", hex::encode(prefix), hex::encode(payload));
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        // One write per line, unbuffered: the tests read traces while the proxy runs.
        if let Some(f) = file.as_mut() {
            if f.write_all(line.as_bytes()).is_err() {
                *file = None;
            }
        }
    }
}
