//! A server target over Streamable HTTP (protocol versions 2025-03-26 and later): every
//! message the harness sends is one POST, and the response to each POST is its own stream.
//!
//! [`Http::send`] starts the POST and returns its [`Channel`] at once; a task per POST reads
//! the response (`http_stream`) and reports its head, its messages and its end as events, so
//! the engine sees every stream in one timeline. POSTs travel on separate connections, so
//! the order they arrive in proves nothing about the order the server read them
//! ([`Transport::ordered`] is false): the engine's barrier over HTTP rests on statuses and a
//! grace window instead. Closing a channel ([`Transport::abort`]) drops that POST's
//! connection: a disconnect up to 2025-11-25, the cancel itself on 2026-07-28.
//!
//! The transport keeps the sessions a case opens (`Mcp-Session-Id`, learned from the response
//! that carried it, and the agreed `MCP-Protocol-Version`), so a case can hold two sessions
//! at once. In the stateless era there are no sessions: each POST carries the headers that
//! mirror its body instead (`http_headers`), and an error status's JSON body is the answer.
//!
//! With an argv the server is started as a process (`process.rs`: own process group, bounded
//! logs, always killed and reaped); `{port}` in the URL and the argv becomes a free loopback
//! port (`target`), and the transport waits until that port accepts connections and answers
//! HTTP (`ready`). The process's stdout is a log there, not the protocol.

mod ready;
mod requests;
mod target;

pub use target::{HttpTarget, PORT};

use super::http_arrival::StampingConnector;
use super::http_stream::Sink;
use crate::load::source::Load;
use crate::transport::process::{display_argv, Process, ProcessEvent, TargetLog};
use crate::transport::{Channel, Event, HttpSteps, SendError, StreamEnd, Transport};
use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Method, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use ready::Readiness;
use requests::Session;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use target::parse_url;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use tokio::time::Instant as Deadline;

/// How long the harness waits for a DELETE of each session when it leaves a server it did
/// not start.
const GOODBYE: Duration = Duration::from_millis(500);

/// The Streamable HTTP transport.
pub struct Http {
    client: Client<StampingConnector, Full<Bytes>>,
    url: Uri,
    process: Option<Process>,
    log: Arc<Mutex<TargetLog>>,
    started: Instant,
    sink: Sink,
    events: mpsc::Receiver<(Instant, Event)>,
    /// Events the transport itself produced (a channel it closed), delivered first.
    local: VecDeque<(Instant, Event)>,
    counts: [u32; 3],
    tasks: HashMap<Channel, AbortHandle>,
    sessions: Vec<Session>,
    current: usize,
    session_of: HashMap<Channel, usize>,
    /// The MCP headers (and any a case set) each request carried, for the transcript.
    shown_headers: HashMap<Channel, String>,
    next_headers: Vec<(HeaderName, Option<HeaderValue>)>,
    input_open: bool,
    refused: bool,
    process_done: bool,
    /// POSTs that carried an `initialize`: their response assigns the session id.
    initializing: HashSet<Channel>,
    /// The process group of a server the harness started for several cases, when this
    /// connection is one case's (its waits for a CPU lengthen the case's waits).
    shared_group: Option<i32>,
    /// The machine's load, which stretches the wait for a started server to answer.
    load: Load,
}

impl Http {
    /// Connects to (and, with a launch, starts) the target. `{port}` becomes a free loopback
    /// port; a started server gets until `startup` to accept connections. Fails only when the
    /// URL is unusable or the process cannot be started.
    pub async fn start(
        target: &HttpTarget,
        connect_timeout: Duration,
        startup: Duration,
    ) -> Result<Http, String> {
        let port = target.port()?;
        let url_text = target.url.replace(PORT, &port);
        let url = parse_url(&url_text)?;
        let (sink, events) = mpsc::channel(256);
        let mut http = Http {
            client: client(connect_timeout),
            url,
            process: None,
            log: Arc::new(Mutex::new(TargetLog::default())),
            started: Instant::now(),
            sink,
            events,
            local: VecDeque::new(),
            counts: [0; 3],
            tasks: HashMap::new(),
            sessions: vec![Session {
                name: "main".into(),
                id: None,
                version: None,
            }],
            current: 0,
            session_of: HashMap::new(),
            next_headers: vec![],
            input_open: true,
            refused: false,
            process_done: false,
            initializing: HashSet::new(),
            shown_headers: HashMap::new(),
            shared_group: None,
            load: Load::machine(),
        };
        if let Some(launch) = target.launch_at(&port) {
            let process = Process::spawn(&launch).map_err(|e| {
                format!(
                    "cannot start target `{}`: {e}; check the command after `--` (it is run without a shell)",
                    display_argv(&launch.argv)
                )
            })?;
            http.log = process.log.clone();
            http.started = process.started;
            http.process = Some(process);
            http.wait_listening(&url_text, startup).await;
        }
        Ok(http)
    }

