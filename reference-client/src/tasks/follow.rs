//! Following a task to its end, and stopping it the right way for its era.
//!
//! 2025-11-25: one blocking `tasks/result` waits for the end (so the transcript does not
//! depend on timing, and over HTTP its stream carries the task's progress); polling
//! `tasks/get` at the server's `pollInterval` takes over only if that wait breaks. A
//! cancel is `tasks/cancel`, never `notifications/cancelled` for the `tools/call`, which
//! was answered long ago (TSK-03, CAN-15); the wait is then left to be answered, since a
//! cancelled task is terminal, and only cancelled on the wire if no answer comes within
//! the grace (TSK-06: that ends the wait, not the task).
//!
//! 2026-07-28: `tasks/get` at `pollIntervalMs`, the result inlined once terminal. A
//! cancel is `tasks/cancel`, an empty ack; cancellation is cooperative and eventually
//! consistent, so the client polls on until the task is terminal (within the grace) and
//! takes whatever terminal status it reaches: a task that completed before the cancel
//! took effect gives its result.
//!
//! With [`Stop::EndWait`] a cancel or the deadline only stops the waiting: the task works
//! on.

use super::create::deliver;
use super::handle::TaskHandle;
use super::terms::{sleep_until, Terms, Why};
use super::wire::{self, Task, TaskStatus};
use crate::era::Era;
use crate::log::warn;
use crate::pending::{OnDrop, Pending};
use crate::{CallError, Client, ProgressFn, RequestOptions, ToolResult};
use reference_wire::INVALID_PARAMS;
use serde_json::Value;
use std::time::Duration;
use tokio::time::Instant;

/// How often to poll a task whose server suggested no interval.
const DEFAULT_POLL: Duration = Duration::from_secs(1);
/// The shortest poll interval this client keeps to, whatever a server suggests: a
/// `pollInterval` of 0 must not make it poll in a tight loop.
const MIN_POLL: Duration = Duration::from_millis(20);

/// What a cancel or the deadline does to a task being followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// Cancel the task (`tasks/cancel`).
    CancelTask,
    /// Stop waiting for it; the task works on.
    EndWait,
}

/// What the follower is doing, besides waiting on progress and timers.
struct State<'c> {
    /// 2025-11-25: the blocking `tasks/result` in flight.
    waiter: Option<Pending<'c>>,
    /// A `tasks/get` in flight.
    poll: Option<Pending<'c>>,
    /// When to send the next `tasks/get`, when polling.
    next_poll: Option<Instant>,
    /// The `tasks/cancel` in flight.
    cancelling: Option<Pending<'c>>,
    /// Why the follower is stopping, once it is.
    why: Option<Why>,
    /// Until when a stopping follower still waits to learn how the task ended.
    grace_end: Option<Instant>,
    /// The server said the task is cancelled.
    cancelled: bool,
    /// A `tasks/result` error kept until the cancel's answer says whether it is the
    /// task's outcome or the cancel's consequence.
    held: Option<CallError>,
}

/// Waiting on a task through its handle.
impl TaskHandle<'_> {
    /// Waits for the task's result. `options.cancel` and `options.timeout` end only the
    /// wait (a `notifications/cancelled` for the `tasks/result` in 2025-11-25, no more
    /// polls in 2026-07-28), never the task (TSK-06); the handle can wait again.
    pub async fn result(&mut self, options: RequestOptions<'_>) -> Result<ToolResult, CallError> {
        self.run(options, Stop::EndWait).await
    }

    /// Waits for the task's result; `options.cancel` and `options.timeout` cancel the task
    /// with `tasks/cancel`. If the task finished before the cancel took effect, its result
    /// is the outcome.
    pub async fn follow(&mut self, options: RequestOptions<'_>) -> Result<ToolResult, CallError> {
        self.run(options, Stop::CancelTask).await
    }

    async fn run(
        &mut self,
        options: RequestOptions<'_>,
        stop: Stop,
    ) -> Result<ToolResult, CallError> {
        let RequestOptions {
            mut progress,
            cancel,
            timeout,
        } = options;
        let terms = Terms::new(self.client, cancel, timeout, self.grace);
        follow(self, &terms, &mut progress, stop).await
    }
}

