//! Plays one case against a client target: the harness is the server.
//!
//! The client under test is an adapter program around some MCP client library. The harness
//! starts it with the case's actions and a server command ([`crate::relay`]) that connects
//! back to the harness, so every line the client writes to "its server" arrives here, and
//! every line a case sends reaches the client as its server's stdout. The adapter reports how
//! each action ended as JSON lines on its own stdout; `@outcomes` judges them.
//!
//! Every message the client writes goes through [`Run::receive`], which applies the standing
//! rules for clients (JSON-RPC shape, cancels only for the client's own live requests and
//! never for `initialize`, unique progress tokens) before any step looks at it. The adapter
//! contract is described in the README ("Testing a client").

use crate::case::{Arrival, Case, Span, Step, StepKind, HANDSHAKE_VERSIONS};
use crate::envelope::{self, short};
use crate::outcome::{Finding, Outcome, Severity};
use crate::pattern::{self, canonical, id_key, Captures};
use crate::relay::{STDIN_CLOSED, TERMINATED};
use crate::run::{Options, Report};
use crate::target::{display_argv, read_lines, Event, Launch, Target, MAX_LINE};
use crate::transcript::{self, Direction, Entry};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::time::Instant as Deadline;

/// How long a cancel may trail the response it crossed before it counts as a cancel of a
/// finished request (CAN-03).
pub const T_GRACE: Duration = Duration::from_millis(250);
/// How long the client may take to start and connect its server.
pub const START_TIMEOUT: Duration = Duration::from_secs(20);

/// Environment variables the adapter is started with.
pub const ENV_SERVER: &str = "CONFORMANCE_SERVER";
/// The actions, as a JSON array.
pub const ENV_ACTIONS: &str = "CONFORMANCE_ACTIONS";
/// The case id.
pub const ENV_CASE: &str = "CONFORMANCE_CASE";
/// The protocol version the harness plays.
pub const ENV_VERSION: &str = "CONFORMANCE_PROTOCOL_VERSION";

/// The tools the harness's server lists when a client asks (`tools/list` is answered by the
/// harness unless a case scripts it).
fn tool_list() -> Value {
    let tool = |name: &str, description: &str, properties: Value| {
        json!({"name": name, "description": description,
               "inputSchema": {"type": "object", "properties": properties}})
    };
    json!({"tools": [
        tool("work", "Runs until cancelled, reporting progress.", json!({})),
        tool("echo", "Returns its text.", json!({"text": {"type": "string"}})),
    ]})
}

/// Something the relay connection carried.
enum Wire {
    Line(Vec<u8>),
    Overlong,
    StdinClosed,
    Terminated,
    Closed,
}

enum Stop {
    /// The client ended the session after finishing its actions; the rest of the steps
    /// have nobody to talk to, which is no fault.
    Done,
    Gone,
    Hung,
    Skip(String),
}

/// A request the client sent.
struct ClientRequest {
    method: String,
    answered: Option<Instant>,
    cancelled: bool,
    token: Option<String>,
}

/// A request the harness sent (a case's `<` request or a barrier ping).
struct HarnessRequest {
    internal: bool,
    answers: u32,
}

struct Run<'a> {
    case: &'a Case,
    options: &'a Options,
    target: Target,
    listener: TcpListener,
    writer: Option<OwnedWriteHalf>,
    wire: Option<mpsc::Receiver<(Instant, Wire)>>,
    transcript: Vec<Entry>,
    findings: Vec<Finding>,
    captures: Captures,
    expected: Vec<String>,
    line: usize,
    last_send: Instant,
    counter: u32,
    exited: bool,
    adapter_stdout_closed: bool,
    connections: u32,
    stdin_closed: Option<Instant>,
    terminated: Option<Instant>,
    wire_closed: Option<Instant>,
    client_requests: HashMap<String, ClientRequest>,
    harness_requests: HashMap<String, HarnessRequest>,
    scripted: HashSet<String>,
    outcomes: BTreeMap<usize, Value>,
    version: Option<String>,
    /// A `! arrives` window for the next expected message.
    arrival: Option<Arrival>,
    /// When the last expected message arrived.
    last_arrival: Option<Duration>,
}

/// Methods the case's `>` lines expect: the harness leaves those to the case and answers
/// any other request itself.
fn scripted_methods(steps: &[Step], out: &mut HashSet<String>) {
    for step in steps {
        match &step.kind {
            StepKind::Expect(text) => {
                let probe = text.replace("{$", "{");
                if let Some(method) = serde_json::from_str::<Value>(&probe)
                    .ok()
                    .and_then(|v| v.get("method").and_then(Value::as_str).map(str::to_string))
                {
                    out.insert(method);
                }
            }
            StepKind::Repeat { steps, .. } | StepKind::Sweep { steps, .. } => {
                scripted_methods(steps, out)
            }
            _ => {}
        }
    }
}

