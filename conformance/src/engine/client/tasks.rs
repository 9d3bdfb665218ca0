//! The harness as a tasks-capable server, for the task requests a case does not script.
//!
//! A client case creates a task by answering the client's `tools/call` with a
//! `CreateTaskResult` (`result.task` in 2025-11-25, `resultType: "task"` in the 2026-07-28
//! extension) and then scripts only what it is about: the cancel, say. Clients wait for a
//! task in different fair ways (a blocking `tasks/result`, polling `tasks/get`), so the
//! harness answers the ones the case leaves to it from what the case's own answers said of
//! the task: `tasks/get` with its last known state, `tasks/cancel` by cancelling it, and a
//! `tasks/result` held until the task is terminal (as a server blocks it), then answered with
//! the task's result or, for a task that did not complete, `-32602` naming its status.

use crate::facts::ledger::created_task;
use crate::rules::tasks::TERMINAL;
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// What the harness knows of the tasks the case created, and the waits it holds.
#[derive(Debug, Default)]
pub struct ClientTasks {
    /// Each task's last known state (the Task's fields), by task id.
    known: HashMap<String, Map<String, Value>>,
    /// `tasks/result` requests held until their task is terminal: (request id, task id).
    held: Vec<(Value, String)>,
    /// Answers to held requests whose task has become terminal, not yet sent.
    pub(crate) released: Vec<Value>,
    /// The task each of the client's task requests names, by request id key.
    asked: HashMap<String, String>,
}

/// How the harness serves a task request the case did not script.
#[derive(Debug, PartialEq)]
pub enum Served {
    /// Send this answer.
    Answer(Value),
    /// Hold the request: its task is still running.
    Held,
}

impl ClientTasks {
    /// Takes note of the task the client's request (id key `key`) names, if it names one.
    pub fn asked(&mut self, key: &str, params: Option<&Value>) {
        if let Some(task) = params.and_then(|p| p.get("taskId")).and_then(Value::as_str) {
            self.asked.insert(key.to_string(), task.to_string());
        }
    }

    /// Learns from an answer the harness sent to the client's request `key` of `method` what
    /// it says of a task; a task that became terminal releases the waits held for it.
    pub fn learn(&mut self, key: &str, method: &str, answer: &Value) {
        if method == "tasks/cancel" && answer.pointer("/result/status").is_none() {
            // The 2026-07-28 extension acknowledges a cancel with an empty result: the
            // harness's task is then cancelled at once.
            let task = self.asked.get(key).cloned();
            if let (Some(task), Some(_)) = (task, answer.get("result")) {
                if let Some(fields) = self.known.get_mut(&task) {
                    let status = fields.get("status").and_then(Value::as_str).unwrap_or("");
                    if !TERMINAL.contains(&status) {
                        fields.insert("status".into(), json!("cancelled"));
                    }
                    self.release(&task);
                }
                return;
            }
        }
        if let (Some(data), "tasks/cancel") = (answer.pointer("/error/data"), method) {
            // `-32602` for a task already terminal may say how it ended.
            let id = data.get("taskId").and_then(Value::as_str);
            let status = data.get("status").filter(|s| s.is_string());
            if let (Some(fields), Some(status)) = (id.and_then(|i| self.known.get_mut(i)), status) {
                fields.insert("status".into(), status.clone());
            }
            return;
        }
        let Some(result) = answer.get("result").and_then(Value::as_object) else {
            return;
        };
        let task = match method {
            "tools/call" => match created_task(answer) {
                Some(id) => {
                    let fields = result
                        .get("task")
                        .and_then(Value::as_object)
                        .unwrap_or(result);
                    let mut fields = fields.clone();
                    fields.remove("resultType");
                    fields.remove("_meta");
                    self.known.insert(id.clone(), fields);
                    id
                }
                None => return,
            },
            "tasks/get" | "tasks/cancel" => {
                let Some(id) = result.get("taskId").and_then(Value::as_str) else {
                    return;
                };
                let Some(fields) = self.known.get_mut(id) else {
                    return;
                };
                for (key, value) in result {
                    if key != "resultType" && key != "_meta" {
                        fields.insert(key.clone(), value.clone());
                    }
                }
                id.to_string()
            }
            _ => return,
        };
        self.release(&task);
    }

    /// Serves the client's `method` request `id` if it is about a task the case created and
    /// the case leaves it to the harness; `stateless` is the 2026-07-28 extension's shape.
    pub fn serve(
        &mut self,
        id: &Value,
        method: &str,
        params: Option<&Value>,
        stateless: bool,
    ) -> Option<Served> {
        let task = params?.get("taskId")?.as_str()?.to_string();
        let fields = self.known.get_mut(&task)?;
        let status = fields.get("status").and_then(Value::as_str).unwrap_or("");
        let terminal = TERMINAL.contains(&status);
        let served = match method {
            "tasks/get" => Served::Answer(result(id, Value::Object(fields.clone()))),
            "tasks/cancel" if terminal => {
                Served::Answer(json!({"jsonrpc": "2.0", "id": id, "error": {
                    "code": -32602,
                    "message": format!("task {task} is already {status}"),
                    "data": {"taskId": task, "status": status},
                }}))
            }
            "tasks/cancel" => {
                fields.insert("status".into(), json!("cancelled"));
                let answer = if stateless {
                    json!({})
                } else {
                    Value::Object(fields.clone())
                };
                self.release(&task);
                Served::Answer(result(id, answer))
            }
            "tasks/result" if !terminal => {
                self.held.push((id.clone(), task));
                Served::Held
            }
            "tasks/result" => Served::Answer(final_answer(id, &task, fields)),
            _ => return None,
        };
        Some(served)
    }

