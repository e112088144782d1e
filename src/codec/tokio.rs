//! tokio-util `Decoder` and `Encoder` impls (the `tokio` feature), for `Framed` streams.

use bytes::BytesMut;
use tokio_util::codec::{Decoder, Encoder};

use super::{ClientCodec, CodecError, OutboundRequest, OutboundResponse, RequestFrame, ResponseFrame, ServerCodec};

impl Decoder for ServerCodec {
    type Item = RequestFrame;
    type Error = CodecError;

    #[cfg_attr(not(feature = "precompiled"), inline)]
    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<RequestFrame>, CodecError> {
        self.decode_request(src)
    }
}

impl Encoder<OutboundResponse> for ServerCodec {
    type Error = CodecError;

    #[cfg_attr(not(feature = "precompiled"), inline)]
    fn encode(&mut self, item: OutboundResponse, dst: &mut BytesMut) -> Result<(), CodecError> {
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

impl Encoder<OutboundRequest> for ClientCodec {
    type Error = CodecError;

    #[cfg_attr(not(feature = "precompiled"), inline)]
    fn encode(&mut self, item: OutboundRequest, dst: &mut BytesMut) -> Result<(), CodecError> {
        self.encode_request(item, dst)
    }
}
