//! Frame traces, in the format [`Config::trace`](crate::Config::trace) describes, and the
//! [`Frame`]s [`Config::on_frame`](crate::Config::on_frame) hooks see.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use kwire::ApiKey;

use crate::{Event, ProxyError};

/// Whether a request (`request`) or response of `api` can carry a secret: SASL auth bytes,
/// delegation-token HMACs, SCRAM salts and salted passwords, config values (a password, a JAAS
/// config), a forwarded request or response (Envelope), the metadata log's snapshots. The
/// proxy's traces cut these frames after their header; `kwire tap` withholds the fields
/// themselves.
pub fn carries_secrets(api: ApiKey, request: bool) -> bool {
    use ApiKey::*;
    match api {
        SaslAuthenticate | Envelope => true,
        CreateTopics | StreamsGroupHeartbeat => true,
        AlterConfigs | IncrementalAlterConfigs | RenewDelegationToken | ExpireDelegationToken | AlterUserScramCredentials => request,
        CreateDelegationToken | DescribeDelegationToken | DescribeConfigs | StreamsGroupDescribe | FetchSnapshot => !request,
        _ => false,
    }
}

/// Where traces go.
pub(crate) struct Traces {
    dir: PathBuf,
    /// Trace the frames that can carry secrets whole.
    secrets: bool,
}

impl Traces {
    /// Traces into `dir`, created if missing.
    pub fn new(dir: PathBuf, secrets: bool) -> Result<Traces, ProxyError> {
        std::fs::create_dir_all(&dir).map_err(|e| ProxyError::io(format!("trace directory {}", dir.display()), e))?;
        Ok(Traces { dir, secrets })
    }

    /// The trace of connection `id`, or the event saying why there is none.
    pub fn connection(&self, id: u64) -> Result<Arc<ConnTrace>, Event> {
        let path = self.dir.join(format!("conn-{id}.trace"));
        match std::fs::File::create(&path) {
            Ok(file) => Ok(Arc::new(ConnTrace { file: Mutex::new(Some(file)), secrets: self.secrets })),
            Err(error) => Err(Event::TraceFailed { path, error }),
        }
    }
}

/// One connection's trace.
pub(crate) struct ConnTrace {
    file: Mutex<Option<std::fs::File>>,
    secrets: bool,
}

impl ConnTrace {
    /// Records one frame: `payload` is what follows its size prefix; `direction` `c2p` or `p2u`
    /// for a request.
    pub fn frame(&self, direction: &str, api: i16, version: i16, correlation_id: i32, mode: &str, payload: &[u8]) {
        let prefix = u32::try_from(payload.len()).unwrap_or(u32::MAX).to_be_bytes();
        let request = matches!(direction, "c2p" | "p2u");
        let secret = !self.secrets && ApiKey::from_i16(api).is_some_and(|a| carries_secrets(a, request));
        // Cut after the header's fixed part: api key, version and correlation id of a request,
        // the correlation id of a response.
        let kept = if !secret { payload } else { payload.get(..if request { 8 } else { 4 }).unwrap_or(payload) };
        let line = format!("{direction} {api} {version} {correlation_id} {mode} {}{}\n", hex::encode(prefix), hex::encode(kept));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A SaslAuthenticate request (v2: header with client id and tags) carrying PLAIN's
    /// `\0alice\0s3cret`, traced as the proxy reads it.
    fn traced(secrets: bool) -> String {
        let dir = std::env::temp_dir().join(format!("kw-trace-test-{}-{secrets}", std::process::id()));
        let traces = Traces::new(dir.clone(), secrets).unwrap();
        let conn = traces.connection(1).unwrap_or_else(|_| panic!("a trace file in {}", dir.display()));
        let mut payload = vec![0, 36, 0, 2, 0, 0, 0, 7, 0, 2, b'c', b'1', 0];
        payload.extend_from_slice(&[15, 0]);
        payload.extend_from_slice(b"alice\0s3cret");
        payload.push(0);
        conn.frame("c2p", 36, 2, 7, "in", &payload);
        conn.frame("p2u", 36, 2, 7, "pass", &payload);
        conn.frame("c2p", 3, 12, 8, "in", b"\0\x03\0\x0c\0\0\0\x08metadata");
        let text = std::fs::read_to_string(dir.join("conn-1.trace")).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        text
    }

    #[test]
    fn frames_that_carry_secrets_are_cut_after_their_header() {
        let secret = hex::encode("s3cret");
        let text = traced(false);
        assert!(!text.contains(&secret), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        // The size prefix says 28 bytes; the api key, version and correlation id stay.
        assert_eq!(lines[0], "c2p 36 2 7 in 0000001c0024000200000007");
        assert_eq!(lines[1], "p2u 36 2 7 pass 0000001c0024000200000007");
        assert!(lines[2].ends_with(&hex::encode("metadata")), "other frames stay whole: {}", lines[2]);
        // Asked for by name, the trace has them whole.
        assert!(traced(true).contains(&secret));
    }

    #[test]
    fn responses_and_requests_are_told_apart() {
        assert!(carries_secrets(ApiKey::SaslAuthenticate, true) && carries_secrets(ApiKey::SaslAuthenticate, false));
        assert!(carries_secrets(ApiKey::DescribeConfigs, false) && !carries_secrets(ApiKey::DescribeConfigs, true));
        assert!(carries_secrets(ApiKey::AlterUserScramCredentials, true) && !carries_secrets(ApiKey::AlterUserScramCredentials, false));
        assert!(!carries_secrets(ApiKey::Produce, true) && !carries_secrets(ApiKey::Metadata, false));
    }
}
