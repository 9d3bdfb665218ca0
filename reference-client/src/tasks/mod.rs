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

mod create;
mod follow;
mod wire;

pub use create::Started;
pub use wire::{Task, TaskStatus};

use crate::client::ProgressRoute;
use crate::era::{self, Era, TASKS_EXTENSION};
use crate::{CallError, Client, Progress, RequestOptions, TaskSupport, ToolResult};
use follow::Stop;
use serde_json::{json, Value};
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

impl Client {
    /// Calls a tool as a task where the server lets it run as one, follows it to its end
    /// and returns its result, like [`call_tool`](Self::call_tool). Progress on the call's
    /// token is delivered for the task's whole life (PRG-10).
    ///
    /// `options.cancel` and `options.timeout` (which covers the whole call) cancel the
    /// task the right way for its era (`tasks/cancel`; see the module). A tool that may
    /// not be a task here (an older version, no `tasks.requests.tools.call`, a tool listed
    /// as `forbidden` or not at all) runs as a plain call and is cancelled as one. In
    /// 2025-11-25 the first such call lists the tools ([`list_tools`](Self::list_tools)).
    pub async fn call_tool_as_task(
        &self,
        name: &str,
        arguments: Value,
        options: RequestOptions<'_>,
        task: TaskOptions,
    ) -> Result<ToolResult, CallError> {
        let RequestOptions {
            mut progress,
            cancel,
            timeout,
        } = options;
        let terms = Terms::new(self, cancel, timeout, task.cancel_grace);
        if !self.may_run_as_task(name, &terms).await? {
            let options = RequestOptions {
                progress,
                cancel: Some(terms.cancel),
                timeout: Some(terms.deadline.saturating_duration_since(Instant::now())),
            };
            let params = json!({"name": name, "arguments": arguments});
            let result = self.request("tools/call", params, options).await?;
            return ToolResult::from_result(&result);
        }
        match create::create(self, name, arguments, &task, &terms, &mut progress).await? {
            Started::Done(result) => Ok(result),
            Started::Task(mut handle) => {
                follow::follow(&mut handle, &terms, &mut progress, Stop::CancelTask).await
            }
        }
    }

    /// Starts a call as a task and returns its handle as soon as the server created it,
    /// or the result when the call ran as a plain one (see
    /// [`call_tool_as_task`](Self::call_tool_as_task) for when that is). Waiting for the
    /// handle is bounded by the connection's `request_timeout`.
    pub async fn start_tool_task(
        &self,
        name: &str,
        arguments: Value,
        task: TaskOptions,
    ) -> Result<Started<'_>, CallError> {
        let terms = Terms::new(self, None, None, task.cancel_grace);
        if !self.may_run_as_task(name, &terms).await? {
            let params = json!({"name": name, "arguments": arguments});
            let result = self
                .request("tools/call", params, RequestOptions::default())
                .await?;
            return Ok(Started::Done(ToolResult::from_result(&result)?));
        }
        create::create(self, name, arguments, &task, &terms, &mut None).await
    }

    /// Whether a call of `tool` may be a task in this session (TSK-01), listing the tools
    /// first when that is what decides.
    async fn may_run_as_task(&self, tool: &str, terms: &Terms) -> Result<bool, CallError> {
        if era::has_tasks_extension(&self.protocol_version()) {
            return Ok(true);
        }
        if !self.server_takes_tool_tasks() {
            return Ok(false);
        }
        if !self.tools_listed() {
            tokio::select! {
                listed = self.list_tools() => { listed?; }
                () = terms.cancel.cancelled() => return Err(CallError::Cancelled),
                () = tokio::time::sleep_until(terms.deadline) => return Err(CallError::TimedOut(terms.timeout)),
            }
        }
        Ok(matches!(
            self.task_support(tool),
            Some(TaskSupport::Optional | TaskSupport::Required)
        ))
    }

    /// Stamps a request about tasks as the era asks: in 2026-07-28 with the tasks
    /// extension declared in its capabilities, for this request only.
    pub(crate) fn stamp_tasks(&self, params: &mut Value) {
        let version = self.protocol_version();
        if era::is_stateless(&version) {
            let capabilities = json!({"extensions": {TASKS_EXTENSION: {}}});
            era::stamp_with(params, &version, crate::client::client_info(), capabilities);
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
