//! Fuzz target `key_path`: see `edihub_fuzz::check_key_path`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| edihub_fuzz::check_key_path(data));
