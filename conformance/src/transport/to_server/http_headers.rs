//! The headers a POST carries in the stateless era (2026-07-28, HTTP-19), read off the body
//! it carries: `MCP-Protocol-Version` equal to the `_meta` version, `Mcp-Method` equal to the
//! method and, for `tools/call`, `prompts/get` and `resources/read`, `Mcp-Name` equal to the
//! name or URI (for the tasks extension's `tasks/get`, `tasks/update`, `tasks/cancel`, the task
//! id), in the `=?base64?…?=` form when the value is not plain ASCII. No session id:
//! the era has none.
//!
//! They live apart from `http.rs` because they depend on the era and the body, not on the
//! connection: the transport asks here whether a POST belongs to the stateless era at all.

use crate::era::{Era, ProtocolVersion, META_VERSION};
use base64::Engine as _;
use hyper::header::{HeaderName, HeaderValue};
use serde_json::Value;

/// The version header (HTTP-18, HTTP-19).
pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// The method header (HTTP-19).
pub const METHOD: &str = "mcp-method";
/// The name header (HTTP-19).
pub const NAME: &str = "mcp-name";

/// Whether `version` is one of the stateless era.
pub fn is_stateless(version: &str) -> bool {
    ProtocolVersion::parse(version).is_some_and(|v| v.era() == Era::Stateless)
}

/// The stateless era's headers for a POST of `body` (or a GET or DELETE, without one: they
/// name the version only) in a session whose version is
/// `session_version` (`None` before any is known, as in the harness's probe of what a server
/// speaks), or `None` when the POST does not belong to that era. It does when the session is
/// in it, or when no version is known yet and the body is stamped with a stateless one. A
/// legacy `initialize` never does: it opens the handshake era (LIF-14).
///
/// The version header mirrors the body's `_meta` version, whatever it is (a case that stamps
/// an unknown version tests the server's answer to it, not a header mismatch), and falls back
/// to the session's for a message without one (an unstamped request, a notification).
pub fn stateless(
    session_version: Option<&str>,
    body: Option<&[u8]>,
) -> Option<Vec<(HeaderName, HeaderValue)>> {
    let message: Value = body
        .and_then(|body| serde_json::from_slice(body).ok())
        .unwrap_or(Value::Null);
    let method = message.get("method").and_then(Value::as_str);
    if method == Some("initialize") {
        return None;
    }
    let stamped = message
        .pointer("/params/_meta")
        .and_then(|meta| meta.get(META_VERSION))
        .and_then(Value::as_str);
    let in_era = match session_version {
        Some(version) => is_stateless(version),
        None => stamped.is_some_and(is_stateless),
    };
    if !in_era {
        return None;
    }
    let mut headers = vec![];
    let mut push = |name: &'static str, value: &str| {
        if let Ok(value) = HeaderValue::from_str(value) {
            headers.push((HeaderName::from_static(name), value));
        }
    };
    if let Some(version) = stamped.or(session_version) {
        push(PROTOCOL_VERSION, version);
    }
    let is_request = message
        .get("id")
        .is_some_and(|id| id.is_string() || id.is_number());
    if let (Some(method), true) = (method, is_request) {
        push(METHOD, &header_value(method));
        let source = match method {
            "tools/call" | "prompts/get" => Some("name"),
            "resources/read" => Some("uri"),
            // The tasks extension (TSK-05): the task id.
            "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
            _ => None,
        };
        let name = source
            .and_then(|key| message.get("params").and_then(|p| p.get(key)))
            .and_then(Value::as_str);
        if let Some(name) = name {
            push(NAME, &header_value(name));
        }
    }
    Some(headers)
}

/// A header's name as the specification writes it (HTTP carries names in lower case).
pub fn display_name(name: &str) -> String {
    match name {
        PROTOCOL_VERSION => "MCP-Protocol-Version".into(),
        METHOD => "Mcp-Method".into(),
        NAME => "Mcp-Name".into(),
        "mcp-session-id" => "Mcp-Session-Id".into(),
        other => other
            .split('-')
            .map(|word| {
                let mut chars = word.chars();
                chars.next().map_or_else(String::new, |first| {
                    first.to_ascii_uppercase().to_string() + chars.as_str()
                })
            })
            .collect::<Vec<_>>()
            .join("-"),
    }
}

