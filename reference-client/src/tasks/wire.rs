//! The shapes of tasks on the wire in both eras, read into one model.
//!
//! 2025-11-25 wraps the created task (`{"task": Task}`), names its poll interval
//! `pollInterval` and keeps the result for `tasks/result`. The 2026-07-28 extension
//! answers with a flat task marked `resultType: "task"`, names it `pollIntervalMs`, and
//! inlines a finished task's result (or JSON-RPC error) in `tasks/get`. Everything else
//! in this client reads [`Task`], so the difference lives here, in pure functions.

use crate::era::Era;
use crate::CallError;
use reference_wire::RpcError;
use serde_json::{json, Value};
use std::time::Duration;

/// Where a task is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskStatus {
    /// The work goes on.
    Working,
    /// The server waits for input from the client.
    InputRequired,
    /// The work finished; its result is available (a tool error included in 2026-07-28).
    Completed,
    /// The work failed (2025-11-25: a tool error too; 2026-07-28: a JSON-RPC error only).
    Failed,
    /// The task was cancelled.
    Cancelled,
}

impl TaskStatus {
    fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "working" => Self::Working,
            "input_required" => Self::InputRequired,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "cancelled" => Self::Cancelled,
            _ => return None,
        })
    }

    /// The status as the wire spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Whether the task can change no more (`completed`, `failed`, `cancelled`).
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

/// A task as the server last described it.
#[derive(Clone, Debug, PartialEq)]
pub struct Task {
    /// The server's id for it.
    pub id: String,
    /// Its status.
    pub status: TaskStatus,
    /// The server's words about the status, if any.
    pub status_message: Option<String>,
    /// How often the server would like to be asked about it, if it said.
    pub poll_interval: Option<Duration>,
    /// 2026-07-28: the `tools/call` result a `completed` task carries.
    pub result: Option<Value>,
    /// 2026-07-28: the JSON-RPC error a `failed` task carries.
    pub error: Option<RpcError>,
}

/// What a task-augmented `tools/call` was answered with.
#[derive(Debug)]
pub(crate) enum Created {
    /// A task was created.
    Task(Task),
    /// The call ran as a plain call (the 2026-07-28 server decides per request).
    Done(Value),
}

/// The params of a `tools/call` asking for a task: 2025-11-25 asks with `params.task`
/// (and a `ttl` when given); in 2026-07-28 the request only declares the extension, which
/// its stamp does, and the server decides.
pub(crate) fn call_params(name: &str, arguments: Value, era: Era, ttl: Option<Duration>) -> Value {
    let mut params = json!({"name": name, "arguments": arguments});
    if era == Era::Handshake {
        params["task"] = match ttl {
            Some(ttl) => json!({"ttl": u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)}),
            None => json!({}),
        };
    }
    params
}

/// The params of `tasks/get`, `tasks/result` and `tasks/cancel`.
pub(crate) fn task_params(id: &str) -> Value {
    json!({"taskId": id})
}

/// Reads the answer to a task-augmented `tools/call`.
pub(crate) fn created(result: &Value, era: Era) -> Result<Created, CallError> {
    match era {
        Era::Handshake => match result.get("task") {
            Some(task) => Ok(Created::Task(task_of(task, era)?)),
            // A receiver may answer a task request directly; a CallToolResult is that.
            None if result.get("content").is_some() => Ok(Created::Done(result.clone())),
            None => Err(invalid(
                "the answer to a task-augmented tools/call is neither a CreateTaskResult (task) nor a CallToolResult (content)",
            )),
        },
        Era::Stateless => match result.get("resultType").and_then(Value::as_str) {
            Some("task") => Ok(Created::Task(task_of(result, era)?)),
            None | Some("complete") => Ok(Created::Done(result.clone())),
            Some(other) => Err(invalid(&format!(
                "the tools/call result has resultType {other:?}; this client knows \"complete\" and \"task\""
            ))),
        },
    }
}

/// Reads a `tasks/get` answer, or a 2025-11-25 `tasks/cancel` answer (both the Task).
pub(crate) fn task(result: &Value, era: Era) -> Result<Task, CallError> {
    if era == Era::Stateless {
        match result.get("resultType").and_then(Value::as_str) {
            None | Some("complete") => {}
            Some(other) => {
                return Err(invalid(&format!(
                    "the tasks/get result has resultType {other:?}, not \"complete\""
                )))
            }
        }
    }
    task_of(result, era)
}

/// Checks the 2026-07-28 `tasks/cancel` answer, an empty ack.
pub(crate) fn ack(result: &Value) -> Result<(), CallError> {
    match result.get("resultType").and_then(Value::as_str) {
        None | Some("complete") => Ok(()),
        Some(other) => Err(invalid(&format!(
            "the tasks/cancel result has resultType {other:?}, not \"complete\""
        ))),
    }
}

