//! How a task looks on the wire, in each era.
//!
//! The two eras share the idea and little else. 2025-11-25 (schema.ts
//! `Task`) writes `ttl` and `pollInterval`, wraps a new task as
//! `{"task": Task}`, counts a tool result with `isError: true` as `failed`,
//! and hands the result out only through `tasks/result`. The 2026-07-28
//! extension (ext-tasks `schema/draft/schema.ts`) writes `ttlMs` and
//! `pollIntervalMs`, returns a new task flat with `resultType: "task"`,
//! counts every tool result as `completed` (`failed` is for JSON-RPC errors
//! only), and inlines the result into `tasks/get`. The table keeps one
//! state; these functions show it the way the asking era defines it.

use super::table::{State, Task, POLL_INTERVAL_MS};
use crate::meta;
use crate::version::ProtocolVersion;
use reference_wire::{RpcError, INVALID_PARAMS};
use serde_json::{json, Map, Value};

/// `_meta` key tying a message to its task (tasks.mdx §Associating
/// Task-Related Messages).
pub(crate) const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// The task's status as `version` defines it.
pub(crate) fn status(task: &Task, version: ProtocolVersion) -> &'static str {
    match &task.state {
        State::Working => "working",
        State::Cancelled => "cancelled",
        State::Done(result) if is_error(result) && version.has_core_tasks() => "failed",
        State::Done(_) => "completed",
    }
}

fn is_error(result: &Value) -> bool {
    result.get("isError").and_then(Value::as_bool) == Some(true)
}

fn status_message(task: &Task, version: ProtocolVersion) -> Option<&'static str> {
    match (&task.state, status(task, version)) {
        (State::Cancelled, _) => Some("The task was cancelled by tasks/cancel."),
        (_, "failed") => Some("The tool call ended with isError: true; tasks/result returns it."),
        _ => None,
    }
}

/// The fields every task carries in `version`.
fn fields(task: &Task, version: ProtocolVersion) -> Map<String, Value> {
    let (ttl, poll) = if version.has_core_tasks() {
        ("ttl", "pollInterval")
    } else {
        ("ttlMs", "pollIntervalMs")
    };
    let mut fields = Map::new();
    fields.insert("taskId".into(), task.id.clone().into());
    fields.insert("status".into(), status(task, version).into());
    if let Some(message) = status_message(task, version) {
        fields.insert("statusMessage".into(), message.into());
    }
    fields.insert("createdAt".into(), task.created_at.clone().into());
    fields.insert("lastUpdatedAt".into(), task.last_updated_at.clone().into());
    fields.insert(ttl.into(), task.ttl_ms.into());
    fields.insert(poll.into(), POLL_INTERVAL_MS.into());
    fields
}

/// The answer to a `tools/call` that became a task: `CreateTaskResult`.
pub(crate) fn created(task: &Task, version: ProtocolVersion) -> Value {
    if version.has_core_tasks() {
        json!({"task": fields(task, version)})
    } else {
        meta::typed(version, Value::Object(fields(task, version)), "task")
    }
}

/// The task itself: the result of `tasks/get` and of 2025-11-25's
/// `tasks/cancel`, and an item of `tasks/list`. In the extension it is the
/// `DetailedTask` of `tasks/get`, with the tool result inlined as the
/// `tools/call` would have returned it (the caller completes the outer
/// result, as for every answer of the era).
pub(crate) fn task(task: &Task, version: ProtocolVersion) -> Value {
    let mut fields = fields(task, version);
    if let (State::Done(result), true) = (&task.state, version.has_tasks_extension()) {
        fields.insert("result".into(), meta::complete(version, result.clone()));
    }
    Value::Object(fields)
}

/// The answer of `tasks/result` once the task is no longer working (`None`
/// while it is): what the `tools/call` would have returned, tied to its
/// task in `_meta`. A
/// cancelled task has no result (2025-11-25 leaves this open; see
/// TASKS.md): it is the same `-32602` that a task deleted after its cancel
/// would get, which the specification allows at any time.
pub(crate) fn outcome(task: &Task) -> Option<Result<Value, RpcError>> {
    Some(match &task.state {
        State::Working => return None,
        State::Done(result) => {
            let mut result = result.clone();
            if let Value::Object(fields) = &mut result {
                let meta = fields
                    .entry("_meta")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(meta) = meta {
                    meta.insert(RELATED_TASK.into(), json!({"taskId": task.id}));
                }
            }
            Ok(result)
        }
        State::Cancelled => Err(RpcError::new(
            INVALID_PARAMS,
            format!(
                "invalid params: task {:?} was cancelled by tasks/cancel before its work finished, so it has \
                 no result; use tasks/get for its status",
                task.id
            ),
        )
        .with_data(json!({"taskId": task.id, "status": "cancelled"}))),
    })
}

/// `-32602` for a task id this registry does not hold (tasks.mdx §Protocol
/// Errors; ext-tasks §Error Handling).
pub(crate) fn unknown(method: &str, id: &str) -> RpcError {
    RpcError::new(
        INVALID_PARAMS,
        format!(
            "invalid params: {method}: no task {id:?} here; it never existed, belongs to another session, or \
             its ttl ran out"
        ),
    )
}
