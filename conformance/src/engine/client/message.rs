//! Every message a client target writes, judged by the standing rules: request ids that are
//! strings or integers and never reused within a session, the handshake in order
//! (`initialize` answered before anything but `ping`, then `notifications/initialized`),
//! progress tokens unique among active requests, cancels only for the client's own live
//! requests (never `initialize`), and responses only to the harness's requests, once. The
//! rules themselves are pure functions in `rules::client_*`; this is where the engine
//! dispatches each message, gathers their facts and applies their verdicts. Requests the case
//! does not script are answered by `answer.rs`.

use super::crossing::{crossing, Held};
use super::ClientTarget;
use crate::engine::Engine;
use crate::facts::ledger::ReceivedRequest;
use crate::pattern::id_key;
use crate::rules::client_cancel;
use crate::rules::client_crossing as rules;
use crate::rules::client_progress::{self, ClientProgressFacts};
use crate::rules::client_request;
use crate::rules::client_stateless;
use crate::transport::{Channel, Transport};
use serde_json::Value;

impl<T: Transport> Engine<'_, T, ClientTarget> {
    /// Applies the standing rules to one message object the client wrote.
    pub(crate) async fn judge_client_message(&mut self, index: usize) {
        let value = self.transcript.message(index);
        let method = value
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_string);
        let request = value.get("id").is_some();
        let (channel, at) = (self.transcript[index].channel, self.transcript[index].at);
        if !self.side.sessions.is_current(channel) {
            return self.earlier_session(index, method.as_deref()).await;
        }
        if let Some(method) = &method {
            self.side.sessions.sent(method);
        }
        match (method, request) {
            (Some(method), true) => self.client_request(index, &method).await,
            (Some(method), false) => match method.as_str() {
                "notifications/cancelled" => {
                    let cancel = self.judge_cancel(self.transcript.params(index), at);
                    self.client_cancel(cancel);
                }
                "notifications/progress" => self.client_progress(index),
                "notifications/initialized" => {
                    if let Some(session) = self.side.sessions.current_mut() {
                        session.initialized = true;
                    }
                    let waits = crossing(self.waits());
                    let problems = self.side.crossing.initialized(at, &waits);
                    self.problems(problems);
                    if self.played.case().handshake {
                        self.transcript[index].internal = true;
                    }
                }
                _ => {}
            },
            (None, _) => self.client_response(index),
        }
    }

    /// A request the client sent (transcript index `index`, of `method`).
    async fn client_request(&mut self, index: usize, method: &str) {
        let id = &self.transcript.message(index)["id"];
        let problem = client_request::id_type(method, id);
        let key = id_key(id);
        self.problems(problem);
        let plays_stateless = self.side.plays_stateless(&self.ledger);
        let stateless =
            client_stateless::is_stateless(method, self.transcript.params(index), plays_stateless);
        let severity = self.played.severity();
        let reuse = self
            .side
            .reuse(&self.ledger, &key, method, stateless, severity);
        self.problems(reuse);
        if stateless {
            self.side.era.tried = true;
            // LIF-10: the `_meta` fields every request of the stateless era carries.
            self.problems(client_stateless::stamp(
                method,
                self.transcript.params(index),
            ));
        } else {
            if method == "initialize" {
                let options = self.played.options();
                let told_stateless = options.protocol_version.is_stateless();
                self.side.era.legacy_initialize(told_stateless);
            }
            let held = Held {
                at: self.transcript[index].at,
                waited: self.waited(),
                what: Value::String(method.to_string()),
            };
            let may_cross = !self.io.ordered();
            let problem = self
                .side
                .handshake_order(&self.ledger, method, held, may_cross);
            self.problems(problem);
        }
        if method == "initialize" {
            self.side
                .sessions
                .initialize(&self.transcript.message(index)["id"]);
        }
        if method == "tasks/cancel" && client_cancel::abandons_only(&self.played.case().actions) {
            let problem = client_cancel::task_cancel_when_abandoning(
                &key,
                self.transcript.params(index),
                severity,
            );
            self.problems([problem]);
        }
        let token = self
            .transcript
            .params(index)
            .and_then(|p| p.pointer("/_meta/progressToken"));
        let token_key = token.map(id_key);
        if let Some(token) = token {
            let problems =
                client_request::progress_token(token, &key, self.ledger.received_requests());
            self.problems(problems);
        }
        let channel = self.transcript[index].channel;
        let at = self.transcript[index].at;
        self.ledger.request_received(
            key.clone(),
            ReceivedRequest {
                method: method.to_string(),
                answered: None,
                answered_waited: None,
                succeeded: false,
                cancelled: false,
                token: token_key,
                channel,
                stateless,
                task: None,
            },
        );
        self.request_arrived(&key, at);
        self.answer_request(index, method).await;
    }

    fn client_response(&mut self, index: usize) {
        if self.side.era.plays {
            // RPC-15: a client of 2026-07-28 sends no responses (its server sends no requests).
            let problem = client_stateless::response(self.transcript.message(index));
            self.transcript[index].consumed_by = Some(0);
            return self.problems([problem]);
        }
        let Some(key) = self.settle_response(index, None) else {
            return;
        };
        let at = self.transcript[index].at;
        let judged = self
            .ledger
            .request(&key)
            .and_then(|request| client_cancel::answered_after_cancel(&key, request, at));
        self.problems(judged);
    }

    /// The standing rules for progress the client reports on a request of the harness's (see
    /// [`client_progress::client_progress`]).
    fn client_progress(&mut self, index: usize) {
        let at = self.transcript[index].at;
        let params = self.transcript.params(index);
        let key = params
            .and_then(|p| p.get("progressToken"))
            .and_then(|t| self.ledger.token(t))
            .cloned();
        let sent = key.as_ref().and_then(|k| self.ledger.request(k));
        let previous_at = key
            .as_ref()
            .and_then(|k| self.side.crossing.progress.get(k))
            .copied()
            .filter(|_| sent.is_some_and(|s| s.last_progress.is_some()));
        // A value below the one before it may have crossed it: its POST arrived within the
        // grace of the one it follows.
        let crossed = previous_at.is_some_and(|then| {
            !self.io.ordered() && rules::crossed(then, self.waited(), at, &crossing(self.waits()))
        });
        let (problems, value) = client_progress::client_progress(&ClientProgressFacts {
            params,
            request: key.as_deref().map(|k| (k, sent)),
            has_message: self.protocol().is_none_or(|v| v.progress_has_message()),
            crossed,
        });
        if let (Some(key), Some(value)) = (key, value) {
            self.ledger
                .progress(&key, false, None, Some((value, Channel::Stdio)));
            self.side.crossing.progress.insert(key, at);
        }
        self.problems(problems);
    }
}
