//! The fixture profile: the tools a conformance harness drives.
//!
//! Each tool exists to make one cancellation behaviour observable: `work`
//! announces it started and then waits to be cancelled, `ticker` streams
//! progress, `sleep` finishes on its own unless cancelled, `echo` and `ping`
//! answer at once, and `cancellations` reports which handlers saw their
//! cancel. In the versions with tasks, `work`, `sleep` and `ticker` may run
//! as tasks, and `job` and `work_required` (`work` that must be a task, the
//! role a harness refuses a plain call of) only run as one (`tasks/`); the
//! others never do.
//! Argument checking is hand-written against the advertised schemas.

use crate::outbox::Route;
use crate::registry::Registry;
use crate::tasks::progress;
use crate::version::ProtocolVersion;
use reference_wire::notification;
use serde_json::{json, Map, Value};
use std::future::pending;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// `job`'s `error` text is kept as its task's result until the task's
/// `ttl` runs out, so it is bounded (with the number of tasks, `tasks/`).
pub(crate) const JOB_ERROR_MAX_CHARS: usize = 1024;

/// A validated `tools/call`.
pub(crate) enum Call {
    /// Answered by the reader at once; nothing can cancel it in between.
    Instant(Value),
    /// Runs as its own task with its own cancellation token.
    Long(LongTool),
}

pub(crate) enum LongTool {
    Work,
    Sleep(u64),
    Ticker(u64),
    Cancellations,
    /// After `ms`, "done", or an `isError` result carrying `error`; with
    /// `ignore_cancel`, its work does not stop when cancelled.
    Job {
        ms: u64,
        error: Option<String>,
        ignore_cancel: bool,
    },
}

impl LongTool {
    /// Whether the work stops when its token fires (all but a `job` told to
    /// ignore cancellation, which plays work that cannot be stopped).
    pub(crate) fn stops_on_cancel(&self) -> bool {
        !matches!(
            self,
            Self::Job {
                ignore_cancel: true,
                ..
            }
        )
    }
}

/// Whether a tool may run as a task (2025-11-25's `execution.taskSupport`;
/// the same split decides in 2026-07-28).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TaskSupport {
    Forbidden,
    Optional,
    Required,
}

impl TaskSupport {
    fn as_str(self) -> &'static str {
        match self {
            Self::Forbidden => "forbidden",
            Self::Optional => "optional",
            Self::Required => "required",
        }
    }
}

/// How a tool of `version` may run as a task; `None` for a tool `version`
/// does not have (any tool, in a version without tasks).
pub(crate) fn task_support(name: &str, version: ProtocolVersion) -> Option<TaskSupport> {
    if !version.has_tasks() {
        return None;
    }
    match name {
        "work" | "sleep" | "ticker" => Some(TaskSupport::Optional),
        "job" | "work_required" => Some(TaskSupport::Required),
        "ping" | "echo" | "cancellations" => Some(TaskSupport::Forbidden),
        _ => None,
    }
}

/// Why a call cannot run.
pub(crate) enum ToolError {
    /// No tool with this name: always a protocol error.
    Unknown(String),
    /// The arguments do not match the input schema: reported per version.
    BadArguments(String),
}

/// The `tools/list` result of `version`: the fixture profile, plus `job`
/// and `work_required` where there are tasks, each tool's `readOnlyHint` where the version has
/// annotations, and its `execution.taskSupport` where the version defines it
/// (2025-11-25).
pub(crate) fn list(version: ProtocolVersion) -> Value {
    let mut list = profile();
    let Some(Value::Array(tools)) = list.get_mut("tools") else {
        return list;
    };
    if version.has_tasks() {
        tools.push(job());
        tools.push(work_required());
    }
    // Tool annotations exist from 2025-03-26. No tool here changes anything outside the
    // call itself, and saying so lets a client (`conformance init`) call them unprompted.
    if version.has_tool_annotations() {
        for tool in tools.iter_mut() {
            tool["annotations"] = json!({"readOnlyHint": true});
        }
    }
    if version.has_core_tasks() {
        for tool in tools.iter_mut() {
            let support = tool["name"]
                .as_str()
                .and_then(|name| task_support(name, version));
            match support {
                Some(TaskSupport::Forbidden) | None => {}
                Some(support) => tool["execution"] = json!({"taskSupport": support.as_str()}),
            }
        }
    }
    list
}

