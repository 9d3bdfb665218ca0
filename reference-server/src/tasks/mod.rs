//! Tasks: a `tools/call` answered at once with a task handle, whose work
//! goes on until it finishes, is cancelled with `tasks/cancel`, or its
//! `ttl` runs out.
//!
//! Tasks exist so that a harness can check the rules of task cancellation
//! (TSK-01 … TSK-06, CAN-15, PRG-10, PRG-11) against a server known to
//! follow them, in both forms the protocol has had: the experimental core
//! feature of 2025-11-25 and the `io.modelcontextprotocol/tasks` extension
//! of 2026-07-28 (`version.rs` says which version has which). The table is
//! kept under the registry's lock (`table.rs`), so a task's cancel and its
//! progress are ordered like a request's; `run.rs` starts and runs the work,
//! `progress.rs` routes its progress, `handlers.rs` serves the `tasks/*`
//! methods, `wire.rs` shapes them per era.
//! TASKS.md is the manual.

mod handlers;
pub(crate) mod progress;
mod run;
pub(crate) mod table;
mod wire;

pub(crate) use handlers::{handle, serves};
pub(crate) use run::{start, NewTask, Work};

use crate::meta::TASKS_EXTENSION;
use crate::request::Refusal;
use crate::tools::TaskSupport;
use crate::version::ProtocolVersion;
use reference_wire::{RpcError, INVALID_PARAMS, METHOD_NOT_FOUND};
use serde_json::{json, Value};

/// The server's `tasks` capability in 2025-11-25: `tasks/list`,
/// `tasks/cancel`, and task-augmented `tools/call` (tasks.mdx §Server
/// Capabilities).
pub(crate) fn capability() -> Value {
    json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
}

/// The server's `capabilities.extensions` in 2026-07-28 (`server/discover`).
pub(crate) fn extensions() -> Value {
    json!({TASKS_EXTENSION: {}})
}

/// How a `tools/call` is served.
#[derive(Debug, PartialEq)]
pub(crate) enum Mode {
    /// As an ordinary request.
    Plain,
    /// As a task kept for `ttl_ms`.
    Task { ttl_ms: u64 },
}

/// Decides how a call of `tool` is served. `task`: the request's
/// `params.task`; `declared`: whether a 2026-07-28 request declared the
/// tasks extension.
///
/// - Versions without tasks, and unknown tools: as before, `params.task`
///   ignored (TSK-02).
/// - 2025-11-25: a task exactly when `params.task` is an object. A tool
///   whose `execution.taskSupport` is absent or `"forbidden"` refuses it
///   with `-32601` (SHOULD); a `"required"` one refuses a plain call with
///   `-32601` (MUST) (TSK-01).
/// - 2026-07-28: `params.task` is ignored (SEP-2663 §Backward
///   Compatibility); the server decides, and makes every tool that may run
///   as a task one when the request declares the extension. A tool that
///   only runs as a task refuses a request without it with `-32021`.
pub(crate) fn mode(
    tool: &str,
    task: Option<&Value>,
    version: ProtocolVersion,
    declared: bool,
) -> Result<Mode, Refusal> {
    let Some(support) = crate::tools::task_support(tool, version) else {
        return Ok(Mode::Plain);
    };
    if version.has_tasks_extension() {
        return match (support, declared) {
            (TaskSupport::Forbidden, _) | (TaskSupport::Optional, false) => Ok(Mode::Plain),
            (TaskSupport::Required, false) => Err(handlers::missing_extension(&format!(
                "tools/call of {tool:?}"
            ))),
            (_, true) => Ok(Mode::Task {
                ttl_ms: table::DEFAULT_TTL_MS,
            }),
        };
    }
    let requested = match task {
        None | Some(Value::Null) => None,
        Some(Value::Object(task)) => Some(ttl(task.get("ttl"))?),
        Some(_) => {
            return Err(invalid("params.task must be an object such as {\"ttl\": 60000}").into())
        }
    };
    match (support, requested) {
        (TaskSupport::Forbidden, Some(_)) => Err(RpcError::new(
            METHOD_NOT_FOUND,
            format!(
                "method not found: tool {tool:?} does not run as a task (its execution.taskSupport is \
                 \"forbidden\"); call it without params.task"
            ),
        )
        .into()),
        (TaskSupport::Required, None) => Err(RpcError::new(
            METHOD_NOT_FOUND,
            format!(
                "method not found: tool {tool:?} only runs as a task (its execution.taskSupport is \
                 \"required\"); add params.task, e.g. {{\"ttl\": 60000}}"
            ),
        )
        .into()),
        (_, Some(ttl_ms)) => Ok(Mode::Task { ttl_ms }),
        (_, None) => Ok(Mode::Plain),
    }
}

