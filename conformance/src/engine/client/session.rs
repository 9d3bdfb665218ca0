//! The sessions a client opens with the harness's server, and how each one ends.
//!
//! Over stdio a session is one server process the client started (one relay connection);
//! over Streamable HTTP it is one `Mcp-Session-Id`. A client may open more than one: a
//! throwaway process that only probes `server/discover` before its real one, or a fresh
//! session after the server forgot the old one (a 404). The newest session is the current
//! one: the case's steps talk to it, request ids are unique within it (RPC-03), and how it
//! ends is what STD-06 judges. A session the client replaced before its handshake was done is
//! a probe and no fault; one it replaced after the handshake was torn down and restarted
//! (CAN-08). Older sessions are still served as a plain server would serve them, and every
//! session's end is noted, so the report says how the client shut each one down (the
//! judging of those ends is in `ending`).

use super::ClientTarget;
use crate::engine::parts::clock;
use crate::engine::Engine;
use crate::facts::ledger::Ledger;
use crate::pattern::id_key;
use crate::requirement::Req;
use crate::transport::{Channel, PeerSignal, Transport};
use serde_json::Value;
use std::time::{Duration, Instant};
use tokio::time::Instant as Deadline;

/// How many methods of a session the notes list.
const METHODS_KEPT: usize = 4;

/// One session of the client with the harness's server.
#[derive(Debug)]
pub struct Session {
    /// Its channel: a server process's stdio; for HTTP the POST that opened it.
    pub channel: Channel,
    /// Its `Mcp-Session-Id` (HTTP).
    pub http_id: Option<String>,
    /// The id of its `initialize` request, as an id key.
    pub initialize: Option<String>,
    /// The harness answered its `initialize` with a result (kept when the session is replaced;
    /// for the current session, the ledger says).
    pub ready: bool,
    /// It sent `notifications/initialized`.
    pub initialized: bool,
    /// The version the answer to its `initialize` agreed to.
    pub agreed: Option<String>,
    /// The first methods it sent, for the notes.
    pub methods: Vec<String>,
    /// When the client closed its server's stdin.
    pub stdin_closed: Option<Instant>,
    /// When the client sent its server SIGTERM.
    pub terminated: Option<Instant>,
    /// When the connection ended (the server process exited or was killed).
    pub ended: Option<Instant>,
    /// When the client ended the HTTP session with DELETE.
    pub deleted: Option<Instant>,
    /// The harness's server forgot the session (`! expire-session`).
    pub forgotten: bool,
}

impl Session {
    pub(super) fn new(channel: Channel, http_id: Option<String>) -> Session {
        Session {
            channel,
            http_id,
            initialize: None,
            ready: false,
            initialized: false,
            agreed: None,
            methods: vec![],
            stdin_closed: None,
            terminated: None,
            ended: None,
            deleted: None,
            forgotten: false,
        }
    }

    /// How the client ended the session, in words.
    pub fn how_ended(&self) -> String {
        if self.http_id.is_some() {
            return match (self.deleted, self.forgotten) {
                (Some(_), _) => "ended it with DELETE".into(),
                (None, true) => "lost it when the server forgot it".into(),
                (None, false) => "never sent DELETE for it".into(),
            };
        }
        match (self.stdin_closed, self.terminated, self.ended) {
            (Some(eof), Some(term), _) if eof <= term => {
                "closed the server's stdin, then sent SIGTERM".into()
            }
            (Some(eof), Some(term), _) => format!(
                "sent SIGTERM and closed the server's stdin {} ms later",
                eof.saturating_duration_since(term).as_millis()
            ),
            (Some(_), None, _) => "closed the server's stdin".into(),
            (None, Some(_), _) => "sent SIGTERM without closing the server's stdin".into(),
            (None, None, Some(_)) => "killed the server without closing its stdin".into(),
            (None, None, None) => "left the server running with its stdin open".into(),
        }
    }

