//! A small MCP server over Streamable HTTP with deliberate faults, for `broken_http.rs`.
//!
//! Mode `correct` is the fixture profile done right (sessions, Origin and version checks, SSE
//! responses, per-request cancellation that ignores disconnects), so every other verdict is
//! caused by the fault its mode adds. `correct-json` answers requests with `application/json`
//! instead of SSE. The hostile modes (never finishing headers, endless streams, a 1 GiB body,
//! 500s, redirects, connections closed mid-event, messages for requests nobody asked about)
//! check that the harness gives a verdict in bounded time with bounded memory. The stateless
//! era (2026-07-28) and its faults are in `stateless.rs`. Modes `remembers…` play a running
//! server that served earlier cases: its witness already lists their requests 1 and 2.

mod stateless;

use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const VERSIONS: [&str; 3] = ["2025-03-26", "2025-06-18", "2025-11-25"];

type Body = BoxBody<Bytes, std::io::Error>;
type Tx = mpsc::Sender<Result<Frame<Bytes>, std::io::Error>>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Default)]
struct Session {
    calls: Mutex<HashMap<String, CancellationToken>>,
    witnessed: Mutex<Vec<Value>>,
    get: Mutex<Option<Tx>>,
    /// Streams of cancelled requests the server keeps open (mode `leaves-stream-open`).
    held: Mutex<Vec<Tx>>,
    /// The one "session" of the stateless era's requests: no session id, results with
    /// `resultType`, and a closed stream is a cancel.
    stateless: bool,
}

struct App {
    mode: String,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    deleted: Mutex<Vec<String>>,
    counter: AtomicU64,
    /// Where every request of the stateless era runs (its witness covers them all).
    stateless: Arc<Session>,
    /// What the witness listed before this process served anyone: requests of earlier cases
    /// (modes `remembers…`).
    earlier: Vec<Value>,
}

impl App {
    fn is(&self, mode: &str) -> bool {
        self.mode == mode
    }
}

fn frame(message: &Value) -> Result<Frame<Bytes>, std::io::Error> {
    Ok(Frame::data(Bytes::from(format!("data: {message}\n\n"))))
}

fn full(status: StatusCode, body: &str) -> Response<Body> {
    let mut response = Response::new(
        Full::new(Bytes::from(body.to_string()))
            .map_err(|never| match never {})
            .boxed(),
    );
    *response.status_mut() = status;
    if !body.is_empty() {
        response
            .headers_mut()
            .insert("content-type", "application/json".parse().unwrap());
    }
    response
}

fn error_body(code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "error": {"code": code, "message": message}}).to_string()
}

fn sse(rx: mpsc::Receiver<Result<Frame<Bytes>, std::io::Error>>) -> Response<Body> {
    let stream = tokio_stream(rx);
    let mut response = Response::new(BodyExt::boxed(StreamBody::new(stream)));
    response
        .headers_mut()
        .insert("content-type", "text/event-stream".parse().unwrap());
    response
}

fn tokio_stream(
    mut rx: mpsc::Receiver<Result<Frame<Bytes>, std::io::Error>>,
) -> impl futures_util::Stream<Item = Result<Frame<Bytes>, std::io::Error>> + Send + Sync + 'static
{
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

/// Serves MCP over HTTP as `mode` on 127.0.0.1:`port` until killed.
pub fn serve(mode: &str, port: u16) -> ! {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(run(mode.to_string(), port));
    std::process::exit(0)
}

async fn run(mode: String, port: u16) {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .expect("the port is free");
    eprintln!("broken http server ({mode}) on port {port}");
    let app = Arc::new(App {
        sessions: Mutex::new(HashMap::new()),
        deleted: Mutex::new(vec![]),
        counter: AtomicU64::new(0),
        stateless: Arc::new(Session {
            stateless: true,
            ..Session::default()
        }),
        earlier: if mode.starts_with("remembers") {
            vec![json!(1), json!(2)]
        } else {
            vec![]
        },
        mode,
    });
    // Mode `starts-behind-proxy`: a pass-through proxy whose server behind it is still
    // starting; for its first 800 ms it accepts each connection and closes it unanswered.
    let behind_until = app
        .is("starts-behind-proxy")
        .then(|| std::time::Instant::now() + Duration::from_millis(800));
    loop {
        let Ok((socket, _)) = listener.accept().await else {
            continue;
        };
        if behind_until.is_some_and(|until| std::time::Instant::now() < until) {
            drop(socket);
            continue;
        }
        let app = app.clone();
        if app.is("never-finishes-headers") {
            tokio::spawn(async move {
                let mut socket = socket;
                let mut buf = [0u8; 4096];
                let _ = socket.read(&mut buf).await;
                let _ = socket
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n")
                    .await;
                tokio::time::sleep(Duration::from_secs(3600)).await;
            });
            continue;
        }
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let app = app.clone();
                async move { Ok::<_, Infallible>(handle(app, req).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(socket), service)
                .await;
        });
    }
}

