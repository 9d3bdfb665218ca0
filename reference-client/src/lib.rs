//! Reference MCP client over stdio.
//!
//! [`Client`] spawns a server from an argv (no shell), performs the
//! `initialize` handshake and calls tools. A call ends in exactly one of:
//! a [`ToolResult`] (which may have `isError` set), a protocol error, or a
//! cancellation, and those are distinct so callers never mistake one for
//! another. [`cookbook`] is the cancellation cookbook program.

pub mod cookbook;
mod process;

use process::ServerProcess;
use reference_wire::{
    error_response, notification, request, response, write_lines, LineError, LineReader, Message,
    Outgoing as Out, RequestId, RpcError, METHOD_NOT_FOUND,
};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt;
use std::io;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// The protocol version this client asks for.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// Tunables for a connection.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// How long `initialize` may take before connecting fails (it is never cancelled).
    pub initialize_timeout: Duration,
    /// Deadline for each request made without an explicit one; on expiry the
    /// request is cancelled on the wire.
    pub request_timeout: Duration,
    /// How long each shutdown step (stdin close, SIGTERM) waits for exit.
    pub shutdown_grace: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            initialize_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(60),
            shutdown_grace: Duration::from_secs(2),
        }
    }
}

/// One `notifications/progress` for a call.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// A progress callback; it runs on the calling task.
pub type ProgressFn<'a> = &'a mut (dyn FnMut(&Progress) + Send);

/// A completed `tools/call`.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolResult {
    /// `isError` from the result (absent means false).
    pub is_error: bool,
    /// The `content` items as received.
    pub content: Vec<Value>,
}

impl ToolResult {
    /// The text of all text content items, joined with newlines.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter(|item| item.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|item| item.get("text").and_then(Value::as_str))
            .collect();
        texts.join("\n")
    }
}

/// Why a request produced no result.
#[derive(Debug)]
pub enum CallError {
    /// The caller's token fired; the server was sent `notifications/cancelled`.
    Cancelled,
    /// The deadline passed; the server was sent `notifications/cancelled`.
    TimedOut(Duration),
    /// The server answered with a JSON-RPC error.
    Rpc(RpcError),
    /// The server answered with something that is not the expected result.
    InvalidResult(String),
    /// The connection ended before an answer arrived.
    Closed,
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Cancelled => write!(f, "request cancelled by the caller"),
            Self::TimedOut(d) => write!(f, "request timed out after {d:?} and was cancelled"),
            Self::Rpc(e) => write!(f, "server returned an error: {e}"),
            Self::InvalidResult(why) => write!(f, "server sent an invalid result: {why}"),
            Self::Closed => write!(f, "server connection closed before the answer arrived"),
        }
    }
}

impl std::error::Error for CallError {}

type Reply = Result<Value, RpcError>;

#[derive(Default)]
struct Tables {
    /// Requests awaiting an answer, by exact id.
    pending: HashMap<RequestId, oneshot::Sender<Reply>>,
    /// Progress routes, by token.
    progress: HashMap<RequestId, mpsc::UnboundedSender<Progress>>,
    closed: bool,
}

