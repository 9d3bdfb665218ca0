//! Judging a run against an [`Expect`]: the verdict, what the run cost, what it left behind.

use super::{Bound, Expect, Wanted};
use crate::case::{Case, Role};
use crate::case_report::Report;
use crate::engine;
use crate::outcome::{Finding, Outcome, Severity};
use crate::report::{self, gate};
use crate::{load, transcript};
use std::time::{Duration, Instant};

/// One run to judge: the case, its report, and what the target left behind.
pub struct Run<'a> {
    /// The case that was played.
    pub case: &'a Case,
    /// What the harness concluded.
    pub report: &'a Report,
    /// The processes the target said it started (itself, its children), for
    /// [`Expect::reaped`].
    pub pids: &'a [u32],
    /// The run had every core busy ([`saturate_cpus`](crate::harness::saturate_cpus)).
    pub loaded: bool,
}

/// What a run did not show that its [`Expect`] wanted (a test failure, printed as it reads).
#[derive(Debug, thiserror::Error)]
#[error("{problem}\n{explanation}")]
pub struct Unmet {
    /// What did not hold.
    pub problem: String,
    /// The run explained: findings, the report's explanation, the transcript.
    pub explanation: String,
}

/// Whether a run passed only because a busy machine hid the timing: the harness noted that it
/// could not tell (a cancel's proof came after the work's natural end) and that the machine
/// was busy.
fn untimed(report: &Report) -> bool {
    let noted = |words: &str| {
        report
            .findings
            .iter()
            .any(|f| f.severity == Severity::Note && f.message.contains(words))
    };
    report.outcome == Outcome::Pass
        && noted("the timing cannot tell")
        && noted("the machine was busy")
}

impl Expect {
    /// `Ok` when `run` shows what `self` expects; otherwise what did not hold, then the run
    /// explained (findings, the report's explanation, the transcript).
    pub fn check(&self, run: &Run<'_>) -> Result<(), Unmet> {
        let want = if run.loaded {
            self.loaded()
        } else {
            self.clone()
        };
        let problem = want
            .verdict_problem(run.report)
            .or_else(|| want.cost_problem(run))
            .or_else(|| want.reaped.then(|| left_behind(run.pids)).flatten());
        match problem {
            None => Ok(()),
            Some(problem) => Err(Unmet {
                problem,
                explanation: explain(run),
            }),
        }
    }

    /// What is wrong with the verdict, if anything.
    fn verdict_problem(&self, report: &Report) -> Option<String> {
        if self.untimed && untimed(report) {
            return None;
        }
        if let Some(outcome) = self.outcome.filter(|o| *o != report.outcome) {
            return Some(format!(
                "expected the outcome {outcome}, got {}",
                report.outcome
            ));
        }
        if let Some(wanted) = &self.finding {
            let says = match wanted.saying {
                "" => String::new(),
                words => format!(" saying `{}`", words.replace('|', "` or `")),
            };
            let what = format!(
                "{:?} finding on {}{says}",
                wanted.severity,
                wanted.on_shown()
            );
            if !report.findings.iter().any(|f| wanted.matches(f)) {
                return Some(format!("expected a {what}"));
            }
            let pass_allowed = self.outcome == Some(Outcome::Pass) || self.clean;
            if report.outcome == Outcome::Pass && !pass_allowed {
                return Some(format!("expected a {what} in a run that does not pass"));
            }
        }
        for f in report
            .findings
            .iter()
            .filter(|f| f.severity > Severity::Note)
        {
            if self.absent.iter().any(|on| on.holds_for(f.kind)) {
                return Some(format!(
                    "expected no finding on {}: {}",
                    f.requirement(),
                    f.message
                ));
            }
            if let Some(text) = self.never_saying.filter(|t| f.message.contains(t)) {
                return Some(format!(
                    "expected no finding saying `{text}`: {}",
                    f.message
                ));
            }
        }
        if self.clean && !gate::clean(report) {
            return Some("expected a clean run".into());
        }
        if let Some(text) = self
            .headline
            .filter(|t| !gate::headline(report).contains(t))
        {
            return Some(format!(
                "expected the headline to say `{text}`: {}",
                gate::headline(report)
            ));
        }
        None
    }

