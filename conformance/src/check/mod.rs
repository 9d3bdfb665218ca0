//! `conformance check TRACE`: a recorded session (docs/traces.md) judged offline by the
//! standing rules the live cases use. Nothing here decides what is right: the trace's events
//! become what the rules read (a transcript, a ledger per side, a reading of the clock) and
//! the functions of `rules/` give every finding. The server is judged as a live server run
//! judges its target, with the recorded client standing where the harness stands; the
//! client as a live client run judges its target, with the recorded server standing there.
//!
//! What a recording bounds: a client's message stamped `at` reached the server no earlier,
//! a server's message left it no later. On stdio an answer to a request the client wrote
//! after a cancel proves the server had read the cancel (the proof the live barrier gives);
//! over HTTP the cancel's `202` and the grace do, or the closed stream and the grace. The
//! grace is the live one (`facts::waits`), with no CPU waits known, so a busy recording
//! machine only makes the server's messages later, never a verdict harsher. What a recording
//! cannot show (whether a handler stopped, without a witness; whether a client gave up) is a
//! note, never a verdict.
//!
//! - [`adapt`]: each event as a transcript entry, and HTTP exchanges as channels and
//!   sessions;
//! - `server`: the server's side; `client`: the client's side; `http`: the cancels a
//!   Streamable HTTP recording shows beyond its messages (a `202`, a closed stream);
//! - [`sides`]: the two sides as cases' reports, for the reports live runs write.

pub mod adapt;
mod client;
mod http;
mod server;
pub mod sides;

use crate::era::{ProtocolVersion, META_VERSION};
use crate::exchange::{Channel, TargetLog};
use crate::outcome::Finding;
use crate::rules::envelope::{self, Problem};
use crate::trace::{Event, Party, Stamped, Trace, Transport};
use crate::transcript::Entry;
use adapt::Wire;
use serde_json::Value;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// What checking a trace produced.
#[derive(Debug)]
pub struct Checked {
    /// Every message and transport event, in file order; each entry's `consumed_by` is its
    /// trace line, which findings point at too.
    pub transcript: Vec<Entry>,
    /// What the server wrote on stderr.
    pub log: TargetLog,
    /// What the server did wrong (and notes), at trace lines.
    pub server: Vec<Finding>,
    /// What the client did wrong (and notes), at trace lines.
    pub client: Vec<Finding>,
    /// The protocol versions the sessions spoke, as far as their messages said, in the order
    /// the sessions began, each once (several when a recording holds sessions of several).
    pub versions: Vec<ProtocolVersion>,
}

impl Checked {
    /// The versions spoken as reports name them (`2025-11-25, 2026-07-28`); `None` when no
    /// message said.
    pub fn version(&self) -> Option<String> {
        (!self.versions.is_empty()).then(|| ProtocolVersion::joined(&self.versions))
    }
}

/// Judges a trace.
pub fn check(trace: &Trace) -> Checked {
    let mut walk = Walk::new(trace.header.transport);
    for stamped in &trace.events {
        walk.event(stamped);
    }
    walk.finish()
}

/// What both sides' rules read of the session so far.
#[derive(Debug)]
pub(crate) struct Session {
    /// Messages each way arrive in the order written (stdio).
    pub ordered: bool,
    /// The version the message being judged speaks: its own stamp (2026-07-28), else its
    /// session's: the first request's `_meta`, until an `initialize` result names the version
    /// the handshake agreed to.
    pub version: Option<ProtocolVersion>,
    /// An instant standing for the recording's start (the client rules read instants).
    pub base: Instant,
    /// When the server first wrote anything (a message, a stderr line).
    pub first_heard: Option<Duration>,
}

impl Session {
    /// Whether the session is in the stateless era (2026-07-28).
    pub fn stateless(&self) -> bool {
        self.version.is_some_and(|v| !v.has_handshake())
    }
}

/// One message of the trace, where it is and how it travelled.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Msg<'a> {
    /// Its transcript index.
    pub index: usize,
    /// Its trace line.
    pub line: usize,
    /// When the recorder saw it.
    pub at: Duration,
    /// The channel it travelled on.
    pub channel: Channel,
    /// The session its ids belong to (`None`: the first).
    pub scope: Option<&'a str>,
    /// The HTTP exchange it travelled in.
    pub exchange: Option<u64>,
    /// Its session's number (0 on stdio).
    pub session: usize,
}

