//! One client connection to one broker: frames read, SASL, hooks and the journal, the request
//! handled, the response written, in order (Kafka answers each connection's requests one at
//! a time, in order). The connection ends when the client closes it, when its broker stops,
//! when a hook or the client's cut says so, or at a frame Kafka would close the connection for.

use std::sync::Arc;

use kwire::codec::{FrameDecoder, OutboundResponse, RequestFrame, ServerCodec};
use kwire::messages::{SaslAuthenticateResponse, SaslHandshakeResponse};
use kwire::{ApiKey, ByteString, Bytes, BytesMut, ErrorCode, RequestKind, ResponseKind};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tracing::debug;

use crate::cluster::{Inner, Listener};
use crate::control::{Action, Entry, Seen};
use crate::handlers::{self, Ctx, Reply};
use crate::scram;

/// Where a connection is in SASL.
enum Sasl {
    /// No SASL on this listener: every request is served.
    Off,
    /// Waiting for SaslHandshake.
    Handshake,
    /// Handshake done, waiting for the mechanism's next token: in SaslAuthenticate (v1+
    /// handshake) or, after a v0 handshake, in a bare frame without a request header (`raw`).
    Authenticate {
        raw: bool,
        step: Step,
    },
    Done,
}

/// The next token a mechanism expects.
enum Step {
    Plain,
    ScramFirst(scram::Mechanism),
    ScramFinal(Box<scram::Exchange>),
}

/// A token's outcome: the bytes to answer, and the principal once authenticated.
type Stepped = Result<(Vec<u8>, Option<Authenticated>), String>;

/// Who a connection authenticated as.
pub(crate) struct Authenticated {
    /// `User:NAME`.
    pub(crate) principal: String,
    /// Through a delegation token (SCRAM with `tokenauth=true`).
    pub(crate) token: bool,
}

/// The mechanisms a SASL listener offers (`sasl.enabled.mechanisms`).
const MECHANISMS: [&str; 3] = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"];

/// Accepts TCP connections for `broker` until the cluster is gone.
pub(crate) async fn accept(inner: Arc<Inner>, broker: i32, kind: Listener, listener: TcpListener) {
    let weak = Arc::downgrade(&inner);
    drop(inner);
    loop {
        let Ok((stream, peer)) = listener.accept().await else { continue };
        let Some(inner) = weak.upgrade() else { return };
        let _ = stream.set_nodelay(true);
        let stopped = {
            let state = inner.state();
            match state.brokers.get(&broker) {
                Some(b) if b.up => Some(b.stopped.subscribe()),
                _ => None,
            }
        };
        // A stopped broker refuses: the connection closes at once.
        let Some(stopped) = stopped else { continue };
        let connection = inner.next_connection();
        debug!(broker, connection, %peer, "accepted");
        tokio::spawn(serve(inner, broker, connection, kind, stream, stopped));
    }
}

/// Serves one connection until it ends.
pub(crate) async fn serve<S: AsyncRead + AsyncWrite + Unpin + Send>(
    inner: Arc<Inner>,
    broker: i32,
    connection: u64,
    listener: Listener,
    mut stream: S,
    mut stopped: watch::Receiver<bool>,
) {
    // The sans-io codec over a plain read loop: after a v0 SaslHandshake the next frame is a
    // bare SASL token with no request header.
    let mut codec = ServerCodec::new();
    let raw_frames = FrameDecoder::default();
    let mut input = BytesMut::with_capacity(64 << 10);
    let mut output = BytesMut::new();
    let mut sasl = if inner.needs_sasl(listener) { Sasl::Handshake } else { Sasl::Off };
    let mut principal = Authenticated { principal: String::from("User:ANONYMOUS"), token: false };
    let mut cut = inner.cut_changed.subscribe();
    loop {
        if *stopped.borrow() {
            return;
        }
        if let Sasl::Authenticate { raw: true, .. } = sasl {
            match raw_frames.decode(&mut input) {
                Ok(Some(token)) => {
                    let Sasl::Authenticate { step, .. } = std::mem::replace(&mut sasl, Sasl::Done) else { return };
                    match sasl_step(&inner, step, &token, &mut sasl, true) {
                        Ok((answer, who)) => {
                            if let Some(who) = who {
                                principal = who;
                            }
                            let mut frame = (answer.len() as i32).to_be_bytes().to_vec();
                            frame.extend_from_slice(&answer);
                            if stream.write_all(&frame).await.is_err() {
                                return;
                            }
                        }
                        Err(why) => {
                            closing(&inner, connection, &why);
                            return;
                        }
                    }
                    continue;
                }
                Ok(None) => {}
                Err(_) => return,
            }
        } else {
            match codec.decode_request(&mut input) {
                Ok(Some(frame)) => {
                    let keep_open = answer(&inner, broker, connection, listener, &mut codec, &frame, &mut sasl, &mut principal, &mut output).await;
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
                    closing(&inner, connection, &format!("an unreadable frame: {e}"));
                    return;
                }
            }
        }
        tokio::select! {
            biased;
            _ = stopped.changed() => return,
            _ = cut.changed() => continue,
            read = stream.read_buf(&mut input) => match read {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            },
        }
    }
}

