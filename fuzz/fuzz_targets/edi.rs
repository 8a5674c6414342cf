//! Fuzz target `edi`: see `edihub_fuzz::check_edi`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| edihub_fuzz::check_edi(data));
