//! Tool calls run as tasks, in both eras, and cancelled the way tasks are.
//!
//! A task is a `tools/call` answered at once with a handle; the work goes on and the
//! client asks after it by task id. What makes tasks worth a module of their own is the
//! cancel: the `tools/call` was answered when the task was created, so a
//! `notifications/cancelled` for it means nothing (TSK-03, CAN-15) and a task is stopped
//! with `tasks/cancel`; cancelling a `tasks/result` wait only ends the wait (TSK-06).
//!
//! - 2025-11-25 (core tasks): a call may be a task only when the server declared
//!   `tasks.requests.tools.call` and listed the tool as `optional` or `required`, and
//!   must be one when `required` (TSK-01). The client asks with `params.task`.
//!   The client itself declares no `tasks` capability: that capability says what a party
//!   *receives* as tasks (sampling, elicitation) and whether it serves `tasks/list` and
//!   `tasks/cancel`, none of which this client does. Asking for tasks needs no
//!   declaration.
//! - 2026-07-28 (the `io.modelcontextprotocol/tasks` extension): the request declares the
//!   extension in its own `_meta` capabilities and the server decides whether to make a
//!   task; `tasks/get` carries the result once terminal; over HTTP `Mcp-Name` carries
//!   the task id.
//!
//! [`Client::call_tool_as_task`] is the whole call in one future; [`Client::start_tool_task`]
//! gives a [`TaskHandle`] to follow and cancel separately.

mod call;
mod create;
mod follow;
mod wire;

pub use create::Started;
pub use wire::{Task, TaskStatus};

use crate::client::ProgressRoute;
use crate::era::Era;
use crate::{CallError, Client, Progress, RequestOptions, ToolResult};
use follow::Stop;
use serde_json::Value;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

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

/// A task the server created for a call. Dropping the handle leaves the task alone (a
/// task outlives its request by design); [`cancel`](Self::cancel) stops it.
pub struct TaskHandle<'c> {
    client: &'c Client,
    era: Era,
    task: Task,
    /// Progress on the creating call's token, which stays valid while the task works.
    progress: mpsc::UnboundedReceiver<Progress>,
    _route: ProgressRoute<'c>,
    grace: Duration,
}

impl std::fmt::Debug for TaskHandle<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskHandle")
            .field("era", &self.era)
            .field("task", &self.task)
            .finish_non_exhaustive()
    }
}

impl TaskHandle<'_> {
    /// The task's id.
    pub fn id(&self) -> &str {
        &self.task.id
    }

    /// The task as the server last described it.
    pub fn task(&self) -> &Task {
        &self.task
    }

    /// Asks the server how the task is (`tasks/get`).
    pub async fn get(&mut self) -> Result<&Task, CallError> {
        let answer = self.ask("tasks/get").await?;
        self.task = wire::task(&answer, self.era)?;
        Ok(&self.task)
    }

    /// Asks the server to cancel the task (`tasks/cancel`) and returns its answer: in
    /// 2025-11-25 the task, `cancelled` (or `-32602` for a task that had already ended);
    /// in 2026-07-28 an acknowledgement only, after which the task may still be working or
    /// end otherwise ([`get`](Self::get) tells).
    pub async fn cancel(&mut self) -> Result<&Task, CallError> {
        let answer = self.ask("tasks/cancel").await?;
        match self.era {
            Era::Handshake => self.task = wire::task(&answer, self.era)?,
            Era::Stateless => wire::ack(&answer)?,
        }
        Ok(&self.task)
    }

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
        follow::follow(self, &terms, &mut progress, stop).await
    }

    /// One `tasks/*` request about this task, never cancelled on the wire: a question
    /// about a task is not the task.
    async fn ask(&self, method: &str) -> Result<Value, CallError> {
        let timeout = self.client.options.request_timeout;
        let mut call =
            self.client
                .task_call(method, &self.task.id, crate::pending::OnDrop::Forget)?;
        match tokio::time::timeout(timeout, call.reply()).await {
            Ok(answer) => answer,
            Err(_) => Err(CallError::TimedOut(timeout)),
        }
    }
}

/// Why a call is being stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Why {
    Cancel,
    Timeout,
}

/// A call's fixed terms: its cancel, its deadline and the grace after either.
pub(crate) struct Terms {
    cancel: CancellationToken,
    deadline: Instant,
    timeout: Duration,
    grace: Duration,
}

impl Terms {
    fn new(
        client: &Client,
        cancel: Option<CancellationToken>,
        timeout: Option<Duration>,
        grace: Duration,
    ) -> Self {
        let timeout = timeout.unwrap_or(client.options.request_timeout);
        Self {
            cancel: cancel.unwrap_or_default(),
            deadline: Instant::now() + timeout,
            timeout,
            grace,
        }
    }

    /// The call's outcome when it was stopped for `why`.
    /// Whether the call was given up on already (cancelled, or past its deadline).
    fn stopped(&self) -> bool {
        self.cancel.is_cancelled() || Instant::now() >= self.deadline
    }

    /// What is left of the call's time.
    fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    fn error(&self, why: Why) -> CallError {
        match why {
            Why::Cancel => CallError::Cancelled,
            Why::Timeout => CallError::TimedOut(self.timeout),
        }
    }

    /// Why, in words, for a `notifications/cancelled`.
    fn reason(&self, why: Why) -> String {
        match why {
            Why::Cancel => "cancelled by the caller".into(),
            Why::Timeout => format!("timed out after {} ms", self.timeout.as_millis()),
        }
    }
}

/// Sleeps until `at`, or forever without one.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
