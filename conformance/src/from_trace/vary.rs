//! What of a server's message a drafted case expects to see again. A replay meets the same
//! server on another day: the ids the client chose, the methods, error codes, flags and the
//! keys a result has come back, while free text (tool output, messages), numbers (timestamps,
//! counts, progress values) and lists (tools, content blocks) vary between runs. So a
//! recorded message keeps its shape and its deciding values, and the rest becomes the
//! pattern tokens of `docs/cases.md`.

use serde_json::{json, Map, Value};

/// String fields whose value says what a message is, not what it happened to contain.
const KEPT_STRINGS: [&str; 4] = ["type", "protocolVersion", "resultType", "status"];

/// The expectation of a response the server sent: its id and `jsonrpc` as they were, `result`
/// or `error` with what varies turned into patterns (an error keeps its code).
pub(super) fn response(message: &Value) -> Value {
    let mut out = Map::new();
    out.insert("jsonrpc".into(), json!("2.0"));
    if let Some(id) = message.get("id") {
        out.insert("id".into(), id.clone());
    }
    if let Some(result) = message.get("result") {
        out.insert("result".into(), shape(result));
    }
    if let Some(error) = message.get("error") {
        let mut kept = Map::new();
        if let Some(code) = error.get("code") {
            kept.insert("code".into(), code.clone());
        }
        if error.get("message").is_some() {
            kept.insert("message".into(), json!("{string}"));
        }
        out.insert("error".into(), Value::Object(kept));
    }
    Value::Object(out)
}

/// The expectation of a progress notification: its token as the client gave it, its values as
/// numbers and its message as text.
pub(super) fn progress(message: &Value) -> Value {
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    let mut kept = Map::new();
    if let Some(token) = params.get("progressToken") {
        kept.insert("progressToken".into(), token.clone());
    }
    for key in ["progress", "total", "message"] {
        if let Some(value) = params.get(key) {
            kept.insert(key.into(), shape(value));
        }
    }
    json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": kept})
}

/// `value` with its varying parts as pattern tokens: objects keep their keys (recursively),
/// booleans and null stay, the strings of [`KEPT_STRINGS`] stay, other strings, numbers and
/// arrays become `{string}`, `{number}` and `{array}`.
fn shape(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, v)| {
                    let kept = v.is_string() && KEPT_STRINGS.contains(&key.as_str());
                    (key.clone(), if kept { v.clone() } else { shape(v) })
                })
                .collect(),
        ),
        Value::String(_) => json!("{string}"),
        Value::Number(_) => json!("{number}"),
        Value::Array(_) => json!("{array}"),
        Value::Bool(_) | Value::Null => value.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_result_keeps_its_shape_and_flags_and_loses_its_text() {
        let got = response(&json!({"jsonrpc":"2.0","id":7,"result":{
            "content":[{"type":"text","text":"42 files"}],"isError":false,
            "structuredContent":{"count":42,"kind":"files"}}}));
        assert_eq!(
            got,
            json!({"jsonrpc":"2.0","id":7,"result":{"content":"{array}","isError":false,
                "structuredContent":{"count":"{number}","kind":"{string}"}}})
        );
    }

    #[test]
    fn an_error_keeps_its_code_and_the_progress_its_token() {
        let got = response(
            &json!({"jsonrpc":"2.0","id":"a","error":{"code":-32800,"message":"x","data":1}}),
        );
        assert_eq!(
            got,
            json!({"jsonrpc":"2.0","id":"a","error":{"code":-32800,"message":"{string}"}})
        );
        let got = progress(&json!({"jsonrpc":"2.0","method":"notifications/progress",
            "params":{"progressToken":"p-1","progress":3,"total":10,"message":"step 3"}}));
        assert_eq!(
            got,
            json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p-1",
                "progress":"{number}","total":"{number}","message":"{string}"}})
        );
    }

    #[test]
    fn kept_strings_stay_wherever_they_are() {
        let got = response(
            &json!({"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t-9","status":"working"},"resultType":"complete"}}),
        );
        assert_eq!(
            got,
            json!({"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"{string}","status":"working"},"resultType":"complete"}})
        );
    }
}
