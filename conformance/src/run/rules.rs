//! The standing rules: what every message a server target writes must respect, whatever the
//! case says. Each line the target writes is recorded and judged here before any step looks
//! at it: JSON only, JSON-RPC 2.0, one response per request with its id echoed exactly,
//! progress only for live tokens and increasing, and nothing deliberate after a cancel.

use super::Run;
use crate::envelope::{self, short};
use crate::outcome::Severity;
use crate::pattern::{canonical, id_key};
use crate::transcript::{Direction, Entry};
use serde_json::{json, Value};
use std::time::Duration;

impl Run<'_> {
    pub(super) fn record(&mut self, at: Duration, text: String, value: Option<Value>) -> usize {
        self.transcript.push(Entry {
            at,
            direction: Direction::Received,
            text,
            value,
            internal: false,
            consumed_by: None,
            shown: None,
        });
        self.transcript.len() - 1
    }

    /// Applies the standing protocol rules to one line the target wrote.
    pub(super) async fn receive(&mut self, at: Duration, bytes: Vec<u8>) {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if text.trim().is_empty() {
            let p = envelope::blank(&envelope::SERVER);
            self.finding(p.severity, p.requirement, p.message);
            return;
        }
        let value: Option<Value> = serde_json::from_slice(&bytes).ok();
        let index = self.record(at, text.clone(), value.clone());
        for p in envelope::check(&envelope::SERVER, &text, value.as_ref()) {
            self.finding(p.severity, p.requirement, p.message);
        }
        let Some(msg) = value.as_ref().and_then(Value::as_object) else {
            return;
        };
        let value = value.clone().unwrap_or_default();
        match (msg.get("method").and_then(Value::as_str), msg.get("id")) {
            (Some(method), Some(id)) => {
                // The target's own request: answer it so it is not left waiting.
                self.transcript[index].internal = true;
                let answer = if method == "ping" {
                    json!({"jsonrpc": "2.0", "id": id, "result": {}})
                } else {
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "the conformance harness does not offer this method"}})
                };
                let text = answer.to_string();
                self.transcript.push(Entry {
                    at: self.target.started.elapsed(),
                    direction: Direction::Sent,
                    text: text.clone(),
                    value: Some(answer),
                    internal: true,
                    consumed_by: None,
                    shown: None,
                });
                // A failed write means the target is gone; the exit event reports it.
                let _ = self.target.send(text.as_bytes()).await;
            }
            (Some("notifications/progress"), None) => self.progress(msg.get("params")),
            (Some(_), None) => {}
            (None, _) => self.response(index, &value),
        }
    }

    fn progress(&mut self, params: Option<&Value>) {
        let token = params.and_then(|p| p.get("progressToken"));
        let Some(request_key) = token.and_then(|t| self.tokens.get(&id_key(t))).cloned() else {
            let shown = token.map(canonical).unwrap_or_else(|| "none".into());
            self.finding(
                Severity::Fail,
                "PRG-06",
                format!("progress for token {shown}, which no request in flight carries"),
            );
            return;
        };
        let value = params
            .and_then(|p| p.get("progress"))
            .and_then(Value::as_f64);
        let ended = self
            .requests
            .get(&request_key)
            .map(|r| (r.answers > 0, r.cancel));
        match ended {
            Some((true, _)) => self.finding(
                Severity::Fail,
                "PRG-07",
                format!("progress for request {request_key} after its response; progress must stop when the operation completes"),
            ),
            Some((false, Some((_, true)))) => self.finding(
                Severity::Warn,
                "CAN-05",
                format!("progress for request {request_key} after the target had read its cancel (the barrier proved it)"),
            ),
            _ => {}
        }
        let Some(value) = value else {
            self.finding(
                Severity::Fail,
                "PRG-02",
                format!("progress for request {request_key} without a numeric `progress`"),
            );
            return;
        };
        let request = self
            .requests
            .get_mut(&request_key)
            .expect("token maps to a request");
        let last = request.last_progress.replace(value);
        match last {
            Some(prev) if value < prev => self.finding(
                Severity::Fail,
                "PRG-03",
                format!("progress for request {request_key} went down from {prev} to {value}; it must increase"),
            ),
            Some(prev) if value == prev => self.finding(
                Severity::Warn,
                "PRG-03",
                format!("progress for request {request_key} repeated {value}; it must increase with every notification"),
            ),
            _ => {}
        }
    }

    fn response(&mut self, index: usize, value: &Value) {
        let has_result = value.get("result").is_some();
        let error = value.get("error");
        if has_result == error.is_some() {
            self.finding(
                Severity::Fail,
                "RPC-05",
                format!(
                    "a response must carry exactly one of `result` and `error`: {}",
                    short(value)
                ),
            );
        }
        if let Some(error) = error {
            let code_ok = error.get("code").is_some_and(|c| c.is_i64());
            let message_ok = error.get("message").is_some_and(Value::is_string);
            if !code_ok || !message_ok {
                self.finding(
                    Severity::Fail,
                    "RPC-06",
                    format!(
                        "an error needs an integer `code` and a string `message`: {}",
                        short(value)
                    ),
                );
            }
        }
        let id = value.get("id").cloned().unwrap_or(Value::Null);
        if id.is_null() {
            if has_result {
                self.finding(
                    Severity::Fail,
                    "RPC-04",
                    format!("a result with no request id: {}", short(value)),
                );
            }
            // An error with id null answers a line the target could not read; the case judges it.
            return;
        }
        let key = id_key(&id);
        let Some(request) = self.requests.get_mut(&key) else {
            self.transcript[index].consumed_by = Some(0);
            self.finding(
                Severity::Fail,
                "RPC-04",
                format!("a response for id {key}, which the harness never sent as a request id (ids must be echoed exactly, type included)"),
            );
            return;
        };
        request.answers += 1;
        self.transcript[index].internal = request.internal;
        let (answers, cancel, endless, line, late, natural_end, starts) = (
            request.answers,
            request.cancel,
            request.endless,
            request.line,
            request.answered_before_cancel,
            request.natural_end,
            request.starts,
        );
        let at = self.transcript[index].at;
        if answers > 1 {
            self.transcript[index].consumed_by = Some(0);
            self.finding(
                Severity::Fail,
                "RPC-04",
                format!("a second response for request {key} (sent at line {line}); every request gets exactly one"),
            );
            return;
        }
        if let Some((_, read)) = cancel {
            // A cancel after the answer, or one for `initialize` (which a client must never
            // send; whatever the server does with it short of a crash is its business).
            if late || starts {
                return;
            }
            // Only a response that could have crossed the cancel is excused: not one from a
            // tool that never ends, nor one that came before the tool could have finished,
            // nor an error saying it was cancelled (-32800, as several SDKs send).
            let cancelled_error =
                value.pointer("/error/code").and_then(Value::as_i64) == Some(-32800);
            let cause = if endless {
                Some("its tool never ends on its own, so the cancel caused it".to_string())
            } else if natural_end.is_some_and(|end| at < end) {
                Some("it came before the tool could have finished on its own, so the cancel caused it".to_string())
            } else if cancelled_error {
                Some("its error -32800 says the cancel caused it".to_string())
            } else if read {
                Some("the barrier proved the cancel had been read".to_string())
            } else {
                None
            };
            if let Some(why) = cause {
                self.finding(
                    Severity::Warn,
                    "CAN-05",
                    format!("request {key} was answered after it was cancelled ({why}); a cancelled request should get no response"),
                );
            } else {
                self.finding(
                    Severity::Note,
                    "CAN-08",
                    format!("the response to request {key} crossed its cancel (allowed)"),
                );
            }
        }
    }

    /// Responses no step expected and no cancel explains.
    pub(super) fn unexpected_responses(&mut self) {
        // A cancelled request may get one response or none; the standing rules judged it.
        let cancelled = |v: &Value| {
            v.get("id")
                .and_then(|id| self.requests.get(&id_key(id)))
                .is_some_and(|r| r.cancel.is_some())
        };
        let stray: Vec<String> = self
            .transcript
            .iter()
            .filter(|e| {
                e.direction == Direction::Received && !e.internal && e.consumed_by.is_none()
            })
            .filter_map(|e| e.value.as_ref())
            .filter(|v| v.get("method").is_none() && v.get("id").is_some() && !cancelled(v))
            .map(short)
            .collect();
        for message in stray {
            self.finding(
                self.case_severity(),
                "case",
                format!("a response the case does not expect: {message}"),
            );
        }
    }
}