#[allow(
    clippy::too_many_lines,
    reason = "one arm per broken mode, read as a table"
)]
async fn handle(app: Arc<App>, req: Request<Incoming>) -> Response<Body> {
    if app.is("answers-500") {
        return full(StatusCode::INTERNAL_SERVER_ERROR, "<h1>oops</h1>");
    }
    if app.is("redirects") {
        let mut response = full(StatusCode::FOUND, "");
        response
            .headers_mut()
            .insert("location", "/elsewhere".parse().unwrap());
        return response;
    }
    let header = |name: &str| {
        req.headers()
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    };
    if let Some(origin) = header("origin") {
        let local = ["http://localhost", "http://127.0.0.1", "http://[::1]"]
            .iter()
            .any(|o| origin == *o || origin.starts_with(&format!("{o}:")));
        if !local && !app.is("no-origin-check") {
            return full(
                StatusCode::FORBIDDEN,
                &error_body(-32000, "Forbidden origin"),
            );
        }
    }
    let method = req.method().clone();
    let headers = req.headers().clone();
    let stateless_header = header("mcp-protocol-version").as_deref() == Some(stateless::VERSION);
    if stateless_header && method != Method::POST {
        return stateless::not_post(&app, &method);
    }
    // The version header of the handshake era (HTTP-18); a POST of the stateless era is
    // judged by its own rules once its body is read.
    let legacy_version = header("mcp-protocol-version").filter(|_| !stateless_header);
    let bad_version = legacy_version
        .is_some_and(|v| !VERSIONS.contains(&v.as_str()) && !app.is("accepts-any-version"));
    let refuse_version = || {
        full(
            StatusCode::BAD_REQUEST,
            &error_body(-32000, "Unsupported protocol version"),
        )
    };
    if bad_version && method != Method::POST {
        return refuse_version();
    }
    let session_id = header("mcp-session-id");
    let session = session_id
        .as_ref()
        .and_then(|id| lock(&app.sessions).get(id).cloned());
    if method == Method::GET || method == Method::DELETE {
        let Some(session) = session else {
            return full(
                StatusCode::NOT_FOUND,
                &error_body(-32001, "Session not found"),
            );
        };
        if method == Method::DELETE {
            let id = session_id.unwrap_or_default();
            if !app.is("ignores-delete") {
                lock(&app.sessions).remove(&id);
                lock(&app.deleted).push(id);
            }
            return full(StatusCode::OK, "");
        }
        let (tx, rx) = mpsc::channel(64);
        *lock(&session.get) = Some(tx);
        return sse(rx);
    }
    if method != Method::POST {
        return full(StatusCode::METHOD_NOT_ALLOWED, "");
    }
    let body = match http_body_util::Limited::new(req.into_body(), 4 << 20)
        .collect()
        .await
    {
        Ok(body) => body.to_bytes(),
        Err(_) => return full(StatusCode::BAD_REQUEST, &error_body(-32700, "Parse error")),
    };
    let Ok(message) = serde_json::from_slice::<Value>(&body) else {
        return full(StatusCode::BAD_REQUEST, &error_body(-32700, "Parse error"));
    };
    if stateless::is_stateless(&headers, &message) {
        return stateless::post(app, &headers, message);
    }
    if bad_version {
        return refuse_version();
    }
    let method_name = message.get("method").and_then(Value::as_str).unwrap_or("");
    let id = message.get("id").cloned();
    if method_name == "initialize" {
        let n = app.counter.fetch_add(1, Ordering::Relaxed);
        let sid = if app.is("bad-session-id") {
            format!("session {n}")
        } else {
            format!("s{n}-{:x}", std::process::id())
        };
        lock(&app.sessions).insert(sid.clone(), Arc::new(Session::default()));
        let asked = message
            .pointer("/params/protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let version = if VERSIONS.contains(&asked) {
            asked
        } else {
            VERSIONS[2]
        };
        let result = json!({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": version, "capabilities": {"tools": {}},
            "serverInfo": {"name": "broken-http", "version": "0"}}});
        let mut response = if app.is("correct-json") {
            full(StatusCode::OK, &result.to_string())
        } else {
            let (tx, rx) = mpsc::channel(4);
            let _ = tx.send(frame(&result)).await;
            sse(rx)
        };
        response
            .headers_mut()
            .insert("mcp-session-id", sid.parse().unwrap());
        return response;
    }
    let Some(session) = session else {
        return match session_id {
            Some(_) => full(
                StatusCode::NOT_FOUND,
                &error_body(-32001, "Session not found"),
            ),
            None => full(
                StatusCode::BAD_REQUEST,
                &error_body(-32000, "No session id"),
            ),
        };
    };
    let Some(id) = id.filter(|_| !method_name.is_empty()) else {
        // A notification or a response.
        if method_name == "notifications/cancelled" {
            cancel(&app, &session, &message);
        }
        if app.is("notifications-get-200") {
            return full(
                StatusCode::OK,
                &json!({"jsonrpc": "2.0", "result": {}}).to_string(),
            );
        }
        return full(StatusCode::ACCEPTED, "");
    };
    // Every request after the opening (tool calls and pings alike) gets a gigabyte of spaces.
    if app.is("gigabyte-body") && method_name != "initialize" {
        let chunk = Bytes::from(vec![b' '; 1 << 20]);
        let stream = futures_util::stream::iter(0..1024)
            .map(move |_| Ok::<_, std::io::Error>(Frame::data(chunk.clone())));
        let mut response = Response::new(BodyExt::boxed(StreamBody::new(stream)));
        response
            .headers_mut()
            .insert("content-type", "application/json".parse().unwrap());
        return response;
    }
    let (tx, rx) = mpsc::channel(64);
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    let json_mode = app.is("correct-json");
    let cancel = track(&session, &id);
    tokio::spawn(request(
        app.clone(),
        session,
        id,
        method_name.to_string(),
        params,
        Call { tx, cancel },
    ));
    if json_mode {
        // The first message the handler writes is the answer.
        let mut rx = rx;
        return match rx.recv().await {
            Some(Ok(frame)) => {
                let data = frame.into_data().unwrap_or_default();
                let text = String::from_utf8_lossy(&data);
                let json = text.trim_start_matches("data: ").trim_end().to_string();
                full(StatusCode::OK, &json)
            }
            _ => std::future::pending().await,
        };
    }
    if app.is("holds-heads") {
        // Correct, if reticent: the head of an SSE response waits for its first message (a
        // call that sends nothing shows nothing until its result, or ever, if cancelled).
        let mut rx = rx;
        let first = rx.recv().await;
        let (held_tx, held_rx) = mpsc::channel(64);
        if let Some(first) = first {
            tokio::spawn(async move {
                let _ = held_tx.send(first).await;
                while let Some(frame) = rx.recv().await {
                    if held_tx.send(frame).await.is_err() {
                        return;
                    }
                }
            });
        }
        return sse(held_rx);
    }
    sse(rx)
}

