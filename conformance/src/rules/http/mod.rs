//! What a server over Streamable HTTP must respect beyond its messages, whatever the case:
//! `202` with an empty body for notifications and responses (HTTP-07), `application/json` or
//! `text/event-stream` for requests (HTTP-08), a stream that carries its own request's
//! messages (HTTP-09) and never a response on a GET stream (HTTP-12), no message on two
//! streams (HTTP-13), session ids of visible ASCII (HTTP-16), and what became of the stream
//! of a cancelled request (AMB-04, noted).
//!
//! Each rule is a function over the channel's bookkeeping ([`Stream`]), the ledger entry it is
//! about and the era, returning findings; the engine gathers the facts and applies the verdict
//! (`engine/server/judge_http.rs`).
//!
//! - [`status`]: a channel's response head.
//! - [`accepted_body`], [`request_end`]: a channel's end.
//! - [`channel`]: where a response or a progress notification came.
//! - [`left_open`], [`left_open_problem`]: request streams that stayed open after their response.
//! - [`cancelled_streams`]: what became of the streams of cancelled requests.

mod status;
pub use status::{status, StatusFacts};

use crate::exchange::{Channel, StreamEnd};
use crate::facts::ledger::SentRequest;
use crate::facts::streams::Stream;
use crate::outcome::Severity;
use crate::requirement::Req;
use crate::rules::envelope::{short, Problem};
use crate::transcript::Entry;
use serde_json::Value;
use std::collections::HashMap;
use std::time::Duration;

/// A `202` that came with a body, on a channel that carried only a notification or a response
/// (`bytes` of body in all).
pub fn accepted_body(channel: Channel, stream: &Stream, bytes: u64) -> Option<Problem> {
    let accepted = stream.head.as_ref().is_some_and(|(_, h)| h.code == 202);
    (accepted && stream.opened.wants_accepted() && bytes > 0).then(|| {
        Problem::new(
            Severity::Fail,
            Req::Http07,
            format!("{channel} got 202 with a body of {bytes} bytes; 202 comes with an empty body"),
        )
    })
}

/// The end of a request's stream (`key` names the request, `request` its ledger entry, `answer`
/// its first response): in the stateless era an error status's body must carry the JSON-RPC
/// error that answers the request (HTTP-08); otherwise a stream that ended without its response
/// breaks HTTP-09 (a failure when no head came at all).
pub fn request_end(
    channel: Channel,
    end: &StreamEnd,
    stream: &Stream,
    (key, request): (&str, &SentRequest),
    answer: Option<&Value>,
    stateless: bool,
) -> Option<Problem> {
    let client_error = stream
        .head
        .as_ref()
        .filter(|(_, h)| (400..500).contains(&h.code))
        .map(|(_, h)| h.summary());
    if let (Some(status), true) = (client_error, stateless) {
        if stream.expected.is_some() || request.cancel.is_some() {
            return None;
        }
        let why = match answer {
            None => "without the JSON-RPC error that answers the request in its body",
            Some(answer) if answer.get("error").is_none() => {
                "with a result in its body; a result comes with 200"
            }
            Some(_) => return None,
        };
        return Some(Problem::new(
            Severity::Fail,
            Req::Http08,
            format!("{channel} (request {key}) got HTTP {status} {why}"),
        ));
    }
    let refused = stream
        .head
        .as_ref()
        .is_some_and(|(_, h)| !(200..300).contains(&h.code) || h.code == 202);
    if request.answers > 0 || request.cancel.is_some() || refused || *end == StreamEnd::Aborted {
        return None;
    }
    let severity = if matches!(end, StreamEnd::Broken(_)) && stream.head.is_none() {
        // No response head at all: the request failed outright.
        Severity::Fail
    } else {
        Severity::Warn
    };
    Some(Problem::new(
        severity,
        Req::Http09,
        format!("{channel} (request {key}) ended without its response ({end}); a stream opened by a request carries its response"),
    ))
}

/// A message a server sends on one stream only: seen twice in a session, it was sent on two
/// (other notifications may repeat on purpose).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Once {
    /// A response.
    Response,
    /// A progress notification.
    Progress,
}

impl Once {
    /// Which of the two a message is, if either.
    pub fn of(value: &Value) -> Option<Once> {
        match value.get("method").map(Value::as_str) {
            None => Some(Once::Response),
            Some(Some("notifications/progress")) => Some(Once::Progress),
            Some(_) => None,
        }
    }
}

