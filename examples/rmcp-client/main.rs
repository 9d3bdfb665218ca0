//! Conformance adapter for the official Rust SDK client (`rmcp` on crates.io).
//!
//! Acts out the actions of one `conformance client` case and prints one outcome line per
//! action on stdout; the contract is in the repository README, "Testing a client". It talks
//! to its server over stdio (`CONFORMANCE_SERVER`, an argv to spawn with rmcp's
//! `TokioChildProcess`) or over Streamable HTTP (`CONFORMANCE_SERVER_URL`, rmcp's
//! `StreamableHttpClientTransport`). Built outside the workspace: see README.md.

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam,
    ClientCapabilities, ClientConfig, ClientNotification, ClientRequest, Implementation,
    PingRequest, ProgressNotificationParam, ProgressToken, ProtocolVersion, RootsCapabilities,
    ServerResult,
};
// Roots are deprecated from 2026-07-28 on (SEP-2577) and still part of the handshake era.
#[allow(deprecated)]
use rmcp::model::ListRootsResult;
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, NotificationContext, PeerRequestOptions, RequestContext,
    RequestHandle, RunningService,
};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess, Transport};
use rmcp::{ClientHandler, ErrorData, Peer, RoleClient, ServiceError};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::future::Future;
use std::io::Write as _;
use std::process::{ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Progress for tokens nobody has claimed yet is kept this long (in notifications), so a
/// notification that overtakes the caller's registration is not lost.
const EARLY_PROGRESS_LIMIT: usize = 256;

fn log(message: &str) {
    eprintln!("[rmcp-client adapter] {message}");
}

/// Prints one outcome line; stdout carries nothing else.
fn report(action: usize, outcome: &str, text: Option<String>, progress: Option<Vec<f64>>) {
    let mut line = json!({"action": action, "outcome": outcome});
    if let Some(text) = text {
        line["text"] = json!(text);
    }
    if let Some(progress) = progress {
        line["progress"] = json!(progress);
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Where the server is: an argv to spawn, or a Streamable HTTP endpoint.
#[derive(Clone)]
enum Server {
    Stdio(Vec<String>),
    Http(String),
}

struct Environment {
    server: Server,
    actions: Vec<Value>,
    version: Option<String>,
}

fn environment() -> Result<Environment, String> {
    let json_var = |name: &str| -> Result<Option<Value>, String> {
        match std::env::var(name) {
            Err(_) => Ok(None),
            Ok(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| format!("{name} is not JSON ({e}): {text}")),
        }
    };
    let actions = json_var("CONFORMANCE_ACTIONS")?
        .and_then(|v| v.as_array().cloned())
        .ok_or("CONFORMANCE_ACTIONS must be a JSON array of actions")?;
    // This adapter runs no call as a task: it says so, and the case is skipped with its words.
    if actions.iter().any(|a| a.get("task").is_some()) {
        println!("{}", serde_json::json!({"decline": "this adapter does not run tool calls as tasks"}));
        std::process::exit(0);
    }
    let server = match std::env::var("CONFORMANCE_SERVER_URL") {
        Ok(url) => Server::Http(url),
        Err(_) => json_var("CONFORMANCE_SERVER")?
            .as_ref()
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty())
            .and_then(|a| a.iter().map(|s| s.as_str().map(str::to_string)).collect())
            .map(Server::Stdio)
            .ok_or("set CONFORMANCE_SERVER (a JSON array: the server's argv) or CONFORMANCE_SERVER_URL")?,
    };
    let version = std::env::var("CONFORMANCE_PROTOCOL_VERSION")
        .ok()
        .filter(|v| !v.is_empty());
    Ok(Environment {
        server,
        actions,
        version,
    })
}

/// Progress notifications reach a client handler, not the call: they are routed here by the
/// token rmcp put on the request.
#[derive(Default)]
struct ProgressRoutes {
    routes: HashMap<ProgressToken, mpsc::UnboundedSender<f64>>,
    early: Vec<(ProgressToken, f64)>,
}

impl ProgressRoutes {
    fn claim(&mut self, token: ProgressToken) -> mpsc::UnboundedReceiver<f64> {
        let (tx, rx) = mpsc::unbounded_channel();
        for (_, progress) in self.early.iter().filter(|(t, _)| *t == token) {
            let _ = tx.send(*progress);
        }
        self.early.retain(|(t, _)| *t != token);
        self.routes.insert(token, tx);
        rx
    }

    fn release(&mut self, token: &ProgressToken) {
        self.routes.remove(token);
    }

    fn deliver(&mut self, token: ProgressToken, progress: f64) {
        match self.routes.get(&token) {
            Some(route) => {
                let _ = route.send(progress);
            }
            None => {
                if self.early.len() == EARLY_PROGRESS_LIMIT {
                    self.early.remove(0);
                }
                self.early.push((token, progress));
            }
        }
    }
}

#[derive(Clone)]
struct Adapter {
    info: ClientConfig,
    progress: Arc<Mutex<ProgressRoutes>>,
    /// `roots_delay_ms` of the `connect` action: when set, the client offers `roots` and
    /// answers `roots/list` that long after it arrives.
    roots_delay: Option<Duration>,
}

impl Adapter {
    fn routes(&self) -> std::sync::MutexGuard<'_, ProgressRoutes> {
        self.progress.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The adapter for one `connect` action: with `roots_delay_ms` it declares the `roots`
    /// capability (deprecated from 2026-07-28 on, still valid in the handshake era).
    #[allow(deprecated)]
    fn for_connect(&self, action: &Value) -> Adapter {
        let mut adapter = self.clone();
        adapter.roots_delay = millis(action, "roots_delay_ms");
        if adapter.roots_delay.is_some() {
            // The builder needs rmcp's `server` or `macros` feature; the fields are public.
            let mut capabilities = ClientCapabilities::default();
            capabilities.roots = Some(RootsCapabilities::default());
            adapter.info.capabilities = capabilities;
        }
        adapter
    }
}

impl ClientHandler for Adapter {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.routes()
            .deliver(params.progress_token, params.progress);
    }

    /// Answers with no roots after `roots_delay_ms`, or stops waiting when the server cancels
    /// the request (`context.ct`). rmcp itself drops the answer of a cancelled request (the
    /// serve loop removes its id from `local_ct_pool` on `notifications/cancelled`, and a
    /// response without an entry there is not sent: `service.rs`, "dropping response for
    /// cancelled request"), so the adapter returns either way.
    #[allow(deprecated)]
    async fn list_roots(
        &self,
        context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let delay = self.roots_delay.unwrap_or_default();
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = context.ct.cancelled() => log(&format!("roots/list {} cancelled by the server", context.id)),
        }
        Ok(ListRootsResult::default())
    }
}

