//! A request as the handlers receive it, and the refusal they may answer with.
//!
//! Kept apart from `session.rs`, which dispatches to the handlers
//! (`call.rs`, `listen.rs`, `tasks/`), and from `registry.rs`, which files
//! requests under their [`Key`], so that the handlers and the task table
//! import these types without importing back the modules that call them.

use reference_wire::{RequestId, RpcError};
use serde_json::Value;

/// What an in-flight request is registered under.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Key {
    /// Its JSON-RPC id: a cancel names it (stdio, HTTP sessions).
    Id(RequestId),
    /// The serial number of its own HTTP response stream (2026-07-28): only
    /// closing that stream cancels it, and ids of different clients may
    /// coincide, so the id is no key.
    Stream(u64),
}

/// One request as the transport hands it over.
pub(crate) struct Request {
    /// What the registry files it under (and what a cancel must name).
    pub key: Key,
    pub id: RequestId,
    pub method: String,
    pub params: Option<Value>,
}

impl Request {
    /// A request filed under its own id, as on stdio and in HTTP sessions.
    pub(crate) fn by_id(id: RequestId, method: String, params: Option<Value>) -> Self {
        Self {
            key: Key::Id(id.clone()),
            id,
            method,
            params,
        }
    }
}

/// A protocol error answering a request, and how HTTP should carry it.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub error: RpcError,
    pub status: Status,
}

/// The HTTP status class of a [`Refusal`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    /// An ordinary JSON-RPC error response (HTTP 200, in the body or stream).
    InBody,
    /// 2026-07-28: `400 Bad Request` (malformed `_meta`, unsupported version).
    BadRequest,
    /// 2026-07-28: `404 Not Found` (unknown method).
    NotFound,
}

impl Refusal {
    /// Turns an error into a refusal carried with `status`.
    pub(crate) fn with_status(status: Status) -> impl Fn(RpcError) -> Self {
        move |error| Self { error, status }
    }
}

impl From<RpcError> for Refusal {
    fn from(error: RpcError) -> Self {
        Self {
            error,
            status: Status::InBody,
        }
    }
}
