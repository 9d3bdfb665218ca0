//! What a transcript says about cancellation, read back from the messages alone: which
//! entries are cancels, which request each cancels, which later answer proves the cancel was
//! read, and which messages about a cancelled request came after its cancel or after that
//! proof. The HTML report marks them on its diagrams and the timings are measured from them,
//! so both rest on the transcript as recorded and nothing else.
//!
//! A cancel is a `notifications/cancelled` (either side may send one), or where the
//! 2026-07-28 era cancels by closing a request's stream over HTTP, the marker the engine
//! records for that (`[cancel ID: closed the stream of POST n]` from the harness,
//! `[closed the stream of request ID]` from a client; see `engine/cancel.rs` and
//! `engine/client_stateless.rs`). Its proof is the first answer, after the cancel, to a
//! request the canceller sent after it: on stdio that answer proves the cancel was read (the
//! barrier of `engine/proof.rs`); over HTTP the engine sends that request only once the grace
//! after the cancel has passed, so the same answer is where lateness starts there too.

use crate::transcript::{Direction, Entry};
use crate::transport::Channel;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::time::Duration;

/// How a diagram marks an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mark {
    /// A message about a cancelled request that came after its cancel, before the proof that
    /// the cancel was read: it may have crossed the cancel.
    AfterCancel,
    /// A message about a cancelled request that came after the proof: the cancel had been
    /// read, so the rules judge it late.
    Late,
    /// The answer that proves a cancel was read.
    Proof,
    /// A cancel.
    Cancel,
}

impl Mark {
    /// The word the JSON report uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Mark::AfterCancel => "afterCancel",
            Mark::Late => "late",
            Mark::Proof => "proof",
            Mark::Cancel => "cancel",
        }
    }
}

/// One cancel found in a transcript.
#[derive(Debug, Clone, PartialEq)]
pub struct Cancel {
    /// The transcript index of the cancel.
    pub index: usize,
    /// Who cancelled: `Sent` for the harness, `Received` for the target.
    pub by: Direction,
    /// The id of the request it names (as the cancel names it).
    pub request_id: Value,
    /// The transcript index of the request it cancels, when the canceller sent one with that
    /// id (with the same id type) before it.
    pub request: Option<usize>,
    /// The method of that request.
    pub method: Option<String>,
    /// The request had been answered before the cancel: the cancel came too late to matter.
    pub answered_before: bool,
    /// The transcript index of the proof that the cancel was read, if one came.
    pub proof: Option<usize>,
    /// Transcript indexes of the other side's messages about the request after the cancel.
    pub after: Vec<usize>,
}

impl Cancel {
    /// Whether the message at `index` (one of [`Cancel::after`]) came after the proof.
    pub fn is_late(&self, transcript: &[Entry], index: usize) -> bool {
        self.proof
            .is_some_and(|proof| transcript[index].at > transcript[proof].at)
    }

    /// The last message about the request after the cancel, by time.
    pub fn last_after(&self, transcript: &[Entry]) -> Option<usize> {
        self.after
            .iter()
            .copied()
            .max_by_key(|&i| (transcript[i].at, i))
    }
}

/// The method of a message, if it has one.
pub fn method(entry: &Entry) -> Option<&str> {
    entry.value.as_ref()?.get("method")?.as_str()
}

/// The id of a request or a response (not `null`).
pub fn id(entry: &Entry) -> Option<&Value> {
    entry.value.as_ref()?.get("id").filter(|id| !id.is_null())
}

/// Whether an entry is a request: a method and an id.
pub fn is_request(entry: &Entry) -> bool {
    method(entry).is_some() && id(entry).is_some()
}

/// Whether an entry is a response: an id, a result or an error, and no method.
pub fn is_response(entry: &Entry) -> bool {
    let Some(value) = &entry.value else {
        return false;
    };
    method(entry).is_none()
        && id(entry).is_some()
        && (value.get("result").is_some() || value.get("error").is_some())
}

/// The progress token a request asks for (`params._meta.progressToken`).
fn progress_token(entry: &Entry) -> Option<&Value> {
    entry.value.as_ref()?.pointer("/params/_meta/progressToken")
}

/// The direction of the other side.
fn other(direction: Direction) -> Direction {
    match direction {
        Direction::Sent => Direction::Received,
        _ => Direction::Sent,
    }
}

/// The id a stream-closing cancel marker names, from its text, when the entry is one.
fn closing_marker(entry: &Entry) -> Option<&str> {
    if entry.value.is_some() {
        return None;
    }
    let text = entry.text.as_str();
    let rest = match entry.direction {
        Direction::Sent => text.strip_prefix("[cancel ")?,
        Direction::Received => text.strip_prefix("[closed the stream of request ")?,
        Direction::Transport => return None,
    };
    Some(rest.split([':', ']']).next().unwrap_or(rest))
}

