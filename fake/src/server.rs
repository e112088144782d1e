//! One client connection to one broker: frames read, SASL, hooks and the journal, the request
//! handled, the response written, in order (Kafka answers each connection's requests one at
//! a time, in order). The connection ends when the client closes it, when its broker stops,
//! when a hook or the client's cut says so, or at a frame Kafka would close the connection for.

use std::sync::Arc;
use std::time::Duration;

use kwire::codec::{FrameDecoder, OutboundResponse, RequestFrame, ServerCodec};
use kwire::messages::{SaslAuthenticateResponse, SaslHandshakeResponse};
use kwire::{ApiKey, ByteString, Bytes, BytesMut, Encode, ErrorCode, RequestKind, ResponseKind};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tracing::debug;

use crate::cluster::{Inner, Listener};
use crate::control::{Action, Entry, Seen};
use crate::handlers::{self, Ctx, Reply};
use crate::{oauth, scram, throttle};

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
        mechanism: String,
    },
    Done,
}

/// The next token a mechanism expects.
enum Step {
    Plain,
    ScramFirst(scram::Mechanism),
    ScramFinal(Box<scram::Exchange>),
    /// OAUTHBEARER's client first message.
    OAuthBearer,
    /// OAUTHBEARER after its error reply (this JSON): the client's `%x01` ends the exchange with
    /// the failure (RFC 7628 section 3.2.3).
    OAuthBearerRefused(String),
    /// A re-authentication that asked for another mechanism: its first token fails with this.
    BadMechanism(String),
}

/// A token's outcome: the bytes to answer, and the principal once authenticated.
type Stepped = Result<(Vec<u8>, Option<Authenticated>), String>;

/// Who a connection authenticated as.
pub(crate) struct Authenticated {
    /// `User:NAME`.
    pub(crate) principal: String,
    /// Through a delegation token (SCRAM with `tokenauth=true`).
    pub(crate) token: bool,
    /// When the credential expires (an OAUTHBEARER token's `exp`), in ms since the epoch: the
    /// session's end, after which a request other than a re-authentication closes the
    /// connection (KIP-368).
    pub(crate) expires_ms: Option<i64>,
}

impl Authenticated {
    pub(crate) fn anonymous() -> Authenticated {
        Authenticated { principal: String::from("User:ANONYMOUS"), token: false, expires_ms: None }
    }

    fn user(principal: String) -> Authenticated {
        Authenticated { principal, token: false, expires_ms: None }
    }
}

/// What a SASL connection has authenticated with, for re-authentication (KIP-368).
struct Session {
    mechanism: String,
    /// The client authenticated with SaslAuthenticate v1 or later, so it may re-authenticate.
    reauth: bool,
}

/// The mechanisms a SASL listener offers (`sasl.enabled.mechanisms`): OAUTHBEARER when the
/// cluster validates tokens.
fn mechanisms(inner: &Inner) -> Vec<&'static str> {
    let mut m = vec!["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"];
    if inner.config.oauthbearer.is_some() {
        m.push("OAUTHBEARER");
    }
    m
}

/// How long a TLS handshake may take before the connection is dropped.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Accepts TCP connections for `broker` until the cluster is gone; over TLS with `tls`.
pub(crate) async fn accept(inner: Arc<Inner>, broker: i32, kind: Listener, listener: TcpListener, tls: Option<tokio_rustls::TlsAcceptor>) {
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
        match &tls {
            None => {
                tokio::spawn(serve(inner, broker, connection, kind, stream, stopped, Peer::new(peer.ip().to_string(), None)));
            }
            Some(acceptor) => {
                let handshake = acceptor.accept(stream);
                tokio::spawn(async move {
                    match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, handshake).await {
                        Ok(Ok(stream)) => {
                            // A client certificate names the principal (until SASL does).
                            let certified = crate::tls::principal(stream.get_ref().1.peer_certificates());
                            serve(inner, broker, connection, kind, stream, stopped, Peer::new(peer.ip().to_string(), certified)).await
                        }
                        Ok(Err(e)) => closing(&inner, connection, &format!("the TLS handshake failed: {e}")),
                        Err(_) => closing(&inner, connection, "the TLS handshake timed out"),
                    }
                });
            }
        }
    }
}

