//! `conformance::case::parse` and `rewrite_lines` on any text: seed it with `cases/`.

#![no_main]

#[path = "../../conformance/tests/props/mod.rs"]
pub mod props;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let source = String::from_utf8_lossy(data);
    let at = data.iter().map(|b| usize::from(*b)).sum();
    props::check_case(&source, at, "< {\"id\":\"{$i}\"}");
});