/// Handles one request, writing its response (if any) to `output`; false to close.
#[allow(clippy::too_many_arguments)]
async fn answer(
    inner: &Arc<Inner>,
    broker: i32,
    connection: u64,
    listener: Listener,
    codec: &mut ServerCodec,
    frame: &RequestFrame,
    sasl: &mut Sasl,
    principal: &mut Authenticated,
    output: &mut BytesMut,
) -> bool {
    let version = frame.version();
    let api = match frame.api_key() {
        Ok(api) => api,
        // No response type to answer with; Kafka closes the connection too.
        Err(_) => {
            closing(inner, connection, &format!("an unknown api key {}", frame.header.request_api_key));
            return false;
        }
    };
    let client_id = frame.client_id().unwrap_or("").to_owned();
    if inner.config.log_requests {
        eprintln!("request api={} key={} version={version} client_id={client_id:?} broker={broker} connection={connection}", api.name(), api.key());
    }
    if inner.is_cut(&client_id) {
        return false;
    }
    // As Kafka: an ApiVersions version it does not serve gets UNSUPPORTED_VERSION at v0 with the
    // ApiVersions range, so that the client can retry with a version both sides know.
    if let Some(range) = inner.config.release.versions(ApiKey::ApiVersions) {
        if let Some(answer) = frame.unsupported_api_versions(range) {
            // Journaled, refused: a test sees how often a client asks too new a version.
            let request = frame.decode_body().unwrap_or_else(|_| RequestKind::ApiVersions(Default::default()));
            let entry = Entry { seq: 0, at_ms: inner.now_ms(), broker, connection, client_id, api, version, request, action: None, errors: Vec::new() };
            let seq = inner.journal().push(entry);
            inner.journal().answered(seq, vec![ErrorCode::UNSUPPORTED_VERSION]);
            return codec.encode_response(answer, output).is_ok();
        }
    }
    let pre_auth = matches!(sasl, Sasl::Handshake | Sasl::Authenticate { .. });
    if pre_auth && !matches!(api, ApiKey::ApiVersions | ApiKey::SaslHandshake | ApiKey::SaslAuthenticate) {
        closing(inner, connection, &format!("a {} request before SASL authentication", api.name()));
        return false;
    }
    let supported = inner.config.release.versions(api).is_some_and(|r| r.contains(version));
    let request = if supported {
        match frame.decode_body() {
            Ok(r) => r,
            // Kafka closes a connection whose request does not parse.
            Err(e) => {
                closing(inner, connection, &format!("an undecodable request: {e}"));
                return false;
            }
        }
    } else {
        // UNSUPPORTED_VERSION in the api's error response, as Kafka answers a version it does
        // not serve (when the body cannot be read at that version, the connection closes).
        return match frame.decode_body() {
            Ok(request) => match handlers::errors::response(&request, version, ErrorCode::UNSUPPORTED_VERSION) {
                Some(body) => write(codec, frame, api, version, body, output),
                None => false,
            },
            Err(_) => false,
        };
    };
    let now = inner.now_ms();
    let seq = inner.journal().push(Entry {
        seq: 0,
        at_ms: now,
        broker,
        connection,
        client_id: client_id.clone(),
        api,
        version,
        request: request.clone(),
        action: None,
        errors: Vec::new(),
    });
    let action = inner.hooks().decide(&Seen { broker, connection, client_id: &client_id, version, request: &request });
    if let Some(a) = action.as_ref().filter(|a| !matches!(a, Action::Pass)) {
        inner.journal().acted(seq, a);
    }
    let mut corrupt = false;
    let mut lose = false;
    match &action {
        None | Some(Action::Pass) => {}
        Some(Action::Error(code)) => {
            let body = handlers::errors::response(&request, version, *code);
            return match body {
                Some(body) => {
                    inner.journal().answered(seq, handlers::errors::codes(&body));
                    write(codec, frame, api, version, body, output)
                }
                None => false,
            };
        }
        Some(Action::Delay(d)) => tokio::time::sleep(*d).await,
        Some(Action::DropResponse) => lose = true,
        Some(Action::Disconnect) => return false,
        Some(Action::CorruptCrc) => corrupt = true,
        Some(Action::Respond(f)) => {
            if let Some(body) = f(&request) {
                return write(codec, frame, api, version, body, output);
            }
        }
    }
    let reply = match request {
        RequestKind::SaslHandshake(r) => Reply::Send(sasl_handshake(sasl, &r.mechanism, version).into()),
        RequestKind::SaslAuthenticate(r) => sasl_authenticate(inner, connection, sasl, principal, &r.auth_bytes),
        request => {
            let ctx = Ctx { inner, broker, version, listener, client_id: &client_id, principal: principal.principal.as_str(), token_auth: principal.token };
            handlers::handle(&ctx, request).await
        }
    };
    let (body, close) = match reply {
        Reply::Send(body) => (Some(body), false),
        Reply::Nothing => (None, false),
        Reply::SendAndClose(body) => (Some(body), true),
        Reply::Close => (None, true),
    };
    if lose {
        return false;
    }
    let Some(mut body) = body else { return !close };
    inner.journal().answered(seq, handlers::errors::codes(&body));
    if corrupt {
        handlers::errors::corrupt_records(&mut body);
    }
    write(codec, frame, api, version, body, output) && !close
}

