//! The conformance fixture profile (work, ping, echo, sleep, ticker, cancellations) on rmcp,
//! the official Rust SDK, with the 2026 tasks extension (SEP-2663,
//! `io.modelcontextprotocol/tasks`), over stdio (the default) or Streamable HTTP.
//!
//! The server declares the extension and answers `tasks/get`, `tasks/update` and
//! `tasks/cancel` from rmcp's own `TaskManager`. When the request declares the extension in
//! its per-request client capabilities (or, in a 2025-era session, at `initialize`), `work`,
//! `sleep` and `ticker` return a `CreateTaskResult` (`resultType: "task"`) and run as a task;
//! otherwise they run as plain calls, cancelled through `RequestContext::ct` as in
//! targets/rmcp. A task's work waits on `TaskContext::cancelled` (rmcp's cooperative
//! cancel) and settles `cancelled` with `TaskExit::Cancelled`; the witness then records the
//! task's id.
//!
//! The extension does not support progress on tasks, so a task sends none; with
//! `--task-progress` it sends progress with the call's token all the same (to study what
//! rmcp does with it).
//!
//! Usage: `rmcp-tasks-fixture [--task-progress]` (stdio), or `rmcp-tasks-fixture --http --port
//! N [--stateless] [--task-progress]`: Streamable HTTP on `127.0.0.1:N`, endpoint `/mcp`,
//! as in targets/rmcp. One witness and one task manager for the process.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{
    CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock, CreateTaskResult,
    GetTaskParams, GetTaskResult, NumberOrString, ProgressNotificationParam, ProgressToken,
    ServerCapabilities, ServerConfig, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions};
use rmcp::transport::streamable_http_server::{
    session::local::LocalSessionManager, StreamableHttpServerConfig, StreamableHttpService,
};
use rmcp::{
    tool, tool_handler, tool_router, ErrorData, Peer, RoleServer, ServerHandler, ServiceExt,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct SleepArgs {
    ms: u64,
}

#[derive(Deserialize, JsonSchema)]
struct TickerArgs {
    interval_ms: u64,
}

/// Suggested polling interval of every task, in ms.
const POLL_INTERVAL_MS: u64 = 100;

type Witness = Arc<Mutex<Vec<Value>>>;

#[derive(Clone)]
struct Fixture {
    /// Ids (exact JSON values, in order) of requests whose work observed its cancellation;
    /// for a task, its task id.
    observed: Witness,
    tasks: TaskManager,
    task_progress: bool,
    tool_router: ToolRouter<Self>,
}

fn id_value(id: &NumberOrString) -> Value {
    match id {
        NumberOrString::Number(n) => Value::from(*n),
        NumberOrString::String(s) => Value::from(s.as_ref()),
    }
}

fn text(t: &str) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(t)])
}

/// Where a task's work sends progress, if anywhere: the call's peer and token.
#[derive(Clone)]
struct Progress(Option<(Peer<RoleServer>, ProgressToken)>);

impl Progress {
    async fn send(&self, value: f64, message: Option<&str>) {
        if let Some((peer, token)) = &self.0 {
            let mut param = ProgressNotificationParam::new(token.clone(), value);
            if let Some(message) = message {
                param = param.with_message(message);
            }
            let _ = peer.notify_progress(param).await;
        }
    }
}

impl Fixture {
    fn new(task_progress: bool) -> Self {
        Fixture {
            observed: Arc::default(),
            tasks: TaskManager::new(),
            task_progress,
            tool_router: Self::tool_router(),
        }
    }

    fn cancelled(&self, context: &RequestContext<RoleServer>) -> ErrorData {
        self.observed.lock().unwrap().push(id_value(&context.id));
        ErrorData::internal_error("cancelled", None)
    }

    fn progress_of(context: &RequestContext<RoleServer>) -> Progress {
        Progress(
            context
                .meta
                .get_progress_token()
                .map(|token| (context.peer.clone(), token)),
        )
    }

    /// Whether this request may get a `CreateTaskResult`: it declared the extension.
    fn as_task(context: &RequestContext<RoleServer>) -> bool {
        context
            .client_capabilities()
            .is_some_and(|caps| caps.supports_tasks())
    }

    /// Runs `work` as a task of rmcp's TaskManager and answers with its seed state. The work
    /// gets the task's context, a recorder for the witness and (with `--task-progress`)
    /// the call's progress channel.
    fn spawn<F, Fut>(&self, context: &RequestContext<RoleServer>, work: F) -> CallToolResponse
    where
        F: FnOnce(TaskContext, Box<dyn FnOnce() + Send>, Progress) -> Fut,
        Fut: std::future::Future<Output = Result<CallToolResult, TaskExit>> + Send + 'static,
    {
        let observed = self.observed.clone();
        let progress = if self.task_progress {
            Self::progress_of(context)
        } else {
            Progress(None)
        };
        let options = TaskOptions::new().with_poll_interval_ms(POLL_INTERVAL_MS);
        let task = self.tasks.spawn(options, move |ctx| {
            let id = Value::from(ctx.task_id());
            let record: Box<dyn FnOnce() + Send> =
                Box::new(move || observed.lock().unwrap().push(id));
            Box::pin(work(ctx, record, progress))
        });
        CallToolResponse::Task(CreateTaskResult::new(task))
    }
}

