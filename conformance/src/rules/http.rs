//! What a server over Streamable HTTP must respect beyond its messages, whatever the case:
//! `202` with an empty body for notifications and responses (HTTP-07), `application/json` or
//! `text/event-stream` for requests (HTTP-08), a stream that carries its own request's
//! messages (HTTP-09) and never a response on a GET stream (HTTP-12), no message on two
//! streams (HTTP-13), session ids of visible ASCII (HTTP-16), and what became of the stream
//! of a cancelled request (AMB-04, noted).

use crate::engine::http::Opened;
use crate::engine::server::ServerTarget;
use crate::engine::Engine;
use crate::outcome::{FindingKind, Severity};
use crate::pattern::canonical;
use crate::requirement::Req;
use crate::transport::{Channel, Event, Head, StreamEnd, Transport};
use serde_json::Value;
use std::time::Duration;
use tokio::time::Instant as Deadline;

impl<T: Transport> Engine<'_, T, ServerTarget> {
    /// Judges what the transport said about a channel: its status, or its end.
    pub(crate) fn judge_stream_event(&mut self, event: &Event) {
        match event {
            Event::Status { channel, head } => self.judge_status(*channel, head),
            Event::Closed {
                channel,
                end,
                bytes,
            } => self.judge_end(*channel, end, *bytes),
            _ => {}
        }
    }

    fn judge_status(&mut self, channel: Channel, head: &Head) {
        if let Some(raw) = &head.session {
            if raw.is_empty() || !raw.iter().all(|b| (0x21..=0x7e).contains(b)) {
                self.rule(
                    Severity::Fail,
                    Req::Http16,
                    format!(
                        "{channel} assigned the session id {:?}, which is not visible ASCII (0x21 to 0x7E)",
                        String::from_utf8_lossy(raw)
                    ),
                );
            }
        }
        let Some(opened) = self.streams.by.get(&channel).map(|s| s.opened.clone()) else {
            return;
        };
        // 2026-07-28 has no sessions; only a legacy `initialize` may open one (LIF-14).
        let initialize = matches!(&opened, Opened::Request(key)
            if self.ledger.sent.get(key).is_some_and(|r| r.starts));
        if head.session.is_some() && self.errors_answer() && !initialize {
            self.rule(
                Severity::Warn,
                Req::Http20,
                format!(
                    "{channel} carried Mcp-Session-Id {:?}; 2026-07-28 has no sessions, so a server mints none",
                    String::from_utf8_lossy(head.session.as_deref().unwrap_or_default())
                ),
            );
        }
        if self
            .streams
            .by
            .get(&channel)
            .is_some_and(|s| s.expected.is_some())
        {
            // The case judges this status with `! status`.
            return;
        }
        let code = head.code;
        let shown = head.summary();
        let redirect = (300..400).contains(&code).then(|| {
            "; the harness does not follow redirects: give the endpoint's final URL".to_string()
        });
        match opened {
            Opened::Notification { .. } | Opened::Response if code == 202 => {}
            Opened::Notification { method, cancels } => {
                let what = format!("{channel} ({method})");
                if (200..400).contains(&code) {
                    self.rule(
                        Severity::Fail,
                        Req::Http07,
                        format!("{what} got HTTP {shown}; a notification is accepted with 202 and an empty body, or refused with an error status{}", redirect.unwrap_or_default()),
                    );
                    return;
                }
                let live = cancels.as_ref().and_then(|key| self.ledger.sent.get(key));
                match live {
                    Some(request) if !request.starts => self.rule(
                        Severity::Warn,
                        Req::Http17,
                        format!(
                            "the cancel of request {} ({channel}) got HTTP {shown}; a cancel of the client's own request gets 202 (a refusal is allowed only as a warning, AMB-09)",
                            cancels.unwrap_or_default()
                        ),
                    ),
                    _ => self.rule(
                        Severity::Note,
                        Req::Http07,
                        format!("{what} got HTTP {shown} (allowed for a notification the server cannot accept, AMB-10)"),
                    ),
                }
            }
            Opened::Response => self.rule(
                Severity::Fail,
                Req::Http07,
                format!("{channel} (the harness's answer to the server's request) got HTTP {shown}; a response is accepted with 202 and an empty body"),
            ),
            Opened::Request(key) => {
                let typed = matches!(
                    head.content_type.as_deref(),
                    Some("application/json" | "text/event-stream")
                );
                if (200..300).contains(&code) && code != 202 && typed {
                    return;
                }
                // In 2026-07-28 an error status carries the JSON-RPC error that answers the
                // request (HTTP-19, LIF-10, LIF-12): judged once the body has been read.
                if self.errors_answer() && (400..500).contains(&code) && typed {
                    return;
                }
                let cancelled = self.ledger.sent.get(&key).is_some_and(|r| r.cancel.is_some());
                if cancelled && !(300..400).contains(&code) {
                    // A cancelled request's POST still needs some HTTP answer (AMB-03).
                    self.rule(
                        Severity::Note,
                        Req::Http08,
                        format!("{channel} (request {key}, cancelled) got HTTP {shown} (allowed for a cancelled request, AMB-03)"),
                    );
                    return;
                }
                let why = if (200..300).contains(&code) {
                    "a request is answered with application/json or text/event-stream".to_string()
                } else {
                    format!(
                        "the server refused a request the case expects it to serve{}",
                        redirect.unwrap_or_default()
                    )
                };
                self.rule(
                    Severity::Fail,
                    Req::Http08,
                    format!("{channel} (request {key}) got HTTP {shown}; {why}"),
                );
            }
            Opened::Listen => {
                let sse = head.content_type.as_deref() == Some("text/event-stream");
                if !(code == 405 || (code == 200 && sse)) {
                    self.rule(
                        Severity::Fail,
                        Req::Http12,
                        format!("{channel} got HTTP {shown}; a GET gets text/event-stream or 405"),
                    );
                }
            }
            Opened::Other | Opened::Delete => {}
        }
    }

    fn judge_end(&mut self, channel: Channel, end: &StreamEnd, bytes: u64) {
        let Some(stream) = self.streams.by.get(&channel).cloned() else {
            return;
        };
        let accepted = stream.head.as_ref().is_some_and(|(_, h)| h.code == 202);
        let opened = stream.opened.clone();
        if accepted && opened.wants_accepted() && bytes > 0 {
            self.rule(
                Severity::Fail,
                Req::Http07,
                format!(
                    "{channel} got 202 with a body of {bytes} bytes; 202 comes with an empty body"
                ),
            );
        }
        if let StreamEnd::TooLarge(limit) = end {
            self.finding(
                Severity::Fail,
                FindingKind::Limit,
                format!(
                    "{channel} carried more than {} MiB; the harness cut it and keeps no more",
                    limit >> 20
                ),
            );
        }
        let Opened::Request(key) = opened else {
            return;
        };
        let Some(request) = self.ledger.sent.get(&key) else {
            return;
        };
        let client_error = stream
            .head
            .as_ref()
            .filter(|(_, h)| (400..500).contains(&h.code))
            .map(|(_, h)| h.summary());
        if let (Some(status), true) = (client_error, self.errors_answer()) {
            if stream.expected.is_some() || request.cancel.is_some() {
                return;
            }
            let answer = request.answer.map(|index| self.value(index));
            let why = match answer {
                None => "without the JSON-RPC error that answers the request in its body",
                Some(answer) if answer.get("error").is_none() => {
                    "with a result in its body; a result comes with 200"
                }
                Some(_) => return,
            };
            self.rule(
                Severity::Fail,
                Req::Http08,
                format!("{channel} (request {key}) got HTTP {status} {why}"),
            );
            return;
        }
        let refused = stream
            .head
            .as_ref()
            .is_some_and(|(_, h)| !(200..300).contains(&h.code) || h.code == 202);
        if request.answers > 0 || request.cancel.is_some() || refused || *end == StreamEnd::Aborted
        {
            return;
        }
        let severity = if matches!(end, StreamEnd::Broken(_)) && stream.head.is_none() {
            // No response head at all: the request failed outright.
            Severity::Fail
        } else {
            Severity::Warn
        };
        self.rule(
            severity,
            Req::Http09,
            format!("{channel} (request {key}) ended without its response ({}); a stream opened by a request carries its response", end),
        );
    }

    /// Where a message came: a response on its own request's stream, progress on the stream
    /// of the request it reports on, nothing twice on two streams.
    pub(crate) fn judge_channel(&mut self, index: usize) {
        let entry = &self.transcript[index];
        let channel = entry.channel;
        if channel == Channel::Stdio {
            return;
        }
        let Some(value) = entry.value.clone() else {
            return;
        };
        // A response, or a progress notification, is one message: seen twice in a session
        // it was sent on two streams (other notifications may repeat on purpose).
        let is_progress =
            value.get("method").and_then(Value::as_str) == Some("notifications/progress");
        let is_response = value.get("method").is_none();
        if !(is_response || is_progress) {
            return;
        }
        let text = format!("{}\u{0}{}", entry.session, canonical(&value));
        match self.streams.seen.get(&text) {
            Some(first) if *first != channel => {
                let first = *first;
                self.rule(
                    Severity::Fail,
                    Req::Http13,
                    format!("the same message came on {first} and on {channel}; a server sends each message on one stream only: {}", crate::rules::envelope::short(&value)),
                );
            }
            Some(_) => {}
            None => {
                self.streams.seen.insert(text, channel);
            }
        }
        let about = if is_response {
            value
                .get("id")
                .and_then(|id| self.ledger.sent(id))
                .map(|r| (self.ledger.key(&value["id"]), r.channel))
        } else {
            value
                .pointer("/params/progressToken")
                .and_then(|t| self.ledger.tokens.get(&self.ledger.key(t)))
                .and_then(|key| self.ledger.sent.get(key).map(|r| (key.clone(), r.channel)))
        };
        let Some((key, own)) = about else {
            return;
        };
        // A task's progress outlives its call's stream (2025-11-25): any stream of the
        // session may carry it.
        if own == channel || (is_progress && self.owns_task(&key)) {
            return;
        }
        match channel {
            Channel::Get(_) if is_response => self.rule(
                Severity::Fail,
                Req::Http12,
                format!("the response to request {key} came on {channel}; a GET stream carries no responses (it belongs on {own})"),
            ),
            Channel::Get(_) => {}
            _ => self.rule(
                Severity::Warn,
                Req::Http09,
                format!(
                    "a {} for request {key} came on {channel}, which another message opened; it belongs on {own}",
                    if is_response { "response" } else { "progress notification" }
                ),
            ),
        }
    }

    /// Request streams that carried their response as SSE and stayed open after it: the server
    /// SHOULD close such a stream once the response is sent (HTTP-09). Each gets a grace after
    /// its response to end (the HTTP `T_grace`, longer by the target's waits for a CPU).
    pub(crate) async fn streams_left_open(&mut self) {
        if !self.streams.over_http {
            return;
        }
        let grace = self.grace_after(self.waited());
        let open_after_response = |e: &Self| -> Vec<(String, Channel, Duration)> {
            let mut open: Vec<(String, Channel, Duration)> = e
                .ledger
                .sent
                .iter()
                .filter(|(_, r)| r.answers > 0 && r.cancel.is_none())
                .filter_map(|(key, r)| {
                    let stream = e.streams.by.get(&r.channel)?;
                    let sse = stream.head.as_ref().is_some_and(|(_, h)| {
                        h.content_type.as_deref() == Some("text/event-stream")
                    });
                    let answer = e.transcript.get(r.answer?)?;
                    (sse && stream.end.is_none() && answer.channel == r.channel)
                        .then(|| (key.clone(), r.channel, answer.at))
                })
                .collect();
            open.sort_by_key(|(_, _, at)| *at);
            open
        };
        let Some(last) = open_after_response(self).iter().map(|(_, _, at)| *at).max() else {
            return;
        };
        let until = Deadline::from_std(self.io.started() + last + grace);
        while !open_after_response(self).is_empty() && self.next(until).await {}
        for (key, channel, _) in open_after_response(self) {
            self.rule(
                Severity::Warn,
                Req::Http09,
                format!(
                    "{channel} (request {key}) stayed open for more than {} after it carried its response; the server should close a request's stream once its response is sent",
                    crate::transcript::span(grace)
                ),
            );
        }
    }

    /// What became of the streams of cancelled requests: closed without a response, or left
    /// open, are both allowed up to 2025-11-25 (AMB-04); a response was judged when it came.
    pub(crate) fn cancelled_streams(&mut self) {
        if !self.streams.over_http {
            return;
        }
        let mut notes = vec![];
        for (key, request) in &self.ledger.sent {
            if request.cancel.is_none() || request.answers > 0 || request.answered_before_cancel {
                continue;
            }
            let Some(stream) = self.streams.by.get(&request.channel) else {
                continue;
            };
            let fate = match &stream.end {
                None => "stayed open without a response until the end of the case".to_string(),
                Some(StreamEnd::Aborted) => continue,
                Some(end) => format!("{} without a response after the cancel", end_words(end)),
            };
            notes.push(format!(
                "the stream of request {key} ({}) {fate} (allowed, AMB-04)",
                request.channel
            ));
        }
        notes.sort();
        for note in notes {
            self.rule(Severity::Note, Req::Http17, note);
        }
    }

    /// Whether an error status's body answers the request (the stateless era, HTTP-19).
    fn errors_answer(&self) -> bool {
        self.protocol()
            .is_some_and(|v| v.era() == crate::era::Era::Stateless)
    }

    /// The agreed version, learned from an `initialize` answer, goes to the transport.
    pub(crate) fn agreed_version(&mut self, value: &Value) {
        if let Some(version) = value
            .pointer("/result/protocolVersion")
            .and_then(Value::as_str)
        {
            self.io.agreed(version);
        }
    }
}

fn end_words(end: &StreamEnd) -> String {
    match end {
        StreamEnd::Complete => "ended".into(),
        other => other.to_string(),
    }
}
