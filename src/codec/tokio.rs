//! tokio-util `Decoder` and `Encoder` impls (the `tokio` feature), for `Framed` streams.

use bytes::BytesMut;
use tokio_util::codec::{Decoder, Encoder};

use super::{ClientCodec, CodecError, Request, RequestFrame, Response, ResponseFrame, ServerCodec};

impl Decoder for ServerCodec {
    type Item = RequestFrame;
    type Error = CodecError;

    #[cfg_attr(not(feature = "precompiled"), inline)]
    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<RequestFrame>, CodecError> {
        self.decode_request(src)
    }
}

impl Encoder<Response> for ServerCodec {
    type Error = CodecError;

    #[cfg_attr(not(feature = "precompiled"), inline)]
    fn encode(&mut self, item: Response, dst: &mut BytesMut) -> Result<(), CodecError> {
        self.encode_response(item, dst)
    }
}

impl Decoder for ClientCodec {
    type Item = ResponseFrame;
    type Error = CodecError;

    #[cfg_attr(not(feature = "precompiled"), inline)]
    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<ResponseFrame>, CodecError> {
        self.decode_response(src)
    }
}

impl Encoder<Request> for ClientCodec {
    type Error = CodecError;

    #[cfg_attr(not(feature = "precompiled"), inline)]
    fn encode(&mut self, item: Request, dst: &mut BytesMut) -> Result<(), CodecError> {
        self.encode_request(item, dst)
    }
}
