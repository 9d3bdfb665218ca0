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

use super::envelope::Problem;
use crate::era::ProtocolVersion;
use crate::facts::ledger::created_task;
use crate::facts::ledger::TaskRecord;
use crate::facts::waits::Waits;
use crate::outcome::Severity;
use crate::requirement::Req;
use serde_json::Value;
use std::time::Duration;

/// The statuses a task never leaves.
pub const TERMINAL: [&str; 3] = ["completed", "failed", "cancelled"];

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

/// What an answer to one of the harness's requests says about tasks.
#[derive(Debug, PartialEq)]
pub enum Learned {
    /// Nothing: not a task's answer.
    Nothing,
    /// A `tools/call` answer created this task.
    Created(String),
    /// An answer to a `tasks/*` request about this task.
    About {
        /// The task the request named.
        task: String,
        /// A `tasks/cancel` answered with a result: the proof the server read the cancel.
        cancel_answered: bool,
        /// The terminal status the answer showed, if it showed one.
        terminal: Option<String>,
    },
}

/// What the answer `answer` to the harness's request `method` (sent as `sent`) says about
/// tasks: the ledger keeps it.
pub fn learn(method: &str, sent: &Value, answer: &Value) -> Learned {
    if method == "tools/call" {
        return created_task(answer).map_or(Learned::Nothing, Learned::Created);
    }
    let Some(task) = sent.pointer("/params/taskId").and_then(Value::as_str) else {
        return Learned::Nothing;
    };
    Learned::About {
        task: task.to_string(),
        cancel_answered: method == "tasks/cancel" && answer.get("result").is_some(),
        terminal: terminal_status(method, answer),
    }
}

/// Progress for request `key` that arrived `at`, whose task `record` an answer showed
/// terminal (2025-11-25, PRG-10): allowed until then; within the grace a message may take to
/// cross that answer (`waits`, read once the task is terminal), a note; later, a failure.
pub fn progress_of_task(
    key: &str,
    at: Duration,
    record: &TaskRecord,
    waits: &Waits,
) -> Option<Problem> {
    let (terminal, status, waited) = record.terminal.as_ref()?;
    let grace = waits.grace_after(*waited);
    let after = at.saturating_sub(*terminal);
    if at <= *terminal {
        return None;
    }
    let problem = if after <= grace {
        Problem::new(
            Severity::Note,
            Req::Prg10,
            format!(
                "progress for the task of request {key} came {} ms after an answer showed it {status}, within the {} ms a message may take to cross that answer",
                after.as_millis(),
                grace.as_millis()
            ),
        )
    } else {
        Problem::new(
            Severity::Fail,
            Req::Prg10,
            format!(
                "progress for the task of request {key} came {} ms after an answer showed the task {status}; a task's progress must stop when it reaches a terminal status",
                after.as_millis()
            ),
        )
    };
    Some(problem)
}

/// The rule a task's cancel answers to in the era of `version`: TSK-04 (2025-11-25), TSK-05
/// (the 2026-07-28 extension).
pub fn cancel_rule(version: Option<ProtocolVersion>) -> Req {
    if version.is_some_and(|v| v.has_core_tasks()) {
        Req::Tsk04
    } else {
        Req::Tsk05
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

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A task an answer showed `status` at 1000 ms, when the target had waited `waited`.
    fn terminal_at_1000(status: &str, waited: Option<Duration>) -> TaskRecord {
        TaskRecord {
            request: "1".into(),
            terminal: Some((ms(1000), status.into(), waited)),
            cancel_answered: None,
        }
    }

    #[test]
    fn a_tools_call_answer_creates_a_task_or_says_nothing() {
        let sent = json!({"id": 1, "method": "tools/call"});
        let core = json!({"id": 1, "result": {"task": {"taskId": "t1", "status": "working"}}});
        assert_eq!(
            learn("tools/call", &sent, &core),
            Learned::Created("t1".into())
        );
        let plain = json!({"id": 1, "result": {"content": []}});
        assert_eq!(learn("tools/call", &sent, &plain), Learned::Nothing);
    }

    #[test]
    fn a_tasks_answer_tells_of_its_task_the_cancel_and_the_terminal_status() {
        let cancel = json!({"id": 2, "method": "tasks/cancel", "params": {"taskId": "t1"}});
        let cancelled = json!({"id": 2, "result": {"status": "cancelled"}});
        assert_eq!(
            learn("tasks/cancel", &cancel, &cancelled),
            Learned::About {
                task: "t1".into(),
                cancel_answered: true,
                terminal: Some("cancelled".into())
            }
        );
        let refused = json!({"id": 2, "error": {"code": -32602, "message": "no"}});
        assert_eq!(
            learn("tasks/cancel", &cancel, &refused),
            Learned::About {
                task: "t1".into(),
                cancel_answered: false,
                terminal: None
            }
        );
        let get = json!({"id": 3, "method": "tasks/get", "params": {"taskId": "t1"}});
        let working = json!({"id": 3, "result": {"status": "working"}});
        assert_eq!(
            learn("tasks/get", &get, &working),
            Learned::About {
                task: "t1".into(),
                cancel_answered: false,
                terminal: None
            }
        );
        let list = json!({"id": 4, "method": "tasks/list"});
        assert_eq!(
            learn("tasks/list", &list, &json!({"id": 4, "result": {}})),
            Learned::Nothing
        );
    }

    #[test]
    fn progress_long_after_the_task_was_terminal_fails() {
        let calm = Waits::calm(ms(250), None);
        let record = terminal_at_1000("completed", None);
        let p = progress_of_task("1", ms(1300), &record, &calm).expect("a finding");
        assert_eq!((p.severity, p.requirement), (Severity::Fail, Req::Prg10));
        assert!(p.message.contains("300 ms after"), "{}", p.message);
    }

    #[test]
    fn progress_that_crossed_the_terminal_answer_is_a_note() {
        let calm = Waits::calm(ms(250), None);
        let record = terminal_at_1000("cancelled", None);
        let p = progress_of_task("1", ms(1200), &record, &calm).expect("a note");
        assert_eq!((p.severity, p.requirement), (Severity::Note, Req::Prg10));
        // Time the target lost to load since the terminal answer lengthens the grace.
        let starved = Waits::calm(ms(250), Some(ms(500)));
        let record = terminal_at_1000("cancelled", Some(ms(100)));
        let p = progress_of_task("1", ms(1600), &record, &starved).expect("a note");
        assert_eq!(p.severity, Severity::Note);
    }

    #[test]
    fn progress_while_the_task_works_or_before_its_terminal_answer_is_fair() {
        let calm = Waits::calm(ms(250), None);
        let working = TaskRecord {
            request: "1".into(),
            terminal: None,
            cancel_answered: None,
        };
        assert_eq!(progress_of_task("1", ms(5000), &working, &calm), None);
        let record = terminal_at_1000("completed", None);
        assert_eq!(progress_of_task("1", ms(1000), &record, &calm), None);
        assert_eq!(progress_of_task("1", ms(400), &record, &calm), None);
    }

    #[test]
    fn a_task_cancel_answers_to_the_rule_of_its_era() {
        assert_eq!(cancel_rule(Some(ProtocolVersion::V2025_11_25)), Req::Tsk04);
        assert_eq!(cancel_rule(Some(ProtocolVersion::V2026_07_28)), Req::Tsk05);
        assert_eq!(cancel_rule(None), Req::Tsk05);
    }
}
