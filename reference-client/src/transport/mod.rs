//! The message-level seam between the client and a transport.
//!
//! The client thinks in JSON-RPC messages; a transport moves them. stdio moves them as
//! lines over a child's pipes, Streamable HTTP as one POST each with JSON or SSE answers.
//! The seam is messages, not bytes, because what a message *means* to the transport
//! differs: over HTTP a request opens its own response stream, and a cancel is a POST in
//! the handshake era but closing that stream in the stateless era. So the client says what
//! each message is ([`Outgoing`]), and the transport decides how it travels.

pub mod http;
pub mod stdio;

use reference_wire::RequestId;
use serde_json::Value;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::process::ExitStatus;
use std::time::Duration;

/// A boxed future, so the seam can be used as `dyn Transport`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One message the client hands its transport.
#[derive(Clone, Debug)]
pub struct Outgoing {
    /// The JSON-RPC message, one object.
    pub message: Value,
    /// What the message is.
    pub kind: OutgoingKind,
}

/// What an [`Outgoing`] message is.
#[derive(Clone, Debug, PartialEq)]
pub enum OutgoingKind {
    /// A request the client awaits an answer to, by its id.
    Request(RequestId),
    /// A notification.
    Notification,
    /// An answer to a request the server sent.
    Response,
    /// The cancel of request `id`. `message` is its `notifications/cancelled`; a
    /// transport whose cancel is something else (closing a stream) may not send it.
    Cancel(RequestId),
}

/// What a transport hands the client.
#[derive(Clone, Debug)]
pub enum Incoming {
    /// One JSON-RPC message from the server.
    Message(Value),
    /// Request `id` ended without an answer the transport could deliver (an HTTP error
    /// status without a JSON-RPC error, a broken response stream); `reason` says why.
    Failed {
        /// The request that ended.
        id: RequestId,
        /// Why it ended.
        reason: String,
    },
    /// The server no longer knows the session (HTTP 404, HTTP-16): request `id` was not
    /// processed, and the client must start a new session with `initialize`.
    SessionExpired {
        /// The request the server did not process.
        id: RequestId,
    },
}

/// The connection is over; nothing more can be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Disconnected;

/// A way to exchange JSON-RPC messages with one server.
///
/// The client calls [`send`](Transport::send) from any task, [`receive`](Transport::receive)
/// from one reader task only, and [`close`](Transport::close) once at the end.
pub trait Transport: Send + Sync + 'static {
    /// Queues one message. Returns at once: a server that does not read must not stall the
    /// caller. Messages go out in the order they were queued.
    fn send(&self, message: Outgoing) -> Result<(), Disconnected>;

    /// What the server sent next, or `None` once no more can come. Cancel-safe.
    fn receive(&self) -> BoxFuture<'_, Option<Incoming>>;

    /// Tells the transport the protocol version now in force (negotiated by `initialize`,
    /// or the stateless era's version), or `None` before one is; HTTP puts it in headers.
    fn set_protocol_version(&self, version: Option<&str>) {
        let _ = version;
    }

    /// Ends the connection, each step waiting at most `grace`; returns the server process's
    /// exit status where there is one.
    fn close(&self, grace: Duration) -> BoxFuture<'_, io::Result<Option<ExitStatus>>>;
}
