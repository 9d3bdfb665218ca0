//! The engine's outbound direction: what the harness sends, and what each message means to
//! the request ledger (the inbound one is `receive.rs`; what a case keeps of either is
//! bounded by [`super::parts::budget`]).

use super::{Engine, Side, Stop, Why};
use crate::facts::ledger::{Due, Ledger, SentRequest};
use crate::fixtures;
use crate::outcome::Severity;
use crate::requirement::Req;
use crate::transcript::Entry;
use crate::transport::{Channel, SendError, Transport};
use serde_json::Value;
use std::time::Duration;

/// A message on its way out: what is sent, what the case wrote, and where it goes in the
/// transcript.
struct Outgoing {
    /// Its transcript index.
    index: usize,
    /// When it is sent, since the target started.
    now: Duration,
    /// The case line that sends it (0 for the harness's own).
    line: usize,
    /// The harness's own message (handshake, barrier, witness, an answer), not a case's.
    internal: bool,
    /// The text sent.
    text: String,
    /// It parsed, when it is JSON.
    value: Option<Value>,
    /// The case's own line, for the diff.
    as_written: String,
    /// Whether the era's `_meta` was added.
    stamped: bool,
    /// The fixture role whose mapped tool it calls, when it was mapped.
    role: Option<String>,
    /// The case's `ms` and `interval_ms` arguments, before any mapping.
    ms: Option<u64>,
    interval: Option<u64>,
}

/// When the answer to a request of `method` (calling fixture role `tool`) is due.
fn due(method: &str, tool: Option<&str>, natural_end: Option<Duration>) -> Due {
    match (method, tool) {
        ("tools/call", Some("echo" | "ping")) => Due::AtOnce,
        ("tools/call", _) => natural_end.map_or(Due::Unknown, Due::By),
        _ => Due::AtOnce,
    }
}

/// The ledger's entry for a request the harness sends (`out`, of `method` with `params`): what
/// it calls, and when its answer is due (at once, by the natural end of a `sleep`, or unknown
/// for endless work).
fn sent_request(out: &Outgoing, method: &str, params: Option<&Value>) -> SentRequest {
    let now = out.now;
    let tool = out
        .role
        .as_deref()
        .or_else(|| params.and_then(|p| p.get("name")).and_then(Value::as_str));
    let call = method == "tools/call";
    // A subscription, like `work`, lasts until it is cancelled.
    let endless =
        (call && tool.is_some_and(fixtures::is_endless)) || method == "subscriptions/listen";
    let natural_end = (call && tool == Some("sleep"))
        .then_some(out.ms)
        .flatten()
        .map(|ms| now + fixtures::sleep_natural_end(ms));
    SentRequest {
        internal: out.internal,
        endless,
        natural_end,
        tick: (call && tool == Some("ticker"))
            .then_some(out.interval)
            .flatten()
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis),
        mapped: out.role.is_some(),
        due: if endless {
            Due::Unknown
        } else {
            due(method, tool, natural_end)
        },
        ..SentRequest::new(out.line, out.index, now, method, Channel::Stdio)
    }
}

/// What an outgoing message means to the `ledger`, sent when the target had waited `waited`
/// for a CPU: a cancel is marked, an answer to the target's request noted; a request is
/// returned, keyed and with its progress token's key, to be tracked once it is recorded.
fn record_outgoing(
    ledger: &mut Ledger,
    out: &Outgoing,
    waited: Option<Duration>,
) -> Option<(String, SentRequest, Option<String>)> {
    let msg = out.value.as_ref().and_then(Value::as_object)?;
    let id = msg.get("id").filter(|id| id.is_string() || id.is_number());
    match (msg.get("method").and_then(Value::as_str), id) {
        (Some("notifications/cancelled"), None) => {
            if let Some(id) = msg.get("params").and_then(|p| p.get("requestId")) {
                ledger.cancel_sent(id, out.index, out.now, waited);
            }
            None
        }
        (Some(method), Some(id)) => {
            let params = msg.get("params");
            let token = params
                .and_then(|p| p.pointer("/_meta/progressToken"))
                .filter(|t| t.is_string() || t.is_number())
                .map(|t| ledger.key(t));
            let request = sent_request(out, method, params);
            Some((ledger.key(id), request, token))
        }
        (None, Some(id)) => {
            let key = ledger.key(id);
            if let Some(answer) = out.value.as_ref() {
                ledger.answered(&key, answer, waited);
            }
            None
        }
        _ => None,
    }
}

