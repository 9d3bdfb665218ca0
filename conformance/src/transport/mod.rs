//! The seam between the engine and the target: how messages get to it and back.
//!
//! The engine plays a case's steps against a [`Transport`] and never touches a process, a pipe
//! or a socket itself, the way a database test runner talks to a small connection trait and
//! not to a driver. A transport carries one message at a time and reports everything it sees
//! as an [`Event`] stamped with when it was seen: messages with the [`Channel`] they travelled
//! on, and what happened around them (an output closing, a process exiting, an HTTP status).
//!
//! The transports are grouped by direction, and share the process bookkeeping:
//!
//! - [`to_server`], the harness as a client of a server target: [`stdio::Stdio`] (a server
//!   started as a process, one line per message) and [`http::Http`] (a server over Streamable
//!   HTTP, reached at a URL and optionally started as a process; every message is one POST
//!   with its own response stream).
//! - [`to_client`], the harness as the server of a client target (an adapter program):
//!   [`relay::Relay`] (the adapter starts the harness's relay as its stdio server) and
//!   [`http_server::HttpServer`] (the adapter talks to the harness's own Streamable HTTP
//!   server).
//! - [`process`], [`reap`], [`lines`]: the one place a target process is started, read,
//!   logged, ended and reaped, whichever the direction; a transport hands its [`Process`] to
//!   the trait ([`Transport::process`]), which answers the bookkeeping questions from it.
//! - [`scripted`]: a target with no process behind it, for testing the engine's timing rules
//!   on tokio's paused clock, with the load the test says ([`Transport::load`]).
//!
//! What differs between transports and matters to verdicts is said by the trait: whether the
//! order messages arrive in proves the order the target read them ([`Transport::ordered`]),
//! whether every request has a channel of its own that can be closed
//! ([`Transport::channel_per_request`], [`Transport::abort`]: Streamable HTTP to a server), and
//! which steps only that transport can carry out ([`Transport::http_steps`]).

pub mod lines;
pub mod patience;
pub mod process;
pub mod reap;
pub mod scripted;
pub mod to_client;
pub mod to_server;

/// The data a transport produces lives in the model; re-exported where transports use it.
pub use crate::exchange::{Channel, Head, StreamEnd};
pub use to_client::{http_server, relay};
pub use to_server::{http, http_headers, stdio};

use crate::load::source::Load;
use process::{Process, TargetLog};
use std::process::ExitStatus;
use std::time::{Duration, Instant};
use tokio::time::Instant as Deadline;

/// What a client did to its connection with the harness's server: to the server process it
/// started, as the relay saw it, or to an HTTP response stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerSignal {
    /// It closed the server's stdin.
    StdinClosed,
    /// It sent the server `SIGTERM`.
    Terminated,
    /// The connection ended: the relay exited (after one of the above, or killed), or the
    /// client closed an HTTP response stream before it ended.
    Ended,
}

/// Something a transport saw.
#[derive(Debug)]
pub enum Event {
    /// One message: a line on stdio.
    Message {
        /// Where it travelled.
        channel: Channel,
        /// Its bytes, without framing.
        bytes: Vec<u8>,
    },
    /// A message longer than the harness accepts; its bytes were discarded.
    Overlong(Channel),
    /// The start of a message arrived without its end (yet): the target is writing, so it has
    /// started.
    Partial(Channel),
    /// The target's side of the conversation ended: a server's stdout reached end of file, or
    /// a client's relay connection closed.
    OutputClosed,
    /// A client started its server (the relay connected); the count says how many times.
    Connected(u32),
    /// What a client did to one of its connections.
    Signal {
        /// The connection: a server process's stdio, or an HTTP stream.
        channel: Channel,
        /// What happened to it.
        signal: PeerSignal,
    },
    /// A line a client adapter wrote to its own stdout (an outcome report).
    AdapterLine(Vec<u8>),
    /// An adapter stdout line longer than the harness accepts.
    AdapterOverlong,
    /// The target process exited.
    Exited(ExitStatus),
    /// An HTTP response's head arrived (HTTP transports).
    Status {
        /// The request it answers.
        channel: Channel,
        /// What it said.
        head: Head,
    },
    /// The start of a response body that carries no messages (an error page, a body of an
    /// unexpected type), or an SSE event that is no message, for the transcript.
    Body {
        /// The request it answers.
        channel: Channel,
        /// What it held, cut short.
        text: String,
    },
    /// A channel's stream ended (HTTP transports).
    Closed {
        /// The channel.
        channel: Channel,
        /// How it ended.
        end: StreamEnd,
        /// How many body bytes came on it.
        bytes: u64,
    },
    /// What the harness's HTTP server saw of a request a client made (before its message).
    HttpRequest(Box<http_server::ClientRequest>),
}

/// Why a message could not be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendError {
    /// The target's input is closed or the target is gone.
    Gone,
    /// The target stopped reading: its input stayed full for this long.
    Stalled(Duration),
}

/// What a case can do over Streamable HTTP to a server beyond sending messages: hold several
/// sessions, set or remove headers of the next POST, open a GET stream, end a session
/// (see [`Transport::http_steps`]).
pub trait HttpSteps {
    /// The name of the current session (`main` for the first).
    fn session_name(&self) -> &str;

