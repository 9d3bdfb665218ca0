//! Tool calls run as tasks against the reference server over stdio, in both eras: what
//! may and must be a task (TSK-01), progress for the task's whole life (PRG-10), cancel
//! with `tasks/cancel` and never `notifications/cancelled` for the call (TSK-03, CAN-15),
//! a cancelled `tasks/result` wait that leaves the task working (TSK-06), and the 2026
//! extension's cooperative cancel that may end in another terminal status (TSK-05).

#[path = "tasks/tap.rs"]
mod tap;

use reference_client::{
    CallError, Progress, RequestOptions, Started, TaskOptions, TaskStatus, TaskSupport,
};
use serde_json::json;
use std::time::Duration;
use tap::{connect, settle, witness};
use tokio_util::sync::CancellationToken;

const CORE: &str = "2025-11-25";
const EXTENSION: &str = "2026-07-28";

#[tokio::test]
async fn core_task_is_cancelled_with_tasks_cancel_after_its_progress() {
    let (client, wire) = connect(CORE).await;
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    let mut seen = Vec::new();
    let mut on_progress = |p: &Progress| {
        seen.push(p.message.clone());
        canceller.cancel();
    };
    let outcome = client
        .call_tool_as_task(
            "work",
            json!({}),
            RequestOptions::default()
                .progress(&mut on_progress)
                .cancel(cancel),
            TaskOptions {
                ttl: Some(Duration::from_secs(60)),
                ..TaskOptions::default()
            },
        )
        .await;
    assert!(matches!(outcome, Err(CallError::Cancelled)), "{outcome:?}");
    settle(&client).await;
    assert_eq!(seen, [Some("Started".to_owned())]);
    // The first task call listed the tools, and asked with params.task and its ttl.
    assert_eq!(wire.sent("tools/list").len(), 1);
    let call = &wire.sent("tools/call")[0];
    assert_eq!(call["params"]["task"], json!({"ttl": 60000}));
    assert!(call["params"]["_meta"]["progressToken"].is_string());
    let task = wire.task_id();
    let cancels = wire.sent("tasks/cancel");
    assert_eq!(cancels.len(), 1);
    assert_eq!(cancels[0]["params"], json!({"taskId": task}));
    // The wait was answered (the task is terminal), so nothing was cancelled at all.
    assert_eq!(wire.cancelled_ids(), Vec::<serde_json::Value>::new());
    assert_eq!(witness(&client).await, json!([task]));
    client.ping().await.expect("still serving");
}

#[tokio::test]
async fn core_required_tools_run_as_tasks_and_forbidden_ones_do_not() {
    let (client, wire) = connect(CORE).await;
    client.list_tools().await.expect("tools/list");
    assert_eq!(client.task_support("job"), Some(TaskSupport::Required));
    assert_eq!(client.task_support("echo"), Some(TaskSupport::Forbidden));
    assert_eq!(client.task_support("work"), Some(TaskSupport::Optional));
    // A plain call of a required tool is made a task, as TSK-01 requires.
    let done = client
        .call_tool("job", json!({"ms": 20}), RequestOptions::default())
        .await
        .expect("job");
    assert_eq!(done.text(), "done");
    // A task call of a forbidden tool is a plain call.
    let echoed = client
        .call_tool_as_task(
            "echo",
            json!({"text": "plain"}),
            RequestOptions::default(),
            TaskOptions::default(),
        )
        .await
        .expect("echo");
    assert_eq!(echoed.text(), "plain");
    let calls = wire.sent("tools/call");
    assert_eq!(calls[0]["params"]["task"], json!({}), "job: {calls:?}");
    assert!(calls[1]["params"].get("task").is_none(), "echo: {calls:?}");
    assert_eq!(wire.sent("tasks/result").len(), 1);
    // A tool error ends the task `failed`; tasks/result returns the isError result.
    let failed = client
        .call_tool_as_task(
            "job",
            json!({"ms": 0, "error": "broke"}),
            RequestOptions::default(),
            TaskOptions::default(),
        )
        .await
        .expect("a tool error is a result");
    assert!(failed.is_error);
    assert_eq!(failed.text(), "broke");
}

