//! The fault injector, kind by kind, between a client and a broker double (no Kafka needed):
//! what the client sees of each fault on the wire, the counts, the events and the switch.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kwire::codec::{ClientCodec, OutboundRequest, OutboundResponse, ServerCodec};
use kwire::messages::{ApiVersionsRequest, ApiVersionsResponse};
use kwire::{ApiKey, BytesMut, ResponseKind};
use kwire_proxy::fault::Direction;
use kwire_proxy::{Config, Event, FaultConfig, FaultKind, Proxy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A broker double answering every request with an ApiVersions response.
async fn broker() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (mut codec, mut buf) = (ServerCodec::new(), BytesMut::new());
                loop {
                    while let Ok(Some(frame)) = codec.decode_request(&mut buf) {
                        let mut out = BytesMut::new();
                        let response = OutboundResponse::new(&frame, ApiVersionsResponse::default().into()).unwrap();
                        codec.encode_response(response, &mut out).unwrap();
                        if tcp.write_all(&out).await.is_err() {
                            return;
                        }
                    }
                    if !matches!(tcp.read_buf(&mut buf).await, Ok(1..)) {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// Every connection struck with `kind` on its first response.
fn faults(kind: FaultKind) -> FaultConfig {
    FaultConfig::new(9)
        .percent(100)
        .kinds(&[(kind, 1)])
        .directions(&[Direction::Responses])
        .after_frames(0)
        .max_delay(Duration::from_millis(300))
        .stall(Duration::from_secs(1))
}

/// A proxy with [`faults`] of `kind`, and the fault events it reported.
async fn proxy(upstream: &str, kind: FaultKind) -> (Proxy, Arc<Mutex<Vec<String>>>) {
    let faults = faults(kind);
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let config = Config::new(upstream).faults(faults).on_event(move |e| {
        if let Event::Fault { id, kind } = e {
            seen.lock().unwrap().push(format!("{id} {kind:?}"));
        }
    });
    (Proxy::start(config).await.unwrap(), events)
}

fn request(codec: &mut ClientCodec, correlation_id: i32) -> BytesMut {
    let mut out = BytesMut::new();
    let request = OutboundRequest::new(ApiKey::ApiVersions, 3, correlation_id, ApiVersionsRequest::default().into());
    codec.encode_request(request, &mut out).unwrap();
    out
}

/// How a read of the rest of a connection ended.
#[derive(Debug, PartialEq)]
enum Ending {
    /// The peer closed, after this many bytes.
    Eof(usize),
    /// An error of this kind, after this many bytes.
    Error(std::io::ErrorKind, usize),
    /// Nothing more within the time, after this many bytes.
    Open(usize),
}

async fn read_to_end(stream: &mut TcpStream, within: Duration) -> Ending {
    let (mut got, mut buf) = (0, [0u8; 4096]);
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Ok(Ok(0)) => return Ending::Eof(got),
            Ok(Ok(n)) => got += n,
            Ok(Err(e)) => return Ending::Error(e.kind(), got),
            Err(_) => return Ending::Open(got),
        }
    }
}

/// The size of one ApiVersions response frame as the proxy sends it (mediated).
async fn whole_response(upstream: &str) -> usize {
    let proxy = Proxy::start(Config::new(upstream)).await.unwrap();
    let mut c = TcpStream::connect(proxy.bootstrap()).await.unwrap();
    c.write_all(&request(&mut ClientCodec::new(), 1)).await.unwrap();
    let mut size = [0u8; 4];
    c.read_exact(&mut size).await.unwrap();
    4 + i32::from_be_bytes(size) as usize
}

#[tokio::test]
async fn each_fault_as_the_client_sees_it() {
    let upstream = broker().await;
    let whole = whole_response(&upstream).await;

    // Drop: closed in place of the response.
    let (p, events) = proxy(&upstream, FaultKind::Drop).await;
    let mut c = TcpStream::connect(p.bootstrap()).await.unwrap();
    c.write_all(&request(&mut ClientCodec::new(), 1)).await.unwrap();
    assert_eq!(read_to_end(&mut c, Duration::from_secs(5)).await, Ending::Eof(0));
    assert_eq!(p.fault_counts().drop, 1);
    assert_eq!(*events.lock().unwrap(), ["0 Drop"]);

    // Truncate: part of the response, then a FIN.
    let (p, _) = proxy(&upstream, FaultKind::Truncate).await;
    let mut c = TcpStream::connect(p.bootstrap()).await.unwrap();
    c.write_all(&request(&mut ClientCodec::new(), 1)).await.unwrap();
    match read_to_end(&mut c, Duration::from_secs(5)).await {
        Ending::Eof(n) => assert!((1..whole).contains(&n), "{n} bytes of {whole}"),
        other => panic!("truncated: {other:?}"),
    }

    // Reset: part of the response, then an RST.
    let (p, _) = proxy(&upstream, FaultKind::Reset).await;
    let mut c = TcpStream::connect(p.bootstrap()).await.unwrap();
    c.write_all(&request(&mut ClientCodec::new(), 1)).await.unwrap();
    match read_to_end(&mut c, Duration::from_secs(5)).await {
        Ending::Error(std::io::ErrorKind::ConnectionReset, n) => assert!(n < whole, "{n} bytes of {whole}"),
        other => panic!("reset: {other:?}"),
    }
    assert_eq!(p.fault_counts().reset, 1);

    // Stall: nothing, the socket open, for the stall's second; then closed.
    let (p, _) = proxy(&upstream, FaultKind::Stall).await;
    let mut c = TcpStream::connect(p.bootstrap()).await.unwrap();
    let t = Instant::now();
    c.write_all(&request(&mut ClientCodec::new(), 1)).await.unwrap();
    assert_eq!(read_to_end(&mut c, Duration::from_millis(600)).await, Ending::Open(0), "stalled half-open");
    c.write_all(&request(&mut ClientCodec::new(), 2)).await.unwrap();
    assert_eq!(read_to_end(&mut c, Duration::from_secs(5)).await, Ending::Eof(0));
    assert!(t.elapsed() >= Duration::from_secs(1), "{:?}", t.elapsed());

    // Delay: every response held, none lost. Windows of one frame: the requests fall in windows
    // 0, 2 and 4 (not delayed: the faults strike responses), the responses in 1, 3 and 5.
    let (p, _) = proxy(&upstream, FaultKind::Delay).await;
    let delay = |window| faults(FaultKind::Delay).plan(0, window).map(|plan| plan.delay).unwrap_or_default();
    let mut c = TcpStream::connect(p.bootstrap()).await.unwrap();
    let (mut codec, mut buf) = (ClientCodec::new(), BytesMut::new());
    for correlation_id in 1..=3 {
        let t = Instant::now();
        c.write_all(&request(&mut codec, correlation_id)).await.unwrap();
        let response = loop {
            if let Some(r) = codec.decode_response(&mut buf).unwrap() {
                break r;
            }
            assert!(c.read_buf(&mut buf).await.unwrap() > 0);
        };
        assert!(matches!(response.body, ResponseKind::ApiVersions(_)));
        let delay = delay(2 * correlation_id as u64 - 1);
        assert!(t.elapsed() >= delay, "{:?} < {delay:?}", t.elapsed());
    }
    assert_eq!(p.fault_counts().delay, 3, "three windows delayed");

    // Switched off: connections pass untouched, and are not counted.
    let (p, events) = proxy(&upstream, FaultKind::Drop).await;
    p.set_faults_enabled(false);
    let mut c = TcpStream::connect(p.bootstrap()).await.unwrap();
    c.write_all(&request(&mut ClientCodec::new(), 1)).await.unwrap();
    assert_eq!(read_to_end(&mut c, Duration::from_millis(500)).await, Ending::Open(whole));
    assert_eq!((p.fault_counts().total(), p.fault_counts().connections), (0, 0));
    assert!(events.lock().unwrap().is_empty());
}
