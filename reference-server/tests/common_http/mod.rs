//! Drives the real `reference-server --http` binary over real HTTP.

#![allow(dead_code)]
#![allow(unsafe_code)] // libc: signals the server it starts

use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::{Response, StatusCode};
use serde_json::{json, Value};
use sse_stream::SseStream;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Generous: only hit when something is broken.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// A running `reference-server --http 127.0.0.1:0 …`.
pub struct HttpServer {
    child: Child,
    pub url: String,
    /// stderr lines after the first one.
    pub stderr: mpsc::Receiver<String>,
}

impl HttpServer {
    pub fn start(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_reference-server"))
            .args(["--http", "127.0.0.1:0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn reference-server --http");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let first = rx
            .recv_timeout(PATIENCE)
            .expect("the server printed nothing");
        let url = first
            .strip_prefix("reference-server: listening on ")
            .unwrap_or_else(|| panic!("unexpected first stderr line: {first}"))
            .to_owned();
        Self {
            child,
            url,
            stderr: rx,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// host:port of the listener.
    pub fn authority(&self) -> String {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_owned()
    }

    pub fn client(&self) -> Client {
        Client {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .expect("http client"),
            url: self.url.clone(),
            session: None,
            version: None,
        }
    }

    pub fn terminate(&mut self) {
        let pid = libc::pid_t::try_from(self.child.id()).expect("pid fits");
        // SAFETY: kill(2) on our own live child.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    }

    pub fn wait_exit(&mut self, within: Duration) -> std::process::ExitStatus {
        let start = std::time::Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            assert!(
                start.elapsed() < within,
                "server did not exit within {within:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One MCP client: its session id and negotiated version once initialized.
pub struct Client {
    pub http: reqwest::Client,
    pub url: String,
    pub session: Option<String>,
    pub version: Option<String>,
}

impl Client {
    /// The headers every POST carries: content type, both Accept types,
    /// and the session and version once known.
    pub fn headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("content-type", HeaderValue::from_static("application/json"));
        headers.insert(
            "accept",
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        if let Some(session) = &self.session {
            headers.insert(
                "mcp-session-id",
                HeaderValue::from_str(session).expect("ascii"),
            );
        }
        if let Some(version) = &self.version {
            headers.insert(
                "mcp-protocol-version",
                HeaderValue::from_str(version).expect("ascii"),
            );
        }
        headers
    }

    pub async fn post_with(&self, body: &Value, headers: HeaderMap) -> Response {
        self.http
            .post(&self.url)
            .headers(headers)
            .body(body.to_string())
            .send()
            .await
            .expect("POST")
    }

    pub async fn post(&self, body: &Value) -> Response {
        self.post_with(body, self.headers()).await
    }

    /// initialize + notifications/initialized; remembers session and version.
    pub async fn initialize(&mut self, version: &str) -> Value {
        let init = json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "tests", "version": "0"}}});
        let response = self.post(&init).await;
        assert_eq!(response.status(), StatusCode::OK);
        let session = response
            .headers()
            .get("mcp-session-id")
            .expect("a session id on the initialize response")
            .to_str()
            .expect("visible ascii")
            .to_owned();
        let messages = messages(response).await;
        let result = messages.last().expect("an initialize response").clone();
        assert_eq!(result["id"], "init", "{result}");
        self.session = Some(session);
        self.version = result["result"]["protocolVersion"]
            .as_str()
            .map(str::to_owned);
        let initialized = self
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(initialized.status(), StatusCode::ACCEPTED);
        result
    }

    /// POSTs a request and reads its whole response stream (or JSON body).
    pub async fn request(&self, id: Value, method: &str, params: Value) -> Vec<Value> {
        let response = self
            .post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        assert_eq!(response.status(), StatusCode::OK, "{method}");
        messages(response).await
    }

    /// Calls a tool and returns its response (the stream's last message).
    pub async fn tool(&self, id: Value, name: &str, args: Value) -> Value {
        let messages = self
            .request(
                id.clone(),
                "tools/call",
                json!({"name": name, "arguments": args}),
            )
            .await;
        let last = messages.last().cloned().unwrap_or(Value::Null);
        assert_eq!(last["id"], id, "{messages:?}");
        last
    }

    /// The witness: ids whose handlers observed their cancellation.
    pub async fn cancellations(&self, id: Value) -> Value {
        let response = self.tool(id, "cancellations", json!({})).await;
        let text = response["result"]["content"][0]["text"]
            .as_str()
            .expect("text");
        serde_json::from_str(text).expect("witness is json")
    }

    pub async fn cancel(&self, id: Value) -> Response {
        self.post(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "test"}}),
        )
        .await
    }
}