    /// Waits until the server accepts connections and answers HTTP on them (`ready`: a proxy
    /// in front of a server still starting accepts and closes), or exits, or `startup`,
    /// stretched for a busy machine, passes; keeps its output drained meanwhile.
    async fn wait_listening(&mut self, url: &str, startup: Duration) {
        let Some(authority) = self.url.authority().map(|a| a.to_string()) else {
            return;
        };
        let authority = if self.url.port().is_some() {
            authority
        } else {
            format!("{authority}:80")
        };
        // Stretched for the machine's CPU pressure, as every wait for a target is: a start
        // that is slow on a busy machine is not a failed one (re-read about once a second).
        let began = Deadline::now();
        let mut allowed = self.load.stretched(startup);
        let mut read = Deadline::now();
        let path = self.url.path().to_string();
        let mut closed = false;
        loop {
            let attempt = tokio::time::timeout(
                Duration::from_millis(200),
                tokio::net::TcpStream::connect(&authority),
            );
            if let Ok(Ok(stream)) = attempt.await {
                let patience = self.load.stretched(Duration::from_secs(1));
                if ready::probe(stream, &authority, &path, patience).await == Readiness::Ready {
                    return;
                }
                if !closed {
                    closed = true;
                    self.note(format!("[harness] the server at {url} accepted a connection and gave no HTTP answer (a proxy whose server is still starting?); waiting until it answers"));
                }
            }
            if read.elapsed() >= Duration::from_secs(1) {
                allowed = allowed.max(self.load.stretched(startup));
                read = Deadline::now();
            }
            if self.process_done || began.elapsed() >= allowed {
                break;
            }
            // Poll again soon, taking in the process's output meanwhile.
            let pause = Deadline::now() + Duration::from_millis(20);
            while let Some(event) = self.process_event(pause).await {
                self.local.push_back(event);
            }
        }
        let why = if self.process_done {
            "exited before it accepted connections".to_string()
        } else if closed {
            format!("accepted connections but gave no HTTP answer within {allowed:?} (raise --startup-timeout for a slow start)")
        } else {
            format!("did not accept connections within {allowed:?} (raise --startup-timeout for a slow start)")
        };
        self.note(format!("[harness] the server at {url} {why}"));
    }

    /// The endpoint, with the port the harness chose.
    pub fn endpoint(&self) -> String {
        self.url.to_string()
    }

    /// Marks this connection as one case's to a server started for several cases, running in
    /// process group `group`.
    pub fn share_group(&mut self, group: Option<i32>) {
        self.shared_group = group;
    }

    /// One event from the started process, if one comes before the deadline.
    async fn process_event(&mut self, deadline: Deadline) -> Option<(Instant, Event)> {
        process_event(&mut self.process, &mut self.process_done, deadline).await
    }
}

/// The HTTP client of one case: one connection per request, never pooled, so that closing a
/// channel closes exactly its connection, and no request waits for a connection another one
/// holds.
fn client(connect_timeout: Duration) -> Client<StampingConnector, Full<Bytes>> {
    let mut connector = HttpConnector::new();
    connector.set_connect_timeout(Some(connect_timeout));
    connector.set_nodelay(true);
    Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(0)
        .http1_max_buf_size(64 * 1024)
        .build(StampingConnector(connector))
}

/// One event from a started process, if one comes before the deadline; its stdout lines go
/// to the log, since over HTTP they are no protocol.
async fn process_event(
    process: &mut Option<Process>,
    done: &mut bool,
    deadline: Deadline,
) -> Option<(Instant, Event)> {
    loop {
        let process = process.as_mut().filter(|_| !*done)?;
        let (at, event) = process.next_event(deadline).await?;
        let text = match event {
            ProcessEvent::Line(bytes) | ProcessEvent::Unterminated(bytes) => {
                format!("[stdout] {}", String::from_utf8_lossy(&bytes))
            }
            ProcessEvent::Overlong => "[stdout] a line too long to keep".into(),
            ProcessEvent::StdoutClosed | ProcessEvent::Partial => continue,
            ProcessEvent::Exited(status) => {
                *done = true;
                return Some((at, Event::Exited(status)));
            }
        };
        process.note(text);
    }
}

