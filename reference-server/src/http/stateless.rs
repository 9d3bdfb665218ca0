//! Streamable HTTP in the stateless era (2026-07-28).
//!
//! There are no sessions: every request names its version in `_meta` and in
//! `MCP-Protocol-Version`, and mirrors its method and name into `Mcp-Method`
//! and `Mcp-Name`, which must match the body (HTTP-19; a mismatch is `400`
//! with `-32020`). Each request runs on the one stateless [`Session`] of the
//! server process, filed under its response stream rather than its id, since
//! ids of different clients may coincide. Closing that stream is the
//! cancellation (HTTP-11): the request's token fires and nothing more is
//! sent for it. The `cancellations` witness therefore covers every
//! stateless request of the process, whichever client sent it. Tasks of
//! this era outlive their requests and belong to the process too: for
//! `tasks/get`, `tasks/update` and `tasks/cancel`, `Mcp-Name` is the task id
//! (ext-tasks §Streamable HTTP).
//!
//! [`Session`]: crate::session::Session

use super::headers::{check_accept, delivery_for, PROTOCOL_VERSION};
use super::reply;
use super::shared::Shared;
use super::stream::{self, answer_refusal};
use crate::meta;
use crate::request::{Key, Request};
use crate::version::ProtocolVersion;
use axum::http::{HeaderMap, HeaderName, StatusCode};
use axum::response::Response;
use base64::Engine;
use reference_wire::{Message, RequestId, HEADER_MISMATCH, INVALID_REQUEST};
use serde_json::Value;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The method header (HTTP-19).
const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// The name header (HTTP-19).
const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// Whether a POST belongs to the stateless era: a stamped request or
/// `server/discover`, or any message whose `MCP-Protocol-Version` names a
/// stateless version. `Mcp-Session-Id` is ignored then (HTTP-20).
pub(super) fn is_stateless(headers: &HeaderMap, message: &Message) -> bool {
    if let Message::Request { method, params, .. } = message {
        if meta::is_stateless_request(method, params.as_ref()) {
            return true;
        }
    }
    header_version(headers).is_some_and(ProtocolVersion::is_stateless)
}

/// Whether `MCP-Protocol-Version` names a stateless version (for DELETE).
pub(super) fn header_is_stateless(headers: &HeaderMap) -> bool {
    header_version(headers).is_some_and(ProtocolVersion::is_stateless)
}

fn header_version(headers: &HeaderMap) -> Option<ProtocolVersion> {
    let value = headers.get(PROTOCOL_VERSION)?.to_str().ok()?;
    ProtocolVersion::parse(value)
}

/// Handles one stateless-era POST.
pub(super) async fn post(shared: &Arc<Shared>, headers: &HeaderMap, message: Message) -> Response {
    match message {
        Message::Request { id, method, params } => {
            request(shared, headers, id, method, params).await
        }
        // This era defines no client notification over HTTP: a cancel is
        // the closing of the request's stream (AMB-06 allows 202).
        Message::Notification { method, .. } => {
            if shared.verbose {
                eprintln!(
                    "reference-server: ignored {method:?}: 2026-07-28 over HTTP cancels by closing the request's stream"
                );
            }
            reply::accepted()
        }
        Message::Response { id, .. } => reply::error(
            StatusCode::BAD_REQUEST,
            id.as_ref(),
            INVALID_REQUEST,
            "invalid request: in 2026-07-28 clients send no responses; this server sends no requests (RPC-15)",
        ),
    }
}