/// `params.task.ttl`: absent, null, or a number of milliseconds, which the
/// server clamps (tasks.mdx: receivers MAY override the requested `ttl`).
fn ttl(requested: Option<&Value>) -> Result<u64, RpcError> {
    match requested {
        None | Some(Value::Null) => Ok(table::clamp_ttl(None)),
        Some(Value::Number(ms)) => Ok(table::clamp_ttl(ms.as_f64())),
        Some(_) => Err(invalid("params.task.ttl must be a number of milliseconds")),
    }
}

fn invalid(what: &str) -> RpcError {
    RpcError::new(INVALID_PARAMS, format!("invalid params: {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const V2511: ProtocolVersion = ProtocolVersion::V2025_11_25;
    const V2607: ProtocolVersion = ProtocolVersion::V2026_07_28;

    fn code(mode: Result<Mode, Refusal>) -> i64 {
        mode.expect_err("refused").error.code
    }

    #[test]
    fn tool_level_negotiation_follows_task_support() {
        let task = json!({"ttl": 5000});
        assert_eq!(
            mode("work", Some(&task), V2511, false).ok(),
            Some(Mode::Task { ttl_ms: 5000 })
        );
        assert_eq!(mode("work", None, V2511, false).ok(), Some(Mode::Plain));
        assert_eq!(code(mode("echo", Some(&task), V2511, false)), -32601);
        assert_eq!(code(mode("job", None, V2511, false)), -32601);
        assert_eq!(code(mode("work", Some(&json!(1)), V2511, false)), -32602);
        assert_eq!(
            code(mode("work", Some(&json!({"ttl": "soon"})), V2511, false)),
            -32602
        );
    }

    #[test]
    fn versions_without_tasks_ignore_the_task_field() {
        let task = json!({"ttl": 5000});
        for version in [ProtocolVersion::V2024_11_05, ProtocolVersion::V2025_06_18] {
            assert_eq!(
                mode("work", Some(&task), version, false).ok(),
                Some(Mode::Plain)
            );
            assert_eq!(
                mode("echo", Some(&json!("junk")), version, false).ok(),
                Some(Mode::Plain)
            );
        }
    }

    #[test]
    fn the_extension_decides_by_declaration_and_ignores_the_task_field() {
        let task = json!({"ttl": 5000});
        assert_eq!(
            mode("work", Some(&task), V2607, false).ok(),
            Some(Mode::Plain)
        );
        assert_eq!(
            mode("work", None, V2607, true).ok(),
            Some(Mode::Task {
                ttl_ms: table::DEFAULT_TTL_MS
            })
        );
        assert_eq!(mode("echo", None, V2607, true).ok(), Some(Mode::Plain));
        let refused = mode("job", None, V2607, false).expect_err("refused");
        assert_eq!(refused.error.code, -32021);
        assert_eq!(refused.status, crate::request::Status::BadRequest);
    }

    #[test]
    fn ttls_are_clamped() {
        assert_eq!(ttl(None).ok(), Some(table::DEFAULT_TTL_MS));
        assert_eq!(ttl(Some(&json!(1))).ok(), Some(table::MIN_TTL_MS));
        assert_eq!(ttl(Some(&json!(1e300))).ok(), Some(table::MAX_TTL_MS));
        assert_eq!(ttl(Some(&json!(-5))).ok(), Some(table::MIN_TTL_MS));
        assert_eq!(ttl(Some(&json!(2500.7))).ok(), Some(2500));
    }
}
