//! The pattern functions on what the input holds, one part per line: a pattern, a message,
//! captures (a JSON object), then bytes that steer the pattern made from the message. Parts
//! that are not JSON still go through `substitute` and `fill_pattern`.

#![no_main]

#[path = "../../conformance/tests/props/mod.rs"]
pub mod props;

use conformance::pattern::{fill_pattern, substitute, Captures};
use libfuzzer_sys::fuzz_target;
use props::Template;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(4, |b| *b == b'\n');
    let mut text = || String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
    let (pattern_text, actual_text, captures_text) = (text(), text(), text());
    let choices = parts.next().unwrap_or_default();
    let captures: Captures = serde_json::from_str::<serde_json::Map<String, Value>>(&captures_text)
        .map(|m| m.into_iter().collect())
        .unwrap_or_default();
    for line in [&pattern_text, &actual_text] {
        let _ = substitute(line, &captures);
        let _ = fill_pattern(line, &captures);
    }
    let pattern = serde_json::from_str::<Value>(&pattern_text);
    let actual = serde_json::from_str::<Value>(&actual_text);
    if let (Ok(pattern), Ok(actual)) = (&pattern, &actual) {
        props::check_pattern(pattern, actual, &captures);
        props::check_json_equal(
            pattern,
            actual,
            &Value::Object(captures.clone().into_iter().collect()),
        );
    }
    if let Ok(actual) = &actual {
        props::check_generalized(actual, choices);
        // References steered by the choices: names a, b, c0…c3, text around them from the
        // pattern line, the message as the unrelated member.
        if !actual.to_string().contains("{$") {
            let names = ["a", "b", "c0", "c1", "c2", "c3"];
            let around: Vec<char> = pattern_text.chars().filter(|c| *c != '$').take(6).collect();
            let templates: Vec<Template> = choices
                .chunks(3)
                .take(4)
                .map(|c| {
                    let name = names[usize::from(c[0]) % names.len()].to_string();
                    match c {
                        [_, pre, post] => {
                            let cut = |n: &u8| around.iter().take(usize::from(*n) % 4).collect();
                            Template::Inside(cut(pre), name, cut(post))
                        }
                        _ => Template::Whole(name),
                    }
                })
                .collect();
            props::check_substitute(&templates, &captures, actual);
        }
    }
});
