//! One client connection: its own upstream connection to the broker its listener stands for,
//! requests one way and responses the other, frame by frame.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Buf;
use kwire::codec::{CodecError, FrameDecoder, RequestFrame};
use kwire::{ApiKey, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::fault::{Action, ConnFaults, Direction};
use crate::trace::{ConnTrace, Frame, FrameDirection, FrameMode};
use crate::{rewrite, Event, ProxyError, Shared};

/// Requests a connection may have in flight; a client past it is closed (it would otherwise
/// grow the table without bound, e.g. with acks=0 produce requests the proxy cannot peek).
pub const MAX_IN_FLIGHT: usize = 4096;

/// The first byte of a TLS handshake record. A Kafka frame starting with it would claim more
/// than 369 MB, which no listener accepts, so the two cannot be confused.
const TLS_HANDSHAKE: u8 = 0x16;

type InFlight = Mutex<HashMap<i32, (i16, i16)>>;
/// The client's write side: the requests task writes the proxy's own answers there too.
type ClientWriter<W> = tokio::sync::Mutex<W>;

/// A TLS (or plain) stream of either side.
trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// How long a TLS handshake may take, either side.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// How a direction ended the connection.
enum End {
    /// Closed: the sockets are closed as usual.
    Closed,
    /// Reset: the sockets are closed with an RST (the fault injector's doing).
    Reset,
}

/// What one connection's two directions share.
struct Conn<'a> {
    shared: &'a Arc<Shared>,
    id: u64,
    frames: FrameDecoder,
    in_flight: InFlight,
    trace: Option<Arc<ConnTrace>>,
    faults: ConnFaults<'a>,
    /// A frame was delivered late ([`FaultKind::Late`](crate::FaultKind::Late)).
    late: std::sync::atomic::AtomicBool,
}

/// Serves one client until either side closes or a frame cannot be handled.
pub(crate) async fn serve(shared: &Arc<Shared>, mut client: TcpStream, upstream: &str, id: u64) -> Result<(), ProxyError> {
    let _ = client.set_nodelay(true);
    let mut first = [0u8; 1];
    if client.peek(&mut first).await.map_err(|e| ProxyError::io("reading from the client", e))? == 0 {
        return Ok(());
    }
    let mut server = TcpStream::connect(upstream).await.map_err(|e| ProxyError::io(format!("connecting to {upstream}"), e))?;
    let _ = server.set_nodelay(true);
    let terminate = shared.tls.as_ref().filter(|_| first == [TLS_HANDSHAKE]);
    if first == [TLS_HANDSHAKE] && terminate.is_none() {
        // Not terminated: relayed opaque (see the crate docs).
        tokio::io::copy_bidirectional(&mut client, &mut server).await.map_err(|e| ProxyError::io("relaying TLS", e))?;
        return Ok(());
    }
    let trace = shared.trace.as_ref().and_then(|t| t.connection(id).map_err(|e| shared.event(e)).ok());
    let faults = ConnFaults::new(shared.faults.as_ref(), id);
    let conn = Conn { shared, id, frames: FrameDecoder::new(shared.config.max_frame), in_flight: Mutex::default(), trace, faults, late: Default::default() };
    if terminate.is_some() || shared.upstream_tls.is_some() {
        let client: Box<dyn Stream> = match terminate {
            Some(acceptor) => Box::new(handshake(acceptor.accept(client), "the client's TLS handshake".into()).await?),
            None => Box::new(client),
        };
        let server: Box<dyn Stream> = match &shared.upstream_tls {
            Some(connector) => {
                let name = crate::tls::server_name(upstream)?;
                Box::new(handshake(connector.connect(name, server), format!("the TLS handshake with {upstream}")).await?)
            }
            None => Box::new(server),
        };
        // Over TLS a reset fault closes the connection (no RST under the TLS layer).
        let (client_read, client_write) = tokio::io::split(client);
        let (server_read, server_write) = tokio::io::split(server);
        let client_write = tokio::sync::Mutex::new(client_write);
        return tokio::select! {
            r = conn.requests(client_read, server_write, &client_write) => r,
            r = conn.responses(server_read, &client_write) => r,
        }
        .map(|_| ());
    }
    let end = {
        let (client_read, client_write) = client.split();
        let (server_read, server_write) = server.split();
        let client_write = tokio::sync::Mutex::new(client_write);
        // Whichever direction ends first ends the connection: a client that closed wants nothing more.
        tokio::select! {
            r = conn.requests(client_read, server_write, &client_write) => r,
            r = conn.responses(server_read, &client_write) => r,
        }
    };
    if let Ok(End::Reset) = end {
        // Closed with linger 0: an RST, not a FIN.
        for socket in [&client, &server] {
            let _ = socket2::SockRef::from(socket).set_linger(Some(Duration::ZERO));
        }
    }
    end.map(|_| ())
}

