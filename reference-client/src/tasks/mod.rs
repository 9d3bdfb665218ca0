//! Tool calls run as tasks, in both eras, and cancelled the way tasks are.
//!
//! A task is a `tools/call` answered at once with a handle; the work goes on and the
//! client asks after it by task id. What makes tasks worth a module of their own is the
//! cancel: the `tools/call` was answered when the task was created, so a
//! `notifications/cancelled` for it means nothing (TSK-03, CAN-15) and a task is stopped
//! with `tasks/cancel`; cancelling a `tasks/result` wait only ends the wait (TSK-06).
//!
//! - 2025-11-25 (core tasks): a call may be a task only when the server declared
//!   `tasks.requests.tools.call` and listed the tool as `optional` or `required`, and
//!   must be one when `required` (TSK-01). The client asks with `params.task`.
//!   The client itself declares no `tasks` capability: that capability says what a party
//!   *receives* as tasks (sampling, elicitation) and whether it serves `tasks/list` and
//!   `tasks/cancel`, none of which this client does. Asking for tasks needs no
//!   declaration.
//! - 2026-07-28 (the `io.modelcontextprotocol/tasks` extension): the request declares the
//!   extension in its own `_meta` capabilities and the server decides whether to make a
//!   task; `tasks/get` carries the result once terminal; over HTTP `Mcp-Name` carries
//!   the task id.
//!
//! [`Client::call_tool_as_task`] is the whole call in one future; [`Client::start_tool_task`]
//! gives a [`TaskHandle`] to follow and cancel separately. `create.rs` sends the call,
//! `handle.rs` is the handle, `follow.rs` follows a task to its end within the call's
//! `terms.rs`, `wire.rs` reads and writes each era's shapes.
//!
//! [`Client::call_tool_as_task`]: crate::Client::call_tool_as_task
//! [`Client::start_tool_task`]: crate::Client::start_tool_task

mod call;
mod create;
mod follow;
mod handle;
mod terms;
mod wire;

pub use create::Started;
pub use handle::TaskHandle;
pub use wire::{Task, TaskStatus};
