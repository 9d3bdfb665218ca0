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

use super::{Engine, Side};
use crate::outcome::Severity;
use crate::transcript::Entry;
use crate::transport::{Channel, Event, Head, StreamEnd, Transport};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};
use tokio::time::Instant as Deadline;

/// The least grace window over HTTP (spec-requirements §0: HTTP `T_grace`).
pub const MIN_GRACE: Duration = Duration::from_millis(500);
/// The least time the harness allows a request to reach the server when its response head
/// does not show it did.
pub const MIN_ARRIVAL: Duration = Duration::from_millis(100);

/// What opened a channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Opened {
    /// A request of the harness; its ledger key.
    Request(String),
    /// A notification: its method, and for a cancel the ledger key of the request it names.
    Notification {
        /// The method.
        method: String,
        /// For `notifications/cancelled` with a well-formed `requestId`: that request's key.
        cancels: Option<String>,
    },
    /// The harness's answer to one of the target's requests.
    Response,
    /// A body that is no JSON-RPC message (a case testing malformed input).
    Other,
    /// A GET stream (`! listen`).
    Listen,
    /// A DELETE of a session (`! delete-session`).
    Delete,
}

impl Opened {
    /// Whether the POST carried only a notification or a response, which gets `202` (HTTP-07).
    pub fn wants_accepted(&self) -> bool {
        matches!(self, Opened::Notification { .. } | Opened::Response)
    }
}

/// One HTTP channel of a case.
#[derive(Debug, Clone)]
pub struct Stream {
    /// The transcript index of what opened it.
    pub entry: usize,
    /// When it was opened.
    pub sent: Instant,
    /// What opened it.
    pub opened: Opened,
    /// The session (index) it belongs to.
    pub session: usize,
    /// The response head and when it came.
    pub head: Option<(Instant, Head)>,
    /// Messages that came on it.
    pub messages: u32,
    /// How it ended, once it did.
    pub end: Option<StreamEnd>,
    /// Body bytes that came on it.
    pub bytes: u64,
    /// The statuses the case expects (`! status`); the standing rules leave such a status to
    /// the case.
    pub expected: Option<Vec<String>>,
    /// The status the diff expects on the line that opened it.
    pub shown_status: Option<String>,
    /// The start of a body that carried no message.
    pub body: Option<String>,
    /// The line that opened it, as the diff shows it.
    pub base: String,
}

impl Stream {
    /// Whether the target has shown it received this request: a head, a message on its
    /// stream, or its end.
    pub fn arrived(&self) -> bool {
        self.head.is_some() || self.messages > 0 || self.end.is_some()
    }

    /// Whether it was cut off or refused before its response could come.
    pub fn dead_end(&self) -> Option<String> {
        if let Some((_, head)) = &self.head {
            // An error status's JSON body may be the answer (the stateless era's errors, 400
            // with -32020 and the like): it is dead once it ended without one.
            let may_answer = head.content_type.as_deref() == Some("application/json");
            if may_answer && self.end.is_none() {
                return None;
            }
            if !(200..300).contains(&head.code) {
                let body = self
                    .body
                    .as_deref()
                    .map(|b| format!(": {}", b.chars().take(160).collect::<String>()))
                    .unwrap_or_default();
                return Some(format!("got HTTP {}{body}", head.summary()));
            }
        }
        match &self.end {
            Some(StreamEnd::Complete) if self.head.is_some() => {
                Some("ended without it".to_string())
            }
            Some(end) => Some(end.to_string()),
            None => None,
        }
    }
}

/// Whether an HTTP status matches a `! status` word (`404`, `4xx`).
pub fn status_matches(codes: &[String], code: u16) -> bool {
    let code = code.to_string();
    codes
        .iter()
        .any(|c| *c == code || (c.ends_with("xx") && code.starts_with(&c[..1])))
}

