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
//! mirror its body instead (`http_headers`), and an error status's JSON body is the answer. With an argv the server is started as a process (`process.rs`: own process
//! group, bounded logs, always killed and reaped); `{port}` in the URL and the argv becomes a
//! free loopback port, and the transport waits until that port accepts connections and
//! answers HTTP (`ready`). The process's stdout is a log there, not the protocol.
mod ready;
mod requests;

use super::http_arrival::StampingConnector;
use super::http_stream::Sink;
use crate::transport::process::{display_argv, Launch, Process, ProcessEvent, TargetLog};
use crate::transport::{Channel, Event, SendError, StreamEnd, Transport};
use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Method, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use ready::Readiness;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use tokio::time::Instant as Deadline;

/// The placeholder for a free loopback port in a URL or an argv.
pub const PORT: &str = "{port}";
/// How long the harness waits for a DELETE of each session when it leaves a server it did
/// not start.
const GOODBYE: Duration = Duration::from_millis(500);

/// How to reach an HTTP server target.
#[derive(Debug, Clone)]
pub struct HttpTarget {
    /// The MCP endpoint, possibly with `{port}`.
    pub url: String,
    /// How to start the server, when the harness starts it (once per case).
    pub launch: Option<Launch>,
}

impl HttpTarget {
    /// The target as reports show it.
    pub fn display(&self) -> String {
        match &self.launch {
            Some(launch) => format!("{} (started as {})", self.url, display_argv(&launch.argv)),
            None => self.url.clone(),
        }
    }

    /// Whether every case gets a server of its own on a port of its own: only then may cases
    /// run in parallel without sharing one server's state.
    pub fn isolated(&self) -> bool {
        self.launch.is_some() && self.url.contains(PORT)
    }
}

/// One MCP session the case holds.
#[derive(Debug, Clone)]
struct Session {
    /// The name the case gives it (`main` for the first).
    name: String,
    /// The `Mcp-Session-Id` the server assigned, if it did.
    id: Option<HeaderValue>,
    /// The protocol version agreed in it.
    version: Option<String>,
}

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
}

/// A free loopback port (the OS picks one; it is released for the server to take). The OS may
/// offer a port again as soon as it is released, before the server that was given it has
/// started listening: two cases of one run would then share a server. So a port is handed
/// out once per run.
fn free_port() -> std::io::Result<u16> {
    static GIVEN: Mutex<Option<HashSet<u16>>> = Mutex::new(None);
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    let given = given.get_or_insert_with(HashSet::new);
    let mut port = 0;
    for _ in 0..64 {
        port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        if given.insert(port) {
            break;
        }
    }
    Ok(port)
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
        let wants_port = target.url.contains(PORT)
            || target
                .launch
                .as_ref()
                .is_some_and(|l| l.argv.iter().any(|a| a.contains(PORT)));
        let port = if wants_port {
            free_port()
                .map_err(|e| format!("cannot find a free loopback port: {e}"))?
                .to_string()
        } else {
            String::new()
        };
        let url_text = target.url.replace(PORT, &port);
        let url = parse_url(&url_text)?;
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(connect_timeout));
        connector.set_nodelay(true);
        // One connection per request, never pooled: closing a channel closes exactly its
        // connection, and no request waits for a connection another one holds.
        let client = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(0)
            .http1_max_buf_size(64 * 1024)
            .build(StampingConnector(connector));
        let (sink, events) = mpsc::channel(256);
        let mut http = Http {
            client,
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
        };
        if let Some(launch) = &target.launch {
            let mut launch = launch.clone();
            for arg in &mut launch.argv {
                *arg = arg.replace(PORT, &port);
            }
            for (_, value) in &mut launch.env {
                *value = value.replace(PORT, &port);
            }
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
        let mut allowed = crate::load::stretched(startup, crate::load::stretch());
        let mut read = Deadline::now();
        let path = self.url.path().to_string();
        let mut closed = false;
        loop {
            let attempt = tokio::time::timeout(
                Duration::from_millis(200),
                tokio::net::TcpStream::connect(&authority),
            );
            if let Ok(Ok(stream)) = attempt.await {
                let patience =
                    crate::load::stretched(Duration::from_secs(1), crate::load::stretch());
                if ready::probe(stream, &authority, &path, patience).await == Readiness::Ready {
                    return;
                }
                if !closed {
                    closed = true;
                    self.note(format!("[harness] the server at {url} accepted a connection and gave no HTTP answer (a proxy whose server is still starting?); waiting until it answers"));
                }
            }
            if read.elapsed() >= Duration::from_secs(1) {
                allowed = allowed.max(crate::load::stretched(startup, crate::load::stretch()));
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
            ProcessEvent::Line(bytes) => format!("[stdout] {}", String::from_utf8_lossy(&bytes)),
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

fn parse_url(text: &str) -> Result<Uri, String> {
    let url: Uri = text.parse().map_err(|e| {
        format!("`{text}` is not a URL ({e}); write the MCP endpoint, e.g. http://127.0.0.1:{{port}}/mcp")
    })?;
    match url.scheme_str() {
        Some("http") if url.authority().is_some() => Ok(url),
        Some("https") => Err(format!(
            "`{text}`: https is not supported yet; test the server over plain http on a loopback address"
        )),
        _ => Err(format!(
            "`{text}` is not an http URL; write the MCP endpoint, e.g. http://127.0.0.1:{{port}}/mcp"
        )),
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
            _ = tokio::time::sleep_until(deadline) => None,
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

    fn http(&mut self) -> Option<&mut Http> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked() {
        assert!(parse_url("http://127.0.0.1:8080/mcp").is_ok());
        assert!(parse_url("https://example.com/mcp")
            .unwrap_err()
            .contains("https is not supported"));
        assert!(parse_url("ftp://127.0.0.1:8080/mcp")
            .unwrap_err()
            .contains("not an http URL"));
        assert!(parse_url("/mcp").unwrap_err().contains("not an http URL"));
        assert!(parse_url("http://[::1/mcp")
            .unwrap_err()
            .contains("not a URL"));
    }

    #[test]
    fn only_a_started_server_on_its_own_port_is_isolated() {
        let launch = Some(Launch::argv(vec!["srv".into()]));
        let target = |url: &str, launch: Option<Launch>| HttpTarget {
            url: url.into(),
            launch,
        };
        assert!(target("http://127.0.0.1:{port}/mcp", launch.clone()).isolated());
        assert!(!target("http://127.0.0.1:9/mcp", launch).isolated());
        assert!(!target("http://127.0.0.1:{port}/mcp", None).isolated());
    }
}
