//! What the engine knows about HTTP channels, and the proofs it can still get without an
//! ordered stream.
//!
//! Over Streamable HTTP every message is its own POST, so the engine keeps, per channel, what
//! opened it, its status, what came on it and how it ended ([`Streams`]), shows the channel
//! and the status on every line of the transcript and the diff, and replaces the stdio
//! barrier's proof: across POSTs the order of arrival proves nothing about the order of
//! reading, so a cancel counts as read once its POST was accepted (`202`) and a grace window
//! `T_grace = max(500 ms, 4 × RTT)` passed (the ledger's `CancelMark::accepted`); where
//! nothing proves it, only the witness can tell, and findings say so.
mod follow;
mod settle;

use crate::engine::parts::clock;
use crate::era::{Era, ProtocolVersion};
use crate::facts::ledger::SentRequest;
use crate::facts::streams::{Opened, Stream};
use crate::transport::{Channel, Head, StreamEnd};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

/// The least grace window over HTTP (spec-requirements §0: HTTP `T_grace`).
pub const MIN_GRACE: Duration = Duration::from_millis(500);
/// The least time the harness allows a request to reach the server when its response head
/// does not show it did.
pub const MIN_ARRIVAL: Duration = Duration::from_millis(100);

/// Whether an HTTP status matches a `! status` word (`404`, `4xx`).
pub fn status_matches(codes: &[String], code: u16) -> bool {
    let code = code.to_string();
    codes
        .iter()
        .any(|c| *c == code || (c.ends_with("xx") && code.starts_with(&c[..1])))
}

/// Every HTTP channel of one case, and what proofs they gave. The engine tells it what
/// happened on a channel (opened, its head, its body, its end, a message on it) and which
/// session the steps are in; the rules read the channels through [`Streams::channels`].
#[derive(Debug)]
pub struct Streams {
    /// The channels, by channel.
    by: HashMap<Channel, Stream>,
    /// Round trips measured so far (accepted notifications, answered probes).
    rtt: Vec<Duration>,
    /// The sessions the case opened, by index (`main`, the one the transport opens, first).
    names: Vec<String>,
    /// The current session.
    session: usize,
    /// The statuses a `! status` right after the next request expects.
    next_status: Option<Vec<String>>,
    /// The channel of the last request the case made.
    last: Option<Channel>,
    /// Cancels already said to be unproven, or to rest on a closed stream.
    unproven: HashSet<usize>,
    /// Messages seen on some channel (canonical text → first channel), for HTTP-13.
    seen: HashMap<String, Channel>,
    /// Sessions the case ended with a DELETE the server accepted.
    deleted: HashSet<usize>,
    /// Sessions in which a request did not show it arrived within its arrival window: the
    /// server holds back a response's head until it has something to send.
    holds_heads: HashSet<usize>,
}

impl Default for Streams {
    /// No channel yet, in the session the transport opens (`main`). Over stdio there is no
    /// other: only `! session` (HTTP) adds one.
    fn default() -> Streams {
        Streams {
            by: HashMap::new(),
            rtt: vec![],
            names: vec!["main".into()],
            session: 0,
            next_status: None,
            last: None,
            unproven: HashSet::new(),
            seen: HashMap::new(),
            deleted: HashSet::new(),
            holds_heads: HashSet::new(),
        }
    }
}

impl Streams {
    /// The channel `channel`, once opened.
    pub fn stream(&self, channel: Channel) -> Option<&Stream> {
        self.by.get(&channel)
    }

    /// Every channel of the case, for the rules to read.
    pub fn channels(&self) -> &HashMap<Channel, Stream> {
        &self.by
    }

    /// The session a channel belongs to.
    pub fn session_of(&self, channel: Channel) -> usize {
        self.by.get(&channel).map_or(0, |s| s.session)
    }

    /// The session the steps are in.
    pub fn session(&self) -> usize {
        self.session
    }

    /// The ledger scope of session `session`: its name, but for the first session, whose ids
    /// are bare.
    pub fn scope(&self, session: usize) -> Option<&str> {
        (session > 0)
            .then(|| self.names.get(session).map(String::as_str))
            .flatten()
    }

    /// Whether the case has opened a session named `name`.
    pub fn knows(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
    }

