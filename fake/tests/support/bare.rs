//! A bare client on kwire's codec for the tests: one request at a time, its response body back
//! (`None` once the broker closed the connection).

#![allow(dead_code)]

use kwire::codec::{ClientCodec, OutboundRequest};
use kwire::{ApiKey, BytesMut, RequestKind, ResponseKind};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

pub struct Bare {
    stream: DuplexStream,
    codec: ClientCodec,
    input: BytesMut,
    next: i32,
    client_id: String,
    /// The size of the last request sent, without its size prefix (what Kafka's quotas count).
    pub last_request_size: usize,
}

impl Bare {
    pub fn new(stream: DuplexStream, client_id: &str) -> Bare {
        Bare { stream, codec: ClientCodec::new(), input: BytesMut::new(), next: 0, client_id: client_id.to_owned(), last_request_size: 0 }
    }

    pub async fn call(&mut self, api: ApiKey, version: i16, body: RequestKind) -> Option<ResponseKind> {
        self.next += 1;
        let mut out = BytesMut::new();
        let request = OutboundRequest::new(api, version, self.next, body).with_client_id(self.client_id.clone());
        self.codec.encode_request(request, &mut out).expect("the request encodes");
        self.last_request_size = out.len() - 4;
        self.stream.write_all(&out).await.ok()?;
        loop {
            if let Some(frame) = self.codec.decode_response(&mut self.input).expect("a response") {
                return Some(frame.body);
            }
            if self.stream.read_buf(&mut self.input).await.ok()? == 0 {
                return None;
            }
        }
    }
}
