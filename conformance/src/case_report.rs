//! What running one case produced, as data: the [`Report`], where the case ran
//! ([`Placement`]), and the [`CaseResult`] that is a report or the typed reason the target
//! could not be reached. The engine fills it, sharing places it, and the gate, the console
//! and the reports read it; none of them needs another's behaviour to do so.

use crate::error::StartError;
use crate::exchange::TargetLog;
use crate::outcome::{Finding, Outcome};
use crate::transcript::Entry;
use std::time::Duration;

/// The result of one case: a report, or why the target could not even be started.
pub type CaseResult = Result<Report, StartError>;

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
    /// The most the run's waits were stretched for a busy machine (1.0 when calm).
    pub stretched: f64,
    /// How the target was started, for reports.
    pub target: String,
    /// Whether the case ran on a target of its own or on one it shared.
    pub placement: Placement,
    /// Whether the harness's own opening of the session (`initialize`, `server/discover`)
    /// completed: a case skipped before that was skipped on what the target answered to it.
    pub opened: bool,
    /// For a case that went on in a session an earlier case opened: the messages that opened
    /// it (what the harness sent, what the target answered), which this case's transcript
    /// does not hold. Empty when the case opened its own.
    pub shared_opening: Vec<serde_json::Value>,
    /// The harness's requests the `cancellations` witness listed: each id, with when the
    /// witness's answer that first listed it came (since the target started).
    pub witnessed: Vec<(serde_json::Value, Duration)>,
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
            stretched: 1.0,
            target,
            placement: Default::default(),
            opened: false,
            shared_opening: vec![],
            witnessed: vec![],
        }
    }
}

/// Where a case ran.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Placement {
    /// On a target started for it alone.
    #[default]
    Alone,
    /// On a target other cases shared.
    Shared(SharedProcess),
    /// Shared first; it did not pass there (this outcome), so it was run again alone, and the
    /// lone run is what is reported.
    Rerun(SharedProcess, Outcome),
}

/// A shared server process: its number in the run (from 1) and its process id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharedProcess {
    /// Which shared process of the run, from 1 (a new one is started when one dies).
    pub ordinal: u32,
    /// Its process id, 0 when unknown.
    pub pid: i32,
}

impl Placement {
    /// `alone`, `shared` or `rerun`, for reports.
    pub fn mode(&self) -> &'static str {
        match self {
            Placement::Alone => "alone",
            Placement::Shared(_) => "shared",
            Placement::Rerun(..) => "rerun",
        }
    }

    /// The shared process the case ran on (first, for a rerun).
    pub fn process(&self) -> Option<SharedProcess> {
        match self {
            Placement::Alone => None,
            Placement::Shared(p) | Placement::Rerun(p, _) => Some(*p),
        }
    }

    /// The short mark the console adds to a case's line (empty for a case that ran alone).
    pub fn mark(&self) -> String {
        match self {
            Placement::Alone => String::new(),
            Placement::Shared(p) => format!(" [shared #{}]", p.ordinal),
            Placement::Rerun(p, outcome) => format!(
                " [rerun alone: {} on shared #{}]",
                outcome.as_str(),
                p.ordinal
            ),
        }
    }
}
