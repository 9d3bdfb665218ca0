//! The engine's side of the task rules (`rules::tasks`) when the harness plays the client:
//! it gathers what an answer says about tasks into the ledger and applies the verdict on a
//! task's progress. The rules themselves are pure functions over those facts.

use super::ServerTarget;
use crate::engine::{Engine, Side};
use crate::facts::ledger::{key_in, SentRequest};
use crate::rules::tasks::{self, Learned};
use crate::transport::Transport;
use serde_json::Value;
use std::time::Duration;

impl<T: Transport> Engine<'_, T, ServerTarget> {
    /// Learns from the answer to one of the harness's requests (of the session whose ids the
    /// ledger scopes as `scope`) what it says about tasks.
    pub(crate) fn track_task(
        &mut self,
        request: &SentRequest,
        answer: &Value,
        at: Duration,
        scope: Option<&str>,
    ) {
        let sent = self.value(request.index);
        match tasks::learn(&request.method, &sent, answer) {
            Learned::Nothing => {}
            Learned::Created(task) => {
                let key = key_in(scope, &sent["id"]);
                self.ledger.task_created(task, key);
            }
            Learned::About {
                task,
                cancel_answered,
                terminal,
            } => {
                if cancel_answered {
                    let waited = self.waited();
                    self.ledger.task_cancel_answered(&task, at, waited);
                }
                if let Some(status) = terminal {
                    let waited = self.waited();
                    self.ledger.task_terminal(&task, at, status, waited);
                }
            }
        }
    }

    /// Whether progress for request `key` belongs to a task its answer created (2025-11-25),
    /// and so is judged here instead of as progress after a response (see
    /// [`tasks::progress_of_task`]).
    pub(crate) fn task_progress(&mut self, key: &str, at: Duration) -> bool {
        let core = self.protocol().is_some_and(|v| v.has_core_tasks());
        let Some(record) = self.ledger.task_of(key).cloned().filter(|_| core) else {
            return false;
        };
        if record.terminal.is_some() {
            let waits = self.waits();
            if let Some(p) = tasks::progress_of_task(key, at, &record, &waits) {
                self.rule(p.severity, p.requirement, p.message);
            }
        }
        true
    }
}

impl<T: Transport, S: Side> Engine<'_, T, S> {
    /// The rule a task's cancel answers to in this run's era (see [`tasks::cancel_rule`]).
    pub(crate) fn task_cancel_rule(&self) -> crate::requirement::Req {
        tasks::cancel_rule(self.protocol())
    }

    /// Whether request `key` created a task whose progress may come on any stream of the
    /// session (2025-11-25 over HTTP: the `tools/call`'s own stream ended with its answer).
    pub(crate) fn owns_task(&self, key: &str) -> bool {
        self.protocol().is_some_and(|v| v.has_core_tasks()) && self.ledger.task_of(key).is_some()
    }
}
