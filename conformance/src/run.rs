//! Plays one case against a server target: the harness is the client.
//!
//! Every message the target writes goes through [`Run::receive`], which applies the protocol's
//! standing rules (JSON only, one response per request, responses only for ids that were sent,
//! progress only for live tokens and increasing, nothing after a cancel the target has
//! certainly read) before any step looks at it. Steps then wait for the messages they expect,
//! event-driven: nothing sleeps unless the case asks for a time window.

use crate::case::{Arrival, Case, Span, Step, StepKind, HANDSHAKE_VERSIONS};
use crate::outcome::{Finding, Outcome, Severity};
use crate::pattern::{self, canonical, id_key, Captures};
use crate::profile::{self, Fixtures};
use crate::target::{display_argv, Event, Launch, Target};
use crate::transcript::{self, Direction, Entry};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use tokio::time::Instant as Deadline;

mod rules;

use crate::envelope::short;

/// Tool names of the fixture profile whose calls never end on their own: any response to one
/// that follows its cancel was caused by the cancel, so the barrier does not excuse it.
const ENDLESS_TOOLS: [&str; 2] = ["work", "ticker"];

/// What one case keeps of a target's stdout; a target that floods past it fails, and the
/// harness's memory stays bounded.
const MAX_RECEIVED_BYTES: usize = 64 << 20;

/// How a run is carried out.
#[derive(Debug, Clone)]
pub struct Options {
    /// The protocol version requested at `initialize`.
    pub protocol_version: String,
    /// The time limit for a whole case, unless the case sets its own.
    pub case_timeout: Duration,
    /// How long to wait for an expected message or the answer to a request (`T_prompt`).
    pub reply_timeout: Duration,
    /// How long the target may take to answer `initialize`: starting an interpreter or a
    /// package runner can take seconds, especially with cases running in parallel.
    pub startup_timeout: Duration,
    /// How the target's tools stand in for the fixture profile (from a target file); `None`
    /// when the target implements the profile itself.
    pub fixtures: Option<Fixtures>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            protocol_version: "2025-11-25".into(),
            case_timeout: Duration::from_secs(10),
            reply_timeout: Duration::from_secs(2),
            startup_timeout: Duration::from_secs(15),
            fixtures: None,
        }
    }
}

/// Everything a run of one case produced.
#[derive(Debug, Clone)]
pub struct Report {
    /// The verdict.
    pub outcome: Outcome,
    /// Why, finding by finding, in the order noticed.
    pub findings: Vec<Finding>,
    /// Why the case was skipped, when it was.
    pub skip_reason: Option<String>,
    /// What was exchanged.
    pub transcript: Vec<Entry>,
    /// The target's stderr, bounded.
    pub stderr: crate::target::StderrLog,
    /// The expected side of the diff: the case's `>` and `<` lines as carried out.
    pub expected: Vec<String>,
    /// Replacements for `<` lines that did not match, for blessing: (line, new text).
    pub bless: Vec<(usize, String)>,
    /// The protocol version the target agreed to.
    pub version: Option<String>,
    /// Wall time of the run.
    pub duration: Duration,
    /// How the target was started, for reports.
    pub target: String,
}

impl Report {
    /// The report of a case that was not run.
    pub fn skipped(reason: String, target: String) -> Report {
        Report {
            outcome: Outcome::Skip,
            findings: vec![],
            skip_reason: Some(reason),
            transcript: vec![],
            stderr: Default::default(),
            expected: vec![],
            bless: vec![],
            version: None,
            duration: Duration::ZERO,
            target,
        }
    }
}

/// Why the steps stopped early.
enum Stop {
    /// The target exited or closed stdout while the case still needed it.
    Gone,
    /// A wait the case cannot go on without timed out.
    Hung,
    /// The case does not apply.
    Skip(String),
}

