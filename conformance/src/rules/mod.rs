//! The standing rules: what every message a target writes must respect, whatever the case
//! says. The envelope (one JSON-RPC 2.0 object per line) is common to both roles; the rest
//! depends on who wrote the message.
//!
//! A rule family is a set of functions over a read-only view of what happened (the message,
//! the ledger entries it is about, the era, the transport's facts, a reading of the clock)
//! returning findings ([`envelope::Problem`]) and, where the harness must answer, the answer;
//! the engine gathers the facts and applies the verdict (`engine/server/judge*.rs`,
//! `engine/client/judge*.rs`, `engine/client/crossing.rs`). Each such family has unit tests
//! of its own, one per finding it can make and per fair outcome it must accept.
//!
//! - [`envelope`]: JSON-RPC 2.0 on one line, for either role.
//! - [`server`]: what a server writes (responses after a cancel, progress, its own requests).
//! - [`http`]: what a server over Streamable HTTP must respect beyond its messages (statuses,
//!   streams, session ids).
//! - [`client_cancel`]: a client's cancels, and its answers to cancelled requests;
//!   [`client_progress`]: the progress it reports; [`client_request`]: its request ids,
//!   progress tokens and handshake order.
//! - `client_stateless`: its requests in the stateless era and the reuse of request ids;
//!   [`client_http`]: its Streamable HTTP requests and sessions; `client_crossing`: its
//!   messages whose POSTs cross. The engine's side of all the client's families (gathering
//!   facts, applying verdicts, keeping the session state, answering unscripted requests) is
//!   in `engine/client/`.
//! - [`tasks`]: what the ledger learns of tasks from the answers, and a task's progress once
//!   it is terminal (PRG-10): engine methods the server glue calls, whose facts (whether a
//!   request created a task) the pure families above take as given.

pub(crate) mod client_cancel;
pub(crate) mod client_crossing;
pub mod client_http;
pub(crate) mod client_progress;
pub(crate) mod client_request;
pub(crate) mod client_stateless;
pub mod envelope;
pub(crate) mod http;
pub(crate) mod server;
pub mod tasks;

use crate::engine::ledger::SentRequest;
use crate::engine::{Engine, Side};
use crate::era::Era;
use crate::outcome::Severity;
use crate::requirement::Req;
use crate::transport::Transport;
use envelope::short;
use serde_json::Value;

impl<T: Transport, S: Side> Engine<'_, T, S> {
    /// Standing rules' findings, at the case line being carried out.
    pub(crate) fn problems(&mut self, problems: impl IntoIterator<Item = envelope::Problem>) {
        for p in problems {
            self.rule(p.severity, p.requirement, p.message);
        }
    }

    /// The rules every response obeys, whoever wrote it: exactly one of `result` and `error`
    /// (RPC-05), a proper error object (RPC-06), and an id the harness used for a request,
    /// answered once (RPC-04). Returns the request on its first answer.
    pub(crate) fn settle_response(&mut self, index: usize) -> Option<SentRequest> {
        let value = self.value(index);
        let has_result = value.get("result").is_some();
        let error = value.get("error");
        if has_result == error.is_some() {
            self.rule(
                Severity::Fail,
                Req::Rpc05,
                format!(
                    "a response must carry exactly one of `result` and `error`: {}",
                    short(&value)
                ),
            );
        }
        if let Some(error) = error {
            let code_ok = error.get("code").is_some_and(|c| c.is_i64());
            let message_ok = error.get("message").is_some_and(Value::is_string);
            if !code_ok || !message_ok {
                self.rule(
                    Severity::Fail,
                    Req::Rpc06,
                    format!(
                        "an error needs an integer `code` and a string `message`: {}",
                        short(&value)
                    ),
                );
            }
        }
        let id = value.get("id").cloned().unwrap_or(Value::Null);
        if id.is_null() {
            if has_result {
                self.rule(
                    Severity::Fail,
                    Req::Rpc04,
                    format!("a result with no request id: {}", short(&value)),
                );
            }
            // An error with id null answers a line that could not be read; the case judges it.
            return None;
        }
        let key = self.ledger.key(&id);
        let who = S::WRITER.who;
        let Some(request) = self.ledger.sent.get_mut(&key) else {
            self.transcript[index].consumed_by = Some(0);
            self.rule(
                Severity::Fail,
                Req::Rpc04,
                format!("{who} sent a response for id {key}, which the harness never used as a request id (ids must be echoed exactly, type included)"),
            );
            return None;
        };
        request.answers += 1;
        request.answer.get_or_insert(index);
        let request = request.clone();
        self.transcript[index].internal = request.internal;
        if request.answers == 1 {
            let arrived = self.transcript[index].at;
            self.proof_arrived(request.index, request.sent, arrived);
        }
        // RPC-14, except for an `initialize` answer: that opens a handshake-era session.
        if let Some(result) = value.get("result") {
            let stateless = self.protocol().is_some_and(|v| v.era() == Era::Stateless);
            if stateless
                && S::STAMPS
                && request.method != "initialize"
                && result.get("resultType").is_none()
            {
                self.rule(
                    Severity::Fail,
                    Req::Rpc14,
                    format!(
                        "a 2026-07-28 result must carry `resultType` (\"complete\" or \"input_required\"): {}",
                        short(&value)
                    ),
                );
            }
        }
        if request.answers > 1 {
            self.transcript[index].consumed_by = Some(0);
            self.rule(
                Severity::Fail,
                Req::Rpc04,
                format!(
                    "{who} sent a second response for request {key} (sent at line {}); every request gets exactly one",
                    request.line
                ),
            );
            return None;
        }
        Some(request)
    }
}

#[cfg(test)]
pub(crate) mod testing;
