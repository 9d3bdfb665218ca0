//! Reference MCP client.
//!
//! [`Client`] connects to one server (spawning it over stdio, or over any [`Transport`]),
//! performs the handshake and calls tools. A call ends in exactly one of: a [`ToolResult`]
//! (which may have `isError` set), a protocol error, a cancellation or a timeout, and those
//! are distinct so callers never mistake one for another. Connecting fails with a typed
//! [`ConnectError`]. It speaks both eras: 2026-07-28 when the server does, else the
//! `initialize` handshake. A call can run as a task ([`Client::call_tool_as_task`]), which
//! is cancelled with `tasks/cancel` in either era's way. [`cookbook`] is the cancellation
//! cookbook program.

mod client;
pub mod cookbook;
mod era;
mod error;
mod handshake;
mod log;
mod options;
mod pending;
mod process;
mod routing;
mod shared;
mod tasks;
mod tools;
pub mod transport;

pub use client::Client;
pub use era::{Era, KNOWN_VERSIONS, PROTOCOL_VERSION, STATELESS_VERSION};
pub use error::{CallError, ConnectError};
pub use options::{
    ClientOptions, Progress, ProgressFn, RequestOptions, TaskOptions, TaskSupport, ToolResult,
};
pub use tasks::{Started, Task, TaskHandle, TaskStatus};
pub use transport::Transport;