/// What the harness knows about a request it sent.
#[derive(Debug)]
struct Request {
    line: usize,
    internal: bool,
    endless: bool,
    /// An `initialize`: its answer may take as long as a start.
    starts: bool,
    /// When the call could have ended on its own at the earliest, if the harness knows.
    natural_end: Option<Duration>,
    /// The call went to a target's own tool standing in for a profile role: its result's
    /// content is that tool's business, so only its shape is judged.
    mapped: bool,
    answers: u32,
    /// The transcript index of the cancel and whether a barrier since proved it was read.
    cancel: Option<(usize, bool)>,
    answered_before_cancel: bool,
    last_progress: Option<f64>,
}

struct Run<'a> {
    case: &'a Case,
    options: &'a Options,
    target: Target,
    transcript: Vec<Entry>,
    findings: Vec<Finding>,
    captures: Captures,
    requests: HashMap<String, Request>,
    tokens: HashMap<String, String>,
    expected: Vec<String>,
    bless: Vec<(usize, String)>,
    line: usize,
    last_send: Instant,
    counter: u32,
    exited: bool,
    received_bytes: usize,
    flooded: bool,
    stdout_closed: bool,
    stdin_closed: bool,
    version: Option<String>,
    /// A `! arrives` window for the next expected message.
    arrival: Option<Arrival>,
    /// When the last expected message arrived.
    last_arrival: Option<Duration>,
}

