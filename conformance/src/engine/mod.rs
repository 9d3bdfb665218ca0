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

mod cancel;
pub mod client;
mod expect;
pub mod http;
mod http_steps;
mod io;
pub(crate) mod limit;
pub mod parts;
mod poll;
mod proof;
mod receive;
mod response;
pub mod server;
mod side;
mod steps;
pub(crate) mod waited;

pub use parts::budget::{KEEP_BYTES, KEEP_ENTRIES};
pub use side::Side;

use crate::case::Case;
use crate::case_report::Report;
use crate::engine::parts::clock;
use crate::era::ProtocolVersion;
use crate::facts::ledger::Ledger;
use crate::fixtures::Fixtures;
use crate::outcome::{FindingKind, Outcome, Severity};
use crate::requirement::Req;
use crate::transport::Transport;
use parts::clock::Clock;
use parts::diff::Diff;
use parts::findings::Findings;
use parts::liveness::Liveness;
use parts::opening::Opening;
use parts::played::Played;
use parts::position::Position;
use parts::proofs::Proofs;
use parts::transcript::Transcript;
use std::time::Duration;
use tokio::time::Instant as Deadline;

/// How a run is carried out.
#[derive(Debug, Clone)]
pub struct Options {
    /// The protocol version requested at `initialize` (server cases) or played (client cases).
    pub protocol_version: ProtocolVersion,
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
            protocol_version: ProtocolVersion::NEWEST_HANDSHAKE,
            case_timeout: Duration::from_secs(10),
            reply_timeout: Duration::from_secs(2),
            startup_timeout: Duration::from_secs(15),
            fixtures: None,
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

/// What the engine noticed that may stop the steps; the role says whether it does, and how
/// ([`Side::stop`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// A step is about to be played, or an expected message is awaited: the case may have
    /// turned out not to apply.
    Step,
    /// A wait for an expected message found nothing more to read.
    Silence,
    /// An answer the harness needs for itself cannot come, or did not come in time.
    Unanswered,
    /// A message could not be sent.
    Unsent,
}

/// One run of one case: the step loop's state, as owned parts (see [`parts`]).
pub struct Engine<'a, T, S> {
    /// The case and its options, read-only.
    pub(crate) played: Played<'a>,
    pub(crate) io: T,
    pub(crate) side: S,
    /// What was exchanged, and the budget that bounds what of it is kept.
    pub(crate) transcript: Transcript,
    /// The expected side of the diff, and replacements for blessing.
    pub(crate) diff: Diff,
    pub(crate) findings: Findings,
    pub(crate) ledger: Ledger,
    pub(crate) clock: Clock,
    pub(crate) liveness: Liveness,
    pub(crate) proofs: Proofs,
    /// The HTTP channels of the case (empty on stdio).
    pub(crate) streams: http::Streams,
    /// Where the steps are: the case line, the next expected message's pattern and window,
    /// the captured variables.
    pub(crate) step: Position,
    /// Whether the opening of the session completed, and the version agreed (or played).
    pub(crate) opening: Opening,
}

/// How many different findings of one severity and kind a case keeps; more are counted in one.
pub const FINDINGS_KEPT: usize = parts::findings::KEPT;

impl<'a, T: Transport, S: Side> Engine<'a, T, S> {
    /// A run of `case` against the target behind `io`.
    pub fn new(case: &'a Case, options: &'a Options, io: T, side: S) -> Self {
        let clock = Clock::new(io.load());
        Engine {
            played: Played::new(case, options),
            io,
            side,
            transcript: Transcript::default(),
            diff: Diff::default(),
            findings: Findings::default(),
            ledger: Ledger::default(),
            clock,
            liveness: Liveness::default(),
            proofs: Proofs::default(),
            streams: http::Streams::default(),
            step: Position::default(),
            opening: Opening::default(),
        }
    }

    /// Plays the case to its end and shuts the target down. Never panics on target
    /// behaviour; the target and everything it started are gone when this returns.
    pub async fn run(mut self, target: String) -> Report {
        let started = clock::now();
        let played = S::play(&mut self).await;
        let skip = S::finish(&mut self, played).await;
        if skip.is_none() {
            // Whatever the target still says until it is shut down is judged by the standing
            // rules: its input is closed and it gets a moment to exit.
            self.io.close_input();
            let until = Deadline::now() + Duration::from_millis(250);
            while !self.liveness.has_exited() && self.next(until).await {}
            S::drained(&mut self);
        }
        if let Some(note) = self.clock.busy_note() {
            self.step.at(0);
            self.finding(Severity::Note, FindingKind::Limit, note);
        }
        let mut log = self.io.shutdown(Duration::ZERO).await;
        if self.transcript.dropped() > 0 {
            log.push(
                self.now(),
                format!(
                    "[harness] {} messages (the target's, and the harness's replies to its requests) were judged and not kept in the transcript",
                    self.transcript.dropped()
                ),
            );
        }
        let outcome = if skip.is_some() {
            Outcome::Skip
        } else {
            Outcome::from_findings(self.played.case().level, self.findings.list())
        };
        let (expected, bless) = self.diff.into_parts();
        let (version, opened, shared_opening) = self.opening.into_parts();
        let witnessed = self.ledger.witnessed_requests();
        Report {
            outcome,
            findings: self.findings.into_list(),
            skip_reason: skip,
            transcript: self.transcript.into_entries(),
            log,
            expected,
            bless,
            version,
            duration: clock::since(started),
            stretched: self.clock.most(),
            target,
            placement: Default::default(),
            opened,
            shared_opening,
            witnessed,
        }
    }

    /// Records a finding at the case line being carried out (see [`Findings`]).
    pub(crate) fn finding(&mut self, severity: Severity, kind: FindingKind, message: String) {
        self.findings.add(severity, kind, self.step.line(), message);
    }

    /// A standing rule's finding.
    pub(crate) fn rule(&mut self, severity: Severity, requirement: Req, message: String) {
        self.finding(severity, FindingKind::Rule(requirement), message);
    }

    /// The version the run uses, as the harness knows it.
    pub(crate) fn protocol(&self) -> Option<ProtocolVersion> {
        self.played.protocol(self.opening.version())
    }

    /// A time limit of `base` that starts now, for this target.
    pub(crate) fn limit(&self, base: Duration) -> limit::Limit {
        limit::Limit::start(base, self.clock.load(), self.io.process_group())
    }

    /// Time since the target started.
    pub(crate) fn now(&self) -> Duration {
        clock::since(self.io.started())
    }
}