struct Shared {
    tables: Mutex<Tables>,
    out: mpsc::UnboundedSender<Out>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Tables> {
        self.tables.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A connection to one MCP server over stdio.
pub struct Client {
    shared: Arc<Shared>,
    next_id: AtomicI64,
    options: ClientOptions,
    process: Option<ServerProcess>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    protocol_version: String,
}

impl Client {
    /// Spawns `argv` (no shell) and initializes. stderr is inherited.
    pub async fn spawn(argv: &[OsString], options: ClientOptions) -> io::Result<Self> {
        let (process, stdin, stdout) = ServerProcess::spawn(argv)?;
        let mut client = Self::start(stdout, stdin, options);
        client.process = Some(process);
        match client.initialize().await {
            Ok(()) => Ok(client),
            Err(e) => {
                let _ = client.close().await;
                Err(io::Error::other(format!(
                    "cannot initialize {:?}: {e}; check that it is an MCP stdio server",
                    argv.first().unwrap_or(&OsString::new())
                )))
            }
        }
    }

    /// Initializes a session over an existing reader/writer pair.
    pub async fn connect<R, W>(
        reader: R,
        writer: W,
        options: ClientOptions,
    ) -> Result<Self, CallError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let mut client = Self::start(reader, writer, options);
        client.initialize().await?;
        Ok(client)
    }

    fn start<R, W>(reader: R, writer: W, options: ClientOptions) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out, rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            tables: Mutex::default(),
            out,
        });
        let tasks = vec![
            tokio::spawn(write_loop(writer, rx)),
            tokio::spawn(read_loop(reader, Arc::clone(&shared))),
        ];
        Self {
            shared,
            next_id: AtomicI64::new(0),
            options,
            process: None,
            tasks,
            protocol_version: String::new(),
        }
    }

    /// The version the server chose.
    pub fn protocol_version(&self) -> &str {
        &self.protocol_version
    }

    async fn initialize(&mut self) -> Result<(), CallError> {
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "reference-client", "version": env!("CARGO_PKG_VERSION")},
        });
        let id = self.fresh_id();
        let rx = self.send_request(id.clone(), "initialize", params)?;
        // initialize is never cancelled (LIF-08): on timeout we just give up.
        let reply = match tokio::time::timeout(self.options.initialize_timeout, rx).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(_)) => return Err(CallError::Closed),
            Err(_) => {
                self.shared.lock().pending.remove(&id);
                return Err(CallError::TimedOut(self.options.initialize_timeout));
            }
        };
        let result = reply.map_err(CallError::Rpc)?;
        let Some(version) = result.get("protocolVersion").and_then(Value::as_str) else {
            return Err(CallError::InvalidResult(
                "initialize result has no protocolVersion".into(),
            ));
        };
        self.protocol_version = version.to_owned();
        self.send(notification("notifications/initialized", None))
    }

    fn send(&self, line: String) -> Result<(), CallError> {
        self.shared
            .out
            .send(Out::Line(line))
            .map_err(|_| CallError::Closed)
    }

    fn fresh_id(&self) -> RequestId {
        RequestId::Int(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    fn send_request(
        &self,
        id: RequestId,
        method: &str,
        params: Value,
    ) -> Result<oneshot::Receiver<Reply>, CallError> {
        let (tx, rx) = oneshot::channel();
        {
            let mut tables = self.shared.lock();
            if tables.closed {
                return Err(CallError::Closed);
            }
            tables.pending.insert(id.clone(), tx);
        }
        self.send(request(&id, method, Some(params)))?;
        Ok(rx)
    }

    /// Calls a tool with the default deadline.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
        progress: Option<ProgressFn<'_>>,
        cancel: CancellationToken,
    ) -> Result<ToolResult, CallError> {
        let params = json!({"name": name, "arguments": arguments});
        let result = self
            .request(
                "tools/call",
                params,
                progress,
                cancel,
                self.options.request_timeout,
            )
            .await?;
        let Some(content) = result.get("content").and_then(Value::as_array) else {
            return Err(CallError::InvalidResult(
                "tools/call result has no content array".into(),
            ));
        };
        Ok(ToolResult {
            is_error: result
                .get("isError")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            content: content.clone(),
        })
    }

    /// JSON-RPC `ping`; succeeds when the server answers.
    pub async fn ping(&self) -> Result<(), CallError> {
        let timeout = self.options.request_timeout;
        self.request("ping", json!({}), None, CancellationToken::new(), timeout)
            .await
            .map(drop)
    }

    /// Sends any request. With a `progress` callback a unique progress token
    /// is attached. When `cancel` fires or `timeout` passes before the answer,
    /// `notifications/cancelled` with the exact id is sent and any later
    /// answer is ignored.
    pub async fn request(
        &self,
        method: &str,
        mut params: Value,
        mut progress: Option<ProgressFn<'_>>,
        cancel: CancellationToken,
        timeout: Duration,
    ) -> Result<Value, CallError> {
        let id = self.fresh_id();
        let (progress_tx, mut progress_rx) = mpsc::unbounded_channel();
        let token = progress.is_some().then(|| {
            // Derived from the id, so unique among this client's requests.
            let token = RequestId::Str(format!("progress-{id}"));
            params["_meta"] = json!({"progressToken": token.to_value()});
            self.shared
                .lock()
                .progress
                .insert(token.clone(), progress_tx);
            token
        });
        let _route = ProgressRoute {
            shared: &self.shared,
            token,
        };
        let mut rx = self.send_request(id.clone(), method, params)?;
        let mut in_flight = InFlight {
            shared: &self.shared,
            id,
            settled: false,
        };
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let why = loop {
            tokio::select! {
                biased;
                () = cancel.cancelled() => break CallError::Cancelled,
                () = &mut deadline => break CallError::TimedOut(timeout),
                reply = &mut rx => {
                    in_flight.settled = true;
                    // Progress read before the answer is delivered first.
                    while let Ok(update) = progress_rx.try_recv() {
                        if let Some(callback) = progress.as_mut() {
                            callback(&update);
                        }
                    }
                    return finish(reply);
                }
                Some(update) = progress_rx.recv() => {
                    if let Some(callback) = progress.as_mut() {
                        callback(&update);
                    }
                }
            }
        };
        let reason = match &why {
            CallError::TimedOut(d) => format!("timed out after {} ms", d.as_millis()),
            _ => "cancelled by the caller".to_owned(),
        };
        if in_flight.cancel(&reason) {
            Err(why)
        } else {
            // The answer was already read: deliver it rather than cancel.
            finish(rx.await)
        }
    }

    /// Closes the session: closes the server's stdin, waits, then SIGTERM,
    /// waits, then SIGKILL, and reaps it. Returns its exit status.
    pub async fn close(mut self) -> io::Result<Option<ExitStatus>> {
        let _ = self.shared.out.send(Out::End);
        let mut tasks = std::mem::take(&mut self.tasks).into_iter();
        if let Some(writer) = tasks.next() {
            let _ = writer.await;
        }
        let status = match self.process.take() {
            Some(process) => Some(process.shutdown(self.options.shutdown_grace).await?),
            None => None,
        };
        for task in tasks {
            task.abort();
        }
        Ok(status)
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// A request awaiting its answer. Dropping it unsettled (the caller gave
/// up on the future) cancels the request on the wire.
struct InFlight<'a> {
    shared: &'a Shared,
    id: RequestId,
    settled: bool,
}

impl InFlight<'_> {
    /// Sends `notifications/cancelled` unless the answer was already read;
    /// returns whether the cancel was sent. Any later answer is ignored.
    fn cancel(&mut self, reason: &str) -> bool {
        self.settled = true;
        if self.shared.lock().pending.remove(&self.id).is_none() {
            return false;
        }
        let params = json!({"requestId": self.id.to_value(), "reason": reason});
        // If the connection is gone there is nothing left to cancel.
        let _ = self.shared.out.send(Out::Line(notification(
            "notifications/cancelled",
            Some(params),
        )));
        true
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !self.settled {
            self.cancel("abandoned by the caller");
        }
    }
}

