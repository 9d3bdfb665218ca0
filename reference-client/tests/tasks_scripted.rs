//! Tasks against scripted peers, for what the reference server never does: a cancel that
//! loses the race to completion, a `tasks/result` that stays unanswered after the cancel,
//! a server without the tasks capability, a handle that comes late, the 2026 poll
//! interval, failed tasks and tasks that ask for input.

use reference_client::{
    CallError, Client, ClientOptions, RequestOptions, TaskOptions, PROTOCOL_VERSION,
    STATELESS_VERSION,
};
use reference_wire::LineReader;
use serde_json::{json, Value};
use std::future::Future;
use std::time::{Duration, Instant};
use tokio::io::{AsyncWriteExt, DuplexStream, ReadHalf, WriteHalf};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

type Lines = LineReader<ReadHalf<DuplexStream>>;
type Out = WriteHalf<DuplexStream>;

/// A short grace, so tests that wait it out stay short.
fn grace() -> TaskOptions {
    TaskOptions {
        cancel_grace: Duration::from_millis(300),
        ..TaskOptions::default()
    }
}

async fn next(lines: &mut Lines) -> Option<Value> {
    let line = lines.next_line().await?.expect("readable");
    Some(serde_json::from_str(&line).expect("json"))
}

/// The next message that is not a `notifications/initialized`.
async fn expect(lines: &mut Lines, method: &str) -> Value {
    let message = next(lines)
        .await
        .unwrap_or_else(|| panic!("{method} expected"));
    assert_eq!(message["method"], method, "{message}");
    message
}

async fn send(out: &mut Out, message: Value) {
    let mut line = message.to_string();
    line.push('\n');
    out.write_all(line.as_bytes()).await.expect("write");
}

async fn answer(out: &mut Out, request: &Value, result: Value) {
    send(
        out,
        json!({"jsonrpc": "2.0", "id": request["id"], "result": result}),
    )
    .await;
}

async fn refuse(out: &mut Out, request: &Value, code: i64) {
    let error = json!({"code": code, "message": "no"});
    send(
        out,
        json!({"jsonrpc": "2.0", "id": request["id"], "error": error}),
    )
    .await;
}

/// A peer of `version` that opens the session declaring `capabilities`, then runs
/// `script`; its task is returned so its assertions count when it is awaited.
async fn connect<F, Fut>(version: &str, capabilities: Value, script: F) -> (Client, JoinHandle<()>)
where
    F: FnOnce(Lines, Out) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let (client_side, peer_side) = tokio::io::duplex(64 * 1024);
    let (peer_read, mut out) = tokio::io::split(peer_side);
    let stateless = version == STATELESS_VERSION;
    let peer = tokio::spawn(async move {
        let mut lines = LineReader::new(peer_read);
        if stateless {
            let discover = expect(&mut lines, "server/discover").await;
            let result = json!({"resultType": "complete", "supportedVersions": [STATELESS_VERSION],
                "capabilities": capabilities});
            answer(&mut out, &discover, result).await;
        } else {
            let init = expect(&mut lines, "initialize").await;
            let result = json!({"protocolVersion": PROTOCOL_VERSION, "capabilities": capabilities,
                "serverInfo": {"name": "scripted", "version": "0"}});
            answer(&mut out, &init, result).await;
            expect(&mut lines, "notifications/initialized").await;
        }
        script(lines, out).await;
    });
    let options = ClientOptions {
        protocol_version: Some(version.into()),
        ..ClientOptions::default()
    };
    let (read, write) = tokio::io::split(client_side);
    let client = Client::connect(read, write, options)
        .await
        .expect("connect");
    (client, peer)
}

fn core_capabilities() -> Value {
    json!({"tools": {}, "tasks": {"cancel": {}, "requests": {"tools": {"call": {}}}}})
}

async fn list(lines: &mut Lines, out: &mut Out, support: &str) {
    let listing = expect(lines, "tools/list").await;
    let tool = json!({"name": "work", "inputSchema": {"type": "object"},
        "execution": {"taskSupport": support}});
    answer(out, &listing, json!({"tools": [tool]})).await;
}