fn cancel(app: &App, session: &Session, message: &Value) {
    if app.is("ignores-cancel-post") || app.is("remembers-ignores-cancel") {
        return;
    }
    let Some(id) = message.pointer("/params/requestId") else {
        return;
    };
    let key = id.to_string();
    if app.is("cross-session-cancel") {
        for other in lock(&app.sessions).values() {
            if let Some(token) = lock(&other.calls).get(&key) {
                token.cancel();
            }
        }
        return;
    }
    if let Some(token) = lock(&session.calls).get(&key) {
        token.cancel();
    }
}

/// Registers request `id` as cancellable in `session` before its response's head goes out:
/// a cancel that comes after the head (on another POST, which may be served first) finds it.
fn track(session: &Session, id: &Value) -> CancellationToken {
    let cancel = CancellationToken::new();
    lock(&session.calls).insert(id.to_string(), cancel.clone());
    cancel
}

/// Where a request's handler writes (its stream) and what tells it it was cancelled.
struct Call {
    tx: Tx,
    cancel: CancellationToken,
}

async fn request(
    app: Arc<App>,
    session: Arc<Session>,
    id: Value,
    method: String,
    params: Value,
    call: Call,
) {
    let Call { tx, cancel } = call;
    if app.is("sse-forever") || app.is("sse-trickle") {
        // Keep-alive comments, never a message: as fast as possible, or every 5 ms.
        let comment = Bytes::from(format!(": {}\n", "k".repeat(1000)));
        loop {
            if tx.send(Ok(Frame::data(comment.clone()))).await.is_err() {
                return;
            }
            if app.is("sse-trickle") {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    }
    if app.is("events-for-other-streams") {
        let _ = tx
            .send(frame(
                &json!({"jsonrpc": "2.0", "id": "nobody-asked", "result": {}}),
            ))
            .await;
    }
    if app.is("closes-mid-event") && method != "initialize" {
        let _ = tx
            .send(Ok(Frame::data(Bytes::from_static(
                b"data: {\"jsonrpc\":\"2.0\",\"id\":",
            ))))
            .await;
        let _ = tx
            .send(Err(std::io::Error::other("closed mid-event")))
            .await;
        return;
    }
    if session.stateless && app.is("requests-client") && method == "tools/call" {
        // 2026-07-28 servers send no requests (RPC-15).
        let ask = json!({"jsonrpc": "2.0", "id": "server-asks", "method": "roots/list"});
        let _ = tx.send(frame(&ask)).await;
    }
    let answer = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
    let text = |t: &str| json!({"content": [{"type": "text", "text": t}]});
    let reply = match method.as_str() {
        "ping" => answer(json!({})),
        "tools/call" => {
            let name = params.get("name").and_then(Value::as_str).unwrap_or("");
            let args = params.get("arguments").cloned().unwrap_or(json!({}));
            let token = params.pointer("/_meta/progressToken").cloned();
            match name {
                "echo" => answer(text(args.get("text").and_then(Value::as_str).unwrap_or(""))),
                "ping" => answer(text("Server: still available")),
                "cancellations" => {
                    let mut listed = app.earlier.clone();
                    listed.extend(lock(&session.witnessed).iter().cloned());
                    answer(text(&Value::Array(listed).to_string()))
                }
                "work" | "sleep" | "ticker" => {
                    let call = Call { tx, cancel };
                    return long(app, session, id, name.to_string(), args, token, call).await;
                }
                _ => {
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": "unknown tool"}})
                }
            }
        }
        _ => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})
        }
    };
    drop(cancel);
    lock(&session.calls).remove(&id.to_string());
    send_response(&app, &session, &tx, &reply).await;
}