async fn request(
    shared: &Arc<Shared>,
    headers: &HeaderMap,
    id: RequestId,
    method: String,
    params: Option<Value>,
) -> Response {
    // Required `_meta` first (-32602), then the headers that mirror the body
    // (-32020); the session then checks the version (-32022) and the method
    // (-32601).
    let stamp = match meta::stamp(&method, params.as_ref()) {
        Ok(stamp) => stamp,
        Err(error) => {
            return reply::json(
                StatusCode::BAD_REQUEST,
                reference_wire::error_response(Some(&id), &error),
            )
        }
    };
    if let Err(mismatch) = check_headers(headers, &stamp, &method, params.as_ref()) {
        return reply::error(
            StatusCode::BAD_REQUEST,
            Some(&id),
            HEADER_MISMATCH,
            format!("Header mismatch: {mismatch}"),
        );
    }
    let delivery = delivery_for(shared.delivery, &method, headers);
    if let Err(response) = check_accept(headers, delivery, &id) {
        return response;
    }
    let serial = shared.next_stream.fetch_add(1, Ordering::Relaxed);
    let registry = Arc::clone(&shared.stateless_registry);
    let on_close = Box::new(move |ended: bool| {
        if !ended {
            // The client closed the stream: that is the cancel (HTTP-11).
            registry.cancel(&Key::Stream(serial), Some("response stream closed"));
        }
    });
    let (route, pending) = stream::open(delivery, on_close);
    let request = Request {
        key: Key::Stream(serial),
        id: id.clone(),
        method,
        params,
    };
    let outcome = shared.stateless_session().request(request, &route);
    match outcome {
        Ok(()) => pending.respond(delivery).await,
        Err(refusal) => answer_refusal(delivery, &id, refusal, &route, pending).await,
    }
}

/// `MCP-Protocol-Version`, `Mcp-Method` and, where the method has a name,
/// `Mcp-Name` must be present and match the body (HTTP-19). Returns what
/// was wrong.
fn check_headers(
    headers: &HeaderMap,
    stamp: &meta::Stamp,
    method: &str,
    params: Option<&Value>,
) -> Result<(), String> {
    let version = text(headers, &PROTOCOL_VERSION)?;
    if version != Some(stamp.version.as_str()) {
        return Err(match version {
            None => "the MCP-Protocol-Version header is missing; send the version of params._meta"
                .into(),
            Some(v) => format!(
                "MCP-Protocol-Version header value {v:?} does not match body value {:?}",
                stamp.version
            ),
        });
    }
    match text(headers, &MCP_METHOD)? {
        None => return Err("the Mcp-Method header is missing; send the request's method".into()),
        Some(header) if header != method => {
            return Err(format!(
                "Mcp-Method header value {header:?} does not match body value {method:?}"
            ))
        }
        Some(_) => {}
    }
    let source = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        "tasks/get" | "tasks/update" | "tasks/cancel" => "taskId",
        _ => return Ok(()),
    };
    let body = params.and_then(|p| p.get(source)).and_then(Value::as_str);
    let header = match text(headers, &MCP_NAME)? {
        Some(value) => Some(decode_name(value)?),
        None => None,
    };
    match (header, body) {
        (None, None) => Ok(()), // the body is malformed; the session says how
        // The extension asks for the header; a client that did not declare
        // it gets -32021 from the session rather than a header error.
        (None, Some(_)) if source == "taskId" && !stamp.tasks_extension => Ok(()),
        (None, Some(_)) => Err(format!(
            "the Mcp-Name header is missing; {method} requests mirror params.{source} into it"
        )),
        (Some(header), body) if Some(header.as_str()) != body => Err(format!(
            "Mcp-Name header value {header:?} does not match body value {:?}",
            body.unwrap_or_default()
        )),
        (Some(_), _) => Ok(()),
    }
}

/// A header's value as text; non-ASCII bytes are invalid characters.
fn text<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Result<Option<&'a str>, String> {
    match headers.get(name) {
        None => Ok(None),
        Some(value) => value.to_str().map(Some).map_err(|_| {
            format!("the {name} header contains invalid characters; base64-encode such values")
        }),
    }
}

/// An `Mcp-Name` value, decoded when it uses the `=?base64?…?=` form.
fn decode_name(value: &str) -> Result<String, String> {
    let Some(encoded) = value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    else {
        return Ok(value.to_owned());
    };
    base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(|| format!("the Mcp-Name value {value:?} is not valid base64 of UTF-8 text"))
}

/// DELETE in the stateless era: there is no session to end (HTTP-20).
pub(super) fn delete() -> Response {
    reply::method_not_allowed(
        "POST",
        "2026-07-28 has no sessions to DELETE; POST each request to /mcp",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_decode_from_the_base64_form() {
        assert_eq!(decode_name("echo").unwrap(), "echo");
        assert_eq!(
            decode_name("=?base64?SGVsbG8sIOS4lueVjA==?=").unwrap(),
            "Hello, 世界"
        );
        assert!(decode_name("=?base64?not base64?=").is_err());
    }
}
