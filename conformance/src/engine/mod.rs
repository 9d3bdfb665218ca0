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
mod cancel;
pub mod client;
mod client_start;
mod client_stateless;
mod expect;
pub mod http;
mod http_steps;
mod io;
pub mod ledger;
pub(crate) mod limit;
mod proof;
mod receive;
pub mod server;
pub mod session;
mod side;
mod steps;
mod waited;

pub use io::{KEEP_BYTES, KEEP_ENTRIES};
pub use side::Side;

use crate::case::{Arrival, Case};
use crate::era::ProtocolVersion;
use crate::fixtures::Fixtures;
use crate::outcome::{Finding, FindingKind, Outcome, Severity};
use crate::pattern::Captures;
use crate::transcript::Entry;
use crate::transport::process::TargetLog;
use crate::transport::Transport;
use ledger::Ledger;
use serde_json::Value;
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
    /// The target wrote a line to stdout that is not JSON: the case ends there (nothing it
    /// says after can be trusted to be framed as it meant).
    pub(crate) garbled: bool,
    /// Every message the harness sent before this transcript index is proven read.
    pub(crate) proven: usize,
    /// When that proof arrived (since the target started).
    pub(crate) proven_at: Option<Duration>,
    /// How long the target had waited for a CPU when it arrived.
    pub(crate) proven_waited: Option<Duration>,
    /// The last reading of how long they have waited, and when it was taken.
    waited_cache: std::cell::Cell<Option<(Instant, Option<Duration>)>>,
    /// The CPU waits of the target's process group, kept across its threads' exits.
    group_waits: std::cell::OnceCell<Option<crate::load::GroupWaits>>,
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
            garbled: false,
            proven: 0,
            proven_at: None,
            proven_waited: None,
            waited_cache: std::cell::Cell::new(None),
            group_waits: std::cell::OnceCell::new(),
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

    /// The case's time limit: its own or `--timeout`. A busy machine lengthens it only by
    /// the target's own waits for a CPU (see [`limit::Limit`]).
    pub(crate) fn case_limit(&self) -> Duration {
        self.case.timeout.unwrap_or(self.options.case_timeout)
    }

    /// A time limit of `base` that starts now, for this target.
    pub(crate) fn limit(&self, base: Duration) -> limit::Limit {
        limit::Limit::start(base, self.io.process_group())
    }

    /// Whether the harness has stopped talking with the target: it stopped reading, or wrote
    /// what is not JSON on stdout.
    pub(crate) fn cut_off(&self) -> bool {
        self.stalled || self.garbled
    }

    /// Time since the target started.
    pub(crate) fn now(&self) -> Duration {
        self.io.started().elapsed()
    }
}
