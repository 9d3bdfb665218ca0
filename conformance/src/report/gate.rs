//! What a run's results mean for a CI gate: per case a [`Verdict`] (its outcome, whether a
//! baseline excuses it or is stale, whether it may be blessed), the [`Summary`] counts, and
//! the exit code. The command line and the test binaries decide with the same functions, so
//! `cargo test` can never let pass what the command line would fail.

use crate::baseline::Baseline;
use crate::case::Case;
use crate::case_report::{CaseResult, Report};
use crate::outcome::{FindingKind, Outcome, Severity};

/// What the user asked of the gate.
#[derive(Debug, Clone, Copy, Default)]
pub struct Gate<'a> {
    /// Warnings (broken SHOULDs) fail the run.
    pub strict: bool,
    /// Rewrite expected lines that differ (where that is all that went wrong).
    pub bless: bool,
    /// Case ids known to fail.
    pub baseline: Option<&'a Baseline>,
}

/// How a baseline bears on a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BaselineState {
    /// The case failed, as the baseline expected: the run does not fail for it.
    ExpectedFailure,
    /// The baseline lists the case, but it passes now: the entry is stale and fails the run.
    Stale,
}

impl BaselineState {
    /// The word reports use.
    pub fn as_str(self) -> &'static str {
        match self {
            BaselineState::ExpectedFailure => "expected-failure",
            BaselineState::Stale => "stale",
        }
    }
}

/// One case's result as the gate and the reports see it.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// The case id.
    pub id: String,
    /// `pass`, `fail`, `warn`, `info` or `skip`.
    pub outcome: Outcome,
    /// The case's level.
    pub level: &'static str,
    /// Requirement ids.
    pub requirements: Vec<String>,
    /// One line: the main finding, the skip reason, or the start error.
    pub message: String,
    /// The full explanation (diff, stderr), empty for a pass.
    pub details: String,
    /// Wall time.
    pub duration_ms: u64,
    /// What a baseline says about it.
    pub baseline: Option<BaselineState>,
    /// The target could not be started: the run cannot be trusted (exit code 2).
    pub broken: bool,
    /// Blessing was asked for and may rewrite this case: only expected lines differed.
    pub bless: bool,
    /// The outcome of every run, in order (`--repeat`; one run otherwise). A run whose target
    /// could not start counts as a failure.
    pub runs: Vec<Outcome>,
    /// The runs disagreed: the case's outcome depends on something other than the target's
    /// behaviour as the case drives it (a race in the target, or timing).
    pub flaky: bool,
    /// The protocol version the case ran at, when the run says.
    pub version: Option<String>,
}

impl Verdict {
    /// Whether this case fails the run.
    pub fn fails_run(&self, strict: bool) -> bool {
        (failing(self.outcome, strict) && self.baseline.is_none())
            || self.baseline == Some(BaselineState::Stale)
    }
}

/// Whether an outcome is a failure (a warning is one with `--strict`).
pub fn failing(outcome: Outcome, strict: bool) -> bool {
    outcome == Outcome::Fail || (strict && outcome == Outcome::Warn)
}

/// Whether a report may be blessed: every finding that counts is an expected line that
/// differed. Hangs, exits and broken rules are never blessed.
pub fn blessable(report: &Report) -> bool {
    !report.bless.is_empty()
        && report
            .findings
            .iter()
            .filter(|f| f.severity > Severity::Note)
            .all(|f| f.kind == FindingKind::Mismatch)
}

/// Whether a report is clean: nothing above a note was found, at any level, and the case ran.
/// The reference implementations must be clean on every case.
pub fn clean(report: &Report) -> bool {
    report.outcome != Outcome::Skip && report.findings.iter().all(|f| f.severity <= Severity::Note)
}

/// The one line that says why a case did not pass.
pub fn headline(report: &Report) -> String {
    if let Some(reason) = &report.skip_reason {
        return reason.clone();
    }
    report
        .findings
        .iter()
        .max_by_key(|f| f.severity)
        .filter(|f| f.severity > Severity::Note)
        .map(|f| format!("line {}: [{}] {}", f.line, f.requirement(), f.message))
        .or_else(|| {
            // An info case says which of the allowed behaviours it saw.
            let observed: Vec<&str> = report
                .findings
                .iter()
                .filter(|f| f.kind == FindingKind::Observed)
                .map(|f| f.message.as_str())
                .collect();
            (!observed.is_empty()).then(|| format!("observed: {}", observed.join("; ")))
        })
        // A note about the machine (a busy one stretched the waits) says nothing of the target.
        .or_else(|| {
            let about_target = report.findings.iter().find(|f| f.kind != FindingKind::Limit);
            about_target.map(|f| f.message.clone())
        })
        .or_else(|| {
            (report.outcome == Outcome::Info).then(|| {
                "recorded, no verdict: the transcript shows which of the allowed behaviours the target chose".to_string()
            })
        })
        .or_else(|| report.findings.first().map(|f| f.message.clone()))
        .unwrap_or_default()
}

