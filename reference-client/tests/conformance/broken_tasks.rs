//! Deliberately broken task clients over stdio: this test binary again, speaking raw JSON to
//! the relay, each getting one task rule wrong on purpose: a task cancelled the plain way
//! (TSK-03, CAN-15), a call augmented without the server's capability (TSK-01), polls faster
//! than the task's `pollIntervalMs` (TSK-07), a wait abandoned by cancelling the task or by
//! leaving the `tasks/result` in flight (TSK-06).

use crate::broken::{report, Server};
use conformance::harness::expect::{Expect, On};
use conformance::outcome::Severity;
use conformance::requirement::Req;
use serde_json::{json, Value};
use std::time::Duration;

/// The 2026-07-28 `_meta` of a request that declares the tasks extension.
fn stateless_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "broken", "version": "0"},
    })
}

fn stateless_request(id: u64, method: &str, mut params: Value) -> String {
    params["_meta"] = stateless_meta();
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// Plays `mode` if it is one of these; `false` otherwise.
pub fn client(mode: &str) -> bool {
    match mode {
        // Cancels the task's (complete) tools/call with `notifications/cancelled` well after
        // its CreateTaskResult.
        "task-cancelled-by-notification" => cancelled_by_notification(task_running(), 3),
        "stateless-task-cancelled-by-notification" => {
            cancelled_by_notification(stateless_task_running(), 1)
        }
        "abandon-cancels-task" | "abandon-leaves-wait" => abandon(mode),
        "task-augments-without-capability" => {
            // The server declared no tasks; the call carries `task` anyway.
            let mut s = opened();
            s.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"plain"},"task":{}}}"#);
            s.answer(json!(2));
            report(1, "result");
            s.close();
            report(2, "result");
        }
        "stateless-abandon-cancels-task" => {
            // Told to stop waiting, it cancels the task.
            let mut s = stateless_task_running();
            std::thread::sleep(Duration::from_millis(300));
            s.send(&stateless_request(
                2,
                "tasks/cancel",
                json!({"taskId": "task-1"}),
            ));
            s.answer(json!(2));
            abandoned(s);
        }
        "stateless-task-polls-fast" => {
            // Polls every 50 ms whatever `pollIntervalMs` says.
            let mut s = stateless_task_running();
            for id in 2..40 {
                s.send(&stateless_request(
                    id,
                    "tasks/get",
                    json!({"taskId": "task-1"}),
                ));
                let answer = s.answer(json!(id));
                if answer.is_none()
                    || answer.as_ref().and_then(|a| a.pointer("/result/status"))
                        == Some(&json!("completed"))
                {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            report(1, "result");
            s.close();
            report(2, "result");
        }
        _ => return false,
    }
    true
}

/// The server started and a session opened; the first action reported done.
fn opened() -> Server {
    let mut s = Server::start(None);
    s.handshake();
    report(0, "result");
    s
}

/// [`opened`], then the tools listed and `work` called as a task (id 3), its
/// CreateTaskResult read: the task is running.
fn task_running() -> Server {
    let mut s = opened();
    s.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    s.answer(json!(2));
    s.send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"work","arguments":{},"task":{}}}"#);
    s.answer(json!(3));
    s
}

/// 2026-07-28: the server started, the first action reported done, and `work` called (id 1),
/// which the server runs as a task.
fn stateless_task_running() -> Server {
    let mut s = Server::start(None);
    report(0, "result");
    s.send(&stateless_request(
        1,
        "tools/call",
        json!({"name": "work", "arguments": {}}),
    ));
    s.answer(json!(1));
    s
}

/// Cancels the task's creating call `id` the plain way, which cancels no task.
fn cancelled_by_notification(mut s: Server, id: u64) {
    std::thread::sleep(Duration::from_millis(600));
    s.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}})
            .to_string(),
    );
    report(1, "cancelled");
    std::thread::sleep(Duration::from_millis(300));
    s.close();
    report(2, "result");
}

/// Told to stop waiting for a task's result (`client-task-abandon-wait`): waits with a
/// blocking `tasks/result`, then `abandon-cancels-task` cancels that wait and the task too
/// (`tasks/cancel`), and `abandon-leaves-wait` stops waiting without cancelling the wait.
fn abandon(mode: &str) {
    let mut s = task_running();
    s.send(r#"{"jsonrpc":"2.0","id":4,"method":"tasks/result","params":{"taskId":"task-1"}}"#);
    std::thread::sleep(Duration::from_millis(300));
    if mode == "abandon-cancels-task" {
        s.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}"#);
        s.send(r#"{"jsonrpc":"2.0","id":5,"method":"tasks/cancel","params":{"taskId":"task-1"}}"#);
        s.answer(json!(5));
    }
    abandoned(s);
}

/// How an abandoned wait ends: the stop reported, the rest of the case, then the close.
fn abandoned(s: Server) {
    report(1, "cancelled");
    std::thread::sleep(Duration::from_millis(700));
    report(2, "result");
    s.close();
    report(3, "result");
}

/// Mode, case, what the run must show.
#[rustfmt::skip]
pub(crate) fn rows() -> Vec<(&'static str, &'static str, Expect)> {
    use Severity::{Fail as F, Warn as W};
    type E = Expect;
    vec![
        ("task-cancelled-by-notification",           "client-task-cancel",                    E::fails(Req::Tsk03).saying("tasks/cancel")),
        ("task-augments-without-capability",         "client-task-no-capability",             E::caught(On::Case, F).saying("/params/task")),
        ("stateless-task-cancelled-by-notification", "client-stateless-task-cancel",          E::fails(Req::Can15).saying("tasks/cancel")),
        ("abandon-cancels-task",                     "client-task-abandon-wait",              E::warns(Req::Tsk06).saying("tasks/cancel")),
        ("abandon-leaves-wait",                      "client-task-abandon-wait",              E::warns(Req::Tsk06).saying("never cancelled")),
        ("stateless-abandon-cancels-task",            "client-stateless-task-abandon",         E::warns(Req::Tsk06).saying("tasks/cancel")),
        ("stateless-task-polls-fast",                "client-stateless-task-poll-interval",   E::caught(On::Case, W)),
    ]
}
