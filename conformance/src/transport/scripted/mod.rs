//! A target with no process behind it: a [`Transport`] whose other end is a script, for
//! testing the engine's timing rules deterministically and in microseconds of real time.
//!
//! The engine cannot tell it from a real target: it plays one of the four [`Role`]s with the
//! events a real transport of that role reports (ordered or not, a channel per request or
//! not, heads and stream ends over HTTP, a relay's connection and an adapter's outcome lines
//! for a client), has no process ([`Transport::process`] is `None`), and gives the engine the
//! script's load ([`Transport::load`]) instead of the kernel's.
//!
//! # Scripting a target
//!
//! A [`Script`] says what the target does and when, counted from its start:
//!
//! - [`Script::at`]: at a fixed moment, an [`Act`] (send a message, stop reading its input,
//!   close its output, exit, …);
//! - [`Script::on`]: a reaction to what it reads ([`Heard`]: a message, the end of its input,
//!   or over HTTP a request stream the harness closed), returning acts and how long after the
//!   read each comes; [`Script::serving`] is the usual one of a server (it answers
//!   `initialize`, `ping` and `server/discover`);
//! - [`Script::load`]: the machine's CPU pressure and the spans during which the target (or
//!   the harness) waited for a CPU ([`LoadScript`]).
//!
//! Time is tokio's: a test runs on a paused clock (`#[tokio::test(start_paused = true)]`),
//! so every wait of the engine and every act of the script happens at its exact moment, and
//! a case that takes seconds of its own time takes microseconds of real time. A message the
//! target writes is stamped with the moment its act was due, also when the engine reads it
//! later (it was writing, say, to a target that had stopped reading): the orders and delays
//! of a loaded machine are written down, not waited for.
//!
//! ```
//! use conformance::transport::scripted::{result, Act, Role, Script, Scripted};
//! use std::time::Duration;
//! let ms = Duration::from_millis;
//! // A server that opens at once and answers request 1 (whatever it is) 120 ms after reading it.
//! let script = Script::new().serving(ms(1)).on(move |heard| {
//!     match heard.id() {
//!         Some(id) if *id == 1 && heard.method().is_some() => {
//!             vec![(ms(120), Act::Send(result(id, serde_json::json!({}))))]
//!         }
//!         _ => vec![],
//!     }
//! });
//! let target = Scripted::new(Role::StdioServer, script);
//! # let _ = target;
//! ```
//!
//! What the target read is kept for the test to look at ([`Scripted::heard`]).

mod http;
mod perform;
mod script;

pub use crate::load::source::LoadScript;
pub use script::{
    notification, progress, result, server_answer, text, Act, Decision, Heard, Reaction, Script,
};

use super::process::{Process, TargetLog};
use super::{Channel, Event, SendError, Transport};
use crate::load::source::Load;
use crate::time as clock;
use http::{ClientPosts, ServerPosts};
use serde_json::Value;
use std::collections::VecDeque;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::time::Instant as Deadline;

/// Which target a scripted transport plays, and over what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A server over stdio: one ordered stream each way.
    StdioServer,
    /// A server over Streamable HTTP: every message the harness sends is a POST with a
    /// response stream of its own; arrival order proves nothing.
    HttpServer,
    /// A client over stdio, through the relay: one ordered stream each way, once it connects
    /// ([`Act::Connect`]).
    StdioClient,
    /// A client over Streamable HTTP: every message it sends is a POST to the harness's
    /// server; arrival order proves nothing.
    HttpClient,
}

/// What is due at a moment: an act of the target's, an event the transport reports, or
/// (over HTTP to a server) a request's response head, unless a message brought it already.
enum Due {
    Act(Act),
    Event(Event),
    Head(Channel),
}

