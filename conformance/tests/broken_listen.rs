//! The harness judged against deliberately broken subscription servers (2026-07-28 over
//! stdio): each mode of a small server breaks one rule of how a `subscriptions/listen` ends
//! (CAN-14), or takes one of the two readings the specification allows (AMB-19), and the
//! harness must give exactly the verdict the spec calls for. Every row also runs as
//! `loaded/…` with a busy loop on every core.
//!
//! This binary is also the server: with `BROKEN_LISTEN_SERVER=<mode>` it serves on stdio.
//! Modes: `correct` acknowledges a listen and, once cancelled, sends nothing more for it;
//! `graceful-result` then answers the listen with a completion result (the subscriptions
//! page); `cancels-back` then sends its own `notifications/cancelled` naming the listen (the
//! cancellation page); `keeps-notifying` sends a tool-list change for the subscription every
//! 50 ms whether cancelled or not; `cancels-other` also sends `notifications/cancelled`
//! naming the client's `server/discover`; `no-ack` never acknowledges.

#[path = "support/self_served.rs"]
pub mod self_served;
#[path = "support/shared_rows.rs"]
mod shared_rows;

use conformance::case::Case;
use conformance::engine::server::Connect;
use conformance::harness;
use conformance::harness::expect::{Expect, On};
use conformance::outcome::{Outcome, Severity};
use conformance::requirement::Req;
use libtest_mimic::Failed;
use serde_json::{json, Value};
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const CASE: &str = "stateless-listen-cancel";

/// The table: mode, what the run of the case must show.
#[rustfmt::skip]
fn table() -> Vec<(&'static str, Expect)> {
    use Outcome::Pass;
    use Severity::Note;
    type E = Expect;
    vec![
        ("correct",         E::outcome(Pass)),
        // Both readings of AMB-19 pass, and the run says which one it saw.
        ("graceful-result", E::outcome(Pass).noting(Req::Amb19, Note, "completion result|graceful")),
        ("cancels-back",    E::outcome(Pass).noting(Req::Amb19, Note, "notifications/cancelled")),
        // Nothing may come for a subscription once its cancel was read.
        ("keeps-notifying", E::fails(Req::Can14).saying("after the client's cancel")),
        // A server cancels nothing but a subscription.
        ("cancels-other",   E::fails(Req::Can14).saying("server/discover")),
        ("no-ack",          E::fails(On::Case).saying("subscriptions/acknowledged")),
    ]
}

/// One mode of the server, writing to stdout.
struct Server {
    mode: String,
    out: Mutex<std::io::Stdout>,
}

impl Server {
    fn write(&self, message: Value) {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(out, "{message}");
        let _ = out.flush();
    }

    fn result(&self, id: &Value, mut result: Value) {
        result["resultType"] = json!("complete");
        self.write(json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    fn handle(self: &Arc<Self>, line: &str) {
        let Ok(message) = serde_json::from_str::<Value>(line) else {
            return;
        };
        let method = message.get("method").and_then(Value::as_str).unwrap_or("");
        let Some(id) = message.get("id").cloned() else {
            if method == "notifications/cancelled" {
                self.cancelled(&message["params"]["requestId"]);
            }
            return;
        };
        match method {
            "server/discover" => {
                if self.mode == "cancels-other" {
                    self.write(
                        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                      "params": {"requestId": id}}),
                    );
                }
                self.result(
                    &id,
                    json!({"supportedVersions": ["2026-07-28"],
                           "capabilities": {"tools": {"listChanged": true}}}),
                );
            }
            "subscriptions/listen" => self.listen(&id),
            _ => self.write(json!({"jsonrpc": "2.0", "id": id,
                                   "error": {"code": -32601, "message": "Method not found"}})),
        }
    }

    fn listen(self: &Arc<Self>, id: &Value) {
        let meta = json!({"io.modelcontextprotocol/subscriptionId": id});
        if self.mode != "no-ack" {
            self.write(json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                              "params": {"_meta": meta, "notifications": {"toolsListChanged": true}}}));
        }
        if self.mode == "keeps-notifying" {
            let server = Arc::clone(self);
            std::thread::spawn(move || loop {
                std::thread::sleep(Duration::from_millis(50));
                server.write(
                    json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                                    "params": {"_meta": meta}}),
                );
            });
        }
    }

    fn cancelled(&self, request: &Value) {
        let meta = json!({"io.modelcontextprotocol/subscriptionId": request});
        match self.mode.as_str() {
            "graceful-result" => self.result(request, json!({"_meta": meta})),
            "cancels-back" => self.write(
                json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                                "params": {"requestId": request}}),
            ),
            _ => {}
        }
    }
}

fn serve(mode: &str) -> ! {
    let server = Arc::new(Server {
        mode: mode.to_string(),
        out: Mutex::new(std::io::stdout()),
    });
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        server.handle(&line);
    }
    std::process::exit(0)
}

/// The variable that tells this binary which mode to serve, and the version of the case.
const VAR: &str = "BROKEN_LISTEN_SERVER";
const VERSION: &str = "2026-07-28";

fn check(case: &Case, mode: &str, want: &Expect, loaded: bool) -> Result<(), Failed> {
    self_served::check(case, VAR, mode, VERSION, want, loaded)
}

/// This binary serving `mode` over stdio, for the rows played on shared targets.
fn stdio(mode: &str) -> Result<Connect, Failed> {
    self_served::stdio(VAR, mode)
}

fn main() {
    if let Ok(mode) = std::env::var(VAR) {
        serve(&mode);
    }
    let args = harness::test_arguments();
    let cases = self_served::server_cases();
    let rows = || table().into_iter().map(|(mode, want)| (mode, CASE, want));
    let mut trials = shared_rows::trials(&cases, rows().collect(), stdio, |_, want| {
        self_served::options(VERSION, Duration::from_millis(800), want)
    });
    trials.extend(self_served::trials(&cases, rows().collect(), check));
    libtest_mimic::run(&args, trials).exit();
}
