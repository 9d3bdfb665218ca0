//! What every message a client target writes must respect: request ids that are strings or
//! integers and never reused within a session, the handshake in order (`initialize` answered
//! before anything but `ping`, then `notifications/initialized`), progress tokens unique among
//! active requests, cancels only for the client's own live requests (never `initialize`), and
//! responses only to the harness's requests, once. Requests the case does not script are
//! answered here as a plain server would answer them. The cancel rules are in `client_cancel`.

use crate::engine::client::tasks::Served;
use crate::engine::client::{initialize_answer, tool_list, ClientTarget};
use crate::engine::ledger::ReceivedRequest;
use crate::engine::Engine;
use crate::outcome::Severity;
use crate::pattern::{canonical, id_key};
use crate::requirement::Req;
use crate::transport::{Channel, Transport};
use serde_json::{json, Value};

/// Requests a client may send before its `initialize` is answered: `ping` (LIF-04), and
/// `server/discover`, with which a client that speaks both eras probes first (LIF-14).
const BEFORE_INITIALIZE: [&str; 3] = ["initialize", "ping", "server/discover"];

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
        if !(id.is_string() || id.is_i64() || id.is_u64()) {
            self.rule(
                Severity::Fail,
                Req::Rpc02,
                format!(
                    "the client's `{method}` request has id {}; an id is a string or an integer",
                    canonical(id)
                ),
            );
        }
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
        let token = params.and_then(|p| p.pointer("/_meta/progressToken"));
        let token_key = token.map(id_key);
        if let Some(token) = token {
            if !(token.is_string() || token.is_i64() || token.is_u64()) {
                self.rule(
                    Severity::Fail,
                    Req::Prg01,
                    format!(
                        "progress token {} is neither a string nor an integer",
                        canonical(token)
                    ),
                );
            }
            let clash = self
                .ledger
                .received
                .iter()
                .find(|(_, r)| r.outstanding() && r.token == token_key);
            if let Some((other, _)) = clash {
                let message = format!(
                    "progress token {} of request {key} is already used by active request {other}; tokens must be unique among active requests",
                    canonical(token)
                );
                self.rule(Severity::Fail, Req::Prg01, message);
            }
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
        if BEFORE_INITIALIZE.contains(&method) {
            return;
        }
        let Some(session) = self.side.sessions.current() else {
            return;
        };
        let initialized = session.initialized;
        if !self.session_ready() {
            self.rule(
                Severity::Warn,
                Req::Lif04,
                format!("the client sent `{method}` before its `initialize` was answered; until then it should send nothing but `ping`"),
            );
        } else if !initialized && self.may_cross() {
            // Over HTTP the two POSTs may cross: judged once `initialized` comes, or at the end.
            let held = self.held(at, Value::String(method.to_string()));
            self.side.crossing.early.push(held);
        } else if !initialized {
            self.rule(
                Severity::Warn,
                Req::Lif03,
                format!("the client sent `{method}` before `notifications/initialized`; it sends that first, once `initialize` is answered"),
            );
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
        let Some(mark) = request.cancel else { return };
        if request.answered_before_cancel {
            return;
        }
        let at = self.transcript[index].at;
        if mark.is_read(at) {
            self.rule(
                Severity::Warn,
                Req::Can13,
                format!("the client answered the harness's request {key} after it had certainly read the harness's cancel of it (it answered a later request first); a cancelled request should get no response"),
            );
        } else {
            self.rule(
                Severity::Note,
                Req::Can13,
                format!("the client's answer to request {key} crossed the harness's cancel (allowed, AMB-25)"),
            );
        }
    }

    /// The standing rules for progress the client reports on a request of the harness's:
    /// a token the harness gave (PRG-06), increasing values (PRG-03), and a text `message`
    /// (PRG-05).
    fn client_progress(&mut self, params: Option<&Value>, at: std::time::Duration) {
        let token = params.and_then(|p| p.get("progressToken"));
        let Some(request) = token
            .and_then(|t| self.ledger.tokens.get(&id_key(t)))
            .cloned()
        else {
            let shown = token.map(canonical).unwrap_or_else(|| "none".into());
            self.rule(
                Severity::Fail,
                Req::Prg06,
                format!("the client sent progress for token {shown}, which no request of the harness's carries"),
            );
            return;
        };
        if let Some(message) = params.and_then(|p| p.get("message")) {
            let has_message = self.protocol().is_none_or(|v| v.progress_has_message());
            if !message.is_string() && has_message {
                self.rule(
                    Severity::Fail,
                    Req::Prg05,
                    format!(
                        "the client's progress `message` must be text, got {}",
                        canonical(message)
                    ),
                );
            }
        }
        let value = params
            .and_then(|p| p.get("progress"))
            .and_then(Value::as_f64);
        let Some(value) = value else {
            self.rule(
                Severity::Fail,
                Req::Prg02,
                format!("the client's progress for request {request} has no numeric `progress`"),
            );
            return;
        };
        let previous_at = self.side.crossing.progress.insert(request.clone(), at);
        if let Some(sent) = self.ledger.sent.get_mut(&request) {
            // A client's progress is compared across all it sent.
            let channel = crate::transport::Channel::Stdio;
            let previous = sent
                .last_progress
                .replace((value, channel))
                .filter(|(_, on)| *on == channel)
                .map(|(p, _)| p);
            if let Some(previous) = previous {
                let crossed = previous_at.is_some_and(|then| self.progress_crossed(then, at));
                if value <= previous && crossed {
                    self.rule(
                        Severity::Note,
                        Req::Prg03,
                        format!("the client's progress for request {request} went from {previous} to {value}, within the time two of its POSTs may cross: the order of arrival cannot tell"),
                    );
                } else if value <= previous {
                    self.rule(
                        Severity::Fail,
                        Req::Prg03,
                        format!("the client's progress for request {request} went from {previous} to {value}; it must increase"),
                    );
                }
            }
        }
    }
}