    /// The steps go on in session `name` (opened now if it is new); its index.
    pub fn enter(&mut self, name: &str) -> usize {
        self.session = match self.names.iter().position(|n| n == name) {
            Some(index) => index,
            None => {
                self.names.push(name.to_string());
                self.names.len() - 1
            }
        };
        self.session
    }

    /// The statuses the next request's `! status` line expects, if one follows it.
    pub fn expect_status(&mut self, codes: Option<Vec<String>>) {
        self.next_status = codes;
    }

    /// Whether a `! status` line follows the request about to be made.
    pub fn status_judged(&self) -> bool {
        self.next_status.is_some()
    }

    /// The channel of the last request the case made.
    pub fn last(&self) -> Option<Channel> {
        self.last
    }

    /// The harness opened `channel` with transcript entry `entry` (`internal`: not a case's
    /// line), shown in the diff as `base`. Returns the status its line shows until one comes:
    /// the one a `! status` line expects, or `202` where the protocol wants that.
    pub fn open(
        &mut self,
        channel: Channel,
        entry: usize,
        opened: Opened,
        internal: bool,
        base: String,
    ) -> Option<String> {
        let case_expects = if internal {
            None
        } else {
            self.last = Some(channel);
            self.next_status.take()
        };
        let shown_status = case_expects
            .as_ref()
            .map(|codes| codes.join("|"))
            .or_else(|| opened.wants_accepted().then(|| "202".to_string()));
        let stream = Stream {
            entry,
            sent: clock::now(),
            opened,
            session: self.session,
            head: None,
            messages: 0,
            end: None,
            bytes: 0,
            expected: case_expects,
            shown_status: shown_status.clone(),
            body: None,
            base,
        };
        self.by.insert(channel, stream);
        shown_status
    }

    /// The head of `channel` came at `now`. Returns the transcript entry of a cancel it
    /// accepted (`202`); an accepted notification measures a round trip.
    pub fn headed(&mut self, channel: Channel, head: &Head, now: Instant) -> Option<usize> {
        let stream = self.by.get_mut(&channel)?;
        stream.head = Some((now, head.clone()));
        if !stream.opened.wants_accepted() || head.code != 202 {
            return None;
        }
        let rtt = now.duration_since(stream.sent);
        let cancel = matches!(
            stream.opened,
            Opened::Notification {
                cancels: Some(_),
                ..
            }
        )
        .then_some(stream.entry);
        self.sample(rtt);
        cancel
    }

    /// A body that carried no message came on `channel` (the first one is kept).
    pub fn body(&mut self, channel: Channel, text: &str) {
        if let Some(stream) = self.by.get_mut(&channel) {
            stream.body.get_or_insert_with(|| text.to_string());
        }
    }

    /// `channel` ended after `bytes` body bytes. True when it ended without a head.
    pub fn ended(&mut self, channel: Channel, end: &StreamEnd, bytes: u64) -> bool {
        let Some(stream) = self.by.get_mut(&channel) else {
            return false;
        };
        stream.end = Some(end.clone());
        stream.bytes = bytes;
        stream.head.is_none()
    }

    /// A message came on `channel`.
    pub fn message(&mut self, channel: Channel) {
        if let Some(stream) = self.by.get_mut(&channel) {
            stream.messages += 1;
        }
    }

    /// The channel a message with this canonical text (and session) came on first; `channel`
    /// when it is the first.
    pub fn seen_first(&mut self, text: String, channel: Channel) -> Option<Channel> {
        let first = self.seen.get(&text).copied();
        if first.is_none() {
            self.seen.insert(text, channel);
        }
        first
    }

    /// The current session was ended with a DELETE the server accepted.
    pub fn deleted(&mut self) {
        self.deleted.insert(self.session);
    }

    /// Whether the case ended the current session.
    pub fn is_deleted(&self) -> bool {
        self.deleted.contains(&self.session)
    }

    /// True the first time the cancel at transcript entry `at` is said to be unproven.
    pub fn note_unproven(&mut self, at: usize) -> bool {
        self.unproven.insert(at)
    }

    /// A request on `channel` went its whole arrival window without showing it arrived: its
    /// session's server holds back heads.
    pub fn holds_heads(&mut self, channel: Channel) {
        let session = self.session_of(channel);
        self.holds_heads.insert(session);
    }