/// Where a message that comes once (`once`) came: `channel`, where the same message had first
/// come on `first` (if ever); `about` is the request it answers or reports on (its ledger key,
/// and the channel that request travelled on), if the harness sent one. `task`: that request
/// created a task whose progress outlives the request's stream (2025-11-25), so any stream of
/// the session may carry its progress.
pub fn channel(
    channel: Channel,
    value: &Value,
    once: Once,
    first: Option<Channel>,
    about: Option<(&str, Channel)>,
    task: bool,
) -> Vec<Problem> {
    let mut problems = vec![];
    if let Some(first) = first.filter(|first| *first != channel) {
        problems.push(Problem::new(
            Severity::Fail,
            Req::Http13,
            format!("the same message came on {first} and on {channel}; a server sends each message on one stream only: {}", short(value)),
        ));
    }
    let Some((key, own)) = about.filter(|(_, own)| *own != channel) else {
        return problems;
    };
    let is_response = once == Once::Response;
    if !is_response && task {
        return problems;
    }
    match channel {
        Channel::Get(_) if is_response => problems.push(Problem::new(
            Severity::Fail,
            Req::Http12,
            format!("the response to request {key} came on {channel}; a GET stream carries no responses (it belongs on {own})"),
        )),
        Channel::Get(_) => {}
        _ => problems.push(Problem::new(
            Severity::Warn,
            Req::Http09,
            format!(
                "a {} for request {key} came on {channel}, which another message opened; it belongs on {own}",
                if is_response { "response" } else { "progress notification" }
            ),
        )),
    }
    problems
}

/// Request streams that carried their response as SSE and are still open: each request's key,
/// channel, and when its response came, earliest first. `sent` is the ledger, `by` the
/// channels, `transcript` what was exchanged.
pub fn left_open(
    sent: &HashMap<String, SentRequest>,
    by: &HashMap<Channel, Stream>,
    transcript: &[Entry],
) -> Vec<(String, Channel, Duration)> {
    let mut open: Vec<(String, Channel, Duration)> = sent
        .iter()
        .filter(|(_, r)| r.answers > 0 && r.cancel.is_none())
        .filter_map(|(key, r)| {
            let stream = by.get(&r.channel)?;
            let sse = stream
                .head
                .as_ref()
                .is_some_and(|(_, h)| h.content_type.as_deref() == Some("text/event-stream"));
            let answer = transcript.get(r.answer?)?;
            (sse && stream.end.is_none() && answer.channel == r.channel)
                .then(|| (key.clone(), r.channel, answer.at))
        })
        .collect();
    open.sort_by_key(|(_, _, at)| *at);
    open
}

/// A request stream that stayed open for more than `grace` after it carried its response: the
/// server SHOULD close it once the response is sent (HTTP-09).
pub fn left_open_problem(key: &str, channel: Channel, grace: Duration) -> Problem {
    Problem::new(
        Severity::Warn,
        Req::Http09,
        format!(
            "{channel} (request {key}) stayed open for more than {} after it carried its response; the server should close a request's stream once its response is sent",
            crate::transcript::span(grace)
        ),
    )
}

/// What became of the streams of cancelled requests that got no response: closed, or left
/// open, are both allowed up to 2025-11-25 (AMB-04), so each is a note; a response was judged
/// when it came. Sorted by message.
pub fn cancelled_streams(
    sent: &HashMap<String, SentRequest>,
    by: &HashMap<Channel, Stream>,
) -> Vec<Problem> {
    let mut notes = vec![];
    for (key, request) in sent {
        if request.cancel.is_none() || request.answers > 0 || request.answered_before_cancel {
            continue;
        }
        let Some(stream) = by.get(&request.channel) else {
            continue;
        };
        let fate = match &stream.end {
            None => "stayed open without a response until the end of the case".to_string(),
            Some(StreamEnd::Aborted) => continue,
            Some(end) => format!("{end} without a response after the cancel"),
        };
        notes.push(format!(
            "the stream of request {key} ({}) {fate} (allowed, AMB-04)",
            request.channel
        ));
    }
    notes.sort();
    notes
        .into_iter()
        .map(|note| Problem::new(Severity::Note, Req::Http17, note))
        .collect()
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
