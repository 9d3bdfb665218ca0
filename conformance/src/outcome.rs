//! Outcomes and findings: the vocabulary of a verdict.
//!
//! A run of a case collects findings, each with its own severity and the requirement it rests
//! on; the case's outcome is the worst of them. Protocol rules that the spec states as MUST
//! (one response per request, JSON on stdout, progress that increases) fail whatever the case's
//! level; what the case itself expects weighs as much as its `@level` says.

use crate::case::Level;
use crate::requirement::Req;
use std::fmt;

/// How a finding weighs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Recorded for the reader, not judged (for example a response that crossed its cancel).
    Note,
    /// An info-level expectation that did not hold: recorded, not judged.
    Info,
    /// A SHOULD broken.
    Warn,
    /// A MUST broken, a crash, a hang.
    Fail,
}

impl Severity {
    /// The severity a broken expectation of a case at `level` has.
    pub fn of_level(level: Level) -> Severity {
        match level {
            Level::Must => Severity::Fail,
            Level::Should => Severity::Warn,
            Level::Info => Severity::Info,
        }
    }
}

/// What a finding is about: the decisions after a run (blessing, the report's wording) read
/// this, never the message text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FindingKind {
    /// A protocol rule, with the requirement id it rests on (`CAN-05`, …).
    Rule(Req),
    /// A received message differs from the case's expected one: the only kind blessing may
    /// rewrite.
    Mismatch,
    /// Something the case expects did not happen (no matching message, a message outside
    /// its `! arrives` window, a response the case does not expect).
    Unmet,
    /// The case itself is wrong (a variable used before it was captured, …).
    CaseBug,
    /// A client adapter broke its contract (README: Testing a client).
    Adapter,
    /// The target went past a limit of the harness (it flooded its output).
    Limit,
    /// What the target did where the spec allows several behaviours, recorded for the
    /// reader of an info case (its message says which behaviour the case saw).
    Observed,
}

impl FindingKind {
    /// The requirement id, or the word reports use for findings without one: `case`,
    /// `adapter`, `limit`, `observed`.
    pub fn label(self) -> &'static str {
        match self {
            FindingKind::Rule(requirement) => requirement.as_str(),
            FindingKind::Mismatch | FindingKind::Unmet | FindingKind::CaseBug => "case",
            FindingKind::Adapter => "adapter",
            FindingKind::Limit => "limit",
            FindingKind::Observed => "observed",
        }
    }

    /// Whether the finding is about the case's own expectations, which it cites as a whole.
    pub fn is_expectation(self) -> bool {
        matches!(
            self,
            FindingKind::Mismatch | FindingKind::Unmet | FindingKind::CaseBug
        )
    }
}

/// One thing the harness noticed.
#[derive(Debug, Clone)]
pub struct Finding {
    /// How it weighs.
    pub severity: Severity,
    /// The case line being carried out when it was noticed.
    pub line: usize,
    /// What it is about.
    pub kind: FindingKind,
    /// What happened, in one sentence.
    pub message: String,
    /// How many times it happened.
    pub times: u32,
    /// For a note that leaves the verdict open in a way a run on a target of its own may
    /// settle: why (see [`Doubt`]).
    pub doubt: Option<Doubt>,
}

/// Why a note leaves a verdict open where the target was shared: on a shared target the
/// waits and the work of other cases count as this one's, so a shared run that passed with
/// such a note is run again alone, and the lone verdict is the one reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Doubt {
    /// The target's processes waited for a CPU past the tool's end after the cancel was
    /// read, so its handler may not have run in time (CAN-09).
    WaitedPastEnd,
    /// The witness does not list a request nothing showed had arrived: the work may never
    /// have started (CAN-05).
    Unarrived,
}

impl Finding {
    /// The requirement id it rests on, or `case`, `adapter`, `limit` (see [`FindingKind::label`]).
    pub fn requirement(&self) -> &'static str {
        self.kind.label()
    }
}

/// The verdict on one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Everything the case checks held.
    Pass,
    /// A MUST broken, a crash, a hang, a missing or duplicate response, non-JSON on stdout.
    Fail,
    /// A SHOULD broken.
    Warn,
    /// An info-level case: the behaviour is recorded, not judged.
    Info,
    /// The case does not apply to this target (a fixture, capability or version is absent).
    Skip,
}

impl Outcome {
    /// The word used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Warn => "warn",
            Outcome::Info => "info",
            Outcome::Skip => "skip",
        }
    }

    /// The outcome of a case at `level` with these findings.
    pub fn from_findings(level: Level, findings: &[Finding]) -> Outcome {
        let worst = findings
            .iter()
            .map(|f| f.severity)
            .max()
            .unwrap_or(Severity::Note);
        match worst {
            Severity::Fail => Outcome::Fail,
            Severity::Warn => Outcome::Warn,
            _ if level == Level::Info => Outcome::Info,
            _ => Outcome::Pass,
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
