//! What every message a client target writes must respect: request ids that are strings or
//! integers and never reused within a session, the handshake in order (`initialize` answered
//! before anything but `ping`, then `notifications/initialized`), progress tokens unique among
//! active requests, cancels only for the client's own live requests (never `initialize`), and
//! responses only to the harness's requests, once. Requests the case does not script are
//! answered here as a plain server would answer them. The rules themselves are pure functions
//! in `client_request`, `client_progress` and `client_cancel`; this is where the engine
//! gathers their facts and applies their verdicts.

use crate::engine::client::tasks::Served;
use crate::engine::client::{initialize_answer, tool_list, ClientTarget};
use crate::engine::ledger::ReceivedRequest;
use crate::engine::Engine;
use crate::pattern::id_key;
use crate::rules::client_cancel;
use crate::rules::client_progress::{self, ClientProgressFacts};
use crate::rules::client_request::{self, Handshake};
use crate::transport::{Channel, Transport};
use serde_json::{json, Value};

impl<T: Transport> Engine<'_, T, ClientTarget> {
    /// Applies the standing rules to one message object the client wrote.
    pub(crate) async fn judge_client_message(&mut self, index: usize) {
        let value = self.value(index);
        let channel = self.transcript[index].channel;
        let method = value
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_string);
        if !self.side.sessions.is_current(channel) {
            return self.earlier_session(index, method.as_deref(), &value).await;
        }
        if let Some(method) = &method {
            self.side.sessions.sent(method);
        }
        match (method, value.get("id")) {
            (Some(method), Some(id)) => {
                self.client_request(index, &method, id, value.get("params"))
                    .await
            }
            (Some(method), None) => match method.as_str() {
                "notifications/cancelled" => {
                    let at = self.transcript[index].at;
                    self.client_cancel(value.get("params"), at)
                }
                "notifications/progress" => {
                    let at = self.transcript[index].at;
                    self.client_progress(value.get("params"), at)
                }
                "notifications/initialized" => {
                    if let Some(session) = self.side.sessions.current_mut() {
                        session.initialized = true;
                    }
                    let at = self.transcript[index].at;
                    self.initialized_arrived(at);
                    if self.case.handshake {
                        self.transcript[index].internal = true;
                    }
                }
                _ => {}
            },
            (None, _) => self.client_response(index),
        }
    }

    async fn client_request(
        &mut self,
        index: usize,
        method: &str,
        id: &Value,
        params: Option<&Value>,
    ) {
        let problem = client_request::id_type(method, id);
        self.problems(problem);
        let key = id_key(id);
        let stateless = self.stateless_request(method, params);
        self.judge_reuse(&key, method, stateless);
        if stateless {
            self.side.era.tried = true;
            self.judge_stamp(method, params);
        } else {
            if method == "initialize" {
                self.legacy_initialize();
            }
            let at = self.transcript[index].at;
            self.handshake_order(method, at);
        }
        if method == "initialize" {
            self.session_initialize(id);
        }
        if method == "tasks/cancel" && client_cancel::abandons_only(&self.case.actions) {
            let level = self.case_severity();
            let problem = client_cancel::task_cancel_when_abandoning(&key, params, level);
            self.problems([problem]);
        }
        let token = params.and_then(|p| p.pointer("/_meta/progressToken"));
        let token_key = token.map(id_key);
        if let Some(token) = token {
            let problems = client_request::progress_token(token, &key, &self.ledger.received);
            self.problems(problems);
        }
        let channel = self.transcript[index].channel;
        let at = self.transcript[index].at;
        self.ledger.received.insert(
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
        // The harness's own handshake answers every `initialize` after the first too (a new
        // session); the case's steps answer what they script or are waiting for, unless they
        // stopped. A server of 2026-07-28 refuses `initialize` and versions it does not speak
        // whatever the case scripts (a case that wants to see such a request waits for it).
        let again = method == "initialize" && self.side.handshaken;
        let awaited = self.awaits(index);
        let modern = self.stateless_answer(id, method, params);
        let refused = self.side.era.plays
            && (method == "initialize"
                || modern
                    .as_ref()
                    .is_some_and(|a| a.pointer("/error/code").is_some()));
        let handled_by_case = self.side.stopped.is_none()
            && !again
            && (awaited
                || (!refused
                    && (self.side.scripted.contains(method)
                        || (method == "initialize" && self.case.handshake))));
        if handled_by_case {
            return;
        }
        self.take_internal(index);
        if self.side.era.plays && method == "initialize" {
            return self.stateless_initialize(id, params).await;
        }
        if !again && modern.is_none() {
            let stateless = self.side.era.plays;
            if let Some(served) = self.side.tasks.serve(id, method, params, stateless) {
                if let Served::Answer(answer) = served {
                    self.reply(self.task_answer(answer)).await;
                }
                self.send_released().await;
                return;
            }
        }
        let answer = if again {
            initialize_answer(self, &self.value(index)).0
        } else {
            modern.unwrap_or_else(|| self.plain_answer(id, method, params))
        };
        self.reply(answer).await;
    }

    /// The answers to task waits the harness held, now that their task is terminal.
    pub(crate) async fn send_released(&mut self) {
        for answer in std::mem::take(&mut self.side.tasks.released) {
            self.reply(self.task_answer(answer)).await;
        }
    }

    /// A task answer of the harness's, stamped as the era wants.
    fn task_answer(&self, mut answer: Value) -> Value {
        if self.side.era.plays {
            crate::era::ProtocolVersion::V2026_07_28.stamp_result(&mut answer);
        }
        answer
    }

    /// Whether the expected message the steps are waiting for would take this request.
    fn awaits(&self, index: usize) -> bool {
        let value = self.value(index);
        self.awaiting
            .as_ref()
            .is_some_and(|p| crate::pattern::matches(p, &value, &mut self.captures.clone()))
    }

    /// The answer of a plain server: `ping`, `tools/list`, `echo`; after the steps stopped,
    /// an error for any other call (so the client is not left waiting); "method not found"
    /// for anything else, as a server of the handshake era answers `server/discover`.
    fn plain_answer(&self, id: &Value, method: &str, params: Option<&Value>) -> Value {
        let mut answer = self.plain_answer_of_era(id, method, params);
        if self.side.era.plays {
            crate::era::ProtocolVersion::V2026_07_28.stamp_result(&mut answer);
        }
        answer
    }

    fn plain_answer_of_era(&self, id: &Value, method: &str, params: Option<&Value>) -> Value {
        if let Some(answer) = self.stateless_answer(id, method, params) {
            return answer;
        }
        let tool = params.and_then(|p| p.get("name")).and_then(Value::as_str);
        match (method, tool) {
            ("ping", _) => Self::pong(id),
            ("tools/list", _) => json!({"jsonrpc": "2.0", "id": id, "result": tool_list()}),
            ("tools/call", Some("echo")) => {
                let text = params
                    .and_then(|p| p.pointer("/arguments/text"))
                    .cloned()
                    .unwrap_or(json!(""));
                json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}]}})
            }
            ("tools/call", _) if self.side.stopped.is_some() => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "the conformance case stopped before this call; it is not served"}})
            }
            _ => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("method not found: the conformance harness does not offer {method} in this case")}})
            }
        }
    }

    /// LIF-04 and LIF-03: nothing but `ping` until `initialize` is answered, and
    /// `notifications/initialized` before any other request once it is.
    fn handshake_order(&mut self, method: &str, at: std::time::Duration) {
        let initialized = self.side.sessions.current().map(|s| s.initialized);
        let ready = self.session_ready();
        match client_request::handshake_order(method, ready, initialized, self.may_cross()) {
            Handshake::InOrder => {}
            Handshake::Early(problem) => self.problems([problem]),
            Handshake::Hold => {
                let held = self.held(at, Value::String(method.to_string()));
                self.side.crossing.early.push(held);
            }
        }
    }

    /// The harness's answers to the requests the client still waits for (after the steps
    /// stopped): a plain server's, so the adapter can finish.
    pub(crate) async fn serve_outstanding(&mut self) {
        let waiting: Vec<(String, String)> = self
            .ledger
            .received
            .iter()
            .filter(|(_, r)| r.outstanding())
            .map(|(k, r)| (k.clone(), r.method.clone()))
            .collect();
        for (key, method) in waiting {
            let Ok(id) = serde_json::from_str::<Value>(&key) else {
                continue;
            };
            let answer = if method == "initialize" && !self.side.era.plays {
                let request = json!({"id": id});
                initialize_answer(self, &request).0
            } else if method == "initialize" {
                crate::engine::client::unsupported(&id, &Value::Null)
            } else {
                self.plain_answer(&id, &method, None)
            };
            self.reply(answer).await;
        }
    }

    /// A message of a session the client has replaced (a probe process, say): served as a
    /// plain server would, on its own channel; its ids are no longer tracked.
    async fn earlier_session(&mut self, index: usize, method: Option<&str>, value: &Value) {
        self.take_internal(index);
        let channel: Channel = self.transcript[index].channel;
        if let (Some(method), Some(id)) = (method, value.get("id")) {
            let answer = if method == "initialize" && !self.side.era.plays {
                initialize_answer(self, value).0
            } else if method == "initialize" {
                let asked = value.pointer("/params/protocolVersion");
                crate::engine::client::unsupported(id, asked.unwrap_or(&Value::Null))
            } else {
                self.plain_answer(id, method, value.get("params"))
            };
            self.reply_via(answer, Some(channel)).await;
        }
    }

    fn client_response(&mut self, index: usize) {
        if self.side.era.plays {
            return self.stateless_response(index);
        }
        let Some(request) = self.settle_response(index) else {
            return;
        };
        let key = self.value(index).get("id").map(id_key).unwrap_or_default();
        let at = self.transcript[index].at;
        let judged = client_cancel::answered_after_cancel(&key, &request, at);
        self.problems(judged);
    }

    /// The standing rules for progress the client reports on a request of the harness's (see
    /// [`client_progress::client_progress`]).
    fn client_progress(&mut self, params: Option<&Value>, at: std::time::Duration) {
        let key = params
            .and_then(|p| p.get("progressToken"))
            .and_then(|t| self.ledger.tokens.get(&id_key(t)))
            .cloned();
        let sent = key.as_ref().and_then(|k| self.ledger.sent.get(k));
        let previous_at = key
            .as_ref()
            .and_then(|k| self.side.crossing.progress.get(k))
            .copied()
            .filter(|_| sent.is_some_and(|s| s.last_progress.is_some()));
        let crossed = previous_at.is_some_and(|then| self.progress_crossed(then, at));
        let (problems, value) = client_progress::client_progress(&ClientProgressFacts {
            params,
            request: key.as_deref().map(|k| (k, sent)),
            has_message: self.protocol().is_none_or(|v| v.progress_has_message()),
            crossed,
        });
        if let (Some(key), Some(value)) = (key, value) {
            if let Some(sent) = self.ledger.sent.get_mut(&key) {
                sent.last_progress = Some((value, Channel::Stdio));
            }
            self.side.crossing.progress.insert(key, at);
        }
        self.problems(problems);
    }
}