#[tokio::test]
async fn core_deadline_cancels_the_task_not_the_call() {
    let (client, wire) = connect(CORE).await;
    let outcome = client
        .call_tool_as_task(
            "work",
            json!({}),
            RequestOptions::default().timeout(Duration::from_millis(300)),
            TaskOptions::default(),
        )
        .await;
    assert!(
        matches!(outcome, Err(CallError::TimedOut(_))),
        "{outcome:?}"
    );
    settle(&client).await;
    let task = wire.task_id();
    assert_eq!(wire.sent("tasks/cancel").len(), 1);
    wire.assert_no_cancel_of(&["tools/call", "tasks/get"]);
    assert_eq!(witness(&client).await, json!([task]));
}

#[tokio::test]
async fn core_cancelled_wait_leaves_the_task_working() {
    let (client, wire) = connect(CORE).await;
    let Started::Task(mut task) = client
        .start_tool_task(
            "work",
            json!({}),
            RequestOptions::default(),
            TaskOptions::default(),
        )
        .await
        .expect("started")
    else {
        panic!("work may run as a task")
    };
    let stop = CancellationToken::new();
    let stopper = stop.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        stopper.cancel();
    });
    let waited = task.result(RequestOptions::default().cancel(stop)).await;
    assert!(matches!(waited, Err(CallError::Cancelled)), "{waited:?}");
    settle(&client).await;
    // TSK-06: the wait was cancelled, with the tasks/result's own id; the task works on.
    let wait = wire.id_of("tasks/result");
    assert_eq!(wire.cancelled_ids(), std::slice::from_ref(&wait));
    assert!(wire.sent("tasks/cancel").is_empty());
    assert_eq!(
        task.get().await.expect("tasks/get").status,
        TaskStatus::Working
    );
    assert_eq!(witness(&client).await, json!([wait]));
    // Now the task itself.
    let cancelled = task.cancel().await.expect("tasks/cancel");
    assert_eq!(cancelled.status, TaskStatus::Cancelled);
    let id = task.id().to_owned();
    assert_eq!(witness(&client).await, json!([wait, id]));
    // A second cancel of the terminal task is refused (TSK-04).
    let again = task.cancel().await;
    assert!(
        matches!(again, Err(CallError::Rpc(ref e)) if e.code == -32602),
        "{again:?}"
    );
}

#[tokio::test]
async fn a_task_that_cannot_stop_stays_cancelled() {
    // 2025-11-25: the cancel wins for good, even though the work runs to its end.
    let (client, wire) = connect(CORE).await;
    client.list_tools().await.expect("tools/list");
    // Cancelled before the task exists: the client waits for its handle, then cancels it.
    let cancel = CancellationToken::new();
    cancel.cancel();
    let outcome = client
        .call_tool_as_task(
            "job",
            json!({"ms": 200, "ignore_cancel": true}),
            RequestOptions::default().cancel(cancel),
            TaskOptions::default(),
        )
        .await;
    assert!(matches!(outcome, Err(CallError::Cancelled)), "{outcome:?}");
    settle(&client).await;
    assert_eq!(wire.sent("tasks/cancel").len(), 1);
    wire.assert_no_cancel_of(&["tools/call", "tasks/get", "tasks/result"]);
}

#[tokio::test]
async fn versions_without_tasks_make_plain_calls() {
    let (client, wire) = connect("2025-06-18").await;
    let cancel = CancellationToken::new();
    cancel.cancel();
    let outcome = client
        .call_tool_as_task(
            "work",
            json!({}),
            RequestOptions::default().cancel(cancel),
            TaskOptions::default(),
        )
        .await;
    assert!(matches!(outcome, Err(CallError::Cancelled)), "{outcome:?}");
    settle(&client).await;
    // No listing, no task: a plain call, cancelled as one.
    assert!(wire.sent("tools/list").is_empty());
    let call = wire.id_of("tools/call");
    assert!(wire.sent("tools/call")[0]["params"].get("task").is_none());
    assert_eq!(wire.cancelled_ids(), [call]);
}