/// Follows `handle`'s task until it is terminal, until `terms` stop it (as `stop` says),
/// or until the grace after that runs out.
pub(crate) async fn follow(
    handle: &mut TaskHandle<'_>,
    terms: &Terms,
    progress: &mut Option<ProgressFn<'_>>,
    stop: Stop,
) -> Result<ToolResult, CallError> {
    let client = handle.client;
    let era = handle.era;
    let mut state = State {
        waiter: None,
        poll: None,
        next_poll: None,
        cancelling: None,
        why: None,
        grace_end: None,
        cancelled: false,
        held: None,
    };
    match era {
        Era::Handshake => {
            state.waiter =
                Some(client.task_call("tasks/result", &handle.task.id, OnDrop::Cancel)?)
        }
        Era::Stateless if handle.task.status.is_terminal() => {
            state.next_poll = Some(Instant::now())
        }
        Era::Stateless => state.next_poll = Some(Instant::now() + interval(&handle.task)),
    }
    loop {
        tokio::select! {
            biased;
            answer = reply(&mut state.waiter) => {
                state.waiter = None;
                if let Some(outcome) = state.on_result(answer, terms, &handle.task) {
                    return outcome;
                }
            }
            answer = reply(&mut state.cancelling) => {
                state.cancelling = None;
                if let Some(outcome) = state.on_cancel(answer, terms, era, handle) {
                    return outcome;
                }
            }
            answer = reply(&mut state.poll) => {
                state.poll = None;
                if let Some(outcome) = state.on_poll(answer, terms, handle)? {
                    return outcome;
                }
            }
            Some(update) = handle.progress.recv() => deliver(progress, &update),
            () = terms.cancel.cancelled(), if state.why.is_none() => {
                if let Some(outcome) = state.stop(Why::Cancel, stop, terms, handle) {
                    return outcome;
                }
            }
            () = tokio::time::sleep_until(terms.deadline), if state.why.is_none() => {
                if let Some(outcome) = state.stop(Why::Timeout, stop, terms, handle) {
                    return outcome;
                }
            }
            () = sleep_until(state.next_poll), if state.poll.is_none() => {
                state.next_poll = None;
                state.poll = Some(client.task_call("tasks/get", &handle.task.id, OnDrop::Forget)?);
            }
            () = sleep_until(state.grace_end) => return state.give_up(terms),
        }
    }
}

impl<'c> State<'c> {
    /// A cancel or the deadline: end the wait, or ask the server to cancel the task.
    fn stop(
        &mut self,
        why: Why,
        stop: Stop,
        terms: &Terms,
        handle: &TaskHandle<'c>,
    ) -> Option<Result<ToolResult, CallError>> {
        self.why = Some(why);
        if stop == Stop::EndWait {
            // Dropping the waiter cancels the `tasks/result` wait on the wire (TSK-06).
            self.end_wait(terms, why);
            return Some(Err(terms.error(why)));
        }
        let client = handle.client;
        if handle.era == Era::Handshake && !client.server_takes_task_cancel() {
            warn(&format!(
                "the server did not declare tasks/cancel, so task {} was not cancelled; the client stopped waiting for it",
                handle.task.id
            ));
            self.end_wait(terms, why);
            return Some(Err(terms.error(why)));
        }
        match client.task_call("tasks/cancel", &handle.task.id, OnDrop::Forget) {
            Ok(cancel) => self.cancelling = Some(cancel),
            Err(e) => return Some(Err(e)),
        }
        self.grace_end = Some(Instant::now() + terms.grace);
        None
    }

    /// The answer to `tasks/result` (2025-11-25).
    fn on_result(
        &mut self,
        answer: Result<Value, CallError>,
        terms: &Terms,
        task: &Task,
    ) -> Option<Result<ToolResult, CallError>> {
        if self.cancelled {
            return Some(Err(terms.error(self.why.unwrap_or(Why::Cancel))));
        }
        match answer {
            // The task ended before any cancel took effect: the call's outcome is its result.
            Ok(result) => Some(ToolResult::from_result(&result)),
            // Whether this error is the task's or the cancel's, the cancel's answer tells.
            Err(error @ CallError::Rpc(_)) if self.cancelling.is_some() => {
                self.held = Some(error);
                None
            }
            Err(CallError::Transport(why)) => {
                // The wait broke (a server may end a stream without the answer): poll.
                warn(&format!(
                    "waiting for the result of task {} failed ({why}); polling tasks/get instead",
                    task.id
                ));
                self.next_poll = Some(Instant::now() + interval(task));
                None
            }
            Err(error) => Some(Err(error)),
        }
    }

    /// The answer to `tasks/cancel`.
    fn on_cancel(
        &mut self,
        answer: Result<Value, CallError>,
        terms: &Terms,
        era: Era,
        handle: &mut TaskHandle<'c>,
    ) -> Option<Result<ToolResult, CallError>> {
        let why = self.why.unwrap_or(Why::Cancel);
        match (era, answer) {
            (Era::Handshake, Ok(answer)) => match wire::task(&answer, era) {
                Ok(task) => {
                    self.cancelled = task.status == TaskStatus::Cancelled;
                    handle.task = task;
                }
                Err(e) => warn(&format!("the answer to tasks/cancel: {e}")),
            },
            (Era::Stateless, Ok(answer)) => {
                if let Err(e) = wire::ack(&answer) {
                    warn(&format!("the answer to tasks/cancel: {e}"));
                }
                // The caller's time is up, or the next poll would come after the grace:
                // the ack is all there is to wait for.
                let late = match (self.next_poll, self.grace_end) {
                    (Some(next), Some(end)) => next > end,
                    _ => false,
                };
                if why == Why::Timeout || late {
                    return Some(Err(terms.error(why)));
                }
            }
            // -32602: the task is terminal already (or gone); its result, or the wait's
            // error, is the outcome.
            (_, Err(CallError::Rpc(error))) if error.code == INVALID_PARAMS => {
                if era == Era::Stateless {
                    return Some(Err(terms.error(why)));
                }
            }
            (_, Err(error)) => {
                warn(&format!(
                    "task {} was not cancelled: {error}; it may work on",
                    handle.task.id
                ));
                self.end_wait(terms, why);
                return Some(Err(self.held.take().unwrap_or(terms.error(why))));
            }
        }
        match (self.cancelled, self.held.take()) {
            // The wait's error was the cancel's consequence.
            (true, Some(_)) => Some(Err(terms.error(why))),
            // The task had ended with that error before the cancel.
            (false, Some(held)) => Some(Err(held)),
            // Nothing left to learn how the task ended from.
            _ if self.waiter.is_none() && self.poll.is_none() && self.next_poll.is_none() => {
                Some(Err(terms.error(why)))
            }
            _ => None,
        }
    }