/// A scripted target (see the module doc).
pub struct Scripted {
    role: Role,
    started: Instant,
    reactions: Vec<script::Reaction>,
    load: LoadScript,
    heads_after: Option<Duration>,
    accepts_after: Option<Duration>,
    /// What is due, in the order it is due (ties in the order they were scheduled).
    due: Vec<(Instant, u64, Due)>,
    scheduled: u64,
    /// Events due and not yet taken, with their stamps.
    ready: VecDeque<(Instant, Event)>,
    heard: Arc<Mutex<Vec<Heard>>>,
    patience: Duration,
    reading: bool,
    input_open: bool,
    connected: bool,
    output_closed: bool,
    exited: Option<ExitStatus>,
    server_posts: ServerPosts,
    client_posts: ClientPosts,
    log: Mutex<TargetLog>,
}

impl Scripted {
    /// A target of `role` that does what `script` says; it starts now. A write it does not
    /// read waits two seconds (`--reply-timeout`'s default) before the target counts as no
    /// longer reading.
    pub fn new(role: Role, script: Script) -> Scripted {
        let started = clock::now();
        script.load.start(started);
        let mut target = Scripted {
            role,
            started,
            reactions: script.reactions,
            load: script.load,
            heads_after: script.heads_after,
            accepts_after: script.accepts_after,
            due: vec![],
            scheduled: 0,
            ready: VecDeque::new(),
            heard: Arc::default(),
            patience: Duration::from_secs(2),
            reading: true,
            input_open: true,
            connected: matches!(role, Role::StdioServer | Role::HttpServer),
            output_closed: false,
            exited: None,
            server_posts: ServerPosts::default(),
            client_posts: ClientPosts::default(),
            log: Mutex::default(),
        };
        for (at, act) in script.timeline {
            target.schedule(started + at, Due::Act(act));
        }
        target
    }

    /// The write patience: how long a write the target does not read waits before it counts
    /// as no longer reading (stretched for the script's CPU pressure, as on a real pipe).
    pub fn patience(mut self, patience: Duration) -> Scripted {
        self.patience = patience;
        self
    }

    /// What the target has read so far, in order; the list goes on growing while the engine
    /// runs, so a test keeps this and looks once the run is over.
    pub fn heard(&self) -> Arc<Mutex<Vec<Heard>>> {
        self.heard.clone()
    }

    fn schedule(&mut self, at: Instant, due: Due) {
        self.scheduled += 1;
        let key = (at, self.scheduled);
        let index = self.due.partition_point(|(a, s, _)| (*a, *s) <= key);
        self.due.insert(index, (at, self.scheduled, due));
    }

    /// The target reads what the harness did at `at`: it is kept, and the reactions' acts
    /// are scheduled from then.
    fn read(&mut self, at: Instant, heard: Heard) {
        let mut acts = vec![];
        for react in &mut self.reactions {
            acts.extend(react(&heard));
        }
        self.heard
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(heard);
        for (after, act) in acts {
            self.schedule(at + after, Due::Act(act));
        }
    }

    fn heard_now(
        &self,
        at: Instant,
        channel: Channel,
        message: Option<Value>,
        text: String,
    ) -> Heard {
        Heard {
            at: at.saturating_duration_since(self.started),
            channel,
            message,
            text,
            closed: false,
        }
    }

    /// Carries out everything due by now: what the target did before the harness writes to
    /// it has happened (it stopped reading, say), whether or not the engine has looked yet.
    fn catch_up(&mut self) {
        let now = clock::now();
        while self.due.first().is_some_and(|(at, _, _)| *at <= now) {
            let (at, _, due) = self.due.remove(0);
            self.perform(at, due);
        }
    }

    /// Waits while the target does not read its input, as a write to a full pipe does: until
    /// the script's next [`Act::Read`], within the write patience (see
    /// [`super::patience::within`]). `Err` once the target counts as no longer reading.
    async fn wait_for_room(&mut self) -> Result<(), SendError> {
        if self.reading {
            return Ok(());
        }
        let resume = self
            .due
            .iter()
            .find_map(|(at, _, due)| matches!(due, Due::Act(Act::Read)).then_some(*at));
        let room = async {
            match resume {
                Some(at) => tokio::time::sleep_until(Deadline::from_std(at)).await,
                None => std::future::pending().await,
            }
        };
        match super::patience::within(room, self.patience, &self.load.load()).await {
            Ok(()) => {
                self.reading = true;
                Ok(())
            }
            Err(allowed) => {
                self.input_open = false;
                Err(SendError::Stalled(allowed))
            }
        }
    }
}