/// The tool that only runs as a task.
fn job() -> Value {
    json!({
        "name": "job",
        "description": "Runs only as a task. Finishes after ms milliseconds unless cancelled: with \"done\", or, given error, with an isError result carrying that text. With ignore_cancel, its work cannot be stopped and finishes anyway.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "ms": {"type": "integer", "minimum": 0},
                "error": {"type": "string", "maxLength": 1024},
                "ignore_cancel": {"type": "boolean"},
            },
            "required": ["ms"],
        },
    })
}

/// `work` that only runs as a task: a plain call of it is refused (TSK-01).
fn work_required() -> Value {
    json!({
        "name": "work_required",
        "description": "Runs only as a task: reports progress 0 \"Started\" when given a progress token, then waits until its task is cancelled.",
        "inputSchema": {"type": "object", "properties": {}},
    })
}

/// The fixture profile every version lists. `ping` comes first: other suites call the first
/// tool a server lists, with no arguments, and wait for its answer (`work` never gives one).
fn profile() -> Value {
    let no_args = json!({"type": "object", "properties": {}});
    json!({"tools": [
        {
            "name": "ping",
            "description": "Answers \"Server: still available\".",
            "inputSchema": no_args,
        },
        {
            "name": "work",
            "description": "Reports progress 0 \"Started\" when given a progress token, then waits until cancelled. Never answers on its own.",
            "inputSchema": no_args,
        },
        {
            "name": "echo",
            "description": "Returns the given text.",
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
        },
        {
            "name": "sleep",
            "description": "Returns \"slept\" after ms milliseconds unless cancelled.",
            "inputSchema": {
                "type": "object",
                "properties": {"ms": {"type": "integer", "minimum": 0}},
                "required": ["ms"],
            },
        },
        {
            "name": "ticker",
            "description": "Reports progress 1, 2, 3, ... every interval_ms milliseconds until cancelled. Never answers on its own.",
            "inputSchema": {
                "type": "object",
                "properties": {"interval_ms": {"type": "integer", "minimum": 1}},
                "required": ["interval_ms"],
            },
        },
        {
            "name": "cancellations",
            "description": "Returns a JSON array of the request ids whose handlers observed their cancellation, in order.",
            "inputSchema": no_args,
        },
    ]})
}

/// A successful tool result with one text item.
pub(crate) fn text_result(text: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": text.into()}]})
}

/// A tool execution error result with one text item.
pub(crate) fn error_result(text: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": text.into()}], "isError": true})
}

/// Validates a call against the tools of `version`.
pub(crate) fn prepare(
    name: &str,
    args: &Map<String, Value>,
    version: ProtocolVersion,
) -> Result<Call, ToolError> {
    match name {
        "work" => Ok(Call::Long(LongTool::Work)),
        "ping" => Ok(Call::Instant(text_result("Server: still available"))),
        "echo" => match args.get("text") {
            Some(Value::String(text)) => Ok(Call::Instant(text_result(text.as_str()))),
            _ => Err(bad_argument(name, "text", "a string")),
        },
        "sleep" => integer(args, "ms", 0)
            .map(|ms| Call::Long(LongTool::Sleep(ms)))
            .ok_or_else(|| bad_argument(name, "ms", "an integer >= 0")),
        "ticker" => integer(args, "interval_ms", 1)
            .map(|ms| Call::Long(LongTool::Ticker(ms)))
            .ok_or_else(|| bad_argument(name, "interval_ms", "an integer >= 1")),
        "cancellations" => Ok(Call::Long(LongTool::Cancellations)),
        "work_required" if version.has_tasks() => Ok(Call::Long(LongTool::Work)),
        "job" if version.has_tasks() => {
            let ms = integer(args, "ms", 0)
                .ok_or_else(|| bad_argument(name, "ms", "an integer >= 0"))?;
            let error = match args.get("error") {
                None => None,
                Some(Value::String(text)) if text.chars().count() <= JOB_ERROR_MAX_CHARS => {
                    Some(text.clone())
                }
                Some(_) => {
                    return Err(bad_argument(
                        name,
                        "error",
                        "a string of at most 1024 characters when present",
                    ))
                }
            };
            let ignore_cancel = match args.get("ignore_cancel") {
                None => false,
                Some(Value::Bool(ignore)) => *ignore,
                Some(_) => {
                    return Err(bad_argument(
                        name,
                        "ignore_cancel",
                        "a boolean when present",
                    ))
                }
            };
            Ok(Call::Long(LongTool::Job {
                ms,
                error,
                ignore_cancel,
            }))
        }
        other => Err(ToolError::Unknown(format!(
            "unknown tool {other:?}; call tools/list for the available tools"
        ))),
    }
}

