//! Deliberately broken clients of the stateless era (2026-07-28) over stdio: this test
//! binary again, speaking raw JSON to the relay, each getting one rule of the era wrong on
//! purpose (or, for the fair ones, doing something unusual the era allows).

use crate::broken::{report, Server, INITIALIZE};
use conformance::harness::expect::{Expect, On};
use conformance::outcome::{Outcome, Severity};
use conformance::requirement::Req;
use serde_json::{json, Value};
use std::time::Duration;

/// How much of the era's `_meta` a request carries.
#[derive(Clone, Copy, PartialEq)]
enum Stamp {
    Full,
    NoClientInfo,
    Nothing,
}

/// A request of the stateless era with `params`, stamped as `stamp` says.
fn request(id: Value, method: &str, mut params: Value, stamp: Stamp) -> String {
    if stamp != Stamp::Nothing {
        params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
        params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
    }
    if stamp == Stamp::Full {
        params["_meta"]["io.modelcontextprotocol/clientInfo"] =
            json!({"name": "broken", "version": "0"});
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn echo(id: Value, text: &str, stamp: Stamp) -> String {
    request(
        id,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": text}}),
        stamp,
    )
}

fn cancel(id: Value) -> String {
    json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}})
        .to_string()
}

/// The actions of `client/client-stateless-call` with one echo stamped as `stamp`.
fn one_call(stamp: Stamp, and_then: impl FnOnce(&mut Server)) {
    let mut s = Server::start(None);
    report(0, "result");
    s.send(&echo(json!(1), "stateless", stamp));
    s.answer(json!(1));
    and_then(&mut s);
    report(1, "result");
    s.close();
    report(2, "result");
}

/// The actions of `client/client-stateless-ids`, the echo calls `a`, `b`, `c` under these ids.
fn ids_case(a: i64, b: i64, c: i64) {
    let mut s = Server::start(None);
    report(0, "result");
    s.send(&request(
        json!(2),
        "tools/call",
        json!({"name": "work", "arguments": {}}),
        Stamp::Full,
    ));
    std::thread::sleep(Duration::from_millis(100));
    s.send(&cancel(json!(2)));
    report(1, "cancelled");
    for (id, text) in [(a, "a"), (b, "b"), (c, "c")] {
        s.send(&echo(json!(id), text, Stamp::Full));
    }
    for _ in 0..3 {
        if s.read_until(|m| m.get("result").is_some()).is_none() {
            break;
        }
    }
    for action in 2..5 {
        report(action, "result");
    }
    s.close();
    report(5, "result");
}

