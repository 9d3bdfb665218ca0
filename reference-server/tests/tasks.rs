//! Tasks of 2025-11-25 over stdio: capability and tool-level negotiation
//! (TSK-01, TSK-02), the lifecycle, `tasks/cancel` (TSK-03, TSK-04), a
//! cancelled `tasks/result` (TSK-06), progress until cancel (PRG-10), the
//! witness, the races, and the limits.

mod common;

use common::{error_code, Server, PATIENCE};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// Reads until the response to `id`; returns it and what came before.
fn until_response(server: &mut Server, id: &Value) -> (Value, Vec<Value>) {
    let mut before = Vec::new();
    loop {
        let line = server.next();
        if &line["id"] == id && line.get("method").is_none() {
            return (line, before);
        }
        before.push(line);
    }
}

/// Sends a request and returns its response, skipping notifications.
fn ask(server: &mut Server, id: Value, method: &str, params: Value) -> Value {
    server.send_request(id.clone(), method, params);
    until_response(server, &id).0
}

/// Calls `tool` as a task; returns the task (`CreateTaskResult.task`).
fn create(server: &mut Server, id: Value, tool: &str, args: Value, extra: Value) -> Value {
    let mut params = json!({"name": tool, "arguments": args, "task": {"ttl": 30000}});
    if let (Value::Object(params), Value::Object(extra)) = (&mut params, extra) {
        params.extend(extra);
    }
    let response = ask(server, id, "tools/call", params);
    let task = response["result"]["task"].clone();
    assert_eq!(task["status"], "working", "{response}");
    task
}

fn task_id(task: &Value) -> String {
    task["taskId"].as_str().expect("taskId").to_owned()
}

fn get(server: &mut Server, id: Value, task: &str) -> Value {
    ask(server, id, "tasks/get", json!({"taskId": task}))
}

/// The witness, skipping notifications of work still running.
fn witness(server: &mut Server, id: &str) -> Vec<Value> {
    let params = json!({"name": "cancellations", "arguments": {}});
    let response = ask(server, json!(id), "tools/call", params);
    let text = response["result"]["content"][0]["text"]
        .as_str()
        .expect("text");
    serde_json::from_str(text).expect("a json array")
}

fn is_progress(line: &Value) -> bool {
    line["method"] == "notifications/progress"
}

#[test]
fn the_capability_and_each_tools_task_support_are_declared() {
    let mut server = Server::initialized("2025-11-25");
    let list = server.request(json!(1), "tools/list", json!({}));
    let support: Vec<(String, Value)> = list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap_or("").to_owned(),
                t["execution"]["taskSupport"].clone(),
            )
        })
        .collect();
    let expected = [
        ("ping", Value::Null),
        ("work", json!("optional")),
        ("echo", Value::Null),
        ("sleep", json!("optional")),
        ("ticker", json!("optional")),
        ("cancellations", Value::Null),
        ("job", json!("required")),
        ("work_required", json!("required")),
    ];
    let expected: Vec<(String, Value)> = expected
        .into_iter()
        .map(|(n, s)| (n.to_owned(), s))
        .collect();
    assert_eq!(support, expected);
}

#[test]
fn tool_level_negotiation_answers_method_not_found_both_ways() {
    let mut server = Server::initialized("2025-11-25");
    let task = json!({"ttl": 30000});
    // A tool without taskSupport called as a task (SHOULD -32601).
    let echo = json!({"name": "echo", "arguments": {"text": "x"}, "task": task});
    assert_eq!(
        error_code(&server.request(json!(1), "tools/call", echo)),
        -32601
    );
    // A "required" tool called plainly (MUST -32601).
    let plain_job = server.tool(json!(2), "job", json!({"ms": 0}));
    assert_eq!(error_code(&plain_job), -32601, "{plain_job}");
    let plain_work = server.tool(json!(6), "work_required", json!({}));
    assert_eq!(error_code(&plain_work), -32601, "{plain_work}");
    // An "optional" tool either way.
    assert_eq!(
        server.tool(json!(3), "sleep", json!({"ms": 0}))["result"]["content"][0]["text"],
        "slept"
    );
    create(&mut server, json!(4), "sleep", json!({"ms": 0}), json!({}));
    create(&mut server, json!(5), "job", json!({"ms": 0}), json!({}));
}

