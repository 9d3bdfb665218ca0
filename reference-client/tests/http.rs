//! The client over Streamable HTTP against a scripted server that records every HTTP
//! request it gets: headers on every later request (session, version), SSE and JSON
//! answers, the cancel POST, a stale session, DELETE at the end, and bounded memory.

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use reference_client::{CallError, Client, ClientOptions, RequestOptions};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

const AFTER_PROGRESS: &str =
    "Client: cancel requested after Started\nClient: call canceled\nServer: still available\n";
const AFTER_DEADLINE: &str = "Client: call canceled\nServer: still available\n";

/// One HTTP request the server got.
#[derive(Clone, Debug)]
struct Seen {
    verb: Method,
    headers: HashMap<String, String>,
    body: Value,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }

    fn method(&self) -> &str {
        self.body["method"].as_str().unwrap_or("")
    }
}

/// A scripted Streamable HTTP server of the handshake era (2025-11-25), or with `modern`
/// of the stateless era (2026-07-28).
#[derive(Default)]
struct Fake {
    /// Speak 2026-07-28: no sessions, no initialize.
    modern: bool,
    /// Set when the `ping` tool is called, to whether the `work` stream was closed by then.
    closed_before_ping: AtomicBool,
    /// Answer requests with one JSON object instead of an SSE stream.
    json: bool,
    /// Answer the next request that carries a session with 404, forgetting the session.
    expire_once: AtomicBool,
    sessions: Mutex<Vec<String>>,
    minted: AtomicU32,
    seen: Mutex<Vec<Seen>>,
    /// Set when the client closed the response of a `work` call.
    work_closed: AtomicBool,
    /// Wakes whoever waits for the `work` stream to close.
    closing: tokio::sync::Notify,
}

impl Fake {
    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn json_response(status: StatusCode, body: Value, session: Option<&str>) -> Response {
    let mut response = Response::builder()
        .status(status)
        .header("content-type", "application/json");
    if let Some(session) = session {
        response = response.header("mcp-session-id", session);
    }
    response.body(Body::from(body.to_string())).unwrap()
}

fn sse_response(rx: mpsc::Receiver<String>) -> Response {
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        let event = rx.recv().await?;
        Some((Ok::<_, Infallible>(Bytes::from(event)), rx))
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap()
}

fn event(message: &Value) -> String {
    format!("event: message\ndata: {message}\n\n")
}

fn result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

#[allow(
    clippy::too_many_lines,
    reason = "one arm per route of the scripted server, read as a table"
)]
async fn handle(
    State(fake): State<Arc<Fake>>,
    verb: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let headers: HashMap<String, String> = headers
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    let session = headers.get("mcp-session-id").cloned();
    fake.seen.lock().unwrap().push(Seen {
        verb: verb.clone(),
        headers,
        body: body.clone(),
    });
    let method = body["method"].as_str().unwrap_or("").to_owned();
    if fake.modern {
        return stateless(fake, verb, body).await;
    }
    if method == "initialize" {
        let minted = format!("session-{}", fake.minted.fetch_add(1, Ordering::SeqCst));
        fake.sessions.lock().unwrap().push(minted.clone());
        let answer = result(
            &body["id"],
            json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake", "version": "0"}}),
        );
        return json_response(StatusCode::OK, answer, Some(&minted));
    }
    let Some(session) = session else {
        return json_response(StatusCode::BAD_REQUEST, json!({}), None);
    };
    if fake.expire_once.swap(false, Ordering::SeqCst) {
        fake.sessions.lock().unwrap().retain(|s| *s != session);
    }
    if !fake.sessions.lock().unwrap().contains(&session) {
        return json_response(StatusCode::NOT_FOUND, json!({}), None);
    }
    if verb == Method::DELETE {
        return Response::new(Body::empty());
    }
    let Some(id) = body.get("id").cloned() else {
        // A notification.
        return Response::builder()
            .status(StatusCode::ACCEPTED)
            .body(Body::empty())
            .unwrap();
    };
    let params = &body["params"];
    let answer = match (method.as_str(), params["name"].as_str()) {
        ("ping", _) => result(&id, json!({})),
        ("tools/call", Some("ping")) => result(
            &id,
            json!({"content": [{"type": "text", "text": "Server: still available"}]}),
        ),
        ("tools/call", Some("work")) => {
            let (tx, rx) = mpsc::channel(4);
            let token = params["_meta"].get("progressToken").cloned();
            let fake = Arc::clone(&fake);
            tokio::spawn(async move {
                if let Some(token) = token {
                    let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": token, "progress": 0, "message": "Started"}});
                    let _ = tx.send(event(&progress)).await;
                }
                // Never answers; notices when the client closes the stream.
                tx.closed().await;
                fake.work_closed.store(true, Ordering::SeqCst);
                fake.closing.notify_waiters();
            });
            return sse_response(rx);
        }
        ("tools/call", Some("flood")) => {
            let (tx, rx) = mpsc::channel(4);
            tokio::spawn(async move {
                let _ = tx.send("data: ".to_owned()).await;
                // An event that never ends.
                while tx.send("x".repeat(64 * 1024)).await.is_ok() {}
            });
            return sse_response(rx);
        }
        _ => json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}}),
    };
    if fake.json {
        json_response(StatusCode::OK, answer, None)
    } else {
        let (tx, rx) = mpsc::channel(4);
        tokio::spawn(async move {
            // A keep-alive comment first, which the client must ignore (HTTP-09).
            let _ = tx.send(": keep-alive\n\n".to_owned()).await;
            let _ = tx.send(event(&answer)).await;
        });
        sse_response(rx)
    }
}