    /// What the session exchanged, in words: `server/discover` only, or its first methods.
    pub fn summary(&self) -> String {
        if self.methods.is_empty() {
            return "sent nothing".into();
        }
        let list = self
            .methods
            .iter()
            .map(|m| format!("`{m}`"))
            .collect::<Vec<_>>()
            .join(", ");
        format!("sent {list}")
    }
}

/// Every session of one client case.
#[derive(Debug, Default)]
pub struct Sessions {
    /// Oldest first; the last is the current one.
    pub list: Vec<Session>,
}

impl Sessions {
    /// The current session.
    pub fn current(&self) -> Option<&Session> {
        self.list.last()
    }

    /// The current session, to change it.
    pub fn current_mut(&mut self) -> Option<&mut Session> {
        self.list.last_mut()
    }

    /// The session of a stdio channel.
    fn of_channel(&mut self, channel: Channel) -> Option<&mut Session> {
        self.list.iter_mut().find(|s| s.channel == channel)
    }

    /// Whether a message that travelled on `channel` belongs to the current session. Over
    /// HTTP every delivered message does (the transport answers a stale session with 404).
    pub fn is_current(&self, channel: Channel) -> bool {
        match channel {
            Channel::Stdio | Channel::Process(_) => {
                self.current().is_none_or(|s| s.channel == channel)
            }
            _ => true,
        }
    }

    /// Whether the current session's `initialize` was answered with a result (as `ledger`, of
    /// the current session, says).
    pub fn ready(&self, ledger: &Ledger) -> bool {
        self.current()
            .and_then(|s| s.initialize.as_ref())
            .and_then(|key| ledger.received(key))
            .is_some_and(|r| r.succeeded)
    }

    /// Notes the id of the current session's `initialize` (the first counts).
    pub fn initialize(&mut self, id: &Value) {
        if let Some(session) = self.current_mut() {
            session.initialize.get_or_insert_with(|| id_key(id));
        }
    }

    /// What the client did to the server process of `channel`, noted on its session: the
    /// note for the log, and whether it ended the current session's connection. `None` when
    /// no session has that channel.
    pub fn signal(&mut self, channel: Channel, signal: PeerSignal) -> Option<(String, bool)> {
        let current = self.current().map(|s| s.channel) == Some(channel);
        let session = self.of_channel(channel)?;
        let now = clock::now();
        let (what, ended) = match signal {
            PeerSignal::StdinClosed => {
                session.stdin_closed.get_or_insert(now);
                (
                    "the client closed the server's stdin; the server exits",
                    false,
                )
            }
            PeerSignal::Terminated => {
                session.terminated.get_or_insert(now);
                ("the client sent SIGTERM to the server", false)
            }
            PeerSignal::Ended => {
                session.ended.get_or_insert(now);
                ("the server's connection ended", current)
            }
        };
        let which = match channel {
            Channel::Stdio => String::new(),
            other => format!(" ({other})"),
        };
        Some((format!("[relay] {what}{which}"), ended))
    }

    /// LIF-03 at the end of the case: a finding for every session whose `initialize` the
    /// harness answered (the current one's as `ledger` says) that never sent
    /// `notifications/initialized`.
    pub fn uninitialized(&self, ledger: &Ledger) -> Vec<String> {
        let current_ready = self.ready(ledger);
        let count = self.list.len();
        self.list
            .iter()
            .enumerate()
            .filter(|(i, s)| !s.initialized && (s.ready || (i + 1 == count && current_ready)))
            .map(|(i, _)| {
                let which = if count > 1 {
                    format!(" (session {})", i + 1)
                } else {
                    String::new()
                };
                format!("the client never sent `notifications/initialized` after the harness answered its `initialize`{which}")
            })
            .collect()
    }