#[test]
fn a_task_field_where_tasks_are_not_declared_is_ignored() {
    // Before 2025-11-25 there is no tasks capability at all (TSK-02).
    let mut old = Server::initialized("2025-06-18");
    let params = json!({"name": "sleep", "arguments": {"ms": 0}, "task": {"ttl": 30000}});
    let plain = old.request(json!(1), "tools/call", params);
    assert_eq!(plain["result"]["content"][0]["text"], "slept", "{plain}");
    let junk = json!({"name": "echo", "arguments": {"text": "y"}, "task": "junk"});
    assert_eq!(
        old.request(json!(2), "tools/call", junk)["result"]["content"][0]["text"],
        "y"
    );
    assert_eq!(
        error_code(&old.request(json!(3), "tasks/get", json!({"taskId": "x"}))),
        -32601
    );
    // 2025-11-25 declares tasks for tools/call only: other requests ignore it.
    let mut server = Server::initialized("2025-11-25");
    let list = server.request(json!(1), "tools/list", json!({"task": {"ttl": 1}}));
    assert!(list["result"]["tools"].is_array(), "{list}");
    assert_eq!(
        server.request(json!(2), "ping", json!({"task": {}}))["result"],
        json!({})
    );
}

#[test]
fn a_task_is_created_at_once_polled_and_its_result_returned() {
    let mut server = Server::initialized("2025-11-25");
    let task = create(
        &mut server,
        json!(1),
        "sleep",
        json!({"ms": 100}),
        json!({}),
    );
    let id = task_id(&task);
    assert_eq!(id.len(), 32, "{task}");
    assert_eq!(task["ttl"], 30000);
    assert_eq!(task["pollInterval"], 100);
    for field in ["createdAt", "lastUpdatedAt"] {
        let stamp = task[field].as_str().expect("a timestamp");
        assert!(
            stamp.ends_with('Z') && stamp.contains('T'),
            "{field}: {stamp}"
        );
    }
    assert_eq!(
        get(&mut server, json!(2), &id)["result"]["status"],
        "working"
    );
    // tasks/result blocks until the task is terminal.
    let result = ask(&mut server, json!(3), "tasks/result", json!({"taskId": id}));
    assert_eq!(result["result"]["content"][0]["text"], "slept", "{result}");
    assert_eq!(
        result["result"]["_meta"][RELATED_TASK]["taskId"],
        id.as_str()
    );
    let done = get(&mut server, json!(4), &id);
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert!(
        done["result"].get("_meta").is_none(),
        "no related-task on tasks/get: {done}"
    );
    // Again, at once.
    let again = ask(&mut server, json!(5), "tasks/result", json!({"taskId": id}));
    assert_eq!(again["result"]["content"][0]["text"], "slept");
}

#[test]
fn an_is_error_result_makes_the_task_failed_and_tasks_result_returns_it() {
    let mut server = Server::initialized("2025-11-25");
    let job = create(
        &mut server,
        json!(1),
        "job",
        json!({"ms": 0, "error": "broken"}),
        json!({}),
    );
    let result = ask(
        &mut server,
        json!(2),
        "tasks/result",
        json!({"taskId": task_id(&job)}),
    );
    assert_eq!(result["result"]["isError"], true, "{result}");
    assert_eq!(result["result"]["content"][0]["text"], "broken");
    let failed = get(&mut server, json!(3), &task_id(&job));
    assert_eq!(failed["result"]["status"], "failed", "{failed}");
    assert!(failed["result"]["statusMessage"].is_string(), "{failed}");
    // Arguments that do not match the schema: the task ends with the error.
    let too_long = "x".repeat(1025);
    let bad_calls = [
        ("sleep", json!({"ms": -1})),
        ("job", json!({"ms": 0, "error": too_long})),
    ];
    for (i, (tool, args)) in bad_calls.into_iter().enumerate() {
        let bad = task_id(&create(
            &mut server,
            json!(format!("b{i}")),
            tool,
            args,
            json!({}),
        ));
        let params = json!({"taskId": bad});
        let result = ask(&mut server, json!(format!("r{i}")), "tasks/result", params);
        assert_eq!(result["result"]["isError"], true, "{result}");
        let status = get(&mut server, json!(format!("g{i}")), &bad);
        assert_eq!(status["result"]["status"], "failed", "{status}");
    }
}

