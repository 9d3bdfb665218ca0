//! The handle of a task the server created: what the task is, and the questions a caller
//! may ask about it (`tasks/get`, `tasks/cancel`). Following it to its result is
//! `follow.rs`, which builds on this.

use super::wire::{self, Task};
use crate::era::Era;
use crate::pending::OnDrop;
use crate::shared::ProgressRoute;
use crate::{CallError, Client, Progress};
use serde_json::Value;
use std::time::Duration;
use tokio::sync::mpsc;

/// A task the server created for a call. Dropping the handle leaves the task alone (a
/// task outlives its request by design); [`cancel`](Self::cancel) stops it.
pub struct TaskHandle<'c> {
    pub(super) client: &'c Client,
    pub(super) era: Era,
    pub(super) task: Task,
    /// Progress on the creating call's token, which stays valid while the task works.
    pub(super) progress: mpsc::UnboundedReceiver<Progress>,
    pub(super) _route: ProgressRoute<'c>,
    pub(super) grace: Duration,
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

    /// One `tasks/*` request about this task, never cancelled on the wire: a question
    /// about a task is not the task.
    async fn ask(&self, method: &str) -> Result<Value, CallError> {
        let timeout = self.client.options.request_timeout;
        let mut call = self
            .client
            .task_call(method, &self.task.id, OnDrop::Forget)?;
        match tokio::time::timeout(timeout, call.reply()).await {
            Ok(answer) => answer,
            Err(_) => Err(CallError::TimedOut(timeout)),
        }
    }
}