    /// How long a request of the current session, at protocol `version`, may take to show it
    /// arrived. A server that has answered a request of this session with an SSE stream shows
    /// the head of the next one at once, however busy the machine: it gets `reply`
    /// (`--reply-timeout`, stretched for a busy machine). One that answers with JSON shows
    /// nothing before the answer, so nothing can be awaited beyond the arrival window
    /// `max(100 ms, 4 × RTT)`; a server not yet seen answering a request gets `reply` too,
    /// until a request of the session has gone that long without showing it arrived: such a
    /// server holds back a head until it has something to send (the TypeScript SDK 2.x's
    /// stateless fallback does, for a call that sends nothing), so waiting for heads only
    /// delays the case (22 cancels × `--reply-timeout` ran a correct server past its time
    /// limit) and its later requests get the arrival window. In 2026-07-28 a server may hold
    /// back a call's head until its result (rmcp, the Python SDK and the TypeScript SDK 2.x
    /// do, for a call that sends no progress).
    pub fn arrival_window(&self, version: Option<ProtocolVersion>, reply: Duration) -> Duration {
        let stateless = version.is_some_and(|v| v.era() == Era::Stateless);
        let session = self.session;
        if self.holds_heads.contains(&session) {
            return self.arrival();
        }
        let answered = |kind: &str| {
            self.by.values().any(|s| {
                s.session == session
                    && matches!(s.opened, Opened::Request(_))
                    && s.head.as_ref().is_some_and(|(_, h)| {
                        (200..300).contains(&h.code) && h.content_type.as_deref() == Some(kind)
                    })
            })
        };
        if stateless || (answered("application/json") && !answered("text/event-stream")) {
            self.arrival()
        } else {
            reply
        }
    }

    /// Whether `channel` is still waiting for its head while the server answers requests of
    /// the current session with `application/json`: progress has no stream to come on.
    pub fn no_stream_for_progress(&self, channel: Channel) -> bool {
        let Some(stream) = self.by.get(&channel) else {
            return false;
        };
        let session = self.session;
        let json = self.by.values().any(|s| {
            s.session == session
                && s.head.as_ref().is_some_and(|(_, h)| {
                    h.code == 200 && h.content_type.as_deref() == Some("application/json")
                })
        });
        stream.head.is_none() && json
    }

    /// Why a response to the harness's `request` can no longer come: its stream was refused
    /// or ended without it.
    pub fn unanswerable(&self, request: &SentRequest) -> Option<String> {
        if request.answers > 0 {
            return None;
        }
        let stream = self.by.get(&request.channel)?;
        if stream.messages > 0 && stream.end.is_none() {
            return None;
        }
        stream
            .dead_end()
            .map(|why| format!("its {} {why}", request.channel))
    }

    /// Adds a round trip.
    pub fn sample(&mut self, rtt: Duration) {
        self.rtt.push(rtt);
    }

    fn median_rtt(&self) -> Duration {
        let mut samples = self.rtt.clone();
        samples.sort();
        samples.get(samples.len() / 2).copied().unwrap_or_default()
    }

    /// `T_grace = max(500 ms, 4 × RTT)`, RTT the median round trip so far: a slow machine
    /// widens the window instead of flipping a verdict.
    pub fn grace(&self) -> Duration {
        MIN_GRACE.max(self.median_rtt() * 4)
    }

    /// How long a request may take to reach the server when nothing shows it did (a JSON
    /// response comes only with the answer): `max(100 ms, 4 × RTT)`.
    pub fn arrival(&self) -> Duration {
        MIN_ARRIVAL.max(self.median_rtt() * 4)
    }
}

/// What a message the harness sends opens, for the ledger key `key` of ids.
fn opened_by(value: Option<&Value>, key: impl Fn(&Value) -> String) -> Opened {
    let Some(message) = value.and_then(Value::as_object) else {
        return Opened::Other;
    };
    let id = message
        .get("id")
        .filter(|id| id.is_string() || id.is_number());
    match (message.get("method").and_then(Value::as_str), id) {
        (Some(_), Some(id)) => Opened::Request(key(id)),
        (Some(method), None) => Opened::Notification {
            method: method.to_string(),
            cancels: (method == "notifications/cancelled")
                .then(|| message.get("params").and_then(|p| p.get("requestId")))
                .flatten()
                .filter(|id| id.is_string() || id.is_number())
                .map(&key),
        },
        (None, _) if message.contains_key("result") || message.contains_key("error") => {
            Opened::Response
        }
        _ => Opened::Other,
    }
}

#[cfg(test)]
mod tests;