/// The JSON-RPC messages of a response: its SSE events, or its JSON body.
pub async fn messages(response: Response) -> Vec<Value> {
    let content_type = content_type(&response);
    if content_type.starts_with("application/json") {
        let body = response.bytes().await.expect("body");
        return vec![serde_json::from_slice(&body).expect("json body")];
    }
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    let mut events = Events::new(response);
    let mut all = Vec::new();
    while let Some(message) = events.next().await {
        all.push(message);
    }
    all
}

pub fn content_type(response: &Response) -> String {
    response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned()
}

/// The SSE events of one response stream, as JSON-RPC messages.
pub struct Events {
    stream: std::pin::Pin<
        Box<dyn futures_util::Stream<Item = Result<sse_stream::Sse, sse_stream::Error>> + Send>,
    >,
}

impl Events {
    pub fn new(response: Response) -> Self {
        Self {
            stream: Box::pin(SseStream::from_bytes_stream(response.bytes_stream())),
        }
    }

    /// The next message, or `None` when the server ended the stream.
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            let event = tokio::time::timeout(PATIENCE, self.stream.next())
                .await
                .expect("the stream went quiet")?;
            let event = event.expect("a well-formed SSE stream");
            if let Some(data) = event.data.filter(|d| !d.is_empty()) {
                return Some(serde_json::from_str(&data).expect("event data is json"));
            }
        }
    }
}

pub fn text_of(response: &Value) -> &str {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

/// The 2026-07-28 per-request `_meta` fields.
pub fn stamp(version: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "0"},
    })
}

/// A stamped 2026-07-28 request: `params` plus `_meta` (merged with any
/// `_meta` already in `params`).
pub fn stamped(id: Value, method: &str, params: Value) -> Value {
    let mut params = params;
    let meta = params
        .as_object_mut()
        .expect("params object")
        .entry("_meta")
        .or_insert_with(|| json!({}));
    for (key, value) in stamp("2026-07-28").as_object().expect("object") {
        meta.as_object_mut()
            .expect("_meta object")
            .insert(key.clone(), value.clone());
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// Client capabilities that declare the tasks extension (2026-07-28).
pub fn tasks_capabilities() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
}

/// [`stamped`] with these client capabilities instead of `{}`.
pub fn stamped_with(id: Value, method: &str, params: Value, capabilities: Value) -> Value {
    let mut request = stamped(id, method, params);
    request["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = capabilities;
    request
}

/// The headers a 2026-07-28 client sends with `request` (HTTP-19); a task
/// method mirrors its `taskId` into `Mcp-Name` (the tasks extension).
pub fn stateless_headers(request: &Value) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    headers.insert(
        "accept",
        HeaderValue::from_static("application/json, text/event-stream"),
    );
    let version = request["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
        .as_str()
        .unwrap_or("2026-07-28");
    headers.insert(
        "mcp-protocol-version",
        HeaderValue::from_str(version).expect("ascii"),
    );
    if let Some(method) = request["method"].as_str() {
        headers.insert("mcp-method", HeaderValue::from_str(method).expect("ascii"));
    }
    if let Some(name) = request["params"]["name"].as_str() {
        headers.insert("mcp-name", HeaderValue::from_str(name).expect("ascii"));
    }
    let is_task_method = matches!(
        request["method"].as_str(),
        Some("tasks/get" | "tasks/update" | "tasks/cancel")
    );
    if let Some(task) = request["params"]["taskId"]
        .as_str()
        .filter(|_| is_task_method)
    {
        headers.insert("mcp-name", HeaderValue::from_str(task).expect("ascii"));
    }
    headers
}

impl Client {
    /// POSTs a stamped request with the headers that mirror it.
    pub async fn post_stateless(&self, request: &Value) -> Response {
        self.post_with(request, stateless_headers(request)).await
    }

    /// Calls a tool in the 2026-07-28 era and returns every message of its stream.
    pub async fn stateless_tool(&self, id: Value, name: &str, args: Value) -> Vec<Value> {
        let request = stamped(id, "tools/call", json!({"name": name, "arguments": args}));
        let response = self.post_stateless(&request).await;
        assert_eq!(response.status(), StatusCode::OK);
        messages(response).await
    }

    /// The witness of the stateless era (per process).
    pub async fn stateless_cancellations(&self, id: Value) -> Value {
        let messages = self.stateless_tool(id, "cancellations", json!({})).await;
        let text = messages.last().expect("a response")["result"]["content"][0]["text"]
            .as_str()
            .expect("text")
            .to_owned();
        serde_json::from_str(&text).expect("witness is json")
    }
}