/// Who is at the other end of a connection, as the authorizer sees it.
pub(crate) struct Peer {
    /// The client's address, without its port (what an ACL's host names).
    host: String,
    /// The principal its TLS client certificate names.
    certified: Option<String>,
}

impl Peer {
    pub(crate) fn new(host: String, certified: Option<String>) -> Peer {
        Peer { host, certified }
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
    peer: Peer,
) {
    // The sans-io codec over a plain read loop: after a v0 SaslHandshake the next frame is a
    // bare SASL token with no request header.
    let mut codec = ServerCodec::new();
    let raw_frames = FrameDecoder::default();
    let mut input = BytesMut::with_capacity(64 << 10);
    let mut output = BytesMut::new();
    let mut sasl = if inner.needs_sasl(listener) { Sasl::Handshake } else { Sasl::Off };
    let Peer { host, certified } = peer;
    let mut principal = certified.map_or_else(Authenticated::anonymous, Authenticated::user);
    let mut session: Option<Session> = None;
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
                            if who.is_some() {
                                session = Some(Session { mechanism: String::new(), reauth: false });
                            }
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
                    let mut conn = Conn {
                        broker,
                        connection,
                        listener,
                        host: &host,
                        sasl: &mut sasl,
                        principal: &mut principal,
                        session: &mut session,
                        mute: Duration::ZERO,
                    };
                    let keep_open = answer(&inner, &mut conn, &mut codec, &frame, &mut output).await;
                    let mute = conn.mute;
                    if !output.is_empty() {
                        if stream.write_all(&output).await.is_err() {
                            return;
                        }
                        output.clear();
                    }
                    if !keep_open {
                        return;
                    }
                    // A throttled client's connection is not read until its throttle time is over.
                    if !mute.is_zero() {
                        tokio::select! {
                            _ = stopped.changed() => return,
                            _ = tokio::time::sleep(mute) => {}
                        }
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

/// A connection's state that requests read and change.
struct Conn<'a> {
    broker: i32,
    connection: u64,
    listener: Listener,
    host: &'a str,
    sasl: &'a mut Sasl,
    principal: &'a mut Authenticated,
    session: &'a mut Option<Session>,
    /// How long the connection is not read after this response (a throttle, KIP-219).
    mute: Duration,
}

/// Handles one request, writing its response (if any) to `output`; false to close.
async fn answer(inner: &Arc<Inner>, conn: &mut Conn<'_>, codec: &mut ServerCodec, frame: &RequestFrame, output: &mut BytesMut) -> bool {
    let Conn { broker, connection, listener, host, .. } = *conn;
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
    // KIP-368: once the credential's session is over, only a re-authentication is served (as
    // Kafka's processor, which closes an expired channel at its next request).
    if let Some(expires) = conn.principal.expires_ms {
        let reauth = api == ApiKey::SaslHandshake && matches!(conn.sasl, Sasl::Done) && conn.session.as_ref().is_some_and(|s| s.reauth);
        if !reauth && matches!(conn.sasl, Sasl::Done) && inner.now_ms() > expires {
            closing(inner, connection, &format!("a {} request after the SASL session expired", api.name()));
            return false;
        }
    }
    let (sasl, principal) = (&mut *conn.sasl, &mut *conn.principal);
    // As Kafka: an ApiVersions version it does not serve gets UNSUPPORTED_VERSION at v0 with the
    // ApiVersions range, so that the client can retry with a version both sides know.
    if let Some(range) = inner.config.release.versions(ApiKey::ApiVersions) {
        if let Some(answer) = frame.unsupported_api_versions(range) {
            // Journaled, refused: a test sees how often a client asks too new a version.
            let request = frame.decode_body().unwrap_or_else(|_| RequestKind::ApiVersions(Default::default()));
            let entry =
                Entry { seq: 0, at_ms: inner.now_ms(), broker, connection, client_id, api, version, request, action: None, errors: Vec::new(), throttle_ms: 0 };
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
        throttle_ms: 0,
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
    let mut request = request;
    if let RequestKind::Fetch(r) = &mut request {
        let cap = {
            let state = inner.state();
            if state.quotas.values.is_empty() {
                None
            } else {
                throttle::fetch_cap(&state.quotas, &principal.principal, &client_id)
            }
        };
        if let Some(cap) = cap {
            r.max_bytes = r.max_bytes.min(cap);
            r.min_bytes = r.min_bytes.min(r.max_bytes);
        }
    }
    let (reply, busy) = match request {
        RequestKind::SaslHandshake(r) => (Reply::Send(sasl_handshake(inner, sasl, conn.session.as_ref(), &r.mechanism, version).into()), Duration::ZERO),
        RequestKind::SaslAuthenticate(r) => (sasl_authenticate(inner, connection, sasl, principal, conn.session, &r.auth_bytes, version), Duration::ZERO),
        request => {
            let ctx =
                Ctx { inner, broker, version, listener, client_id: &client_id, host, principal: principal.principal.as_str(), token_auth: principal.token };
            throttle::Busy::new(handlers::handle(&ctx, request)).await
        }
    };
    let (body, close) = match reply {
        Reply::Send(body) => (Some(body), false),
        Reply::Nothing => (None, false),
        Reply::SendAndClose(body) => (Some(body), true),
        Reply::Close => (None, true),
    };
    let mut body = body;
    let throttle_ms = throttle(inner, conn, frame, (&client_id, busy), api, version, &mut body).await;
    if throttle_ms > 0 {
        inner.journal().throttled(seq, throttle_ms);
    }
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

/// Quotas and a test's throttles: the throttle time set in the response (a Fetch over its quota
/// answered empty), and the wait: the response delayed, or (KIP-219 versions) the connection
/// muted after it; a throttle the handler set (partition mutations) counts too. `asked`: the
/// client id, and the time the handler was busy. Returns the throttle time.
async fn throttle(
    inner: &Inner,
    conn: &mut Conn<'_>,
    frame: &RequestFrame,
    (client_id, busy): (&str, Duration),
    api: ApiKey,
    version: i16,
    body: &mut Option<ResponseKind>,
) -> i32 {
    let decided = body.as_mut().and_then(throttle::throttle_time).map_or(0, |ms| *ms);
    let mut decision = {
        let state = inner.state();
        let mut throttling = inner.throttling();
        // The common case, no quota and no throttle: nothing to measure.
        if state.quotas.values.is_empty() && throttling.imposed.is_empty() {
            return decided;
        }
        // Kafka counts a Produce's request bytes and a Fetch's response bytes.
        let bytes = match (api, body.as_ref()) {
            (ApiKey::Produce, _) => frame.header.encoded_len(frame.header_version) + frame.body.len(),
            (ApiKey::Fetch, Some(b)) => 4 + b.encoded_len(version),
            _ => 0,
        };
        let who = throttle::Who { broker: conn.broker, principal: &conn.principal.principal, client_id };
        throttling.decide(&state.quotas, &who, api, bytes, busy, inner.now_ms())
    };
    decision.throttle_ms = decision.throttle_ms.max(decided);
    if decision.throttle_ms <= 0 {
        return 0;
    }
    if let Some(b) = body.as_mut() {
        if let (true, ResponseKind::Fetch(f)) = (decision.empty_fetch, &mut *b) {
            f.responses.clear();
            f.node_endpoints.clear();
        }
        throttle::set_throttle_time(b, decision.throttle_ms);
    }
    let wait = Duration::from_millis(decision.throttle_ms as u64);
    if throttle::client_throttles(api, version) {
        conn.mute = wait;
    } else {
        tokio::time::sleep(wait).await;
    }
    decision.throttle_ms
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

fn sasl_handshake(inner: &Inner, sasl: &mut Sasl, session: Option<&Session>, mechanism: &str, version: i16) -> SaslHandshakeResponse {
    let enabled = mechanisms(inner);
    let raw = version == 0;
    let step = |mechanism: &str| match (mechanism, scram::Mechanism::from_name(mechanism)) {
        ("PLAIN", _) => Some(Step::Plain),
        ("OAUTHBEARER", _) if inner.config.oauthbearer.is_some() => Some(Step::OAuthBearer),
        (_, Some(m)) => Some(Step::ScramFirst(m)),
        _ => None,
    };
    let error_code = match sasl {
        // A PLAINTEXT listener, or a second handshake: Kafka answers ILLEGAL_SASL_STATE.
        Sasl::Off | Sasl::Authenticate { .. } => ErrorCode::ILLEGAL_SASL_STATE,
        // A re-authentication (KIP-368), from a client that authenticated with SaslAuthenticate
        // v1+: the same mechanism, or the next token fails (Kafka's REAUTH_BAD_MECHANISM).
        Sasl::Done => match (session.filter(|s| s.reauth && !raw), step(mechanism)) {
            (None, _) => ErrorCode::ILLEGAL_SASL_STATE,
            (Some(_), None) => ErrorCode::UNSUPPORTED_SASL_MECHANISM,
            (Some(s), Some(next)) => {
                let step = if s.mechanism == mechanism {
                    next
                } else {
                    Step::BadMechanism(format!(
                        "SASL mechanism '{mechanism}' requested by client is not supported for re-authentication of mechanism '{}'",
                        s.mechanism
                    ))
                };
                *sasl = Sasl::Authenticate { raw, step, mechanism: mechanism.to_owned() };
                ErrorCode::NONE
            }
        },
        Sasl::Handshake => match step(mechanism) {
            Some(step) => {
                *sasl = Sasl::Authenticate { raw, step, mechanism: mechanism.to_owned() };
                ErrorCode::NONE
            }
            None => ErrorCode::UNSUPPORTED_SASL_MECHANISM,
        },
    };
    // (`..Default::default()` for spec sets whose response has more fields.)
    #[allow(clippy::needless_update)]
    SaslHandshakeResponse { error_code: error_code.0, mechanisms: enabled.into_iter().map(ByteString::from_static).collect(), ..Default::default() }
}

/// A SaslAuthenticate request: the mechanism's next step; a failure answers
/// SASL_AUTHENTICATION_FAILED and closes, as Kafka does. Once authenticated, the session
/// lifetime is the credential's remaining life (KIP-368; Kafka's `connections.max.reauth.ms`
/// unset), and a re-authentication must keep the principal.
fn sasl_authenticate(
    inner: &Inner,
    connection: u64,
    sasl: &mut Sasl,
    principal: &mut Authenticated,
    session: &mut Option<Session>,
    token: &Bytes,
    version: i16,
) -> Reply {
    let response = |error_code: ErrorCode, message: Option<&str>, auth_bytes: Vec<u8>, session_lifetime_ms: i64| -> ResponseKind {
        SaslAuthenticateResponse {
            error_code: error_code.0,
            error_message: message.map(|m| ByteString::from(m.to_owned())),
            auth_bytes: Bytes::from(auth_bytes),
            // The field is v1+.
            session_lifetime_ms: if version >= 1 { session_lifetime_ms } else { 0 },
            ..Default::default()
        }
        .into()
    };
    let (step, mechanism) = match std::mem::replace(sasl, Sasl::Done) {
        Sasl::Authenticate { raw: false, step, mechanism } => (step, mechanism),
        other => {
            *sasl = other;
            return Reply::Send(response(ErrorCode::ILLEGAL_SASL_STATE, Some("Unexpected SaslAuthenticate request: no SaslHandshake first"), Vec::new(), 0));
        }
    };
    let reauthenticating = session.is_some();
    let outcome = sasl_step(inner, step, token, sasl, false).and_then(|(answer, who)| match who {
        Some(who) if reauthenticating && who.principal != principal.principal => {
            let (from, to) = (principal.principal.replacen(':', ".", 1), who.principal.replacen(':', ".", 1));
            Err(format!("Cannot change principals during re-authentication from {from}: {to}"))
        }
        who => Ok((answer, who)),
    });
    match outcome {
        Ok((answer, who)) => {
            let mut lifetime = 0;
            if let Some(who) = who {
                lifetime = who.expires_ms.map_or(0, |e| (e - inner.now_ms()).max(0));
                *principal = who;
                let reauth = session.as_ref().is_some_and(|s| s.reauth) || version > 0;
                *session = Some(Session { mechanism, reauth });
            }
            Reply::Send(response(ErrorCode::NONE, None, answer, lifetime))
        }
        // An empty reason: Kafka's server threw outside the SASL exceptions, and closes unanswered.
        Err(why) if why.is_empty() => {
            closing(inner, connection, "a SASL token the mechanism could not process");
            Reply::Close
        }
        Err(why) => {
            closing(inner, connection, &why);
            Reply::SendAndClose(response(ErrorCode::SASL_AUTHENTICATION_FAILED, Some(&why), Vec::new(), 0))
        }
    }
}

/// One token of the mechanism's exchange; `sasl` becomes the state after it.
fn sasl_step(inner: &Inner, step: Step, token: &[u8], sasl: &mut Sasl, raw: bool) -> Stepped {
    match step {
        Step::Plain => match plain_user(inner, token) {
            Some(user) => {
                *sasl = Sasl::Done;
                Ok((Vec::new(), Some(Authenticated::user(format!("User:{user}")))))
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
            *sasl = Sasl::Authenticate { raw, step: Step::ScramFinal(Box::new(exchange)), mechanism: mechanism.name().to_owned() };
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
            Ok((last.into_bytes(), Some(Authenticated { principal, token: exchange.token_auth, expires_ms: None })))
        }
        Step::OAuthBearerRefused(json) if token == [0x01] => Err(json),
        Step::OAuthBearer | Step::OAuthBearerRefused(_) => oauthbearer(inner, token, sasl, raw),
        Step::BadMechanism(why) => Err(why),
    }
}

/// OAUTHBEARER's client first message (RFC 7628): a token the unsecured validator accepts
/// authenticates its principal; one it refuses gets the error reply, and the exchange waits for
/// the client's acknowledgement (or another first message, as Kafka's server allows).
fn oauthbearer(inner: &Inner, message: &[u8], sasl: &mut Sasl, raw: bool) -> Stepped {
    // Kafka tells the client nothing more for a malformed message (a `SaslException`).
    let generic = || "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER".to_owned();
    let Some(config) = inner.config.oauthbearer.as_ref() else { return Err(generic()) };
    let first = oauth::parse_initial_response(message).map_err(|why| {
        debug!(why, "OAUTHBEARER first message refused");
        generic()
    })?;
    match oauth::validate(&first.token, config, inner.now_ms()) {
        Ok(valid) => {
            if !first.authzid.is_empty() && first.authzid != valid.principal {
                return Err(format!(
                    "Authentication failed: Client requested an authorization id ({}) that is different from the token's principal name ({})",
                    first.authzid, valid.principal
                ));
            }
            *sasl = Sasl::Done;
            Ok((Vec::new(), Some(Authenticated { principal: format!("User:{}", valid.principal), token: false, expires_ms: Some(valid.expires_ms) })))
        }
        Err(refusal) => match refusal.json() {
            Some(json) => {
                // The reason for the log only: the client gets the status.
                if let oauth::Refusal::Token { why, .. } = &refusal {
                    debug!(why = why.as_str(), "OAUTHBEARER token refused");
                }
                *sasl = Sasl::Authenticate { raw, step: Step::OAuthBearerRefused(json.clone()), mechanism: "OAUTHBEARER".into() };
                Ok((json.into_bytes(), None))
            }
            // Kafka's validator throws on it and the connection closes unanswered.
            None => Err(String::new()),
        },
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