async fn work_task(
    ctx: TaskContext,
    record: Box<dyn FnOnce() + Send>,
    progress: Progress,
) -> Result<CallToolResult, TaskExit> {
    progress.send(0.0, Some("Started")).await;
    ctx.cancelled().await;
    record();
    Err(TaskExit::Cancelled)
}

#[tool_router]
impl Fixture {
    #[tool(description = "Progress once, then run until cancelled (a task if the request allows)")]
    async fn work(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if Self::as_task(&context) {
            return Ok(self.spawn(&context, work_task));
        }
        Self::progress_of(&context).send(0.0, Some("Started")).await;
        context.ct.cancelled().await;
        Err(self.cancelled(&context))
    }

    #[tool(description = "Liveness probe")]
    async fn ping(&self) -> String {
        "Server: still available".into()
    }

    #[tool(description = "Echo the text")]
    async fn echo(&self, Parameters(args): Parameters<EchoArgs>) -> String {
        args.text
    }

    #[tool(description = "Answer `slept` after ms milliseconds (a task if the request allows)")]
    async fn sleep(
        &self,
        Parameters(args): Parameters<SleepArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let nap = Duration::from_millis(args.ms);
        if Self::as_task(&context) {
            return Ok(self.spawn(&context, move |ctx, record, _| async move {
                tokio::select! {
                    _ = ctx.cancelled() => { record(); Err(TaskExit::Cancelled) }
                    _ = tokio::time::sleep(nap) => Ok(text("slept")),
                }
            }));
        }
        tokio::select! {
            _ = context.ct.cancelled() => Err(self.cancelled(&context)),
            _ = tokio::time::sleep(nap) => Ok(text("slept").into()),
        }
    }

    #[tool(
        description = "Progress 1, 2, 3, ... every interval_ms until cancelled (a task if the request allows)"
    )]
    async fn ticker(
        &self,
        Parameters(args): Parameters<TickerArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let every = Duration::from_millis(args.interval_ms.max(1));
        if Self::as_task(&context) {
            return Ok(
                self.spawn(&context, move |ctx, record, progress| async move {
                    tick(every, ctx.cancelled(), &progress).await;
                    record();
                    Err(TaskExit::Cancelled)
                }),
            );
        }
        tick(every, context.ct.cancelled(), &Self::progress_of(&context)).await;
        Err(self.cancelled(&context))
    }

    #[tool(description = "Ids of the requests whose work observed its cancellation")]
    async fn cancellations(&self) -> String {
        Value::Array(self.observed.lock().unwrap().clone()).to_string()
    }
}

/// Progress 1, 2, 3, ... every `every` until `cancelled` resolves (checked first at each tick).
async fn tick(
    every: Duration,
    cancelled: impl std::future::Future<Output = ()>,
    progress: &Progress,
) {
    tokio::pin!(cancelled);
    let mut interval = tokio::time::interval(every);
    interval.tick().await;
    let mut n = 0u64;
    loop {
        tokio::select! {
            biased;
            _ = &mut cancelled => return,
            _ = interval.tick() => {
                n += 1;
                progress.send(n as f64, None).await;
            }
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        Ok(GetTaskResult::new(self.tasks.get_task(&request.task_id)?))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.cancel_task(&request.task_id)
    }
}

/// How the fixture was asked to serve.
enum Mode {
    Stdio,
    Http { port: u16, stateless: bool },
}

fn parse_args() -> Result<(Mode, bool), String> {
    let mut http = false;
    let mut stateless = false;
    let mut task_progress = false;
    let mut port = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--http" => http = true,
            "--stateless" => stateless = true,
            "--task-progress" => task_progress = true,
            "--port" => {
                let value = args.next().ok_or("--port needs a number")?;
                port = Some(
                    value
                        .parse::<u16>()
                        .map_err(|e| format!("--port {value}: {e}"))?,
                );
            }
            other => return Err(format!(
                "unknown argument {other}; use [--http --port N [--stateless]] [--task-progress]"
            )),
        }
    }
    match (http, port) {
        (false, _) => Ok((Mode::Stdio, task_progress)),
        (true, Some(port)) => Ok((Mode::Http { port, stateless }, task_progress)),
        (true, None) => Err("--http needs --port N".into()),
    }
}

async fn serve_http(
    fixture: Fixture,
    port: u16,
    stateless: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    // One witness and one task manager for every session (and every stateless request).
    let config = StreamableHttpServerConfig::default().with_legacy_session_mode(!stateless);
    let service = StreamableHttpService::new(
        move || Ok(fixture.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        served = axum::serve(listener, router) => served?,
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    match parse_args() {
        Err(message) => {
            eprintln!("rmcp-tasks-fixture: {message}");
            std::process::exit(2);
        }
        Ok((Mode::Stdio, task_progress)) => {
            let service = Fixture::new(task_progress)
                .serve(rmcp::transport::stdio())
                .await?;
            service.waiting().await?;
        }
        Ok((Mode::Http { port, stateless }, task_progress)) => {
            serve_http(Fixture::new(task_progress), port, stateless).await?
        }
    }
    Ok(())
}