/// rmcp's child-process transport SIGKILLs the server when it is dropped, which is what a
/// deadline around `serve` does. The contract wants the session closed instead, so this
/// wrapper closes a dropped transport the way `close()` does (stdin first, then SIGTERM,
/// then SIGKILL), and lets the adapter wait for that.
struct ClosingChild {
    inner: Option<TokioChildProcess>,
    closing: Arc<Mutex<Option<JoinHandle<()>>>>,
}

impl Transport<RoleClient> for ClosingChild {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: rmcp::service::TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let sending = self.inner.as_mut().map(|t| t.send(item));
        async move {
            match sending {
                Some(sending) => sending.await,
                None => Err(std::io::Error::other("the server is closed")),
            }
        }
    }

    fn receive(
        &mut self,
    ) -> impl Future<Output = Option<rmcp::service::RxJsonRpcMessage<RoleClient>>> + Send {
        let receiving = self.inner.as_mut().map(|t| t.receive());
        async move {
            match receiving {
                Some(receiving) => receiving.await,
                None => None,
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        let closing = self.inner.as_mut().map(|t| t.close());
        async move {
            match closing {
                Some(closing) => closing.await,
                None => Ok(()),
            }
        }
    }
}

impl Drop for ClosingChild {
    fn drop(&mut self) {
        if let Some(mut child) = self.inner.take() {
            let closing = tokio::spawn(async move {
                if let Err(e) = child.close().await {
                    log(&format!("closing the server failed: {e}"));
                }
            });
            *self.closing.lock().unwrap_or_else(|e| e.into_inner()) = Some(closing);
        }
    }
}

/// How rmcp is asked for the harness's version: a 2025-era version is what `initialize`
/// offers (rmcp's own default is 2026-07-28, even in `initialize`); a 2026-era version
/// selects `Auto`, which probes `server/discover` and falls back to `initialize` at
/// 2025-11-25.
fn lifecycle(version: Option<&str>) -> (ProtocolVersion, ClientLifecycleMode) {
    let Some(version) = version else {
        return (ProtocolVersion::default(), ClientLifecycleMode::Initialize);
    };
    let parsed: ProtocolVersion = serde_json::from_value(json!(version)).unwrap_or_default();
    if parsed.has_initialize() {
        (parsed, ClientLifecycleMode::Initialize)
    } else {
        let mode = ClientLifecycleMode::Auto {
            preferred_versions: vec![parsed.clone()],
            legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
        };
        (parsed, mode)
    }
}

type Session = RunningService<RoleClient, Adapter>;

/// `connect`: starts the transport and runs rmcp's startup, under the action's deadline.
async fn connect(
    env: &Environment,
    adapter: Adapter,
    action: &Value,
) -> Result<Session, (&'static str, String)> {
    let (_, mode) = lifecycle(env.version.as_deref());
    let deadline = millis(action, "timeout_ms");
    let closing = Arc::new(Mutex::new(None));
    let starting: std::pin::Pin<Box<dyn Future<Output = Result<Session, String>> + Send>> =
        match &env.server {
            Server::Stdio(argv) => {
                let mut command = tokio::process::Command::new(&argv[0]);
                command.args(&argv[1..]);
                let (child, _) = TokioChildProcess::builder(command)
                    .stderr(Stdio::inherit())
                    .spawn()
                    .map_err(|e| ("error", format!("cannot start {argv:?}: {e}")))?;
                let transport = ClosingChild {
                    inner: Some(child),
                    closing: Arc::clone(&closing),
                };
                Box::pin(async move {
                    adapter
                        .serve_with_lifecycle(transport, mode)
                        .await
                        .map_err(|e| e.to_string())
                })
            }
            Server::Http(url) => {
                let transport = StreamableHttpClientTransport::from_uri(url.as_str());
                Box::pin(async move {
                    adapter
                        .serve_with_lifecycle(transport, mode)
                        .await
                        .map_err(|e| e.to_string())
                })
            }
        };
    let started = match deadline {
        // rmcp has no startup deadline of its own; the adapter's drops the startup.
        Some(deadline) => match tokio::time::timeout(deadline, starting).await {
            Ok(started) => started.map_err(|e| ("error", e)),
            Err(_) => Err((
                "timeout",
                format!("no answer to the handshake within {deadline:?}"),
            )),
        },
        None => starting.await.map_err(|e| ("error", e)),
    };
    // A startup that was dropped or failed closes its server: wait for that before reporting.
    let pending = closing.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(pending) = pending {
        let _ = pending.await;
    }
    started
}

fn millis(action: &Value, key: &str) -> Option<Duration> {
    action
        .get(key)
        .and_then(Value::as_u64)
        .map(Duration::from_millis)
}

fn result_text(result: &ServerResult) -> Option<String> {
    let value = serde_json::to_value(result).ok()?;
    let items = value.get("content")?.as_array()?;
    Some(
        items
            .iter()
            .filter_map(|i| i.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// The `reason` of the cancels the adapter asks for.
const CANCEL_REASON: &str = "cancelled by the conformance adapter";

/// How a call that holds its `RequestHandle` ended (one lives at a time: size does not matter).
#[allow(clippy::large_enum_variant)]
enum Ended {
    Answer(Result<ServerResult, ServiceError>),
    Cancelled,
}

/// How one call ended, in the contract's words.
fn outcome(result: Result<ServerResult, ServiceError>) -> (&'static str, Option<String>) {
    match result {
        Ok(result) => ("result", result_text(&result)),
        Err(e @ ServiceError::Timeout { .. }) => ("timeout", Some(e.to_string())),
        Err(e) => ("error", Some(e.to_string())),
    }
}

/// A `call` or `ping` action.
///
/// rmcp offers three ways to end a call early, and the adapter uses each where it fits:
/// a call without progress or deadline is `Peer::call_tool`, whose dropped future sends
/// `notifications/cancelled` ("request abandoned by the caller"); a call that wants progress
/// needs its `RequestHandle` (for the token) and is cancelled with `RequestHandle::cancel`;
/// a call with `timeout_ms` uses rmcp's own request timeout (`PeerRequestOptions::timeout`),
/// which sends `notifications/cancelled` ("request timeout") when it passes.
async fn call(adapter: Adapter, peer: Peer<RoleClient>, index: usize, action: Value) {
    let cancel = CancellationToken::new();
    if let Some(after) = millis(&action, "cancel_after_ms") {
        let token = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            token.cancel();
        });
    }
    let on_progress = action.get("cancel").and_then(Value::as_str) == Some("on-progress");
    let wants_progress = action.get("progress").and_then(Value::as_bool) == Some(true);
    let timeout = millis(&action, "timeout_ms");
    let reset_on_progress = action
        .get("reset_timeout_on_progress")
        .and_then(Value::as_bool)
        == Some(true);
    let max_total = millis(&action, "max_total_timeout_ms");
    // Any of rmcp's deadlines makes `await_response` the waiter.
    let deadline = timeout.is_some() || max_total.is_some();
    let request = if action.get("ping").is_some() {
        ClientRequest::PingRequest(PingRequest::default())
    } else {
        let name = action
            .get("call")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let arguments = action
            .get("arguments")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        ClientRequest::CallToolRequest(CallToolRequest::new(
            CallToolRequestParams::new(name).with_arguments(arguments),
        ))
    };

    if !wants_progress && !deadline {
        if let ClientRequest::CallToolRequest(request) = request {
            let ended = tokio::select! {
                result = peer.call_tool(request.params) => Some(result.map(ServerResult::CallToolResult)),
                _ = cancel.cancelled() => None,
            };
            match ended {
                Some(result) => {
                    let (word, text) = outcome(result);
                    report(index, word, text, None);
                }
                None => report(
                    index,
                    "cancelled",
                    Some("dropped the call_tool future".into()),
                    None,
                ),
            }
            return;
        }
    }

    // rmcp's own deadlines: the plain timeout; with `reset_timeout_on_progress`, each
    // progress notification for the request's token restarts it; `max_total_timeout` caps
    // the whole call with a timer of its own, and its cancel says "maximum total timeout
    // exceeded" (`service.rs`, `await_response_with_progress_timeout`).
    let mut options = match timeout {
        Some(timeout) => PeerRequestOptions::with_timeout(timeout),
        None => PeerRequestOptions::no_options(),
    };
    if reset_on_progress {
        options = options.reset_timeout_on_progress();
    }
    if let Some(cap) = max_total {
        options = options.with_max_total_timeout(cap);
    }
    let handle: RequestHandle<RoleClient> =
        match peer.send_cancellable_request(request, options).await {
            Ok(handle) => handle,
            Err(e) => return report(index, "error", Some(e.to_string()), None),
        };
    let token = handle.progress_token.clone();
    let mut progress = adapter.routes().claim(token.clone());
    let mut seen = vec![];
    let id = handle.id.clone();
    let ended = if deadline {
        // rmcp's timeout lives in `await_response`, which owns the handle: a caller cancel
        // racing it can only drop it and send the cancel through the peer.
        let waiting = handle.await_response();
        tokio::pin!(waiting);
        loop {
            tokio::select! {
                result = &mut waiting => break Ended::Answer(result),
                Some(p) = progress.recv() => {
                    seen.push(p);
                    if on_progress {
                        cancel.cancel();
                    }
                }
                _ = cancel.cancelled() => {
                    let notice = CancelledNotificationParam::new(Some(id.clone()), Some(CANCEL_REASON.into()));
                    let notice = ClientNotification::CancelledNotification(CancelledNotification::new(notice));
                    if let Err(e) = peer.send_notification(notice).await {
                        log(&format!("sending the cancel of {id} failed: {e}"));
                    }
                    break Ended::Cancelled;
                }
            }
        }
    } else {
        let mut handle = handle;
        loop {
            tokio::select! {
                result = &mut handle.rx => {
                    break Ended::Answer(result.unwrap_or(Err(ServiceError::TransportClosed)));
                }
                Some(p) = progress.recv() => {
                    seen.push(p);
                    if on_progress {
                        cancel.cancel();
                    }
                }
                _ = cancel.cancelled() => {
                    if let Err(e) = handle.cancel(Some(CANCEL_REASON.into())).await {
                        log(&format!("sending the cancel of {id} failed: {e}"));
                    }
                    break Ended::Cancelled;
                }
            }
        }
    };
    // Progress that arrived with the answer still belongs to the call.
    while let Ok(p) = progress.try_recv() {
        seen.push(p);
    }
    adapter.routes().release(&token);
    let seen = wants_progress.then_some(seen);
    match ended {
        Ended::Cancelled => report(index, "cancelled", None, seen),
        Ended::Answer(answer) => {
            let (word, text) = outcome(answer);
            report(index, word, text, seen);
        }
    }
}

async fn act(env: Environment) {
    let (version, _) = lifecycle(env.version.as_deref());
    let mut info = ClientConfig::default();
    info.protocol_version = version;
    info.client_info = Implementation::new("conformance-adapter-rmcp", "0.1.0");
    let mut adapter = Adapter {
        info,
        progress: Arc::default(),
        roots_delay: None,
    };
    let mut session: Option<Session> = None;
    let mut pending = vec![];
    let mut exit_index = None;
    for (index, action) in env.actions.iter().enumerate() {
        if action.get("connect").is_some() {
            adapter = adapter.for_connect(action);
            match connect(&env, adapter.clone(), action).await {
                Ok(started) => {
                    let era = started
                        .peer()
                        .peer_info()
                        .map(|i| i.protocol_version.to_string());
                    log(&format!("connected at {}", era.unwrap_or_default()));
                    session = Some(started);
                    report(index, "result", None, None);
                }
                Err((word, text)) => {
                    report(index, word, Some(text), None);
                    return;
                }
            }
        } else if let Some(ms) = action.get("sleep_ms").and_then(Value::as_u64) {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            report(index, "result", None, None);
        } else if action.get("exit").is_some() {
            exit_index = Some(index);
            break;
        } else if let Some(running) = &session {
            let calling = tokio::spawn(call(
                adapter.clone(),
                running.peer().clone(),
                index,
                action.clone(),
            ));
            if action.get("concurrent").and_then(Value::as_bool) == Some(true) {
                pending.push(calling);
            } else {
                let _ = calling.await;
            }
        } else {
            report(
                index,
                "error",
                Some("no session: the case must connect first".into()),
                None,
            );
        }
    }
    for calling in pending {
        let _ = calling.await;
    }
    // `close` cancels the service and closes the transport: over stdio the server's stdin
    // first, then SIGTERM after 3 s and SIGKILL after 3 s more; over HTTP a DELETE for the
    // session.
    if let Some(mut running) = session {
        if let Err(e) = running.close().await {
            log(&format!("closing the session failed: {e}"));
        }
    }
    if let Some(index) = exit_index {
        report(index, "result", None, None);
    }
}

fn main() -> ExitCode {
    let env = match environment() {
        Ok(env) => env,
        Err(e) => {
            log(&e);
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            log(&format!("cannot start a tokio runtime: {e}"));
            return ExitCode::from(1);
        }
    };
    runtime.block_on(act(env));
    ExitCode::SUCCESS
}
