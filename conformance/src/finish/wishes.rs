//! What a finished run holds and what the user asked to have done with it: the two records
//! the finishing steps (the summary, the gate, the report files) all read.

use conformance::baseline::Baseline;
use conformance::case::Case;
use conformance::case_report::CaseResult;
use conformance::versions::{Choice, Spoken, Unit};
use std::path::PathBuf;

/// What the user asked to have done with the results.
pub struct Wishes<'a> {
    pub strict: bool,
    pub bless: bool,
    pub dump: Option<&'a PathBuf>,
    pub baseline: Option<&'a Baseline>,
    pub write_baseline: Option<&'a PathBuf>,
    pub json: Option<&'a PathBuf>,
    pub html: Option<&'a PathBuf>,
    pub junit: Option<&'a PathBuf>,
    /// The advice that ends each failure's explanation.
    pub next: &'a str,
}

/// What a finished run holds, for the summary line and the reports.
pub struct Finished<'a> {
    pub cases: &'a [Case],
    /// What ran: each case at a version.
    pub units: &'a [Unit],
    /// Every run of every unit.
    pub results: &'a [Vec<CaseResult>],
    /// The target as shown to people.
    pub target: &'a str,
    /// The target's stable name (no path): reports keep a test's history by it.
    pub name: &'a str,
    /// The transport the cases ran over (`stdio`, `http`, or `stdio+http` for a client run
    /// over both).
    pub transport: &'a str,
    /// The protocol version(s) asked for.
    pub choice: &'a Choice,
    /// What the target speaks.
    pub spoken: &'a Spoken,
    /// An explicit version the target does not speak: nothing was verified, the run fails.
    pub nothing_verified: bool,
    pub started: std::time::Instant,
}
