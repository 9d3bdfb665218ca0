//! The engine's two directions: what the harness sends (and what each message means to the
//! request ledger), and how each event the transport reports is taken in, bounded and judged.

use super::ledger::SentRequest;
use super::{Engine, Side, Stop, MAX_RECEIVED_BYTES};
use crate::outcome::{FindingKind, Severity};
use crate::rules::envelope;
use crate::transcript::Entry;
use crate::transport::process::MAX_LINE;
use crate::transport::{Channel, Event, Transport};
use serde_json::Value;
use std::time::{Duration, Instant};
use tokio::time::Instant as Deadline;

impl<T: Transport, S: Side> Engine<'_, T, S> {
    /// Sends one message (a case's line, or the harness's own when `internal`) and records
    /// what it means in the ledger: a request to track, a cancel, an answer.
    pub(crate) async fn write(&mut self, text: String, internal: bool) -> Result<(), Stop> {
        let mut text = text;
        let mut value: Option<Value> = serde_json::from_str(&text).ok();
        let original_ms = value
            .as_ref()
            .and_then(|v| v.pointer("/params/arguments/ms"))
            .and_then(Value::as_u64);
        let role = value.as_mut().and_then(|m| S::prepare(self, m));
        if role.is_some() {
            text = value.as_ref().map(Value::to_string).unwrap_or(text);
        }
        let index = self.transcript.len();
        let mut request = None;
        if let Some(msg) = value.as_ref().and_then(Value::as_object) {
            let id = msg.get("id").filter(|id| id.is_string() || id.is_number());
            match (msg.get("method").and_then(Value::as_str), id) {
                (Some("notifications/cancelled"), None) => {
                    if let Some(id) = msg.get("params").and_then(|p| p.get("requestId")) {
                        self.ledger.cancel_sent(id, index);
                    }
                }
                (Some(method), Some(id)) => {
                    let params = msg.get("params");
                    let token = params
                        .and_then(|p| p.pointer("/_meta/progressToken"))
                        .filter(|t| t.is_string() || t.is_number())
                        .map(|t| self.ledger.key(t));
                    let tool = role
                        .as_deref()
                        .or_else(|| params.and_then(|p| p.get("name")).and_then(Value::as_str));
                    let call = method == "tools/call";
                    let endless = call && tool.is_some_and(crate::fixtures::is_endless);
                    let natural_end = (call && tool == Some("sleep"))
                        .then_some(original_ms)
                        .flatten()
                        .map(|ms| self.now() + crate::fixtures::sleep_natural_end(ms));
                    if let Some(token) = &token {
                        self.ledger
                            .tokens
                            .insert(token.clone(), self.ledger.key(id));
                    }
                    request = Some((
                        self.ledger.key(id),
                        SentRequest {
                            line: self.line,
                            method: method.to_string(),
                            internal,
                            endless,
                            starts: method == "initialize",
                            natural_end,
                            mapped: role.is_some(),
                            channel: Channel::Stdio,
                            answers: 0,
                            answer: None,
                            cancel: None,
                            answered_before_cancel: false,
                            last_progress: None,
                        },
                    ));
                }
                (None, Some(id)) => {
                    let key = self.ledger.key(id);
                    if let Some(r) = self.ledger.received.get_mut(&key) {
                        r.answered.get_or_insert_with(Instant::now);
                    }
                }
                _ => {}
            }
        }
        let expected = (!internal).then(|| {
            self.expected.push(format!("{} {text}", S::SENDS));
            self.expected.len() - 1
        });
        let reply_to = self.reply_channel(value.as_ref());
        let mut entry = Entry::sent(self.now(), text.clone(), value, internal);
        entry.session = self.streams.session;
        self.transcript.push(entry);
        self.last_send = Instant::now();
        if let Some((key, request)) = &request {
            self.ledger.sent.insert(key.clone(), request.clone());
        }
        match self.io.send(text.as_bytes(), reply_to).await {
            Ok(channel) => {
                self.transcript[index].channel = channel;
                self.opened(channel, index, expected);
                if let Some((key, _)) = request {
                    if let Some(r) = self.ledger.sent.get_mut(&key) {
                        r.channel = channel;
                    }
                }
                Ok(())
            }
            Err(error) => Err(S::lost(self, error).await),
        }
    }

    /// The channel a response or a notification about one of the target's requests belongs on.
    fn reply_channel(&self, value: Option<&Value>) -> Option<Channel> {
        let value = value?;
        if value.get("method").is_some() {
            return None;
        }
        let id = value.get("id")?;
        self.ledger
            .received
            .get(&self.ledger.key(id))
            .map(|r| r.channel)
    }

    /// Sends the harness's own answer to one of the target's requests, without waiting on
    /// anything: a failure means the target is gone, which the steps notice.
    pub(crate) async fn reply(&mut self, answer: Value) {
        let text = answer.to_string();
        if let Some(id) = answer.get("id") {
            let key = self.ledger.key(id);
            if let Some(r) = self.ledger.received.get_mut(&key) {
                r.answered.get_or_insert_with(Instant::now);
            }
        }
        let reply_to = self.reply_channel(Some(&answer));
        let index = self.transcript.len();
        let mut entry = Entry::sent(self.now(), text.clone(), Some(answer), true);
        entry.session = self.streams.session;
        self.transcript.push(entry);
        if let Ok(channel) = self.io.send(text.as_bytes(), reply_to).await {
            self.opened(channel, index, None);
        }
    }

    /// The ledger scope of session `session`.
    pub(crate) fn scope_of(&self, session: usize) -> Option<String> {
        (session > 0)
            .then(|| self.streams.names.get(session).cloned())
            .flatten()
    }

    /// Takes in events until the deadline.
    pub(crate) async fn pump_until(&mut self, deadline: Deadline) {
        while self.next(deadline).await {}
    }

    /// Takes in one event; false once the deadline passed or the target can say nothing more.
    pub(crate) async fn next(&mut self, deadline: Deadline) -> bool {
        let Some((at, event)) = self.io.next(deadline).await else {
            return false;
        };
        let at = at.saturating_duration_since(self.io.started());
        match event {
            Event::Message { channel, bytes } => {
                self.received_bytes += bytes.len() + 1;
                if self.received_bytes > MAX_RECEIVED_BYTES {
                    if !self.flooded {
                        self.flooded = true;
                        self.finding(
                            Severity::Fail,
                            FindingKind::Limit,
                            format!(
                                "{} wrote more than {} MiB {} in one case; the rest is not kept",
                                S::WRITER.who,
                                MAX_RECEIVED_BYTES >> 20,
                                S::WRITER.stream
                            ),
                        );
                    }
                    return true;
                }
                self.receive(at, channel, bytes).await;
            }
            Event::Overlong(channel) if channel != Channel::Stdio => {
                self.record(
                    at,
                    channel,
                    format!("[more than {MAX_LINE} bytes without a complete message, discarded]"),
                    None,
                );
                self.finding(
                    Severity::Fail,
                    FindingKind::Limit,
                    format!(
                        "{channel} sent more than {} MiB without completing a message; the harness stopped reading it",
                        MAX_LINE >> 20
                    ),
                );
            }
            Event::Overlong(channel) => {
                self.record(
                    at,
                    channel,
                    format!("[a line of more than {MAX_LINE} bytes, discarded]"),
                    None,
                );
                self.rule(
                    Severity::Fail,
                    "STD-02",
                    format!(
                        "{} wrote a line longer than {MAX_LINE} bytes {}",
                        S::WRITER.who,
                        S::WRITER.stream
                    ),
                );
            }
            Event::OutputClosed => self.output_closed = true,
            Event::Exited(_) => self.exited = true,
            event @ (Event::Status { .. } | Event::Body { .. } | Event::Closed { .. }) => {
                self.stream_event(at, &event);
                S::observe(self, at, event);
            }
            other => S::observe(self, at, other),
        }
        true
    }

    /// Records a message the target wrote; returns its transcript index.
    pub(crate) fn record(
        &mut self,
        at: Duration,
        channel: Channel,
        text: String,
        value: Option<Value>,
    ) -> usize {
        let mut entry = Entry::received(at, channel, text, value);
        entry.session = self.streams.session_of(channel);
        if let Some(stream) = self.streams.by.get_mut(&channel) {
            stream.messages += 1;
        }
        self.transcript.push(entry);
        self.transcript.len() - 1
    }

    /// The envelope every message must have, then the side's standing rules.
    pub(crate) async fn receive(&mut self, at: Duration, channel: Channel, bytes: Vec<u8>) {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if text.trim().is_empty() {
            let p = envelope::blank(S::WRITER);
            self.rule(p.severity, p.requirement, p.message);
            return;
        }
        let value: Option<Value> = serde_json::from_slice(&bytes).ok();
        let is_object = value.as_ref().is_some_and(Value::is_object);
        let problems = envelope::check(S::WRITER, &text, value.as_ref());
        let index = self.record(at, channel, text, value);
        for p in problems {
            self.rule(p.severity, p.requirement, p.message);
        }
        if is_object {
            // Ids are scoped to the session of the channel the message came on.
            let session = self.transcript[index].session;
            let scope = self.scope_of(session);
            let own = std::mem::replace(&mut self.ledger.scope, scope);
            S::judge(self, index).await;
            self.ledger.scope = own;
        }
    }
}