/// Every HTTP channel of one case, and what proofs they gave.
#[derive(Debug, Default)]
pub struct Streams {
    /// Whether the case runs over HTTP at all.
    pub over_http: bool,
    /// The channels, by channel.
    pub by: HashMap<Channel, Stream>,
    /// Round trips measured so far (accepted notifications, answered probes).
    rtt: Vec<Duration>,
    /// The sessions the case opened, by index (`main` first).
    pub names: Vec<String>,
    /// The current session.
    pub session: usize,
    /// The statuses a `! status` right after the next request expects.
    pub next_status: Option<Vec<String>>,
    /// The channel of the last request the case made.
    pub last: Option<Channel>,
    /// Cancels already said to be unproven, or to rest on a closed stream.
    unproven: HashSet<usize>,
    /// Messages seen on some channel (canonical text → first channel), for HTTP-13.
    pub seen: HashMap<String, Channel>,
    /// Sessions the case ended with a DELETE the server accepted.
    pub deleted: HashSet<usize>,
}

impl Streams {
    /// Bookkeeping for a case over HTTP.
    pub fn http() -> Streams {
        Streams {
            over_http: true,
            names: vec!["main".into()],
            ..Streams::default()
        }
    }

    /// The session a channel belongs to.
    pub fn session_of(&self, channel: Channel) -> usize {
        self.by.get(&channel).map_or(0, |s| s.session)
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
        let case_expects = if self.transcript[index].internal {
            None
        } else {
            self.streams.next_status.take()
        };
        let shown_status = case_expects
            .as_ref()
            .map(|codes| codes.join("|"))
            .or_else(|| opened.wants_accepted().then(|| "202".to_string()));
        if !self.transcript[index].internal {
            self.streams.last = Some(channel);
        }
        self.streams.by.insert(
            channel,
            Stream {
                entry: index,
                sent: Instant::now(),
                opened,
                session: self.streams.session,
                head: None,
                messages: 0,
                end: None,
                bytes: 0,
                expected: case_expects,
                shown_status: shown_status.clone(),
                body: None,
                base: String::new(),
            },
        );
        let entry = &mut self.transcript[index];
        entry.channel = channel;
        // A stamped line shows as the case wrote it.
        let base = match (&entry.shown, entry.stamped) {
            (Some(written), true) => written.clone(),
            _ => entry.text.clone(),
        };
        let line = match &shown_status {
            Some(status) => format!("{channel} {base} → {status}"),
            None => format!("{channel} {base}"),
        };
        // Until a status arrives, the line says none came.
        entry.shown = Some(match &shown_status {
            Some(_) => format!("{channel} {base} → no status"),
            None => line.clone(),
        });
        if let Some(stream) = self.streams.by.get_mut(&channel) {
            stream.base = base;
        }
        if let Some(at) = expected {
            self.expected[at] = format!("{} {line}", S::SENDS);
        }
        // What went in the headers (HTTP-18, HTTP-19), as a comment in the transcript.
        let headers = self
            .io
            .http()
            .and_then(|http| http.shown_headers(channel).map(str::to_string));
        if let Some(headers) = headers {
            let mut entry =
                Entry::event(self.now(), channel, format!("{channel} headers: {headers}"));
            entry.session = self.streams.session;
            self.transcript.push(entry);
        }
    }

