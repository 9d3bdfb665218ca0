//! The one engine: plays a case's steps against a target, whichever side the harness plays.
//!
//! An [`Engine`] holds what one run of a case knows: the transcript, the findings, the
//! captured variables and the request ledger. It talks to the target only through a
//! [`Transport`], and leaves what depends on the role to a [`Side`]: how the session opens,
//! which standing rules judge the target's messages, what the harness answers on its own, and
//! how the run ends. [`server::ServerTarget`] is the harness as a client testing a server;
//! [`client::ClientTarget`] is the harness as a server testing a client.
//!
//! Every message the target writes is recorded and judged by the side's standing rules before
//! any step looks at it. Steps then wait for what they expect, event-driven: nothing sleeps
//! unless the case asks for a time window.

mod adapter;
pub mod client;
mod client_start;
mod client_stateless;
mod expect;
pub mod http;
mod http_steps;
mod io;
pub mod ledger;
mod proof;
pub mod server;
pub mod session;
mod waited;

pub use io::{KEEP_BYTES, KEEP_ENTRIES};

use crate::case::{Arrival, Case, Span, Step, StepKind};
use crate::era::ProtocolVersion;
use crate::fixtures::Fixtures;
use crate::outcome::{Finding, FindingKind, Outcome, Severity};
use crate::pattern::{self, Captures};
use crate::rules::envelope::Writer;
use crate::transcript::Entry;
use crate::transport::process::TargetLog;
use crate::transport::{Event, SendError, Transport};
use ledger::Ledger;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use tokio::time::Instant as Deadline;

/// How a run is carried out.
#[derive(Debug, Clone)]
pub struct Options {
    /// The protocol version requested at `initialize` (server cases) or played (client cases).
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
    /// The target's stderr and the harness's notes about it, bounded.
    pub log: TargetLog,
    /// The expected side of the diff: the case's lines as carried out.
    pub expected: Vec<String>,
    /// Replacements for expected lines that did not match, for blessing: (line, new text).
    pub bless: Vec<(usize, String)>,
    /// The protocol version the run used.
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
            log: TargetLog::default(),
            expected: vec![],
            bless: vec![],
            version: None,
            duration: Duration::ZERO,
            target,
        }
    }
}

/// Why the steps stopped early.
#[derive(Debug)]
pub enum Stop {
    /// A client ended its session after finishing its actions: no fault in itself; the rest
    /// of the steps send nothing and check what the client sent before it ended.
    Done,
    /// The target went away while the case still needed it.
    Gone,
    /// A wait the case cannot go on without timed out, or the case cannot go on.
    Hung,
    /// The case does not apply.
    Skip(String),
}

/// What differs between the two roles. The engine calls these at fixed points; everything
/// else is common.
#[allow(async_fn_in_trait)]
pub trait Side: Sized {
    /// Who writes the target's lines, for the envelope rules' wording.
    const WRITER: &'static Writer;
    /// The arrow of lines the harness sends, as case files and diffs show them.
    const SENDS: char;
    /// The arrow of lines the harness expects.
    const EXPECTS: char;
    /// How long after the target process exited its output is still read (`None`: until it
    /// closes). A server's exit ends its session, even if a child it left holds its stdout.
    const EXIT_GRACE: Option<Duration>;
    /// Whether the harness may send probes (requests of its own) to prove a message was read.
    const PROBES: bool;
    /// Whether the harness, on this side, stamps the stateless era's `_meta` onto its requests
    /// (it does as a client; as a server it sends no requests in that era).
    const STAMPS: bool;