/// How much an outcome weighs when runs of a case disagree: the worst run counts.
fn weight(result: &CaseResult) -> u8 {
    match result.as_ref().map(|r| r.outcome) {
        Err(_) => 5,
        Ok(Outcome::Fail) => 4,
        Ok(Outcome::Warn) => 3,
        Ok(Outcome::Info) => 2,
        Ok(Outcome::Pass) => 1,
        Ok(Outcome::Skip) => 0,
    }
}

/// The run of a case that stands for all its runs: the worst one (the first of equals).
pub fn worst(runs: &[CaseResult]) -> &CaseResult {
    runs.iter()
        .rev()
        .max_by_key(|r| weight(r))
        .expect("a case has at least one run")
}

/// The gate's verdict on a case from all its runs (the worst run stands for them; see
/// [`worst`]). `next` is the advice that ends a failure's explanation.
pub fn verdict_of_runs(case: &Case, runs: &[CaseResult], gate: &Gate, next: &str) -> Verdict {
    let outcomes: Vec<Outcome> = runs
        .iter()
        .map(|r| r.as_ref().map_or(Outcome::Fail, |r| r.outcome))
        .collect();
    let gate = Gate {
        bless: gate.bless && runs.len() == 1,
        ..*gate
    };
    let mut verdict = verdict(case, worst(runs), &gate, next);
    verdict.flaky = outcomes.windows(2).any(|w| w[0] != w[1]);
    verdict.runs = outcomes;
    if verdict.flaky {
        let shown: Vec<&str> = verdict.runs.iter().map(|o| o.as_str()).collect();
        verdict.message = format!("flaky ({}): {}", shown.join(", "), verdict.message);
    }
    verdict
}

/// The gate's verdict on one run of a case. `next` is the advice that ends a failure's
/// explanation.
pub fn verdict(case: &Case, result: &CaseResult, gate: &Gate, next: &str) -> Verdict {
    let mut verdict = Verdict {
        id: case.id.clone(),
        outcome: Outcome::Fail,
        level: case.level.as_str(),
        requirements: case.requirements.clone(),
        message: String::new(),
        details: String::new(),
        duration_ms: 0,
        baseline: None,
        broken: false,
        bless: false,
        runs: vec![result.as_ref().map_or(Outcome::Fail, |r| r.outcome)],
        flaky: false,
        version: None,
    };
    let report = match result {
        Ok(report) => report,
        Err(e) => {
            verdict.message = e.to_string();
            verdict.broken = true;
            return verdict;
        }
    };
    verdict.outcome = report.outcome;
    verdict.duration_ms = report.duration.as_millis() as u64;
    verdict.message = headline(report);
    if gate.bless && blessable(report) {
        verdict.bless = true;
        return verdict;
    }
    if let Some(b) = gate.baseline {
        if let Some(line) = b.line_of(&case.id) {
            if failing(report.outcome, gate.strict) {
                verdict.baseline = Some(BaselineState::ExpectedFailure);
            } else if report.outcome != Outcome::Skip {
                verdict.baseline = Some(BaselineState::Stale);
                verdict.message = format!(
                    "{}:{line}: stale baseline entry: {} passes now; delete that line",
                    b.path, case.id
                );
            }
        }
    }
    if !matches!(report.outcome, Outcome::Pass | Outcome::Info) {
        verdict.details = super::explain(case, report, next);
    }
    verdict
}

/// The exit code of a run: 2 when something could not be done (a target that would not
/// start, a report that could not be written), 1 when a case fails the run (unless a
/// baseline is being written), else 0.
pub fn exit_code(verdicts: &[Verdict], strict: bool, trouble: bool, writing_baseline: bool) -> u8 {
    if trouble || verdicts.iter().any(|v| v.broken) {
        2
    } else if verdicts.iter().any(|v| v.fails_run(strict)) && !writing_baseline {
        1
    } else {
        0
    }
}

