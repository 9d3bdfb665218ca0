//! Tasks as the standing rules see them: a `tools/call` answered with a `CreateTaskResult` is
//! complete, but in 2025-11-25 its progress token lives on with the task it created and
//! must fall silent once the task is terminal (PRG-10).
//!
//! The ledger learns a task from the answer that created it (`result.task.taskId` in
//! 2025-11-25, `resultType: "task"` in the 2026-07-28 extension) and learns that it is
//! terminal from any later answer that says so: `tasks/cancel` or `tasks/get` with a terminal
//! status, or a `tasks/result` result. Progress for the task's token is then judged against
//! that moment: within the grace a message may take to cross the answer, a note; later, a
//! failure. In 2026-07-28 tasks have no progress (PRG-11), so the token ends with the
//! `tools/call`'s answer as any other (PRG-07).

use crate::engine::ledger::{SentRequest, TaskRecord};
use crate::engine::server::ServerTarget;
use crate::engine::{Engine, Side};
use crate::outcome::Severity;
use crate::requirement::Req;
use crate::transport::Transport;
use serde_json::Value;
use std::time::Duration;

/// The statuses a task never leaves.
pub const TERMINAL: [&str; 3] = ["completed", "failed", "cancelled"];

/// The task id a `tools/call` answer created, if it is a `CreateTaskResult` of either era.
pub fn created_task(answer: &Value) -> Option<String> {
    let result = answer.get("result")?;
    let core = result.pointer("/task/taskId");
    let extension = (result.get("resultType").and_then(Value::as_str) == Some("task"))
        .then(|| result.get("taskId"))
        .flatten();
    core.or(extension)
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// The terminal status an answer to a `tasks/*` request shows for its task, if it shows one.
fn terminal_status(method: &str, answer: &Value) -> Option<String> {
    let result = answer.get("result")?;
    match method {
        "tasks/get" | "tasks/cancel" => result
            .get("status")
            .and_then(Value::as_str)
            .filter(|s| TERMINAL.contains(s))
            .map(str::to_string),
        // Only a terminal task has a result to give.
        "tasks/result" => Some("terminal".into()),
        _ => None,
    }
}

impl<T: Transport> Engine<'_, T, ServerTarget> {
    /// Learns from the answer to one of the harness's requests what it says about tasks.
    pub(crate) fn track_task(&mut self, request: &SentRequest, answer: &Value, at: Duration) {
        let sent = self.value(request.index);
        if request.method == "tools/call" {
            if let Some(task) = created_task(answer) {
                let key = self.ledger.key(&sent["id"]);
                self.ledger.tasks.entry(task).or_insert(TaskRecord {
                    request: key,
                    terminal: None,
                    cancel_answered: None,
                });
            }
            return;
        }
        let Some(task) = sent.pointer("/params/taskId").and_then(Value::as_str) else {
            return;
        };
        if request.method == "tasks/cancel" && answer.get("result").is_some() {
            let waited = self.waited();
            if let Some(record) = self.ledger.tasks.get_mut(task) {
                record.cancel_answered.get_or_insert((at, waited));
            }
        }
        let Some(status) = terminal_status(&request.method, answer) else {
            return;
        };
        let waited = self.waited();
        if let Some(record) = self.ledger.tasks.get_mut(task) {
            record.terminal.get_or_insert((at, status, waited));
        }
    }

    /// Whether progress for request `key` belongs to a task its answer created (2025-11-25),
    /// and so is judged here instead of as progress after a response: allowed while the task
    /// works, a failure once an answer showed it terminal and a grace has passed.
    pub(crate) fn task_progress(&mut self, key: &str, at: Duration) -> bool {
        let core = self.protocol().is_some_and(|v| v.has_core_tasks());
        let Some(record) = self.ledger.task_of(key).cloned().filter(|_| core) else {
            return false;
        };
        let Some((terminal, status, waited)) = record.terminal else {
            return true;
        };
        let grace = self.grace_after(waited);
        let after = at.saturating_sub(terminal);
        if at <= terminal {
            return true;
        }
        let (severity, message) = if after <= grace {
            (
                Severity::Note,
                format!(
                    "progress for the task of request {key} came {} ms after an answer showed it {status}, within the {} ms a message may take to cross that answer",
                    after.as_millis(),
                    grace.as_millis()
                ),
            )
        } else {
            (
                Severity::Fail,
                format!(
                    "progress for the task of request {key} came {} ms after an answer showed the task {status}; a task's progress must stop when it reaches a terminal status",
                    after.as_millis()
                ),
            )
        };
        self.rule(severity, Req::Prg10, message);
        true
    }
}

impl<T: Transport, S: Side> Engine<'_, T, S> {
    /// The task a witness id names, if it names one of the case's tasks.
    pub(crate) fn task_named(&self, id: &Value) -> Option<&TaskRecord> {
        id.as_str().and_then(|id| self.ledger.tasks.get(id))
    }

    /// The rule a task's cancel answers to in this run's era: TSK-04 (2025-11-25), TSK-05
    /// (the 2026-07-28 extension).
    pub(crate) fn task_cancel_rule(&self) -> Req {
        if self.protocol().is_some_and(|v| v.has_core_tasks()) {
            Req::Tsk04
        } else {
            Req::Tsk05
        }
    }

    /// Whether request `key` created a task whose progress may come on any stream of the
    /// session (2025-11-25 over HTTP: the `tools/call`'s own stream ended with its answer).
    pub(crate) fn owns_task(&self, key: &str) -> bool {
        self.protocol().is_some_and(|v| v.has_core_tasks()) && self.ledger.task_of(key).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_create_task_result_of_either_era_names_its_task() {
        let core = json!({"id": 1, "result": {"task": {"taskId": "t1", "status": "working"}}});
        let ext = json!({"id": 1, "result": {"resultType": "task", "taskId": "t2"}});
        let plain = json!({"id": 1, "result": {"content": [], "taskId": "t3"}});
        assert_eq!(created_task(&core).as_deref(), Some("t1"));
        assert_eq!(created_task(&ext).as_deref(), Some("t2"));
        assert_eq!(created_task(&plain), None);
        assert_eq!(created_task(&json!({"id": 1, "error": {"code": 1}})), None);
    }

    #[test]
    fn terminal_answers() {
        let cancelled = json!({"result": {"status": "cancelled"}});
        let working = json!({"result": {"status": "working"}});
        assert_eq!(
            terminal_status("tasks/cancel", &cancelled).as_deref(),
            Some("cancelled")
        );
        assert_eq!(terminal_status("tasks/get", &working), None);
        assert!(terminal_status("tasks/result", &json!({"result": {}})).is_some());
        assert_eq!(
            terminal_status("tasks/result", &json!({"error": {"code": -32602}})),
            None
        );
    }
}
