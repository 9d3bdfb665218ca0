//! The cancellation registry seen from the wire: exact ids, ignored cancels,
//! and nothing written for a request once its cancel has been read.

mod common;

use common::*;
use serde_json::{json, Value};

/// Starts `work` under `id` and waits for its "Started" progress.
fn start_work(server: &mut Server, id: Value, token: Value) {
    server.call_with_progress(id.clone(), "work", json!({}), token.clone());
    let progress = server.next();
    assert_eq!(progress["method"], "notifications/progress", "{progress}");
    assert_eq!(
        progress["params"]["progressToken"], token,
        "token must be echoed exactly"
    );
    assert_eq!(progress["params"]["progress"], 0);
}

#[test]
fn cancel_by_exact_id_for_every_id_shape() {
    let ids = [
        json!(0),
        json!(-1),
        json!(9007199254740991_i64),
        json!("a"),
        json!("7f1c9b2e-3c4d-4e5f-8a9b-0c1d2e3f4a5b"),
        json!("ünï ✓"),
    ];
    let mut server = Server::initialized("2025-11-25");
    for (n, id) in ids.iter().enumerate() {
        start_work(&mut server, id.clone(), json!(format!("t{n}")));
    }
    for id in &ids {
        server.cancel(id.clone());
    }
    assert_eq!(server.barrier(json!("b")), Vec::<Value>::new());
    assert_eq!(server.cancellations(json!("w")), Value::Array(ids.to_vec()));
}

#[test]
fn integer_and_string_ids_are_different_requests() {
    let mut server = Server::initialized("2025-11-25");
    start_work(&mut server, json!(7), json!(1));
    start_work(&mut server, json!("7"), json!(2));
    server.cancel(json!("7"));
    assert_eq!(server.barrier(json!("b1")), Vec::<Value>::new());
    assert_eq!(server.cancellations(json!("w1")), json!(["7"]));
    server.cancel(json!(7));
    assert_eq!(server.cancellations(json!("w2")), json!(["7", 7]));
}

#[test]
fn cancel_for_unknown_id_is_ignored_and_the_id_can_be_used_later() {
    let mut server = Server::initialized("2025-11-25");
    server.cancel(json!(50));
    server.cancel(json!("50"));
    assert_eq!(server.barrier(json!("b")), Vec::<Value>::new());
    let echo = server.tool(json!(50), "echo", json!({"text": "fine"}));
    assert_eq!(text_of(&echo), "fine");
    let slept = server.tool(json!("50"), "sleep", json!({"ms": 1}));
    assert_eq!(text_of(&slept), "slept");
    assert_eq!(server.cancellations(json!("w")), json!([]));
}

#[test]
fn late_cancel_after_completion_is_ignored() {
    let mut server = Server::initialized("2025-11-25");
    let slept = server.tool(json!(61), "sleep", json!({"ms": 1}));
    assert_eq!(text_of(&slept), "slept");
    server.cancel(json!(61));
    assert_eq!(server.barrier(json!("b")), Vec::<Value>::new());
    assert_eq!(server.cancellations(json!("w")), json!([]));
    // The id of an answered request may be used again.
    let again = server.tool(json!(61), "sleep", json!({"ms": 1}));
    assert_eq!(text_of(&again), "slept");
}

#[test]
fn cancel_of_initialize_is_ignored() {
    let mut server = Server::spawn();
    server.send_request(json!(0), "initialize", init_params("2025-06-18"));
    server.cancel(json!(0));
    let init = server.next();
    assert_eq!(init["id"], 0);
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    server.cancel(json!(0));
    assert_eq!(server.barrier(json!("b")), Vec::<Value>::new());
    let ping = server.tool(json!(1), "ping", json!({}));
    assert_eq!(text_of(&ping), "Server: still available");
    assert_eq!(server.cancellations(json!("w")), json!([]));
}

#[test]
fn duplicate_in_flight_id_is_rejected_without_touching_the_running_one() {
    let mut server = Server::initialized("2025-11-25");
    start_work(&mut server, json!(5), json!("p"));
    let duplicate = server.tool(json!(5), "echo", json!({"text": "x"}));
    assert_eq!(error_code(&duplicate), -32600, "{duplicate}");
    server.cancel(json!(5));
    assert_eq!(server.cancellations(json!("w")), json!([5]));
    // Once cancelled, the id is free again.
    let echo = server.tool(json!(5), "echo", json!({"text": "x"}));
    assert_eq!(text_of(&echo), "x");
}