/// Runs one client case: starts the adapter `launch` with the case's actions and a server
/// command `relay` (the relay program's argv; the harness appends its address), plays the
/// steps as the server, and judges what the client did and what the adapter reported. Never
/// panics on client behaviour; always kills and reaps the adapter and its children.
pub async fn run_client_case(
    case: &Case,
    launch: &Launch,
    relay: &[String],
    options: &Options,
) -> Result<Report, String> {
    let started = Instant::now();
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("cannot listen on a loopback port for the relay: {e}"))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("cannot read the relay port: {e}"))?;
    let mut server = relay.to_vec();
    server.push(addr.to_string());
    let mut launch = launch.clone();
    launch.env.extend([
        (ENV_SERVER.to_string(), json!(server).to_string()),
        (ENV_ACTIONS.to_string(), json!(case.actions).to_string()),
        (ENV_CASE.to_string(), case.id.clone()),
        (ENV_VERSION.to_string(), options.protocol_version.clone()),
    ]);
    let target = Target::spawn(&launch).map_err(|e| {
        format!(
            "cannot start client `{}`: {e}; check the command after `--` (it is run without a shell)",
            display_argv(&launch.argv)
        )
    })?;
    let mut scripted = HashSet::new();
    scripted_methods(&case.steps, &mut scripted);
    let mut run = Run {
        case,
        options,
        target,
        listener,
        writer: None,
        wire: None,
        transcript: vec![],
        findings: vec![],
        captures: Captures::new(),
        expected: vec![],
        line: 0,
        last_send: Instant::now(),
        counter: 0,
        exited: false,
        adapter_stdout_closed: false,
        connections: 0,
        stdin_closed: None,
        terminated: None,
        wire_closed: None,
        client_requests: HashMap::new(),
        harness_requests: HashMap::new(),
        scripted,
        outcomes: BTreeMap::new(),
        version: None,
        arrival: None,
        last_arrival: None,
    };
    let limit = case.timeout.unwrap_or(options.case_timeout);
    let mut skip = None;
    match tokio::time::timeout(limit, run.play()).await {
        Ok(Ok(()) | Err(Stop::Done)) => run.finish().await,
        Ok(Err(Stop::Skip(reason))) => skip = Some(reason),
        Ok(Err(Stop::Gone | Stop::Hung)) => run.judge_outcomes(),
        Err(_) => {
            run.finding(
                Severity::Fail,
                "TMO-02",
                format!(
                    "the case did not finish within its time limit of {}; the client hung (see \
                     the transcript so far), or raise the limit with --timeout",
                    crate::transcript::millis(limit).trim_start_matches('+')
                ),
            );
            run.judge_outcomes();
        }
    }
    run.writer = None;
    run.target.shutdown(Duration::from_millis(250)).await;
    let stderr = std::mem::take(&mut *run.target.stderr.lock().unwrap_or_else(|e| e.into_inner()));
    let outcome = if skip.is_some() {
        Outcome::Skip
    } else {
        Outcome::from_findings(case.level, &run.findings)
    };
    Ok(Report {
        outcome,
        findings: run.findings,
        skip_reason: skip,
        transcript: run.transcript,
        stderr,
        expected: run.expected,
        bless: vec![],
        version: run.version,
        duration: started.elapsed(),
        target: display_argv(&launch.argv),
    })
}

