//! What a caller hands the client: connection tunables, per-request and per-task options,
//! and the shapes of what comes back (progress updates, tool results, a tool's task
//! support).

use serde_json::Value;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Tunables for a connection.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// How long `initialize` may take before connecting fails (it is never cancelled).
    pub initialize_timeout: Duration,
    /// How long the `server/discover` probe may take; a server that stays silent that
    /// long is taken for a handshake-era one (LIF-14).
    pub discover_timeout: Duration,
    /// Deadline for each request made without an explicit one; on expiry the
    /// request is cancelled on the wire.
    pub request_timeout: Duration,
    /// How long each shutdown step (stdin close, SIGTERM) waits for exit.
    pub shutdown_grace: Duration,
    /// The protocol version to speak. `None`: 2026-07-28 if the server does (asked with
    /// `server/discover`), else the handshake with [`PROTOCOL_VERSION`](crate::PROTOCOL_VERSION).
    /// A handshake-era version: `initialize` asks for it, no probe. 2026-07-28: that era
    /// only, no fallback.
    pub protocol_version: Option<String>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            initialize_timeout: Duration::from_secs(10),
            discover_timeout: Duration::from_secs(3),
            request_timeout: Duration::from_secs(60),
            shutdown_grace: Duration::from_secs(2),
            protocol_version: None,
        }
    }
}

/// One `notifications/progress` for a call.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    /// How far the call has come.
    pub progress: f64,
    /// Where it will end, when the server knows.
    pub total: Option<f64>,
    /// What it is doing, for people.
    pub message: Option<String>,
}

/// A progress callback; it runs on the calling task.
pub type ProgressFn<'a> = &'a mut (dyn FnMut(&Progress) + Send);

/// How one request is made. `RequestOptions::default()` asks for no progress, can only be
/// cancelled by dropping the call, and uses the connection's
/// [`request_timeout`](ClientOptions::request_timeout).
#[derive(Default)]
pub struct RequestOptions<'a> {
    /// Called for each progress update; its presence attaches a unique progress token.
    pub progress: Option<ProgressFn<'a>>,
    /// Cancels the request when it fires (the call then ends in
    /// [`CallError::Cancelled`](crate::CallError::Cancelled)).
    pub cancel: Option<CancellationToken>,
    /// The deadline for this request, instead of the connection's default.
    pub timeout: Option<Duration>,
}

impl<'a> RequestOptions<'a> {
    /// Options with a progress callback.
    pub fn progress(mut self, callback: ProgressFn<'a>) -> Self {
        self.progress = Some(callback);
        self
    }

    /// Options with a cancellation token.
    pub fn cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Options with a deadline.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

/// A completed `tools/call`.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolResult {
    /// `isError` from the result (absent means false).
    pub is_error: bool,
    /// The `content` items as received.
    pub content: Vec<Value>,
}

impl ToolResult {
    /// Reads a `tools/call` result (also one `tasks/result` returned, or a task carried).
    pub(crate) fn from_result(result: &Value) -> Result<Self, crate::CallError> {
        let Some(content) = result.get("content").and_then(Value::as_array) else {
            return Err(crate::CallError::InvalidResult(
                "tools/call result has no content array".into(),
            ));
        };
        Ok(Self {
            is_error: result
                .get("isError")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            content: content.clone(),
        })
    }

    /// The text of all text content items, joined with newlines.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter(|item| item.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|item| item.get("text").and_then(Value::as_str))
            .collect();
        texts.join("\n")
    }
}

/// Whether a tool runs as a task, from its `execution.taskSupport` (2025-11-25).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskSupport {
    /// `"forbidden"`, or no `execution.taskSupport` at all: never as a task.
    Forbidden,
    /// `"optional"`: as a task or as a plain call, as the client likes.
    Optional,
    /// `"required"`: only as a task; a plain call gets `-32601`.
    Required,
}

impl TaskSupport {
    /// The support a `tools/list` entry declares; anything but the two values that allow
    /// tasks means "forbidden", the default.
    pub fn of(tool: &Value) -> Self {
        match tool
            .pointer("/execution/taskSupport")
            .and_then(Value::as_str)
        {
            Some("optional") => Self::Optional,
            Some("required") => Self::Required,
            _ => Self::Forbidden,
        }
    }
}

/// How a call runs as a task.
#[derive(Clone, Debug)]
pub struct TaskOptions {
    /// The lifetime to ask for (2025-11-25 `params.task.ttl`); `None` leaves it to the
    /// server. 2026-07-28 has no way to ask.
    pub ttl: Option<Duration>,
    /// How long, once a task is to be cancelled (or its deadline passed), the client still
    /// follows it to learn how it ended: the answer to `tasks/cancel`, the result that may
    /// have won the race, and in 2026-07-28 the polls until it is terminal. Past it the
    /// call ends as cancelled (or timed out) all the same.
    pub cancel_grace: Duration,
}

impl Default for TaskOptions {
    fn default() -> Self {
        Self {
            ttl: None,
            cancel_grace: Duration::from_secs(10),
        }
    }
}