    /// Takes in what the transport said about a channel: bookkeeping and the transcript. The
    /// side's rules judge it afterwards.
    pub(crate) fn stream_event(&mut self, at: Duration, event: &Event) {
        let now = Instant::now();
        let (channel, text) = match event {
            Event::Status { channel, head } => {
                let mut text = format!("{channel}: {}", head.summary());
                if let Some(session) = &head.session {
                    text.push_str(&format!(", session {}", String::from_utf8_lossy(session)));
                }
                let mut accepted_cancel = None;
                let mut rtt = None;
                if let Some(stream) = self.streams.by.get_mut(channel) {
                    stream.head = Some((now, head.clone()));
                    if stream.opened.wants_accepted() && head.code == 202 {
                        rtt = Some(now.duration_since(stream.sent));
                        if let Opened::Notification {
                            cancels: Some(_), ..
                        } = stream.opened
                        {
                            accepted_cancel = Some(stream.entry);
                        }
                    }
                }
                if let Some(rtt) = rtt {
                    self.streams.sample(rtt);
                }
                if let Some(cancel) = accepted_cancel {
                    // Accepted: the server has read it at the latest a grace later, and later
                    // by what it waits for a CPU from now on (`Engine::read_by`).
                    let (grace, waited) = (self.calm_grace(), self.waited());
                    self.ledger.cancel_accepted(cancel, at, grace, waited);
                }
                self.show_status(*channel, Some(head));
                (*channel, text)
            }
            Event::Body { channel, text } => {
                if let Some(stream) = self.streams.by.get_mut(channel) {
                    stream.body.get_or_insert_with(|| text.clone());
                }
                (*channel, format!("{channel}: {text}"))
            }
            Event::Closed {
                channel,
                end,
                bytes,
            } => {
                let mut unseen = false;
                if let Some(stream) = self.streams.by.get_mut(channel) {
                    stream.end = Some(end.clone());
                    stream.bytes = *bytes;
                    unseen = stream.head.is_none();
                }
                if unseen && *end != StreamEnd::Aborted {
                    self.show_status(*channel, None);
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

    /// Shows a channel's status on the line that opened it, normalised toward what was
    /// expected: a status that meets the expectation reads exactly as expected.
    fn show_status(&mut self, channel: Channel, head: Option<&Head>) {
        let Some(stream) = self.streams.by.get(&channel) else {
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
        if let Some(entry) = self.transcript.get_mut(stream.entry) {
            entry.shown = Some(shown);
        }
    }

    /// The channel a message matching `pattern` should come on: the one of the request it
    /// answers or reports progress for.
    pub(crate) fn expected_channel(&self, pattern: &Value) -> Option<Channel> {
        if !self.streams.over_http {
            return None;
        }
        let request = match (pattern.get("id"), pattern.pointer("/params/progressToken")) {
            (Some(id), _) if !is_wildcard(id) => self.ledger.sent(id),
            (_, Some(token)) if !is_wildcard(token) => self
                .ledger
                .tokens
                .get(&self.ledger.key(token))
                .and_then(|key| self.ledger.sent.get(key)),
            _ => None,
        };
        request.map(|r| r.channel)
    }

    /// Why a response to request `id` can no longer come: its stream was refused or ended
    /// without it.
    pub(crate) fn unanswerable(&self, id: &Value) -> Option<String> {
        let request = self.ledger.sent(id)?;
        if request.answers > 0 {
            return None;
        }
        let stream = self.streams.by.get(&request.channel)?;
        if stream.messages > 0 && stream.end.is_none() {
            return None;
        }
        stream
            .dead_end()
            .map(|why| format!("its {} {why}", request.channel))
    }

    /// Why progress matching `pattern` cannot come: the server answers requests of this
    /// session with `application/json`, so a running request has no stream for it (a server
    /// may send no progress, PRG-08).
    pub(crate) fn progress_unreachable(&self, pattern: &Value) -> Option<String> {
        if pattern.get("method").and_then(Value::as_str) != Some("notifications/progress") {
            return None;
        }
        let channel = self.expected_channel(pattern)?;
        let waiting = self.streams.by.get(&channel)?.head.is_none();
        let session = self.streams.session;
        let json = self.streams.by.values().any(|s| {
            s.session == session
                && s.head.as_ref().is_some_and(|(_, h)| {
                    h.code == 200 && h.content_type.as_deref() == Some("application/json")
                })
        });
        (waiting && json).then(|| {
            "the server answers requests with application/json, so a running request has no stream for its progress to reach the client on (sending no progress is allowed, PRG-08)".to_string()
        })
    }

    /// How long a request may take to show it arrived. A server that has answered a request
    /// of this session with an SSE stream shows the head of the next one at once, however
    /// busy the machine: it gets `--reply-timeout` (stretched for a busy machine). One that
    /// answers with JSON shows nothing before the answer, so nothing can be awaited beyond the
    /// arrival window `max(100 ms, 4 × RTT)`; a server not yet seen answering a request gets
    /// `--reply-timeout` too.
    pub(crate) fn arrival_window(&self) -> Duration {
        let session = self.streams.session;
        let answered = |kind: &str| {
            self.streams.by.values().any(|s| {
                s.session == session
                    && matches!(s.opened, Opened::Request(_))
                    && s.head.as_ref().is_some_and(|(_, h)| {
                        (200..300).contains(&h.code) && h.content_type.as_deref() == Some(kind)
                    })
            })
        };
        // In 2026-07-28 a server may hold back a call's head until its result (rmcp, the
        // Python SDK and the TypeScript SDK 2.x do, for a call that sends no progress).
        let held = self
            .protocol()
            .is_some_and(|v| v.era() == crate::era::Era::Stateless);
        if held || (answered("application/json") && !answered("text/event-stream")) {
            self.streams.arrival()
        } else {
            self.reply_allowance()
        }
    }

    /// `--reply-timeout`, stretched for the machine's CPU pressure now.
    pub(crate) fn reply_allowance(&self) -> Duration {
        crate::load::stretched(self.options.reply_timeout, self.stretch)
    }

    /// Over HTTP, before a `! cancel`: waits until the target has shown it received the
    /// request (a head, a message on its stream, or its answer), at most the arrival window
    /// after it was sent ([`Engine::arrival_window`]), so the cancel is not read before the
    /// request it names.
    pub(crate) async fn await_arrival(&mut self, id: &Value) {
        let Some(request) = self.ledger.sent(id) else {
            return;
        };
        let channel = request.channel;
        let Some(sent) = self.streams.by.get(&channel).map(|s| s.sent) else {
            return;
        };
        let until = Deadline::from_std(sent + self.arrival_window());
        loop {
            let arrived = self.streams.by.get(&channel).is_none_or(Stream::arrived)
                || self.ledger.sent(id).is_some_and(|r| r.answers > 0);
            if arrived || !self.next(until).await {
                return;
            }
        }
    }

    /// Over HTTP, before the barrier's probe: waits (at most `--reply-timeout`, stretched for a
    /// busy machine) until every
    /// notification POST so far has its status and every request has arrived or had its
    /// arrival window, then until the grace after the last accepted cancel has passed, so that
    /// every cancel sent before the barrier that was accepted counts as read. Cancels that
    /// nothing proves are noted.
    pub(crate) async fn settle(&mut self) {
        let arrival = self.arrival_window();
        let deadline = Deadline::now() + self.reply_allowance();
        loop {
            let now = Instant::now();
            // The earliest moment something may stop being awaited.
            let mut wake: Option<Instant> = None;
            for s in self.streams.by.values() {
                let until = match s.opened {
                    Opened::Request(_) if !s.arrived() && now < s.sent + arrival => {
                        s.sent + arrival
                    }
                    Opened::Notification { .. } | Opened::Response
                        if s.head.is_none() && s.end.is_none() =>
                    {
                        deadline.into_std()
                    }
                    _ => continue,
                };
                wake = Some(wake.map_or(until, |w| w.min(until)));
            }
            let Some(wake) = wake else {
                break;
            };
            let wake = Deadline::from_std(wake).min(deadline);
            // `next` is false at `wake`, or at once when nothing more can come.
            if !self.next(wake).await && (wake >= deadline || Deadline::now() < wake) {
                break;
            }
        }
        let mut accepted: Vec<super::ledger::CancelMark> = vec![];
        let marks: Vec<(String, super::ledger::CancelMark)> = self
            .ledger
            .sent
            .iter()
            .filter_map(|(key, r)| r.cancel.map(|m| (key.clone(), m)))
            .collect();
        let mut closed = vec![];
        for (key, mark) in marks {
            if mark.read.is_some() && (mark.accepted.is_some() || mark.closed.is_some()) {
                if mark.closed.is_some() && self.streams.unproven.insert(mark.at) {
                    closed.push((key, mark.closed.map_or(Duration::ZERO, |c| c.grace)));
                }
                accepted.push(mark);
                continue;
            }
            let channel = self
                .transcript
                .get(mark.at)
                .map_or(Channel::Stdio, |e| e.channel);
            let Some(stream) = self.streams.by.get(&channel) else {
                continue;
            };
            if !stream.opened.wants_accepted() || !self.streams.unproven.insert(mark.at) {
                continue;
            }
            let what = match &stream.head {
                Some((_, head)) => format!("got HTTP {}", head.summary()),
                None => format!("got no status within {:?}", self.reply_allowance()),
            };
            self.rule(
                Severity::Note,
                "HTTP-17",
                format!(
                    "the cancel of request {key} ({channel}) {what}: nothing proves the server read it, so a late response to it is not charged and only the witness can tell whether its work stopped"
                ),
            );
        }
        if !closed.is_empty() {
            closed.sort();
            let grace = closed.iter().map(|(_, g)| *g).max().unwrap_or_default();
            let keys: Vec<String> = closed.into_iter().map(|(key, _)| key).collect();
            let what = if keys.len() == 1 {
                format!("the cancel of request {} closed its stream", keys[0])
            } else {
                format!(
                    "the cancels of requests {} closed their streams",
                    keys.join(", ")
                )
            };
            self.rule(
                Severity::Note,
                "HTTP-11",
                format!(
                    "{what}: nothing on the wire shows when the server noticed, so the barrier waited a grace of {} ms, and only the witness can tell whether the work stopped",
                    grace.as_millis()
                ),
            );
        }
        // Until every accepted cancel counts as read; that moment moves later while the
        // target waits for a CPU (`Engine::read_by`), within the allowance.
        while let Some(read) = accepted.iter().filter_map(|m| self.read_by(m)).max() {
            let until = Deadline::from_std(self.io.started() + read).min(deadline);
            if Deadline::now() >= until {
                break;
            }
            self.pump_until(until).await;
        }
    }
}

fn is_wildcard(value: &Value) -> bool {
    value
        .as_str()
        .is_some_and(|t| t.starts_with('{') && t.ends_with('}') && !t.starts_with("{$"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn statuses_match_codes_and_classes() {
        let codes = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(status_matches(&codes(&["202"]), 202));
        assert!(!status_matches(&codes(&["202"]), 200));
        assert!(status_matches(&codes(&["202", "4xx"]), 404));
        assert!(!status_matches(&codes(&["4xx"]), 500));
    }

    #[test]
    fn what_a_message_opens() {
        let key = |id: &Value| crate::pattern::id_key(id);
        let request = json!({"jsonrpc":"2.0","id":1,"method":"ping"});
        assert_eq!(opened_by(Some(&request), key), Opened::Request("1".into()));
        let cancel =
            json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}});
        assert_eq!(
            opened_by(Some(&cancel), key),
            Opened::Notification {
                method: "notifications/cancelled".into(),
                cancels: Some("\"a\"".into())
            }
        );
        let malformed =
            json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{}}});
        assert!(matches!(
            opened_by(Some(&malformed), key),
            Opened::Notification { cancels: None, .. }
        ));
        assert_eq!(
            opened_by(Some(&json!({"jsonrpc":"2.0","id":3,"result":{}})), key),
            Opened::Response
        );
        assert_eq!(opened_by(None, key), Opened::Other);
    }

    #[test]
    fn grace_grows_with_the_round_trip() {
        let mut streams = Streams::http();
        assert_eq!(streams.grace(), MIN_GRACE);
        assert_eq!(streams.arrival(), MIN_ARRIVAL);
        for ms in [10, 300, 200] {
            streams.sample(Duration::from_millis(ms));
        }
        assert_eq!(streams.grace(), Duration::from_millis(800));
        assert_eq!(streams.arrival(), Duration::from_millis(800));
    }
}
