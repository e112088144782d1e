//! One client connection: read a request, answer it, in order (Kafka answers each
//! connection's requests one at a time, in order, too).

use std::net::SocketAddr;
use std::sync::Arc;

use kwire::codec::{FrameDecoder, RequestFrame, OutboundResponse, ServerCodec};
use kwire::messages::{SaslAuthenticateResponse, SaslHandshakeResponse};
use kwire::{ApiKey, ByteString, Bytes, BytesMut, RequestKind, ResponseKind};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::broker::{errors, Broker};
use crate::{groups, handlers};

enum Sasl {
    /// No SASL configured: every request is served.
    Off,
    /// Waiting for SaslHandshake.
    Handshake,
    /// Handshake v1+ done, waiting for SaslAuthenticate.
    Authenticate,
    /// Handshake v0 done, waiting for a bare token frame.
    RawToken,
    Done,
}

enum Reply {
    Send(ResponseKind),
    /// Produce with acks = 0.
    Nothing,
    /// Send this response, then close (failed authentication).
    SendAndClose(ResponseKind, String),
    Close(String),
}

pub async fn serve(broker: Arc<Broker>, mut stream: TcpStream, peer: SocketAddr) {
    // The sans-io codec over a plain read loop, rather than tokio-util's Framed, because after a
    // v0 SaslHandshake the next frame is a bare SASL token with no request header.
    // Requests up to the maximum frame size of the limits in force (Kafka's default
    // `socket.request.max.bytes`, 100 MiB, unless configured).
    let mut codec = ServerCodec::new();
    let raw_frames = FrameDecoder::default();
    let mut input = BytesMut::with_capacity(64 * 1024);
    let mut output = BytesMut::new();
    let mut sasl = if broker.config.sasl_plain.is_some() { Sasl::Handshake } else { Sasl::Off };
    loop {
        if let Sasl::RawToken = sasl {
            match raw_frames.decode(&mut input) {
                Ok(Some(token)) => {
                    if !plain_credentials_ok(&broker, &token) {
                        eprintln!("{peer}: closing: Authentication failed: Invalid username or password");
                        return;
                    }
                    sasl = Sasl::Done;
                    // An empty server token: PLAIN has nothing to say on success.
                    if stream.write_all(&0i32.to_be_bytes()).await.is_err() {
                        return;
                    }
                    continue;
                }
                Ok(None) => {}
                Err(e) => {
                    eprintln!("{peer}: closing: {e}");
                    return;
                }
            }
        } else {
            match codec.decode_request(&mut input) {
                Ok(Some(frame)) => {
                    let keep_open = answer(&broker, &mut codec, &frame, &mut sasl, &mut output, peer).await;
                    // Written before closing too: a failed authentication is answered first.
                    if !output.is_empty() {
                        if stream.write_all(&output).await.is_err() {
                            return;
                        }
                        output.clear();
                    }
                    if !keep_open {
                        return;
                    }
                    continue;
                }
                Ok(None) => {}
                Err(e) => {
                    eprintln!("{peer}: closing: {e}");
                    return;
                }
            }
        }
        match stream.read_buf(&mut input).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// Handles one request, writing its response (if any) to `output`; false to close.
async fn answer(
    broker: &Broker,
    codec: &mut ServerCodec,
    frame: &RequestFrame,
    sasl: &mut Sasl,
    output: &mut BytesMut,
    peer: SocketAddr,
) -> bool {
    let name = frame.api_key().map(ApiKey::name).unwrap_or("unknown");
    if broker.config.verbose {
        eprintln!(
            "request api={name} key={} version={} client_id={:?} peer={peer}",
            frame.header.request_api_key,
            frame.version(),
            frame.client_id().unwrap_or("")
        );
    }
    let (version, reply) = handle(broker, frame, sasl).await;
    let (body, close) = match reply {
        Reply::Send(body) => (Some(body), None),
        Reply::Nothing => (None, None),
        Reply::SendAndClose(body, why) => (Some(body), Some(why)),
        Reply::Close(why) => (None, Some(why)),
    };
    if let Some(body) = body {
        let Ok(api_key) = frame.api_key() else { return false };
        let response = OutboundResponse { correlation_id: frame.correlation_id(), api_key, version, body };
        if let Err(e) = codec.encode_response(response, output) {
            eprintln!("{peer}: closing: cannot encode the {name} v{version} response: {e}");
            return false;
        }
    }
    if let Some(why) = close {
        eprintln!("{peer}: closing: {why}");
        return false;
    }
    true
}

/// The response and the version to encode it at.
async fn handle(broker: &Broker, frame: &RequestFrame, sasl: &mut Sasl) -> (i16, Reply) {
    let version = frame.version();
    let api = match frame.api_key() {
        Ok(api) => api,
        // No response type to answer with; Kafka closes the connection too.
        Err(e) => return (version, Reply::Close(e.to_string())),
    };
    // As Kafka: an ApiVersions version it does not serve gets UNSUPPORTED_VERSION at v0 with the
    // ApiVersions range, so that the client can retry with a version both sides know.
    if let Some(answer) = handlers::supported(ApiKey::ApiVersions).and_then(|r| frame.unsupported_api_versions(r)) {
        return (answer.version, Reply::Send(answer.body));
    }
    let pre_auth = matches!(sasl, Sasl::Handshake | Sasl::Authenticate | Sasl::RawToken);
    if pre_auth && !matches!(api, ApiKey::ApiVersions | ApiKey::SaslHandshake | ApiKey::SaslAuthenticate) {
        return (version, Reply::Close(format!("{} request before SASL authentication", api.name())));
    }
    let unsupported = || match handlers::error_response(api, errors::UNSUPPORTED_VERSION) {
        Some(body) => Reply::Send(body),
        None => Reply::Close(format!("{} v{version} is not implemented and has no top-level error code", api.name())),
    };
    if !handlers::supported(api).is_some_and(|r| r.contains(version)) {
        return (version, unsupported());
    }
    let request = match frame.decode_body() {
        Ok(request) => request,
        Err(e) => return (version, Reply::Close(e.to_string())),
    };
    let client_id = frame.client_id().unwrap_or("");
    let reply = match request {
        RequestKind::ApiVersions(_) => Reply::Send(handlers::api_versions(errors::NONE).into()),
        RequestKind::Metadata(r) => Reply::Send(handlers::metadata(broker, &r, version).into()),
        RequestKind::CreateTopics(r) => Reply::Send(handlers::create_topics(broker, &r, version).into()),
        RequestKind::Produce(r) => match handlers::produce(broker, &r) {
            Some(response) => Reply::Send(response.into()),
            None => Reply::Nothing,
        },
        RequestKind::Fetch(r) => Reply::Send(handlers::fetch(broker, &r, version).await.into()),
        RequestKind::ListOffsets(r) => Reply::Send(handlers::list_offsets(broker, &r, version).into()),
        RequestKind::FindCoordinator(r) => Reply::Send(handlers::find_coordinator(broker, &r, version).into()),
        RequestKind::InitProducerId(_) => Reply::Send(handlers::init_producer_id(broker).into()),
        RequestKind::OffsetForLeaderEpoch(r) => Reply::Send(handlers::offset_for_leader_epoch(broker, &r).into()),
        RequestKind::JoinGroup(r) => {
            let outcome = groups::join_group(broker, &r, client_id).await;
            Reply::Send(groups::join_response(outcome, version).into())
        }
        RequestKind::SyncGroup(r) => Reply::Send(groups::sync_group(broker, &r, version).await.into()),
        RequestKind::Heartbeat(r) => Reply::Send(groups::heartbeat(broker, &r).into()),
        RequestKind::LeaveGroup(r) => Reply::Send(groups::leave_group(broker, &r, version).into()),
        RequestKind::OffsetCommit(r) => Reply::Send(groups::offset_commit(broker, &r).into()),
        RequestKind::OffsetFetch(r) => Reply::Send(groups::offset_fetch(broker, &r, version).into()),
        RequestKind::SaslHandshake(r) => Reply::Send(sasl_handshake(sasl, &r.mechanism, version).into()),
        RequestKind::SaslAuthenticate(r) => sasl_authenticate(broker, sasl, &r.auth_bytes),
        _ => unsupported(),
    };
    (version, reply)
}

fn sasl_handshake(sasl: &mut Sasl, mechanism: &str, version: i16) -> SaslHandshakeResponse {
    let mechanisms = vec![ByteString::from_static("PLAIN")];
    let error_code = match sasl {
        // A PLAINTEXT listener, or a second handshake: Kafka answers ILLEGAL_SASL_STATE.
        Sasl::Off | Sasl::Authenticate | Sasl::RawToken | Sasl::Done => errors::ILLEGAL_SASL_STATE,
        Sasl::Handshake if mechanism == "PLAIN" => {
            *sasl = if version == 0 { Sasl::RawToken } else { Sasl::Authenticate };
            errors::NONE
        }
        Sasl::Handshake => errors::UNSUPPORTED_SASL_MECHANISM,
    };
    SaslHandshakeResponse { error_code, mechanisms, ..Default::default() }
}

/// SASL/PLAIN (RFC 4616): `authzid NUL authcid NUL passwd`; the authzid, if any, must be the
/// user itself, as in Kafka.
fn sasl_authenticate(broker: &Broker, sasl: &mut Sasl, token: &Bytes) -> Reply {
    let response = |error_code: i16, message: Option<&str>| -> ResponseKind {
        SaslAuthenticateResponse {
            error_code,
            error_message: message.map(|m| ByteString::from(m.to_owned())),
            auth_bytes: Bytes::new(),
            session_lifetime_ms: 0,
            ..Default::default()
        }
        .into()
    };
    if !matches!(sasl, Sasl::Authenticate) {
        return Reply::Send(response(errors::ILLEGAL_SASL_STATE, Some("SaslAuthenticate before a PLAIN SaslHandshake")));
    }
    if plain_credentials_ok(broker, token) {
        *sasl = Sasl::Done;
        Reply::Send(response(errors::NONE, None))
    } else {
        let message = "Authentication failed: Invalid username or password";
        Reply::SendAndClose(response(errors::SASL_AUTHENTICATION_FAILED, Some(message)), message.to_owned())
    }
}

fn plain_credentials_ok(broker: &Broker, token: &[u8]) -> bool {
    let parts: Vec<&[u8]> = token.split(|b| *b == 0).collect();
    match (parts.as_slice(), &broker.config.sasl_plain) {
        ([authzid, user, pass], Some((want_user, want_pass))) => {
            (authzid.is_empty() || authzid == user) && *user == want_user.as_bytes() && *pass == want_pass.as_bytes()
        }
        _ => false,
    }
}
