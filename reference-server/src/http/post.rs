//! POST /mcp: one client message per request (HTTP-05).
//!
//! The body is read (bounded in size and time), parsed, and routed to the
//! session it names. A request is answered on its own response stream, a
//! notification or response with `202` (HTTP-07). `initialize` starts a
//! session and its response carries the new `Mcp-Session-Id`.

// Failures are the HTTP responses that report them, built at most once per
// request; boxing them would buy nothing.
#![allow(clippy::result_large_err)]

use super::headers::{check_accept, delivery_for, media_type_is, PROTOCOL_VERSION, SESSION_ID};
use super::reply;
use super::sessions::{Full, HttpSession};
use super::shared::Shared;
use super::stateless;
use super::stream::{self, answer_refusal, Delivery};
use crate::request::Request;
use crate::version::{ProtocolVersion, Transport};
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use http_body_util::BodyExt;
use reference_wire::{Message, RequestId, INVALID_REQUEST, MAX_LINE_BYTES, PARSE_ERROR};
use std::sync::Arc;
use std::time::Duration;

/// The largest accepted POST body: the same bound as a stdio line.
const MAX_BODY_BYTES: usize = MAX_LINE_BYTES;
/// A POST body must have arrived within this time after its head.
const BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// Handles one POST; every failure is itself an HTTP response.
pub(crate) async fn post(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    match message(&headers, body).await {
        Ok(message) => dispatch(&shared, &headers, message).await,
        Err(response) => response,
    }
}

/// Reads and parses the body: one JSON-RPC message.
async fn message(headers: &HeaderMap, body: axum::body::Body) -> Result<Message, Response> {
    let content_type = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !media_type_is(content_type, "application/json") {
        return Err(reply::error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            None,
            INVALID_REQUEST,
            format!(
                "unsupported media type {content_type:?}: POST one JSON-RPC message with Content-Type: application/json"
            ),
        ));
    }
    let bytes = match tokio::time::timeout(BODY_TIMEOUT, read_body(body)).await {
        Err(_) => {
            return Err(reply::error(
                StatusCode::REQUEST_TIMEOUT,
                None,
                INVALID_REQUEST,
                format!("the request body did not arrive within {BODY_TIMEOUT:?}; send it at once"),
            ))
        }
        Ok(Received::TooLarge) => {
            return Err(reply::error(
                StatusCode::PAYLOAD_TOO_LARGE,
                None,
                INVALID_REQUEST,
                format!(
                    "the request body is larger than {MAX_BODY_BYTES} bytes; send smaller messages"
                ),
            ))
        }
        Ok(Received::Broken(e)) => {
            return Err(reply::error(
                StatusCode::BAD_REQUEST,
                None,
                INVALID_REQUEST,
                format!("the request body could not be read ({e})"),
            ))
        }
        Ok(Received::Complete(bytes)) => bytes,
    };
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return Err(reply::error(
            StatusCode::BAD_REQUEST,
            None,
            PARSE_ERROR,
            "parse error: the body is not valid utf-8; messages must be utf-8 json",
        ));
    };
    Message::parse(text)
        .map_err(|rejected| reply::json(StatusCode::BAD_REQUEST, rejected.to_line()))
}

/// A request body as read by [`read_body`].
enum Received {
    Complete(Vec<u8>),
    /// Longer than [`MAX_BODY_BYTES`]; the rest was read and discarded.
    TooLarge,
    Broken(axum::Error),
}

/// Reads the body, keeping at most [`MAX_BODY_BYTES`]. The rest of an
/// oversized body (up to [`DRAIN_BYTES`]) is still read and thrown away, so
/// that the client, still sending, is not cut off by a reset before it can
/// read the `413`.
async fn read_body(body: axum::body::Body) -> Received {
    let mut body = body;
    let mut kept = Vec::new();
    let mut seen = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = match frame {
            Ok(frame) => frame,
            Err(e) => return Received::Broken(e),
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        seen = seen.saturating_add(data.len());
        if seen > DRAIN_BYTES {
            return Received::TooLarge;
        }
        if seen <= MAX_BODY_BYTES {
            kept.extend_from_slice(&data);
        }
    }
    if seen > MAX_BODY_BYTES {
        Received::TooLarge
    } else {
        Received::Complete(kept)
    }
}

/// How much of an oversized body is read and discarded before giving up on it.
const DRAIN_BYTES: usize = 16 * MAX_BODY_BYTES;

/// Routes a message to its era, and in the handshake era to its session.
async fn dispatch(shared: &Arc<Shared>, headers: &HeaderMap, message: Message) -> Response {
    if stateless::is_stateless(headers, &message) {
        return stateless::post(shared, headers, message).await;
    }
    if let Message::Request { method, .. } = &message {
        if method == "initialize" {
            return initialize(shared, headers, message).await;
        }
    }
    let session = match session_of(shared, headers, &message) {
        Ok(session) => session,
        Err(response) => return response,
    };
    session.touch();
    if let Err(response) = check_version_header(headers, &session, &message) {
        return response;
    }
    match message {
        Message::Request { id, method, params } => {
            let request = Request::by_id(id, method, params);
            answer(shared, headers, &session, request, None).await
        }
        Message::Notification { method, params } => {
            session.lock().notification(&method, params);
            reply::accepted()
        }
        Message::Response { id, .. } => {
            session.lock().response(id.as_ref());
            reply::accepted()
        }
    }
}

