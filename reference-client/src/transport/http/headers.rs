//! The HTTP headers of one POST: content negotiation (HTTP-05), the session and version of
//! the handshake era (HTTP-16, HTTP-18), and the request metadata the stateless era
//! mirrors into headers (HTTP-19), with its base64 sentinel form for values that are not
//! plain ASCII.

use crate::era;
use base64::Engine as _;
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, CONTENT_TYPE};
use serde_json::Value;

/// The headers for POSTing `message` under `version` (if one is in force) in `session`
/// (if the server minted one).
pub(super) fn request_headers(
    message: &Value,
    version: Option<&str>,
    session: Option<&str>,
) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        ACCEPT,
        HeaderValue::from_static("application/json, text/event-stream"),
    );
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    let method = message.get("method").and_then(Value::as_str).unwrap_or("");
    if let Some(version) = version {
        if method != "initialize" {
            insert(&mut headers, "mcp-protocol-version", version);
        }
    }
    if version.is_some_and(era::is_stateless) {
        if message.get("id").is_some() {
            insert(&mut headers, "mcp-method", &header_value(method));
            let params = &message["params"];
            let name = match method {
                "tools/call" | "prompts/get" => params.get("name"),
                "resources/read" => params.get("uri"),
                // The tasks extension routes by task (its "Streamable HTTP: Routing Headers").
                "tasks/get" | "tasks/update" | "tasks/cancel" => params.get("taskId"),
                _ => None,
            };
            if let Some(name) = name.and_then(Value::as_str) {
                insert(&mut headers, "mcp-name", &header_value(name));
            }
        }
    } else if let Some(session) = session {
        insert(&mut headers, "mcp-session-id", session);
    }
    headers
}

/// Adds a header; a value that cannot be a header value (it never is, after
/// [`header_value`]) is left out.
pub(super) fn insert(headers: &mut HeaderMap, name: &'static str, value: &str) {
    if let Ok(value) = HeaderValue::from_str(value) {
        headers.insert(name, value);
    }
}

/// A value as an MCP header carries it: as is when it is plain visible ASCII, else in
/// the `=?base64?…?=` form (streamable-http §Value Encoding).
pub(super) fn header_value(value: &str) -> String {
    let plain = value.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && value.trim() == value
        && !(value.starts_with("=?base64?") && value.ends_with("?="));
    if plain {
        value.to_owned()
    } else {
        let encoded = base64::engine::general_purpose::STANDARD.encode(value.as_bytes());
        format!("=?base64?{encoded}?=")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn header_values_are_plain_or_base64() {
        assert_eq!(header_value("us-west1"), "us-west1");
        assert_eq!(
            header_value("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(header_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(header_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(
            header_value("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
    }

    #[test]
    fn each_era_gets_its_headers() {
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "wörk"}});
        let modern = request_headers(&call, Some("2026-07-28"), Some("s"));
        assert_eq!(modern["mcp-protocol-version"], "2026-07-28");
        assert_eq!(modern["mcp-method"], "tools/call");
        assert_eq!(modern["mcp-name"], "=?base64?d8O2cms=?=");
        assert!(!modern.contains_key("mcp-session-id"));
        let legacy = request_headers(&call, Some("2025-11-25"), Some("s"));
        assert_eq!(legacy["mcp-session-id"], "s");
        assert!(!legacy.contains_key("mcp-method"));
        let poll = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/get",
            "params": {"taskId": "t-1"}});
        assert_eq!(
            request_headers(&poll, Some("2026-07-28"), None)["mcp-name"],
            "t-1"
        );
        assert!(!request_headers(&poll, Some("2025-11-25"), None).contains_key("mcp-name"));
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize"});
        let first = request_headers(&init, None, None);
        assert!(!first.contains_key("mcp-protocol-version"));
        assert!(first["accept"]
            .to_str()
            .unwrap()
            .contains("text/event-stream"));
    }
}
