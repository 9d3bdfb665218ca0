//! Following each channel through its life: opened, its status, what came on it, how it
//! ended; and the proofs and waits that rest on them (the barrier's settle over HTTP is
//! `settle.rs`).

use super::super::{Engine, Side};
use super::*;
use crate::engine::parts::clock;
use crate::engine::parts::transcript::Transcript;
use crate::facts::streams::{Opened, Stream};
use crate::transcript::Entry;
use crate::transport::{Channel, Event, Head, StreamEnd, Transport};
use serde_json::Value;
use std::time::Duration;
use tokio::time::Instant as Deadline;

impl<T: Transport, S: Side> Engine<'_, T, S> {
    /// A channel the harness just opened with transcript entry `index` (and, for a case's own
    /// line, expected line `expected`): its bookkeeping, and how the diff shows the line.
    pub(crate) fn opened(&mut self, channel: Channel, index: usize, expected: Option<usize>) {
        if channel == Channel::Stdio {
            return;
        }
        let opened = match channel {
            Channel::Get(_) => Opened::Listen,
            Channel::Delete(_) => Opened::Delete,
            _ => opened_by(self.transcript[index].value.as_ref(), |id| {
                self.ledger.key(id)
            }),
        };
        let entry = &mut self.transcript[index];
        entry.channel = channel;
        // A stamped line shows as the case wrote it.
        let base = match (&entry.shown, entry.stamped) {
            (Some(written), true) => written.clone(),
            _ => entry.text.clone(),
        };
        let internal = entry.internal;
        let shown_status = self
            .streams
            .open(channel, index, opened, internal, base.clone());
        let entry = &mut self.transcript[index];
        let line = match &shown_status {
            Some(status) => format!("{channel} {base} → {status}"),
            None => format!("{channel} {base}"),
        };
        // Until a status arrives, the line says none came.
        entry.shown = Some(match &shown_status {
            Some(_) => format!("{channel} {base} → no status"),
            None => line.clone(),
        });
        if let Some(at) = expected {
            self.diff.replace(at, format!("{} {line}", S::SENDS));
        }
        // What went in the headers (HTTP-18, HTTP-19), as a comment in the transcript.
        let headers = self
            .io
            .http_steps()
            .and_then(|http| http.shown_headers(channel).map(str::to_string));
        if let Some(headers) = headers {
            let mut entry =
                Entry::event(self.now(), channel, format!("{channel} headers: {headers}"));
            entry.session = self.streams.session();
            self.transcript.push(entry);
        }
    }

    /// Takes in what the transport said about a channel: bookkeeping and the transcript. The
    /// side's rules judge it afterwards.
    pub(crate) fn stream_event(&mut self, at: Duration, event: &Event) {
        let now = clock::now();
        let (channel, text) = match event {
            Event::Status { channel, head } => {
                let mut text = format!("{channel}: {}", head.summary());
                if let Some(session) = &head.session {
                    text.push_str(&format!(", session {}", String::from_utf8_lossy(session)));
                }
                if let Some(cancel) = self.streams.headed(*channel, head, now) {
                    // Accepted: the server has read it at the latest a grace later, and later
                    // by what it waits for a CPU from now on (`Waits::read_by`).
                    let (grace, waited) = (self.calm_grace(), self.waited());
                    self.ledger.cancel_accepted(cancel, at, grace, waited);
                }
                show_status(&self.streams, &mut self.transcript, *channel, Some(head));
                (*channel, text)
            }
            Event::Body { channel, text } => {
                self.streams.body(*channel, text);
                (*channel, format!("{channel}: {text}"))
            }
            Event::Closed {
                channel,
                end,
                bytes,
            } => {
                let unseen = self.streams.ended(*channel, end, *bytes);
                if unseen && *end != StreamEnd::Aborted {
                    show_status(&self.streams, &mut self.transcript, *channel, None);
                }
                (*channel, format!("{channel}: {end} ({bytes} bytes)"))
            }
            _ => return,
        };
        let session = self.streams.session_of(channel);
        let mut entry = Entry::event(at, channel, text);
        entry.session = session;
        self.transcript.push(entry);
    }

    /// The channel a message matching `pattern` should come on: the one of the request it
    /// answers or reports progress for.
    pub(crate) fn expected_channel(&self, pattern: &Value) -> Option<Channel> {
        if !self.io.channel_per_request() {
            return None;
        }
        // A task's progress may come on any stream of the session (2025-11-25: the call's
        // own stream ended with its answer).
        let core = self.protocol().is_some_and(|v| v.has_core_tasks());
        let request = match (pattern.get("id"), pattern.pointer("/params/progressToken")) {
            (Some(id), _) if !is_wildcard(id) => self.ledger.sent(id),
            (_, Some(token)) if !is_wildcard(token) => self
                .ledger
                .token(token)
                .filter(|key| !(core && self.ledger.task_of(key).is_some()))
                .and_then(|key| self.ledger.request(key)),
            _ => None,
        };
        request.map(|r| r.channel)
    }

    /// Over HTTP, before a `! cancel`: waits until the target has shown it received the
    /// request (a head, a message on its stream, or its answer), at most the arrival window
    /// after it was sent ([`Streams::arrival_window`]), so the cancel is not read before the
    /// request it names.
    pub(crate) async fn await_arrival(&mut self, id: &Value) {
        let Some(request) = self.ledger.sent(id) else {
            return;
        };
        let channel = request.channel;
        let Some(sent) = self.streams.stream(channel).map(|s| s.sent) else {
            return;
        };
        let reply = self.clock.stretched(self.played.options().reply_timeout);
        let window = self.streams.arrival_window(self.protocol(), reply);
        let until = Deadline::from_std(sent + window);
        loop {
            let arrived = self.streams.stream(channel).is_none_or(Stream::arrived)
                || self.ledger.sent(id).is_some_and(|r| r.answers > 0);
            if arrived {
                self.note_late_head(channel, sent);
                return;
            }
            if !self.next(until).await {
                // Nothing came since `arrived` was computed: the request went its whole wait.
                self.streams.holds_heads(channel);
                return;
            }
        }
    }

    /// A head that came only after the calm reply limit (`--reply-timeout` before any
    /// stretch) was held back until the server had something to send: a busy machine
    /// stretched the wait, so the head came within it, but the session's later requests get
    /// the arrival window, as when a request went its whole wait. Else every `! disconnect`
    /// waits that long again: against the TypeScript SDK 2.x's stateless fallback, which
    /// holds a call's head back, each of five abort cycles waited 15 s for one at a load
    /// average of 15 to 27, and ran a correct server past its time limit.
    fn note_late_head(&mut self, channel: Channel, sent: std::time::Instant) {
        let calm = self.played.options().reply_timeout;
        let late = self
            .streams
            .stream(channel)
            .and_then(|s| s.head.as_ref())
            .is_some_and(|(at, _)| at.saturating_duration_since(sent) > calm);
        if late {
            self.streams.holds_heads(channel);
        }
    }
}

/// Shows a channel's status on the line that opened it, normalised toward what was
/// expected: a status that meets the expectation reads exactly as expected.
fn show_status(
    streams: &Streams,
    transcript: &mut Transcript,
    channel: Channel,
    head: Option<&Head>,
) {
    let Some(stream) = streams.stream(channel) else {
        return;
    };
    let met = |codes: &str| {
        let codes: Vec<String> = codes.split('|').map(str::to_string).collect();
        head.is_some_and(|h| status_matches(&codes, h.code))
    };
    let status = match (&stream.shown_status, head) {
        (Some(expected), _) if met(expected) => Some(expected.clone()),
        (None, Some(h)) if (200..300).contains(&h.code) => None,
        (_, Some(h)) => Some(h.summary()),
        (_, None) => Some("no status".to_string()),
    };
    let shown = match status {
        Some(status) => format!("{channel} {} → {status}", stream.base),
        None => format!("{channel} {}", stream.base),
    };
    if let Some(entry) = transcript.get_mut(stream.entry) {
        entry.shown = Some(shown);
    }
}

fn is_wildcard(value: &Value) -> bool {
    value
        .as_str()
        .is_some_and(|t| t.starts_with('{') && t.ends_with('}') && !t.starts_with("{$"))
}