    /// Queues the answers to the waits held for `task`, if it is terminal.
    fn release(&mut self, task: &str) {
        let Some(fields) = self.known.get(task) else {
            return;
        };
        let status = fields.get("status").and_then(Value::as_str).unwrap_or("");
        if !TERMINAL.contains(&status) {
            return;
        }
        let (now, later): (Vec<_>, Vec<_>) = self.held.drain(..).partition(|(_, t)| t == task);
        self.held = later;
        for (id, _) in now {
            self.released.push(final_answer(&id, task, fields));
        }
    }
}

fn result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// A terminal task's `tasks/result` answer: the result it completed with, or `-32602` naming
/// the status it ended in.
fn final_answer(id: &Value, task: &str, fields: &Map<String, Value>) -> Value {
    let status = fields.get("status").and_then(Value::as_str).unwrap_or("");
    match (status, fields.get("result")) {
        ("completed", Some(done)) => result(id, done.clone()),
        _ => json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": -32602,
            "message": format!("task {task} ended {status}; it has no result"),
            "data": {"taskId": task, "status": status},
        }}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn created(tasks: &mut ClientTasks) {
        let answer = json!({"id": 1, "result": {"task": {"taskId": "t", "status": "working", "pollInterval": 5000}}});
        tasks.learn("1", "tools/call", &answer);
    }

    fn params() -> Value {
        json!({"taskId": "t"})
    }

    #[test]
    fn a_wait_is_held_until_the_case_shows_the_task_cancelled() {
        let mut tasks = ClientTasks::default();
        created(&mut tasks);
        let served = tasks.serve(&json!(2), "tasks/result", Some(&params()), false);
        assert_eq!(served, Some(Served::Held));
        assert!(tasks.released.is_empty());
        let cancelled = json!({"id": 3, "result": {"taskId": "t", "status": "cancelled"}});
        tasks.learn("3", "tasks/cancel", &cancelled);
        assert_eq!(tasks.released.len(), 1);
        assert_eq!(tasks.released[0]["id"], 2);
        assert_eq!(tasks.released[0]["error"]["code"], -32602);
        assert_eq!(tasks.released[0]["error"]["data"]["status"], "cancelled");
    }

    #[test]
    fn polls_see_the_last_known_status_and_a_cancel_ends_the_task() {
        let mut tasks = ClientTasks::default();
        created(&mut tasks);
        let Some(Served::Answer(got)) = tasks.serve(&json!(2), "tasks/get", Some(&params()), false)
        else {
            panic!("tasks/get is served");
        };
        assert_eq!(got["result"]["status"], "working");
        assert_eq!(got["result"]["pollInterval"], 5000);
        let Some(Served::Answer(ack)) =
            tasks.serve(&json!(3), "tasks/cancel", Some(&params()), true)
        else {
            panic!("tasks/cancel is served");
        };
        assert_eq!(ack["result"], json!({}));
        let Some(Served::Answer(again)) =
            tasks.serve(&json!(4), "tasks/cancel", Some(&params()), true)
        else {
            panic!("a second tasks/cancel is served");
        };
        assert_eq!(again["error"]["code"], -32602);
    }

    #[test]
    fn a_completed_task_gives_its_result_and_unknown_tasks_are_left_alone() {
        let mut tasks = ClientTasks::default();
        let answer =
            json!({"id": 1, "result": {"resultType": "task", "taskId": "t", "status": "working"}});
        tasks.learn("1", "tools/call", &answer);
        let done = json!({"id": 2, "result": {"taskId": "t", "status": "completed", "result": {"content": []}}});
        tasks.learn("2", "tasks/get", &done);
        let Some(Served::Answer(got)) =
            tasks.serve(&json!(3), "tasks/result", Some(&params()), false)
        else {
            panic!("tasks/result is served");
        };
        assert_eq!(got["result"], json!({"content": []}));
        // A 2026-07-28 ack cancels a task that is still working; this one had completed.
        tasks.asked("6", Some(&params()));
        tasks.learn("6", "tasks/cancel", &json!({"id": 6, "result": {}}));
        let Some(Served::Answer(got)) = tasks.serve(&json!(7), "tasks/get", Some(&params()), true)
        else {
            panic!("tasks/get is served");
        };
        assert_eq!(got["result"]["status"], "completed");
        let other = json!({"taskId": "other"});
        assert_eq!(
            tasks.serve(&json!(4), "tasks/get", Some(&other), false),
            None
        );
        assert_eq!(tasks.serve(&json!(5), "ping", Some(&params()), false), None);
    }
}