fn task_of(value: &Value, era: Era) -> Result<Task, CallError> {
    let Some(id) = value.get("taskId").and_then(Value::as_str) else {
        return Err(invalid("the task has no taskId string"));
    };
    let status = value.get("status").and_then(Value::as_str).unwrap_or("");
    let Some(status) = TaskStatus::parse(status) else {
        return Err(invalid(&format!(
            "task {id:?} has status {:?}, which is none of working, input_required, completed, failed, cancelled",
            value.get("status").unwrap_or(&Value::Null)
        )));
    };
    let interval_key = match era {
        Era::Handshake => "pollInterval",
        Era::Stateless => "pollIntervalMs",
    };
    let (result, error) = match era {
        Era::Handshake => (None, None),
        Era::Stateless => (
            value.get("result").filter(|r| r.is_object()).cloned(),
            value.get("error").and_then(rpc_error),
        ),
    };
    Ok(Task {
        id: id.to_owned(),
        status,
        status_message: value
            .get("statusMessage")
            .and_then(Value::as_str)
            .map(str::to_owned),
        poll_interval: value
            .get(interval_key)
            .and_then(Value::as_f64)
            .filter(|ms| ms.is_finite() && *ms >= 0.0)
            .map(|ms| Duration::from_millis(ms.min(u64::MAX as f64) as u64)),
        result,
        error,
    })
}

fn rpc_error(value: &Value) -> Option<RpcError> {
    let code = value.get("code")?.as_i64()?;
    let message = value.get("message").and_then(Value::as_str).unwrap_or("");
    Some(RpcError {
        code,
        message: message.to_owned(),
        data: value.get("data").cloned(),
    })
}

fn invalid(why: &str) -> CallError {
    CallError::InvalidResult(why.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_2025_shapes_read_as_tasks() {
        let created = json!({"task": {"taskId": "t1", "status": "working", "ttl": 60000,
            "pollInterval": 100, "createdAt": "x", "lastUpdatedAt": "x"}});
        let Ok(Created::Task(task)) = super::created(&created, Era::Handshake) else {
            panic!("a task")
        };
        assert_eq!(task.id, "t1");
        assert_eq!(task.status, TaskStatus::Working);
        assert_eq!(task.poll_interval, Some(Duration::from_millis(100)));
        let plain = json!({"content": [{"type": "text", "text": "done"}]});
        assert!(matches!(
            super::created(&plain, Era::Handshake),
            Ok(Created::Done(_))
        ));
        let cancelled = json!({"taskId": "t1", "status": "cancelled", "statusMessage": "by you"});
        let task = super::task(&cancelled, Era::Handshake).expect("a task");
        assert_eq!(task.status, TaskStatus::Cancelled);
        assert_eq!(task.status_message.as_deref(), Some("by you"));
        assert!(task.status.is_terminal());
    }

    #[test]
    fn the_2026_shapes_read_as_tasks() {
        let created = json!({"resultType": "task", "taskId": "t2", "status": "working",
            "ttlMs": 60000, "pollIntervalMs": 5000});
        let Ok(Created::Task(task)) = super::created(&created, Era::Stateless) else {
            panic!("a task")
        };
        assert_eq!(task.poll_interval, Some(Duration::from_secs(5)));
        let plain = json!({"resultType": "complete", "content": []});
        assert!(matches!(
            super::created(&plain, Era::Stateless),
            Ok(Created::Done(_))
        ));
        let done = json!({"resultType": "complete", "taskId": "t2", "status": "completed",
            "result": {"content": [{"type": "text", "text": "done"}], "isError": true}});
        let task = super::task(&done, Era::Stateless).expect("a task");
        assert_eq!(task.result.expect("inlined")["isError"], true);
        let failed = json!({"taskId": "t2", "status": "failed",
            "error": {"code": -32603, "message": "rate limit"}});
        let task = super::task(&failed, Era::Stateless).expect("a task");
        assert_eq!(task.error.expect("inlined").code, -32603);
        assert!(ack(&json!({"resultType": "complete"})).is_ok());
        assert!(ack(&json!({"resultType": "task"})).is_err());
    }

    #[test]
    fn malformed_tasks_are_invalid_results() {
        for bad in [
            json!({"resultType": "task", "status": "working"}),
            json!({"resultType": "task", "taskId": "t", "status": "sleeping"}),
            json!({"resultType": "later"}),
        ] {
            assert!(
                matches!(
                    super::created(&bad, Era::Stateless),
                    Err(CallError::InvalidResult(_))
                ),
                "{bad}"
            );
        }
        assert!(super::created(&json!({}), Era::Handshake).is_err());
        assert!(super::task(&json!({"taskId": 5, "status": "working"}), Era::Handshake).is_err());
    }

    #[test]
    fn each_era_asks_for_a_task_its_way() {
        let ask = call_params(
            "work",
            json!({}),
            Era::Handshake,
            Some(Duration::from_secs(60)),
        );
        assert_eq!(ask["task"], json!({"ttl": 60000}));
        assert_eq!(
            call_params("work", json!({}), Era::Handshake, None)["task"],
            json!({})
        );
        assert!(call_params("work", json!({}), Era::Stateless, None)
            .get("task")
            .is_none());
    }
}