    /// Plays the whole case: opens the session and plays the steps within the time limits.
    async fn play<T: Transport>(e: &mut Engine<'_, T, Self>) -> Result<(), Stop>;

    /// After [`Side::play`], however it ended: what the role still has to judge. Returns the
    /// reason when the case turned out not to apply.
    async fn finish<T: Transport>(
        e: &mut Engine<'_, T, Self>,
        played: Result<(), Stop>,
    ) -> Option<String>;

    /// The standing rules for one message the target wrote (transcript index `index`, parsed
    /// as a JSON object that passed the envelope check).
    async fn judge<T: Transport>(e: &mut Engine<'_, T, Self>, index: usize);

    /// Events other than messages that only this role knows what to make of.
    fn observe<T: Transport>(e: &mut Engine<'_, T, Self>, at: Duration, event: Event);

    /// Steps only this role carries out (`! silent`, `! witness`, `! close-stdin`, `! exit`).
    async fn role_step<T: Transport>(e: &mut Engine<'_, T, Self>, step: &Step) -> Result<(), Stop>;

    /// Adds the era's stamp to a message the harness is about to send, when the case wants it;
    /// returns whether it did (the transcript then shows the case's own line beside it). As a
    /// client the harness stamps requests with the stateless era's `_meta`.
    fn stamp<T: Transport>(e: &Engine<'_, T, Self>, message: &mut Value) -> bool {
        Self::STAMPS && e.case.stamp && e.protocol().is_some_and(|v| v.stamp(message))
    }

    /// Takes note of a message the harness sent (a case's line or its own answer).
    fn sent<T: Transport>(_e: &mut Engine<'_, T, Self>, _message: &Value) {}

    /// Prepares a message the harness is about to send (a target file's tool mapping).
    /// Returns the fixture role the message calls, when it calls one.
    fn prepare<T: Transport>(_e: &Engine<'_, T, Self>, _message: &mut Value) -> Option<String> {
        None
    }

    /// What to do when a message could not be sent: report why the target is gone, and say
    /// how the steps stop.
    async fn lost<T: Transport>(e: &mut Engine<'_, T, Self>, error: SendError) -> Stop;

    /// Reports that the target went away while the case still needed it.
    fn gone<T: Transport>(e: &mut Engine<'_, T, Self>);

    /// A wait for an expected message ran out: how the steps stop when that is because the
    /// target is gone, or `None` to report the missing message.
    fn ended<T: Transport>(e: &mut Engine<'_, T, Self>) -> Option<Stop>;

    /// Whether the steps must stop now, whatever they wait for (a case that turned out not to
    /// apply); checked before every step and while an expected message is awaited.
    fn halted<T: Transport>(_e: &mut Engine<'_, T, Self>) -> Option<Stop> {
        None
    }

    /// After the case and the drain, when nothing more will come: judgements that needed the
    /// whole transcript.
    fn drained<T: Transport>(_e: &mut Engine<'_, T, Self>) {}

    /// What to add to a "no message matching" finding about the target's state.
    fn absence<T: Transport>(_e: &Engine<'_, T, Self>) -> String {
        String::new()
    }
}

/// One run of one case.
pub struct Engine<'a, T, S> {
    pub(crate) case: &'a Case,
    pub(crate) options: &'a Options,
    pub(crate) io: T,
    pub(crate) side: S,
    pub(crate) transcript: Vec<Entry>,
    pub(crate) findings: Vec<Finding>,
    pub(crate) captures: Captures,
    pub(crate) ledger: Ledger,
    pub(crate) expected: Vec<String>,
    pub(crate) bless: Vec<(usize, String)>,
    /// The case line being carried out.
    pub(crate) line: usize,
    pub(crate) last_send: Instant,
    /// Numbers the harness's own request ids.
    pub(crate) counter: u32,
    /// The target process exited.
    pub(crate) exited: bool,
    /// A client finished its actions and ended its session while steps remained: what the
    /// harness would still send goes nowhere, and the remaining expected messages are checked
    /// against what the client sent before it ended.
    pub(crate) ended: bool,
    /// The target's output ended (a server's stdout, a client's relay connection).
    pub(crate) output_closed: bool,
    /// When the target process exited, as the harness saw it.
    pub(crate) exited_at: Option<Instant>,
    /// When the target first wrote anything (since it started): it had started by then.
    pub(crate) heard: Option<Duration>,
    /// The target stopped reading what the harness writes (reported once).
    pub(crate) stalled: bool,
    /// Every message the harness sent before this transcript index is proven read.
    pub(crate) proven: usize,
    /// When that proof arrived (since the target started).
    pub(crate) proven_at: Option<Duration>,
    /// How long the target had waited for a CPU when it arrived.
    pub(crate) proven_waited: Option<Duration>,
    /// The last reading of how long they have waited, and when it was taken.
    waited_cache: std::cell::Cell<Option<(Instant, Option<Duration>)>>,
    /// The transcript index of the last probe sent, if any.
    pub(crate) probing: Option<usize>,
    /// When the last event from the target arrived.
    pub(crate) last_event: Option<Instant>,
    /// How long the harness has waited in all for the target to write its events (not the
    /// time it took to read them).
    pub(crate) idle: Duration,
    /// How many messages the target wrote.
    pub(crate) received: usize,
    /// The target wrote the start of a line it has not finished (yet).
    pub(crate) partial: bool,
    /// The shortest round trip of the harness's requests.
    pub(crate) rtt: Option<Duration>,
    /// How late the harness itself woke up at the worst: how busy the machine was.
    pub(crate) lateness: Duration,
    /// How much waits are stretched now for the machine's CPU pressure (1.0 when calm), when
    /// that was last read, and the most it was.
    pub(crate) stretch: f64,
    stretch_read: Instant,
    stretch_most: f64,
    /// Roughly the memory the messages in the transcript take (see `io::KEEP_BYTES`).
    pub(crate) kept_bytes: usize,
    /// Messages judged (or, the harness's replies, sent) and not kept.
    pub(crate) dropped: usize,
    /// The protocol version agreed (or played).
    pub(crate) version: Option<String>,
    /// A `! arrives` window for the next expected message.
    arrival: Option<Arrival>,
    /// When the last expected message arrived.
    last_arrival: Option<Duration>,
    /// How long the target's processes had waited for a CPU when the pending `! arrives` was
    /// read.
    waited_before: Option<Duration>,
    /// The HTTP channels of the case (empty on stdio).
    pub(crate) streams: http::Streams,
    /// The pattern of the expected message the steps are waiting for, if any: a client's
    /// request that matches it is left to the case.
    pub(crate) awaiting: Option<Value>,
    /// Where each finding is in `findings`, by what makes it the same finding.
    finding_index: HashMap<(Severity, FindingKind, usize, String), usize>,
    /// How many different findings of each severity and kind are kept.
    finding_kinds: HashMap<(Severity, FindingKind), usize>,
}

/// How many different findings of one severity and kind a case keeps; more are counted in one.
pub const FINDINGS_KEPT: usize = 100;

impl<'a, T: Transport, S: Side> Engine<'a, T, S> {
    /// A run of `case` against the target behind `io`.
    pub fn new(case: &'a Case, options: &'a Options, io: T, side: S) -> Self {
        Engine {
            case,
            options,
            io,
            side,
            transcript: vec![],
            findings: vec![],
            captures: Captures::new(),
            ledger: Ledger::default(),
            expected: vec![],
            bless: vec![],
            line: 0,
            last_send: Instant::now(),
            counter: 0,
            exited: false,
            ended: false,
            output_closed: false,
            exited_at: None,
            heard: None,
            stalled: false,
            proven: 0,
            proven_at: None,
            proven_waited: None,
            waited_cache: std::cell::Cell::new(None),
            probing: None,
            last_event: None,
            idle: Duration::ZERO,
            received: 0,
            partial: false,
            rtt: None,
            lateness: Duration::ZERO,
            stretch: crate::load::stretch(),
            stretch_read: Instant::now(),
            stretch_most: 1.0,
            kept_bytes: 0,
            dropped: 0,
            version: None,
            arrival: None,
            last_arrival: None,
            waited_before: None,
            streams: http::Streams::default(),
            awaiting: None,
            finding_index: HashMap::new(),
            finding_kinds: HashMap::new(),
        }
    }

    /// Plays the case to its end and shuts the target down. Never panics on target
    /// behaviour; the target and everything it started are gone when this returns.
    pub async fn run(mut self, target: String) -> Report {
        let started = Instant::now();
        let played = S::play(&mut self).await;
        let skip = S::finish(&mut self, played).await;
        if skip.is_none() {
            self.drain().await;
            S::drained(&mut self);
        }
        if self.stretch_most >= 1.5 {
            self.line = 0;
            self.finding(
                Severity::Note,
                FindingKind::Limit,
                format!(
                    "the machine was busy (CPU pressure up to {:.0} %): waits for answers were stretched up to {:.1} times",
                    (1.0 - 1.0 / self.stretch_most) * 100.0,
                    self.stretch_most
                ),
            );
        }
        let mut log = self.io.shutdown(Duration::ZERO).await;
        if self.dropped > 0 {
            log.push(
                self.now(),
                format!(
                    "[harness] {} messages (the target's, and the harness's replies to its requests) were judged and not kept in the transcript",
                    self.dropped
                ),
            );
        }
        let outcome = if skip.is_some() {
            Outcome::Skip
        } else {
            Outcome::from_findings(self.case.level, &self.findings)
        };
        Report {
            outcome,
            findings: self.findings,
            skip_reason: skip,
            transcript: self.transcript,
            log,
            expected: self.expected,
            bless: self.bless,
            version: self.version,
            duration: started.elapsed(),
            target,
        }
    }

    /// Whatever the target still says until it is shut down is judged by the standing rules:
    /// its input is closed and it gets a moment to exit.
    async fn drain(&mut self) {
        self.io.close_input();
        let until = Deadline::now() + Duration::from_millis(250);
        while !self.exited && !self.stalled && self.next(until).await {}
    }

    /// Records a finding; the same finding again only counts one more time. Past
    /// [`FINDINGS_KEPT`] different findings of one kind and severity, further ones are counted
    /// in one finding that says so: a target that floods (a response for every id it makes
    /// up) cannot make the findings grow without bound, and the verdict, which rests on the
    /// worst severity, is the same.
    pub(crate) fn finding(&mut self, severity: Severity, kind: FindingKind, message: String) {
        let line = self.line;
        let key = (severity, kind, line, message);
        if let Some(&same) = self.finding_index.get(&key) {
            self.findings[same].times += 1;
            return;
        }
        let (severity, kind, line, message) = key;
        let distinct = self.finding_kinds.entry((severity, kind)).or_default();
        let message = if *distinct >= FINDINGS_KEPT {
            format!(
                "and more findings of this kind, counted and not kept one by one (the harness keeps {FINDINGS_KEPT} different ones of each kind per case)"
            )
        } else {
            *distinct += 1;
            message
        };
        let key = (severity, kind, line, message);
        if let Some(&same) = self.finding_index.get(&key) {
            self.findings[same].times += 1;
            return;
        }
        self.finding_index.insert(key.clone(), self.findings.len());
        let (severity, kind, line, message) = key;
        self.findings.push(Finding {
            severity,
            line,
            kind,
            message,
            times: 1,
        });
    }

    /// A standing rule's finding.
    pub(crate) fn rule(&mut self, severity: Severity, requirement: &'static str, message: String) {
        self.finding(severity, FindingKind::Rule(requirement), message);
    }

    /// How much a broken expectation of this case weighs.
    pub(crate) fn case_severity(&self) -> Severity {
        Severity::of_level(self.case.level)
    }

    /// The version the run uses, as the harness knows it.
    pub(crate) fn protocol(&self) -> Option<ProtocolVersion> {
        ProtocolVersion::parse(
            self.version
                .as_deref()
                .unwrap_or(&self.options.protocol_version),
        )
    }

    /// Reads the machine's CPU pressure again, at most once a second.
    pub(crate) fn refresh_stretch(&mut self) {
        if self.stretch_read.elapsed() >= Duration::from_secs(1) {
            self.stretch = crate::load::stretch();
            self.stretch_read = Instant::now();
        }
        self.stretch_most = self.stretch_most.max(self.stretch);
    }

    /// The case's time limit: its own or `--timeout`, stretched for a busy machine.
    pub(crate) fn case_limit(&self) -> Duration {
        let limit = self.case.timeout.unwrap_or(self.options.case_timeout);
        crate::load::stretched(limit, self.stretch)
    }

    /// Time since the target started.
    pub(crate) fn now(&self) -> Duration {
        self.io.started().elapsed()
    }

    /// Plays steps in order.
    pub(crate) fn steps<'s>(
        &'s mut self,
        steps: &'s [Step],
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Stop>> + 's>> {
        Box::pin(async move {
            for (i, step) in steps.iter().enumerate() {
                self.line = step.line;
                // A request whose status the next step judges is left to it by the standing
                // rules.
                self.streams.next_status = match steps.get(i + 1).map(|s| &s.kind) {
                    Some(StepKind::Status(codes)) => Some(codes.clone()),
                    _ => None,
                };
                if let Some(stop) = S::halted(self) {
                    return Err(stop);
                }
                self.step(step).await?;
            }
            Ok(())
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
            StepKind::Cancel { id, reason } => self.cancel(id, reason.as_deref()).await,
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
            StepKind::Arrives(arrival) => {
                self.arrival = Some(*arrival);
                self.waited_before = self.waited();
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
            StepKind::Status(codes) => self.status_step(codes).await,
            StepKind::Header { name, value } => self.header_step(name, value),
            StepKind::Listen => self.open_step(true).await,
            StepKind::DeleteSession => self.open_step(false).await,
            StepKind::Silent { .. }
            | StepKind::Witness(_)
            | StepKind::Unwitnessed(_)
            | StepKind::Session(_)
            | StepKind::CloseStdin
            | StepKind::Exit(_)
            | StepKind::Disconnect(_)
            | StepKind::Cancelled(_)
            | StepKind::ServerExit
            | StepKind::ExpireSession => S::role_step(self, step).await,
        }
    }

    pub(crate) fn span(&self, span: &Span) -> Duration {
        span.resolve(&self.captures)
    }

    /// A reference to a variable that an earlier, already reported mismatch never captured
    /// ends the case quietly; otherwise it is a bug in the case.
    fn missing_capture(&mut self, name: String) -> Stop {
        if !self.findings.iter().any(|f| f.severity > Severity::Note) {
            self.finding(
                Severity::Fail,
                FindingKind::CaseBug,
                format!("bug in case: `{{${name}}}` is used before anything was captured into it"),
            );
        }
        Stop::Hung
    }

    /// A case line with its variables filled in.
    pub(crate) fn fill(&mut self, text: &str) -> Result<String, Stop> {
        pattern::substitute(text, &self.captures).map_err(|name| self.missing_capture(name))
    }

    /// A request id of a control line, with its variables filled in.
    pub(crate) fn fill_id(&mut self, text: &str) -> Result<Value, Stop> {
        let text = self.fill(text)?;
        serde_json::from_str(&text).map_err(|_| {
            self.finding(
                Severity::Fail,
                FindingKind::CaseBug,
                format!("bug in case: `{text}` is not a request id"),
            );
            Stop::Hung
        })
    }

    /// Notes when an expected message arrived, and judges it against a pending `! arrives`.
    ///
    /// Early is always judged: load only makes things later. Late is judged unless load
    /// explains the overshoot: the target's own processes waited at least that long for a CPU
    /// since the `! arrives` line (the kernel's scheduler statistics; a target whose own timer
    /// is late waits for none), or the harness itself was held up about as long (its own
    /// timers ran late by at least half the overshoot). Then the timing cannot tell the
    /// target's delay from the machine's, and the finding is a note that says so.
    pub(crate) fn arrived(&mut self, line: usize, at: Duration) {
        if let (Some(arrival), Some(previous)) = (self.arrival.take(), self.last_arrival) {
            let gap = at.saturating_sub(previous);
            if let Some(complaint) = arrival.judge(gap) {
                self.line = line;
                let overshoot = gap.saturating_sub(arrival.to);
                let starved = self
                    .waited()
                    .zip(self.waited_before)
                    .map(|(now, before)| now.saturating_sub(before))
                    .unwrap_or_default();
                if !overshoot.is_zero() && starved >= overshoot {
                    self.finding(
                        Severity::Note,
                        FindingKind::Unmet,
                        format!(
                            "{complaint}, but {}'s processes waited {} ms for a CPU meanwhile: the machine was busy and the timing cannot tell",
                            S::WRITER.who,
                            starved.as_millis()
                        ),
                    );
                } else if !overshoot.is_zero() && self.lateness * 2 >= overshoot {
                    self.finding(
                        Severity::Note,
                        FindingKind::Unmet,
                        format!(
                            "{complaint}, but the harness's own timers ran up to {} ms late meanwhile: the machine was busy and the timing cannot tell",
                            self.lateness.as_millis()
                        ),
                    );
                } else {
                    self.finding(self.case_severity(), FindingKind::Unmet, complaint);
                }
            }
        }
        self.last_arrival = Some(at);
    }

    /// A wait for the next expected message lasts at least until the end of its `! arrives`
    /// window (stretched on a busy machine): a message the case allows that late is not
    /// missing.
    pub(crate) fn arrival_deadline(&self, deadline: Deadline) -> Deadline {
        match (self.arrival, self.last_arrival) {
            (Some(arrival), Some(previous)) => {
                let end = previous + crate::load::stretched(arrival.to, self.stretch);
                deadline.max(Deadline::from_std(self.io.started() + end))
            }
            _ => deadline,
        }
    }

    /// A message's value as the harness recorded it.
    pub(crate) fn value(&self, index: usize) -> Value {
        self.transcript[index].value.clone().unwrap_or(Value::Null)
    }

    /// Marks a received message as the harness's business (not a case's), so diffs and
    /// expectations pass over it.
    pub(crate) fn take_internal(&mut self, index: usize) {
        self.transcript[index].internal = true;
        self.transcript[index].consumed_by = Some(0);
    }

    /// The answer `ping` gets from the harness.
    pub(crate) fn pong(id: &Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "result": {}})
    }
}
