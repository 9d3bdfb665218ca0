//! Tasks over Streamable HTTP against the reference server (this package's binary run
//! with the hidden `--serve --http`): in 2025-11-25 a task's progress comes on the
//! waiting `tasks/result` stream and a cancelled wait is a POSTed cancel of that request
//! only; in 2026-07-28 every `tasks/*` request carries `Mcp-Name` (the server refuses
//! one without it with -32020) and a cancel is `tasks/cancel`, not closing a stream.

use reference_client::{
    CallError, Client, ClientOptions, Progress, RequestOptions, Started, TaskOptions, TaskStatus,
};
use serde_json::{json, Value};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

/// The reference server over HTTP on a free port, killed when dropped.
struct Server {
    _child: Child,
    url: String,
}

async fn server(extra: &[&str]) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_reference-client"))
        .args(["--serve", "--http", "127.0.0.1:0"])
        .args(extra)
        .env_remove("CONFORMANCE_ACTIONS")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the reference server");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the server says where it listens")
        .expect("readable")
        .expect("a line");
    let url = line
        .rsplit(' ')
        .next()
        .expect("listening on URL")
        .to_owned();
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Server { _child: child, url }
}

async fn connect(server: &Server, version: &str) -> Client {
    let options = ClientOptions {
        protocol_version: Some(version.into()),
        ..ClientOptions::default()
    };
    Client::connect_http(&server.url, options)
        .await
        .expect("connect")
}

async fn witness(client: &Client) -> Value {
    let result = client
        .call_tool("cancellations", json!({}), RequestOptions::default())
        .await
        .expect("cancellations");
    serde_json::from_str(&result.text()).expect("json")
}

#[tokio::test]
async fn core_task_progress_comes_on_the_wait_and_the_cancel_is_tasks_cancel() {
    let server = server(&[]).await;
    let client = connect(&server, "2025-11-25").await;
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    let mut ticks = Vec::new();
    let mut on_progress = |p: &Progress| {
        ticks.push(p.progress);
        if ticks.len() == 2 {
            canceller.cancel();
        }
    };
    // A progress callback at the start asks for progress (it attaches the token); what
    // comes after the handle goes to the callback given to follow.
    let mut before = |_: &Progress| {};
    let Started::Task(mut task) = client
        .start_tool_task(
            "ticker",
            json!({"interval_ms": 50}),
            RequestOptions::default().progress(&mut before),
            TaskOptions::default(),
        )
        .await
        .expect("started")
    else {
        panic!("ticker may run as a task")
    };
    let options = RequestOptions::default()
        .progress(&mut on_progress)
        .cancel(cancel)
        .timeout(Duration::from_secs(20));
    let outcome = task.follow(options).await;
    assert!(matches!(outcome, Err(CallError::Cancelled)), "{outcome:?}");
    assert_eq!(task.task().status, TaskStatus::Cancelled);
    assert_eq!(ticks.len(), 2, "{ticks:?}");
    let id = task.id().to_owned();
    drop(task);
    assert_eq!(witness(&client).await, json!([id]));
    client.close().await.expect("close");
}

#[tokio::test]
async fn core_cancelled_wait_over_http_leaves_the_task_working() {
    let server = server(&[]).await;
    let client = connect(&server, "2025-11-25").await;
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
    let waited = task
        .result(RequestOptions::default().timeout(Duration::from_millis(200)))
        .await;
    assert!(matches!(waited, Err(CallError::TimedOut(_))), "{waited:?}");
    assert_eq!(
        task.get().await.expect("tasks/get").status,
        TaskStatus::Working
    );
    // The wait observed its cancel (listed under its request id); the task did not.
    let seen = witness(&client).await;
    assert_eq!(seen.as_array().map(Vec::len), Some(1), "{seen}");
    assert!(seen[0].is_number(), "{seen}");
    assert_eq!(
        task.cancel().await.expect("tasks/cancel").status,
        TaskStatus::Cancelled
    );
    drop(task);
    client.close().await.expect("close");
}

#[tokio::test]
async fn core_task_over_json_responses() {
    let server = server(&["--json-response"]).await;
    let client = connect(&server, "2025-11-25").await;
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
    client.close().await.expect("close");
}

#[tokio::test]
async fn extension_tasks_name_their_task_in_mcp_name() {
    let server = server(&[]).await;
    let client = connect(&server, "2026-07-28").await;
    // The server refuses tasks/get without Mcp-Name = taskId (-32020): this finishing
    // shows the header is there.
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
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        canceller.cancel();
    });
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
    let outcome = task.follow(RequestOptions::default().cancel(cancel)).await;
    assert!(matches!(outcome, Err(CallError::Cancelled)), "{outcome:?}");
    assert_eq!(task.task().status, TaskStatus::Cancelled);
    let id = task.id().to_owned();
    drop(task);
    assert_eq!(witness(&client).await, json!([id]));
    client.close().await.expect("close");
}