fn created(id: &str) -> Value {
    json!({"task": {"taskId": id, "status": "working", "ttl": 60000, "pollInterval": 100,
        "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z"}})
}

fn text(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

/// Drains what the client still sends, failing on any `notifications/cancelled`.
async fn no_cancel_after(mut lines: Lines) {
    while let Some(message) = next(&mut lines).await {
        assert_ne!(message["method"], "notifications/cancelled", "{message}");
    }
}

#[tokio::test]
async fn a_cancel_that_loses_the_race_gives_the_result() {
    let (client, peer) = connect(
        PROTOCOL_VERSION,
        core_capabilities(),
        |mut lines, mut out| async move {
            list(&mut lines, &mut out, "optional").await;
            let call = expect(&mut lines, "tools/call").await;
            answer(&mut out, &call, created("t-1")).await;
            let wait = expect(&mut lines, "tasks/result").await;
            let cancel = expect(&mut lines, "tasks/cancel").await;
            assert_eq!(cancel["params"]["taskId"], "t-1");
            // The task had completed: the cancel is refused, the result arrives.
            refuse(&mut out, &cancel, -32602).await;
            answer(&mut out, &wait, text("finished first")).await;
            no_cancel_after(lines).await;
        },
    )
    .await;
    client.list_tools().await.expect("tools/list");
    let cancel = CancellationToken::new();
    cancel.cancel();
    let outcome = client
        .call_tool_as_task(
            "work",
            json!({}),
            RequestOptions::default().cancel(cancel),
            grace(),
        )
        .await
        .expect("the result won the race");
    assert_eq!(outcome.text(), "finished first");
    client.close().await.expect("close");
    peer.await.expect("the peer's checks");
}

#[tokio::test]
async fn an_unanswered_wait_is_ended_after_the_grace() {
    let (client, peer) = connect(
        PROTOCOL_VERSION,
        core_capabilities(),
        |mut lines, mut out| async move {
            list(&mut lines, &mut out, "required").await;
            let call = expect(&mut lines, "tools/call").await;
            assert_eq!(call["params"]["task"], json!({}));
            answer(&mut out, &call, created("t-2")).await;
            let wait = expect(&mut lines, "tasks/result").await;
            let cancel = expect(&mut lines, "tasks/cancel").await;
            let cancelled = json!({"taskId": "t-2", "status": "cancelled"});
            answer(&mut out, &cancel, cancelled).await;
            // The wait is never answered: after the grace the client ends it (TSK-06).
            let ended = expect(&mut lines, "notifications/cancelled").await;
            assert_eq!(ended["params"]["requestId"], wait["id"]);
            no_cancel_after(lines).await;
        },
    )
    .await;
    client.list_tools().await.expect("tools/list");
    let cancel = CancellationToken::new();
    cancel.cancel();
    let outcome = client
        .call_tool_as_task(
            "work",
            json!({}),
            RequestOptions::default().cancel(cancel),
            grace(),
        )
        .await;
    assert!(matches!(outcome, Err(CallError::Cancelled)), "{outcome:?}");
    client.close().await.expect("close");
    peer.await.expect("the peer's checks");
}

#[tokio::test]
async fn no_task_without_the_capability_or_for_a_forbidden_tool() {
    for (capabilities, support) in [
        (json!({"tools": {}}), "optional"),
        (core_capabilities(), "forbidden"),
    ] {
        let listed = capabilities.get("tasks").is_some();
        let (client, peer) = connect(
            PROTOCOL_VERSION,
            capabilities,
            move |mut lines, mut out| async move {
                if listed {
                    list(&mut lines, &mut out, support).await;
                }
                let call = expect(&mut lines, "tools/call").await;
                assert!(call["params"].get("task").is_none(), "{call}");
                answer(&mut out, &call, text("plain")).await;
                no_cancel_after(lines).await;
            },
        )
        .await;
        let outcome = client
            .call_tool_as_task("work", json!({}), RequestOptions::default(), grace())
            .await
            .expect("a plain result");
        assert_eq!(outcome.text(), "plain");
        client.close().await.expect("close");
        peer.await.expect("the peer's checks");
    }
}

#[tokio::test]
async fn a_cancel_before_the_handle_waits_for_it() {
    let (client, peer) = connect(
        PROTOCOL_VERSION,
        core_capabilities(),
        |mut lines, mut out| async move {
            list(&mut lines, &mut out, "optional").await;
            let call = expect(&mut lines, "tools/call").await;
            // The client gave up meanwhile; it must not cancel the tools/call (TSK-03).
            tokio::time::sleep(Duration::from_millis(100)).await;
            answer(&mut out, &call, created("t-3")).await;
            let wait = expect(&mut lines, "tasks/result").await;
            let cancel = expect(&mut lines, "tasks/cancel").await;
            answer(
                &mut out,
                &cancel,
                json!({"taskId": "t-3", "status": "cancelled"}),
            )
            .await;
            refuse(&mut out, &wait, -32602).await;
            no_cancel_after(lines).await;
        },
    )
    .await;
    client.list_tools().await.expect("tools/list");
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        canceller.cancel();
    });
    let outcome = client
        .call_tool_as_task(
            "work",
            json!({}),
            RequestOptions::default().cancel(cancel),
            grace(),
        )
        .await;
    assert!(matches!(outcome, Err(CallError::Cancelled)), "{outcome:?}");
    client.close().await.expect("close");
    peer.await.expect("the peer's checks");
}

