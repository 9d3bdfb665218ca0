//! HTTP responses that carry a JSON-RPC message or nothing.

use crate::request::{Refusal, Status};
use axum::http::header::{ALLOW, CONTENT_TYPE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use reference_wire::{error_response, RequestId, RpcError};

/// `status` with one JSON-RPC message (already encoded) as the body.
pub(crate) fn json(status: StatusCode, line: String) -> Response {
    (
        status,
        [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        line,
    )
        .into_response()
}

/// `status` with a JSON-RPC error response as the body; `id` is `null` when
/// the request's id is unknown (HTTP-01, HTTP-07 allow an error without one).
pub(crate) fn error(
    status: StatusCode,
    id: Option<&RequestId>,
    code: i64,
    message: impl Into<String>,
) -> Response {
    json(status, error_response(id, &RpcError::new(code, message)))
}

/// `202 Accepted` with no body: a notification or response was taken (HTTP-07).
pub(crate) fn accepted() -> Response {
    StatusCode::ACCEPTED.into_response()
}

/// `405 Method Not Allowed` naming the methods the endpoint takes.
pub(crate) fn method_not_allowed(allow: &'static str, message: impl Into<String>) -> Response {
    let mut response = error(
        StatusCode::METHOD_NOT_ALLOWED,
        None,
        reference_wire::INVALID_REQUEST,
        message,
    );
    response
        .headers_mut()
        .insert(ALLOW, HeaderValue::from_static(allow));
    response
}

/// A refused request as a complete response: the JSON-RPC error, with the
/// status its era gives it (200, or 400/404 in 2026-07-28).
pub(crate) fn refusal(id: &RequestId, refusal: &Refusal) -> Response {
    let status = match refusal.status {
        Status::InBody => StatusCode::OK,
        Status::BadRequest => StatusCode::BAD_REQUEST,
        Status::NotFound => StatusCode::NOT_FOUND,
    };
    json(status, error_response(Some(id), &refusal.error))
}
