//! The broken HTTP server in the stateless era (2026-07-28): no sessions, every request
//! stamped and mirrored into headers (HTTP-19), `server/discover`, `resultType` on results,
//! GET and DELETE refused with 405, and closing a call's stream as its cancel (HTTP-11).
//!
//! Mode `correct` does all of that right. The faults of this era: `ignores-closed-stream`
//! (the work goes on after its stream closed, so the witness never lists it),
//! `no-result-type`, `requests-client` (a `roots/list` request on the stream of every tool
//! call), `mints-session-id` (a session id on every answer, and a GET stream), and
//! `no-header-check` (any headers are accepted).

use super::{error_body, full, request, sse, App, Body, Session};
use base64::Engine as _;
use hyper::header::HeaderMap;
use hyper::{Method, Response, StatusCode};
use serde_json::{json, Value};
use std::sync::Arc;

/// The version of this era.
pub const VERSION: &str = "2026-07-28";
const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// Whether a POSTed message belongs to this era: its version header names it, or it is a
/// stamped request or `server/discover`.
pub fn is_stateless(headers: &HeaderMap, message: &Value) -> bool {
    let header = headers
        .get("mcp-protocol-version")
        .is_some_and(|v| v.as_bytes() == VERSION.as_bytes());
    header
        || message.get("method").and_then(Value::as_str) == Some("server/discover")
        || message
            .pointer("/params/_meta")
            .is_some_and(|m| m.get(META_VERSION).is_some())
}

/// A message of the answer: the JSON-RPC error `code` with `status`.
fn refuse(app: &App, status: StatusCode, id: &Value, code: i64, message: &str) -> Response<Body> {
    let mut body: Value = serde_json::from_str(&error_body(code, message)).expect("JSON");
    body["id"] = id.clone();
    stamp_session(app, full(status, &body.to_string()))
}

/// Mode `mints-session-id` puts a session id on everything it answers.
fn stamp_session(app: &App, mut response: Response<Body>) -> Response<Body> {
    if app.is("mints-session-id") {
        response
            .headers_mut()
            .insert("mcp-session-id", "stateless-but-minted".parse().unwrap());
    }
    response
}

/// Adds `resultType` to a result, as every result of this era carries it (RPC-14), unless
/// the mode forgets it.
pub fn complete(app: &App, mut reply: Value) -> Value {
    if let Some(result) = reply.get_mut("result").and_then(Value::as_object_mut) {
        if !app.is("no-result-type") {
            result.insert("resultType".into(), json!("complete"));
        }
    }
    reply
}

/// GET and DELETE in this era: 405, since there is no stream of the server's own and no
/// session to end (HTTP-20); mode `mints-session-id` opens a GET stream instead.
pub fn not_post(app: &App, method: &Method) -> Response<Body> {
    if app.is("mints-session-id") && method == Method::GET {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        std::mem::forget(tx);
        return stamp_session(app, sse(rx));
    }
    let mut response = full(
        StatusCode::METHOD_NOT_ALLOWED,
        &error_body(-32600, "2026-07-28 has no sessions and no GET stream"),
    );
    response
        .headers_mut()
        .insert("allow", "POST".parse().unwrap());
    response
}

/// A header's value, decoded from the `=?base64?…?=` form.
fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    let value = String::from_utf8_lossy(headers.get(name)?.as_bytes()).into_owned();
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(encoded) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()
            .and_then(|b| String::from_utf8(b).ok()),
        None => Some(value),
    }
}

/// What is wrong with the headers that mirror the body (HTTP-19), if anything.
fn header_mismatch(
    headers: &HeaderMap,
    version: &str,
    method: &str,
    params: &Value,
) -> Option<String> {
    if header_text(headers, "mcp-protocol-version").as_deref() != Some(version) {
        return Some("MCP-Protocol-Version does not match _meta".into());
    }
    if header_text(headers, "mcp-method").as_deref() != Some(method) {
        return Some("Mcp-Method does not match the method".into());
    }
    let name = match method {
        "tools/call" | "prompts/get" => params.get("name"),
        "resources/read" => params.get("uri"),
        _ => return None,
    };
    let name = name.and_then(Value::as_str);
    (header_text(headers, "mcp-name").as_deref() != name)
        .then(|| "Mcp-Name does not match the name".into())
}

/// One POST of this era.
pub fn post(app: Arc<App>, headers: &HeaderMap, message: Value) -> Response<Body> {
    let method = message.get("method").and_then(Value::as_str).unwrap_or("");
    let Some(id) = message
        .get("id")
        .filter(|id| id.is_string() || id.is_number())
        .cloned()
    else {
        if method.is_empty() {
            return refuse(
                &app,
                StatusCode::BAD_REQUEST,
                &Value::Null,
                -32600,
                "clients send no responses",
            );
        }
        // A notification: a cancel here is the closing of a stream (AMB-06).
        return stamp_session(&app, full(StatusCode::ACCEPTED, ""));
    };
    let params = message.get("params").cloned().unwrap_or(json!({}));
    let meta = params.get("_meta");
    let version = meta
        .and_then(|m| m.get(META_VERSION))
        .and_then(Value::as_str);
    let capabilities = meta
        .and_then(|m| m.get(META_CAPABILITIES))
        .filter(|c| c.is_object());
    let (Some(version), Some(_)) = (version, capabilities) else {
        return refuse(
            &app,
            StatusCode::BAD_REQUEST,
            &id,
            -32602,
            "missing _meta protocolVersion or clientCapabilities",
        );
    };
    if !app.is("no-header-check") {
        if let Some(why) = header_mismatch(headers, version, method, &params) {
            return refuse(&app, StatusCode::BAD_REQUEST, &id, -32020, &why);
        }
    }
    if version != VERSION {
        let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32022,
            "message": "Unsupported protocol version",
            "data": {"supported": [VERSION], "requested": version}}});
        return stamp_session(&app, full(StatusCode::BAD_REQUEST, &body.to_string()));
    }
    let answer =
        |result: Value| complete(&app, json!({"jsonrpc": "2.0", "id": id, "result": result}));
    match method {
        "server/discover" => {
            let body =
                answer(json!({"supportedVersions": [VERSION], "capabilities": {"tools": {}}}));
            stamp_session(&app, full(StatusCode::OK, &body.to_string()))
        }
        "tools/list" => {
            let body = answer(json!({"tools": []}));
            stamp_session(&app, full(StatusCode::OK, &body.to_string()))
        }
        "tools/call" => {
            let session: Arc<Session> = app.stateless.clone();
            let (tx, rx) = tokio::sync::mpsc::channel(64);
            let cancel = super::track(&session, &id);
            tokio::spawn(request(
                app.clone(),
                session,
                id,
                method.to_string(),
                params,
                super::Call { tx, cancel },
            ));
            stamp_session(&app, sse(rx))
        }
        // A slip seen in servers written for the handshake era: the right code under 200.
        _ if app.is("unknown-method-200") => {
            let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}});
            stamp_session(&app, full(StatusCode::OK, &body.to_string()))
        }
        _ => refuse(&app, StatusCode::NOT_FOUND, &id, -32601, "Method not found"),
    }
}