    /// What is wrong with what the run cost (time, memory, the report's size), if anything.
    fn cost_problem(&self, run: &Run<'_>) -> Option<String> {
        let took = run.report.duration;
        let limit = match self.within {
            // As much as the machine stretches waits now, or as the run stretched them.
            Some(Bound::Stretched(limit)) => Some(load::stretched(
                limit,
                load::stretch().max(run.report.stretched),
            )),
            Some(Bound::Calm(limit)) => Some(limit),
            None => None,
        };
        if let Some(limit) = limit.filter(|l| took >= *l) {
            return Some(format!("the run took {took:?}, over {limit:?}"));
        }
        if let Some(mib) = self.small {
            let peak = peak_rss_kib();
            if peak > mib * 1024 {
                return Some(format!(
                    "the test process's peak RSS is {peak} KiB, over {mib} MiB"
                ));
            }
        }
        if self.bounded {
            return unbounded(run);
        }
        None
    }
}

impl Wanted {
    fn matches(&self, f: &Finding) -> bool {
        f.severity == self.severity
            && self.on.iter().any(|on| on.holds_for(f.kind))
            && self
                .saying
                .split('|')
                .any(|words| f.message.contains(words))
    }
}

/// What is unbounded about a report that should be bounded, if anything.
fn unbounded(run: &Run<'_>) -> Option<String> {
    let report = run.report;
    let kept = report.transcript.len();
    if kept > engine::KEEP_ENTRIES + 100 {
        return Some(format!("the transcript kept {kept} entries"));
    }
    let noted = report
        .findings
        .iter()
        .any(|f| f.severity == Severity::Note && f.message.contains("the transcript keeps"));
    if !noted {
        return Some("no note that the transcript was cut".into());
    }
    if report.findings.len() > 2 * engine::FINDINGS_KEPT {
        return Some(format!("{} findings were kept", report.findings.len()));
    }
    let began = Instant::now();
    let text = report::explain(run.case, report, "next");
    let took = began.elapsed();
    let lines = text.lines().count();
    if lines > 300 || took > load::stretched(Duration::from_secs(2), load::stretch()) {
        return Some(format!(
            "the explanation has {lines} lines and took {took:?}:\n{text}"
        ));
    }
    None
}

/// Which of `pids` are still running after the run, waiting a moment for init to reap the
/// orphans of a killed group; a problem too when the target reported none.
fn left_behind(pids: &[u32]) -> Option<String> {
    assert!(alive(std::process::id()), "/proc tells a live process");
    if pids.is_empty() {
        return Some("the target reported no processes, so none can be shown reaped".into());
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while pids.iter().any(|p| alive(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let left: Vec<&u32> = pids.iter().filter(|p| alive(**p)).collect();
    (!left.is_empty()).then(|| format!("still running after the case: {left:?}"))
}

/// Whether a process is still there (a zombie counts as gone: it runs nothing).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
            !state.is_some_and(|s| s.starts_with('Z') || s.starts_with('X'))
        }
        Err(_) => false,
    }
}

/// This process's peak resident memory (`VmHWM`), in KiB; 0 where `/proc` does not tell.
pub fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// A run told in full for a failed expectation: outcome, every finding, the report's
/// explanation and the transcript.
fn explain(run: &Run<'_>) -> String {
    let report = run.report;
    let findings: Vec<String> = report
        .findings
        .iter()
        .map(|f| {
            format!(
                "  {:?} [{}] line {}: {}",
                f.severity,
                f.requirement(),
                f.line,
                f.message
            )
        })
        .collect();
    format!(
        "{}: outcome {} in {:?}\nfindings:\n{}\n{}\ntranscript:\n{}",
        run.case.id,
        report.outcome,
        report.duration,
        findings.join("\n"),
        report::explain(run.case, report, "this is a test of the harness"),
        transcript::render(
            &report.transcript,
            &report.log,
            run.case.role == Role::Server
        )
    )
}
