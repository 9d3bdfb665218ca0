//! What every message a client target writes must respect: request ids that are strings or
//! integers and never reused while outstanding, progress tokens unique among active requests,
//! cancels only for the client's own live requests (never `initialize`), and responses only
//! to the harness's requests, once. Requests the case does not script are answered here as a
//! plain server would answer them.

use crate::engine::client::{tool_list, ClientTarget, T_GRACE};
use crate::engine::ledger::ReceivedRequest;
use crate::engine::Engine;
use crate::outcome::Severity;
use crate::pattern::{canonical, id_key};
use crate::rules::envelope::short;
use crate::transport::Transport;
use serde_json::{json, Value};

impl<T: Transport> Engine<'_, T, ClientTarget> {
    /// Applies the standing rules to one message object the client wrote.
    pub(crate) async fn judge_client_message(&mut self, index: usize) {
        let value = self.value(index);
        let method = value
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_string);
        match (method, value.get("id")) {
            (Some(method), Some(id)) => {
                self.client_request(index, &method, id, value.get("params"))
                    .await
            }
            (Some(method), None) => match method.as_str() {
                "notifications/cancelled" => self.client_cancel(value.get("params")),
                "notifications/initialized" if self.case.handshake => {
                    self.transcript[index].internal = true;
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
                "RPC-02",
                format!(
                    "the client's `{method}` request has id {}; an id is a string or an integer",
                    canonical(id)
                ),
            );
        }
        let key = id_key(id);
        if self
            .ledger
            .received
            .get(&key)
            .is_some_and(ReceivedRequest::outstanding)
        {
            self.rule(
                Severity::Fail,
                "RPC-03",
                format!("the client reused id {key} while its earlier request with that id was still outstanding"),
            );
        }
        let token = params.and_then(|p| p.pointer("/_meta/progressToken"));
        let token_key = token.map(id_key);
        if let Some(token) = token {
            if !(token.is_string() || token.is_i64() || token.is_u64()) {
                self.rule(
                    Severity::Fail,
                    "PRG-01",
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
                self.rule(Severity::Fail, "PRG-01", message);
            }
        }
        let channel = self.transcript[index].channel;
        self.ledger.received.insert(
            key,
            ReceivedRequest {
                method: method.to_string(),
                answered: None,
                cancelled: false,
                token: token_key,
                channel,
            },
        );
        let handled_by_case =
            self.side.scripted.contains(method) || (method == "initialize" && self.case.handshake);
        if handled_by_case {
            return;
        }
        // A request the case does not script: the harness answers it as a plain server would.
        self.take_internal(index);
        let answer = match method {
            "ping" => Self::pong(id),
            "tools/list" => json!({"jsonrpc": "2.0", "id": id, "result": tool_list()}),
            _ => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("the conformance harness does not offer {method} in this case")}})
            }
        };
        self.reply(answer).await;
    }

    /// The standing rules for a client's `notifications/cancelled`.
    fn client_cancel(&mut self, params: Option<&Value>) {
        let Some(params) = params.filter(|p| p.is_object()) else {
            self.rule(
                Severity::Fail,
                "CAN-01",
                "a `notifications/cancelled` without params; it must carry `requestId`".into(),
            );
            return;
        };
        if let Some(reason) = params.get("reason").filter(|r| !r.is_string()) {
            self.rule(
                Severity::Fail,
                "CAN-01",
                format!(
                    "a cancel's `reason` must be a string, got {}",
                    short(reason)
                ),
            );
        }
        let Some(id) = params
            .get("requestId")
            .filter(|id| id.is_string() || id.is_number())
        else {
            self.rule(
                Severity::Fail,
                "CAN-01",
                format!(
                    "a cancel needs `requestId`, a string or an integer: {}",
                    short(params)
                ),
            );
            return;
        };
        let key = id_key(id);
        if let Some(request) = self.ledger.received.get_mut(&key) {
            let method = request.method.clone();
            let answered = request.answered;
            let again = request.cancelled;
            request.cancelled = true;
            if method == "initialize" {
                self.rule(
                    Severity::Fail,
                    "CAN-04",
                    format!("the client cancelled its `initialize` request (id {key}); initialize must never be cancelled (LIF-08)"),
                );
            }
            if let Some(at) = answered {
                let late = at.elapsed();
                if late > T_GRACE {
                    let severity = self.case_severity().min(Severity::Warn);
                    self.rule(
                        severity,
                        "CAN-03",
                        format!(
                            "the client cancelled request {key} {} ms after the harness had answered it; a cancel must only reference a request still in progress",
                            late.as_millis()
                        ),
                    );
                } else {
                    self.rule(
                        Severity::Note,
                        "CAN-08",
                        format!("the cancel of request {key} crossed its response (allowed)"),
                    );
                }
            }
            if again {
                self.rule(
                    Severity::Note,
                    "CAN-01",
                    format!("the client cancelled request {key} more than once"),
                );
            }
            return;
        }
        if self.ledger.sent.contains_key(&key) {
            self.rule(
                Severity::Fail,
                "CAN-02",
                format!("the client cancelled request {key}, which the harness (its server) issued; a party may only cancel its own requests"),
            );
            return;
        }
        let other_type = self
            .ledger
            .received
            .iter()
            .find(|(k, _)| k.trim_matches('"') == key.trim_matches('"') && **k != key);
        let message = match other_type {
            Some((original, r)) => format!(
                "the cancel's requestId {key} differs in type from the id {original} of the client's `{}` request; it must be the identical JSON value",
                r.method
            ),
            None => format!("the client cancelled request {key}, which it never sent"),
        };
        self.rule(Severity::Fail, "CAN-01", message);
    }

    fn client_response(&mut self, index: usize) {
        self.settle_response(index);
    }
}
