//! The conformance fixture profile (work, ping, echo, sleep, ticker, cancellations) on rmcp,
//! the official Rust SDK, over stdio (the default) or Streamable HTTP. Cancellation is observed
//! through the request's `CancellationToken` (`RequestContext::ct`); progress goes out through
//! `Peer::notify_progress`.
//!
//! Usage: `rmcp-fixture` (stdio), or `rmcp-fixture --http --port N [--stateless]`: Streamable
//! HTTP on `127.0.0.1:N`, endpoint `/mcp`. By default legacy (2025-era) clients get sessions
//! (`legacy_session_mode`); `--stateless` serves every request without one. Requests at
//! 2026-07-28 are served statelessly in both modes. The witness is shared by all sessions.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{NumberOrString, ProgressNotificationParam, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::{
    session::local::LocalSessionManager, StreamableHttpServerConfig, StreamableHttpService,
};
use rmcp::{tool, tool_handler, tool_router, ErrorData, RoleServer, ServerHandler, ServiceExt};
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

#[derive(Clone)]
struct Fixture {
    /// Ids (exact JSON values, in order) of requests whose handler observed its cancellation.
    observed: Arc<Mutex<Vec<Value>>>,
    tool_router: ToolRouter<Self>,
}

fn id_value(id: &NumberOrString) -> Value {
    match id {
        NumberOrString::Number(n) => Value::from(*n),
        NumberOrString::String(s) => Value::from(s.as_ref()),
    }
}

impl Fixture {
    fn new() -> Self {
        Fixture {
            observed: Arc::default(),
            tool_router: Self::tool_router(),
        }
    }

    fn cancelled(&self, context: &RequestContext<RoleServer>) -> ErrorData {
        self.observed.lock().unwrap().push(id_value(&context.id));
        ErrorData::internal_error("cancelled", None)
    }

    async fn progress(&self, context: &RequestContext<RoleServer>, value: f64, message: Option<&str>) {
        if let Some(token) = context.meta.get_progress_token() {
            let mut param = ProgressNotificationParam::new(token, value);
            if let Some(message) = message {
                param = param.with_message(message);
            }
            let _ = context.peer.notify_progress(param).await;
        }
    }
}

#[tool_router]
impl Fixture {
    #[tool(description = "Progress once, then run until cancelled")]
    async fn work(&self, context: RequestContext<RoleServer>) -> Result<String, ErrorData> {
        self.progress(&context, 0.0, Some("Started")).await;
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

    #[tool(description = "Answer `slept` after ms milliseconds")]
    async fn sleep(
        &self,
        Parameters(args): Parameters<SleepArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<String, ErrorData> {
        tokio::select! {
            _ = context.ct.cancelled() => Err(self.cancelled(&context)),
            _ = tokio::time::sleep(Duration::from_millis(args.ms)) => Ok("slept".into()),
        }
    }

    #[tool(description = "Progress 1, 2, 3, ... every interval_ms until cancelled")]
    async fn ticker(
        &self,
        Parameters(args): Parameters<TickerArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<String, ErrorData> {
        let mut interval = tokio::time::interval(Duration::from_millis(args.interval_ms.max(1)));
        interval.tick().await;
        let mut n = 0u64;
        loop {
            tokio::select! {
                _ = context.ct.cancelled() => return Err(self.cancelled(&context)),
                _ = interval.tick() => {
                    n += 1;
                    self.progress(&context, n as f64, None).await;
                }
            }
        }
    }

    #[tool(description = "Ids of the requests whose handler observed its cancellation")]
    async fn cancellations(&self) -> String {
        Value::Array(self.observed.lock().unwrap().clone()).to_string()
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

/// How the fixture was asked to serve.
enum Mode {
    Stdio,
    Http { port: u16, stateless: bool },
}

fn parse_args() -> Result<Mode, String> {
    let mut http = false;
    let mut stateless = false;
    let mut port = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--http" => http = true,
            "--stateless" => stateless = true,
            "--port" => {
                let value = args.next().ok_or("--port needs a number")?;
                port = Some(value.parse::<u16>().map_err(|e| format!("--port {value}: {e}"))?);
            }
            other => return Err(format!("unknown argument {other}; use --http --port N [--stateless]")),
        }
    }
    match (http, port) {
        (false, _) => Ok(Mode::Stdio),
        (true, Some(port)) => Ok(Mode::Http { port, stateless }),
        (true, None) => Err("--http needs --port N".into()),
    }
}

async fn serve_http(port: u16, stateless: bool) -> Result<(), Box<dyn std::error::Error>> {
    // One witness for every session (and every stateless request).
    let fixture = Fixture::new();
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
            eprintln!("rmcp-fixture: {message}");
            std::process::exit(2);
        }
        Ok(Mode::Stdio) => {
            let service = Fixture::new().serve(rmcp::transport::stdio()).await?;
            service.waiting().await?;
        }
        Ok(Mode::Http { port, stateless }) => serve_http(port, stateless).await?,
    }
    Ok(())
}