    /// Whether the server gave the current session an id.
    fn has_session_id(&self) -> bool;

    /// Switches to the session `name`, opening it (with no session id yet) if it is new.
    /// Returns whether it is new.
    fn switch_session(&mut self, name: &str) -> bool;

    /// Whether the harness would send header `name` on the next POST.
    fn sends_header(&self, name: &str) -> bool;

    /// A header the next POST carries (an empty value removes a header the harness would
    /// send). Returns an error naming a header that is not a valid HTTP header.
    fn add_header(&mut self, name: &str, value: &str) -> Result<(), String>;

    /// The MCP headers a request carried (and any a `! header` step set or removed), as the
    /// transcript shows them.
    fn shown_headers(&self, channel: Channel) -> Option<&str>;

    /// Opens a GET stream in the current session (HTTP-12).
    fn listen(&mut self) -> Channel;

    /// Ends the current session with a DELETE (HTTP-16); the session keeps its id, so later
    /// requests show what the server does with an ended session.
    fn delete_session(&mut self) -> Channel;
}

/// A connection to one target for one case.
#[allow(async_fn_in_trait)]
pub trait Transport {
    /// Sends one message (the bytes as the case wrote them; the transport adds its framing).
    /// `reply_to` is the channel of the request this message answers, where the transport
    /// has one per request. Returns the channel the message travelled on.
    async fn send(&mut self, bytes: &[u8], reply_to: Option<Channel>)
        -> Result<Channel, SendError>;

    /// The next event, or `None` once the deadline passed or nothing more can come.
    async fn next(&mut self, deadline: Deadline) -> Option<(Instant, Event)>;

    /// Whether nothing more can come: the target's output ended and its process exited.
    fn finished(&self) -> bool;

    /// Whether messages arrive in the order the target wrote them and the target reads what
    /// it is sent in order: then an answer to a later request proves an earlier message was
    /// read (true on stdio; false across HTTP POSTs).
    fn ordered(&self) -> bool;

    /// Whether every request the harness sends has a response channel of its own, which
    /// [`Transport::abort`] can close (true over Streamable HTTP to a server; false on stdio).
    fn channel_per_request(&self) -> bool {
        false
    }

    /// Closes the channel of one request (the 2026-07-28 cancel on HTTP). False where the
    /// transport has no channel per request, or the channel has already ended.
    fn abort(&mut self, channel: Channel) -> bool;

    /// Learns the protocol version the session agreed to (HTTP sends it in a header on every
    /// later request). Nothing to do on stdio.
    fn agreed(&mut self, _version: &str) {}

    /// The steps only Streamable HTTP to a server can carry out (sessions, headers, GET
    /// streams, DELETE); `None` on every other transport, where a case's `! session`,
    /// `! header`, `! listen` and `! delete-session` lines do nothing.
    fn http_steps(&mut self) -> Option<&mut dyn HttpSteps> {
        None
    }

    /// Ends the harness's side of the conversation (closes the target's stdin; for a client
    /// target, the harness's server exits).
    fn close_input(&mut self);

    /// Makes the harness's HTTP server forget the client's session, so that requests carrying
    /// it get 404. False where there are no such sessions.
    fn expire_session(&mut self) -> bool {
        false
    }

    /// Whether the harness's side is still open.
    fn input_open(&self) -> bool;

    /// The target's process, where the harness started one. The process bookkeeping below
    /// (when the target started, its exit status, its process group, its log) is read from
    /// it, in this one place; a transport that may have no process (a running HTTP server the
    /// harness only connects to) keeps its start and its log itself and says so.
    fn process(&self) -> Option<&Process>;

    /// Where the engine reads how busy the machine is and how long the target waited for a
    /// CPU: the kernel's figures for a real target (by default), a script's for a scripted
    /// one. Every wait of a run that follows the load reads it from here.
    fn load(&self) -> Load {
        Load::machine()
    }

    /// When the target was started; transcript times count from here. A transport without a
    /// process overrides it.
    fn started(&self) -> Instant {
        self.process().map_or_else(Instant::now, |p| p.started)
    }

    /// The target process's exit status, once it has exited.
    fn exit_status(&self) -> Option<ExitStatus> {
        self.process().and_then(Process::exit_status)
    }

    /// The process group the target runs in, where the harness started it (its waits for a
    /// CPU are read from it).
    fn process_group(&self) -> Option<i32> {
        self.process().map(Process::group)
    }

    /// Whether the target was started for this case, so that nothing of earlier cases is in
    /// its state (false for a running server the harness only connects to: its fixtures, such
    /// as the `cancellations` witness, remember every case so far).
    fn fresh(&self) -> bool {
        true
    }

    /// Adds a note about the target to its log. A transport without a process overrides it.
    fn note(&self, text: String) {
        if let Some(process) = self.process() {
            process.note(text);
        }
    }

    /// Ends the target (closing its input, a grace period, then killing every process it
    /// started) and returns its log.
    async fn shutdown(&mut self, grace: Duration) -> TargetLog;
}
