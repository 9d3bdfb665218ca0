//! The calls a caller makes: a whole call run as a task, or one started as a task whose
//! handle the caller follows. Both first decide whether the call may be a task at all
//! (TSK-01), and make a plain call when it may not.

use super::create::{self, Started};
use super::follow::{self, Stop};
use super::terms::Terms;
use crate::era::{self, TASKS_EXTENSION};
use crate::{CallError, Client, ProgressFn, RequestOptions, TaskOptions, TaskSupport, ToolResult};
use serde_json::{json, Value};

impl Client {
    /// Calls a tool as a task where the server lets it run as one, follows it to its end
    /// and returns its result, like [`call_tool`](Self::call_tool). Progress on the call's
    /// token is delivered for the task's whole life (PRG-10).
    ///
    /// `options.cancel` and `options.timeout` (which covers the whole call) cancel the
    /// task the right way for its era: `tasks/cancel`, never `notifications/cancelled` for
    /// the call (see the module). A tool that may not be a task here (a version without
    /// tasks, no `tasks.requests.tools.call`, a tool listed as `forbidden` or not at all)
    /// runs as a plain call and is cancelled as one. In 2025-11-25 the first such call
    /// lists the tools ([`list_tools`](Self::list_tools)).
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
        match self
            .start(name, arguments, &task, &terms, &mut progress)
            .await?
        {
            Started::Done(result) => Ok(result),
            Started::Task(mut handle) => {
                follow::follow(&mut handle, &terms, &mut progress, Stop::CancelTask).await
            }
        }
    }

    /// Starts a call as a task and returns its handle as soon as the server created it,
    /// or the result when the call ran as a plain one (see
    /// [`call_tool_as_task`](Self::call_tool_as_task) for when that is).
    ///
    /// `options` are for the start only. A progress callback asks for progress (its
    /// presence attaches the progress token) and gets what arrives before the handle;
    /// what arrives after waits in the handle for the callback given to
    /// [`TaskHandle::follow`](crate::TaskHandle::follow) or
    /// [`result`](crate::TaskHandle::result). A cancel or deadline gives up on the call
    /// before its handle came, which cancels the task once it does.
    pub async fn start_tool_task(
        &self,
        name: &str,
        arguments: Value,
        options: RequestOptions<'_>,
        task: TaskOptions,
    ) -> Result<Started<'_>, CallError> {
        let RequestOptions {
            mut progress,
            cancel,
            timeout,
        } = options;
        let terms = Terms::new(self, cancel, timeout, task.cancel_grace);
        match self
            .start(name, arguments, &task, &terms, &mut progress)
            .await?
        {
            // Given up on before the handle came: the task is not wanted.
            Started::Task(mut handle) if terms.stopped() => {
                follow::follow(&mut handle, &terms, &mut progress, Stop::CancelTask)
                    .await
                    .map(Started::Done)
            }
            started => Ok(started),
        }
    }

    /// Makes the call: as a task where it may be one, else as a plain call.
    async fn start(
        &self,
        name: &str,
        arguments: Value,
        task: &TaskOptions,
        terms: &Terms,
        progress: &mut Option<ProgressFn<'_>>,
    ) -> Result<Started<'_>, CallError> {
        if self.may_run_as_task(name, terms).await? {
            return create::create(self, name, arguments, task, terms, progress).await;
        }
        let options = RequestOptions {
            progress: match progress {
                Some(callback) => Some(&mut **callback as ProgressFn<'_>),
                None => None,
            },
            cancel: Some(terms.cancel.clone()),
            timeout: Some(terms.remaining()),
        };
        let params = json!({"name": name, "arguments": arguments});
        let result = self.request("tools/call", params, options).await?;
        Ok(Started::Done(ToolResult::from_result(&result)?))
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
