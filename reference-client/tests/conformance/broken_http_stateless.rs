//! Deliberately broken clients of the stateless era (2026-07-28) over Streamable HTTP, and
//! one of the handshake era that cancels after the harness closed its stream (AMB-23): this
//! test binary again, making raw HTTP requests to `CONFORMANCE_SERVER_URL`.

use serde_json::{json, Value};
use std::time::Duration;

const VERSION: &str = "2026-07-28";

/// What a broken client's requests get wrong.
#[derive(Clone, Copy, Default)]
struct Faults {
    /// `MCP-Protocol-Version` says 2025-11-25 while `_meta` says 2026-07-28.
    wrong_version_header: bool,
    /// No `Mcp-Name` on `tools/call`.
    no_name: bool,
}

struct Client {
    http: reqwest::Client,
    url: String,
    faults: Faults,
}

fn report(action: usize, outcome: &str) {
    println!("{}", json!({"action": action, "outcome": outcome}));
}

impl Client {
    fn new(faults: Faults) -> Client {
        Client {
            http: reqwest::Client::new(),
            url: std::env::var("CONFORMANCE_SERVER_URL").expect("the harness sets the URL"),
            faults,
        }
    }

    /// POSTs one message of 2026-07-28 (a request is stamped) with the era's headers.
    async fn post(&self, mut message: Value) -> Option<reqwest::Response> {
        let method = message["method"].as_str().unwrap_or_default().to_string();
        if message.get("id").is_some() {
            let meta = &mut message["params"]["_meta"];
            meta["io.modelcontextprotocol/protocolVersion"] = json!(VERSION);
            meta["io.modelcontextprotocol/clientCapabilities"] = json!({});
            meta["io.modelcontextprotocol/clientInfo"] = json!({"name": "broken", "version": "0"});
        }
        let header_version = if self.faults.wrong_version_header {
            "2025-11-25"
        } else {
            VERSION
        };
        let mut request = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", header_version)
            .header("mcp-method", &method)
            .timeout(Duration::from_secs(30));
        if let Some(name) = message.pointer("/params/name").and_then(Value::as_str) {
            if !self.faults.no_name {
                request = request.header("mcp-name", name);
            }
        }
        request.body(message.to_string()).send().await.ok()
    }

    /// POSTs a request and reads its answer to the end.
    async fn call(&self, message: Value) -> Option<(u16, String)> {
        let response = self.post(message).await?;
        let status = response.status().as_u16();
        Some((status, response.text().await.unwrap_or_default()))
    }
}

fn echo(id: u64, text: &str) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"echo","arguments":{"text":text}}})
}

/// The actions of `client/client-stateless-call`.
async fn one_call(faults: Faults) {
    let client = Client::new(faults);
    report(0, "result");
    client.call(echo(1, "stateless")).await;
    report(1, "result");
    report(2, "result");
}

/// How a broken client "cancels" its `work` call in `client/client-stateless-cancel`.
#[derive(Clone, Copy, PartialEq)]
enum Cancel {
    /// POSTs `notifications/cancelled` and keeps the stream open until the echo is answered.
    PostOnly,
    /// Keeps the stream open until the echo is answered and sends nothing.
    Nothing,
    /// Closes the stream, and POSTs `notifications/cancelled` as well (fair, AMB-06).
    CloseAndPost,
}

async fn cancel_case(how: Cancel) {
    let client = Client::new(Faults::default());
    report(0, "result");
    let work = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"work","arguments":{},"_meta":{"progressToken":"p"}}});
    let mut stream = client.post(work).await;
    if let Some(response) = stream.as_mut() {
        while let Ok(Some(chunk)) = response.chunk().await {
            if String::from_utf8_lossy(&chunk).contains("notifications/progress") {
                break;
            }
        }
    }
    if how == Cancel::CloseAndPost {
        drop(stream.take());
    }
    if how != Cancel::Nothing {
        let cancel =
            json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}});
        client.post(cancel).await;
    }
    report(1, "cancelled");
    // The harness answers the echo only after it has waited for the close.
    client.call(echo(2, "after")).await;
    drop(stream);
    report(2, "result");
    report(3, "result");
}

/// The actions of `client/client-http-stream-closed` (2025-11-25): when the harness closes
/// the call's stream, the client cancels the call (allowed, AMB-23).
async fn cancels_after_disconnect() {
    let http = reqwest::Client::new();
    let url = std::env::var("CONFORMANCE_SERVER_URL").expect("the harness sets the URL");
    let post = |message: Value, session: Option<String>| {
        let mut request = http
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .timeout(Duration::from_secs(10));
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25");
        }
        request.body(message.to_string()).send()
    };
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"broken-http","version":"0"}}});
    let Ok(response) = post(init, None).await else {
        return report(0, "error");
    };
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let _ = response.text().await;
    let initialized = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    let _ = post(initialized, session.clone()).await;
    report(0, "result");
    let work = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"work","arguments":{}}});
    if let Ok(mut response) = post(work, session.clone()).await {
        while let Ok(Some(_)) = response.chunk().await {}
    }
    let cancel = json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"the stream ended"}});
    let _ = post(cancel, session.clone()).await;
    report(1, "cancelled");
    let mut delete = http.delete(&url).timeout(Duration::from_secs(10));
    if let Some(session) = session {
        delete = delete
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25");
    }
    let _ = delete.send().await;
    report(2, "result");
}

/// A broken HTTP client of the stateless era; false when `mode` is none of these.
pub fn client(mode: &str) -> bool {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        match mode {
            "http-stateless-wrong-version-header" => {
                one_call(Faults {
                    wrong_version_header: true,
                    ..Faults::default()
                })
                .await
            }
            "http-stateless-no-name" => {
                one_call(Faults {
                    no_name: true,
                    ..Faults::default()
                })
                .await
            }
            "http-stateless-cancels-by-post" => cancel_case(Cancel::PostOnly).await,
            "http-stateless-never-closes" => cancel_case(Cancel::Nothing).await,
            "http-stateless-closes-and-posts" => cancel_case(Cancel::CloseAndPost).await,
            "http-stateless-falls-back-on-32022" => {
                // The 400 carries -32022 naming 2026-07-28: a modern server. It falls back.
                let client = Client::new(Faults::default());
                let discover = json!({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}});
                let answer = client.call(discover).await;
                eprintln!("server/discover got {answer:?}; falling back anyway");
                let init = json!({"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"broken","version":"0"}}});
                let _ = client
                    .http
                    .post(&client.url)
                    .header("accept", "application/json, text/event-stream")
                    .header("content-type", "application/json")
                    .body(init.to_string())
                    .send()
                    .await;
                report(0, "error");
            }
            "http-cancels-after-disconnect" => cancels_after_disconnect().await,
            _ => return false,
        }
        true
    })
}