/// The stateless era: every request stands alone.
async fn stateless(fake: Arc<Fake>, verb: Method, body: Value) -> Response {
    if verb != Method::POST {
        return Response::builder()
            .status(StatusCode::METHOD_NOT_ALLOWED)
            .body(Body::empty())
            .unwrap();
    }
    let Some(id) = body.get("id").cloned() else {
        return Response::builder()
            .status(StatusCode::ACCEPTED)
            .body(Body::empty())
            .unwrap();
    };
    let params = &body["params"];
    let answer = match (body["method"].as_str(), params["name"].as_str()) {
        (Some("server/discover"), _) => result(
            &id,
            json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}}}),
        ),
        (Some("tools/call"), Some("work")) => {
            let (tx, rx) = mpsc::channel(4);
            let token = params["_meta"].get("progressToken").cloned();
            tokio::spawn(async move {
                if let Some(token) = token {
                    let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": token, "progress": 0, "message": "Started"}});
                    let _ = tx.send(event(&progress)).await;
                }
                // Closing this stream is the cancel (HTTP-11).
                tx.closed().await;
                fake.work_closed.store(true, Ordering::SeqCst);
                fake.closing.notify_waiters();
            });
            return sse_response(rx);
        }
        (Some("tools/call"), Some("ping")) => {
            // The client closes the work stream before it sends the ping, but the two travel
            // on different connections: give the server a moment to notice the close.
            let noticed = tokio::time::timeout(Duration::from_secs(5), async {
                loop {
                    let notified = fake.closing.notified();
                    tokio::pin!(notified);
                    notified.as_mut().enable();
                    if fake.work_closed.load(Ordering::SeqCst) {
                        return;
                    }
                    notified.await;
                }
            })
            .await
            .is_ok();
            fake.closed_before_ping.store(noticed, Ordering::SeqCst);
            result(
                &id,
                json!({"resultType": "complete",
                    "content": [{"type": "text", "text": "Server: still available"}]}),
            )
        }
        _ => {
            let error = json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "Method not found"}});
            return json_response(StatusCode::NOT_FOUND, error, None);
        }
    };
    json_response(StatusCode::OK, answer, None)
}

