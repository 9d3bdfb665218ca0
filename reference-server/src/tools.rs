//! The fixture profile: the tools a conformance harness drives.
//!
//! Each tool exists to make one cancellation behaviour observable: `work`
//! announces it started and then waits to be cancelled, `ticker` streams
//! progress, `sleep` finishes on its own unless cancelled, `echo` and `ping`
//! answer at once, and `cancellations` reports which handlers saw their
//! cancel. Argument checking is hand-written against the advertised schemas.

use crate::outbox::Route;
use crate::registry::Registry;
use crate::version::ProtocolVersion;
use reference_wire::notification;
use serde_json::{json, Map, Value};
use std::future::pending;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

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
}

/// Why a call cannot run.
pub(crate) enum ToolError {
    /// No tool with this name: always a protocol error.
    Unknown(String),
    /// The arguments do not match the input schema: reported per version.
    BadArguments(String),
}

/// The `tools/list` result.
pub(crate) fn list() -> Value {
    let no_args = json!({"type": "object", "properties": {}});
    json!({"tools": [
        {
            "name": "work",
            "description": "Reports progress 0 \"Started\" when given a progress token, then waits until cancelled. Never answers on its own.",
            "inputSchema": no_args,
        },
        {
            "name": "ping",
            "description": "Answers \"Server: still available\".",
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

/// Validates a call against the fixture profile.
pub(crate) fn prepare(name: &str, args: &Map<String, Value>) -> Result<Call, ToolError> {
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
    pub token: &'a CancellationToken,
    pub route: &'a Route,
    pub progress_token: Option<Value>,
    pub version: ProtocolVersion,
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
        self.route.room().await;
        let line = notification("notifications/progress", Some(params));
        self.registry.progress(self.token, self.route, line);
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
    }
}

/// Sleeps, treating a deadline beyond the clock's range as forever.
async fn sleep_ms(ms: u64) {
    match Instant::now().checked_add(Duration::from_millis(ms)) {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => pending().await,
    }
}
