//! The conformance fixture profile (work, ping, echo, sleep, ticker, cancellations) on rmcp,
//! the official Rust SDK, over stdio. Cancellation is observed through the request's
//! `CancellationToken` (`RequestContext::ct`); progress goes out through `Peer::notify_progress`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{NumberOrString, ProgressNotificationParam, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
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

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let service = Fixture::new().serve(rmcp::transport::stdio()).await?;
    service.waiting().await?;
    Ok(())
}
