//! The engine's side of the standing rules for a server target's messages: gathers what the
//! rules of `rules::server` judge by (the message, its ledger entry, the era, a reading of the
//! clock), applies their verdict to the ledger and the findings, and sends the answers they
//! give.

use super::judge_http;
use super::tasks::learn_task;
use super::ServerTarget;
use crate::engine::http::Streams;
use crate::engine::parts::transcript::Transcript;
use crate::engine::Engine;
use crate::facts::ledger::{key_in, Ledger, SentRequest};
use crate::rules::envelope::Problem;
use crate::rules::server::{self, listen, Arrived, ServerRequest};
use crate::rules::tasks;
use crate::transport::Transport;
use serde_json::Value;
use std::time::Duration;

impl<T: Transport> Engine<'_, T, ServerTarget> {
    /// Applies the standing rules to one message object the server wrote.
    /// Its ids are scoped as `scope` (the session it came in).
    pub(crate) async fn judge_server_message(&mut self, index: usize, scope: Option<&str>) {
        let core = self.protocol().is_some_and(|v| v.has_core_tasks());
        let problems = judge_http::channel(
            &mut self.streams,
            &self.ledger,
            &self.transcript,
            index,
            scope,
            core,
        );
        self.problems(problems);
        let value = self.transcript.message(index);
        let method = value.get("method").and_then(Value::as_str);
        match (method, value.get("id")) {
            (Some(method), Some(id)) => {
                let version = self.protocol();
                let request = server::request(method, id, version, self.opening.version());
                // The server's own request: not a case's business.
                self.transcript[index].internal = true;
                match request {
                    ServerRequest::Answer(answer) => self.reply(answer).await,
                    ServerRequest::Refused(problem) => self.problems([problem]),
                }
            }
            (Some("notifications/progress"), None) => self.progress(index, scope),
            (Some(method), None) => {
                if self.protocol().is_none_or(|v| v.servers_may_request()) {
                    return;
                }
                let at = self.transcript[index].at;
                let problem = subscription(&self.ledger, scope, method, value.get("params"), at);
                self.problems(problem);
            }
            (None, _) => self.response(index, scope),
        }
    }

    /// Progress the server sent (transcript index `index`, its token scoped as `scope`).
    fn progress(&mut self, index: usize, scope: Option<&str>) {
        let channel = self.transcript[index].channel;
        let arrived = Arrived {
            params: self.transcript.message(index).get("params"),
            channel,
            at: self.transcript[index].at,
            line: self.step.line(),
            core: self.protocol().is_some_and(|v| v.has_core_tasks()),
        };
        let judged = server::progress_in(&self.ledger, scope, &arrived, |needed| {
            self.waits_if(needed)
        });
        if let Some(key) = judged.key {
            let verdict = judged.verdict;
            let value = verdict.value.map(|value| (value, channel));
            self.ledger
                .progress(&key, verdict.counted, verdict.late, value);
        }
        self.problems(judged.problems);
    }

    /// A response to one of the harness's requests (transcript index `index`, its id scoped
    /// as `scope`): what it agrees to, what it says of tasks, and, for a request the harness
    /// cancelled, what it may still say.
    fn response(&mut self, index: usize, scope: Option<&str>) {
        let Some(key) = self.settle_response(index, scope) else {
            return;
        };
        let Some(request) = self.ledger.request(&key) else {
            return;
        };
        let value = self.transcript.message(index);
        let agreed = value
            .pointer("/result/protocolVersion")
            .and_then(Value::as_str);
        // A server that speaks both eras takes a legacy `initialize` as the opening of a
        // handshake-era session, whatever the run began as (LIF-14).
        if let Some(agreed) = agreed
            .filter(|v| crate::era::ProtocolVersion::parse(v).is_some_and(|v| v.has_handshake()))
            .filter(|_| request.method == "initialize")
        {
            self.opening.agree(agreed.to_string());
        }
        if let Some(version) = agreed.filter(|_| request.starts) {
            // The agreed version goes to the transport.
            self.io.agreed(version);
        }
        let at = self.transcript[index].at;
        let sent = self.transcript.message(request.index);
        let learned = tasks::learn(&request.method, sent, value);
        let task_key = key_in(scope, &sent["id"]);
        let waited = self.waited();
        let waits = self.waits_if(proved(request));
        let problems = server::after_cancel(&key, request, value, at, &waits, self.protocol());
        learn_task(&mut self.ledger, learned, task_key, at, waited);
        self.problems(problems);
    }
}

/// Whether the harness's `request` was cancelled and the cancel proven read: then the rules
/// about it need the target's waits for a CPU.
fn proved(request: &SentRequest) -> bool {
    request.cancel.is_some_and(|m| m.read.is_some())
}

/// A notification other than progress in 2026-07-28 (`at` since the target started, its ids
/// scoped as `scope`): a server cancel must end a subscription, and nothing may come for a
/// subscription after its cancel was read (see [`listen`]).
fn subscription(
    ledger: &Ledger,
    scope: Option<&str>,
    method: &str,
    params: Option<&Value>,
    at: Duration,
) -> Option<Problem> {
    if method == "notifications/cancelled" {
        let named = params
            .and_then(|p| p.get("requestId"))
            .and_then(|id| ledger.sent_in(scope, id));
        return Some(listen::server_cancel(params, named));
    }
    let id = listen::subscription_of(params)?;
    let key = key_in(scope, id);
    ledger
        .request(&key)
        .filter(|r| r.method == "subscriptions/listen")
        .and_then(|listen| listen::after_cancel(method, &key, listen, at))
}

/// Responses no step expected and no cancel explains (ids belong to the session the response
/// came in, named in `streams`).
pub(super) fn stray(ledger: &Ledger, streams: &Streams, transcript: &Transcript) -> Vec<String> {
    let cancelled = |session: usize, v: &Value| {
        v.get("id")
            .and_then(|id| ledger.sent_in(streams.scope(session), id))
            .is_some_and(|r| r.cancel.is_some())
    };
    server::stray_responses(transcript, cancelled)
}
