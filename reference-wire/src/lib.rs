//! Wire layer shared by the reference MCP server and client.
//!
//! Both ends of the stdio pair speak the same newline-delimited JSON-RPC 2.0,
//! so the message model, the exact-value request id, the bounded line codec
//! and the error codes live here once instead of drifting apart.

pub mod codes;
pub mod framing;
pub mod id;
pub mod message;

pub use codes::*;
pub use framing::{line_codec, write_lines, LineError, LineReader, Outgoing, MAX_LINE_BYTES};
pub use id::RequestId;
pub use message::{
    error_response, notification, request, response, Message, Rejected, RpcError, MAX_NESTING,
};