#[test]
fn cancelled_sleep_never_answers() {
    let mut server = Server::initialized("2025-11-25");
    server.call(json!(1), "sleep", json!({"ms": 60_000}));
    server.cancel(json!(1));
    assert_eq!(server.barrier(json!("b")), Vec::<Value>::new());
    assert_eq!(server.cancellations(json!("w")), json!([1]));
}

#[test]
fn progress_message_depends_on_the_version() {
    for (version, message) in [("2024-11-05", None), ("2025-03-26", Some("Started"))] {
        let mut server = Server::initialized(version);
        server.call_with_progress(json!(1), "work", json!({}), json!(42));
        let progress = server.next();
        assert_eq!(progress["params"]["progressToken"], 42);
        assert_eq!(
            progress["params"].get("message").and_then(Value::as_str),
            message
        );
    }
}

#[test]
fn work_without_a_token_sends_no_progress_and_waits() {
    let mut server = Server::initialized("2025-11-25");
    server.call(json!(1), "work", json!({}));
    server.call(json!(2), "ticker", json!({"interval_ms": 1}));
    // The sleep answers after the ticker would have ticked many times.
    let slept = server.tool(json!(3), "sleep", json!({"ms": 30}));
    assert_eq!(text_of(&slept), "slept");
    server.cancel(json!(1));
    server.cancel(json!(2));
    assert_eq!(server.cancellations(json!("w")), json!([1, 2]));
}

#[test]
fn ticker_progress_increases_and_stops_at_the_cancel() {
    let mut server = Server::initialized("2025-11-25");
    server.call_with_progress(
        json!("t"),
        "ticker",
        json!({"interval_ms": 2}),
        json!("tick"),
    );
    let mut last = 0;
    while last < 3 {
        let progress = server.next();
        assert_eq!(progress["params"]["progressToken"], "tick", "{progress}");
        let value = progress["params"]["progress"]
            .as_u64()
            .expect("integer progress");
        assert_eq!(value, last + 1, "progress must count 1, 2, 3, ...");
        last = value;
    }
    server.cancel(json!("t"));
    // Progress may cross the cancel, but only before the barrier's answer.
    for line in server.barrier(json!("b")) {
        assert_eq!(line["method"], "notifications/progress", "{line}");
    }
    // Nothing for "t" may follow: the next line is the sleep's answer.
    let slept = server.tool(json!("s"), "sleep", json!({"ms": 20}));
    assert_eq!(text_of(&slept), "slept");
    assert_eq!(server.cancellations(json!("w")), json!(["t"]));
}

#[test]
fn ping_is_answered_while_tools_run() {
    let mut server = Server::initialized("2025-11-25");
    server.call(json!(1), "sleep", json!({"ms": 60_000}));
    start_work(&mut server, json!(2), json!("p"));
    for n in 0..10 {
        assert_eq!(server.barrier(json!(format!("b{n}"))), Vec::<Value>::new());
    }
}

#[test]
fn verbose_logs_each_cancellation_to_stderr() {
    let mut server = Server::spawn_with(&["--verbose"]);
    server.request(json!(0), "initialize", init_params("2025-11-25"));
    start_work(&mut server, json!(9), json!("p"));
    server.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 9, "reason": "user pressed stop"}}),
    );
    assert_eq!(server.barrier(json!("b")), Vec::<Value>::new());
    server.close_stdin();
    assert!(server.wait_exit(PATIENCE).success());
    let stderr = server.stderr();
    assert!(
        stderr.contains('9') && stderr.contains("user pressed stop"),
        "{stderr}"
    );
}

#[test]
fn quiet_by_default() {
    let mut server = Server::initialized("2025-11-25");
    start_work(&mut server, json!(9), json!("p"));
    server.cancel(json!(9));
    server.cancel(json!(10));
    server.barrier(json!("b"));
    server.close_stdin();
    assert!(server.wait_exit(PATIENCE).success());
    assert_eq!(server.stderr(), "");
}
