//! The client proper: issues requests with unique ids, routes answers and progress back to
//! their callers, cancels on the wire when a caller gives up, and answers the few requests
//! a server may send. It sees only messages; a [`Transport`] moves them.

use crate::pending::{finish, InFlight, OnDrop, Pending};
use crate::shared::{ProgressRoute, Reply, Shared};
use crate::transport::http::HttpTransport;
use crate::transport::stdio::StdioTransport;
use crate::transport::{OutgoingKind, Transport};
use crate::{
    CallError, ClientOptions, ConnectError, ProgressFn, RequestOptions, TaskOptions, TaskSupport,
    ToolResult,
};
use reference_wire::RequestId;
use serde_json::{json, Value};
use std::ffi::OsString;
use std::io;
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

/// A connection to one MCP server.
pub struct Client {
    pub(crate) shared: Arc<Shared>,
    pub(crate) options: ClientOptions,
    reader: tokio::task::JoinHandle<()>,
}

impl Client {
    /// Spawns `argv` (no shell) and initializes over its stdio. stderr is inherited.
    pub async fn spawn(argv: &[OsString], options: ClientOptions) -> Result<Self, ConnectError> {
        let transport = StdioTransport::spawn(argv).map_err(ConnectError::Spawn)?;
        Self::connect_transport(transport, options).await
    }