#[test]
fn tasks_cancel_moves_a_working_task_to_cancelled_for_good() {
    let mut server = Server::initialized("2025-11-25");
    let task = create(&mut server, json!(1), "work", json!({}), json!({}));
    let id = task_id(&task);
    let cancelled = ask(&mut server, json!(2), "tasks/cancel", json!({"taskId": id}));
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    assert_eq!(cancelled["result"]["taskId"], id.as_str());
    assert_eq!(
        get(&mut server, json!(3), &id)["result"]["status"],
        "cancelled"
    );
    // Terminal: a second cancel is refused, and so is an unknown task (TSK-04).
    let again = ask(&mut server, json!(4), "tasks/cancel", json!({"taskId": id}));
    assert_eq!(error_code(&again), -32602, "{again}");
    let unknown = ask(
        &mut server,
        json!(5),
        "tasks/cancel",
        json!({"taskId": "0".repeat(32)}),
    );
    assert_eq!(error_code(&unknown), -32602, "{unknown}");
    let malformed = ask(&mut server, json!(6), "tasks/cancel", json!({"taskId": 7}));
    assert_eq!(error_code(&malformed), -32602, "{malformed}");
    // A cancelled task has no result; the error says why.
    let result = ask(&mut server, json!(7), "tasks/result", json!({"taskId": id}));
    assert_eq!(error_code(&result), -32602, "{result}");
    assert_eq!(result["error"]["data"]["status"], "cancelled", "{result}");
    // The work observed its cancel, and the witness names the task.
    assert_eq!(witness(&mut server, "w"), [json!(id)]);
}

#[test]
fn a_cancelled_task_stays_cancelled_when_its_work_finishes_anyway() {
    let mut server = Server::initialized("2025-11-25");
    // Work that cannot be stopped (TSK-04: cancelled MUST stay cancelled).
    let args = json!({"ms": 150, "ignore_cancel": true});
    let id = task_id(&create(&mut server, json!(1), "job", args, json!({})));
    let cancelled = ask(&mut server, json!(2), "tasks/cancel", json!({"taskId": id}));
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    // Well past the work's end: still cancelled, still without a result.
    assert!(server.next_within(Duration::from_millis(400)).is_none());
    assert_eq!(
        get(&mut server, json!(3), &id)["result"]["status"],
        "cancelled"
    );
    let result = ask(&mut server, json!(4), "tasks/result", json!({"taskId": id}));
    assert_eq!(error_code(&result), -32602, "{result}");
    // Its work never observed the cancel, and the witness says so.
    assert_eq!(witness(&mut server, "w"), Vec::<Value>::new());
}