/// Every cancel in a transcript, in order, with its request, its proof and what came after.
pub fn cancels(transcript: &[Entry]) -> Vec<Cancel> {
    let mut found = vec![];
    for (index, entry) in transcript.iter().enumerate() {
        let (request, request_id) = if method(entry) == Some("notifications/cancelled") {
            let Some(named) = entry
                .value
                .as_ref()
                .and_then(|v| v.pointer("/params/requestId"))
            else {
                continue;
            };
            let request = transcript[..index].iter().rposition(|e| {
                e.direction == entry.direction
                    && e.session == entry.session
                    && is_request(e)
                    && id(e) == Some(named)
            });
            (request, named.clone())
        } else if let Some(named) = closing_marker(entry) {
            // The request that opened the closed stream.
            let request = transcript[..index].iter().rposition(|e| {
                e.direction == entry.direction && e.channel == entry.channel && is_request(e)
            });
            let request_id = request
                .and_then(|r| id(&transcript[r]).cloned())
                .unwrap_or_else(|| Value::String(named.to_string()));
            (request, request_id)
        } else {
            continue;
        };
        found.push(follow(
            transcript,
            index,
            entry.direction,
            request,
            request_id,
        ));
    }
    found
}

/// What came of the cancel at `index`: whether its request was answered before it, the
/// proof, and the other side's messages about the request after it.
fn follow(
    transcript: &[Entry],
    index: usize,
    by: Direction,
    request: Option<usize>,
    request_id: Value,
) -> Cancel {
    let worker = other(by);
    let asked = request.map(|r| &transcript[r]);
    let token = asked.and_then(progress_token);
    let session = asked.map_or(transcript[index].session, |r| r.session);
    let about = |e: &Entry| {
        if e.direction != worker || e.session != session {
            return false;
        }
        if is_response(e) {
            return asked.is_some() && id(e) == Some(&request_id);
        }
        let progress = method(e) == Some("notifications/progress")
            && token.is_some()
            && e.value
                .as_ref()
                .and_then(|v| v.pointer("/params/progressToken"))
                == token;
        // Over HTTP, whatever came on the request's own stream is about it.
        let own_stream =
            asked.is_some_and(|r| r.channel != Channel::Stdio && e.channel == r.channel);
        progress || (own_stream && e.value.is_some())
    };
    // Before or after the cancel by time, not by place in the transcript: a message the
    // transport read before the harness wrote the cancel may be recorded after it.
    let cancel_at = transcript[index].at;
    let answered_before = request.is_some_and(|r| {
        transcript[r + 1..]
            .iter()
            .any(|e| about(e) && is_response(e) && e.at <= cancel_at)
    });
    // Requests the canceller sent after the cancel, by id and session.
    let mut later: HashSet<(String, usize)> = HashSet::new();
    let mut proof = None;
    let mut after = vec![];
    let from = request.map_or(index, |r| r + 1);
    for (i, e) in transcript.iter().enumerate().skip(from) {
        if about(e) && e.at > cancel_at {
            after.push(i);
        }
        if i <= index {
            continue;
        }
        if e.direction == by && is_request(e) {
            if let Some(id) = id(e) {
                later.insert((id.to_string(), e.session));
            }
        }
        if by == Direction::Sent
            && proof.is_none()
            && e.direction == worker
            && is_response(e)
            && id(e).is_some_and(|id| later.contains(&(id.to_string(), e.session)))
        {
            proof = Some(i);
        }
    }
    Cancel {
        index,
        by,
        request_id,
        request,
        method: asked.and_then(method).map(str::to_string),
        answered_before,
        proof,
        after,
    }
}

/// The mark of every marked entry, by transcript index; where an entry has several, the
/// strongest (a cancel over a proof over a late message).
pub fn marks(transcript: &[Entry], cancels: &[Cancel]) -> HashMap<usize, Mark> {
    let mut marks: HashMap<usize, Mark> = HashMap::new();
    let mut put = |index: usize, mark: Mark| {
        let slot = marks.entry(index).or_insert(mark);
        *slot = (*slot).max(mark);
    };
    for cancel in cancels {
        put(cancel.index, Mark::Cancel);
        if let Some(proof) = cancel.proof {
            put(proof, Mark::Proof);
        }
        for &i in &cancel.after {
            let late = cancel.is_late(transcript, i);
            put(i, if late { Mark::Late } else { Mark::AfterCancel });
        }
    }
    marks
}

/// Time between two entries (zero when the second came first).
pub fn between(transcript: &[Entry], from: usize, to: usize) -> Duration {
    transcript[to].at.saturating_sub(transcript[from].at)
}

#[cfg(test)]
pub(crate) mod tests;