/// Runs one case against a fresh target process. Never panics on target behaviour; always
/// kills and reaps the target before returning.
pub async fn run_case(case: &Case, launch: &Launch, options: &Options) -> Result<Report, String> {
    let started = Instant::now();
    if let Some(fixtures) = &options.fixtures {
        let lacking: Vec<String> = case
            .fixtures
            .iter()
            .filter_map(|f| fixtures.lacks(f))
            .collect();
        if !lacking.is_empty() {
            return Ok(Report::skipped(
                lacking.join("; "),
                display_argv(&launch.argv),
            ));
        }
    }
    let target = Target::spawn(launch).map_err(|e| {
        format!(
            "cannot start target `{}`: {e}; check the command after `--` (it is run without a shell)",
            display_argv(&launch.argv)
        )
    })?;
    let mut run = Run {
        case,
        options,
        target,
        transcript: vec![],
        findings: vec![],
        captures: Captures::new(),
        requests: HashMap::new(),
        tokens: HashMap::new(),
        expected: vec![],
        bless: vec![],
        line: 0,
        last_send: Instant::now(),
        counter: 0,
        exited: false,
        received_bytes: 0,
        flooded: false,
        stdout_closed: false,
        stdin_closed: false,
        version: None,
        arrival: None,
        last_arrival: None,
    };
    // The case's own limit starts once the target could have started.
    let mut skip = None;
    if let Err(Stop::Skip(reason)) = run.play().await {
        skip = Some(reason);
    }
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
        bless: run.bless,
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

    /// Stopping work on a cancel is a SHOULD (CAN-05): at most a warning, whatever the case.
    fn witness_severity(&self) -> Severity {
        self.case_severity().min(Severity::Warn)
    }

    async fn play(&mut self) -> Result<(), Stop> {
        if self.case.handshake {
            self.handshake().await?;
        } else {
            self.captures
                .insert("version".into(), json!(self.options.protocol_version));
        }
        // The case's own clock starts once the target has started; a case that performs the
        // handshake itself also gets the start's allowance.
        let mut limit = self.case.timeout.unwrap_or(self.options.case_timeout);
        if !self.case.handshake {
            limit += self.options.startup_timeout;
        }
        match tokio::time::timeout(limit, self.body()).await {
            Ok(done) => done,
            Err(_) => {
                self.finding(
                    Severity::Fail,
                    "CAN-11",
                    format!(
                        "the case did not finish within its time limit of {limit:?}; the target hung \
                         (see the transcript so far), or raise the limit with --timeout (or the \
                         case's @timeout)"
                    ),
                );
                Err(Stop::Hung)
            }
        }
    }

    async fn body(&mut self) -> Result<(), Stop> {
        let steps = self.case.steps.clone();
        self.steps(&steps).await?;
        if !self.stdin_closed && !self.exited {
            // Flush: everything the target was going to say about earlier steps arrives first.
            self.barrier().await?;
            self.unexpected_responses();
        }
        Ok(())
    }

    async fn handshake(&mut self) -> Result<(), Stop> {
        self.line = 0;
        let requested = self.options.protocol_version.clone();
        let init = json!({
            "jsonrpc": "2.0",
            "id": "init",
            "method": "initialize",
            "params": {
                "protocolVersion": requested,
                "capabilities": {},
                "clientInfo": {"name": "conformance", "version": env!("CARGO_PKG_VERSION")}
            }
        });
        let answer = self.request_internal(init).await?;
        let version = answer
            .pointer("/result/protocolVersion")
            .and_then(Value::as_str)
            .map(str::to_string);
        let Some(version) = version else {
            self.finding(
                Severity::Fail,
                "LIF-02",
                format!(
                    "initialize was not answered with a result carrying protocolVersion: {}; the \
                     target must complete the handshake before anything can be tested",
                    canonical(&answer)
                ),
            );
            return Err(Stop::Hung);
        };
        if version != requested && !HANDSHAKE_VERSIONS.contains(&version.as_str()) {
            self.finding(
                Severity::Fail,
                "LIF-06",
                format!(
                    "asked for {requested}, the target answered with `{version}`, which is no \
                     protocol version of the handshake era"
                ),
            );
            return Err(Stop::Hung);
        }
        self.version = Some(version.clone());
        self.captures.insert("version".into(), json!(version));
        if !self.case.versions.contains(&version) {
            return Err(Stop::Skip(format!(
                "the case applies to {}; the target agreed to {version} (choose one with \
                 --protocol-version)",
                self.case.versions.join(", ")
            )));
        }
        self.write(
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into(),
            true,
        )
        .await
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

    fn fill(&mut self, text: &str) -> Result<String, Stop> {
        pattern::substitute(text, &self.captures).map_err(|name| {
            self.finding(
                Severity::Fail,
                "case",
                format!("bug in case: `{{${name}}}` is used before anything was captured into it"),
            );
            Stop::Hung
        })
    }

    fn fill_id(&mut self, text: &str) -> Result<Value, Stop> {
        let text = self.fill(text)?;
        serde_json::from_str(&text).map_err(|_| {
            self.finding(
                Severity::Fail,
                "case",
                format!("bug in case: `{text}` is not a request id"),
            );
            Stop::Hung
        })
    }

    async fn step(&mut self, step: &Step) -> Result<(), Stop> {
        match &step.kind {
            StepKind::Send(text) => {
                let text = self.fill(text)?;
                self.write(text, false).await
            }
            StepKind::Expect(text) => self.expect(step.line, text).await,
            StepKind::Barrier => self.barrier().await,
            StepKind::After(span) => {
                let until = self.last_send + self.span(span);
                self.pump_until(Deadline::from_std(until)).await
            }
            StepKind::Wait(span) => {
                let until = Deadline::now() + self.span(span);
                self.pump_until(until).await
            }
            StepKind::Silent { id, window } => {
                let id = self.fill_id(id)?;
                let until = Deadline::now() + self.span(window);
                self.pump_until(until).await?;
                match self.requests.get(&id_key(&id)) {
                    Some(r) if r.cancel.is_some() || r.answers > 0 => Ok(()),
                    _ => {
                        self.finding(
                            Severity::Fail,
                            "case",
                            format!("bug in case: `! silent {id}` names a request that was neither cancelled nor answered"),
                        );
                        Err(Stop::Hung)
                    }
                }
            }
            StepKind::Witness(ids) => {
                let ids = ids
                    .iter()
                    .map(|id| self.fill_id(id))
                    .collect::<Result<Vec<_>, _>>()?;
                self.witness(&ids).await
            }
            StepKind::Arrives(arrival) => {
                self.arrival = Some(*arrival);
                Ok(())
            }
            StepKind::CloseStdin => {
                self.target.close_stdin();
                self.stdin_closed = true;
                Ok(())
            }
            StepKind::Exit(span) => {
                let window = self.span(span);
                let closed = Instant::now();
                let until = Deadline::now() + window;
                while !self.exited && self.next(until).await {}
                if !self.exited {
                    // Say when it did exit, if it does so soon, so "promptly" can be weighed.
                    let later = Deadline::now() + Duration::from_secs(4);
                    while !self.exited && self.next(later).await {}
                    let when = if self.exited {
                        format!("it exited after {:.1} s", closed.elapsed().as_secs_f64())
                    } else {
                        format!(
                            "it was still running after {:.1} s",
                            closed.elapsed().as_secs_f64()
                        )
                    };
                    self.finding(
                        self.case_severity(),
                        "STD-07",
                        format!(
                            "the target did not exit within {window:?} after its stdin closed ({when}); \
                             a server should exit promptly when its input ends"
                        ),
                    );
                } else if let Some(status) = self.target.exit_status().filter(|s| !s.success()) {
                    self.finding(
                        Severity::Note,
                        "STD-07",
                        format!("the target exited with {status} after its stdin closed"),
                    );
                }
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
        }
    }

    /// Writes one line to the target and records what it means (a request to track, a cancel).
    async fn write(&mut self, text: String, internal: bool) -> Result<(), Stop> {
        let mut text = text;
        let mut value: Option<Value> = serde_json::from_str(&text).ok();
        // A call of a profile role goes to the target's own tool, when a target file maps it.
        let mut role = None;
        let original_ms = value
            .as_ref()
            .and_then(|v| v.pointer("/params/arguments/ms"))
            .and_then(Value::as_u64);
        if let (Some(fixtures), Some(message)) = (&self.options.fixtures, value.as_mut()) {
            role = profile::rewrite_call(message, fixtures);
            if role.is_some() {
                text = message.to_string();
            }
        }
        if let Some(msg) = value.as_ref().and_then(Value::as_object) {
            let method = msg.get("method").and_then(Value::as_str);
            match (method, msg.get("id")) {
                (Some("notifications/cancelled"), None) => {
                    if let Some(id) = msg.get("params").and_then(|p| p.get("requestId")) {
                        let at = self.transcript.len();
                        if let Some(r) = self.requests.get_mut(&id_key(id)) {
                            r.answered_before_cancel = r.answers > 0;
                            r.cancel.get_or_insert((at, false));
                        }
                    }
                }
                (Some(method), Some(id)) if id.is_string() || id.is_number() => {
                    let params = msg.get("params");
                    let token = params
                        .and_then(|p| p.pointer("/_meta/progressToken"))
                        .filter(|t| t.is_string() || t.is_number())
                        .map(id_key);
                    let tool = role
                        .as_deref()
                        .or_else(|| params.and_then(|p| p.get("name")).and_then(Value::as_str));
                    let endless =
                        method == "tools/call" && tool.is_some_and(|t| ENDLESS_TOOLS.contains(&t));
                    // `sleep {ms}` cannot end on its own before `ms` has passed (less a margin
                    // for timers that fire a little early).
                    let natural_end = (method == "tools/call" && tool == Some("sleep"))
                        .then_some(original_ms)
                        .flatten()
                        .map(|ms| {
                            self.target.started.elapsed()
                                + Duration::from_millis(ms - (ms / 10).max(5).min(ms))
                        });
                    if let Some(token) = &token {
                        self.tokens.insert(token.clone(), id_key(id));
                    }
                    self.requests.insert(
                        id_key(id),
                        Request {
                            line: self.line,
                            internal,
                            endless,
                            starts: method == "initialize",
                            natural_end,
                            mapped: role.is_some(),
                            answers: 0,
                            cancel: None,
                            answered_before_cancel: false,
                            last_progress: None,
                        },
                    );
                }
                _ => {}
            }
        }
        if !internal {
            self.expected.push(format!("> {text}"));
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
        if self.target.send(text.as_bytes()).await.is_err() {
            // The target is gone; the exit event tells how.
            let until = Deadline::now() + Duration::from_millis(200);
            while !self.exited && self.next(until).await {}
            self.gone();
            return Err(Stop::Gone);
        }
        Ok(())
    }

    fn gone(&mut self) {
        let status = self
            .target
            .exit_status()
            .map(|s| s.to_string())
            .unwrap_or_else(|| "stdout closed".into());
        if !self.findings.iter().any(|f| f.requirement == "STD-01") {
            self.finding(
                Severity::Fail,
                "STD-01",
                format!("the target stopped serving ({status}) while the case still needed it; see its stderr"),
            );
        }
    }

    /// Takes in events until the deadline. Returns early with an error only if the target died.
    async fn pump_until(&mut self, deadline: Deadline) -> Result<(), Stop> {
        while self.next(deadline).await {}
        Ok(())
    }

    /// Takes in one event; false once the deadline passed or the target can say nothing more.
    async fn next(&mut self, deadline: Deadline) -> bool {
        if self.stdout_closed && self.exited {
            return false;
        }
        match self.target.next_event(deadline).await {
            None => false,
            Some((at, event)) => {
                let at = at.saturating_duration_since(self.target.started);
                match event {
                    Event::Line(bytes) => {
                        self.received_bytes += bytes.len() + 1;
                        if self.received_bytes > MAX_RECEIVED_BYTES {
                            if !self.flooded {
                                self.flooded = true;
                                self.finding(
                                    Severity::Fail,
                                    "limit",
                                    format!(
                                        "the target wrote more than {} MiB to stdout in one case; the rest is not kept",
                                        MAX_RECEIVED_BYTES >> 20
                                    ),
                                );
                            }
                            return true;
                        }
                        self.receive(at, bytes).await
                    }
                    Event::Overlong => {
                        self.record(
                            at,
                            format!(
                                "[a line of more than {} bytes, discarded]",
                                crate::target::MAX_LINE
                            ),
                            None,
                        );
                        self.finding(
                            Severity::Fail,
                            "STD-02",
                            format!(
                                "the target wrote a stdout line longer than {} bytes",
                                crate::target::MAX_LINE
                            ),
                        );
                    }
                    Event::StdoutClosed => self.stdout_closed = true,
                    Event::Exited(_) => self.exited = true,
                }
                true
            }
        }
    }

    /// Sends a request of the harness's own and waits for its answer.
    async fn request_internal(&mut self, message: Value) -> Result<Value, Stop> {
        let id = message["id"].clone();
        let method = message["method"].as_str().unwrap_or("").to_string();
        self.write(message.to_string(), true).await?;
        let wait = if method == "initialize" {
            self.options.startup_timeout
        } else {
            self.options.reply_timeout
        };
        let deadline = Deadline::now() + wait;
        loop {
            if let Some(found) = self.transcript.iter().rposition(|e| {
                e.direction == Direction::Received
                    && e.value.as_ref().and_then(|v| v.get("id")) == Some(&id)
            }) {
                return Ok(self.transcript[found].value.clone().unwrap_or(Value::Null));
            }
            if !self.next(deadline).await {
                if self.exited || self.stdout_closed {
                    self.gone();
                    return Err(Stop::Gone);
                }
                self.finding(
                    Severity::Fail,
                    match method.as_str() {
                        "ping" => "PING-01",
                        "initialize" => "LIF-02",
                        _ => "CAN-11",
                    },
                    if method == "initialize" {
                        format!(
                            "no answer to `initialize` within {wait:?}; the target never started serving (check the command, or raise --startup-timeout for a slow start)"
                        )
                    } else {
                        format!(
                            "no answer to the harness's `{method}` (id {}) within {wait:?}; the target stopped serving",
                            canonical(&id)
                        )
                    },
                );
                return Err(Stop::Hung);
            }
        }
    }

    /// A ping whose answer proves every line sent before it has been read.
    async fn barrier(&mut self) -> Result<(), Stop> {
        self.counter += 1;
        let id = format!("barrier-{}", self.counter);
        let sent_at = self.transcript.len();
        let answer = self
            .request_internal(json!({"jsonrpc": "2.0", "id": id, "method": "ping"}))
            .await?;
        if answer.get("result").is_none_or(|r| !r.is_object()) {
            self.finding(
                Severity::Fail,
                "PING-01",
                format!(
                    "ping must be answered with an empty result, got {}",
                    short(&answer)
                ),
            );
        }
        for request in self.requests.values_mut() {
            if let Some((at, read)) = request.cancel.as_mut() {
                if *at < sent_at {
                    *read = true;
                }
            }
        }
        Ok(())
    }

    /// Asks the `cancellations` fixture which requests saw their cancellation. A handler may
    /// record its cancellation a moment after the cancel was read, so the question is repeated
    /// until every id is listed or the reply timeout passes.
    async fn witness(&mut self, ids: &[Value]) -> Result<(), Stop> {
        if self
            .options
            .fixtures
            .as_ref()
            .is_some_and(|f| !f.has("cancellations"))
        {
            let ids: Vec<String> = ids.iter().map(canonical).collect();
            self.finding(
                Severity::Note,
                "CAN-05",
                format!(
                    "no witness fixture: whether request {} stopped working is judged only on what \
                     can be observed (no response after the barrier, progress stopped, the server \
                     still answers)",
                    ids.join(", ")
                ),
            );
            return Ok(());
        }
        let deadline = Instant::now() + self.options.reply_timeout;
        let mut pause = Duration::from_millis(2);
        loop {
            self.counter += 1;
            let id = format!("witness-{}", self.counter);
            let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "cancellations", "arguments": {}}});
            let answer = self.request_internal(call).await?;
            let listed = answer
                .pointer("/result/content/0/text")
                .and_then(Value::as_str)
                .and_then(|t| serde_json::from_str::<Value>(t).ok())
                .and_then(|v| v.as_array().cloned());
            let Some(listed) = listed else {
                self.finding(
                    self.witness_severity(),
                    "CAN-05",
                    format!("the `cancellations` fixture did not answer with a JSON array in a text item: {}", short(&answer)),
                );
                return Ok(());
            };
            // A request answered before its cancel was read had nothing left to stop.
            let missing: Vec<&Value> = ids
                .iter()
                .filter(|id| !listed.iter().any(|l| pattern::json_equal(l, id)))
                .filter(|id| {
                    self.requests
                        .get(&id_key(id))
                        .is_none_or(|r| r.answers == 0)
                })
                .collect();
            if missing.is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let missing: Vec<String> = missing.iter().map(|v| canonical(v)).collect();
                self.finding(
                    self.witness_severity(),
                    "CAN-05",
                    format!(
                        "the server's witness does not list request {}: its handler never observed the cancellation, so the work did not stop (listed: {})",
                        missing.join(", "),
                        canonical(&Value::Array(listed))
                    ),
                );
                return Ok(());
            }
            // Ask again, less and less often: a handler records its cancel soon or never.
            pause = (pause * 2).min(Duration::from_millis(200));
            self.pump_until(Deadline::now() + pause).await?;
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

    fn candidate_for(&self, pattern: &Value) -> Option<usize> {
        let unconsumed = |e: &&Entry| {
            e.direction == Direction::Received && e.consumed_by.is_none() && !e.internal
        };
        let entries = self.transcript.iter().enumerate();
        if let Some(id) = pattern
            .get("id")
            .filter(|id| pattern::canonical(id) != "\"{...}\"")
        {
            return entries
                .filter(|(_, e)| unconsumed(e))
                .find(|(_, e)| {
                    e.value
                        .as_ref()
                        .and_then(|v| v.get("id"))
                        .is_some_and(|v| pattern::json_equal(v, id))
                })
                .map(|(i, _)| i);
        }
        // A response pattern is only ever compared with responses, a notification pattern
        // with messages of its method.
        let method = pattern.get("method");
        entries
            .filter(|(_, e)| unconsumed(e))
            .find(|(_, e)| e.value.as_ref().is_some_and(|v| v.get("method") == method))
            .map(|(i, _)| i)
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

    /// How long a message matching `pattern` may take: an answer to `initialize` as long as a
    /// start, anything else `--reply-timeout`.
    fn wait_for(&self, pattern: &Value) -> Duration {
        let request = pattern
            .get("id")
            .and_then(|id| self.requests.get(&id_key(id)));
        if request.is_some_and(|r| r.starts) {
            self.options.startup_timeout
        } else {
            self.options.reply_timeout
        }
    }

    async fn expect(&mut self, line: usize, text: &str) -> Result<(), Stop> {
        let mut pattern = self.fill_pattern(line, text)?;
        let request = pattern
            .get("id")
            .and_then(|id| self.requests.get(&id_key(id)));
        let mapped = request.is_some_and(|r| r.mapped);
        let wait = self.wait_for(&pattern);
        if mapped && pattern.get("result").is_some() {
            pattern["result"] = json!("{object}");
        }
        self.expected.push(format!("< {}", canonical(&pattern)));
        let deadline = Deadline::now() + wait;
        loop {
            if let Some(at) =
                transcript::take_match(&mut self.transcript, &pattern, &mut self.captures, line)
            {
                self.arrived(line, at);
                return Ok(());
            }
            // A response for the expected id that does not match will not be followed by another.
            if let Some(index) = self.candidate_for(&pattern) {
                if pattern.get("id").is_some()
                    && self.transcript[index]
                        .value
                        .as_ref()
                        .and_then(|v| v.get("id"))
                        .is_some()
                {
                    return self.mismatch(line, &pattern, Some(index));
                }
            }
            if !self.next(deadline).await {
                if self.exited || self.stdout_closed {
                    self.gone();
                    return Err(Stop::Gone);
                }
                let candidate = self.candidate_for(&pattern);
                return self.mismatch(line, &pattern, candidate);
            }
        }
    }

    fn mismatch(
        &mut self,
        line: usize,
        pattern: &Value,
        candidate: Option<usize>,
    ) -> Result<(), Stop> {
        self.line = line;
        let is_response = pattern.get("result").is_some() || pattern.get("error").is_some();
        match candidate {
            Some(index) => {
                let value = self.transcript[index].value.clone().unwrap_or(Value::Null);
                let diff = pattern::first_difference(pattern, &value, &self.captures)
                    .map(|d| d.to_string())
                    .unwrap_or_default();
                let shown = canonical(&pattern::normalize(pattern, &value, &self.captures));
                let entry = &mut self.transcript[index];
                entry.consumed_by = Some(line);
                entry.shown = Some(shown.clone());
                self.bless.push((line, format!("< {shown}")));
                self.finding(
                    self.case_severity(),
                    "case",
                    format!("the message differs from the expected one; {diff}"),
                );
                Ok(())
            }
            None => {
                let what = if is_response {
                    "no response"
                } else {
                    "no message"
                };
                let severity = self.case_severity();
                self.finding(
                    severity,
                    "case",
                    format!(
                        "{what} matching line {line} within {:?}: {}",
                        self.wait_for(pattern),
                        canonical(pattern)
                    ),
                );
                if severity == Severity::Fail {
                    Err(Stop::Hung)
                } else {
                    Ok(())
                }
            }
        }
    }
}