/// Encodes a response; false (close) when it cannot be.
fn write(codec: &mut ServerCodec, frame: &RequestFrame, api: ApiKey, version: i16, body: ResponseKind, output: &mut BytesMut) -> bool {
    let response = OutboundResponse { correlation_id: frame.correlation_id(), api_key: api, version, body };
    match codec.encode_response(response, output) {
        Ok(()) => true,
        Err(e) => {
            debug!(api = api.name(), version, error = %e, "closing: the response does not encode at this version");
            false
        }
    }
}

fn sasl_handshake(sasl: &mut Sasl, mechanism: &str, version: i16) -> SaslHandshakeResponse {
    let mechanisms = MECHANISMS.iter().map(|m| ByteString::from_static(m)).collect();
    let raw = version == 0;
    let error_code = match sasl {
        // A PLAINTEXT listener, or a second handshake: Kafka answers ILLEGAL_SASL_STATE.
        Sasl::Off | Sasl::Authenticate { .. } | Sasl::Done => ErrorCode::ILLEGAL_SASL_STATE,
        Sasl::Handshake => match (mechanism, scram::Mechanism::from_name(mechanism)) {
            ("PLAIN", _) => {
                *sasl = Sasl::Authenticate { raw, step: Step::Plain };
                ErrorCode::NONE
            }
            (_, Some(m)) => {
                *sasl = Sasl::Authenticate { raw, step: Step::ScramFirst(m) };
                ErrorCode::NONE
            }
            _ => ErrorCode::UNSUPPORTED_SASL_MECHANISM,
        },
    };
    // (`..Default::default()` for spec sets whose response has more fields.)
    #[allow(clippy::needless_update)]
    SaslHandshakeResponse { error_code: error_code.0, mechanisms, ..Default::default() }
}