fn integer(args: &Map<String, Value>, key: &str, min: u64) -> Option<u64> {
    args.get(key)?.as_u64().filter(|n| *n >= min)
}

fn bad_argument(tool: &str, key: &str, expected: &str) -> ToolError {
    ToolError::BadArguments(format!(
        "invalid arguments for tool {tool:?}: \"{key}\" must be {expected}; see its inputSchema in tools/list"
    ))
}

/// What a long-running handler may use while it runs.
pub(crate) struct Context<'a> {
    pub registry: &'a Registry,
    pub reporter: Reporter<'a>,
    pub progress_token: Option<Value>,
    pub version: ProtocolVersion,
}

/// Where a handler's progress goes.
pub(crate) enum Reporter<'a> {
    /// A request's own route, while its token has not fired.
    Request {
        token: &'a CancellationToken,
        route: &'a Route,
    },
    /// Wherever the task with this id sends its progress while it works.
    Task(&'a str),
}

impl Context<'_> {
    /// Sends progress once the output queue has room (a client that stops
    /// reading slows the ticker down instead of growing the queue).
    async fn progress(&self, progress: u64, message: Option<&str>) {
        let Some(token) = &self.progress_token else {
            return;
        };
        let mut params = json!({"progressToken": token, "progress": progress});
        if let Some(message) = message.filter(|_| self.version.progress_has_message()) {
            params["message"] = message.into();
        }
        match self.reporter {
            Reporter::Request { token, route } => {
                route.room().await;
                let line = notification("notifications/progress", Some(params));
                self.registry.progress(token, route, line);
            }
            Reporter::Task(id) => progress::send(self.registry, id, params).await,
        }
    }
}

/// Runs a long tool to completion; the caller races it against the token.
pub(crate) async fn run(tool: LongTool, cx: Context<'_>) -> Value {
    match tool {
        LongTool::Work => {
            cx.progress(0, Some("Started")).await;
            pending().await
        }
        LongTool::Sleep(ms) => {
            sleep_ms(ms).await;
            text_result("slept")
        }
        LongTool::Ticker(interval_ms) => {
            if cx.progress_token.is_none() {
                return pending().await;
            }
            let mut n: u64 = 0;
            loop {
                sleep_ms(interval_ms).await;
                n = n.saturating_add(1);
                cx.progress(n, None).await;
            }
        }
        LongTool::Cancellations => {
            let ids = cx.registry.witness().await;
            text_result(Value::Array(ids).to_string())
        }
        LongTool::Job { ms, error, .. } => {
            sleep_ms(ms).await;
            match error {
                None => text_result("done"),
                Some(text) => error_result(text),
            }
        }
    }
}

/// Sleeps, treating a deadline beyond the clock's range as forever.
async fn sleep_ms(ms: u64) {
    match Instant::now().checked_add(Duration::from_millis(ms)) {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => pending().await,
    }
}
