//! Fuzz target `fingerprint`: see `edihub_fuzz::check_fingerprint_determinism`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| edihub_fuzz::check_fingerprint_determinism(data));