impl<T: Transport, S: Side> Engine<'_, T, S> {
    /// Sends one message (a case's line, or the harness's own when `internal`) and records
    /// what it means in the ledger: a request to track, a cancel, an answer.
    pub(crate) async fn write(&mut self, text: String, internal: bool) -> Result<(), Stop> {
        if self.liveness.is_done() {
            // Nobody is left to send it to; the diff still shows what the case would send.
            if !internal {
                self.diff.push(format!("{} {text}", S::SENDS));
            }
            return Ok(());
        }
        let out = self.outgoing(text, internal);
        let (index, now) = (out.index, out.now);
        let waited = self.waited();
        let request = record_outgoing(&mut self.ledger, &out, waited);
        let expected = (!internal).then(|| {
            let shown = if out.stamped {
                &out.as_written
            } else {
                &out.text
            };
            self.diff.push(format!("{} {shown}", S::SENDS))
        });
        let reply_to = out
            .value
            .as_ref()
            .and_then(|v| self.ledger.reply_channel(v));
        if let Some(value) = out.value.as_ref() {
            S::sent(self, value);
        }
        let mut entry = Entry::sent(now, out.text, out.value, internal);
        entry.session = self.streams.session();
        if out.stamped {
            entry.shown = Some(out.as_written);
            entry.stamped = true;
        }
        self.transcript.push(entry);
        self.clock.sent();
        let request = request.map(|(key, request, token)| {
            self.ledger.request_sent(key.clone(), request, token);
            key
        });
        self.deliver(reply_to, index, expected, request).await
    }

    /// A message as it will be sent: the side's fixture mapping (`prepare`) and the stateless
    /// era's stamp applied, with what the case wrote kept for the diff.
    fn outgoing(&self, text: String, internal: bool) -> Outgoing {
        let mut text = text;
        let mut value: Option<Value> = serde_json::from_str(&text).ok();
        let argument = |value: &Option<Value>, name: &str| {
            value
                .as_ref()
                .and_then(|v| v.pointer(&format!("/params/arguments/{name}")))
                .and_then(Value::as_u64)
        };
        let interval = argument(&value, "interval_ms");
        let ms = argument(&value, "ms");
        let role = value.as_mut().and_then(|m| S::prepare(self, m));
        // The stateless era's `_meta` goes onto requests that lack it; the diff keeps the
        // case's own line, the transcript shows what was sent.
        let as_written = text.clone();
        let stamped = value.as_mut().is_some_and(|m| S::stamp(self, m));
        if role.is_some() || stamped {
            text = value.as_ref().map(Value::to_string).unwrap_or(text);
        }
        Outgoing {
            index: self.transcript.len(),
            now: self.now(),
            line: self.step.line(),
            internal,
            text,
            value,
            as_written,
            stamped,
            role,
            ms,
            interval,
        }
    }

    /// Hands a recorded message (transcript index `index`, diff line `expected`, the request
    /// `request` it is, if one) to the transport, and notes the channel it travelled on.
    async fn deliver(
        &mut self,
        reply_to: Option<Channel>,
        index: usize,
        expected: Option<usize>,
        request: Option<String>,
    ) -> Result<(), Stop> {
        let text = self.transcript[index].text.as_bytes();
        match self.io.send(text, reply_to).await {
            Ok(channel) => {
                self.transcript[index].channel = channel;
                self.opened(channel, index, expected);
                if let Some(key) = request {
                    self.ledger.travelled(&key, channel);
                }
                Ok(())
            }
            Err(SendError::Stalled(waited)) => {
                self.stall(waited);
                Err(Stop::Hung)
            }
            Err(_) => match self.stopped(Why::Unsent).await {
                Some(Stop::Done) => {
                    self.liveness.done();
                    Ok(())
                }
                Some(stop) => Err(stop),
                None => Ok(()),
            },
        }
    }

    /// The target stopped reading what the harness writes: the case cannot go on.
    fn stall(&mut self, waited: Duration) {
        if self.liveness.stall() {
            self.rule(
                Severity::Fail,
                Req::Can11,
                format!(
                    "{} stopped reading what the harness sends: a write waited {waited:?} for room; a peer must keep reading its input while it works",
                    S::WRITER.who
                ),
            );
        }
    }

    /// Sends the harness's own answer to one of the target's requests, without waiting on
    /// anything but the transport's write deadline: a target that is gone is noticed by the
    /// steps, one that stopped reading fails the case.
    pub(crate) async fn reply(&mut self, answer: Value) {
        let reply_to = self.ledger.reply_channel(&answer);
        self.reply_via(answer, reply_to).await;
    }

    /// [`Engine::reply`] on a channel the caller chose (a message of an earlier session that
    /// the ledger no longer knows).
    pub(crate) async fn reply_via(&mut self, answer: Value, reply_to: Option<Channel>) {
        if self.liveness.cut_off() {
            return;
        }
        let text = answer.to_string();
        if let Some(id) = answer.get("id") {
            let key = self.ledger.key(id);
            let waited = self.waited();
            self.ledger.answered(&key, &answer, waited);
        }
        // Past the budget a reply on stdio is sent and counted, not kept (over HTTP its stream
        // is followed through its entry).
        let kept = !self.transcript.over() || self.io.channel_per_request();
        S::sent(self, &answer);
        if !kept {
            let first = self.transcript.not_kept();
            self.dropped(first);
            if let Err(SendError::Stalled(waited)) = self.io.send(text.as_bytes(), reply_to).await {
                self.stall(waited);
            }
            return;
        }
        let mut entry = Entry::sent(self.now(), text, Some(answer), true);
        entry.session = self.streams.session();
        let index = self.transcript.keep(entry);
        let text = self.transcript[index].text.as_bytes();
        match self.io.send(text, reply_to).await {
            Ok(channel) => self.opened(channel, index, None),
            Err(SendError::Stalled(waited)) => self.stall(waited),
            Err(_) => {}
        }
    }
}
