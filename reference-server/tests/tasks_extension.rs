//! The 2026-07-28 tasks extension (`io.modelcontextprotocol/tasks`) over
//! stdio: declared per request, `resultType: "task"`, `tasks/get` with the
//! result inlined, `tasks/update`, the acknowledging `tasks/cancel`
//! (TSK-05), `-32021` without the declaration, no progress on tasks
//! (PRG-11), and the witness.

mod common;
mod common_http;

use common::{error_code, Server};
use common_http::{stamped, stamped_with, tasks_capabilities};
use serde_json::{json, Value};
use std::time::Duration;

const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// Sends a stamped request declaring the extension (or not) and returns its
/// response; nothing else may come first.
fn ask(server: &mut Server, id: Value, method: &str, params: Value, declared: bool) -> Value {
    let request = if declared {
        stamped_with(id.clone(), method, params, tasks_capabilities())
    } else {
        stamped(id.clone(), method, params)
    };
    server.send(request);
    let line = server.next();
    assert_eq!(line["id"], id, "{line}");
    line
}

fn call(server: &mut Server, id: Value, tool: &str, args: Value, declared: bool) -> Value {
    let params = json!({"name": tool, "arguments": args});
    ask(server, id, "tools/call", params, declared)
}

fn task_method(server: &mut Server, id: Value, method: &str, task: &str) -> Value {
    ask(server, id, method, json!({"taskId": task}), true)
}

fn task_id(response: &Value) -> String {
    response["result"]["taskId"]
        .as_str()
        .expect("a taskId")
        .to_owned()
}

#[test]
fn a_declaring_request_gets_a_task_and_others_get_results() {
    let mut server = Server::spawn();
    let created = call(&mut server, json!(1), "sleep", json!({"ms": 0}), true);
    let result = &created["result"];
    assert_eq!(result["resultType"], "task", "{created}");
    assert_eq!(result["status"], "working");
    assert_eq!(result["ttlMs"], 60000);
    assert_eq!(result["pollIntervalMs"], 100);
    assert!(
        result.get("task").is_none() && result.get("ttl").is_none(),
        "{created}"
    );
    assert_eq!(result["_meta"][SERVER_INFO]["name"], "reference-server");
    // The declaration counts per request: the next one without it gets the result.
    let plain = call(&mut server, json!(2), "sleep", json!({"ms": 0}), false);
    assert_eq!(plain["result"]["resultType"], "complete", "{plain}");
    assert_eq!(plain["result"]["content"][0]["text"], "slept");
    // params.task is no opt-in in this era.
    let params = json!({"name": "sleep", "arguments": {"ms": 0}, "task": {"ttl": 5000}});
    let ignored = ask(&mut server, json!(3), "tools/call", params, false);
    assert_eq!(ignored["result"]["resultType"], "complete", "{ignored}");
    // Tools that never run as tasks answer plainly even to a declaring request.
    let echo = call(&mut server, json!(4), "echo", json!({"text": "e"}), true);
    assert_eq!(echo["result"]["resultType"], "complete", "{echo}");
}

#[test]
fn a_tool_that_only_runs_as_a_task_needs_the_declaration() {
    let mut server = Server::spawn();
    let refused = call(&mut server, json!(1), "job", json!({"ms": 0}), false);
    assert_eq!(error_code(&refused), -32021, "{refused}");
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"],
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
    );
    let created = call(&mut server, json!(2), "job", json!({"ms": 0}), true);
    assert_eq!(created["result"]["resultType"], "task", "{created}");
}