/// Whether `body` is one JSON-RPC request (a method and a usable id).
pub fn is_request(body: &[u8]) -> bool {
    serde_json::from_slice::<Value>(body).is_ok_and(|m| {
        m.get("method").is_some_and(Value::is_string)
            && m.get("id")
                .is_some_and(|id| id.is_string() || id.is_number())
    })
}

/// A value as an MCP header carries it: as it is when it is plain visible ASCII (spaces
/// inside allowed), else `=?base64?…?=` of its UTF-8 bytes (streamable-http §Value Encoding).
/// A value that already looks like that form is encoded too, so it cannot be misread.
pub fn header_value(value: &str) -> String {
    let plain = value.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && value.trim() == value
        && !(value.starts_with("=?base64?") && value.ends_with("?="));
    if plain {
        value.to_string()
    } else {
        let encoded = base64::engine::general_purpose::STANDARD.encode(value.as_bytes());
        format!("=?base64?{encoded}?=")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn headers(session: Option<&str>, body: &Value) -> Option<Vec<(String, String)>> {
        stateless(session, Some(body.to_string().as_bytes())).map(|h| {
            h.into_iter()
                .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_string()))
                .collect()
        })
    }

    #[test]
    fn a_stateless_request_mirrors_its_version_method_and_name() {
        let call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{(META_VERSION):"2026-07-28"}}});
        assert_eq!(
            headers(None, &call).unwrap(),
            vec![
                (PROTOCOL_VERSION.to_string(), "2026-07-28".to_string()),
                (METHOD.to_string(), "tools/call".to_string()),
                (NAME.to_string(), "echo".to_string()),
            ]
        );
        let read = json!({"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///wörk"}});
        let read = headers(Some("2026-07-28"), &read).unwrap();
        assert_eq!(read[0].1, "2026-07-28", "the session's version");
        assert_eq!(read[2].1, "=?base64?ZmlsZTovLy93w7Zyaw==?=");
        // The tasks extension's requests name their task (TSK-05).
        let get = json!({"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":"t-1"}});
        assert_eq!(headers(Some("2026-07-28"), &get).unwrap()[2].1, "t-1");
        // The version is the body's, even one the server cannot speak.
        let old = json!({"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{(META_VERSION):"1900-01-01"}}});
        assert_eq!(
            headers(Some("2026-07-28"), &old).unwrap()[0].1,
            "1900-01-01"
        );
    }

    #[test]
    fn only_the_stateless_era_gets_them() {
        let ping = json!({"jsonrpc":"2.0","id":1,"method":"ping"});
        assert_eq!(headers(Some("2025-11-25"), &ping), None);
        assert_eq!(headers(None, &ping), None, "nothing says which era");
        let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}});
        assert_eq!(
            headers(Some("2026-07-28"), &init),
            None,
            "a legacy initialize"
        );
        let note =
            json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}});
        assert_eq!(
            headers(Some("2026-07-28"), &note).unwrap(),
            vec![(PROTOCOL_VERSION.to_string(), "2026-07-28".to_string())],
            "a notification names no method header"
        );
        let garbage = stateless(Some("2026-07-28"), Some(b"{\"jsonrpc\":")).unwrap();
        assert_eq!(
            garbage.len(),
            1,
            "a body that is no JSON still names the version"
        );
        assert_eq!(
            stateless(Some("2026-07-28"), None).unwrap().len(),
            1,
            "a GET"
        );
        assert_eq!(stateless(Some("2025-11-25"), None), None);
    }

    #[test]
    fn values_are_plain_or_base64() {
        assert_eq!(header_value("tools/call"), "tools/call");
        assert_eq!(header_value("a b"), "a b");
        assert_eq!(
            header_value("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(header_value(" padded"), "=?base64?IHBhZGRlZA==?=");
        assert_eq!(header_value("=?base64?x?="), "=?base64?PT9iYXNlNjQ/eD89?=");
        assert_eq!(display_name("mcp-protocol-version"), "MCP-Protocol-Version");
        assert_eq!(display_name("origin"), "Origin");
    }
}
