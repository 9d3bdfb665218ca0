//! What both eras read from a POST's headers: the MCP header names they
//! share, and how a request's answer may be delivered given its `Accept`.
//!
//! The handshake era (`post.rs`) and the stateless one (`stateless.rs`)
//! both use these; a module of their own lets the stateless handler use them
//! without importing `post.rs`, which routes to it.

use super::reply;
use super::stream::Delivery;
use axum::http::header::ACCEPT;
use axum::http::{HeaderMap, HeaderName, StatusCode};
use axum::response::Response;
use reference_wire::{RequestId, INVALID_REQUEST};

/// The session header (HTTP-16; header names are case-insensitive).
pub(crate) const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// The protocol version header (HTTP-18).
pub(crate) const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");

/// How to answer a request: as the server was told, except that a task
/// poll (`tasks/get`) gets one JSON body whenever the client accepts one:
/// a client that polls wants no stream (tasks.mdx, "servers SHOULD NOT
/// upgrade to an SSE stream in response to a tasks/get request"), and a
/// `subscriptions/listen` always gets its stream.
pub(crate) fn delivery_for(default: Delivery, method: &str, headers: &HeaderMap) -> Delivery {
    let json_accepted = || accepts(headers, Delivery::Json);
    if method == "tasks/get" && json_accepted() {
        Delivery::Json
    } else if method == "subscriptions/listen" && accepts(headers, Delivery::Sse) {
        // A subscription is a stream of notifications, whatever `--json-response` says.
        Delivery::Sse
    } else {
        default
    }
}

/// A request's response needs an `Accept` that allows it (HTTP-05): `406`
/// otherwise. A missing `Accept` allows anything.
// The failure is the HTTP response that reports it, built at most once per
// request; boxing it would buy nothing (as in `post.rs`).
#[allow(clippy::result_large_err)]
pub(crate) fn check_accept(
    headers: &HeaderMap,
    delivery: Delivery,
    id: &RequestId,
) -> Result<(), Response> {
    let needed = media_type(delivery);
    if accepts(headers, delivery) {
        Ok(())
    } else {
        Err(reply::error(
            StatusCode::NOT_ACCEPTABLE,
            Some(id),
            INVALID_REQUEST,
            format!(
                "not acceptable: this server answers requests with {needed}; send Accept: application/json, text/event-stream"
            ),
        ))
    }
}

fn media_type(delivery: Delivery) -> &'static str {
    match delivery {
        Delivery::Sse => "text/event-stream",
        Delivery::Json => "application/json",
    }
}

/// Whether `Accept` allows answers delivered so; a missing `Accept` allows
/// anything.
fn accepts(headers: &HeaderMap, delivery: Delivery) -> bool {
    let needed = media_type(delivery);
    let Some(accept) = headers.get(ACCEPT) else {
        return true;
    };
    let accept = accept.to_str().unwrap_or("");
    let (kind, _) = needed.split_once('/').unwrap_or((needed, ""));
    accept.split(',').any(|range| {
        media_type_is(range, needed)
            || media_type_is(range, "*/*")
            || media_type_is(range, &format!("{kind}/*"))
    })
}

/// Whether a header value's media type (before any `;` parameters) is `expected`.
pub(crate) fn media_type_is(value: &str, expected: &str) -> bool {
    let media_type = value.split(';').next().unwrap_or("").trim();
    media_type.eq_ignore_ascii_case(expected)
}