impl Transport for Http {
    async fn send(&mut self, bytes: &[u8], _: Option<Channel>) -> Result<Channel, SendError> {
        if !self.input_open {
            return Err(SendError::Gone);
        }
        let channel = self.request(Method::POST, Some(bytes));
        let initialize = serde_json::from_slice::<serde_json::Value>(bytes)
            .is_ok_and(|v| v.get("method").and_then(|m| m.as_str()) == Some("initialize"));
        if initialize {
            self.initializing.insert(channel);
        }
        Ok(channel)
    }

    async fn next(&mut self, deadline: Deadline) -> Option<(Instant, Event)> {
        if let Some(event) = self.local.pop_front() {
            return Some(event);
        }
        let event = tokio::select! {
            event = self.events.recv() => event,
            event = process_event(&mut self.process, &mut self.process_done, deadline),
                if self.process.is_some() && !self.process_done => event,
            () = tokio::time::sleep_until(deadline) => None,
        }?;
        self.learn(&event.1);
        if self.refused(&event.1) {
            self.local.push_back((event.0, Event::OutputClosed));
        }
        Some(event)
    }

    /// Nothing more can come once the server is gone (it exited, or refuses connections) and
    /// no response is still being read.
    fn finished(&self) -> bool {
        (self.process_done || self.refused) && self.tasks.is_empty() && self.local.is_empty()
    }

    fn ordered(&self) -> bool {
        false
    }

    fn channel_per_request(&self) -> bool {
        true
    }

    fn abort(&mut self, channel: Channel) -> bool {
        // A reader that has finished has delivered the stream's own end (still to be taken
        // in): the stream ended before the harness could close it.
        if self
            .tasks
            .get(&channel)
            .is_none_or(AbortHandle::is_finished)
        {
            return false;
        }
        let Some(task) = self.tasks.remove(&channel) else {
            return false;
        };
        task.abort();
        self.local.push_back((
            Instant::now(),
            Event::Closed {
                channel,
                end: StreamEnd::Aborted,
                bytes: 0,
            },
        ));
        true
    }

    fn agreed(&mut self, version: &str) {
        self.sessions[self.current].version = Some(version.to_string());
    }

    fn http_steps(&mut self) -> Option<&mut dyn HttpSteps> {
        Some(self)
    }

    fn close_input(&mut self) {
        self.input_open = false;
    }

    fn input_open(&self) -> bool {
        self.input_open
    }

    fn started(&self) -> Instant {
        self.started
    }

    fn process(&self) -> Option<&Process> {
        self.process.as_ref()
    }

    fn load(&self) -> Load {
        self.load.clone()
    }

    /// A shared server's group when this connection did not start one of its own.
    fn process_group(&self) -> Option<i32> {
        self.process
            .as_ref()
            .map(Process::group)
            .or(self.shared_group)
    }

    fn fresh(&self) -> bool {
        self.process.is_some()
    }

    fn note(&self, text: String) {
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(self.started.elapsed(), text);
    }

    /// Drops every open stream, ends the sessions of a server the harness did not start
    /// (DELETE, briefly), and kills a server it started at once: an HTTP server does not
    /// exit when its stdin closes, so there is nothing to wait for.
    async fn shutdown(&mut self, _grace: Duration) -> TargetLog {
        for (_, task) in self.tasks.drain() {
            task.abort();
        }
        if self.process.is_none() && !self.refused {
            let goodbyes: Vec<usize> = (0..self.sessions.len())
                .filter(|i| self.sessions[*i].id.is_some())
                .collect();
            for index in goodbyes {
                self.current = index;
                self.request(Method::DELETE, None);
            }
            let until = Deadline::now() + GOODBYE;
            while !self.tasks.is_empty() {
                match tokio::time::timeout_at(until, self.events.recv()).await {
                    Ok(Some((_, Event::Closed { channel, .. }))) => {
                        self.tasks.remove(&channel);
                    }
                    Ok(Some(_)) => {}
                    _ => break,
                }
            }
            for (_, task) in self.tasks.drain() {
                task.abort();
            }
        }
        match &mut self.process {
            Some(process) => {
                process.shutdown(Duration::ZERO).await;
                process.take_log()
            }
            None => std::mem::take(&mut *self.log.lock().unwrap_or_else(|e| e.into_inner())),
        }
    }
}