#[test]
fn progress_uses_the_calls_token_until_tasks_cancel_and_never_after() {
    let mut server = Server::initialized("2025-11-25");
    let extra = json!({"_meta": {"progressToken": "tick"}});
    let task = create(
        &mut server,
        json!(1),
        "ticker",
        json!({"interval_ms": 5}),
        extra,
    );
    let id = task_id(&task);
    // Progress goes on after CreateTaskResult, on the same token, tied to the task.
    let mut seen = 0;
    while seen < 3 {
        let line = server.next();
        assert!(is_progress(&line), "{line}");
        assert_eq!(line["params"]["progressToken"], "tick");
        assert_eq!(line["params"]["_meta"][RELATED_TASK]["taskId"], id.as_str());
        seen += 1;
    }
    server.send_request(json!(2), "tasks/cancel", json!({"taskId": id}));
    let (cancelled, before) = until_response(&mut server, &json!(2));
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    assert!(before.iter().all(is_progress), "{before:?}");
    // Nothing more for the token once the cancel was answered (PRG-10).
    let after = server.barrier(json!("b"));
    assert!(after.is_empty(), "{after:?}");
    assert!(server.next_within(Duration::from_millis(100)).is_none());
}

#[test]
fn cancelling_the_creating_call_does_not_cancel_the_task() {
    let mut server = Server::initialized("2025-11-25");
    let extra = json!({"_meta": {"progressToken": 9}});
    let task = create(
        &mut server,
        json!(1),
        "ticker",
        json!({"interval_ms": 10}),
        extra,
    );
    let id = task_id(&task);
    // The call completed when its CreateTaskResult was sent (TSK-03, CAN-09).
    server.cancel(json!(1));
    server.barrier(json!("b"));
    let progress = (0..3).map(|_| server.next()).filter(is_progress).count();
    assert_eq!(progress, 3, "the work goes on");
    assert_eq!(
        get(&mut server, json!(2), &id)["result"]["status"],
        "working"
    );
    let listed = witness(&mut server, "w");
    assert!(
        !listed.contains(&json!(id)) && !listed.contains(&json!(1)),
        "{listed:?}"
    );
    ask(&mut server, json!(3), "tasks/cancel", json!({"taskId": id}));
}

#[test]
fn cancelling_a_waiting_tasks_result_ends_the_wait_not_the_task() {
    let mut server = Server::initialized("2025-11-25");
    let task = create(&mut server, json!(1), "work", json!({}), json!({}));
    let id = task_id(&task);
    server.send_request(json!("wait"), "tasks/result", json!({"taskId": id}));
    server.cancel(json!("wait"));
    let before = server.barrier(json!("b"));
    assert!(
        before.is_empty(),
        "no answer to the cancelled wait: {before:?}"
    );
    assert_eq!(
        get(&mut server, json!(2), &id)["result"]["status"],
        "working"
    );
    // The wait observed its cancel; the task's work did not (TSK-06).
    assert_eq!(witness(&mut server, "w"), [json!("wait")]);
    // The id of the cancelled wait is free again.
    server.send_request(json!("wait"), "tasks/result", json!({"taskId": id}));
    let cancelled = ask(&mut server, json!(3), "tasks/cancel", json!({"taskId": id}));
    assert_eq!(cancelled["result"]["status"], "cancelled");
    // A wait still pending when the task is cancelled gets the cancelled outcome.
    let (outcome, _) = until_response(&mut server, &json!("wait"));
    assert_eq!(error_code(&outcome), -32602, "{outcome}");
    assert_eq!(outcome["error"]["data"]["status"], "cancelled", "{outcome}");
}

#[test]
fn a_task_that_finishes_while_its_cancel_travels_ends_one_way_or_the_other() {
    let mut server = Server::initialized("2025-11-25");
    let (mut cancelled, mut completed) = (0, 0);
    for i in 0..40 {
        let task = create(
            &mut server,
            json!(format!("c{i}")),
            "sleep",
            json!({"ms": i % 4}),
            json!({}),
        );
        let id = task_id(&task);
        let answer = ask(
            &mut server,
            json!(format!("x{i}")),
            "tasks/cancel",
            json!({"taskId": id}),
        );
        let status = get(&mut server, json!(format!("g{i}")), &id)["result"]["status"].clone();
        let result = ask(
            &mut server,
            json!(format!("r{i}")),
            "tasks/result",
            json!({"taskId": id}),
        );
        if answer["result"]["status"] == "cancelled" {
            // Cancelled first: for good, and without a result.
            assert_eq!(status, "cancelled");
            assert_eq!(error_code(&result), -32602, "{result}");
            cancelled += 1;
        } else {
            // Finished first: the cancel is refused as terminal.
            assert_eq!(error_code(&answer), -32602, "{answer}");
            assert_eq!(status, "completed");
            assert_eq!(result["result"]["content"][0]["text"], "slept", "{result}");
            completed += 1;
        }
    }
    assert_eq!(cancelled + completed, 40);
    // Every cancelled task's work recorded its cancel (or ended after it).
    assert_eq!(witness(&mut server, "w").len(), cancelled);
}