    /// Initializes over an existing reader/writer pair (stdio framing).
    pub async fn connect<R, W>(
        reader: R,
        writer: W,
        options: ClientOptions,
    ) -> Result<Self, ConnectError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        Self::connect_transport(StdioTransport::new(reader, writer), options).await
    }

    /// Connects to a Streamable HTTP endpoint (`http://…`) and initializes.
    pub async fn connect_http(url: &str, options: ClientOptions) -> Result<Self, ConnectError> {
        let transport = HttpTransport::new(url).map_err(ConnectError::InvalidUrl)?;
        Self::connect_transport(transport, options).await
    }

    /// Initializes over any transport. On failure the transport is closed.
    pub async fn connect_transport<T: Transport>(
        transport: T,
        options: ClientOptions,
    ) -> Result<Self, ConnectError> {
        let transport: Arc<dyn Transport> = Arc::new(transport);
        let shared = Arc::new(Shared::new(Arc::clone(&transport)));
        let reader = tokio::spawn(crate::routing::read_loop(Arc::clone(&shared)));
        let client = Self {
            shared,
            options,
            reader,
        };
        let first = client.handshake().await;
        *client.shared.handshakes.lock().await += 1;
        match first {
            Ok(()) => Ok(client),
            Err(e) => {
                let _ = client.close().await;
                Err(e)
            }
        }
    }

    /// The protocol version in force (the one the server chose).
    pub fn protocol_version(&self) -> String {
        self.shared
            .version
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Sends a request that is never cancelled (the handshake) and waits at most `timeout`
    /// for its answer.
    pub(crate) async fn call_uncancelled(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, CallError> {
        let id = self.fresh_id();
        let rx = self.send_request(id.clone(), method, params)?;
        match tokio::time::timeout(timeout, rx).await {
            Ok(reply) => finish(reply),
            Err(_) => {
                self.shared.lock().pending.remove(&id);
                Err(CallError::TimedOut(timeout))
            }
        }
    }

    pub(crate) fn fresh_id(&self) -> RequestId {
        self.shared.fresh_id()
    }

    /// Sends a request whose params are complete (stamped where the era asks it), for a
    /// caller that awaits its answer alongside other things; `on_drop` says what giving
    /// up on it means.
    pub(crate) fn begin(
        &self,
        method: &str,
        params: Value,
        on_drop: OnDrop,
    ) -> Result<Pending<'_>, CallError> {
        let id = self.fresh_id();
        let rx = self.send_request(id.clone(), method, params)?;
        let flight = InFlight {
            shared: &self.shared,
            id,
            settled: false,
            on_drop,
        };
        Ok(Pending::new(flight, rx))
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
        let message =
            json!({"jsonrpc": "2.0", "id": id.to_value(), "method": method, "params": params});
        self.shared.send(message, OutgoingKind::Request(id))?;
        Ok(rx)
    }

    /// Calls a tool. A tool the server listed as one that only runs as a task
    /// (`execution.taskSupport: "required"`, seen by [`list_tools`](Self::list_tools)) is
    /// run as one, as the specification requires (TSK-01): see
    /// [`call_tool_as_task`](Self::call_tool_as_task).
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
        options: RequestOptions<'_>,
    ) -> Result<ToolResult, CallError> {
        if self.tasks_allowed(name) == Some(TaskSupport::Required) {
            return self
                .call_tool_as_task(name, arguments, options, TaskOptions::default())
                .await;
        }
        let params = json!({"name": name, "arguments": arguments});
        let result = self.request("tools/call", params, options).await?;
        ToolResult::from_result(&result)
    }

    /// Proves the server answers: JSON-RPC `ping`, or `server/discover` in the stateless
    /// era, where `ping` no longer exists.
    pub async fn ping(&self) -> Result<(), CallError> {
        self.request(self.liveness_method(), json!({}), RequestOptions::default())
            .await
            .map(drop)
    }

    /// The cheapest request that proves the server answers, in this session's era.
    pub fn liveness_method(&self) -> &'static str {
        match self.era() {
            crate::Era::Handshake => "ping",
            crate::Era::Stateless => "server/discover",
        }
    }

    /// Sends any request. With a `progress` callback a unique progress token is attached.
    /// When `cancel` fires or the deadline passes before the answer, the request is
    /// cancelled on the wire (`notifications/cancelled` with the exact id, or closing its
    /// stream where the transport cancels that way) and any later answer is ignored. If
    /// the server forgot the session (HTTP 404), a new session is started and the request
    /// is sent once more, under a new id, within the same deadline.
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        options: RequestOptions<'_>,
    ) -> Result<Value, CallError> {
        let RequestOptions {
            mut progress,
            cancel,
            timeout,
        } = options;
        let cancel = cancel.unwrap_or_default();
        let timeout = timeout.unwrap_or(self.options.request_timeout);
        let deadline = Instant::now() + timeout;
        let generation = *self.shared.handshakes.lock().await;
        let call = Attempt {
            method,
            cancel: &cancel,
            deadline,
            timeout,
        };
        match self.attempt(&call, params.clone(), &mut progress).await {
            Err(CallError::SessionExpired) => {
                self.renew(generation).await?;
                self.attempt(&call, params, &mut progress).await
            }
            outcome => outcome,
        }
    }

    /// Starts a new session unless one was started since `generation`.
    pub(crate) async fn renew(&self, generation: u64) -> Result<(), CallError> {
        let mut handshakes = self.shared.handshakes.lock().await;
        if *handshakes == generation {
            crate::log::warn("the server forgot the session (HTTP 404); starting a new one");
            self.reopen()
                .await
                .map_err(|e| CallError::Transport(format!("cannot start a new session: {e}")))?;
            *handshakes += 1;
        }
        Ok(())
    }

    async fn attempt(
        &self,
        call: &Attempt<'_>,
        mut params: Value,
        progress: &mut Option<ProgressFn<'_>>,
    ) -> Result<Value, CallError> {
        let id = self.fresh_id();
        let (progress_tx, mut progress_rx) = mpsc::unbounded_channel();
        let token = progress.is_some().then(|| {
            // Derived from the id, so unique among this client's requests.
            let token = RequestId::Str(format!("progress-{id}"));
            set_meta(&mut params, "progressToken", token.to_value());
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
        self.stamp(&mut params);
        let mut rx = self.send_request(id.clone(), call.method, params)?;
        let mut in_flight = InFlight {
            shared: &self.shared,
            id,
            settled: false,
            on_drop: OnDrop::Cancel,
        };
        let why = loop {
            tokio::select! {
                biased;
                () = call.cancel.cancelled() => break CallError::Cancelled,
                () = tokio::time::sleep_until(call.deadline) => break CallError::TimedOut(call.timeout),
                reply = &mut rx => {
                    in_flight.settled = true;
                    // Progress read before the answer is delivered first.
                    while let Ok(update) = progress_rx.try_recv() {
                        if let Some(callback) = progress.as_mut() {
                            callback(&update);
                        }
                    }
                    return self.check(finish(reply));
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
            self.check(finish(rx.await))
        }
    }

    /// Closes the connection (for stdio: closes the server's stdin, waits, then SIGTERM,
    /// waits, then SIGKILL, and reaps it). Returns the server's exit status where there is
    /// a server process.
    pub async fn close(self) -> io::Result<Option<ExitStatus>> {
        self.shared.lock().closed = true;
        let grace = self.options.shutdown_grace;
        let status = self.shared.transport.close(grace).await;
        self.reader.abort();
        status
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Sets `params._meta[key]`, making `params` and `_meta` objects where they are not.
pub(crate) fn set_meta(params: &mut Value, key: &str, value: Value) {
    if !params.is_object() {
        *params = json!({});
    }
    let meta = &mut params["_meta"];
    if !meta.is_object() {
        *meta = json!({});
    }
    meta[key] = value;
}

pub(crate) fn client_info() -> Value {
    json!({"name": "reference-client", "version": env!("CARGO_PKG_VERSION")})
}

/// One request's fixed terms, shared by its first attempt and its retry.
struct Attempt<'a> {
    method: &'a str,
    cancel: &'a tokio_util::sync::CancellationToken,
    deadline: Instant,
    timeout: Duration,
}
