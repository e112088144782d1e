//! Frame traces, in the format [`Config::trace`](crate::Config::trace) describes, and the
//! [`Frame`]s [`Config::on_frame`](crate::Config::on_frame) hooks see.

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

/// Which way a [`Frame`] goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameDirection {
    /// From the client to the broker.
    Request,
    /// From the broker (or the proxy itself) to the client.
    Response,
}

/// What the proxy did with a [`Frame`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameMode {
    /// Forwarded as the bytes that came.
    Pass,
    /// Forwarded changed (broker endpoints, mediated ApiVersions, a tenant's names).
    Rewritten,
    /// Answered by the proxy, not the broker (an ApiVersions version it cannot read).
    Local,
}

/// One frame, as the [`Config::on_frame`](crate::Config::on_frame) hook sees it: the payloads
/// are what follows the size prefix (header, then body).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Frame<'a> {
    /// The connection's number (as in [`Event`]s).
    pub connection: u64,
    /// Request or response.
    pub direction: FrameDirection,
    /// The api key (of the request a response answers).
    pub api_key: i16,
    /// The api version.
    pub api_version: i16,
    /// The correlation id.
    pub correlation_id: i32,
    /// Pass, rewritten or local.
    pub mode: FrameMode,
    /// What the proxy read (empty for the proxy's own answer).
    pub received: &'a [u8],
    /// What it sends on (empty for a request the proxy answers itself).
    pub forwarded: &'a [u8],
}