/// A broken client of the stateless era over stdio; false when `mode` is none of these.
#[allow(
    clippy::too_many_lines,
    reason = "one arm per broken mode, read as a table"
)]
pub fn client(mode: &str) -> bool {
    match mode {
        "stateless-omits-meta" => one_call(Stamp::Nothing, |_| {}),
        "stateless-no-client-info" => one_call(Stamp::NoClientInfo, |_| {}),
        "stateless-sends-response" => one_call(Stamp::Full, |s| {
            s.send(r#"{"jsonrpc":"2.0","id":"nothing-asked","result":{}}"#);
            std::thread::sleep(Duration::from_millis(200));
        }),
        "stateless-opens-with-initialize" => {
            let mut s = Server::start(None);
            s.send(INITIALIZE);
            let answer = s.answer(json!(1));
            eprintln!("initialize was answered {answer:?}");
            report(0, "error");
            s.close();
        }
        "stateless-reuses-outstanding-id" => ids_case(3, 3, 4),
        "stateless-reuses-cancelled-id" => ids_case(2, 3, 4),
        "stateless-reuses-answered-id" => {
            // Fair in 2026-07-28: an id is free again once its request was answered.
            let mut s = Server::start(None);
            report(0, "result");
            s.send(&echo(json!(2), "plain", Stamp::Full));
            s.answer(json!(2));
            report(1, "result");
            s.send(&echo(json!(2), "bogus", Stamp::Full));
            s.answer(json!(2));
            report(2, "error");
            s.close();
            report(3, "result");
        }
        "stateless-never-cancels" => {
            // Told to cancel on the first progress, it reports the call cancelled and sends
            // no cancel.
            let mut s = Server::start(None);
            report(0, "result");
            s.send(&request(
                json!(2),
                "tools/call",
                json!({"name": "work", "arguments": {}, "_meta": {"progressToken": "p"}}),
                Stamp::Full,
            ));
            s.read_until(|m| m["method"] == "notifications/progress");
            report(1, "cancelled");
            s.send(&echo(json!(3), "after", Stamp::Full));
            s.answer(json!(3));
            report(2, "result");
            s.close();
            report(3, "result");
        }
        "stateless-falls-back-on-32022" => {
            // The server is modern (-32022 names 2026-07-28), yet it falls back.
            let mut s = Server::start(None);
            s.send(&request(
                json!(1),
                "server/discover",
                json!({}),
                Stamp::Full,
            ));
            s.answer(json!(1));
            s.send(&INITIALIZE.replace("\"id\":1", "\"id\":2"));
            s.answer(json!(2));
            report(0, "error");
            s.close();
        }
        "stateless-gives-up-on-32602" => {
            // Falls back only on "method not found": -32602 ends its connect.
            let mut s = Server::start(None);
            s.send(&request(
                json!(1),
                "server/discover",
                json!({}),
                Stamp::Full,
            ));
            let answer = s.answer(json!(1));
            eprintln!("no fallback after {answer:?}");
            report(0, "error");
            s.close();
        }
        "stateless-retries-under-same-id" => {
            // Retries the request the server refused with -32022 under the refused id.
            let mut s = Server::start(None);
            s.send(&echo(json!(1), "retried", Stamp::Full));
            s.answer(json!(1));
            report(0, "result");
            s.send(&echo(json!(1), "retried", Stamp::Full));
            s.answer(json!(1));
            report(1, "result");
            s.close();
            report(2, "result");
        }
        "stateless-restarts-server" => {
            // After its call, it starts its server again: the session it was using is gone.
            let mut s = Server::start(None);
            report(0, "result");
            s.send(&echo(json!(1), "stateless", Stamp::Full));
            s.answer(json!(1));
            report(1, "result");
            s.close();
            let mut again = Server::start(None);
            again.send(&request(
                json!(2),
                "server/discover",
                json!({}),
                Stamp::Full,
            ));
            again.answer(json!(2));
            again.close();
            report(2, "result");
        }
        "stateless-skips-probe" => {
            // Told to speak 2026-07-28, it opens with `initialize` at once.
            let mut s = Server::start(None);
            s.send(INITIALIZE);
            s.answer(json!(1));
            report(0, "result");
            s.close();
        }
        _ => return false,
    }
    true
}

/// The broken (and fair) clients of the stateless era, over stdio and HTTP (the `http-`
/// modes): mode, case, the exact verdict it must get.
#[rustfmt::skip]
pub(crate) fn rows() -> Vec<(&'static str, &'static str, Expect)> {
    use Outcome::{Info, Pass, Skip};
    use Severity::Note as N;
    type E = Expect;
    vec![
        ("stateless-omits-meta",                "client-stateless-call",                      E::fails(Req::Lif10).saying("lacks")),
        ("stateless-no-client-info",            "client-stateless-call",                      E::warns(Req::Lif10).saying("clientInfo")),
        ("stateless-sends-response",            "client-stateless-call",                      E::fails(Req::Rpc15)),
        ("stateless-opens-with-initialize",     "client-stateless-call",                      E::outcome(Skip)),
        ("stateless-reuses-outstanding-id",     "client-stateless-ids",                       E::fails(Req::Rpc03).saying("still outstanding")),
        ("stateless-reuses-cancelled-id",       "client-stateless-ids",                       E::warns(Req::Rpc03).saying("AMB-20")),
        ("stateless-reuses-answered-id",        "client-stateless-result-type",               E::clean().exactly(Pass)),
        ("stateless-never-cancels",             "client-stateless-cancel",                    E::fails(On::Case).saying("no message matching")),
        ("stateless-falls-back-on-32022",       "client-stateless-unsupported-version",       E::warns(Req::Lif12).saying("fell back")),
        ("stateless-gives-up-on-32602",         "client-stateless-fallback-invalid-params",   E::fails(On::Case).saying("no message matching")),
        ("stateless-retries-under-same-id",     "client-stateless-unsupported-version",       E::warns(Req::Lif12).saying("same id")),
        ("stateless-restarts-server",           "client-stateless-call",                      E::fails(Req::Can08).saying("in use").without(Req::Lif03)),
        ("stateless-skips-probe",               "client-stateless-fallback-method-not-found", E::outcome(Skip)),
        ("http-stateless-wrong-version-header", "client-stateless-call",                      E::fails(Req::Http19).saying("MCP-Protocol-Version \"2025-11-25\"")),
        ("http-stateless-no-name",              "client-stateless-call",                      E::fails(Req::Http19).saying("no Mcp-Name")),
        ("http-stateless-cancels-by-post",      "client-stateless-cancel",                    E::warns(Req::Can12).saying("POSTed")),
        ("http-stateless-never-closes",         "client-stateless-cancel",                    E::warns(Req::Can12).saying("did not close")),
        ("http-stateless-closes-and-posts",     "client-stateless-cancel",                    E::clean().exactly(Pass).noting(Req::Can12, N, "AMB-06")),
        ("http-stateless-falls-back-on-32022",  "client-stateless-unsupported-version",       E::fails(Req::Http20)),
        ("http-cancels-after-disconnect",       "client-http-stream-closed",                  E::outcome(Info).noting(On::Observed, N, "cancelled it")),
    ]
}
