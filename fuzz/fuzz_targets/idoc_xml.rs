//! Fuzz target `idoc_xml`: see `edihub_fuzz::check_xml`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| edihub_fuzz::check_xml(data));