impl Transport for Scripted {
    async fn send(
        &mut self,
        bytes: &[u8],
        reply_to: Option<Channel>,
    ) -> Result<Channel, SendError> {
        self.catch_up();
        if !self.input_open {
            return Err(SendError::Gone);
        }
        if self.gone() && self.role != Role::HttpClient {
            return Err(SendError::Gone);
        }
        self.wait_for_room().await?;
        let message: Option<Value> = serde_json::from_slice(bytes).ok();
        let text = String::from_utf8_lossy(bytes).into_owned();
        let Some(channel) = self.route(message.as_ref(), reply_to) else {
            // Over HTTP to a client with no stream open: nobody reads it.
            self.note(format!("[scripted] not delivered: {text}"));
            return Ok(reply_to.unwrap_or(Channel::Post(0)));
        };
        let now = clock::now();
        let heard = self.heard_now(now, channel, message, text);
        self.read(now, heard);
        Ok(channel)
    }

    async fn next(&mut self, deadline: Deadline) -> Option<(Instant, Event)> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(event);
            }
            let now = clock::now();
            match self.due.first() {
                Some((at, _, _)) if *at <= now => {
                    let (at, _, due) = self.due.remove(0);
                    self.perform(at, due);
                    continue;
                }
                _ if self.finished() || Deadline::now() >= deadline => return None,
                Some((at, _, _)) => {
                    let wake = Deadline::from_std(*at).min(deadline);
                    tokio::time::sleep_until(wake).await;
                }
                None => {
                    tokio::time::sleep_until(deadline).await;
                    return None;
                }
            }
        }
    }

    fn finished(&self) -> bool {
        let events_due = self
            .due
            .iter()
            .any(|(_, _, due)| matches!(due, Due::Event(_) | Due::Head(_)));
        self.exited.is_some() && self.ready.is_empty() && !events_due
    }

    fn ordered(&self) -> bool {
        matches!(self.role, Role::StdioServer | Role::StdioClient)
    }

    fn channel_per_request(&self) -> bool {
        self.role == Role::HttpServer
    }

    fn abort(&mut self, channel: Channel) -> bool {
        if self.role != Role::HttpServer {
            return false;
        }
        let request = self.server_posts.open_request(channel).cloned();
        if !self.server_posts.abort(channel) {
            return false;
        }
        let now = clock::now();
        self.ready.push_back((
            now,
            Event::Closed {
                channel,
                end: super::StreamEnd::Aborted,
                bytes: 0,
            },
        ));
        let mut heard = self.heard_now(now, channel, request, String::new());
        heard.closed = true;
        self.read(now, heard);
        true
    }

    /// The harness ends its side: a server's stdin closes; a client's server exits. The
    /// target reads the end as a [`Heard`] for which [`Heard::input_ended`] holds.
    fn close_input(&mut self) {
        if !std::mem::replace(&mut self.input_open, false) {
            return;
        }
        let now = clock::now();
        let mut heard = self.heard_now(now, Channel::Stdio, None, String::new());
        heard.closed = true;
        self.read(now, heard);
    }

    fn input_open(&self) -> bool {
        self.input_open && !self.gone()
    }

    fn process(&self) -> Option<&Process> {
        None
    }

    fn load(&self) -> Load {
        self.load.load()
    }

    fn started(&self) -> Instant {
        self.started
    }

    fn exit_status(&self) -> Option<ExitStatus> {
        self.exited
    }

    fn note(&self, text: String) {
        let at = clock::since(self.started);
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(at, text);
    }

    async fn shutdown(&mut self, _grace: Duration) -> TargetLog {
        self.input_open = false;
        std::mem::take(&mut *self.log.lock().unwrap_or_else(|e| e.into_inner()))
    }
}
