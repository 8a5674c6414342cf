//! Fuzz target `idoc_json`: see `edihub_fuzz::check_json`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| edihub_fuzz::check_json(data));
