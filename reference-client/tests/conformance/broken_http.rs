//! Deliberately broken clients over Streamable HTTP: this test binary again, making raw HTTP
//! requests to the harness's server at `CONFORMANCE_SERVER_URL`, each getting one transport
//! rule wrong on purpose.

use serde_json::{json, Value};
use std::time::Duration;

/// What a broken HTTP client gets wrong.
#[derive(Clone, Copy, Default)]
struct Faults {
    /// The cancel POST carries no `Mcp-Session-Id`.
    cancel_without_session: bool,
    /// No request carries `MCP-Protocol-Version`.
    no_version: bool,
    /// `Accept` lists only `application/json`.
    json_only: bool,
    /// No DELETE at the end.
    no_delete: bool,
}

struct Client {
    http: reqwest::Client,
    url: String,
    session: Option<String>,
    faults: Faults,
}

impl Client {
    fn new(faults: Faults) -> Client {
        Client {
            http: reqwest::Client::new(),
            url: std::env::var("CONFORMANCE_SERVER_URL").expect("the harness sets the URL"),
            session: None,
            faults,
        }
    }

    fn request(&self, method: reqwest::Method, with_session: bool) -> reqwest::RequestBuilder {
        let accept = if self.faults.json_only {
            "application/json"
        } else {
            "application/json, text/event-stream"
        };
        let mut request = self
            .http
            .request(method, &self.url)
            .header("accept", accept)
            .header("content-type", "application/json")
            .timeout(Duration::from_secs(10));
        if let (Some(session), true) = (&self.session, with_session) {
            request = request.header("mcp-session-id", session);
        }
        if self.session.is_some() && !self.faults.no_version {
            request = request.header("mcp-protocol-version", "2025-11-25");
        }
        request
    }

    /// POSTs a message and returns the response.
    async fn post(&self, message: Value, with_session: bool) -> Option<reqwest::Response> {
        self.request(reqwest::Method::POST, with_session)
            .body(message.to_string())
            .send()
            .await
            .ok()
    }

    /// POSTs a request and returns the text of its answer (JSON or SSE, as it came).
    async fn call(&self, message: Value) -> Option<(u16, String)> {
        let response = self.post(message, true).await?;
        let status = response.status().as_u16();
        Some((status, response.text().await.unwrap_or_default()))
    }

    async fn initialize(&mut self) {
        let response = self
            .post(
                json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"broken-http","version":"0"}}}),
                false,
            )
            .await;
        self.session = response.and_then(|r| {
            r.headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        });
        self.post(
            json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
            true,
        )
        .await;
    }

    async fn delete(&self) {
        if !self.faults.no_delete {
            let _ = self.request(reqwest::Method::DELETE, true).send().await;
        }
    }
}

fn report(action: usize, outcome: &str) {
    println!("{}", json!({"action": action, "outcome": outcome}));
}

/// The actions of `client/client-http-session`, with `faults`.
async fn session_case(faults: Faults) {
    let mut client = Client::new(faults);
    client.initialize().await;
    report(0, "result");
    // The call's SSE stream: wait for its first progress, then cancel.
    let mut stream = client
        .post(
            json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"work","arguments":{},"_meta":{"progressToken":"p"}}}),
            true,
        )
        .await;
    if let Some(response) = stream.as_mut() {
        while let Ok(Some(chunk)) = response.chunk().await {
            if String::from_utf8_lossy(&chunk).contains("notifications/progress") {
                break;
            }
        }
    }
    client
        .post(
            json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}),
            !client.faults.cancel_without_session,
        )
        .await;
    drop(stream);
    report(1, "cancelled");
    client
        .call(json!({"jsonrpc":"2.0","id":3,"method":"ping"}))
        .await;
    report(2, "result");
    client.delete().await;
    report(3, "result");
}

/// The actions of `client/client-http-expired-session`, by a client that goes on with the
/// forgotten session after its 404.
async fn ignores_not_found() {
    let mut client = Client::new(Faults::default());
    client.initialize().await;
    report(0, "result");
    client
        .call(json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"one"}}}))
        .await;
    report(1, "result");
    tokio::time::sleep(Duration::from_millis(200)).await;
    report(2, "result");
    for (action, id) in [(3, 3), (4, 4)] {
        let answer = client
            .call(json!({"jsonrpc":"2.0","id":id,"method":"ping"}))
            .await;
        let ok = answer.is_some_and(|(status, _)| status == 200);
        report(action, if ok { "result" } else { "error" });
    }
    client.delete().await;
    report(5, "result");
}

/// A broken HTTP client.
pub fn client(mode: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        match mode {
            "http-cancel-without-session" => {
                session_case(Faults {
                    cancel_without_session: true,
                    ..Faults::default()
                })
                .await
            }
            "http-no-version" => {
                session_case(Faults {
                    no_version: true,
                    ..Faults::default()
                })
                .await
            }
            "http-accepts-json-only" => {
                session_case(Faults {
                    json_only: true,
                    ..Faults::default()
                })
                .await
            }
            "http-no-delete" => {
                session_case(Faults {
                    no_delete: true,
                    ..Faults::default()
                })
                .await
            }
            "http-ignores-404" => ignores_not_found().await,
            "http-oversized" => {
                // A message of 5 MiB, more than the harness takes.
                let mut client = Client::new(Faults::default());
                client.initialize().await;
                report(0, "result");
                let text = "x".repeat(5 << 20);
                let huge = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":text}}});
                let status = client.post(huge, true).await.map(|r| r.status().as_u16());
                eprintln!("the oversized POST got {status:?}");
                client.delete().await;
            }
            other => panic!("unknown broken HTTP mode {other}"),
        }
    });
}
