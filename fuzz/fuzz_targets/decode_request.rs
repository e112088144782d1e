#![no_main]
// See kwire_fuzz::decode_request for what this target checks.
libfuzzer_sys::fuzz_target!(|data: &[u8]| kwire_fuzz::decode_request(data));
