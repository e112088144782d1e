//! `kwire pcap`: Kafka messages in a packet capture, one JSON line each.
//!
//! Packets go through [`capture`] (file format, link layer, IP, TCP) to [`tcp`] (reassembly per
//! direction) to [`frames`] (frame splitting and resynchronisation), and each frame is decoded
//! with its header: requests describe themselves; a response takes the api key and version of
//! the request with its correlation id on the same connection. Traffic to one of the broker
//! ports is requests; traffic from one is responses.

mod capture;
mod frames;
mod tcp;

use std::collections::HashMap;
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use kwire::codec::{InFlight, RequestFrame};
use kwire::header::peek_request_start;
use kwire::runtime::json::serde_json::{json, Map, Value};
use kwire::{ApiKey, Bytes};

use self::capture::{Capture, Segment};
use self::frames::{Framer, Item};
use self::tcp::{Chunk, HalfStream};
use crate::error::{CaptureError, CliError, InputError};
use crate::html::HtmlReport;
use crate::message::{request_json, response_json};
use crate::secrets::Secrets;
use crate::talkers::{Talkers, Target};

/// One direction of a connection.
#[derive(Default)]
struct Side {
    stream: HalfStream,
    framer: Option<Framer>,
}

/// A client-broker connection.
struct Conn {
    /// Numbered in the order seen: the connection the secrets rule knows it by.
    id: u64,
    client: SocketAddr,
    broker: SocketAddr,
    requests: Side,
    responses: Side,
    pending: InFlight,
    /// After a SaslHandshake v0, until a Kafka request follows: SASL tokens travel as bare
    /// size-prefixed bytes, which read as a frame would print their bytes as an api key, a
    /// version and a correlation id.
    raw_sasl: bool,
}

struct Decoder<'a, W: Write> {
    ports: &'a [u16],
    conns: HashMap<(SocketAddr, SocketAddr), Conn>,
    next_id: u64,
    shown: Shown,
    /// Who is talking, for `--report` and `--html`.
    talkers: Talkers,
    page: HtmlReport,
    out: &'a mut W,
}

/// What the output shows: secrets (withheld unless asked for), records (`--records`: at most
/// that many per frame), and with a target release (`--report`) a last line with each client
/// and what it would meet there.
pub struct Shown {
    pub secrets: Secrets,
    pub records: Option<usize>,
    pub report: Option<Target>,
    /// `--html FILE`: the page written at the end.
    pub html: Option<std::path::PathBuf>,
}

/// Reads `path` and prints its Kafka messages as `shown` says. A corrupt capture prints what
/// came before the damage and then fails.
pub fn run(path: &Path, ports: &[u16], shown: Shown, out: &mut impl Write) -> Result<(), CliError> {
    let capture_error = |what| CliError::Input(InputError::Capture { path: path.to_path_buf(), what });
    let mut cap = Capture::open(path).map_err(capture_error)?;
    let mut dec = Decoder { ports, conns: HashMap::new(), next_id: 0, shown, talkers: Talkers::default(), page: HtmlReport::default(), out };
    let mut last = Duration::ZERO;
    let mut failure = None;
    loop {
        // pcap-file is a third-party parser of untrusted bytes: a panic in it is a corrupt file,
        // not a crash of the tool.
        let next = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cap.next_packet())).unwrap_or(Some(Err(CaptureError::ParserPanicked)));
        match next {
            None => break,
            Some(Err(e)) => {
                failure = Some(e);
                break;
            }
            Some(Ok((time, link, data))) => {
                last = time;
                if let Some(seg) = capture::tcp_segment(time, link, &data) {
                    dec.segment(seg)?;
                }
            }
        }
    }
    dec.finish(last)?;
    match failure {
        Some(what) => Err(capture_error(what)),
        None => Ok(()),
    }
}

fn timestamp(t: Duration) -> String {
    format!("{}.{:06}", t.as_secs(), t.subsec_micros())
}