#[test]
fn tasks_get_inlines_the_result_and_update_and_cancel_acknowledge() {
    let mut server = Server::spawn();
    let id = task_id(&call(
        &mut server,
        json!(1),
        "job",
        json!({"ms": 30, "error": "no"}),
        true,
    ));
    let working = task_method(&mut server, json!(2), "tasks/get", &id);
    assert_eq!(working["result"]["resultType"], "complete", "{working}");
    assert!(matches!(
        working["result"]["status"].as_str(),
        Some("working" | "completed")
    ));
    let mut done = working;
    while done["result"]["status"] == "working" {
        assert!(server.next_within(Duration::from_millis(10)).is_none());
        done = task_method(&mut server, json!(3), "tasks/get", &id);
    }
    // An isError result is `completed`, inlined as tools/call would return it.
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(done["result"]["result"]["isError"], true, "{done}");
    assert_eq!(done["result"]["result"]["content"][0]["text"], "no");
    assert_eq!(done["result"]["result"]["resultType"], "complete");
    // tasks/update: nothing is ever outstanding, so the responses are ignored.
    let params = json!({"taskId": id, "inputResponses": {"name": {"action": "accept"}}});
    let updated = ask(&mut server, json!(4), "tasks/update", params, true);
    assert_eq!(updated["result"]["resultType"], "complete", "{updated}");
    let missing = ask(
        &mut server,
        json!(5),
        "tasks/update",
        json!({"taskId": id}),
        true,
    );
    assert_eq!(error_code(&missing), -32602, "{missing}");
    // Cancelling a finished task is acknowledged and changes nothing.
    let ack = task_method(&mut server, json!(6), "tasks/cancel", &id);
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    assert_eq!(ack["result"].get("status"), None, "an empty ack: {ack}");
    let still = task_method(&mut server, json!(7), "tasks/get", &id);
    assert_eq!(still["result"]["status"], "completed");
    // Unknown tasks are -32602 for every method.
    for method in ["tasks/get", "tasks/cancel"] {
        let unknown = task_method(&mut server, json!(8), method, "nope");
        assert_eq!(error_code(&unknown), -32602, "{method}: {unknown}");
    }
    let params = json!({"taskId": "nope", "inputResponses": {}});
    assert_eq!(
        error_code(&ask(&mut server, json!(9), "tasks/update", params, true)),
        -32602
    );
}

#[test]
fn tasks_cancel_stops_the_work_and_the_witness_names_the_task() {
    let mut server = Server::spawn();
    let params =
        json!({"name": "ticker", "arguments": {"interval_ms": 5}, "_meta": {"progressToken": "t"}});
    let created = ask(&mut server, json!(1), "tools/call", params, true);
    let id = task_id(&created);
    // The extension has no progress on tasks (PRG-11): the call is complete.
    assert!(server.next_within(Duration::from_millis(50)).is_none());
    let ack = task_method(&mut server, json!(2), "tasks/cancel", &id);
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let cancelled = task_method(&mut server, json!(3), "tasks/get", &id);
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    let witness = call(&mut server, json!(4), "cancellations", json!({}), false);
    let text = witness["result"]["content"][0]["text"]
        .as_str()
        .expect("text");
    assert_eq!(
        serde_json::from_str::<Value>(text).expect("json"),
        json!([id])
    );
}

#[test]
fn cancellation_is_cooperative_and_unstoppable_work_ends_completed() {
    let mut server = Server::spawn();
    let args = json!({"ms": 100, "ignore_cancel": true});
    let id = task_id(&call(&mut server, json!(1), "job", args, true));
    let ack = task_method(&mut server, json!(2), "tasks/cancel", &id);
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    // The ack promised nothing: the work goes on and the task ends as it does.
    let mut status = task_method(&mut server, json!(3), "tasks/get", &id);
    assert_eq!(status["result"]["status"], "working", "{status}");
    while status["result"]["status"] == "working" {
        assert!(server.next_within(Duration::from_millis(10)).is_none());
        status = task_method(&mut server, json!(4), "tasks/get", &id);
    }
    assert_eq!(status["result"]["status"], "completed", "{status}");
    assert_eq!(status["result"]["result"]["content"][0]["text"], "done");
    let witness = call(&mut server, json!(5), "cancellations", json!({}), false);
    assert_eq!(witness["result"]["content"][0]["text"], "[]", "{witness}");
}

#[test]
fn without_the_declaration_task_methods_are_refused_and_removed_ones_unknown() {
    let mut server = Server::spawn();
    let id = task_id(&call(&mut server, json!(1), "work", json!({}), true));
    for method in ["tasks/get", "tasks/cancel", "tasks/update"] {
        let params = json!({"taskId": id, "inputResponses": {}});
        let refused = ask(&mut server, json!(2), method, params, false);
        assert_eq!(error_code(&refused), -32021, "{method}: {refused}");
    }
    // The declaration was the only thing missing: the task is untouched.
    assert_eq!(
        task_method(&mut server, json!(3), "tasks/get", &id)["result"]["status"],
        "working"
    );
    // 2025-11-25's tasks/result and tasks/list do not exist here.
    for method in ["tasks/result", "tasks/list"] {
        let gone = ask(&mut server, json!(4), method, json!({"taskId": id}), true);
        assert_eq!(error_code(&gone), -32601, "{method}: {gone}");
    }
    task_method(&mut server, json!(5), "tasks/cancel", &id);
}
