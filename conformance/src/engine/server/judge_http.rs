//! The engine's side of the standing rules for a server over Streamable HTTP: gathers what the
//! rules of `rules::http` judge by (the channel's bookkeeping, the ledger entry it is about,
//! the era) and applies their findings; waits, when the case has ended, for request streams
//! left open after their response.

use super::ServerTarget;
use crate::engine::http::Streams;
use crate::engine::parts::transcript::Transcript;
use crate::engine::Engine;
use crate::facts::ledger::{key_in, Ledger};
use crate::facts::streams::Opened;
use crate::outcome::{FindingKind, Severity};
use crate::pattern::canonical;
use crate::rules::envelope::Problem;
use crate::rules::http::{self, Once, StatusFacts};
use crate::transport::{Channel, Head, StreamEnd, Transport};
use tokio::time::Instant as Deadline;

impl<T: Transport> Engine<'_, T, ServerTarget> {
    /// Judges the end of `channel` after `bytes` body bytes (`stateless`: an error status's
    /// body may answer its request, HTTP-19).
    pub(crate) fn judge_end(
        &mut self,
        channel: Channel,
        end: &StreamEnd,
        bytes: u64,
        stateless: bool,
    ) {
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
        let answer = request.answer.map(|index| self.transcript.message(index));
        let problem = http::request_end(channel, end, stream, (key, request), answer, stateless);
        self.problems(problem);
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
}

/// What `channel`'s status `head` breaks (see [`http::status`]), `stateless` when an error
/// status's body may answer the request (HTTP-19).
pub(super) fn status(
    streams: &Streams,
    ledger: &Ledger,
    channel: Channel,
    head: &Head,
    stateless: bool,
) -> Vec<Problem> {
    let stream = streams.stream(channel);
    let about = stream.and_then(|s| match &s.opened {
        Opened::Request(key) => Some(key),
        Opened::Notification { cancels, .. } => cancels.as_ref(),
        _ => None,
    });
    http::status(&StatusFacts {
        channel,
        head,
        stream,
        request: about.and_then(|key| ledger.request(key)),
        stateless,
    })
}

/// Where the message at transcript index `index` came (its ids scoped as `scope`): a response
/// on its own request's stream, progress on the stream of the request it reports on, nothing
/// twice on two streams (which `streams` notes). `core`: tasks are the core protocol's
/// (2025-11-25), whose progress outlives its call's stream.
pub(super) fn channel(
    streams: &mut Streams,
    ledger: &Ledger,
    transcript: &Transcript,
    index: usize,
    scope: Option<&str>,
    core: bool,
) -> Vec<Problem> {
    let entry = &transcript[index];
    let channel = entry.channel;
    if channel == Channel::Stdio {
        return vec![];
    }
    let Some(value) = entry.value.as_ref() else {
        return vec![];
    };
    let Some(once) = Once::of(value) else {
        return vec![];
    };
    let text = format!("{}\u{0}{}", entry.session, canonical(value));
    let first = streams.seen_first(text, channel);
    let about = match once {
        Once::Response => value
            .get("id")
            .and_then(|id| ledger.sent_in(scope, id))
            .map(|r| (key_in(scope, &value["id"]), r.channel)),
        Once::Progress => value
            .pointer("/params/progressToken")
            .and_then(|t| ledger.token_in(scope, t))
            .and_then(|key| ledger.request(key).map(|r| (key.clone(), r.channel))),
    };
    let task = once == Once::Progress
        && core
        && about
            .as_ref()
            .is_some_and(|(key, _)| ledger.task_of(key).is_some());
    let about = about.as_ref().map(|(key, own)| (key.as_str(), *own));
    http::channel(channel, value, once, first, about, task)
}