#[test]
fn tasks_list_pages_with_an_opaque_cursor() {
    let mut server = Server::initialized("2025-11-25");
    let mut created = Vec::new();
    for i in 0..60 {
        created.push(task_id(&create(
            &mut server,
            json!(i),
            "sleep",
            json!({"ms": 0}),
            json!({}),
        )));
    }
    let first = server.request(json!("l1"), "tasks/list", json!({}));
    let page: Vec<Value> = first["result"]["tasks"].as_array().expect("tasks").clone();
    assert_eq!(page.len(), 50);
    let cursor = first["result"]["nextCursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let second = server.request(json!("l2"), "tasks/list", json!({"cursor": cursor}));
    assert!(second["result"].get("nextCursor").is_none(), "{second}");
    let listed: Vec<String> = page
        .iter()
        .chain(second["result"]["tasks"].as_array().expect("tasks"))
        .map(task_id)
        .collect();
    assert_eq!(listed, created, "every task, in creation order");
    for cursor in [json!("nonsense"), json!("99999999"), json!(5)] {
        let bad = server.request(json!("lx"), "tasks/list", json!({"cursor": cursor}));
        assert_eq!(error_code(&bad), -32602, "{cursor}: {bad}");
    }
}

#[test]
fn a_task_goes_away_when_its_ttl_runs_out() {
    let mut server = Server::initialized("2025-11-25");
    // ttl is clamped to at least 1 s; a working task's wait ends with it.
    let params = json!({"name": "work", "arguments": {}, "task": {"ttl": 1}});
    let created = ask(&mut server, json!(1), "tools/call", params);
    assert_eq!(created["result"]["task"]["ttl"], 1000, "{created}");
    let id = task_id(&created["result"]["task"]);
    let start = Instant::now();
    let waited = ask(&mut server, json!(2), "tasks/result", json!({"taskId": id}));
    assert_eq!(error_code(&waited), -32602, "{waited}");
    assert!(
        start.elapsed() >= Duration::from_millis(900),
        "{:?}",
        start.elapsed()
    );
    assert!(start.elapsed() < PATIENCE);
    assert_eq!(error_code(&get(&mut server, json!(3), &id)), -32602);
    // Expiry is no cancel: the witness does not list it.
    assert_eq!(witness(&mut server, "w"), Vec::<Value>::new());
}

#[test]
fn the_table_is_bounded_and_finished_tasks_make_room() {
    let mut server = Server::initialized("2025-11-25");
    let first = task_id(&create(
        &mut server,
        json!("first"),
        "sleep",
        json!({"ms": 0}),
        json!({}),
    ));
    ask(
        &mut server,
        json!("r"),
        "tasks/result",
        json!({"taskId": first}),
    );
    for i in 0..999 {
        create(&mut server, json!(i), "work", json!({}), json!({}));
    }
    // Full: the finished task makes room for one more…
    create(&mut server, json!("more"), "work", json!({}), json!({}));
    assert_eq!(error_code(&get(&mut server, json!("g"), &first)), -32602);
    // …and then, with 1000 tasks working, the next call is refused.
    let params = json!({"name": "work", "arguments": {}, "task": {}});
    let refused = ask(&mut server, json!("full"), "tools/call", params);
    assert_eq!(error_code(&refused), -32603, "{refused}");
}
