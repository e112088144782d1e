#![no_main]
// See kwire_fuzz::decode_response for what this target checks.
libfuzzer_sys::fuzz_target!(|data: &[u8]| kwire_fuzz::decode_response(data));