impl Run<'_> {
    fn finding(&mut self, severity: Severity, requirement: &'static str, message: String) {
        self.findings.push(Finding {
            severity,
            line: self.line,
            requirement,
            message,
        });
    }

    fn case_severity(&self) -> Severity {
        Severity::of_level(self.case.level)
    }

    fn log(&self, text: String) {
        let mut log = self.target.stderr.lock().unwrap_or_else(|e| e.into_inner());
        log.total += 1;
        if log.lines.len() == crate::target::STDERR_KEPT {
            log.lines.pop_front();
        }
        log.lines.push_back((self.target.started.elapsed(), text));
    }

    async fn play(&mut self) -> Result<(), Stop> {
        self.connect().await?;
        if self.case.handshake {
            self.handshake().await?;
        } else {
            self.captures
                .insert("version".into(), json!(self.options.protocol_version));
        }
        let steps = self.case.steps.clone();
        self.steps(&steps).await
    }

    /// Waits for the client to start its server, which connects back here.
    async fn connect(&mut self) -> Result<(), Stop> {
        let deadline = Deadline::now() + START_TIMEOUT.min(self.options.case_timeout);
        while self.connections == 0 {
            if !self.next(deadline).await || (self.exited && self.connections == 0) {
                let how = match self.target.exit_status() {
                    Some(status) => format!("it exited with {status}"),
                    None => format!("nothing connected within {START_TIMEOUT:?}"),
                };
                self.finding(
                    Severity::Fail,
                    "STD-01",
                    format!(
                        "the client never started the server ({how}); the adapter must spawn the \
                         argv in {ENV_SERVER} as its stdio server (see its stderr below)"
                    ),
                );
                return Err(Stop::Gone);
            }
        }
        Ok(())
    }

    async fn handshake(&mut self) -> Result<(), Stop> {
        self.line = 0;
        let deadline = Deadline::now() + self.options.reply_timeout;
        let index = loop {
            let found = self.transcript.iter().position(|e| {
                e.direction == Direction::Received
                    && e.consumed_by.is_none()
                    && e.value.as_ref().and_then(|v| v.get("method")) == Some(&json!("initialize"))
            });
            if let Some(index) = found {
                break index;
            }
            if !self.next(deadline).await {
                self.finding(
                    Severity::Fail,
                    "LIF-01",
                    format!(
                        "the client sent no `initialize` within {:?} of starting its server",
                        self.options.reply_timeout
                    ),
                );
                return Err(Stop::Hung);
            }
        };
        self.transcript[index].internal = true;
        self.transcript[index].consumed_by = Some(0);
        let request = self.transcript[index].value.clone().unwrap_or(Value::Null);
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        let asked = request
            .pointer("/params/protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let version = if HANDSHAKE_VERSIONS.contains(&asked) {
            asked.to_string()
        } else {
            self.options.protocol_version.clone()
        };
        self.captures.insert("init".into(), id.clone());
        self.captures.insert("version".into(), json!(version));
        self.version = Some(version.clone());
        if !self.case.versions.contains(&version) {
            return Err(Stop::Skip(format!(
                "the case applies to {}; the client asked for {version}",
                self.case.versions.join(", ")
            )));
        }
        let answer = json!({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "conformance", "version": env!("CARGO_PKG_VERSION")}
        }});
        self.write(answer.to_string(), true).await
    }

    fn steps<'s>(
        &'s mut self,
        steps: &'s [Step],
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Stop>> + 's>> {
        Box::pin(async move {
            for step in steps {
                self.line = step.line;
                self.step(step).await?;
            }
            Ok(())
        })
    }

    fn span(&self, span: &Span) -> Duration {
        span.resolve(&self.captures)
    }

    /// A reference to a capture that an earlier, already reported mismatch never made ends
    /// the case quietly; otherwise it is a bug in the case.
    fn missing_capture(&mut self, name: String) -> Stop {
        if !self.findings.iter().any(|f| f.severity > Severity::Note) {
            self.finding(
                Severity::Fail,
                "case",
                format!("bug in case: `{{${name}}}` is used before anything was captured into it"),
            );
        }
        Stop::Hung
    }

    async fn step(&mut self, step: &Step) -> Result<(), Stop> {
        match &step.kind {
            StepKind::Send(text) => {
                let text = match pattern::substitute(text, &self.captures) {
                    Ok(text) => text,
                    Err(name) => return Err(self.missing_capture(name)),
                };
                self.expected.push(format!("< {text}"));
                self.write(text, false).await
            }
            StepKind::Expect(text) => self.expect(step.line, text).await,
            StepKind::Barrier => self.barrier().await,
            StepKind::After(span) => {
                let until = self.last_send + self.span(span);
                self.pump_until(Deadline::from_std(until)).await;
                Ok(())
            }
            StepKind::Wait(span) => {
                let until = Deadline::now() + self.span(span);
                self.pump_until(until).await;
                Ok(())
            }
            StepKind::Exit(span) => {
                let until = Deadline::now() + self.span(span);
                while !self.exited && self.next(until).await {}
                self.judge_exit(self.span(span));
                Ok(())
            }
            StepKind::Repeat { .. } | StepKind::Sweep { .. } => {
                let (inner, rounds) = step.kind.rounds().expect("a loop has rounds");
                for bindings in &rounds {
                    self.captures.extend(bindings.iter().cloned());
                    self.steps(inner).await?;
                }
                for (name, _) in rounds.first().into_iter().flatten() {
                    self.captures.remove(name);
                }
                Ok(())
            }
            StepKind::Arrives(arrival) => {
                self.arrival = Some(*arrival);
                Ok(())
            }
            StepKind::Silent { .. } | StepKind::Witness(_) | StepKind::CloseStdin => {
                self.finding(
                    Severity::Fail,
                    "case",
                    "bug in case: `! silent`, `! witness` and `! close-stdin` are for server cases"
                        .into(),
                );
                Err(Stop::Hung)
            }
        }
    }

    /// `! exit D` in a client case: the client ends its session within D, and it does so the
    /// stdio way (STD-06): the server's stdin is closed before any signal.
    fn judge_exit(&mut self, within: Duration) {
        let shown = crate::transcript::millis(within);
        let shown = shown.trim_start_matches('+');
        if !self.exited {
            self.finding(
                self.case_severity(),
                "STD-06",
                format!("the client was still running {shown} after its last action"),
            );
            return;
        }
        match (self.stdin_closed, self.terminated, self.wire_closed) {
            (Some(_), None, _) => {}
            (Some(eof), Some(term), _) if eof <= term => {}
            (_, Some(_), _) => self.finding(
                self.case_severity(),
                "STD-06",
                "the client sent SIGTERM to its server without closing the server's stdin first"
                    .into(),
            ),
            (None, None, Some(_)) => self.finding(
                self.case_severity(),
                "STD-06",
                "the client killed its server without closing the server's stdin first".into(),
            ),
            (None, None, None) => self.finding(
                self.case_severity(),
                "STD-06",
                "the client exited and left its server running with stdin open".into(),
            ),
        }
    }

    /// Writes one line to the client (as its server's stdout) and records what it means.
    async fn write(&mut self, text: String, internal: bool) -> Result<(), Stop> {
        let value: Option<Value> = serde_json::from_str(&text).ok();
        if let Some(msg) = value.as_ref().and_then(Value::as_object) {
            let id = msg.get("id").filter(|id| id.is_string() || id.is_number());
            match (msg.get("method"), id) {
                (Some(_), Some(id)) => {
                    self.harness_requests.insert(
                        id_key(id),
                        HarnessRequest {
                            internal,
                            answers: 0,
                        },
                    );
                }
                (None, Some(id)) => {
                    if let Some(r) = self.client_requests.get_mut(&id_key(id)) {
                        r.answered.get_or_insert_with(Instant::now);
                    }
                }
                _ => {}
            }
        }
        self.transcript.push(Entry {
            at: self.target.started.elapsed(),
            direction: Direction::Sent,
            text: text.clone(),
            value,
            internal,
            consumed_by: None,
            shown: None,
        });
        self.last_send = Instant::now();
        let written = match self.writer.as_mut() {
            Some(w) => {
                let mut buf = text.into_bytes();
                buf.push(b'\n');
                w.write_all(&buf).await.is_ok()
            }
            None => false,
        };
        if !written {
            // The adapter's last outcome lines travel on another pipe: let them arrive.
            let until = Deadline::now() + Duration::from_millis(200);
            while !self.actions_done() && !self.exited && Box::pin(self.next(until)).await {}
            if self.actions_done() {
                return Err(Stop::Done);
            }
            self.gone();
            return Err(Stop::Gone);
        }
        Ok(())
    }

    /// Whether the adapter reported every action but `exit`: a session that ends after this
    /// ended as the case told it to.
    fn actions_done(&self) -> bool {
        self.case
            .actions
            .iter()
            .enumerate()
            .all(|(i, a)| a.get("exit").is_some() || self.outcomes.contains_key(&i))
    }

    fn gone(&mut self) {
        if self.findings.iter().any(|f| f.requirement == "CAN-08") {
            return;
        }
        let how = match (self.stdin_closed, self.target.exit_status()) {
            (Some(_), _) => "it closed the server's stdin".to_string(),
            (None, Some(status)) => format!("it exited with {status}"),
            (None, None) => "the server connection dropped".to_string(),
        };
        self.finding(
            Severity::Fail,
            "CAN-08",
            format!("the client ended the session while the case still needed it ({how}); see its stderr"),
        );
    }

    async fn pump_until(&mut self, deadline: Deadline) {
        while self.next(deadline).await {}
    }

    /// Takes in one event from the adapter or the relay; false once the deadline passed or
    /// nothing more can come.
    async fn next(&mut self, deadline: Deadline) -> bool {
        let wire_done = self.wire.is_none() && self.connections > 0;
        if self.exited && self.adapter_stdout_closed && wire_done {
            return false;
        }
        let wire = async {
            match self.wire.as_mut() {
                Some(rx) => rx.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            event = self.target.next_event(deadline) => match event {
                None => false,
                Some((at, event)) => {
                    self.adapter_event(at, event);
                    true
                }
            },
            event = wire => {
                match event {
                    Some((at, event)) => self.wire_event(at, event).await,
                    None => self.wire = None,
                }
                true
            }
            accepted = self.listener.accept() => {
                if let Ok((stream, _)) = accepted {
                    self.connected(stream);
                }
                true
            }
        }
    }

    fn connected(&mut self, stream: tokio::net::TcpStream) {
        self.connections += 1;
        if self.connections > 1 {
            self.finding(
                self.case_severity(),
                "CAN-08",
                "the client started its server a second time: the session was torn down and \
                 restarted (the transcript shows the first session only)"
                    .into(),
            );
            return;
        }
        let _ = stream.set_nodelay(true);
        let (read, write) = stream.into_split();
        self.writer = Some(write);
        let (tx, rx) = mpsc::channel(256);
        self.wire = Some(rx);
        tokio::spawn(async move {
            let lines = tx.clone();
            read_lines(read, MAX_LINE, move |line| {
                let tx = lines.clone();
                async move {
                    let event = match line {
                        Ok(bytes) if bytes == STDIN_CLOSED.as_bytes() => Wire::StdinClosed,
                        Ok(bytes) if bytes == TERMINATED.as_bytes() => Wire::Terminated,
                        Ok(bytes) => Wire::Line(bytes),
                        Err(()) => Wire::Overlong,
                    };
                    tx.send((Instant::now(), event)).await.is_ok()
                }
            })
            .await;
            let _ = tx.send((Instant::now(), Wire::Closed)).await;
        });
    }

    fn adapter_event(&mut self, _at: Instant, event: Event) {
        match event {
            Event::Line(bytes) => {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                self.log(format!("[adapter stdout] {text}"));
                let parsed: Option<Value> = serde_json::from_slice(&bytes).ok();
                let action = parsed
                    .as_ref()
                    .and_then(|v| v.get("action"))
                    .and_then(Value::as_u64);
                let outcome = parsed
                    .as_ref()
                    .and_then(|v| v.get("outcome"))
                    .and_then(Value::as_str);
                match (action, outcome) {
                    (Some(action), Some(_)) => {
                        let value = parsed.clone().unwrap_or(Value::Null);
                        if self.outcomes.insert(action as usize, value).is_some() {
                            self.finding(
                                Severity::Fail,
                                "adapter",
                                format!("the adapter reported action {action} twice: `{text}`"),
                            );
                        }
                    }
                    _ => self.finding(
                        Severity::Fail,
                        "adapter",
                        format!(
                            "the adapter wrote `{}` to its stdout, which is not an outcome line \
                             ({{\"action\":N,\"outcome\":\"…\"}}); its logs belong on stderr",
                            text.chars().take(200).collect::<String>()
                        ),
                    ),
                }
            }
            Event::Overlong => self.finding(
                Severity::Fail,
                "adapter",
                "the adapter wrote an overlong stdout line".into(),
            ),
            Event::StdoutClosed => self.adapter_stdout_closed = true,
            Event::Exited(_) => self.exited = true,
        }
    }

    async fn wire_event(&mut self, at: Instant, event: Wire) {
        let at = at.saturating_duration_since(self.target.started);
        match event {
            Wire::Line(bytes) => self.receive(at, bytes).await,
            Wire::Overlong => {
                self.record(
                    at,
                    format!("[a line of more than {MAX_LINE} bytes, discarded]"),
                    None,
                );
                self.finding(
                    Severity::Fail,
                    "STD-02",
                    format!("the client wrote a line longer than {MAX_LINE} bytes to its server"),
                );
            }
            Wire::StdinClosed => {
                self.stdin_closed.get_or_insert_with(Instant::now);
                self.log("[relay] the client closed the server's stdin; the server exits".into());
                // A well-behaved server exits when its input ends.
                self.writer = None;
            }
            Wire::Terminated => {
                self.terminated.get_or_insert_with(Instant::now);
                self.log("[relay] the client sent SIGTERM to the server".into());
            }
            Wire::Closed => {
                self.wire_closed.get_or_insert_with(Instant::now);
                self.writer = None;
            }
        }
    }

    fn record(&mut self, at: Duration, text: String, value: Option<Value>) -> usize {
        self.transcript.push(Entry {
            at,
            direction: Direction::Received,
            text,
            value,
            internal: false,
            consumed_by: None,
            shown: None,
        });
        self.transcript.len() - 1
    }

    /// Applies the standing rules to one line the client wrote to its server.
    async fn receive(&mut self, at: Duration, bytes: Vec<u8>) {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if text.trim().is_empty() {
            let p = envelope::blank(&envelope::CLIENT);
            self.finding(p.severity, p.requirement, p.message);
            return;
        }
        let value: Option<Value> = serde_json::from_slice(&bytes).ok();
        let index = self.record(at, text.clone(), value.clone());
        for p in envelope::check(&envelope::CLIENT, &text, value.as_ref()) {
            self.finding(p.severity, p.requirement, p.message);
        }
        let Some(msg) = value.as_ref().and_then(Value::as_object) else {
            return;
        };
        let value = value.clone().unwrap_or_default();
        let method = msg
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_string);
        match (method, msg.get("id")) {
            (Some(method), Some(id)) => {
                self.client_request(index, &method, id, msg.get("params"))
                    .await
            }
            (Some(method), None) => match method.as_str() {
                "notifications/cancelled" => self.cancel(msg.get("params")),
                "notifications/initialized" if self.case.handshake => {
                    self.transcript[index].internal = true;
                }
                _ => {}
            },
            (None, _) => self.client_response(index, &value),
        }
    }

    async fn client_request(
        &mut self,
        index: usize,
        method: &str,
        id: &Value,
        params: Option<&Value>,
    ) {
        if !(id.is_string() || id.is_i64() || id.is_u64()) {
            self.finding(
                Severity::Fail,
                "RPC-02",
                format!(
                    "the client's `{method}` request has id {}; an id is a string or an integer",
                    canonical(id)
                ),
            );
        }
        let key = id_key(id);
        if self
            .client_requests
            .get(&key)
            .is_some_and(|r| r.answered.is_none() && !r.cancelled)
        {
            self.finding(
                Severity::Fail,
                "RPC-03",
                format!("the client reused id {key} while its earlier request with that id was still outstanding"),
            );
        }
        let token = params.and_then(|p| p.pointer("/_meta/progressToken"));
        let token_key = token.map(id_key);
        if let Some(token) = token {
            if !(token.is_string() || token.is_i64() || token.is_u64()) {
                self.finding(
                    Severity::Fail,
                    "PRG-01",
                    format!(
                        "progress token {} is neither a string nor an integer",
                        canonical(token)
                    ),
                );
            }
            let clash = self
                .client_requests
                .iter()
                .find(|(_, r)| r.answered.is_none() && !r.cancelled && r.token == token_key);
            if let Some((other, _)) = clash {
                let message = format!(
                    "progress token {} of request {key} is already used by active request {other}; tokens must be unique among active requests",
                    canonical(token)
                );
                self.finding(Severity::Fail, "PRG-01", message);
            }
        }
        self.client_requests.insert(
            key,
            ClientRequest {
                method: method.to_string(),
                answered: None,
                cancelled: false,
                token: token_key,
            },
        );
        let handled_by_case =
            self.scripted.contains(method) || (method == "initialize" && self.case.handshake);
        if handled_by_case {
            return;
        }
        // A request the case does not script: the harness answers it as a plain server would.
        self.transcript[index].internal = true;
        self.transcript[index].consumed_by = Some(0);
        let answer = match method {
            "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
            "tools/list" => json!({"jsonrpc": "2.0", "id": id, "result": tool_list()}),
            _ => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("the conformance harness does not offer {method} in this case")}})
            }
        };
        // A failed write means the client is gone; the steps notice.
        let _ = self.write(answer.to_string(), true).await;
    }

    /// The standing rules for a client's `notifications/cancelled`.
    fn cancel(&mut self, params: Option<&Value>) {
        let Some(params) = params.filter(|p| p.is_object()) else {
            self.finding(
                Severity::Fail,
                "CAN-01",
                "a `notifications/cancelled` without params; it must carry `requestId`".into(),
            );
            return;
        };
        if let Some(reason) = params.get("reason") {
            if !reason.is_string() {
                self.finding(
                    Severity::Fail,
                    "CAN-01",
                    format!(
                        "a cancel's `reason` must be a string, got {}",
                        short(reason)
                    ),
                );
            }
        }
        let Some(id) = params
            .get("requestId")
            .filter(|id| id.is_string() || id.is_number())
        else {
            self.finding(
                Severity::Fail,
                "CAN-01",
                format!(
                    "a cancel needs `requestId`, a string or an integer: {}",
                    short(params)
                ),
            );
            return;
        };
        let key = id_key(id);
        if let Some(request) = self.client_requests.get_mut(&key) {
            let method = request.method.clone();
            let answered = request.answered;
            let again = request.cancelled;
            request.cancelled = true;
            if method == "initialize" {
                self.finding(
                    Severity::Fail,
                    "CAN-04",
                    format!("the client cancelled its `initialize` request (id {key}); initialize must never be cancelled (LIF-08)"),
                );
            }
            if let Some(at) = answered {
                let late = at.elapsed();
                if late > T_GRACE {
                    let severity = self.case_severity().min(Severity::Warn);
                    self.finding(
                        severity,
                        "CAN-03",
                        format!(
                            "the client cancelled request {key} {} ms after the harness had answered it; a cancel must only reference a request still in progress",
                            late.as_millis()
                        ),
                    );
                } else {
                    self.finding(
                        Severity::Note,
                        "CAN-08",
                        format!("the cancel of request {key} crossed its response (allowed)"),
                    );
                }
            }
            if again {
                self.finding(
                    Severity::Note,
                    "CAN-01",
                    format!("the client cancelled request {key} more than once"),
                );
            }
            return;
        }
        if self.harness_requests.contains_key(&key) {
            self.finding(
                Severity::Fail,
                "CAN-02",
                format!("the client cancelled request {key}, which the harness (its server) issued; a party may only cancel its own requests"),
            );
            return;
        }
        let other_type = self
            .client_requests
            .iter()
            .find(|(k, _)| k.trim_matches('"') == key.trim_matches('"') && **k != key);
        let message = match other_type {
            Some((original, r)) => format!(
                "the cancel's requestId {key} differs in type from the id {original} of the client's `{}` request; it must be the identical JSON value",
                r.method
            ),
            None => format!("the client cancelled request {key}, which it never sent"),
        };
        self.finding(Severity::Fail, "CAN-01", message);
    }

    fn client_response(&mut self, index: usize, value: &Value) {
        let has_result = value.get("result").is_some();
        if has_result == value.get("error").is_some() {
            self.finding(
                Severity::Fail,
                "RPC-05",
                format!(
                    "a response must carry exactly one of `result` and `error`: {}",
                    short(value)
                ),
            );
        }
        let id = value.get("id").cloned().unwrap_or(Value::Null);
        let key = id_key(&id);
        let Some(request) = self.harness_requests.get_mut(&key) else {
            self.transcript[index].consumed_by = Some(0);
            self.finding(
                Severity::Fail,
                "RPC-04",
                format!("the client sent a response for id {key}, which the harness never used for a request"),
            );
            return;
        };
        request.answers += 1;
        self.transcript[index].internal = request.internal;
        if request.answers > 1 {
            self.finding(
                Severity::Fail,
                "RPC-04",
                format!("a second response from the client for request {key}"),
            );
        }
    }

    /// A ping to the client whose answer proves it has read everything sent before.
    async fn barrier(&mut self) -> Result<(), Stop> {
        self.counter += 1;
        let id = json!(format!("barrier-{}", self.counter));
        self.write(
            json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string(),
            true,
        )
        .await?;
        let deadline = Deadline::now() + self.options.reply_timeout;
        loop {
            let answer = self.transcript.iter().find(|e| {
                e.direction == Direction::Received
                    && e.value.as_ref().and_then(|v| v.get("id")) == Some(&id)
                    && e.value.as_ref().and_then(|v| v.get("method")).is_none()
            });
            if let Some(answer) = answer {
                let value = answer.value.clone().unwrap_or(Value::Null);
                if !value.get("result").is_some_and(Value::is_object) {
                    self.finding(
                        Severity::Fail,
                        "PING-01",
                        format!(
                            "the client must answer ping with an empty result, got {}",
                            short(&value)
                        ),
                    );
                }
                return Ok(());
            }
            if !self.next(deadline).await {
                self.finding(
                    Severity::Fail,
                    "PING-01",
                    format!(
                        "the client did not answer the harness's ping within {:?}",
                        self.options.reply_timeout
                    ),
                );
                return Err(Stop::Hung);
            }
        }
    }

    fn fill_pattern(&mut self, line: usize, text: &str) -> Result<Value, Stop> {
        pattern::fill_pattern(text, &self.captures).map_err(|e| {
            self.line = line;
            self.finding(
                Severity::Fail,
                "case",
                format!(
                    "bug in case: the expected message is not JSON after filling in variables: {e}"
                ),
            );
            Stop::Hung
        })
    }

    /// Notes when an expected message arrived, and judges it against a pending `! arrives`.
    fn arrived(&mut self, line: usize, at: Duration) {
        if let (Some(arrival), Some(previous)) = (self.arrival.take(), self.last_arrival) {
            if let Some(complaint) = arrival.judge(at.saturating_sub(previous)) {
                self.line = line;
                self.finding(self.case_severity(), "case", complaint);
            }
        }
        self.last_arrival = Some(at);
    }

    async fn expect(&mut self, line: usize, text: &str) -> Result<(), Stop> {
        let pattern = self.fill_pattern(line, text)?;
        self.expected.push(format!("> {}", canonical(&pattern)));
        let deadline = Deadline::now() + self.options.reply_timeout;
        loop {
            if let Some(at) =
                transcript::take_match(&mut self.transcript, &pattern, &mut self.captures, line)
            {
                self.arrived(line, at);
                return Ok(());
            }
            if !self.next(deadline).await {
                return self.mismatch(line, &pattern);
            }
        }
    }

    fn mismatch(&mut self, line: usize, pattern: &Value) -> Result<(), Stop> {
        self.line = line;
        let method = pattern.get("method");
        let candidate = self.transcript.iter().position(|e| {
            e.direction == Direction::Received
                && e.consumed_by.is_none()
                && !e.internal
                && e.value.as_ref().is_some_and(|v| {
                    v.get("method") == method && (method.is_some() || v.get("id").is_some())
                })
        });
        let severity = self.case_severity();
        match candidate {
            Some(index) => {
                let value = self.transcript[index].value.clone().unwrap_or(Value::Null);
                let diff = pattern::first_difference(pattern, &value, &self.captures)
                    .map(|d| d.to_string())
                    .unwrap_or_default();
                let shown = canonical(&pattern::normalize(pattern, &value, &self.captures));
                let entry = &mut self.transcript[index];
                entry.consumed_by = Some(line);
                entry.shown = Some(shown);
                self.finding(
                    severity,
                    "case",
                    format!("the client's message differs from the expected one; {diff}"),
                );
            }
            None => {
                let why = if self.exited {
                    format!(
                        " (the client had exited with {})",
                        self.target
                            .exit_status()
                            .map(|s| s.to_string())
                            .unwrap_or_default()
                    )
                } else if self.stdin_closed.is_some() {
                    " (the client had closed its server's stdin)".to_string()
                } else {
                    String::new()
                };
                self.finding(
                    severity,
                    "case",
                    format!(
                        "the client sent no message matching line {line} within {:?}{why}: {}",
                        self.options.reply_timeout,
                        canonical(pattern)
                    ),
                );
            }
        }
        if severity == Severity::Fail {
            Err(Stop::Hung)
        } else {
            Ok(())
        }
    }

    /// After the last step: the adapter reports its remaining actions and exits.
    async fn finish(&mut self) {
        let deadline = Deadline::now() + self.options.reply_timeout;
        while !self.exited && self.next(deadline).await {}
        // The outcome lines written just before exiting are still in the pipe.
        let drain = Deadline::now() + Duration::from_millis(100);
        while !self.adapter_stdout_closed && self.next(drain).await {}
        if !self.exited {
            let done = self.outcomes.len();
            self.finding(
                self.case_severity(),
                "TMO-02",
                format!(
                    "the client was still running {:?} after the case's last step ({done} of {} actions reported); it hangs, or the adapter does not exit after its last action",
                    self.options.reply_timeout,
                    self.case.actions.len()
                ),
            );
        } else if let Some(status) = self.target.exit_status().filter(|s| !s.success()) {
            self.finding(
                Severity::Fail,
                "adapter",
                format!("the client exited with {status}; an adapter exits 0 once its actions are done (a crash is a failure)"),
            );
        }
        self.judge_outcomes();
    }

    /// Compares the adapter's outcome lines with `@outcomes`.
    fn judge_outcomes(&mut self) {
        self.line = self
            .case
            .source
            .lines()
            .position(|l| l.starts_with("@outcomes"))
            .map_or(0, |i| i + 1);
        let expected = self.case.outcomes.clone();
        for (i, allowed) in expected.iter().enumerate() {
            let any = allowed.iter().any(|w| w == "*");
            let got = self
                .outcomes
                .get(&i)
                .and_then(|v| v.get("outcome"))
                .and_then(Value::as_str)
                .map(str::to_string);
            let action = short(&self.case.actions[i]);
            match got {
                _ if any => {}
                Some(word) if allowed.contains(&word) => {}
                Some(word) => {
                    let cancelled = allowed.iter().all(|w| w == "cancelled" || w == "timeout");
                    let (severity, requirement) = if cancelled && word == "result" {
                        (self.case_severity().min(Severity::Warn), "CAN-07")
                    } else {
                        (self.case_severity(), "case")
                    };
                    let detail = self.outcomes.get(&i).map(short).unwrap_or_default();
                    self.finding(
                        severity,
                        requirement,
                        format!(
                            "action {i} {action} ended as `{word}`, expected {}: {detail}",
                            allowed.join(" or ")
                        ),
                    );
                }
                None => self.finding(
                    self.case_severity(),
                    "case",
                    format!(
                        "the adapter never reported how action {i} {action} ended (expected {})",
                        allowed.join(" or ")
                    ),
                ),
            }
        }
        for (i, value) in &self.outcomes.clone() {
            if *i >= self.case.actions.len() {
                self.finding(
                    Severity::Fail,
                    "adapter",
                    format!(
                        "the adapter reported action {i}, but the case has {} actions: {}",
                        self.case.actions.len(),
                        short(value)
                    ),
                );
            }
        }
    }
}