/// A TLS handshake, bounded by [`TLS_HANDSHAKE_TIMEOUT`].
async fn handshake<S>(accept: impl std::future::Future<Output = std::io::Result<S>>, what: String) -> Result<S, ProxyError> {
    match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, accept).await {
        Ok(done) => done.map_err(|e| ProxyError::io(what, e)),
        Err(_) => Err(ProxyError::io(what, std::io::Error::new(std::io::ErrorKind::TimedOut, "no TLS handshake within 10 s"))),
    }
}

/// Reads the next frame's payload (after its size prefix) with the shared frame decoder;
/// `None` at the end of the stream.
async fn read_frame(r: &mut (impl AsyncRead + Unpin), buf: &mut BytesMut, frames: &FrameDecoder, side: &str) -> Result<Option<Bytes>, ProxyError> {
    loop {
        if let Some(frame) = frames.decode(buf).map_err(ProxyError::Frame)? {
            return Ok(Some(frame.freeze()));
        }
        if buf.capacity() == buf.len() {
            // The decoder reserves ahead of a frame it has a size for; this is room for the prefix.
            buf.reserve(4096);
        }
        let n = r.read_buf(buf).await.map_err(|e| ProxyError::io(format!("reading from the {side}"), e))?;
        if n == 0 {
            return Ok(None);
        }
    }
}

/// Writes the first `len` bytes of the frame of `payload` (its size prefix, then the payload).
async fn write_frame(w: &mut (impl AsyncWrite + Unpin), payload: &Bytes, len: usize, side: &str) -> Result<(), ProxyError> {
    let size = i32::try_from(payload.len()).map_err(|_| ProxyError::Frame(CodecError::EncodedFrameTooLarge { size: payload.len(), max: i32::MAX as usize }))?;
    let prefix = size.to_be_bytes();
    let mut frame = Buf::chain(&prefix[..], payload.clone()).take(len);
    w.write_all_buf(&mut frame).await.map_err(|e| ProxyError::io(format!("writing to the {side}"), e))
}

/// The trace's mode word as a [`FrameMode`].
fn frame_mode(mode: &str) -> FrameMode {
    if mode == "rewritten" {
        FrameMode::Rewritten
    } else {
        FrameMode::Pass
    }
}

