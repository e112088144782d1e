#![no_main]
// See kwire_fuzz::roundtrip for what this target checks.
libfuzzer_sys::fuzz_target!(|data: &[u8]| kwire_fuzz::roundtrip(data));