impl<W: Write> Decoder<'_, W> {
    fn segment(&mut self, seg: Segment) -> Result<(), CliError> {
        let (client, broker, request) = if self.ports.contains(&seg.dst.port()) {
            (seg.src, seg.dst, true)
        } else if self.ports.contains(&seg.src.port()) {
            (seg.dst, seg.src, false)
        } else {
            return Ok(());
        };
        let key = (client, broker);
        // A SYN that does not continue the known stream is a new connection on the same ports.
        let reused = seg.syn
            && self.conns.get(&key).is_some_and(|c| {
                let side = if request { &c.requests } else { &c.responses };
                side.stream.is_new_connection(seg.seq)
            });
        if reused {
            self.finish_conn(&key, seg.time)?;
            self.conns.remove(&key);
        }
        let next_id = &mut self.next_id;
        let conn = self.conns.entry(key).or_insert_with(|| {
            *next_id += 1;
            Conn { id: *next_id, client, broker, requests: Side::default(), responses: Side::default(), pending: InFlight::new(), raw_sasl: false }
        });
        let side = if request { &mut conn.requests } else { &mut conn.responses };
        let mut chunks = Vec::new();
        side.stream.push(seg.seq, seg.syn, &seg.payload, &mut chunks);
        self.deliver(&key, request, chunks, seg.time, false)
    }

    /// Feeds reassembled chunks to the framer of one side and prints the frames.
    fn deliver(&mut self, key: &(SocketAddr, SocketAddr), request: bool, chunks: Vec<Chunk>, time: Duration, end: bool) -> Result<(), CliError> {
        let Some(conn) = self.conns.get_mut(key) else { return Ok(()) };
        let mut items = Vec::new();
        let side = if request { &mut conn.requests } else { &mut conn.responses };
        let from_syn = side.stream.from_syn;
        let framer = side.framer.get_or_insert_with(|| Framer::new(from_syn));
        for chunk in chunks {
            match chunk {
                Chunk::Data(d) => framer.push(&d, request, &conn.pending, false, &mut items),
                Chunk::Gap(_) => framer.gap(&mut items),
            }
        }
        if end {
            framer.push(&[], request, &conn.pending, true, &mut items);
        }
        for item in items {
            let line = Self::item_line(conn, (&mut self.shown.secrets, self.shown.records), request, item, time);
            if let (true, Value::Object(o)) = (self.shown.report.is_some() || self.shown.html.is_some(), &line) {
                self.talkers.observe(conn.id, o);
                if self.shown.html.is_some() {
                    self.page.observe(conn.id, time.as_secs_f64() * 1000.0, o);
                }
            }
            writeln!(self.out, "{line}").map_err(CliError::io)?;
        }
        Ok(())
    }

    /// One item's JSON line; `shown`: the secrets rule, and the records to show per frame.
    fn item_line(conn: &mut Conn, (secrets, records): (&mut Secrets, Option<usize>), request: bool, item: Item, time: Duration) -> Value {
        let mut o = Map::new();
        o.insert("timestamp".into(), json!(timestamp(time)));
        o.insert("client".into(), json!(conn.client.to_string()));
        o.insert("broker".into(), json!(conn.broker.to_string()));
        o.insert("direction".into(), json!(if request { "request" } else { "response" }));
        if let Item::Frame(payload) = &item {
            o.insert("size".into(), json!(payload.len() + 4));
            let start = peek_request_start(payload);
            let frame = if request {
                start.is_some_and(|(key, version, _)| ApiKey::from_i16(key).is_some_and(|api| api.info().valid.contains(version)))
            } else {
                kwire::header::peek_response_correlation_id(payload).is_some_and(|corr| conn.pending.get(corr).is_some())
            };
            if conn.raw_sasl && !frame {
                o.insert("saslToken".into(), secrets.sasl_token(conn.id, request, payload));
                return Value::Object(o);
            }
            if request {
                conn.raw_sasl = start.is_some_and(|(key, version, _)| key == ApiKey::SaslHandshake.key() && version == 0);
            }
        }
        match item {
            Item::Skipped(n, why) => {
                o.insert("error".into(), json!(format!("skipped {n} bytes: {why}")));
            }
            Item::Cut(n) => {
                o.insert("error".into(), json!(format!("frame cut short: {n} bytes, then data missing from the capture")));
            }
            Item::Frame(payload) if request => {
                if let Some((key, version, correlation_id)) = peek_request_start(&payload) {
                    o.insert("apiKey".into(), json!(key));
                    o.insert("apiVersion".into(), json!(version));
                    o.insert("correlationId".into(), json!(correlation_id));
                    // A retransmitted request id replaces the one before; unknown apis cannot
                    // be answered in a way this build reads, and Produce with acks=0 is not
                    // answered (kept, it would stay for as long as the capture lasts).
                    let answered = key != ApiKey::Produce.key() || RequestFrame::parse(Bytes::copy_from_slice(&payload)).map_or(true, |r| r.expects_response());
                    if let (Some(api), true) = (ApiKey::from_i16(key), answered) {
                        conn.pending.take(correlation_id);
                        let _ = conn.pending.insert(correlation_id, api, version);
                    }
                }
                match request_json(&payload) {
                    Ok((header, mut body)) => {
                        if let Some((key, _, _)) = peek_request_start(&payload) {
                            secrets.apply(conn.id, key, true, &mut body);
                            if let Some(mut budget) = records {
                                crate::records::expand(key, true, &mut body, &mut budget);
                            }
                        }
                        o.insert("header".into(), header);
                        o.insert("body".into(), body);
                    }
                    Err(e) => {
                        o.insert("error".into(), json!(e.to_string()));
                    }
                }
            }
            Item::Frame(payload) => {
                let corr = kwire::header::peek_response_correlation_id(&payload);
                if let Some(corr) = corr {
                    o.insert("correlationId".into(), json!(corr));
                }
                match corr.and_then(|c| conn.pending.take(c)) {
                    Some((api, version)) => {
                        o.insert("apiKey".into(), json!(api.key()));
                        o.insert("apiVersion".into(), json!(version));
                        match response_json(&payload, api.key(), version) {
                            Ok((header, mut body)) => {
                                secrets.apply(conn.id, api.key(), false, &mut body);
                                if let Some(mut budget) = records {
                                    crate::records::expand(api.key(), false, &mut body, &mut budget);
                                }
                                o.insert("header".into(), header);
                                o.insert("body".into(), body);
                            }
                            Err(e) => {
                                o.insert("error".into(), json!(e.to_string()));
                            }
                        }
                    }
                    None => {
                        o.insert("error".into(), json!("no request with this correlation id was seen on the connection"));
                    }
                }
            }
        }
        Value::Object(o)
    }

    fn finish_conn(&mut self, key: &(SocketAddr, SocketAddr), time: Duration) -> Result<(), CliError> {
        for request in [true, false] {
            let mut chunks = Vec::new();
            if let Some(conn) = self.conns.get_mut(key) {
                let side = if request { &mut conn.requests } else { &mut conn.responses };
                side.stream.flush(&mut chunks);
            }
            self.deliver(key, request, chunks, time, true)?;
        }
        Ok(())
    }

    /// End of capture: flushes every stream, requests first so late responses find them.
    fn finish(&mut self, time: Duration) -> Result<(), CliError> {
        let mut keys: Vec<_> = self.conns.keys().copied().collect();
        keys.sort();
        for key in keys {
            self.finish_conn(&key, time)?;
        }
        if self.shown.report.is_some() {
            let clients = self.talkers.json(self.shown.report.as_ref());
            crate::format::print_json(self.out, &json!({"clients": clients}))?;
        }
        if let Some(path) = &self.shown.html {
            self.page.write(path, &self.talkers, self.shown.report.as_ref())?;
        }
        Ok(())
    }
}
