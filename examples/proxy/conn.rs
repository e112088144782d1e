//! One client connection: its own upstream connection to the broker its listener stands for,
//! requests one way and responses the other, frame by frame.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kwire::codec::RequestFrame;
use kwire::{ApiKey, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

use crate::trace::ConnTrace;
use crate::{rewrite, ProxyError, Shared};

/// Requests a connection may have in flight; a client past it is closed (it would otherwise
/// grow the table without bound, e.g. with acks=0 produce requests the proxy cannot peek).
pub const MAX_IN_FLIGHT: usize = 4096;

/// The first byte of a TLS handshake record. A Kafka frame starting with it would claim more
/// than 369 MB, which no listener accepts, so the two cannot be confused.
const TLS_HANDSHAKE: u8 = 0x16;

type InFlight = Arc<Mutex<HashMap<i32, (i16, i16)>>>;
type ClientWriter = Arc<tokio::sync::Mutex<OwnedWriteHalf>>;

/// Serves one client until either side closes or a frame cannot be handled.
pub async fn serve(shared: &Arc<Shared>, mut client: TcpStream, upstream: &str, id: u64) -> Result<(), ProxyError> {
    let _ = client.set_nodelay(true);
    let mut first = [0u8; 1];
    if client.peek(&mut first).await.map_err(|e| ProxyError::io("reading from the client", e))? == 0 {
        return Ok(());
    }
    let mut server =
        TcpStream::connect(upstream).await.map_err(|e| ProxyError::io(format!("connecting to {upstream}"), e))?;
    let _ = server.set_nodelay(true);
    if first == [TLS_HANDSHAKE] {
        // Not terminated: relayed opaque (see the crate docs).
        tokio::io::copy_bidirectional(&mut client, &mut server).await.map_err(|e| ProxyError::io("relaying TLS", e))?;
        return Ok(());
    }
    let trace = shared.trace.as_ref().map(|t| t.connection(id));
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let in_flight: InFlight = Arc::default();
    let client_write: ClientWriter = Arc::new(tokio::sync::Mutex::new(client_write));
    let requests = requests(shared, client_read, server_write, client_write.clone(), in_flight.clone(), trace.clone());
    let responses = responses(shared, server_read, client_write, in_flight, trace);
    // Whichever direction ends first ends the connection: a client that closed wants nothing more.
    tokio::select! {
        r = requests => r,
        r = responses => r,
    }
}

/// Reads one frame, size prefix included; `None` at a clean end of stream.
async fn read_frame(r: &mut OwnedReadHalf, buf: &mut BytesMut, max: usize, side: &str) -> Result<Option<Bytes>, ProxyError> {
    loop {
        if let Some(&[a, b, c, d]) = buf.get(..4) {
            let size = i32::from_be_bytes([a, b, c, d]);
            let Some(len) = usize::try_from(size).ok().filter(|n| *n <= max) else {
                return Err(ProxyError::FrameSize { size: i64::from(size), max });
            };
            let total = len.saturating_add(4);
            if buf.len() >= total {
                return Ok(Some(buf.split_to(total).freeze()));
            }
            // In steps: a size prefix alone must not make the proxy allocate what it claims.
            buf.reserve((total - buf.len()).min(64 * 1024));
        } else {
            buf.reserve(4096);
        }
        let n = r.read_buf(buf).await.map_err(|e| ProxyError::io(format!("reading from the {side}"), e))?;
        if n == 0 {
            return Ok(None);
        }
    }
}

/// A frame: the 4-byte size, then `payload`.
fn frame(payload: &[u8]) -> Result<Bytes, ProxyError> {
    let size = i32::try_from(payload.len()).map_err(|_| ProxyError::FrameSize { size: payload.len() as i64, max: i32::MAX as usize })?;
    let mut out = BytesMut::with_capacity(payload.len() + 4);
    out.extend_from_slice(&size.to_be_bytes());
    out.extend_from_slice(payload);
    Ok(out.freeze())
}

async fn requests(
    shared: &Arc<Shared>,
    mut client: OwnedReadHalf,
    mut server: OwnedWriteHalf,
    client_write: ClientWriter,
    in_flight: InFlight,
    trace: Option<Arc<ConnTrace>>,
) -> Result<(), ProxyError> {
    let mut buf = BytesMut::new();
    while let Some(wire) = read_frame(&mut client, &mut buf, shared.config.max_frame, "client").await? {
        let payload = wire.slice(4..);
        let request = RequestFrame::parse(payload.clone()).map_err(ProxyError::Header)?;
        let (key, version, correlation_id) = (request.header.request_api_key, request.version(), request.correlation_id());
        if let Some(t) = &trace {
            t.frame("c2p", key, version, correlation_id, "in", &wire);
        }
        // KIP-511: an ApiVersions version this build cannot read is answered here, at v0.
        if let Some(answer) = request.unsupported_api_versions(ApiKey::ApiVersions.stable_versions()) {
            let mut out = BytesMut::new();
            answer.encode(&mut out, shared.config.max_frame).map_err(ProxyError::Answer)?;
            if let Some(t) = &trace {
                t.frame("p2c", key, 0, correlation_id, "local", &out);
            }
            let mut w = client_write.lock().await;
            w.write_all(&out).await.map_err(|e| ProxyError::io("writing to the client", e))?;
            continue;
        }
        if expects_response(key, version, &request.body) {
            let mut table = in_flight.lock().unwrap_or_else(|p| p.into_inner());
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
            Some(payload) => (frame(&payload)?, "rewritten"),
            None => (wire, "pass"),
        };
        if let Some(t) = &trace {
            t.frame("p2u", key, version, correlation_id, mode, &out);
        }
        server.write_all(&out).await.map_err(|e| ProxyError::io("writing to the broker", e))?;
    }
    Ok(())
}

async fn responses(
    shared: &Arc<Shared>,
    mut server: OwnedReadHalf,
    client: ClientWriter,
    in_flight: InFlight,
    trace: Option<Arc<ConnTrace>>,
) -> Result<(), ProxyError> {
    let mut buf = BytesMut::new();
    while let Some(wire) = read_frame(&mut server, &mut buf, shared.config.max_frame, "broker").await? {
        let payload = wire.slice(4..);
        let Some(&[a, b, c, d]) = payload.get(..4) else { return Err(ProxyError::ShortResponse(payload.len())) };
        let correlation_id = i32::from_be_bytes([a, b, c, d]);
        let taken = in_flight.lock().unwrap_or_else(|p| p.into_inner()).remove(&correlation_id);
        let Some((key, version)) = taken else { return Err(ProxyError::UnexpectedResponse(correlation_id)) };
        if let Some(t) = &trace {
            t.frame("u2p", key, version, correlation_id, "in", &wire);
        }
        let rewritten = match ApiKey::from_i16(key) {
            Some(api) if shared.responses.wants(key, version) => rewrite::response(shared, api, version, &payload)?,
            _ => None,
        };
        let (out, mode) = match rewritten {
            Some(payload) => (frame(&payload)?, "rewritten"),
            None => (wire, "pass"),
        };
        if let Some(t) = &trace {
            t.frame("p2c", key, version, correlation_id, mode, &out);
        }
        let mut w = client.lock().await;
        w.write_all(&out).await.map_err(|e| ProxyError::io("writing to the client", e))?;
    }
    Ok(())
}

/// Whether a request is answered: all are but Produce with acks=0. The acks are peeked from
/// the body's start (after the transactional id from v3) without decoding it; a body too short
/// to tell is taken to be answered.
fn expects_response(key: i16, version: i16, body: &[u8]) -> bool {
    key != ApiKey::Produce.key() || produce_acks(version, body) != Some(0)
}

fn produce_acks(version: i16, body: &[u8]) -> Option<i16> {
    let rest = if version < 3 {
        body
    } else if version < 9 {
        // A nullable string: int16 length, -1 for null.
        let len = i16::from_be_bytes([*body.first()?, *body.get(1)?]);
        body.get(2usize.saturating_add(usize::try_from(len).unwrap_or(0))..)?
    } else {
        // A compact nullable string: unsigned varint length + 1, 0 for null.
        let (n, used) = uvarint(body)?;
        body.get(used.saturating_add(usize::try_from(n.saturating_sub(1)).ok()?)..)?
    };
    Some(i16::from_be_bytes([*rest.first()?, *rest.get(1)?]))
}

/// An unsigned varint of at most 5 bytes, and the bytes it took.
fn uvarint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, b) in bytes.iter().take(5).enumerate() {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use kwire::messages::ProduceRequest;
    use kwire::Message;

    use super::produce_acks;

    #[test]
    fn acks_are_peeked_at_every_produce_version() {
        for version in ProduceRequest::VERSIONS.lo..=ProduceRequest::VERSIONS.hi {
            for transactional_id in [None, Some("tx-one".into())] {
                for acks in [0, 1, -1] {
                    let transactional_id = if version >= 3 { transactional_id.clone() } else { None };
                    let request = ProduceRequest { acks, transactional_id, timeout_ms: 1500, ..Default::default() };
                    let body = request.to_bytes(version).unwrap();
                    assert_eq!(produce_acks(version, &body), Some(acks), "v{version}");
                }
            }
        }
        // Too short to tell: not taken for acks=0.
        assert_eq!(produce_acks(9, &[0x05, b'a']), None);
        assert_eq!(produce_acks(3, &[0x7f, 0xff]), None);
        assert_eq!(produce_acks(9, &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), None);
    }
}
