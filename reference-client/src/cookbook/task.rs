//! The cookbook's task variant (`--task`): `work` runs as a task and is cancelled the way
//! tasks are.
//!
//! It prints the plain program's lines; what differs is on the wire. The `tools/call` is
//! answered at once with a task, the client waits for the task's result (2025-11-25: one
//! `tasks/result`; 2026-07-28: `tasks/get` polls), and the cancel, after "Started" or at
//! the deadline, is `tasks/cancel`. It is never `notifications/cancelled`, which would name
//! a request that was already answered (TSK-03).
//!
//! The variant refuses to run where `work` would not be a task, so that a plain call
//! cancelled the plain way is never passed off as a cancelled task.

use super::{say, still_available};
use crate::era::TASKS_EXTENSION;
use crate::{CallError, Client, Era, Progress, RequestOptions, Started, TaskOptions, TaskSupport};
use serde_json::json;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Runs `work` as a task, cancels it after its "Started" progress (or at `deadline`) with
/// `tasks/cancel`, then calls `ping`.
pub(super) async fn cookbook(
    client: &Client,
    deadline: Option<Duration>,
    over_http: bool,
) -> Result<(), String> {
    if deadline.is_none() {
        progress_can_arrive(client, over_http)?;
    }
    work_runs_as_task(client).await?;
    let cancellation = CancellationToken::new();
    let timer = deadline.map(|deadline| {
        let canceller = cancellation.clone();
        tokio::spawn(async move {
            tokio::time::sleep(deadline).await;
            canceller.cancel();
        })
    });
    let canceller = cancellation.clone();
    let mut on_progress = move |update: &Progress| {
        let message = update.message.as_deref().unwrap_or_default();
        say(&format!("Client: cancel requested after {message}"));
        canceller.cancel();
    };
    // Without a deadline the cancel follows the progress, and a callback asks for it.
    let with_progress = deadline.is_none();
    let mut options = RequestOptions::default().cancel(cancellation.clone());
    if with_progress {
        options = options.progress(&mut on_progress);
    }
    let started = client
        .start_tool_task("work", json!({}), options, TaskOptions::default())
        .await;
    let call = match started {
        Ok(Started::Task(mut task)) => {
            let mut options = RequestOptions::default().cancel(cancellation);
            if with_progress {
                options = options.progress(&mut on_progress);
            }
            Some(task.follow(options).await)
        }
        Ok(Started::Done(_)) => None,
        Err(e) => Some(Err(e)),
    };
    if let Some(timer) = timer {
        timer.abort();
    }
    match call {
        Some(Err(CallError::Cancelled)) => say("Client: call canceled"),
        None => {
            return Err(format!(
                "the server ran `work` as a plain call although it offers it as a task in {}; run without --task",
                client.protocol_version()
            ))
        }
        Some(Ok(result)) => {
            return Err(format!(
                "the work task finished instead of being cancelled: {result:?}"
            ))
        }
        Some(Err(CallError::TimedOut(after))) => {
            return Err(format!(
                "the server sent no progress for the `work` task within {after:?}, so the task was cancelled (tasks/cancel); --deadline-ms N cancels at a deadline instead, --timeout-ms N sets how long to wait"
            ))
        }
        Some(Err(e)) => return Err(format!("the work task failed: {e}")),
    }
    still_available(client).await
}

/// Whether the "Started" progress that triggers the cancel can reach this client; where it
/// cannot, the variant needs a deadline instead of waiting for nothing.
fn progress_can_arrive(client: &Client, over_http: bool) -> Result<(), String> {
    let version = client.protocol_version();
    match client.era() {
        Era::Stateless => Err(format!(
            "in {version} a task reports no progress, so there is no \"Started\" to cancel after; add --deadline-ms N, or speak 2025-11-25 (--protocol-version 2025-11-25)"
        )),
        // The call's stream ends with the task's handle; its progress can only travel on the
        // stream of a tasks/result sent after it, and this client opens no GET stream. A
        // "Started" sent before that wait began has nowhere to go.
        Era::Handshake if over_http => Err(format!(
            "over Streamable HTTP in {version} a task's progress reaches this client only on the stream of its waiting tasks/result, and \"Started\" may be sent before that wait begins; add --deadline-ms N"
        )),
        Era::Handshake => Ok(()),
    }
}

/// Checks that a call of `work` will be a task the client can cancel with `tasks/cancel`:
/// 2025-11-25 asks for `capabilities.tasks.requests.tools.call`, `capabilities.tasks.cancel`
/// and `work` listed as `optional` or `required` (TSK-01); 2026-07-28 for the tasks
/// extension in `server/discover`'s capabilities.
async fn work_runs_as_task(client: &Client) -> Result<(), String> {
    let version = client.protocol_version();
    let refuse = |why: &str| {
        Err(format!(
            "{why}, so `work` cannot run as a task in {version}; run without --task"
        ))
    };
    if client.era() == Era::Stateless {
        let capabilities = client.server_capabilities();
        let extension = capabilities
            .get("extensions")
            .and_then(|e| e.get(TASKS_EXTENSION));
        return match extension {
            Some(declared) if declared.is_object() => Ok(()),
            _ => refuse(&format!(
                "the server declares no {TASKS_EXTENSION} extension (capabilities.extensions)"
            )),
        };
    }
    if !client.server_takes_tool_tasks() {
        return refuse("the server declares no task-augmented tools/call (capabilities.tasks.requests.tools.call; versions before 2025-11-25 have no tasks)");
    }
    if !client.server_takes_task_cancel() {
        return refuse("the server declares no tasks/cancel (capabilities.tasks.cancel)");
    }
    client
        .list_tools()
        .await
        .map_err(|e| format!("cannot list the server's tools: {e}"))?;
    match client.task_support("work") {
        Some(TaskSupport::Optional | TaskSupport::Required) => Ok(()),
        Some(TaskSupport::Forbidden) => {
            refuse("the server lists `work` without task support (execution.taskSupport)")
        }
        None => refuse("the server lists no `work` tool"),
    }
}