/// The walk through a trace: the one owner of everything a check learns.
struct Walk {
    transcript: Vec<Entry>,
    log: TargetLog,
    session: Session,
    wire: Wire,
    /// The version each session speaks.
    versions: HashMap<usize, ProtocolVersion>,
    http: http::Http,
    server: server::ServerSide,
    client: client::ClientSide,
}

impl Walk {
    fn new(transport: Transport) -> Walk {
        Walk {
            transcript: vec![],
            log: TargetLog::default(),
            session: Session {
                ordered: transport == Transport::Stdio,
                version: None,
                base: Instant::now(),
                first_heard: None,
            },
            wire: Wire::default(),
            versions: HashMap::new(),
            http: http::Http::default(),
            server: server::ServerSide::default(),
            client: client::ClientSide::default(),
        }
    }

    /// Takes in one event.
    fn event(&mut self, stamped: &Stamped) {
        let (at, line) = (stamped.at, stamped.line);
        match &stamped.event {
            Event::Message {
                from,
                text,
                exchange,
                lossy,
                ..
            } => self.message(*from, text, *exchange, *lossy, (at, line)),
            Event::Stderr { text } => {
                self.session.first_heard.get_or_insert(at);
                self.log.push(at, text.clone());
            }
            Event::Closed {
                from: Party::Client,
            } => {
                self.note(
                    at,
                    line,
                    Channel::Stdio,
                    "the client closed the server's stdin",
                );
                self.server.input_closed();
            }
            Event::Closed {
                from: Party::Server,
            } => {
                self.note(at, line, Channel::Stdio, "the server closed its stdout");
                self.server.stopped(line, "it closed its stdout");
                self.client.server_gone();
            }
            Event::Exit { code, signal } => {
                let how = adapt::exit(*code, *signal);
                self.note(at, line, Channel::Stdio, &format!("the server {how}"));
                self.server.stopped(line, &how);
                self.client.server_gone();
            }
            Event::Note { text } => {
                self.note(at, line, Channel::Stdio, &format!("recorder: {text}"));
            }
            Event::Request { .. } | Event::Response { .. } | Event::End { .. } => {
                self.exchange(stamped);
            }
        }
    }

    /// A transport event as a transcript entry, taken by its trace line.
    fn note(&mut self, at: Duration, line: usize, channel: Channel, text: &str) {
        let mut entry = Entry::event(at, channel, format!("[{text}]"));
        entry.consumed_by = Some(line);
        self.transcript.push(entry);
    }

    /// One message, recorded and judged by both sides' rules.
    fn message(
        &mut self,
        from: Party,
        text: &str,
        exchange: Option<u64>,
        lossy: bool,
        (at, line): (Duration, usize),
    ) {
        // Text that was not UTF-8 is not JSON, whatever its lossy reading parses as.
        let value: Option<Value> = (!lossy).then(|| serde_json::from_str(text).ok()).flatten();
        let channel = self.wire.channel(exchange);
        let mut entry = match from {
            Party::Client => Entry::sent(at, text.to_string(), value, false),
            Party::Server => Entry::received(at, channel, text.to_string(), value),
        };
        entry.channel = channel;
        entry.consumed_by = Some(line);
        entry.session = self.wire.session(exchange);
        self.transcript.push(entry);
        let scope = self.wire.scope(exchange);
        let session = self.wire.session(exchange);
        self.session.version = self.versions.get(&session).copied();
        let m = Msg {
            index: self.transcript.len() - 1,
            line,
            at,
            channel,
            scope: scope.as_deref(),
            exchange,
            session,
        };
        match from {
            Party::Client => self.client_wrote(&m, text),
            Party::Server => self.server_wrote(&m, text),
        }
    }

