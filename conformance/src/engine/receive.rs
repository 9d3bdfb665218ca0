//! The engine's inbound direction: each event the transport reports is taken in, recorded
//! within the transcript's budget (see [`super::KEEP_BYTES`]) and judged.

use super::parts::budget::{KEEP_BYTES, KEEP_ENTRIES};
use super::parts::transcript::Transcript;
use super::{Engine, Side};
use crate::engine::parts::clock;
use crate::facts::ledger::Ledger;
use crate::outcome::{FindingKind, Severity};
use crate::requirement::Req;
use crate::rules::envelope;
use crate::transcript::Entry;
use crate::transport::process::MAX_LINE;
use crate::transport::{Channel, Event, Transport};
use serde_json::Value;
use std::time::Duration;
use tokio::time::Instant as Deadline;

impl<T: Transport, S: Side> Engine<'_, T, S> {
    /// Takes in events until the deadline.
    pub(crate) async fn pump_until(&mut self, deadline: Deadline) {
        while self.next(deadline).await {}
    }

    /// Takes in one event; false once the deadline passed or the target can say nothing more.
    /// A target that stopped reading says nothing more worth waiting for, and one whose process
    /// exited gets only a short grace for what it wrote before.
    pub(crate) async fn next(&mut self, deadline: Deadline) -> bool {
        if self.liveness.cut_off() {
            return false;
        }
        self.clock.refresh();
        let deadline = self.liveness.read_until(deadline, S::EXIT_GRACE);
        let waiting = clock::now();
        let Some((at, event)) = self.io.next(deadline).await else {
            let late = Deadline::now().saturating_duration_since(deadline);
            self.clock.woke_late(late);
            return false;
        };
        // How long the harness waited for the target to write this (its arrival stamp is when
        // the transport read it): what was already written when the harness looked costs
        // nothing, however long the harness takes to read it.
        self.clock.event(at.saturating_duration_since(waiting));
        let at = at.saturating_duration_since(self.io.started());
        match event {
            Event::Message { channel, bytes } => {
                self.liveness.message(at);
                self.receive(at, channel, bytes).await;
            }
            Event::Partial(_) => {
                self.liveness.partial(at);
            }
            Event::Overlong(channel) if channel != Channel::Stdio => {
                self.liveness.heard(at);
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
                self.liveness.heard(at);
                self.record(
                    at,
                    channel,
                    format!("[a line of more than {MAX_LINE} bytes, discarded]"),
                    None,
                );
                self.rule(
                    Severity::Fail,
                    Req::Std02,
                    format!(
                        "{} wrote a line longer than {MAX_LINE} bytes {}",
                        S::WRITER.who,
                        S::WRITER.stream
                    ),
                );
            }
            Event::OutputClosed => self.liveness.output_closed(),
            Event::Exited(_) => self.liveness.exit(),
            event @ (Event::Status { .. } | Event::Body { .. } | Event::Closed { .. }) => {
                self.liveness.heard(at);
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
        self.streams.message(channel);
        self.transcript.keep(entry)
    }

    /// A message was judged and not kept (`first`: the first one), which the first time adds
    /// the note that says so.
    pub(super) fn dropped(&mut self, first: bool) {
        if first {
            self.finding(
                Severity::Note,
                FindingKind::Limit,
                format!(
                    "the transcript keeps {} messages or {} MiB per case; later messages that are not the first answer to one of the harness's requests (and the harness's replies to the target's requests) were judged and not kept, so a step that expects one of them may miss it",
                    KEEP_ENTRIES,
                    KEEP_BYTES >> 20
                ),
            );
        }
    }

    /// The envelope every message must have, then the side's standing rules. Past the budget,
    /// a message that is not the first answer to one of the harness's requests is judged and
    /// dropped.
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
        let over = self.transcript.over();
        let index = self.record(at, channel, text, value);
        for p in problems {
            self.rule(p.severity, p.requirement, p.message);
        }
        if channel == Channel::Stdio && self.transcript[index].value.is_none() {
            // Stdout carries only messages: past a line that is not one, nothing the target
            // says can be read as it meant it. The case ends here, with that line quoted.
            self.liveness.garble();
            return;
        }
        let session = self.transcript[index].session;
        if is_object {
            // Ids are scoped to the session of the channel the message came on.
            let scope = self.streams.scope(session).map(str::to_string);
            S::judge(self, index, scope.as_deref()).await;
        }
        // No step has looked at it yet; one that took it (a case line) would keep it. Only the
        // last entry goes, so no index kept elsewhere moves.
        let taken = self.transcript[index].consumed_by.is_some_and(|l| l > 0);
        let last = self.transcript.is_last(index);
        let scope = self.streams.scope(session);
        if over
            && last
            && !taken
            && !answers_a_request(&self.transcript, &self.ledger, scope, index)
        {
            let first = self.transcript.take_back(index).unwrap_or_default();
            self.dropped(first);
        }
    }
}

/// Whether the received message at transcript index `index` (whose ids the ledger scopes as
/// `scope`) is the first answer to one of the harness's requests: the ledger points at it.
fn answers_a_request(
    transcript: &Transcript,
    ledger: &Ledger,
    scope: Option<&str>,
    index: usize,
) -> bool {
    let Some(id) = transcript[index]
        .value
        .as_ref()
        .filter(|v| v.get("method").is_none())
        .and_then(|v| v.get("id"))
    else {
        return false;
    };
    ledger
        .sent_in(scope, id)
        .is_some_and(|r| r.answer == Some(index))
}