impl Conn<'_> {
    /// Shows a frame to the [`Config::on_frame`](crate::Config::on_frame) hook, if any.
    fn observe(&self, direction: FrameDirection, (api_key, api_version, correlation_id): (i16, i16, i32), mode: FrameMode, received: &[u8], forwarded: &[u8]) {
        if let Some(hook) = &self.shared.config.on_frame {
            hook(&Frame { connection: self.id, direction, api_key, api_version, correlation_id, mode, received, forwarded });
        }
    }

    /// Forwards one frame (4 + `payload.len()` bytes on the wire) as the fault injector says;
    /// `Some` when the connection is to end.
    async fn forward(&self, direction: Direction, w: &mut (impl AsyncWrite + Unpin), payload: &Bytes, side: &str) -> Result<Option<End>, ProxyError> {
        let whole = payload.len().saturating_add(4);
        let (action, struck) = self.faults.before(direction, whole);
        if let Some(kind) = struck {
            self.shared.event(Event::Fault { id: self.id, kind });
        }
        match action {
            Action::Forward => write_frame(w, payload, whole, side).await.map(|()| None),
            Action::Delay(d) => {
                tokio::time::sleep(d).await;
                write_frame(w, payload, whole, side).await.map(|()| None)
            }
            Action::Late(d) => {
                tokio::time::sleep(d).await;
                self.late.store(true, std::sync::atomic::Ordering::Relaxed);
                write_frame(w, payload, whole, side).await.map(|()| None)
            }
            Action::Close => Ok(Some(End::Closed)),
            Action::Cut { len, reset } => {
                write_frame(w, payload, len.min(whole), side).await?;
                Ok(Some(if reset { End::Reset } else { End::Closed }))
            }
            Action::Stall(d) => {
                tokio::time::sleep(d).await;
                Ok(Some(End::Closed))
            }
            Action::Hold => std::future::pending().await,
        }
    }

    async fn requests<W: AsyncWrite + Unpin>(
        &self,
        mut client: impl AsyncRead + Unpin,
        mut server: impl AsyncWrite + Unpin,
        client_write: &ClientWriter<W>,
    ) -> Result<End, ProxyError> {
        let shared = self.shared;
        let mut buf = BytesMut::new();
        while let Some(payload) = read_frame(&mut client, &mut buf, &self.frames, "client").await? {
            let request = RequestFrame::parse(payload.clone()).map_err(ProxyError::Header)?;
            let (key, version, correlation_id) = (request.header.request_api_key, request.version(), request.correlation_id());
            if let Some(t) = &self.trace {
                t.frame("c2p", key, version, correlation_id, "in", &payload);
            }
            // KIP-511: an ApiVersions version this build cannot read is answered here, at v0.
            if let Some(answer) = request.unsupported_api_versions(ApiKey::ApiVersions.stable_versions()) {
                let mut out = BytesMut::new();
                answer.encode(&mut out, shared.config.max_frame).map_err(ProxyError::Answer)?;
                if let Some(t) = &self.trace {
                    t.frame("p2c", key, 0, correlation_id, "local", out.get(4..).unwrap_or_default());
                }
                self.observe(FrameDirection::Request, (key, version, correlation_id), FrameMode::Local, &payload, &[]);
                self.observe(FrameDirection::Response, (key, 0, correlation_id), FrameMode::Local, &[], out.get(4..).unwrap_or_default());
                let mut w = client_write.lock().await;
                w.write_all(&out).await.map_err(|e| ProxyError::io("writing to the client", e))?;
                continue;
            }
            if request.expects_response() {
                let mut table = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
                if table.len() >= MAX_IN_FLIGHT {
                    return Err(ProxyError::TooManyInFlight);
                }
                table.insert(correlation_id, (key, version));
            }
            let rewritten = match (&shared.tenant, shared.requests.wants(key, version)) {
                (Some(tenant), true) => rewrite::request(tenant, &request, &payload)?,
                _ => None,
            };
            let (out, mode) = match rewritten {
                Some(payload) => (Bytes::from(payload), "rewritten"),
                // A cheap clone (a reference count): the observer sees what was read too.
                None => (payload.clone(), "pass"),
            };
            if let Some(t) = &self.trace {
                t.frame("p2u", key, version, correlation_id, mode, &out);
            }
            self.observe(FrameDirection::Request, (key, version, correlation_id), frame_mode(mode), &payload, &out);
            if let Some(end) = self.forward(Direction::Requests, &mut server, &out, "broker").await? {
                return Ok(end);
            }
        }
        if self.late.load(std::sync::atomic::Ordering::Relaxed) {
            // The client has gone; the broker still reads what came late (as it would the
            // requests in its socket buffer) before the connection closes.
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        Ok(End::Closed)
    }

    async fn responses<W: AsyncWrite + Unpin>(&self, mut server: impl AsyncRead + Unpin, client: &ClientWriter<W>) -> Result<End, ProxyError> {
        let shared = self.shared;
        let mut buf = BytesMut::new();
        while let Some(payload) = read_frame(&mut server, &mut buf, &self.frames, "broker").await? {
            let Some(correlation_id) = kwire::header::peek_response_correlation_id(&payload) else { return Err(ProxyError::ShortResponse(payload.len())) };
            let taken = self.in_flight.lock().unwrap_or_else(|p| p.into_inner()).remove(&correlation_id);
            let Some((key, version)) = taken else { return Err(ProxyError::UnexpectedResponse(correlation_id)) };
            if let Some(t) = &self.trace {
                t.frame("u2p", key, version, correlation_id, "in", &payload);
            }
            let rewritten = match ApiKey::from_i16(key) {
                Some(api) if shared.responses.wants(key, version) => rewrite::response(shared, api, version, &payload)?,
                _ => None,
            };
            let (out, mode) = match rewritten {
                Some(payload) => (Bytes::from(payload), "rewritten"),
                // A cheap clone (a reference count): the observer sees what was read too.
                None => (payload.clone(), "pass"),
            };
            if let Some(t) = &self.trace {
                t.frame("p2c", key, version, correlation_id, mode, &out);
            }
            self.observe(FrameDirection::Response, (key, version, correlation_id), frame_mode(mode), &payload, &out);
            let mut w = client.lock().await;
            if let Some(end) = self.forward(Direction::Responses, &mut *w, &out, "client").await? {
                return Ok(end);
            }
        }
        Ok(End::Closed)
    }
}
