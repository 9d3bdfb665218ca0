//! What the harness, as a client's server, answers on its own: the requests the case does not
//! script or wait for (a plain server's answers: `ping`, `tools/list`, `echo`, "method not
//! found"; the tasks it serves; a second `initialize`), those still waiting once the steps
//! stopped, and those of a session the client replaced. The case's steps answer the rest.

use super::tasks::Served;
use super::{initialize_answer, tool_list, ClientTarget};
use crate::case::Case;
use crate::engine::Engine;
use crate::transport::{Channel, Transport};
use serde_json::{json, Value};

/// The answer `ping` gets from the harness.
fn pong(id: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {}})
}

/// A task answer of the harness's, stamped as the era wants (`stateless`: 2026-07-28).
fn task_answer(stateless: bool, mut answer: Value) -> Value {
    if stateless {
        crate::era::ProtocolVersion::V2026_07_28.stamp_result(&mut answer);
    }
    answer
}

impl ClientTarget {
    /// The answer of a plain server: `ping`, `tools/list`, `echo`; after the steps stopped,
    /// an error for any other call (so the client is not left waiting); "method not found"
    /// for anything else, as a server of the handshake era answers `server/discover`.
    fn plain_answer(&self, case: &Case, id: &Value, method: &str, params: Option<&Value>) -> Value {
        let mut answer = self.plain_answer_of_era(case, id, method, params);
        if self.era.plays {
            crate::era::ProtocolVersion::V2026_07_28.stamp_result(&mut answer);
        }
        answer
    }

    fn plain_answer_of_era(
        &self,
        case: &Case,
        id: &Value,
        method: &str,
        params: Option<&Value>,
    ) -> Value {
        if let Some(answer) = self.stateless_answer(case, id, method, params) {
            return answer;
        }
        let tool = params.and_then(|p| p.get("name")).and_then(Value::as_str);
        match (method, tool) {
            ("ping", _) => pong(id),
            ("tools/list", _) => json!({"jsonrpc": "2.0", "id": id, "result": tool_list()}),
            ("tools/call", Some("echo")) => {
                let text = params
                    .and_then(|p| p.pointer("/arguments/text"))
                    .cloned()
                    .unwrap_or(json!(""));
                json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}]}})
            }
            ("tools/call", _) if self.stopped.is_some() => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "the conformance case stopped before this call; it is not served"}})
            }
            _ => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("method not found: the conformance harness does not offer {method} in this case")}})
            }
        }
    }
}

impl<T: Transport> Engine<'_, T, ClientTarget> {
    /// Answers the client's request of `method` (at transcript index `index`) unless the
    /// case's steps will: they answer what they script or are waiting for, unless they
    /// stopped.
    pub(crate) async fn answer_request(&mut self, index: usize, method: &str) {
        // The harness's own handshake answers every `initialize` after the first too (a new
        // session); the case's steps answer what they script or are waiting for, unless they
        // stopped. A server of 2026-07-28 refuses `initialize` and versions it does not speak
        // whatever the case scripts (a case that wants to see such a request waits for it).
        if method == "initialize" {
            let capabilities = self
                .transcript
                .params(index)
                .and_then(|p| p.get("capabilities"));
            self.side.declared = Some(capabilities.cloned().unwrap_or_default());
        }
        let again = method == "initialize" && self.side.handshaken;
        let message = self.transcript.message(index);
        let awaited = self.step.awaits(message);
        let (id, params) = (&message["id"], message.get("params"));
        let modern = self
            .side
            .stateless_answer(self.played.case(), id, method, params);
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
                        || (method == "initialize" && self.played.case().handshake))));
        if handled_by_case {
            return;
        }
        self.transcript.take_internal(index);
        if self.side.era.plays && method == "initialize" {
            return self.stateless_initialize(index).await;
        }
        let message = self.transcript.message(index);
        let (id, params) = (&message["id"], message.get("params"));
        if !again && modern.is_none() {
            let stateless = self.side.era.plays;
            if let Some(served) = self.side.tasks.serve(id, method, params, stateless) {
                if let Served::Answer(answer) = served {
                    self.reply(task_answer(self.side.era.plays, answer)).await;
                }
                self.send_released().await;
                return;
            }
        }
        let message = self.transcript.message(index);
        let (id, params) = (&message["id"], message.get("params"));
        let answer = if again {
            initialize_answer(self, message).0
        } else {
            modern.unwrap_or_else(|| {
                self.side
                    .plain_answer(self.played.case(), id, method, params)
            })
        };
        self.reply(answer).await;
    }

    /// The answers to task waits the harness held, now that their task is terminal.
    pub(crate) async fn send_released(&mut self) {
        for answer in std::mem::take(&mut self.side.tasks.released) {
            self.reply(task_answer(self.side.era.plays, answer)).await;
        }
    }

    /// The harness's answers to the requests the client still waits for (after the steps
    /// stopped): a plain server's, so the adapter can finish.
    pub(crate) async fn serve_outstanding(&mut self) {
        let waiting: Vec<(String, String)> = self
            .ledger
            .received_requests()
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
                self.side
                    .plain_answer(self.played.case(), &id, &method, None)
            };
            self.reply(answer).await;
        }
    }

    /// A message of a session the client has replaced (a probe process, say): served as a
    /// plain server would, on its own channel; its ids are no longer tracked.
    pub(crate) async fn earlier_session(&mut self, index: usize, method: Option<&str>) {
        let value = self.transcript.message(index);
        let channel: Channel = self.transcript[index].channel;
        let answer = match (method, value.get("id")) {
            (Some("initialize"), Some(_)) if !self.side.era.plays => {
                Some(initialize_answer(self, value).0)
            }
            (Some("initialize"), Some(id)) => {
                let asked = value.pointer("/params/protocolVersion");
                Some(crate::engine::client::unsupported(
                    id,
                    asked.unwrap_or(&Value::Null),
                ))
            }
            (Some(method), Some(id)) => {
                Some(
                    self.side
                        .plain_answer(self.played.case(), id, method, value.get("params")),
                )
            }
            _ => None,
        };
        self.transcript.take_internal(index);
        if let Some(answer) = answer {
            self.reply_via(answer, Some(channel)).await;
        }
    }
}
