//! Tasks over Streamable HTTP: in 2025-11-25 sessions (tasks belong to the
//! session; progress rides a waiting `tasks/result` stream; a cancelled
//! wait ends its stream, not the task) and in the stateless 2026-07-28 era
//! (tasks outlive their requests; `Mcp-Name` is the task id; `-32021` and
//! its 400).

mod common_http;

use common_http::{
    content_type, messages, stamped, stamped_with, stateless_headers, tasks_capabilities, Events,
    HttpServer,
};
use reqwest::header::HeaderValue;
use reqwest::StatusCode;
use serde_json::{json, Value};

const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

fn error_of(message: &Value) -> i64 {
    message["error"]["code"].as_i64().unwrap_or_default()
}

// 2025-11-25, in sessions

/// Starts `work` as a task in the client's session; its task id.
async fn work_task(client: &common_http::Client) -> String {
    let params = json!({"name": "work", "arguments": {}, "task": {}});
    let created = client.request(json!(1), "tools/call", params).await;
    let task = &created[0]["result"]["task"]["taskId"];
    task.as_str().expect("a taskId").to_owned()
}

#[tokio::test]
async fn a_sessions_task_reports_progress_on_its_waiting_result_stream_until_cancelled() {
    let server = HttpServer::start(&[]);
    let mut client = server.client();
    let init = client.initialize("2025-11-25").await;
    assert!(init["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"].is_object());
    let params = json!({"name": "ticker", "arguments": {"interval_ms": 5}, "task": {"ttl": 30000},
        "_meta": {"progressToken": "tick"}});
    let created = client.request(json!(1), "tools/call", params).await;
    assert_eq!(
        created.len(),
        1,
        "the call's stream carries only the task: {created:?}"
    );
    let task = created[0]["result"]["task"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();
    // A waiting tasks/result carries the task's progress.
    let body =
        json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/result", "params": {"taskId": task}});
    let waiting = client.post(&body).await;
    assert_eq!(waiting.status(), StatusCode::OK);
    let mut events = Events::new(waiting);
    for _ in 0..3 {
        let progress = events.next().await.expect("progress");
        assert_eq!(progress["method"], "notifications/progress", "{progress}");
        assert_eq!(progress["params"]["progressToken"], "tick");
        assert_eq!(
            progress["params"]["_meta"][RELATED_TASK]["taskId"],
            task.as_str()
        );
    }
    let cancel = client
        .request(json!(3), "tasks/cancel", json!({"taskId": task}))
        .await;
    assert_eq!(cancel[0]["result"]["status"], "cancelled", "{cancel:?}");
    // The rest of the wait: progress queued before the cancel, then the
    // cancelled outcome, then the end of the stream.
    let mut outcome = None;
    while let Some(message) = events.next().await {
        assert!(outcome.is_none(), "after the answer: {message}");
        if message["method"] != "notifications/progress" {
            outcome = Some(message);
        }
    }
    let outcome = outcome.expect("an answer to tasks/result");
    assert_eq!(
        (outcome["id"].clone(), error_of(&outcome)),
        (json!(2), -32602),
        "{outcome}"
    );
}

#[tokio::test]
async fn tasks_belong_to_the_session_that_created_them() {
    let server = HttpServer::start(&[]);
    let mut alice = server.client();
    alice.initialize("2025-11-25").await;
    let task = work_task(&alice).await;
    let mut bob = server.client();
    bob.initialize("2025-11-25").await;
    let foreign = bob
        .request(json!(1), "tasks/get", json!({"taskId": task}))
        .await;
    assert_eq!(error_of(&foreign[0]), -32602, "{foreign:?}");
    let cancel = bob
        .request(json!(2), "tasks/cancel", json!({"taskId": task}))
        .await;
    assert_eq!(error_of(&cancel[0]), -32602, "{cancel:?}");
    let listed = bob.request(json!(3), "tasks/list", json!({})).await;
    assert_eq!(listed[0]["result"]["tasks"], json!([]), "{listed:?}");
    let own = alice
        .request(json!(2), "tasks/get", json!({"taskId": task}))
        .await;
    assert_eq!(own[0]["result"]["status"], "working", "{own:?}");
}

#[tokio::test]
async fn a_cancelled_wait_ends_its_stream_and_the_task_works_on() {
    let server = HttpServer::start(&[]);
    let mut client = server.client();
    client.initialize("2025-11-25").await;
    let task = work_task(&client).await;
    let body = json!({"jsonrpc": "2.0", "id": "wait", "method": "tasks/result", "params": {"taskId": task}});
    let waiting = client.post(&body).await;
    assert_eq!(
        client.cancel(json!("wait")).await.status(),
        StatusCode::ACCEPTED
    );
    assert_eq!(
        messages(waiting).await,
        Vec::<Value>::new(),
        "no answer to a cancelled wait"
    );
    let status = client
        .request(json!(2), "tasks/get", json!({"taskId": task}))
        .await;
    assert_eq!(status[0]["result"]["status"], "working", "{status:?}");
    assert_eq!(client.cancellations(json!("w")).await, json!(["wait"]));
}

#[tokio::test]
async fn a_task_poll_gets_one_json_body_in_both_eras() {
    let server = HttpServer::start(&[]);
    let mut client = server.client();
    client.initialize("2025-11-25").await;
    let task = work_task(&client).await;
    // tasks.mdx: servers SHOULD NOT upgrade tasks/get to an SSE stream.
    let get = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"taskId": task}});
    let response = client.post(&get).await;
    assert_eq!(content_type(&response), "application/json");
    assert_eq!(messages(response).await[0]["result"]["status"], "working");
    // A client that accepts only a stream still gets one.
    let mut headers = client.headers();
    headers.insert("accept", HeaderValue::from_static("text/event-stream"));
    let response = client.post_with(&get, headers).await;
    assert_eq!(content_type(&response), "text/event-stream");
    let stateless = stamped_with(
        json!(3),
        "tools/call",
        json!({"name": "work", "arguments": {}}),
        tasks_capabilities(),
    );
    let created = messages(client.post_stateless(&stateless).await).await;
    let task = created[0]["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();
    let get = stamped_with(
        json!(4),
        "tasks/get",
        json!({"taskId": task}),
        tasks_capabilities(),
    );
    let response = client.post_stateless(&get).await;
    assert_eq!(content_type(&response), "application/json");
}