/// Counts of each outcome (also the JSON report's `summary`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    /// Cases that passed.
    pub pass: usize,
    /// Cases that failed (or could not run).
    pub fail: usize,
    /// Cases with a broken SHOULD.
    pub warn: usize,
    /// Info cases, recorded.
    pub info: usize,
    /// Cases that did not apply.
    pub skip: usize,
}

impl Summary {
    /// Counts one outcome as reports write it (`pass`, `fail`, …; an unknown word, as a
    /// failure).
    pub fn add(&mut self, outcome: &str) {
        match outcome {
            "pass" => self.pass += 1,
            "warn" => self.warn += 1,
            "info" => self.info += 1,
            "skip" => self.skip += 1,
            _ => self.fail += 1,
        }
    }

    /// Adds up the cases of a run, each by its worst run.
    pub fn of(results: &[Vec<CaseResult>]) -> Summary {
        let mut s = Summary::default();
        for r in results.iter().map(|runs| worst(runs)) {
            match r.as_ref().map(|r| r.outcome) {
                Ok(Outcome::Pass) => s.pass += 1,
                Ok(Outcome::Warn) => s.warn += 1,
                Ok(Outcome::Info) => s.info += 1,
                Ok(Outcome::Skip) => s.skip += 1,
                Ok(Outcome::Fail) | Err(_) => s.fail += 1,
            }
        }
        s
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} passed, {} failed, {} warned, {} info, {} skipped",
            self.pass, self.fail, self.warn, self.info, self.skip
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Finding;
    use crate::requirement::Req;

    fn report(findings: &[(Severity, FindingKind)]) -> Report {
        let mut report = Report::skipped(String::new(), "t".into());
        report.skip_reason = None;
        report.outcome = Outcome::from_findings(crate::case::Level::Must, &[]);
        report.bless = vec![(3, "< {}".into())];
        report.findings = findings
            .iter()
            .map(|(severity, kind)| Finding {
                severity: *severity,
                line: 3,
                kind: *kind,
                message: "m".into(),
                times: 1,
                doubt: None,
            })
            .collect();
        report.outcome = Outcome::from_findings(crate::case::Level::Must, &report.findings);
        report
    }

    #[test]
    fn only_differing_lines_are_blessed() {
        use FindingKind::*;
        assert!(blessable(&report(&[(Severity::Fail, Mismatch)])));
        assert!(blessable(&report(&[
            (Severity::Fail, Mismatch),
            (Severity::Note, Rule(Req::Can08))
        ])));
        // A standing rule broken in the same run: blessing would hide it.
        assert!(!blessable(&report(&[
            (Severity::Fail, Mismatch),
            (Severity::Fail, Rule(Req::Rpc04))
        ])));
        assert!(!blessable(&report(&[(Severity::Fail, Unmet)])));
        let mut nothing = report(&[(Severity::Fail, Mismatch)]);
        nothing.bless.clear();
        assert!(!blessable(&nothing));
    }

    #[test]
    fn clean_means_nothing_above_a_note() {
        assert!(clean(&report(&[(
            Severity::Note,
            FindingKind::Rule(Req::Can08)
        )])));
        assert!(!clean(&report(&[(Severity::Info, FindingKind::Unmet)])));
        assert!(!clean(&Report::skipped("n/a".into(), "t".into())));
    }

    #[test]
    fn exit_codes() {
        let verdict = |outcome, baseline| Verdict {
            id: "x".into(),
            outcome,
            level: "must",
            requirements: vec![],
            message: String::new(),
            details: String::new(),
            duration_ms: 0,
            baseline,
            broken: false,
            bless: false,
            runs: vec![outcome],
            flaky: false,
            version: None,
        };
        let pass = verdict(Outcome::Pass, None);
        let warn = verdict(Outcome::Warn, None);
        let known = verdict(Outcome::Fail, Some(BaselineState::ExpectedFailure));
        let stale = verdict(Outcome::Pass, Some(BaselineState::Stale));
        assert_eq!(
            exit_code(&[pass.clone(), known.clone()], false, false, false),
            0
        );
        assert_eq!(
            exit_code(std::slice::from_ref(&warn), false, false, false),
            0
        );
        assert_eq!(exit_code(&[warn], true, false, false), 1);
        assert_eq!(
            exit_code(std::slice::from_ref(&stale), false, false, false),
            1
        );
        assert_eq!(exit_code(&[stale], false, false, true), 0);
        assert_eq!(
            exit_code(std::slice::from_ref(&pass), false, true, false),
            2
        );
        let broken = Verdict {
            broken: true,
            ..pass
        };
        assert_eq!(exit_code(&[broken], false, false, false), 2);
    }
}
