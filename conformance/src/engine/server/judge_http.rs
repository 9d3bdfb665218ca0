//! The engine's side of the standing rules for a server over Streamable HTTP: gathers what the
//! rules of `rules::http` judge by (the channel's bookkeeping, the ledger entry it is about,
//! the era) and applies their findings; waits, when the case has ended, for request streams
//! left open after their response.

use super::ServerTarget;
use crate::engine::Engine;
use crate::era::Era;
use crate::facts::ledger::key_in;
use crate::facts::streams::Opened;
use crate::outcome::{FindingKind, Severity};
use crate::pattern::canonical;
use crate::rules::http::{self, Once, StatusFacts};
use crate::transport::{Channel, Event, Head, StreamEnd, Transport};
use serde_json::Value;
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
        let stream = self.streams.stream(channel);
        let about = stream.and_then(|s| match &s.opened {
            Opened::Request(key) => Some(key),
            Opened::Notification { cancels, .. } => cancels.as_ref(),
            _ => None,
        });
        let problems = http::status(&StatusFacts {
            channel,
            head,
            stream,
            request: about.and_then(|key| self.ledger.request(key)),
            stateless: self.errors_answer(),
        });
        self.problems(problems);
    }

    fn judge_end(&mut self, channel: Channel, end: &StreamEnd, bytes: u64) {
        let Some(stream) = self.streams.stream(channel) else {
            return;
        };
        let accepted_body = http::accepted_body(channel, stream, bytes);
        self.problems(accepted_body);
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
        let Some(stream) = self.streams.stream(channel) else {
            return;
        };
        let Opened::Request(key) = &stream.opened else {
            return;
        };
        let Some(request) = self.ledger.request(key) else {
            return;
        };
        let answer = request.answer.map(|index| self.value(index));
        let stateless = self.errors_answer();
        let problem = http::request_end(
            channel,
            end,
            stream,
            (key, request),
            answer.as_ref(),
            stateless,
        );
        self.problems(problem);
    }

    /// Where a message came: a response on its own request's stream, progress on the stream
    /// of the request it reports on, nothing twice on two streams.
    /// Its ids are scoped as `scope`.
    pub(crate) fn judge_channel(&mut self, index: usize, scope: Option<&str>) {
        let entry = &self.transcript[index];
        let channel = entry.channel;
        if channel == Channel::Stdio {
            return;
        }
        let Some(value) = entry.value.as_ref() else {
            return;
        };
        let Some(once) = Once::of(value) else {
            return;
        };
        let text = format!("{}\u{0}{}", entry.session, canonical(value));
        let first = self.streams.seen_first(text, channel);
        let about = match once {
            Once::Response => value
                .get("id")
                .and_then(|id| self.ledger.sent_in(scope, id))
                .map(|r| (key_in(scope, &value["id"]), r.channel)),
            Once::Progress => value
                .pointer("/params/progressToken")
                .and_then(|t| self.ledger.token_in(scope, t))
                .and_then(|key| self.ledger.request(key).map(|r| (key.clone(), r.channel))),
        };
        // A task's progress outlives its call's stream (2025-11-25).
        let task =
            once == Once::Progress && about.as_ref().is_some_and(|(key, _)| self.owns_task(key));
        let about = about.as_ref().map(|(key, own)| (key.as_str(), *own));
        let problems = http::channel(channel, value, once, first, about, task);
        self.problems(problems);
    }

    /// Request streams that carried their response as SSE and stayed open after it: the server
    /// SHOULD close such a stream once the response is sent (HTTP-09). Each gets a grace after
    /// its response to end (the HTTP `T_grace`, longer by the target's waits for a CPU).
    pub(crate) async fn streams_left_open(&mut self) {
        if !self.io.channel_per_request() {
            return;
        }
        let before = self.waited();
        let grace = self.waits().grace_after(before);
        let open = |e: &Self| {
            http::left_open(
                e.ledger.sent_requests(),
                e.streams.channels(),
                &e.transcript,
            )
        };
        let Some(last) = open(self).iter().map(|(_, _, at)| *at).max() else {
            return;
        };
        let until = Deadline::from_std(self.io.started() + last + grace);
        while !open(self).is_empty() && self.next(until).await {}
        for (key, channel, _) in open(self) {
            self.problems([http::left_open_problem(&key, channel, grace)]);
        }
    }

    /// What became of the streams of cancelled requests (see [`http::cancelled_streams`]).
    pub(crate) fn cancelled_streams(&mut self) {
        if !self.io.channel_per_request() {
            return;
        }
        let notes = http::cancelled_streams(self.ledger.sent_requests(), self.streams.channels());
        self.problems(notes);
    }

    /// Whether an error status's body answers the request (the stateless era, HTTP-19).
    fn errors_answer(&self) -> bool {
        self.protocol().is_some_and(|v| v.era() == Era::Stateless)
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
