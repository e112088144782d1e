#![no_main]
// See kafka_wire_fuzz::views for what this target checks.
libfuzzer_sys::fuzz_target!(|data: &[u8]| kafka_wire_fuzz::views(data));