    /// A message the client wrote.
    fn client_wrote(&mut self, m: &Msg, text: &str) {
        let value = self.transcript[m.index].value.as_ref();
        if m.channel == Channel::Stdio {
            let problems = line_problems(&envelope::CLIENT, text, value);
            self.client.add(m.line, problems);
        }
        let Some(value) = value.filter(|v| v.is_object()) else {
            return;
        };
        if let Some(version) = value
            .pointer("/params/_meta")
            .and_then(|meta| meta.get(META_VERSION))
            .and_then(Value::as_str)
            .and_then(ProtocolVersion::parse)
        {
            self.versions.entry(m.session).or_insert(version);
            self.session.version = Some(version);
        }
        let method = value.get("method").and_then(Value::as_str);
        match (method, value.get("id")) {
            (Some(method), Some(id)) => {
                self.client.request(m, method, id, value, &self.session);
                self.server.request(m, method, id, value, &self.session);
                self.http.request(m.exchange, id, m.scope);
            }
            (Some("notifications/cancelled"), None) => {
                let params = value.get("params");
                // A cancel POSTed outside a session names a request of no session either.
                let named = params.and_then(|p| p.get("requestId"));
                let asked = named.and_then(|id| self.http.sessionless(m, id, &self.wire));
                let (scope, session) = match asked {
                    Some(exchange) => (
                        self.wire.scope(Some(exchange)),
                        self.wire.session(Some(exchange)),
                    ),
                    None => (m.scope.map(str::to_string), m.session),
                };
                if let Some(version) = self.versions.get(&session) {
                    self.session.version = Some(*version);
                }
                let m = &Msg {
                    scope: scope.as_deref(),
                    session,
                    ..*m
                };
                self.client.cancel(m, params, &self.session);
                // In 2026-07-28 over HTTP closing the stream is the cancel: a POSTed
                // notification asks nothing of the server (AMB-06).
                if self.session.ordered || !self.session.stateless() {
                    self.server.cancel(m, params);
                }
                let named = params
                    .and_then(|p| p.get("requestId"))
                    .map(|id| crate::facts::ledger::key_in(m.scope, id));
                let stateless = self.session.stateless();
                self.http
                    .cancel(m.exchange, m.index, named, (m.line, stateless));
            }
            (Some(_), None) => {}
            (None, _) => self.client.response(m, value),
        }
    }

    /// A message the server wrote.
    fn server_wrote(&mut self, m: &Msg, text: &str) {
        self.session.first_heard.get_or_insert(m.at);
        let value = self.transcript[m.index].value.as_ref();
        if m.channel == Channel::Stdio {
            let problems = line_problems(&envelope::SERVER, text, value);
            self.server.add(m.line, problems);
        }
        let Some(value) = value.filter(|v| v.is_object()) else {
            return;
        };
        let method = value.get("method").and_then(Value::as_str);
        match (method, value.get("id")) {
            (Some(method), Some(id)) => {
                self.server.server_request(m, method, id, &self.session);
            }
            (Some("notifications/progress"), None) => {
                self.server.progress(m, value, &self.session);
            }
            (Some(_), None) => {}
            (None, _) => {
                // The handshake's answer decides the version, over a 2026-07-28 probe the
                // client made first: a client whose `server/discover` was refused falls
                // back to `initialize`, and the session speaks what that agreed to.
                if let Some(version) = value
                    .pointer("/result/protocolVersion")
                    .and_then(Value::as_str)
                    .and_then(ProtocolVersion::parse)
                {
                    self.versions.insert(m.session, version);
                    self.session.version = Some(version);
                }
                if let Some(id) = value.get("id") {
                    self.http
                        .answered(crate::facts::ledger::key_in(m.scope, id));
                }
                let transcript = &self.transcript;
                self.server.response(m, value, &self.session, transcript);
                self.client.answered(m, value, &self.session);
            }
        }
    }

    /// The end of the trace: what is judged once nothing more will come.
    fn finish(self) -> Checked {
        let Walk {
            transcript,
            log,
            session,
            server,
            mut client,
            http,
            versions,
            ..
        } = self;
        for (line, problem) in http.finish() {
            client.add(line, [problem]);
        }
        Checked {
            server: server.finish(&session),
            client: client.finish(&session),
            versions: spoken(&versions),
            transcript,
            log,
        }
    }
}

/// The versions the sessions spoke, in the order the sessions began, each once.
fn spoken(versions: &HashMap<usize, ProtocolVersion>) -> Vec<ProtocolVersion> {
    let mut sessions: Vec<(&usize, &ProtocolVersion)> = versions.iter().collect();
    sessions.sort();
    let mut said: Vec<ProtocolVersion> = vec![];
    for (_, &version) in sessions {
        if !said.contains(&version) {
            said.push(version);
        }
    }
    said
}

/// The envelope of one stdio line its `writer` wrote (see [`envelope`]).
fn line_problems(writer: &envelope::Writer, text: &str, value: Option<&Value>) -> Vec<Problem> {
    if text.trim().is_empty() {
        return vec![envelope::blank(writer)];
    }
    envelope::check(writer, text, value)
}