async fn send_response(app: &App, session: &Session, tx: &Tx, reply: &Value) {
    let reply = &if session.stateless {
        stateless::complete(app, reply.clone())
    } else {
        reply.clone()
    };
    let _ = tx.send(frame(reply)).await;
    if app.is("keeps-stream-after-response") {
        // The response is sent, and its stream is kept open until the connection goes.
        lock(&session.held).push(tx.clone());
    }
    if app.is("duplicate-on-two-streams") {
        let get = lock(&session.get).clone();
        if let Some(get) = get {
            let _ = get.send(frame(reply)).await;
        }
    }
}

async fn long(
    app: Arc<App>,
    session: Arc<Session>,
    id: Value,
    name: String,
    args: Value,
    token: Option<Value>,
    call: Call,
) {
    let Call { tx, cancel } = call;
    let token = token.filter(|_| !app.is("correct-json"));
    let progress = |value: u64| {
        json!({"jsonrpc": "2.0", "method": "notifications/progress",
               "params": {"progressToken": token, "progress": value}})
    };
    // A dropped stream is no cancel, except in the mode that says it is, and in 2026-07-28,
    // where it is the cancel (HTTP-11), unless the mode ignores it.
    let disconnected = {
        let tx = tx.clone();
        let on_disconnect = if session.stateless {
            !app.is("ignores-closed-stream")
        } else {
            app.is("cancel-on-disconnect")
        };
        async move {
            if on_disconnect {
                tx.closed().await
            } else {
                std::future::pending().await
            }
        }
    };
    let finished = async {
        match name.as_str() {
            "sleep" => {
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            "ticker" => {
                let ms = args
                    .get("interval_ms")
                    .and_then(Value::as_u64)
                    .unwrap_or(10)
                    .max(1);
                let mut n = 0;
                loop {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    n += 1;
                    if token.is_some() {
                        let _ = tx.send(frame(&progress(n))).await;
                    }
                }
            }
            _ => {
                if token.is_some() {
                    let _ = tx.send(frame(&progress(0))).await;
                }
                std::future::pending::<()>().await;
            }
        }
    };
    let done = tokio::select! {
        () = finished => true,
        () = cancel.cancelled() => false,
        () = disconnected => false,
    };
    lock(&session.calls).remove(&id.to_string());
    if done {
        let reply = json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "slept"}]}});
        send_response(&app, &session, &tx, &reply).await;
        return;
    }
    lock(&session.witnessed).push(id.clone());
    if app.is("answers-after-cancel") {
        let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32800, "message": "Request cancelled"}});
        let _ = tx.send(frame(&error)).await;
    } else if app.is("leaves-stream-open") {
        lock(&session.held).push(tx);
    }
}
