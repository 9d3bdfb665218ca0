//! `call` actions with `task`: the call runs as a task where the server lets it (the
//! library decides, TSK-01), and is cancelled as a task is, or only stopped waiting for.
//!
//! ```text
//! {"call": NAME, "arguments": {…}, "task": true | {"ttl": MS},
//!  "progress": true,                          pass a progress handler (a progressToken)
//!  "cancel": "on-progress" | "on-task",       cancel the call (tasks/cancel for a task) on
//!  "cancel_after_ms": N,                        its first progress, once its task exists,
//!                                               or N ms after it starts
//!  "abandon": "on-progress" | "on-task",      instead: stop waiting for the result and
//!  "abandon_after_ms": N,                       leave the task working (TSK-06)
//!  "timeout_ms": N,                           the whole call's deadline (tasks/cancel)
//!  "concurrent": true}
//! ```
//!
//! The outcome line is the plain call's (`result`, `error`, `cancelled`, `timeout`), with
//! `"task": ID` when the call ran as a task: `cancelled` for an abandoned wait too.

use super::{emit, millis, outcome_line};
use reference_client::{
    CallError, Client, Progress, ProgressFn, RequestOptions, Started, TaskOptions,
};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// When an action's cancel (or abandon) fires.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Trigger {
    Never,
    OnProgress,
    OnTask,
}

fn trigger(action: &Value, key: &str) -> Trigger {
    match action.get(key).and_then(Value::as_str) {
        Some("on-progress") => Trigger::OnProgress,
        Some("on-task") => Trigger::OnTask,
        _ => Trigger::Never,
    }
}

/// Fires `token` after `after`, if the action says so.
fn fire_after(token: &CancellationToken, after: Option<Duration>) {
    if let Some(after) = after {
        let token = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            token.cancel();
        });
    }
}

/// A `call` action with `task`.
pub(super) async fn call(client: &Client, index: usize, action: &Value) {
    // Abandoning (ending the wait) and cancelling (ending the task) are two ways to stop;
    // an action that asks to abandon stops that way.
    let abandons = action.get("abandon").is_some() || action.get("abandon_after_ms").is_some();
    let (on, after) = if abandons {
        (
            trigger(action, "abandon"),
            millis(action, "abandon_after_ms"),
        )
    } else {
        (trigger(action, "cancel"), millis(action, "cancel_after_ms"))
    };
    let stop = CancellationToken::new();
    fire_after(&stop, after);
    let deadline = millis(action, "timeout_ms").map(|t| Instant::now() + t);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let wants_progress = action.get("progress").and_then(Value::as_bool) == Some(true);
    let (token, record) = (stop.clone(), Arc::clone(&seen));
    let mut handler = move |p: &Progress| {
        record
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(p.progress);
        if on == Trigger::OnProgress {
            token.cancel();
        }
    };
    let name = action.get("call").and_then(Value::as_str).unwrap_or("");
    let arguments = action.get("arguments").cloned().unwrap_or(json!({}));
    let task = TaskOptions {
        ttl: action
            .get("task")
            .and_then(|t| t.get("ttl"))
            .and_then(Value::as_u64)
            .map(Duration::from_millis),
        ..TaskOptions::default()
    };
    // Before the handle, a stop of either kind gives up on the call (the library then
    // cancels the task it gets); only a task can be left working.
    let options = RequestOptions {
        progress: wants_progress.then_some(&mut handler as ProgressFn<'_>),
        cancel: Some(stop.clone()),
        timeout: remaining(deadline),
    };
    let started = client.start_tool_task(name, arguments, options, task).await;
    let (outcome, id) = match started {
        Ok(Started::Done(result)) => (Ok(result), None),
        Ok(Started::Task(mut handle)) => {
            if on == Trigger::OnTask {
                stop.cancel();
            }
            let options = RequestOptions {
                progress: wants_progress.then_some(&mut handler as ProgressFn<'_>),
                cancel: Some(stop),
                timeout: remaining(deadline),
            };
            let outcome = if abandons {
                handle.result(options).await
            } else {
                handle.follow(options).await
            };
            (outcome, Some(handle.id().to_owned()))
        }
        Err(e) => (Err(e), None),
    };
    let seen = wants_progress.then(|| seen.lock().unwrap_or_else(|e| e.into_inner()).clone());
    let mut line = match outcome {
        Ok(result) => outcome_line(index, "result", Some(result.text()), seen),
        Err(CallError::Cancelled) => outcome_line(index, "cancelled", None, seen),
        Err(CallError::TimedOut(_)) => outcome_line(index, "timeout", None, seen),
        Err(e) => outcome_line(index, "error", Some(e.to_string()), seen),
    };
    if let Some(id) = id {
        line["task"] = json!(id);
    }
    emit(line);
}

/// What is left until `deadline`, if there is one.
fn remaining(deadline: Option<Instant>) -> Option<Duration> {
    deadline.map(|d| d.saturating_duration_since(Instant::now()))
}