    /// The answer to `tasks/get`.
    fn on_poll(
        &mut self,
        answer: Result<Value, CallError>,
        terms: &Terms,
        handle: &mut TaskHandle<'c>,
    ) -> Result<Option<Result<ToolResult, CallError>>, CallError> {
        let era = handle.era;
        let task = match answer.and_then(|answer| wire::task(&answer, era)) {
            Ok(task) => task,
            // A task deleted after a cancel is allowed; it was cancelled.
            Err(CallError::Rpc(error)) if error.code == INVALID_PARAMS && self.why.is_some() => {
                return Ok(Some(Err(terms.error(self.why.unwrap_or(Why::Cancel)))))
            }
            Err(error) => return Ok(Some(Err(error))),
        };
        let status = task.status;
        handle.task = task;
        let task = &handle.task;
        match (era, status) {
            (_, TaskStatus::Cancelled) => Ok(Some(Err(match self.why {
                Some(why) => terms.error(why),
                None => CallError::TaskEnded(format!(
                    "task {} was cancelled by the server, not by this client{}",
                    task.id,
                    said(task)
                )),
            }))),
            (Era::Stateless, TaskStatus::Completed) => Ok(Some(match &task.result {
                Some(result) => ToolResult::from_result(result),
                None => Err(CallError::InvalidResult(format!(
                    "task {} is completed but carries no result",
                    task.id
                ))),
            })),
            (Era::Stateless, TaskStatus::Failed) => Ok(Some(Err(match &task.error {
                Some(error) => CallError::Rpc(error.clone()),
                None => CallError::InvalidResult(format!(
                    "task {} failed but carries no error{}",
                    task.id,
                    said(task)
                )),
            }))),
            (Era::Stateless, TaskStatus::InputRequired) => {
                // This client declares no capability a server could ask input of.
                let _ = handle
                    .client
                    .task_call("tasks/cancel", &task.id, OnDrop::Forget);
                Ok(Some(Err(CallError::TaskEnded(format!(
                    "task {} asks for input (inputRequests), which this client cannot give; it was cancelled",
                    task.id
                )))))
            }
            // 2025-11-25: terminal or waiting for input, `tasks/result` is the next step.
            (
                Era::Handshake,
                TaskStatus::Completed | TaskStatus::Failed | TaskStatus::InputRequired,
            ) => {
                self.waiter = Some(handle.client.task_call(
                    "tasks/result",
                    &task.id,
                    OnDrop::Cancel,
                )?);
                Ok(None)
            }
            (_, TaskStatus::Working) => {
                self.next_poll = Some(Instant::now() + interval(task));
                Ok(None)
            }
        }
    }

    /// The grace after a stop ran out: stop waiting and say why.
    fn give_up(&mut self, terms: &Terms) -> Result<ToolResult, CallError> {
        let why = self.why.unwrap_or(Why::Cancel);
        self.end_wait(terms, why);
        Err(self.held.take().unwrap_or(terms.error(why)))
    }

    /// Ends a `tasks/result` wait on the wire (TSK-06) and stops polling.
    fn end_wait(&mut self, terms: &Terms, why: Why) {
        if let Some(mut waiter) = self.waiter.take() {
            waiter.cancel(&terms.reason(why));
        }
        self.poll = None;
        self.next_poll = None;
        self.cancelling = None;
    }
}

/// The answer of an optional request in flight; never, when there is none.
async fn reply(pending: &mut Option<Pending<'_>>) -> Result<Value, CallError> {
    match pending {
        Some(pending) => pending.reply().await,
        None => std::future::pending().await,
    }
}

/// How long to wait before asking about `task` again: what the server suggested.
fn interval(task: &Task) -> Duration {
    task.poll_interval.unwrap_or(DEFAULT_POLL).max(MIN_POLL)
}

/// The task's status message, as a clause.
fn said(task: &Task) -> String {
    task.status_message
        .as_deref()
        .map(|m| format!(" (\"{m}\")"))
        .unwrap_or_default()
}

impl Client {
    /// Sends `method` for task `id`, stamped as the era asks (the extension declared in
    /// 2026-07-28).
    pub(crate) fn task_call(
        &self,
        method: &str,
        id: &str,
        on_drop: OnDrop,
    ) -> Result<Pending<'_>, CallError> {
        let mut params = wire::task_params(id);
        self.stamp_tasks(&mut params);
        self.begin(method, params, on_drop)
    }
}