/// A SaslAuthenticate request: the mechanism's next step; a failure answers
/// SASL_AUTHENTICATION_FAILED and closes, as Kafka does.
fn sasl_authenticate(inner: &Inner, connection: u64, sasl: &mut Sasl, principal: &mut Authenticated, token: &Bytes) -> Reply {
    let response = |error_code: ErrorCode, message: Option<&str>, auth_bytes: Vec<u8>| -> ResponseKind {
        SaslAuthenticateResponse {
            error_code: error_code.0,
            error_message: message.map(|m| ByteString::from(m.to_owned())),
            auth_bytes: Bytes::from(auth_bytes),
            session_lifetime_ms: 0,
            ..Default::default()
        }
        .into()
    };
    let step = match std::mem::replace(sasl, Sasl::Done) {
        Sasl::Authenticate { raw: false, step } => step,
        other => {
            *sasl = other;
            return Reply::Send(response(ErrorCode::ILLEGAL_SASL_STATE, Some("Unexpected SaslAuthenticate request: no SaslHandshake first"), Vec::new()));
        }
    };
    match sasl_step(inner, step, token, sasl, false) {
        Ok((answer, who)) => {
            if let Some(who) = who {
                *principal = who;
            }
            Reply::Send(response(ErrorCode::NONE, None, answer))
        }
        Err(why) => {
            closing(inner, connection, &why);
            Reply::SendAndClose(response(ErrorCode::SASL_AUTHENTICATION_FAILED, Some(&why), Vec::new()))
        }
    }
}

/// One token of the mechanism's exchange; `sasl` becomes the state after it.
fn sasl_step(inner: &Inner, step: Step, token: &[u8], sasl: &mut Sasl, raw: bool) -> Stepped {
    match step {
        Step::Plain => match plain_user(inner, token) {
            Some(user) => {
                *sasl = Sasl::Done;
                Ok((Vec::new(), Some(Authenticated { principal: format!("User:{user}"), token: false })))
            }
            None => Err("Authentication failed: Invalid username or password".into()),
        },
        Step::ScramFirst(mechanism) => {
            let mut state = inner.state();
            let nonce = scram::nonce(&mut state.rng);
            let now = inner.now_ms();
            let state = &*state;
            let find = |name: &str, token: bool| {
                if token {
                    state.tokens.scram_credential(name, mechanism, now)
                } else {
                    state.scram.get(name, mechanism).cloned()
                }
            };
            let (exchange, first) = scram::server_first(mechanism, token, find, &nonce)?;
            *sasl = Sasl::Authenticate { raw, step: Step::ScramFinal(Box::new(exchange)) };
            Ok((first.into_bytes(), None))
        }
        Step::ScramFinal(exchange) => {
            let last = exchange.server_final(token)?;
            *sasl = Sasl::Done;
            let principal = if exchange.token_auth {
                let state = inner.state();
                state.tokens.owner(&exchange.user).ok_or("Authentication failed: the delegation token is gone")?
            } else {
                format!("User:{}", exchange.user)
            };
            Ok((last.into_bytes(), Some(Authenticated { principal, token: exchange.token_auth })))
        }
    }
}

/// The user a PLAIN token authenticates, if its password is right.
fn plain_user(inner: &Inner, token: &[u8]) -> Option<String> {
    let parts: Vec<&[u8]> = token.split(|b| *b == 0).collect();
    let [authzid, user, pass] = parts.as_slice() else { return None };
    let ok = (authzid.is_empty() || authzid == user) && inner.config.sasl_plain.iter().any(|(u, p)| u.as_bytes() == *user && p.as_bytes() == *pass);
    ok.then(|| String::from_utf8_lossy(user).into_owned())
}

/// Logs why a connection is closed (to stderr too with `log_requests`).
fn closing(inner: &Inner, connection: u64, why: &str) {
    debug!(connection, why, "closing");
    if inner.config.log_requests {
        eprintln!("closing: connection {connection}: {why}");
    }
}