/// The session a non-initialize message names: 400 without the header,
/// 404 for an id that is unknown or ended (HTTP-16).
fn session_of(
    shared: &Shared,
    headers: &HeaderMap,
    message: &Message,
) -> Result<Arc<HttpSession>, Response> {
    let id = request_id(message);
    let Some(value) = headers.get(SESSION_ID) else {
        return Err(reply::error(
            StatusCode::BAD_REQUEST,
            id,
            INVALID_REQUEST,
            "missing Mcp-Session-Id: send initialize first, then the session id it returned with every request",
        ));
    };
    let session = value.to_str().ok().and_then(|id| shared.sessions.get(id));
    session.ok_or_else(|| {
        reply::error(
            StatusCode::NOT_FOUND,
            id,
            INVALID_REQUEST,
            "unknown or ended session: start a new one with initialize (without Mcp-Session-Id)",
        )
    })
}

/// `MCP-Protocol-Version`, when sent, must name a version this server speaks over HTTP
/// (HTTP-18: an invalid or unsupported one gets `400`). A client should send the negotiated
/// one; another version of the handshake era is served all the same, in the session's
/// version (other suites' clients send the version they were built for), while one of the
/// stateless era names the other era and gets `400`.
fn check_version_header(
    headers: &HeaderMap,
    session: &HttpSession,
    message: &Message,
) -> Result<(), Response> {
    let Some(value) = headers.get(PROTOCOL_VERSION) else {
        // Absent: a 2025-03-26 client (which has no such header); the
        // session knows its version anyway.
        return Ok(());
    };
    let negotiated = session.lock().version();
    let sent = value.to_str().ok().and_then(ProtocolVersion::parse);
    match (sent, negotiated) {
        (Some(sent), Some(negotiated)) if sent == negotiated => Ok(()),
        (Some(sent), Some(_)) if sent.has_handshake() && sent.carried_by(Transport::StreamableHttp) => {
            Ok(())
        }
        (Some(sent), Some(negotiated)) => Err(reply::error(
            StatusCode::BAD_REQUEST,
            request_id(message),
            INVALID_REQUEST,
            format!(
                "MCP-Protocol-Version {} does not match the session's negotiated version {}; send {}",
                sent.as_str(),
                negotiated.as_str(),
                negotiated.as_str()
            ),
        )),
        (Some(_), None) => Ok(()),
        (None, _) => Err(unsupported_version_header(value, message)),
    }
}

fn unsupported_version_header(value: &HeaderValue, message: &Message) -> Response {
    let shown = String::from_utf8_lossy(value.as_bytes());
    let known: Vec<&str> = ProtocolVersion::ALL
        .iter()
        .filter(|v| v.carried_by(Transport::StreamableHttp))
        .map(|v| v.as_str())
        .collect();
    reply::error(
        StatusCode::BAD_REQUEST,
        request_id(message),
        INVALID_REQUEST,
        format!(
            "unsupported MCP-Protocol-Version {shown:?}; this server speaks {}",
            known.join(", ")
        ),
    )
}

/// `initialize`: a new session, whose id goes back with the response.
async fn initialize(shared: &Arc<Shared>, headers: &HeaderMap, message: Message) -> Response {
    let Message::Request { id, method, params } = message else {
        unreachable!("only an initialize request comes here");
    };
    if let Some(value) = headers.get(PROTOCOL_VERSION) {
        if value
            .to_str()
            .ok()
            .and_then(ProtocolVersion::parse)
            .is_none()
        {
            let message = Message::Request { id, method, params };
            return unsupported_version_header(value, &message);
        }
    }
    let session = match shared.sessions.create() {
        Ok(session) => session,
        Err(Full) => {
            return reply::error(
                StatusCode::SERVICE_UNAVAILABLE,
                Some(&id),
                INVALID_REQUEST,
                format!(
                    "too many sessions ({} are open); DELETE sessions you no longer need, or wait until \
                     idle ones end ({} s without a request)",
                    shared.sessions.max(),
                    shared.sessions.idle().as_secs()
                ),
            )
        }
    };
    let request = Request::by_id(id, method, params);
    answer(shared, headers, &session, request, Some(session.id.clone())).await
}

/// Hands a request to its session and answers it on its own stream;
/// `new_session` is the id to announce, for `initialize`.
async fn answer(
    shared: &Arc<Shared>,
    headers: &HeaderMap,
    session: &Arc<HttpSession>,
    request: Request,
    new_session: Option<String>,
) -> Response {
    let delivery = delivery_for(shared.delivery, &request.method, headers);
    let id = request.id.clone();
    if let Err(response) = check_accept(headers, delivery, &id) {
        if new_session.is_some() {
            shared.sessions.end(&session.id, "initialize refused");
        }
        return response;
    }
    let open = session.stream_opened();
    // Closing the stream is not a cancel in this era (HTTP-10): the request
    // runs on, and its output goes nowhere.
    let (route, pending) = stream::open(delivery, Box::new(move |_| drop(open)));
    let outcome = session.lock().request(request, &route);
    // A stream of a 2025-11-25 session opens with the priming event that version recommends.
    let primed = new_session.is_none()
        && delivery == Delivery::Sse
        && session.lock().version() == Some(ProtocolVersion::V2025_11_25);
    let pending = if primed { pending.primed() } else { pending };
    let mut response = match outcome {
        Ok(()) => pending.respond(delivery).await,
        Err(refusal) if new_session.is_some() => {
            // A failed initialize leaves no session behind.
            pending.dismiss();
            shared.sessions.end(&session.id, "initialize failed");
            return reply::refusal(&id, &refusal);
        }
        Err(refusal) => answer_refusal(delivery, &id, refusal, &route, pending).await,
    };
    if let Some(session_id) = new_session {
        if let Ok(value) = HeaderValue::from_str(&session_id) {
            response.headers_mut().insert(SESSION_ID, value);
        }
    }
    response
}

/// The id of a request, for error responses about it.
pub(super) fn request_id(message: &Message) -> Option<&RequestId> {
    match message {
        Message::Request { id, .. } => Some(id),
        _ => None,
    }
}