/// Checks every request of the stateless era (HTTP-19, LIF-10): the version header equals
/// the `_meta` version, `Mcp-Method` and `Mcp-Name` mirror the body, no session.
fn assert_stateless_headers(seen: &[Seen]) {
    for request in seen {
        assert_eq!(request.verb, Method::POST, "no GET or DELETE: {request:?}");
        let meta = &request.body["params"]["_meta"];
        assert_eq!(request.header("mcp-protocol-version"), Some("2026-07-28"));
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert!(meta["io.modelcontextprotocol/clientCapabilities"].is_object());
        assert!(meta["io.modelcontextprotocol/clientInfo"].is_object());
        assert_eq!(request.header("mcp-method"), Some(request.method()));
        if request.method() == "tools/call" {
            assert_eq!(
                request.header("mcp-name"),
                request.body["params"]["name"].as_str()
            );
        }
        assert_eq!(request.header("mcp-session-id"), None);
        assert!(
            request.body.get("id").is_some(),
            "no notification POSTs: {request:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cookbook_over_http_in_2026_cancels_by_closing_the_stream() {
    let fake = Arc::new(Fake {
        modern: true,
        ..Fake::default()
    });
    let url = serve(Arc::clone(&fake)).await;
    let output = cookbook(vec!["--url".into(), url]).await;
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        AFTER_PROGRESS,
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success());
    let seen = fake.seen();
    let methods: Vec<&str> = seen.iter().map(Seen::method).collect();
    assert_eq!(methods, ["server/discover", "tools/call", "tools/call"]);
    assert_stateless_headers(&seen);
    assert!(
        fake.closed_before_ping.load(Ordering::SeqCst),
        "the work stream was still open when ping came"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cookbook_deadline_over_http_in_2026() {
    let fake = Arc::new(Fake {
        modern: true,
        ..Fake::default()
    });
    let url = serve(Arc::clone(&fake)).await;
    let output = cookbook(vec![
        "--deadline-ms".into(),
        "100".into(),
        "--url".into(),
        url,
    ])
    .await;
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        AFTER_DEADLINE,
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_stateless_headers(&fake.seen());
    assert!(fake.closed_before_ping.load(Ordering::SeqCst));
}

#[tokio::test]
async fn http_errors_with_a_json_rpc_body_answer_the_request() {
    let fake = Arc::new(Fake {
        modern: true,
        ..Fake::default()
    });
    let url = serve(Arc::clone(&fake)).await;
    let client = Client::connect_http(&url, ClientOptions::default())
        .await
        .expect("connect");
    // 404 with -32601 (RPC-09) is the answer to the request, not a transport failure.
    let outcome = client
        .request("nonexistent/method", json!({}), RequestOptions::default())
        .await;
    assert!(
        matches!(outcome, Err(CallError::Rpc(ref e)) if e.code == -32601),
        "{outcome:?}"
    );
    client.ping().await.expect("liveness by server/discover");
    client.close().await.expect("close");
    assert_stateless_headers(&fake.seen());
}

/// Serves `fake` on a free local port; returns the endpoint URL.
async fn serve(fake: Arc<Fake>) -> String {
    let app = axum::Router::new()
        .route("/mcp", axum::routing::any(handle))
        .with_state(fake);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

async fn cookbook(args: Vec<String>) -> std::process::Output {
    tokio::task::spawn_blocking(move || {
        assert_cmd::Command::new(env!("CARGO_BIN_EXE_reference-client"))
            .args(args)
            .timeout(Duration::from_secs(30))
            .output()
            .expect("run the cookbook")
    })
    .await
    .unwrap()
}

/// Checks that the client probed with `server/discover` under 2026-07-28 first (LIF-14),
/// and returns what followed the probe.
fn after_probe(seen: &[Seen]) -> &[Seen] {
    assert_eq!(seen[0].method(), "server/discover");
    assert_eq!(seen[0].header("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(seen[0].header("mcp-method"), Some("server/discover"));
    assert_eq!(seen[0].header("mcp-session-id"), None);
    &seen[1..]
}

/// Checks the handshake-era rules every request after `initialize` must follow.
fn assert_session_headers(seen: &[Seen]) {
    assert_eq!(seen[0].method(), "initialize");
    assert_eq!(seen[0].header("mcp-session-id"), None);
    for request in seen {
        if request.verb == Method::POST {
            let accept = request.header("accept").unwrap_or("");
            assert!(
                accept.contains("application/json") && accept.contains("text/event-stream"),
                "HTTP-05: {request:?}"
            );
        }
    }
    for request in &seen[1..] {
        assert_eq!(
            request.header("mcp-session-id"),
            Some("session-0"),
            "HTTP-16: {request:?}"
        );
        assert_eq!(
            request.header("mcp-protocol-version"),
            Some("2025-11-25"),
            "HTTP-18: {request:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cookbook_over_http_cancels_with_a_post_and_deletes_the_session() {
    let fake = Arc::new(Fake::default());
    let url = serve(Arc::clone(&fake)).await;
    let output = cookbook(vec!["--url".into(), url]).await;
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        AFTER_PROGRESS,
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success());
    let seen = fake.seen();
    let seen = after_probe(&seen);
    assert_session_headers(seen);
    let methods: Vec<&str> = seen.iter().map(Seen::method).collect();
    assert_eq!(
        methods,
        [
            "initialize",
            "notifications/initialized",
            "tools/call",
            "notifications/cancelled",
            "tools/call",
            ""
        ]
    );
    // HTTP-17: the cancel names the work call's exact id.
    assert_eq!(seen[3].body["params"]["requestId"], seen[2].body["id"]);
    assert!(seen[3].body["params"]["reason"].is_string());
    // The session ends with DELETE.
    assert_eq!(seen[5].verb, Method::DELETE);
    assert!(fake.work_closed.load(Ordering::SeqCst));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cookbook_deadline_over_http_with_json_answers() {
    let fake = Arc::new(Fake {
        json: true,
        ..Fake::default()
    });
    let url = serve(Arc::clone(&fake)).await;
    let output = cookbook(vec![
        "--deadline-ms".into(),
        "100".into(),
        "--url".into(),
        url,
    ])
    .await;
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        AFTER_DEADLINE,
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success());
    let seen = fake.seen();
    let seen = after_probe(&seen);
    assert_session_headers(seen);
    let cancel = seen
        .iter()
        .find(|s| s.method() == "notifications/cancelled")
        .expect("a cancel POST");
    assert_eq!(cancel.body["params"]["requestId"], seen[2].body["id"]);
}

#[tokio::test]
async fn a_stale_session_starts_a_fresh_initialize_without_the_header() {
    let fake = Arc::new(Fake::default());
    let url = serve(Arc::clone(&fake)).await;
    let client = Client::connect_http(&url, ClientOptions::default())
        .await
        .expect("connect");
    // Messages go out in order, so once ping is answered, initialized was sent.
    client.ping().await.expect("ping");
    fake.expire_once.store(true, Ordering::SeqCst);
    let pong = client
        .call_tool("ping", json!({}), RequestOptions::default())
        .await
        .expect("the call succeeds in a new session");
    assert_eq!(pong.text(), "Server: still available");
    client.close().await.expect("close");
    let seen = fake.seen();
    let seen = after_probe(&seen);
    let trail: Vec<(&str, Option<&str>)> = seen
        .iter()
        .map(|s| (s.method(), s.header("mcp-session-id")))
        .collect();
    assert_eq!(
        trail,
        [
            ("initialize", None),
            ("notifications/initialized", Some("session-0")),
            ("ping", Some("session-0")),
            ("tools/call", Some("session-0")),
            // HTTP-16: after the 404, a fresh initialize without the old session, and no
            // new probe: the era is cached.
            ("initialize", None),
            ("notifications/initialized", Some("session-1")),
            ("tools/call", Some("session-1")),
            ("", Some("session-1")),
        ]
    );
    // The retry is a new request with a new id.
    assert_ne!(seen[3].body["id"], seen[6].body["id"]);
}

#[tokio::test]
async fn an_endless_sse_event_fails_the_call_instead_of_filling_memory() {
    let fake = Arc::new(Fake::default());
    let url = serve(Arc::clone(&fake)).await;
    let client = Client::connect_http(&url, ClientOptions::default())
        .await
        .expect("connect");
    let outcome = tokio::time::timeout(
        Duration::from_secs(20),
        client.call_tool("flood", json!({}), RequestOptions::default()),
    )
    .await
    .expect("the call ends");
    match outcome {
        Err(CallError::Transport(why)) => assert!(why.contains("longer than"), "{why}"),
        other => panic!("expected a transport error, got {other:?}"),
    }
    client.ping().await.expect("the session still works");
    client.close().await.expect("close");
}

#[tokio::test]
async fn an_unreachable_server_is_a_clear_connect_error() {
    // Bind and drop a listener, so the port is (almost certainly) closed.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    let outcome = Client::connect_http(&url, ClientOptions::default()).await;
    let error = outcome.err().expect("no server there");
    assert!(error.to_string().contains("cannot reach"), "{error}");
    let outcome =
        Client::connect_http("https://example.invalid/mcp", ClientOptions::default()).await;
    let error = outcome.err().expect("https is refused");
    assert!(error.to_string().contains("http://"), "{error}");
}
