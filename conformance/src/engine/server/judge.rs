//! The engine's side of the standing rules for a server target's messages: gathers what the
//! rules of `rules::server` judge by (the message, its ledger entry, the era, a reading of the
//! clock), applies their verdict to the ledger and the findings, and sends the answers they
//! give.

use super::ServerTarget;
use crate::engine::Engine;
use crate::facts::ledger::{key_in, CancelMark};
use crate::facts::waits::Waits;
use crate::outcome::FindingKind;
use crate::rules::server::{self, listen, ProgressFacts, ServerRequest};
use crate::transport::Transport;
use serde_json::Value;

impl<T: Transport> Engine<'_, T, ServerTarget> {
    /// Applies the standing rules to one message object the server wrote.
    /// Its ids are scoped as `scope` (the session it came in).
    pub(crate) async fn judge_server_message(&mut self, index: usize, scope: Option<&str>) {
        self.judge_channel(index, scope);
        let value = self.value(index);
        let method = value.get("method").and_then(Value::as_str);
        match (method, value.get("id")) {
            (Some(method), Some(id)) => {
                // The server's own request: not a case's business.
                self.transcript[index].internal = true;
                let version = self.protocol();
                match server::request(method, id, version, self.opening.version()) {
                    ServerRequest::Answer(answer) => self.reply(answer).await,
                    ServerRequest::Refused(problem) => self.problems([problem]),
                }
            }
            (Some("notifications/progress"), None) => {
                self.progress(index, value.get("params"), scope)
            }
            (Some(method), None) => {
                self.subscription_message(index, method, value.get("params"), scope)
            }
            (None, _) => self.response(index, &value, scope),
        }
    }

    /// A notification other than progress: in 2026-07-28, a server cancel must end a
    /// subscription, and nothing may come for a subscription after its cancel was read
    /// (see [`listen`]).
    fn subscription_message(
        &mut self,
        index: usize,
        method: &str,
        params: Option<&Value>,
        scope: Option<&str>,
    ) {
        if self.protocol().is_none_or(|v| v.servers_may_request()) {
            return;
        }
        if method == "notifications/cancelled" {
            let named = params
                .and_then(|p| p.get("requestId"))
                .and_then(|id| self.ledger.sent_in(scope, id));
            let problem = listen::server_cancel(params, named);
            return self.problems([problem]);
        }
        let Some(id) = listen::subscription_of(params) else {
            return;
        };
        let key = key_in(scope, id);
        let at = self.transcript[index].at;
        let problem = self
            .ledger
            .request(&key)
            .filter(|r| r.method == "subscriptions/listen")
            .and_then(|listen| listen::after_cancel(method, &key, listen, at));
        self.problems(problem);
    }

    /// The clock read for a rule about a request whose cancel is `mark`: the target's waits
    /// matter only once a proof came.
    fn waits_for(&self, mark: Option<&CancelMark>) -> Waits {
        self.waits_if(mark.is_some_and(|m| m.read.is_some()))
    }

    fn progress(&mut self, index: usize, params: Option<&Value>, scope: Option<&str>) {
        let key = params
            .and_then(|p| p.get("progressToken"))
            .and_then(|t| self.ledger.token_in(scope, t))
            .cloned();
        let at = self.transcript[index].at;
        // Progress for the token of a request answered with a task is the task's (2025-11-25):
        // its own rule judges it first (PRG-10), then only its values are judged.
        let answered = key
            .as_ref()
            .and_then(|k| self.ledger.request(k))
            .is_some_and(|r| r.answers > 0);
        let task = answered && key.as_deref().is_some_and(|k| self.task_progress(k, at));
        let request = key
            .as_deref()
            .and_then(|k| Some((k, self.ledger.request(k)?)));
        let verdict = server::progress(&ProgressFacts {
            params,
            channel: self.transcript[index].channel,
            at,
            line: self.step.line(),
            request,
            waits: self.waits_for(request.and_then(|(_, r)| r.cancel.as_ref())),
            task,
        });
        let channel = self.transcript[index].channel;
        if let Some(key) = key {
            let value = verdict.value.map(|value| (value, channel));
            self.ledger
                .progress(&key, verdict.counted, verdict.late, value);
        }
        self.problems(verdict.problems);
    }

    fn response(&mut self, index: usize, value: &Value, scope: Option<&str>) {
        let Some(request) = self.settle_response(index, scope) else {
            return;
        };
        // A server that speaks both eras takes a legacy `initialize` as the opening of a
        // handshake-era session, whatever the run began as (LIF-14).
        if request.method == "initialize" {
            if let Some(agreed) = value
                .pointer("/result/protocolVersion")
                .and_then(Value::as_str)
                .filter(|v| crate::era::HANDSHAKE_VERSIONS.contains(v))
            {
                self.opening.agree(agreed.to_string());
            }
        }
        if request.starts {
            self.agreed_version(value);
        }
        let at = self.transcript[index].at;
        self.track_task(&request, value, at, scope);
        if request.cancel.is_none() {
            return;
        }
        let key = key_in(scope, &value["id"]);
        if request.method == "subscriptions/listen" && !request.answered_before_cancel {
            if let Some(note) = listen::closed_with_result(&key, value) {
                return self.problems([note]);
            }
        }
        let waits = self.waits_for(request.cancel.as_ref());
        let version = self.protocol();
        let judged = server::answered_after_cancel(&key, &request, value, at, &waits, version);
        self.problems(judged);
    }

    /// Progress that came after the proof that its request's cancel was read, judged once
    /// nothing more will come (see [`server::late_progress`]).
    pub(crate) fn judge_late_progress(&mut self) {
        let mut late: Vec<(&str, &crate::facts::ledger::SentRequest)> = self
            .ledger
            .sent_requests()
            .iter()
            .filter(|(_, r)| !r.after_proof.is_empty())
            .map(|(key, r)| (key.as_str(), r))
            .collect();
        if late.is_empty() {
            return;
        }
        late.sort_by(|a, b| a.0.cmp(b.0));
        let found = server::late_progress(&late, &self.waits(), self.protocol());
        for (line, problem) in found {
            self.step.at(line);
            self.problems([problem]);
        }
    }

    /// Responses no step expected and no cancel explains.
    pub(crate) fn unexpected_responses(&mut self) {
        // Ids belong to the session the response came in.
        let cancelled = |session: usize, v: &Value| {
            v.get("id")
                .and_then(|id| self.ledger.sent_in(self.streams.scope(session), id))
                .is_some_and(|r| r.cancel.is_some())
        };
        let stray = server::stray_responses(&self.transcript, cancelled);
        for message in stray {
            self.finding(self.played.severity(), FindingKind::Unmet, message);
        }
    }
}