/// Removes a progress route when its request ends, however it ends.
struct ProgressRoute<'a> {
    shared: &'a Shared,
    token: Option<RequestId>,
}

impl Drop for ProgressRoute<'_> {
    fn drop(&mut self) {
        if let Some(token) = &self.token {
            self.shared.lock().progress.remove(token);
        }
    }
}

fn finish(reply: Result<Reply, oneshot::error::RecvError>) -> Result<Value, CallError> {
    match reply {
        Ok(Ok(result)) => Ok(result),
        Ok(Err(error)) => Err(CallError::Rpc(error)),
        Err(_) => Err(CallError::Closed),
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(mut writer: W, mut rx: mpsc::UnboundedReceiver<Out>) {
    if let Err(e) = write_lines(&mut writer, &mut rx).await {
        eprintln!("reference-client: cannot write to the server: {e}; it has probably exited");
        return;
    }
    // Closing the writer closes the server's stdin.
    let _ = writer.shutdown().await;
}

async fn read_loop<R: AsyncRead + Unpin>(reader: R, shared: Arc<Shared>) {
    let mut lines = LineReader::new(reader);
    while let Some(next) = lines.next_line().await {
        let line = match next {
            Ok(line) => line,
            Err(LineError::Io(e)) => {
                eprintln!("reference-client: cannot read from the server: {e}");
                break;
            }
            Err(e) => {
                eprintln!("reference-client: skipped an unreadable line from the server ({e:?})");
                continue;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        match Message::parse(&line) {
            Ok(Message::Response {
                id: Some(id),
                outcome,
            }) => {
                let waiter = shared.lock().pending.remove(&id);
                match waiter {
                    Some(tx) => {
                        let _ = tx.send(outcome);
                    }
                    None => eprintln!(
                        "reference-client: ignored response for request {id}: nothing is waiting for it (cancelled, timed out or unknown)"
                    ),
                }
            }
            Ok(Message::Response { id: None, outcome }) => {
                eprintln!("reference-client: server reported an error without an id: {outcome:?}")
            }
            Ok(Message::Notification { method, params }) if method == "notifications/progress" => {
                route_progress(&shared, params.as_ref())
            }
            Ok(Message::Notification { .. }) => {}
            Ok(Message::Request { id, method, .. }) => {
                let line = if method == "ping" {
                    response(&id, json!({}))
                } else {
                    let message =
                        format!("method not found: {method:?}; this client serves only ping");
                    error_response(Some(&id), &RpcError::new(METHOD_NOT_FOUND, message))
                };
                let _ = shared.out.send(Out::Line(line));
            }
            Err(rejected) => eprintln!(
                "reference-client: ignored an invalid message from the server: {}",
                rejected.error.message
            ),
        }
    }
    // The server is gone: every waiter learns it at once.
    let mut tables = shared.lock();
    tables.closed = true;
    tables.pending.clear();
    tables.progress.clear();
}

fn route_progress(shared: &Shared, params: Option<&Value>) {
    let Some(params) = params else { return };
    let Some(token) = params.get("progressToken").and_then(RequestId::from_value) else {
        return;
    };
    let Some(progress) = params.get("progress").and_then(Value::as_f64) else {
        return;
    };
    let update = Progress {
        progress,
        total: params.get("total").and_then(Value::as_f64),
        message: params
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_owned),
    };
    if let Some(route) = shared.lock().progress.get(&token) {
        let _ = route.send(update);
    }
}
