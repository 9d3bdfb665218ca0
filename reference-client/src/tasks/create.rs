//! Sending the `tools/call` that creates a task, and waiting for its handle.
//!
//! Until the `CreateTaskResult` arrives there is no task id, so a cancel cannot be a
//! `tasks/cancel` yet, and a `notifications/cancelled` for a request that is about to
//! become a task is exactly what the specification forbids for tasks (TSK-03, CAN-15).
//! So a cancel (or the deadline) that comes first waits for the handle, which a server
//! sends as soon as it accepted the task, and the follower then cancels the task. Only a
//! call that brings no answer within the cancel grace is cancelled as a plain request:
//! without a task id, that is all there is.

use super::handle::TaskHandle;
use super::terms::{sleep_until, Terms, Why};
use super::wire::{self, Created};
use crate::client::set_meta;
use crate::pending::{OnDrop, Pending};
use crate::shared::ProgressRoute;
use crate::{CallError, Client, Progress, ProgressFn, TaskOptions, ToolResult};
use reference_wire::RequestId;
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Numbers the progress tokens of task calls, which outlive their request and so cannot
/// borrow its id.
static TOKENS: AtomicU64 = AtomicU64::new(0);

/// What starting a call as a task gave.
#[derive(Debug)]
pub enum Started<'c> {
    /// The server made a task of it; follow it with the handle.
    Task(Box<TaskHandle<'c>>),
    /// The call ran as a plain call and this is its result: the tool may not run as a
    /// task here, or (2026-07-28) the server chose to answer directly.
    Done(ToolResult),
}

/// Sends the task-augmented `tools/call` and waits for the task's handle (or the plain
/// result). Progress on the call's token goes to `progress` until then, and to the handle
/// after. A server that forgot the session (HTTP 404) gets the call once more in a new one.
pub(crate) async fn create<'c>(
    client: &'c Client,
    name: &str,
    arguments: Value,
    options: &TaskOptions,
    terms: &Terms,
    progress: &mut Option<ProgressFn<'_>>,
) -> Result<Started<'c>, CallError> {
    let era = client.era();
    let mut params = wire::call_params(name, arguments, era, options.ttl);
    let (tx, mut rx) = mpsc::unbounded_channel();
    // The token stays valid for the task's whole life (PRG-10), so the route lives in the
    // handle, not in the request.
    let token = progress.is_some().then(|| {
        let token = RequestId::Str(format!(
            "task-progress-{}",
            TOKENS.fetch_add(1, Ordering::Relaxed)
        ));
        set_meta(&mut params, "progressToken", token.to_value());
        client.shared.lock().progress.insert(token.clone(), tx);
        token
    });
    let route = ProgressRoute {
        shared: &client.shared,
        token,
    };
    let generation = *client.shared.handshakes.lock().await;
    let mut renewed = false;
    let answer = loop {
        let mut sent = params.clone();
        client.stamp_tasks(&mut sent);
        let mut call = client.begin("tools/call", sent, OnDrop::Cancel)?;
        match wait_for_handle(&mut call, &mut rx, progress, terms).await {
            Err(CallError::SessionExpired) if !renewed => {
                renewed = true;
                client.renew(generation).await?;
            }
            answer => break answer?,
        }
    };
    match wire::created(&answer, era)? {
        Created::Task(task) => Ok(Started::Task(Box::new(TaskHandle {
            client,
            era,
            task,
            progress: rx,
            _route: route,
            grace: options.cancel_grace,
        }))),
        Created::Done(result) => {
            while let Ok(update) = rx.try_recv() {
                deliver(progress, &update);
            }
            Ok(Started::Done(ToolResult::from_result(&result)?))
        }
    }
}

/// Waits for the answer to the creating call, passing progress on; a cancel or the
/// deadline starts the grace within which the answer is still awaited (see the module).
async fn wait_for_handle(
    call: &mut Pending<'_>,
    progress_rx: &mut mpsc::UnboundedReceiver<Progress>,
    progress: &mut Option<ProgressFn<'_>>,
    terms: &Terms,
) -> Result<Value, CallError> {
    let mut why = None;
    let mut grace_end = None;
    loop {
        tokio::select! {
            biased;
            answer = call.reply() => return answer,
            Some(update) = progress_rx.recv() => deliver(progress, &update),
            () = terms.cancel.cancelled(), if why.is_none() => {
                why = Some(Why::Cancel);
                grace_end = Some(Instant::now() + terms.grace);
            }
            () = tokio::time::sleep_until(terms.deadline), if why.is_none() => {
                why = Some(Why::Timeout);
                grace_end = Some(Instant::now() + terms.grace);
            }
            () = sleep_until(grace_end) => {
                let why = why.unwrap_or(Why::Cancel);
                let reason = format!(
                    "{}; no task handle came within {} ms",
                    terms.reason(why),
                    terms.grace.as_millis()
                );
                if call.cancel(&reason) {
                    return Err(terms.error(why));
                }
                // The answer was read meanwhile: the next turn delivers it.
            }
        }
    }
}

/// Hands one progress update to the caller's callback, if there is one.
pub(crate) fn deliver(progress: &mut Option<ProgressFn<'_>>, update: &Progress) {
    if let Some(callback) = progress.as_mut() {
        callback(update);
    }
}