// 2026-07-28, stateless

/// POSTs a stamped request with its mirrored headers; the status and the
/// last message (a JSON body or the stream's last event).
async fn post(client: &common_http::Client, request: &Value) -> (StatusCode, Value) {
    let response = client.post_stateless(request).await;
    let status = response.status();
    let last = messages(response).await.pop().unwrap_or(Value::Null);
    (status, last)
}

#[tokio::test]
async fn stateless_tasks_outlive_their_request_and_route_by_task_id() {
    let server = HttpServer::start(&[]);
    let client = server.client();
    let call = stamped_with(
        json!(1),
        "tools/call",
        json!({"name": "work", "arguments": {}}),
        tasks_capabilities(),
    );
    let (status, created) = post(&client, &call).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task = created["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();
    // Another client of the process reaches it by its id (TASKS.md, scoping).
    let other = server.client();
    let get = stamped_with(
        json!(2),
        "tasks/get",
        json!({"taskId": task}),
        tasks_capabilities(),
    );
    let (status, working) = post(&other, &get).await;
    assert_eq!(
        (status, working["result"]["status"].clone()),
        (StatusCode::OK, json!("working")),
        "{working}"
    );
    // Mcp-Name must be the task id.
    for value in [Some("someone-else"), None] {
        let mut headers = stateless_headers(&get);
        match value {
            Some(value) => headers.insert("mcp-name", HeaderValue::from_static(value)),
            None => headers.remove("mcp-name"),
        };
        let response = client.post_with(&get, headers).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{value:?}");
        assert_eq!(error_of(&messages(response).await[0]), -32020, "{value:?}");
    }
    let cancel = stamped_with(
        json!(3),
        "tasks/cancel",
        json!({"taskId": task}),
        tasks_capabilities(),
    );
    let (status, ack) = post(&client, &cancel).await;
    assert_eq!(
        (status, ack["result"]["resultType"].clone()),
        (StatusCode::OK, json!("complete")),
        "{ack}"
    );
    let (_, cancelled) = post(&client, &get).await;
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    assert_eq!(
        client.stateless_cancellations(json!("w")).await,
        json!([task])
    );
}

#[tokio::test]
async fn stateless_refusals_have_their_statuses() {
    let server = HttpServer::start(&[]);
    let client = server.client();
    // Without the declaration: -32021 with 400, also without Mcp-Name.
    let job = stamped(
        json!(1),
        "tools/call",
        json!({"name": "job", "arguments": {"ms": 0}}),
    );
    let (status, refused) = post(&client, &job).await;
    assert_eq!(
        (status, error_of(&refused)),
        (StatusCode::BAD_REQUEST, -32021),
        "{refused}"
    );
    let get = stamped(json!(2), "tasks/get", json!({"taskId": "abc"}));
    let mut headers = stateless_headers(&get);
    headers.remove("mcp-name");
    let response = client.post_with(&get, headers).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(error_of(&messages(response).await[0]), -32021);
    // 2025-11-25's methods: 404 with -32601.
    for method in ["tasks/result", "tasks/list"] {
        let request = stamped_with(
            json!(3),
            method,
            json!({"taskId": "abc"}),
            tasks_capabilities(),
        );
        let (status, gone) = post(&client, &request).await;
        assert_eq!(
            (status, error_of(&gone)),
            (StatusCode::NOT_FOUND, -32601),
            "{method}: {gone}"
        );
    }
    // An unknown task: an ordinary -32602 answer.
    let unknown = stamped_with(
        json!(4),
        "tasks/cancel",
        json!({"taskId": "abc"}),
        tasks_capabilities(),
    );
    let (status, answer) = post(&client, &unknown).await;
    assert_eq!(
        (status, error_of(&answer)),
        (StatusCode::OK, -32602),
        "{answer}"
    );
}