fn extension_task(id: &str, status: &str, poll_ms: u64) -> Value {
    json!({"resultType": "complete", "taskId": id, "status": status, "ttlMs": 60000,
        "pollIntervalMs": poll_ms, "createdAt": "x", "lastUpdatedAt": "x"})
}

#[tokio::test]
async fn extension_polls_no_faster_than_asked_and_takes_any_terminal_status() {
    let poll_ms = 150;
    let (client, peer) = connect(
        STATELESS_VERSION,
        json!({"tools": {}}),
        move |mut lines, mut out| async move {
            let call = expect(&mut lines, "tools/call").await;
            let mut task = extension_task("t-4", "working", poll_ms);
            task["resultType"] = json!("task");
            answer(&mut out, &call, task).await;
            let mut answered = Instant::now();
            let mut acked = false;
            let mut polls = 0;
            while polls < 3 {
                let message = next(&mut lines).await.expect("a poll or the cancel");
                if message["method"] == "tasks/cancel" {
                    // The ack is empty; the task goes on until it ends.
                    assert!(!acked, "one cancel");
                    acked = true;
                    answer(&mut out, &message, json!({"resultType": "complete"})).await;
                    continue;
                }
                assert_eq!(message["method"], "tasks/get", "{message}");
                assert!(
                    answered.elapsed() >= Duration::from_millis(poll_ms),
                    "poll {polls} came early"
                );
                assert_eq!(message["params"]["taskId"], "t-4");
                polls += 1;
                // It completes after the cancel was acknowledged.
                let status = if polls == 3 && acked {
                    "completed"
                } else {
                    "working"
                };
                if status == "working" && polls == 3 {
                    polls -= 1;
                }
                let mut task = extension_task("t-4", status, poll_ms);
                if status == "completed" {
                    task["result"] = text("done anyway");
                }
                answer(&mut out, &message, task).await;
                answered = Instant::now();
            }
            assert!(acked);
            no_cancel_after(lines).await;
        },
    )
    .await;
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    let started = Instant::now();
    tokio::spawn(async move {
        // Between the first poll (at 150 ms) and the second (at 300 ms or later).
        tokio::time::sleep(Duration::from_millis(200)).await;
        canceller.cancel();
    });
    let outcome = client
        .call_tool_as_task(
            "work",
            json!({}),
            RequestOptions::default().cancel(cancel),
            TaskOptions::default(),
        )
        .await;
    // The cancel may come before or after the second poll is sent; either way the task
    // ended `completed` after the ack, and that result is the outcome.
    assert_eq!(outcome.expect("the result").text(), "done anyway");
    assert!(started.elapsed() >= Duration::from_millis(3 * poll_ms));
    client.close().await.expect("close");
    peer.await.expect("the peer's checks");
}
