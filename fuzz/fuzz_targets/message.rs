//! `reference_wire::Message::parse` and `RequestId::from_value` on any line.

#![no_main]

#[path = "../../reference-wire/tests/props/mod.rs"]
mod props;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let line = String::from_utf8_lossy(data);
    props::check_message(&line);
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(&line) {
        props::check_request_id(&value);
        if let Some(id) = value.get("id") {
            props::check_request_id(id);
        }
    }
});
