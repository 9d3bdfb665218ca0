//! How a request or a connection attempt can fail, as types rather than text, so a caller
//! (the conformance adapter, the cookbook) can tell a timeout from a refusal without
//! reading messages.

use reference_wire::RpcError;
use std::fmt;
use std::io;
use std::time::Duration;

/// Why a request produced no result.
#[derive(Debug)]
pub enum CallError {
    /// The caller's token fired; the request was cancelled on the wire.
    Cancelled,
    /// The deadline passed; the request was cancelled on the wire.
    TimedOut(Duration),
    /// The server answered with a JSON-RPC error.
    Rpc(RpcError),
    /// The server answered with something that is not the expected result.
    InvalidResult(String),
    /// The connection ended before an answer arrived.
    Closed,
    /// The transport could not deliver the request or its answer (for HTTP: the server
    /// could not be reached, answered with an error status, or broke the response stream).
    Transport(String),
    /// The server forgot the session twice for the same request (HTTP 404 after a new
    /// session was started); the request was not processed.
    SessionExpired,
    /// A call that ran as a task ended without a result this client can return, and not
    /// because this client cancelled it: the server cancelled the task on its own, or the
    /// task waits for input this client cannot give. The text says which.
    TaskEnded(String),
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Cancelled => write!(f, "request cancelled by the caller"),
            Self::TimedOut(d) => write!(f, "request timed out after {d:?} and was cancelled"),
            Self::Rpc(e) => write!(f, "server returned an error: {e}"),
            Self::InvalidResult(why) => write!(f, "server sent an invalid result: {why}"),
            Self::Closed => write!(f, "server connection closed before the answer arrived"),
            Self::Transport(why) => write!(f, "{why}"),
            Self::SessionExpired => write!(
                f,
                "the server forgot the session again right after a new one was started; check the server's session handling"
            ),
            Self::TaskEnded(why) => write!(f, "{why}"),
        }
    }
}

impl std::error::Error for CallError {}

/// Why connecting to a server (starting it and completing the handshake) failed.
#[derive(Debug)]
pub enum ConnectError {
    /// The server process could not be started.
    Spawn(io::Error),
    /// `initialize` got no answer within the connection's `initialize_timeout`. It was
    /// not cancelled (LIF-08); the connection was given up.
    TimedOut(Duration),
    /// The connection ended during the handshake.
    Closed,
    /// The server refused the handshake with a JSON-RPC error.
    Rpc(RpcError),
    /// The server's answer to the handshake is not a valid result.
    InvalidResult(String),
    /// The server chose a protocol version this client does not speak (LIF-06).
    UnsupportedVersion(String),
    /// The server URL is not one this client can use.
    InvalidUrl(String),
    /// The transport could not reach the server or deliver the handshake.
    Transport(String),
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Spawn(e) => write!(f, "{e}"),
            Self::TimedOut(d) => write!(
                f,
                "the server did not answer initialize within {d:?}; check that it is an MCP server and that it starts in time"
            ),
            Self::Closed => write!(
                f,
                "the server closed the connection during the handshake; see its stderr for why"
            ),
            Self::Rpc(e) => write!(f, "the server refused initialize: {e}"),
            Self::InvalidResult(why) => write!(
                f,
                "the server's initialize result is invalid: {why}; check that it is an MCP server"
            ),
            Self::UnsupportedVersion(v) => write!(
                f,
                "the server chose protocol version {v:?}, which this client does not speak; it speaks {}",
                crate::era::KNOWN_VERSIONS.join(", ")
            ),
            Self::InvalidUrl(why) => write!(f, "{why}"),
            Self::Transport(why) => write!(f, "{why}"),
        }
    }
}

impl std::error::Error for ConnectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Spawn(e) => Some(e),
            Self::Rpc(e) => Some(e),
            _ => None,
        }
    }
}

impl From<CallError> for ConnectError {
    fn from(e: CallError) -> Self {
        match e {
            CallError::TimedOut(d) => Self::TimedOut(d),
            CallError::Rpc(e) => Self::Rpc(e),
            CallError::InvalidResult(why) => Self::InvalidResult(why),
            CallError::Transport(why) | CallError::TaskEnded(why) => Self::Transport(why),
            // A handshake is never cancelled by the caller; treat it as the connection ending.
            CallError::Cancelled | CallError::Closed | CallError::SessionExpired => Self::Closed,
        }
    }
}
