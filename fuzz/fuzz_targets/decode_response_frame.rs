#![no_main]
// See kafka_wire_fuzz::decode_response_frame for what this target checks.
libfuzzer_sys::fuzz_target!(|data: &[u8]| kafka_wire_fuzz::decode_response_frame(data));