#[tokio::test]
async fn extension_task_polls_to_its_inlined_result() {
    let (client, wire) = connect(EXTENSION).await;
    let done = client
        .call_tool_as_task(
            "job",
            json!({"ms": 50}),
            RequestOptions::default(),
            TaskOptions::default(),
        )
        .await
        .expect("job");
    assert_eq!(done.text(), "done");
    let call = &wire.sent("tools/call")[0];
    let declared = &call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"];
    assert_eq!(
        declared,
        &json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
    );
    assert!(call["params"].get("task").is_none());
    let polls = wire.sent("tasks/get");
    assert!(!polls.is_empty());
    for poll in &polls {
        let declared = &poll["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"];
        assert_eq!(
            declared["extensions"]["io.modelcontextprotocol/tasks"],
            json!({})
        );
    }
    assert!(wire.sent("tasks/result").is_empty());
    assert!(wire.sent("tools/list").is_empty());
    // A plain call of the required tool does not declare the extension: -32021.
    let plain = client
        .call_tool("job", json!({"ms": 0}), RequestOptions::default())
        .await;
    assert!(
        matches!(plain, Err(CallError::Rpc(ref e)) if e.code == -32021),
        "{plain:?}"
    );
}

#[tokio::test]
async fn extension_task_is_cancelled_and_polled_until_terminal() {
    let (client, wire) = connect(EXTENSION).await;
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
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
    assert!(matches!(outcome, Err(CallError::Cancelled)), "{outcome:?}");
    settle(&client).await;
    let task = wire.task_id();
    assert_eq!(wire.sent("tasks/cancel").len(), 1);
    // The ack says nothing of the status: a poll after it saw `cancelled`.
    let cancel_at = position(&wire, "tasks/cancel");
    assert!(wire
        .all()
        .iter()
        .skip(cancel_at)
        .any(|(_, m)| m["result"]["status"] == "cancelled"));
    wire.assert_no_cancel_of(&["tools/call", "tasks/get", "tasks/cancel"]);
    assert_eq!(witness(&client).await, json!([task]));
}

#[tokio::test]
async fn extension_cancel_that_loses_the_race_gives_the_result() {
    // Work that cannot be stopped ends `completed` after the ack: any terminal status is
    // the extension's to choose, and the call's outcome is then its result.
    let (client, wire) = connect(EXTENSION).await;
    let cancel = CancellationToken::new();
    cancel.cancel();
    let outcome = client
        .call_tool_as_task(
            "job",
            json!({"ms": 200, "ignore_cancel": true}),
            RequestOptions::default().cancel(cancel),
            TaskOptions::default(),
        )
        .await
        .expect("the result won");
    assert_eq!(outcome.text(), "done");
    settle(&client).await;
    assert_eq!(wire.sent("tasks/cancel").len(), 1);
}

#[tokio::test]
async fn extension_deadline_cancels_the_task() {
    let (client, wire) = connect(EXTENSION).await;
    let outcome = client
        .call_tool_as_task(
            "work",
            json!({}),
            RequestOptions::default().timeout(Duration::from_millis(300)),
            TaskOptions::default(),
        )
        .await;
    assert!(
        matches!(outcome, Err(CallError::TimedOut(_))),
        "{outcome:?}"
    );
    settle(&client).await;
    let task = wire.task_id();
    assert_eq!(wire.sent("tasks/cancel").len(), 1);
    wire.assert_no_cancel_of(&["tools/call", "tasks/get"]);
    assert_eq!(witness(&client).await, json!([task]));
}

fn position(wire: &tap::Wire, method: &str) -> usize {
    wire.all()
        .iter()
        .position(|(_, m)| m["method"] == method)
        .expect("sent")
}