    /// How every session ended, when there was more than one; a session replaced before its
    /// handshake was done (a probe) is no fault, whatever it exchanged.
    pub fn notes(&self) -> Vec<String> {
        let count = self.list.len();
        if count < 2 {
            return vec![];
        }
        self.list
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let role = if i + 1 == count { "current" } else { "earlier" };
                format!(
                    "session {} ({role}, {}): the client {} and {}",
                    i + 1,
                    s.http_id.as_deref().map_or_else(
                        || s.channel.to_string(),
                        |id| format!("Mcp-Session-Id {id}")
                    ),
                    s.summary(),
                    s.how_ended()
                )
            })
            .collect()
    }

    /// Records a method the current session sent.
    pub fn sent(&mut self, method: &str) {
        if let Some(session) = self.current_mut() {
            if session.methods.len() < METHODS_KEPT && !session.methods.iter().any(|m| m == method)
            {
                session.methods.push(method.to_string());
            }
        }
    }
}

impl<T: Transport> Engine<'_, T, ClientTarget> {
    /// A new session begins on `channel`: the ids of the old one are forgotten (ids are
    /// unique within a session), and replacing a session whose handshake was done is a
    /// restart the case did not ask for (CAN-08), unless the harness's server forgot the old
    /// one (`asked_for`).
    pub(crate) fn open_session(
        &mut self,
        channel: Channel,
        http_id: Option<String>,
        asked_for: bool,
    ) {
        let ready = self.side.sessions.ready(&self.ledger);
        // A session of the stateless era has no handshake: it was in use once it sent more
        // than a `server/discover` probe.
        let in_use = ready
            || (self.side.era.plays
                && self
                    .side
                    .sessions
                    .current()
                    .is_some_and(|s| s.methods.iter().any(|m| m != "server/discover")));
        let restarted = in_use && !asked_for;
        if let Some(old) = self.side.sessions.current_mut() {
            old.ready = ready;
        }
        let number = self.side.sessions.list.len() + 1;
        if restarted {
            let how = if http_id.is_some() {
                "the client opened a new HTTP session with a fresh `initialize`"
            } else {
                "the client started its server a second time"
            };
            self.rule(
                self.played.severity(),
                Req::Can08,
                format!(
                    "{how} (session {number}) after its session had been {}: the session was torn down and restarted",
                    if self.side.era.plays { "in use" } else { "initialized" }
                ),
            );
        }
        self.ledger.new_session();
        self.liveness.reconnected();
        self.side.sessions.list.push(Session::new(channel, http_id));
    }

    /// After the adapter exited: reads what its servers still carry until every connection
    /// has closed, or `--reply-timeout` (stretched on a busy machine) passed. A message the
    /// client wrote just before it exited may still be on its way through the relay, and a
    /// client that simply exits closes its server's stdin through the kernel, which the relay
    /// reports a moment later.
    pub(crate) async fn read_to_end(&mut self) {
        let within = self.played.options().reply_timeout;
        self.wait_allowed(|e| e.clock.stretched(within), |e| e.io.finished())
            .await;
    }

    /// Waits up to `within` for the adapter to exit; on a busy machine the wait is stretched
    /// in proportion to the CPU pressure, so a slow exit is not taken for a hang. Returns how
    /// long it waited at most.
    pub(crate) async fn await_exit(&mut self, within: Duration) -> Duration {
        self.wait_allowed(|e| e.clock.stretched(within), |e| e.liveness.has_exited())
            .await
    }

    /// Takes in events until `done` holds or the allowance has passed since now. The allowance
    /// is asked again at every event and at least every 250 ms, so that it follows the
    /// machine's CPU pressure as it changes (the pressure is a ten-second average: read once,
    /// at a step in load, it would still say calm); an allowance once granted is kept.
    /// Returns the longest allowance.
    pub(crate) async fn wait_allowed(
        &mut self,
        allowance: impl Fn(&Self) -> Duration,
        done: impl Fn(&Self) -> bool,
    ) -> Duration {
        let began = Deadline::now();
        let mut allowed = Duration::ZERO;
        loop {
            allowed = allowed.max(allowance(self));
            let until = began + allowed;
            if done(self) || self.liveness.cut_off() || Deadline::now() >= until {
                return allowed;
            }
            let tick = until.min(Deadline::now() + Duration::from_millis(250));
            if !self.next(tick).await && self.io.finished() {
                return allowed;
            }
        }
    }
}
